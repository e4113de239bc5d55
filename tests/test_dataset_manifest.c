/* test_dataset_manifest.c - layer 8a: the one reader of dataset_manifest.json, shared by
   sts_dataset_open, sts_dataset_reindex and the commit's protection of published shards.
   - one rule for the mode: "mode" when present; without it, batch_size (> 0 batch, 0 KV); without
     either, the first shard's tensors (exactly the schema's columns: batch, else KV). Open and
     reindex agree on every manifest: after a reindex, a key is found through the index and
     through the headers alike (the bug: an absent mode was KV for reindex and batch for open);
   - an unknown mode, duplicates strategy or separator type is refused by open and reindex alike,
     naming the field;
   - a manifest, an index or a listed shard that is a FIFO is refused at once (never waited on),
     and a FIFO in a folder without manifest is skipped;
   - the manifest's shard_path, dataset_id and separator have no length limit;
   - a reindex whose k-th write-side call fails (ENOSPC), for every k, leaves the folder byte for
     byte as it was, with an index there before and without (the bug: the CSV index was in place
     when the JSON one could not be, a half-published pair). */
#define _POSIX_C_SOURCE 200809L
#define STS_IMPLEMENTATION
#include "../safetensors_spark.h"
#include "test_dataset_read_util.h"
#include <signal.h>

static void fresh(char *dir, size_t cap, const char *name) { dr_fresh(dir, cap, name); }
/* A hang (a blocking open of a FIFO) becomes a failure, not a stuck suite. */
static void on_alarm(int sig) {
    (void)sig;
    fprintf(stderr, "test_dataset_manifest: timed out (a FIFO was waited on)\n");
    _exit(3);
}
/* key is found with data, through the index when there is one and through the headers: the same
   tensor either way, and the dataset's mode is `kv`. */
static void expect_key_both_ways(const char *dir, const char *key, int kv) {
    int no_index;
    sts_view v[2];
    for (no_index = 0; no_index < 2; no_index++) {
        sts_dataset *ds;
        sts_error e;
        DR_OK(dr_try_open(dir, no_index, &ds, &e));
        if (sts_dataset_describe(ds).kv != kv)
            fail_msg("%s (no_index=%d): the dataset reads as %s, want %s", dir, no_index, sts_dataset_describe(ds).kv ? "KV" : "batch",
                     kv ? "KV" : "batch");
        if (!no_index && !sts_dataset_describe(ds).has_index) fail_msg("%s: the rebuilt index was not used", dir);
        if (sts_dataset_get(ds, key, strlen(key), 1, &v[no_index], &e) != STS_OK)
            fail_msg("%s: key %s (no_index=%d): %s", dir, key, no_index, e.message);
        v[no_index].data = NULL;  /* the dataset closes below */
        v[no_index].shape = NULL;
        sts_dataset_close(ds);
    }
    if (v[0].file != v[1].file || v[0].nbytes != v[1].nbytes || v[0].dtype != v[1].dtype || v[0].rank != v[1].rank)
        fail_msg("%s: key %s differs between the index and the headers", dir, key);
}
static void reindex(const char *dir) {
    sts_error e;
    sts_dataset_summary sum;
    DR_OK(sts_dataset_reindex(dir, NULL, &sum, &e));
}
static void write_kv(char *dir, size_t cap, const char *name) {
    dr_kv k;
    memset(&k, 0, sizeof k);
    k.tasks = 2;
    k.rows = 3;
    k.index = 1;
    fresh(dir, cap, name);
    dr_write_kv(dir, &k);
}
static void write_batch(char *dir, size_t cap, const char *name) {
    dr_batch b;
    memset(&b, 0, sizeof b);
    b.tasks = 2;
    b.rows_per_task[0] = 4;
    b.rows_per_task[1] = 3;
    b.batch_size = 2;
    b.index = 1;
    fresh(dir, cap, name);
    dr_write_batch(dir, &b);
}
/* The batch key of column `col` in the dataset's first file: "file/col". */
static void first_batch_key(const char *dir, const char *col, char *key, size_t cap) {
    sts_dataset *ds;
    sts_error e;
    DR_OK(dr_try_open(dir, 1, &ds, &e));
    snprintf(key, cap, "%s/%s", sts_dataset_file(ds, 0), col);
    sts_dataset_close(ds);
}

