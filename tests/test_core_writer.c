/* test_core_writer.c - layer 6: the single-file writer. Golden bytes written by hand from the
   reference writer's layout (descending dtype rank then name bytes, compact JSON, __metadata__
   first, spaces to a multiple of 8, serde-style escaping); every refusal happens before a byte
   reaches the sink; producers, sink failures, sts_write_size, and sts_write_path's atomic
   publication (temporary + rename, nothing left behind on failure). */
#define _POSIX_C_SOURCE 200809L
#define STS_IMPLEMENTATION
#include "../safetensors_spark.h"
#include "core_util.h"

#include <errno.h>
#include <signal.h>
#include <sys/resource.h>

/* ---- a recording sink ---- */
typedef struct rec_sink {
    tu_sb got;
    long calls;
    long fail_at;          /* fail the k-th call (from 1); 0 never */
    sts_result fail_code;
} rec_sink;
static sts_result rec_write(void *user, const void *bytes, size_t len) {
    rec_sink *s = (rec_sink *)user;
    s->calls++;
    if (s->fail_at && s->calls == s->fail_at) return s->fail_code;
    tu_sb_put(&s->got, bytes, len);
    return STS_OK;
}
static sts_sink rec_sink_of(rec_sink *s) {
    sts_sink k;
    k.write = rec_write;
    k.user = s;
    return k;
}

/* Expected file: le64(N) + json + spaces up to N = json rounded up to 8, then data. */
static void expect_bytes(const void *got, size_t got_n, const char *json, size_t json_len, const void *data, size_t dlen) {
    size_t n = (json_len + 7) / 8 * 8, i;
    const uint8_t *g = (const uint8_t *)got;
    if (got_n != 8 + n + dlen) fail_msg("size %zu, expected %zu (json %zu)", got_n, 8 + n + dlen, json_len);
    assert_int_equal(cu_ld64(g), n);
    if (memcmp(g + 8, json, json_len) != 0) fail_msg("header differs:\n got %.*s\nwant %.*s", (int)json_len, (const char *)g + 8, (int)json_len, json);
    for (i = json_len; i < n; i++) assert_int_equal(g[8 + i], ' ');
    if (dlen) assert_memory_equal(g + 8 + n, data, dlen);
}
/* Write with sts_write_memory, sts_write (recording sink) and sts_write_size; all must agree
   with the expected bytes. */
static void expect_write(const sts_tensor_spec *specs, size_t n, const sts_kv *meta, size_t n_meta,
                         const char *json, const void *data, size_t dlen) {
    void *out = NULL;
    size_t size = 0;
    sts_error e;
    rec_sink rs;
    sts_sink sink;
    uint64_t hs = 0, fs = 0;
    sts_file *f = NULL;
    sts_options strict;
    cu_err_poison(&e);
    if (sts_write_memory(specs, n, meta, n_meta, NULL, &out, &size, &e) != STS_OK) fail_msg("write failed: %s", e.message);
    assert_int_equal(e.code, STS_OK);
    expect_bytes(out, size, json, strlen(json), data, dlen);
    memset(&rs, 0, sizeof rs);
    sink = rec_sink_of(&rs);
    assert_int_equal(sts_write(specs, n, meta, n_meta, &sink, NULL, &e), STS_OK);
    assert_int_equal(rs.got.n, size);
    assert_memory_equal(rs.got.p, out, size);
    assert_int_equal(sts_write_size(specs, n, meta, n_meta, NULL, &hs, &fs, &e), STS_OK);
    assert_int_equal(hs, cu_ld64((const uint8_t *)out));
    assert_int_equal(fs, size);
    /* the writer is always strict */
    memset(&strict, 0, sizeof strict);
    strict.strict = 1;
    if (sts_parse(out, size, &strict, &f, &e) != STS_OK) fail_msg("strict parse of the output: %s", e.message);
    assert_int_equal(sts_count(f), n);
    sts_close(f);
    sts_free(NULL, out, size);
    tu_sb_free(&rs.got);
}

static sts_tensor_spec spec(const char *name, sts_dtype dt, uint32_t rank, const uint64_t *shape, const void *data, uint64_t size) {
    sts_tensor_spec s;
    memset(&s, 0, sizeof s);
    s.name = name;
    s.name_len = name ? strlen(name) : 0;
    s.dtype = dt;
    s.rank = rank;
    s.shape = shape;
    s.data = data;
    s.data_size = size;
    return s;
}
static sts_kv kv(const char *k, const char *v) {
    sts_kv x;
    x.key = k; x.key_len = strlen(k); x.value = v; x.value_len = strlen(v);
    return x;
}

/* ============================== golden bytes ============================== */

static void test_golden_empty(void **state) {
    static const uint8_t want[16] = { 8, 0, 0, 0, 0, 0, 0, 0, '{', '}', ' ', ' ', ' ', ' ', ' ', ' ' };
    static const uint8_t want_meta[32] = { 24, 0, 0, 0, 0, 0, 0, 0, '{', '"', '_', '_', 'm', 'e', 't', 'a', 'd', 'a', 't', 'a',
                                           '_', '_', '"', ':', '{', '}', '}', ' ', ' ', ' ', ' ', ' ' };
    void *out;
    size_t size;
    sts_kv dummy = kv("x", "y");
    (void)state;
    assert_int_equal(sts_write_memory(NULL, 0, NULL, 0, NULL, &out, &size, NULL), STS_OK);
    assert_int_equal(size, 16);
    assert_memory_equal(out, want, 16);
    sts_free(NULL, out, size);
    /* meta != NULL with no entries: "__metadata__":{} */
    assert_int_equal(sts_write_memory(NULL, 0, &dummy, 0, NULL, &out, &size, NULL), STS_OK);
    assert_int_equal(size, 32);
    assert_memory_equal(out, want_meta, 32);
    sts_free(NULL, out, size);
    expect_write(NULL, 0, NULL, 0, "{}", NULL, 0);
}

