/* Fuzz target: the dataset reader (layer 9). An input describes a small dataset folder, which the
   target writes into a private temporary folder, opens and reads every way the API allows.

   Input: one flags byte, then records [kind u8][len u16 LE][len bytes] until the end:
     kind % 4 == 0  a shard, named part-00000-NNNN-fz.safetensors in record order (at most 16)
     kind % 4 == 1  dataset_manifest.json (the last one wins)
     kind % 4 == 2  _tensor_index.json (the last one wins)
     kind % 4 == 3  a file that is never part of the dataset: a writer's hidden temporary
                    (.part-00000-9999-fz.safetensors.tmp-1) or, for odd kinds / 4, notes.txt
   Flags: 0x01 infer the schema (else an explicit one: "a" F32 [ANY], "k000_000__img" U8 any shape)
          0x02 ignore the index (no_index)    0x04 no manifest record: write one with the true sizes
          0x08 no index record: write one from the shards' headers (the later shard wins a key)
          0x10 open the first shard as a single file    0x20 fail one allocation (checked allocator)
          0x40 the written manifest says mode kv        0x80 ... and duplicates lastWin
   The seeds are real datasets from the writer (batch, KV in both layouts, lastWin, with and
   without an index),
   hand-made folders and damaged ones; `clang -std=c99 -DFZ_DATASET_SEEDS -o /tmp/mk
   fuzz/fuzz_dataset.c -lm && /tmp/mk fuzz/corpus/dataset` rewrites them.

   Checked on every input (a failed check aborts: a finding):
     - errors are complete: the result is the error's code, the message starts with the rule id,
       holds no TAB or newline, and out is left NULL;
     - after a successful open: every column, file name and counter is consistent; a long scan's
       rows lie in their files, their data is readable to its last byte, and the counters add up
       (data_bytes = the bytes handed out, files_mapped <= files opened <= files planned);
     - a lookup of a scanned key that lands in the same file returns the same dtype, shape and
       bytes as the scan (never another tensor's data);
     - filtered long scans (keys, dtypes, shape) return only matching rows, a subset of the
       unfiltered scan; with a consistent index (written by the target from the shards) exactly
       the matching rows of the unfiltered scan, so pushdown never loses a row;
     - scans over two file ranges return the rows of the whole scan, in order;
     - with a failing allocator: NOMEM or success, and no byte left allocated after close.
     - an index read (used, or found stale) is UTF-8, and one refused for its UTF-8 is refused at
       its first bad byte (an oracle of the target's own);
     - the folder's lineage record (sts_dataset_lineage): a complete error, or printable ASCII JSON
       in MLflow's field order with an 8-digit hex digest, the same bytes on a second call.
   Under the replay build the same checks run over fuzz/corpus/dataset/. */
#define _POSIX_C_SOURCE 200809L
#ifdef FZ_DATASET_SEEDS
#define STS_KV_CHUNK_BYTES ((size_t)4 << 10)  /* small chunks: the arrival seeds' shards stream */
#endif
#define STS_IMPLEMENTATION
#include "../safetensors_spark.h"
#define FZ_NO_HEADER_MUTATOR   /* fuzz_common.h's mutator knows single files; this target has its own */
#include "fuzz_common.h"
#include "../tests/fs_util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FZ_MAX_SHARDS 16
#define FZ_ROWS 96

/* ---- the input ---- */
typedef struct fz_rec { uint8_t kind; const uint8_t *p; size_t n; } fz_rec;
typedef struct fz_input {
    uint8_t flags;
    fz_rec shard[FZ_MAX_SHARDS];
    size_t nshards;
    const fz_rec *manifest, *index;
    fz_rec extra[4];
    size_t nextra;
    fz_rec all[64];
    size_t nall;
} fz_input;
static void fz_parse_input(const uint8_t *d, size_t n, fz_input *in) {
    size_t at = 1;
    memset(in, 0, sizeof *in);
    if (!n) return;
    in->flags = d[0];
    while (at + 3 <= n && in->nall < 64) {
        size_t len = (size_t)d[at + 1] | (size_t)d[at + 2] << 8;
        fz_rec r;
        r.kind = d[at];
        r.p = d + at + 3;
        r.n = len <= n - at - 3 ? len : n - at - 3;
        at += 3 + r.n;
        in->all[in->nall++] = r;
        switch (r.kind % 4) {
        case 0: if (in->nshards < FZ_MAX_SHARDS) in->shard[in->nshards++] = r; break;
        case 1: in->manifest = &in->all[in->nall - 1]; break;
        case 2: in->index = &in->all[in->nall - 1]; break;
        default: if (in->nextra < 4) in->extra[in->nextra++] = r; break;
        }
    }
}

/* ---- the folder ---- */
static char fz_dir[64];
static void fz_cleanup(void) {
    if (fz_dir[0]) tf_rmtree(fz_dir);
}
static void fz_put(const char *name, const void *p, size_t n) {
    char path[256];
    int fd;
    snprintf(path, sizeof path, "%s/%s", fz_dir, name);
    fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0644);
    FZ_CHECK(fd >= 0);
    FZ_CHECK(n == 0 || write(fd, p, n) == (ssize_t)n);
    close(fd);
}
static void fz_shard_name(char *buf, size_t cap, size_t i) { snprintf(buf, cap, "part-00000-%04u-fz.safetensors", (unsigned)i); }