/* Bug: a manifest without "mode" was KV for reindex and batch for open. */
static void test_absent_mode_kv(void **state) {
    char dir[512];
    (void)state;
    /* no mode, batch_size 0: KV */
    write_kv(dir, sizeof dir, "kv_no_mode");
    dr_edit_in(dir, "dataset_manifest.json", "\"mode\": \"kv\",", "");
    reindex(dir);
    expect_key_both_ways(dir, "k001_002__emb", 1);
    /* neither mode nor batch_size: the first shard's tensors are not the schema's columns: KV */
    write_kv(dir, sizeof dir, "kv_no_mode_no_batch");
    dr_edit_in(dir, "dataset_manifest.json", "\"mode\": \"kv\",", "");
    dr_edit_in(dir, "dataset_manifest.json", "\"batch_size\": 0,", "");
    reindex(dir);
    expect_key_both_ways(dir, "k000_001__img", 1);
}
static void test_absent_mode_batch(void **state) {
    char dir[512], key[256];
    (void)state;
    /* no mode, batch_size 2: batch (reindex used to take it as KV and fail on the repeated column names) */
    write_batch(dir, sizeof dir, "batch_no_mode");
    dr_edit_in(dir, "dataset_manifest.json", "\"mode\": \"batch\",", "");
    reindex(dir);
    first_batch_key(dir, "emb", key, sizeof key);
    expect_key_both_ways(dir, key, 0);
    /* neither mode nor batch_size: the first shard holds exactly the schema's columns: batch */
    write_batch(dir, sizeof dir, "batch_no_mode_no_batch");
    dr_edit_in(dir, "dataset_manifest.json", "\"mode\": \"batch\",", "");
    dr_edit_in(dir, "dataset_manifest.json", "\"batch_size\": 2,", "");
    reindex(dir);
    first_batch_key(dir, "img", key, sizeof key);
    expect_key_both_ways(dir, key, 0);
}
/* Fields that are present but wrong are refused by both readers of the manifest, named. */
static void test_bad_fields(void **state) {
    static const struct { const char *from, *to, *names; } cases[] = {
        { "\"mode\": \"kv\"", "\"mode\": \"stream\"", "mode" },
        { "\"mode\": \"kv\"", "\"mode\": 1", "mode" },
        { "\"duplicates\": \"fail\"", "\"duplicates\": \"first\"", "duplicates" },
        { "\"kv_separator\": \"__\"", "\"kv_separator\": \"\"", "kv_separator" },
        { "\"kv_separator\": \"__\"", "\"kv_separator\": 7", "kv_separator" },
        { "\"total_samples\": ", "\"total_samples\": -", "total_samples" },
        { "\"samples_count\": ", "\"samples_count\": -", "samples_count" },
    };
    size_t i;
    (void)state;
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char dir[512], what[128];
        sts_dataset *ds;
        sts_dataset_summary sum;
        sts_error e;
        sts_result r;
        write_kv(dir, sizeof dir, "bad_field");
        dr_edit_in(dir, "dataset_manifest.json", cases[i].from, cases[i].to);
        snprintf(what, sizeof what, "open with %s", cases[i].to);
        r = dr_try_open(dir, 0, &ds, &e);
        tu_err_check(what, r, &e, STS_ERR_DATASET, STS_RULE_DATASET_MANIFEST, cases[i].names, (const char *)NULL);
        snprintf(what, sizeof what, "reindex with %s", cases[i].to);
        r = sts_dataset_reindex(dir, NULL, &sum, &e);
        tu_err_check(what, r, &e, STS_ERR_DATASET, STS_RULE_DATASET_MANIFEST, cases[i].names, (const char *)NULL);
    }
}
/* The manifest's strings have no length limit: a 300-byte separator and dataset_id, a long shard name. */
static void test_long_strings(void **state) {
    char dir[512], sep[301], id[301], from[128], to[1200];
    sts_dataset *ds;
    sts_error e;
    sts_view v;
    tf_names shards;
    (void)state;
    memset(sep, '~', 300);
    sep[300] = 0;
    memset(id, 'a', 300);
    id[300] = 0;
    write_kv(dir, sizeof dir, "long_strings");
    dr_edit_in(dir, "dataset_manifest.json", "\"kv_separator\": \"__\"", "\"kv_separator\": \"__\", \"x_sep\": \"\"");
    snprintf(to, sizeof to, "\"x_sep\": \"%s\"", sep);
    dr_edit_in(dir, "dataset_manifest.json", "\"x_sep\": \"\"", to);
    /* a long dataset_id in both the manifest and the index: the index is still current */
    {
        char *text;
        size_t n;
        const char *p;
        char path[600];
        tf_join(path, sizeof path, dir, "dataset_manifest.json");
        text = (char *)tf_read(path, &n);
        p = strstr(text, "\"dataset_id\": \"");
        assert_non_null(p);
        snprintf(from, sizeof from, "%.36s", p + 15);
        free(text);
    }
    dr_edit_in(dir, "dataset_manifest.json", from, id);
    dr_edit_in(dir, "_tensor_index.json", from, id);
    DR_OK(dr_try_open(dir, 0, &ds, &e));
    assert_true(sts_dataset_describe(ds).has_index);
    assert_false(sts_dataset_describe(ds).index_stale);
    DR_OK(sts_dataset_get(ds, "k001_000__img", 13, 1, &v, &e));
    sts_dataset_close(ds);
    /* a 250-byte shard name (the old reader's buffer held 128 with reindex, 512 with open) */
    shards = dr_list_shards(dir);
    {
        char longname[300], a[600], b[600];
        memset(longname, 'z', 238);
        memcpy(longname + 238, ".safetensors", 13);
        tf_join(a, sizeof a, dir, shards.v[0]);
        tf_join(b, sizeof b, dir, longname);
        assert_int_equal(rename(a, b), 0);
        dr_edit_in(dir, "dataset_manifest.json", shards.v[0], longname);
        reindex(dir);
        DR_OK(dr_try_open(dir, 0, &ds, &e));
        assert_string_equal(sts_dataset_file(ds, 1), longname);
        DR_OK(sts_dataset_get(ds, "k000_000__emb", 13, 1, &v, &e));
        assert_int_equal(v.file, 1);
        sts_dataset_close(ds);
    }
    tf_names_free(&shards);
}
/* FIFOs: refused at once where a file is needed, skipped in a listing. */
static void test_fifos(void **state) {
    char dir[512], path[600];
    sts_dataset *ds;
    sts_error e;
    sts_result r;
    tf_names shards;
    (void)state;
    signal(SIGALRM, on_alarm);
    alarm(20);
    /* the manifest is a FIFO */
    write_kv(dir, sizeof dir, "fifo_manifest");
    tf_join(path, sizeof path, dir, "dataset_manifest.json");
    assert_int_equal(unlink(path), 0);
    assert_int_equal(mkfifo(path, 0600), 0);
    r = dr_try_open(dir, 0, &ds, &e);
    tu_err_check("a FIFO manifest", r, &e, STS_ERR_IO, STS_RULE_IO, "dataset_manifest.json", "not a regular file", (const char *)NULL);
    {
        sts_dataset_summary sum;
        r = sts_dataset_reindex(dir, NULL, &sum, &e);
        tu_err_check("reindex of a FIFO manifest", r, &e, STS_ERR_IO, STS_RULE_IO, "not a regular file", (const char *)NULL);
    }
    /* the index is a FIFO */
    write_kv(dir, sizeof dir, "fifo_index");
    tf_join(path, sizeof path, dir, "_tensor_index.json");
    assert_int_equal(unlink(path), 0);
    assert_int_equal(mkfifo(path, 0600), 0);
    r = dr_try_open(dir, 0, &ds, &e);
    tu_err_check("a FIFO index", r, &e, STS_ERR_IO, STS_RULE_IO, "_tensor_index.json", "not a regular file", (const char *)NULL);
    /* a listed shard is a FIFO: refused when it is read */
    write_kv(dir, sizeof dir, "fifo_shard");
    shards = dr_list_shards(dir);
    tf_join(path, sizeof path, dir, shards.v[1]);
    assert_int_equal(unlink(path), 0);
    assert_int_equal(mkfifo(path, 0600), 0);
    r = dr_try_open(dir, 1, &ds, &e);
    if (r == STS_OK) {
        sts_view v;
        r = sts_dataset_get(ds, "k001_000__img", 13, 1, &v, &e);
        sts_dataset_close(ds);
    }
    if (r == STS_OK) fail_msg("a FIFO shard was read");
    if (!strstr(e.message, shards.v[1])) fail_msg("the message does not name the FIFO shard: %s", e.message);
    /* no manifest: a FIFO named like a shard is skipped, the other shard is read */
    tf_join(path, sizeof path, dir, "dataset_manifest.json");
    assert_int_equal(unlink(path), 0);
    tf_join(path, sizeof path, dir, "_tensor_index.json");
    assert_int_equal(unlink(path), 0);
    DR_OK(dr_try_open(dir, 0, &ds, &e));
    assert_int_equal(sts_dataset_describe(ds).files, 1);
    sts_dataset_close(ds);
    tf_names_free(&shards);
    alarm(0);
}

