/* test_core_parse_nosimd.c - the parse suite again with STS_NO_SIMD: the portable (SWAR) string
   scanner must give the same verdicts, offsets and messages as the SSE2 one. */
#define STS_NO_SIMD
#include "test_core_parse.c"
