/* test_dequant.c - dequantisation of ggml block types (sts_dequantize, the header's >>dequant).
     1. geometry: the ten types' block sizes, every other name refused (case, NULL, ggml types
        we do not decode);
     2. arguments: a count that is not a whole number of blocks, NULL pointers, count 0; nothing
        is written on an error;
     3. values: blocks packed here, element by element from the block layouts, from chosen
        integer quants and fp16 scales, decode to the exact value computed in double (then
        rounded once to F32): the decoders' element order and every field's position;
     4. every SIMD level against the scalar decoders, bit for bit, on random bytes (Inf and NaN
        scales included: NaN matches any NaN), at many block counts, source and output offsets;
     5. large outputs (STS_CONVERT_NT_BYTES and more) at two alignments, against scalar.
   The numpy cross-check (tests/check_dequant_numpy.py) is the independent reference on random
   blocks; this program runs under ASan + UBSan and valgrind too. STS_TEST_LEVEL=quick shrinks
   the counts. */
#define _POSIX_C_SOURCE 200809L
#define STS_IMPLEMENTATION
#include "../safetensors_spark.h"
#include "test_util.h"

#include <math.h>

typedef struct dq_geom { const char *name; uint32_t elems, bytes; } dq_geom;
static const dq_geom geoms[] = {
    { "Q8_0", 32, 34 }, { "Q4_0", 32, 18 }, { "Q4_1", 32, 20 }, { "Q5_0", 32, 22 }, { "Q5_1", 32, 24 },
    { "Q2_K", 256, 84 }, { "Q3_K", 256, 110 }, { "Q4_K", 256, 144 }, { "Q5_K", 256, 176 }, { "Q6_K", 256, 210 },
};
#define NTYPES ((int)(sizeof geoms / sizeof geoms[0]))

static tu_rng rng = { 0x5eed0014u };

/* ---- 1. geometry ---- */
static void test_geometry(void **state) {
    static const char *const others[] = { "", "q8_0", "Q8_1", "Q8_K", "IQ4_NL", "IQ2_XXS", "TQ1_0", "MXFP4", "F32",
                                          "F16", "BF16", "Q4_K ", " Q4_K", "Q4_", "Q4_KK", "Q6_K\n", "Q40" };
    int t;
    size_t i;
    (void)state;
    for (t = 0; t < NTYPES; t++) {
        uint32_t e = 7, b = 7;
        assert_int_equal(sts_dequantize_supported(geoms[t].name), 1);
        assert_int_equal(sts_dequantize_block(geoms[t].name, &e, &b), 1);
        assert_int_equal(e, geoms[t].elems);
        assert_int_equal(b, geoms[t].bytes);
        assert_int_equal(sts_dequantize_block(geoms[t].name, NULL, NULL), 1);
    }
    for (i = 0; i < sizeof others / sizeof others[0]; i++) {
        uint32_t e = 7, b = 9;
        float y[1] = { 5.0f };
        uint8_t src[256] = { 0 };
        assert_int_equal(sts_dequantize_supported(others[i]), 0);
        assert_int_equal(sts_dequantize_block(others[i], &e, &b), 0);
        assert_int_equal(e, 7);
        assert_int_equal(b, 9);
        assert_int_equal(sts_dequantize(y, src, others[i], 0), STS_ERR_UNSUPPORTED);
        assert_int_equal(sts_dequantize(y, src, others[i], 32), STS_ERR_UNSUPPORTED);
    }
    assert_int_equal(sts_dequantize_supported(NULL), 0);
    assert_int_equal(sts_dequantize_block(NULL, NULL, NULL), 0);
    assert_int_equal(sts_dequantize(NULL, NULL, NULL, 0), STS_ERR_UNSUPPORTED);
}

/* ---- 2. arguments ---- */
static void test_arguments(void **state) {
    int t;
    (void)state;
    for (t = 0; t < NTYPES; t++) {
        const uint32_t be = geoms[t].elems;
        const size_t bad[] = { 1, be - 1, be + 1, 2 * be - 1, 3 * be + 16 };
        uint8_t src[3 * 210 + 64];
        float y[3 * 256 + 16];
        size_t i;
        memset(src, 0x5a, sizeof src);
        for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
            size_t k;
            for (k = 0; k < sizeof y / sizeof y[0]; k++) y[k] = -1.0f;
            assert_int_equal(sts_dequantize(y, src, geoms[t].name, bad[i]), STS_ERR_INVALID_ARGUMENT);
            for (k = 0; k < sizeof y / sizeof y[0]; k++) assert_true(y[k] == -1.0f);   /* nothing written */
        }
        assert_int_equal(sts_dequantize(NULL, src, geoms[t].name, be), STS_ERR_INVALID_ARGUMENT);
        assert_int_equal(sts_dequantize(y, NULL, geoms[t].name, be), STS_ERR_INVALID_ARGUMENT);
        assert_int_equal(sts_dequantize(NULL, NULL, geoms[t].name, 0), STS_OK);
        assert_int_equal(sts_dequantize(y, src, geoms[t].name, 0), STS_OK);
        assert_true(y[0] == -1.0f);
        assert_int_equal(sts_dequantize(y, src, geoms[t].name, 3 * (size_t)be), STS_OK);
        assert_true(y[3 * be] == -1.0f);   /* exactly count floats */
    }
}