/* The manifest's own schema is available as written: KV columns (not per-key tensors), -1 as STS_DIM_ANY. */
static void test_manifest_columns(void **state) {
    char dir[512];
    sts_dataset *ds;
    sts_error e;
    const sts_view *img, *emb;
    (void)state;
    write_kv(dir, sizeof dir, "manifest_columns");
    DR_OK(dr_try_open(dir, 0, &ds, &e));
    assert_int_equal(sts_dataset_describe(ds).manifest_columns, 2);
    img = sts_dataset_manifest_column(ds, 0);
    emb = sts_dataset_manifest_column(ds, 1);
    assert_non_null(img);
    assert_non_null(emb);
    assert_null(sts_dataset_manifest_column(ds, 2));
    if (strcmp(img->key, "img") != 0) { const sts_view *t = img; img = emb; emb = t; }
    assert_string_equal(img->key, "img");
    assert_int_equal(img->dtype, STS_DTYPE_U8);
    assert_int_equal(img->rank, 2);
    assert_true(img->shape[0] == STS_DIM_ANY);  /* 2 or 3 rows: -1 in the manifest */
    assert_int_equal(img->shape[1], 3);
    assert_string_equal(emb->key, "emb");
    assert_int_equal(emb->dtype, STS_DTYPE_F32);
    assert_int_equal(emb->rank, 1);
    assert_int_equal(emb->shape[0], 3);
    sts_dataset_close(ds);
    /* a folder without a manifest has none */
    dr_unlink_in(dir, "dataset_manifest.json");
    dr_unlink_in(dir, "_tensor_index.json");
    DR_OK(dr_try_open(dir, 0, &ds, &e));
    assert_int_equal(sts_dataset_describe(ds).manifest_columns, 0);
    assert_null(sts_dataset_manifest_column(ds, 0));
    sts_dataset_close(ds);
}