/* Writes the folder; returns 1 when the index was written by the target from valid shards. */
static int fz_materialize(const fz_input *in) {
    size_t i;
    char name[64];
    int consistent = 0;
    tf_clear(fz_dir);
    for (i = 0; i < in->nshards; i++) {
        fz_shard_name(name, sizeof name, i);
        fz_put(name, in->shard[i].p, in->shard[i].n);
    }
    for (i = 0; i < in->nextra; i++)
        fz_put((in->extra[i].kind / 4) & 1 ? "notes.txt" : ".part-00000-9999-fz.safetensors.tmp-1", in->extra[i].p, in->extra[i].n);
    if (in->manifest) fz_put("dataset_manifest.json", in->manifest->p, in->manifest->n);
    else if (in->flags & 0x04) {
        tu_sb t = { NULL, 0, 0 };
        tu_sb_str(&t, "{\"format_version\":\"1.0\",\"shards\":[");
        for (i = 0; i < in->nshards; i++) {
            fz_shard_name(name, sizeof name, i);
            tu_sb_str(&t, i ? ",{\"shard_path\":\"" : "{\"shard_path\":\"");
            tu_sb_str(&t, name);
            tu_sb_str(&t, "\",\"samples_count\":1,\"bytes\":");
            tu_sb_printf(&t, "%llu", (unsigned long long)in->shard[i].n);
            tu_sb_str(&t, "}");
        }
        tu_sb_str(&t, "],\"dataset_id\":\"fz\",\"mode\":");
        tu_sb_str(&t, in->flags & 0x40 ? "\"kv\"" : "\"batch\"");
        tu_sb_str(&t, ",\"duplicates\":");
        tu_sb_str(&t, in->flags & 0x80 ? "\"lastWin\"}" : "\"fail\"}");
        fz_put("dataset_manifest.json", t.p, t.n);
        free(t.p);
    }
    if (in->index) fz_put("_tensor_index.json", in->index->p, in->index->n);
    else if (in->flags & 0x08) {
        tu_sb t = { NULL, 0, 0 };
        int first = 1, kv = !(in->manifest == NULL && (in->flags & 0x04) && !(in->flags & 0x40));
        const char *seen[256];
        size_t seen_len[256], nseen = 0, nfiles = 0;
        sts_file *files[FZ_MAX_SHARDS];
        consistent = 1;
        tu_sb_str(&t, "{\"metadata\":{\"dataset_id\":\"fz\"},\"tensors\":{");
        for (i = 0; i < in->nshards; i++) {
            sts_file *f;
            sts_error e;
            size_t k;
            if (sts_parse(in->shard[i].p, in->shard[i].n, NULL, &f, &e) != STS_OK) { consistent = 0; continue; }
            fz_shard_name(name, sizeof name, i);
            for (k = 0; k < sts_count(f); k++) {
                const sts_tensor *x = sts_at(f, k);
                uint32_t d;
                size_t q;
                /* a name in two shards: with duplicates=fail (nothing to choose a winner) a key
                   filter answered from the index may keep one copy: not compared exactly */
                for (q = 0; q < nseen; q++) if (seen_len[q] == x->name_len && memcmp(seen[q], x->name, x->name_len) == 0) consistent = 0;
                if (nseen < 256) { seen[nseen] = x->name; seen_len[nseen++] = x->name_len; }
                else consistent = 0;
                if (!first) tu_sb_put(&t, ",", 1);
                first = 0;
                if (kv) tu_sb_json(&t, x->name, x->name_len);
                else {  /* batch manifests: keys are "<shard>/<name>" */
                    char key[512];
                    size_t nl = strlen(name);
                    if (nl + 1 + x->name_len > sizeof key) { consistent = 0; tu_sb_json(&t, x->name, x->name_len); }
                    else {
                        memcpy(key, name, nl);
                        key[nl] = '/';
                        memcpy(key + nl + 1, x->name, x->name_len);
                        tu_sb_json(&t, key, nl + 1 + x->name_len);
                    }
                }
                tu_sb_str(&t, ":{\"file\":\"");
                tu_sb_str(&t, name);
                tu_sb_str(&t, "\",\"tensor\":");
                tu_sb_json(&t, x->name, x->name_len);
                tu_sb_str(&t, ",\"dtype\":\"");
                tu_sb_str(&t, sts_dtype_name(x->dtype));
                tu_sb_str(&t, "\",\"shape\":[");
                for (d = 0; d < x->rank; d++) {
                    if (d) tu_sb_put(&t, ",", 1);
                    tu_sb_printf(&t, "%llu", (unsigned long long)x->shape[d]);
                }
                tu_sb_str(&t, "],\"data_offsets\":[");
                tu_sb_printf(&t, "%llu", (unsigned long long)x->begin);
                tu_sb_put(&t, ",", 1);
                tu_sb_printf(&t, "%llu", (unsigned long long)x->end);
                tu_sb_str(&t, "]}");
                if (x->name_len && memchr(x->name, 0, x->name_len)) consistent = 0;
            }
            files[nfiles++] = f;
        }
        for (i = 0; i < nfiles; i++) sts_close(files[i]);
        tu_sb_str(&t, "}}");
        fz_put("_tensor_index.json", t.p, t.n);
        free(t.p);
    }
    return consistent;
}

/* ---- checks ---- */
static void fz_check_err(sts_result r, const sts_error *e) {  /* complete: code, rule, message */
    tu_err_check("dataset error", r, e, TU_ANY_CODE, TU_ANY_RULE, (const char *)NULL);
}
static uint64_t fz_view_bytes(const sts_view *v) {
    uint64_t n = 1;
    uint32_t d;
    for (d = 0; d < v->rank; d++) {
        if (v->shape[d] && n > UINT64_MAX / v->shape[d]) return UINT64_MAX;
        n *= v->shape[d];
    }
    if (n && sts_dtype_bits(v->dtype) > UINT64_MAX / n) return UINT64_MAX;
    return n * sts_dtype_bits(v->dtype) / 8;
}

typedef struct fz_row {
    char key[256];
    size_t key_len;
    size_t file;
    sts_dtype dtype;
    uint32_t rank;
    uint64_t shape[8];
    uint64_t nbytes, hash;
    int data;
    const void *ptr;
} fz_row;
typedef struct fz_rows { fz_row r[FZ_ROWS]; size_t n, total; uint64_t bytes; sts_scan_stats st; size_t files; } fz_rows;

