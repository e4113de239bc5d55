/* bench_codec.c - throughput of sts_convert on the hot pairs, beside memcpy in the same run.

   Each case converts a 256 MiB input array (realistic values: weights ~ N(0, 0.02) with about one
   element in a thousand special: +-0, subnormals, +-Inf, NaN, values beyond F16's range):
      F32 -> BF16 truncate / nearest, F32 -> F16 truncate / nearest, BF16 -> F32, F16 -> F32.
   memcpy of 256 MiB into a second buffer is the baseline. Buffers are allocated and touched
   before timing. Every round runs every case once, in turn, so load from other processes spreads
   over all of them; the figure is the median over the rounds (>= 7) of the bytes moved (input
   plus output, 1 GB = 1e9 bytes) per second, and the ratio to memcpy's (input + output) rate.

   Options: --rounds N (default 9), --mib N (input size, default 256), --isa all|best (default
   all: also time each lower instruction-set level through the private entry point), --offset B
   (buffers start B bytes past a page boundary; default 16, where glibc's malloc puts large
   blocks, so 64-byte vector loads straddle cache lines as they do for a caller's malloc'd array).
   Output is checked once against the scalar path, so an error path is never what gets timed. */
#define _POSIX_C_SOURCE 200809L
#define STS_IMPLEMENTATION
#include "../safetensors_spark.h"
#include "bench_util.h"

#include <math.h>

typedef struct bcase {
    const char *name;
    sts_dtype src, dst;
    sts_rounding rnd;
} bcase;

static const bcase cases[] = {
    { "F32 -> BF16 truncate", STS_DTYPE_F32, STS_DTYPE_BF16, STS_ROUND_TRUNCATE },
    { "F32 -> BF16 nearest", STS_DTYPE_F32, STS_DTYPE_BF16, STS_ROUND_NEAREST_EVEN },
    { "F32 -> F16 truncate", STS_DTYPE_F32, STS_DTYPE_F16, STS_ROUND_TRUNCATE },
    { "F32 -> F16 nearest", STS_DTYPE_F32, STS_DTYPE_F16, STS_ROUND_NEAREST_EVEN },
    { "BF16 -> F32", STS_DTYPE_BF16, STS_DTYPE_F32, STS_ROUND_TRUNCATE },
    { "F16 -> F32", STS_DTYPE_F16, STS_DTYPE_F32, STS_ROUND_TRUNCATE },
};
#define NCASES (sizeof cases / sizeof cases[0])

static uint64_t rng = 0x243f6a8885a308d3ull;
static uint64_t next(void) {
    rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
    return rng;
}
static double normal(void) {   /* Box-Muller */
    double u = ((double)(next() >> 11) + 0.5) / 9007199254740992.0, v = (double)(next() >> 11) / 9007199254740992.0;
    return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
}
static void fill_f32(uint8_t *p, size_t n) {
    static const uint32_t specials[] = { 0x00000000u, 0x80000000u, 0x00000001u, 0x007fffffu, 0x7f800000u,
        0xff800000u, 0x7fc00000u, 0x7f800001u, 0x477ff000u, 0x49742400u, 0x33000000u, 0x38800000u };
    size_t i;
    for (i = 0; i < n; i++) {
        uint32_t u;
        uint64_t r = next();
        if (r % 1000 == 0) u = specials[(r >> 20) % (sizeof specials / sizeof specials[0])];
        else { float f = (float)(normal() * 0.02); memcpy(&u, &f, 4); }
        p[4 * i] = (uint8_t)u; p[4 * i + 1] = (uint8_t)(u >> 8); p[4 * i + 2] = (uint8_t)(u >> 16); p[4 * i + 3] = (uint8_t)(u >> 24);
    }
}

