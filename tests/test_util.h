/* test_util.h - the helpers every test, fuzz target and benchmark shares, in one copy:
     tu_quick        STS_TEST_LEVEL=quick (the ASan and valgrind runs shrink their loops)
     tu_now          seconds from a monotonic clock
     tu_rng          splitmix64: tu_next, tu_below
     tu_sb           a growable NUL-terminated text: put, str, printf, json (a quoted JSON string), free
     tu_alloc        a checking sts_allocator: the size given to free and realloc must be the block's,
                     nothing may be written past a block, live and peak bytes are counted, and the
                     k-th request can be refused
     tu_err_*        the one check of an sts_error: the code, the rule, a message that starts with
                     "<rule id>: ", holds no TAB, CR or LF, and holds the substrings asked for
     tu_le*, tu_st*  little-endian loads and stores by byte assembly, on any host: tensor data in a
                     file or a view and tensor cells are little-endian bytes (tests/cross.mk runs
                     the tests on big-endian s390x); tu_le_copy turns host-order values into
                     little-endian bytes and back

   Include after safetensors_spark.h (the allocator and the error check use its types); a file that
   uses clock_gettime defines _POSIX_C_SOURCE 200809L (or _GNU_SOURCE) before any include.
   A failed check fails the running cmocka test (fail_msg). A program without cmocka (test_codec,
   the fuzz targets, the benchmarks) defines TU_STANDALONE first: a failed check then prints its
   message and calls abort(). Everything here is static and marked unused, so a file pays only for
   what it calls. None of it is part of the library. */
#ifndef STS_TESTS_TEST_UTIL_H
#define STS_TESTS_TEST_UTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if defined(__GNUC__) || defined(__clang__)
#  define TU_FN static __attribute__((unused))
#else
#  define TU_FN static
#endif

/* TU_FAIL(literal format, ...) ends the test; TU_CHECK(cond) is an assertion. */
#ifdef TU_STANDALONE
#  define TU_FAIL(...) (fprintf(stderr, "%s:%d: ", __FILE__, __LINE__), fprintf(stderr, __VA_ARGS__), fputc('\n', stderr), abort())
#  define TU_CHECK(cond) do { if (!(cond)) TU_FAIL("check failed: %s", #cond); } while (0)
#else
#  include <setjmp.h>
#  include <cmocka.h>
#  define TU_FAIL(...) fail_msg(__VA_ARGS__)
#  define TU_CHECK(cond) assert_true(cond)
#endif

/* ---- level and clock ---- */
TU_FN int tu_quick(void) {
    const char *l = getenv("STS_TEST_LEVEL");
    return l && strcmp(l, "quick") == 0;
}
TU_FN double tu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- little-endian bytes on any host ----
   A file's tensor data (sts_data, sts_view.data) and the tensor cells given to the dataset writer
   are little-endian bytes whatever the host; array cells and codec-free C code use host order.
   These never go through a pointer cast, so they hold on big-endian hosts and need no alignment. */
TU_FN int tu_big_endian(void) {
    const uint16_t one = 1;
    uint8_t first;
    memcpy(&first, &one, 1);
    return first == 0;
}
TU_FN uint16_t tu_le16(const void *p) {
    const uint8_t *b = (const uint8_t *)p;
    return (uint16_t)(b[0] | b[1] << 8);
}
TU_FN uint32_t tu_le32(const void *p) {
    const uint8_t *b = (const uint8_t *)p;
    return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}
TU_FN uint64_t tu_le64(const void *p) {
    const uint8_t *b = (const uint8_t *)p;
    return (uint64_t)tu_le32(b) | (uint64_t)tu_le32(b + 4) << 32;
}
TU_FN float tu_lef32(const void *p) {
    uint32_t u = tu_le32(p);
    float f;
    memcpy(&f, &u, 4);
    return f;
}
TU_FN double tu_lef64(const void *p) {
    uint64_t u = tu_le64(p);
    double d;
    memcpy(&d, &u, 8);
    return d;
}
TU_FN void tu_st16(void *p, uint16_t v) {
    uint8_t *b = (uint8_t *)p;
    b[0] = (uint8_t)v;
    b[1] = (uint8_t)(v >> 8);
}
TU_FN void tu_st32(void *p, uint32_t v) {
    uint8_t *b = (uint8_t *)p;
    tu_st16(b, (uint16_t)v);
    tu_st16(b + 2, (uint16_t)(v >> 16));
}
TU_FN void tu_st64(void *p, uint64_t v) {
    uint8_t *b = (uint8_t *)p;
    tu_st32(b, (uint32_t)v);
    tu_st32(b + 4, (uint32_t)(v >> 32));
}
TU_FN void tu_stf32(void *p, float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    tu_st32(p, u);
}
TU_FN void tu_stf64(void *p, double d) {
    uint64_t u;
    memcpy(&u, &d, 8);
    tu_st64(p, u);
}
/* n values of esz bytes from src into dst, each reversed on a big-endian host (a copy on a
   little-endian one): host-order values to little-endian bytes, and back. dst may equal src. */