static int fz_row_eq(const fz_row *a, const fz_row *b) {
    return a->key_len == b->key_len && memcmp(a->key, b->key, a->key_len) == 0 && a->file == b->file;
}
/* A long scan to its end: rows copied (the first FZ_ROWS), every data byte touched. Returns the
   scan's result (rows before an error kept). */
static sts_result fz_long(const sts_dataset *ds, const sts_scan_spec *spec, fz_rows *out, size_t nfiles) {
    sts_scan *s = NULL;
    sts_error e;
    sts_result r;
    sts_scan_spec sp = *spec;
    memset(out, 0, sizeof *out);
    sp.long_form = 1;
    if ((r = sts_scan_open(ds, &sp, &s, &e)) != STS_OK) { fz_check_err(r, &e); return r; }
    out->files = sts_scan_files(s);
    FZ_CHECK(out->files <= nfiles);
    for (;;) {
        const sts_view *c = NULL;
        size_t nc = 99;
        if ((r = sts_scan_next(s, &c, &nc, &e)) != STS_OK) { fz_check_err(r, &e); FZ_CHECK(nc == 0); break; }
        if (!nc) break;
        FZ_CHECK(nc == 1 && c != NULL);
        FZ_CHECK(c->present && c->file < nfiles && (c->key || !c->key_len));
        FZ_CHECK(c->file >= sp.file_begin && (!sp.file_end || c->file < sp.file_end));
        FZ_CHECK((unsigned)c->dtype < (unsigned)STS_DTYPE_COUNT);
        FZ_CHECK(fz_view_bytes(c) == c->nbytes);
        fz_touch(c->key, c->key_len);
        if (sp.with_data) { FZ_CHECK(c->data != NULL || c->nbytes == 0); fz_touch(c->data, c->nbytes); }
        else FZ_CHECK(c->data == NULL);
        out->bytes += sp.with_data ? c->nbytes : 0;
        if (out->n < FZ_ROWS && c->key_len <= sizeof out->r[0].key && c->rank <= 8) {
            fz_row *x = &out->r[out->n++];
            memcpy(x->key, c->key, c->key_len);
            x->key_len = c->key_len;
            x->file = c->file; x->dtype = c->dtype; x->rank = c->rank; x->nbytes = c->nbytes;
            if (c->rank) memcpy(x->shape, c->shape, c->rank * sizeof *c->shape);
            x->data = c->data != NULL;
            x->hash = c->data ? fz_hash((const uint8_t *)c->data, (size_t)c->nbytes) : 0;
        }
        out->total++;
    }
    out->st = sts_scan_get_stats(s);
    FZ_CHECK(out->st.data_bytes == out->bytes);
    FZ_CHECK(out->st.files_opened <= out->files && out->st.files_mapped <= out->st.files_opened);
    if (!sp.with_data) FZ_CHECK(out->st.files_mapped == 0);
    sts_scan_close(s);
    return r;
}
static int fz_row_keep(const fz_row *x, const sts_scan_spec *sp) {
    size_t i;
    int ok = !sp->nkeys;
    for (i = 0; i < sp->nkeys && !ok; i++) ok = sp->key_lens[i] == x->key_len && memcmp(sp->keys[i], x->key, x->key_len) == 0;
    if (!ok) return 0;
    if (sp->ndtypes) {
        ok = 0;
        for (i = 0; i < sp->ndtypes && !ok; i++) ok = sp->dtypes[i] == x->dtype;
        if (!ok) return 0;
    }
    if (sp->has_shape) {
        if (x->rank != sp->rank) return 0;
        for (i = 0; i < x->rank; i++) if (sp->shape[i] != STS_DIM_ANY && sp->shape[i] != x->shape[i]) return 0;
    }
    return 1;
}
/* A filtered scan against the full one: only matching rows, all among the full scan's; with a
   consistent index, exactly the full scan's matching rows. */
static void fz_filtered(const sts_dataset *ds, const sts_scan_spec *sp, const fz_rows *all, size_t nfiles, int exact) {
    static fz_rows got;
    size_t i, j, want = 0;
    if (fz_long(ds, sp, &got, nfiles) != STS_OK) return;
    for (i = 0; i < got.n; i++) {
        int found = 0;
        FZ_CHECK(fz_row_keep(&got.r[i], sp));
        for (j = 0; j < all->n && !found; j++)
            found = fz_row_eq(&got.r[i], &all->r[j]) && (!got.r[i].data || got.r[i].hash == all->r[j].hash);
        if (all->total == all->n) FZ_CHECK(found);
    }
    if (exact && all->total == all->n) {
        for (j = 0; j < all->n; j++) want += (size_t)fz_row_keep(&all->r[j], sp);
        FZ_CHECK(got.total == want);
    }
}

