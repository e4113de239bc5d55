/* bench_util.h - small helpers shared by the bench programs: sample statistics (median, min, p90)
   and a report of how the program was built. The clock (tu_now: seconds, monotonic) is
   tests/test_util.h's, included here without cmocka.

   Include after defining _POSIX_C_SOURCE (clock_gettime) and after safetensors_spark.h.
   Everything here is static. */
#ifndef BENCH_UTIL_H
#define BENCH_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TU_STANDALONE   /* no cmocka in the benchmarks */
#include "../tests/test_util.h"

#ifndef BENCH_CC
#define BENCH_CC "cc"
#endif
#ifndef BENCH_FLAGS
#define BENCH_FLAGS "(unknown: build with make bench)"
#endif


/* Keeps the optimizer from dropping work whose result is otherwise unused. */
static volatile uint64_t bench_sink;

static int bench_cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

typedef struct bench_stats {
    double min, median, p90, max;  /* of the samples, in the samples' unit */
    size_t n;
} bench_stats;

/* Statistics of n samples; sorts a copy, the input keeps its order. Percentile p of n sorted
   samples is the element at round(p * (n - 1)); the median of an even count is the mean of the
   two middle elements. */
static bench_stats bench_summarize(const double *samples, size_t n) {
    bench_stats s;
    double *v;
    memset(&s, 0, sizeof s);
    if (n == 0) return s;
    v = (double *)malloc(n * sizeof *v);
    if (!v) { fprintf(stderr, "bench: out of memory\n"); exit(2); }
    memcpy(v, samples, n * sizeof *v);
    qsort(v, n, sizeof *v, bench_cmp_double);
    s.n = n;
    s.min = v[0];
    s.max = v[n - 1];
    s.median = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
    s.p90 = v[(size_t)(0.9 * (double)(n - 1) + 0.5)];
    free(v);
    return s;
}

/* Prints the compiler, its version and the flags the program was built with. */
static void bench_print_build(FILE *out) {
#if defined(__VERSION__)
    fprintf(out, "build: %s (%s) %s\n", BENCH_CC, __VERSION__, BENCH_FLAGS);
#else
    fprintf(out, "build: %s %s\n", BENCH_CC, BENCH_FLAGS);
#endif
#if defined(__AVX2__)
    fprintf(out, "build: __AVX2__ defined at compile time\n");
#elif defined(__SSE2__)
    fprintf(out, "build: baseline x86-64 (SSE2) code, no -march\n");
#endif
}

#endif /* BENCH_UTIL_H */
