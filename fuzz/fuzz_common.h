/* Shared by the fuzz targets (include after safetensors_spark.h with STS_IMPLEMENTATION):
   FZ_CHECK, the checking allocator and the error check of tests/test_util.h set up to abort at
   the first finding, an input hash, and a libFuzzer mutator that keeps the 8-byte header length
   consistent with the file so mutations reach the JSON parser (a target with another layout
   defines FZ_NO_HEADER_MUTATOR first).

   Invariants are checked with a real abort(): a failed FZ_CHECK is a finding, reported by
   libFuzzer (or the replay main) with the input that caused it. */
#ifndef FUZZ_COMMON_H
#define FUZZ_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TU_STANDALONE   /* no cmocka: a failed check prints and aborts, a finding */
#include "../tests/test_util.h"

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

/* ---- the checking allocator (tests/test_util.h) ----------------------------------------------
   A free or realloc with the wrong size, a write past a block, a request for 0 bytes or for 2^40
   bytes or more abort at once; the fail_at-th request (1-based, 0 = never) returns NULL; live
   bytes are in a->bytes. The other options in *o stay. */
FZ_HELPER void fz_use_alloc(sts_options *o, tu_alloc *a, size_t fail_at) {
    *o = tu_alloc_opts(a, o);
    a->fail_at = (long)fail_at;
    a->max_size = ((uint64_t)1 << 40) - 1;
    a->abort_on_bad = 1;
}

/* UTF-8 judged here without the library (which checks inside strings as it parses, and the whole
   text only on a failure): the index of the first byte of the first sequence that is
   not RFC 3629 UTF-8, or n. Code points are decoded and then judged (overlong, surrogate, range),
   a different route from the library's table of second-byte bounds. */
FZ_HELPER size_t fz_utf8_bad(const uint8_t *s, size_t n) {
    size_t i = 0;
    while (i < n) {
        uint32_t cp, min;
        size_t len, k;
        if (s[i] < 0x80) { i++; continue; }
        if ((s[i] & 0xE0) == 0xC0) { len = 2; cp = s[i] & 0x1Fu; min = 0x80; }
        else if ((s[i] & 0xF0) == 0xE0) { len = 3; cp = s[i] & 0x0Fu; min = 0x800; }
        else if ((s[i] & 0xF8) == 0xF0) { len = 4; cp = s[i] & 0x07u; min = 0x10000; }
        else return i;
        if (n - i < len) return i;
        for (k = 1; k < len; k++) {
            if ((s[i + k] & 0xC0) != 0x80) return i;
            cp = cp << 6 | (s[i + k] & 0x3Fu);
        }
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return i;
        i += len;
    }
    return n;
}

/* An error is complete: the code, a real rule whose result it is, and a message that starts
   with the rule id and holds no TAB or newline (the sts tool prints it in a TSV column). */
FZ_HELPER void fz_check_error(sts_result r, const sts_error *e, uint64_t size) {
    tu_err_check("error", r, e, TU_ANY_CODE, TU_ANY_RULE, (const char *)NULL);
    FZ_CHECK(sts_rule_result(e->rule) == r);
    FZ_CHECK(e->offset == STS_OFFSET_UNKNOWN || e->offset <= size);
    FZ_CHECK(strcmp(sts_result_name(r), "?") != 0);
}

#if defined(FUZZ_WITH_LIBFUZZER) && !defined(FZ_NO_HEADER_MUTATOR)
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