TU_FN void *tu_le_copy(void *dst, const void *src, size_t n, size_t esz) {
    uint8_t *d = (uint8_t *)dst, t[16];
    const uint8_t *s = (const uint8_t *)src;
    size_t i, b;
    TU_CHECK(esz >= 1 && esz <= sizeof t);
    if (!tu_big_endian() || esz == 1) {
        if (d != s && n) memmove(d, s, n * esz);
        return dst;
    }
    for (i = 0; i < n; i++) {
        memcpy(t, s + i * esz, esz);
        for (b = 0; b < esz; b++) d[i * esz + b] = t[esz - 1 - b];
    }
    return dst;
}

/* ---- PRNG: splitmix64 (a seed of any value; the same seed gives the same sequence) ---- */
typedef struct tu_rng { uint64_t s; } tu_rng;
TU_FN uint64_t tu_next(tu_rng *r) {
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
TU_FN uint32_t tu_below(tu_rng *r, uint32_t n) { return n ? (uint32_t)(tu_next(r) % n) : 0; }

/* ---- a growable text (zero-initialise; p is NUL-terminated once anything was put) ---- */
typedef struct tu_sb { char *p; size_t n, cap; } tu_sb;
/* Room for n more bytes and the NUL. */
TU_FN void tu_sb_reserve(tu_sb *b, size_t n) {
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n + 1) cap *= 2;
        b->p = (char *)realloc(b->p, cap);
        TU_CHECK(b->p != NULL);
        b->cap = cap;
    }
}
TU_FN void tu_sb_put(tu_sb *b, const void *s, size_t n) {
    tu_sb_reserve(b, n);
    if (n) memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
}
TU_FN void tu_sb_str(tu_sb *b, const char *s) { tu_sb_put(b, s, strlen(s)); }
TU_FN void tu_sb_vprintf(tu_sb *b, const char *fmt, va_list ap) {
    va_list again;
    int k;
    va_copy(again, ap);
    k = vsnprintf(NULL, 0, fmt, again);
    va_end(again);
    TU_CHECK(k >= 0);
    tu_sb_reserve(b, (size_t)k);
    vsnprintf(b->p + b->n, (size_t)k + 1, fmt, ap);
    b->n += (size_t)k;
}
TU_FN void tu_sb_printf(tu_sb *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    tu_sb_vprintf(b, fmt, ap);
    va_end(ap);
}
/* n bytes of s as a JSON string: quoted, '"' and '\' escaped, control bytes as \u00XX. */
TU_FN void tu_sb_json(tu_sb *b, const char *s, size_t n) {
    size_t i;
    tu_sb_put(b, "\"", 1);
    for (i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') { tu_sb_put(b, "\\", 1); tu_sb_put(b, s + i, 1); }
        else if (c < 0x20) tu_sb_printf(b, "\\u%04x", c);
        else tu_sb_put(b, s + i, 1);
    }
    tu_sb_put(b, "\"", 1);
}
TU_FN void tu_sb_free(tu_sb *b) {
    free(b->p);
    b->p = NULL;
    b->n = b->cap = 0;
}

/* ---- a checking allocator ----
   Each block is [size u64][magic u64][the caller's bytes][16 guard bytes]. Every call that breaks
   the contract counts in `bad` (why holds the first): a free or realloc with another size than the
   block's, of a block that is not one of ours, or of a block written past its end; a request for
   0 bytes (the library asks for 1 at least) or a realloc of NULL (it calls alloc for that); a
   request above max_size when that is set.
   fail_at = k refuses the k-th request (alloc or realloc, from 1; 0 = never). Not thread-safe:
   hand it to one thread at a time. */
typedef struct tu_alloc {
    long calls;          /* alloc + realloc requests so far */
    long fail_at;        /* the request that gets NULL; 0 = none */
    long failed;         /* requests refused that way */
    long blocks;         /* live blocks */
    int64_t bytes;       /* live bytes */
    int64_t peak;        /* the most live bytes at once */
    long frees;          /* blocks freed */
    long bad;            /* broken-contract calls */
    char why[192];       /* the first of them */
    uint64_t max_size;   /* > 0: larger requests are bad too (the fuzz targets: 2^40) */
    int abort_on_bad;    /* print why and abort() at the first bad call (the fuzz targets) */
} tu_alloc;
#define TU_ALLOC_MAGIC 0x5EEDF00DA110C8EDull
#define TU_ALLOC_GUARD 16