static void test_golden_layout(void **state) {
    static const uint64_t s1[1] = { 1 }, s2[1] = { 2 }, s3[1] = { 3 }, s0[1] = { 0 };
    static const uint8_t db[3] = { 1, 2, 3 }, dbool[1] = { 1 };
    static const uint8_t da[8] = { 0, 0, 128, 63, 0, 0, 0, 64 }, dab[4] = { 9, 9, 9, 9 }, dc[4] = { 7, 7, 7, 7 };
    static const uint8_t de[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
    sts_tensor_spec sp[7];
    sts_kv meta[3];
    uint8_t data[28];
    (void)state;
    sp[0] = spec("b", STS_DTYPE_U8, 1, s3, db, 3);
    sp[1] = spec("a", STS_DTYPE_F32, 1, s2, da, 8);
    sp[2] = spec("c", STS_DTYPE_F32, 0, NULL, dc, 4);
    sp[3] = spec("", STS_DTYPE_BOOL, 1, s1, dbool, 1);
    sp[4] = spec("B", STS_DTYPE_F32, 1, s0, NULL, 0);
    sp[5] = spec("\xC3\xA9", STS_DTYPE_I64, 1, s1, de, 8);
    sp[6] = spec("ab", STS_DTYPE_F32, 1, s1, dab, 4);
    meta[0] = kv("format", "pt");
    meta[1] = kv("z", "1");
    meta[2] = kv("a", "2");
    /* data in layout order: é, B, a, ab, c, b, "" */
    memcpy(data, de, 8);
    memcpy(data + 8, da, 8);
    memcpy(data + 16, dab, 4);
    memcpy(data + 20, dc, 4);
    memcpy(data + 24, db, 3);
    memcpy(data + 27, dbool, 1);
    expect_write(sp, 7, meta, 3,
                 "{\"__metadata__\":{\"format\":\"pt\",\"z\":\"1\",\"a\":\"2\"},"
                 "\"\xC3\xA9\":{\"dtype\":\"I64\",\"shape\":[1],\"data_offsets\":[0,8]},"
                 "\"B\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[8,8]},"
                 "\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,16]},"
                 "\"ab\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[16,20]},"
                 "\"c\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[20,24]},"
                 "\"b\":{\"dtype\":\"U8\",\"shape\":[3],\"data_offsets\":[24,27]},"
                 "\"\":{\"dtype\":\"BOOL\",\"shape\":[1],\"data_offsets\":[27,28]}}",
                 data, 28);
    /* the same set in another input order gives the same bytes */
    {
        sts_tensor_spec rev[7];
        int i;
        for (i = 0; i < 7; i++) rev[i] = sp[6 - i];
        expect_write(rev, 7, meta, 3,
                     "{\"__metadata__\":{\"format\":\"pt\",\"z\":\"1\",\"a\":\"2\"},"
                     "\"\xC3\xA9\":{\"dtype\":\"I64\",\"shape\":[1],\"data_offsets\":[0,8]},"
                     "\"B\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[8,8]},"
                     "\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,16]},"
                     "\"ab\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[16,20]},"
                     "\"c\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[20,24]},"
                     "\"b\":{\"dtype\":\"U8\",\"shape\":[3],\"data_offsets\":[24,27]},"
                     "\"\":{\"dtype\":\"BOOL\",\"shape\":[1],\"data_offsets\":[27,28]}}",
                     data, 28);
    }
}

/* Padding: JSON lengths 1..16 past a multiple of 8 each get 0..7 spaces. */
static void test_golden_padding(void **state) {
    static const uint64_t s1[1] = { 1 };
    static const uint8_t d[1] = { 42 };
    char name[20], json[128];
    int k;
    (void)state;
    for (k = 0; k < 16; k++) {
        sts_tensor_spec sp;
        memset(name, 'n', (size_t)k);
        name[k] = 0;
        sp = spec(name, STS_DTYPE_U8, 1, s1, d, 1);
        snprintf(json, sizeof json, "{\"%s\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}}", name);
        expect_write(&sp, 1, NULL, 0, json, d, 1);
    }
}

static void test_golden_escaping(void **state) {
    static const uint64_t s1[1] = { 1 };
    static const uint8_t d[2] = { 5, 6 };
    sts_tensor_spec sp[2];
    sts_kv meta[2];
    (void)state;
    sp[0] = spec("q\"\\\x01\b\f\n\r\t\x1b\x1f\x7f\xC3\xA9/\xF0\x9F\x98\x80", STS_DTYPE_U8, 1, s1, d, 1);
    sp[1] = spec("\x0b", STS_DTYPE_U8, 1, s1, d + 1, 1);
    meta[0].key = "k\0e\x0b"; meta[0].key_len = 4;
    meta[0].value = "\"v\\\x10\xE2\x82\xAC"; meta[0].value_len = 7;
    meta[1] = kv("\t", "\x1c");
    /* U8 names sort by bytes: 0x0b before 'q' */
    expect_write(sp, 2, meta, 2,
                 "{\"__metadata__\":{\"k\\u0000e\\u000b\":\"\\\"v\\\\\\u0010\xE2\x82\xAC\",\"\\t\":\"\\u001c\"},"
                 "\"\\u000b\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]},"
                 "\"q\\\"\\\\\\u0001\\b\\f\\n\\r\\t\\u001b\\u001f\x7f\xC3\xA9/\xF0\x9F\x98\x80\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[1,2]}}",
                 "\x06\x05", 2);
}

/* Name order is unsigned byte order, shorter first on a common prefix. */
static void test_golden_name_order(void **state) {
    static const char *const names[] = { "z", "\xC3\xA9", "aa", "a\x01", "a", "_", "A", "\x7f", "ab", "" };
    static const char *const want[] = { "", "A", "_", "a", "a\\u0001", "aa", "ab", "z", "\x7f", "\xC3\xA9" };
    static const uint64_t s0[1] = { 0 };
    sts_tensor_spec sp[10];
    tu_sb j = { 0 };
    int i;
    (void)state;
    for (i = 0; i < 10; i++) sp[i] = spec(names[i], STS_DTYPE_I16, 1, s0, NULL, 0);
    tu_sb_str(&j, "{");
    for (i = 0; i < 10; i++) tu_sb_printf(&j, "%s\"%s\":{\"dtype\":\"I16\",\"shape\":[0],\"data_offsets\":[0,0]}", i ? "," : "", want[i]);
    tu_sb_str(&j, "}");
    expect_write(sp, 10, NULL, 0, j.p, NULL, 0);
    tu_sb_free(&j);
}

/* All 22 dtypes: descending rank, so every tensor stays aligned to its element size. */
static void test_golden_dtype_order(void **state) {
    static const char *const order[22] = { "U64", "I64", "F64", "C64", "F32", "U32", "I32", "BF16", "F16", "U16", "I16",
                                           "F8_E5M2FNUZ", "F8_E4M3FNUZ", "F8_E8M0", "F8_E4M3", "F8_E5M2", "I8", "U8",
                                           "F6_E3M2", "F6_E2M3", "F4", "BOOL" };
    static const unsigned bits[22] = { 64, 64, 64, 64, 32, 32, 32, 16, 16, 16, 16, 8, 8, 8, 8, 8, 8, 8, 6, 6, 4, 8 };
    static const uint64_t shape[2] = { 2, 4 };
    static uint8_t data[22 * 64];
    sts_tensor_spec sp[22];
    tu_sb j = { 0 };
    uint8_t want[22 * 64];
    uint64_t off = 0;
    int i;
    (void)state;
    for (i = 0; i < 22 * 64; i++) data[i] = (uint8_t)(i * 13 + 5);
    for (i = 0; i < 22; i++)  /* given in enum order (ascending rank), each name its dtype */
        sp[i] = spec(sts_dtype_name((sts_dtype)i), (sts_dtype)i, 2, shape, data + 64 * i, sts_dtype_bits((sts_dtype)i));
    tu_sb_str(&j, "{");
    for (i = 0; i < 22; i++) {
        sts_dtype d;
        assert_int_equal(sts_dtype_from_name(order[i], strlen(order[i]), &d), 1);
        tu_sb_printf(&j, "%s\"%s\":{\"dtype\":\"%s\",\"shape\":[2,4],\"data_offsets\":[%llu,%llu]}", i ? "," : "", order[i], order[i],
                     (unsigned long long)off, (unsigned long long)(off + bits[i]));
        memcpy(want + off, data + 64 * (int)d, bits[i]);
        off += bits[i];
    }
    tu_sb_str(&j, "}");
    expect_write(sp, 22, NULL, 0, j.p, want, (size_t)off);
    tu_sb_free(&j);
}

static void test_golden_shapes(void **state) {
    static const uint64_t big[2] = { 0, UINT64_MAX }, r5[5] = { 1, 2, 1, 3, 1 }, z3[3] = { 7, 0, 9 };
    static const uint8_t d6[6] = { 1, 2, 3, 4, 5, 6 };
    sts_tensor_spec sp[4];
    (void)state;
    sp[0] = spec("big", STS_DTYPE_U8, 2, big, NULL, 0);
    sp[1] = spec("r5", STS_DTYPE_U8, 5, r5, d6, 6);
    sp[2] = spec("z3", STS_DTYPE_U8, 3, z3, d6, 0);  /* data pointer with size 0 is fine */
    sp[3] = spec("f4", STS_DTYPE_F4, 1, r5 + 1, d6, 1);
    expect_write(sp, 4, NULL, 0,
                 "{\"big\":{\"dtype\":\"U8\",\"shape\":[0,18446744073709551615],\"data_offsets\":[0,0]},"
                 "\"r5\":{\"dtype\":\"U8\",\"shape\":[1,2,1,3,1],\"data_offsets\":[0,6]},"
                 "\"z3\":{\"dtype\":\"U8\",\"shape\":[7,0,9],\"data_offsets\":[6,6]},"
                 "\"f4\":{\"dtype\":\"F4\",\"shape\":[2],\"data_offsets\":[6,7]}}",
                 "\x01\x02\x03\x04\x05\x06\x01", 7);
}

/* ============================== refusals: nothing reaches the sink ============================== */

typedef struct refusal {
    const char *what;
    sts_result code;
    sts_rule rule;
    const char *names;   /* the message quotes this, or NULL */
} refusal;

static void expect_refusal(const refusal *rf, const sts_tensor_spec *sp, size_t n, const sts_kv *meta, size_t n_meta,
                           const sts_options *o) {
    rec_sink rs;
    sts_sink sink;
    sts_error e;
    void *out = (void *)(uintptr_t)0x77;
    size_t size = 77;
    uint64_t hs = 5, fs = 6;
    sts_result r;
    cu_label = rf->what;
    memset(&rs, 0, sizeof rs);
    sink = rec_sink_of(&rs);
    cu_err_poison(&e);
    r = sts_write(sp, n, meta, n_meta, &sink, o, &e);
    tu_err_check(cu_label, r, &e, rf->code, rf->rule, (const char *)NULL);
    if (rf->names) cu_check_names(&e, rf->names);
    assert_int_equal(e.offset, STS_OFFSET_UNKNOWN);
    if (rs.calls != 0) fail_msg("[%s] the sink was called %ld times", rf->what, rs.calls);
    cu_err_poison(&e);
    r = sts_write_memory(sp, n, meta, n_meta, o, &out, &size, &e);
    tu_err_check(cu_label, r, &e, rf->code, rf->rule, (const char *)NULL);
    assert_ptr_equal(out, (void *)(uintptr_t)0x77);
    assert_int_equal(size, 77);
    r = sts_write_size(sp, n, meta, n_meta, o, &hs, &fs, &e);
    tu_err_check(cu_label, r, &e, rf->code, rf->rule, (const char *)NULL);
    assert_int_equal(hs, 5);
    assert_int_equal(fs, 6);
    assert_int_equal(sts_write(sp, n, meta, n_meta, &sink, o, NULL), rf->code);
    assert_int_equal(rs.calls, 0);
    tu_sb_free(&rs.got);
}

static sts_result never_called(void *user, const sts_tensor_spec *s, sts_stream *out) {
    (void)user; (void)s; (void)out;
    fail_msg("a producer was called for a refused write");
    return STS_ERR_INVALID_ARGUMENT;
}

static void test_refusals(void **state) {
    static const uint64_t s1[1] = { 1 }, s3[1] = { 3 }, s4[1] = { 4 };
    static const uint64_t numel_ovf[3] = { 4611686018427387904ull, 4, 0 }, bits_ovf[1] = { 2305843009213693952ull };
    static const uint64_t near_max[1] = { 2305843009213693951ull };
    static const uint8_t d[16] = { 0 };
    sts_tensor_spec sp[9];
    sts_kv meta[3];
    sts_options o;
    int i;
    (void)state;
    /* a valid base: a, b; the last spec of each case is the broken one */
    sp[0] = spec("a", STS_DTYPE_U8, 1, s1, d, 1);
    sp[1] = spec("b", STS_DTYPE_F32, 1, s1, d, 4);
    {
        refusal rf = { "duplicate names", STS_ERR_DUPLICATE_KEY, STS_RULE_WRITE_DUPLICATE, "a" };
        sp[2] = spec("a", STS_DTYPE_I8, 1, s1, d, 1);
        expect_refusal(&rf, sp, 3, NULL, 0, NULL);
    }
    {
        refusal rf = { "__metadata__ as a name", STS_ERR_INVALID_ARGUMENT, STS_RULE_WRITE_RESERVED, "__metadata__" };
        sp[2] = spec("__metadata__", STS_DTYPE_U8, 1, s1, d, 1);
        expect_refusal(&rf, sp, 3, NULL, 0, NULL);
    }
    {
        refusal rf = { "data_size too small", STS_ERR_INVALID_ARGUMENT, STS_RULE_WRITE_DATA_SIZE, "c" };
        sp[2] = spec("c", STS_DTYPE_F32, 1, s3, d, 11);
        expect_refusal(&rf, sp, 3, NULL, 0, NULL);
        sp[2].data_size = 13;
        rf.what = "data_size too large";
        expect_refusal(&rf, sp, 3, NULL, 0, NULL);
    }
    {
        refusal rf = { "numel overflow", STS_ERR_VALIDATION_OVERFLOW, STS_RULE_NUMEL_OVERFLOW, "c" };
        sp[2] = spec("c", STS_DTYPE_U8, 3, numel_ovf, d, 0);
        expect_refusal(&rf, sp, 3, NULL, 0, NULL);
    }
    {
        refusal rf = { "bits overflow", STS_ERR_VALIDATION_OVERFLOW, STS_RULE_BITS_OVERFLOW, "c" };
        sp[2] = spec("c", STS_DTYPE_U8, 1, bits_ovf, NULL, 0);
        sp[2].produce = never_called;
        expect_refusal(&rf, sp, 3, NULL, 0, NULL);
    }
    {
        refusal rf = { "misaligned F4", STS_ERR_MISALIGNED_SLICE, STS_RULE_BYTE_ALIGNED, "c" };
        sp[2] = spec("c", STS_DTYPE_F4, 1, s3, d, 1);
        expect_refusal(&rf, sp, 3, NULL, 0, NULL);
        sp[2] = spec("c", STS_DTYPE_F4, 0, NULL, d, 0);
        rf.what = "F4 scalar";
        expect_refusal(&rf, sp, 3, NULL, 0, NULL);
        sp[2] = spec("c", STS_DTYPE_F6_E3M2, 1, s3, d, 2);
        rf.what = "F6 x3";
        expect_refusal(&rf, sp, 3, NULL, 0, NULL);
    }
    {
        refusal rf = { "invalid UTF-8 name", STS_ERR_INVALID_ARGUMENT, STS_RULE_WRITE_TEXT, NULL };
        sp[2] = spec("c\xC0\x80", STS_DTYPE_U8, 1, s1, d, 1);
        expect_refusal(&rf, sp, 3, NULL, 0, NULL);
        sp[2] = spec("\xED\xA0\x80", STS_DTYPE_U8, 1, s1, d, 1);
        rf.what = "surrogate in a name";
        expect_refusal(&rf, sp, 3, NULL, 0, NULL);
        sp[2] = spec("c\xE2\x82", STS_DTYPE_U8, 1, s1, d, 1);
        rf.what = "truncated UTF-8 name";
        expect_refusal(&rf, sp, 3, NULL, 0, NULL);
    }
    {
        refusal rf = { "NUL in a name", STS_ERR_INVALID_ARGUMENT, STS_RULE_WRITE_TEXT, NULL };
        sp[2] = spec("c", STS_DTYPE_U8, 1, s1, d, 1);
        sp[2].name = "c\0d";
        sp[2].name_len = 3;
        expect_refusal(&rf, sp, 3, NULL, 0, NULL);
    }
    {
        refusal rf = { "unknown dtype", STS_ERR_INVALID_ARGUMENT, STS_RULE_WRITE_DTYPE, "c" };
        sp[2] = spec("c", STS_DTYPE_COUNT, 1, s1, d, 1);
        expect_refusal(&rf, sp, 3, NULL, 0, NULL);
        sp[2].dtype = (sts_dtype)-1;
        rf.what = "negative dtype";
        expect_refusal(&rf, sp, 3, NULL, 0, NULL);
    }
    {
        refusal rf = { "rank without shape", STS_ERR_INVALID_ARGUMENT, STS_RULE_WRITE_DTYPE, "c" };
        sp[2] = spec("c", STS_DTYPE_U8, 2, NULL, d, 1);
        expect_refusal(&rf, sp, 3, NULL, 0, NULL);
    }
    {
        refusal rf = { "no data and no producer", STS_ERR_INVALID_ARGUMENT, STS_RULE_WRITE_DATA_SIZE, "c" };
        sp[2] = spec("c", STS_DTYPE_U8, 1, s4, NULL, 4);
        expect_refusal(&rf, sp, 3, NULL, 0, NULL);
    }
    {
        refusal rf = { "name NULL with a length", STS_ERR_INVALID_ARGUMENT, STS_RULE_ARGUMENT, NULL };
        sp[2] = spec(NULL, STS_DTYPE_U8, 1, s1, d, 1);
        sp[2].name_len = 2;
        expect_refusal(&rf, sp, 3, NULL, 0, NULL);
    }
    {   /* the empty name twice, once as NULL */
        refusal rf = { "empty name twice", STS_ERR_DUPLICATE_KEY, STS_RULE_WRITE_DUPLICATE, "" };
        sp[2] = spec(NULL, STS_DTYPE_I8, 1, s1, d, 1);
        sp[3] = spec("", STS_DTYPE_U8, 1, s1, d, 1);
        expect_refusal(&rf, sp, 4, NULL, 0, NULL);
    }
    /* metadata */
    meta[0] = kv("k", "v");
    meta[1] = kv("j", "w");
    {
        refusal rf = { "duplicate metadata keys", STS_ERR_DUPLICATE_KEY, STS_RULE_WRITE_DUPLICATE, "k" };
        meta[2] = kv("k", "other");
        expect_refusal(&rf, sp, 2, meta, 3, NULL);
    }
    {
        refusal rf = { "invalid UTF-8 metadata key", STS_ERR_INVALID_ARGUMENT, STS_RULE_WRITE_TEXT, NULL };
        meta[2] = kv("\xFF", "v");
        expect_refusal(&rf, sp, 2, meta, 3, NULL);
        meta[2] = kv("x", "\xC3");
        rf.what = "invalid UTF-8 metadata value";
        expect_refusal(&rf, sp, 2, meta, 3, NULL);
        meta[2] = kv("", "a");
        meta[2].key = NULL;
        {
            sts_kv m4[4];
            refusal dup = { "empty metadata key twice", STS_ERR_DUPLICATE_KEY, STS_RULE_WRITE_DUPLICATE, "" };
            m4[0] = meta[0]; m4[1] = meta[2]; m4[2] = meta[1]; m4[3] = kv("", "b");
            expect_refusal(&dup, sp, 2, m4, 4, NULL);
        }
        meta[2] = kv("x", "y");
        meta[2].value = NULL;
        rf.what = "NULL metadata value with a length";
        rf.rule = STS_RULE_ARGUMENT;
        expect_refusal(&rf, sp, 2, meta, 3, NULL);
    }
    {
        refusal rf = { "metadata NULL with a count", STS_ERR_INVALID_ARGUMENT, STS_RULE_ARGUMENT, NULL };
        expect_refusal(&rf, sp, 2, NULL, 1, NULL);
        rf.what = "specs NULL with a count";
        expect_refusal(&rf, NULL, 2, NULL, 0, NULL);
    }
    /* the header cap, tightened: the empty file's N is 8 */
    memset(&o, 0, sizeof o);
    {
        refusal rf = { "header over max_header_size", STS_ERR_HEADER_TOO_LARGE, STS_RULE_HEADER_TOO_LARGE, NULL };
        uint64_t hs = 0;
        o.max_header_size = 7;
        expect_refusal(&rf, NULL, 0, NULL, 0, &o);
        o.max_header_size = 8;
        assert_int_equal(sts_write_size(NULL, 0, NULL, 0, &o, &hs, NULL, NULL), STS_OK);
        assert_int_equal(hs, 8);
        assert_int_equal(sts_write_size(sp, 2, NULL, 0, NULL, &hs, NULL, NULL), STS_OK);
        o.max_header_size = hs - 1;
        expect_refusal(&rf, sp, 2, NULL, 0, &o);
        o.max_header_size = hs;
        assert_int_equal(sts_write_size(sp, 2, NULL, 0, &o, NULL, NULL, NULL), STS_OK);
        o.max_header_size = UINT64_MAX;  /* clamps to the cap: no effect here */
        assert_int_equal(sts_write_size(sp, 2, NULL, 0, &o, NULL, NULL, NULL), STS_OK);
    }
    /* total data size past 2^64, and 8 + N + data past 2^64 */
    for (i = 0; i < 9; i++) {
        static char nm[9][4];
        snprintf(nm[i], sizeof nm[i], "t%d", i);
        sp[i] = spec(nm[i], STS_DTYPE_U8, 1, near_max, NULL, near_max[0]);
        sp[i].produce = never_called;
    }
    {
        refusal rf = { "total size overflow", STS_ERR_VALIDATION_OVERFLOW, STS_RULE_WRITE_TOTAL, NULL };
        expect_refusal(&rf, sp, 9, NULL, 0, NULL);
        rf.what = "8 + N + data overflow";   /* 8 x (2^61 - 1) = 2^64 - 8: the data fits, the file does not */
        expect_refusal(&rf, sp, 8, NULL, 0, NULL);
    }
    {   /* argument errors of the entry points */
        sts_error e;
        void *out;
        size_t size;
        sts_sink nows;
        nows.write = NULL;
        nows.user = NULL;
        assert_int_equal(sts_write(NULL, 0, NULL, 0, NULL, NULL, &e), STS_ERR_INVALID_ARGUMENT);
        assert_int_equal(e.rule, STS_RULE_ARGUMENT);
        assert_int_equal(sts_write(NULL, 0, NULL, 0, &nows, NULL, &e), STS_ERR_INVALID_ARGUMENT);
        assert_int_equal(sts_write_memory(NULL, 0, NULL, 0, NULL, NULL, &size, &e), STS_ERR_INVALID_ARGUMENT);
        assert_int_equal(sts_write_memory(NULL, 0, NULL, 0, NULL, &out, NULL, &e), STS_ERR_INVALID_ARGUMENT);
        assert_int_equal(sts_write_path(NULL, NULL, 0, NULL, 0, NULL, &e), STS_ERR_INVALID_ARGUMENT);
        memset(&o, 0, sizeof o);
        o.allocator.free = tu_a_free;  /* one hook of three */
        assert_int_equal(sts_write_memory(NULL, 0, NULL, 0, &o, &out, &size, &e), STS_ERR_INVALID_ARGUMENT);
        assert_int_equal(e.rule, STS_RULE_ARGUMENT);
        assert_int_equal(sts_write_size(NULL, 0, NULL, 0, &o, NULL, NULL, &e), STS_ERR_INVALID_ARGUMENT);
    }
}

/* A NULL name of length 0 is the empty name; messages quote it as "", not (null). */
static void test_message_null_name(void **state) {
    static const uint64_t s1[1] = { 1 };
    sts_tensor_spec sp[2];
    sts_error e;
    uint64_t hs;
    (void)state;
    cu_label = "a NULL name of length 0";
    sp[0] = spec("", STS_DTYPE_U8, 1, s1, "x", 1);
    sp[1] = spec(NULL, STS_DTYPE_I8, 1, s1, "y", 1);
    assert_int_equal(sts_write_size(sp, 2, NULL, 0, NULL, &hs, NULL, &e), STS_ERR_DUPLICATE_KEY);
    cu_check_names(&e, "");
    assert_null(strstr(e.message, "(null)"));
    sp[1] = spec(NULL, STS_DTYPE_F4, 1, s1, "y", 1);
    assert_int_equal(sts_write_size(sp + 1, 1, NULL, 0, NULL, &hs, NULL, &e), STS_ERR_MISALIGNED_SLICE);
    cu_check_names(&e, "");
}

/* ============================== producers ============================== */

typedef struct prod {
    int mode;              /* 0 exact in 3 chunks, 1 short by one, 2 one too many, 3 fail, 4 ignore the sink error */
    sts_result code;       /* mode 3 */
    int calls;
    const sts_tensor_spec *seen[8];
    sts_result last_stream;
} prod;
static sts_result produce(void *user, const sts_tensor_spec *s, sts_stream *out) {
    prod *p = (prod *)user;
    uint8_t buf[64];
    size_t n = (size_t)s->data_size, i, a = n / 3, b = n / 2;
    sts_result r;
    for (i = 0; i < n && i < sizeof buf; i++) buf[i] = (uint8_t)(s->name[0] + i);
    p->seen[p->calls++ & 7] = s;
    switch (p->mode) {
    case 1: n -= 1; break;
    case 2: n += 1; buf[n - 1] = 0xEE; break;
    case 3: if ((r = sts_stream_write(out, buf, 1)) != STS_OK) return r; return p->code;
    default: break;
    }
    /* mode 4 ignores every failure and carries on */
    if ((r = sts_stream_write(out, buf, a)) != STS_OK && p->mode != 4) { p->last_stream = r; return r; }
    if ((r = sts_stream_write(out, buf + a, 0)) != STS_OK && p->mode != 4) { p->last_stream = r; return r; }
    if ((r = sts_stream_write(out, buf + a, b - a)) != STS_OK && p->mode != 4) { p->last_stream = r; return r; }
    r = sts_stream_write(out, buf + b, n - b);
    p->last_stream = r;
    if (p->mode == 4) return STS_OK;
    return r;
}

static void test_producers(void **state) {
    static const uint64_t s6[1] = { 6 }, s2[1] = { 2 }, s0[1] = { 0 };
    static const uint8_t fixed[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
    sts_tensor_spec sp[4];
    prod p;
    rec_sink rs;
    sts_sink sink;
    sts_error e;
    void *mem;
    size_t msize;
    uint64_t hs = 0;
    (void)state;
    memset(&p, 0, sizeof p);
    sp[0] = spec("x", STS_DTYPE_U8, 1, s6, NULL, 6);          /* produced */
    sp[1] = spec("w", STS_DTYPE_F32, 1, s2, fixed, 8);        /* data given: the producer is not used */
    sp[2] = spec("y", STS_DTYPE_I16, 1, s6, NULL, 12);        /* produced */
    sp[3] = spec("z", STS_DTYPE_U8, 1, s0, NULL, 0);          /* empty: the producer is not called */
    sp[0].produce = produce; sp[0].produce_user = &p;
    sp[1].produce = never_called;
    sp[2].produce = produce; sp[2].produce_user = &p;
    sp[3].produce = never_called;
    /* exact: layout order is w (F32), y (I16), x (U8), z (U8) */
    assert_int_equal(sts_write_memory(sp, 4, NULL, 0, NULL, &mem, &msize, &e), STS_OK);
    assert_int_equal(p.calls, 2);
    assert_ptr_equal(p.seen[0], &sp[2]);
    assert_ptr_equal(p.seen[1], &sp[0]);
    {
        uint8_t want[26];
        int i;
        memcpy(want, fixed, 8);
        for (i = 0; i < 12; i++) want[8 + i] = (uint8_t)('y' + i);
        for (i = 0; i < 6; i++) want[20 + i] = (uint8_t)('x' + i);
        hs = cu_ld64((const uint8_t *)mem);
        assert_int_equal(msize, 8 + hs + 26);
        assert_memory_equal((const uint8_t *)mem + 8 + hs, want, 26);
    }
    sts_free(NULL, mem, msize);
    /* short by one byte */
    memset(&p, 0, sizeof p);
    p.mode = 1;
    cu_err_poison(&e);
    memset(&rs, 0, sizeof rs);
    sink = rec_sink_of(&rs);
    assert_int_equal(sts_write(sp, 4, NULL, 0, &sink, NULL, &e), STS_ERR_INVALID_ARGUMENT);
    assert_int_equal(e.rule, STS_RULE_WRITE_PRODUCER);
    tu_err_has(cu_label, &e, (const char *)NULL);
    cu_check_names(&e, "y");
    tu_err_has(cu_label, &e, "11 of its 12", (const char *)NULL);
    assert_int_equal(e.offset, 8 + hs + 8);  /* where y's data starts in the file */
    assert_int_equal(p.calls, 1);            /* the write stops at the first failure */
    assert_int_equal(rs.got.n, 8 + hs + 8 + 11);
    tu_sb_free(&rs.got);
    /* one byte too many: refused, the extra chunk never reaches the sink */
    memset(&p, 0, sizeof p);
    p.mode = 2;
    memset(&rs, 0, sizeof rs);
    assert_int_equal(sts_write(sp, 4, NULL, 0, &sink, NULL, &e), STS_ERR_INVALID_ARGUMENT);
    assert_int_equal(e.rule, STS_RULE_WRITE_PRODUCER);
    cu_check_names(&e, "y");
    assert_int_equal(p.last_stream, STS_ERR_INVALID_ARGUMENT);
    assert_int_equal(rs.got.n, 8 + hs + 8 + 6);   /* the first two chunks (6 bytes) went through */
    tu_sb_free(&rs.got);
    /* a producer's own error code is propagated */
    memset(&p, 0, sizeof p);
    p.mode = 3;
    p.code = STS_ERR_NOT_FOUND;
    memset(&rs, 0, sizeof rs);
    assert_int_equal(sts_write(sp, 4, NULL, 0, &sink, NULL, &e), STS_ERR_NOT_FOUND);
    assert_int_equal(e.code, STS_ERR_NOT_FOUND);
    assert_int_equal(e.rule, STS_RULE_WRITE_PRODUCER);
    tu_err_has(cu_label, &e, (const char *)NULL);
    cu_check_names(&e, "y");
    tu_err_has(cu_label, &e, "NOT_FOUND", (const char *)NULL);
    tu_sb_free(&rs.got);
    p.calls = 0;
    p.code = STS_ERR_IO;
    mem = (void *)(uintptr_t)0x99;
    assert_int_equal(sts_write_memory(sp, 4, NULL, 0, NULL, &mem, &msize, &e), STS_ERR_IO);
    assert_ptr_equal(mem, (void *)(uintptr_t)0x99);
    /* a sink failing inside a producer's stream: the sink's code, even if the producer ignores it */
    memset(&p, 0, sizeof p);
    p.mode = 4;
    memset(&rs, 0, sizeof rs);
    rs.fail_at = 3;   /* header, w, then y's first chunk */
    rs.fail_code = STS_ERR_UNSUPPORTED;
    assert_int_equal(sts_write(sp, 4, NULL, 0, &sink, NULL, &e), STS_ERR_UNSUPPORTED);
    assert_int_equal(e.rule, STS_RULE_IO);
    cu_check_names(&e, "y");
    assert_int_equal(p.last_stream, STS_ERR_UNSUPPORTED);  /* later stream writes repeat the failure */
    assert_int_equal(rs.calls, 3);                          /* and do not call the sink again */
    tu_sb_free(&rs.got);
}

/* sts_stream_write by itself: arguments. */
static sts_result produce_args(void *user, const sts_tensor_spec *s, sts_stream *out) {
    uint8_t b[4] = { 1, 2, 3, 4 };
    (void)user;
    assert_int_equal(sts_stream_write(NULL, b, 1), STS_ERR_INVALID_ARGUMENT);
    assert_int_equal(sts_stream_write(out, NULL, 1), STS_ERR_INVALID_ARGUMENT);
    assert_int_equal(sts_stream_write(out, NULL, 0), STS_OK);
    return sts_stream_write(out, b, (size_t)s->data_size);
}
static void test_stream_args(void **state) {
    static const uint64_t s4[1] = { 4 };
    sts_tensor_spec sp = spec("t", STS_DTYPE_U8, 1, s4, NULL, 4);
    void *mem;
    size_t n;
    (void)state;
    sp.produce = produce_args;
    assert_int_equal(sts_write_memory(&sp, 1, NULL, 0, NULL, &mem, &n, NULL), STS_OK);
    assert_memory_equal((const uint8_t *)mem + n - 4, "\x01\x02\x03\x04", 4);
    sts_free(NULL, mem, n);
}

/* A sink failing at each call in turn: its code comes back, with rule io. */
static void test_sink_failures(void **state) {
    static const uint64_t s3[1] = { 3 };
    static const uint8_t d[3] = { 1, 2, 3 };
    sts_tensor_spec sp[3];
    int k;
    (void)state;
    sp[0] = spec("a", STS_DTYPE_U8, 1, s3, d, 3);
    sp[1] = spec("b", STS_DTYPE_U8, 1, s3, d, 3);
    sp[2] = spec("c", STS_DTYPE_U8, 1, s3, d, 3);
    for (k = 1; k <= 5; k++) {
        rec_sink rs;
        sts_sink sink;
        sts_error e;
        sts_result r;
        memset(&rs, 0, sizeof rs);
        rs.fail_at = k;
        rs.fail_code = k == 1 ? STS_ERR_IO : STS_ERR_NOT_FOUND;
        sink = rec_sink_of(&rs);
        r = sts_write(sp, 3, NULL, 0, &sink, NULL, &e);
        if (k <= 4) {
            assert_int_equal(r, rs.fail_code);
            assert_int_equal(e.code, rs.fail_code);
            assert_int_equal(e.rule, STS_RULE_IO);
            tu_err_has(cu_label, &e, (const char *)NULL);
            assert_int_equal(rs.calls, k);
            if (k == 1) assert_int_equal(e.offset, 0);
            if (k >= 2) cu_check_names(&e, k == 2 ? "a" : k == 3 ? "b" : "c");
        } else {
            assert_int_equal(r, STS_OK);
            assert_int_equal(rs.calls, 4);
        }
        tu_sb_free(&rs.got);
    }
}

/* sts_write_size agrees with what is produced, over assorted sets. */
static void test_write_size(void **state) {
    static const uint64_t shp[3] = { 3, 0, 2 }, s5[1] = { 5 };
    static uint8_t d[64];
    tu_rng rng = { 7 };
    int it;
    (void)state;
    for (it = 0; it < 50; it++) {
        sts_tensor_spec sp[6];
        sts_kv meta[3];
        char names[6][40];
        int n = (int)tu_below(&rng, 7), i, nm = (int)tu_below(&rng, 4);
        void *mem;
        size_t size;
        uint64_t hs, fs;
        for (i = 0; i < n; i++) {
            int l = snprintf(names[i], sizeof names[i], "n%d_%llu\"\x01\xC3\xA9", i, (unsigned long long)tu_next(&rng) % 100000);
            sp[i] = spec(names[i], tu_below(&rng, 2) ? STS_DTYPE_U8 : STS_DTYPE_I64, 1, s5, d, 5);
            sp[i].name_len = (size_t)l;
            if (sp[i].dtype == STS_DTYPE_I64) sp[i].data_size = 40;
            if (tu_below(&rng, 3) == 0) { sp[i].rank = 3; sp[i].shape = shp; sp[i].data_size = 0; }
        }
        meta[0] = kv("a", "\n\n\n");
        meta[1] = kv("b\\", "x");
        meta[2] = kv("c", "");
        assert_int_equal(sts_write_size(sp, (size_t)n, nm ? meta : NULL, (size_t)(nm ? nm - 1 : 0), NULL, &hs, &fs, NULL), STS_OK);
        assert_int_equal(sts_write_memory(sp, (size_t)n, nm ? meta : NULL, (size_t)(nm ? nm - 1 : 0), NULL, &mem, &size, NULL), STS_OK);
        assert_int_equal(fs, size);
        assert_int_equal(hs, cu_ld64((const uint8_t *)mem));
        assert_int_equal(hs % 8, 0);
        sts_free(NULL, mem, size);
        assert_int_equal(sts_write_size(sp, (size_t)n, NULL, 0, NULL, NULL, NULL, NULL), STS_OK);
    }
}

/* ============================== sts_write_path ============================== */

static sts_result produce_fail(void *user, const sts_tensor_spec *s, sts_stream *out) {
    (void)user; (void)s;
    sts_stream_write(out, "abc", 3);
    return STS_ERR_NOT_FOUND;
}

static void test_write_path(void **state) {
    static const uint64_t s2[1] = { 2 }, s4[1] = { 4 };
    static const uint8_t d[16] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 };
    char dir[256], path[512], missing[512];
    sts_tensor_spec sp[2];
    sts_kv meta = kv("format", "pt");
    sts_error e;
    sts_file *f;
    sts_options o;
    void *mem;
    size_t msize, fsize;
    uint8_t *bytes;
    (void)state;
    tf_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    sp[0] = spec("w", STS_DTYPE_F32, 1, s2, d, 8);
    sp[1] = spec("b", STS_DTYPE_U8, 1, s4, d + 8, 4);
    /* a fresh file: same bytes as sts_write_memory, readable by sts_open, strict-valid */
    assert_int_equal(sts_write_path(path, sp, 2, &meta, 1, NULL, &e), STS_OK);
    assert_int_equal(e.code, STS_OK);
    assert_int_equal(cu_dir_count(dir), 1);
    assert_int_equal(sts_write_memory(sp, 2, &meta, 1, NULL, &mem, &msize, NULL), STS_OK);
    bytes = tf_read(path, &fsize);
    assert_non_null(bytes);
    assert_int_equal(fsize, msize);
    assert_memory_equal(bytes, mem, msize);
    free(bytes);
    memset(&o, 0, sizeof o);
    o.strict = 1;
    assert_int_equal(sts_open(path, &o, &f, &e), STS_OK);
    assert_int_equal(sts_count(f), 2);
    assert_memory_equal(sts_data(f, sts_find(f, "w", 1)), d, 8);
    assert_memory_equal(sts_data(f, sts_find(f, "b", 1)), d + 8, 4);
    assert_int_equal(sts_metadata_find(f, "format", 6)->value[0], 'p');
    sts_close(f);
    {   /* the file mode follows the umask like any created file: readable by its owner */
        struct stat st;
        assert_int_equal(stat(path, &st), 0);
        assert_true((st.st_mode & 0600) == 0600);
    }
    /* a failing producer: the existing file is untouched and no temporary remains */
    sp[1].data = NULL;
    sp[1].produce = produce_fail;
    assert_int_equal(sts_write_path(path, sp, 2, NULL, 0, NULL, &e), STS_ERR_NOT_FOUND);
    assert_int_equal(e.rule, STS_RULE_WRITE_PRODUCER);
    assert_int_equal(cu_dir_count(dir), 1);
    bytes = tf_read(path, &fsize);
    assert_int_equal(fsize, msize);
    assert_memory_equal(bytes, mem, msize);
    free(bytes);
    /* a refusal: nothing is created either */
    {
        char other[512];
        sts_tensor_spec dup[2];
        dup[0] = sp[0];
        dup[1] = sp[0];
        snprintf(other, sizeof other, "%s/other.safetensors", dir);
        assert_int_equal(sts_write_path(other, dup, 2, NULL, 0, NULL, &e), STS_ERR_DUPLICATE_KEY);
        assert_int_equal(cu_dir_count(dir), 1);
        assert_int_equal(sts_write_path(other, sp, 2, NULL, 0, NULL, &e), STS_ERR_NOT_FOUND);  /* producer fails, no file */
        assert_int_equal(cu_dir_count(dir), 1);
        assert_int_equal(access(other, F_OK), -1);
    }
    sts_free(NULL, mem, msize);
    /* rename over the existing file, without fsync this time */
    sp[1].data = d;
    sp[1].produce = NULL;
    sp[1].dtype = STS_DTYPE_I8;
    o.strict = 0;
    o.no_fsync = 1;
    assert_int_equal(sts_write_path(path, sp, 2, NULL, 0, &o, &e), STS_OK);
    assert_int_equal(cu_dir_count(dir), 1);
    assert_int_equal(sts_write_memory(sp, 2, NULL, 0, NULL, &mem, &msize, NULL), STS_OK);
    bytes = tf_read(path, &fsize);
    assert_int_equal(fsize, msize);
    assert_memory_equal(bytes, mem, msize);
    free(bytes);
    sts_free(NULL, mem, msize);
    /* a missing folder: io, naming the folder and the error */
    snprintf(missing, sizeof missing, "%s/no/such/dir/x.safetensors", dir);
    cu_err_poison(&e);
    assert_int_equal(sts_write_path(missing, sp, 2, NULL, 0, NULL, &e), STS_ERR_IO);
    assert_int_equal(e.rule, STS_RULE_IO);
    assert_int_equal(e.offset, STS_OFFSET_UNKNOWN);
    tu_err_has(cu_label, &e, (const char *)NULL);
    {
        char folder[512];
        snprintf(folder, sizeof folder, "%s/no/such/dir/", dir);
        tu_err_has(cu_label, &e, folder, (const char *)NULL);
        tu_err_has(cu_label, &e, "x.safetensors", (const char *)NULL);
        tu_err_has(cu_label, &e, "ENOENT", (const char *)NULL);
    }
    /* a path naming a folder */
    snprintf(missing, sizeof missing, "%s/", dir);
    assert_int_equal(sts_write_path(missing, sp, 2, NULL, 0, NULL, &e), STS_ERR_INVALID_ARGUMENT);
    assert_int_equal(e.rule, STS_RULE_ARGUMENT);
    /* an existing folder as the target: the rename fails, the temporary is removed */
    {
        char sub[512];
        snprintf(sub, sizeof sub, "%s/sub", dir);
        assert_int_equal(mkdir(sub, 0700), 0);
        assert_int_equal(sts_write_path(sub, sp, 2, NULL, 0, &o, &e), STS_ERR_IO);
        assert_int_equal(e.rule, STS_RULE_IO);
        tu_err_has(cu_label, &e, "sub", (const char *)NULL);
        assert_int_equal(cu_dir_count(dir), 2);
        assert_int_equal(cu_dir_count(sub), 0);
        rmdir(sub);
    }
    /* a relative path (no slash): the temporary goes into the current folder */
    {
        char cwd[1024];
        assert_non_null(getcwd(cwd, sizeof cwd));
        assert_int_equal(chdir(dir), 0);
        assert_int_equal(sts_write_path("rel.safetensors", sp, 2, NULL, 0, NULL, &e), STS_OK);
        assert_int_equal(chdir(cwd), 0);
        assert_int_equal(cu_dir_count(dir), 2);
        snprintf(path, sizeof path, "%s/rel.safetensors", dir);
        assert_int_equal(sts_open(path, NULL, &f, &e), STS_OK);
        assert_int_equal(sts_count(f), 2);
        sts_close(f);
    }
    tf_rmtree(dir);
}

/* A producer that streams from one reused buffer (the usual way to stream): every chunk must
   reach the file as it was when sts_stream_write was called. */
static sts_result produce_reused(void *user, const sts_tensor_spec *s, sts_stream *out) {
    uint8_t buf[256];
    uint64_t done = 0;
    int chunk = 0;
    sts_result r;
    (void)user;
    while (done < s->data_size) {
        size_t n = s->data_size - done < sizeof buf ? (size_t)(s->data_size - done) : sizeof buf;
        memset(buf, 'A' + chunk % 26, n);    /* refill the same buffer */
        if ((r = sts_stream_write(out, buf, n)) != STS_OK) return r;
        done += n;
        chunk++;
    }
    memset(buf, '!', sizeof buf);            /* and scribble over it before returning */
    return STS_OK;
}
static void test_write_path_producer_reuses_buffer(void **state) {
    static const uint64_t s[1] = { 4096 }, s2[1] = { 2 };
    char dir[256], path[512];
    sts_tensor_spec sp[2];
    void *mem;
    size_t msize, n;
    uint8_t *bytes;
    sts_error e;
    (void)state;
    sp[0] = spec("p", STS_DTYPE_U8, 1, s, NULL, 4096);
    sp[0].produce = produce_reused;
    sp[1] = spec("q", STS_DTYPE_U8, 1, s2, "qq", 2);
    tf_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/p.safetensors", dir);
    assert_int_equal(sts_write_memory(sp, 2, NULL, 0, NULL, &mem, &msize, &e), STS_OK);
    assert_int_equal(((uint8_t *)mem)[msize - 2 - 4096], 'A');
    assert_int_equal(((uint8_t *)mem)[msize - 2 - 1], 'A' + 15);
    assert_int_equal(sts_write_path(path, sp, 2, NULL, 0, NULL, &e), STS_OK);
    bytes = tf_read(path, &n);
    assert_int_equal(n, msize);
    if (memcmp(bytes, mem, n) != 0) {
        size_t at = 0;
        while (bytes[at] == ((uint8_t *)mem)[at]) at++;
        free(bytes);
        sts_free(NULL, mem, msize);
        tf_rmtree(dir);
        fail_msg("sts_write_path wrote different bytes than sts_write_memory from byte %zu on: the producer's chunks "
                 "were queued by pointer, not copied, and the buffer was reused", at);
    }
    free(bytes);
    sts_free(NULL, mem, msize);
    tf_rmtree(dir);
}

/* Thousands of small tensors from scattered addresses (more pieces than one writev takes), one
   over 1 MiB in the middle of the layout: the file holds exactly sts_write_memory's bytes. */
static void test_write_path_many_pieces(void **state) {
    enum { N = 3000 };
    static const uint64_t s1[1] = { 1 }, sbig[1] = { (1u << 20) + 1 };
    static uint8_t scattered[2 * N];
    static uint8_t big[(1u << 20) + 1];
    static char names[N][8];
    static sts_tensor_spec sp[N + 1];
    char dir[256], path[512];
    void *mem;
    size_t msize, n;
    uint8_t *bytes;
    int i;
    (void)state;
    for (i = 0; i < 2 * N; i++) scattered[i] = (uint8_t)(i * 7 + 3);
    memset(big, 0x5b, sizeof big);
    for (i = 0; i < N; i++) {
        snprintf(names[i], sizeof names[i], "t%04d", i);
        /* I16 and U8 alternate so that the layout interleaves them and the big I8 sits between */
        sp[i] = spec(names[i], i % 2 ? STS_DTYPE_I16 : STS_DTYPE_U8, 1, s1, scattered + 2 * (N - 1 - i), i % 2 ? 2 : 1);
    }
    sp[N] = spec("big", STS_DTYPE_I8, 1, sbig, big, sizeof big);
    tf_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/many.safetensors", dir);
    assert_int_equal(sts_write_memory(sp, N + 1, NULL, 0, NULL, &mem, &msize, NULL), STS_OK);
    assert_int_equal(sts_write_path(path, sp, N + 1, NULL, 0, NULL, NULL), STS_OK);
    bytes = tf_read(path, &n);
    assert_int_equal(n, msize);
    assert_true(memcmp(bytes, mem, n) == 0);
    free(bytes);
    sts_free(NULL, mem, msize);
    tf_rmtree(dir);
}

/* A write error from the OS (EFBIG through RLIMIT_FSIZE): io with the errno, the temporary is
   removed, the existing file is untouched. */
static void test_write_path_os_error(void **state) {
    static uint8_t big[4096];
    static const uint64_t s[1] = { 4096 };
    char dir[256], path[512];
    sts_tensor_spec sp = spec("big", STS_DTYPE_U8, 1, s, big, 4096);
    struct rlimit old, lim;
    sts_error e;
    sts_result r;
    uint8_t *bytes;
    size_t n;
    void (*prev)(int);
    (void)state;
    tf_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/f.safetensors", dir);
    tf_write(path, "previous", 8);
    assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
    prev = signal(SIGXFSZ, SIG_IGN);
    lim = old;
    lim.rlim_cur = 1024;
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
    r = sts_write_path(path, &sp, 1, NULL, 0, NULL, &e);
    setrlimit(RLIMIT_FSIZE, &old);
    signal(SIGXFSZ, prev);
    assert_int_equal(r, STS_ERR_IO);
    assert_int_equal(e.rule, STS_RULE_IO);
    tu_err_has(cu_label, &e, (const char *)NULL);
    tu_err_has(cu_label, &e, "EFBIG", (const char *)NULL);
    tu_err_has(cu_label, &e, path, (const char *)NULL);
    assert_int_equal(cu_dir_count(dir), 1);
    bytes = tf_read(path, &n);
    assert_int_equal(n, 8);
    assert_memory_equal(bytes, "previous", 8);
    free(bytes);
    tf_rmtree(dir);
}

/* Every write-side system call of sts_write_path failing in turn (through the io_fault hook):
   io naming the errno, no temporary left, the existing file untouched; then success. */
typedef struct fault {
    long calls, fail_at;
    int err;
    int saw_write, saw_fsync, saw_rename, saw_fsync_dir;
} fault;
static int fault_hook(void *user, const char *op) {
    fault *f = (fault *)user;
    f->calls++;
    if (!strcmp(op, "write")) f->saw_write++;
    else if (!strcmp(op, "fsync")) f->saw_fsync++;
    else if (!strcmp(op, "rename")) f->saw_rename++;
    else if (!strcmp(op, "fsync_dir")) f->saw_fsync_dir++;
    return f->calls == f->fail_at ? f->err : 0;
}
static void test_write_path_faults(void **state) {
    static const uint64_t sbig[1] = { (1u << 20) + 3 }, s3[1] = { 3 };
    static uint8_t big[(1u << 20) + 3];
    char dir[256], path[512];
    sts_tensor_spec sp[3];
    int durable;
    (void)state;
    memset(big, 0x3c, sizeof big);
    sp[0] = spec("big", STS_DTYPE_U8, 1, sbig, big, sizeof big);   /* over 1 MiB: written straight */
    sp[1] = spec("a", STS_DTYPE_U8, 1, s3, "abc", 3);
    sp[2] = spec("b", STS_DTYPE_I8, 1, s3, "xyz", 3);
    tf_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/f.safetensors", dir);
    for (durable = 0; durable < 2; durable++) {
        long k, total;
        fault fl;
        sts_options o;
        void *mem;
        size_t msize, n;
        uint8_t *bytes;
        tf_write(path, "old", 3);
        memset(&o, 0, sizeof o);
        memset(&fl, 0, sizeof fl);
        o.io_fault = fault_hook;
        o.io_fault_user = &fl;
        o.no_fsync = !durable;
        for (k = 1; k < 1000; k++) {
            sts_error e;
            sts_result r;
            memset(&fl, 0, sizeof fl);
            fl.fail_at = k;
            fl.err = k % 2 ? ENOSPC : EIO;
            r = sts_write_path(path, sp, 3, NULL, 0, &o, &e);
            if (r == STS_OK) break;
            if (r == STS_ERR_IO && e.rule == STS_RULE_DURABLE) {  /* the folder's fsync, after the rename */
                assert_true(durable);
                assert_int_equal(fl.saw_fsync_dir, 1);
                tu_err_has(cu_label, &e, "io.durable", "in place", (const char *)NULL);
                bytes = tf_read(path, &n);
                assert_true(n > 3);
                free(bytes);
                tf_write(path, "old", 3);
                continue;
            }
            if (r != STS_ERR_IO || e.rule != STS_RULE_IO) fail_msg("k=%ld: expected io, got %s: %s", k, sts_result_name(r), e.message);
            tu_err_has(cu_label, &e, (const char *)NULL);
            tu_err_has(cu_label, &e, k % 2 ? "ENOSPC" : "EIO", (const char *)NULL);
            tu_err_has(cu_label, &e, "f.safetensors", (const char *)NULL);
            assert_int_equal(cu_dir_count(dir), 1);
            bytes = tf_read(path, &n);
            assert_int_equal(n, 3);
            assert_memory_equal(bytes, "old", 3);
            free(bytes);
        }
        total = k - 1;
        assert_int_equal(fl.calls, total);        /* the successful run consulted the hook as often */
        assert_true(fl.saw_write >= 1);
        assert_int_equal(fl.saw_rename, 1);
        assert_int_equal(fl.saw_fsync, durable);
        assert_int_equal(fl.saw_fsync_dir, durable);
        print_message("sts_write_path (%s): %ld faultable calls, each failed in turn\n", durable ? "fsync" : "no_fsync", total);
        assert_int_equal(sts_write_memory(sp, 3, NULL, 0, NULL, &mem, &msize, NULL), STS_OK);
        bytes = tf_read(path, &n);
        assert_int_equal(n, msize);
        assert_memory_equal(bytes, mem, msize);
        free(bytes);
        sts_free(NULL, mem, msize);
        assert_int_equal(cu_dir_count(dir), 1);
    }
    tf_rmtree(dir);
}

/* A custom allocator sees the output buffer; sts_free hands it back with the same size. */
static void test_write_memory_allocator(void **state) {
    static const uint64_t s3[1] = { 3 };
    sts_tensor_spec sp = spec("a", STS_DTYPE_U8, 1, s3, "xyz", 3);
    tu_alloc a;
    sts_options o = tu_alloc_opts(&a, NULL);
    void *mem;
    size_t n;
    (void)state;
    assert_int_equal(sts_write_memory(&sp, 1, NULL, 0, &o, &mem, &n, NULL), STS_OK);
    assert_int_equal(a.blocks, 1);
    assert_int_equal(a.bytes, n);
    sts_free(&o, mem, n);
    assert_int_equal(a.blocks, 0);
    assert_int_equal(a.bad, 0);
    sts_free(&o, NULL, 0);
}

/* ---- white box: the text primitives and the layout sort behind the header bytes ---- */
static int slow_clean8(const char *s) {
    int i;
    for (i = 0; i < 8; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x20 || c == '"' || c == '\\') return 0;
    }
    return 1;
}
static void test_text_primitives(void **state) {
    char b[8];
    int pos, v, fill, i;
    uint64_t x = 88172645463325252ull;
    long k;
    (void)state;
    /* every byte value at every position over every fill byte, then random words */
    for (pos = 0; pos < 8; pos++)
        for (v = 0; v < 256; v++)
            for (fill = 0; fill < 256; fill += 3) {
                memset(b, fill, 8);
                b[pos] = (char)v;
                if (sts__esc_clean8(b) != slow_clean8(b)) fail_msg("esc_clean8 wrong: byte 0x%02x at %d in 0x%02x", v, pos, fill);
            }
    for (k = 0; k < 2000000; k++) {
        x ^= x << 13; x ^= x >> 7; x ^= x << 17;
        memcpy(b, &x, 8);
        if (sts__esc_clean8(b) != slow_clean8(b)) fail_msg("esc_clean8 wrong on a random word");
    }
    /* digits and u64_put at every power of ten and its neighbours, and random values */
    for (i = 0; i < 64 * 3 + 60; i++) {
        uint64_t val, p = 1;
        char want[32];
        uint8_t got[32], *e;
        int d;
        if (i < 60) { for (d = 0; d < i / 3; d++) p *= 10; val = p - 1 + (uint64_t)(i % 3); }
        else { x ^= x << 13; x ^= x >> 7; x ^= x << 17; val = x >> (i % 64); }
        if (i == 59) val = UINT64_MAX;
        snprintf(want, sizeof want, "%llu", (unsigned long long)val);
        e = sts__u64_put(got, val);
        *e = 0;
        assert_string_equal((char *)got, want);
        assert_int_equal(sts__digits(val), strlen(want));
    }
}
/* sts__layout_sort (radix keys after the common prefix, ties by full comparison) against the
   plain comparison sort, on inputs built to hit ties: shared prefixes longer than the key's 7
   bytes, names that are prefixes of others, several dtypes, already sorted and reversed input. */
