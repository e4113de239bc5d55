/* The header included twice with STS_IMPLEMENTATION defined both times: the declarations and the
   implementation are each guarded, so the second include adds nothing. */
#define STS_IMPLEMENTATION
#include "safetensors_spark.h"
#include "safetensors_spark.h"
#include "smoke.h"

int main(int argc, char **argv) {
    return matrix_smoke(argc > 1 ? argv[1] : NULL);
}