int main(int argc, char **argv) {
    size_t mib = 256, bytes, n32, n16, c, offset = 16;
    void *blocks[5];
    int rounds = 9, all_isa = 1, r, i, L, best = sts__isa(), nlev;
    uint8_t *f32, *b16, *h16, *out, *cpy;
    double *t_copy, *t[NCASES][4], *pr[NCASES][4];   /* times; paired ratios */
    for (i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--rounds") && i + 1 < argc) rounds = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--mib") && i + 1 < argc) mib = (size_t)atoi(argv[++i]);
        else if (!strcmp(argv[i], "--isa") && i + 1 < argc) all_isa = strcmp(argv[++i], "best") != 0;
        else if (!strcmp(argv[i], "--offset") && i + 1 < argc) offset = (size_t)atoi(argv[++i]) % 4096;
        else { fprintf(stderr, "usage: bench_codec [--rounds N] [--mib N] [--isa all|best] [--offset B]\n"); return 2; }
    }
    if (rounds < 1 || mib < 1) return 2;
    bytes = mib << 20;
    n32 = bytes / 4;
    n16 = bytes / 2;
    bench_print_build(stdout);
    printf("bench_codec: isa %s (sts_convert_isa), input %zu MiB per case, %d rounds, buffers at page + %zu bytes,\n"
           "             non-temporal stores from %zu MiB of output\n",
           sts_convert_isa(), mib, rounds, offset, (size_t)(STS_CONVERT_NT_BYTES >> 20));
    for (i = 0; i < 5; i++)
        if (posix_memalign(&blocks[i], 4096, (i == 3 ? 2 * bytes : bytes) + 4096) != 0) { fprintf(stderr, "bench_codec: out of memory\n"); return 2; }
    f32 = (uint8_t *)blocks[0] + offset; b16 = (uint8_t *)blocks[1] + offset; h16 = (uint8_t *)blocks[2] + offset;
    out = (uint8_t *)blocks[3] + offset; cpy = (uint8_t *)blocks[4] + offset;
    fill_f32(f32, n32);
    fill_f32(out, n16);  /* 16-bit inputs: the same kind of values, converted once */
    sts_convert(b16, STS_DTYPE_BF16, out, STS_DTYPE_F32, n16, STS_ROUND_NEAREST_EVEN);
    sts_convert(h16, STS_DTYPE_F16, out, STS_DTYPE_F32, n16, STS_ROUND_NEAREST_EVEN);
    memset(out, 0, 2 * bytes);
    memset(cpy, 0, bytes);
    nlev = all_isa ? best + 1 : 1;
    t_copy = (double *)calloc((size_t)rounds, sizeof(double));
    for (c = 0; c < NCASES; c++) for (L = 0; L < 4; L++) {
        t[c][L] = (double *)calloc((size_t)rounds, sizeof(double));
        pr[c][L] = (double *)calloc((size_t)rounds, sizeof(double));
    }
    /* correctness, once: the best path against the scalar path on the first 1M elements */
    for (c = 0; c < NCASES; c++) {
        const uint8_t *in = cases[c].src == STS_DTYPE_F32 ? f32 : cases[c].src == STS_DTYPE_BF16 ? b16 : h16;
        size_t n = 1u << 20, ob = sts_dtype_bits(cases[c].dst) / 8;
        if (sts_convert(out, cases[c].dst, in, cases[c].src, n, cases[c].rnd) != STS_OK ||
            sts__convert_at(out + n * ob, cases[c].dst, in, cases[c].src, n, cases[c].rnd, STS__ISA_SCALAR, NULL) != STS_OK ||
            memcmp(out, out + n * ob, n * ob) != 0) {
            fprintf(stderr, "bench_codec: %s: the best path disagrees with the scalar path\n", cases[c].name);
            return 1;
        }
    }
    for (r = -1; r < rounds; r++) {   /* round -1 warms up */
        double t0 = tu_now();
        memcpy(cpy, f32, bytes);
        t0 = tu_now() - t0;
        bench_sink += cpy[r & 1023];
        if (r >= 0) t_copy[r] = t0;
        for (c = 0; c < NCASES; c++)
            for (L = nlev - 1; L >= 0; L--) {
                const uint8_t *in = cases[c].src == STS_DTYPE_F32 ? f32 : cases[c].src == STS_DTYPE_BF16 ? b16 : h16;
                size_t n = cases[c].src == STS_DTYPE_F32 ? n32 : n16;
                int lev = all_isa ? L : best;
                double s, m;
                if (all_isa && L < best && L > 0 &&
                    sts__kernel_at(sts__hot_pair(cases[c].dst, cases[c].src, cases[c].rnd), L) ==
                    sts__kernel_at(sts__hot_pair(cases[c].dst, cases[c].src, cases[c].rnd), L - 1)) continue;  /* same kernel */
                m = tu_now();             /* the paired baseline: memcpy just before */
                memcpy(cpy, f32, bytes);
                m = tu_now() - m;
                bench_sink += cpy[(size_t)r & 1023];
                s = tu_now();
                if (lev == best) sts_convert(out, cases[c].dst, in, cases[c].src, n, cases[c].rnd);
                else sts__convert_at(out, cases[c].dst, in, cases[c].src, n, cases[c].rnd, lev, NULL);
                s = tu_now() - s;
                bench_sink += out[(size_t)r & 1023];
                if (r >= 0) {
                    double moved = (double)(n * (sts_dtype_bits(cases[c].src) + sts_dtype_bits(cases[c].dst)) / 8);
                    t[c][L][r] = s;
                    pr[c][L][r] = (moved / s) / (2.0 * (double)bytes / m);
                }
            }
    }
    {
        bench_stats sc = bench_summarize(t_copy, (size_t)rounds);
        double copy_rate = 2.0 * (double)bytes / sc.median / 1e9;
        printf("\n%-22s %-11s %9s %9s %8s %9s %8s\n", "case", "path", "in+out GB", "median ms", "GB/s", "x memcpy", "paired");
        printf("%-22s %-11s %9.3f %9.1f %8.2f %9s %8s   (best %.2f, worst %.2f GB/s)\n", "memcpy", "libc",
               2.0 * (double)bytes / 1e9, sc.median * 1e3, copy_rate, "1.00", "1.00", 2.0 * (double)bytes / sc.min / 1e9,
               2.0 * (double)bytes / sc.max / 1e9);
        for (c = 0; c < NCASES; c++)
            for (L = nlev - 1; L >= 0; L--) {
                size_t n = cases[c].src == STS_DTYPE_F32 ? n32 : n16;
                double moved = (double)(n * (sts_dtype_bits(cases[c].src) + sts_dtype_bits(cases[c].dst)) / 8);
                bench_stats st, sp;
                if (t[c][L][0] == 0 && rounds > 0) continue;   /* skipped: same kernel as the level below */
                st = bench_summarize(t[c][L], (size_t)rounds);
                sp = bench_summarize(pr[c][L], (size_t)rounds);
                printf("%-22s %-11s %9.3f %9.1f %8.2f %9.2f %8.2f%s\n", L == nlev - 1 ? cases[c].name : "",
                       all_isa ? (L == best ? "sts_convert" : sts__isa_name(L)) : "sts_convert",
                       moved / 1e9, st.median * 1e3, moved / st.median / 1e9, moved / st.median / 1e9 / copy_rate, sp.median,
                       (!all_isa || L == best) && sp.median < 0.8 ? "  < 0.8x memcpy" : "");
            }
        printf("\nmedian of %d rounds; GB/s counts input plus output bytes (1 GB = 1e9 B); \"x memcpy\" = median rate / median\n"
               "memcpy rate; \"paired\" = median over rounds of (rate / the rate of a memcpy timed just before it),\n"
               "which resists load from other processes. The goal is >= 0.80 for sts_convert.\n", rounds);
    }
    for (i = 0; i < 5; i++) free(blocks[i]);
    free(t_copy);
    for (c = 0; c < NCASES; c++) for (L = 0; L < 4; L++) { free(t[c][L]); free(pr[c][L]); }
    return 0;
}
