/* test_core_parse.c - layers 1-4: result/rule/dtype tables, header parse and validation, the
   accessors. Every rule of the format is broken by a crafted header; the tests check the code, the
   rule, the exact byte offset and the message ("<rule id>: ..." naming the tensor), the
   reference's order between rules, duplicates, strict mode, limits, names and metadata.

   Headers are written in "q-form": ' stands for " (see cu_q in core_util.h). */
#define _POSIX_C_SOURCE 200809L
#define STS_IMPLEMENTATION
#include "../safetensors_spark.h"
#include "core_util.h"

#define U8_1 "{'dtype':'U8','shape':[1],'data_offsets':[0,1]}"
#define P2_61 "2305843009213693952"
#define P2_62 "4611686018427387904"

/* ============================== tables (layers 1 and 3) ============================== */

static void test_result_tables(void **state) {
    static const char *const names[] = { "OK", "HEADER_TOO_SMALL", "HEADER_TOO_LARGE", "INVALID_HEADER_LENGTH",
        "INVALID_HEADER", "INVALID_HEADER_DESERIALIZATION", "INVALID_OFFSET", "VALIDATION_OVERFLOW",
        "MISALIGNED_SLICE", "TENSOR_INVALID_INFO", "METADATA_INCOMPLETE_BUFFER", "NOMEM", "IO",
        "INVALID_ARGUMENT", "UNSUPPORTED", "NOT_FOUND", "DUPLICATE_KEY" };
    static const char *const variants[] = { NULL, "HeaderTooSmall", "HeaderTooLarge", "InvalidHeaderLength",
        "InvalidHeader", "InvalidHeaderDeserialization", "InvalidOffset", "ValidationOverflow",
        "MisalignedSlice", "TensorInvalidInfo", "MetadataIncompleteBuffer", NULL, NULL, NULL, NULL, NULL, NULL };
    int i;
    (void)state;
    /* the first 17 are the core's; later layers append their own */
    assert_true(STS_RESULT_COUNT >= 17);
    for (i = 0; i < 17; i++) {
        assert_string_equal(sts_result_name((sts_result)i), names[i]);
        if (variants[i]) assert_string_equal(sts_result_variant((sts_result)i), variants[i]);
        else assert_null(sts_result_variant((sts_result)i));
        assert_non_null(sts_result_text((sts_result)i));
        assert_true(strlen(sts_result_text((sts_result)i)) > 0);
    }
    for (i = 0; i < (int)STS_RESULT_COUNT; i++) {  /* names unique */
        int j;
        for (j = i + 1; j < (int)STS_RESULT_COUNT; j++)
            assert_string_not_equal(sts_result_name((sts_result)i), sts_result_name((sts_result)j));
    }
    assert_string_equal(sts_result_name(STS_RESULT_COUNT), "?");
    assert_string_equal(sts_result_name((sts_result)-1), "?");
    assert_null(sts_result_variant(STS_RESULT_COUNT));
    assert_string_equal(sts_result_text(STS_RESULT_COUNT), "?");
}

static void test_rule_tables(void **state) {
    /* the reference variant of every rule of the format (reference.md A and B) */
    static const struct { sts_rule rule; const char *variant; } fmt[] = {
        { STS_RULE_FILE_TOO_SMALL, "HeaderTooSmall" }, { STS_RULE_HEADER_TOO_LARGE, "HeaderTooLarge" },
        { STS_RULE_HEADER_LENGTH, "InvalidHeaderLength" }, { STS_RULE_HEADER_UTF8, "InvalidHeader" },
        { STS_RULE_JSON_SYNTAX, "InvalidHeaderDeserialization" }, { STS_RULE_JSON_STRING, "InvalidHeaderDeserialization" },
        { STS_RULE_JSON_NUMBER, "InvalidHeaderDeserialization" }, { STS_RULE_JSON_DEPTH, "InvalidHeaderDeserialization" },
        { STS_RULE_HEADER_OBJECT, "InvalidHeaderDeserialization" }, { STS_RULE_METADATA_TYPE, "InvalidHeaderDeserialization" },
        { STS_RULE_METADATA_VALUE, "InvalidHeaderDeserialization" }, { STS_RULE_METADATA_TWICE, "InvalidHeaderDeserialization" },
        { STS_RULE_ENTRY_TYPE, "InvalidHeaderDeserialization" }, { STS_RULE_FIELD_TWICE, "InvalidHeaderDeserialization" },
        { STS_RULE_FIELD_MISSING, "InvalidHeaderDeserialization" }, { STS_RULE_DTYPE, "InvalidHeaderDeserialization" },
        { STS_RULE_SHAPE, "InvalidHeaderDeserialization" }, { STS_RULE_OFFSETS, "InvalidHeaderDeserialization" },
        { STS_RULE_STRICT_LEADING_WS, "InvalidHeaderDeserialization" }, { STS_RULE_STRICT_PADDING, "InvalidHeaderDeserialization" },
        { STS_RULE_STRICT_DUPLICATE, "InvalidHeaderDeserialization" }, { STS_RULE_STRICT_POSITIONAL, "InvalidHeaderDeserialization" },
        { STS_RULE_STRICT_UNKNOWN, "InvalidHeaderDeserialization" }, { STS_RULE_STRICT_META_NULL, "InvalidHeaderDeserialization" },
        { STS_RULE_STRICT_NAME_NUL, "InvalidHeaderDeserialization" }, { STS_RULE_OFFSETS_CONTIGUOUS, "InvalidOffset" },
        { STS_RULE_NUMEL_OVERFLOW, "ValidationOverflow" }, { STS_RULE_BITS_OVERFLOW, "ValidationOverflow" },
        { STS_RULE_BYTE_ALIGNED, "MisalignedSlice" }, { STS_RULE_SIZE_MATCH, "TensorInvalidInfo" },
        { STS_RULE_FILE_SIZE, "MetadataIncompleteBuffer" },
    };
    size_t i, j;
    (void)state;
    assert_string_equal(sts_rule_id(STS_RULE_NONE), "none");
    assert_int_equal(sts_rule_result(STS_RULE_NONE), STS_OK);
    assert_string_equal(sts_rule_id(STS_RULE_OFFSETS_CONTIGUOUS), "offsets.contiguous");
    assert_string_equal(sts_rule_id(STS_RULE_COUNT), "?");
    assert_string_equal(sts_rule_text(STS_RULE_COUNT), "?");
    assert_int_equal(sts_rule_result(STS_RULE_COUNT), STS_ERR_INVALID_ARGUMENT);
    for (i = 0; i < sizeof fmt / sizeof fmt[0]; i++) {
        const char *v = sts_result_variant(sts_rule_result(fmt[i].rule));
        assert_non_null(v);
        assert_string_equal(v, fmt[i].variant);
    }
    assert_int_equal(sts_rule_result(STS_RULE_ALLOC), STS_ERR_NOMEM);
    assert_int_equal(sts_rule_result(STS_RULE_IO), STS_ERR_IO);
    assert_int_equal(sts_rule_result(STS_RULE_WRITE_DUPLICATE), STS_ERR_DUPLICATE_KEY);
    for (i = 0; i < (size_t)STS_RULE_COUNT; i++) {  /* ids are unique, non-empty, without spaces */
        const char *a = sts_rule_id((sts_rule)i);
        assert_true(strlen(a) > 0 && !strchr(a, ' ') && !strchr(a, ':'));
        assert_true(strlen(sts_rule_text((sts_rule)i)) > 0);
        for (j = i + 1; j < (size_t)STS_RULE_COUNT; j++) assert_string_not_equal(a, sts_rule_id((sts_rule)j));
    }
}

static void test_dtype_table(void **state) {
    static const struct { const char *name; unsigned bits; } ref[22] = {
        { "BOOL", 8 }, { "F4", 4 }, { "F6_E2M3", 6 }, { "F6_E3M2", 6 }, { "U8", 8 }, { "I8", 8 }, { "F8_E5M2", 8 },
        { "F8_E4M3", 8 }, { "F8_E8M0", 8 }, { "F8_E4M3FNUZ", 8 }, { "F8_E5M2FNUZ", 8 }, { "I16", 16 }, { "U16", 16 },
        { "F16", 16 }, { "BF16", 16 }, { "I32", 32 }, { "U32", 32 }, { "F32", 32 }, { "C64", 64 }, { "F64", 64 },
        { "I64", 64 }, { "U64", 64 } };
    static const char *const bad[] = { "f32", "Bf16", "bool", "F3", "F322", "F8_E4M3FN", "BF", "F8_E4M3FNUZZ", "",
                                       "U128", "F32 ", " F32", "F8_e4m3", "C128", "Q8" };
    int i;
    size_t k;
    sts_dtype d;
    (void)state;
    assert_int_equal(STS_DTYPE_COUNT, 22);
    assert_int_equal(STS_DTYPE_BF16, 14);  /* the enum value is the writer's rank */
    for (i = 0; i < 22; i++) {
        assert_string_equal(sts_dtype_name((sts_dtype)i), ref[i].name);
        assert_int_equal(sts_dtype_bits((sts_dtype)i), ref[i].bits);
        d = STS_DTYPE_COUNT;
        assert_int_equal(sts_dtype_from_name(ref[i].name, strlen(ref[i].name), &d), 1);
        assert_int_equal(d, i);
        assert_int_equal(sts_dtype_from_name(ref[i].name, strlen(ref[i].name), NULL), 1);
        /* a longer buffer: only len bytes count */
        {
            char t[32];
            snprintf(t, sizeof t, "%sXYZ", ref[i].name);
            d = STS_DTYPE_COUNT;
            assert_int_equal(sts_dtype_from_name(t, strlen(ref[i].name), &d), 1);
            assert_int_equal(d, i);
            assert_int_equal(sts_dtype_from_name(t, strlen(ref[i].name) + 1, &d), 0);
            /* the name and a NUL ("U16\0", as an escaped \u0000 unescapes): not that dtype */
            memcpy(t, ref[i].name, strlen(ref[i].name) + 1);
            assert_int_equal(sts_dtype_from_name(t, strlen(ref[i].name) + 1, &d), 0);
        }
    }
    for (k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        d = STS_DTYPE_U8;
        assert_int_equal(sts_dtype_from_name(bad[k], strlen(bad[k]), &d), 0);
        assert_int_equal(d, STS_DTYPE_U8);  /* untouched */
    }
    /* exhaustive: every 1- and 2-byte string, and every 3-byte one of NUL and printable ASCII, is a
       dtype exactly when it spells one of the table's names */
    {
        unsigned a, b, c;
        for (a = 0; a < 65536; a++) {
            char t[3];
            size_t len = a < 256 ? 1 : 2;
            int want = 0;
            t[0] = (char)(a & 0xff); t[1] = (char)(a >> 8);
            for (i = 0; i < 22; i++)
                if (strlen(ref[i].name) == len && memcmp(ref[i].name, t, len) == 0) want = 1;
            if (sts_dtype_from_name(t, len, &d) != want) fail_msg("%zu bytes %02x %02x", len, a & 0xff, a >> 8);
        }
        for (a = 31; a < 127; a++)
            for (b = 31; b < 127; b++)
                for (c = 31; c < 127; c++) {
                    char t[3];
                    int want = 0;
                    t[0] = (char)(a == 31 ? 0 : a); t[1] = (char)(b == 31 ? 0 : b); t[2] = (char)(c == 31 ? 0 : c);
                    for (i = 0; i < 22; i++)
                        if (strlen(ref[i].name) == 3 && memcmp(ref[i].name, t, 3) == 0) want = 1;
                    if (sts_dtype_from_name(t, 3, &d) != want) fail_msg("3 bytes %02x %02x %02x", t[0], t[1], t[2]);
                }
    }
    assert_int_equal(sts_dtype_from_name("F3\0002", 4, &d), 0);
    assert_int_equal(sts_dtype_from_name(NULL, 3, &d), 0);
    assert_string_equal(sts_dtype_name(STS_DTYPE_COUNT), "?");
    assert_string_equal(sts_dtype_name((sts_dtype)-1), "?");
    assert_int_equal(sts_dtype_bits(STS_DTYPE_COUNT), 0);
}

/* ============================== rules 1-4: prefix and UTF-8 ============================== */

static void test_file_too_small(void **state) {
    uint8_t b[8] = { 2, 0, 0, 0, 0, 0, 0, 0 };
    size_t n;
    (void)state;
    for (n = 0; n < 8; n++) {
        cu_img im;
        sts_error e;
        im.p = b; im.size = n; im.hlen = 0;
        e = cu_parse_fail(&im, NULL, STS_RULE_FILE_TOO_SMALL, 0);
        assert_int_equal(e.code, STS_ERR_HEADER_TOO_SMALL);
    }
    {   /* NULL bytes with size 0 is a legal, too-small file */
        sts_file *f = NULL;
        sts_error e;
        assert_int_equal(sts_parse(NULL, 0, NULL, &f, &e), STS_ERR_HEADER_TOO_SMALL);
        assert_int_equal(e.rule, STS_RULE_FILE_TOO_SMALL);
        assert_null(f);
    }
}

static void test_header_too_large_and_length(void **state) {
    cu_img im;
    sts_error e;
    sts_options o;
    (void)state;
    /* N over the cap in a 16-byte file: too large, not "past the end" (checked first) */
    im = cu_img_raw(100000001u, "{}      ", 8, NULL, 0);
    e = cu_parse_fail(&im, NULL, STS_RULE_HEADER_TOO_LARGE, 0);
    tu_err_has(cu_label, &e, "100000001", (const char *)NULL);
    cu_img_free(&im);
    im = cu_img_raw(UINT64_MAX, "{}      ", 8, NULL, 0);
    cu_parse_fail(&im, NULL, STS_RULE_HEADER_TOO_LARGE, 0);
    cu_img_free(&im);
    /* exactly the cap is allowed, so the short file fails the length rule */
    im = cu_img_raw(100000000u, "{}      ", 8, NULL, 0);
    cu_parse_fail(&im, NULL, STS_RULE_HEADER_LENGTH, 0);
    cu_img_free(&im);
    /* N one past the end, then exactly to the end */
    im = cu_img_raw(9, "{}      ", 8, NULL, 0);
    cu_parse_fail(&im, NULL, STS_RULE_HEADER_LENGTH, 0);
    cu_img_free(&im);
    im = cu_img_raw(8, "{}      ", 8, NULL, 0);
    sts_close(cu_parse_ok(&im, NULL));
    /* a tightened limit: 7 refuses N = 8; 8 accepts; a larger value than the cap clamps to it */
    memset(&o, 0, sizeof o);
    o.max_header_size = 7;
    e = cu_parse_fail(&im, &o, STS_RULE_HEADER_TOO_LARGE, 0);
    tu_err_has(cu_label, &e, "limit of 7", (const char *)NULL);
    o.max_header_size = 8;
    sts_close(cu_parse_ok(&im, &o));
    cu_img_free(&im);
    o.max_header_size = 7;   /* the tightened limit also comes before the file size */
    im = cu_img_raw(1000, "{}      ", 8, NULL, 0);
    cu_parse_fail(&im, &o, STS_RULE_HEADER_TOO_LARGE, 0);
    cu_img_free(&im);
    o.max_header_size = 200000000u;
    im = cu_img_raw(100000001u, "{}      ", 8, NULL, 0);
    e = cu_parse_fail(&im, &o, STS_RULE_HEADER_TOO_LARGE, 0);
    tu_err_has(cu_label, &e, "limit of 100000000", (const char *)NULL);
    cu_img_free(&im);
    o.max_header_size = UINT64_MAX;
    im = cu_img_raw(100000000u, "{}      ", 8, NULL, 0);
    cu_parse_fail(&im, &o, STS_RULE_HEADER_LENGTH, 0);
    cu_img_free(&im);
}

