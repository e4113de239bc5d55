/* core_util.h - helpers shared by the core unit tests (tests/test_core_*.c).

   Include after "../safetensors_spark.h" (which the test file includes with STS_IMPLEMENTATION).
   Each test file defines _POSIX_C_SOURCE 200809L before any include. Everything here is static
   and marked unused, so a test file pays only for what it calls.

   What is here:
     - the test level (STS_TEST_LEVEL=quick shrinks loops) and a monotonic clock
     - building a file image from header JSON text: 8-byte length, header, data
     - checking an sts_error: code, rule, offset, message prefix "<rule id>: " and the quoted name
     - a tracking allocator (sizes checked on free and realloc, k-th allocation failure)
     - temporary folders, listing and removing them, reading and writing whole files
     - a seeded PRNG (splitmix64) */
#ifndef STS_TESTS_CORE_UTIL_H
#define STS_TESTS_CORE_UTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>
#include "fs_util.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#if defined(__GNUC__) || defined(__clang__)
#  define CU_FN static __attribute__((unused))
#else
#  define CU_FN static
#endif

/* A label naming the case in progress; failure messages start with it. */
#if defined(__GNUC__) || defined(__clang__)
static const char *cu_label __attribute__((unused)) = "";
#else
static const char *cu_label = "";
#endif

