/* Fuzz target: the writer. A file the default parser accepts is rebuilt as specs + metadata and
   written again; the always-strict writer must accept it (its only refusal of a default-valid
   file is a tensor name holding an escaped NUL: those are refused with write.text, then dropped),
   the output must parse strictly with the same tensors (name, dtype, shape, bytes) and metadata
   (in order), follow the reference layout, and writing the reparsed file again (to memory, and
   through a sink with producers) must give identical bytes. Allocation failures in the writer
   give NOMEM and leak nothing. */
#define STS_IMPLEMENTATION
#include "../safetensors_spark.h"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FZ_EXPECT_OK(r, e, what)                                                              \
    do {                                                                                      \
        if ((r) != STS_OK) {                                                                  \
            fprintf(stderr, "%s: %s: %s\n", what, sts_result_name(r), (e).message);          \
            FZ_CHECK((r) == STS_OK);                                                          \
        }                                                                                     \
    } while (0)

/* A growing in-memory sink. */
typedef struct fz_buf { uint8_t *p; size_t n, cap; } fz_buf;
static sts_result fz_buf_write(void *user, const void *bytes, size_t len) {
    fz_buf *b = (fz_buf *)user;
    if (len > b->cap - b->n) {
        size_t cap = b->cap ? b->cap : 64;
        while (cap - b->n < len) cap *= 2;
        b->p = (uint8_t *)realloc(b->p, cap);
        FZ_CHECK(b->p != NULL);
        b->cap = cap;
    }
    if (len) memcpy(b->p + b->n, bytes, len);
    b->n += len;
    return STS_OK;
}

/* A producer that pushes its tensor in two pieces (the second may be empty). */
static sts_result fz_produce(void *user, const sts_tensor_spec *spec, sts_stream *out) {
    const uint8_t *p = (const uint8_t *)user;
    size_t half = (size_t)(spec->data_size / 2);
    sts_result r = sts_stream_write(out, p, half);
    if (r != STS_OK) return r;
    return sts_stream_write(out, p + half, (size_t)spec->data_size - half);
}

/* specs and metadata from a parsed file; skip_nul drops names holding NUL. Returns the count. */
static size_t build_specs(const sts_file *f, sts_tensor_spec *specs, int skip_nul, int producers) {
    size_t i, n = 0;
    for (i = 0; i < sts_count(f); i++) {
        const sts_tensor *t = sts_at(f, i);
        sts_tensor_spec *s = &specs[n];
        if (skip_nul && t->name_len && memchr(t->name, 0, t->name_len)) continue;
        memset(s, 0, sizeof *s);
        s->name = t->name;
        s->name_len = t->name_len;
        s->dtype = t->dtype;
        s->rank = t->rank;
        s->shape = t->shape;
        s->data_size = sts_tensor_nbytes(t);
        s->data = sts_data(f, t);
        if (producers && (n & 1) && s->data_size) {
            s->produce = fz_produce;
            s->produce_user = (void *)(uintptr_t)s->data;
            s->data = NULL;
        }
        n++;
    }
    return n;
}
static const sts_kv *build_meta(const sts_file *f, sts_kv *meta) {
    size_t i;
    if (!sts_has_metadata(f)) return NULL;  /* absent or null: no __metadata__ key */
    for (i = 0; i < sts_metadata_count(f); i++) meta[i] = *sts_metadata_at(f, i);
    return meta;                            /* {} stays {} */
}

static int has_nul_name(const sts_file *f) {
    size_t i;
    for (i = 0; i < sts_count(f); i++) {
        const sts_tensor *t = sts_at(f, i);
        if (t->name_len && memchr(t->name, 0, t->name_len)) return 1;
    }
    return 0;
}