/* Every shard's crc32c in the manifest is the CRC-32C of the file's bytes (computed here with the
   portable loop over the file as read back): KV shards, batch files full, with a tail written
   (moved down) and padded (zeros past the rows). */
static void expect_checksums(const char *dir) {
    sts__manifest mf;
    sts__mem m;
    sts_error e;
    int found;
    size_t i;
    memset(&m, 0, sizeof m);
    DR_OK(sts__manifest_read(&m, dir, &mf, &found, &e));
    assert_true(found);
    assert_true(mf.nshards > 0);
    for (i = 0; i < mf.nshards; i++) {
        char path[600];
        size_t n;
        uint8_t *bytes;
        tf_join(path, sizeof path, dir, mf.shards[i].name);
        bytes = tf_read(path, &n);
        if (mf.shards[i].crc32c == UINT64_MAX) fail_msg("%s: shard %s has no crc32c", dir, mf.shards[i].name);
        if (sts__crc32c_with(0, bytes, n, 0) != (uint32_t)mf.shards[i].crc32c)
            fail_msg("%s: shard %s: crc32c %llu in the manifest, %u in the file", dir, mf.shards[i].name,
                     (unsigned long long)mf.shards[i].crc32c, (unsigned)sts__crc32c_with(0, bytes, n, 0));
        free(bytes);
    }
    sts__manifest_free(&mf);
}
static void test_checksums_written(void **state) {
    static const sts_tail tails[3] = { STS_TAIL_WRITE, STS_TAIL_PAD, STS_TAIL_DROP };
    char dir[512];
    int t;
    (void)state;
    write_kv(dir, sizeof dir, "crc_kv");
    expect_checksums(dir);
    for (t = 0; t < 3; t++) {
        dr_batch b;
        memset(&b, 0, sizeof b);
        b.tasks = 2;
        b.rows_per_task[0] = 5;  /* a full batch of 2, another, and a tail of 1 */
        b.rows_per_task[1] = 4;
        b.batch_size = 2;
        b.tail = tails[t];
        fresh(dir, sizeof dir, "crc_batch");
        dr_write_batch(dir, &b);
        expect_checksums(dir);
    }
    {   /* cells of 1.5 MiB go out zero-copy from the caller's bytes, their checksum computed meanwhile */
        static const sts_column big[1] = { { "blob", STS_VALUE_TENSOR, STS_DTYPE_U8 } };
        sts_write_config c;
        sts_task_writer *w;
        sts_error e;
        char *msg;
        size_t len, n = (size_t)3 << 19, i;
        uint64_t shape[1];
        uint8_t *data = (uint8_t *)malloc(n);
        int r;
        assert_non_null(data);
        shape[0] = n;
        memset(&c, 0, sizeof c);
        c.batch_size = 2;
        c.no_fsync = 1;
        fresh(dir, sizeof dir, "crc_big");
        DR_OK(sts_dataset_prepare(dir, &c, big, 1, NULL, &e));
        DR_OK(sts_task_open(dir, 0, &c, big, 1, NULL, &w, &e));
        for (r = 0; r < 3; r++) {
            sts_value v;
            for (i = 0; i < n; i++) data[i] = (uint8_t)(i * 7 + (size_t)r * 13);
            memset(&v, 0, sizeof v);
            v.data = data; v.size = n; v.dtype = STS_DTYPE_U8; v.rank = 1; v.shape = shape;
            DR_OK(sts_task_write(w, &v, &e));
        }
        DR_OK(sts_task_commit(w, &msg, &len, &e));
        sts_task_close(w);
        DR_OK(sts_dataset_commit(dir, &c, (const char *const *)&msg, &len, 1, NULL, NULL, &e));
        sts_free(NULL, msg, len + 1);
        free(data);
        expect_checksums(dir);
    }
}

