/* test_codec.c - tests of the dtype codecs (layer 7, sts_convert) against an independent reference.

   Every SIMD path the machine has is driven through the private sts__convert_at (levels scalar,
   sse2/neon, avx2+f16c, avx512bw), and the best one through the public sts_convert. Built twice by
   tests/codec.mk: as is, and with -DSTS_NO_SIMD (scalar code only). STS_TEST_LEVEL=quick (the
   ASan, valgrind and qemu runs) samples the exhaustive sweeps (every 16411th pattern plus edge cases;
   the full run checks every 4099th against the slow reference, then all of them).

   Plain C with its own tiny harness, so that it also runs under qemu on big-endian and ARM hosts;
   it ends with "test_codec: N passed, M failed" and exits non-zero on any failure. */
#define STS_CONVERT_NT_BYTES ((size_t)1 << 20) /* small, so that the non-temporal paths get tested */
#define STS_IMPLEMENTATION
#include "../safetensors_spark.h"
#define TU_STANDALONE   /* plain C: no cmocka (it also runs under qemu) */
#include "test_util.h"

#include <pthread.h>
#include "codec_ref.h"

#if defined(STS__X86_DYN) && defined(__SSE__)
#  include <xmmintrin.h>
#  define TEST_MXCSR 1
#endif

/* ---- harness ---- */
static int quick;
static long failures;
static int reports;
#define FAILF(...) do { failures++; if (reports++ < 16) { fprintf(stderr, "    FAIL: "); fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); } } while (0)
#define CHECK(c, ...) do { if (!(c)) FAILF(__VA_ARGS__); } while (0)

static void *xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) { fprintf(stderr, "test_codec: out of memory\n"); exit(2); }
    return p;
}
static tu_rng rng = { 0x9e3779b97f4a7c15ull };
static uint64_t rnd(void) { return tu_next(&rng); }

/* ---- conversion paths ---- */
static int max_isa;
/* L >= 0: that instruction-set level through the private entry; L < 0: the public sts_convert. */
static sts_result conv(int L, void *d, sts_dtype dt, const void *s, sts_dtype st, size_t n, sts_rounding r) {
    if (L < 0) return sts_convert(d, dt, s, st, n, r);
    return sts__convert_at(d, dt, s, st, n, r, L, NULL);
}
static const char *path_name(int L) { return L < 0 ? "sts_convert" : sts__isa_name(L); }
/* The distinct paths of hot kernel k: each level whose kernel differs from the level below; the
   best one is taken through the public entry point. Returns the count. */
static int hot_paths(int k, int *paths) {
    int L, n = 0;
    for (L = 0; L <= max_isa; L++)
        if (L == 0 || sts__kernel_at(k, L) != sts__kernel_at(k, L - 1))
            paths[n++] = sts__kernel_at(k, L) == sts__kernel_at(k, max_isa) ? -1 : L;
    return n;
}
static int all_levels(int *paths) {   /* for pairs without a hot kernel: every level, then public */
    int L, n = 0;
    for (L = 0; L <= max_isa; L++) paths[n++] = L;
    paths[n++] = -1;
    return n;
}

/* ---- checking outputs ---- */
static int is_nan_bits(uint64_t u, sts_dtype t) {
    switch (t) {
    case STS_DTYPE_F16: return (u & 0x7c00) == 0x7c00 && (u & 0x3ff);
    case STS_DTYPE_BF16: return (u & 0x7f80) == 0x7f80 && (u & 0x7f);
    case STS_DTYPE_F32: return (u & 0x7f800000u) == 0x7f800000u && (u & 0x7fffffu);
    case STS_DTYPE_F64: return (u & 0x7ff0000000000000ull) == 0x7ff0000000000000ull && (u & 0xfffffffffffffull);
    default: return 0;
    }
}
/* Compare n converted elements (dst bytes) with the reference for the source bytes. Returns the
   number of mismatches; reports the first few. */
static long check_against_ref(const uint8_t *src, sts_dtype st, const uint8_t *dst, sts_dtype dt, size_t n,
                              int nearest, const char *what) {
    size_t i, sb = sts_dtype_bits(st) / 8, db = sts_dtype_bits(dt) / 8;
    long bad = 0;
    for (i = 0; i < n; i++) {
        int nan;
        ref_src s = ref_read(src + i * sb, st);
        uint64_t want = ref_convert(s, dt, nearest, &nan), got = ref_load(dst + i * db, (int)db);
        if (nan ? !is_nan_bits(got, dt) : got != want) {
            bad++;
            FAILF("%s: %s 0x%0*llx -> %s (%s): got 0x%0*llx, want %s0x%0*llx", what, sts_dtype_name(st), (int)sb * 2,
                  (unsigned long long)ref_load(src + i * sb, (int)sb), sts_dtype_name(dt), nearest ? "nearest" : "truncate",
                  (int)db * 2, (unsigned long long)got, nan ? "a NaN, e.g. " : "", (int)db * 2, (unsigned long long)want);
        }
    }
    return bad;
}

/* ---- 1. every F32 pattern into F16 and BF16, both roundings, every path ---- */
#define SWEEP_CHUNK 65536u
typedef struct sweep_job {
    int tid, nthreads;
    const ref_grid *gh, *gb;
    int npaths[4], paths[4][8];
    long bad[4][8], differ[4][8];    /* vs reference (NaN by class); vs the scalar path, bit for bit */
    long swept[4][8];                /* chunks converted */
    char first[512];
} sweep_job;
static const sts_dtype sweep_dt[4] = { STS_DTYPE_F16, STS_DTYPE_F16, STS_DTYPE_BF16, STS_DTYPE_BF16 };
static const sts_rounding sweep_rd[4] = { STS_ROUND_TRUNCATE, STS_ROUND_NEAREST_EVEN, STS_ROUND_TRUNCATE, STS_ROUND_NEAREST_EVEN };
static const int sweep_k[4] = { STS__K_F32_F16_RZ, STS__K_F32_F16_RNE, STS__K_F32_BF16_RZ, STS__K_F32_BF16_RNE };
static const char *sweep_name[4] = { "F32->F16 truncate", "F32->F16 nearest", "F32->BF16 truncate", "F32->BF16 nearest" };

