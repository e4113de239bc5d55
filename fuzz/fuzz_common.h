/* Shared by the fuzz targets (include after safetensors_spark.h with STS_IMPLEMENTATION):
   FZ_CHECK, a checking allocator, an input hash, and a libFuzzer mutator that keeps the 8-byte
   header length consistent with the file so mutations reach the JSON parser.

   Invariants are checked with a real abort(): a failed FZ_CHECK is a finding, reported by
   libFuzzer (or the replay main) with the input that caused it. */
#ifndef FUZZ_COMMON_H
#define FUZZ_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Not every target uses every helper. */
#define FZ_HELPER static __attribute__((unused))

#define FZ_CHECK(cond)                                                                        \
    do {                                                                                      \
        if (!(cond)) {                                                                        \
            fprintf(stderr, "%s:%d: invariant failed: %s\n", __FILE__, __LINE__, #cond);     \
            abort();                                                                          \
        }                                                                                     \
    } while (0)

/* FNV-1a: a deterministic per-input choice (which allocation to fail, which limits to use). */
FZ_HELPER uint64_t fz_hash(const uint8_t *p, size_t n) {
    uint64_t h = 0xcbf29ce484222325u;
    size_t i;
    for (i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001b3u;
    return h;
}

FZ_HELPER uint64_t fz_le64(const uint8_t *p) {
    uint64_t v = 0;
    int i;
    for (i = 7; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

/* Reads every byte of a range so ASan sees any out-of-bounds pointer the library hands out. */
FZ_HELPER unsigned fz_touch(const void *p, uint64_t n) {
    const volatile uint8_t *b = (const volatile uint8_t *)p;
    unsigned s = 0;
    uint64_t i;
    if (n == 0) return 0;
    FZ_CHECK(p != NULL);
    for (i = 0; i < n; i++) s += b[i];
    return s;
}

/* ---- a checking allocator ----------------------------------------------------------------
   Every block carries its size in front, so a free or realloc with the wrong size is caught;
   live bytes are counted; the fail_at-th call (1-based, 0 = never) returns NULL once. */
typedef struct fz_alloc {
    size_t calls;
    size_t fail_at;
    int failed;
    size_t live;
} fz_alloc;

#define FZ_HDR 16
FZ_HELPER void *fz_alloc_fn(void *user, size_t size) {
    fz_alloc *a = (fz_alloc *)user;
    uint8_t *p;
    a->calls++;
    if (a->fail_at && a->calls == a->fail_at) { a->failed = 1; return NULL; }
    FZ_CHECK(size > 0 && size < ((size_t)1 << 40));
    p = (uint8_t *)malloc(size + FZ_HDR);
    if (!p) abort();
    memcpy(p, &size, sizeof size);
    a->live += size;
    return p + FZ_HDR;
}
FZ_HELPER void *fz_realloc_fn(void *user, void *ptr, size_t old_size, size_t size) {
    fz_alloc *a = (fz_alloc *)user;
    uint8_t *p = (uint8_t *)ptr - FZ_HDR, *q;
    size_t stored;
    FZ_CHECK(ptr != NULL);
    memcpy(&stored, p, sizeof stored);
    FZ_CHECK(stored == old_size); /* the library passes back the size it asked for */
    a->calls++;
    if (a->fail_at && a->calls == a->fail_at) { a->failed = 1; return NULL; }
    FZ_CHECK(size > 0 && size < ((size_t)1 << 40));
    q = (uint8_t *)realloc(p, size + FZ_HDR);
    if (!q) abort();
    memcpy(q, &size, sizeof size);
    a->live = a->live - old_size + size;
    return q + FZ_HDR;
}
FZ_HELPER void fz_free_fn(void *user, void *ptr, size_t size) {
    fz_alloc *a = (fz_alloc *)user;
    uint8_t *p;
    size_t stored;
    if (!ptr) return;
    p = (uint8_t *)ptr - FZ_HDR;
    memcpy(&stored, p, sizeof stored);
    FZ_CHECK(stored == size);
    a->live -= size;
    free(p);
}
FZ_HELPER void fz_use_alloc(sts_options *o, fz_alloc *a, size_t fail_at) {
    memset(a, 0, sizeof *a);
    a->fail_at = fail_at;
    o->allocator.alloc = fz_alloc_fn;
    o->allocator.realloc = fz_realloc_fn;
    o->allocator.free = fz_free_fn;
    o->allocator.user = a;
}

/* An error is complete: the code, a real rule whose result it is, and a message that starts
   with the rule id and holds no TAB or newline (the sts tool prints it in a TSV column). */
FZ_HELPER void fz_check_error(sts_result r, const sts_error *e, uint64_t size) {
    const char *id;
    size_t idn, mn;
    FZ_CHECK(r != STS_OK && (unsigned)r < (unsigned)STS_RESULT_COUNT);
    FZ_CHECK(e->code == r);
    FZ_CHECK(e->rule != STS_RULE_NONE && (unsigned)e->rule < (unsigned)STS_RULE_COUNT);
    FZ_CHECK(sts_rule_result(e->rule) == r);
    FZ_CHECK(memchr(e->message, 0, sizeof e->message) != NULL);  /* NUL-terminated in place */
    mn = strlen(e->message);
    FZ_CHECK(mn > 0);
    id = sts_rule_id(e->rule);
    idn = strlen(id);
    FZ_CHECK(mn > idn + 2 && memcmp(e->message, id, idn) == 0 && e->message[idn] == ':' && e->message[idn + 1] == ' ');
    FZ_CHECK(!memchr(e->message, '\t', mn) && !memchr(e->message, '\n', mn) && !memchr(e->message, '\r', mn));
    FZ_CHECK(e->offset == STS_OFFSET_UNKNOWN || e->offset <= size);
    FZ_CHECK(strcmp(sts_result_name(r), "?") != 0);
}

#ifdef FUZZ_WITH_LIBFUZZER
/* libFuzzer's mutator, then (three times in four) the header length is set so that the data
   section keeps its length: random mutations of the JSON then still reach the parser instead
   of dying at the 8-byte prefix. The fourth time the prefix is left to the mutator. */
size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max_size);
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed);
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed) {
    int fix = size >= 8 && fz_le64(data) <= size - 8 && (seed & 3) != 0;
    uint64_t tail = fix ? size - 8 - fz_le64(data) : 0;
    size_t n = LLVMFuzzerMutate(data, size, max_size);
    if (fix && n >= 8 + tail) {
        uint64_t hn = n - 8 - tail;
        int i;
        for (i = 0; i < 8; i++) data[i] = (uint8_t)(hn >> (8 * i));
    }
    return n;
}
#endif

#endif /* FUZZ_COMMON_H */