typedef struct fault_at { long calls, at, fired; } fault_at;
static int fail_kth(void *user, const char *op) {
    fault_at *f = (fault_at *)user;
    (void)op;
    if (++f->calls != f->at) return 0;
    f->fired++;
    return ENOSPC;
}
static void test_reindex_faults(void **state) {
    char dir[512];
    int index;
    (void)state;
    for (index = 0; index < 2; index++) {
        dr_kv k;
        long at, calls = 0, durable_seen = 0;
        memset(&k, 0, sizeof k);
        k.tasks = 2;
        k.rows = 3;
        k.index = index;
        fresh(dir, sizeof dir, "reindex_faults");
        dr_write_kv(dir, &k);
        for (at = 1;; at++) {
            tf_snap before = tf_snapshot(dir, 1), after;
            tu_sb why = { NULL, 0, 0 };
            fault_at f;
            sts_options o;
            sts_error e;
            sts_result r;
            memset(&f, 0, sizeof f);
            f.at = at;
            memset(&o, 0, sizeof o);
            o.io_fault = fail_kth;
            o.io_fault_user = &f;
            r = sts_dataset_reindex(dir, &o, NULL, &e);
            calls = f.calls;
            if (!f.fired) {  /* past the last call: the reindex went through */
                if (r != STS_OK) fail_msg("index %d: reindex without a fault: %s", index, e.message);
                tf_snap_free(&before);
                break;
            }
            if (r != STS_ERR_IO) fail_msg("index %d, call %ld failing: %s, want IO", index, at, sts_result_name(r));
            if (e.rule == STS_RULE_DURABLE) {  /* the folder's fsync, the last call: the new index is in place
                                                  (the next reindex has an index to move aside: more calls) */
                if (f.calls != at) fail_msg("index %d: io.durable at call %ld of %ld", index, at, f.calls);
                expect_key_both_ways(dir, "k000_000__img", 1);
                durable_seen++;
                tf_snap_free(&before);
                continue;
            }
            after = tf_snapshot(dir, 1);
            if (!tf_snap_same(&before, &after, &why))
                fail_msg("index %d: reindex with call %ld failing (%s) changed the folder:%s", index, at, e.message, why.p);
            tf_snap_free(&before);
            tf_snap_free(&after);
        }
        if (calls < 4) fail_msg("index %d: only %ld write-side calls in a reindex", index, calls);
        for (at = 1;; at++) {  /* each allocation failing in turn: NOMEM and the folder as it was, or done */
            tf_snap before = tf_snapshot(dir, 1), after;
            tu_sb why = { NULL, 0, 0 };
            tu_alloc a;
            sts_options o = tu_alloc_opts(&a, NULL);
            sts_error e;
            sts_result r;
            a.fail_at = at;
            r = sts_dataset_reindex(dir, &o, NULL, &e);
            if (a.bytes || a.blocks) fail_msg("index %d: reindex with allocation %ld failing left %ld blocks", index, at, a.blocks);
            if (!a.failed) {
                if (r != STS_OK) fail_msg("index %d: reindex without a failure: %s", index, e.message);
                tf_snap_free(&before);
                break;
            }
            if (r != STS_ERR_NOMEM && r != STS_OK)
                fail_msg("index %d: reindex with allocation %ld failing: %s: %s", index, at, sts_result_name(r), e.message);
            after = tf_snapshot(dir, 1);
            if (r != STS_OK && !tf_snap_same(&before, &after, &why))
                fail_msg("index %d: reindex with allocation %ld failing changed the folder:%s", index, at, why.p);
            if (r == STS_OK) expect_key_both_ways(dir, "k000_000__img", 1);
            tf_snap_free(&before);
            tf_snap_free(&after);
        }
        if (!durable_seen) fail_msg("index %d: no failing call gave io.durable", index);
        expect_key_both_ways(dir, "k000_000__img", 1);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_absent_mode_kv),
        cmocka_unit_test(test_absent_mode_batch),
        cmocka_unit_test(test_bad_fields),
        cmocka_unit_test(test_long_strings),
        cmocka_unit_test(test_fifos),
        cmocka_unit_test(test_manifest_columns),
        cmocka_unit_test(test_checksums_written),
        cmocka_unit_test(test_reindex_faults),
    };
    return cmocka_run_group_tests(tests, dr_root_setup, dr_root_teardown);
}