/* ---- 3. values from packed blocks ----
   A reference of its own: fp16 decoded by ldexp, values computed in double (exact for the
   moderate scales used: 2^-10 .. 2^5), rounded once to float. */
static double f16_value(uint32_t h) {
    int e = (int)(h >> 10 & 31);
    double m = (double)(h & 1023), v = e ? ldexp(1024.0 + m, e - 25) : ldexp(m, -24);
    return h & 0x8000u ? -v : v;
}
static uint32_t moderate_f16(void) {   /* exponent 2^-10 .. 2^5, any sign and mantissa */
    return (uint32_t)(tu_below(&rng, 2) << 15 | (5 + tu_below(&rng, 16)) << 10 | tu_below(&rng, 1024));
}
static void put16(uint8_t *p, uint32_t h) { p[0] = (uint8_t)h; p[1] = (uint8_t)(h >> 8); }
static int rnd_in(int lo, int hi) { return lo + (int)tu_below(&rng, (uint32_t)(hi - lo + 1)); }

/* Fills one block of type t from random quants and scales and returns the expected values. */
static void pack_block(int t, uint8_t *b, double *want) {
    int e, i;
    memset(b, 0, geoms[t].bytes);
    switch (t) {
    case 0: {   /* Q8_0: d, 32 int8 */
        uint32_t d = moderate_f16();
        put16(b, d);
        for (e = 0; e < 32; e++) {
            int q = rnd_in(-128, 127);
            b[2 + e] = (uint8_t)(q & 255);
            want[e] = f16_value(d) * q;
        }
        break;
    }
    case 1: case 2: case 3: case 4: {   /* Q4_0, Q4_1, Q5_0, Q5_1 */
        const int five = t >= 3, minimum = t == 2 || t == 4;
        const int qs = 2 + 2 * minimum + 4 * five;          /* where the nibbles start */
        uint32_t d = moderate_f16(), m = moderate_f16(), qh = 0;
        put16(b, d);
        if (minimum) put16(b + 2, m);
        for (e = 0; e < 32; e++) {
            int u = rnd_in(0, five ? 31 : 15);
            b[qs + e % 16] = (uint8_t)(b[qs + e % 16] | (u & 15) << (4 * (e / 16)));
            if (five) qh |= (uint32_t)(u >> 4) << e;
            want[e] = minimum ? f16_value(d) * u + f16_value(m) : f16_value(d) * (u - (five ? 16 : 8));
        }
        if (five) for (i = 0; i < 4; i++) b[qs - 4 + i] = (uint8_t)(qh >> (8 * i));
        break;
    }
    case 5: {   /* Q2_K: scales[16] (scale | min << 4), qs[64], d, dmin */
        uint32_t d = moderate_f16(), dm = moderate_f16();
        int sc[16], mn[16];
        put16(b + 80, d);
        put16(b + 82, dm);
        for (i = 0; i < 16; i++) {
            sc[i] = rnd_in(0, 15);
            mn[i] = rnd_in(0, 15);
            b[i] = (uint8_t)(sc[i] | mn[i] << 4);
        }
        for (e = 0; e < 256; e++) {
            int q = rnd_in(0, 3), at = 16 + 32 * (e / 128) + e % 32;
            b[at] = (uint8_t)(b[at] | q << (2 * (e % 128 / 32)));
            want[e] = f16_value(d) * sc[e / 16] * q - f16_value(dm) * mn[e / 16];
        }
        break;
    }
    case 6: {   /* Q3_K: hmask[32], qs[64], scales[12], d */
        uint32_t d = moderate_f16();
        int sc[16];
        put16(b + 108, d);
        for (i = 0; i < 16; i++) {
            sc[i] = rnd_in(0, 63);
            b[96 + i % 8] = (uint8_t)(b[96 + i % 8] | (sc[i] & 15) << (4 * (i / 8)));
            b[104 + i % 4] = (uint8_t)(b[104 + i % 4] | (sc[i] >> 4) << (2 * (i / 4)));
        }
        for (e = 0; e < 256; e++) {
            int u = rnd_in(0, 7), at = 32 + 32 * (e / 128) + e % 32;   /* the quant is u - 4 */
            b[at] = (uint8_t)(b[at] | (u & 3) << (2 * (e % 128 / 32)));
            b[e % 32] = (uint8_t)(b[e % 32] | (u >> 2) << (e / 32));
            want[e] = f16_value(d) * (sc[e / 16] - 32) * (u - 4);
        }
        break;
    }
    case 7: case 8: {   /* Q4_K, Q5_K: d, dmin, scales[12], (qh[32],) qs[128] */
        const int five = t == 8, qs = five ? 48 : 16;
        uint32_t d = moderate_f16(), dm = moderate_f16();
        int sc[8], mn[8];
        put16(b, d);
        put16(b + 2, dm);
        for (i = 0; i < 8; i++) {
            sc[i] = rnd_in(0, 63);
            mn[i] = rnd_in(0, 63);
            if (i < 4) {
                b[4 + i] = (uint8_t)(b[4 + i] | sc[i]);
                b[8 + i] = (uint8_t)(b[8 + i] | mn[i]);
            } else {
                b[8 + i] = (uint8_t)((sc[i] & 15) | (mn[i] & 15) << 4);
                b[i] = (uint8_t)(b[i] | (sc[i] >> 4) << 6);       /* byte (i - 4) of the 12 */
                b[4 + i] = (uint8_t)(b[4 + i] | (mn[i] >> 4) << 6); /* byte i of the 12 */
            }
        }
        for (e = 0; e < 256; e++) {
            int u = rnd_in(0, five ? 31 : 15), at = qs + 32 * (e / 64) + e % 32;
            b[at] = (uint8_t)(b[at] | (u & 15) << (4 * (e % 64 / 32)));
            if (five) b[16 + e % 32] = (uint8_t)(b[16 + e % 32] | (u >> 4) << (e / 32));
            want[e] = f16_value(d) * sc[e / 32] * u - f16_value(dm) * mn[e / 32];
        }
        break;
    }
    default: {  /* Q6_K: ql[128], qh[64], scales[16] int8, d */
        uint32_t d = moderate_f16();
        int sc[16];
        put16(b + 208, d);
        for (i = 0; i < 16; i++) {
            sc[i] = rnd_in(-128, 127);
            b[192 + i] = (uint8_t)(sc[i] & 255);
        }
        for (e = 0; e < 256; e++) {
            int u = rnd_in(0, 63), k = e % 128 / 32;   /* the quant is u - 32 */
            int lo = 64 * (e / 128) + 32 * (k % 2) + e % 32, hi = 128 + 32 * (e / 128) + e % 32;
            b[lo] = (uint8_t)(b[lo] | (u & 15) << (4 * (k / 2)));
            b[hi] = (uint8_t)(b[hi] | (u >> 4) << (2 * k));
            want[e] = f16_value(d) * sc[e / 16] * (u - 32);
        }
        break;
    }
    }
}

