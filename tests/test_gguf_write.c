/* test_gguf_write.c - the GGUF writer (sts_gguf_write, _size, _path; issue 14).
   - The exact bytes of a small file, against an encoding assembled here field by field from the
     layout of format/SPECIFICATION.md section 15 (not through the writer's code).
   - A round trip through the GGUF provider in strict mode: every dtype GGUF has, ranks 0 to 4, an
     empty tensor, a producer, every value type (by format_type and by default), typed arrays (an
     empty one too), general.alignment; descriptors, offsets aligned, bytes, and KVs back as given.
   - Every refusal names its rule, and leaves an existing output file as it was with no temporary
     beside it; producers that fail or miscount; a sink that fails at each write; the k-th
     allocation failing. (tests/gguf/hf_check.py has @huggingface/gguf read what the writer writes.) */
#define _POSIX_C_SOURCE 200809L
#ifndef STS_TEST_LINKED  /* the Makefile links tests/sts_impl.c's object instead */
#define STS_IMPLEMENTATION
#endif
#include "../safetensors_spark.h"
#include "fs_util.h"

#include <stdlib.h>

/* ---- a memory sink that may fail at its k-th write ---- */
typedef struct msink { uint8_t *p; size_t n, cap; int writes, fail_at; } msink;
static sts_result msink_write(void *user, const void *bytes, size_t len) {
    msink *m = (msink *)user;
    if (++m->writes == m->fail_at) return STS_ERR_IO;
    if (m->n + len > m->cap) {
        size_t cap = m->cap ? m->cap : 256;
        while (cap < m->n + len) cap *= 2;
        m->p = (uint8_t *)realloc(m->p, cap);
        TU_CHECK(m->p != NULL);
        m->cap = cap;
    }
    if (len) memcpy(m->p + m->n, bytes, len);
    m->n += len;
    return STS_OK;
}
static sts_result write_mem(const sts_tensor_spec *specs, size_t n, const sts_meta *kvs, size_t n_kv, msink *m,
                            const sts_options *o, sts_error *e) {
    sts_sink sink;
    memset(m, 0, sizeof *m);
    sink.write = msink_write;
    sink.user = m;
    return sts_gguf_write(specs, n, kvs, n_kv, &sink, o, e);
}

/* ---- an independent little-endian encoder for the expected bytes ---- */
typedef struct gbuf { uint8_t b[1024]; size_t n; } gbuf;
static void g_put(gbuf *g, const void *p, size_t n) {
    TU_CHECK(g->n + n <= sizeof g->b);
    memcpy(g->b + g->n, p, n);
    g->n += n;
}
static void g_u(gbuf *g, uint64_t v, int bytes) {
    int i;
    for (i = 0; i < bytes; i++) {
        uint8_t c = (uint8_t)(v >> (8 * i));
        g_put(g, &c, 1);
    }
}
static void g_s(gbuf *g, const char *s) { g_u(g, strlen(s), 8); g_put(g, s, strlen(s)); }

static sts_meta kv_str(const char *k, const char *v) {
    sts_meta m;
    memset(&m, 0, sizeof m);
    m.key = k; m.key_len = k ? strlen(k) : 0; m.type = STS_META_STRING; m.str = v; m.str_len = strlen(v);
    return m;
}
static sts_meta kv_u(const char *k, uint64_t v, uint32_t ft) {
    sts_meta m;
    memset(&m, 0, sizeof m);
    m.key = k; m.key_len = k ? strlen(k) : 0; m.type = STS_META_UINT; m.u = v; m.format_type = ft;
    return m;
}
static sts_meta kv_i(const char *k, int64_t v, uint32_t ft) {
    sts_meta m;
    memset(&m, 0, sizeof m);
    m.key = k; m.key_len = k ? strlen(k) : 0; m.type = STS_META_INT; m.i = v; m.format_type = ft;
    return m;
}
static sts_meta kv_f(const char *k, double v, uint32_t ft) {
    sts_meta m;
    memset(&m, 0, sizeof m);
    m.key = k; m.key_len = k ? strlen(k) : 0; m.type = STS_META_FLOAT; m.f = v; m.format_type = ft;
    return m;
}
static sts_meta kv_b(const char *k, uint64_t v) {
    sts_meta m;
    memset(&m, 0, sizeof m);
    m.key = k; m.key_len = k ? strlen(k) : 0; m.type = STS_META_BOOL; m.u = v;
    return m;
}
static sts_meta kv_arr(const char *k, const sts_meta *items, uint64_t n, int typed, uint32_t item_type) {
    sts_meta m;
    memset(&m, 0, sizeof m);
    m.key = k; m.key_len = strlen(k); m.type = STS_META_ARRAY; m.items = items; m.count = n;
    if (typed) { m.format_type = 9; m.u = item_type; }
    return m;
}
static sts_tensor_spec spec(const char *name, sts_dtype dt, uint32_t rank, const uint64_t *shape, const void *data,
                            uint64_t size) {
    sts_tensor_spec s;
    memset(&s, 0, sizeof s);
    s.name = name; s.name_len = strlen(name); s.dtype = dt; s.rank = rank; s.shape = shape; s.data = data;
    s.data_size = size;
    return s;
}