static void fz_read(const sts_dataset *ds, int consistent) {
    sts_dataset_info info = sts_dataset_describe(ds);
    static fz_rows all, part;
    sts_scan_spec sp;
    size_t i, nfiles = info.files;
    sts_error e;
    sts_result r;
    FZ_CHECK(info.files >= 1 || info.has_manifest);
    for (i = 0; i < nfiles; i++) FZ_CHECK(sts_dataset_file(ds, i) != NULL && strlen(sts_dataset_file(ds, i)) > 0);
    FZ_CHECK(sts_dataset_file(ds, nfiles) == NULL);
    for (i = 0; i < info.columns; i++) {
        const sts_view *c = sts_dataset_column(ds, i);
        sts_view v;
        FZ_CHECK(c != NULL);
        fz_touch(c->key, c->key_len);
        if (c->rank) fz_touch(c->shape, c->rank * sizeof *c->shape);
        if (i < 8) {
            r = sts_dataset_get(ds, c->key, c->key_len, (int)(i & 1), &v, &e);
            if (r != STS_OK) fz_check_err(r, &e);
            else {
                FZ_CHECK(v.file < nfiles && v.present);
                if (v.data) fz_touch(v.data, v.nbytes);
            }
        }
    }
    FZ_CHECK(sts_dataset_column(ds, info.columns) == NULL);

    /* the whole dataset, long, with data */
    memset(&sp, 0, sizeof sp);
    sp.with_data = 1;
    r = fz_long(ds, &sp, &all, nfiles);
    if (getenv("FZ_DS_TRACE")) fprintf(stderr, "  %zu file(s), %zu column(s), long scan %s: %zu row(s)\n", nfiles, info.columns, sts_result_name(r), all.total);
    if (r == STS_OK) {
        /* lookups of scanned keys */
        for (i = 0; i < all.n && i < 24; i++) {
            const fz_row *x = &all.r[i];
            sts_view v;
            r = sts_dataset_get(ds, x->key, x->key_len, 1, &v, &e);
            if (r != STS_OK) { fz_check_err(r, &e); continue; }
            FZ_CHECK(v.file < nfiles && v.present && (unsigned)v.dtype < (unsigned)STS_DTYPE_COUNT);
            FZ_CHECK(v.data != NULL || v.nbytes == 0);
            fz_touch(v.data, v.nbytes);
            FZ_CHECK(fz_view_bytes(&v) == v.nbytes);
            if (v.file == x->file) {  /* the same tensor: never another one's bytes */
                FZ_CHECK(v.dtype == x->dtype && v.rank == x->rank && v.nbytes == x->nbytes);
                FZ_CHECK(x->rank == 0 || memcmp(v.shape, x->shape, x->rank * sizeof *x->shape) == 0);
                FZ_CHECK(fz_hash((const uint8_t *)v.data, (size_t)v.nbytes) == x->hash);
            }
        }
        /* filters */
        if (all.n) {
            const char *keys[2];
            size_t lens[2];
            sts_dtype dt = all.r[0].dtype;
            uint64_t shape[8];
            uint32_t d;
            keys[0] = all.r[0].key; lens[0] = all.r[0].key_len;
            keys[1] = all.r[all.n - 1].key; lens[1] = all.r[all.n - 1].key_len;
            memset(&sp, 0, sizeof sp);
            sp.keys = keys; sp.key_lens = lens; sp.nkeys = 2; sp.with_data = 1;
            fz_filtered(ds, &sp, &all, nfiles, consistent);
            memset(&sp, 0, sizeof sp);
            sp.dtypes = &dt; sp.ndtypes = 1; sp.with_data = 1;
            fz_filtered(ds, &sp, &all, nfiles, consistent);
            for (d = 0; d < all.r[0].rank; d++) shape[d] = d % 2 ? STS_DIM_ANY : all.r[0].shape[d];
            memset(&sp, 0, sizeof sp);
            sp.has_shape = 1; sp.rank = all.r[0].rank; sp.shape = shape;
            fz_filtered(ds, &sp, &all, nfiles, consistent);
            sp.keys = keys; sp.key_lens = lens; sp.nkeys = 1; sp.dtypes = &dt; sp.ndtypes = 1;
            fz_filtered(ds, &sp, &all, nfiles, consistent);
        }
        /* two file ranges give the whole scan, in order */
        if (nfiles >= 2 && all.total == all.n) {
            size_t mid = nfiles / 2, k = 0;
            memset(&sp, 0, sizeof sp);
            sp.with_data = 1;
            sp.file_end = mid;
            if (fz_long(ds, &sp, &part, nfiles) == STS_OK) {
                for (i = 0; i < part.n; i++, k++) FZ_CHECK(k < all.n && fz_row_eq(&part.r[i], &all.r[k]));
                sp.file_begin = mid;
                sp.file_end = 0;
                if (fz_long(ds, &sp, &part, nfiles) == STS_OK) {
                    for (i = 0; i < part.n; i++, k++) FZ_CHECK(k < all.n && fz_row_eq(&part.r[i], &all.r[k]));
                    FZ_CHECK(k == all.n);
                }
            }
        }
    }
    /* header bytes only */
    memset(&sp, 0, sizeof sp);
    fz_long(ds, &sp, &part, nfiles);
    /* wide, with data, every column; then the first column alone, without data */
    {
        int pass;
        for (pass = 0; pass < 2; pass++) {
            sts_scan *s;
            const char *cols[1];
            char name[256];
            memset(&sp, 0, sizeof sp);
            sp.with_data = !pass;
            if (pass) {
                const sts_view *c0 = sts_dataset_column(ds, 0);
                if (!c0 || c0->key_len >= sizeof name || memchr(c0->key, 0, c0->key_len)) break;
                memcpy(name, c0->key, c0->key_len);
                name[c0->key_len] = 0;
                cols[0] = name;
                sp.columns = cols;
                sp.ncolumns = 1;
            }
            if ((r = sts_scan_open(ds, &sp, &s, &e)) != STS_OK) { fz_check_err(r, &e); continue; }
            for (i = 0;; i++) {
                const sts_view *c = NULL;
                size_t nc = 99, j;
                if ((r = sts_scan_next(s, &c, &nc, &e)) != STS_OK) { fz_check_err(r, &e); FZ_CHECK(nc == 0); break; }
                if (!nc) break;
                FZ_CHECK(i < nfiles);
                FZ_CHECK(nc == (pass ? 1 : info.columns));
                for (j = 0; j < nc; j++) {
                    FZ_CHECK(c[j].file < nfiles);
                    if (!c[j].present) { FZ_CHECK(c[j].data == NULL); continue; }
                    FZ_CHECK(fz_view_bytes(&c[j]) == c[j].nbytes);
                    if (sp.with_data) fz_touch(c[j].data, c[j].nbytes);
                    else FZ_CHECK(c[j].data == NULL);
                }
            }
            FZ_CHECK(sts_scan_get_stats(s).files_mapped <= nfiles);
            sts_scan_close(s);
        }
    }
    {
        sts_scan_stats st = sts_dataset_stats(ds);
        FZ_CHECK(st.files_mapped <= nfiles);
    }
}

