/* Fuzz target: the archive (layer 10) over every provider. An input is one flags byte and a payload;
   the flags choose the registry and how the payload reaches sts_archive_open.

   Flags: bits 0-1  the registry: 0 the built-ins (NULL); 1 the built-ins and the "blob" provider
                    below; 2 the blob provider and one that always declines; 3 the built-ins in a
                    registry made with the checked allocator
          bits 2-4  the input: 0 the payload as bytes (bit 7: at an odd address); 1 a callback
                    source; 2 a file "in.npy" (mapped); 3 a file "in.safetensors" read with pread;
                    4 a folder with model.safetensors.index.json and model-00001-of-00001.safetensors;
                    5 the same with _tensor_index.json; 6 a folder with dataset_manifest.json and
                    part-00000-0000-fz.safetensors; 7 the index file of 4 given as the path.
                    For 4-7 the payload is [u16 LE n][n bytes of JSON][the shard's bytes].
          bit 5     fail one of the first 64 allocations (which one: from a hash of the input)
          bit 6     strict mode
   The blob provider claims a payload starting with "BLOB" (confidence: the next byte, clamped by
   the archive; version: the one after) and reads records [name length u8][name][dtype u8]
   [rank u8][dims u8 x rank][offset u16 LE][size adjustment i8], adding each through
   sts_builder_add_tensor (so the builder's checks see wrong sizes, bytes past the end and repeated
   names; the dtype byte's top bit makes the tensor big-endian), plus metadata (a string, an array
   of typed items).

   Checked on every input (a failed check aborts: a finding):
     - errors are complete (code, rule, message) and out stays NULL; sts_probe agrees with open
       on the winner;
     - after a successful open, for every tensor (at most 48): the descriptor is consistent (its
       type's bytes of its shape, its file, alignment, index, found again by name); a window read
       of the whole tensor; the view (when there is one) holds the same bytes; a cursor of odd
       chunks with the digest gives the same bytes; sts_archive_sha256 is the digest of those
       bytes; materialising copies them in host order, wraps the view itself, converts to F32
       exactly as sts_convert does, and fails a wrong digest with CHECKSUM after releasing what
       it allocated; a window past the end is refused with archive.window; every file's digest;
     - with a failing allocation: every call succeeds or fails completely, and after closing no
       byte is left allocated.
   Seeds: `clang -std=c99 -DFZ_ARCHIVE_SEEDS -o /tmp/mk fuzz/fuzz_archive.c -lm && /tmp/mk
   fuzz/corpus/archive` rewrites fuzz/corpus/archive/s_* (safetensors files, checkpoints, datasets,
   .npy files of every version and byte order, blob inputs, damaged ones). */
#define _POSIX_C_SOURCE 200809L
#define STS_IMPLEMENTATION
#include "../safetensors_spark.h"
#define FZ_NO_HEADER_MUTATOR   /* the payload is not always a safetensors file */
#include "fuzz_common.h"
#include "../tests/fs_util.h"
#include "../tests/archive_util.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FZ_MAX_TENSORS 48
#define FZ_MAX_READ ((uint64_t)1 << 20)

