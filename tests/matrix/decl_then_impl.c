/* The usual STB pattern when a project header already pulled in the declarations: the header is
   included once plainly, then again with STS_IMPLEMENTATION in the same TU. */
#include "safetensors_spark.h"
#define STS_IMPLEMENTATION
#include "safetensors_spark.h"
#include "smoke.h"

int main(int argc, char **argv) {
    return matrix_smoke(argc > 1 ? argv[1] : NULL);
}