static void test_layout_sort(void **state) {
    static const char *stems[] = { "model.layers.", "model.layers.1", "m", "", "z\xc3\xa9", "model.layers.10.mlp.experts.3." };
    size_t sizes[] = { 0, 1, 2, 4095, 4096, 5000, 40000 };
    size_t si, i;
    uint64_t x = 0x9E3779B97F4A7C15ull;
    sts__mem m = sts__mem_from(NULL);
    (void)state;
    for (si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
        size_t n = sizes[si], variant;
        for (variant = 0; variant < 4; variant++) {
            sts_tensor_spec *sp = (sts_tensor_spec *)calloc(n ? n : 1, sizeof *sp);
            char *names = (char *)malloc((n ? n : 1) * 64);
            size_t *a = (size_t *)malloc((n ? n : 1) * sizeof *a), *b = (size_t *)malloc((n ? n : 1) * sizeof *b), *t = (size_t *)malloc((n ? n : 1) * sizeof *t), *o;
            sts__spec_order ctx;
            assert_true(sp && names && a && b && t);
            for (i = 0; i < n; i++) {
                char *nm = names + i * 64;
                x ^= x << 13; x ^= x >> 7; x ^= x << 17;
                snprintf(nm, 64, "%s%llu%s", stems[variant == 3 ? 0 : x % 6], (unsigned long long)(x >> 20) % (variant == 1 ? 7 : 100000),
                         (x >> 8) % 3 ? ".weight" : "");
                sp[i].name = nm;
                sp[i].name_len = strlen(nm);
                sp[i].dtype = variant == 2 ? STS_DTYPE_F32 : (sts_dtype)((x >> 40) % 4);
                a[i] = b[i] = i;
            }
            ctx.specs = sp;
            if (variant == 3) {  /* sorted, then reversed */
                o = sts__msort(b, t, n, sts__by_layout, &ctx);
                if (o != b) memcpy(b, o, n * sizeof *b);
                for (i = 0; i < n; i++) a[i] = b[n - 1 - i];
                memcpy(b, a, n * sizeof *b);
            }
            assert_true(sts__layout_sort(&m, sp, a, n));
            o = sts__msort(b, t, n, sts__by_layout, &ctx);
            for (i = 0; i < n; i++)
                if (a[i] != o[i]) fail_msg("n=%zu variant %zu: position %zu holds %zu, the comparison sort says %zu", n, variant, i, a[i], o[i]);
            free(sp); free(names); free(a); free(b); free(t);
        }
    }
}