/* The lineage record of the folder (layer 11): a complete error, or one line of ASCII JSON (every
   byte printable: json.dumps with ensure_ascii) holding the fields in MLflow's order, the digest 8
   lowercase hex digits, and the same bytes again from a second call. Default allocator: the
   failing one is the reader's. */
static void fz_lineage(const char *path) {
    char *rec = NULL, *again = NULL;
    size_t n = 0, n2 = 0, i;
    sts_error e;
    sts_result r = sts_dataset_lineage(path, NULL, NULL, &rec, &n, &e);
    if (getenv("FZ_DS_TRACE")) fprintf(stderr, "lineage %s %s\n", sts_result_name(r), r ? e.message : "");
    if (r != STS_OK) {
        fz_check_err(r, &e);
        FZ_CHECK(rec == NULL);
        return;
    }
    FZ_CHECK(rec && strlen(rec) == n);
    for (i = 0; i < n; i++) FZ_CHECK(rec[i] >= 0x20 && rec[i] <= 0x7e);
    FZ_CHECK(n > 60 && memcmp(rec, "{\"name\": \"safetensors_dataset\", \"digest\": \"", 43) == 0);
    FZ_CHECK(rec[51] == '"');
    for (i = 43; i < 51; i++) FZ_CHECK((rec[i] >= '0' && rec[i] <= '9') || (rec[i] >= 'a' && rec[i] <= 'f'));
    FZ_CHECK(strstr(rec, "\", \"source\": \"{\\\"uri\\\": ") && strstr(rec, "\"source_type\": \"local\"") &&
             strstr(rec, "\"profile\": \"{\\\"num_rows\\\": ") && rec[n - 1] == '}');
    FZ_CHECK(sts_dataset_lineage(path, NULL, NULL, &again, &n2, &e) == STS_OK);
    FZ_CHECK(n2 == n && memcmp(rec, again, n) == 0);
    sts_free(NULL, rec, n + 1);
    sts_free(NULL, again, n2 + 1);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static fz_input in;
    sts_read_config cfg;
    sts_options o;
    tu_alloc a;
    sts_dataset *ds = (sts_dataset *)&in;
    sts_error e;
    sts_result r;
    char path[256];
    int consistent;
    static const uint64_t any1[1] = { STS_DIM_ANY };
    sts_schema_column sc[2];
    if (!fz_dir[0]) {
        strcpy(fz_dir, "/tmp/fzds.XXXXXX");
        FZ_CHECK(mkdtemp(fz_dir) != NULL);
        atexit(fz_cleanup);
    }
    fz_parse_input(data, size, &in);
    if (!size) return 0;
    consistent = fz_materialize(&in);
    memset(&cfg, 0, sizeof cfg);
    memset(&o, 0, sizeof o);
    memset(sc, 0, sizeof sc);
    cfg.infer_schema = in.flags & 0x01;
    cfg.no_index = (in.flags & 0x02) != 0;
    if (!cfg.infer_schema) {
        sc[0].name = "a"; sc[0].name_len = 1; sc[0].has_dtype = 1; sc[0].dtype = STS_DTYPE_F32; sc[0].has_shape = 1; sc[0].rank = 1; sc[0].shape = any1;
        sc[1].name = "k000_000__img"; sc[1].name_len = 13; sc[1].has_dtype = 1; sc[1].dtype = STS_DTYPE_U8;
        cfg.schema = sc;
        cfg.nschema = 2;
    }
#ifdef FZ_DS_NO_ALLOC_FAIL  /* a campaign past a known allocation-failure finding */
    in.flags &= (uint8_t)~0x20;
#endif
    if (in.flags & 0x20) fz_use_alloc(&o, &a, 1 + (size_t)(fz_hash(data, size) % 64));
    if ((in.flags & 0x10) && in.nshards) {
        char name[64];
        fz_shard_name(name, sizeof name, 0);
        snprintf(path, sizeof path, "%s/%s", fz_dir, name);
    } else
        snprintf(path, sizeof path, "%s", fz_dir);
    fz_lineage(path);
    r = sts_dataset_open(path, &cfg, &o, &ds, &e);
    if (getenv("FZ_DS_TRACE"))  /* what an input does: FZ_DS_TRACE=1 build/fuzz/replay_dataset FILE */
        fprintf(stderr, "flags %02x, %zu shard(s), manifest %s, index %s: open %s %s\n", in.flags, in.nshards, in.manifest ? "given" : (in.flags & 4) ? "written" : "none",
                in.index ? "given" : (in.flags & 8) ? "written" : "none", sts_result_name(r), r ? e.message : "");
    if (r != STS_OK) {
        fz_check_err(r, &e);
        FZ_CHECK(ds == (sts_dataset *)&in);  /* out untouched */
        if (in.flags & 0x20) FZ_CHECK(a.bytes == 0);
        /* an index refused for its UTF-8: at its first bad byte, as a check of the whole text finds */
        if (in.index && e.rule == STS_RULE_DATASET_INDEX &&  /* the message itself, not a name it quotes */
            strncmp(e.message, "dataset.index: _tensor_index.json is not UTF-8 at byte", 54) == 0)
            FZ_CHECK(e.offset == fz_utf8_bad(in.index->p, in.index->n) && e.offset < in.index->n);
        return 0;
    }
    FZ_CHECK(ds != NULL);
    /* an index that was read (used or found stale) is UTF-8: the reader checks it in its strings only */
    if (in.index && (sts_dataset_describe(ds).has_index || sts_dataset_describe(ds).index_stale))
        FZ_CHECK(fz_utf8_bad(in.index->p, in.index->n) == in.index->n);
    fz_read(ds, consistent && !(in.flags & 0x20) && !cfg.no_index && !(in.flags & 0x10));
    sts_dataset_close(ds);
    if (in.flags & 0x20) FZ_CHECK(a.bytes == 0);
    return 0;
}

