/* Two STS_STATIC implementations in one program (with static_b.c, static_main.c): each TU has
   its own private copy, and the many functions this TU never calls must not warn. */
#define STS_STATIC
#define STS_IMPLEMENTATION
#include "safetensors_spark.h"
#include "smoke.h"

int static_a_run(const char *dir);
int static_a_run(const char *dir) { return matrix_smoke(dir); }