/* A header of exactly 100,000,000 bytes is accepted (the cap is inclusive). */
static void test_header_at_cap(void **state) {
    size_t n = 100000000u;
    uint8_t *b;
    sts_file *f;
    sts_error e;
    (void)state;
    if (tu_quick()) { skip(); return; }
    b = (uint8_t *)malloc(8 + n);
    assert_non_null(b);
    cu_st64(b, n);
    memset(b + 8, ' ', n);
    b[8] = '{';
    b[9] = '}';
    assert_int_equal(sts_parse(b, 8 + n, NULL, &f, &e), STS_OK);
    assert_int_equal(sts_count(f), 0);
    assert_int_equal(sts_header_size(f), n);
    sts_close(f);
    free(b);
}

static void test_header_utf8(void **state) {
    static const struct { const char *seq; size_t len; } bad[] = {
        { "\x80", 1 }, { "\xBF", 1 }, { "\xC0\x80", 2 }, { "\xC1\xBF", 2 }, { "\xE0\x80\x80", 3 }, { "\xE0\x9F\xBF", 3 },
        { "\xED\xA0\x80", 3 }, { "\xED\xBF\xBF", 3 }, { "\xF0\x80\x80\x80", 4 }, { "\xF0\x8F\xBF\xBF", 4 },
        { "\xF4\x90\x80\x80", 4 }, { "\xF5\x80\x80\x80", 4 }, { "\xF8\x88\x80\x80\x80", 5 }, { "\xFE", 1 }, { "\xFF", 1 },
        { "\xC2\x41", 2 }, { "\xE2\x82\x41", 3 }, { "\xF0\x9F\x98\x41", 4 }, { "\xC2\xC2\xA9", 3 } };
    static const struct { const char *seq; size_t len; } good[] = {
        { "\xC2\x80", 2 }, { "\xDF\xBF", 2 }, { "\xE0\xA0\x80", 3 }, { "\xED\x9F\xBF", 3 }, { "\xEE\x80\x80", 3 },
        { "\xEF\xBF\xBF", 3 }, { "\xF0\x90\x80\x80", 4 }, { "\xF4\x8F\xBF\xBF", 4 }, { "\x7F", 1 } };
    static const size_t pres[] = { 0, 1, 7, 13, 15, 16, 26, 39, 62, 63, 64, 65, 70, 127, 130 };
    size_t i, pre, pi;
    (void)state;
    /* each bad sequence inside a tensor name, at several distances from the start (the checker
       skips ASCII in 16- and 64-byte blocks) */
    for (pi = 0; pi < sizeof pres / sizeof *pres; pi++) {
        pre = pres[pi];
        for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
            tu_sb b = { 0 };
            size_t k;
            cu_img im;
            sts_error e;
            tu_sb_str(&b, "{\"");
            for (k = 0; k < pre; k++) tu_sb_str(&b, "x");
            tu_sb_put(&b, bad[i].seq, bad[i].len);
            tu_sb_str(&b, "\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[0,0]}}");
            im = cu_img_bytes(b.p, b.n, 0);
            e = cu_parse_fail(&im, NULL, STS_RULE_HEADER_UTF8, 8 + 2 + pre);
            assert_int_equal(e.code, STS_ERR_INVALID_HEADER);
            cu_img_free(&im);
            tu_sb_free(&b);
        }
        for (i = 0; i < sizeof good / sizeof good[0]; i++) {
            tu_sb b = { 0 };
            size_t k;
            cu_img im;
            sts_file *f;
            char name[256];
            tu_sb_str(&b, "{\"");
            for (k = 0; k < pre; k++) { tu_sb_str(&b, "x"); name[k] = 'x'; }
            memcpy(name + pre, good[i].seq, good[i].len);
            tu_sb_put(&b, good[i].seq, good[i].len);
            tu_sb_str(&b, "\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[0,0]}}");
            im = cu_img_bytes(b.p, b.n, 0);
            f = cu_parse_ok(&im, NULL);
            assert_non_null(sts_find(f, name, pre + good[i].len));
            sts_close(f);
            cu_img_free(&im);
            tu_sb_free(&b);
        }
    }
    {   /* in the padding, and a sequence cut by the end of the header */
        cu_img im = cu_img_bytes("{}   \xFF  ", 8, 0);
        cu_parse_fail(&im, NULL, STS_RULE_HEADER_UTF8, 8 + 5);
        cu_img_free(&im);
        im = cu_img_bytes("{}    \xE2\x82", 8, 0);
        cu_parse_fail(&im, NULL, STS_RULE_HEADER_UTF8, 8 + 6);
        cu_img_free(&im);
        im = cu_img_bytes("{}      \xC3", 9, 0);
        cu_parse_fail(&im, NULL, STS_RULE_HEADER_UTF8, 8 + 8);
        cu_img_free(&im);
        /* the parser checks strings as it goes and the whole text only on a failure: a bad byte
           anywhere is still the verdict, before any JSON error that comes earlier in the text */
        {
            static const struct { const char *text; size_t at; } late[] = {
                { "{\"a\":{\"dtype\":\"U8\",x}, \"b\xFF\":1}", 25 },                 /* after a syntax error */
                { "{\"__metadata__\":{\"k\":\"v\xC3(\"}}", 23 },                     /* a metadata value */
                { "{\"a\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[0,0],\"z\":[\"\xE2\x82\"]}}", 58 },
                { "{\"a\":{\"dtype\":\"U\xF0\x9F\x98\",\"shape\":[0],\"data_offsets\":[0,0]}}", 16 },
                { "{\"\\u00e9\xC3\xA9\x80\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[0,0]}}", 10 },
                { "{\"a\":1}\x80", 7 },                                                /* after the object */
            };
            size_t li;
            for (li = 0; li < sizeof late / sizeof late[0]; li++) {
                im = cu_img_bytes(late[li].text, strlen(late[li].text), 0);
                cu_parse_fail(&im, NULL, STS_RULE_HEADER_UTF8, 8 + late[li].at);
                cu_img_free(&im);
            }
        }
        /* valid UTF-8 in the padding is a JSON error, not a UTF-8 one */
        im = cu_img_bytes("{}  \xC3\xA9  ", 8, 0);
        cu_parse_fail(&im, NULL, STS_RULE_JSON_SYNTAX, 8 + 4);
        cu_img_free(&im);
        /* the data section is not checked: invalid UTF-8 there is fine */
        im = cu_img_raw(8, "{}      ", 8, "\xFF\xFE", 0);
        sts_close(cu_parse_ok(&im, NULL));
        cu_img_free(&im);
    }
}

/* ============================== rule table for the JSON layer ============================== */

typedef struct pcase {
    sts_rule rule;
    const char *q;        /* header, q-form */
    size_t dlen;          /* data bytes after the header */
    const char *needle;   /* q-form; the offset is 8 + its position (+adj); NULL: 8 + at (at < 0: end) */
    int nth, adj;
    long at;
    const char *name;     /* tensor the message must name, or NULL */
    int strict;
} pcase;

static void run_cases(const pcase *c, size_t n) {
    size_t i;
    for (i = 0; i < n; i++) {
        cu_img im = cu_img_q(c[i].q, c[i].dlen);
        uint64_t off;
        sts_error e;
        sts_options o;
        char at[40];
        memset(&o, 0, sizeof o);
        o.strict = c[i].strict;
        if (c[i].needle) {
            char *nq = cu_q(c[i].needle);
            off = cu_off_nth(&im, nq, c[i].nth) + (uint64_t)c[i].adj;
            free(nq);
        } else off = c[i].at < 0 ? 8 + im.hlen : 8 + (uint64_t)c[i].at;
        cu_label = c[i].q;
        e = cu_parse_fail(&im, &o, c[i].rule, off);
        if (c[i].name) cu_check_names(&e, c[i].name);
        if (e.code == STS_ERR_INVALID_HEADER_DESERIALIZATION && c[i].rule != STS_RULE_STRICT_DUPLICATE) {
            /* messages from the JSON pass end with the byte */
            snprintf(at, sizeof at, "at byte %llu", (unsigned long long)off);
            tu_err_has(cu_label, &e, at, (const char *)NULL);
            if (!c[i].name) assert_null(strstr(e.message, "in tensor"));
        }
        cu_img_free(&im);
    }
}