#ifdef FUZZ_WITH_LIBFUZZER
/* Structure-aware mutation: one record's bytes (or the flags), or a record dropped / repeated. */
size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max_size);
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed);
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed) {
    static fz_input in;
    static uint8_t out[1 << 17], body[1 << 16];
    size_t i, n = 0, pick, what = seed % 16;
    if (size == 0 || max_size > sizeof out) return LLVMFuzzerMutate(data, size, max_size);
    fz_parse_input(data, size, &in);
    if (what == 0 || in.nall == 0) {  /* the flags, or the raw bytes */
        if (what == 0) { data[0] ^= (uint8_t)(1u << (seed >> 4) % 8); return size; }
        return LLVMFuzzerMutate(data, size, max_size);
    }
    pick = (seed >> 4) % in.nall;
    out[n++] = in.flags;
    for (i = 0; i < in.nall; i++) {
        const fz_rec *r = &in.all[i];
        size_t len = r->n, k;
        const uint8_t *src = r->p;
        int times = 1;
        if (i == pick && what == 1) times = 0;                     /* drop */
        if (i == pick && what == 2 && r->kind % 4 == 0) times = 2; /* repeat a shard */
        if (i == pick && what >= 3) {                              /* mutate its bytes */
            size_t room = max_size > size ? max_size - size + len : len;
            if (room > sizeof body) room = sizeof body;
            if (room > 0xffff) room = 0xffff;
            memcpy(body, r->p, len);
            len = LLVMFuzzerMutate(body, len, room);
            src = body;
        }
        for (k = 0; k < (size_t)times; k++) {
            if (n + 3 + len > max_size) break;
            out[n++] = r->kind;
            out[n++] = (uint8_t)(len & 0xff);
            out[n++] = (uint8_t)(len >> 8);
            memcpy(out + n, src, len);
            n += len;
        }
    }
    if (n > max_size) n = max_size;
    memcpy(data, out, n);
    return n;
}
#endif

#ifdef FZ_DATASET_SEEDS
/* ---- seed generator: real datasets from the writer, serialized as inputs ---- */
#include <stdio.h>
typedef struct fz_seed { uint8_t *p; size_t n, cap; } fz_seed;
static void seed_put(fz_seed *s, const void *p, size_t n) {
    if (s->n + n > s->cap) { s->cap = (s->n + n) * 2; s->p = (uint8_t *)realloc(s->p, s->cap); }
    memcpy(s->p + s->n, p, n);
    s->n += n;
}
static void seed_rec(fz_seed *s, uint8_t kind, const void *p, size_t n) {
    uint8_t h[3];
    h[0] = kind; h[1] = (uint8_t)(n & 0xff); h[2] = (uint8_t)(n >> 8);
    seed_put(s, h, 3);
    seed_put(s, p, n);
}
/* Replaces every occurrence of from by to in text. */
static char *seed_subst(char *text, size_t *n, const char *from, const char *to) {
    size_t fl = strlen(from), tl = strlen(to);
    tu_sb t = { NULL, 0, 0 };
    char *at = text, *hit;
    while ((hit = strstr(at, from)) != NULL) {
        tu_sb_put(&t, at, (size_t)(hit - at));
        tu_sb_put(&t, to, tl);
        at = hit + fl;
    }
    tu_sb_put(&t, at, strlen(at));
    free(text);
    *n = t.n;
    return t.p;
}
static int seed_cmp(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }
/* Serializes dir (shards in name order, renamed to the target's names in the manifest and index). */
static void seed_folder(fz_seed *s, const char *dir, int manifest, int index, uint8_t flags) {
    DIR *d = opendir(dir);
    struct dirent *ent;
    char *names[64], p[1024], fzn[64];
    size_t n = 0, i, len;
    uint8_t *b;
    s->n = 0;
    seed_put(s, &flags, 1);
    while ((ent = readdir(d)) != NULL)
        if (strncmp(ent->d_name, "part-", 5) == 0) names[n++] = strdup(ent->d_name);
    closedir(d);
    qsort(names, n, sizeof *names, seed_cmp);
    for (i = 0; i < n; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, names[i]);
        b = tf_read_opt(p, &len);
        seed_rec(s, 0, b, len);
        free(b);
    }
    if (manifest || index) {
        int k;
        for (k = 0; k < 2; k++) {
            char *t;
            if (!(k ? index : manifest)) continue;
            snprintf(p, sizeof p, "%s/%s", dir, k ? "_tensor_index.json" : "dataset_manifest.json");
            if (!(t = (char *)tf_read_opt(p, &len))) continue;
            for (i = 0; i < n; i++) { fz_shard_name(fzn, sizeof fzn, i); t = seed_subst(t, &len, names[i], fzn); }
            seed_rec(s, (uint8_t)(k ? 2 : 1), t, len);
            free(t);
        }
    }
    for (i = 0; i < n; i++) free(names[i]);
}
static void seed_write(const char *out, const char *name, const fz_seed *s) {
    char p[1024];
    FILE *f;
    snprintf(p, sizeof p, "%s/%s", out, name);
    f = fopen(p, "wb");
    if (!f || fwrite(s->p, 1, s->n, f) != s->n) { perror(p); exit(1); }
    fclose(f);
    printf("%s: %zu bytes\n", name, s->n);
}
#define SEED_OK(call) do { sts_result r_ = (call); if (r_ != STS_OK) { fprintf(stderr, "%s: %s\n", #call, e.message); exit(1); } } while (0)
/* arrival: kv_layout arrival at a 12,000-byte target with 600-byte images; the generator's KV
   chunks are 4 KiB (STS_KV_CHUNK_BYTES below), so its shards stream and end with rows in front */
