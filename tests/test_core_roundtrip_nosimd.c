/* test_core_roundtrip_nosimd.c - the round-trip properties again with STS_NO_SIMD (portable
   string scanning and UTF-8 checks). */
#define STS_NO_SIMD
#include "test_core_roundtrip.c"