/* ---- the blob provider ---- */
static void blob_probe(void *user, const sts_probe_input *in, sts_probe_result *o) {
    (void)user;
    if (in->is_dir || in->prefix_len < 6 || memcmp(in->prefix, "BLOB", 4) != 0) {
        snprintf(o->reason, sizeof o->reason, "no BLOB magic");
        return;
    }
    o->supported = 1;
    o->confidence = (int)in->prefix[4] - 20;  /* -20..235: the archive clamps it */
    o->version = in->prefix[5];
    snprintf(o->reason, sizeof o->reason, "BLOB, confidence %d", o->confidence);
}
static sts_result blob_open(void *user, sts_builder *b, sts_error *err) {
    uint64_t size = sts_builder_size(b), at = 6;
    uint8_t rec[600];
    sts_result r;
    int k;
    (void)user;
    FZ_CHECK(sts_builder_options(b) != NULL);
    FZ_CHECK(sts_builder_path(b) == NULL || strlen(sts_builder_path(b)) > 0);
    if (sts_builder_bytes(b)) FZ_CHECK(memcmp(sts_builder_bytes(b), "BLOB", 4) == 0);
    for (k = 0; k < 16 && at < size; k++) {
        sts_tensor_desc d;
        uint64_t shape[8], numel = 1;
        size_t nlen, avail = (size_t)(size - at < sizeof rec ? size - at : sizeof rec);
        size_t p;
        uint32_t i;
        int ok;
        if ((r = sts_builder_read(b, at, rec, avail, err)) != STS_OK) return r;
        nlen = rec[0];
        if (1 + nlen + 2 > avail) break;
        p = 1 + nlen;
        memset(&d, 0, sizeof d);
        d.name = (const char *)rec + 1;
        d.name_len = nlen;
        d.type = sts_type_of((sts_dtype)((rec[p] & 0x7f) % (STS_DTYPE_COUNT + 1)));  /* COUNT: no type */
        d.big_endian = rec[p] >> 7;
        d.rank = rec[p + 1] % 9;
        p += 2;
        if (p + d.rank + 3 > avail) break;
        for (i = 0; i < d.rank; i++) { shape[i] = rec[p + i]; numel *= shape[i]; }
        p += d.rank;
        d.shape = shape;
        d.numel = numel;
        d.offset = (uint64_t)rec[p] | (uint64_t)rec[p + 1] << 8;
        d.nbytes = (d.type ? sts_type_bytes(d.type, numel, &ok) : 0) + (uint64_t)(int64_t)(int8_t)rec[p + 2];
        p += 3;
        if ((r = sts_builder_add_tensor(b, &d, err)) != STS_OK) return r;
        at += p;
    }
    {
        sts_meta m, items[3];
        memset(&m, 0, sizeof m);
        memset(items, 0, sizeof items);
        m.key = "blob"; m.key_len = 4; m.type = STS_META_STRING; m.str = "x\0y"; m.str_len = 3;
        if ((r = sts_builder_add_meta(b, &m, err)) != STS_OK) return r;
        items[0].type = STS_META_INT; items[0].i = -1;
        items[1].type = STS_META_STRING; items[1].str = "s"; items[1].str_len = 1;
        items[2].type = STS_META_FLOAT; items[2].f = 0.5;
        m.key = "list"; m.key_len = 4; m.type = STS_META_ARRAY; m.items = items; m.count = 3;
        if ((r = sts_builder_add_meta(b, &m, err)) != STS_OK) return r;
    }
    sts_builder_set_version(b, 1);
    return STS_OK;
}
static void never_probe(void *user, const sts_probe_input *in, sts_probe_result *o) {
    (void)user;
    (void)in;
    o->confidence = 100;  /* a confidence without support counts for nothing */
    snprintf(o->reason, sizeof o->reason, "never");
}
static sts_result never_open(void *user, sts_builder *b, sts_error *err) {
    (void)user;
    (void)b;
    (void)err;
    FZ_CHECK(0);  /* never chosen */
    return STS_OK;
}

/* ---- the folder ---- */
static char fz_dir[64];
static void fz_cleanup(void) {
    if (fz_dir[0]) tf_rmtree(fz_dir);
}
static void fz_put(const char *name, const void *p, size_t n, char *path, size_t cap) {
    int fd;
    snprintf(path, cap, "%s/%s", fz_dir, name);
    fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0644);
    FZ_CHECK(fd >= 0);
    FZ_CHECK(n == 0 || write(fd, p, n) == (ssize_t)n);
    close(fd);
}

/* ---- checks ---- */
static int fz_failing;  /* an allocation fails somewhere: errors allowed, NOMEM or below it */
static void fz_err(sts_result r, const sts_error *e) {
    tu_err_check("archive error", r, e, TU_ANY_CODE, TU_ANY_RULE, (const char *)NULL);
    FZ_CHECK(sts_rule_result(e->rule) == r);
}
/* A call that must succeed unless an allocation fails. */
#define FZ_OK(call) (fz_ok_((call), &e))
static int fz_ok_(sts_result r, const sts_error *e) {
    if (r == STS_OK) return 1;
    fz_err(r, e);
    if (!fz_failing) {
        fprintf(stderr, "unexpected failure: %s\n", e->message);
        FZ_CHECK(r == STS_OK);
    }
    return 0;
}
static void fz_swap(uint8_t *p, uint64_t n, unsigned unit) {
    uint64_t i;
    unsigned b;
    if (unit < 2) return;
    for (i = 0; i + unit <= n; i += unit)
        for (b = 0; b < unit / 2; b++) { uint8_t t = p[i + b]; p[i + b] = p[i + unit - 1 - b]; p[i + unit - 1 - b] = t; }
}

