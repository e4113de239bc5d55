/* test_archive.c - layer 10, the archive (SPECIFICATION section 14). Built and run plain, under
   ASan+UBSan and under valgrind (tests/archive.mk adds it to UNIT_SRCS).
   - golden inputs per provider, every descriptor field and the bytes checked: a safetensors file
     of mixed dtypes and shapes (BF16, F16, I64, BOOL, a 0-d scalar, an empty tensor, ...) opened
     as a mapped path, a pread path, bytes and a callback source; a Hugging Face sharded
     checkpoint (model.safetensors.index.json as save_pretrained writes it, shards written by
     sts_write_path) and our _tensor_index.json; our datasets (KV and batch mode, written by the
     dataset writer); .npy files of versions 1 to 3, both byte orders, bool/int/float/complex;
   - .npy refusals: Fortran order (npy.fortran_order) and a table of malformed headers (npy.header);
   - probing: ties, an unsupported input (every provider's reason in the message), probes that
     decline or give out-of-range confidences, a caller's provider outranking a built-in one,
     the builder's checks (archive.provider);
   - metadata-only access through a counting callback source: the probe prefix and the header,
     nothing of the data section; window reads and cursors as HTTP range requests;
   - materialising: wrap, the copy fallback, STS_ZERO_COPY_REQUIRE, conversions compared with
     sts_convert, big-endian .npy to host order, SHA-256 checked against the sha256sum program;
   - the k-th allocation failing for every k while opening each provider, materialising and
     opening a lazy shard: an error, and nothing leaked;
   - sharded errors and counters (100 shards: opening opens only the index). */
#define _POSIX_C_SOURCE 200809L
#ifndef STS_TEST_LINKED  /* the Makefile links tests/sts_impl.c's object instead */
#define STS_IMPLEMENTATION
#endif
#include "../safetensors_spark.h"
#include "test_dataset_read_util.h"
#include "archive_util.h"

#define OK(call) DR_OK(call)

static char g_root[64];
static char g_mixed[256], g_bighead[256], g_smallhead[256], g_hf[256], g_kv[256], g_batch[256], g_batch_ix[256], g_npy[256];
static dr_batch g_bt, g_bt_ix;  /* the batch datasets' models */
static uint8_t *g_mixed_bytes;
static size_t g_mixed_size;

/* ---- the golden safetensors file: mixed dtypes and shapes ---- */
typedef struct gt {
    const char *name;
    sts_dtype dt;
    uint32_t rank;
    uint64_t shape[3];
    uint8_t data[64];
    uint64_t n;
} gt;
static gt g_t[10];
static size_t g_nt;
static const sts_kv g_meta[2] = { { "format", 6, "pt", 2 }, { "note", 4, "golden file", 11 } };

static gt *gt_add(const char *name, sts_dtype dt, uint32_t rank, uint64_t d0, uint64_t d1) {
    gt *t = &g_t[g_nt++];
    uint64_t n = 1, i;
    memset(t, 0, sizeof *t);
    t->name = name; t->dt = dt; t->rank = rank; t->shape[0] = d0; t->shape[1] = d1;
    for (i = 0; i < rank; i++) n *= t->shape[i];
    t->n = n * sts_dtype_bits(dt) / 8;
    assert_true(t->n <= sizeof t->data);
    for (i = 0; i < t->n; i++) t->data[i] = (uint8_t)(g_nt * 41u + i * 13u + 7u);  /* distinct per tensor */
    return t;
}
static void make_mixed(void) {
    static const float bf[6] = { 1.5f, -2.25f, 3.0f, 0.1f, 65504.0f, -0.0f };
    static const uint16_t f16[4] = { 0x3C00, 0xC000, 0x7BFF, 0x0001 };
    static const int64_t i64[3] = { 1, -2, INT64_MAX };
    static const uint32_t f32[6] = { 0x3F808001u, 0x3F818000u, 0xBF7FFFFFu, 0x7F7FFFFFu, 0x00000001u, 0x40490FDBu };
    gt *t;
    int i;
    g_nt = 0;
    t = gt_add("bf16", STS_DTYPE_BF16, 2, 2, 3);
    for (i = 0; i < 6; i++) { uint32_t u; memcpy(&u, &bf[i], 4); tu_st16(t->data + 2 * i, (uint16_t)(u >> 16)); }
    t = gt_add("f16", STS_DTYPE_F16, 1, 4, 0);
    for (i = 0; i < 4; i++) tu_st16(t->data + 2 * i, f16[i]);
    t = gt_add("i64", STS_DTYPE_I64, 1, 3, 0);
    for (i = 0; i < 3; i++) tu_st64(t->data + 8 * i, (uint64_t)i64[i]);
    t = gt_add("mask", STS_DTYPE_BOOL, 1, 5, 0);
    for (i = 0; i < 5; i++) t->data[i] = (uint8_t)(i % 3 != 1);
    t = gt_add("scalar", STS_DTYPE_F32, 0, 0, 0);
    tu_stf32(t->data, 3.25f);
    gt_add("empty", STS_DTYPE_F32, 2, 0, 3);
    t = gt_add("f32", STS_DTYPE_F32, 2, 3, 2);
    for (i = 0; i < 6; i++) tu_st32(t->data + 4 * i, f32[i]);
    gt_add("u8", STS_DTYPE_U8, 1, 7, 0);
    gt_add("c64", STS_DTYPE_C64, 1, 2, 0);
    gt_add("u16", STS_DTYPE_U16, 2, 1, 3);
}
static void write_gts(const char *path, const gt *ts, size_t n, const sts_kv *meta, size_t nmeta) {
    sts_tensor_spec sp[16];
    sts_error e;
    size_t i;
    assert_true(n <= 16);
    memset(sp, 0, sizeof sp);
    for (i = 0; i < n; i++) {
        sp[i].name = ts[i].name; sp[i].name_len = strlen(ts[i].name); sp[i].dtype = ts[i].dt;
        sp[i].rank = ts[i].rank; sp[i].shape = ts[i].shape; sp[i].data = ts[i].data; sp[i].data_size = ts[i].n;
    }
    OK(sts_write_path(path, sp, n, meta, nmeta, NULL, &e));
}
/* A file of one U8 tensor of `data` bytes whose header holds a metadata string of `pad` bytes. */
static void write_padded(const char *path, size_t pad, size_t data) {
    sts_tensor_spec sp;
    sts_kv kv;
    sts_error e;
    char *s = (char *)malloc(pad + 1);
    uint8_t *d = (uint8_t *)malloc(data);
    uint64_t shape[1];
    size_t i;
    assert_true(s && d);
    memset(s, 'x', pad);
    s[pad] = 0;
    for (i = 0; i < data; i++) d[i] = (uint8_t)(i * 7 + 3);
    shape[0] = data;
    memset(&sp, 0, sizeof sp);
    sp.name = "w"; sp.name_len = 1; sp.dtype = STS_DTYPE_U8; sp.rank = 1; sp.shape = shape; sp.data = d; sp.data_size = data;
    kv.key = "pad"; kv.key_len = 3; kv.value = s; kv.value_len = pad;
    OK(sts_write_path(path, &sp, 1, &kv, 1, NULL, &e));
    free(s);
    free(d);
}

/* ---- the Hugging Face sharded checkpoint ---- */
static gt g_hs[7];
static const char *const g_hs_file[7] = {
    "model-00001-of-00002.safetensors", "model-00001-of-00002.safetensors", "model-00001-of-00002.safetensors",
    "model-00002-of-00002.safetensors", "model-00002-of-00002.safetensors", "model-00002-of-00002.safetensors",
    "model-00002-of-00002.safetensors" };
static uint64_t g_hs_total;
static void make_hf(const char *dir) {
    static const sts_kv pt = { "format", 6, "pt", 2 };
    ta_wm map[7];
    tu_sb b = { 0, 0, 0 };
    char p[512];
    size_t i, save = g_nt;
    gt keep[10];
    memcpy(keep, g_t, sizeof keep);
    g_nt = 0;
    gt_add("model.embed.weight", STS_DTYPE_BF16, 2, 4, 3);
    gt_add("model.layers.0.attn.q.weight", STS_DTYPE_F16, 2, 3, 3);
    gt_add("model.layers.0.mlp.bias", STS_DTYPE_F32, 1, 3, 0);
    gt_add("lm_head.weight", STS_DTYPE_BF16, 2, 4, 3);
    gt_add("model.norm.weight", STS_DTYPE_F32, 1, 3, 0);
    gt_add("model.layers.1.step", STS_DTYPE_I64, 0, 0, 0);
    gt_add("model.mask", STS_DTYPE_BOOL, 1, 4, 0);
    memcpy(g_hs, g_t, sizeof g_hs);
    memcpy(g_t, keep, sizeof keep);
    g_nt = save;
    mkdir(dir, 0755);
    tf_join(p, sizeof p, dir, g_hs_file[0]);
    write_gts(p, g_hs, 3, &pt, 1);
    tf_join(p, sizeof p, dir, g_hs_file[3]);
    write_gts(p, g_hs + 3, 4, &pt, 1);
    g_hs_total = 0;
    for (i = 0; i < 7; i++) { map[i].name = g_hs[i].name; map[i].file = g_hs_file[i]; g_hs_total += g_hs[i].n; }
    ta_hf_index(&b, g_hs_total, NULL, map, 7);
    tf_join(p, sizeof p, dir, "model.safetensors.index.json");
    tf_write(p, b.p, b.n);
    tu_sb_free(&b);
}

/* ---- .npy files ---- */
typedef struct npyf {
    const char *file;
    int major;
    const char *descr;
    sts_dtype dt;
    int big;                        /* the descriptor's big_endian */
    uint32_t rank;
    uint64_t shape[3];
} npyf;
static const npyf g_npyf[] = {
    { "v1_f4.npy", 1, "<f4", STS_DTYPE_F32, 0, 2, { 2, 3 } },
    { "v2_i8.npy", 2, "<i8", STS_DTYPE_I64, 0, 1, { 4 } },
    { "v3_u2.npy", 3, "<u2", STS_DTYPE_U16, 0, 1, { 3 } },
    { "be_f4.npy", 1, ">f4", STS_DTYPE_F32, 1, 2, { 2, 2 } },
    { "be_i2.npy", 2, ">i2", STS_DTYPE_I16, 1, 1, { 5 } },
    { "be_f8.npy", 3, ">f8", STS_DTYPE_F64, 1, 1, { 2 } },
    { "be_c8.npy", 1, ">c8", STS_DTYPE_C64, 1, 1, { 2 } },
    { "be_u1.npy", 1, ">u1", STS_DTYPE_U8, 0, 1, { 3 } },
    { "b1.npy", 1, "|b1", STS_DTYPE_BOOL, 0, 1, { 3 } },
    { "u1_scalar.npy", 1, "|u1", STS_DTYPE_U8, 0, 0, { 0 } },
    { "i1.npy", 2, "|i1", STS_DTYPE_I8, 0, 1, { 4 } },
    { "c8.npy", 1, "<c8", STS_DTYPE_C64, 0, 1, { 2 } },
    { "f2.npy", 1, "<f2", STS_DTYPE_F16, 0, 2, { 1, 2 } },
    { "u4.npy", 1, "<u4", STS_DTYPE_U32, 0, 1, { 2 } },
    { "i4.npy", 1, "<i4", STS_DTYPE_I32, 0, 3, { 1, 2, 1 } },
    { "u8.npy", 1, "<u8", STS_DTYPE_U64, 0, 1, { 1 } },
    { "empty.npy", 1, "<f4", STS_DTYPE_F32, 0, 2, { 0, 5 } },
};
#define NNPY (sizeof g_npyf / sizeof g_npyf[0])
static uint64_t npy_bytes(const npyf *f) {
    uint64_t n = 1;
    uint32_t i;
    for (i = 0; i < f->rank; i++) n *= f->shape[i];
    return n * sts_dtype_bits(f->dt) / 8;
}
static uint8_t npy_byte(size_t k, uint64_t i) { return (uint8_t)(k * 29u + i * 11u + 3u); }
/* The file's bytes as np.save writes them (data: npy_byte). */
static void npy_make(tu_sb *out, const npyf *f, size_t k) {
    tu_sb dict = { 0, 0, 0 };
    uint8_t data[64];
    uint64_t n = npy_bytes(f), i;
    assert_true(n <= sizeof data);
    for (i = 0; i < n; i++) data[i] = npy_byte(k, i);
    if (f->dt == STS_DTYPE_BOOL) for (i = 0; i < n; i++) data[i] &= 1;
    ta_npy_dict(&dict, f->descr, 0, f->shape, f->rank);
    ta_npy_file(out, f->major, dict.p, data, (size_t)n);
    tu_sb_free(&dict);
}

/* ---- group setup ---- */
static int setup(void **state) {
    size_t k;
    (void)state;
    tf_tmpdir(g_root, sizeof g_root);
    memcpy(dr_root, g_root, sizeof dr_root);
    make_mixed();
    tf_join(g_mixed, sizeof g_mixed, g_root, "mixed.safetensors");
    write_gts(g_mixed, g_t, g_nt, g_meta, 2);
    g_mixed_bytes = tf_read(g_mixed, &g_mixed_size);
    tf_join(g_bighead, sizeof g_bighead, g_root, "bighead.safetensors");
    write_padded(g_bighead, 6000, 65536);
    tf_join(g_smallhead, sizeof g_smallhead, g_root, "smallhead.safetensors");
    write_padded(g_smallhead, 10, 65536);
    tf_join(g_hf, sizeof g_hf, g_root, "hf");
    make_hf(g_hf);
    {
        dr_kv kv;
        dr_batch bt;  /* 5 + 3 rows in batches of 2: 3 + 2 shards */
        tf_join(g_kv, sizeof g_kv, g_root, "kv");
        memset(&kv, 0, sizeof kv);
        kv.tasks = 2;
        kv.rows = 3;
        kv.index = 1;
        dr_write_kv(g_kv, &kv);
        tf_join(g_batch, sizeof g_batch, g_root, "batch");
        memset(&bt, 0, sizeof bt);
        bt.tasks = 2;
        bt.rows_per_task[0] = 5;
        bt.rows_per_task[1] = 3;
        bt.batch_size = 2;
        dr_write_batch(g_batch, &bt);
        g_bt = bt;
        tf_join(g_batch_ix, sizeof g_batch_ix, g_root, "batch_ix");
        bt.index = 1;
        bt.tail = STS_TAIL_PAD;
        dr_write_batch(g_batch_ix, &bt);
        g_bt_ix = bt;
    }
    tf_join(g_npy, sizeof g_npy, g_root, "npy");
    mkdir(g_npy, 0755);
    for (k = 0; k < NNPY; k++) {
        tu_sb b = { 0, 0, 0 };
        char p[512];
        npy_make(&b, &g_npyf[k], k);
        tf_join(p, sizeof p, g_npy, g_npyf[k].file);
        tf_write(p, b.p, b.n);
        tu_sb_free(&b);
    }
    return 0;
}
static int teardown(void **state) {
    (void)state;
    free(g_mixed_bytes);
    tf_rmtree(g_root);
    return 0;
}

/* ---- checks ---- */
/* A mapped or in-memory tensor has a view when its elements are in the host's byte order (one-byte
   elements have none) and aligned: the files here are little-endian, so on a big-endian host only
   byte types have views. */