/* n little-endian copies of a 16-bit value (doubling copies) */
static void fill16(uint8_t *p, size_t n, uint32_t v) {
    size_t k;
    if (!n) return;
    p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8);
    for (k = 1; k < n; k *= 2) memcpy(p + 2 * k, p, 2 * (k < n - k ? k : n - k));
}
static void *sweep_worker(void *arg) {
    sweep_job *J = (sweep_job *)arg;
    uint8_t *in = (uint8_t *)xmalloc(SWEEP_CHUNK * 4), *out = (uint8_t *)xmalloc(SWEEP_CHUNK * 2);
    uint8_t *want[4], *scal[4];   /* little-endian 16-bit values */
    uint64_t c, nchunks = (1ull << 32) / SWEEP_CHUNK;
    int co, p;
    for (co = 0; co < 4; co++) { want[co] = (uint8_t *)xmalloc(SWEEP_CHUNK * 2); scal[co] = (uint8_t *)xmalloc(SWEEP_CHUNK * 2); }
    for (c = (uint64_t)J->tid; c < nchunks; c += (uint64_t)J->nthreads) {
        uint32_t base = (uint32_t)(c * SWEEP_CHUNK), i, sign = base & 0x80000000u ? 0x8000u : 0, kh, kb;
        int nan_chunk = (base & 0x7fffffffu) + SWEEP_CHUNK - 1 > 0x7f800000u;
        for (i = 0; i < SWEEP_CHUNK; i++) {
            uint32_t x = base + i;
            in[4 * i] = (uint8_t)x; in[4 * i + 1] = (uint8_t)(x >> 8); in[4 * i + 2] = (uint8_t)(x >> 16); in[4 * i + 3] = (uint8_t)(x >> 24);
        }
        /* expected values by walking the grids; all four are constant between change points (grid
           values, midpoints, one past a midpoint), so they are filled run by run */
        kh = ref_grid_find(J->gh, base & 0x7fffffffu);
        kb = ref_grid_find(J->gb, base & 0x7fffffffu);
        for (i = 0; i < SWEEP_CHUNK;) {
            uint32_t a = (base + i) & 0x7fffffffu, end, run;
            if (a >= 0x7f800000u) {   /* Inf, then NaNs (checked by class below) up to the chunk's end */
                run = SWEEP_CHUNK - i;
                fill16(want[0] + 2 * i, run, sign | 0x7c00u); fill16(want[1] + 2 * i, run, sign | 0x7c00u);
                fill16(want[2] + 2 * i, run, sign | 0x7f80u); fill16(want[3] + 2 * i, run, sign | 0x7f80u);
                break;
            }
            while (J->gh->lo[kh + 1] <= a) kh++;
            while (J->gb->lo[kb + 1] <= a) kb++;
            end = 0x7f800000u;
            if (J->gh->lo[kh + 1] < end) end = J->gh->lo[kh + 1];
            if (J->gb->lo[kb + 1] < end) end = J->gb->lo[kb + 1];
            if (kh < J->gh->n) { uint32_t m = J->gh->mid[kh]; if (m > a && m < end) end = m; if (m == a) end = a + 1; }
            if (kb < J->gb->n) { uint32_t m = J->gb->mid[kb]; if (m > a && m < end) end = m; if (m == a) end = a + 1; }
            run = end - a;
            if (run > SWEEP_CHUNK - i) run = SWEEP_CHUNK - i;
            fill16(want[0] + 2 * i, run, sign | ref_grid_pick(J->gh, kh, a, 0));
            fill16(want[1] + 2 * i, run, sign | ref_grid_pick(J->gh, kh, a, 1));
            fill16(want[2] + 2 * i, run, sign | ref_grid_pick(J->gb, kb, a, 0));
            fill16(want[3] + 2 * i, run, sign | ref_grid_pick(J->gb, kb, a, 1));
            i += run;
        }
        for (co = 0; co < 4; co++) {
            for (p = 0; p < J->npaths[co]; p++) {
                uint8_t *o = p == 0 ? scal[co] : out;
                /* With SIMD paths, the scalar one (paths[0]) runs on NaN chunks only, to check the
                   SIMD bits there; the STS_NO_SIMD build sweeps it over everything. */
                if (p == 0 && J->npaths[co] > 1 && !nan_chunk) continue;
                conv(J->paths[co][p], o, sweep_dt[co], in, STS_DTYPE_F32, SWEEP_CHUNK, sweep_rd[co]);
                J->swept[co][p]++;
                if (memcmp(o, want[co], SWEEP_CHUNK * 2) != 0) {   /* NaN chunks, or a mismatch */
                    for (i = 0; i < SWEEP_CHUNK; i++) {
                        uint32_t got = ref_load(o + 2 * i, 2), x = base + i, w = ref_load(want[co] + 2 * i, 2);
                        int nan = (x & 0x7fffffffu) > 0x7f800000u;
                        if (nan ? is_nan_bits(got, sweep_dt[co]) : got == w) continue;
                        if (J->bad[co][p]++ == 0 && !J->first[0])
                            snprintf(J->first, sizeof J->first, "%s via %s: F32 0x%08x -> 0x%04x, want %s0x%04x",
                                     sweep_name[co], path_name(J->paths[co][p]), (unsigned)x, (unsigned)got,
                                     nan ? "a NaN, not " : "", (unsigned)w);
                    }
                }
                if (p > 0 && nan_chunk && J->npaths[co] > 1 && memcmp(o, scal[co], SWEEP_CHUNK * 2) != 0) {
                    for (i = 0; i < SWEEP_CHUNK; i++)
                        if (memcmp(o + 2 * i, scal[co] + 2 * i, 2) != 0) {
                            if (J->differ[co][p]++ == 0 && !J->first[0])
                                snprintf(J->first, sizeof J->first, "%s via %s: F32 0x%08x -> 0x%04x, scalar path gives 0x%04x",
                                         sweep_name[co], path_name(J->paths[co][p]), (unsigned)(base + i),
                                         (unsigned)ref_load(o + 2 * i, 2), (unsigned)ref_load(scal[co] + 2 * i, 2));
                        }
                }
            }
        }
    }
    for (co = 0; co < 4; co++) { free(want[co]); free(scal[co]); }
    free(in); free(out);
    return NULL;
}

/* The edge patterns of F32 that every sampled sweep includes. */
static const uint32_t f32_edges[] = {
    0x00000000u, 0x00000001u, 0x007fffffu, 0x00800000u, 0x33000000u, 0x33000001u, 0x337fffffu, 0x33800000u,
    0x33c00000u, 0x387fc000u, 0x387fe000u, 0x387fffffu, 0x38800000u, 0x3f800000u, 0x3f801000u, 0x3f802000u,
    0x3f803000u, 0x3f808000u, 0x3f818000u, 0x3f817fffu, 0x477fe000u, 0x477fefffu, 0x477ff000u, 0x477fffffu,
    0x47800000u, 0x7f7f7fffu, 0x7f7f8000u, 0x7f7fffffu, 0x7f800000u, 0x7f800001u, 0x7f810000u, 0x7f80ffffu,
    0x7fa00000u, 0x7fc00000u, 0x7fffffffu, 0x7f802000u, 0x7f801fffu };

/* Every 4099th F32 pattern (quick: every 16411th, for valgrind and qemu), and the edges. */
static size_t f32_sample(uint8_t **out) {
    uint64_t x, step = quick ? 16411 : 4099;
    size_t n = 0, cap = (size_t)((1ull << 32) / step) + 2 * (sizeof f32_edges / sizeof f32_edges[0]) + 8, k;
    uint8_t *b = (uint8_t *)xmalloc(cap * 4);
    for (x = 0; x < (1ull << 32); x += step) ref_store(b + 4 * n++, x, 4);
    for (k = 0; k < sizeof f32_edges / sizeof f32_edges[0]; k++) {
        ref_store(b + 4 * n++, f32_edges[k], 4);
        ref_store(b + 4 * n++, f32_edges[k] | 0x80000000u, 4);
    }
    *out = b;
    return n;
}

static void test_f32_to_16bit(void) {
    int co, p, t;
    uint8_t *smp, *out;
    size_t ns = f32_sample(&smp);
    long checks = 0;
    out = (uint8_t *)xmalloc(ns * 2 * 2);
    /* sampled: the first path against the slow reference, the others bit for bit against it */
    for (co = 0; co < 4; co++) {
        int paths[8], np = hot_paths(sweep_k[co], paths);
        for (p = 0; p < np; p++) {
            char what[96];
            uint8_t *o = p == 0 ? out : out + ns * 2;
            snprintf(what, sizeof what, "sample %s via %s", sweep_name[co], path_name(paths[p]));
            CHECK(conv(paths[p], o, sweep_dt[co], smp, STS_DTYPE_F32, ns, sweep_rd[co]) == STS_OK, "%s: result", what);
            if (p == 0) check_against_ref(smp, STS_DTYPE_F32, o, sweep_dt[co], ns, sweep_rd[co] == STS_ROUND_NEAREST_EVEN, what);
            else CHECK(memcmp(o, out, ns * 2) == 0, "%s: bits differ from %s", what, path_name(paths[0]));
            checks += (long)ns;
        }
    }
    printf("    sampled: %zu F32 patterns x 4 conversions, %ld checks (first path against the slow reference, the others bit for bit)\n", ns, checks);
    free(smp); free(out);
    if (!quick) {   /* all 2^32 patterns, against the grid reference and the scalar path's bits */
        ref_grid gh, gb;
        sweep_job jobs[4];
        pthread_t th[4];
        long total = 0;
        int nthreads = 2;
        if (!ref_grid_init(&gh, STS_DTYPE_F16) || !ref_grid_init(&gb, STS_DTYPE_BF16)) { FAILF("grid: alloc, or a value not exact in F32"); return; }
        for (t = 0; t < nthreads; t++) {
            memset(&jobs[t], 0, sizeof jobs[t]);
            jobs[t].tid = t; jobs[t].nthreads = nthreads; jobs[t].gh = &gh; jobs[t].gb = &gb;
            for (co = 0; co < 4; co++) jobs[t].npaths[co] = hot_paths(sweep_k[co], jobs[t].paths[co]);
            if (pthread_create(&th[t], NULL, sweep_worker, &jobs[t]) != 0) { FAILF("pthread_create"); return; }
        }
        for (t = 0; t < nthreads; t++) pthread_join(th[t], NULL);
        for (co = 0; co < 4; co++) {
            printf("    %-19s", sweep_name[co]);
            for (p = 0; p < jobs[0].npaths[co]; p++) {
                long bad = 0, differ = 0, swept = 0;
                for (t = 0; t < nthreads; t++) { bad += jobs[t].bad[co][p]; differ += jobs[t].differ[co][p]; swept += jobs[t].swept[co][p]; }
                printf("  %s: %lld patterns", path_name(jobs[0].paths[co][p]), (long long)swept * SWEEP_CHUNK);
                if (bad) FAILF("%s via %s: %ld patterns differ from the reference", sweep_name[co], path_name(jobs[0].paths[co][p]), bad);
                if (differ) FAILF("%s via %s: %ld outputs differ from the scalar path's bits", sweep_name[co], path_name(jobs[0].paths[co][p]), differ);
                total += swept;
            }
            printf("\n");
        }
        for (t = 0; t < nthreads; t++) if (jobs[t].first[0]) FAILF("first: %s", jobs[t].first);
        printf("    exhaustive: %lld conversions checked against the grid reference (NaN by class); on every chunk\n"
               "    holding NaNs, each SIMD path's bits equal the scalar path's bit for bit\n", (long long)total * SWEEP_CHUNK);
        ref_grid_free(&gh); ref_grid_free(&gb);
    }
}