static void fz_tensor(const sts_archive *a, size_t i, uint64_t h) {
    const sts_tensor_desc *d = NULL, *again = NULL;
    const void *view = NULL;
    uint8_t *bytes, dig[32], want[32], *host;
    uint64_t numel = 1, nb;
    uint32_t k;
    sts_error e;
    sts_result r;
    int ok, host_be = tu_big_endian();
    size_t nl;
    const char *nm = sts_archive_name(a, i, &nl);
    FZ_CHECK(nm != NULL || nl == 0);
    if ((r = sts_archive_at(a, i, &d, &e)) != STS_OK) { fz_err(r, &e); return; }  /* a lazy shard may be refused */
    FZ_CHECK(d != NULL && d->type != NULL && d->index == i && d->file < sts_archive_files(a));
    FZ_CHECK(d->name_len == nl && (nl == 0 || memcmp(d->name, nm, nl) == 0));
    FZ_CHECK(d->rank == 0 || (d->shape && d->format_shape));
    for (k = 0; k < d->rank; k++) numel *= d->shape[k];
    FZ_CHECK(numel == d->numel);
    nb = sts_type_bytes(d->type, d->numel, &ok);
    FZ_CHECK(ok && nb == d->nbytes);
    FZ_CHECK(d->alignment == ta_align(d->offset));
    FZ_CHECK(d->big_endian == 0 || d->big_endian == 1);
    FZ_CHECK(d->n_extras == 0 || d->extras);
    if (FZ_OK(sts_archive_find(a, d->name, d->name_len, &again, &e))) FZ_CHECK(again == d);
    if (d->nbytes > FZ_MAX_READ) return;
    bytes = (uint8_t *)malloc(d->nbytes ? (size_t)d->nbytes : 1);
    FZ_CHECK(bytes != NULL);
    if (!FZ_OK(sts_archive_read(a, d, 0, bytes, (size_t)d->nbytes, &e))) { free(bytes); return; }
    sts_sha256_memory(bytes, (size_t)d->nbytes, want);
    r = sts_archive_view(a, d, &view, &e);
    if (r == STS_OK) FZ_CHECK(d->nbytes == 0 || memcmp(view, bytes, (size_t)d->nbytes) == 0);
    else { fz_err(r, &e); FZ_CHECK(r == STS_ERR_UNSUPPORTED || fz_failing); view = NULL; }
    {   /* a window past the end */
        uint8_t one;
        r = sts_archive_read(a, d, d->nbytes, &one, 1, &e);
        FZ_CHECK(r == STS_ERR_INVALID_ARGUMENT && e.rule == STS_RULE_WINDOW);
    }
    {   /* a cursor of odd chunks, with the digest */
        sts_cursor *c = NULL;
        const void *chunk;
        size_t len;
        uint64_t at = 0;
        if (FZ_OK(sts_cursor_open(a, d, 0, d->nbytes, 1 + (size_t)(h % 977), want, &c, &e))) {
            for (;;) {
                if (!FZ_OK(sts_cursor_next(c, &chunk, &len, &e))) break;
                if (!len) break;
                FZ_CHECK(at + len <= d->nbytes && memcmp(chunk, bytes + at, len) == 0);
                at += len;
            }
            FZ_CHECK(at == d->nbytes || fz_failing);
            sts_cursor_close(c);
        }
    }
    if (FZ_OK(sts_archive_sha256(a, d, dig, &e))) FZ_CHECK(memcmp(dig, want, 32) == 0);
    host = (uint8_t *)malloc(d->nbytes ? (size_t)d->nbytes : 1);
    FZ_CHECK(host != NULL);
    if (d->nbytes) memcpy(host, bytes, (size_t)d->nbytes);
    if (d->big_endian != host_be && d->type->plain) fz_swap(host, d->nbytes, d->type->swap);
    {   /* materialise: a copy, a wrap, a conversion, a wrong digest */
        ta_fac f;
        sts_factory fac;
        sts_materialize_options mo;
        sts_materialized m;
        memset(&f, 0, sizeof f);
        fac = ta_factory(&f);
        memset(&mo, 0, sizeof mo);
        mo.zero_copy = STS_ZERO_COPY_NEVER;
        mo.sha256 = want;
        if (FZ_OK(sts_archive_materialize(a, d, &fac, &mo, &m, &e))) {
            FZ_CHECK(!m.wrapped && m.nbytes == d->nbytes && m.type == d->type);
            FZ_CHECK(d->nbytes == 0 || memcmp(m.data, host, (size_t)d->nbytes) == 0);
            ta_unmaterialize(&m);
        }
        FZ_CHECK(f.releases == 0 || fz_failing);
        f.wrap_answer = 1;
        mo.zero_copy = STS_ZERO_COPY_PREFER;
        if (FZ_OK(sts_archive_materialize(a, d, &fac, &mo, &m, &e))) {
            FZ_CHECK(m.wrapped == (view != NULL));
            if (m.wrapped) FZ_CHECK(m.data == view);
            FZ_CHECK(d->nbytes == 0 || memcmp(m.data, host, (size_t)d->nbytes) == 0);
            ta_unmaterialize(&m);
        }
        if (d->type->dtype != STS_DTYPE_COUNT && d->type->dtype != STS_DTYPE_F32 &&
            sts_convert_supported(STS_DTYPE_F32, d->type->dtype) && d->numel <= FZ_MAX_READ / 8) {
            uint64_t out = sts_type_bytes(sts_type_of(STS_DTYPE_F32), d->numel, &ok) * (d->type->dtype == STS_DTYPE_C64 ? 2 : 1);
            uint8_t *le = (uint8_t *)malloc(d->nbytes ? (size_t)d->nbytes : 1), *ref = (uint8_t *)malloc(out ? (size_t)out : 1);
            FZ_CHECK(le && ref);
            if (d->nbytes) memcpy(le, bytes, (size_t)d->nbytes);
            if (d->big_endian) fz_swap(le, d->nbytes, d->type->swap);
            FZ_CHECK(sts_convert_ex(ref, STS_DTYPE_F32, le, d->type->dtype, (size_t)d->numel, (sts_rounding)(h >> 8 & 1), &e) == STS_OK);
            tu_le_copy(ref, ref, (size_t)(out / 4), 4);
            mo.convert = 1;
            mo.target = STS_DTYPE_F32;
            mo.rounding = (sts_rounding)(h >> 8 & 1);
            if (FZ_OK(sts_archive_materialize(a, d, &fac, &mo, &m, &e))) {
                FZ_CHECK(!m.wrapped && m.nbytes == out && m.type == sts_type_of(STS_DTYPE_F32));
                FZ_CHECK(out == 0 || memcmp(m.data, ref, (size_t)out) == 0);
                ta_unmaterialize(&m);
            }
            mo.convert = 0;
            free(le);
            free(ref);
        }
        dig[0] = (uint8_t)(want[0] ^ 0x55);
        memcpy(dig + 1, want + 1, 31);
        mo.sha256 = dig;
        f.allocs = f.releases = 0;
        r = sts_archive_materialize(a, d, &fac, &mo, &m, &e);
        FZ_CHECK(r != STS_OK);
        fz_err(r, &e);
        FZ_CHECK(r == STS_ERR_CHECKSUM || fz_failing);
        FZ_CHECK(f.allocs == f.releases);
    }
    free(host);
    free(bytes);
}

