/* fuzz_gguf.c - libFuzzer target for the archive's GGUF provider (issue 14).

   The input is a GGUF file. It is opened by the gguf provider alone (behind a probe that always
   says yes, so that inputs without the magic reach its checks too), through the checking allocator
   (a per-input allocation may be refused: then NOMEM or success, nothing leaked), in both modes, from
   memory and through a callback source; it checks:
     - the verdict (code, rule, offset) is the same from memory and through the callback, and is
       complete (fz_check_error); strict success implies default success;
     - the callback is never asked for a byte outside the file, and on success for nothing past
       the data section's start beyond the probed prefix;
     - on success: every KV and array item is walked (strings, keys and names touched byte by byte),
       every descriptor lies inside the input with a size that matches its type and shape, its
       bytes hash through sts_archive_sha256 and copy through materialize (block types in the
       other byte order refused as documented, the ten decodable ones also decoded to F32), the
       digest checked in the same pass;
     - on success in the default mode, on a little-endian host, with plain tensors of at most 1 MiB:
       the archive written again by sts_gguf_write (its KVs as they are, its tensors materialised)
       succeeds or refuses with a documented rule (text that is not UTF-8, an alignment GGUF's
       writer does not write); what it writes opens with the same KVs (a scalar UINT8 as UINT64),
       names, types, shapes and tensor bytes.
   Seeds: fuzz/corpus/gguf/, small files of tests/gguf/make_corpus.py's corpus. */
#define STS_IMPLEMENTATION
#include "../safetensors_spark.h"
#define FZ_NO_HEADER_MUTATOR
#include "fuzz_common.h"

static const sts_provider *fzg_builtin(void) {
    size_t i;
    for (i = 0; i < sts_registry_count(NULL); i++)
        if (strcmp(sts_registry_at(NULL, i)->format, "gguf") == 0) return sts_registry_at(NULL, i);
    abort();
}
static void fzg_probe(void *user, const sts_probe_input *in, sts_probe_result *o) {
    (void)user; (void)in;
    o->supported = 1;
    o->confidence = 100;
}
static sts_result fzg_open(void *user, sts_builder *b, sts_error *err) {
    (void)user;
    return fzg_builtin()->open(fzg_builtin()->user, b, err);
}

typedef struct fzg_src { const uint8_t *p; uint64_t size, max_end; } fzg_src;
static sts_result fzg_read(void *user, uint64_t off, void *dst, size_t len) {
    fzg_src *s = (fzg_src *)user;
    FZ_CHECK(off <= s->size && len <= s->size - off);
    memcpy(dst, s->p + off, len);
    if (off + len > s->max_end) s->max_end = off + len;
    return STS_OK;
}
static void *fzg_alloc(void *user, const sts_tensor_desc *d, const sts_type *t, uint64_t n) {
    (void)user; (void)d; (void)t;
    return malloc(n ? (size_t)n : 1);
}
static void fzg_release(void *user, const sts_tensor_desc *d, void *p, uint64_t n) {
    (void)user; (void)d; (void)n;
    free(p);
}
static unsigned fzg_meta(const sts_meta *m, int depth) {
    unsigned s = fz_touch(m->key, m->key_len);
    uint64_t k;
    FZ_CHECK(depth <= 1);
    if (m->type == STS_META_STRING) s += fz_touch(m->str, m->str_len);
    if (m->type == STS_META_ARRAY) {
        FZ_CHECK(m->format_type == 9 && m->u <= 12 && m->u != 9 && (m->count == 0 || m->items));
        for (k = 0; k < m->count; k++) {
            FZ_CHECK(m->items[k].format_type == m->u && !m->items[k].key);
            s += fzg_meta(&m->items[k], depth + 1);
        }
    } else {
        FZ_CHECK(m->format_type <= 12);
    }
    return s;
}
static volatile unsigned fzg_sink;
/* Everything a successful open promises. */
static void fzg_walk(sts_archive *a, uint64_t size) {
    size_t i, j;
    unsigned s = 0;
    for (i = 0; i < sts_archive_meta_count(a); i++) {
        const sts_meta *m = sts_archive_meta_at(a, i);
        s += fzg_meta(m, 0);
        FZ_CHECK(sts_archive_meta_find(a, m->key, m->key_len) == m);  /* keys are unique */
    }
    for (i = 0; i < sts_archive_count(a); i++) {
        const sts_tensor_desc *d, *f;
        sts_error e;
        uint8_t dg[32];
        uint64_t numel = 1;
        int ok;
        sts_factory fac;
        sts_materialize_options mo;
        sts_materialized mat;
        sts_result r;
        FZ_CHECK(sts_archive_at(a, i, &d, &e) == STS_OK);
        FZ_CHECK(sts_archive_find(a, d->name, d->name_len, &f, &e) == STS_OK && f == d);
        FZ_CHECK(!memchr(d->name, 0, d->name_len) && d->name_len < 64 && d->rank <= 4);
        for (j = 0; j < d->rank; j++) {
            FZ_CHECK(d->shape[j] == d->format_shape[d->rank - 1 - j]);
            numel *= d->shape[j];
        }
        FZ_CHECK(numel == d->numel && sts_type_bytes(d->type, numel, &ok) == d->nbytes && ok);
        FZ_CHECK(d->offset <= size && d->nbytes <= size - d->offset);
        s += fz_touch(d->name, d->name_len);
        if (d->nbytes > ((uint64_t)1 << 20)) continue;
        FZ_CHECK(sts_archive_sha256(a, d, dg, &e) == STS_OK);
        memset(&fac, 0, sizeof fac);
        fac.allocate = fzg_alloc;
        fac.release = fzg_release;
        memset(&mo, 0, sizeof mo);
        mo.zero_copy = STS_ZERO_COPY_NEVER;
        mo.sha256 = dg;
        r = sts_archive_materialize(a, d, &fac, &mo, &mat, &e);
        if (r == STS_OK) { FZ_CHECK(mat.nbytes == d->nbytes); free(mat.data); }
        else FZ_CHECK(r == STS_ERR_UNSUPPORTED && !d->type->plain && d->big_endian != tu_big_endian());
        if (!d->type->plain && sts_dequantize_supported(d->type->name)) {
            mo.convert = 1;
            mo.target = STS_DTYPE_F32;
            FZ_CHECK(sts_archive_materialize(a, d, &fac, &mo, &mat, &e) == STS_OK);
            FZ_CHECK(mat.nbytes == d->numel * 4);
            free(mat.data);
        }
    }
    fzg_sink += s;
}