TU_FN void tu_alloc_bad(tu_alloc *a, const char *fmt, ...) {
    if (!a->bad++) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(a->why, sizeof a->why, fmt, ap);
        va_end(ap);
    }
    if (a->abort_on_bad) {
        fprintf(stderr, "allocator misuse: %s\n", a->why);
        abort();
    }
}
TU_FN void tu_alloc_seal(uint64_t *h, size_t size) {
    h[0] = size;
    h[1] = TU_ALLOC_MAGIC;
    memset((uint8_t *)(h + 2) + size, 0xA5, TU_ALLOC_GUARD);
}
/* The block's header when ptr is ours and intact (a size mismatch is noted, not refused); NULL
   (noted) when ptr is not ours. */
TU_FN uint64_t *tu_alloc_block(tu_alloc *a, void *ptr, size_t size, const char *what) {
    uint64_t *h = (uint64_t *)ptr - 2;
    const uint8_t *g;
    int i;
    if (h[1] != TU_ALLOC_MAGIC) { tu_alloc_bad(a, "%s of a block that is not ours (or freed twice)", what); return NULL; }
    if (h[0] != size) tu_alloc_bad(a, "%s with size %zu of a block of %llu bytes", what, size, (unsigned long long)h[0]);
    g = (const uint8_t *)ptr + h[0];
    for (i = 0; i < TU_ALLOC_GUARD; i++)
        if (g[i] != 0xA5) { tu_alloc_bad(a, "%s of a block of %llu bytes written past its end", what, (unsigned long long)h[0]); break; }
    return h;
}
TU_FN int tu_alloc_refuse(tu_alloc *a, size_t size, const char *what) {
    if (size == 0) tu_alloc_bad(a, "%s of 0 bytes", what);
    if (a->max_size && size > a->max_size) tu_alloc_bad(a, "%s of %zu bytes, above %llu", what, size, (unsigned long long)a->max_size);
    a->calls++;
    if (a->fail_at && a->calls == a->fail_at) { a->failed++; return 1; }
    return 0;
}
TU_FN void *tu_a_alloc(void *user, size_t size) {
    tu_alloc *a = (tu_alloc *)user;
    uint64_t *h;
    if (tu_alloc_refuse(a, size, "alloc")) return NULL;
    if (!(h = (uint64_t *)malloc(size + 16 + TU_ALLOC_GUARD))) return NULL;
    tu_alloc_seal(h, size);
    a->blocks++;
    a->bytes += (int64_t)size;
    if (a->bytes > a->peak) a->peak = a->bytes;
    return h + 2;
}
TU_FN void *tu_a_realloc(void *user, void *ptr, size_t old_size, size_t new_size) {
    tu_alloc *a = (tu_alloc *)user;
    uint64_t *h, *n, had;
    if (!ptr) { tu_alloc_bad(a, "realloc of NULL (the library asks alloc for a new block)"); return tu_a_alloc(user, new_size); }
    if (!(h = tu_alloc_block(a, ptr, old_size, "realloc"))) return NULL;
    if (tu_alloc_refuse(a, new_size, "realloc")) return NULL;
    had = h[0];
    if (!(n = (uint64_t *)realloc(h, new_size + 16 + TU_ALLOC_GUARD))) return NULL;
    tu_alloc_seal(n, new_size);
    a->bytes += (int64_t)new_size - (int64_t)had;
    if (a->bytes > a->peak) a->peak = a->bytes;
    return n + 2;
}
TU_FN void tu_a_free(void *user, void *ptr, size_t size) {
    tu_alloc *a = (tu_alloc *)user;
    uint64_t *h;
    if (!ptr) return;
    if (!(h = tu_alloc_block(a, ptr, size, "free"))) return;
    a->bytes -= (int64_t)h[0];
    a->blocks--;
    a->frees++;
    h[1] = 0;
    free(h);
}
/* base (or all-default options when NULL) with a's three hooks; *a starts from zero. */
TU_FN sts_options tu_alloc_opts(tu_alloc *a, const sts_options *base) {
    sts_options o;
    if (base) o = *base;
    else memset(&o, 0, sizeof o);
    memset(a, 0, sizeof *a);
    o.allocator.alloc = tu_a_alloc;
    o.allocator.realloc = tu_a_realloc;
    o.allocator.free = tu_a_free;
    o.allocator.user = a;
    return o;
}
/* Fails unless every call kept the contract and nothing is still allocated. */
TU_FN void tu_alloc_check(const char *label, const tu_alloc *a) {
    if (a->bad) TU_FAIL("%s: allocator misuse (%ld call(s)), the first: %s", label, a->bad, a->why);
    if (a->bytes || a->blocks) TU_FAIL("%s: %lld bytes in %ld blocks still allocated", label, (long long)a->bytes, a->blocks);
}

