/* test_checksum.c - CRC-32C (the shard checksum of the manifest): the published check value, the
   hardware path (SSE4.2 + PCLMUL, three lanes) against the portable table loop and against a
   bit-at-a-time reference written here from the polynomial, for lengths up to 40,000 bytes (every
   one up to 300, then every 37th) at three alignments and for large buffers, and piecewise (a file in write order) against one pass. */
#define STS_IMPLEMENTATION
#include "../safetensors_spark.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;
#define CHECK(c, ...) do { if (!(c)) { failures++; fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); } } while (0)

static uint32_t ref_crc(uint32_t crc, const uint8_t *p, size_t n) {  /* bit by bit, reflected 0x82F63B78 */
    size_t i;
    int k;
    crc = ~crc;
    for (i = 0; i < n; i++) {
        crc ^= p[i];
        for (k = 0; k < 8; k++) crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1u)));
    }
    return ~crc;
}
static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint8_t next_byte(void) { rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17; return (uint8_t)(rng >> 24); }

int main(void) {
    const char *quick = getenv("STS_TEST_LEVEL");
    size_t big = (quick && strcmp(quick, "quick") == 0) ? ((size_t)1 << 20) : ((size_t)48 << 20), n, i, step;
    uint8_t *buf = (uint8_t *)malloc(big + 16);
    int a;
    if (!buf) return 2;
    for (i = 0; i < big + 16; i++) buf[i] = next_byte();
    CHECK(sts__crc32c(0, "123456789", 9) == 0xe3069283u, "check value: %08x", (unsigned)sts__crc32c(0, "123456789", 9));
    CHECK(sts__crc32c_with(0, "123456789", 9, 0) == 0xe3069283u, "portable check value");
    CHECK(sts__crc32c(0, "", 0) == 0, "empty input");
    for (a = 0; a < 3; a++) {
        step = quick && strcmp(quick, "quick") == 0 ? 211 : 37;
        for (n = 0; n <= 40000; n += (n < 300 ? 1 : step)) {  /* every lane boundary: 3 x 4096 = 12288 */
            const uint8_t *p = buf + a * 5;
            uint32_t hw = sts__crc32c(7u * (uint32_t)n, p, n), sw = sts__crc32c_with(7u * (uint32_t)n, p, n, 0);
            uint32_t want = n < 4096 ? ref_crc(7u * (uint32_t)n, p, n) : sw;
            if (hw != want || sw != want) { CHECK(0, "length %zu offset %d: hw %08x sw %08x want %08x", n, a * 5, hw, sw, want); break; }
        }
    }
    {   /* large: three-lane blocks and the tail, piecewise in uneven pieces */
        uint32_t one = sts__crc32c(0, buf, big), want = sts__crc32c_with(0, buf, big, 0), piece = 0;
        size_t at = 0, k = 1;
        while (at < big) {
            size_t len = (k * 7919) % 300000 + 1;
            if (len > big - at) len = big - at;
            piece = sts__crc32c(piece, buf + at, len);
            at += len;
            k++;
        }
        CHECK(one == want, "large one pass: hw %08x sw %08x", one, want);
        CHECK(piece == want, "large in pieces: %08x want %08x", piece, want);
        if (big <= ((size_t)1 << 20)) CHECK(ref_crc(0, buf, big) == want, "large reference");
    }
    free(buf);
    printf("test_checksum: %s (CRC-32C, %s path)\n", failures ? "FAILED" : "all checks passed",
#ifdef STS__X86_DYN
           (sts__cpu_features() & STS__CPU_CRC) ? "sse4.2+pclmul" : "portable"
#else
           "portable"
#endif
    );
    return failures ? 1 : 0;
}