/* ---- the exact bytes of a small file ---- */
static void test_exact_bytes(void **state) {
    static const uint16_t h[6] = { 0x3C00, 0xC000, 0x7BFF, 0x0001, 0x8000, 0x3555 };
    static const int32_t iv[2] = { -1, 7 };
    uint64_t sh[2] = { 2, 3 }, one[1] = { 2 };
    sts_tensor_spec s[2];
    sts_meta kv[3];
    msink m;
    gbuf g;
    sts_error e;
    uint64_t size = 0;
    uint8_t le16[12], le32[8];
    size_t i;
    (void)state;
    for (i = 0; i < 6; i++) { le16[2 * i] = (uint8_t)h[i]; le16[2 * i + 1] = (uint8_t)(h[i] >> 8); }
    for (i = 0; i < 2; i++) { uint32_t v = (uint32_t)iv[i]; int b; for (b = 0; b < 4; b++) le32[4 * i + b] = (uint8_t)(v >> (8 * b)); }
    s[0] = spec("tok", STS_DTYPE_F16, 2, sh, le16, 12);
    s[1] = spec("ids", STS_DTYPE_I32, 1, one, le32, 8);
    kv[0] = kv_str("general.architecture", "llama");
    kv[1] = kv_u("n", 7, 4);
    kv[2] = kv_f("x", 0.5, 6);
    assert_int_equal(write_mem(s, 2, kv, 3, &m, NULL, &e), STS_OK);
    memset(&g, 0, sizeof g);
    g_put(&g, "GGUF", 4); g_u(&g, 3, 4); g_u(&g, 2, 8); g_u(&g, 3, 8);
    g_s(&g, "general.architecture"); g_u(&g, 8, 4); g_s(&g, "llama");
    g_s(&g, "n"); g_u(&g, 4, 4); g_u(&g, 7, 4);
    g_s(&g, "x"); g_u(&g, 6, 4); g_u(&g, 0x3F000000u, 4);
    g_s(&g, "tok"); g_u(&g, 2, 4); g_u(&g, 3, 8); g_u(&g, 2, 8); g_u(&g, 1, 4); g_u(&g, 0, 8);   /* ne0 = 3 first */
    g_s(&g, "ids"); g_u(&g, 1, 4); g_u(&g, 2, 8); g_u(&g, 26, 4); g_u(&g, 32, 8);                /* 12 padded to 32 */
    while (g.n % 32) g_u(&g, 0, 1);
    g_put(&g, le16, 12);
    for (i = 0; i < 20; i++) g_u(&g, 0, 1);
    g_put(&g, le32, 8);
    for (i = 0; i < 24; i++) g_u(&g, 0, 1);
    assert_int_equal(m.n, g.n);
    assert_memory_equal(m.p, g.b, g.n);
    assert_int_equal(sts_gguf_write_size(s, 2, kv, 3, NULL, &size, &e), STS_OK);
    assert_int_equal(size, g.n);
    free(m.p);
}