#define A1 "{'a':{'dtype':'U8','shape':[1],'data_offsets':[0,1]"
static const pcase syntax_cases[] = {
    { STS_RULE_JSON_SYNTAX, "", 0, NULL, 0, 0, 0, NULL, 0 },
    { STS_RULE_JSON_SYNTAX, "   ", 0, NULL, 0, 0, 3, NULL, 0 },
    { STS_RULE_JSON_SYNTAX, "{", 0, NULL, 0, 0, -1, NULL, 0 },
    { STS_RULE_JSON_SYNTAX, "{'a'}", 0, "}", 0, 0, 0, NULL, 0 },
    { STS_RULE_JSON_SYNTAX, "{'a' 1}", 0, "1", 0, 0, 0, NULL, 0 },
    { STS_RULE_JSON_SYNTAX, A1 "},}", 1, "}", 1, 0, 0, NULL, 0 },
    { STS_RULE_JSON_SYNTAX, A1 "}", 1, NULL, 0, 0, -1, NULL, 0 },
    { STS_RULE_JSON_SYNTAX, A1 "}'b'}", 1, "'b'", 0, 0, 0, NULL, 0 },
    { STS_RULE_JSON_SYNTAX, "{} {}", 0, "{", 1, 0, 0, NULL, 0 },
    { STS_RULE_JSON_SYNTAX, "{}x", 0, "x", 0, 0, 0, NULL, 0 },
    { STS_RULE_JSON_SYNTAX, "{}\f", 0, "\f", 0, 0, 0, NULL, 0 },
    { STS_RULE_JSON_SYNTAX, "\f{}", 0, NULL, 0, 0, 0, NULL, 0 },
    { STS_RULE_JSON_SYNTAX, "\v{}", 0, NULL, 0, 0, 0, NULL, 0 },
    { STS_RULE_JSON_SYNTAX, "\xC2\xA0{}", 0, NULL, 0, 0, 0, NULL, 0 },
    { STS_RULE_JSON_SYNTAX, "{'a", 0, NULL, 0, 0, -1, NULL, 0 },
    { STS_RULE_JSON_SYNTAX, "{'a':{'dtype':'U8' 'shape':[1],'data_offsets':[0,1]}}", 1, "'shape'", 0, 0, 0, "a", 0 },
    { STS_RULE_JSON_SYNTAX, "{'a':{'dtype':'U8','shape':[1 1],'data_offsets':[0,1]}}", 1, "1 1]", 0, 2, 0, "a", 0 },
    { STS_RULE_JSON_SYNTAX, "{'a':{'dtype':'U8','shape':[1],'data_offsets':[0 1]}}", 1, "0 1", 0, 2, 0, "a", 0 },
    /* in writer form, where begin repeats the previous end byte for byte */
    { STS_RULE_JSON_SYNTAX, "{'a':" U8_1 ",'b':{'dtype':'U8','shape':[1],'data_offsets':[1 2]}}", 2, "1 2", 0, 2, 0, "b", 0 },
    { STS_RULE_JSON_SYNTAX, "{'a':" U8_1 ",'b':{'dtype':'U8','shape':[1],'data_offsets':[1:2]}}", 2, "1:2", 0, 1, 0, "b", 0 },
    { STS_RULE_JSON_SYNTAX, "{'a':" U8_1 ",'b':{'dtype':'U8','shape':[1],'data_offsets':[1,2]} }x", 2, "x", 0, 0, 0, NULL, 0 },
    { STS_RULE_JSON_SYNTAX, "{'a':" U8_1 ",'b':{'dtype':'U8','shape':[1],'data_offsets':[1,2]]}", 2, "]]", 0, 1, 0, "b", 0 },
    { STS_RULE_JSON_SYNTAX, "{'a':{'dtype':'U8','shape':[1],'data_offsets':[0,1],'x':[1,2}}", 1, "}", 0, 0, 0, "a", 0 },
    { STS_RULE_JSON_SYNTAX, "{'a':{'dtype':'U8','shape':[1],'data_offsets':[0,1],'x':tru}}", 1, "tru", 0, 0, 0, "a", 0 },
    { STS_RULE_JSON_SYNTAX, "{'a':{'dtype':'U8','shape':[1],'data_offsets':[0,1],'x':{'k' 1}}}", 1, " 1}", 0, 1, 0, "a", 0 },
    { STS_RULE_JSON_SYNTAX, "{'a':{'dtype':'U8','shape':[1],'data_offsets':[0,1],'x':{1:2}}}", 1, "{1", 0, 1, 0, "a", 0 },
    { STS_RULE_JSON_SYNTAX, "{'a':{'dtype':'U8','shape':[1],'data_offsets':[0,1],'x':[1,]}}", 1, ",]", 0, 1, 0, "a", 0 },
    { STS_RULE_JSON_SYNTAX, "{'a':{'dtype':'U8','shape':[1],'data_offsets':[0,1],}}", 1, ",}", 0, 1, 0, "a", 0 },
    { STS_RULE_JSON_SYNTAX, "{'a':{'dtype':'U8','shape':[1],'data_offsets':[0,1]", 1, NULL, 0, 0, -1, "a", 0 },
    { STS_RULE_JSON_SYNTAX, "{'__metadata__':{'k':'v',}}", 0, "}", 0, 0, 0, NULL, 0 },
    { STS_RULE_JSON_SYNTAX, "{'__metadata__':{'k' 'v'}}", 0, "'v'", 0, 0, 0, NULL, 0 },
    { STS_RULE_JSON_SYNTAX, "{'__metadata__':{'k':'v' 'j':'w'}}", 0, "'j'", 0, 0, 0, NULL, 0 },
    { STS_RULE_JSON_SYNTAX, "{'__metadata__':{1:'v'}}", 0, "1", 0, 0, 0, NULL, 0 },
    { STS_RULE_JSON_SYNTAX, "{,}", 0, ",", 0, 0, 0, NULL, 0 },
    { STS_RULE_ENTRY_TYPE, "{'a':}", 0, "}", 0, 0, 0, "a", 0 },
};
static const pcase string_cases[] = {
    { STS_RULE_JSON_STRING, "{'a\x01':" U8_1 "}", 1, "\x01", 0, 0, 0, NULL, 0 },
    { STS_RULE_JSON_STRING, "{'a\tb':" U8_1 "}", 1, "\t", 0, 0, 0, NULL, 0 },
    { STS_RULE_JSON_STRING, "{'a\\x':" U8_1 "}", 1, "\\x", 0, 0, 0, NULL, 0 },
    { STS_RULE_JSON_STRING, "{'a\\U0041':" U8_1 "}", 1, "\\U", 0, 0, 0, NULL, 0 },
    { STS_RULE_JSON_STRING, "{'\\ud800':" U8_1 "}", 1, "\\ud800", 0, 0, 0, NULL, 0 },
    { STS_RULE_JSON_STRING, "{'\\udc00':" U8_1 "}", 1, "\\udc00", 0, 0, 0, NULL, 0 },
    { STS_RULE_JSON_STRING, "{'x\\uDBFF\\u0041':" U8_1 "}", 1, "\\uDBFF", 0, 0, 0, NULL, 0 },
    { STS_RULE_JSON_STRING, "{'\\ud800\\ud800':" U8_1 "}", 1, "\\ud800", 0, 0, 0, NULL, 0 },
    { STS_RULE_JSON_STRING, "{'\\ud800\\n':" U8_1 "}", 1, "\\ud800", 0, 0, 0, NULL, 0 },
    { STS_RULE_JSON_STRING, "{'\\u12G4':" U8_1 "}", 1, "\\u12", 0, 0, 0, NULL, 0 },
    { STS_RULE_JSON_STRING, "{'\\u12':" U8_1 "}", 1, "\\u12", 0, 0, 0, NULL, 0 },
    { STS_RULE_JSON_STRING, "{'a':{'dtype':'U\n8','shape':[1],'data_offsets':[0,1]}}", 1, "\n", 0, 0, 0, "a", 0 },
    { STS_RULE_JSON_STRING, "{'a':{'dtype':'U8','shape':[1],'data_offsets':[0,1],'x':'\\q'}}", 1, "\\q", 0, 0, 0, "a", 0 },
    { STS_RULE_JSON_STRING, "{'__metadata__':{'k':'a\tb'}}", 0, "\t", 0, 0, 0, NULL, 0 },
    { STS_RULE_JSON_STRING, "{'__metadata__':{'k\\ud83d':'v'}}", 0, "\\ud83d", 0, 0, 0, NULL, 0 },
    /* past the scanner's 16-byte (SIMD) and 8-byte (SWAR) blocks */
    { STS_RULE_JSON_STRING, "{'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\x1f':" U8_1 "}", 1, "\x1f", 0, 0, 0, NULL, 0 },
    { STS_RULE_JSON_STRING, "{'xxxxxxxxxxxxxxxxxxxxxxx\xC3\xA9xxxxxxxxxxxxxxx\x7fx\x10':" U8_1 "}", 1, "\x10", 0, 0, 0, NULL, 0 },
    { STS_RULE_JSON_STRING, "{'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\\\\\\a':" U8_1 "}", 1, "\\a", 0, 0, 0, NULL, 0 },
    { STS_RULE_JSON_STRING, "{'a':{'dtype':'U8','shape':[1],'data_offsets':[0,1],'x':'yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy\\ud800'}}", 1, "\\ud800", 0, 0, 0, "a", 0 },
    { STS_RULE_JSON_SYNTAX, "{'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", 0, NULL, 0, 0, -1, NULL, 0 },
    { STS_RULE_JSON_SYNTAX, "{'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\\'", 0, NULL, 0, 0, -1, NULL, 0 },
    { STS_RULE_JSON_SYNTAX, "{'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\\", 0, "\\", 0, 0, 0, NULL, 0 },
};
static const pcase number_cases[] = {
    { STS_RULE_JSON_NUMBER, "{'a':{'dtype':'U8','shape':[01],'data_offsets':[0,1]}}", 1, "01", 0, 0, 0, "a", 0 },
    { STS_RULE_JSON_NUMBER, "{'a':{'dtype':'U8','shape':[-],'data_offsets':[0,1]}}", 1, "-", 0, 0, 0, "a", 0 },
    { STS_RULE_JSON_NUMBER, "{'a':{'dtype':'U8','shape':[1.],'data_offsets':[0,1]}}", 1, "1.", 0, 0, 0, "a", 0 },
    { STS_RULE_JSON_NUMBER, "{'a':{'dtype':'U8','shape':[1e],'data_offsets':[0,1]}}", 1, "1e", 0, 0, 0, "a", 0 },
    { STS_RULE_JSON_NUMBER, "{'a':{'dtype':'U8','shape':[1E+],'data_offsets':[0,1]}}", 1, "1E", 0, 0, 0, "a", 0 },
    { STS_RULE_JSON_NUMBER, "{'a':{'dtype':'U8','shape':[1],'data_offsets':[00,1]}}", 1, "00", 0, 0, 0, "a", 0 },
    { STS_RULE_JSON_NUMBER, "{'a':{'dtype':'U8','shape':[1],'data_offsets':[0,1],'x':01}}", 1, "01", 0, 0, 0, "a", 0 },
    { STS_RULE_JSON_NUMBER, "{'a':{'dtype':'U8','shape':[1],'data_offsets':[0,1],'x':-01}}", 1, "-01", 0, 0, 0, "a", 0 },
    { STS_RULE_JSON_NUMBER, "{'a':{'dtype':'U8','shape':[1],'data_offsets':[0,1],'x':-}}", 1, "-", 0, 0, 0, "a", 0 },
    { STS_RULE_JSON_NUMBER, "{'a':{'dtype':'U8','shape':[1],'data_offsets':[0,1],'x':1.e5}}", 1, "1.e5", 0, 0, 0, "a", 0 },
    { STS_RULE_JSON_NUMBER, "{'a':{'dtype':'U8','shape':[1],'data_offsets':[0,1],'x':[2e]}}", 1, "2e", 0, 0, 0, "a", 0 },
    /* numbers in ignored fields must fit a 64-bit float, as in the reference */
    { STS_RULE_JSON_NUMBER, "{'a':{'dtype':'U8','shape':[1],'data_offsets':[0,1],'x':1e309}}", 1, "1e309", 0, 0, 0, "a", 0 },
    { STS_RULE_JSON_NUMBER, "{'a':{'dtype':'U8','shape':[1],'data_offsets':[0,1],'x':[0,-2E+400]}}", 1, "-2E", 0, 0, 0, "a", 0 },
    { STS_RULE_JSON_NUMBER, "{'a':{'dtype':'U8','shape':[1],'data_offsets':[0,1],'x':{'k':1.7976931348623159e308}}}", 1, "1.797", 0, 0, 0, "a", 0 },
    { STS_RULE_JSON_NUMBER, "{'a':{'dtype':'U8','shape':[1],'data_offsets':[0,1],'x':0.00018e312}}", 1, "0.00018", 0, 0, 0, "a", 0 },
};
static const pcase object_cases[] = {
    { STS_RULE_HEADER_OBJECT, "[]", 0, NULL, 0, 0, 0, NULL, 0 },
    { STS_RULE_HEADER_OBJECT, "'x'", 0, NULL, 0, 0, 0, NULL, 0 },
    { STS_RULE_HEADER_OBJECT, "1", 0, NULL, 0, 0, 0, NULL, 0 },
    { STS_RULE_HEADER_OBJECT, "-1", 0, NULL, 0, 0, 0, NULL, 0 },
    { STS_RULE_HEADER_OBJECT, "true", 0, NULL, 0, 0, 0, NULL, 0 },
    { STS_RULE_HEADER_OBJECT, "false", 0, NULL, 0, 0, 0, NULL, 0 },
    { STS_RULE_HEADER_OBJECT, "null", 0, NULL, 0, 0, 0, NULL, 0 },
    { STS_RULE_HEADER_OBJECT, " \t\r\n[{}]", 0, NULL, 0, 0, 4, NULL, 0 },
};
static const pcase metadata_cases[] = {
    { STS_RULE_METADATA_TYPE, "{'__metadata__':[]}", 0, "[", 0, 0, 0, NULL, 0 },
    { STS_RULE_METADATA_TYPE, "{'__metadata__':1}", 0, "1", 0, 0, 0, NULL, 0 },
    { STS_RULE_METADATA_TYPE, "{'__metadata__':'x'}", 0, "'x'", 0, 0, 0, NULL, 0 },
    { STS_RULE_METADATA_TYPE, "{'__metadata__':true}", 0, "true", 0, 0, 0, NULL, 0 },
    { STS_RULE_METADATA_TYPE, "{'__metadata__':nul}", 0, "nul", 0, 0, 0, NULL, 0 },
    { STS_RULE_METADATA_TYPE, "{'__metadata__':  [{}]}", 0, "[", 0, 0, 0, NULL, 0 },
    { STS_RULE_METADATA_TYPE, "{'__metadata\\u005f_':[]}", 0, "[", 0, 0, 0, NULL, 0 },
    { STS_RULE_METADATA_VALUE, "{'__metadata__':{'k':1}}", 0, ":1", 0, 1, 0, NULL, 0 },
    { STS_RULE_METADATA_VALUE, "{'__metadata__':{'k':'v','j':null}}", 0, "null", 0, 0, 0, NULL, 0 },
    { STS_RULE_METADATA_VALUE, "{'__metadata__':{'k':{}}}", 0, ":{}", 0, 1, 0, NULL, 0 },
    { STS_RULE_METADATA_VALUE, "{'__metadata__':{'k':['a']}}", 0, "[", 0, 0, 0, NULL, 0 },
    { STS_RULE_METADATA_VALUE, "{'__metadata__':{'k':true}}", 0, "true", 0, 0, 0, NULL, 0 },
    { STS_RULE_METADATA_TWICE, "{'__metadata__':{},'__metadata__':{}}", 0, "'__metadata__'", 1, 0, 0, NULL, 0 },
    { STS_RULE_METADATA_TWICE, "{'__metadata__':null,'__metadata__':null}", 0, "'__metadata__'", 1, 0, 0, NULL, 0 },
    { STS_RULE_METADATA_TWICE, "{'__metadata__':{'k':'v'},'a':" U8_1 ",'__metad\\u0061ta__':{}}", 1, "'__metad", 1, 0, 0, NULL, 0 },
};
static const pcase entry_cases[] = {
    { STS_RULE_ENTRY_TYPE, "{'a':1}", 0, "1", 0, 0, 0, "a", 0 },
    { STS_RULE_ENTRY_TYPE, "{'a':'U8'}", 0, "'U8'", 0, 0, 0, "a", 0 },
    { STS_RULE_ENTRY_TYPE, "{'a':null}", 0, "null", 0, 0, 0, "a", 0 },
    { STS_RULE_ENTRY_TYPE, "{'a':true}", 0, "true", 0, 0, 0, "a", 0 },
    { STS_RULE_ENTRY_TYPE, "{'a':[]}", 0, "[", 0, 0, 0, "a", 0 },
    { STS_RULE_ENTRY_TYPE, "{'a':['U8']}", 0, "[", 0, 0, 0, "a", 0 },
    { STS_RULE_ENTRY_TYPE, "{'a':['U8',[1]]}", 0, "[", 0, 0, 0, "a", 0 },
    { STS_RULE_ENTRY_TYPE, "{'a':['U8',[1],[0,1],[0,1]]}", 1, "[", 0, 0, 0, "a", 0 },
    { STS_RULE_DTYPE, "{'a':[[1],'U8',[0,1]]}", 1, "[1]", 0, 0, 0, "a", 0 },
    { STS_RULE_OFFSETS, "{'a':['U8',[0,1],[1]]}", 1, "[1]", 0, 0, 0, "a", 0 },
    { STS_RULE_FIELD_TWICE, "{'a':{'dtype':'U8','dtype':'U8','shape':[1],'data_offsets':[0,1]}}", 1, "'dtype'", 1, 0, 0, "a", 0 },
    { STS_RULE_FIELD_TWICE, "{'a':{'dtype':'U8','\\u0064type':'U8','shape':[1],'data_offsets':[0,1]}}", 1, "'\\u0064", 0, 0, 0, "a", 0 },
    { STS_RULE_FIELD_TWICE, "{'a':{'shape':[1],'dtype':'U8','shape':[1],'data_offsets':[0,1]}}", 1, "'shape'", 1, 0, 0, "a", 0 },
    { STS_RULE_FIELD_TWICE, "{'a':{'dtype':'U8','shape':[1],'data_offsets':[0,1],'data_offsets':[0,1]}}", 1, "'data_offsets'", 1, 0, 0, "a", 0 },
    { STS_RULE_FIELD_MISSING, "{'a':{'shape':[1],'data_offsets':[0,1]}}", 1, "{'shape'", 0, 0, 0, "a", 0 },
    { STS_RULE_FIELD_MISSING, "{'a':{'dtype':'U8','data_offsets':[0,1]}}", 1, "{'dtype'", 0, 0, 0, "a", 0 },
    { STS_RULE_FIELD_MISSING, "{'a':{'dtype':'U8','shape':[1]}}", 1, "{'dtype'", 0, 0, 0, "a", 0 },
    { STS_RULE_FIELD_MISSING, "{'a': {  } }", 1, "{  }", 0, 0, 0, "a", 0 },
    { STS_RULE_FIELD_MISSING, "{'a':{'Dtype':'U8','shape':[1],'data_offsets':[0,1]}}", 1, "{'Dtype'", 0, 0, 0, "a", 0 },
    { STS_RULE_FIELD_MISSING, "{'a':{'dtype':'U8','shape':[1],'data_offset':[0,1]}}", 1, "{'dtype'", 0, 0, 0, "a", 0 },
    { STS_RULE_FIELD_MISSING, "{'a':{'dtype':'U8','shape':[1],'data_offsetss':[0,1]}}", 1, "{'dtype'", 0, 0, 0, "a", 0 },
    { STS_RULE_FIELD_MISSING, "{'a':{'dtype':'U8','shapes':[1],'data_offsets':[0,1]}}", 1, "{'dtype'", 0, 0, 0, "a", 0 },
    { STS_RULE_FIELD_MISSING, "{'a':{'dtyp':'U8','shape':[1],'data_offsets':[0,1]}}", 1, "{'dtyp'", 0, 0, 0, "a", 0 },
    { STS_RULE_FIELD_MISSING, "{'a':{'dtype\\u0000':'U8','shape':[1],'data_offsets':[0,1]}}", 1, "{'dtype", 0, 0, 0, "a", 0 },
    { STS_RULE_DTYPE, "{'a':{'dtype':'f32','shape':[1],'data_offsets':[0,4]}}", 4, "'f32'", 0, 0, 0, "a", 0 },
    { STS_RULE_DTYPE, "{'a':{'dtype':'F128','shape':[1],'data_offsets':[0,4]}}", 4, "'F128'", 0, 0, 0, "a", 0 },
    { STS_RULE_DTYPE, "{'a':{'dtype':'BOOl','shape':[1],'data_offsets':[0,1]}}", 1, "'BOOl'", 0, 0, 0, "a", 0 },
    { STS_RULE_DTYPE, "{'a':{'dtype':'','shape':[1],'data_offsets':[0,1]}}", 1, "''", 0, 0, 0, "a", 0 },
    { STS_RULE_DTYPE, "{'a':{'dtype':'F32 ','shape':[1],'data_offsets':[0,4]}}", 4, "'F32 '", 0, 0, 0, "a", 0 },
    { STS_RULE_DTYPE, "{'a':{'dtype':1,'shape':[1],'data_offsets':[0,1]}}", 1, ":1", 0, 1, 0, "a", 0 },
    { STS_RULE_DTYPE, "{'a':{'dtype':null,'shape':[1],'data_offsets':[0,1]}}", 1, "null", 0, 0, 0, "a", 0 },
    { STS_RULE_DTYPE, "{'a':{'dtype':['U8'],'shape':[1],'data_offsets':[0,1]}}", 1, "['U8']", 0, 0, 0, "a", 0 },
    { STS_RULE_DTYPE, "{'a':{'dtype':'\\u0055\\u0038\\u0020','shape':[1],'data_offsets':[0,1]}}", 1, "'\\u0055", 0, 0, 0, "a", 0 },
    { STS_RULE_DTYPE, "{'a':{'dtype':'U8\\u0000','shape':[1],'data_offsets':[0,1]}}", 1, "'U8", 0, 0, 0, "a", 0 },
    { STS_RULE_DTYPE, "{'a':{'dtype':'\\u0055\\u0055\\u0055\\u0055\\u0055\\u0055\\u0055\\u0055\\u0055\\u0055\\u0055\\u0055\\u0055"
                      "\\u0055\\u0055','shape':[1],'data_offsets':[0,1]}}", 1, "'\\u0055", 0, 0, 0, "a", 0 },
    { STS_RULE_SHAPE, "{'a':{'dtype':'U8','shape':1,'data_offsets':[0,1]}}", 1, ":1,", 0, 1, 0, "a", 0 },
    { STS_RULE_SHAPE, "{'a':{'dtype':'U8','shape':'[1]','data_offsets':[0,1]}}", 1, "'[1]'", 0, 0, 0, "a", 0 },
    { STS_RULE_SHAPE, "{'a':{'dtype':'U8','shape':null,'data_offsets':[0,1]}}", 1, "null", 0, 0, 0, "a", 0 },
    { STS_RULE_SHAPE, "{'a':{'dtype':'U8','shape':[-1],'data_offsets':[0,1]}}", 1, "-1", 0, 0, 0, "a", 0 },
    { STS_RULE_SHAPE, "{'a':{'dtype':'U8','shape':[-0],'data_offsets':[0,0]}}", 0, "-0", 0, 0, 0, "a", 0 },
    { STS_RULE_SHAPE, "{'a':{'dtype':'U8','shape':[1.5],'data_offsets':[0,1]}}", 1, "1.5", 0, 0, 0, "a", 0 },
    { STS_RULE_SHAPE, "{'a':{'dtype':'U8','shape':[2.0],'data_offsets':[0,2]}}", 2, "2.0", 0, 0, 0, "a", 0 },
    { STS_RULE_SHAPE, "{'a':{'dtype':'U8','shape':[2e0],'data_offsets':[0,2]}}", 2, "2e0", 0, 0, 0, "a", 0 },
    { STS_RULE_SHAPE, "{'a':{'dtype':'U8','shape':[0,18446744073709551616],'data_offsets':[0,0]}}", 0, "18446744073709551616", 0, 0, 0, "a", 0 },
    { STS_RULE_SHAPE, "{'a':{'dtype':'U8','shape':[0,99999999999999999999999],'data_offsets':[0,0]}}", 0, "9999", 0, 0, 0, "a", 0 },
    { STS_RULE_SHAPE, "{'a':{'dtype':'U8','shape':['1'],'data_offsets':[0,1]}}", 1, "'1'", 0, 0, 0, "a", 0 },
    { STS_RULE_SHAPE, "{'a':{'dtype':'U8','shape':[[1]],'data_offsets':[0,1]}}", 1, "[1]", 0, 0, 0, "a", 0 },
    { STS_RULE_SHAPE, "{'a':{'dtype':'U8','shape':[1,],'data_offsets':[0,1]}}", 1, ",]", 0, 1, 0, "a", 0 },
    { STS_RULE_OFFSETS, "{'a':{'dtype':'U8','shape':[1],'data_offsets':[0]}}", 1, "[0]", 0, 0, 0, "a", 0 },
    { STS_RULE_OFFSETS, "{'a':{'dtype':'U8','shape':[1],'data_offsets':[]}}", 1, "[]", 0, 0, 0, "a", 0 },
    { STS_RULE_OFFSETS, "{'a':{'dtype':'U8','shape':[1],'data_offsets':[0,1,2]}}", 1, "[0,1,2]", 0, 0, 0, "a", 0 },
    { STS_RULE_OFFSETS, "{'a':{'dtype':'U8','shape':[1],'data_offsets':[-0,1]}}", 1, "-0", 0, 0, 0, "a", 0 },
    { STS_RULE_OFFSETS, "{'a':{'dtype':'U8','shape':[1],'data_offsets':[0,1.0]}}", 1, "1.0", 0, 0, 0, "a", 0 },
    { STS_RULE_OFFSETS, "{'a':{'dtype':'U8','shape':[1],'data_offsets':{'b':0}}}", 1, "{'b'", 0, 0, 0, "a", 0 },
    { STS_RULE_OFFSETS, "{'a':{'dtype':'U8','shape':[1],'data_offsets':'0,1'}}", 1, "'0,1'", 0, 0, 0, "a", 0 },
    { STS_RULE_OFFSETS, "{'a':{'dtype':'U8','shape':[1],'data_offsets':[0,18446744073709551616]}}", 1, "1844", 0, 0, 0, "a", 0 },
    { STS_RULE_OFFSETS, "{'a':{'dtype':'U8','shape':[1],'data_offsets':[null,1]}}", 1, "null", 0, 0, 0, "a", 0 },
};
/* What strict mode rejects, each accepted without it. */
static const pcase strict_cases[] = {
    { STS_RULE_STRICT_LEADING_WS, " {}", 0, NULL, 0, 0, 0, NULL, 1 },
    { STS_RULE_STRICT_LEADING_WS, "\n{}", 0, NULL, 0, 0, 0, NULL, 1 },
    { STS_RULE_STRICT_LEADING_WS, "\t\r{'a':" U8_1 "}", 1, NULL, 0, 0, 0, NULL, 1 },
    { STS_RULE_STRICT_PADDING, "{}\t", 0, "\t", 0, 0, 0, NULL, 1 },
    { STS_RULE_STRICT_PADDING, "{}  \n ", 0, "\n", 0, 0, 0, NULL, 1 },
    { STS_RULE_STRICT_PADDING, "{'a':" U8_1 "}   \r", 1, "\r", 0, 0, 0, NULL, 1 },
    { STS_RULE_STRICT_DUPLICATE, "{'a':{'dtype':'U8','shape':[0],'data_offsets':[0,0]},'a':" U8_1 "}", 1, "'a'", 1, 0, 0, "a", 1 },
    { STS_RULE_STRICT_DUPLICATE, "{'a':" U8_1 ",'\\u0061':" U8_1 "}", 1, "'\\u0061'", 0, 0, 0, "a", 1 },
    { STS_RULE_STRICT_DUPLICATE, "{'__metadata__':{'k':'1','j':'2','k':'3'}}", 0, "'k'", 1, 0, 0, "k", 1 },
    { STS_RULE_STRICT_POSITIONAL, "{'a':['U8',[1],[0,1]]}", 1, "[", 0, 0, 0, "a", 1 },
    { STS_RULE_STRICT_UNKNOWN, "{'a':{'dtype':'U8','shape':[1],'data_offsets':[0,1],'x':1}}", 1, "'x'", 0, 0, 0, "a", 1 },
    { STS_RULE_STRICT_UNKNOWN, "{'a':{'dType':'U8','dtype':'U8','shape':[1],'data_offsets':[0,1]}}", 1, "'dType'", 0, 0, 0, "a", 1 },
    { STS_RULE_STRICT_META_NULL, "{'__metadata__':null}", 0, "null", 0, 0, 0, NULL, 1 },
    { STS_RULE_STRICT_NAME_NUL, "{'a\\u0000b':" U8_1 "}", 1, "'a", 0, 0, 0, NULL, 1 },
};

