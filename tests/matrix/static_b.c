/* The second STS_STATIC TU: calls almost nothing, so nearly every static function is unused. */
#define STS_STATIC
#define STS_IMPLEMENTATION
#include "safetensors_spark.h"
#include <string.h>

int static_b_run(void);
int static_b_run(void) {
    sts_dtype d;
    if (!sts_dtype_from_name("BF16", 4, &d) || d != STS_DTYPE_BF16) return 1;
    return strcmp(sts_dtype_name(STS_DTYPE_F8_E4M3FNUZ), "F8_E4M3FNUZ") != 0;
}