/* sts_gguf_write of what the archive holds, then the result opened and compared. */
static sts_result fzg_mem_write(void *user, const void *bytes, size_t len) {
    tu_sb *b = (tu_sb *)user;
    tu_sb_put(b, bytes, len);
    return STS_OK;
}
static int fzg_same_meta(const sts_meta *x, const sts_meta *y) {
    uint64_t k;
    if (x->type != y->type || x->key_len != y->key_len || (x->key_len && memcmp(x->key, y->key, x->key_len))) return 0;
    switch (x->type) {
    case STS_META_STRING: return x->str_len == y->str_len && (!x->str_len || memcmp(x->str, y->str, x->str_len) == 0);
    case STS_META_UINT: case STS_META_BOOL: return x->u == y->u;
    case STS_META_INT: return x->i == y->i;
    case STS_META_FLOAT: return memcmp(&x->f, &y->f, sizeof x->f) == 0 || (x->f != x->f && y->f != y->f);
    default:
        if (x->count != y->count || x->u != y->u) return 0;
        for (k = 0; k < x->count; k++)
            if (!fzg_same_meta(&x->items[k], &y->items[k])) return 0;
        return 1;
    }
}
static void fzg_rewrite(sts_archive *a) {
    size_t n = sts_archive_count(a), nm = sts_archive_meta_count(a), i;
    sts_tensor_spec *specs;
    sts_meta *kvs;
    void **bufs;
    tu_sb out;
    sts_sink sink;
    sts_error e;
    sts_result r;
    if (tu_big_endian()) return;
    for (i = 0; i < n; i++) {
        const sts_tensor_desc *d;
        FZ_CHECK(sts_archive_at(a, i, &d, &e) == STS_OK);
        if (!d->type->plain || d->type->dtype == STS_DTYPE_COUNT || d->nbytes > ((uint64_t)1 << 20)) return;
    }
    specs = (sts_tensor_spec *)calloc(n + 1, sizeof *specs);
    bufs = (void **)calloc(n + 1, sizeof *bufs);
    kvs = (sts_meta *)calloc(nm + 1, sizeof *kvs);
    FZ_CHECK(specs && bufs && kvs);
    for (i = 0; i < n; i++) {
        const sts_tensor_desc *d;
        sts_factory fac;
        sts_materialize_options mo;
        sts_materialized mat;
        FZ_CHECK(sts_archive_at(a, i, &d, &e) == STS_OK);
        memset(&fac, 0, sizeof fac);
        fac.allocate = fzg_alloc;
        fac.release = fzg_release;
        memset(&mo, 0, sizeof mo);
        mo.zero_copy = STS_ZERO_COPY_NEVER;
        FZ_CHECK(sts_archive_materialize(a, d, &fac, &mo, &mat, &e) == STS_OK);  /* host order: little-endian */
        bufs[i] = mat.data;
        specs[i].name = d->name; specs[i].name_len = d->name_len; specs[i].dtype = d->type->dtype;
        specs[i].rank = d->rank; specs[i].shape = d->shape; specs[i].data = mat.data; specs[i].data_size = d->nbytes;
    }
    for (i = 0; i < nm; i++) kvs[i] = *sts_archive_meta_at(a, i);
    memset(&out, 0, sizeof out);
    sink.write = fzg_mem_write;
    sink.user = &out;
    r = sts_gguf_write(specs, n, kvs, nm, &sink, NULL, &e);
    if (r != STS_OK) {
        FZ_CHECK(e.rule == STS_RULE_WRITE_TEXT || e.rule == STS_RULE_GGUF_STRING || e.rule == STS_RULE_GGUF_ALIGNMENT);
        FZ_CHECK(out.n == 0);
    } else {
        sts_archive *b;
        sts_input in;
        uint64_t size = 0;
        FZ_CHECK(sts_gguf_write_size(specs, n, kvs, nm, NULL, &size, &e) == STS_OK && size == out.n);
        memset(&in, 0, sizeof in);
        in.bytes = out.p;
        in.size = out.n;
        if (sts_archive_open(NULL, &in, NULL, &b, &e) != STS_OK) {
            fprintf(stderr, "the writer's file does not open: %s\n", e.message);
            abort();
        }
        FZ_CHECK(sts_archive_count(b) == n && sts_archive_meta_count(b) == nm);
        for (i = 0; i < nm; i++) {
            sts_meta want = kvs[i];
            const sts_meta *got = sts_archive_meta_at(b, i);
            if (want.type == STS_META_UINT && want.format_type == 0) want.format_type = 10;  /* UINT8 -> UINT64 */
            FZ_CHECK(fzg_same_meta(&want, got));
        }
        for (i = 0; i < n; i++) {
            const sts_tensor_desc *d;
            uint32_t j;
            void *back = malloc(specs[i].data_size + 1);
            FZ_CHECK(back && sts_archive_at(b, i, &d, &e) == STS_OK);
            FZ_CHECK(d->name_len == specs[i].name_len && memcmp(d->name, specs[i].name, d->name_len) == 0);
            FZ_CHECK(d->type->dtype == specs[i].dtype && d->rank == specs[i].rank && d->nbytes == specs[i].data_size);
            for (j = 0; j < d->rank; j++) FZ_CHECK(d->shape[j] == specs[i].shape[j]);
            FZ_CHECK(sts_archive_read(b, d, 0, back, (size_t)d->nbytes, &e) == STS_OK);
            FZ_CHECK(d->nbytes == 0 || memcmp(back, specs[i].data, (size_t)d->nbytes) == 0);
            free(back);
        }
        sts_archive_close(b);
    }
    tu_sb_free(&out);
    for (i = 0; i < n; i++) free(bufs[i]);
    free(bufs);
    free(specs);
    free(kvs);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    sts_registry *reg;
    sts_provider p;
    sts_error e;
    uint64_t h = fz_hash(data, size);
    int strict, ok_default = 0;
    memset(&p, 0, sizeof p);
    p.format = "gguf";
    p.name = "gguf";
    p.probe = fzg_probe;
    p.open = fzg_open;
    FZ_CHECK(sts_registry_new(NULL, 0, &reg, &e) == STS_OK && sts_registry_add(reg, &p, &e) == STS_OK);
    for (strict = 0; strict <= 1; strict++) {
        sts_archive *am = NULL, *as = NULL;
        sts_error em, es;
        sts_input in;
        sts_options o;
        sts_source src;
        fzg_src fs;
        tu_alloc al;
        sts_result rm, rs;
        memset(&o, 0, sizeof o);
        o.strict = strict;
        memset(&in, 0, sizeof in);
        in.bytes = size ? (const void *)data : (const void *)"";
        in.size = size;
        if (size == 0) {  /* no bytes: the callback alone */
            memset(&in, 0, sizeof in);
            fs.p = data; fs.size = 0; fs.max_end = 0;
            src.read = fzg_read; src.user = &fs; src.size = 0;
            in.source = &src;
        }
        rm = sts_archive_open(reg, &in, &o, &am, &em);
        memset(&in, 0, sizeof in);
        fs.p = data; fs.size = size; fs.max_end = 0;
        src.read = fzg_read; src.user = &fs; src.size = size;
        in.source = &src;
        rs = sts_archive_open(reg, &in, &o, &as, &es);
        FZ_CHECK(rm == rs);
        if (rm != STS_OK) {
            fz_check_error(rm, &em, size);
            FZ_CHECK(em.rule == es.rule && em.offset == es.offset);
        } else {
            if (strict) FZ_CHECK(ok_default);
            else ok_default = 1;
            if (sts_archive_count(as)) {  /* nothing past the data section's start but the probe's prefix */
                const sts_tensor_desc *d;
                FZ_CHECK(sts_archive_at(as, 0, &d, &es) == STS_OK);
                FZ_CHECK(fs.max_end <= d->offset - d->extras[1].u || fs.max_end <= STS_PROBE_BYTES);
            }
            fzg_walk(am, size);
            if (!strict) fzg_rewrite(am);
            sts_archive_close(am);
            sts_archive_close(as);
        }
        /* a refused allocation, chosen by the input: NOMEM or success, nothing leaked */
        memset(&al, 0, sizeof al);
        o.strict = strict;
        fz_use_alloc(&o, &al, (size_t)(h % 64) + 1);
        memset(&in, 0, sizeof in);
        fs.max_end = 0;
        in.source = &src;
        rs = sts_archive_open(reg, &in, &o, &as, &es);
        if (rs == STS_OK) sts_archive_close(as);
        else FZ_CHECK(rs == rm || rs == STS_ERR_NOMEM);
        FZ_CHECK(al.bytes == 0 && al.blocks == 0);
    }
    sts_registry_free(reg);
    return 0;
}