static int view_expected(const sts_tensor_desc *d) {
    return d->big_endian == tu_big_endian() || (d->type->plain && d->type->swap < 2);
}
/* The stored bytes as a copy gives them: elements in the host's byte order. */
static void host_order(void *dst, const void *src, const sts_tensor_desc *d) {
    unsigned u = d->type->swap;
    if (d->big_endian == tu_big_endian() || u < 2) { if (d->nbytes) memcpy(dst, src, (size_t)d->nbytes); return; }
    {
        const uint8_t *s = (const uint8_t *)src;
        uint8_t *o = (uint8_t *)dst;
        uint64_t i;
        unsigned b;
        for (i = 0; i < d->nbytes; i += u)
            for (b = 0; b < u; b++) o[i + b] = s[i + u - 1 - b];
    }
}
/* A view: its bytes when the host can have one, else archive.view saying why not. */
static void check_view(const sts_archive *a, const sts_tensor_desc *d, const void *data, const void *at) {
    const void *v = NULL;
    sts_error e;
    if (!view_expected(d)) {
        /* (the reason, "... this host is big-endian", comes last: a long key and path cut it) */
        tu_err_check("view", sts_archive_view(a, d, &v, &e), &e, STS_ERR_UNSUPPORTED, STS_RULE_VIEW, NULL);
        return;
    }
    OK(sts_archive_view(a, d, &v, &e));
    if (at) assert_ptr_equal(v, at);
    if (d->nbytes) assert_memory_equal(v, data, (size_t)d->nbytes);
}
static sts_archive *open_in(const sts_registry *r, const sts_input *in, const sts_options *o) {
    sts_archive *a = NULL;
    sts_error e;
    OK(sts_archive_open(r, in, o, &a, &e));
    assert_non_null(a);
    return a;
}
static sts_archive *open_path(const char *path) {
    sts_input in = ta_in_path(path, 0);
    return open_in(NULL, &in, NULL);
}
static const sts_tensor_desc *find(const sts_archive *a, const char *name) {
    const sts_tensor_desc *d = NULL;
    sts_error e;
    OK(sts_archive_find(a, name, strlen(name), &d, &e));
    assert_non_null(d);
    return d;
}
/* Every field of a descriptor: name, type, shapes, counts, file, offset (the bytes there are
   `data`, in `file_bytes`), alignment, byte order, no extras, and its index. */
static void check_desc(const sts_archive *a, const sts_tensor_desc *d, const char *name, sts_dtype dt, uint32_t rank,
                       const uint64_t *shape, uint64_t nbytes, size_t file, const uint8_t *file_bytes, uint64_t file_size,
                       const void *data, int big) {
    uint64_t numel = 1;
    uint32_t i;
    const sts_tensor_desc *again = NULL;
    const char *nm;
    size_t nl;
    sts_error e;
    if (d->name_len != strlen(name) || memcmp(d->name, name, d->name_len) != 0)
        fail_msg("descriptor %.*s, expected %s", (int)d->name_len, d->name, name);
    assert_ptr_equal(d->type, sts_type_of(dt));
    assert_string_equal(d->type->name, sts_dtype_name(dt));
    assert_int_equal(d->type->dtype, dt);
    assert_int_equal(d->type->plain, 1);
    assert_int_equal(d->type->bits, sts_dtype_bits(dt));
    assert_int_equal(d->rank, rank);
    for (i = 0; i < rank; i++) {
        assert_int_equal(d->shape[i], shape[i]);
        assert_int_equal(d->format_shape[i], shape[i]);
        numel *= shape[i];
    }
    assert_int_equal(d->numel, numel);
    assert_int_equal(d->nbytes, nbytes);
    assert_int_equal(d->file, file);
    if (d->offset > file_size || nbytes > file_size - d->offset) fail_msg("%s: offset %llu + %llu past %llu", name, (unsigned long long)d->offset, (unsigned long long)nbytes, (unsigned long long)file_size);
    if (nbytes && memcmp(file_bytes + d->offset, data, (size_t)nbytes) != 0) fail_msg("%s: the bytes at offset %llu differ", name, (unsigned long long)d->offset);
    assert_int_equal(d->alignment, ta_align(d->offset));
    assert_int_equal(d->big_endian, big);
    assert_int_equal(d->n_extras, 0);
    assert_true(d->index < sts_archive_count(a));
    OK(sts_archive_at(a, d->index, &again, &e));
    assert_ptr_equal(again, d);
    nm = sts_archive_name(a, d->index, &nl);
    assert_true(nl == d->name_len && memcmp(nm, d->name, nl) == 0);
}
/* The stored bytes through a window read, a cursor of small chunks, and sts_archive_sha256. */
static void check_bytes(const sts_archive *a, const sts_tensor_desc *d, const void *data) {
    uint8_t buf[256], dig[32], want[32];
    sts_cursor *c = NULL;
    const void *chunk;
    size_t len, got = 0;
    sts_error e;
    sts_sha256 s;
    assert_true(d->nbytes <= sizeof buf);
    memset(buf, 0xEE, sizeof buf);
    OK(sts_archive_read(a, d, 0, buf, (size_t)d->nbytes, &e));
    assert_memory_equal(buf, data, (size_t)d->nbytes);
    if (d->nbytes > 2) {
        OK(sts_archive_read(a, d, 1, buf, (size_t)d->nbytes - 2, &e));
        assert_memory_equal(buf, (const uint8_t *)data + 1, (size_t)d->nbytes - 2);
    }
    OK(sts_cursor_open(a, d, 0, d->nbytes, 3, NULL, &c, &e));
    for (;;) {
        OK(sts_cursor_next(c, &chunk, &len, &e));
        if (!len) break;
        assert_true(len <= 3 && got + len <= d->nbytes);
        assert_memory_equal(chunk, (const uint8_t *)data + got, len);
        got += len;
    }
    sts_cursor_close(c);
    assert_int_equal(got, d->nbytes);
    OK(sts_archive_sha256(a, d, dig, &e));
    sts_sha256_init(&s);
    sts_sha256_update(&s, data, (size_t)d->nbytes);
    sts_sha256_final(&s, want);
    assert_memory_equal(dig, want, 32);
}

/* ---- element types ---- */
static void test_types(void **state) {
    int d, ok;
    (void)state;
    for (d = 0; d < STS_DTYPE_COUNT; d++) {
        const sts_type *t = sts_type_of((sts_dtype)d);
        unsigned bits = sts_dtype_bits((sts_dtype)d);
        assert_non_null(t);
        assert_string_equal(t->name, sts_dtype_name((sts_dtype)d));
        assert_int_equal(t->plain, 1);
        assert_int_equal(t->bits, bits);
        assert_int_equal(t->block_elems, 1);
        assert_int_equal(t->block_bytes, bits % 8 ? 0 : bits / 8);
        assert_int_equal(t->dtype, d);
        assert_int_equal(t->align, bits < 8 ? 1 : d == STS_DTYPE_C64 ? 4 : bits / 8);
        assert_int_equal(t->swap, bits <= 8 ? 0 : d == STS_DTYPE_C64 ? 4 : bits / 8);
        assert_int_equal(sts_type_bytes(t, 16, &ok), 16 * bits / 8);
        assert_int_equal(ok, 1);
    }
    assert_null(sts_type_of(STS_DTYPE_COUNT));
    assert_null(sts_type_of((sts_dtype)-1));
    assert_int_equal(sts_type_bytes(sts_type_of(STS_DTYPE_F4), 3, &ok), 0);  /* 12 bits: no whole byte */
    assert_int_equal(ok, 0);
    assert_int_equal(sts_type_bytes(sts_type_of(STS_DTYPE_F6_E2M3), 4, &ok), 3);
    assert_int_equal(ok, 1);
    assert_int_equal(sts_type_bytes(sts_type_of(STS_DTYPE_F64), UINT64_MAX / 4, &ok), 0);  /* overflows */
    assert_int_equal(ok, 0);
    assert_int_equal(sts_type_bytes(NULL, 1, &ok), 0);
    assert_int_equal(ok, 0);
    {   /* a block type: 32 elements in 18 bytes (GGUF Q4_0) */
        sts_type q = { "Q4_0", 0, 0, 32, 18, 2, 0, STS_DTYPE_COUNT };
        assert_int_equal(sts_type_bytes(&q, 64, &ok), 36);
        assert_int_equal(ok, 1);
        assert_int_equal(sts_type_bytes(&q, 33, &ok), 0);
        assert_int_equal(ok, 0);
    }
}

/* ---- golden: one safetensors file, four ways in ---- */
static void check_mixed(const sts_archive *a, int how) {
    sts_file *f;
    sts_error e;
    uint64_t hdr = tu_le64(g_mixed_bytes), data_at = 8 + hdr, covered = 0;
    size_t i;
    assert_string_equal(sts_archive_format(a), "safetensors");
    assert_string_equal(sts_archive_provider(a), "safetensors");
    assert_int_equal(sts_archive_version(a), 0);
    assert_int_equal(sts_archive_count(a), g_nt);
    assert_int_equal(sts_archive_files(a), 1);
    assert_string_equal(sts_archive_file(a, 0), how < 2 ? g_mixed : how == 2 ? "<memory>" : "<source>");
    assert_null(sts_archive_file(a, 1));
    assert_int_equal(sts_archive_total_bytes(a), g_mixed_size - data_at);
    assert_int_equal(sts_archive_meta_count(a), 2);
    for (i = 0; i < 2; i++) {
        const sts_meta *m = sts_archive_meta_at(a, i), *f2 = sts_archive_meta_find(a, g_meta[i].key, g_meta[i].key_len);
        assert_ptr_equal(m, f2);
        assert_int_equal(m->type, STS_META_STRING);
        assert_true(m->key_len == g_meta[i].key_len && memcmp(m->key, g_meta[i].key, m->key_len) == 0);
        assert_true(m->str_len == g_meta[i].value_len && memcmp(m->str, g_meta[i].value, m->str_len) == 0);
    }
    assert_null(sts_archive_meta_at(a, 2));
    assert_null(sts_archive_meta_find(a, "nope", 4));
    OK(sts_parse(g_mixed_bytes, g_mixed_size, NULL, &f, &e));
    for (i = 0; i < g_nt; i++) {
        const sts_tensor_desc *d = find(a, g_t[i].name);
        const sts_tensor *t = sts_find(f, g_t[i].name, strlen(g_t[i].name));
        check_desc(a, d, g_t[i].name, g_t[i].dt, g_t[i].rank, g_t[i].shape, g_t[i].n, 0, g_mixed_bytes, g_mixed_size,
                   g_t[i].data, 0);
        assert_int_equal(d->offset, sts_tensor_file_offset(f, t));  /* 8 + N + begin, as the parser says */
        assert_int_equal(d->index, (size_t)(t - sts_at(f, 0)));  /* its position in the file's order */
        covered += d->nbytes;
        check_bytes(a, d, g_t[i].data);
        if (how != 1 && how != 3) check_view(a, d, g_t[i].data, how == 2 ? g_mixed_bytes + d->offset : NULL);  /* mapped, in memory */
    }
    assert_int_equal(covered, g_mixed_size - data_at);  /* the tensors tile the data section */
    for (i = 0; i < sts_archive_count(a); i++) {  /* names in the file's (data offset) order */
        size_t nl;
        const char *nm = sts_archive_name(a, i, &nl);
        assert_true(nl == sts_at(f, i)->name_len && memcmp(nm, sts_at(f, i)->name, nl) == 0);
    }
    assert_null(sts_archive_name(a, g_nt, NULL));
    sts_close(f);
}
static void test_golden_safetensors(void **state) {
    int how;
    (void)state;
    for (how = 0; how < 4; how++) {  /* mapped path, pread path, bytes, callback */
        sts_input in;
        sts_source src;
        ta_src s;
        sts_archive *a;
        if (how < 2) in = ta_in_path(g_mixed, how);
        else if (how == 2) in = ta_in_bytes(g_mixed_bytes, g_mixed_size);
        else { src = ta_src_init(&s, g_mixed_bytes, g_mixed_size); in = ta_in_source(&src); }
        a = open_in(NULL, &in, NULL);
        check_mixed(a, how);
        assert_int_equal(sts_archive_get_stats(a).files_opened, how < 2 ? 1 : 0);
        sts_archive_close(a);
        if (how == 3) assert_int_equal(s.bad, 0);
    }
    {   /* not found, out of range, wrong arguments */
        sts_archive *a = open_path(g_mixed);
        const sts_tensor_desc *d = NULL;
        sts_error e;
        tu_err_check("find", sts_archive_find(a, "nope", 4, &d, &e), &e, STS_ERR_NOT_FOUND, STS_RULE_NOT_FOUND, "nope", NULL);
        tu_err_check("at", sts_archive_at(a, g_nt, &d, &e), &e, STS_ERR_NOT_FOUND, STS_RULE_NOT_FOUND, NULL);
        tu_err_check("find NULL", sts_archive_find(a, NULL, 3, &d, &e), &e, STS_ERR_INVALID_ARGUMENT, STS_RULE_ARGUMENT, NULL);
        tu_err_check("at NULL", sts_archive_at(NULL, 0, &d, &e), &e, STS_ERR_INVALID_ARGUMENT, STS_RULE_ARGUMENT, NULL);
        assert_int_equal(sts_archive_count(NULL), 0);
        assert_null(sts_archive_format(NULL));
        sts_archive_close(a);
        sts_archive_close(NULL);
    }
}

/* ---- golden: the Hugging Face sharded checkpoint ---- */
static void check_hf(const sts_archive *a, const char *dir) {
    static const char *const order[7] = { "lm_head.weight", "model.embed.weight", "model.layers.0.attn.q.weight",
                                          "model.layers.0.mlp.bias", "model.layers.1.step", "model.mask",
                                          "model.norm.weight" };
    char p[512];
    size_t i, fn[2];
    uint8_t *bytes[2];
    const sts_meta *m;
    assert_string_equal(sts_archive_format(a), "safetensors-sharded");
    assert_string_equal(sts_archive_provider(a), "sharded");
    assert_int_equal(sts_archive_count(a), 7);
    assert_int_equal(sts_archive_total_bytes(a), g_hs_total);
    assert_int_equal(sts_archive_files(a), 2);  /* in weight_map order: lm_head's shard first */
    tf_join(p, sizeof p, dir, g_hs_file[3]);
    assert_string_equal(sts_archive_file(a, 0), p);
    bytes[0] = tf_read(p, &fn[0]);
    tf_join(p, sizeof p, dir, g_hs_file[0]);
    assert_string_equal(sts_archive_file(a, 1), p);
    bytes[1] = tf_read(p, &fn[1]);
    assert_int_equal(sts_archive_meta_count(a), 1);
    m = sts_archive_meta_find(a, "total_size", 10);
    assert_non_null(m);
    assert_int_equal(m->type, STS_META_UINT);
    assert_int_equal(m->u, g_hs_total);
    for (i = 0; i < 7; i++) {  /* names come from the index: no shard is opened */
        size_t nl;
        const char *nm = sts_archive_name(a, i, &nl);
        assert_true(nl == strlen(order[i]) && memcmp(nm, order[i], nl) == 0);
    }
    assert_int_equal(sts_archive_get_stats(a).files_opened, 1);
    for (i = 0; i < 7; i++) {
        const gt *t = &g_hs[i];
        size_t file = i < 3 ? 1 : 0;
        const sts_tensor_desc *d = find(a, t->name);
        check_desc(a, d, t->name, t->dt, t->rank, t->shape, t->n, file, bytes[file], fn[file], t->data, 0);
        check_bytes(a, d, t->data);
        check_view(a, d, t->data, NULL);
    }
    assert_int_equal(sts_archive_get_stats(a).files_opened, 3);
    free(bytes[0]);
    free(bytes[1]);
}
static void test_golden_sharded(void **state) {
    char p[512], dir2[512];
    sts_archive *a;
    (void)state;
    a = open_path(g_hf);  /* the folder */
    check_hf(a, g_hf);
    sts_archive_close(a);
    tf_join(p, sizeof p, g_hf, "model.safetensors.index.json");  /* the index file */
    a = open_path(p);
    assert_int_equal(sts_archive_get_stats(a).files_opened, 1);
    check_hf(a, g_hf);
    sts_archive_close(a);
    {   /* our _tensor_index.json beside Hugging Face's: Hugging Face's is preferred; alone, ours is read */
        tu_sb b = { 0, 0, 0 };
        ta_wm map[1];
        map[0].name = "lm_head.weight";
        map[0].file = g_hs_file[3];
        ta_hf_index(&b, 24, NULL, map, 1);  /* a shard with more tensors than this index gives it */
        tf_join(p, sizeof p, g_hf, "_tensor_index.json");
        tf_write(p, b.p, b.n);
        tu_sb_free(&b);
        a = open_path(g_hf);
        assert_int_equal(sts_archive_count(a), 7);
        sts_archive_close(a);
        dr_fresh(dir2, sizeof dir2, "ours");
        mkdir(dir2, 0755);
        {
            char q[512];
            size_t n;
            uint8_t *x;
            tf_join(q, sizeof q, dir2, g_hs_file[3]);
            tf_join(p, sizeof p, g_hf, g_hs_file[3]);
            x = tf_read(p, &n);
            tf_write(q, x, n);
            free(x);
            tf_join(p, sizeof p, g_hf, "_tensor_index.json");
            tf_join(q, sizeof q, dir2, "_tensor_index.json");
            x = tf_read(p, &n);
            tf_write(q, x, n);
            free(x);
            unlink(p);
        }
        a = open_path(dir2);
        assert_string_equal(sts_archive_format(a), "safetensors-sharded");
        assert_int_equal(sts_archive_count(a), 1);
        assert_int_equal(sts_archive_total_bytes(a), 24);
        {
            const sts_tensor_desc *d = NULL;
            sts_error e;
            /* the shard holds tensors the index does not give it */
            tu_err_check("extra", sts_archive_find(a, "lm_head.weight", 14, &d, &e), &e, STS_ERR_FORMAT,
                         STS_RULE_SHARDED_SHARD, "holds tensor", "which the index does not list", NULL);
        }
        sts_archive_close(a);
    }
}