static void test_packed_values(void **state) {
    int t, rep, reps = tu_quick() ? 20 : 400;
    (void)state;
    for (t = 0; t < NTYPES; t++) {
        enum { NB = 5 };
        uint8_t blocks[NB * 210];
        double want[NB * 256];
        float got[NB * 256];
        const uint32_t be = geoms[t].elems, bb = geoms[t].bytes;
        for (rep = 0; rep < reps; rep++) {
            int k, L;
            for (k = 0; k < NB; k++) pack_block(t, blocks + k * bb, want + k * be);
            for (L = 0; L <= sts__isa(); L++) {
                uint32_t i;
                assert_int_equal(sts__dequantize_at(got, blocks, geoms[t].name, NB * be, L), STS_OK);
                for (i = 0; i < NB * be; i++)
                    if (got[i] != (float)want[i] || signbit(got[i]) != signbit((float)want[i]))
                        TU_FAIL("%s level %d: element %u: %.9g, want %.9g", geoms[t].name, L, i, (double)got[i], want[i]);
            }
        }
    }
}

/* ---- 4. every SIMD level against scalar ---- */
static int same_bits(const float *a, const float *b, size_t n, size_t *at) {
    size_t i;
    for (i = 0; i < n; i++) {
        uint32_t x, y;
        memcpy(&x, a + i, 4);
        memcpy(&y, b + i, 4);
        if (x != y && !(isnan(a[i]) && isnan(b[i]))) { *at = i; return 0; }
    }
    return 1;
}
static int levels_here(int *lv) {   /* the levels whose decoders differ from the level below */
    int n = 0, L, t;
    for (L = STS__ISA_SCALAR + 1; L <= sts__isa(); L++) {
        int differs = 0;
        for (t = 0; t < NTYPES; t++) differs |= sts__dq_kernel_at(t, L) != sts__dq_kernel_at(t, L - 1);
        if (differs) lv[n++] = L;
    }
    return n;
}

