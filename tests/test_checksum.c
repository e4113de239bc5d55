/* test_checksum.c - CRC-32C (the shard checksum of the manifest): the published check value, the
   hardware path (SSE4.2 + PCLMUL, three lanes) against the portable table loop and against a
   bit-at-a-time reference written here from the polynomial, for lengths up to 40,000 bytes (every
   one up to 300, then every 37th) at three alignments and for large buffers, and piecewise (a file in write order) against one pass;
   the KV writer's digest hook, with chunk CRCs made ahead of their write. */
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
        /* every length to 1100 (the 512-bit folds from 256 bytes: each count of 16-byte blocks and
           tail bytes after them), then every lane boundary of the crc32 lanes: 3 x 4096 = 12288 */
        for (n = 0; n <= 40000; n += (n < 1100 ? 1 : step)) {
            const uint8_t *p = buf + a * 5;
            uint32_t hw = sts__crc32c(7u * (uint32_t)n, p, n), sw = sts__crc32c_with(7u * (uint32_t)n, p, n, 0);
            uint32_t lanes = sts__crc32c_with(7u * (uint32_t)n, p, n, 2);
            uint32_t want = n < 4096 ? ref_crc(7u * (uint32_t)n, p, n) : sw;
            if (hw != want || sw != want || lanes != want) {
                CHECK(0, "length %zu offset %d: fastest %08x crc32 lanes %08x portable %08x want %08x", n, a * 5, hw,
                      lanes, sw, want);
                break;
            }
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
    {   /* joins: any split of a buffer, and runs of zeros, short and long */
        size_t splits[] = { 0, 1, 7, 4096, 12287, 12288, 12289, 100000, 999999 };
        size_t k, len = 1000000 < big ? 1000000 : big;
        uint32_t whole = sts__crc32c(0, buf, len);
        static uint8_t zero[1 << 20];
        uint32_t z1 = sts__crc32c(0, zero, sizeof zero);
        for (k = 0; k < sizeof splits / sizeof splits[0]; k++) {
            size_t a0 = splits[k] <= len ? splits[k] : len;
            uint32_t j = sts__crc32c_combine(sts__crc32c(0, buf, a0), sts__crc32c(0, buf + a0, len - a0), len - a0);
            CHECK(j == whole, "join at %zu: %08x want %08x", a0, j, whole);
        }
        CHECK(sts__crc32c_zeros(0, sizeof zero) == z1, "a MiB of zeros");
        CHECK(sts__crc32c_zeros(123, 5000) == sts__crc32c(123, zero, 5000), "5000 zeros after a value");
        {   /* 40 MiB of zeros by joins (the long path) against 40 passes over the buffer */
            uint32_t want = 77;
            int r;
            for (r = 0; r < 40; r++) want = sts__crc32c(want, zero, sizeof zero);
            CHECK(sts__crc32c_zeros(77, (uint64_t)40 << 20) == want, "40 MiB of zeros");
            want = sts__crc32c(want, zero, 12345);
            CHECK(sts__crc32c_zeros(77, ((uint64_t)40 << 20) + 12345) == want, "40 MiB + 12345 zeros");
        }
        {   /* runs of any length, to 2^64 - 1, in time (one join a bit of n; once O(n)): a run is its
               halves joined, and the long path agrees with the short one at the edge */
            static const uint64_t ns[] = { ((uint64_t)1 << 24) + 1, ((uint64_t)1 << 24) + 4097, ((uint64_t)3 << 25) + 7,
                                           ((uint64_t)1 << 40) - 1, 368934880584320ull, (uint64_t)1 << 63,
                                           ~(uint64_t)0, ~(uint64_t)0 - 4095 };
            size_t q;
            uint32_t edge = sts__crc32c_zeros(5, (uint64_t)1 << 24);  /* the short path */
            CHECK(sts__crc32c_zeros(5, ((uint64_t)1 << 24) + 1) == sts__crc32c(edge, zero, 1), "2^24 + 1 zeros");
            for (q = 0; q < sizeof ns / sizeof ns[0]; q++) {
                uint64_t n = ns[q], a0 = n / 3, b0 = n - a0;
                uint32_t whole = sts__crc32c_zeros(9, n), halves = sts__crc32c_zeros(sts__crc32c_zeros(9, a0), b0);
                CHECK(whole == halves, "%llu zeros: %08x, as %llu then %llu: %08x", (unsigned long long)n, whole,
                      (unsigned long long)a0, (unsigned long long)b0, halves);
            }
        }
    }
    {   /* the KV writer's digest hook: chunk CRCs made ahead (DIGEST items) joined when the same
           bytes are written; other pieces taken as they come; the rest dropped at the file's end */
        sts_task_writer *w = (sts_task_writer *)calloc(1, sizeof *w);
        const uint8_t *a = buf, *b = buf + 1000, *c = buf + 6000;
        size_t k, len = 6077 < big ? 6077 : big;
        uint32_t whole = sts__crc32c(0, buf, len);
        if (!w) return 2;
        /* a shard in order: two chunks ahead, then the file's data as the chunks whole and the last */
        sts__kv_digest(w, a, 1000, 1, 0);
        sts__kv_digest(w, b, 5000, 1, 0);
        CHECK(w->dig_n == 2, "two chunks ahead: %zu", w->dig_n);
        sts__kv_digest(w, a, 1000, 0, 0);
        sts__kv_digest(w, b, 5000, 0, 0);
        sts__kv_digest(w, c, len - 6000, 0, 0);
        CHECK(w->dig_n == 0, "both used: %zu left", w->dig_n);
        sts__kv_digest(w, NULL, 0, 0, 0);
        CHECK(w->dig_sealed == whole && w->dig_crc == 0, "in order: %08x want %08x", (unsigned)w->dig_sealed,
              (unsigned)whole);
        /* a shard that left its order: a chunk ahead, then its bytes in other pieces (not whole) */
        sts__kv_digest(w, a, 1000, 1, 0);
        sts__kv_digest(w, a, 10, 0, 0);
        sts__kv_digest(w, a + 10, 990, 0, 0);
        sts__kv_digest(w, b, len - 1000, 0, 0);
        CHECK(w->dig_n == 1, "a chunk ahead but never written whole stays until the end");
        sts__kv_digest(w, NULL, 0, 0, 0);
        CHECK(w->dig_sealed == whole && w->dig_n == 0, "out of order: %08x want %08x, %zu left",
              (unsigned)w->dig_sealed, (unsigned)whole, w->dig_n);
        /* more chunks ahead than the hook keeps (STS__DIG_AHEAD): the extra ones are taken as written */
        /* a CRC the caller took as it filled the chunk (known = 1 + it) is kept, not taken again:
           the right one gives the file's value, a wrong one shows that it was used */
        sts__kv_digest(w, a, 1000, 1, (uint64_t)sts__crc32c(0, a, 1000) + 1);
        sts__kv_digest(w, b, 5000, 1, 0);
        sts__kv_digest(w, a, 1000, 0, 0);
        sts__kv_digest(w, b, 5000, 0, 0);
        sts__kv_digest(w, c, len - 6000, 0, 0);
        sts__kv_digest(w, NULL, 0, 0, 0);
        CHECK(w->dig_sealed == whole, "a known CRC: %08x want %08x", (unsigned)w->dig_sealed, (unsigned)whole);
        sts__kv_digest(w, a, 1000, 1, (uint64_t)(sts__crc32c(0, a, 1000) ^ 1u) + 1);
        sts__kv_digest(w, a, 1000, 0, 0);
        sts__kv_digest(w, b, len - 1000, 0, 0);
        sts__kv_digest(w, NULL, 0, 0, 0);
        CHECK(w->dig_sealed != whole, "a known CRC is used as given");
        for (k = 0; k < STS__DIG_AHEAD + 44; k++) sts__kv_digest(w, buf + 20 * k, 20, 1, 0);
        CHECK(w->dig_n == STS__DIG_AHEAD, "%zu kept ahead", w->dig_n);
        for (k = 0; k < STS__DIG_AHEAD + 44; k++) sts__kv_digest(w, buf + 20 * k, 20, 0, 0);
        sts__kv_digest(w, NULL, 0, 0, 0);
        CHECK(w->dig_sealed == sts__crc32c(0, buf, 20 * (STS__DIG_AHEAD + 44)), "past the room: %08x",
              (unsigned)w->dig_sealed);
        free(w);
    }
    free(buf);
    printf("test_checksum: %s (CRC-32C, %s path)\n", failures ? "FAILED" : "all checks passed",
#ifdef STS__X86_DYN
           (sts__cpu_features() & STS__CPU_VCRC) ? "avx512+vpclmulqdq, and sse4.2+pclmul"
           : (sts__cpu_features() & STS__CPU_CRC) ? "sse4.2+pclmul" : "portable"
#else
           "portable"
#endif
    );
    return failures ? 1 : 0;
}
