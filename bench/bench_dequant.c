/* bench_dequant.c - throughput of sts_dequantize on the ten ggml block types, beside memcpy of the
   same output size in the same run (issue 14: >= 2 GB/s of F32 output on one core for Q8_0 and
   Q4_K).

   Each type decodes blocks into a 128 MiB F32 output (--mib), far larger than the caches, the
   size of a real model's large tensors. The blocks are random quants with realistic fp16 scales
   (d about 1e-3, the minimums of the same order). The baseline is memcpy of 128 MiB (the output
   size) into a second buffer. A second, cache-resident case (--hot-kib, default 256 KiB of
   output, repeated) shows the kernels' own speed. Every round runs every type at every level
   with decoders of its own (scalar, SSE2, then the best through sts_dequantize: AVX2's kernels
   also run at the AVX-512 level) in turn, each right after its paired
   memcpy; the figure is the median over the rounds of F32 output bytes per second (1 GB = 1e9 B),
   and the paired ratio is the median of (rate / the rate of the memcpy just before it).

   Options: --rounds N (default 9), --mib N (output MiB, default 128), --hot-kib N (default 256),
   --offset B (buffers start B bytes past a page boundary; default 16, where glibc's malloc puts
   large blocks). The best path is checked once against the scalar path before timing. */
#define _POSIX_C_SOURCE 200809L
#define STS_IMPLEMENTATION
#include "../safetensors_spark.h"
#include "bench_util.h"

static const char *const types[] = { "Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K" };
#define NTYPES (sizeof types / sizeof types[0])

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t next(void) {
    rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
    return rng;
}
/* an fp16 around 1e-3 (exponent 2^-10 .. 2^-9), positive */
static void put_scale(uint8_t *p) {
    uint32_t h = (uint32_t)(5u << 10) | (uint32_t)(next() & 0x7ffu);
    p[0] = (uint8_t)h;
    p[1] = (uint8_t)(h >> 8);
}
/* blocks of type t: random bytes, then its fp16 fields set to realistic scales */
static void fill_blocks(uint8_t *b, size_t nblocks, int t) {
    static const int f16_at[NTYPES][2] = { { 0, -1 }, { 0, -1 }, { 0, 2 }, { 0, -1 }, { 0, 2 },
                                           { 80, 82 }, { 108, -1 }, { 0, 2 }, { 0, 2 }, { 208, -1 } };
    uint32_t be, bb;
    size_t i, k;
    sts_dequantize_block(types[t], &be, &bb);
    for (i = 0; i < nblocks; i++) {
        uint8_t *p = b + i * bb;
        for (k = 0; k < bb; k++) p[k] = (uint8_t)(next() >> 29);
        for (k = 0; k < 2; k++) if (f16_at[t][k] >= 0) put_scale(p + f16_at[t][k]);
    }
}

