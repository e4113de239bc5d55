/* The implementation translation unit, as every configuration of the matrix compiles it. */
#define STS_IMPLEMENTATION
#include "safetensors_spark.h"
#include "smoke.h"

int main(int argc, char **argv) {
    return matrix_smoke(argc > 1 ? argv[1] : NULL);
}