/* ---- a round trip through the GGUF provider, strict ---- */
typedef struct prod { const uint8_t *p; size_t n, piece; int mode; } prod;  /* mode: 0 ok, 1 short, 2 long, 3 fail */
static sts_result produce(void *user, const sts_tensor_spec *s, sts_stream *out) {
    prod *p = (prod *)user;
    size_t at = 0;
    (void)s;
    if (p->mode == 3) return STS_ERR_IO;
    while (at < p->n - (p->mode == 1 ? 1 : 0)) {
        size_t c = p->n - at < p->piece ? p->n - at : p->piece;
        sts_result r = sts_stream_write(out, p->p + at, c);
        if (r != STS_OK) return r;
        at += c;
    }
    if (p->mode == 2) (void)sts_stream_write(out, p->p, 1);  /* refused; the writer notices */
    return STS_OK;
}
static const sts_meta *find(const sts_archive *a, const char *k) {
    const sts_meta *m = sts_archive_meta_find(a, k, strlen(k));
    if (!m) fail_msg("key %s missing", k);
    return m;
}
/* 0.1 as a float object: a float constant may carry double precision (s390x: FLT_EVAL_METHOD 1) */
static const float tenth = 0.1f;
static void test_roundtrip(void **state) {
    static const sts_dtype dts[8] = { STS_DTYPE_F32, STS_DTYPE_F16, STS_DTYPE_BF16, STS_DTYPE_F64,
                                      STS_DTYPE_I8, STS_DTYPE_I16, STS_DTYPE_I32, STS_DTYPE_I64 };
    static const char *const gname[8] = { "F32", "F16", "BF16", "F64", "I8", "I16", "I32", "I64" };
    static const uint64_t shapes[5][4] = { { 0 }, { 5 }, { 3, 2 }, { 2, 1, 3 }, { 2, 2, 1, 3 } };
    char names[8][5][16], dir[512], path[512];
    uint8_t data[8][5][256];
    uint64_t zero_shape[2] = { 4, 0 };
    sts_tensor_spec s[8 * 5 + 2];
    sts_meta items_s[3], items_i[2], items_f[2], items_b[3], kv[20];
    prod pr;
    msink m;
    sts_error e;
    sts_archive *a;
    sts_input in;
    sts_options o;
    size_t i, j, n = 0, nkv = 0, fsz;
    uint8_t *file;
    uint64_t k;
    (void)state;
    for (i = 0; i < 8; i++)
        for (j = 0; j < 5; j++) {
            uint64_t numel = 1, bytes;
            uint32_t d;
            for (d = 0; d < j; d++) numel *= shapes[j][d];
            bytes = numel * (sts_dtype_bits(dts[i]) / 8);
            for (k = 0; k < bytes; k++) data[i][j][k] = (uint8_t)(k * 37 + i * 11 + j);
            if (dts[i] == STS_DTYPE_F32 || dts[i] == STS_DTYPE_F64 || dts[i] == STS_DTYPE_F16 || dts[i] == STS_DTYPE_BF16)
                for (k = 0; k + 1 < bytes; k += 2) data[i][j][k + 1] &= 0x3F;  /* finite values */
            snprintf(names[i][j], sizeof names[i][j], "t.%s.%u", gname[i], (unsigned)j);
            s[n++] = spec(names[i][j], dts[i], (uint32_t)j, shapes[j], data[i][j], bytes);
        }
    s[n++] = spec("empty", STS_DTYPE_F32, 2, zero_shape, NULL, 0);
    pr.p = data[0][4]; pr.n = 48; pr.piece = 5; pr.mode = 0;
    s[n] = spec("produced", STS_DTYPE_F32, 4, shapes[4], NULL, 48);
    s[n].produce = produce;
    s[n++].produce_user = &pr;
    items_s[0] = kv_str(NULL, "<s>"); items_s[1] = kv_str(NULL, ""); items_s[2] = kv_str(NULL, "\xc3\xa9t\xc3\xa9");
    items_i[0] = kv_i(NULL, -5, 0); items_i[1] = kv_i(NULL, 7, 0);
    items_f[0] = kv_f(NULL, 1.5, 0); items_f[1] = kv_f(NULL, -0.25, 0);
    items_b[0] = kv_b(NULL, 1); items_b[1] = kv_b(NULL, 0); items_b[2] = kv_b(NULL, 1);
    kv[nkv++] = kv_str("general.architecture", "llama");
    kv[nkv++] = kv_u("general.alignment", 64, 0);
    kv[nkv++] = kv_u("u16", 65535, 2);
    kv[nkv++] = kv_u("u32", 4000000000u, 4);
    kv[nkv++] = kv_u("u64", UINT64_MAX, 10);
    kv[nkv++] = kv_u("udefault", 12, 0);
    kv[nkv++] = kv_i("i8", -128, 1);
    kv[nkv++] = kv_i("i16", -32768, 3);
    kv[nkv++] = kv_i("i32", INT32_MIN, 5);
    kv[nkv++] = kv_i("i64", INT64_MIN, 11);
    kv[nkv++] = kv_f("f32", (double)tenth, 6);
    kv[nkv++] = kv_f("f64", -1.5e300, 12);
    kv[nkv++] = kv_b("yes", 1);
    kv[nkv++] = kv_arr("tokens", items_s, 3, 0, 0);
    kv[nkv++] = kv_arr("i8s", items_i, 2, 1, 1);
    kv[nkv++] = kv_arr("ints", items_i, 2, 0, 0);
    kv[nkv++] = kv_arr("f32s", items_f, 2, 1, 6);
    kv[nkv++] = kv_arr("bools", items_b, 3, 0, 0);
    kv[nkv++] = kv_arr("none_u32", NULL, 0, 1, 4);
    assert_int_equal(write_mem(s, n, kv, nkv, &m, NULL, &e), STS_OK);
    tf_tmpdir(dir, sizeof dir);
    tf_join(path, sizeof path, dir, "w.gguf");
    assert_int_equal(sts_gguf_write_path(path, s, n, kv, nkv, NULL, &e), STS_OK);
    file = tf_read(path, &fsz);
    assert_int_equal(fsz, m.n);
    assert_memory_equal(file, m.p, fsz);
    free(file);
    memset(&in, 0, sizeof in);
    memset(&o, 0, sizeof o);
    o.strict = 1;
    in.bytes = m.p;
    in.size = m.n;
    if (sts_archive_open(NULL, &in, &o, &a, &e) != STS_OK) fail_msg("strict open: %s", e.message);
    assert_string_equal(sts_archive_format(a), "gguf");
    assert_int_equal(sts_archive_version(a), 3);
    assert_int_equal(sts_archive_count(a), n);
    assert_int_equal(sts_archive_meta_count(a), nkv);
    for (i = 0; i < n; i++) {
        const sts_tensor_desc *d;
        const sts_tensor_spec *x = &s[i];
        void *copy;
        uint32_t r;
        assert_int_equal(sts_archive_at(a, i, &d, &e), STS_OK);  /* the order given */
        assert_int_equal(d->name_len, x->name_len);
        assert_memory_equal(d->name, x->name, x->name_len);
        assert_string_equal(d->type->name, sts_dtype_name(x->dtype));
        assert_int_equal(d->rank, x->rank);
        for (r = 0; r < x->rank; r++) {
            assert_int_equal(d->shape[r], x->shape[r]);
            assert_int_equal(d->format_shape[r], x->shape[x->rank - 1 - r]);
        }
        assert_int_equal(d->nbytes, x->data_size);
        assert_int_equal((d->offset - (d->offset - d->extras[1].u)) % 64, 0);
        assert_int_equal(d->offset % 64, 0);
        copy = malloc(d->nbytes + 1);
        assert_int_equal(sts_archive_read(a, d, 0, copy, (size_t)d->nbytes, &e), STS_OK);
        if (x->data) assert_memory_equal(copy, x->data, d->nbytes);
        else if (x->produce) assert_memory_equal(copy, pr.p, 48);
        free(copy);
    }
    {
        const sts_meta *x;
        x = find(a, "general.alignment"); assert_int_equal(x->format_type, 4); assert_int_equal(x->u, 64);
        x = find(a, "u16"); assert_int_equal(x->format_type, 2); assert_int_equal(x->u, 65535);
        x = find(a, "u32"); assert_int_equal(x->format_type, 4); assert_int_equal(x->u, 4000000000u);
        x = find(a, "u64"); assert_int_equal(x->format_type, 10); assert_true(x->u == UINT64_MAX);
        x = find(a, "udefault"); assert_int_equal(x->format_type, 10); assert_int_equal(x->u, 12);
        x = find(a, "i8"); assert_int_equal(x->format_type, 1); assert_int_equal(x->i, -128);
        x = find(a, "i16"); assert_int_equal(x->format_type, 3); assert_int_equal(x->i, -32768);
        x = find(a, "i32"); assert_int_equal(x->format_type, 5); assert_true(x->i == INT32_MIN);
        x = find(a, "i64"); assert_int_equal(x->format_type, 11); assert_true(x->i == INT64_MIN);
        x = find(a, "f32"); assert_int_equal(x->format_type, 6); assert_true(x->f == (double)tenth);
        x = find(a, "f64"); assert_int_equal(x->format_type, 12); assert_true(x->f == -1.5e300);
        x = find(a, "yes"); assert_int_equal(x->type, STS_META_BOOL); assert_int_equal(x->u, 1);
        x = find(a, "general.architecture"); assert_int_equal(x->str_len, 5);
        x = find(a, "tokens");
        assert_int_equal(x->u, 8); assert_int_equal(x->count, 3);
        assert_int_equal(x->items[2].str_len, 5); assert_memory_equal(x->items[2].str, "\xc3\xa9t\xc3\xa9", 5);
        x = find(a, "i8s"); assert_int_equal(x->u, 1); assert_int_equal(x->items[0].i, -5);
        x = find(a, "ints"); assert_int_equal(x->u, 11); assert_int_equal(x->items[1].i, 7);
        x = find(a, "f32s"); assert_int_equal(x->u, 6); assert_true(x->items[1].f == -0.25);
        x = find(a, "bools"); assert_int_equal(x->u, 7); assert_int_equal(x->items[2].u, 1);
        x = find(a, "none_u32"); assert_int_equal(x->u, 4); assert_int_equal(x->count, 0);
    }
    sts_archive_close(a);
    free(m.p);
    tf_rmtree(dir);
}