static void test_json_syntax(void **state) { (void)state; run_cases(syntax_cases, sizeof syntax_cases / sizeof *syntax_cases); }
static void test_json_string(void **state) { (void)state; run_cases(string_cases, sizeof string_cases / sizeof *string_cases); }
static void test_json_number(void **state) { (void)state; run_cases(number_cases, sizeof number_cases / sizeof *number_cases); }
static void test_header_object(void **state) { (void)state; run_cases(object_cases, sizeof object_cases / sizeof *object_cases); }
static void test_metadata_rules(void **state) { (void)state; run_cases(metadata_cases, sizeof metadata_cases / sizeof *metadata_cases); }
static void test_entry_rules(void **state) { (void)state; run_cases(entry_cases, sizeof entry_cases / sizeof *entry_cases); }

static void test_strict_rules(void **state) {
    size_t i, n = sizeof strict_cases / sizeof *strict_cases;
    (void)state;
    run_cases(strict_cases, n);
    for (i = 0; i < n; i++) {  /* the same inputs pass without strict */
        cu_img im = cu_img_q(strict_cases[i].q, strict_cases[i].dlen);
        cu_label = strict_cases[i].q;
        sts_close(cu_parse_ok(&im, NULL));
        cu_img_free(&im);
    }
    /* strict accepts what it should: spaces after the object, escapes, unsorted offsets */
    {
        sts_options o;
        memset(&o, 0, sizeof o);
        o.strict = 1;
        cu_json_ok("{}      ", 0, &o);
        {
            char *s = cu_q("{ '__metadata__' : { 'k' : 'v\\u0000' } , 'b\\u00e9' : {'shape':[1],'data_offsets':[1,2],'dtype':'U8'},"
                           "'a':{'dtype':'\\u00558','shape':[1],'data_offsets':[0,1]}}  ");
            cu_json_ok(s, 2, &o);
            free(s);
        }
    }
}

/* The reference's literal-chars whitespace set before and after the object. */
static void test_whitespace_accepted(void **state) {
    sts_file *f;
    cu_img im;
    (void)state;
    cu_json_ok(" \t\r\n{}\n\r\t ", 0, NULL);
    im = cu_img_q("\n{ \n\t'a' :\r\n[ 'U8' ,\t[ 1 ] , [ 0 , 1 ] ] , '__metadata__' : null }\t", 1);
    f = cu_parse_ok(&im, NULL);
    assert_int_equal(sts_count(f), 1);
    assert_int_equal(sts_find(f, "a", 1)->end, 1);
    assert_int_equal(sts_has_metadata(f), 0);
    sts_close(f);
    cu_img_free(&im);
    {   /* NUL padding is not whitespace */
        cu_img z = cu_img_bytes("{}\0\0\0\0\0\0", 8, 0);
        cu_parse_fail(&z, NULL, STS_RULE_JSON_SYNTAX, 10);
        cu_img_free(&z);
    }
}

/* Depth: at most 127 nested containers counting the top-level object, ignored fields too. */
static void depth_image(tu_sb *b, int arrays, int mixed) {
    int i;
    tu_sb_str(b, "{\"a\":{\"dtype\":\"U8\",\"shape\":[],\"data_offsets\":[0,1],\"x\":");
    for (i = 0; i < arrays; i++) tu_sb_str(b, mixed && (i & 1) ? "{\"k\":" : "[");
    tu_sb_str(b, "0");
    for (i = arrays - 1; i >= 0; i--) tu_sb_str(b, mixed && (i & 1) ? "}" : "]");
    tu_sb_str(b, "}}");
}
static void test_json_depth(void **state) {
    int mixed;
    (void)state;
    for (mixed = 0; mixed < 2; mixed++) {
        tu_sb b = { 0 };
        cu_img im;
        sts_error e;
        sts_options o;
        size_t i, opens = 0;
        uint64_t off = 0;
        depth_image(&b, 125, mixed);      /* 1 + 1 + 125 = 127 */
        cu_json_ok(b.p, 1, NULL);
        tu_sb_free(&b);
        depth_image(&b, 126, mixed);      /* 128 */
        im = cu_img_bytes(b.p, b.n, 1);
        /* containers 1 and 2 are the top object and the entry; "x" nests from depth 3, so its
           126th opening is the 128th container */
        for (i = (size_t)(strstr(b.p, "\"x\":") - b.p); i < b.n; i++)
            if ((b.p[i] == '{' || b.p[i] == '[') && ++opens == 126) { off = 8 + i; break; }
        assert_int_equal(opens, 126);
        e = cu_parse_fail(&im, NULL, STS_RULE_JSON_DEPTH, off);
        cu_check_names(&e, "a");
        tu_err_has(cu_label, &e, "127", (const char *)NULL);
        /* a larger limit clamps to 127 */
        memset(&o, 0, sizeof o);
        o.max_depth = 1000;
        cu_parse_fail(&im, &o, STS_RULE_JSON_DEPTH, off);
        o.max_depth = UINT32_MAX;
        cu_parse_fail(&im, &o, STS_RULE_JSON_DEPTH, off);
        cu_img_free(&im);
        tu_sb_free(&b);
    }
    {   /* tightened limits */
        sts_options o;
        cu_img im = cu_img_q("{'a':{'dtype':'U8','shape':[1],'data_offsets':[0,1]}}", 1);
        memset(&o, 0, sizeof o);
        o.max_depth = 3;
        sts_close(cu_parse_ok(&im, &o));
        o.max_depth = 2;
        cu_parse_fail(&im, &o, STS_RULE_JSON_DEPTH, cu_off(&im, "[1]"));
        o.max_depth = 1;
        cu_parse_fail(&im, &o, STS_RULE_JSON_DEPTH, cu_off(&im, "{\"dtype\""));
        cu_img_free(&im);
        im = cu_img_q("{'__metadata__':{}}", 0);
        cu_parse_fail(&im, &o, STS_RULE_JSON_DEPTH, 8 + 16);
        o.max_depth = 2;
        sts_close(cu_parse_ok(&im, &o));
        cu_img_free(&im);
        im = cu_img_q("{'a':['U8',[1],[0,1]]}", 1);  /* positional: top, array, shape */
        o.max_depth = 3;
        sts_close(cu_parse_ok(&im, &o));
        o.max_depth = 2;
        cu_parse_fail(&im, &o, STS_RULE_JSON_DEPTH, cu_off(&im, "[1]"));
        cu_img_free(&im);
    }
}

