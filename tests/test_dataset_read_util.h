/* test_dataset_read_util.h - helpers shared by the dataset-reader tests (tests/test_dataset_read*.c).

   Include after safetensors_spark.h with STS_IMPLEMENTATION (each test defines _POSIX_C_SOURCE 200809L first). Everything is
   static and marked unused. Checks fail through cmocka.

     (the level, clock, PRNG, text builder, checking allocator and the sts_error check are in
     test_util.h; temporary folders, removal and whole-file read/write in fs_util.h)
     - subfolders, in-place text edits of manifests and indexes, byte flips
     - DR_OK: a call that must succeed
     - a root folder per test group (dr_root, its setup and teardown), fresh folders in it, and
       a dataset opened with its schema inferred (dr_open)
     - single files through the library's writer (sts_write_path)
     - datasets through the dataset writer: batch mode (two columns, every tail strategy) and KV
       mode (one task per shard, optional lastWin duplicates), with a model of every row so a
       reader's values can be compared with the source
     - scans run to the end into a list of rows (copies), /proc/self/io read counters */
#ifndef STS_TESTS_DATASET_READ_UTIL_H
#define STS_TESTS_DATASET_READ_UTIL_H

#include "test_util.h"
#include "fs_util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#define DR_FN TU_FN

/* ---- files and folders (the basic ones are in fs_util.h) ---- */
DR_FN void dr_subdir(char *buf, size_t cap, const char *dir, const char *name) {
    tf_join(buf, cap, dir, name);
    if (mkdir(buf, 0755) != 0 && errno != EEXIST) fail_msg("mkdir %s: %s", buf, strerror(errno));
}
DR_FN void dr_write_str(const char *path, const char *s) { tf_write(path, s, strlen(s)); }
DR_FN void dr_write_in(const char *dir, const char *name, const char *s) {
    char p[4096];
    tf_join(p, sizeof p, dir, name);
    dr_write_str(p, s);
}
DR_FN void dr_unlink_in(const char *dir, const char *name) {
    char p[4096];
    tf_join(p, sizeof p, dir, name);
    if (unlink(p) != 0) fail_msg("unlink %s: %s", p, strerror(errno));
}
/* Replaces the occurrence number `which` (0-based) of `from` in the file by `to`; fails when the
   file has fewer occurrences. */
DR_FN void dr_edit_nth(const char *path, const char *from, const char *to, int which) {
    size_t n, fl = strlen(from), tl = strlen(to);
    uint8_t *p = tf_read(path, &n), *q;
    char *at = (char *)p;
    int k;
    for (k = 0; k <= which; k++) {
        at = strstr(k ? at + fl : at, from);
        if (!at) fail_msg("%s: occurrence %d of \"%s\" not found", path, k, from);
    }
    q = (uint8_t *)malloc(n - fl + tl + 1);
    assert_non_null(q);
    memcpy(q, p, (size_t)(at - (char *)p));
    memcpy(q + (at - (char *)p), to, tl);
    memcpy(q + (at - (char *)p) + tl, at + fl, n - (size_t)(at - (char *)p) - fl);
    tf_write(path, q, n - fl + tl);
    free(p);
    free(q);
}
DR_FN void dr_edit(const char *path, const char *from, const char *to) { dr_edit_nth(path, from, to, 0); }
DR_FN void dr_edit_in(const char *dir, const char *name, const char *from, const char *to) {
    char p[4096];
    tf_join(p, sizeof p, dir, name);
    dr_edit(p, from, to);
}
DR_FN int dr_contains(const char *path, const char *needle) {
    size_t n;
    uint8_t *p = tf_read(path, &n);
    int found = strstr((const char *)p, needle) != NULL;
    free(p);
    return found;
}
/* Overwrites one byte in place (the size stays). */
DR_FN void dr_poke(const char *path, uint64_t off, uint8_t v) {
    int fd = open(path, O_WRONLY);
    assert_true(fd >= 0);
    assert_int_equal(pwrite(fd, &v, 1, (off_t)off), 1);
    close(fd);
}

/* Names of the *.safetensors files of a folder (no hidden ones), sorted; free with tf_names_free. */
DR_FN tf_names dr_list_shards(const char *dir) {
    tf_names r = tf_list(dir, "", ".safetensors");
    TU_CHECK(!r.missing);
    return r;
}

