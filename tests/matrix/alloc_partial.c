/* Must NOT compile: only some of STS_MALLOC / STS_REALLOC / STS_FREE are defined (chosen with
   -DWANT_MALLOC, -DWANT_REALLOC, -DWANT_FREE). The header's #error says so. */
#include <stdlib.h>
#ifdef WANT_MALLOC
#define STS_MALLOC(ctx, size) malloc(size)
#endif
#ifdef WANT_REALLOC
#define STS_REALLOC(ctx, p, old, size) realloc((p), (size))
#endif
#ifdef WANT_FREE
#define STS_FREE(ctx, p, size) free(p)
#endif
#define STS_IMPLEMENTATION
#include "safetensors_spark.h"

int main(void) { return 0; }