/* The index's metadata scalars: strings, integers, floats, booleans; null and nested values skipped. */
static void test_sharded_metadata(void **state) {
    char dir[512], p[512];
    tu_sb b = { 0, 0, 0 };
    ta_wm map[1];
    sts_archive *a;
    const sts_meta *m;
    (void)state;
    dr_fresh(dir, sizeof dir, "meta");
    mkdir(dir, 0755);
    tf_join(p, sizeof p, dir, "model-00001-of-00001.safetensors");
    write_gts(p, g_hs + 2, 1, NULL, 0);
    map[0].name = g_hs[2].name;
    map[0].file = "model-00001-of-00001.safetensors";
    ta_hf_index(&b, 12, "\"a_str\": \"x\\ty\", \"b_float\": 2.5, \"c_true\": true, \"d_false\": false, \"e_null\": null, "
                "\"f_obj\": {\"k\": 1}, \"g_arr\": [1, 2], \"h_neg\": -7, \"i_min\": -9223372036854775808, "
                "\"j_below\": -9223372036854775809, \"k_exp\": -1e3", map, 1);
    tf_join(p, sizeof p, dir, "model.safetensors.index.json");
    tf_write(p, b.p, b.n);
    tu_sb_free(&b);
    a = open_path(p);
    assert_int_equal(sts_archive_meta_count(a), 9);
    m = sts_archive_meta_find(a, "a_str", 5);
    assert_true(m && m->type == STS_META_STRING && m->str_len == 3 && memcmp(m->str, "x\ty", 3) == 0);
    m = sts_archive_meta_find(a, "b_float", 7);
    assert_true(m && m->type == STS_META_FLOAT && m->f == 2.5);
    m = sts_archive_meta_find(a, "c_true", 6);
    assert_true(m && m->type == STS_META_BOOL && m->u == 1);
    m = sts_archive_meta_find(a, "d_false", 7);
    assert_true(m && m->type == STS_META_BOOL && m->u == 0);
    assert_null(sts_archive_meta_find(a, "e_null", 6));
    assert_null(sts_archive_meta_find(a, "f_obj", 5));
    assert_null(sts_archive_meta_find(a, "g_arr", 5));
    m = sts_archive_meta_find(a, "h_neg", 5);
    assert_non_null(m);
    assert_int_equal(m->type, STS_META_INT);  /* an integer, not a float */
    assert_int_equal(m->i, -7);
    m = sts_archive_meta_find(a, "i_min", 5);
    assert_true(m && m->type == STS_META_INT && m->i == INT64_MIN);
    m = sts_archive_meta_find(a, "j_below", 7);  /* below INT64_MIN: a float */
    assert_true(m && m->type == STS_META_FLOAT && m->f == -9223372036854775809.0);
    m = sts_archive_meta_find(a, "k_exp", 5);
    assert_true(m && m->type == STS_META_FLOAT && m->f == -1000.0);
    m = sts_archive_meta_find(a, "total_size", 10);
    assert_true(m && m->type == STS_META_UINT && m->u == 12);
    assert_int_equal(sts_archive_total_bytes(a), 12);
    sts_archive_close(a);
}

/* ---- golden: datasets ---- */
/* Every key of the dataset (a long scan of the dataset reader) against the archive's descriptor
   and bytes; the values against the writer's model (bt: batch mode). */
static void check_dataset(const char *dir, const dr_batch *bt, uint64_t samples) {
    int kv = bt == NULL;
    sts_archive *a = open_path(dir);
    sts_dataset *ds = dr_open(dir, 0);
    sts_dataset_info info = sts_dataset_describe(ds);
    sts_scan_spec sp;
    sts_scan *sc;
    sts_error e;
    const sts_view *c;
    size_t nc, rows = 0, i;
    uint64_t total = 0;
    sts_result r;
    const sts_meta *m;
    uint8_t *files[8] = { 0 };
    size_t sizes[8];
    assert_string_equal(sts_archive_format(a), "dataset");
    assert_string_equal(sts_archive_provider(a), "dataset");
    assert_int_equal(sts_archive_files(a), info.files);
    assert_true(info.files <= 8);
    assert_int_equal(sts_archive_get_stats(a).files_opened, 1);
    for (i = 0; i < info.files; i++) {
        char p[512];
        tf_join(p, sizeof p, dir, sts_dataset_file(ds, i));
        assert_string_equal(sts_archive_file(a, i), p);
        files[i] = tf_read(p, &sizes[i]);
    }
    m = sts_archive_meta_find(a, "mode", 4);
    assert_true(m && m->type == STS_META_STRING && m->str_len == (kv ? 2u : 5u) && memcmp(m->str, kv ? "kv" : "batch", m->str_len) == 0);
    m = sts_archive_meta_find(a, "total_samples", 13);
    assert_true(m && m->type == STS_META_UINT);
    assert_int_equal(m->u, samples);
    memset(&sp, 0, sizeof sp);
    sp.long_form = 1;
    sp.with_data = 1;
    OK(sts_scan_open(ds, &sp, &sc, &e));
    while ((r = sts_scan_next(sc, &c, &nc, &e)) == STS_OK && nc) {
        char key[256];
        const sts_tensor_desc *d;
        if (kv) snprintf(key, sizeof key, "%.*s", (int)c->key_len, c->key);
        else snprintf(key, sizeof key, "%s/%.*s", sts_dataset_file(ds, c->file), (int)c->key_len, c->key);  /* "<shard>/<column>" */
        d = find(a, key);
        check_desc(a, d, key, c->dtype, c->rank, c->shape, c->nbytes, c->file, files[c->file], sizes[c->file], c->data, 0);
        check_bytes(a, d, c->data);
        check_view(a, d, c->data, NULL);
        if (kv) {
            uint32_t task = 0, row = 0;
            if (dr_kv_parse(c->key, c->key_len, &task, &row)) dr_check_kv_view(c, task, row);
            else {  /* a lastWin duplicate "dup_K": the last shard's copy */
                assert_memory_equal(c->key, "dup_", 4);
                assert_int_equal(c->file, info.files - 1);
                assert_int_equal(d->file, info.files - 1);
            }
        } else {
            dr_check_batch_cell(bt, sts_dataset_file(ds, c->file), c);
        }
        total += c->nbytes;
        rows++;
    }
    assert_int_equal(r, STS_OK);
    sts_scan_close(sc);
    assert_int_equal(sts_archive_count(a), rows);
    assert_int_equal(sts_archive_total_bytes(a), total);
    assert_int_equal(sts_archive_get_stats(a).files_opened, 1 + info.files);
    for (i = 0; i < info.files; i++) free(files[i]);
    sts_dataset_close(ds);
    sts_archive_close(a);
}
static void test_golden_dataset(void **state) {
    (void)state;
    check_dataset(g_kv, NULL, 6);
    {   /* lastWin: earlier shards hold tensors no key names (the losers' copies) */
        char dir[512];
        dr_kv kv;
        dr_fresh(dir, sizeof dir, "lastwin");
        memset(&kv, 0, sizeof kv);
        kv.tasks = 3;
        kv.rows = 2;
        kv.last_win = 1;
        kv.dup_every = 2;
        dr_write_kv(dir, &kv);
        check_dataset(dir, NULL, 10);
    }
    check_dataset(g_batch, &g_bt, 8);
    check_dataset(g_batch_ix, &g_bt_ix, 8);
    {   /* batch keys are "<shard>/<column>" */
        sts_archive *a = open_path(g_batch);
        size_t nl;
        const char *nm = sts_archive_name(a, 0, &nl);
        uint32_t task, shard;
        assert_true(nl > 4 && memchr(nm, '/', nl) != NULL);
        assert_true(dr_shard_name(nm, &task, &shard));
        sts_archive_close(a);
    }
}

/* ---- golden: .npy ---- */
static void test_golden_npy(void **state) {
    size_t k;
    (void)state;
    for (k = 0; k < NNPY; k++) {
        const npyf *f = &g_npyf[k];
        tu_sb b = { 0, 0, 0 }, dict = { 0, 0, 0 };
        char p[512], name[64];
        int how;
        uint64_t at;
        npy_make(&b, f, k);
        ta_npy_dict(&dict, f->descr, 0, f->shape, f->rank);
        at = ta_npy_data_at(f->major, dict.p);
        assert_int_equal(at % 64, 0);
        tf_join(p, sizeof p, g_npy, f->file);
        snprintf(name, sizeof name, "%.*s", (int)(strlen(f->file) - 4), f->file);
        for (how = 0; how < 3; how++) {  /* path, bytes, callback */
            sts_input in;
            sts_source src;
            ta_src s;
            sts_archive *a;
            const sts_tensor_desc *d = NULL;
            sts_error e;
            if (how == 0) in = ta_in_path(p, 0);
            else if (how == 1) in = ta_in_bytes(b.p, b.n);
            else { src = ta_src_init(&s, b.p, b.n); in = ta_in_source(&src); }
            a = open_in(NULL, &in, NULL);
            assert_string_equal(sts_archive_format(a), "npy");
            assert_string_equal(sts_archive_provider(a), "npy");
            assert_int_equal(sts_archive_version(a), f->major);
            assert_int_equal(sts_archive_count(a), 1);
            assert_int_equal(sts_archive_files(a), 1);
            assert_int_equal(sts_archive_meta_count(a), 0);
            assert_int_equal(sts_archive_total_bytes(a), npy_bytes(f));
            OK(sts_archive_at(a, 0, &d, &e));
            check_desc(a, d, how ? "array" : name, f->dt, f->rank, f->shape, npy_bytes(f), 0, (const uint8_t *)b.p, b.n,
                       b.p + at, f->big);
            assert_int_equal(d->offset, at);
            if (how == 2) {  /* one request: the probe prefix holds the whole file */
                assert_int_equal(s.requests, 1);
                assert_int_equal(s.bytes_read, b.n);
            }
            check_bytes(a, d, b.p + at);
            if (how == 2) assert_int_equal(s.bad, 0);
            sts_archive_close(a);
        }
        tu_sb_free(&b);
        tu_sb_free(&dict);
    }
    {   /* a name without an extension, and a hidden one */
        tu_sb b = { 0, 0, 0 };
        char p[512];
        sts_archive *a;
        const sts_tensor_desc *d = NULL;
        sts_error e;
        npy_make(&b, &g_npyf[0], 0);
        tf_join(p, sizeof p, g_root, "weights");
        tf_write(p, b.p, b.n);
        a = open_path(p);
        OK(sts_archive_at(a, 0, &d, &e));
        assert_true(d->name_len == 7 && memcmp(d->name, "weights", 7) == 0);
        sts_archive_close(a);
        tf_join(p, sizeof p, g_root, ".hidden");
        tf_write(p, b.p, b.n);
        a = open_path(p);
        OK(sts_archive_at(a, 0, &d, &e));
        assert_true(d->name_len == 7 && memcmp(d->name, ".hidden", 7) == 0);
        sts_archive_close(a);
        tu_sb_free(&b);
    }
}