/* A header over 1 MiB goes out in pieces: through the fd sink (flushed between pieces), a user
   sink and memory, the bytes equal the whole header rendered in one buffer, then the data. Names
   with escapes and metadata ride along; a 100,000-tensor file also reparses. */
static void test_large_header_pieces(void **state) {
    size_t n = 100000, i;
    sts_tensor_spec *sp = (sts_tensor_spec *)calloc(n, sizeof *sp);
    char *names = (char *)malloc(n * 48);
    uint8_t data[4] = { 1, 2, 3, 4 }, *mem = NULL, *file, *whole;
    uint64_t shape = 2;
    sts_kv meta[2];
    sts_error e;
    size_t mem_size, file_size;
    sts__plan pl;
    char dir[256], path[300];
    rec_sink rs;
    sts_sink sink;
    sts_file *f;
    (void)state;
    assert_true(sp && names);
    for (i = 0; i < n; i++) {
        char *nm = names + i * 48;
        snprintf(nm, 48, i % 1000 == 7 ? "layer.%zu.\"q\"\\t" : "model.layers.%zu.weight", n - i);
        sp[i].name = nm; sp[i].name_len = strlen(nm);
        sp[i].dtype = i % 3 ? STS_DTYPE_BF16 : STS_DTYPE_U8;
        sp[i].rank = 1; sp[i].shape = &shape;
        sp[i].data = data; sp[i].data_size = sp[i].dtype == STS_DTYPE_U8 ? 2 : 4;
    }
    meta[0].key = "format"; meta[0].key_len = 6; meta[0].value = "pt"; meta[0].value_len = 2;
    meta[1].key = "note"; meta[1].key_len = 4; meta[1].value = "a \"quoted\"\nvalue"; meta[1].value_len = 16;
    /* the reference: the whole header in one buffer */
    assert_int_equal(sts__plan_make(&pl, sp, n, meta, 2, NULL, &e), STS_OK);
    assert_true(pl.header_len > ((uint64_t)3 << 20));
    whole = (uint8_t *)malloc((size_t)(8 + pl.header_len));
    assert_non_null(whole);
    sts__plan_render(&pl, sp, meta, 2, whole);
    /* memory */
    assert_int_equal(sts_write_memory(sp, n, meta, 2, NULL, (void **)&mem, &mem_size, &e), STS_OK);
    assert_int_equal(mem_size, 8 + pl.header_len + pl.data_len);
    assert_memory_equal(mem, whole, (size_t)(8 + pl.header_len));
    /* a user sink: pieces, none over 1 MiB while the header goes out */
    memset(&rs, 0, sizeof rs);
    sink = rec_sink_of(&rs);
    assert_int_equal(sts_write(sp, n, meta, 2, &sink, NULL, &e), STS_OK);
    assert_int_equal(rs.got.n, mem_size);
    assert_memory_equal(rs.got.p, mem, mem_size);
    assert_true(rs.calls > 3);
    /* a path: the fd sink, flushed between pieces */
    tf_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/big.safetensors", dir);
    assert_int_equal(sts_write_path(path, sp, n, meta, 2, NULL, &e), STS_OK);
    file = tf_read(path, &file_size);
    assert_int_equal(file_size, mem_size);
    assert_memory_equal(file, mem, mem_size);
    assert_int_equal(sts_open(path, NULL, &f, &e), STS_OK);
    assert_int_equal(sts_count(f), n);
    sts_close(f);
    unlink(path);
    rmdir(dir);
    free(file);
    free(rs.got.p);
    sts_free(NULL, mem, mem_size);
    free(whole);
    sts__plan_free(&pl);
    free(sp);
    free(names);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_golden_empty),
        cmocka_unit_test(test_text_primitives),
        cmocka_unit_test(test_layout_sort),
        cmocka_unit_test(test_large_header_pieces),
        cmocka_unit_test(test_golden_layout),
        cmocka_unit_test(test_golden_padding),
        cmocka_unit_test(test_golden_escaping),
        cmocka_unit_test(test_golden_name_order),
        cmocka_unit_test(test_golden_dtype_order),
        cmocka_unit_test(test_golden_shapes),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_message_null_name),
        cmocka_unit_test(test_producers),
        cmocka_unit_test(test_stream_args),
        cmocka_unit_test(test_sink_failures),
        cmocka_unit_test(test_write_size),
        cmocka_unit_test(test_write_path),
        cmocka_unit_test(test_write_path_producer_reuses_buffer),
        cmocka_unit_test(test_write_path_many_pieces),
        cmocka_unit_test(test_write_path_os_error),
        cmocka_unit_test(test_write_path_faults),
        cmocka_unit_test(test_write_memory_allocator),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