/* ---- a call that must succeed (the error is named e) ---- */
#define DR_OK(call)                                                                                   \
    do {                                                                                              \
        sts_result r_ = (call);                                                                       \
        if (r_ != STS_OK) fail_msg("%s:%d: %s: %s: %s", __FILE__, __LINE__, #call, sts_result_name(r_), e.message); \
    } while (0)

/* ---- a root folder per test group (cmocka group setup and teardown), fresh folders in it ---- */
#if defined(__GNUC__) || defined(__clang__)
static char dr_root[64] __attribute__((unused));
#else
static char dr_root[64];
#endif
DR_FN int dr_root_setup(void **state) {
    (void)state;
    tf_tmpdir(dr_root, sizeof dr_root);
    return 0;
}
DR_FN int dr_root_teardown(void **state) {
    (void)state;
    tf_rmtree(dr_root);
    return 0;
}
/* dr_root/name, removed if it exists. */
DR_FN void dr_fresh(char *dir, size_t cap, const char *name) {
    tf_join(dir, cap, dr_root, name);
    tf_rmtree(dir);
}
/* Opens a dataset with the schema inferred, with or without its index; gives back the result. */
DR_FN sts_result dr_try_open(const char *path, int no_index, sts_dataset **ds, sts_error *e) {
    sts_read_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.infer_schema = 1;
    cfg.no_index = no_index;
    *ds = NULL;
    return sts_dataset_open(path, &cfg, NULL, ds, e);
}
/* The same, where the open must succeed. */
DR_FN sts_dataset *dr_open(const char *path, int no_index) {
    sts_dataset *ds;
    sts_error e;
    DR_OK(dr_try_open(path, no_index, &ds, &e));
    return ds;
}

/* ---- single files ---- */
typedef struct dr_spec {      /* a tensor to write: data is filled from a pattern when NULL */
    const char *name;
    sts_dtype dtype;
    uint32_t rank;
    uint64_t shape[4];
    const void *data;
    uint8_t seed;
} dr_spec;
DR_FN uint64_t dr_spec_bytes(const dr_spec *s) {
    uint64_t n = 1;
    uint32_t d;
    for (d = 0; d < s->rank; d++) n *= s->shape[d];
    return n * sts_dtype_bits(s->dtype) / 8;
}
DR_FN uint8_t dr_pattern(uint8_t seed, uint64_t i) { return (uint8_t)(seed * 31u + i * 7u + 1u); }
/* Writes specs (and optional metadata) to dir/name with the library's single-file writer. */
DR_FN void dr_write_file(const char *dir, const char *name, const dr_spec *specs, size_t n, const sts_kv *meta, size_t nmeta) {
    sts_tensor_spec *ts = (sts_tensor_spec *)calloc(n ? n : 1, sizeof *ts);
    uint8_t **bufs = (uint8_t **)calloc(n ? n : 1, sizeof *bufs);
    char p[4096];
    sts_error e;
    size_t i;
    assert_true(ts && bufs);
    for (i = 0; i < n; i++) {
        uint64_t b = dr_spec_bytes(&specs[i]), j;
        ts[i].name = specs[i].name; ts[i].name_len = strlen(specs[i].name);
        ts[i].dtype = specs[i].dtype; ts[i].rank = specs[i].rank; ts[i].shape = specs[i].shape;
        ts[i].data_size = b;
        if (specs[i].data) ts[i].data = specs[i].data;
        else {
            bufs[i] = (uint8_t *)malloc(b ? (size_t)b : 1);
            assert_non_null(bufs[i]);
            for (j = 0; j < b; j++) bufs[i][j] = dr_pattern(specs[i].seed, j);
            ts[i].data = bufs[i];
        }
    }
    tf_join(p, sizeof p, dir, name);
    DR_OK(sts_write_path(p, ts, n, meta, nmeta, NULL, &e));
    for (i = 0; i < n; i++) free(bufs[i]);
    free(bufs);
    free(ts);
}
/* The pattern bytes of spec s equal data? */
DR_FN int dr_pattern_matches(const dr_spec *s, const void *data) {
    const uint8_t *p = (const uint8_t *)data;
    uint64_t b = dr_spec_bytes(s), j;
    if (s->data) return b == 0 || memcmp(p, s->data, (size_t)b) == 0;
    for (j = 0; j < b; j++) if (p[j] != dr_pattern(s->seed, j)) return 0;
    return 1;
}

/* ---- batch datasets: columns "img" (tensor I16 [2,3] per row) and "emb" (array of 4 F32 -> BF16) ---- */
static const sts_column DR_BATCH_SCHEMA[2] = {
    { "img", STS_VALUE_TENSOR, STS_DTYPE_I16 },
    { "emb", STS_VALUE_ARRAY, STS_DTYPE_F32 },
};
/* The values of a batch row (task, row within the task): exact in every dtype used. */
DR_FN int16_t dr_img_val(uint32_t task, uint64_t row, int j) { return (int16_t)(1000 * (int)task + 6 * (int)row + j - 300); }
DR_FN float dr_emb_val(uint32_t task, uint64_t row, int j) { return (float)((task * 7 + row) % 32) + 0.25f * (float)j - 4.0f; }

typedef struct dr_batch {     /* what was written */
    uint32_t tasks;
    uint64_t rows_per_task[8];
    uint64_t batch_size;
    sts_tail tail;
    int index;
} dr_batch;
DR_FN void dr_write_batch(const char *dir, const dr_batch *b) {
    sts_write_config c;
    sts_error e;
    char *msgs[8];
    size_t lens[8];
    uint32_t t;
    sts_dataset_summary sum;
    memset(&c, 0, sizeof c);
    c.batch_size = b->batch_size;
    c.generate_index = b->index;
    c.has_dtype = 1;
    c.dtype = STS_DTYPE_BF16;
    c.tail = b->tail;
    c.no_fsync = 1;
    assert_true(b->tasks <= 8);
    DR_OK(sts_dataset_prepare(dir, &c, DR_BATCH_SCHEMA, 2, NULL, &e));
    for (t = 0; t < b->tasks; t++) {
        sts_task_writer *w = NULL;
        uint64_t r;
        DR_OK(sts_task_open(dir, t, &c, DR_BATCH_SCHEMA, 2, NULL, &w, &e));
        for (r = 0; r < b->rows_per_task[t]; r++) {
            uint8_t img[12];  /* a tensor cell: little-endian bytes */
            float emb[4];     /* an array cell: C values */
            uint64_t shape[2] = { 2, 3 };
            sts_value v[2];
            int j;
            for (j = 0; j < 6; j++) tu_st16(img + 2 * j, (uint16_t)dr_img_val(t, r, j));
            for (j = 0; j < 4; j++) emb[j] = dr_emb_val(t, r, j);
            memset(v, 0, sizeof v);
            v[0].data = img; v[0].size = sizeof img; v[0].dtype = STS_DTYPE_I16; v[0].rank = 2; v[0].shape = shape;
            v[1].data = emb; v[1].size = 4;
            DR_OK(sts_task_write(w, v, &e));
        }
        DR_OK(sts_task_commit(w, &msgs[t], &lens[t], &e));
        sts_task_close(w);
    }
    DR_OK(sts_dataset_commit(dir, &c, (const char *const *)msgs, lens, b->tasks, NULL, &sum, &e));
    for (t = 0; t < b->tasks; t++) sts_free(NULL, msgs[t], lens[t] + 1);
}
/* Parses part-TTTTT-SSSS-<uuid>.safetensors. */
DR_FN int dr_shard_name(const char *n, uint32_t *task, uint32_t *shard) {
    unsigned t, s;
    if (sscanf(n, "part-%5u-%4u-", &t, &s) != 2) return 0;
    *task = t;
    *shard = s;
    return 1;
}
/* Checks one wide cell of a batch file against the model: real rows hold the source values,
   padding rows (pad strategy) hold zeros. */
DR_FN void dr_check_batch_cell(const dr_batch *b, const char *file, const sts_view *v) {
    uint32_t task = 0, shard = 0;
    uint64_t first, rows, real, r;
    int is_img;
    assert_true(dr_shard_name(file, &task, &shard));
    assert_true(v->present);
    first = shard * b->batch_size;
    real = b->rows_per_task[task] - first;
    if (real > b->batch_size) real = b->batch_size;
    rows = b->tail == STS_TAIL_PAD ? b->batch_size : real;
    is_img = v->key_len >= 3 && memcmp(v->key + v->key_len - 3, "img", 3) == 0;  /* "img" or "<shard>/img" */
    assert_int_equal(v->shape[0], rows);
    if (is_img) {
        const uint8_t *p = (const uint8_t *)v->data;
        assert_int_equal(v->dtype, STS_DTYPE_I16);
        assert_int_equal(v->rank, 3);
        assert_int_equal(v->shape[1], 2);
        assert_int_equal(v->shape[2], 3);
        assert_int_equal(v->nbytes, rows * 12);
        if (!p) return;
        for (r = 0; r < rows; r++) {
            int j;
            for (j = 0; j < 6; j++) {
                int16_t got = (int16_t)tu_le16(p + (r * 6 + j) * 2);
                int16_t want = r < real ? dr_img_val(task, first + r, j) : 0;
                if (got != want) fail_msg("%s img row %llu [%d]: %d, want %d", file, (unsigned long long)r, j, got, want);
            }
        }
    } else {
        const uint8_t *p = (const uint8_t *)v->data;
        assert_int_equal(v->dtype, STS_DTYPE_BF16);
        assert_int_equal(v->rank, 2);
        assert_int_equal(v->shape[1], 4);
        assert_int_equal(v->nbytes, rows * 8);
        if (!p) return;
        for (r = 0; r < rows; r++) {
            int j;
            for (j = 0; j < 4; j++) {
                uint32_t bits = (uint32_t)tu_le16(p + (r * 4 + j) * 2) << 16;
                float got, want = r < real ? dr_emb_val(task, first + r, j) : 0.0f;
                memcpy(&got, &bits, 4);
                if (got != want) fail_msg("%s emb row %llu [%d]: %g, want %g", file, (unsigned long long)r, j, (double)got, (double)want);
            }
        }
    }
}

/* ---- KV datasets: one task per shard; rows "kTTT_RRR" with "img" (tensor) and "emb" (array F32 -> F32) ---- */
static const sts_column DR_KV_SCHEMA[3] = {
    { "id", STS_VALUE_STRING, STS_DTYPE_U8 },
    { "img", STS_VALUE_TENSOR, STS_DTYPE_U8 },
    { "emb", STS_VALUE_ARRAY, STS_DTYPE_F32 },
};
typedef struct dr_kv {
    uint32_t tasks;           /* one shard each */
    uint32_t rows;            /* rows per task */
    int index;
    int last_win;
    int dup_every;            /* > 0: task t > 0 also writes "dup_K" for K < dup_every (same keys in every task) */
} dr_kv;
/* The image's dtype (a column keeps one dtype across rows: the writer checks it). */
DR_FN sts_dtype dr_kv_img_dtype(uint32_t task, uint32_t row) { (void)task; (void)row; return STS_DTYPE_U8; }
DR_FN uint8_t dr_kv_byte(uint32_t task, uint32_t row, uint64_t i) { return (uint8_t)(task * 37u + row * 11u + i * 3u + 5u); }
DR_FN float dr_kv_emb(uint32_t task, uint32_t row, int j) { return (float)task * 100.0f + (float)row + (float)j * 0.5f; }
DR_FN void dr_kv_key(char *buf, size_t cap, uint32_t task, uint32_t row) { snprintf(buf, cap, "k%03u_%03u", task, row); }
DR_FN void dr_kv_img_shape(uint32_t task, uint32_t row, uint64_t shape[2]) { shape[0] = 2 + (task + row) % 2; shape[1] = 3; }

DR_FN void dr_kv_put(sts_task_writer *w, const char *key, uint32_t task, uint32_t row) {
    uint64_t shape[2], n, i;
    uint8_t img[64];
    float emb[3];
    sts_value v[3];
    sts_error e;
    sts_dtype dt = dr_kv_img_dtype(task, row);
    int j;
    dr_kv_img_shape(task, row, shape);
    n = shape[0] * shape[1] * (dt == STS_DTYPE_U16 ? 2 : 1);
    for (i = 0; i < n; i++) img[i] = dr_kv_byte(task, row, i);
    for (j = 0; j < 3; j++) emb[j] = dr_kv_emb(task, row, j);
    memset(v, 0, sizeof v);
    v[0].data = key; v[0].size = strlen(key);
    v[1].data = img; v[1].size = n; v[1].dtype = dt; v[1].rank = 2; v[1].shape = shape;
    v[2].data = emb; v[2].size = 3;
    DR_OK(sts_task_write(w, v, &e));
}
DR_FN void dr_write_kv(const char *dir, const dr_kv *k) {
    sts_write_config c;
    sts_error e;
    char **msgs;
    size_t *lens;
    uint32_t t, r;
    sts_dataset_summary sum;
    memset(&c, 0, sizeof c);
    c.name_col = "id";
    c.generate_index = k->index;
    c.duplicates = k->last_win ? STS_DUPLICATES_LAST_WIN : STS_DUPLICATES_FAIL;
    c.has_dtype = 1;
    c.dtype = STS_DTYPE_F32;
    c.no_fsync = 1;
    msgs = (char **)calloc(k->tasks, sizeof *msgs);
    lens = (size_t *)calloc(k->tasks, sizeof *lens);
    assert_true(msgs && lens);
    DR_OK(sts_dataset_prepare(dir, &c, DR_KV_SCHEMA, 3, NULL, &e));
    for (t = 0; t < k->tasks; t++) {
        sts_task_writer *w;
        char key[64];
        DR_OK(sts_task_open(dir, t, &c, DR_KV_SCHEMA, 3, NULL, &w, &e));
        for (r = 0; r < k->rows; r++) {
            dr_kv_key(key, sizeof key, t, r);
            dr_kv_put(w, key, t, r);
        }
        if (k->dup_every > 0 && t > 0)
            for (r = 0; r < (uint32_t)k->dup_every; r++) {
                snprintf(key, sizeof key, "dup_%u", r);
                dr_kv_put(w, key, t, 500 + r);
            }
        DR_OK(sts_task_commit(w, &msgs[t], &lens[t], &e));
        sts_task_close(w);
    }
    DR_OK(sts_dataset_commit(dir, &c, (const char *const *)msgs, lens, k->tasks, NULL, &sum, &e));
    for (t = 0; t < k->tasks; t++) sts_free(NULL, msgs[t], lens[t] + 1);
    free(msgs);
    free(lens);
}
/* Checks a view of "<key>__img" or "<key>__emb" written by (task, row). */
DR_FN void dr_check_kv_view(const sts_view *v, uint32_t task, uint32_t row) {
    size_t kl = v->key_len;
    assert_true(v->present);
    assert_true(kl > 5);
    if (memcmp(v->key + kl - 5, "__img", 5) == 0) {
        uint64_t shape[2], n, i;
        sts_dtype dt = dr_kv_img_dtype(task, row);
        dr_kv_img_shape(task, row, shape);
        n = shape[0] * shape[1] * (dt == STS_DTYPE_U16 ? 2 : 1);
        assert_int_equal(v->dtype, dt);
        assert_int_equal(v->rank, 2);
        assert_int_equal(v->shape[0], shape[0]);
        assert_int_equal(v->shape[1], shape[1]);
        assert_int_equal(v->nbytes, n);
        if (v->data)
            for (i = 0; i < n; i++)
                if (((const uint8_t *)v->data)[i] != dr_kv_byte(task, row, i))
                    fail_msg("%.*s byte %llu: %u, want %u", (int)kl, v->key, (unsigned long long)i, ((const uint8_t *)v->data)[i], dr_kv_byte(task, row, i));
    } else {
        int j;
        assert_memory_equal(v->key + kl - 5, "__emb", 5);
        assert_int_equal(v->dtype, STS_DTYPE_F32);
        assert_int_equal(v->rank, 1);
        assert_int_equal(v->shape[0], 3);
        assert_int_equal(v->nbytes, 12);
        if (v->data)
            for (j = 0; j < 3; j++) {
                float f = tu_lef32((const uint8_t *)v->data + 4 * j);
                if (f != dr_kv_emb(task, row, j)) fail_msg("%.*s [%d]: %g, want %g", (int)kl, v->key, j, (double)f, (double)dr_kv_emb(task, row, j));
            }
    }
}
/* The (task, row) of a key "kTTT_RRR__x"; 0 if it is not one. */
DR_FN int dr_kv_parse(const char *key, size_t len, uint32_t *task, uint32_t *row) {
    unsigned t, r;
    char buf[64];
    if (len >= sizeof buf) return 0;
    memcpy(buf, key, len);
    buf[len] = 0;
    if (sscanf(buf, "k%3u_%3u__", &t, &r) != 2) return 0;
    *task = t;
    *row = r;
    return 1;
}

/* ---- scans ---- */
typedef struct dr_row {       /* a long-scan row, copied */
    char key[128];
    size_t key_len;
    size_t file;
    sts_dtype dtype;
    uint32_t rank;
    uint64_t shape[8];
    uint64_t nbytes;
    int has_data;
    uint64_t sum;             /* byte sum of the data */
} dr_row;
typedef struct dr_rows { dr_row *r; size_t n, cap; sts_scan_stats st; size_t files; } dr_rows;
DR_FN void dr_rows_free(dr_rows *rs) { free(rs->r); memset(rs, 0, sizeof *rs); }
DR_FN uint64_t dr_sum(const void *p, uint64_t n) {
    const uint8_t *b = (const uint8_t *)p;
    uint64_t s = 0, i;
    for (i = 0; i < n; i++) s = s * 31 + b[i];
    return s;
}
DR_FN void dr_rows_add(dr_rows *rs, const sts_view *v) {
    dr_row *x;
    if (rs->n == rs->cap) { rs->cap = rs->cap ? 2 * rs->cap : 64; rs->r = (dr_row *)realloc(rs->r, rs->cap * sizeof *rs->r); assert_non_null(rs->r); }
    x = &rs->r[rs->n++];
    memset(x, 0, sizeof *x);
    assert_true(v->key_len < sizeof x->key && v->rank <= 8);
    memcpy(x->key, v->key, v->key_len);
    x->key_len = v->key_len;
    x->file = v->file; x->dtype = v->dtype; x->rank = v->rank; x->nbytes = v->nbytes;
    if (v->rank) memcpy(x->shape, v->shape, v->rank * sizeof *v->shape);
    x->has_data = v->data != NULL;
    if (v->data) x->sum = dr_sum(v->data, v->nbytes);
}
DR_FN dr_row *dr_rows_find(dr_rows *rs, const char *key) {
    size_t i, n = strlen(key);
    for (i = 0; i < rs->n; i++) if (rs->r[i].key_len == n && memcmp(rs->r[i].key, key, n) == 0) return &rs->r[i];
    return NULL;
}
/* Runs a long scan to its end; returns the first error (rows so far kept). */
DR_FN sts_result dr_long_scan(const sts_dataset *ds, const sts_scan_spec *spec, dr_rows *out, sts_error *e) {
    sts_scan *s;
    sts_result r;
    sts_scan_spec sp = *spec;
    memset(out, 0, sizeof *out);
    sp.long_form = 1;
    if ((r = sts_scan_open(ds, &sp, &s, e)) != STS_OK) return r;
    out->files = sts_scan_files(s);
    for (;;) {
        const sts_view *c;
        size_t nc;
        if ((r = sts_scan_next(s, &c, &nc, e)) != STS_OK) break;
        if (!nc) break;
        assert_int_equal(nc, 1);
        dr_rows_add(out, c);
    }
    out->st = sts_scan_get_stats(s);
    sts_scan_close(s);
    return r;
}

/* ---- /proc/self/io: bytes read through read-like system calls (mmap faults not counted) ----
   dr_io_begin takes a snapshot; dr_io_end returns the bytes read since, minus the snapshot's own
   read of /proc/self/io (which rchar counts after the value it printed). -1: not available, or
   under valgrind (which reads files of its own in the process). */
DR_FN int dr_under_valgrind(void) {
    const char *p = getenv("LD_PRELOAD");
    return p && strstr(p, "vgpreload") != NULL;
}
typedef struct dr_io { long long rchar, self; } dr_io;
DR_FN int dr_io_snap(dr_io *s) {
    char buf[1024];
    ssize_t n;
    int fd;
    s->rchar = -1;
    if (dr_under_valgrind() || (fd = open("/proc/self/io", O_RDONLY)) < 0) return 0;
    n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return 0;
    buf[n] = 0;
    s->self = n;
    return sscanf(buf, "rchar: %lld", &s->rchar) == 1;
}
DR_FN int dr_io_begin(dr_io *s) { return dr_io_snap(s); }
DR_FN long long dr_io_end(const dr_io *s) {
    dr_io now;
    if (s->rchar < 0 || !dr_io_snap(&now)) return -1;
    return now.rchar - s->rchar - s->self;
}

#endif /* STS_TESTS_DATASET_READ_UTIL_H */