static void test_simd_matches_scalar(void **state) {
    int lv[4], nl = levels_here(lv), t, li;
    const int maxb = tu_quick() ? 9 : 40;
    (void)state;
    print_message("    isa here: %s; SIMD levels compared with scalar: %d\n", sts_convert_isa(), nl);
    if (!nl) { print_message("    (no SIMD decoders on this build or machine: nothing to compare)\n"); return; }
    for (t = 0; t < NTYPES; t++) {
        const uint32_t be = geoms[t].elems, bb = geoms[t].bytes;
        uint8_t *src = (uint8_t *)malloc((size_t)maxb * bb + 8);
        float *want = (float *)malloc(((size_t)maxb * be + 8) * 4), *got = (float *)malloc(((size_t)maxb * be + 8) * 4);
        int nb;
        TU_CHECK(src && want && got);
        for (nb = 1; nb <= maxb; nb++) {
            size_t so, dof, i, at;
            for (i = 0; i < (size_t)maxb * bb + 8; i++) src[i] = (uint8_t)tu_next(&rng);
            for (so = 0; so < 4; so++)
                for (dof = 0; dof < 8; dof += tu_quick() ? 7 : 1) {
                    const size_t n = (size_t)nb * be;
                    assert_int_equal(sts__dequantize_at(want, src + so, geoms[t].name, n, STS__ISA_SCALAR), STS_OK);
                    for (li = 0; li < nl; li++) {
                        for (i = 0; i < n + 8; i++) got[i] = -7.0f;
                        assert_int_equal(sts__dequantize_at(got + dof, src + so, geoms[t].name, n, lv[li]), STS_OK);
                        if (!same_bits(got + dof, want, n, &at))
                            TU_FAIL("%s, %d blocks, src+%zu, dst+%zu floats, level %s: element %zu: %.9g, scalar %.9g",
                                    geoms[t].name, nb, so, dof, sts__isa_name(lv[li]), at, (double)got[dof + at],
                                    (double)want[at]);
                        for (i = 0; i < dof; i++) assert_true(got[i] == -7.0f);
                        assert_true(got[dof + n] == -7.0f);
                    }
                }
        }
        free(src);
        free(want);
        free(got);
    }
}

/* ---- 5. large outputs (sts_convert's non-temporal size) through sts_dequantize ---- */
static void test_large(void **state) {
    const size_t n = STS_CONVERT_NT_BYTES / 4 + 256;   /* a whole number of blocks of every type */
    float *want = (float *)malloc(n * 4), *buf = (float *)malloc(n * 4 + 64);
    uint8_t *src = (uint8_t *)malloc(n / 32 * 34 + 64);
    int t;
    (void)state;
    TU_CHECK(want && buf && src);
    for (t = 0; t < NTYPES; t++) {
        const size_t bytes = n / geoms[t].elems * geoms[t].bytes;
        size_t i, off, at;
        if (tu_quick() && t != 0 && t != 7) continue;   /* Q8_0 and Q4_K under the sanitizers */
        for (i = 0; i < bytes; i++) src[i] = (uint8_t)tu_next(&rng);
        assert_int_equal(sts__dequantize_at(want, src, geoms[t].name, n, STS__ISA_SCALAR), STS_OK);
        for (off = 0; off < 2; off++) {   /* floats past a 16-byte boundary */
            float *dst = (float *)(void *)((uint8_t *)buf + (16 - (uintptr_t)buf % 16) % 16) + off;
            assert_int_equal(sts_dequantize(dst, src, geoms[t].name, n), STS_OK);
            if (!same_bits(dst, want, n, &at))
                TU_FAIL("%s, %zu elements at dst+%zu floats: element %zu: %.9g, scalar %.9g", geoms[t].name, n, off, at,
                        (double)dst[at], (double)want[at]);
        }
    }
    free(want);
    free(buf);
    free(src);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_geometry),
        cmocka_unit_test(test_arguments),
        cmocka_unit_test(test_packed_values),
        cmocka_unit_test(test_simd_matches_scalar),
        cmocka_unit_test(test_large),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