/* ============================== rules 6-7: offsets and sizes ============================== */

static const pcase validation_cases[] = {
    { STS_RULE_OFFSETS_CONTIGUOUS, "{'a':{'dtype':'U8','shape':[1],'data_offsets':[1,2]}}", 2, "'a'", 0, 0, 0, "a", 0 },
    { STS_RULE_OFFSETS_CONTIGUOUS, "{'a':" U8_1 ",'b':{'dtype':'U8','shape':[1],'data_offsets':[2,3]}}", 3, "'b'", 0, 0, 0, "b", 0 },
    { STS_RULE_OFFSETS_CONTIGUOUS, "{'a':{'dtype':'U8','shape':[2],'data_offsets':[0,2]},'b':{'dtype':'U8','shape':[2],'data_offsets':[1,3]}}", 3, "'b'", 0, 0, 0, "b", 0 },
    { STS_RULE_OFFSETS_CONTIGUOUS, "{'a':" U8_1 ",'b':{'dtype':'U8','shape':[0],'data_offsets':[1,0]}}", 1, "'b'", 0, 0, 0, "b", 0 },
    { STS_RULE_OFFSETS_CONTIGUOUS, "{'a':{'dtype':'U8','shape':[0],'data_offsets':[2,1]}}", 0, "'a'", 0, 0, 0, "a", 0 },
    { STS_RULE_OFFSETS_CONTIGUOUS, "{'a':{'dtype':'F32','shape':[1],'data_offsets':[0,4]},'b':{'dtype':'F32','shape':[1],'data_offsets':[0,4]}}", 4, "'b'", 0, 0, 0, "b", 0 },
    /* errors are found in (begin, end) order, not header order: z comes first in the data */
    { STS_RULE_SIZE_MATCH, "{'b':{'dtype':'U8','shape':[1],'data_offsets':[1,3]},'z':{'dtype':'U8','shape':[2],'data_offsets':[0,1]}}", 3, "'z'", 0, 0, 0, "z", 0 },
    { STS_RULE_NUMEL_OVERFLOW, "{'a':{'dtype':'U8','shape':[" P2_62 ",4,0],'data_offsets':[0,0]}}", 0, "'a'", 0, 0, 0, "a", 0 },
    { STS_RULE_NUMEL_OVERFLOW, "{'a':{'dtype':'BOOL','shape':[4294967296,4294967296],'data_offsets':[0,0]}}", 0, "'a'", 0, 0, 0, "a", 0 },
    { STS_RULE_NUMEL_OVERFLOW, "{'a':['U8',[" P2_62 ",4,0],[0,0]]}", 0, "'a'", 0, 0, 0, "a", 0 },
    { STS_RULE_BITS_OVERFLOW, "{'a':{'dtype':'U8','shape':[" P2_61 "],'data_offsets':[0,0]}}", 0, "'a'", 0, 0, 0, "a", 0 },
    { STS_RULE_BITS_OVERFLOW, "{'a':{'dtype':'F64','shape':[288230376151711744],'data_offsets':[0,0]}}", 0, "'a'", 0, 0, 0, "a", 0 },
    { STS_RULE_BITS_OVERFLOW, "{'a':{'dtype':'F4','shape':[" P2_62 "],'data_offsets':[0,0]}}", 0, "'a'", 0, 0, 0, "a", 0 },
    { STS_RULE_BITS_OVERFLOW, "{'a':{'dtype':'F6_E2M3','shape':[2,1537228672809129302],'data_offsets':[0,0]}}", 0, "'a'", 0, 0, 0, "a", 0 },
    { STS_RULE_BYTE_ALIGNED, "{'a':{'dtype':'F4','shape':[],'data_offsets':[0,0]}}", 0, "'a'", 0, 0, 0, "a", 0 },
    { STS_RULE_BYTE_ALIGNED, "{'a':{'dtype':'F4','shape':[3],'data_offsets':[0,99]}}", 99, "'a'", 0, 0, 0, "a", 0 },
    { STS_RULE_BYTE_ALIGNED, "{'a':{'dtype':'F6_E2M3','shape':[2],'data_offsets':[0,2]}}", 2, "'a'", 0, 0, 0, "a", 0 },
    { STS_RULE_BYTE_ALIGNED, "{'a':{'dtype':'F6_E3M2','shape':[3,2],'data_offsets':[0,5]}}", 5, "'a'", 0, 0, 0, "a", 0 },
    { STS_RULE_SIZE_MATCH, "{'a':{'dtype':'U8','shape':[2],'data_offsets':[0,3]}}", 3, "'a'", 0, 0, 0, "a", 0 },
    { STS_RULE_SIZE_MATCH, "{'a':{'dtype':'F32','shape':[2],'data_offsets':[0,4]}}", 4, "'a'", 0, 0, 0, "a", 0 },
    { STS_RULE_SIZE_MATCH, "{'a':{'dtype':'BOOL','shape':[],'data_offsets':[0,0]}}", 0, "'a'", 0, 0, 0, "a", 0 },
    { STS_RULE_SIZE_MATCH, "{'a':{'dtype':'F4','shape':[4],'data_offsets':[0,4]}}", 4, "'a'", 0, 0, 0, "a", 0 },
    { STS_RULE_SIZE_MATCH, "{'a':{'dtype':'U8','shape':[0],'data_offsets':[0,0]},'b':{'dtype':'C64','shape':[1,1],'data_offsets':[0,4]}}", 4, "'b'", 0, 0, 0, "b", 0 },
    /* the order between rules for one tensor: offsets, numel, bits, alignment, size */
    { STS_RULE_OFFSETS_CONTIGUOUS, "{'a':{'dtype':'U8','shape':[" P2_62 ",4,0],'data_offsets':[1,1]}}", 0, "'a'", 0, 0, 0, "a", 0 },
    { STS_RULE_NUMEL_OVERFLOW, "{'a':{'dtype':'F4','shape':[" P2_62 ",4,3],'data_offsets':[0,7]}}", 7, "'a'", 0, 0, 0, "a", 0 },
    { STS_RULE_BYTE_ALIGNED, "{'a':{'dtype':'F4','shape':[1],'data_offsets':[0,5]}}", 5, "'a'", 0, 0, 0, "a", 0 },
    /* JSON problems come before any offset problem, even later in the header */
    { STS_RULE_ENTRY_TYPE, "{'a':{'dtype':'U8','shape':[1],'data_offsets':[5,6]},'b':1}", 0, "1}", 0, 0, 0, "b", 0 },
    { STS_RULE_JSON_SYNTAX, "{'a':{'dtype':'U8','shape':[" P2_62 ",4,0],'data_offsets':[0,0]},}", 9, ",}", 0, 1, 0, NULL, 0 },
};
static void test_validation_rules(void **state) {
    (void)state;
    run_cases(validation_cases, sizeof validation_cases / sizeof *validation_cases);
}

static void test_validation_accepts(void **state) {
    static const struct { const char *q; size_t dlen; } ok[] = {
        { "{'a':{'dtype':'U8','shape':[" P2_61 ",0],'data_offsets':[0,0]}}", 0 },
        { "{'a':{'dtype':'U8','shape':[0," P2_62 ",4],'data_offsets':[0,0]}}", 0 },
        { "{'a':{'dtype':'U8','shape':[18446744073709551615,0],'data_offsets':[0,0]}}", 0 },
        { "{'a':{'dtype':'F4','shape':[2],'data_offsets':[0,1]}}", 1 },
        { "{'a':{'dtype':'F4','shape':[3,2],'data_offsets':[0,3]}}", 3 },
        { "{'a':{'dtype':'F6_E2M3','shape':[4],'data_offsets':[0,3]}}", 3 },
        { "{'a':{'dtype':'F6_E3M2','shape':[2,4],'data_offsets':[0,6]}}", 6 },
        { "{'a':{'dtype':'U8','shape':[],'data_offsets':[0,1]}}", 1 },
        { "{'a':{'dtype':'C64','shape':[1],'data_offsets':[0,8]},'b':{'dtype':'BOOL','shape':[2],'data_offsets':[8,10]}}", 10 },
        { "{'b':{'dtype':'U8','shape':[2],'data_offsets':[1,3]},'a':" U8_1 "}", 3 },
        { "{'a':{'dtype':'U8','shape':[0],'data_offsets':[0,0]}}", 0 },
        { "{'a':{'dtype':'U8','shape':[1],'data_offsets':[0,1],'x':[{'y':[null,true,false,-1.5e-3,'s']}],'dtype2':{}}}", 1 },
        { "{'a':{'\\u0064type':'\\u0055\\u0038','sh\\u0061pe':[1],'data_\\u006fffsets':[0,1]}}", 1 },
        /* every character escaped: "data_offsets" takes 72 raw bytes, "F8_E5M2FNUZ" 66 */
        { "{'a':{'\\u0064\\u0074\\u0079\\u0070\\u0065':'\\u0046\\u0038\\u005f\\u0045\\u0035\\u004d\\u0032\\u0046\\u004e\\u0055\\u005a',"
          "'\\u0073\\u0068\\u0061\\u0070\\u0065':[1],"
          "'\\u0064\\u0061\\u0074\\u0061\\u005f\\u006f\\u0066\\u0066\\u0073\\u0065\\u0074\\u0073':[0,1]}}", 1 },
        { "{'__metadata__':null,'a':" U8_1 "}", 1 },
        { "{'a':{'dtype':'U8','shape':[1],'data_offsets':[0,1],'x':[1.7976931348623158e308,-1e308,1e-400,0e999999999999,18446744073709551616]}}", 1 },
        { "{'a':{'dtype':'U8','shape':[1],'data_offsets':[0,1],'x':[0.000017976931348623158e313,99999999999999999999e288]}}", 1 },
        { "{}", 0 },
    };
    size_t i;
    (void)state;
    for (i = 0; i < sizeof ok / sizeof *ok; i++) {
        cu_img im = cu_img_q(ok[i].q, ok[i].dlen);
        cu_label = ok[i].q;
        sts_close(cu_parse_ok(&im, NULL));
        cu_img_free(&im);
    }
    {   /* numel in shape order */
        cu_img im = cu_img_q("{'a':{'dtype':'U8','shape':[" P2_61 ",0],'data_offsets':[0,0]}}", 0);
        sts_file *f = cu_parse_ok(&im, NULL);
        const sts_tensor *t = sts_find(f, "a", 1);
        assert_non_null(t);
        assert_int_equal(t->rank, 2);
        assert_true(t->shape[0] == 2305843009213693952ull && t->shape[1] == 0);
        assert_int_equal(sts_tensor_numel(t), 0);
        assert_int_equal(sts_tensor_nbytes(t), 0);
        sts_close(f);
        cu_img_free(&im);
    }
}

/* The largest finite double rounds from below 2^1024 - 2^970; that midpoint itself rounds to
   infinity (ties to even), so it is rejected and one less is accepted. */
static void test_f64_boundary(void **state) {
    static const char mid[] = "17976931348623158079372897140530341507993413271003782693617377898044496829276475094664901797758720709633028641669"
                              "28879109465555478519404026306574886715058206819089020007083836762738548458177115317644757302700698555713669596228"
                              "42914819860834936475292719074168444365510704342711559699508093042880177904174497792";
    char num[400], json[600];
    cu_img im;
    (void)state;
    assert_int_equal(strlen(mid), 309);
    snprintf(json, sizeof json, "{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1],\"x\":%s}}", mid);
    im = cu_img_json(json, 1);
    cu_parse_fail(&im, NULL, STS_RULE_JSON_NUMBER, cu_off(&im, "1797"));
    cu_img_free(&im);
    memcpy(num, mid, sizeof mid);
    num[308] = '1';   /* one below the midpoint */
    snprintf(json, sizeof json, "{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1],\"x\":-%s}}", num);
    cu_json_ok(json, 1, NULL);
    snprintf(json, sizeof json, "{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1],\"x\":%s.0000}}", num);
    cu_json_ok(json, 1, NULL);
    snprintf(json, sizeof json, "{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1],\"x\":%s.0001}}", mid);
    im = cu_img_json(json, 1);
    cu_parse_fail(&im, NULL, STS_RULE_JSON_NUMBER, cu_off(&im, "1797"));
    cu_img_free(&im);
    snprintf(json, sizeof json, "{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1],\"x\":0.%se309}}", num);
    cu_json_ok(json, 1, NULL);
    snprintf(json, sizeof json, "{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1],\"x\":0.%se309}}", mid);
    im = cu_img_json(json, 1);
    cu_parse_fail(&im, NULL, STS_RULE_JSON_NUMBER, cu_off(&im, "0.1797"));
    cu_img_free(&im);
}

static void test_file_size_rule(void **state) {
    cu_img im;
    sts_error e;
    (void)state;
    /* trailing byte: offset = the end of the data section */
    im = cu_img_q("{'a':{'dtype':'U8','shape':[2],'data_offsets':[0,2]}}", 3);
    e = cu_parse_fail(&im, NULL, STS_RULE_FILE_SIZE, 8 + im.hlen + 2);
    tu_err_has(cu_label, &e, "trailing", (const char *)NULL);
    cu_img_free(&im);
    /* truncated: offset = the file size */
    im = cu_img_q("{'a':{'dtype':'U8','shape':[2],'data_offsets':[0,2]}}", 1);
    e = cu_parse_fail(&im, NULL, STS_RULE_FILE_SIZE, im.size);
    tu_err_has(cu_label, &e, "truncated", (const char *)NULL);
    cu_img_free(&im);
    im = cu_img_q("{}", 1);
    cu_parse_fail(&im, NULL, STS_RULE_FILE_SIZE, 8 + 2);
    cu_img_free(&im);
    /* a size near 2^64 does not wrap the total */
    im = cu_img_q("{'a':{'dtype':'U8','shape':[2305843009213693951],'data_offsets':[0,2305843009213693951]}}", 0);
    cu_parse_fail(&im, NULL, STS_RULE_FILE_SIZE, im.size);
    cu_img_free(&im);
    im = cu_img_q("{'a':{'dtype':'U8','shape':[18446744073709551600],'data_offsets':[0,18446744073709551600]}}", 0);
    cu_parse_fail(&im, NULL, STS_RULE_BITS_OVERFLOW, 9);
    cu_img_free(&im);
    /* file-size problems lose to every earlier rule */
    im = cu_img_q("{'a':{'dtype':'U8','shape':[2],'data_offsets':[0,3]}}", 0);
    cu_parse_fail(&im, NULL, STS_RULE_SIZE_MATCH, 9);
    cu_img_free(&im);
}

