/* core_util.h - helpers shared by the core unit tests (tests/test_core_*.c).

   Include after "../safetensors_spark.h" (which the test file includes with STS_IMPLEMENTATION).
   Each test file defines _POSIX_C_SOURCE 200809L before any include. Everything here is static
   and marked unused, so a test file pays only for what it calls.

   What is here (the level, clock, PRNG, text builder, checking allocator and the sts_error check
   are in test_util.h; files and folders in fs_util.h):
     - building a file image from header JSON text: 8-byte length, header, data
     - parsing an image and expecting a given failure (code, rule, offset, out left alone) or success
     - the message names a tensor: "name" quoted
     - counting the entries of a folder */
#ifndef STS_TESTS_CORE_UTIL_H
#define STS_TESTS_CORE_UTIL_H

#include "test_util.h"
#include "fs_util.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#define CU_FN TU_FN

/* A label naming the case in progress; failure messages start with it. */
#if defined(__GNUC__) || defined(__clang__)
static const char *cu_label __attribute__((unused)) = "";
#else
static const char *cu_label = "";
#endif

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
/* The message names `name` quoted ("name"); the error is checked whole by tu_err_has. */
CU_FN void cu_check_names(const sts_error *e, const char *name) {
    char q[128];
    snprintf(q, sizeof q, "\"%s\"", name);
    tu_err_has(cu_label, e, q, (const char *)NULL);
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
    tu_err_check(cu_label, r, &e, sts_rule_result(rule), rule, (const char *)NULL);
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

#endif /* STS_TESTS_CORE_UTIL_H */