/* The written file g holds exactly specs[0..n) and meta, laid out as the reference writer does. */
static void check_written(const sts_file *g, const uint8_t *out, size_t out_size, const sts_tensor_spec *specs, size_t n,
                          const sts_kv *meta, size_t n_meta) {
    size_t i;
    uint64_t hn = sts_header_size(g);
    FZ_CHECK(sts_count(g) == n);
    for (i = 0; i < n; i++) {
        const sts_tensor *t = sts_find(g, specs[i].name, specs[i].name_len);
        FZ_CHECK(t != NULL);
        FZ_CHECK(t->dtype == specs[i].dtype && t->rank == specs[i].rank);
        FZ_CHECK(t->rank == 0 || memcmp(t->shape, specs[i].shape, t->rank * sizeof *t->shape) == 0);
        FZ_CHECK(sts_tensor_nbytes(t) == specs[i].data_size);
        FZ_CHECK(specs[i].data_size == 0 || memcmp(sts_data(g, t), specs[i].data, (size_t)specs[i].data_size) == 0);
    }
    for (i = 1; i < n; i++) {  /* layout: dtype rank descending, then name bytes ascending */
        const sts_tensor *a = sts_at(g, i - 1), *b = sts_at(g, i);
        size_t m = a->name_len < b->name_len ? a->name_len : b->name_len;
        int c = m ? memcmp(a->name, b->name, m) : 0;
        FZ_CHECK(a->dtype > b->dtype || (a->dtype == b->dtype && (c < 0 || (c == 0 && a->name_len < b->name_len))));
    }
    FZ_CHECK(sts_has_metadata(g) == (meta != NULL));
    FZ_CHECK(sts_metadata_count(g) == n_meta);
    for (i = 0; i < n_meta; i++) {  /* in the order given */
        const sts_kv *kv = sts_metadata_at(g, i);
        FZ_CHECK(kv->key_len == meta[i].key_len && memcmp(kv->key, meta[i].key, kv->key_len) == 0);
        FZ_CHECK(kv->value_len == meta[i].value_len && memcmp(kv->value, meta[i].value, kv->value_len) == 0);
    }
    /* compact header, padded with spaces to a multiple of 8, no raw control characters */
    FZ_CHECK(hn % 8 == 0 && hn >= 8 && out_size >= 8 + hn && out[8] == '{');
    for (i = 0; i < hn; i++) FZ_CHECK(out[8 + i] >= 0x20);
    for (i = (size_t)hn; i > 0 && out[8 + i - 1] == ' '; i--) continue;
    FZ_CHECK(i > 0 && out[8 + i - 1] == '}' && hn - i < 8);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    sts_options strict, o;
    sts_error e;
    sts_file *f = NULL, *g = NULL;
    sts_result r;
    sts_tensor_spec *specs, *specs2;
    sts_kv *meta, *meta2;
    const sts_kv *mp, *mp2;
    size_t n, n_meta, n2, calls;
    void *out = NULL, *out2 = NULL, *out3 = NULL;
    size_t out_size = 0, out2_size = 0, out3_size = 0;
    uint64_t hsize = 0, fsize = 0, h = fz_hash(data, size);
    fz_buf sink_buf;
    sts_sink sink;
    tu_alloc a;

    if (sts_parse(data, size, NULL, &f, &e) != STS_OK) return 0;
    specs = (sts_tensor_spec *)malloc((sts_count(f) + 1) * sizeof *specs);
    specs2 = (sts_tensor_spec *)malloc((sts_count(f) + 1) * sizeof *specs2);
    meta = (sts_kv *)malloc((sts_metadata_count(f) + 1) * sizeof *meta);
    meta2 = (sts_kv *)malloc((sts_metadata_count(f) + 1) * sizeof *meta2);
    FZ_CHECK(specs && specs2 && meta && meta2);
    n_meta = sts_metadata_count(f);
    mp = build_meta(f, meta);

    /* 1. write what the default parser accepted */
    n = build_specs(f, specs, 0, 0);
    r = sts_write_memory(specs, n, mp, n_meta, NULL, &out, &out_size, &e);
    if (has_nul_name(f)) {  /* the writer is strict: NUL in a name is refused, then dropped */
        FZ_CHECK(r == STS_ERR_INVALID_ARGUMENT && e.rule == STS_RULE_WRITE_TEXT && out == NULL);
        fz_check_error(r, &e, STS_OFFSET_UNKNOWN);
        n = build_specs(f, specs, 1, 0);
        r = sts_write_memory(specs, n, mp, n_meta, NULL, &out, &out_size, &e);
    }
    FZ_EXPECT_OK(r, e, "sts_write_memory of a default-valid file");
    r = sts_write_size(specs, n, mp, n_meta, NULL, &hsize, &fsize, &e);
    FZ_EXPECT_OK(r, e, "sts_write_size");
    FZ_CHECK(fsize == out_size && hsize == fz_le64((const uint8_t *)out));

    /* 2. it parses strictly, with the same content, in the reference layout */
    memset(&strict, 0, sizeof strict);
    strict.strict = 1;
    r = sts_parse(out, out_size, &strict, &g, &e);
    FZ_EXPECT_OK(r, e, "strict reparse of the writer's output");
    check_written(g, (const uint8_t *)out, out_size, specs, n, mp, n_meta);

    /* 3. idempotence: writing the reparsed file gives the same bytes, from memory and by producers */
    mp2 = build_meta(g, meta2);
    n2 = build_specs(g, specs2, 0, 0);
    r = sts_write_memory(specs2, n2, mp2, sts_metadata_count(g), NULL, &out2, &out2_size, &e);
    FZ_EXPECT_OK(r, e, "second write");
    FZ_CHECK(out2_size == out_size && memcmp(out2, out, out_size) == 0);
    n2 = build_specs(g, specs2, 0, 1);
    memset(&sink_buf, 0, sizeof sink_buf);
    sink.write = fz_buf_write;
    sink.user = &sink_buf;
    r = sts_write(specs2, n2, mp2, sts_metadata_count(g), &sink, NULL, &e);
    FZ_EXPECT_OK(r, e, "write through a sink with producers");
    FZ_CHECK(sink_buf.n == out_size && memcmp(sink_buf.p, out, out_size) == 0);
    free(sink_buf.p);

    /* 4. the writer's allocations: counted, sized right, and each one may fail cleanly */
    memset(&o, 0, sizeof o);
    fz_use_alloc(&o, &a, 0);
    r = sts_write_memory(specs, n, mp, n_meta, &o, &out3, &out3_size, &e);
    FZ_EXPECT_OK(r, e, "write with a counting allocator");
    FZ_CHECK(out3_size == out_size && memcmp(out3, out, out_size) == 0);
    sts_free(&o, out3, out3_size);
    FZ_CHECK(a.bytes == 0);
    calls = a.calls;
    if (calls) {
        out3 = NULL;
        fz_use_alloc(&o, &a, 1 + (size_t)(h >> 32) % calls);
        r = sts_write_memory(specs, n, mp, n_meta, &o, &out3, &out3_size, &e);
        FZ_CHECK(a.failed && r == STS_ERR_NOMEM && e.rule == STS_RULE_ALLOC && out3 == NULL);
        FZ_CHECK(a.bytes == 0);
    }

    sts_close(g);
    sts_free(NULL, out2, out2_size);
    sts_free(NULL, out, out_size);
    free(specs);
    free(specs2);
    free(meta);
    free(meta2);
    sts_close(f);
    return 0;
}
