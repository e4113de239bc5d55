/* STS_MALLOC, STS_REALLOC and STS_FREE all defined: the library must route every allocation
   through them (counted here) and release everything it took. STS_ASSERT is overridden too. */
#include <stddef.h>

static size_t alloc_live, alloc_calls;
static void *count_malloc(void *ctx, size_t size);
static void *count_realloc(void *ctx, void *p, size_t old_size, size_t size);
static void count_free(void *ctx, void *p, size_t size);
static void assert_failed(const char *what);

#define STS_MALLOC(ctx, size) count_malloc((ctx), (size))
#define STS_REALLOC(ctx, p, old, size) count_realloc((ctx), (p), (old), (size))
#define STS_FREE(ctx, p, size) count_free((ctx), (p), (size))
#define STS_ASSERT(x) ((x) ? (void)0 : assert_failed(#x))
#define STS_IMPLEMENTATION
#include "safetensors_spark.h"
#include "smoke.h"
#include <stdlib.h>

static void *count_malloc(void *ctx, size_t size) {
    void *p = malloc(size);
    (void)ctx;
    if (p) { alloc_live += size; alloc_calls++; }
    return p;
}
static void *count_realloc(void *ctx, void *p, size_t old_size, size_t size) {
    void *q = realloc(p, size);
    (void)ctx;
    if (q) { alloc_live += size - old_size; alloc_calls++; }
    return q;
}
static void count_free(void *ctx, void *p, size_t size) {
    (void)ctx;
    if (p) alloc_live -= size;
    free(p);
}

static void assert_failed(const char *what) {
    fprintf(stderr, "STS_ASSERT failed: %s\n", what);
    abort();
}

int main(int argc, char **argv) {
    int r = matrix_smoke(argc > 1 ? argv[1] : NULL);
    if (r) return r;
    if (alloc_calls == 0) { fprintf(stderr, "STS_MALLOC was never called\n"); return 1; }
    if (alloc_live != 0) { fprintf(stderr, "%lu bytes still live by the sizes passed to STS_FREE\n", (unsigned long)alloc_live); return 1; }
    return 0;
}