/* ---- level and clock ---- */
CU_FN int cu_quick(void) {
    const char *l = getenv("STS_TEST_LEVEL");
    return l && strcmp(l, "quick") == 0;
}
CU_FN double cu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- little-endian u64 ---- */
CU_FN void cu_st64(uint8_t *p, uint64_t v) {
    int i;
    for (i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}
CU_FN uint64_t cu_ld64(const uint8_t *p) {
    uint64_t v = 0;
    int i;
    for (i = 7; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

/* ---- file images ----
   A file = le64(n_field) + header bytes (hlen of them) + data bytes (dlen; NULL data = a
   byte pattern i*7+1 so that data comparisons mean something). Returned with malloc. */
typedef struct cu_img { uint8_t *p; size_t size; size_t hlen; } cu_img;

CU_FN cu_img cu_img_raw(uint64_t n_field, const void *hdr, size_t hlen, const void *data, size_t dlen) {
    cu_img im;
    size_t i;
    im.size = 8 + hlen + dlen;
    im.hlen = hlen;
    im.p = (uint8_t *)malloc(im.size ? im.size : 1);
    assert_non_null(im.p);
    cu_st64(im.p, n_field);
    if (hlen) memcpy(im.p + 8, hdr, hlen);
    for (i = 0; i < dlen; i++) im.p[8 + hlen + i] = data ? ((const uint8_t *)data)[i] : (uint8_t)(i * 7 + 1);
    return im;
}
/* The usual case: N = strlen(json), dlen pattern bytes of data. */
CU_FN cu_img cu_img_json(const char *json, size_t dlen) {
    size_t n = strlen(json);
    return cu_img_raw(n, json, n, NULL, dlen);
}
/* Header bytes with explicit length (may hold NUL or invalid UTF-8). */
CU_FN cu_img cu_img_bytes(const void *hdr, size_t hlen, size_t dlen) {
    return cu_img_raw(hlen, hdr, hlen, NULL, dlen);
}
/* Header text in "q-form": every ' becomes ", so headers read without backslashes. */
CU_FN char *cu_q(const char *q) {
    size_t n = strlen(q), i;
    char *s = (char *)malloc(n + 1);
    assert_non_null(s);
    for (i = 0; i <= n; i++) s[i] = q[i] == '\'' ? '"' : q[i];
    return s;
}
CU_FN cu_img cu_img_q(const char *q, size_t dlen) {
    char *s = cu_q(q);
    cu_img im = cu_img_json(s, dlen);
    free(s);
    return im;
}
CU_FN void cu_img_free(cu_img *im) {
    free(im->p);
    im->p = NULL;
}
/* File offset of the first occurrence of needle in the header of im (8 + index); fails the
   test when absent. nth counts from 0. */
CU_FN uint64_t cu_off_nth(const cu_img *im, const char *needle, int nth) {
    size_t nl = strlen(needle), i;
    int seen = 0;
    for (i = 0; i + nl <= im->hlen; i++)
        if (memcmp(im->p + 8 + i, needle, nl) == 0 && seen++ == nth) return 8 + (uint64_t)i;
    fail_msg("needle %s not found in the header", needle);
    return 0;
}
CU_FN uint64_t cu_off(const cu_img *im, const char *needle) { return cu_off_nth(im, needle, 0); }

/* ---- errors ---- */
CU_FN void cu_err_poison(sts_error *e) {
    memset(e, 0x5a, sizeof *e);
    e->message[sizeof e->message - 1] = 0;
}
/* The message is "<rule id>: ...", NUL-terminated within 256 bytes, with no TAB or newline. */
CU_FN void cu_check_message(const sts_error *e) {
    const char *id = sts_rule_id(e->rule);
    size_t idl = strlen(id), ml = strnlen(e->message, sizeof e->message);
    assert_true(ml < sizeof e->message);
    if (strncmp(e->message, id, idl) != 0 || e->message[idl] != ':' || e->message[idl + 1] != ' ')
        fail_msg("[%s] message does not start with \"%s: \": %s", cu_label, id, e->message);
    assert_null(strchr(e->message, '\t'));
    assert_null(strchr(e->message, '\n'));
    assert_null(strchr(e->message, '\r'));
}
/* code, rule (and the rule's code), message shape. */
CU_FN void cu_check_err(sts_result got, const sts_error *e, sts_result code, sts_rule rule) {
    if (got != code || e->code != code || e->rule != rule)
        fail_msg("[%s] expected %s/%s, got %s (err %s/%s): %s", cu_label, sts_result_name(code), sts_rule_id(rule), sts_result_name(got),
                 sts_result_name(e->code), sts_rule_id(e->rule), e->message);
    cu_check_message(e);
}
/* The message names `name` quoted ("name"). */
CU_FN void cu_check_names(const sts_error *e, const char *name) {
    char q[128];
    snprintf(q, sizeof q, "\"%s\"", name);
    if (!strstr(e->message, q)) fail_msg("[%s] message does not name %s: %s", cu_label, q, e->message);
}
CU_FN void cu_check_contains(const sts_error *e, const char *s) {
    if (!strstr(e->message, s)) fail_msg("[%s] message lacks \"%s\": %s", cu_label, s, e->message);
}

/* Parse an image with options and expect a failure under `rule` (whose code is the rule's);
   check the offset unless it is STS_OFFSET_UNKNOWN - 1 (= don't care), and that *out is left
   alone. Returns the error for further checks. */
#define CU_ANY_OFFSET (STS_OFFSET_UNKNOWN - 1)
CU_FN sts_error cu_parse_fail(const cu_img *im, const sts_options *o, sts_rule rule, uint64_t offset) {
    sts_error e;
    sts_file *f = (sts_file *)(uintptr_t)0x1234;
    sts_result r;
    cu_err_poison(&e);
    r = sts_parse(im->p, im->size, o, &f, &e);
    if (r == STS_OK) { sts_close(f); fail_msg("[%s] expected %s, but the parse succeeded", cu_label, sts_rule_id(rule)); }
    cu_check_err(r, &e, sts_rule_result(rule), rule);
    assert_ptr_equal(f, (sts_file *)(uintptr_t)0x1234);
    if (offset != CU_ANY_OFFSET && e.offset != offset)
        fail_msg("[%s] %s: expected offset %llu, got %llu: %s", cu_label, sts_rule_id(rule), (unsigned long long)offset,
                 (unsigned long long)e.offset, e.message);
    /* the same verdict without an error struct */
    f = (sts_file *)(uintptr_t)0x1234;
    assert_int_equal(sts_parse(im->p, im->size, o, &f, NULL), sts_rule_result(rule));
    assert_ptr_equal(f, (sts_file *)(uintptr_t)0x1234);
    return e;
}
CU_FN sts_file *cu_parse_ok(const cu_img *im, const sts_options *o) {
    sts_error e;
    sts_file *f = NULL;
    sts_result r;
    cu_err_poison(&e);
    r = sts_parse(im->p, im->size, o, &f, &e);
    if (r != STS_OK) fail_msg("[%s] expected success, got %s: %s", cu_label, sts_result_name(r), e.message);
    assert_int_equal(e.code, STS_OK);
    assert_int_equal(e.rule, STS_RULE_NONE);
    assert_non_null(f);
    return f;
}
/* Convenience: JSON text + data length, expect failure. */
CU_FN sts_error cu_json_fail(const char *json, size_t dlen, const sts_options *o, sts_rule rule, uint64_t offset) {
    cu_img im = cu_img_json(json, dlen);
    sts_error e = cu_parse_fail(&im, o, rule, offset);
    cu_img_free(&im);
    return e;
}
CU_FN void cu_json_ok(const char *json, size_t dlen, const sts_options *o) {
    cu_img im = cu_img_json(json, dlen);
    sts_close(cu_parse_ok(&im, o));
    cu_img_free(&im);
}

/* ---- tracking allocator ----
   Each block carries a 16-byte prefix holding its size; free and realloc must pass that size.
   fail_at = k fails the k-th request (alloc or realloc, counting from 1); 0 never fails. */
typedef struct cu_alloc {
    long calls;          /* alloc + realloc requests so far */
    long fail_at;
    long failed;         /* requests refused */
    long blocks;         /* live blocks */
    uint64_t bytes;      /* live bytes */
    long bad_size;       /* free/realloc calls whose size disagreed with the block */
    long frees;
} cu_alloc;

#define CU_PREFIX 16
CU_FN void *cu_a_alloc(void *user, size_t size) {
    cu_alloc *a = (cu_alloc *)user;
    uint8_t *p;
    a->calls++;
    if (a->fail_at && a->calls == a->fail_at) { a->failed++; return NULL; }
    p = (uint8_t *)malloc(size + CU_PREFIX);
    if (!p) return NULL;
    memcpy(p, &size, sizeof size);
    a->blocks++;
    a->bytes += size;
    return p + CU_PREFIX;
}
CU_FN void *cu_a_realloc(void *user, void *ptr, size_t old_size, size_t new_size) {
    cu_alloc *a = (cu_alloc *)user;
    uint8_t *p = (uint8_t *)ptr - CU_PREFIX, *np;
    size_t had;
    a->calls++;
    memcpy(&had, p, sizeof had);
    if (had != old_size) a->bad_size++;
    if (a->fail_at && a->calls == a->fail_at) { a->failed++; return NULL; }
    np = (uint8_t *)realloc(p, new_size + CU_PREFIX);
    if (!np) return NULL;
    memcpy(np, &new_size, sizeof new_size);
    a->bytes = a->bytes - had + new_size;
    return np + CU_PREFIX;
}
CU_FN void cu_a_free(void *user, void *ptr, size_t size) {
    cu_alloc *a = (cu_alloc *)user;
    uint8_t *p;
    size_t had;
    if (!ptr) return;
    p = (uint8_t *)ptr - CU_PREFIX;
    memcpy(&had, p, sizeof had);
    if (had != size) a->bad_size++;
    a->blocks--;
    a->bytes -= had;
    a->frees++;
    free(p);
}
CU_FN sts_options cu_alloc_opts(cu_alloc *a) {
    sts_options o;
    memset(&o, 0, sizeof o);
    memset(a, 0, sizeof *a);
    o.allocator.alloc = cu_a_alloc;
    o.allocator.realloc = cu_a_realloc;
    o.allocator.free = cu_a_free;
    o.allocator.user = a;
    return o;
}

/* ---- files and folders ---- */
/* Number of entries in a folder other than . and .. */
CU_FN int cu_dir_count(const char *dir) {
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;
    assert_non_null(d);
    while ((e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
    closedir(d);
    return n;
}

/* ---- PRNG: splitmix64 ---- */
typedef struct cu_rng { uint64_t s; } cu_rng;
CU_FN uint64_t cu_next(cu_rng *r) {
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
CU_FN uint32_t cu_below(cu_rng *r, uint32_t n) { return n ? (uint32_t)(cu_next(r) % n) : 0; }

/* ---- a growable byte buffer (for building headers) ---- */
typedef struct cu_sb { char *p; size_t n, cap; } cu_sb;
CU_FN void cu_sb_put(cu_sb *b, const void *s, size_t n) {
    if (b->n + n + 1 > b->cap) {
        size_t nc = b->cap ? b->cap : 256;
        while (nc < b->n + n + 1) nc *= 2;
        b->p = (char *)realloc(b->p, nc);
        assert_non_null(b->p);
        b->cap = nc;
    }
    if (n) memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
}
CU_FN void cu_sb_str(cu_sb *b, const char *s) { cu_sb_put(b, s, strlen(s)); }
CU_FN void cu_sb_printf(cu_sb *b, const char *fmt, ...) {
    char t[512];
    int k;
    va_list ap;
    va_start(ap, fmt);
    k = vsnprintf(t, sizeof t, fmt, ap);
    va_end(ap);
    assert_true(k >= 0 && (size_t)k < sizeof t);
    cu_sb_put(b, t, (size_t)k);
}
CU_FN void cu_sb_free(cu_sb *b) {
    free(b->p);
    b->p = NULL;
    b->n = b->cap = 0;
}

#endif /* STS_TESTS_CORE_UTIL_H */
