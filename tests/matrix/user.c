/* A TU that sees only the declarations (no STS_IMPLEMENTATION) and links against lib.c. Also
   compiled as C++ against a C-compiled lib.c, which checks the extern "C" block. */
#include "safetensors_spark.h"
#include "smoke.h"

int main(int argc, char **argv) {
    return matrix_smoke(argc > 1 ? argv[1] : NULL);
}