static void seed_kv_as(const char *dir, uint32_t tasks, uint32_t rows, int index, int lastwin, int arrival) {
    static const sts_column kvs[3] = { { "id", STS_VALUE_STRING, STS_DTYPE_U8 }, { "img", STS_VALUE_TENSOR, STS_DTYPE_U8 }, { "emb", STS_VALUE_ARRAY, STS_DTYPE_F32 } };
    sts_write_config c;
    sts_error e;
    char *msgs[8];
    size_t lens[8];
    uint32_t t, r;
    sts_dataset_summary sum;
    memset(&c, 0, sizeof c);
    c.name_col = "id"; c.generate_index = index; c.duplicates = lastwin ? STS_DUPLICATES_LAST_WIN : STS_DUPLICATES_FAIL;
    c.has_dtype = 1; c.dtype = STS_DTYPE_BF16; c.no_fsync = 1;
    if (arrival) { c.kv_layout = STS_KV_ARRIVAL; c.target_shard_bytes = 12000; }
    SEED_OK(sts_dataset_prepare(dir, &c, kvs, 3, NULL, &e));
    for (t = 0; t < tasks; t++) {
        sts_task_writer *w;
        SEED_OK(sts_task_open(dir, t, &c, kvs, 3, NULL, &w, &e));
        for (r = 0; r < rows + (lastwin && t ? 1 : 0); r++) {
            char key[32];
            uint8_t img[600];
            float emb[2] = { (float)t, (float)r + 0.5f };
            uint64_t shape[2] = { 2, arrival ? 300 : 1 + (t + r) % 3 };
            sts_value v[3];
            size_t i;
            if (r == rows) snprintf(key, sizeof key, "dup");
            else snprintf(key, sizeof key, "k%03u_%03u", t, r);
            for (i = 0; i < sizeof img; i++) img[i] = (uint8_t)(t * 16 + r * 4 + i);
            memset(v, 0, sizeof v);
            v[0].data = key; v[0].size = strlen(key);
            v[1].data = img; v[1].size = 2 * shape[1]; v[1].dtype = STS_DTYPE_U8; v[1].rank = 2; v[1].shape = shape;
            v[2].data = emb; v[2].size = 2;
            SEED_OK(sts_task_write(w, v, &e));
        }
        SEED_OK(sts_task_commit(w, &msgs[t], &lens[t], &e));
        sts_task_close(w);
    }
    SEED_OK(sts_dataset_commit(dir, &c, (const char *const *)msgs, lens, tasks, NULL, &sum, &e));
    for (t = 0; t < tasks; t++) sts_free(NULL, msgs[t], lens[t] + 1);
}
static void seed_kv(const char *dir, uint32_t tasks, uint32_t rows, int index, int lastwin) {
    seed_kv_as(dir, tasks, rows, index, lastwin, 0);
}
static void seed_batch(const char *dir, sts_tail tail, int index) {
    static const sts_column bs[2] = { { "a", STS_VALUE_ARRAY, STS_DTYPE_F32 }, { "b", STS_VALUE_TENSOR, STS_DTYPE_I16 } };
    sts_write_config c;
    sts_error e;
    char *msg;
    size_t len;
    sts_task_writer *w;
    sts_dataset_summary sum;
    uint32_t r;
    memset(&c, 0, sizeof c);
    c.batch_size = 3; c.generate_index = index; c.has_dtype = 1; c.dtype = STS_DTYPE_F32; c.tail = tail; c.no_fsync = 1;
    SEED_OK(sts_dataset_prepare(dir, &c, bs, 2, NULL, &e));
    SEED_OK(sts_task_open(dir, 0, &c, bs, 2, NULL, &w, &e));
    for (r = 0; r < 7; r++) {
        float a[2] = { (float)r, -(float)r };
        int16_t b[1] = { (int16_t)(r * 100) };
        uint64_t one = 1;
        sts_value v[2];
        memset(v, 0, sizeof v);
        v[0].data = a; v[0].size = 2;
        v[1].data = b; v[1].size = 2; v[1].dtype = STS_DTYPE_I16; v[1].rank = 1; v[1].shape = &one;
        SEED_OK(sts_task_write(w, v, &e));
    }
    SEED_OK(sts_task_commit(w, &msg, &len, &e));
    sts_task_close(w);
    SEED_OK(sts_dataset_commit(dir, &c, (const char *const *)&msg, &len, 1, NULL, &sum, &e));
    sts_free(NULL, msg, len + 1);
}
static void seed_clear(const char *dir) {
    DIR *d = opendir(dir);
    struct dirent *ent;
    char p[1024];
    if (!d) return;
    while ((ent = readdir(d)) != NULL) {
        if (ent->d_name[0] == '.' && (ent->d_name[1] == 0 || (ent->d_name[1] == '.' && ent->d_name[2] == 0))) continue;
        snprintf(p, sizeof p, "%s/%s", dir, ent->d_name);
        unlink(p);
    }
    closedir(d);
    rmdir(dir);
}
int main(int argc, char **argv) {
    char tmp[64] = "/tmp/fzseed.XXXXXX", dir[128];
    fz_seed s = { NULL, 0, 0 };
    const char *out = argc > 1 ? argv[1] : "fuzz/corpus/dataset";
    if (!mkdtemp(tmp)) return 1;
    snprintf(dir, sizeof dir, "%s/d", tmp);
    mkdir(out, 0755);
    /* KV with the index, without, lastWin */
    seed_kv(dir, 3, 2, 1, 0); seed_folder(&s, dir, 1, 1, 0x01); seed_write(out, "s_kv_index", &s);
    s.p[0] = 0x03; seed_write(out, "s_kv_index_ignored", &s);
    s.p[0] = 0x00; seed_write(out, "s_kv_index_explicit", &s);
    s.p[0] = 0x21; seed_write(out, "s_kv_index_nomem", &s);
    s.p[0] = 0x11; seed_write(out, "s_kv_single_file", &s);
    seed_folder(&s, dir, 0, 0, 0x0d | 0x40); seed_write(out, "s_kv_auto", &s);
    seed_folder(&s, dir, 0, 0, 0x01); seed_write(out, "s_kv_listing", &s);
    seed_clear(dir);
    seed_kv(dir, 3, 2, 0, 0); seed_folder(&s, dir, 1, 0, 0x01); seed_write(out, "s_kv_plain", &s);
    seed_clear(dir);
    seed_kv(dir, 3, 1, 1, 1); seed_folder(&s, dir, 1, 1, 0x01); seed_write(out, "s_kv_lastwin_index", &s);
    seed_folder(&s, dir, 1, 0, 0x01); seed_write(out, "s_kv_lastwin", &s);
    seed_folder(&s, dir, 0, 0, 0x0d | 0x40 | 0x80); seed_write(out, "s_kv_lastwin_auto", &s);
    seed_clear(dir);
    /* KV in the arrival layout: shards with rows in front of the data written first, padded headers */
    seed_kv_as(dir, 2, 40, 1, 0, 1); seed_folder(&s, dir, 1, 1, 0x01); seed_write(out, "s_kv_arrival_index", &s);
    seed_folder(&s, dir, 1, 0, 0x01); seed_write(out, "s_kv_arrival", &s);
    seed_clear(dir);
    seed_kv_as(dir, 2, 30, 1, 1, 1); seed_folder(&s, dir, 1, 1, 0x01); seed_write(out, "s_kv_arrival_lastwin", &s);
    seed_clear(dir);
    /* batch, each tail */
    seed_batch(dir, STS_TAIL_WRITE, 1); seed_folder(&s, dir, 1, 1, 0x01); seed_write(out, "s_batch_write_index", &s);
    seed_folder(&s, dir, 1, 0, 0x01); seed_write(out, "s_batch_write", &s);
    seed_folder(&s, dir, 0, 0, 0x0d); seed_write(out, "s_batch_auto", &s);
    seed_clear(dir);
    seed_batch(dir, STS_TAIL_PAD, 1); seed_folder(&s, dir, 1, 1, 0x01); seed_write(out, "s_batch_pad_index", &s);
    seed_clear(dir);
    seed_batch(dir, STS_TAIL_DROP, 0); seed_folder(&s, dir, 1, 0, 0x00); seed_write(out, "s_batch_drop_explicit", &s);
    seed_clear(dir);
    /* damaged: a stale index (one shard gone), a corrupt shard, a manifest with a wrong size, a hidden temporary */
    seed_kv(dir, 3, 2, 1, 0);
    seed_folder(&s, dir, 1, 1, 0x01);
    {
        fz_input in;
        fz_seed t = { NULL, 0, 0 };
        size_t i;
        int k;
        fz_parse_input(s.p, s.n, &in);
        t.n = 0;
        seed_put(&t, &in.flags, 1);
        for (i = 0; i < in.nall; i++)   /* shard 1 and the manifest dropped: the index names a file the folder lacks */
            if (i != 1 && in.all[i].kind % 4 != 1) seed_rec(&t, in.all[i].kind, in.all[i].p, in.all[i].n);
        seed_write(out, "s_stale_index", &t);
        for (k = 0; k < 2; k++) {
            t.n = 0;
            seed_put(&t, &in.flags, 1);
            for (i = 0; i < in.nall; i++) {
                if (i == 1 && k == 0) {  /* shard 1's header corrupted, its size kept */
                    uint8_t *c = (uint8_t *)malloc(in.all[i].n);
                    memcpy(c, in.all[i].p, in.all[i].n);
                    c[9] = '[';
                    seed_rec(&t, 0, c, in.all[i].n);
                    free(c);
                } else if (i == 2 && k == 1) seed_rec(&t, 0, in.all[i].p, in.all[i].n - 1);  /* shard 2 truncated: the manifest disagrees */
                else seed_rec(&t, in.all[i].kind, in.all[i].p, in.all[i].n);
            }
            seed_rec(&t, 3, "{\"not\":\"a shard\"}", 17);
            seed_write(out, k ? "s_manifest_size" : "s_corrupt_shard", &t);
        }
        free(t.p);
    }
    seed_clear(dir);
    /* hand-made: two files sharing a name, a scalar, an empty tensor, metadata; no manifest */
    {
        static const char f1[] = "{\"__metadata__\":{\"m\":\"v\"},\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                                 "\"s\":{\"dtype\":\"U8\",\"shape\":[],\"data_offsets\":[8,9]}}";
        static const char f2[] = "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},\"e\":{\"dtype\":\"BF16\",\"shape\":[0,4],\"data_offsets\":[4,4]}}";
        uint8_t buf[512];
        size_t hl;
        s.n = 0;
        buf[0] = 0x09;
        seed_put(&s, buf, 1);
        hl = (sizeof f1 - 1 + 7) & ~(size_t)7;
        memset(buf, ' ', sizeof buf);
        { size_t j; for (j = 0; j < 8; j++) buf[j] = (uint8_t)(hl >> (8 * j)); }
        memcpy(buf + 8, f1, sizeof f1 - 1);
        memset(buf + 8 + hl, 0x3f, 9);
        seed_rec(&s, 0, buf, 8 + hl + 9);
        hl = (sizeof f2 - 1 + 7) & ~(size_t)7;
        memset(buf, ' ', sizeof buf);
        { size_t j; for (j = 0; j < 8; j++) buf[j] = (uint8_t)(hl >> (8 * j)); }
        memcpy(buf + 8, f2, sizeof f2 - 1);
        memset(buf + 8 + hl, 0x40, 4);
        seed_rec(&s, 0, buf, 8 + hl + 4);
        seed_rec(&s, 3, "garbage", 7);
        seed_write(out, "s_hand_listing", &s);
        s.p[0] = 0x0d;
        seed_write(out, "s_hand_auto_batch", &s);
    }
    free(s.p);
    rmdir(tmp);
    return 0;
}
#endif