/* UTF-8 (rule 4) is checked over all N bytes before any JSON: a JSON error before the bad byte
   does not win. */
static void test_rule_order_prefix(void **state) {
    cu_img im;
    (void)state;
    im = cu_img_bytes("{x  \"\xFF\"", 7, 0);
    cu_parse_fail(&im, NULL, STS_RULE_HEADER_UTF8, 8 + 5);
    cu_img_free(&im);
    im = cu_img_bytes("[1,2]  \xC0\x80", 9, 5);
    cu_parse_fail(&im, NULL, STS_RULE_HEADER_UTF8, 8 + 7);
    cu_img_free(&im);
    /* too small beats everything; length beats UTF-8 */
    im = cu_img_raw(50, "\xFF\xFF\xFF\xFF", 4, NULL, 0);
    cu_parse_fail(&im, NULL, STS_RULE_HEADER_LENGTH, 0);
    cu_img_free(&im);
}

/* ============================== duplicates ============================== */

/* The tensor table and the name index are sized from the first entries (sts__tensor_room): a
   header whose first 1,500 entries are short and the rest long (the projection overshoots), or
   the other way round (it falls short: the table grows again), or all short (a KV shard's), or
   checkpoint-sized and then short (the index grows late, when full) loses nothing: every name is
   found at its entry, and a repeat of an early name as the last entry replaces it. */
static size_t projection_name(char *name, size_t cap, int variant, size_t k) {
    static const char x[] = "-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx";
    int early = k < 1500, suffix = 0;
    if (variant == 0) suffix = early ? 0 : 110;
    else if (variant == 1) suffix = early ? 110 : 0;
    else if (variant == 3) suffix = early ? 70 : 0;
    return (size_t)snprintf(name, cap, "n%05zu%.*s", k, suffix, x);
}
static void test_table_projection(void **state) {
    static const size_t N = 5000;
    int variant;
    (void)state;
    for (variant = 0; variant < 4; variant++) {
        size_t cap = N * 220 + 64, at = 0, i;
        char *q = (char *)malloc(cap), name[200];
        cu_img im;
        sts_file *f;
        assert_non_null(q);
        q[at++] = '{';
        for (i = 0; i <= N; i++) {  /* entry N repeats entry 10's name, with its bytes */
            size_t k = i == N ? 10 : i;
            projection_name(name, sizeof name, variant, k);
            at += (size_t)snprintf(q + at, cap - at, "%s'%s':{'dtype':'U8','shape':[1],'data_offsets':[%zu,%zu]}",
                                   i ? "," : "", name, k, k + 1);
            assert_true(at < cap);
        }
        q[at++] = '}';
        q[at] = 0;
        im = cu_img_q(q, N);
        f = cu_parse_ok(&im, NULL);
        assert_int_equal(sts_count(f), N);
        for (i = 0; i < N; i++) {
            size_t len = projection_name(name, sizeof name, variant, i);
            const sts_tensor *t = sts_find(f, name, len);
            if (!t || t->begin != i || t != sts_at(f, i)) fail_msg("variant %d: tensor %s not at entry %zu", variant, name, i);
        }
        sts_close(f);
        cu_img_free(&im);
        free(q);
    }
}

static void test_duplicates(void **state) {
    cu_img im;
    sts_file *f;
    const sts_tensor *t;
    sts_error e;
    (void)state;
    /* the last entry wins; "\u0061" is "a" */
    im = cu_img_q("{'a':{'dtype':'U8','shape':[5],'data_offsets':[0,5]},'\\u0061':{'dtype':'I16','shape':[1],'data_offsets':[0,2]}}", 2);
    f = cu_parse_ok(&im, NULL);
    assert_int_equal(sts_count(f), 1);
    t = sts_find(f, "a", 1);
    assert_non_null(t);
    assert_ptr_equal(t, sts_at(f, 0));
    assert_int_equal(t->dtype, STS_DTYPE_I16);
    assert_int_equal(t->end, 2);
    sts_close(f);
    cu_img_free(&im);
    /* three copies, the middle and first vanish; the other names keep their entries */
    im = cu_img_q("{'a':{'dtype':'U8','shape':[7],'data_offsets':[9,16]},'b':{'dtype':'U8','shape':[1],'data_offsets':[3,4]},"
                  "'a':{'dtype':'U8','shape':[9],'data_offsets':[0,9]},'c':{'dtype':'U8','shape':[3],'data_offsets':[0,3]},"
                  "'a':{'dtype':'U8','shape':[2],'data_offsets':[4,6]}}", 6);
    f = cu_parse_ok(&im, NULL);
    assert_int_equal(sts_count(f), 3);
    assert_ptr_equal(sts_at(f, 0), sts_find(f, "c", 1));
    assert_ptr_equal(sts_at(f, 1), sts_find(f, "b", 1));
    assert_ptr_equal(sts_at(f, 2), sts_find(f, "a", 1));
    assert_int_equal(sts_find(f, "a", 1)->begin, 4);
    assert_int_equal(sts_find(f, "a", 1)->shape[0], 2);
    assert_int_equal(sts_find(f, "b", 1)->shape[0], 1);
    assert_int_equal(sts_find(f, "c", 1)->shape[0], 3);
    assert_ptr_equal((const uint8_t *)sts_data(f, sts_find(f, "a", 1)), im.p + 8 + im.hlen + 4);
    sts_close(f);
    cu_img_free(&im);
    /* the earlier copy's bytes leave a hole: InvalidOffset naming the tensor after the hole */
    im = cu_img_q("{'a':" U8_1 ",'b':{'dtype':'U8','shape':[1],'data_offsets':[1,2]},'a':{'dtype':'U8','shape':[1],'data_offsets':[2,3]}}", 3);
    e = cu_parse_fail(&im, NULL, STS_RULE_OFFSETS_CONTIGUOUS, cu_off(&im, "\"b\""));
    cu_check_names(&e, "b");
    cu_img_free(&im);
    /* an earlier broken copy does not matter once replaced (its dtype and shape were valid JSON) */
    im = cu_img_q("{'a':{'dtype':'F4','shape':[3],'data_offsets':[7,1]},'a':" U8_1 "}", 1);
    f = cu_parse_ok(&im, NULL);
    assert_int_equal(sts_count(f), 1);
    sts_close(f);
    cu_img_free(&im);
    /* but a JSON-level problem in an earlier copy still fails */
    im = cu_img_q("{'a':{'dtype':'X','shape':[1],'data_offsets':[0,1]},'a':" U8_1 "}", 1);
    cu_parse_fail(&im, NULL, STS_RULE_DTYPE, cu_off(&im, "\"X\""));
    cu_img_free(&im);
}

/* ============================== names ============================== */

static void test_names(void **state) {
    cu_img im;
    sts_file *f;
    const sts_tensor *t;
    size_t i;
    (void)state;
    im = cu_img_q("{'a\\u0000b':{'dtype':'U8','shape':[1],'data_offsets':[0,1]},'a':{'dtype':'U8','shape':[1],'data_offsets':[1,2]},"
                  "'':{'dtype':'U8','shape':[1],'data_offsets':[2,3]},"
                  "'\\'\\\\\\/\\b\\f\\n\\r\\t\\u00e9\\ud83d\\ude00\\u00E9':{'dtype':'U8','shape':[1],'data_offsets':[3,4]},"
                  "'caf\xC3\xA9':{'dtype':'U8','shape':[1],'data_offsets':[4,5]},"
                  "'a\\u0000':{'dtype':'U8','shape':[1],'data_offsets':[5,6]}}", 6);
    f = cu_parse_ok(&im, NULL);
    assert_int_equal(sts_count(f), 6);
    t = sts_find(f, "a\0b", 3);
    assert_non_null(t);
    assert_int_equal(t->name_len, 3);
    assert_memory_equal(t->name, "a\0b", 3);
    assert_int_equal(t->begin, 0);
    assert_int_equal(sts_find(f, "a", 1)->begin, 1);
    assert_int_equal(sts_find(f, "a\0", 2)->begin, 5);
    assert_null(sts_find(f, "a\0c", 3));
    assert_null(sts_find(f, "ab", 2));
    assert_int_equal(sts_find(f, "", 0)->begin, 2);
    assert_int_equal(sts_find(f, NULL, 0)->begin, 2);
    assert_null(sts_find(f, NULL, 3));
    t = sts_find(f, "\"\\/\b\f\n\r\t\xC3\xA9\xF0\x9F\x98\x80\xC3\xA9", 16);
    assert_non_null(t);
    assert_int_equal(t->begin, 3);
    t = sts_find(f, "caf\xC3\xA9", 5);
    assert_non_null(t);
    assert_int_equal(t->begin, 4);
    /* an unescaped name points into the caller's bytes (zero-copy) */
    assert_true((const uint8_t *)t->name > im.p && (const uint8_t *)t->name < im.p + 8 + im.hlen);
    for (i = 0; i < sts_count(f); i++) assert_ptr_equal(sts_find(f, sts_at(f, i)->name, sts_at(f, i)->name_len), sts_at(f, i));
    sts_close(f);
    cu_img_free(&im);
}

static int msg_is_utf8(const char *m) {
    const uint8_t *s = (const uint8_t *)m;
    size_t k = 0, n = strlen(m);
    while (k < n) {  /* only ASCII and U+00E9 occur in these tests */
        if (s[k] < 0x80) { k++; continue; }
        if (!(s[k] == 0xC3 && k + 1 < n && s[k + 1] == 0xA9)) return 0;
        k += 2;
    }
    return 1;
}
/* Messages quote names safely: control characters escaped, long names cut at a character
   boundary, the whole message within 256 bytes. */
static void test_message_quoting(void **state) {
    tu_sb b = { 0 };
    cu_img im;
    sts_error e;
    int i;
    (void)state;
    im = cu_img_q("{'x\\ny\\tz':{'dtype':'U8','shape':[1],'data_offsets':[1,2]}}", 2);
    e = cu_parse_fail(&im, NULL, STS_RULE_OFFSETS_CONTIGUOUS, 9);
    tu_err_has(cu_label, &e, "\"x\\u000ay\\u0009z\"", (const char *)NULL);
    cu_img_free(&im);
    tu_sb_str(&b, "{\"");
    for (i = 0; i < 150; i++) tu_sb_str(&b, "\xC3\xA9");
    tu_sb_str(&b, "\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[1,2]}}");
    im = cu_img_bytes(b.p, b.n, 2);
    e = cu_parse_fail(&im, NULL, STS_RULE_OFFSETS_CONTIGUOUS, 9);
    assert_true(strlen(e.message) < 256);
    assert_true(msg_is_utf8(e.message));
    tu_err_has(cu_label, &e, "...", (const char *)NULL);
    cu_img_free(&im);
    tu_sb_free(&b);
    /* a name whose quoted form (control characters become \u00XX) reaches the 255-byte cap in
       the middle of a multi-byte character: the message must still be valid UTF-8 */
    for (i = 30; i <= 45; i++) {
        int k;
        tu_sb_str(&b, "{\"");
        for (k = 0; k < i; k++) tu_sb_str(&b, "\\u0001");
        for (k = 0; k < 20; k++) tu_sb_str(&b, "\xC3\xA9");
        tu_sb_str(&b, "\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[1,2]}}");
        im = cu_img_bytes(b.p, b.n, 2);
        e = cu_parse_fail(&im, NULL, STS_RULE_OFFSETS_CONTIGUOUS, 9);
        cu_img_free(&im);
        tu_sb_free(&b);
        assert_true(strlen(e.message) <= 255);
        if (!msg_is_utf8(e.message))
            fail_msg("%d control characters: the message ends inside a UTF-8 sequence: %s", i, e.message);
    }
}

/* ============================== metadata ============================== */

static void test_metadata(void **state) {
    cu_img im;
    sts_file *f;
    const sts_kv *kv;
    (void)state;
    /* null = absent */
    im = cu_img_q("{'__metadata__':null}", 0);
    f = cu_parse_ok(&im, NULL);
    assert_int_equal(sts_has_metadata(f), 0);
    assert_int_equal(sts_metadata_count(f), 0);
    assert_null(sts_metadata_find(f, "k", 1));
    assert_null(sts_metadata_at(f, 0));
    sts_close(f);
    cu_img_free(&im);
    /* absent */
    im = cu_img_q("{}", 0);
    f = cu_parse_ok(&im, NULL);
    assert_int_equal(sts_has_metadata(f), 0);
    sts_close(f);
    cu_img_free(&im);
    /* {} = present but empty */
    im = cu_img_q("{'__metadata__':{}}", 0);
    f = cu_parse_ok(&im, NULL);
    assert_int_equal(sts_has_metadata(f), 1);
    assert_int_equal(sts_metadata_count(f), 0);
    assert_null(sts_metadata_find(f, "", 0));
    sts_close(f);
    cu_img_free(&im);
    /* duplicates: the last wins, order = header order of the survivors; escaped keys */
    im = cu_img_q("{'a':" U8_1 ",'__metadata__':{'k':'1','j':'2','\\u006b':'3','n\\u0000':'x\\u0000y','':'empty','format':'pt'}}", 1);
    f = cu_parse_ok(&im, NULL);
    assert_int_equal(sts_has_metadata(f), 1);
    assert_int_equal(sts_metadata_count(f), 5);
    kv = sts_metadata_find(f, "k", 1);
    assert_non_null(kv);
    assert_int_equal(kv->value_len, 1);
    assert_memory_equal(kv->value, "3", 1);
    kv = sts_metadata_at(f, 0);
    assert_true(kv->key_len == 1 && kv->key[0] == 'j' && kv->value[0] == '2');
    kv = sts_metadata_at(f, 1);
    assert_true(kv->key_len == 1 && kv->key[0] == 'k' && kv->value[0] == '3');
    kv = sts_metadata_find(f, "n\0", 2);
    assert_non_null(kv);
    assert_int_equal(kv->value_len, 3);
    assert_memory_equal(kv->value, "x\0y", 3);
    assert_null(sts_metadata_find(f, "n", 1));
    kv = sts_metadata_find(f, "", 0);
    assert_non_null(kv);
    assert_memory_equal(kv->value, "empty", 5);
    kv = sts_metadata_find(f, "format", 6);
    assert_non_null(kv);
    assert_ptr_equal(kv, sts_metadata_at(f, 4));
    assert_true(kv->value_len == 2 && memcmp(kv->value, "pt", 2) == 0);
    assert_null(sts_metadata_find(f, "formats", 7));
    assert_null(sts_metadata_find(f, "forma", 5));
    assert_null(sts_metadata_at(f, 5));
    sts_close(f);
    cu_img_free(&im);
    {   /* many keys, many duplicates: every key findable, values from the last copy */
        tu_sb b = { 0 };
        int i, n = 300;
        tu_sb_str(&b, "{\"__metadata__\":{");
        for (i = 0; i < 2 * n; i++) tu_sb_printf(&b, "%s\"key%d\":\"v%d\"", i ? "," : "", i % n, i);
        tu_sb_str(&b, "}}");
        im = cu_img_bytes(b.p, b.n, 0);
        f = cu_parse_ok(&im, NULL);
        assert_int_equal(sts_metadata_count(f), n);
        for (i = 0; i < n; i++) {
            char k[16], v[16];
            int kl = snprintf(k, sizeof k, "key%d", i), vl = snprintf(v, sizeof v, "v%d", i + n);
            kv = sts_metadata_find(f, k, (size_t)kl);
            assert_non_null(kv);
            assert_int_equal(kv->value_len, vl);
            assert_memory_equal(kv->value, v, (size_t)vl);
            assert_ptr_equal(kv, sts_metadata_at(f, (size_t)i));
        }
        sts_close(f);
        cu_img_free(&im);
        tu_sb_free(&b);
    }
}