/* ---- the sts_error check ----
   tu_err_whyv: NULL when the result is right, else what is wrong, written into why:
     got is code, and so is e->code (TU_ANY_CODE: any error code, the same in both);
     e->rule is rule (TU_ANY_RULE: any rule but STS_RULE_NONE);
     the message is NUL-terminated in place, starts with "<rule id>: " followed by text, and holds
     no TAB, CR or LF (the sts tool prints it in a TSV column);
     the message holds every string of the NULL-terminated list ap.
   tu_err_check fails the test with that; tu_err_note appends it to a list of notes and returns 0
   (tables of cases that report every bad case at once); tu_err_has checks only the message of an
   error already checked (any code and rule) for substrings. */
#define TU_ANY_CODE STS_RESULT_COUNT
#define TU_ANY_RULE STS_RULE_COUNT
TU_FN const char *tu_err_whyv(char *why, size_t cap, sts_result got, const sts_error *e, sts_result code, sts_rule rule, va_list ap) {
    const char *id, *s;
    size_t idn, mn;
    if (code == TU_ANY_CODE) {
        if (got == STS_OK || (unsigned)got >= (unsigned)STS_RESULT_COUNT) { snprintf(why, cap, "result %s (%d), expected an error", sts_result_name(got), (int)got); return why; }
        code = got;
    }
    if (got != code) { snprintf(why, cap, "result %s, expected %s (message: %.200s)", sts_result_name(got), sts_result_name(code), e->message); return why; }
    if (e->code != code) { snprintf(why, cap, "err.code %s, expected %s (message: %.200s)", sts_result_name(e->code), sts_result_name(code), e->message); return why; }
    if (rule == TU_ANY_RULE) {
        if (e->rule == STS_RULE_NONE || (unsigned)e->rule >= (unsigned)STS_RULE_COUNT) { snprintf(why, cap, "rule %d, expected a rule", (int)e->rule); return why; }
        rule = e->rule;
    }
    if (e->rule != rule) { snprintf(why, cap, "rule %s, expected %s (message: %.200s)", sts_rule_id(e->rule), sts_rule_id(rule), e->message); return why; }
    if (!memchr(e->message, 0, sizeof e->message)) { snprintf(why, cap, "the message is not NUL-terminated in its %zu bytes", sizeof e->message); return why; }
    id = sts_rule_id(rule);
    idn = strlen(id);
    mn = strlen(e->message);
    if (mn <= idn + 2 || memcmp(e->message, id, idn) != 0 || e->message[idn] != ':' || e->message[idn + 1] != ' ') {
        snprintf(why, cap, "the message does not start with \"%s: \" and text: %.200s", id, e->message);
        return why;
    }
    if (strpbrk(e->message, "\t\r\n")) { snprintf(why, cap, "the message holds a TAB, CR or LF: %.200s", e->message); return why; }
    while ((s = va_arg(ap, const char *)) != NULL)
        if (!strstr(e->message, s)) { snprintf(why, cap, "the message lacks \"%.100s\": %.200s", s, e->message); return why; }
    return NULL;
}
TU_FN const char *tu_err_why(char *why, size_t cap, sts_result got, const sts_error *e, sts_result code, sts_rule rule, ...) {
    const char *w;
    va_list ap;
    va_start(ap, rule);
    w = tu_err_whyv(why, cap, got, e, code, rule, ap);
    va_end(ap);
    return w;
}
/* notes NULL: fail at once (that is tu_err_check). */
TU_FN int tu_err_note(tu_sb *notes, const char *label, sts_result got, const sts_error *e, sts_result code, sts_rule rule, ...) {
    char why[512];
    const char *w;
    va_list ap;
    va_start(ap, rule);
    w = tu_err_whyv(why, sizeof why, got, e, code, rule, ap);
    va_end(ap);
    if (w && !notes) TU_FAIL("%s: %s", label, w);
    if (w) tu_sb_printf(notes, "\n  %s: %s", label, w);
    return w == NULL;
}
#define tu_err_check(label, ...) ((void)tu_err_note(NULL, (label), __VA_ARGS__))
#define tu_err_has(label, e, ...) tu_err_check((label), (e)->code, (e), TU_ANY_CODE, TU_ANY_RULE, __VA_ARGS__)
/* Fails with every note collected (and prints them: a cmocka message is short). */
#define tu_notes_done(notes, what) do { if ((notes)->n) { fprintf(stderr, "%s:%s\n", (what), (notes)->p); tu_sb_free(notes); TU_FAIL("%s: see above", (what)); } } while (0)

#endif /* STS_TESTS_TEST_UTIL_H */