/* Fortran order, and every malformed header: the verdict, its rule and a word of its message. */
typedef struct npy_bad { const char *label; int major; const char *dict; int64_t data; sts_result code; sts_rule rule; const char *word; } npy_bad;
static void test_npy_refused(void **state) {
    static const npy_bad cases[] = {
        { "fortran", 1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", 24, STS_ERR_UNSUPPORTED, STS_RULE_NPY_FORTRAN, "Fortran" },
        { "version 4", 4, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", 8, STS_ERR_FORMAT, STS_RULE_NPY_HEADER, "version 4" },
        { "version 0", 0, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", 8, STS_ERR_FORMAT, STS_RULE_NPY_HEADER, "version 0" },
        { "not a dict", 1, "['descr', '<f4']", 0, STS_ERR_FORMAT, STS_RULE_NPY_HEADER, "not a dict" },
        { "no descr", 1, "{'fortran_order': False, 'shape': (2,), }", 8, STS_ERR_FORMAT, STS_RULE_NPY_HEADER, "missing" },
        { "no shape", 1, "{'descr': '<f4', 'fortran_order': False, }", 4, STS_ERR_FORMAT, STS_RULE_NPY_HEADER, "missing" },
        { "no fortran", 1, "{'descr': '<f4', 'shape': (2,), }", 8, STS_ERR_FORMAT, STS_RULE_NPY_HEADER, "missing" },
        { "descr twice", 1, "{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", 8, STS_ERR_FORMAT, STS_RULE_NPY_HEADER, "twice" },
        { "shape twice", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'shape': (2,), }", 8, STS_ERR_FORMAT, STS_RULE_NPY_HEADER, "twice" },
        { "other key", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1, }", 8, STS_ERR_FORMAT, STS_RULE_NPY_HEADER, "other than" },
        { "fortran 0", 1, "{'descr': '<f4', 'fortran_order': 0, 'shape': (2,), }", 8, STS_ERR_FORMAT, STS_RULE_NPY_HEADER, "True or False" },
        { "shape list", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': [2], }", 8, STS_ERR_FORMAT, STS_RULE_NPY_HEADER, "tuple" },
        { "shape -1", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }", 8, STS_ERR_FORMAT, STS_RULE_NPY_HEADER, "integer" },
        { "shape 2^64", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (18446744073709551616,), }", 8, STS_ERR_FORMAT, STS_RULE_NPY_HEADER, "integer" },
        { "leading zero", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (02,), }", 8, STS_ERR_FORMAT, STS_RULE_NPY_HEADER, "leading zero" },
        { "shape junk", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2 3), }", 24, STS_ERR_FORMAT, STS_RULE_NPY_HEADER, "malformed" },
        { "shape overflow", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296), }", 0, STS_ERR_FORMAT, STS_RULE_NPY_HEADER, "overflows" },
        { "no comma", 1, "{'descr': '<f4' 'fortran_order': False, 'shape': (2,), }", 8, STS_ERR_FORMAT, STS_RULE_NPY_HEADER, "malformed" },
        { "no colon", 1, "{'descr' '<f4', 'fortran_order': False, 'shape': (2,), }", 8, STS_ERR_FORMAT, STS_RULE_NPY_HEADER, "':'" },
        { "unquoted key", 1, "{descr: '<f4', 'fortran_order': False, 'shape': (2,), }", 8, STS_ERR_FORMAT, STS_RULE_NPY_HEADER, "quoted" },
        { "escape", 1, "{'descr': '<f\\4', 'fortran_order': False, 'shape': (2,), }", 8, STS_ERR_FORMAT, STS_RULE_NPY_HEADER, "not a string" },
        { "structured", 1, "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }", 8, STS_ERR_FORMAT, STS_RULE_NPY_HEADER, "structured" },
        { "trailing", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), } x", 8, STS_ERR_FORMAT, STS_RULE_NPY_HEADER, "follow the dict" },
        { "too few bytes", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 23, STS_ERR_FORMAT, STS_RULE_NPY_HEADER, "24 data bytes" },
        { "too many bytes", 2, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 25, STS_ERR_FORMAT, STS_RULE_NPY_HEADER, "the file has 25" },
        { "unicode", 1, "{'descr': '<U3', 'fortran_order': False, 'shape': (2,), }", 24, STS_ERR_UNSUPPORTED, STS_RULE_UNSUPPORTED, "<U3" },
        { "object", 1, "{'descr': '|O', 'fortran_order': False, 'shape': (2,), }", 16, STS_ERR_UNSUPPORTED, STS_RULE_UNSUPPORTED, "|O" },
        { "pipe i4", 1, "{'descr': '|i4', 'fortran_order': False, 'shape': (2,), }", 8, STS_ERR_UNSUPPORTED, STS_RULE_UNSUPPORTED, "|i4" },
        { "f16 (float128)", 1, "{'descr': '<f16', 'fortran_order': False, 'shape': (1,), }", 16, STS_ERR_UNSUPPORTED, STS_RULE_UNSUPPORTED, "<f16" },
        { "c16", 1, "{'descr': '<c16', 'fortran_order': False, 'shape': (1,), }", 16, STS_ERR_UNSUPPORTED, STS_RULE_UNSUPPORTED, "<c16" },
    };
    tu_sb notes = { 0, 0, 0 };
    size_t k;
    (void)state;
    for (k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const npy_bad *c = &cases[k];
        tu_sb b = { 0, 0, 0 };
        uint8_t data[32];
        sts_input in;
        sts_archive *a = (sts_archive *)&notes;
        sts_error e;
        sts_result r;
        int64_t n = c->data, i;
        if (strcmp(c->label, "shape overflow") == 0) n = 0;
        for (i = 0; i < n; i++) data[i] = (uint8_t)i;
        ta_npy_file(&b, c->major, c->dict, data, (size_t)n);
        in = ta_in_bytes(b.p, b.n);
        r = sts_archive_open(NULL, &in, NULL, &a, &e);
        if (tu_err_note(&notes, c->label, r, &e, c->code, c->rule, c->word, NULL) && a != (sts_archive *)&notes)
            tu_sb_printf(&notes, "\n  %s: out was changed on failure", c->label);
        if (r == STS_OK) sts_archive_close(a);
        tu_sb_free(&b);
    }
    {   /* the fixed part cut off: 8 and 11 bytes (magic and version only; a v2 length cut off) */
        static const uint8_t v1[8] = { 0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0 };
        static const uint8_t v2[11] = { 0x93, 'N', 'U', 'M', 'P', 'Y', 2, 0, 10, 0, 0 };
        static const uint8_t longer[12] = { 0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, 0xff, 0x7f, '{', '}' };
        sts_input in = ta_in_bytes(v1, sizeof v1);
        sts_archive *a;
        sts_error e;
        tu_err_note(&notes, "8 bytes", sts_archive_open(NULL, &in, NULL, &a, &e), &e, STS_ERR_FORMAT, STS_RULE_NPY_HEADER, "too short", NULL);
        in = ta_in_bytes(v2, sizeof v2);
        tu_err_note(&notes, "11 bytes v2", sts_archive_open(NULL, &in, NULL, &a, &e), &e, STS_ERR_FORMAT, STS_RULE_NPY_HEADER, "cut off", NULL);
        in = ta_in_bytes(longer, sizeof longer);
        tu_err_note(&notes, "header past the end", sts_archive_open(NULL, &in, NULL, &a, &e), &e, STS_ERR_FORMAT, STS_RULE_NPY_HEADER, "past the end", NULL);
    }
    {   /* a header that is not ASCII (version 1) */
        tu_sb b = { 0, 0, 0 };
        sts_input in;
        sts_archive *a;
        sts_error e;
        ta_npy_file(&b, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), '\xff': 1}", "abcd", 4);
        in = ta_in_bytes(b.p, b.n);
        tu_err_note(&notes, "not ASCII", sts_archive_open(NULL, &in, NULL, &a, &e), &e, STS_ERR_FORMAT, STS_RULE_NPY_HEADER, "ASCII", NULL);
        tu_sb_free(&b);
    }
    tu_notes_done(&notes, "npy refusals");
}

/* ---- probing ---- */
typedef struct prov {
    const char *tag;                /* the tensor name it adds; what its probe says */
    int supported, confidence;
    uint32_t version;
    long probes, opens;
    int mode;                       /* open: 0 = one tensor over the whole source, 1.. = a builder misuse */
} prov;
static void prov_probe(void *user, const sts_probe_input *in, sts_probe_result *o) {
    prov *p = (prov *)user;
    p->probes++;
    assert_int_equal(o->supported, 0);  /* zeroed before the call */
    assert_int_equal(o->confidence, 0);
    assert_int_equal(o->reason[0], 0);
    o->supported = p->supported;
    o->confidence = p->confidence;
    o->version = p->version;
    if (p->mode == 99) memset(o->reason, 'r', sizeof o->reason);  /* no NUL: the archive ends it */
    else snprintf(o->reason, sizeof o->reason, "%s says %s (%llu bytes)", p->tag, p->supported ? "yes" : "no",
                  (unsigned long long)in->size);
}
static sts_result prov_open(void *user, sts_builder *b, sts_error *err) {
    prov *p = (prov *)user;
    sts_tensor_desc d;
    uint64_t shape[1];
    sts_result r;
    sts_meta m;
    uint8_t first = 0;
    p->opens++;
    if ((r = sts_builder_read(b, 0, &first, 1, err)) != STS_OK) return r;
    memset(&m, 0, sizeof m);
    m.key = "first"; m.key_len = 5; m.type = STS_META_UINT; m.u = first;
    if ((r = sts_builder_add_meta(b, &m, err)) != STS_OK) return r;
    memset(&d, 0, sizeof d);
    shape[0] = sts_builder_size(b);
    d.name = p->tag; d.name_len = strlen(p->tag);
    d.type = sts_type_of(STS_DTYPE_U8);
    d.rank = 1; d.shape = shape; d.numel = shape[0]; d.nbytes = shape[0];
    switch (p->mode) {
    case 1: d.nbytes++; break;                                       /* the wrong size */
    case 2: d.offset = 1; break;                                     /* bytes past the end */
    case 3: if ((r = sts_builder_add_tensor(b, &d, err)) != STS_OK) return r; break;  /* the name twice */
    case 4: d.numel++; break;                                        /* the wrong count */
    case 5: d.file = 1; break;                                       /* another file */
    case 6: d.type = NULL; break;                                    /* no type */
    default: break;
    }
    return sts_builder_add_tensor(b, &d, err);
}
static sts_provider provider(const char *format, const char *name, prov *p) {
    sts_provider x;
    x.format = format;
    x.name = name;
    x.probe = prov_probe;
    x.open = prov_open;
    x.user = p;
    return x;
}
static sts_registry *registry(int builtins) {
    sts_registry *r = NULL;
    sts_error e;
    OK(sts_registry_new(NULL, builtins, &r, &e));
    return r;
}
static void add(sts_registry *r, const char *format, const char *name, prov *p) {
    sts_provider x = provider(format, name, p);
    sts_error e;
    OK(sts_registry_add(r, &x, &e));
}
static void prov_init(prov *p, const char *tag, int supported, int confidence) {
    memset(p, 0, sizeof *p);
    p->tag = tag;
    p->supported = supported;
    p->confidence = confidence;
    p->version = 7;
}

static void test_probe_tie(void **state) {
    static const uint8_t bytes[5] = { 9, 8, 7, 6, 5 };
    sts_input in = ta_in_bytes(bytes, sizeof bytes);
    prov pa, pb;
    int order;
    (void)state;
    for (order = 0; order < 2; order++) {
        sts_registry *r = registry(0);
        sts_archive *a;
        sts_probe_result res[2];
        size_t win = 99;
        sts_error e;
        const sts_tensor_desc *d = NULL;
        prov_init(&pa, "A", 1, 50);
        prov_init(&pb, "B", 1, 50);
        if (order == 0) { add(r, "fmt-a", "first-a", &pa); add(r, "fmt-b", "second-b", &pb); }
        else { add(r, "fmt-b", "first-b", &pb); add(r, "fmt-a", "second-a", &pa); }
        assert_int_equal(sts_registry_count(r), 2);
        assert_string_equal(sts_registry_at(r, 0)->name, order ? "first-b" : "first-a");
        assert_null(sts_registry_at(r, 2));
        OK(sts_probe(r, &in, NULL, res, 2, &win, &e));
        assert_int_equal(win, 0);
        assert_int_equal(res[0].confidence, 50);
        assert_int_equal(res[1].confidence, 50);
        assert_int_equal(res[0].version, 7);
        assert_string_equal(res[0].reason, order ? "B says yes (5 bytes)" : "A says yes (5 bytes)");
        a = open_in(r, &in, NULL);
        assert_string_equal(sts_archive_format(a), order ? "fmt-b" : "fmt-a");
        assert_string_equal(sts_archive_provider(a), order ? "first-b" : "first-a");
        assert_int_equal(sts_archive_version(a), 7);
        OK(sts_archive_at(a, 0, &d, &e));
        assert_true(d->name_len == 1 && d->name[0] == (order ? 'B' : 'A'));
        assert_int_equal(order ? pb.opens : pa.opens, 1);
        assert_int_equal(order ? pa.opens : pb.opens, 0);
        assert_int_equal(sts_archive_meta_find(a, "first", 5)->u, 9);
        check_bytes(a, d, bytes);
        sts_archive_close(a);
        sts_registry_free(r);
    }
}

static void test_probe_unsupported(void **state) {
    char dir[512];
    sts_input in;
    sts_archive *a = NULL;
    sts_error e;
    sts_probe_result res[4];
    size_t win = 0;
    (void)state;
    dr_fresh(dir, sizeof dir, "emptydir");
    mkdir(dir, 0755);
    in = ta_in_path(dir, 0);
    /* a folder that is neither a checkpoint nor a dataset: every built-in's reason */
    tu_err_check("empty folder", sts_archive_open(NULL, &in, NULL, &a, &e), &e, STS_ERR_UNSUPPORTED, STS_RULE_PROBE,
                 "safetensors, npy, gguf: a folder, not a file", "sharded: a folder without model.safetensors.index.json",
                 "dataset: a folder without dataset_manifest.json", NULL);
    assert_null(a);
    tu_err_check("sts_probe", sts_probe(NULL, &in, NULL, res, 4, &win, &e), &e, STS_ERR_UNSUPPORTED, STS_RULE_PROBE,
                 "safetensors", "sharded", "dataset", "npy", NULL);
    assert_true(win == SIZE_MAX);
    assert_int_equal(res[0].supported, 0);
    assert_int_equal(res[2].supported, 0);
    assert_string_equal(res[3].reason, "a folder, not a file");
    {   /* a long path: every built-in's name and reason still in the message's 255 characters */
        char up[512], deep[512];
        tf_join(up, sizeof up, dir, "a-rather-long-folder-name-for-the-models");
        mkdir(up, 0755);
        tf_join(deep, sizeof deep, up, "meta-llama-3.1-8b-instruct-and-more-words-to-make-it-longer");
        mkdir(deep, 0755);
        assert_true(strlen(deep) > 120);
        in = ta_in_path(deep, 0);
        tu_err_check("long path", sts_archive_open(NULL, &in, NULL, &a, &e), &e, STS_ERR_UNSUPPORTED, STS_RULE_PROBE,
                     "safetensors, npy, gguf: a folder, not a file",
                     "sharded: a folder without model.safetensors.index.json",
                     "dataset: a folder without dataset_manifest.json", NULL);
        in = ta_in_path(dir, 0);
    }
    {   /* callers' providers that all decline: each one's name and reason */
        static const uint8_t bytes[3] = { 1, 2, 3 };
        sts_registry *r = registry(0);
        prov p1, p2, p3;
        prov_init(&p1, "one", 0, 90);  /* a confidence without support does not count */
        prov_init(&p2, "two", 0, 0);
        prov_init(&p3, "three", 0, 0);
        p3.mode = 99;                  /* a reason without its NUL */
        add(r, "f1", "prov-one", &p1);
        add(r, "f2", NULL, &p2);       /* no name: the format id names it */
        add(r, "f3", "prov-three", &p3);
        in = ta_in_bytes(bytes, 3);
        tu_err_check("none", sts_archive_open(r, &in, NULL, &a, &e), &e, STS_ERR_UNSUPPORTED, STS_RULE_PROBE,
                     "prov-one: one says no (3 bytes)", "f2: two says no (3 bytes)", "prov-three: rrrr", NULL);
        assert_int_equal(p1.opens + p2.opens + p3.opens, 0);
        sts_registry_free(r);
        r = registry(0);  /* empty */
        tu_err_check("empty registry", sts_archive_open(r, &in, NULL, &a, &e), &e, STS_ERR_UNSUPPORTED, STS_RULE_PROBE,
                     "the registry is empty", "<memory>", NULL);
        sts_registry_free(r);
    }
    {   /* registry misuse */
        sts_registry *r = registry(0);
        sts_provider x;
        memset(&x, 0, sizeof x);
        x.format = "f";
        tu_err_check("no probe", sts_registry_add(r, &x, &e), &e, STS_ERR_INVALID_ARGUMENT, STS_RULE_ARGUMENT, NULL);
        assert_int_equal(sts_registry_count(r), 0);
        sts_registry_free(r);
        assert_int_equal(sts_registry_count(NULL), 5);
        assert_string_equal(sts_registry_at(NULL, 0)->format, "safetensors");
        assert_string_equal(sts_registry_at(NULL, 1)->format, "safetensors-sharded");
        assert_string_equal(sts_registry_at(NULL, 2)->format, "dataset");
        assert_string_equal(sts_registry_at(NULL, 3)->format, "npy");
        assert_string_equal(sts_registry_at(NULL, 4)->format, "gguf");
        assert_null(sts_registry_at(NULL, 5));
        r = registry(1);
        assert_int_equal(sts_registry_count(r), 5);
        assert_string_equal(sts_registry_at(r, 3)->name, "npy");
        assert_string_equal(sts_registry_at(r, 4)->name, "gguf");
        sts_registry_free(r);
    }
    {   /* inputs that are not exactly one thing */
        sts_input bad;
        sts_source src;
        ta_src s;
        memset(&bad, 0, sizeof bad);
        tu_err_check("nothing", sts_archive_open(NULL, &bad, NULL, &a, &e), &e, STS_ERR_INVALID_ARGUMENT, STS_RULE_ARGUMENT, NULL);
        src = ta_src_init(&s, "x", 1);
        bad.path = g_mixed;
        bad.source = &src;
        tu_err_check("two things", sts_archive_open(NULL, &bad, NULL, &a, &e), &e, STS_ERR_INVALID_ARGUMENT, STS_RULE_ARGUMENT, NULL);
        in = ta_in_path("/nonexistent/sts/x.safetensors", 0);
        tu_err_check("missing file", sts_archive_open(NULL, &in, NULL, &a, &e), &e, STS_ERR_IO, STS_RULE_IO, "/nonexistent/sts/x.safetensors", "ENOENT", NULL);
        assert_null(a);
    }
}