int main(int argc, char **argv) {
    size_t mib = 128, hot_kib = 256, offset = 16, out_bytes, count, hot_count, t;
    int rounds = 9, r, i, L, best = sts__isa(), lev[4], nlev = 0;
    void *mem[4];
    uint8_t *src[NTYPES], *cpy_src, *cpy_dst;
    float *out;
    double *tc, *td[NTYPES][4], *pr[NTYPES][4], *th[NTYPES][4];
    for (i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--rounds") && i + 1 < argc) rounds = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--mib") && i + 1 < argc) mib = (size_t)atoi(argv[++i]);
        else if (!strcmp(argv[i], "--hot-kib") && i + 1 < argc) hot_kib = (size_t)atoi(argv[++i]);
        else if (!strcmp(argv[i], "--offset") && i + 1 < argc) offset = (size_t)atoi(argv[++i]) % 4096;
        else { fprintf(stderr, "usage: bench_dequant [--rounds N] [--mib N] [--hot-kib N] [--offset B]\n"); return 2; }
    }
    if (rounds < 1 || mib < 1 || hot_kib < 8 || offset % 4 != 0) return 2;
    out_bytes = mib << 20;
    count = out_bytes / 4 / 256 * 256;         /* a whole number of blocks of every type */
    hot_count = (hot_kib << 10) / 4 / 256 * 256;
    out_bytes = count * 4;
    for (L = STS__ISA_SCALAR; L <= best; L++)   /* the levels with decoders of their own; the last is the best */
        if (L == STS__ISA_SCALAR || sts__dq_kernel_at(0, L) != sts__dq_kernel_at(0, L - 1)) lev[nlev++] = L;
    bench_print_build(stdout);
    printf("bench_dequant: isa %s (sts_convert_isa), output %zu MiB per type (%zu elements), hot case %zu KiB,\n"
           "               %d rounds, buffers at page + %zu bytes\n",
           sts_convert_isa(), out_bytes >> 20, count, hot_count * 4 >> 10, rounds, offset);
    for (i = 0; i < 3; i++)
        if (posix_memalign(&mem[i], 4096, out_bytes + 4096) != 0) { fprintf(stderr, "bench_dequant: out of memory\n"); return 2; }
    out = (float *)(void *)((uint8_t *)mem[0] + offset);
    cpy_src = (uint8_t *)mem[1] + offset;
    cpy_dst = (uint8_t *)mem[2] + offset;
    memset(out, 0, out_bytes);
    memset(cpy_src, 1, out_bytes);
    memset(cpy_dst, 0, out_bytes);
    for (t = 0; t < NTYPES; t++) {
        uint32_t be, bb;
        sts_dequantize_block(types[t], &be, &bb);
        src[t] = (uint8_t *)malloc(count / be * bb + 64);
        if (!src[t]) { fprintf(stderr, "bench_dequant: out of memory\n"); return 2; }
        fill_blocks(src[t], count / be, (int)t);
        for (L = 0; L < 4; L++) {
            td[t][L] = (double *)calloc((size_t)rounds, sizeof(double));
            pr[t][L] = (double *)calloc((size_t)rounds, sizeof(double));
            th[t][L] = (double *)calloc((size_t)rounds, sizeof(double));
        }
    }
    tc = (double *)calloc((size_t)rounds, sizeof(double));
    /* correctness, once: the best path against the scalar path on the first 64K elements */
    for (t = 0; t < NTYPES; t++) {
        size_t n = 65536;
        if (sts_dequantize(out, src[t], types[t], n) != STS_OK ||
            sts__dequantize_at(out + n, src[t], types[t], n, STS__ISA_SCALAR) != STS_OK ||
            memcmp(out, out + n, n * 4) != 0) {
            fprintf(stderr, "bench_dequant: %s: the best path disagrees with the scalar path\n", types[t]);
            return 1;
        }
    }
    for (r = -1; r < rounds; r++) {   /* round -1 warms up */
        double t0 = tu_now();
        memcpy(cpy_dst, cpy_src, out_bytes);
        t0 = tu_now() - t0;
        bench_sink += cpy_dst[(size_t)(r + 1) & 1023];
        if (r >= 0) tc[r] = t0;
        for (t = 0; t < NTYPES; t++)
            for (L = nlev - 1; L >= 0; L--) {
                double m, s, h;
                size_t rep, reps;
                m = tu_now();             /* the paired baseline: memcpy just before */
                memcpy(cpy_dst, cpy_src, out_bytes);
                m = tu_now() - m;
                bench_sink += cpy_dst[(size_t)(r + 2) & 1023];
                s = tu_now();
                if (L == nlev - 1) sts_dequantize(out, src[t], types[t], count);
                else sts__dequantize_at(out, src[t], types[t], count, lev[L]);
                s = tu_now() - s;
                bench_sink += (uint64_t)out[(size_t)(r + 2) & 1023];
                reps = ((size_t)64 << 20) / (hot_count * 4);   /* 64 MiB of output through the caches */
                h = tu_now();
                for (rep = 0; rep < reps; rep++) sts__dequantize_at(out, src[t], types[t], hot_count, lev[L]);
                h = (tu_now() - h) / (double)reps;
                bench_sink += (uint64_t)out[rep & 1023];
                if (r >= 0) {
                    td[t][L][r] = s;
                    pr[t][L][r] = ((double)out_bytes / s) / ((double)out_bytes / m);
                    th[t][L][r] = h;
                }
            }
    }
    {
        bench_stats sc = bench_summarize(tc, (size_t)rounds);
        double copy_rate = (double)out_bytes / sc.median / 1e9;
        printf("\n%-6s %-14s %8s %9s %8s %8s %9s %8s %9s %9s\n", "type", "path", "in MB", "median ms", "GB/s", "best",
               "x memcpy", "paired", "hot GB/s", "hot best");
        printf("%-6s %-14s %8.1f %9.1f %8.2f %8.2f %9s %8s %9s %9s   (worst %.2f GB/s)\n", "memcpy", "libc",
               (double)out_bytes / 1e6, sc.median * 1e3, copy_rate, (double)out_bytes / sc.min / 1e9, "1.00", "1.00", "-", "-",
               (double)out_bytes / sc.max / 1e9);
        for (t = 0; t < NTYPES; t++) {
            uint32_t be, bb;
            sts_dequantize_block(types[t], &be, &bb);
            for (L = nlev - 1; L >= 0; L--) {
                bench_stats st = bench_summarize(td[t][L], (size_t)rounds), sp = bench_summarize(pr[t][L], (size_t)rounds);
                bench_stats sh = bench_summarize(th[t][L], (size_t)rounds);
                printf("%-6s %-14s %8.1f %9.1f %8.2f %8.2f %9.2f %8.2f %9.2f %9.2f%s\n", L == nlev - 1 ? types[t] : "",
                       L == nlev - 1 ? "sts_dequantize" : sts__isa_name(lev[L]), (double)(count / be * bb) / 1e6,
                       st.median * 1e3,
                       (double)out_bytes / st.median / 1e9, (double)out_bytes / st.min / 1e9,
                       (double)out_bytes / st.median / 1e9 / copy_rate, sp.median,
                       (double)hot_count * 4 / sh.median / 1e9, (double)hot_count * 4 / sh.min / 1e9,
                       L == nlev - 1 && (double)out_bytes / st.median / 1e9 < 2.0 ? "  < 2 GB/s" : "");
            }
        }
        printf("\nmedian of %d rounds (\"best\": the fastest round); GB/s = F32 output bytes per second (1 GB = 1e9 B)\n"
               "into a %zu MiB buffer; \"x memcpy\" = median rate / median memcpy rate (memcpy of the output size); \"paired\" = median over\n"
               "rounds of (rate / the rate of a memcpy timed just before it); \"hot\" = %zu KiB of output decoded\n"
               "again and again (cache-resident). The goal is >= 2 GB/s for Q8_0 and Q4_K.\n",
               rounds, out_bytes >> 20, hot_count * 4 >> 10);
    }
    for (i = 0; i < 3; i++) free(mem[i]);
    for (t = 0; t < NTYPES; t++) {
        free(src[t]);
        for (L = 0; L < 4; L++) { free(td[t][L]); free(pr[t][L]); free(th[t][L]); }
    }
    free(tc);
    return 0;
}