static void fz_archive(const sts_archive *a, uint64_t h) {
    size_t i, n = sts_archive_count(a), files = sts_archive_files(a);
    sts_error e;
    FZ_CHECK(sts_archive_format(a) != NULL && sts_archive_provider(a) != NULL);
    (void)sts_archive_version(a);
    (void)sts_archive_total_bytes(a);
    for (i = 0; i < sts_archive_meta_count(a); i++) {
        const sts_meta *m = sts_archive_meta_at(a, i);
        FZ_CHECK(m != NULL && m->type >= STS_META_STRING && m->type <= STS_META_ARRAY);
        if (m->key_len) fz_touch(m->key, m->key_len);
        if (m->type == STS_META_STRING && m->str_len) fz_touch(m->str, m->str_len);
        if (m->type == STS_META_ARRAY && m->count) fz_touch(m->items, m->count * sizeof *m->items);
        FZ_CHECK(sts_archive_meta_find(a, m->key, m->key_len) != NULL);
    }
    FZ_CHECK(sts_archive_meta_at(a, sts_archive_meta_count(a)) == NULL);
    for (i = 0; i < files; i++) FZ_CHECK(sts_archive_file(a, i) != NULL);
    FZ_CHECK(sts_archive_file(a, files) == NULL);
    for (i = 0; i < n && i < FZ_MAX_TENSORS; i++) fz_tensor(a, i, h + i);
    {   /* past the end */
        const sts_tensor_desc *d;
        sts_result r = sts_archive_at(a, n, &d, &e);
        FZ_CHECK(r == STS_ERR_NOT_FOUND);
        FZ_CHECK(sts_archive_name(a, n, NULL) == NULL);
    }
    for (i = 0; i < files && i < 4; i++) {
        uint8_t dig[32];
        sts_result r = sts_archive_file_sha256(a, i, dig, &e);
        if (r != STS_OK) fz_err(r, &e);  /* a missing or refused shard */
    }
    {
        sts_archive_stats st = sts_archive_get_stats(a);
        FZ_CHECK(st.bytes_read <= st.reads * ((uint64_t)1 << 32));
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    uint8_t flags;
    const uint8_t *pl;
    size_t pn;
    uint64_t h = fz_hash(data, size);
    int kind;
    tu_alloc al;
    sts_options o;
    sts_registry *reg = NULL;
    sts_input in;
    sts_source src;
    ta_src s;
    sts_archive *a = (sts_archive *)&fz_dir;
    sts_error e;
    size_t win = 99;
    sts_result r;
    char path[256];
    uint8_t *odd = NULL;
    if (size < 1) return 0;
    flags = data[0];
    pl = data + 1;
    pn = size - 1;
    kind = flags >> 2 & 7;
    memset(&o, 0, sizeof o);
    o.strict = flags >> 6 & 1;
    fz_use_alloc(&o, &al, 0);
    fz_failing = 0;
    if (flags & 0x20) {  /* which allocation fails: one of the first 64 */
        al.fail_at = (long)(h % 64) + 1;
        fz_failing = 1;
    }
    if ((flags & 3) == 3) {
        if ((r = sts_registry_new(&o, 1, &reg, &e)) != STS_OK) {
            fz_err(r, &e);
            FZ_CHECK(r == STS_ERR_NOMEM && fz_failing);
            FZ_CHECK(al.bytes == 0);
            return 0;
        }
    } else if (flags & 3) {
        sts_provider p;
        FZ_CHECK(sts_registry_new(NULL, (flags & 3) == 1, &reg, &e) == STS_OK);
        memset(&p, 0, sizeof p);
        p.format = "blob"; p.name = "blob"; p.probe = blob_probe; p.open = blob_open;
        FZ_CHECK(sts_registry_add(reg, &p, &e) == STS_OK);
        if ((flags & 3) == 2) {
            p.format = "never"; p.name = NULL; p.probe = never_probe; p.open = never_open;
            FZ_CHECK(sts_registry_add(reg, &p, &e) == STS_OK);
        }
    }
    memset(&in, 0, sizeof in);
    if (kind >= 2) {
        if (!fz_dir[0]) {
            strcpy(fz_dir, "/tmp/fzar.XXXXXX");
            FZ_CHECK(mkdtemp(fz_dir) != NULL);
            atexit(fz_cleanup);
        }
        tf_clear(fz_dir);
    }
    switch (kind) {
    case 0:
        if (flags & 0x80) {  /* at an odd address: views of aligned types are refused */
            odd = (uint8_t *)malloc(pn + 1);
            FZ_CHECK(odd != NULL);
            if (pn) memcpy(odd + 1, pl, pn);
            in = ta_in_bytes(odd + 1, pn);
        } else in = ta_in_bytes(pl, pn);
        if (!pn) in.bytes = data;  /* non-NULL: empty bytes are an input */
        break;
    case 1:
        src = ta_src_init(&s, pl, pn);
        in = ta_in_source(&src);
        break;
    case 2: case 3:
        fz_put(kind == 2 ? "in.npy" : "in.safetensors", pl, pn, path, sizeof path);
        in = ta_in_path(path, kind == 3);
        break;
    default: {
        size_t jn = pn >= 2 ? (size_t)pl[0] | (size_t)pl[1] << 8 : 0;
        const uint8_t *json = pl + (pn >= 2 ? 2 : pn), *shard;
        size_t sn;
        if (jn > pn - (pn >= 2 ? 2 : pn)) jn = pn - (pn >= 2 ? 2 : pn);
        shard = json + jn;
        sn = pn - (size_t)(shard - pl);
        if (kind == 6) {
            fz_put("dataset_manifest.json", json, jn, path, sizeof path);
            fz_put("part-00000-0000-fz.safetensors", shard, sn, path, sizeof path);
        } else {
            fz_put(kind == 5 ? "_tensor_index.json" : "model.safetensors.index.json", json, jn, path, sizeof path);
            fz_put("model-00001-of-00001.safetensors", shard, sn, path, sizeof path);
        }
        if (kind == 7) snprintf(path, sizeof path, "%s/model.safetensors.index.json", fz_dir);
        else snprintf(path, sizeof path, "%s", fz_dir);
        in = ta_in_path(path, 0);
        break;
    }
    }
    {   /* probing alone agrees with open */
        sts_probe_result res[8];
        size_t np = sts_registry_count(reg);
        FZ_CHECK(np <= 8);
        r = sts_probe(reg, &in, &o, res, 8, &win, &e);
        if (r != STS_OK) {
            fz_err(r, &e);
            FZ_CHECK(win == SIZE_MAX || r != STS_ERR_UNSUPPORTED || fz_failing);
            win = SIZE_MAX;
        } else {
            size_t i;
            FZ_CHECK(win < np && res[win].supported && res[win].confidence >= 0 && res[win].confidence <= 100);
            for (i = 0; i < np; i++) {
                FZ_CHECK(memchr(res[i].reason, 0, sizeof res[i].reason) != NULL);
                FZ_CHECK(!res[i].supported || res[i].confidence < res[win].confidence || (res[i].confidence == res[win].confidence && i >= win));
            }
        }
    }
    r = sts_archive_open(reg, &in, &o, &a, &e);
    if (getenv("FZ_VERBOSE"))  /* what an input reaches, for writing seeds */
        fprintf(stderr, "flags %02x: %s %s, %zu tensors\n", flags, sts_result_name(r), r ? e.message : sts_archive_format(a),
                r ? (size_t)0 : sts_archive_count(a));
    if (r != STS_OK) {
        fz_err(r, &e);
        FZ_CHECK(a == (sts_archive *)&fz_dir);  /* out untouched */
    } else {
        FZ_CHECK(a != NULL);
        if (win != SIZE_MAX) {  /* the provider probing chose */
            const sts_provider *p = sts_registry_at(reg, win);
            FZ_CHECK(strcmp(sts_archive_provider(a), p->name ? p->name : p->format) == 0);
            FZ_CHECK(strcmp(sts_archive_format(a), p->format) == 0);
        }
        fz_archive(a, h);
        sts_archive_close(a);
    }
    sts_registry_free(reg);
    if (kind == 1) FZ_CHECK(s.bad == 0);  /* nothing asked past the end of the source */
    free(odd);
    FZ_CHECK(al.bytes == 0 && al.blocks == 0);
    return 0;
}

#ifdef FZ_ARCHIVE_SEEDS
/* ---- seed generator ---- */
static char *g_out;
static void seed(const char *name, uint8_t flags, const void *a, size_t an, const void *b, size_t bn, int json) {
    char p[1024];
    FILE *f;
    uint8_t len[2];
    snprintf(p, sizeof p, "%s/s_%s", g_out, name);
    f = fopen(p, "wb");
    if (!f) { perror(p); exit(1); }
    fwrite(&flags, 1, 1, f);
    if (json) { len[0] = (uint8_t)an; len[1] = (uint8_t)(an >> 8); fwrite(len, 1, 2, f); }
    if (an) fwrite(a, 1, an, f);
    if (bn) fwrite(b, 1, bn, f);
    fclose(f);
    printf("s_%s: %zu bytes\n", name, 1 + (json ? 2 : 0) + an + bn);
}
static void st_file(void **out, size_t *n, int meta) {
    static uint8_t d1[24], d2[6], d3[8];
    uint64_t s1[2] = { 2, 3 }, s2[1] = { 3 }, s3[1] = { 0 };
    sts_tensor_spec sp[4];
    sts_kv kv = { "format", 6, "pt", 2 };
    sts_error e;
    size_t i;
    for (i = 0; i < sizeof d1; i++) d1[i] = (uint8_t)(i * 7 + 1);
    for (i = 0; i < sizeof d2; i++) d2[i] = (uint8_t)(0x3f + i);
    for (i = 0; i < sizeof d3; i++) d3[i] = (uint8_t)(i + 2);
    memset(sp, 0, sizeof sp);
    sp[0].name = "w"; sp[0].name_len = 1; sp[0].dtype = STS_DTYPE_F32; sp[0].rank = 2; sp[0].shape = s1; sp[0].data = d1; sp[0].data_size = 24;
    sp[1].name = "b"; sp[1].name_len = 1; sp[1].dtype = STS_DTYPE_BF16; sp[1].rank = 1; sp[1].shape = s2; sp[1].data = d2; sp[1].data_size = 6;
    sp[2].name = "s"; sp[2].name_len = 1; sp[2].dtype = STS_DTYPE_I64; sp[2].rank = 0; sp[2].shape = s1; sp[2].data = d3; sp[2].data_size = 8;
    sp[3].name = "e"; sp[3].name_len = 1; sp[3].dtype = STS_DTYPE_F16; sp[3].rank = 1; sp[3].shape = s3; sp[3].data = d3; sp[3].data_size = 0;
    if (sts_write_memory(sp, 4, meta ? &kv : NULL, meta ? 1 : 0, NULL, out, n, &e) != STS_OK) { fprintf(stderr, "%s\n", e.message); exit(1); }
}
static void npy(tu_sb *b, int major, const char *descr, const uint64_t *shape, uint32_t rank, size_t nbytes) {
    tu_sb d = { 0, 0, 0 };
    uint8_t data[64];
    size_t i;
    for (i = 0; i < sizeof data; i++) data[i] = (uint8_t)(i * 5 + 1);
    if (descr[1] == 'b') for (i = 0; i < sizeof data; i++) data[i] &= 1;
    b->n = 0;
    ta_npy_dict(&d, descr, 0, shape, rank);
    ta_npy_file(b, major, d.p, data, nbytes);
    tu_sb_free(&d);
}
int main(int argc, char **argv) {
    void *st;
    size_t stn;
    tu_sb b = { 0, 0, 0 };
    uint64_t sh2[2] = { 2, 3 }, sh1[1] = { 4 };
    static const char hf[] = "{\n  \"metadata\": {\n    \"total_size\": 38\n  },\n  \"weight_map\": {\n"
                             "    \"b\": \"model-00001-of-00001.safetensors\",\n    \"e\": \"model-00001-of-00001.safetensors\",\n"
                             "    \"s\": \"model-00001-of-00001.safetensors\",\n    \"w\": \"model-00001-of-00001.safetensors\"\n  }\n}\n";
    static const char hf_missing[] = "{\"metadata\": {\"total_size\": 1, \"n\": -3, \"f\": 1.5, \"t\": true}, \"weight_map\": "
                                     "{\"w\": \"model-00001-of-00001.safetensors\", \"x\": \"model-00002-of-00002.safetensors\"}}";
    static const char ds[] = "{\"format_version\":\"1.0\",\"shards\":[{\"shard_path\":\"part-00000-0000-fz.safetensors\","
                             "\"samples_count\":1,\"bytes\":%zu}],\"dataset_id\":\"fz\",\"mode\":\"kv\",\"duplicates\":\"fail\"}";
    char dsj[512];
    if (argc != 2) { fprintf(stderr, "usage: %s OUT_DIR\n", argv[0]); return 2; }
    g_out = argv[1];
    st_file(&st, &stn, 1);
    seed("st_bytes", 0x00, st, stn, NULL, 0, 0);
    seed("st_odd", 0x80, st, stn, NULL, 0, 0);
    seed("st_source", 0x04, st, stn, NULL, 0, 0);
    seed("st_path", 0x08, st, stn, NULL, 0, 0);
    seed("st_pread_strict", 0x4c, st, stn, NULL, 0, 0);
    seed("st_nomem", 0x20, st, stn, NULL, 0, 0);
    seed("st_registry", 0x03, st, stn, NULL, 0, 0);
    seed("st_truncated", 0x00, st, stn - 3, NULL, 0, 0);
    seed("hf_folder", 0x10, hf, sizeof hf - 1, st, stn, 1);
    seed("hf_ours", 0x14, hf, sizeof hf - 1, st, stn, 1);
    seed("hf_index_path", 0x1c, hf, sizeof hf - 1, st, stn, 1);
    seed("hf_nomem", 0x30, hf, sizeof hf - 1, st, stn, 1);
    seed("hf_missing", 0x10, hf_missing, sizeof hf_missing - 1, st, stn, 1);
    snprintf(dsj, sizeof dsj, ds, stn);
    seed("ds_kv", 0x18, dsj, strlen(dsj), st, stn, 1);
    npy(&b, 1, "<f4", sh2, 2, 24);
    seed("npy_v1_f4", 0x00, b.p, b.n, NULL, 0, 0);
    seed("npy_v1_f4_path", 0x08, b.p, b.n, NULL, 0, 0);
    seed("npy_v1_f4_blob", 0x01, b.p, b.n, NULL, 0, 0);
    npy(&b, 2, ">i2", sh1, 1, 8);
    seed("npy_v2_be_i2", 0x04, b.p, b.n, NULL, 0, 0);
    npy(&b, 3, ">f8", sh1, 1, 32);
    seed("npy_v3_be_f8", 0x00, b.p, b.n, NULL, 0, 0);
    npy(&b, 1, "|b1", sh1, 1, 4);
    seed("npy_b1", 0x80, b.p, b.n, NULL, 0, 0);
    npy(&b, 1, "<c8", sh1, 1, 32);
    seed("npy_c8", 0x00, b.p, b.n, NULL, 0, 0);
    npy(&b, 1, ">f2", sh1, 0, 2);
    seed("npy_be_f2_scalar", 0x00, b.p, b.n, NULL, 0, 0);
    npy(&b, 1, "<u8", sh2, 2, 48);
    seed("npy_u8_nomem", 0x20, b.p, b.n, NULL, 0, 0);
    b.n = 0;
    {
        tu_sb d = { 0, 0, 0 };
        ta_npy_file(&d, 1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2,), }", "abcdefgh", 8);
        seed("npy_fortran", 0x00, d.p, d.n, NULL, 0, 0);
        tu_sb_free(&d);
    }
    {   /* blob: tensors through the builder, good and bad */
        static const uint8_t blob1[] = { 'B', 'L', 'O', 'B', 120, 3,
                                         1, 'a', STS_DTYPE_U8, 1, 4, 6, 0, 0,              /* a: 4 bytes at 6 */
                                         2, 'b', 'f', STS_DTYPE_F32, 2, 1, 2, 8, 0, 0,     /* bf: 8 bytes at 8 */
                                         1, 'c', 0x80 | STS_DTYPE_I16, 1, 2, 1, 0, 0,      /* c: big-endian I16 */
                                         0 };
        static const uint8_t blob_bad[] = { 'B', 'L', 'O', 'B', 120, 3,
                                            1, 'd', STS_DTYPE_C64, 1, 1, 2, 0, 0x7f,       /* d: size + 127 */
                                            0 };
        static const uint8_t blob2[] = { 'B', 'L', 'O', 'B', 99, 1,
                                         1, 'a', STS_DTYPE_U8, 1, 4, 6, 0, 0,
                                         1, 'a', STS_DTYPE_U8, 1, 4, 6, 0, 0 };            /* a twice */
        static const uint8_t blob3[] = { 'B', 'L', 'O', 'B', 50, 1,
                                         1, 'q', STS_DTYPE_F32, 1, 2, 2, 0, 0,             /* misaligned F32 */
                                         1, 'r', STS_DTYPE_BF16, 0, 4, 0, 0 };             /* scalar BF16 */
        seed("blob", 0x01, blob1, sizeof blob1, NULL, 0, 0);
        seed("blob_only", 0x02, blob1, sizeof blob1, NULL, 0, 0);
        seed("blob_twice", 0x01, blob2, sizeof blob2, NULL, 0, 0);
        seed("blob_bad_size", 0x01, blob_bad, sizeof blob_bad, NULL, 0, 0);
        seed("blob_source", 0x06, blob3, sizeof blob3, NULL, 0, 0);
        seed("blob_odd", 0x81, blob3, sizeof blob3, NULL, 0, 0);
    }
    seed("empty_bytes", 0x00, NULL, 0, NULL, 0, 0);
    seed("empty_folder_json", 0x10, "", 0, NULL, 0, 1);
    sts_free(NULL, st, stn);
    tu_sb_free(&b);
    return 0;
}
#endif