/* ---- 2. every 16-bit and 8-bit float pattern decoded to F32 and F64 ---- */
static void test_decode_small_floats(void) {
    static const sts_dtype srcs[] = { STS_DTYPE_F16, STS_DTYPE_BF16, STS_DTYPE_F8_E5M2, STS_DTYPE_F8_E4M3,
                                      STS_DTYPE_F8_E8M0, STS_DTYPE_F8_E4M3FNUZ, STS_DTYPE_F8_E5M2FNUZ };
    size_t si, i;
    long checks = 0;
    uint8_t *in = (uint8_t *)xmalloc(65536 * 2), *out = (uint8_t *)xmalloc(65536 * 8);
    for (si = 0; si < sizeof srcs / sizeof srcs[0]; si++) {
        sts_dtype st = srcs[si];
        size_t sb = sts_dtype_bits(st) / 8, n = sb == 2 ? 65536 : 256;
        int paths[8], np, p, k = st == STS_DTYPE_F16 ? STS__K_F16_F32 : st == STS_DTYPE_BF16 ? STS__K_BF16_F32 : -1;
        for (i = 0; i < n; i++) ref_store(in + i * sb, i, (int)sb);
        np = k >= 0 ? hot_paths(k, paths) : all_levels(paths);
        for (p = 0; p < np; p++) {
            char what[80];
            snprintf(what, sizeof what, "decode via %s", path_name(paths[p]));
            CHECK(conv(paths[p], out, STS_DTYPE_F32, in, st, n, STS_ROUND_TRUNCATE) == STS_OK, "%s", what);
            check_against_ref(in, st, out, STS_DTYPE_F32, n, 0, what);
            CHECK(conv(paths[p], out, STS_DTYPE_F64, in, st, n, STS_ROUND_NEAREST_EVEN) == STS_OK, "%s", what);
            check_against_ref(in, st, out, STS_DTYPE_F64, n, 1, what);
            checks += 2 * (long)n;
        }
        /* the general mechanism alone gives the same (NaN by class) */
        sts__convert_generic(out, STS_DTYPE_F32, in, st, n, 0);
        check_against_ref(in, st, out, STS_DTYPE_F32, n, 0, "decode via the general mechanism");
        checks += (long)n;
    }
    printf("    %ld checks: all 65536 F16 and BF16 and all 256 of each F8 format -> F32 and F64, every path\n", checks);
    free(in); free(out);
}

/* ---- 3. the whole matrix: every numeric source x the 12 targets x both roundings ---- */
static const sts_dtype numeric_src[] = { STS_DTYPE_BOOL, STS_DTYPE_U8, STS_DTYPE_I8, STS_DTYPE_U16, STS_DTYPE_I16,
    STS_DTYPE_U32, STS_DTYPE_I32, STS_DTYPE_U64, STS_DTYPE_I64, STS_DTYPE_F16, STS_DTYPE_BF16, STS_DTYPE_F32,
    STS_DTYPE_F64, STS_DTYPE_F8_E5M2, STS_DTYPE_F8_E4M3, STS_DTYPE_F8_E8M0, STS_DTYPE_F8_E4M3FNUZ, STS_DTYPE_F8_E5M2FNUZ };
static const sts_dtype seed_dt[] = { STS_DTYPE_F16, STS_DTYPE_F32, STS_DTYPE_F64, STS_DTYPE_BF16, STS_DTYPE_U8,
    STS_DTYPE_I8, STS_DTYPE_U16, STS_DTYPE_I16, STS_DTYPE_U32, STS_DTYPE_I32, STS_DTYPE_U64, STS_DTYPE_I64 };
#define N_NUMERIC (sizeof numeric_src / sizeof numeric_src[0])
#define N_SEED (sizeof seed_dt / sizeof seed_dt[0])

static const double edge_doubles[] = {
    0.0, 0.5, 1.0, 1.5, 2.5, 0.99999, 127.0, 127.5, 127.99, 128.0, 128.5, 255.0, 255.5, 255.99, 256.0, 256.5,
    32767.0, 32767.5, 32768.0, 32768.5, 65503.0, 65504.0, 65504.5, 65519.0, 65519.99, 65520.0, 65520.01,
    65535.0, 65535.5, 65536.0, 2147483647.0, 2147483647.5, 2147483648.0, 2147483649.0, 4294967295.0,
    4294967295.5, 4294967296.0, 9007199254740992.0, 9007199254740994.0, 9223372036854774784.0,
    9223372036854775808.0, 18446744073709549568.0, 18446744073709551616.0, 3.4028234663852886e38,
    3.4028235677973366e38, 3.40282357e38, 3.5e38, 1e300, 1.7976931348623157e308, 1e-8, 5.960464477539063e-8,
    2.9802322387695312e-8, 2.9802322387695316e-8, 8.940696716308594e-8, 6.103515625e-5, 6.097555160522461e-5,
    1.1754943508222875e-38, 1.4e-45, 1e-40, 1e-310, 4.9406564584124654e-324, 1.00390625, 1.0078125,
    1.01171875, 1.00048828125, 1.00146484375, 3.14159265358979, 0.1, 1e10, 16777217.0, 33554435.0 };

static const uint64_t edge_u64[] = {
    0, 1, 2, 3, 126, 127, 128, 129, 254, 255, 256, 257, 32766, 32767, 32768, 32769, 65503, 65504, 65519,
    65520, 65521, 65535, 65536, 65537, 16777215, 16777216, 16777217, 16777219, 2147483646, 2147483647,
    2147483648u, 2147483649u, 4294967295u, 4294967296ull, 4294967297ull, 9007199254740991ull,
    9007199254740992ull, 9007199254740993ull, 9007199254740995ull, 1152921504606846976ull + 4503599627370496ull + 1,
    1152921504606846976ull + 4503599627370496ull, 4611686293305294849ull, 9223372036854775806ull,
    9223372036854775807ull, 9223372036854775808ull, 9223372036854775809ull, 18446744073709551614ull,
    18446744073709551615ull };

/* Source values of dtype st for the matrix: all patterns of <= 16-bit sources, else edges + random. */
static size_t matrix_inputs(sts_dtype st, uint8_t **out) {
    size_t sb = sts_dtype_bits(st) / 8, n = 0, cap, i, k;
    int nr = quick ? 500 : 20000;
    uint8_t *b;
    if (sb <= 2) {   /* every pattern; quick: every 5th of the 16-bit ones (all are decoded elsewhere) */
        size_t all = sb == 1 ? 256 : 65536, step = quick && sb == 2 ? 5 : 1;
        b = (uint8_t *)xmalloc(all * sb);
        for (i = 0; i < all; i += step) ref_store(b + n++ * sb, i, (int)sb);
        *out = b;
        return n;
    }
    cap = 4 * (sizeof edge_doubles / sizeof edge_doubles[0]) + 4 * (sizeof edge_u64 / sizeof edge_u64[0]) + 64 + 3 * (size_t)nr;
    b = (uint8_t *)xmalloc(cap * sb);
#define PUT(u) ref_store(b + sb * n++, (u), (int)sb)
    if (st == STS_DTYPE_F32 || st == STS_DTYPE_F64) {
        for (k = 0; k < sizeof edge_doubles / sizeof edge_doubles[0]; k++) {
            int s;
            for (s = 0; s < 2; s++) {
                double v = s ? -edge_doubles[k] : edge_doubles[k];
                if (st == STS_DTYPE_F64) { uint64_t u; memcpy(&u, &v, 8); PUT(u); }
                else { float f = (float)v; uint32_t u; memcpy(&u, &f, 4); PUT(u); }
            }
        }
        if (st == STS_DTYPE_F32) {
            for (k = 0; k < sizeof f32_edges / sizeof f32_edges[0]; k++) { PUT(f32_edges[k]); PUT(f32_edges[k] | 0x80000000u); }
        } else {
            static const uint64_t sp[] = { 0x7ff0000000000000ull, 0xfff0000000000000ull, 0x7ff8000000000000ull,
                0x7ff0000000000001ull, 0xfff8000000000001ull, 0x7ff4000000000000ull, 0x0000000000000001ull,
                0x000fffffffffffffull, 0x0010000000000000ull, 0x8000000000000000ull, 0x7fefffffffffffffull };
            for (k = 0; k < sizeof sp / sizeof sp[0]; k++) { PUT(sp[k]); PUT(sp[k] ^ 0x8000000000000000ull); }
        }
        for (k = 0; k < (size_t)nr; k++) {
            uint64_t r = rnd();
            PUT(r);                                   /* uniform bits: NaNs, huge, tiny */
            if (st == STS_DTYPE_F64) {                /* values at a useful scale */
                double v = ldexp((double)(r >> 11), (int)(rnd() % 140) - 110 - 53);
                uint64_t u;
                if (r & 1) v = -v;
                memcpy(&u, &v, 8); PUT(u);
            } else {
                uint32_t u = (uint32_t)(r & 0x807fffffu) | (uint32_t)(100 + rnd() % 70) << 23;
                PUT(u);
            }
        }
    } else {
        int bits = (int)sb * 8, sg = st == STS_DTYPE_I32 || st == STS_DTYPE_I64;
        uint64_t mask = bits == 64 ? ~0ull : (1ull << bits) - 1;
        for (k = 0; k < sizeof edge_u64 / sizeof edge_u64[0]; k++) {
            uint64_t m = edge_u64[k];
            if (m <= mask) PUT(m);                    /* the pattern itself (negative for signed at the top) */
            if (sg && m && m <= (mask >> 1) + 1) PUT((0 - m) & mask);   /* -m */
        }
        for (k = 0; k < (size_t)nr; k++) {
            uint64_t r = rnd();
            PUT(r & mask);
            PUT((r >> (rnd() % 64)) & mask);          /* random bit lengths */
        }
    }
#undef PUT
    *out = b;
    return n;
}