static void test_probe_clamped(void **state) {
    static const uint8_t bytes[4] = { 4, 3, 2, 1 };
    sts_input in = ta_in_bytes(bytes, sizeof bytes);
    sts_registry *r = registry(0);
    prov lo, hi, top, neg;
    sts_probe_result res[4];
    size_t win = 0;
    sts_error e;
    sts_archive *a;
    (void)state;
    prov_init(&neg, "neg", 1, -40);  /* clamped to 0, still supported */
    prov_init(&top, "top", 1, 100);
    prov_init(&hi, "hi", 1, 1000);   /* clamped to 100: ties with top, registered later, loses */
    prov_init(&lo, "lo", 0, 100);    /* declines */
    add(r, "neg", "neg", &neg);
    add(r, "top", "top", &top);
    add(r, "hi", "hi", &hi);
    add(r, "lo", "lo", &lo);
    OK(sts_probe(r, &in, NULL, res, 4, &win, &e));
    assert_int_equal(win, 1);
    assert_int_equal(res[0].confidence, 0);
    assert_int_equal(res[0].supported, 1);
    assert_int_equal(res[1].confidence, 100);
    assert_int_equal(res[2].confidence, 100);
    assert_int_equal(res[3].supported, 0);
    OK(sts_probe(r, &in, NULL, res, 1, &win, &e));  /* fewer results than providers */
    assert_int_equal(win, 1);
    a = open_in(r, &in, NULL);
    assert_string_equal(sts_archive_provider(a), "top");
    sts_archive_close(a);
    sts_registry_free(r);
    r = registry(0);
    prov_init(&neg, "neg", 1, -40);
    add(r, "neg", "neg", &neg);
    a = open_in(r, &in, NULL);  /* the only supporter wins at confidence 0 */
    assert_string_equal(sts_archive_provider(a), "neg");
    sts_archive_close(a);
    sts_registry_free(r);
}

/* A caller's .npy provider at confidence 99 outranks the built-in one (95). */
static void npy99_probe(void *user, const sts_probe_input *in, sts_probe_result *o) {
    (void)user;
    if (in->prefix_len >= 6 && memcmp(in->prefix, "\x93NUMPY", 6) == 0) {
        o->supported = 1;
        o->confidence = 99;
        o->version = 1;
        snprintf(o->reason, sizeof o->reason, "mine");
    }
}
static sts_result npy99_open(void *user, sts_builder *b, sts_error *err) {
    sts_tensor_desc d;
    uint64_t shape[1];
    uint8_t pre[10];
    sts_result r;
    uint64_t at;
    (void)user;
    if ((r = sts_builder_read(b, 0, pre, 10, err)) != STS_OK) return r;
    at = 10 + tu_le16(pre + 8);  /* version 1: the data after the header, as raw bytes */
    memset(&d, 0, sizeof d);
    shape[0] = sts_builder_size(b) - at;
    d.name = "raw"; d.name_len = 3;
    d.type = sts_type_of(STS_DTYPE_U8);
    d.rank = 1; d.shape = shape; d.numel = shape[0]; d.nbytes = shape[0]; d.offset = at;
    assert_non_null(sts_builder_options(b));
    return sts_builder_add_tensor(b, &d, err);
}
static void test_probe_outrank(void **state) {
    sts_registry *r = registry(1);
    sts_provider x;
    sts_error e;
    sts_archive *a;
    const sts_tensor_desc *d;
    char p[512];
    size_t n;
    uint8_t *bytes;
    sts_input in;
    (void)state;
    memset(&x, 0, sizeof x);
    x.format = "raw-npy";
    x.name = "my-npy";
    x.probe = npy99_probe;
    x.open = npy99_open;
    OK(sts_registry_add(r, &x, &e));
    tf_join(p, sizeof p, g_npy, "v1_f4.npy");
    bytes = tf_read(p, &n);
    in = ta_in_path(p, 0);
    a = open_in(r, &in, NULL);
    assert_string_equal(sts_archive_format(a), "raw-npy");
    assert_string_equal(sts_archive_provider(a), "my-npy");
    d = find(a, "raw");
    check_desc(a, d, "raw", STS_DTYPE_U8, 1, d->shape, 24, 0, bytes, n, bytes + 128, 0);
    assert_int_equal(d->shape[0], 24);
    assert_int_equal(d->alignment, 128);
    check_bytes(a, d, bytes + 128);
    sts_archive_close(a);
    a = open_in(NULL, &in, NULL);  /* the built-ins alone: npy */
    assert_string_equal(sts_archive_format(a), "npy");
    sts_archive_close(a);
    free(bytes);
    sts_registry_free(r);
}

/* The builder's checks: archive.provider for wrong sizes, bytes past the end, repeated names. */
static void test_builder_checks(void **state) {
    static const uint8_t bytes[16] = { 0 };
    static const struct { int mode; sts_result code; sts_rule rule; const char *word; } cases[] = {
        { 1, STS_ERR_FORMAT, STS_RULE_PROVIDER, "do not hold the shape" },
        { 2, STS_ERR_FORMAT, STS_RULE_PROVIDER, "past the end" },
        { 3, STS_ERR_FORMAT, STS_RULE_PROVIDER, "appears twice" },
        { 4, STS_ERR_FORMAT, STS_RULE_PROVIDER, "do not hold the shape" },
        { 5, STS_ERR_INVALID_ARGUMENT, STS_RULE_ARGUMENT, "file 0" },
        { 6, STS_ERR_FORMAT, STS_RULE_PROVIDER, "no type" },
    };
    sts_input in = ta_in_bytes(bytes, sizeof bytes);
    size_t k;
    (void)state;
    for (k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        tu_alloc al;
        sts_options o = tu_alloc_opts(&al, NULL);
        sts_registry *r = registry(0);
        sts_archive *a = NULL;
        sts_error e;
        prov p;
        char label[32];
        prov_init(&p, "T", 1, 10);
        p.mode = cases[k].mode;
        add(r, "t", "t", &p);
        snprintf(label, sizeof label, "builder mode %d", cases[k].mode);
        tu_err_check(label, sts_archive_open(r, &in, &o, &a, &e), &e, cases[k].code, cases[k].rule, cases[k].word, NULL);
        assert_null(a);
        tu_alloc_check(label, &al);
        sts_registry_free(r);
    }
}

/* ---- metadata-only access reads no data byte; window reads and cursors as range requests ---- */
static void test_metadata_only(void **state) {
    size_t n, i;
    uint8_t *bytes;
    (void)state;
    {   /* a header larger than the probe prefix: the prefix, then the header, nothing else */
        sts_source src;
        ta_src s;
        sts_input in;
        sts_archive *a;
        const sts_tensor_desc *d;
        sts_archive_stats st;
        uint64_t data_at;
        bytes = tf_read(g_bighead, &n);
        data_at = 8 + tu_le64(bytes);
        assert_true(data_at > STS_PROBE_BYTES + 1000 && n == data_at + 65536);
        src = ta_src_init(&s, bytes, n);
        in = ta_in_source(&src);
        a = open_in(NULL, &in, NULL);
        assert_int_equal(sts_archive_count(a), 1);
        assert_memory_equal(sts_archive_name(a, 0, NULL), "w", 1);
        d = find(a, "w");
        assert_int_equal(d->offset, data_at);
        assert_int_equal(d->nbytes, 65536);
        assert_non_null(sts_archive_meta_find(a, "pad", 3));
        assert_int_equal(s.requests, 2);
        assert_int_equal(s.ranges[0].off, 0);
        assert_int_equal(s.ranges[0].len, STS_PROBE_BYTES);
        assert_int_equal(s.bytes_read, STS_PROBE_BYTES + (data_at - 8));
        for (i = 0; i < s.nranges; i++) assert_true(s.ranges[i].off + s.ranges[i].len <= data_at);
        st = sts_archive_get_stats(a);
        assert_int_equal(st.reads, 2);
        assert_int_equal(st.bytes_read, s.bytes_read);
        assert_int_equal(st.files_opened, 0);
        {   /* a window read: one request of exactly its range */
            uint8_t buf[100];
            sts_error e;
            ta_src_reset(&s);
            OK(sts_archive_read(a, d, 1000, buf, 100, &e));
            assert_int_equal(s.requests, 1);
            assert_int_equal(s.ranges[0].off, data_at + 1000);
            assert_int_equal(s.ranges[0].len, 100);
            assert_memory_equal(buf, bytes + data_at + 1000, 100);
            /* outside the tensor: refused before any request */
            tu_err_check("past", sts_archive_read(a, d, 65500, buf, 100, &e), &e, STS_ERR_INVALID_ARGUMENT, STS_RULE_WINDOW, "w", NULL);
            tu_err_check("far", sts_archive_read(a, d, UINT64_MAX, buf, 1, &e), &e, STS_ERR_INVALID_ARGUMENT, STS_RULE_WINDOW, NULL);
            OK(sts_archive_read(a, d, 65536, buf, 0, &e));  /* an empty window at the end */
            assert_int_equal(s.requests, 1);
            /* the source failing */
            s.fail_at = 2;
            tu_err_check("source fails", sts_archive_read(a, d, 0, buf, 10, &e), &e, STS_ERR_IO, STS_RULE_IO, NULL);
            s.fail_at = 0;
        }
        sts_archive_close(a);
        assert_int_equal(s.bad, 0);
        free(bytes);
    }
    {   /* a small header: one request of the probe prefix, whatever is asked of the metadata */
        sts_source src;
        ta_src s;
        sts_input in;
        sts_archive *a;
        bytes = tf_read(g_smallhead, &n);
        src = ta_src_init(&s, bytes, n);
        in = ta_in_source(&src);
        a = open_in(NULL, &in, NULL);
        (void)find(a, "w");
        for (i = 0; i < sts_archive_count(a); i++) { const sts_tensor_desc *d; sts_error e; OK(sts_archive_at(a, i, &d, &e)); }
        assert_int_equal(s.requests, 1);
        assert_int_equal(s.bytes_read, STS_PROBE_BYTES);
        sts_archive_close(a);
        free(bytes);
    }
    {   /* the same file from a path read with pread: counted the same way */
        sts_input in = ta_in_path(g_bighead, 1);
        sts_archive *a = open_in(NULL, &in, NULL);
        sts_archive_stats st;
        (void)find(a, "w");
        st = sts_archive_get_stats(a);
        assert_int_equal(st.files_opened, 1);
        assert_int_equal(st.reads, 2);
        sts_archive_close(a);
    }
}
/* Cursors and materialising over a callback source: one request per chunk (or 1 MiB piece). */
static void test_range_requests(void **state) {
    size_t n;
    uint8_t *bytes = tf_read(g_smallhead, &n);
    sts_source src;
    ta_src s;
    sts_input in;
    sts_archive *a;
    const sts_tensor_desc *d;
    sts_cursor *c;
    const void *chunk;
    size_t len, k, got;
    sts_error e;
    static const size_t chunks[] = { 4096, 1000, 65536, 100000, 1 };
    (void)state;
    src = ta_src_init(&s, bytes, n);
    in = ta_in_source(&src);
    a = open_in(NULL, &in, NULL);
    d = find(a, "w");
    for (k = 0; k < sizeof chunks / sizeof chunks[0]; k++) {
        uint64_t off = k == 1 ? 777 : 0, win = k == 1 ? 30000 : k == 4 ? 5 : d->nbytes;
        size_t want = (size_t)((win + chunks[k] - 1) / chunks[k]), i;
        ta_src_reset(&s);
        OK(sts_cursor_open(a, d, off, win, chunks[k], NULL, &c, &e));
        assert_int_equal(s.requests, 0);  /* nothing before the first chunk */
        got = 0;
        for (i = 0;; i++) {
            OK(sts_cursor_next(c, &chunk, &len, &e));
            if (!len) break;
            assert_int_equal(s.requests, i + 1);
            assert_int_equal(s.ranges[i].off, d->offset + off + got);
            assert_int_equal(s.ranges[i].len, len);
            assert_memory_equal(chunk, bytes + d->offset + off + got, len);
            got += len;
        }
        OK(sts_cursor_next(c, &chunk, &len, &e));  /* stays at the end */
        assert_int_equal(len, 0);
        sts_cursor_close(c);
        assert_int_equal(got, win);
        assert_int_equal(s.requests, want);
    }
    tu_err_check("cursor outside", sts_cursor_open(a, d, 1, d->nbytes, 0, NULL, &c, &e), &e, STS_ERR_INVALID_ARGUMENT, STS_RULE_WINDOW, NULL);
    {   /* materialise: a copy in one request (the tensor is below 1 MiB); sha256: one request */
        ta_fac f;
        sts_factory fac;
        sts_materialized m;
        uint8_t dig[32];
        memset(&f, 0, sizeof f);
        f.wrap_answer = 1;
        fac = ta_factory(&f);
        ta_src_reset(&s);
        OK(sts_archive_materialize(a, d, &fac, NULL, &m, &e));
        assert_int_equal(m.wrapped, 0);
        assert_int_equal(f.wraps, 0);  /* no view to offer */
        assert_int_equal(s.requests, 1);
        assert_memory_equal(m.data, bytes + d->offset, 65536);
        ta_unmaterialize(&m);
        ta_src_reset(&s);
        OK(sts_archive_sha256(a, d, dig, &e));
        assert_int_equal(s.requests, 1);
        ta_src_reset(&s);
        OK(sts_archive_file_sha256(a, 0, dig, &e));
        assert_int_equal(s.requests, 1);
        assert_int_equal(s.bytes_read, n);
    }
    sts_archive_close(a);
    free(bytes);
}