/* ============================== order and lookup ============================== */

static void test_at_order(void **state) {
    cu_img im;
    sts_file *f;
    static const char *const want1[] = { "z", "y", "a", "c" };
    static const char *const want2[] = { "y", "z", "a", "c" };
    size_t i;
    (void)state;
    /* (begin, end) order, equal empty tensors in header order */
    im = cu_img_q("{'c':{'dtype':'U8','shape':[2],'data_offsets':[1,3]},'z':{'dtype':'U8','shape':[0],'data_offsets':[0,0]},"
                  "'a':" U8_1 ",'y':{'dtype':'U8','shape':[0],'data_offsets':[0,0]}}", 3);
    f = cu_parse_ok(&im, NULL);
    for (i = 0; i < 4; i++) {
        assert_int_equal(sts_at(f, i)->name_len, 1);
        assert_int_equal(sts_at(f, i)->name[0], want1[i][0]);
    }
    assert_null(sts_at(f, 4));
    sts_close(f);
    cu_img_free(&im);
    im = cu_img_q("{'y':{'dtype':'U8','shape':[0],'data_offsets':[0,0]},'c':{'dtype':'U8','shape':[2],'data_offsets':[1,3]},"
                  "'z':{'dtype':'U8','shape':[0],'data_offsets':[0,0]},'a':" U8_1 "}", 3);
    f = cu_parse_ok(&im, NULL);
    for (i = 0; i < 4; i++) assert_int_equal(sts_at(f, i)->name[0], want2[i][0]);
    sts_close(f);
    cu_img_free(&im);
    /* already sorted input keeps header order too */
    im = cu_img_q("{'q':{'dtype':'U8','shape':[0],'data_offsets':[0,0]},'p':{'dtype':'U8','shape':[0],'data_offsets':[0,0]},"
                  "'o':" U8_1 "}", 1);
    f = cu_parse_ok(&im, NULL);
    assert_int_equal(sts_at(f, 0)->name[0], 'q');
    assert_int_equal(sts_at(f, 1)->name[0], 'p');
    assert_int_equal(sts_at(f, 2)->name[0], 'o');
    sts_close(f);
    cu_img_free(&im);
    {   /* a larger reversed file: order by offsets; with duplicates forcing the sort path */
        int dup;
        for (dup = 0; dup < 2; dup++) {
            tu_sb b = { 0 };
            int n = 257, k;
            tu_sb_str(&b, "{");
            if (dup) tu_sb_str(&b, "\"t0\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[0,0]},");
            for (k = n - 1; k >= 0; k--)
                tu_sb_printf(&b, "\"t%d\":{\"dtype\":\"I16\",\"shape\":[1],\"data_offsets\":[%d,%d]}%s", k, 2 * k, 2 * k + 2, k ? "," : "");
            tu_sb_str(&b, "}");
            im = cu_img_bytes(b.p, b.n, (size_t)(2 * n));
            f = cu_parse_ok(&im, NULL);
            assert_int_equal(sts_count(f), n);
            for (k = 0; k < n; k++) {
                char nm[16];
                int l = snprintf(nm, sizeof nm, "t%d", k);
                const sts_tensor *t = sts_at(f, (size_t)k);
                assert_int_equal(t->begin, 2 * k);
                assert_int_equal(t->name_len, l);
                assert_memory_equal(t->name, nm, (size_t)l);
                assert_ptr_equal(sts_find(f, nm, (size_t)l), t);
                assert_ptr_equal(sts_data(f, t), im.p + 8 + im.hlen + 2 * k);
                assert_int_equal(sts_tensor_file_offset(f, t), 8 + im.hlen + 2 * (uint64_t)k);
            }
            sts_close(f);
            cu_img_free(&im);
            tu_sb_free(&b);
        }
    }
}

static sts_file *many_file(size_t n, char (*names)[16], size_t *lens, void **bytes, size_t *size) {
    sts_tensor_spec *specs = (sts_tensor_spec *)calloc(n, sizeof *specs);
    static const uint64_t zero[1] = { 0 };
    sts_file *f;
    sts_error e;
    size_t i;
    assert_non_null(specs);
    for (i = 0; i < n; i++) {
        lens[i] = (size_t)snprintf(names[i], 16, "layer.%zu.w", i * 2654435761u % 1000003u);
        specs[i].name = names[i];
        specs[i].name_len = lens[i];
        specs[i].dtype = STS_DTYPE_U8;
        specs[i].rank = 1;
        specs[i].shape = zero;
    }
    assert_int_equal(sts_write_memory(specs, n, NULL, 0, NULL, bytes, size, &e), STS_OK);
    free(specs);
    assert_int_equal(sts_parse(*bytes, *size, NULL, &f, &e), STS_OK);
    assert_int_equal(sts_count(f), n);
    return f;
}

/* The fast path's digit reader (eight bytes a step) against a byte-at-a-time reading: every
   length from 1 to 24 digits, every stop byte class, leading zeros, and every position of the
   number against the end of the buffer (the last bytes are read one at a time). */
static void test_fast_u64(void **state) {
    static const char stops[] = ",]}: /\x00\xff\x80\xb0\xba" "9";
    uint64_t rng = 0x9E3779B97F4A7C15ull;
    size_t len, st, tail, trial;
    (void)state;
    for (len = 1; len <= 24; len++)
        for (st = 0; st < sizeof stops - 1; st++)
            for (tail = 0; tail <= 17; tail++)
                for (trial = 0; trial < 8; trial++) {
                    uint8_t buf[64];
                    uint64_t want = 0, got = 0;
                    size_t i, n, total = len + 1 + tail, want_n;
                    int over = 0;
                    for (i = 0; i < len; i++) {
                        rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
                        buf[i] = (uint8_t)('0' + (trial == 1 && i == 0 ? 0 : rng % 10));
                    }
                    buf[len] = (uint8_t)stops[st];
                    for (i = len + 1; i < total; i++) buf[i] = (uint8_t)('0' + i % 10);
                    for (i = 0; i < len; i++) {
                        if (want > (UINT64_MAX - 9) / 10) over = 1;
                        want = want * 10 + (uint64_t)(buf[i] - '0');
                    }
                    /* the fast path takes 1 to 19 digits without a leading zero, then ',' or ']' */
                    want_n = (len <= 19 && !over && !(buf[0] == '0' && len > 1) && len < total &&
                              (buf[len] == ',' || buf[len] == ']')) ? len : 0;
                    n = sts__fast_u64(buf, buf + total, &got);
                    if (n != want_n || (n && got != want))
                        fail_msg("len %zu stop %x tail %zu: got %zu digits = %llu, want %zu = %llu", len,
                                 (unsigned)(uint8_t)stops[st], tail, n, (unsigned long long)got, want_n,
                                 (unsigned long long)want);
                }
}

static void test_find_many(void **state) {
    size_t big = 100000, small = 1000, i;
    char (*names)[16] = (char (*)[16])malloc(big * 16);
    size_t *lens = (size_t *)malloc(big * sizeof *lens);
    void *b1 = NULL, *b2 = NULL;  /* set by sts_write_memory; NULL for gcc -O1 maybe-uninitialized */
    size_t s1 = 0, s2 = 0;
    sts_file *f1, *f2;
    (void)state;
    assert_non_null(names);
    assert_non_null(lens);
    f1 = many_file(big, names, lens, &b1, &s1);
    for (i = 0; i < big; i++) {
        const sts_tensor *t = sts_find(f1, names[i], lens[i]);
        assert_non_null(t);
        assert_int_equal(t->name_len, lens[i]);
        assert_memory_equal(t->name, names[i], lens[i]);
    }
    for (i = 0; i < 1000; i++) {  /* absent names, including prefixes and extensions of present ones */
        char nm[24];
        int l = snprintf(nm, sizeof nm, "layer.%zu.w", (size_t)1000003u + i);
        assert_null(sts_find(f1, nm, (size_t)l));
        assert_null(sts_find(f1, names[i], lens[i] - 1));
        memcpy(nm, names[i], lens[i]);
        nm[lens[i]] = 'x';
        assert_null(sts_find(f1, nm, lens[i] + 1));
    }
    {   /* O(1), deterministically (speed belongs in bench/): the name index keeps its load at most
           4/5, a hit scans few slots and a miss scans one short run; the hash tag in each slot
           spares a miss almost every name comparison. White box: every item's distance from its
           home slot, and from every slot the run to the next empty one. */
        size_t cap = f1->index.mask + 1, used = 0, longest = 0, hit_probes = 0, miss_probes = 0, tag_equal = 0;
        uint32_t tags = f1->index.tags;
        assert_true(tags != 0);
        for (i = 0; i < cap; i++) {
            uint32_t s = f1->index.slots[i];
            const sts_tensor *t;
            uint64_t h;
            size_t dist;
            if (s == 0xffffffffu) continue;
            used++;
            t = &f1->tensors[s & ~tags];
            h = sts__hash(t->name, t->name_len, f1->seed);
            assert_int_equal(s & tags, (uint32_t)(h >> 32) & tags);
            dist = (i - ((size_t)h & f1->index.mask)) & f1->index.mask;
            hit_probes += dist + 1;
            if (dist + 1 > longest) longest = dist + 1;
        }
        assert_int_equal(used, big);
        assert_true(cap / 5 * 4 >= big);
        for (i = 0; i < cap; i++) {  /* a miss whose hash lands on slot i */
            size_t p = i;
            for (;;) {
                uint32_t s = f1->index.slots[p];
                miss_probes++;
                if (s == 0xffffffffu) break;
                if ((s & tags) == ((uint32_t)(i * 2654435761u) & tags)) tag_equal++;  /* a tag spread over all */
                p = (p + 1) & f1->index.mask;
            }
        }
        print_message("sts_find: %zu names in %zu slots; a hit scans %.2f slots (longest %zu), a miss %.2f slots "
                      "and compares %.4f names\n", big, cap, (double)hit_probes / (double)big, longest,
                      (double)miss_probes / (double)cap, (double)tag_equal / (double)cap);
        assert_true((double)hit_probes / (double)big < 4.0);    /* linear probing at 4/5: 3 on average */
        assert_true(longest < 512);
        assert_true((double)miss_probes / (double)cap < 16.0);  /* 13 at 4/5 */
        assert_true((double)tag_equal / (double)cap < 0.01);
    }
    (void)f2; (void)b2; (void)s2; (void)small;
    sts_close(f1);
    sts_free(NULL, b1, s1);
    free(names);
    free(lens);
}

/* ============================== header-only, accessors, arguments ============================== */

static void test_header_only(void **state) {
    cu_img im = cu_img_q("{'__metadata__':{'k':'v'},'b':{'dtype':'F32','shape':[2],'data_offsets':[4,12]},"
                         "'a':{'dtype':'U8','shape':[4],'data_offsets':[0,4]}}", 12);
    sts_file *f;
    sts_error e;
    sts_options o;
    const sts_tensor *t;
    (void)state;
    /* from a prefix holding exactly 8 + N bytes */
    f = (sts_file *)(uintptr_t)1;
    assert_int_equal(sts_parse_header(im.p, 8 + im.hlen, im.size, NULL, &f, &e), STS_OK);
    assert_int_equal(e.code, STS_OK);
    assert_int_equal(sts_count(f), 2);
    t = sts_find(f, "b", 1);
    assert_non_null(t);
    assert_null(sts_data(f, t));
    assert_int_equal(sts_tensor_file_offset(f, t), 8 + im.hlen + 4);
    assert_int_equal(sts_tensor_file_offset(f, sts_find(f, "a", 1)), 8 + im.hlen);
    assert_int_equal(sts_header_size(f), im.hlen);
    assert_int_equal(sts_file_size(f), im.size);
    assert_int_equal(sts_metadata_find(f, "k", 1)->value[0], 'v');
    sts_close(f);
    /* the file size is still validated */
    f = (sts_file *)(uintptr_t)1;
    assert_int_equal(sts_parse_header(im.p, 8 + im.hlen, im.size + 1, NULL, &f, &e), STS_ERR_METADATA_INCOMPLETE_BUFFER);
    assert_int_equal(e.rule, STS_RULE_FILE_SIZE);
    assert_int_equal(e.offset, im.size);
    assert_ptr_equal(f, (sts_file *)(uintptr_t)1);
    assert_int_equal(sts_parse_header(im.p, 8 + im.hlen, im.size - 1, NULL, &f, &e), STS_ERR_METADATA_INCOMPLETE_BUFFER);
    assert_int_equal(e.offset, im.size - 1);
    /* a prefix shorter than 8 + N is an argument error, not a verdict on the file */
    assert_int_equal(sts_parse_header(im.p, 8 + im.hlen - 1, im.size, NULL, &f, &e), STS_ERR_INVALID_ARGUMENT);
    assert_int_equal(e.rule, STS_RULE_ARGUMENT);
    tu_err_has(cu_label, &e, (const char *)NULL);
    assert_int_equal(sts_parse_header(im.p, 7, im.size, NULL, &f, &e), STS_ERR_INVALID_ARGUMENT);
    assert_int_equal(sts_parse_header(im.p, 8, 5, NULL, &f, &e), STS_ERR_HEADER_TOO_SMALL);
    assert_int_equal(sts_parse_header(im.p, 8 + im.hlen, 8 + im.hlen - 1, NULL, &f, &e), STS_ERR_INVALID_HEADER_LENGTH);
    assert_int_equal(sts_parse_header(NULL, 0, 4, NULL, &f, &e), STS_ERR_HEADER_TOO_SMALL);
    assert_int_equal(sts_parse_header(NULL, 9, 4, NULL, &f, &e), STS_ERR_INVALID_ARGUMENT);
    assert_int_equal(sts_parse_header(im.p, 8 + im.hlen, im.size, NULL, NULL, &e), STS_ERR_INVALID_ARGUMENT);
    assert_ptr_equal(f, (sts_file *)(uintptr_t)1);
    /* sts_parse with header_only: no data pointers either */
    memset(&o, 0, sizeof o);
    o.header_only = 1;
    assert_int_equal(sts_parse(im.p, im.size, &o, &f, &e), STS_OK);
    assert_null(sts_data(f, sts_find(f, "a", 1)));
    assert_int_equal(sts_tensor_file_offset(f, sts_find(f, "a", 1)), 8 + im.hlen);
    sts_close(f);
    /* and without it, data points into the caller's bytes */
    assert_int_equal(sts_parse(im.p, im.size, NULL, &f, &e), STS_OK);
    assert_ptr_equal(sts_data(f, sts_find(f, "b", 1)), im.p + 8 + im.hlen + 4);
    assert_ptr_equal(sts_data(f, sts_find(f, "a", 1)), im.p + 8 + im.hlen);
    assert_null(sts_data(f, NULL));
    sts_close(f);
    cu_img_free(&im);
}