static void test_matrix(void) {
    size_t si, ti;
    int mode, p;
    long checks = 0, pairs = 0;
    for (si = 0; si < N_NUMERIC; si++) {
        sts_dtype st = numeric_src[si];
        uint8_t *in, *out;
        size_t n = matrix_inputs(st, &in);
        out = (uint8_t *)xmalloc(n * 8 * 2);
        for (ti = 0; ti < N_SEED; ti++) {
            sts_dtype dt = seed_dt[ti];
            for (mode = 0; mode < 2; mode++) {
                int paths[8], np, k = sts__hot_pair(dt, st, (sts_rounding)mode);
                np = k >= 0 ? hot_paths(k, paths) : 1;
                if (k < 0) paths[0] = -1;
                for (p = 0; p < np; p++) {
                    char what[80];
                    uint8_t *o = p == 0 ? out : out + n * 8;
                    snprintf(what, sizeof what, "matrix via %s", path_name(paths[p]));
                    CHECK(conv(paths[p], o, dt, in, st, n, (sts_rounding)mode) == STS_OK, "%s %s->%s", what, sts_dtype_name(st), sts_dtype_name(dt));
                    if (p == 0) check_against_ref(in, st, o, dt, n, mode, what);
                    else CHECK(memcmp(o, out, n * sts_dtype_bits(dt) / 8) == 0, "%s %s->%s: bits differ from %s", what,
                               sts_dtype_name(st), sts_dtype_name(dt), path_name(paths[0]));
                    checks += (long)n;
                }
                if (k >= 0) {   /* the general mechanism agrees too */
                    sts__convert_generic(out + n * 8, dt, in, st, n, mode);
                    check_against_ref(in, st, out + n * 8, dt, n, mode, "matrix via the general mechanism");
                    checks += (long)n;
                }
                pairs++;
            }
        }
        free(in); free(out);
    }
    printf("    %ld (source, target, rounding) combinations, %ld element checks against the reference\n", pairs, checks);
}

/* ---- 4. hand-written expectations: saturation, NaN, ties, the 64-bit integer rules ---- */
static uint64_t one(sts_dtype dt, sts_dtype st, uint64_t in_bits, sts_rounding r) {
    uint8_t in[8], out[16];
    memset(out, 0xee, sizeof out);
    ref_store(in, in_bits, (int)sts_dtype_bits(st) / 8);
    if (conv(-1, out, dt, in, st, 1, r) != STS_OK) return 0xdeadbeefdeadbeefull;
    return ref_load(out, (int)sts_dtype_bits(dt) / 8);
}
static uint64_t f64_bits(double v) { uint64_t u; memcpy(&u, &v, 8); return u; }
static uint64_t f32_bits(float v) { uint32_t u; memcpy(&u, &v, 4); return u; }
#define EXPECT(dt, st, in, r, want) do { uint64_t g_ = one(STS_DTYPE_##dt, STS_DTYPE_##st, (uint64_t)(in), r); \
        CHECK(g_ == (uint64_t)(want), "%s -> %s of 0x%llx (%s): got 0x%llx, want 0x%llx", #st, #dt, \
              (unsigned long long)(uint64_t)(in), r ? "nearest" : "truncate", (unsigned long long)g_, (unsigned long long)(uint64_t)(want)); \
        n_expect++; } while (0)
