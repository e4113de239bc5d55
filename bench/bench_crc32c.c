/* bench_crc32c.c - CRC-32C, the shards' checksum, by path and buffer size, beside memcpy of the
   same bytes in the same run (the cost of touching them once).

   Sizes: a KV cell (1 KiB), a batch column buffer (2 MiB, in the caches) and 256 MiB (from
   memory). Paths: the one sts__crc32c picks (AVX-512 VPCLMULQDQ folds where the CPU has them),
   the three crc32 lanes (SSE4.2 + PCLMUL), and the portable table loop (on at most 64 KiB of the
   buffer, for the two smaller sizes: it runs at well under 1 GB/s). Each
   figure is the median of --runs passes (default 7) of about 256 MiB each, in GB/s (10^9 bytes a
   second); the program fails unless every path gives the same value.

   ./bench_crc32c [--runs N] */
#define _POSIX_C_SOURCE 200809L
#define STS_IMPLEMENTATION
#include "../safetensors_spark.h"
#include "bench_util.h"

#define PASS_BYTES ((size_t)256 << 20)

static double pass(int how, const uint8_t *src, uint8_t *dst, size_t n, uint32_t *crc) {
    size_t reps = PASS_BYTES / n, i;
    uint32_t c = 0;
    double t0 = tu_now();
    for (i = 0; i < reps; i++) {
        if (how < 0) { memcpy(dst, src, n); c += dst[i % n]; }
        else c = sts__crc32c_with(c, src, n, how);
    }
    *crc = c;
    return (double)(reps * n) / (tu_now() - t0) / 1e9;
}

int main(int argc, char **argv) {
    static const size_t sizes[] = { 1024, (size_t)2 << 20, (size_t)256 << 20 };
    static const char *names[] = { "1 KiB (a KV cell)", "2 MiB (a batch column buffer)", "256 MiB (from memory)" };
    int runs = 7, a, bad = 0;
    size_t s;
    for (a = 1; a < argc; a++) {
        if (!strcmp(argv[a], "--runs") && a + 1 < argc) runs = atoi(argv[++a]);
        else { fprintf(stderr, "usage: bench_crc32c [--runs N]\n"); return 2; }
    }
    if (runs < 1 || runs > 99) { fprintf(stderr, "bench_crc32c: --runs 1..99\n"); return 2; }
    bench_print_build(stdout);
#ifdef STS__X86_DYN
    printf("paths: fastest = %s\n", (sts__cpu_features() & STS__CPU_VCRC) ? "AVX-512 VPCLMULQDQ folds (from 256 bytes)"
                                   : (sts__cpu_features() & STS__CPU_CRC) ? "three crc32 lanes" : "portable");
#else
    printf("paths: fastest = portable\n");
#endif
    printf("| size | fastest GB/s | crc32 lanes GB/s | portable GB/s | memcpy GB/s (baseline) | fastest / memcpy |\n");
    printf("|---|---:|---:|---:|---:|---:|\n");
    for (s = 0; s < sizeof sizes / sizeof *sizes; s++) {
        size_t n = sizes[s];
        uint8_t *src = (uint8_t *)malloc(n), *dst = (uint8_t *)malloc(n);
        double f[99], l[99], p[99], m[99];
        uint32_t cf = 0, cl = 0, cp = 0, cm;
        int r, portable = n <= ((size_t)2 << 20);
        size_t i, pn = n > 65536 ? 65536 : n;  /* the portable loop's share */
        if (!src || !dst) { fprintf(stderr, "bench_crc32c: out of memory\n"); return 2; }
        for (i = 0; i < n; i++) src[i] = (uint8_t)(i * 2654435761u >> 13);
        memset(dst, 1, n);
        for (r = 0; r < runs; r++) {  /* the paths in turn, each pass the same bytes */
            f[r] = pass(1, src, dst, n, &cf);
            l[r] = pass(2, src, dst, n, &cl);
            p[r] = portable ? pass(0, src, dst, pn, &cp) : 0;
            m[r] = pass(-1, src, dst, n, &cm);
        }
        bench_sink += cm + cp;
        if (cf != cl) { printf("MISMATCH at %zu bytes: %08x %08x\n", n, (unsigned)cf, (unsigned)cl); bad = 1; }
        if (portable && sts__crc32c_with(0, src, pn, 0) != sts__crc32c_with(0, src, pn, 1)) {
            printf("MISMATCH (portable) at %zu bytes\n", n);
            bad = 1;
        }
        {
            char pc[32] = "-";
            double fm = bench_summarize(f, (size_t)runs).median, mm = bench_summarize(m, (size_t)runs).median;
            if (portable) snprintf(pc, sizeof pc, "%.2f", bench_summarize(p, (size_t)runs).median);
            printf("| %s | %.1f | %.1f | %s | %.1f | %.2fx |\n", names[s], fm, bench_summarize(l, (size_t)runs).median, pc,
                   mm, fm / mm);
        }
        free(src);
        free(dst);
    }
    return bad;
}