/* ---- views and materialising ---- */
static void test_views(void **state) {
    sts_archive *a;
    const sts_tensor_desc *d;
    const void *v;
    sts_error e;
    sts_input in;
    (void)state;
    in = ta_in_path(g_mixed, 1);  /* read with pread: no view */
    a = open_in(NULL, &in, NULL);
    d = find(a, "f32");
    tu_err_check("pread", sts_archive_view(a, d, &v, &e), &e, STS_ERR_UNSUPPORTED, STS_RULE_VIEW, "f32", "F32", "pread", NULL);
    sts_archive_close(a);
    {   /* the options' no_mmap too */
        sts_options o;
        memset(&o, 0, sizeof o);
        o.no_mmap = 1;
        in = ta_in_path(g_mixed, 0);
        a = open_in(NULL, &in, &o);
        d = find(a, "f32");
        tu_err_check("no_mmap", sts_archive_view(a, d, &v, &e), &e, STS_ERR_UNSUPPORTED, STS_RULE_VIEW, "pread", NULL);
        sts_archive_close(a);
    }
    {   /* a callback source: no view */
        sts_source src;
        ta_src s;
        src = ta_src_init(&s, g_mixed_bytes, g_mixed_size);
        in = ta_in_source(&src);
        a = open_in(NULL, &in, NULL);
        d = find(a, "f32");
        tu_err_check("source", sts_archive_view(a, d, &v, &e), &e, STS_ERR_UNSUPPORTED, STS_RULE_VIEW, "callback source", NULL);
        sts_archive_close(a);
    }
    {   /* bytes at an odd address: a misaligned F32 has no view, a U8 has one */
        uint8_t *buf = (uint8_t *)malloc(g_mixed_size + 1);
        memcpy(buf + 1, g_mixed_bytes, g_mixed_size);
        in = ta_in_bytes(buf + 1, g_mixed_size);
        a = open_in(NULL, &in, NULL);
        d = find(a, "f32");  /* (a big-endian host says first that the bytes are little-endian) */
        tu_err_check("misaligned", sts_archive_view(a, d, &v, &e), &e, STS_ERR_UNSUPPORTED, STS_RULE_VIEW,
                     tu_big_endian() ? "little-endian" : "not aligned", NULL);
        d = find(a, "u8");
        OK(sts_archive_view(a, d, &v, &e));
        assert_ptr_equal(v, buf + 1 + d->offset);
        sts_archive_close(a);
        free(buf);
    }
    {   /* big-endian .npy: no view on a little-endian host */
        char p[512];
        tf_join(p, sizeof p, g_npy, "be_f4.npy");
        a = open_path(p);
        d = find(a, "be_f4");
        if (!tu_big_endian())
            tu_err_check("big-endian", sts_archive_view(a, d, &v, &e), &e, STS_ERR_UNSUPPORTED, STS_RULE_VIEW, "big-endian", NULL);
        sts_archive_close(a);
        tf_join(p, sizeof p, g_npy, "be_u1.npy");  /* one-byte elements have no byte order */
        a = open_path(p);
        d = find(a, "be_u1");
        OK(sts_archive_view(a, d, &v, &e));
        sts_archive_close(a);
    }
    {   /* a descriptor of another archive, and misuse */
        sts_archive *b = open_path(g_mixed);
        const sts_tensor_desc *other;
        a = open_path(g_mixed);
        other = find(b, "f32");
        tu_err_check("foreign", sts_archive_view(a, other, &v, &e), &e, STS_ERR_INVALID_ARGUMENT, STS_RULE_ARGUMENT, "not this archive's", NULL);
        {
            sts_tensor_desc copy = *find(a, "f32");
            uint8_t buf[24];
            tu_err_check("copy", sts_archive_read(a, &copy, 0, buf, 4, &e), &e, STS_ERR_INVALID_ARGUMENT, STS_RULE_ARGUMENT, NULL);
            copy.index = 999;
            tu_err_check("index", sts_archive_read(a, &copy, 0, buf, 4, &e), &e, STS_ERR_INVALID_ARGUMENT, STS_RULE_ARGUMENT, NULL);
        }
        tu_err_check("no out", sts_archive_view(a, find(a, "f32"), NULL, &e), &e, STS_ERR_INVALID_ARGUMENT, STS_RULE_ARGUMENT, NULL);
        tu_err_check("no dst", sts_archive_read(a, find(a, "f32"), 0, NULL, 4, &e), &e, STS_ERR_INVALID_ARGUMENT, STS_RULE_ARGUMENT, NULL);
        sts_archive_close(a);
        sts_archive_close(b);
    }
}

static const gt *gt_of(const char *name) {
    size_t i;
    for (i = 0; i < g_nt; i++) if (strcmp(g_t[i].name, name) == 0) return &g_t[i];
    fail_msg("no golden tensor %s", name);
    return NULL;
}
static void test_materialize_wrap_copy(void **state) {
    /* a tensor with a view on this host: BF16, or on a big-endian host bytes (the file is little-endian) */
    const char *wn = tu_big_endian() ? "u8" : "bf16";
    const gt *t = gt_of(wn);
    sts_archive *a = open_path(g_mixed);
    const sts_tensor_desc *d = find(a, wn);
    const void *v = NULL;
    ta_fac f;
    sts_factory fac;
    sts_materialize_options mo;
    sts_materialized m;
    sts_error e;
    uint8_t host[64];
    (void)state;
    OK(sts_archive_view(a, d, &v, &e));
    memset(&f, 0, sizeof f);
    f.wrap_answer = 1;
    fac = ta_factory(&f);
    OK(sts_archive_materialize(a, d, &fac, NULL, &m, &e));  /* wrapped: the view itself */
    assert_int_equal(m.wrapped, 1);
    assert_ptr_equal(m.data, v);
    assert_ptr_equal(f.last_view, v);
    assert_int_equal(m.nbytes, d->nbytes);
    assert_ptr_equal(m.type, d->type);
    assert_int_equal(f.allocs, 0);
    f.wrap_answer = 0;  /* declined: one copy */
    OK(sts_archive_materialize(a, d, &fac, NULL, &m, &e));
    assert_int_equal(m.wrapped, 0);
    assert_int_equal(f.wraps, 2);
    assert_int_equal(f.allocs, 1);
    assert_ptr_equal(m.data, f.last);
    assert_ptr_equal(f.last_type, d->type);
    assert_int_equal(f.last_nbytes, t->n);
    assert_memory_equal(m.data, t->data, (size_t)t->n);
    ta_unmaterialize(&m);
    memset(&mo, 0, sizeof mo);
    mo.zero_copy = STS_ZERO_COPY_NEVER;  /* never: wrap not offered */
    f.wrap_answer = 1;
    OK(sts_archive_materialize(a, d, &fac, &mo, &m, &e));
    assert_int_equal(m.wrapped, 0);
    assert_int_equal(f.wraps, 2);
    ta_unmaterialize(&m);
    mo.zero_copy = STS_ZERO_COPY_REQUIRE;  /* require: wrapped, or failing */
    OK(sts_archive_materialize(a, d, &fac, &mo, &m, &e));
    assert_int_equal(m.wrapped, 1);
    f.wrap_answer = 0;
    tu_err_check("declined", sts_archive_materialize(a, d, &fac, &mo, &m, &e), &e, STS_ERR_UNSUPPORTED, STS_RULE_VIEW, wn, "declined", NULL);
    f.no_wrap = 1;
    fac = ta_factory(&f);
    tu_err_check("no wrap", sts_archive_materialize(a, d, &fac, &mo, &m, &e), &e, STS_ERR_UNSUPPORTED, STS_RULE_VIEW, "has no wrap", NULL);
    mo.zero_copy = STS_ZERO_COPY_PREFER;
    OK(sts_archive_materialize(a, d, &fac, &mo, &m, &e));  /* no wrap: a copy */
    assert_int_equal(m.wrapped, 0);
    ta_unmaterialize(&m);
    f.refuse = 1;  /* allocate gives nothing */
    tu_err_check("allocate NULL", sts_archive_materialize(a, d, &fac, &mo, &m, &e), &e, STS_ERR_NOMEM, STS_RULE_ALLOC, wn, NULL);
    f.refuse = 0;
    mo.zero_copy = (sts_zero_copy)7;
    tu_err_check("options", sts_archive_materialize(a, d, &fac, &mo, &m, &e), &e, STS_ERR_INVALID_ARGUMENT, STS_RULE_ARGUMENT, NULL);
    tu_err_check("no factory", sts_archive_materialize(a, d, NULL, NULL, &m, &e), &e, STS_ERR_INVALID_ARGUMENT, STS_RULE_ARGUMENT, NULL);
    sts_archive_close(a);
    {   /* pread: no view, so a single-pass copy; REQUIRE says why */
        sts_input in = ta_in_path(g_mixed, 1);
        a = open_in(NULL, &in, NULL);
        d = find(a, "i64");
        memset(&f, 0, sizeof f);
        f.wrap_answer = 1;
        fac = ta_factory(&f);
        OK(sts_archive_materialize(a, d, &fac, NULL, &m, &e));
        assert_int_equal(m.wrapped, 0);
        assert_int_equal(f.wraps, 0);
        host_order(host, gt_of("i64")->data, d);  /* a copy is in the host's byte order */
        assert_memory_equal(m.data, host, 24);
        ta_unmaterialize(&m);
        memset(&mo, 0, sizeof mo);
        mo.zero_copy = STS_ZERO_COPY_REQUIRE;
        tu_err_check("require pread", sts_archive_materialize(a, d, &fac, &mo, &m, &e), &e, STS_ERR_UNSUPPORTED, STS_RULE_VIEW,
                     "i64", "pread", NULL);
        assert_int_equal(f.allocs, 1);
        {   /* the empty tensor and the scalar */
            d = find(a, "empty");
            OK(sts_archive_materialize(a, d, &fac, NULL, &m, &e));
            assert_int_equal(m.nbytes, 0);
            ta_unmaterialize(&m);
            d = find(a, "scalar");
            OK(sts_archive_materialize(a, d, &fac, NULL, &m, &e));
            assert_int_equal(m.nbytes, 4);
            assert_true(*(const float *)m.data == 3.25f);
            ta_unmaterialize(&m);
        }
        sts_archive_close(a);
    }
}

/* Conversions while materialising: the same bits as sts_convert on the stored bytes. */
static void convert_case(const sts_archive *a, const char *name, sts_dtype target, sts_rounding rnd) {
    const sts_tensor_desc *d = find(a, name);
    ta_fac f;
    sts_factory fac;
    sts_materialize_options mo;
    sts_materialized m;
    sts_error e;
    uint8_t stored[64], want[128];
    uint64_t out = d->numel * sts_dtype_bits(target) / 8;
    memset(&f, 0, sizeof f);
    f.wrap_answer = 1;
    fac = ta_factory(&f);
    memset(&mo, 0, sizeof mo);
    mo.convert = 1;
    mo.target = target;
    mo.rounding = rnd;
    OK(sts_archive_read(a, d, 0, stored, (size_t)d->nbytes, &e));
    if (d->big_endian) {  /* the codecs read little-endian bytes */
        uint64_t i;
        unsigned u = d->type->swap, b;
        for (i = 0; i < d->nbytes; i += u)
            for (b = 0; b < u / 2; b++) { uint8_t t = stored[i + b]; stored[i + b] = stored[i + u - 1 - b]; stored[i + u - 1 - b] = t; }
    }
    OK(sts_convert_ex(want, target, stored, d->type->dtype, (size_t)d->numel, rnd, &e));
    tu_le_copy(want, want, (size_t)d->numel, sts_dtype_bits(target) / 8);  /* to host order */
    OK(sts_archive_materialize(a, d, &fac, &mo, &m, &e));
    assert_int_equal(m.wrapped, 0);
    assert_int_equal(f.wraps, 0);  /* a conversion never wraps */
    assert_int_equal(m.nbytes, out);
    assert_ptr_equal(m.type, sts_type_of(target));
    assert_ptr_equal(f.last_type, sts_type_of(target));
    if (memcmp(m.data, want, (size_t)out) != 0) fail_msg("%s -> %s (rounding %d): bits differ from sts_convert", name, sts_dtype_name(target), (int)rnd);
    ta_unmaterialize(&m);
}
static void test_materialize_convert(void **state) {
    int how;
    (void)state;
    for (how = 0; how < 2; how++) {  /* mapped, pread */
        sts_input in = ta_in_path(g_mixed, how);
        sts_archive *a = open_in(NULL, &in, NULL);
        convert_case(a, "bf16", STS_DTYPE_F32, STS_ROUND_TRUNCATE);
        convert_case(a, "f16", STS_DTYPE_F32, STS_ROUND_TRUNCATE);
        convert_case(a, "f32", STS_DTYPE_BF16, STS_ROUND_TRUNCATE);
        convert_case(a, "f32", STS_DTYPE_BF16, STS_ROUND_NEAREST_EVEN);
        convert_case(a, "f32", STS_DTYPE_F16, STS_ROUND_NEAREST_EVEN);
        convert_case(a, "i64", STS_DTYPE_F64, STS_ROUND_TRUNCATE);
        convert_case(a, "u16", STS_DTYPE_F32, STS_ROUND_TRUNCATE);
        convert_case(a, "empty", STS_DTYPE_BF16, STS_ROUND_TRUNCATE);
        convert_case(a, "scalar", STS_DTYPE_F64, STS_ROUND_TRUNCATE);
        {   /* a few exact values */
            const sts_tensor_desc *d = find(a, "f32");
            ta_fac f;
            sts_factory fac;
            sts_materialize_options mo;
            sts_materialized m;
            sts_error e;
            memset(&f, 0, sizeof f);
            fac = ta_factory(&f);
            memset(&mo, 0, sizeof mo);
            mo.convert = 1;
            mo.target = STS_DTYPE_BF16;
            mo.rounding = STS_ROUND_NEAREST_EVEN;
            OK(sts_archive_materialize(a, d, &fac, &mo, &m, &e));
            assert_int_equal(((uint16_t *)m.data)[0], 0x3F81);  /* above half: up */
            assert_int_equal(((uint16_t *)m.data)[1], 0x3F82);  /* a tie to even */
            assert_int_equal(((uint16_t *)m.data)[3], 0x7F80);  /* FLT_MAX: Inf */
            ta_unmaterialize(&m);
            mo.rounding = STS_ROUND_TRUNCATE;
            OK(sts_archive_materialize(a, d, &fac, &mo, &m, &e));
            assert_int_equal(((uint16_t *)m.data)[0], 0x3F80);
            assert_int_equal(((uint16_t *)m.data)[1], 0x3F81);
            assert_int_equal(((uint16_t *)m.data)[3], 0x7F7F);
            ta_unmaterialize(&m);
            d = find(a, "bf16");
            mo.target = STS_DTYPE_F32;
            OK(sts_archive_materialize(a, d, &fac, &mo, &m, &e));
            assert_true(((float *)m.data)[0] == 1.5f && ((float *)m.data)[1] == -2.25f && ((float *)m.data)[4] == 65280.0f);
            ta_unmaterialize(&m);
            mo.target = STS_DTYPE_BF16;  /* the same type: a plain copy (or wrap) */
            f.wrap_answer = 1;
            OK(sts_archive_materialize(a, d, &fac, &mo, &m, &e));
            assert_int_equal(m.wrapped, how == 0 && view_expected(d));
            ta_unmaterialize(&m);
            d = find(a, "mask");  /* BOOL has no conversion to F16 */
            mo.target = STS_DTYPE_F8_E8M0;
            tu_err_check("no codec", sts_archive_materialize(a, find(a, "c64"), &fac, &mo, &m, &e), &e, STS_ERR_UNSUPPORTED,
                         STS_RULE_UNSUPPORTED, "c64", NULL);
            mo.target = (sts_dtype)99;
            tu_err_check("target", sts_archive_materialize(a, d, &fac, &mo, &m, &e), &e, STS_ERR_INVALID_ARGUMENT, STS_RULE_ARGUMENT, NULL);
        }
        sts_archive_close(a);
    }
}
/* Big-endian .npy: copies swapped to host order, conversions from the swapped values. */
static void test_materialize_big_endian(void **state) {
    static const float fv[4] = { 1.5f, -3.25f, 1e-3f, 65536.0f };
    static const int16_t iv[5] = { 1, -2, 300, -32768, 32767 };
    tu_sb b = { 0, 0, 0 }, dict = { 0, 0, 0 };
    uint8_t data[64];
    uint64_t shape[2] = { 2, 2 }, shape5[1] = { 5 };
    int i, how;
    char p[512];
    (void)state;
    for (i = 0; i < 4; i++) { uint32_t u; memcpy(&u, &fv[i], 4); data[4 * i] = (uint8_t)(u >> 24); data[4 * i + 1] = (uint8_t)(u >> 16); data[4 * i + 2] = (uint8_t)(u >> 8); data[4 * i + 3] = (uint8_t)u; }
    ta_npy_dict(&dict, ">f4", 0, shape, 2);
    ta_npy_file(&b, 1, dict.p, data, 16);
    tf_join(p, sizeof p, g_root, "bef4.npy");
    tf_write(p, b.p, b.n);
    tu_sb_free(&b);
    tu_sb_free(&dict);
    for (i = 0; i < 5; i++) { data[2 * i] = (uint8_t)((uint16_t)iv[i] >> 8); data[2 * i + 1] = (uint8_t)iv[i]; }
    ta_npy_dict(&dict, ">i2", 0, shape5, 1);
    ta_npy_file(&b, 2, dict.p, data, 10);
    for (how = 0; how < 3; how++) {
        sts_input in;
        sts_source src;
        ta_src s;
        sts_archive *a;
        const sts_tensor_desc *d;
        ta_fac f;
        sts_factory fac;
        sts_materialize_options mo;
        sts_materialized m;
        sts_error e;
        memset(&f, 0, sizeof f);
        f.wrap_answer = 1;
        fac = ta_factory(&f);
        memset(&mo, 0, sizeof mo);
        in = how == 0 ? ta_in_path(p, 0) : ta_in_path(p, 1);
        a = open_in(NULL, &in, NULL);
        d = find(a, "bef4");
        assert_int_equal(d->big_endian, 1);
        OK(sts_archive_materialize(a, d, &fac, NULL, &m, &e));
        assert_int_equal(m.wrapped, how == 0 && tu_big_endian());  /* a big-endian host maps it as it is */
        for (i = 0; i < 4; i++) assert_true(((float *)m.data)[i] == fv[i]);
        ta_unmaterialize(&m);
        convert_case(a, "bef4", STS_DTYPE_F64, STS_ROUND_TRUNCATE);
        convert_case(a, "bef4", STS_DTYPE_BF16, STS_ROUND_NEAREST_EVEN);
        mo.convert = 1;
        mo.target = STS_DTYPE_F64;
        OK(sts_archive_materialize(a, d, &fac, &mo, &m, &e));
        for (i = 0; i < 4; i++) assert_true(((double *)m.data)[i] == (double)fv[i]);
        ta_unmaterialize(&m);
        mo.convert = 0;
        mo.zero_copy = STS_ZERO_COPY_REQUIRE;
        if (!tu_big_endian())
            tu_err_check("require be", sts_archive_materialize(a, d, &fac, &mo, &m, &e), &e, STS_ERR_UNSUPPORTED, STS_RULE_VIEW, how ? "pread" : "big-endian", NULL);
        sts_archive_close(a);
        if (how == 2) src = ta_src_init(&s, b.p, b.n), in = ta_in_source(&src);
        else in = ta_in_bytes(b.p, b.n);
        a = open_in(NULL, &in, NULL);
        d = find(a, "array");
        assert_int_equal(d->big_endian, 1);
        OK(sts_archive_materialize(a, d, &fac, NULL, &m, &e));
        for (i = 0; i < 5; i++) assert_int_equal(((int16_t *)m.data)[i], iv[i]);
        ta_unmaterialize(&m);
        mo.zero_copy = STS_ZERO_COPY_PREFER;
        mo.convert = 1;
        mo.target = STS_DTYPE_F32;
        OK(sts_archive_materialize(a, d, &fac, &mo, &m, &e));
        for (i = 0; i < 5; i++) assert_true(((float *)m.data)[i] == (float)iv[i]);
        ta_unmaterialize(&m);
        convert_case(a, "array", STS_DTYPE_I32, STS_ROUND_TRUNCATE);
        sts_archive_close(a);
    }
    tu_sb_free(&b);
    tu_sb_free(&dict);
    {   /* the other big-endian files of the golden set, against their swapped bytes */
        static const char *const files[] = { "be_f8.npy", "be_c8.npy", "be_i2.npy" };
        size_t k, j;
        for (k = 0; k < 3; k++) {
            sts_archive *a;
            const sts_tensor_desc *d;
            ta_fac f;
            sts_factory fac;
            sts_materialized m;
            sts_error e;
            uint8_t raw[64];
            unsigned u;
            tf_join(p, sizeof p, g_npy, files[k]);
            a = open_path(p);
            OK(sts_archive_at(a, 0, &d, &e));
            OK(sts_archive_read(a, d, 0, raw, (size_t)d->nbytes, &e));
            u = d->type->swap;
            memset(&f, 0, sizeof f);
            fac = ta_factory(&f);
            OK(sts_archive_materialize(a, d, &fac, NULL, &m, &e));
            for (j = 0; j < d->nbytes; j++) {
                size_t want = tu_big_endian() ? j : j / u * u + (u - 1 - j % u);
                assert_int_equal(((uint8_t *)m.data)[j], raw[want]);
            }
            ta_unmaterialize(&m);
            sts_archive_close(a);
        }
    }
}