#define EXPECT2(dt, st, in, want) do { EXPECT(dt, st, in, STS_ROUND_TRUNCATE, want); EXPECT(dt, st, in, STS_ROUND_NEAREST_EVEN, want); } while (0)
#define EXPECT_NAN(dt, st, in, r) do { uint64_t g_ = one(STS_DTYPE_##dt, STS_DTYPE_##st, (uint64_t)(in), r); \
        CHECK(is_nan_bits(g_, STS_DTYPE_##dt), "%s -> %s of 0x%llx: got 0x%llx, want a NaN", #st, #dt, (unsigned long long)(uint64_t)(in), (unsigned long long)g_); \
        n_expect++; } while (0)

static void test_expectations(void) {
    const sts_rounding T = STS_ROUND_TRUNCATE, N = STS_ROUND_NEAREST_EVEN;
    long n_expect = 0;
    uint64_t NaN32 = 0x7fc00000u, Inf32 = 0x7f800000u;
    /* float -> integer: truncation toward zero, saturation, NaN -> 0, in both modes */
    EXPECT2(I32, F32, NaN32, 0);
    EXPECT2(I32, F32, 0xffc00001u, 0);
    EXPECT2(I32, F32, Inf32, 0x7fffffff);
    EXPECT2(I32, F32, Inf32 | 0x80000000u, 0x80000000u);
    EXPECT2(I32, F32, f32_bits(3e9f), 0x7fffffff);
    EXPECT2(I32, F32, f32_bits(-3e9f), 0x80000000u);
    EXPECT2(I32, F32, f32_bits(-2147483648.0f), 0x80000000u);
    EXPECT2(I32, F32, f32_bits(-1.9f), 0xffffffffu);
    EXPECT2(I32, F32, f32_bits(1.9f), 1);
    EXPECT2(I32, F32, 0x80000000u, 0);                 /* -0 */
    EXPECT2(U8, F32, f32_bits(-1.0f), 0);
    EXPECT2(U8, F32, f32_bits(-0.9f), 0);
    EXPECT2(U8, F32, f32_bits(300.0f), 255);
    EXPECT2(U8, F32, f32_bits(255.9f), 255);
    EXPECT2(I8, F32, f32_bits(-128.9f), 0x80);
    EXPECT2(I8, F32, f32_bits(-129.0f), 0x80);
    EXPECT2(I8, F32, f32_bits(127.9f), 0x7f);
    EXPECT2(U16, F32, f32_bits(65535.9f), 0xffff);
    EXPECT2(I16, F32, f32_bits(-40000.0f), 0x8000);
    EXPECT2(U32, F64, f64_bits(4294967295.9), 0xffffffffu);
    EXPECT2(U32, F64, f64_bits(-1e300), 0);
    EXPECT2(I64, F64, f64_bits(9223372036854775808.0), 0x7fffffffffffffffull);
    EXPECT2(I64, F64, f64_bits(-9223372036854775808.0), 0x8000000000000000ull);
    EXPECT2(I64, F64, f64_bits(9223372036854774784.0), 9223372036854774784ull);
    EXPECT2(U64, F64, f64_bits(18446744073709551616.0), 0xffffffffffffffffull);
    EXPECT2(U64, F64, f64_bits(18446744073709549568.0), 18446744073709549568ull);
    EXPECT2(U64, F32, Inf32, 0xffffffffffffffffull);
    EXPECT2(I64, F16, 0xfc00, 0x8000000000000000ull);  /* -Inf */
    EXPECT2(I16, BF16, 0x7fc0, 0);
    EXPECT2(U8, F8_E4M3, 0x7f, 0);                     /* NaN */
    EXPECT2(U8, F8_E4M3, 0x7e, 255);                   /* 448 saturates */
    EXPECT2(I16, F8_E4M3, 0x7e, 448);
    EXPECT2(I32, F8_E5M2FNUZ, 0x7f, 57344);
    EXPECT2(I32, F8_E8M0, 0x7f, 1);
    EXPECT2(I32, F8_E8M0, 0xff, 0);                    /* NaN */
    /* integer -> integer: saturation; 64-bit values exact, never through double */
    EXPECT2(I64, I64, 0x8000000000000000ull, 0x8000000000000000ull);
    EXPECT2(I64, I64, 9007199254740993ull, 9007199254740993ull);
    EXPECT2(U64, U64, 0xffffffffffffffffull, 0xffffffffffffffffull);
    EXPECT2(U64, I64, 9007199254740993ull, 9007199254740993ull);
    EXPECT2(U64, I64, 0x8000000000000000ull, 0);       /* negative -> 0 */
    EXPECT2(U64, I64, 0xffffffffffffffffull, 0);
    EXPECT2(U64, I64, 0x7fffffffffffffffull, 0x7fffffffffffffffull);
    EXPECT2(I64, U64, 0xffffffffffffffffull, 0x7fffffffffffffffull);
    EXPECT2(I64, U64, 0x8000000000000001ull, 0x7fffffffffffffffull);
    EXPECT2(I64, U64, 9223372036854775807ull, 9223372036854775807ull);
    EXPECT2(I32, I64, 0x80000000ull, 0x7fffffff);
    EXPECT2(I32, I64, 0xffffffff7fffffffull, 0x80000000u);
    EXPECT2(U8, I16, 0xffff, 0);
    EXPECT2(U8, I16, 256, 255);
    EXPECT2(I8, U8, 200, 127);
    EXPECT2(U16, I8, 0x80, 0);
    EXPECT2(I16, U32, 0xffffffffu, 0x7fff);
    EXPECT2(I8, BOOL, 2, 1);
    EXPECT2(U8, BOOL, 0xff, 1);
    EXPECT2(F32, BOOL, 0x80, 0x3f800000u);
    EXPECT2(F32, BOOL, 0, 0);
    /* integer -> float: one rounding, from the integer itself */
    EXPECT2(F64, I64, 9007199254740993ull, f64_bits(9007199254740992.0));      /* 2^53+1: tie -> even */
    EXPECT2(F64, I64, 9007199254740995ull, f64_bits(9007199254740996.0));      /* 2^53+3: tie -> even */
    EXPECT2(F64, I64, 0x8000000000000000ull, f64_bits(-9223372036854775808.0));
    EXPECT2(F64, U64, 0xffffffffffffffffull, f64_bits(18446744073709551616.0));
    EXPECT2(F32, U64, 0xffffffffffffffffull, 0x5f800000u);                     /* 2^64 */
    EXPECT2(F32, I32, 16777217, 0x4b800000u);                                  /* 2^24 */
    EXPECT2(F32, I32, 16777219, 0x4b800002u);                                  /* tie -> even: 2^24+4 */
    EXPECT2(F32, U32, 0xffffffffu, 0x4f800000u);
    /* 2^60 + 2^52 + 1: nearest BF16 is 2^60 + 2^53 (0x5d81); through double it would tie to 0x5d80 */
    EXPECT(BF16, I64, 1152921504606846976ull + 4503599627370496ull + 1, N, 0x5d81);
    EXPECT(BF16, I64, 1152921504606846976ull + 4503599627370496ull + 1, T, 0x5d80);
    EXPECT(BF16, U64, 1152921504606846976ull + 9007199254740992ull - 1, T, 0x5d80);
    EXPECT(F16, I32, 65519, N, 0x7bff);
    EXPECT(F16, I32, 65520, N, 0x7c00);
    EXPECT(F16, I32, 65520, T, 0x7bff);
    EXPECT(F16, I32, 100000, T, 0x7bff);
    EXPECT(F16, I32, -100000, N, 0xfc00);
    EXPECT(F16, I64, 2049, N, 0x6800);                 /* 2049 -> 2048 (tie -> even) */
    EXPECT(F16, I64, 2051, N, 0x6802);                 /* 2051 -> 2052 */
    EXPECT(F16, I64, 2051, T, 0x6801);                 /* 2050 */
    EXPECT(F16, U8, 255, N, 0x5bf8);
    EXPECT(F16, BOOL, 1, T, 0x3c00);
    /* F32 -> F16: IEEE round-toward-zero vs nearest even */
    EXPECT(F16, F32, f32_bits(1e5f), T, 0x7bff);
    EXPECT(F16, F32, f32_bits(1e5f), N, 0x7c00);
    EXPECT(F16, F32, f32_bits(-1e5f), T, 0xfbff);
    EXPECT(F16, F32, f32_bits(65519.0f), T, 0x7bff);
    EXPECT(F16, F32, f32_bits(65519.0f), N, 0x7bff);
    EXPECT(F16, F32, f32_bits(65520.0f), N, 0x7c00);
    EXPECT2(F16, F32, Inf32, 0x7c00);
    EXPECT2(F16, F32, Inf32 | 0x80000000u, 0xfc00);
    EXPECT(F16, F32, 0x3f801000u, N, 0x3c00);          /* 1 + 2^-11: tie -> even */
    EXPECT(F16, F32, 0x3f803000u, N, 0x3c02);          /* 1 + 3*2^-11: tie -> even */
    EXPECT(F16, F32, 0x3f803000u, T, 0x3c01);
    EXPECT2(F16, F32, 0x33800000u, 0x0001);            /* 2^-24: the smallest subnormal */
    EXPECT2(F16, F32, 0x33000000u, 0x0000);            /* 2^-25: a tie with 0 */
    EXPECT(F16, F32, 0x33000001u, N, 0x0001);
    EXPECT(F16, F32, 0x33000001u, T, 0x0000);
    EXPECT(F16, F32, 0x33c00000u, N, 0x0002);          /* 1.5 x 2^-24 -> 2 units (even) */
    EXPECT(F16, F32, 0x33c00000u, T, 0x0001);
    EXPECT(F16, F32, 0x387fe000u, N, 0x0400);          /* rounds up into the normals */
    EXPECT(F16, F32, 0x387fe000u, T, 0x03ff);
    EXPECT2(F16, F32, 0x80000000u, 0x8000);
    EXPECT2(F16, F32, 0x80000001u, 0x8000);
    EXPECT_NAN(F16, F32, 0x7f800001u, T);
    EXPECT_NAN(F16, F32, 0xff800001u, N);
    EXPECT_NAN(F16, F32, 0x7fc00000u, T);
    /* F32 -> BF16: truncation is the top 16 bits, a NaN stays a NaN */
    EXPECT(BF16, F32, 0x3f808000u, N, 0x3f80);         /* tie -> even */
    EXPECT(BF16, F32, 0x3f818000u, N, 0x3f82);
    EXPECT(BF16, F32, 0x3f818000u, T, 0x3f81);
    EXPECT(BF16, F32, 0x3f81ffffu, T, 0x3f81);
    EXPECT(BF16, F32, 0x7f7fffffu, T, 0x7f7f);
    EXPECT(BF16, F32, 0x7f7fffffu, N, 0x7f80);         /* overflow -> Inf */
    EXPECT(BF16, F32, 0x00010000u, T, 0x0001);         /* subnormals kept */
    EXPECT(BF16, F32, 0x0000ffffu, T, 0x0000);
    EXPECT(BF16, F32, 0x00008001u, N, 0x0001);
    EXPECT(BF16, F32, 0x7f810000u, T, 0x7f81);         /* NaN with kept payload: as is */
    EXPECT(BF16, F32, 0xffa50000u, T, 0xffa5);
    EXPECT_NAN(BF16, F32, 0x7f800001u, T);             /* kept bits would read as Inf */
    EXPECT_NAN(BF16, F32, 0xff80ffffu, T);
    EXPECT_NAN(BF16, F32, 0x7f800001u, N);
    EXPECT2(BF16, F32, Inf32, 0x7f80);
    EXPECT(BF16, F64, f64_bits(1e300), T, 0x7f7f);     /* round-toward-zero from F64 */
    EXPECT(BF16, F64, f64_bits(1e300), N, 0x7f80);
    EXPECT(BF16, F64, f64_bits(1.00390625), N, 0x3f80);
    EXPECT(BF16, F64, f64_bits(1.0039062500000002), N, 0x3f81);   /* just above the tie */
    EXPECT(BF16, F64, f64_bits(1.0039062500000002), T, 0x3f80);
    /* rounding applies to F16/BF16 only: F64 -> F32 always rounds to nearest */
    EXPECT2(F32, F64, f64_bits(1.0000000596046448), 0x3f800000u);  /* 1 + 2^-24: tie -> even */
    EXPECT2(F32, F64, f64_bits(1.0000000596046450), 0x3f800001u);
    EXPECT2(F32, F64, f64_bits(1e300), Inf32);
    EXPECT2(F32, F64, f64_bits(1e-46), 0);
    EXPECT2(F32, F64, f64_bits(1.401298464324817e-45), 1);
    /* decoding: exact, F16 subnormals at full value */
    EXPECT2(F32, F16, 0x0001, 0x33800000u);
    EXPECT2(F32, F16, 0x03ff, 0x387fc000u);
    EXPECT2(F32, F16, 0x7bff, 0x477fe000u);
    EXPECT2(F32, F16, 0xfc00, 0xff800000u);
    EXPECT2(F32, BF16, 0x0001, 0x00010000u);
    EXPECT2(F32, BF16, 0x7f81, 0x7f810000u);           /* a bit move */
    EXPECT2(F32, F8_E4M3, 0x7e, f32_bits(448.0f));
    EXPECT2(F32, F8_E4M3, 0x01, f32_bits(0.001953125f)); /* 2^-9 */
    EXPECT2(F32, F8_E4M3, 0x80, 0x80000000u);
    EXPECT_NAN(F32, F8_E4M3, 0x7f, T);
    EXPECT_NAN(F32, F8_E4M3, 0xff, T);
    EXPECT2(F32, F8_E4M3, 0x78, f32_bits(256.0f));     /* S.1111.000 is a number, not Inf */
    EXPECT2(F32, F8_E5M2, 0x7c, Inf32);
    EXPECT2(F32, F8_E5M2, 0x7b, f32_bits(57344.0f));
    EXPECT2(F32, F8_E5M2, 0x01, f32_bits(1.52587890625e-05f)); /* 2^-16 */
    EXPECT_NAN(F32, F8_E5M2, 0x7d, T);
    EXPECT2(F32, F8_E8M0, 0x00, 0x00400000u);          /* 2^-127, an F32 subnormal */
    EXPECT2(F32, F8_E8M0, 0x7f, 0x3f800000u);
    EXPECT2(F32, F8_E8M0, 0xfe, 0x7f000000u);          /* 2^127 */
    EXPECT_NAN(F32, F8_E8M0, 0xff, T);
    EXPECT2(F32, F8_E4M3FNUZ, 0x7f, f32_bits(240.0f));
    EXPECT2(F32, F8_E4M3FNUZ, 0x01, f32_bits(0.0009765625f)); /* 2^-10 */
    EXPECT2(F32, F8_E4M3FNUZ, 0x00, 0);
    EXPECT2(F32, F8_E4M3FNUZ, 0xff, f32_bits(-240.0f));
    EXPECT_NAN(F32, F8_E4M3FNUZ, 0x80, T);
    EXPECT2(F32, F8_E5M2FNUZ, 0x7f, f32_bits(57344.0f));
    EXPECT2(F32, F8_E5M2FNUZ, 0x01, f32_bits(7.62939453125e-06f)); /* 2^-17 */
    EXPECT2(F32, F8_E5M2FNUZ, 0x7c, f32_bits(32768.0f)); /* no Inf */
    EXPECT_NAN(F32, F8_E5M2FNUZ, 0x80, N);
    EXPECT2(F64, F8_E8M0, 0x00, f64_bits(ldexp(1.0, -127)));
    EXPECT2(F64, F16, 0x0001, f64_bits(ldexp(1.0, -24)));
    EXPECT2(F16, F8_E5M2, 0x7b, 0x7b00);               /* E5M2 is the top byte of an F16 */
    EXPECT(F16, F8_E8M0, 0xfe, T, 0x7bff);
    EXPECT(F16, F8_E8M0, 0xfe, N, 0x7c00);
    EXPECT(F16, F8_E8M0, 0x00, N, 0x0000);
    EXPECT(F16, F8_E8M0, 0x7f - 24, N, 0x0001);
    EXPECT(BF16, F8_E8M0, 0x00, N, 0x0040);            /* 2^-127 is a BF16 subnormal */
    printf("    %ld hand-written expectations\n", n_expect);
    {   /* C64: interleaved (re, im) */
        uint8_t c[16], o[32];
        float re = 1.5f, im = -2.25f;
        double d0, d1;
        ref_store(c, f32_bits(re), 4); ref_store(c + 4, f32_bits(im), 4);
        ref_store(c + 8, 0x7fc00000u, 4); ref_store(c + 12, 0x00000001u, 4);
        CHECK(sts_convert(o, STS_DTYPE_F32, c, STS_DTYPE_C64, 2, T) == STS_OK && memcmp(o, c, 16) == 0, "C64 -> F32");
        CHECK(sts_convert(o, STS_DTYPE_F64, c, STS_DTYPE_C64, 2, T) == STS_OK, "C64 -> F64");
        memcpy(&d0, &(uint64_t){ ref_load(o, 8) }, 8);
        memcpy(&d1, &(uint64_t){ ref_load(o + 8, 8) }, 8);
        CHECK(d0 == 1.5 && d1 == -2.25, "C64 -> F64 values %g %g", d0, d1);
        CHECK(is_nan_bits(ref_load(o + 16, 8), STS_DTYPE_F64) && ref_load(o + 24, 8) == f64_bits(ldexp(1.0, -149)), "C64 -> F64 specials");
        memset(o, 0, sizeof o);
        CHECK(sts_convert(o, STS_DTYPE_C64, c, STS_DTYPE_C64, 2, N) == STS_OK && memcmp(o, c, 16) == 0, "C64 -> C64");
    }
}

/* ---- 5. every pair, every count 0..70, unaligned buffers, guard bytes ---- */
#define GUARD 64
static int pair_list(sts_dtype *dst, sts_dtype *src) {
    int n = 0, a, b;
    for (a = 0; a < STS_DTYPE_COUNT; a++)
        for (b = 0; b < STS_DTYPE_COUNT; b++)
            if (sts_convert_supported((sts_dtype)a, (sts_dtype)b)) { dst[n] = (sts_dtype)a; src[n] = (sts_dtype)b; n++; }
    return n;
}
static void test_lengths_alignment(void) {
    static sts_dtype pd[STS_DTYPE_COUNT * STS_DTYPE_COUNT], ps[STS_DTYPE_COUNT * STS_DTYPE_COUNT];
    static const int soffs[] = { 0, 1, 3 }, doffs[] = { 0, 1, 2 };
    int np = pair_list(pd, ps), i, mode, paths[8], npath, p, so, doo;
    size_t maxc = 70, count, e;
    long calls = 0;
    uint8_t *src = (uint8_t *)xmalloc(70 * 8 + 8), *dst = (uint8_t *)xmalloc(2 * GUARD + 70 * 16 + 8), *want = (uint8_t *)xmalloc(70 * 16 + 16);
    for (e = 0; e < 70 * 8 + 8; e++) {   /* random bytes, with specials sprinkled in */
        uint64_t r = rnd();
        src[e] = (uint8_t)r;
        if ((r >> 8) % 7 == 0) src[e] = (r >> 16) & 1 ? 0x7f : 0xff;
        if ((r >> 8) % 11 == 0) src[e] = (r >> 16) & 1 ? 0x80 : 0x00;
    }
    npath = all_levels(paths);
    if (quick) { paths[0] = STS__ISA_SCALAR; paths[1] = -1; npath = 2; }   /* scalar and the best path */
    for (i = 0; i < np; i++) {
        sts_dtype dt = pd[i], st = ps[i];
        unsigned sbits = sts_dtype_bits(st), dbits = sts_dtype_bits(dt);
        size_t mult = st == STS_DTYPE_C64 && dt != STS_DTYPE_C64 ? 2 : 1;
        for (mode = 0; mode < 2; mode++) {
            /* quick: the rounding argument matters for F16 / BF16 targets only (the matrix test
               covers both modes for every pair) */
            if (quick && mode == 1 && dt != STS_DTYPE_F16 && dt != STS_DTYPE_BF16) continue;
            for (p = 0; p < npath; p++)
                for (so = 0; so < 3; so++)
                    for (doo = 0; doo < 3; doo++) {
                        if (quick && so != doo) continue;   /* quick: 3 of the 9 offset pairs */
                        for (count = 0; count <= maxc; count++) {
                            size_t dbytes, k;
                            sts_result r;
                            if (count * sbits % 8) continue;   /* sub-byte copies need whole bytes */
                            dbytes = count * mult * dbits / 8;
                            memset(dst, 0xa5, 2 * GUARD + dbytes + 8);
                            r = conv(paths[p], dst + GUARD + doffs[doo], dt, src + soffs[so], st, count, (sts_rounding)mode);
                            calls++;
                            if (r != STS_OK) { FAILF("%s -> %s count %zu: %s", sts_dtype_name(st), sts_dtype_name(dt), count, sts_result_name(r)); continue; }
                            for (k = 0; k < GUARD + (size_t)doffs[doo]; k++) if (dst[k] != 0xa5) break;
                            CHECK(k == GUARD + (size_t)doffs[doo], "%s -> %s count %zu via %s: wrote before dst", sts_dtype_name(st), sts_dtype_name(dt), count, path_name(paths[p]));
                            for (k = GUARD + doffs[doo] + dbytes; k < 2 * GUARD + dbytes + 8; k++) if (dst[k] != 0xa5) break;
                            CHECK(k == 2 * GUARD + dbytes + 8, "%s -> %s count %zu via %s: wrote past dst", sts_dtype_name(st), sts_dtype_name(dt), count, path_name(paths[p]));
                            /* element at a time, on the scalar level, must give the same bytes */
                            if (sbits >= 8) {
                                for (k = 0; k < count; k++)
                                    sts__convert_at(want + k * mult * dbits / 8, dt, src + soffs[so] + k * sbits / 8, st, 1, (sts_rounding)mode, STS__ISA_SCALAR, NULL);
                            } else memcpy(want, src + soffs[so], dbytes);
                            CHECK(memcmp(dst + GUARD + doffs[doo], want, dbytes) == 0, "%s -> %s count %zu src+%d dst+%d via %s: differs from one-at-a-time",
                                  sts_dtype_name(st), sts_dtype_name(dt), count, soffs[so], doffs[doo], path_name(paths[p]));
                        }
                    }
        }
    }
    printf("    %d supported pairs, %ld calls (counts 0..70, src offsets 0/1/3, dst offsets 0/1/2, both roundings, %s), guards intact\n",
           np, calls, quick ? "scalar and best level" : "every level");
    free(src); free(dst); free(want);
}

/* ---- 6. large arrays: the non-temporal paths, with misaligned starts ---- */
static void test_large(void) {
    int k, p, np, paths[8], d, s;
    static const int doffs[] = { 0, 2, 6, 1 }, soffs[] = { 0, 3 };
    size_t n = (STS_CONVERT_NT_BYTES / 2) + 77, i;
    long runs = 0;
    uint8_t *src = (uint8_t *)xmalloc(n * 4 + 8), *dst = (uint8_t *)xmalloc(n * 4 + 2 * GUARD + 8), *scal = (uint8_t *)xmalloc(n * 4);
    for (i = 0; i < n * 4 + 8; i++) src[i] = (uint8_t)rnd();
    for (k = 0; k < STS__K_COUNT; k++) {
        sts_dtype st = k == STS__K_BF16_F32 ? STS_DTYPE_BF16 : k == STS__K_F16_F32 ? STS_DTYPE_F16 : STS_DTYPE_F32;
        sts_dtype dt = k == STS__K_BF16_F32 || k == STS__K_F16_F32 ? STS_DTYPE_F32 : (k == STS__K_F32_BF16_RZ || k == STS__K_F32_BF16_RNE) ? STS_DTYPE_BF16 : STS_DTYPE_F16;
        sts_rounding r = k == STS__K_F32_BF16_RNE || k == STS__K_F32_F16_RNE ? STS_ROUND_NEAREST_EVEN : STS_ROUND_TRUNCATE;
        size_t nn = dt == STS_DTYPE_F32 ? n / 2 * 2 + 1 : n, db = sts_dtype_bits(dt) / 8, j;
        np = hot_paths(k, paths);
        for (s = 0; s < 2; s++) {
            sts__kernel_at(k, STS__ISA_SCALAR)(scal, src + soffs[s], nn);
            for (d = 0; d < 4; d++)
                for (p = 0; p < np; p++) {
                    uint8_t *o = dst + GUARD + doffs[d];
                    memset(dst, 0x5a, nn * db + 2 * GUARD + 8);
                    CHECK(conv(paths[p], o, dt, src + soffs[s], st, nn, r) == STS_OK, "large");
                    CHECK(memcmp(o, scal, nn * db) == 0, "large %s -> %s (%d) via %s, src+%d dst+%d: differs from scalar",
                          sts_dtype_name(st), sts_dtype_name(dt), (int)r, path_name(paths[p]), soffs[s], doffs[d]);
                    for (j = 0; j < GUARD + (size_t)doffs[d]; j++) CHECK(dst[j] == 0x5a, "large: wrote before dst");
                    for (j = GUARD + doffs[d] + nn * db; j < nn * db + 2 * GUARD + 8; j++) CHECK(dst[j] == 0x5a, "large: wrote past dst");
                    runs++;
                }
            if (!quick) check_against_ref(src + soffs[s], st, scal, dt, nn, r == STS_ROUND_NEAREST_EVEN, "large, scalar");
        }
    }
    printf("    %ld runs of %zu-element arrays (non-temporal threshold %zu bytes), dst offsets 0/2/6/1, src offsets 0/3\n",
           runs, n, (size_t)STS_CONVERT_NT_BYTES);
    free(src); free(dst); free(scal);
}

/* ---- 7. arguments, the support matrix, messages ---- */
static int expect_supported(sts_dtype d, sts_dtype s) {
    size_t i;
    int num = 0, seed = 0;
    if (d == s) return 1;
    if (s == STS_DTYPE_C64) return d == STS_DTYPE_F32 || d == STS_DTYPE_F64;
    for (i = 0; i < N_NUMERIC; i++) num |= numeric_src[i] == s;
    for (i = 0; i < N_SEED; i++) seed |= seed_dt[i] == d;
    return num && seed;
}
static void test_arguments(void) {
    uint8_t buf[64] = {0}, out[64];
    sts_error err;
    int a, b, n_sup = 0;
    for (a = 0; a < STS_DTYPE_COUNT; a++)
        for (b = 0; b < STS_DTYPE_COUNT; b++) {
            int sup = sts_convert_supported((sts_dtype)a, (sts_dtype)b);
            n_sup += sup;
            CHECK(sup == expect_supported((sts_dtype)a, (sts_dtype)b), "supported(%s <- %s) = %d", sts_dtype_name((sts_dtype)a), sts_dtype_name((sts_dtype)b), sup);
            if (!sup) {
                sts_result r = sts_convert_ex(out, (sts_dtype)a, buf, (sts_dtype)b, 4, STS_ROUND_TRUNCATE, &err);
                CHECK(r == STS_ERR_UNSUPPORTED && err.code == STS_ERR_UNSUPPORTED && err.rule == STS_RULE_UNSUPPORTED,
                      "%s <- %s: %s", sts_dtype_name((sts_dtype)a), sts_dtype_name((sts_dtype)b), sts_result_name(r));
                CHECK(strstr(err.message, sts_dtype_name((sts_dtype)a)) && strstr(err.message, sts_dtype_name((sts_dtype)b)), "message names both: %s", err.message);
                CHECK(sts_convert(out, (sts_dtype)a, buf, (sts_dtype)b, 0, STS_ROUND_TRUNCATE) == STS_ERR_UNSUPPORTED, "unsupported even at count 0");
            }
        }
    printf("    %d of 484 (dst, src) pairs supported\n", n_sup);
    CHECK(sts_convert_ex(out, STS_DTYPE_F32, buf, STS_DTYPE_F4, 2, STS_ROUND_TRUNCATE, &err) == STS_ERR_UNSUPPORTED && strstr(err.message, "F4"), "F4: %s", err.message);
    CHECK(sts_convert_ex(out, STS_DTYPE_F32, buf, STS_DTYPE_F6_E2M3, 4, STS_ROUND_TRUNCATE, &err) == STS_ERR_UNSUPPORTED, "F6");
    CHECK(sts_convert_ex(out, STS_DTYPE_F8_E4M3, buf, STS_DTYPE_F32, 1, STS_ROUND_TRUNCATE, &err) == STS_ERR_UNSUPPORTED, "F32 -> F8 target");
    CHECK(sts_convert_ex(out, STS_DTYPE_BOOL, buf, STS_DTYPE_F32, 1, STS_ROUND_TRUNCATE, &err) == STS_ERR_UNSUPPORTED, "F32 -> BOOL");
    CHECK(sts_convert_ex(out, STS_DTYPE_F16, buf, STS_DTYPE_C64, 1, STS_ROUND_TRUNCATE, &err) == STS_ERR_UNSUPPORTED, "C64 -> F16");
    CHECK(sts_convert_ex(out, STS_DTYPE_C64, buf, STS_DTYPE_F32, 1, STS_ROUND_TRUNCATE, &err) == STS_ERR_UNSUPPORTED, "F32 -> C64");
    /* NULL pointers: fine with count 0, an error otherwise (and nothing written) */
    CHECK(sts_convert(NULL, STS_DTYPE_F16, NULL, STS_DTYPE_F32, 0, STS_ROUND_TRUNCATE) == STS_OK, "NULL, 0");
    CHECK(sts_convert_ex(NULL, STS_DTYPE_F16, buf, STS_DTYPE_F32, 1, STS_ROUND_TRUNCATE, &err) == STS_ERR_INVALID_ARGUMENT && err.rule == STS_RULE_ARGUMENT, "NULL dst");
    CHECK(sts_convert_ex(out, STS_DTYPE_F16, NULL, STS_DTYPE_F32, 1, STS_ROUND_TRUNCATE, &err) == STS_ERR_INVALID_ARGUMENT, "NULL src");
    CHECK(sts_convert(NULL, STS_DTYPE_F32, NULL, STS_DTYPE_F32, 5, STS_ROUND_TRUNCATE) == STS_ERR_INVALID_ARGUMENT, "NULL copy");
    /* sizes that overflow size_t */
    CHECK(sts_convert_ex(out, STS_DTYPE_F16, buf, STS_DTYPE_F32, (size_t)-1 / 2, STS_ROUND_TRUNCATE, &err) == STS_ERR_INVALID_ARGUMENT, "overflow src");
    CHECK(sts_convert_ex(out, STS_DTYPE_F64, buf, STS_DTYPE_U8, (size_t)-1 / 4, STS_ROUND_TRUNCATE, &err) == STS_ERR_INVALID_ARGUMENT, "overflow dst: %s", err.message);
    CHECK(sts_convert(out, STS_DTYPE_F32, buf, STS_DTYPE_C64, (size_t)-1 / 8 + 1, STS_ROUND_TRUNCATE) == STS_ERR_INVALID_ARGUMENT, "overflow C64");
    CHECK(sts_convert(out, STS_DTYPE_F64, buf, STS_DTYPE_C64, (size_t)-1 / 2 + 1, STS_ROUND_TRUNCATE) == STS_ERR_INVALID_ARGUMENT, "overflow C64 x2");
    CHECK(sts_convert(out, STS_DTYPE_U64, buf, STS_DTYPE_U64, (size_t)-1, STS_ROUND_TRUNCATE) == STS_ERR_INVALID_ARGUMENT, "overflow copy");
    CHECK(sts_convert(out, STS_DTYPE_F4, buf, STS_DTYPE_F4, (size_t)-1, STS_ROUND_TRUNCATE) == STS_ERR_INVALID_ARGUMENT, "overflow F4 copy");
    /* out-of-range enums */
    CHECK(sts_convert(out, STS_DTYPE_COUNT, buf, STS_DTYPE_F32, 1, STS_ROUND_TRUNCATE) == STS_ERR_INVALID_ARGUMENT, "dtype COUNT");
    CHECK(sts_convert(out, STS_DTYPE_F32, buf, (sts_dtype)-1, 1, STS_ROUND_TRUNCATE) == STS_ERR_INVALID_ARGUMENT, "dtype -1");
    CHECK(sts_convert_ex(out, STS_DTYPE_F16, buf, STS_DTYPE_F32, 1, (sts_rounding)2, &err) == STS_ERR_INVALID_ARGUMENT && strstr(err.message, "rounding"), "rounding 2");
    CHECK(sts_convert(out, STS_DTYPE_F16, buf, STS_DTYPE_F32, 1, (sts_rounding)-1) == STS_ERR_INVALID_ARGUMENT, "rounding -1");
    CHECK(!sts_convert_supported(STS_DTYPE_COUNT, STS_DTYPE_F32) && !sts_convert_supported(STS_DTYPE_F32, (sts_dtype)99), "supported out of range");
    /* sub-byte copies: whole bytes only */
    memset(out, 0, sizeof out); buf[0] = 0x12; buf[1] = 0x34;
    CHECK(sts_convert(out, STS_DTYPE_F4, buf, STS_DTYPE_F4, 4, STS_ROUND_TRUNCATE) == STS_OK && out[0] == 0x12 && out[1] == 0x34 && out[2] == 0, "F4 copy");
    CHECK(sts_convert_ex(out, STS_DTYPE_F4, buf, STS_DTYPE_F4, 3, STS_ROUND_TRUNCATE, &err) == STS_ERR_INVALID_ARGUMENT, "F4 odd count");
    CHECK(sts_convert(out, STS_DTYPE_F6_E3M2, buf, STS_DTYPE_F6_E3M2, 4, STS_ROUND_TRUNCATE) == STS_OK && out[2] == 0, "F6 copy of 4 = 3 bytes");
    CHECK(sts_convert(out, STS_DTYPE_F6_E3M2, buf, STS_DTYPE_F6_E3M2, 2, STS_ROUND_TRUNCATE) == STS_ERR_INVALID_ARGUMENT, "F6 copy of 2");
    /* a same-dtype copy is a memmove: overlap is fine */
    {
        uint8_t m[16];
        for (a = 0; a < 16; a++) m[a] = (uint8_t)a;
        CHECK(sts_convert(m + 2, STS_DTYPE_U16, m, STS_DTYPE_U16, 6, STS_ROUND_TRUNCATE) == STS_OK && m[2] == 0 && m[13] == 11, "overlapping copy");
    }
    /* success clears the error */
    memset(&err, 0x55, sizeof err);
    CHECK(sts_convert_ex(out, STS_DTYPE_F16, buf, STS_DTYPE_F32, 1, STS_ROUND_TRUNCATE, &err) == STS_OK && err.code == STS_OK && err.message[0] == 0, "ok clears err");
    printf("    isa on this machine: %s\n", sts_convert_isa());
}

#ifdef TEST_MXCSR
/* ---- 8. a caller's floating-point environment (flush-to-zero, denormals-are-zero, rounding
   toward zero: what -ffast-math or fesetround leave behind) changes nothing ---- */
static void test_fp_environment(void) {
    uint8_t *smp, *out, *want16[4], *in16 = (uint8_t *)xmalloc(65536 * 2), *want32[2], *o32 = (uint8_t *)xmalloc(65536 * 4);
    size_t ns = f32_sample(&smp), i;
    int co, p, paths[8], np, k;
    unsigned saved = _mm_getcsr();
    if (quick) {   /* every 8th sampled pattern, edges (at the end) included */
        size_t m = 0;
        for (i = 0; i < ns; i++) if (i % 8 == 0 || i + 80 >= ns) { memmove(smp + 4 * m, smp + 4 * i, 4); m++; }
        ns = m;
    }
    out = (uint8_t *)xmalloc(ns * 2);
    for (co = 0; co < 4; co++) {   /* expectations computed in the default environment */
        want16[co] = (uint8_t *)xmalloc(ns * 2);
        sts__convert_at(want16[co], sweep_dt[co], smp, STS_DTYPE_F32, ns, sweep_rd[co], STS__ISA_SCALAR, NULL);
        check_against_ref(smp, STS_DTYPE_F32, want16[co], sweep_dt[co], ns, sweep_rd[co] == STS_ROUND_NEAREST_EVEN, "fpenv baseline");
    }
    for (i = 0; i < 65536; i++) ref_store(in16 + 2 * i, i, 2);
    for (k = 0; k < 2; k++) {
        want32[k] = (uint8_t *)xmalloc(65536 * 4);
        sts__convert_at(want32[k], STS_DTYPE_F32, in16, k ? STS_DTYPE_BF16 : STS_DTYPE_F16, 65536, STS_ROUND_TRUNCATE, STS__ISA_SCALAR, NULL);
    }
    _mm_setcsr(saved | 0x8040u | 0x6000u);   /* FTZ, DAZ, rounding toward zero */
    for (co = 0; co < 4; co++) {
        np = hot_paths(sweep_k[co], paths);
        for (p = 0; p < np; p++) {
            conv(paths[p], out, sweep_dt[co], smp, STS_DTYPE_F32, ns, sweep_rd[co]);
            CHECK(memcmp(out, want16[co], ns * 2) == 0, "FTZ/DAZ/RZ environment changes %s via %s", sweep_name[co], path_name(paths[p]));
        }
    }
    for (k = 0; k < 2; k++) {
        np = hot_paths(k ? STS__K_BF16_F32 : STS__K_F16_F32, paths);
        for (p = 0; p < np; p++) {
            conv(paths[p], o32, STS_DTYPE_F32, in16, k ? STS_DTYPE_BF16 : STS_DTYPE_F16, 65536, STS_ROUND_TRUNCATE);
            CHECK(memcmp(o32, want32[k], 65536 * 4) == 0, "FTZ/DAZ/RZ environment changes %s -> F32 via %s", k ? "BF16" : "F16", path_name(paths[p]));
        }
    }
    _mm_setcsr(saved);
    printf("    hot pairs under MXCSR FTZ+DAZ+round-toward-zero: same bits on every path\n");
    for (co = 0; co < 4; co++) free(want16[co]);
    for (k = 0; k < 2; k++) free(want32[k]);
    free(smp); free(out); free(in16); free(o32);
}
#endif

/* ---- 9. concurrent first use of the dispatcher (race-free under TSan) ---- */
static void *thread_convert(void *arg) {
    uint8_t in[4 * 64], out[2 * 64];
    size_t i;
    long *bad = (long *)arg;
    for (i = 0; i < 64; i++) ref_store(in + 4 * i, 0x3f800000u + (uint32_t)i * 0x2000u, 4);
    for (i = 0; i < 200; i++) {
        sts_convert(out, STS_DTYPE_F16, in, STS_DTYPE_F32, 64, STS_ROUND_NEAREST_EVEN);
        if (ref_load(out, 2) != 0x3c00 || ref_load(out + 2, 2) != 0x3c01) (*bad)++;
    }
    return NULL;
}
static void test_threads(void) {
    pthread_t th[4];
    long bad[4] = {0};
    int t;
#ifdef STS__X86_DYN
    __atomic_store_n(&sts__cpu_word, 0, __ATOMIC_RELAXED);   /* forget the detection, so that threads race for it */
#endif
    for (t = 0; t < 4; t++) CHECK(pthread_create(&th[t], NULL, thread_convert, &bad[t]) == 0, "pthread_create");
    for (t = 0; t < 4; t++) pthread_join(th[t], NULL);
    for (t = 0; t < 4; t++) CHECK(bad[t] == 0, "thread %d: %ld wrong results", t, bad[t]);
    CHECK(sts__isa() == max_isa, "isa after threads");
    printf("    4 threads x 200 calls from a cold dispatcher\n");
}

/* ---- main ---- */
typedef void (*test_fn)(void);
int main(void) {
    static const struct { const char *name; test_fn fn; } tests[] = {
        { "arguments_and_support_matrix", test_arguments },
        { "expectations_saturation_nan_ties", test_expectations },
        { "decode_f16_bf16_f8_exhaustive", test_decode_small_floats },
        { "f32_to_f16_bf16_exhaustive", test_f32_to_16bit },
        { "encode_matrix_against_reference", test_matrix },
        { "lengths_alignment_guards", test_lengths_alignment },
        { "large_arrays_nontemporal", test_large },
#ifdef TEST_MXCSR
        { "fp_environment_ignored", test_fp_environment },
#endif
        { "threads_dispatch", test_threads },
    };
    int passed = 0, failed = 0;
    size_t i;
    double t_all = tu_now();
    quick = tu_quick();
    max_isa = sts__isa();
#ifdef STS_NO_SIMD
    printf("test_codec: build STS_NO_SIMD (scalar only), level %s\n", quick ? "quick" : "full");
#else
    printf("test_codec: SIMD build, best path here %s, level %s\n", sts_convert_isa(), quick ? "quick" : "full");
#endif
    for (i = 0; i < sizeof tests / sizeof tests[0]; i++) {
        double t0 = tu_now();
        failures = 0; reports = 0;
        printf("[ RUN  ] %s\n", tests[i].name);
        fflush(stdout);
        tests[i].fn();
        if (failures) { failed++; printf("[ FAIL ] %s: %ld failures (%.1f s)\n", tests[i].name, failures, tu_now() - t0); }
        else { passed++; printf("[  OK  ] %s (%.1f s)\n", tests[i].name, tu_now() - t0); }
        fflush(stdout);
    }
    printf("total %.1f s\n", tu_now() - t_all);
    printf("test_codec: %d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