/* ---- refusals: the rule named, an existing output untouched, no temporary left ---- */
static void refused(const char *label, const sts_tensor_spec *s, size_t n, const sts_meta *kv, size_t nkv,
                    sts_result code, sts_rule rule, const char *words) {
    char dir[512], path[512];
    sts_error e;
    uint8_t *back;
    size_t bn;
    uint64_t size;
    msink m;
    tf_names left;
    tf_tmpdir(dir, sizeof dir);
    tf_join(path, sizeof path, dir, "out.gguf");
    tf_write(path, "precious", 8);
    tu_err_check(label, sts_gguf_write_path(path, s, n, kv, nkv, NULL, &e), &e, code, rule, words, NULL);
    back = tf_read(path, &bn);
    if (bn != 8 || memcmp(back, "precious", 8) != 0) fail_msg("%s: the existing file changed", label);
    free(back);
    left = tf_list(dir, "", "");
    if (left.n != 1) fail_msg("%s: %zu files in the folder after the refusal", label, left.n);
    tf_names_free(&left);
    {
        DIR *d = opendir(dir);
        struct dirent *de;
        while ((de = readdir(d)) != NULL)
            if (de->d_name[0] == '.' && strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
                fail_msg("%s: a temporary was left: %s", label, de->d_name);
        closedir(d);
    }
    tu_err_check(label, write_mem(s, n, kv, nkv, &m, NULL, &e), &e, code, rule, words, NULL);
    assert_int_equal(m.n, 0);  /* nothing written before the checks pass */
    free(m.p);
    tu_err_check(label, sts_gguf_write_size(s, n, kv, nkv, NULL, &size, &e), &e, code, rule, words, NULL);
    tf_rmtree(dir);
}
static void test_refusals(void **state) {
    static const float f[4] = { 1, 2, 3, 4 };
    uint64_t sh[5] = { 2, 2, 1, 1, 1 }, big[2] = { (uint64_t)1 << 32, (uint64_t)1 << 32 }, huge[1] = { (uint64_t)1 << 63 };
    char longname[65];
    sts_tensor_spec s[2], t;
    sts_meta kv[2], items[2], nested[1];
    const sts_rule ARG = STS_RULE_COUNT;
    (void)state;
    (void)ARG;
    s[0] = spec("a", STS_DTYPE_F32, 1, sh, f, 8);
    s[1] = spec("a", STS_DTYPE_F32, 1, sh, f, 8);
    refused("duplicate name", s, 2, NULL, 0, STS_ERR_DUPLICATE_KEY, STS_RULE_GGUF_DUPLICATE_NAME, "tensor \"a\" appears twice");
    memset(longname, 'n', 64);
    longname[64] = 0;
    t = spec(longname, STS_DTYPE_F32, 1, sh, f, 8);
    refused("64-byte name", &t, 1, NULL, 0, STS_ERR_INVALID_ARGUMENT, STS_RULE_GGUF_NAME, "at most 63 bytes");
    longname[63] = 0;
    t = spec(longname, STS_DTYPE_F32, 1, sh, f, 8);
    {   /* 63 bytes are fine */
        msink m;
        sts_error e;
        assert_int_equal(write_mem(&t, 1, NULL, 0, &m, NULL, &e), STS_OK);
        free(m.p);
    }
    t = spec("a", STS_DTYPE_F32, 1, sh, f, 8);
    t.name = "a\0b"; t.name_len = 3;
    refused("NUL in a name", &t, 1, NULL, 0, STS_ERR_INVALID_ARGUMENT, STS_RULE_WRITE_TEXT, "without NUL");
    t = spec("\xff", STS_DTYPE_F32, 1, sh, f, 8);
    refused("name not UTF-8", &t, 1, NULL, 0, STS_ERR_INVALID_ARGUMENT, STS_RULE_WRITE_TEXT, "UTF-8");
    t = spec("u", STS_DTYPE_U8, 1, sh, f, 2);
    refused("U8", &t, 1, NULL, 0, STS_ERR_INVALID_ARGUMENT, STS_RULE_WRITE_DTYPE, "U8 has no GGUF type");
    t = spec("b", STS_DTYPE_BOOL, 1, sh, f, 2);
    refused("BOOL", &t, 1, NULL, 0, STS_ERR_INVALID_ARGUMENT, STS_RULE_WRITE_DTYPE, "BOOL has no GGUF type");
    t = spec("r5", STS_DTYPE_F32, 5, sh, f, 16);
    refused("rank 5", &t, 1, NULL, 0, STS_ERR_INVALID_ARGUMENT, STS_RULE_GGUF_N_DIMS, "5 dimensions");
    t = spec("a", STS_DTYPE_F32, 1, sh, f, 12);
    refused("data_size", &t, 1, NULL, 0, STS_ERR_INVALID_ARGUMENT, STS_RULE_WRITE_DATA_SIZE, "data_size 12, the shape's bytes 8");
    t = spec("a", STS_DTYPE_F32, 1, sh, NULL, 8);
    refused("no data", &t, 1, NULL, 0, STS_ERR_INVALID_ARGUMENT, STS_RULE_WRITE_DATA_SIZE, "no data or producer");
    t = spec("wrap", STS_DTYPE_F32, 2, big, f, 0);
    refused("element count wraps", &t, 1, NULL, 0, STS_ERR_INVALID_ARGUMENT, STS_RULE_GGUF_OVERFLOW, "overflows");
    t = spec("huge", STS_DTYPE_I8, 1, huge, f, 0);
    refused("dimension 2^63", &t, 1, NULL, 0, STS_ERR_INVALID_ARGUMENT, STS_RULE_GGUF_SHAPE, "2^63 or more");
    t = spec("a", STS_DTYPE_F32, 1, sh, f, 8);
    kv[0] = kv_str("k", "v"); kv[1] = kv_str("k", "w");
    refused("duplicate key", &t, 1, kv, 2, STS_ERR_DUPLICATE_KEY, STS_RULE_GGUF_DUPLICATE_KEY, "key \"k\" appears twice");
    kv[0] = kv_str("", "v");
    refused("empty key", &t, 1, kv, 1, STS_ERR_INVALID_ARGUMENT, STS_RULE_GGUF_KEY, "has no key");
    kv[0] = kv_str("k\xc3", "v");
    refused("key not UTF-8", &t, 1, kv, 1, STS_ERR_INVALID_ARGUMENT, STS_RULE_WRITE_TEXT, "not UTF-8");
    kv[0] = kv_str("general.alignment", "v");
    kv[0].key_len = 19;
    kv[0].key = "general.alignment\0x";
    refused("NUL in a key", &t, 1, kv, 1, STS_ERR_INVALID_ARGUMENT, STS_RULE_WRITE_TEXT, "without NUL");
    kv[0] = kv_str("k", "\xc3(");
    refused("string not UTF-8", &t, 1, kv, 1, STS_ERR_INVALID_ARGUMENT, STS_RULE_GGUF_STRING, "UTF-8");
    kv[0] = kv_u("general.alignment", 4, 4);
    refused("alignment 4", &t, 1, kv, 1, STS_ERR_INVALID_ARGUMENT, STS_RULE_GGUF_ALIGNMENT, "multiple of 8");
    kv[0] = kv_u("general.alignment", 48, 0);
    refused("alignment 48", &t, 1, kv, 1, STS_ERR_INVALID_ARGUMENT, STS_RULE_GGUF_ALIGNMENT, "power of two");
    kv[0] = kv_i("general.alignment", 32, 0);
    refused("alignment an INT", &t, 1, kv, 1, STS_ERR_INVALID_ARGUMENT, STS_RULE_GGUF_ALIGNMENT, "is a UINT32");
    kv[0] = kv_u("small", 256, 0);
    kv[0].format_type = 2; kv[0].u = 65536;
    refused("UINT16 out of range", &t, 1, kv, 1, STS_ERR_INVALID_ARGUMENT, STS_RULE_GGUF_VALUE_TYPE, "does not fit");
    kv[0] = kv_i("small", 128, 1);
    refused("INT8 out of range", &t, 1, kv, 1, STS_ERR_INVALID_ARGUMENT, STS_RULE_GGUF_VALUE_TYPE, "does not fit");
    kv[0] = kv_u("wrong", 1, 6);
    refused("UINT as FLOAT32", &t, 1, kv, 1, STS_ERR_INVALID_ARGUMENT, STS_RULE_GGUF_VALUE_TYPE, "not a GGUF type of its kind");
    kv[0] = kv_b("b", 2);
    refused("BOOL 2", &t, 1, kv, 1, STS_ERR_INVALID_ARGUMENT, STS_RULE_GGUF_VALUE_TYPE, "0 or 1");
    nested[0] = kv_arr("x", items, 0, 1, 4);
    nested[0].key = NULL; nested[0].key_len = 0;
    kv[0] = kv_arr("nest", nested, 1, 0, 0);
    refused("nested array", &t, 1, kv, 1, STS_ERR_INVALID_ARGUMENT, STS_RULE_GGUF_VALUE_TYPE, "nested");
    kv[0] = kv_arr("empty", NULL, 0, 0, 0);
    refused("untyped empty array", &t, 1, kv, 1, STS_ERR_INVALID_ARGUMENT, STS_RULE_GGUF_VALUE_TYPE, "an empty array needs u");
    items[0] = kv_u(NULL, 1, 0); items[1] = kv_str(NULL, "two");
    kv[0] = kv_arr("mixed", items, 2, 0, 0);
    refused("mixed items", &t, 1, kv, 1, STS_ERR_INVALID_ARGUMENT, STS_RULE_GGUF_VALUE_TYPE, "item 1");
    kv[0] = kv_arr("arr", items, 1, 1, 9);
    refused("items typed ARRAY", &t, 1, kv, 1, STS_ERR_INVALID_ARGUMENT, STS_RULE_GGUF_VALUE_TYPE, "no GGUF type");
    items[0] = kv_u(NULL, 300, 0);
    kv[0] = kv_arr("u8s", items, 1, 1, 0);
    refused("UINT8 item out of range", &t, 1, kv, 1, STS_ERR_INVALID_ARGUMENT, STS_RULE_GGUF_VALUE_TYPE, "does not fit");
}

/* ---- producers, sinks, allocations ---- */
static void test_failures(void **state) {
    static const float f[4] = { 1, 2, 3, 4 };
    uint64_t sh[1] = { 4 };
    sts_tensor_spec s[2];
    prod pr;
    sts_error e;
    msink m;
    int mode, k;
    (void)state;
    pr.p = (const uint8_t *)f; pr.n = 16; pr.piece = 3;
    s[0] = spec("a", STS_DTYPE_F32, 1, sh, f, 16);
    s[1] = spec("p", STS_DTYPE_F32, 1, sh, NULL, 16);
    s[1].produce = produce;
    s[1].produce_user = &pr;
    for (mode = 1; mode <= 3; mode++) {
        static const char *const words[4] = { NULL, "emitted fewer than its 16 bytes", "emitted more than its 16 bytes",
                                              "the producer of tensor \"p\" failed" };
        char dir[512], path[512];
        uint8_t *back;
        size_t bn;
        pr.mode = mode;
        tu_err_check("producer", write_mem(s, 2, NULL, 0, &m, NULL, &e), &e, mode == 3 ? STS_ERR_IO : STS_ERR_INVALID_ARGUMENT,
                     STS_RULE_WRITE_PRODUCER, words[mode], NULL);
        free(m.p);
        tf_tmpdir(dir, sizeof dir);
        tf_join(path, sizeof path, dir, "out.gguf");
        tf_write(path, "precious", 8);
        tu_err_check("producer, path", sts_gguf_write_path(path, s, 2, NULL, 0, NULL, &e), &e, TU_ANY_CODE,
                     STS_RULE_WRITE_PRODUCER, words[mode], NULL);
        back = tf_read(path, &bn);
        assert_true(bn == 8 && memcmp(back, "precious", 8) == 0);
        free(back);
        {
            tf_names left = tf_list(dir, "", "");
            DIR *d = opendir(dir);
            struct dirent *de;
            int hidden = 0;
            while ((de = readdir(d)) != NULL) hidden += de->d_name[0] == '.' && strcmp(de->d_name, ".") && strcmp(de->d_name, "..");
            closedir(d);
            assert_int_equal(left.n + (size_t)hidden, 1);
            tf_names_free(&left);
        }
        tf_rmtree(dir);
    }
    pr.mode = 0;
    for (k = 1;; k++) {  /* the sink failing at each of its writes */
        sts_sink sink;
        sts_result r;
        memset(&m, 0, sizeof m);
        m.fail_at = k;
        sink.write = msink_write;
        sink.user = &m;
        r = sts_gguf_write(s, 2, NULL, 0, &sink, NULL, &e);
        free(m.p);
        if (r == STS_OK) { assert_true(k > 3); break; }
        tu_err_check("sink", r, &e, STS_ERR_IO, STS_RULE_IO, "the sink failed", NULL);
    }
    for (k = 1;; k++) {  /* the k-th allocation failing: NOMEM, nothing leaked */
        tu_alloc al;
        sts_options o;
        sts_result r;
        sts_meta kv[1];
        char dir[512], path[512];
        kv[0] = kv_str("general.architecture", "x");
        memset(&al, 0, sizeof al);
        al.fail_at = (long)k;
        o = tu_alloc_opts(&al, NULL);
        o.no_fsync = 1;
        tf_tmpdir(dir, sizeof dir);
        tf_join(path, sizeof path, dir, "out.gguf");
        r = sts_gguf_write_path(path, s, 2, kv, 1, &o, &e);
        tu_alloc_check("gguf write", &al);
        assert_int_equal(tf_exists(path), r == STS_OK);
        tf_rmtree(dir);
        if (r == STS_OK) break;
        tu_err_check("allocation failure", r, &e, STS_ERR_NOMEM, STS_RULE_ALLOC, NULL);
    }
    {   /* arguments */
        sts_sink sink;
        sink.write = NULL;
        sink.user = NULL;
        tu_err_check("no sink", sts_gguf_write(s, 1, NULL, 0, &sink, NULL, &e), &e, STS_ERR_INVALID_ARGUMENT, STS_RULE_ARGUMENT, NULL);
        tu_err_check("NULL specs", sts_gguf_write_size(NULL, 1, NULL, 0, NULL, NULL, &e), &e, STS_ERR_INVALID_ARGUMENT,
                     STS_RULE_ARGUMENT, NULL);
        tu_err_check("no path", sts_gguf_write_path(NULL, s, 1, NULL, 0, NULL, &e), &e, STS_ERR_INVALID_ARGUMENT,
                     STS_RULE_ARGUMENT, NULL);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exact_bytes),
        cmocka_unit_test(test_roundtrip),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_failures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