/* SHA-256 of tensors and files, against the sha256sum program. */
static void test_sha256(void **state) {
    int how;
    uint8_t wants[10][32], file[32];
    size_t i;
    (void)state;
    ta_sha256sum(g_mixed, file);
    for (i = 0; i < g_nt; i++) ta_sha256sum_bytes(g_root, g_t[i].data, (size_t)g_t[i].n, wants[i]);
    for (how = 0; how < 4; how++) {  /* mapped, pread, bytes, callback */
        sts_input in;
        sts_source src;
        ta_src s;
        sts_archive *a;
        uint8_t dig[32];
        sts_error e;
        if (how < 2) in = ta_in_path(g_mixed, how);
        else if (how == 2) in = ta_in_bytes(g_mixed_bytes, g_mixed_size);
        else { src = ta_src_init(&s, g_mixed_bytes, g_mixed_size); in = ta_in_source(&src); }
        a = open_in(NULL, &in, NULL);
        OK(sts_archive_file_sha256(a, 0, dig, &e));
        assert_memory_equal(dig, file, 32);
        tu_err_check("file 1", sts_archive_file_sha256(a, 1, dig, &e), &e, STS_ERR_INVALID_ARGUMENT, STS_RULE_ARGUMENT, NULL);
        for (i = 0; i < g_nt; i++) {
            const sts_tensor_desc *d = find(a, g_t[i].name);
            ta_fac f;
            sts_factory fac;
            sts_materialize_options mo;
            sts_materialized m;
            sts_cursor *c;
            const void *chunk;
            size_t len;
            int wrap;
            const uint8_t *want = wants[i];
            uint8_t host[64];
            OK(sts_archive_sha256(a, d, dig, &e));
            assert_memory_equal(dig, want, 32);
            for (wrap = 0; wrap < 2; wrap++) {
                memset(&f, 0, sizeof f);
                f.wrap_answer = wrap;
                fac = ta_factory(&f);
                memset(&mo, 0, sizeof mo);
                mo.sha256 = want;  /* right */
                OK(sts_archive_materialize(a, d, &fac, &mo, &m, &e));
                host_order(host, g_t[i].data, d);
                if (g_t[i].n) assert_memory_equal(m.data, host, (size_t)g_t[i].n);
                assert_int_equal(f.releases, 0);
                ta_unmaterialize(&m);
                dig[0] = (uint8_t)(want[0] ^ 1);  /* wrong */
                memcpy(dig + 1, want + 1, 31);
                mo.sha256 = dig;
                tu_err_check("wrong digest", sts_archive_materialize(a, d, &fac, &mo, &m, &e), &e, STS_ERR_CHECKSUM, STS_RULE_SHA256,
                             g_t[i].name, "not the expected", NULL);
                if (how == 1 || how == 3 || !view_expected(d)) {  /* copied and hashed: release got what allocate gave */
                    assert_int_equal(f.allocs, 2);
                    assert_int_equal(f.releases, 1);
                    assert_ptr_equal(f.released, f.last);
                    assert_int_equal(f.released_nbytes, g_t[i].n);
                } else {  /* a view offered to wrap is hashed in place first: refused before any allocate */
                    assert_int_equal(f.allocs, wrap ? 0 : 1);
                    assert_int_equal(f.releases, 0);
                }
                if (strcmp(g_t[i].name, "bf16") == 0) {  /* with a conversion the stored bytes are hashed */
                    mo.convert = 1;
                    mo.target = STS_DTYPE_F32;
                    mo.sha256 = want;
                    OK(sts_archive_materialize(a, d, &fac, &mo, &m, &e));
                    ta_unmaterialize(&m);
                    mo.sha256 = dig;
                    f.releases = 0;
                    tu_err_check("wrong digest, converting", sts_archive_materialize(a, d, &fac, &mo, &m, &e), &e, STS_ERR_CHECKSUM,
                                 STS_RULE_SHA256, NULL);
                    assert_int_equal(f.releases, 1);
                    assert_int_equal(f.released_nbytes, 24);
                }
            }
            /* a cursor with the digest: checked as the last chunk is handed out */
            OK(sts_cursor_open(a, d, 0, d->nbytes, 5, want, &c, &e));
            do OK(sts_cursor_next(c, &chunk, &len, &e)); while (len);
            sts_cursor_close(c);
            OK(sts_cursor_open(a, d, 0, d->nbytes, 5, dig, &c, &e));
            {
                sts_result r;
                size_t seen = 0;
                while ((r = sts_cursor_next(c, &chunk, &len, &e)) == STS_OK && len) seen += len;
                tu_err_check("cursor digest", r, &e, STS_ERR_CHECKSUM, STS_RULE_SHA256, NULL);
                assert_true(seen + 5 >= d->nbytes);
            }
            sts_cursor_close(c);
            if (d->nbytes > 1)
                tu_err_check("digest of a window", sts_cursor_open(a, d, 1, d->nbytes - 1, 0, want, &c, &e), &e,
                             STS_ERR_INVALID_ARGUMENT, STS_RULE_ARGUMENT, NULL);
        }
        sts_archive_close(a);
    }
    {   /* every file of a sharded checkpoint and a dataset */
        const char *ds[3];
        size_t k, i;
        ds[0] = g_hf; ds[1] = g_kv; ds[2] = g_batch;
        for (k = 0; k < 3; k++) {
            sts_archive *a = open_path(ds[k]);
            for (i = 0; i < sts_archive_files(a); i++) {
                uint8_t dig[32], want[32];
                sts_error e;
                OK(sts_archive_file_sha256(a, i, dig, &e));
                ta_sha256sum(sts_archive_file(a, i), want);
                assert_memory_equal(dig, want, 32);
            }
            sts_archive_close(a);
        }
    }
}

/* ---- the k-th allocation failing ---- */
typedef struct fail_case { const char *label; const char *path; const uint8_t *bytes; size_t n; int source; } fail_case;
/* Opens the input with the k-th allocation failing, k = 1, 2, ... until the open succeeds: each
   failure is an error (NOMEM, or the provider's verdict on a NOMEM below it) and leaks nothing.
   Returns the number of allocations a successful open makes. */
static long open_failing(const char *label, const sts_input *in, sts_result expect_code) {
    long k;
    for (k = 1;; k++) {
        tu_alloc al;
        sts_options o = tu_alloc_opts(&al, NULL);
        sts_archive *a = NULL;
        sts_error e;
        sts_result r;
        char lab[160];
        al.fail_at = k;
        r = sts_archive_open(NULL, in, &o, &a, &e);
        snprintf(lab, sizeof lab, "%s, allocation %ld", label, k);
        if (r == STS_OK) {
            size_t i;
            for (i = 0; i < sts_archive_count(a); i++) {  /* usable: every descriptor (lazy shards: may fail) */
                const sts_tensor_desc *d;
                sts_result rr = sts_archive_at(a, i, &d, &e);
                if (rr != STS_OK) tu_err_check(lab, rr, &e, STS_ERR_NOMEM, STS_RULE_ALLOC, NULL);
            }
            sts_archive_close(a);
            tu_alloc_check(lab, &al);
            if (!al.failed) return k - 1;
            continue;
        }
        assert_null(a);
        if (!al.failed) fail_msg("%s: %s without a failed allocation: %s", lab, sts_result_name(r), e.message);
        tu_err_check(lab, r, &e, TU_ANY_CODE, TU_ANY_RULE, NULL);
        if (r != STS_ERR_NOMEM && r != expect_code) fail_msg("%s: %s (%s)", lab, sts_result_name(r), e.message);
        tu_alloc_check(lab, &al);
        if (k > 100000) fail_msg("%s: no end", label);
    }
}
static void test_alloc_fail_open(void **state) {
    char p[512];
    sts_input in;
    sts_source src;
    ta_src s;
    tu_sb b = { 0, 0, 0 };
    long n;
    (void)state;
    in = ta_in_path(g_mixed, 0);
    n = open_failing("safetensors path", &in, STS_ERR_NOMEM);
    assert_true(n > 0);
    in = ta_in_path(g_mixed, 1);
    open_failing("safetensors pread", &in, STS_ERR_NOMEM);
    in = ta_in_bytes(g_mixed_bytes, g_mixed_size);
    open_failing("safetensors bytes", &in, STS_ERR_NOMEM);
    src = ta_src_init(&s, g_mixed_bytes, g_mixed_size);
    in = ta_in_source(&src);
    open_failing("safetensors source", &in, STS_ERR_NOMEM);
    in = ta_in_path(g_hf, 0);
    open_failing("sharded folder", &in, STS_ERR_NOMEM);
    tf_join(p, sizeof p, g_hf, "model.safetensors.index.json");
    in = ta_in_path(p, 0);
    open_failing("sharded index", &in, STS_ERR_NOMEM);
    in = ta_in_path(g_kv, 0);
    open_failing("dataset kv", &in, STS_ERR_NOMEM);
    in = ta_in_path(g_batch, 0);
    open_failing("dataset batch", &in, STS_ERR_NOMEM);
    tf_join(p, sizeof p, g_npy, "be_f4.npy");
    in = ta_in_path(p, 0);
    open_failing("npy path", &in, STS_ERR_NOMEM);
    npy_make(&b, &g_npyf[1], 1);
    in = ta_in_bytes(b.p, b.n);
    open_failing("npy bytes", &in, STS_ERR_NOMEM);
    tu_sb_free(&b);
    in = ta_in_path(g_bighead, 0);
    open_failing("big header", &in, STS_ERR_NOMEM);
}
/* The k-th allocation after open failing while touching a lazy shard, and while materialising. */
static void test_alloc_fail_use(void **state) {
    static const struct { int kv; const char *name; int convert; sts_dtype target; } uses[] = {
        { 0, "model.embed.weight", 0, STS_DTYPE_F32 },
        { 0, "model.embed.weight", 1, STS_DTYPE_F32 },
        { 0, "lm_head.weight", 1, STS_DTYPE_F16 },
        { 1, "k001_002__emb", 1, STS_DTYPE_BF16 },  /* a dataset's lazy shard */
    };
    size_t u;
    (void)state;
    for (u = 0; u < sizeof uses / sizeof uses[0]; u++) {
        long k;
        for (k = 1;; k++) {
            tu_alloc al;
            sts_options o = tu_alloc_opts(&al, NULL);
            sts_input in = ta_in_path(uses[u].kv ? g_kv : g_hf, 0);
            sts_archive *a = open_in(NULL, &in, &o);
            const sts_tensor_desc *d = NULL;
            sts_error e;
            sts_result r;
            ta_fac f;
            sts_factory fac;
            sts_materialize_options mo;
            sts_materialized m;
            char lab[128];
            memset(&f, 0, sizeof f);
            fac = ta_factory(&f);
            memset(&mo, 0, sizeof mo);
            mo.convert = uses[u].convert;
            mo.target = uses[u].target;
            al.fail_at = al.calls + k;
            snprintf(lab, sizeof lab, "use %zu, allocation %ld after open", u, k);
            r = sts_archive_find(a, uses[u].name, strlen(uses[u].name), &d, &e);
            if (r == STS_OK) r = sts_archive_materialize(a, d, &fac, &mo, &m, &e);
            if (r == STS_OK) {
                ta_unmaterialize(&m);
                sts_archive_close(a);
                tu_alloc_check(lab, &al);
                if (!al.failed) break;
                continue;
            }
            tu_err_check(lab, r, &e, STS_ERR_NOMEM, STS_RULE_ALLOC, NULL);
            assert_int_equal(al.failed, 1);
            assert_int_equal(f.allocs, f.releases);  /* nothing of the factory's kept */
            al.fail_at = 0;  /* a failure is not sticky: the next try works */
            OK(sts_archive_find(a, uses[u].name, strlen(uses[u].name), &d, &e));
            OK(sts_archive_materialize(a, d, &fac, &mo, &m, &e));
            ta_unmaterialize(&m);
            sts_archive_close(a);
            tu_alloc_check(lab, &al);
        }
    }
    {   /* materialising with a conversion from a pread file: the scratch buffer failing */
        long k;
        for (k = 1;; k++) {
            tu_alloc al;
            sts_options o = tu_alloc_opts(&al, NULL);
            sts_input in = ta_in_path(g_mixed, 1);
            sts_archive *a = open_in(NULL, &in, &o);
            const sts_tensor_desc *d = find(a, "bf16");
            sts_error e;
            sts_result r;
            ta_fac f;
            sts_factory fac;
            sts_materialize_options mo;
            sts_materialized m;
            memset(&f, 0, sizeof f);
            fac = ta_factory(&f);
            memset(&mo, 0, sizeof mo);
            mo.convert = 1;
            mo.target = STS_DTYPE_F32;
            mo.sha256 = NULL;
            al.fail_at = al.calls + k;
            r = sts_archive_materialize(a, d, &fac, &mo, &m, &e);
            if (r == STS_OK) ta_unmaterialize(&m);
            else {
                tu_err_check("scratch", r, &e, STS_ERR_NOMEM, STS_RULE_ALLOC, NULL);
                assert_int_equal(f.releases, 1);
            }
            sts_archive_close(a);
            tu_alloc_check("scratch", &al);
            if (!al.failed) break;
        }
    }
}