static void test_accessors_null_and_args(void **state) {
    sts_file *f = (sts_file *)(uintptr_t)1;
    sts_error e;
    sts_tensor t;
    uint64_t shape[3] = { 2, 3, 4 };
    sts_options o;
    (void)state;
    assert_int_equal(sts_count(NULL), 0);
    assert_null(sts_at(NULL, 0));
    assert_null(sts_find(NULL, "a", 1));
    assert_null(sts_data(NULL, NULL));
    assert_int_equal(sts_tensor_nbytes(NULL), 0);
    assert_int_equal(sts_tensor_numel(NULL), 0);
    assert_int_equal(sts_tensor_file_offset(NULL, NULL), 0);
    assert_int_equal(sts_header_size(NULL), 0);
    assert_int_equal(sts_file_size(NULL), 0);
    assert_int_equal(sts_has_metadata(NULL), 0);
    assert_int_equal(sts_metadata_count(NULL), 0);
    assert_null(sts_metadata_at(NULL, 0));
    assert_null(sts_metadata_find(NULL, "k", 1));
    sts_close(NULL);
    memset(&t, 0, sizeof t);
    t.rank = 3; t.shape = shape; t.begin = 10; t.end = 34;
    assert_int_equal(sts_tensor_numel(&t), 24);
    assert_int_equal(sts_tensor_nbytes(&t), 24);
    t.rank = 0;
    assert_int_equal(sts_tensor_numel(&t), 1);
    /* argument errors */
    assert_int_equal(sts_parse(NULL, 16, NULL, &f, &e), STS_ERR_INVALID_ARGUMENT);
    assert_int_equal(e.rule, STS_RULE_ARGUMENT);
    assert_int_equal(e.offset, STS_OFFSET_UNKNOWN);
    tu_err_has(cu_label, &e, (const char *)NULL);
    assert_int_equal(sts_parse("\2\0\0\0\0\0\0\0{}", 10, NULL, NULL, &e), STS_ERR_INVALID_ARGUMENT);
    memset(&o, 0, sizeof o);
    o.allocator.alloc = tu_a_alloc;   /* one hook of three */
    assert_int_equal(sts_parse("\2\0\0\0\0\0\0\0{}", 10, &o, &f, &e), STS_ERR_INVALID_ARGUMENT);
    assert_int_equal(e.rule, STS_RULE_ARGUMENT);
    assert_ptr_equal(f, (sts_file *)(uintptr_t)1);
    /* an empty file works with a NULL error pointer, and success clears the error */
    cu_err_poison(&e);
    assert_int_equal(sts_parse("\2\0\0\0\0\0\0\0{}", 10, NULL, &f, &e), STS_OK);
    assert_int_equal(e.code, STS_OK);
    assert_int_equal(e.rule, STS_RULE_NONE);
    assert_int_equal(e.offset, STS_OFFSET_UNKNOWN);
    assert_string_equal(e.message, "");
    assert_int_equal(sts_count(f), 0);
    assert_null(sts_at(f, 0));
    assert_null(sts_find(f, "", 0));
    assert_int_equal(sts_header_size(f), 2);
    assert_int_equal(sts_file_size(f), 10);
    sts_close(f);
    assert_int_equal(sts_parse("\2\0\0\0\0\0\0\0{}", 10, NULL, &f, NULL), STS_OK);
    sts_close(f);
}

/* A fixed hash seed changes nothing visible; names still resolve. */
/* The name index's probe (four slots a step where SSE2 is, else one) against a plain linear scan,
   white box: small tagged tables filled to their 4/5 load with hashes chosen to pile up (homes
   near the end, so runs wrap; tags that collide, so names are compared), then every name looked
   up, and names that are absent. */
typedef struct probe_item { const char *name; size_t len; } probe_item;
static size_t probe_model(const sts__index *ix, const probe_item *items, uint64_t h, const char *name, size_t len) {
    size_t pos = (size_t)h & ix->mask;
    for (;;) {
        uint32_t s = ix->slots[pos];
        if (s == 0xffffffffu) return pos;
        if ((s & ix->tags) == ((uint32_t)(h >> 32) & ix->tags) && items[s & ~ix->tags].len == len &&
            memcmp(items[s & ~ix->tags].name, name, len) == 0)
            return pos;
        pos = (pos + 1) & ix->mask;
    }
}
static void test_index_probe(void **state) {
    static char names[200][8];
    probe_item items[200];
    uint64_t hs[200];
    size_t caps[] = { 8, 16, 32, 64, 128 }, ci, i, round;
    sts__mem m;
    (void)state;
    memset(&m, 0, sizeof m);
    for (i = 0; i < 200; i++) {
        snprintf(names[i], sizeof names[i], "n%zu", i);
        items[i].name = names[i];
        items[i].len = strlen(names[i]);
    }
    for (ci = 0; ci < sizeof caps / sizeof caps[0]; ci++)
        for (round = 0; round < 6; round++) {
            sts__index ix;
            sts__names k;
            size_t n, cap;
            assert_true(sts__index_init_tagged(&m, &ix, caps[ci] / 5 * 4));
            cap = ix.mask + 1;
            n = sts__index_room(&ix);
            k.items = items; k.stride = sizeof items[0];
            k.ptr_off = offsetof(probe_item, name); k.len_off = offsetof(probe_item, len);
            k.hashes = NULL; k.hash_stride = 0;
            for (i = 0; i < n; i++) {
                size_t pos;
                uint64_t home = round % 3 == 0 ? cap - 1 - i % 3 : round % 3 == 1 ? (i * 7) % cap : cap - 2;
                uint64_t tag = round < 3 ? 0x5a5a5a5au : (uint64_t)(i % 2) * 0xffffffffu;  /* 1s: as the empty slot */
                hs[i] = tag << 32 | home;
                pos = sts__index_probe(&ix, &k, hs[i], items[i].name, items[i].len);
                assert_int_equal(pos, probe_model(&ix, items, hs[i], items[i].name, items[i].len));
                assert_int_equal(ix.slots[pos], 0xffffffffu);
                sts__index_put(&ix, pos, (uint32_t)i, hs[i]);
            }
            for (i = 0; i < n; i++) {  /* each found where it was put */
                size_t pos = sts__index_probe(&ix, &k, hs[i], items[i].name, items[i].len);
                assert_int_equal(pos, probe_model(&ix, items, hs[i], items[i].name, items[i].len));
                assert_int_equal(sts__index_item(&ix, pos), (uint32_t)i);
            }
            for (i = 0; i < cap; i++) {  /* absent names, from every home: the first empty slot */
                uint64_t h = (uint64_t)(i % 2 ? 0x5a5a5a5au : 0xffffffffu) << 32 | i;
                size_t pos = sts__index_probe(&ix, &k, h, "absent", 6);
                assert_int_equal(pos, probe_model(&ix, items, h, "absent", 6));
                assert_int_equal(ix.slots[pos], 0xffffffffu);
            }
            sts__index_free(&m, &ix);
        }
}
static void test_hash_seed(void **state) {
    cu_img im = cu_img_q("{'a':" U8_1 ",'b':{'dtype':'U8','shape':[1],'data_offsets':[1,2]},'__metadata__':{'m':'1','n':'2'}}", 2);
    uint64_t seeds[4] = { 0, 1, 42, UINT64_MAX };
    int i;
    (void)state;
    for (i = 0; i < 4; i++) {
        sts_options o;
        sts_file *f;
        memset(&o, 0, sizeof o);
        o.hash_seed = seeds[i];
        f = cu_parse_ok(&im, &o);
        assert_int_equal(sts_find(f, "b", 1)->begin, 1);
        assert_int_equal(sts_find(f, "a", 1)->begin, 0);
        assert_null(sts_find(f, "c", 1));
        assert_int_equal(sts_metadata_find(f, "n", 1)->value[0], '2');
        sts_close(f);
    }
    cu_img_free(&im);
}

/* Every dtype parses with a legal size and reports its name and shape. */
static void test_all_dtypes_parse(void **state) {
    int d;
    (void)state;
    for (d = 0; d < (int)STS_DTYPE_COUNT; d++) {
        char json[160];
        unsigned bits = sts_dtype_bits((sts_dtype)d);
        uint64_t bytes = 8 * (uint64_t)bits / 8;
        cu_img im;
        sts_file *f;
        const sts_tensor *t;
        snprintf(json, sizeof json, "{\"t\":{\"dtype\":\"%s\",\"shape\":[2,4],\"data_offsets\":[0,%llu]}}", sts_dtype_name((sts_dtype)d),
                 (unsigned long long)bytes);
        im = cu_img_json(json, (size_t)bytes);
        f = cu_parse_ok(&im, NULL);
        t = sts_find(f, "t", 1);
        assert_int_equal(t->dtype, d);
        assert_int_equal(t->rank, 2);
        assert_int_equal(sts_tensor_numel(t), 8);
        assert_int_equal(sts_tensor_nbytes(t), bytes);
        sts_close(f);
        cu_img_free(&im);
    }
}

/* Every rule of the format, from file.too_small to file.size, has a case that breaks it: the
   tables above plus the rules with tests of their own. A new rule without a case fails here. */
static void test_every_format_rule_covered(void **state) {
    static const struct { const pcase *c; size_t n; } tabs[] = {
        { syntax_cases, sizeof syntax_cases / sizeof *syntax_cases }, { string_cases, sizeof string_cases / sizeof *string_cases },
        { number_cases, sizeof number_cases / sizeof *number_cases }, { object_cases, sizeof object_cases / sizeof *object_cases },
        { metadata_cases, sizeof metadata_cases / sizeof *metadata_cases }, { entry_cases, sizeof entry_cases / sizeof *entry_cases },
        { strict_cases, sizeof strict_cases / sizeof *strict_cases }, { validation_cases, sizeof validation_cases / sizeof *validation_cases } };
    /* test_file_too_small, test_header_too_large_and_length, test_header_utf8, test_json_depth, test_file_size_rule */
    static const sts_rule own[] = { STS_RULE_FILE_TOO_SMALL, STS_RULE_HEADER_TOO_LARGE, STS_RULE_HEADER_LENGTH, STS_RULE_HEADER_UTF8,
                                    STS_RULE_JSON_DEPTH, STS_RULE_FILE_SIZE };
    int seen[STS_RULE_COUNT];
    size_t t, i;
    int r;
    (void)state;
    memset(seen, 0, sizeof seen);
    for (t = 0; t < sizeof tabs / sizeof *tabs; t++)
        for (i = 0; i < tabs[t].n; i++) seen[tabs[t].c[i].rule] = 1;
    for (i = 0; i < sizeof own / sizeof *own; i++) seen[own[i]] = 1;
    for (r = STS_RULE_FILE_TOO_SMALL; r <= STS_RULE_FILE_SIZE; r++)
        if (!seen[r]) fail_msg("no test breaks rule %s", sts_rule_id((sts_rule)r));
    /* every format rule maps to a reference variant */
    for (r = STS_RULE_FILE_TOO_SMALL; r <= STS_RULE_FILE_SIZE; r++)
        if (!sts_result_variant(sts_rule_result((sts_rule)r))) fail_msg("rule %s has no reference variant", sts_rule_id((sts_rule)r));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_result_tables),
        cmocka_unit_test(test_rule_tables),
        cmocka_unit_test(test_dtype_table),
        cmocka_unit_test(test_file_too_small),
        cmocka_unit_test(test_header_too_large_and_length),
        cmocka_unit_test(test_header_at_cap),
        cmocka_unit_test(test_header_utf8),
        cmocka_unit_test(test_json_syntax),
        cmocka_unit_test(test_json_string),
        cmocka_unit_test(test_json_number),
        cmocka_unit_test(test_header_object),
        cmocka_unit_test(test_metadata_rules),
        cmocka_unit_test(test_entry_rules),
        cmocka_unit_test(test_strict_rules),
        cmocka_unit_test(test_whitespace_accepted),
        cmocka_unit_test(test_json_depth),
        cmocka_unit_test(test_validation_rules),
        cmocka_unit_test(test_validation_accepts),
        cmocka_unit_test(test_f64_boundary),
        cmocka_unit_test(test_file_size_rule),
        cmocka_unit_test(test_rule_order_prefix),
        cmocka_unit_test(test_duplicates),
        cmocka_unit_test(test_table_projection),
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_message_quoting),
        cmocka_unit_test(test_metadata),
        cmocka_unit_test(test_at_order),
        cmocka_unit_test(test_fast_u64),
        cmocka_unit_test(test_find_many),
        cmocka_unit_test(test_header_only),
        cmocka_unit_test(test_accessors_null_and_args),
        cmocka_unit_test(test_hash_seed),
        cmocka_unit_test(test_index_probe),
        cmocka_unit_test(test_all_dtypes_parse),
        cmocka_unit_test(test_every_format_rule_covered),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