/* ---- sharded errors ---- */
/* A checkpoint folder: shards as given, and an index text. */
static void write_ckpt(const char *dir, const char *index) {
    char p[512];
    tf_rmtree(dir);
    mkdir(dir, 0755);
    tf_join(p, sizeof p, dir, "model-00001-of-00002.safetensors");
    write_gts(p, g_hs, 3, NULL, 0);
    tf_join(p, sizeof p, dir, "model-00002-of-00002.safetensors");
    write_gts(p, g_hs + 3, 4, NULL, 0);
    tf_join(p, sizeof p, dir, "model.safetensors.index.json");
    tf_write(p, index, strlen(index));
}
static void test_sharded_errors(void **state) {
    static const struct { const char *label; const char *index; sts_rule rule; const char *word; } at_open[] = {
        { "not JSON", "{\"weight_map\": {", STS_RULE_SHARDED_INDEX, NULL },
        { "an array", "[1, 2]", STS_RULE_SHARDED_INDEX, "not a JSON object" },
        { "no weight_map", "{\"metadata\": {}}", STS_RULE_SHARDED_INDEX, "no weight_map" },
        { "weight_map array", "{\"weight_map\": []}", STS_RULE_SHARDED_INDEX, "no weight_map" },
        { "metadata array", "{\"metadata\": [], \"weight_map\": {}}", STS_RULE_SHARDED_INDEX, "metadata is not an object" },
        { "value not a string", "{\"weight_map\": {\"a\": 1}}", STS_RULE_SHARDED_INDEX, "file names" },
        { "slash", "{\"weight_map\": {\"a\": \"sub/model-00001-of-00002.safetensors\"}}", STS_RULE_SHARDED_INDEX, "not a file name" },
        { "absolute", "{\"weight_map\": {\"a\": \"/etc/passwd\"}}", STS_RULE_SHARDED_INDEX, "not a file name" },
        { "dotdot", "{\"weight_map\": {\"a\": \"..\"}}", STS_RULE_SHARDED_INDEX, "not a file name" },
        { "dot", "{\"weight_map\": {\"a\": \".\"}}", STS_RULE_SHARDED_INDEX, "not a file name" },
        { "empty name", "{\"weight_map\": {\"a\": \"\"}}", STS_RULE_SHARDED_INDEX, "not a file name" },
        { "escaped NUL", "{\"weight_map\": {\"a\": \"x\\u0000y\"}}", STS_RULE_SHARDED_INDEX, "not a file name" },
        { "duplicate", "{\"weight_map\": {\"model.mask\": \"model-00002-of-00002.safetensors\", "
                       "\"model.mask\": \"model-00002-of-00002.safetensors\"}}", STS_RULE_SHARDED_INDEX, "model.mask" },
        { "duplicate, escaped", "{\"weight_map\": {\"model.mask\": \"model-00002-of-00002.safetensors\", "
                                "\"model\\u002emask\": \"model-00001-of-00002.safetensors\"}}", STS_RULE_SHARDED_INDEX, "twice" },
    };
    char dir[512];
    tu_sb notes = { 0, 0, 0 };
    size_t k;
    (void)state;
    dr_fresh(dir, sizeof dir, "bad");
    for (k = 0; k < sizeof at_open / sizeof at_open[0]; k++) {
        sts_input in;
        sts_archive *a = NULL;
        sts_error e;
        write_ckpt(dir, at_open[k].index);
        in = ta_in_path(dir, 0);
        tu_err_note(&notes, at_open[k].label, sts_archive_open(NULL, &in, NULL, &a, &e), &e, STS_ERR_FORMAT, at_open[k].rule,
                    at_open[k].word ? at_open[k].word : "model.safetensors.index.json", NULL);
        if (a) { tu_sb_printf(&notes, "\n  %s: opened", at_open[k].label); sts_archive_close(a); }
    }
    tu_notes_done(&notes, "sharded index errors");
    {   /* errors on first access: a shard missing a tensor, holding an extra one, missing, invalid */
        static const char *idx =
            "{\"metadata\": {\"total_size\": 1}, \"weight_map\": {"
            "\"model.embed.weight\": \"model-00001-of-00002.safetensors\", "
            "\"model.layers.0.attn.q.weight\": \"model-00001-of-00002.safetensors\", "
            "\"model.layers.0.mlp.bias\": \"model-00001-of-00002.safetensors\", "
            "\"ghost\": \"model-00001-of-00002.safetensors\", "
            "\"lm_head.weight\": \"model-00002-of-00002.safetensors\", "
            "\"model.norm.weight\": \"model-00002-of-00002.safetensors\", "
            "\"model.layers.1.step\": \"model-00002-of-00002.safetensors\", "
            "\"gone\": \"model-00003-of-00003.safetensors\", "
            "\"broken\": \"broken.safetensors\"}}";
        sts_archive *a;
        const sts_tensor_desc *d = NULL;
        sts_error e;
        char p[512], shard[512];
        int round;
        write_ckpt(dir, idx);
        tf_join(p, sizeof p, dir, "broken.safetensors");
        tf_write(p, "\x10\0\0\0\0\0\0\0{\"a\":1}         ", 24);
        for (round = 0; round < 2; round++) {  /* the verdict stays */
            a = open_path(dir);
            assert_int_equal(sts_archive_count(a), 9);
            assert_int_equal(sts_archive_files(a), 4);
            tf_join(shard, sizeof shard, dir, "model-00001-of-00002.safetensors");
            tu_err_check("missing tensor", sts_archive_find(a, "model.embed.weight", 18, &d, &e), &e, STS_ERR_FORMAT,
                         STS_RULE_SHARDED_SHARD, "ghost", shard, "does not hold it", NULL);
            tu_err_check("missing tensor again", sts_archive_find(a, "model.layers.0.mlp.bias", 23, &d, &e), &e, STS_ERR_FORMAT,
                         STS_RULE_SHARDED_SHARD, "ghost", NULL);
            tf_join(shard, sizeof shard, dir, "model-00002-of-00002.safetensors");
            tu_err_check("extra tensor", sts_archive_find(a, "lm_head.weight", 14, &d, &e), &e, STS_ERR_FORMAT,
                         STS_RULE_SHARDED_SHARD, "model.mask", shard, "does not list", NULL);
            tf_join(shard, sizeof shard, dir, "model-00003-of-00003.safetensors");
            tu_err_check("missing shard", sts_archive_find(a, "gone", 4, &d, &e), &e, STS_ERR_IO, STS_RULE_IO,
                         "shard", shard, "ENOENT", NULL);
            tf_join(shard, sizeof shard, dir, "broken.safetensors");
            tu_err_check("invalid shard", sts_archive_find(a, "broken", 6, &d, &e), &e, TU_ANY_CODE, TU_ANY_RULE,
                         "shard", shard, NULL);
            {   /* the single-file verdict, its rule */
                sts_file *f;
                sts_error e2;
                sts_result r2 = sts_open(shard, NULL, &f, &e2);
                assert_int_not_equal(r2, STS_OK);
                assert_int_equal(e.code, r2);
                assert_int_equal(e.rule, e2.rule);
                assert_non_null(strstr(e.message, e2.message + strlen(sts_rule_id(e2.rule)) + 2));
            }
            {   /* the others still answer */
                uint8_t dig[32];
                tu_err_check("file_sha256 missing", sts_archive_file_sha256(a, 2, dig, &e), &e, STS_ERR_IO, STS_RULE_IO, NULL);
            }
            /* the index, and each shard that opened (a shard refused on validation is opened again next time) */
            assert_int_equal(sts_archive_get_stats(a).files_opened, 4);
            sts_archive_close(a);
        }
    }
    {   /* a tensor the index puts in another shard */
        static const char *idx =
            "{\"weight_map\": {\"model.embed.weight\": \"model-00001-of-00002.safetensors\", "
            "\"model.layers.0.attn.q.weight\": \"model-00001-of-00002.safetensors\", "
            "\"model.layers.0.mlp.bias\": \"model-00002-of-00002.safetensors\"}}";
        sts_archive *a;
        const sts_tensor_desc *d = NULL;
        sts_error e;
        write_ckpt(dir, idx);
        a = open_path(dir);
        tu_err_check("other shard", sts_archive_find(a, "model.embed.weight", 18, &d, &e), &e, STS_ERR_FORMAT,
                     STS_RULE_SHARDED_SHARD, "model.layers.0.mlp.bias", "another shard", NULL);
        tu_err_check("not held", sts_archive_find(a, "model.layers.0.mlp.bias", 23, &d, &e), &e, STS_ERR_FORMAT,
                     STS_RULE_SHARDED_SHARD, "does not hold it", NULL);
        sts_archive_close(a);
    }
    {   /* an index given as bytes or a callback: its shards cannot be found */
        size_t n;
        char p[512];
        uint8_t *bytes;
        sts_input in;
        sts_archive *a = NULL;
        sts_error e;
        tf_join(p, sizeof p, g_hf, "model.safetensors.index.json");
        bytes = tf_read(p, &n);
        in = ta_in_bytes(bytes, n);
        tu_err_check("bytes", sts_archive_open(NULL, &in, NULL, &a, &e), &e, STS_ERR_UNSUPPORTED, STS_RULE_UNSUPPORTED, "must be a path", NULL);
        free(bytes);
    }
}

/* 100 shards: opening reads the index only; the first access to a tensor opens exactly its shard. */
static void test_sharded_counters(void **state) {
    char dir[512], p[512], name[64], files[100][40];
    tu_sb b = { 0, 0, 0 };
    ta_wm map[200];
    char names[200][32];
    int i;
    sts_archive *a;
    const sts_tensor_desc *d;
    sts_error e;
    (void)state;
    dr_fresh(dir, sizeof dir, "ckpt100");
    mkdir(dir, 0755);
    for (i = 0; i < 100; i++) {
        gt t[2];
        memset(t, 0, sizeof t);
        snprintf(files[i], sizeof files[i], "model-%05d-of-00100.safetensors", i + 1);
        snprintf(names[2 * i], sizeof names[0], "layer.%d.weight", i);
        snprintf(names[2 * i + 1], sizeof names[0], "layer.%d.bias", i);
        t[0].name = names[2 * i]; t[0].dt = STS_DTYPE_F32; t[0].rank = 1; t[0].shape[0] = 2; t[0].n = 8;
        t[1].name = names[2 * i + 1]; t[1].dt = STS_DTYPE_F16; t[1].rank = 1; t[1].shape[0] = 2; t[1].n = 4;
        memset(t[0].data, i, 8);
        memset(t[1].data, 255 - i, 4);
        tf_join(p, sizeof p, dir, files[i]);
        write_gts(p, t, 2, NULL, 0);
        map[2 * i].name = names[2 * i]; map[2 * i].file = files[i];
        map[2 * i + 1].name = names[2 * i + 1]; map[2 * i + 1].file = files[i];
    }
    ta_hf_index(&b, 1200, NULL, map, 200);
    tf_join(p, sizeof p, dir, "model.safetensors.index.json");
    tf_write(p, b.p, b.n);
    tu_sb_free(&b);
    a = open_path(dir);
    assert_int_equal(sts_archive_get_stats(a).files_opened, 1);
    assert_int_equal(sts_archive_count(a), 200);
    assert_int_equal(sts_archive_files(a), 100);
    assert_int_equal(sts_archive_total_bytes(a), 1200);
    for (i = 0; i < 200; i++) assert_non_null(sts_archive_name(a, (size_t)i, NULL));
    assert_int_equal(sts_archive_get_stats(a).files_opened, 1);
    d = find(a, "layer.42.bias");
    assert_int_equal(sts_archive_get_stats(a).files_opened, 2);
    tf_join(p, sizeof p, dir, files[42]);
    assert_string_equal(sts_archive_file(a, d->file), p);
    {
        uint8_t buf[8];
        OK(sts_archive_read(a, d, 0, buf, 4, &e));
        assert_int_equal(buf[0], 255 - 42);
    }
    d = find(a, "layer.42.weight");  /* the same shard */
    assert_int_equal(sts_archive_get_stats(a).files_opened, 2);
    snprintf(name, sizeof name, "layer.%d.weight", 7);
    d = find(a, name);
    assert_int_equal(sts_archive_get_stats(a).files_opened, 3);
    {   /* files come in weight_map order, which json.dumps sorted: layer.0, layer.1, layer.10, ... */
        ta_wm *sorted = (ta_wm *)malloc(sizeof map);
        size_t j, nf = 0;
        const char *last = NULL;
        memcpy(sorted, map, sizeof map);
        qsort(sorted, 200, sizeof *sorted, ta__wm_cmp);
        for (j = 0; j < 200 && strcmp(sorted[j].file, files[7]) != 0; j++)
            if (!last || strcmp(last, sorted[j].file) != 0) { nf++; last = sorted[j].file; }
        assert_int_equal(d->file, nf);
        assert_int_equal(nf, 67);
        free(sorted);
    }
    sts_archive_close(a);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_types),
        cmocka_unit_test(test_golden_safetensors),
        cmocka_unit_test(test_golden_sharded),
        cmocka_unit_test(test_sharded_metadata),
        cmocka_unit_test(test_golden_dataset),
        cmocka_unit_test(test_golden_npy),
        cmocka_unit_test(test_npy_refused),
        cmocka_unit_test(test_probe_tie),
        cmocka_unit_test(test_probe_unsupported),
        cmocka_unit_test(test_probe_clamped),
        cmocka_unit_test(test_probe_outrank),
        cmocka_unit_test(test_builder_checks),
        cmocka_unit_test(test_metadata_only),
        cmocka_unit_test(test_range_requests),
        cmocka_unit_test(test_views),
        cmocka_unit_test(test_materialize_wrap_copy),
        cmocka_unit_test(test_materialize_convert),
        cmocka_unit_test(test_materialize_big_endian),
        cmocka_unit_test(test_sha256),
        cmocka_unit_test(test_alloc_fail_open),
        cmocka_unit_test(test_alloc_fail_use),
        cmocka_unit_test(test_sharded_errors),
        cmocka_unit_test(test_sharded_counters),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
