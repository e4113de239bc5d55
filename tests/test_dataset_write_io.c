/* test_dataset_write_io.c - layer 8: the commit protocol under failure, and concurrency.
   - fault injection through sts_options.io_fault: the write-side calls of a small job are counted
     first, then the k-th call fails with ENOSPC and again with EIO, for every k: in the task
     writer (batch mode, KV mode: rows and commit) and in the dataset commit (into an empty folder,
     and in overwrite mode over an existing dataset). Each failure is STS_ERR_IO naming the errno
     and a path; a task writer then refuses everything (sticky); after sts_task_close or the failed
     dataset commit the folder is exactly as before the job (no temporaries, no final-named shard,
     no manifest or index), and an old dataset's files are byte-for-byte untouched; the task
     writer runs with its I/O thread and without it (io_thread=false), and both make the same
     calls in the same order;
   - several task writers in parallel threads, and in separate processes (fork, commit messages
     through pipes), merged by one dataset commit; every value read back through the index. */
#define _POSIX_C_SOURCE 200809L
#ifndef STS_TEST_LINKED  /* the Makefile links tests/sts_impl.c's object instead */
#define STS_IMPLEMENTATION
#endif
#include "../safetensors_spark.h"
#include "dataset_write_util.h"
#include <pthread.h>

static const sts_column SCH[3] = {
    { "id", STS_VALUE_STRING, STS_DTYPE_U8 },
    { "img", STS_VALUE_TENSOR, STS_DTYPE_U8 },
    { "emb", STS_VALUE_ARRAY, STS_DTYPE_F32 },
};
/* A deterministic row: key "t<task>-<i>", img U8 [2, 3 + i % 3], emb 6 floats. */
typedef struct row { char key[32]; uint8_t img[64]; float emb[6]; uint64_t shape[2]; sts_value v[3]; } row;
static const sts_value *mk_row(row *r, uint32_t task, int i, int batch) {
    int j;
    snprintf(r->key, sizeof r->key, "t%u-%d", task, i);
    r->shape[0] = 2;
    r->shape[1] = batch ? 3 : 3 + (uint64_t)(i % 3);
    for (j = 0; j < 64; j++) r->img[j] = (uint8_t)(task * 31 + (uint32_t)i * 7 + (uint32_t)j);
    for (j = 0; j < 6; j++) r->emb[j] = (float)task * 10.0f + (float)i + (float)j * 0.125f;
    memset(r->v, 0, sizeof r->v);
    r->v[0].data = r->key; r->v[0].size = strlen(r->key);
    r->v[1].data = r->img; r->v[1].size = 2 * r->shape[1]; r->v[1].dtype = STS_DTYPE_U8; r->v[1].rank = 2; r->v[1].shape = r->shape;
    r->v[2].data = r->emb; r->v[2].size = 6;
    return r->v;
}
static void cfg_kv(sts_write_config *c) {
    memset(c, 0, sizeof *c);
    c->name_col = "id"; c->has_dtype = 1; c->dtype = STS_DTYPE_F32; c->generate_index = 1;
}
static void cfg_batch(sts_write_config *c) {
    memset(c, 0, sizeof *c);
    c->batch_size = 3; c->columns = "img,emb"; c->has_dtype = 1; c->dtype = STS_DTYPE_F16; c->generate_index = 1;
}
static const char *errno_name(int e) { return e == ENOSPC ? "ENOSPC" : e == EIO ? "EIO" : "?"; }

/* Verifies every value of a KV dataset through its index: tensor t<task>-<i>__img / __emb. */
static void verify_kv_values(const char *label, const char *dir, const du_ds *ds, uint32_t ntasks, const int *nrows) {
    uint32_t t;
    char p[256], file[128], name[64];
    for (t = 0; t < ntasks; t++) {
        int i;
        for (i = 0; i < nrows[t]; i++) {
            row r;
            sts_file *f;
            sts_error e;
            const sts_tensor *x;
            uint8_t emb_le[sizeof r.emb];  /* the array cell as the file holds it: little-endian F32 */
            mk_row(&r, t, i, 0);
            tu_le_copy(emb_le, r.emb, 6, 4);
            snprintf(name, sizeof name, "%s__img", r.key);
            if (!du_index_file(ds, name, file, sizeof file)) fail_msg("%s: %s is not indexed", label, name);
            tf_join(p, sizeof p, dir, file);
            DU_OK(label, sts_open(p, NULL, &f, &e), e);
            x = sts_find(f, name, strlen(name));
            assert_non_null(x);
            assert_true(x->rank == 2 && x->shape[0] == 2 && x->shape[1] == r.shape[1]);
            if (memcmp(sts_data(f, x), r.img, (size_t)r.v[1].size) != 0) fail_msg("%s: %s values differ", label, name);
            snprintf(name, sizeof name, "%s__emb", r.key);
            x = sts_find(f, name, strlen(name));
            assert_non_null(x);
            assert_true(x->dtype == STS_DTYPE_F32 && x->rank == 1 && x->shape[0] == 6);
            if (memcmp(sts_data(f, x), emb_le, sizeof emb_le) != 0) fail_msg("%s: %s values differ", label, name);
            sts_close(f);
        }
    }
}

/* ================================================================================================
   fault injection in the task writer */
typedef struct task_run { int failed; sts_result r; sts_error e; long calls; char op[16]; } task_run;

/* One task: rows then commit, with the hook. Returns what happened; the writer is closed. */
static task_run run_task(const char *dir, const sts_write_config *c, int kv, du_fault *f, char **msg, size_t *len) {
    task_run tr;
    sts_options o;
    sts_task_writer *w;
    int i, n = kv == 3 ? 9000 : kv ? 9 : 8;
    static uint8_t big[1024];
    static const uint64_t big_shape[2] = { 2, 512 };
    memset(&tr, 0, sizeof tr);
    memset(&o, 0, sizeof o);
    du_fault_opts(&o, f);
    *msg = NULL;
    sts_write_config ct = *c;
    if (kv) ct.target_shard_bytes = kv == 3 ? 10000000 : 350;  /* three or more shards; kv 3: one of 9.3 MB */
    if (kv >= 2) ct.kv_layout = STS_KV_ARRIVAL;  /* each shard's file begun at its first row, written as it fills */
    DU_OK("open", sts_task_open(dir, 0, &ct, SCH, 3, &o, &w, &tr.e), tr.e);
    f->armed = 1;
    for (i = 0; i < n && !tr.failed; i++) {
        row r;
        mk_row(&r, 0, i, !kv);
        if (kv == 3) {  /* img U8 [2, 512]: shards of several 4 MiB chunks, their last rows put in front */
            big[i % 1024] = (uint8_t)i;
            r.v[1].data = big; r.v[1].size = sizeof big; r.v[1].shape = big_shape;
        }
        tr.r = sts_task_write(w, r.v, &tr.e);
        if (tr.r != STS_OK) {
            sts_error e2;
            tr.failed = 1;
            /* sticky: rows and the commit are refused from now on */
            tu_err_check("row after an I/O failure", sts_task_write(w, mk_row(&r, 0, i + 1, !kv), &e2), &e2, STS_ERR_INVALID_ARGUMENT, STS_RULE_STATE, "failed earlier", (const char *)NULL);
            tu_err_check("commit after an I/O failure", sts_task_commit(w, msg, len, &e2), &e2, STS_ERR_INVALID_ARGUMENT, STS_RULE_STATE, "failed earlier", (const char *)NULL);
        }
    }
    if (!tr.failed) {
        tr.r = sts_task_commit(w, msg, len, &tr.e);
        if (tr.r != STS_OK) {
            row r;
            sts_error e2;
            tr.failed = 2;
            tu_err_check("row after a failed commit", sts_task_write(w, mk_row(&r, 0, 99, !kv), &e2), &e2, STS_ERR_INVALID_ARGUMENT, STS_RULE_STATE, (const char *)NULL);
            tu_err_check("commit after a failed commit", sts_task_commit(w, msg, len, &e2), &e2, STS_ERR_INVALID_ARGUMENT, STS_RULE_STATE, (const char *)NULL);
        }
    }
    f->armed = 0;
    tr.calls = f->calls;
    strcpy(tr.op, f->op);
    sts_task_close(w);
    return tr;
}

/* sync: io_thread=false (every call on the caller's thread). Both modes make the same calls in the
   same order: the counting runs must agree. */
static void task_faults(int kv, int sync) {
    char root[64], label[128];
    sts_write_config c;
    du_fault f;
    char *msg;
    size_t len;
    long n, k;
    int ei;
    task_run tr;
    tf_snap before;
    char ops_seen[256] = "";
    tf_tmpdir(root, sizeof root);  /* real files and real fsyncs: the crash-relevant paths */
    if (kv) cfg_kv(&c); else cfg_batch(&c);
    /* count the calls of the job, in the other mode too */
    c.no_io_thread = !sync;
    memset(&f, 0, sizeof f);
    tr = run_task(root, &c, kv, &f, &msg, &len);
    if (tr.failed) fail_msg("the counting run failed: %s", tr.e.message);
    if (kv == 3) {  /* a shard's last rows went in front of the rest: its first entry's offset is not 0 */
        tf_names names = du_list_shards(root);
        size_t i, nb = 0, fronts = 0;
        for (i = 0; i < names.n; i++) {
            char p[256];
            const char *at;
            uint8_t *b;
            tf_join(p, sizeof p, root, names.v[i]);
            b = tf_read_opt(p, &nb);
            assert_non_null(b);
            assert_true(nb > 64);
            b[nb - 1] = 0;
            at = strstr((const char *)b + 8, "\"data_offsets\":[");
            assert_non_null(at);
            fronts += strtoull(at + 16, NULL, 10) != 0;
            free(b);
        }
        if (!fronts) fail_msg("KV arrival, large shards: no shard of %zu has rows in front", names.n);
        tf_names_free(&names);
    }
    sts_free(NULL, msg, len + 1);
    tf_clear(root);
    n = f.calls;
    c.no_io_thread = sync;
    memset(&f, 0, sizeof f);
    tr = run_task(root, &c, kv, &f, &msg, &len);
    if (tr.failed) fail_msg("the counting run failed: %s", tr.e.message);
    if (f.calls != n) fail_msg("%s task: %ld calls with the I/O thread, %ld without", kv == 3 ? "KV arrival, large shards" : kv == 2 ? "KV arrival" : kv ? "KV" : "batch", sync ? n : f.calls, sync ? f.calls : n);
    {   /* and in the same order */
        long i;
        du_fault g;
        char *m2;
        size_t l2;
        task_run t2;
        tf_clear(root);
        c.no_io_thread = !sync;
        memset(&g, 0, sizeof g);
        t2 = run_task(root, &c, kv, &g, &m2, &l2);
        assert_false(t2.failed);
        for (i = 0; i < n && i < 64; i++)
            if (strcmp(f.ops[i], g.ops[i]) != 0) fail_msg("%s task: call %ld is %s in one mode, %s in the other", kv == 3 ? "KV arrival, large shards" : kv == 2 ? "KV arrival" : kv ? "KV" : "batch", i + 1, f.ops[i], g.ops[i]);
        sts_free(NULL, m2, l2 + 1);
        tf_clear(root);
        c.no_io_thread = sync;
    }
    assert_true(n >= 8);
    {   /* the counted calls cover the phases */
        long i;
        for (i = 0; i < n && i < 64; i++) if (!strstr(ops_seen, f.ops[i]) && strlen(ops_seen) + 12 < sizeof ops_seen) { strcat(ops_seen, f.ops[i]); strcat(ops_seen, " "); }
        assert_non_null(strstr(ops_seen, "fsync"));
        assert_non_null(strstr(ops_seen, "rename"));
        assert_non_null(strstr(ops_seen, kv ? "write" : "pwrite"));
        if (!kv) assert_non_null(strstr(ops_seen, "ftruncate"));
        if (kv >= 2) assert_non_null(strstr(ops_seen, "pwrite"));  /* data behind the header's room */
    }
    sts_free(NULL, msg, len + 1);
    tf_clear(root);
    before = tf_snapshot(root, 0);
    for (k = 1; k <= n; k++)
        for (ei = 0; ei < 2; ei++) {
            tf_snap after;
            int err = ei ? EIO : ENOSPC;
            memset(&f, 0, sizeof f);
            f.fail_at = k;
            f.err = err;
            tr = run_task(root, &c, kv, &f, &msg, &len);
            snprintf(label, sizeof label, "%s task%s, %s at call %ld of %ld (%s)", kv == 3 ? "KV arrival, large shards" : kv == 2 ? "KV arrival" : kv ? "KV" : "batch", sync ? " (no I/O thread)" : "", errno_name(err), k, n, f.op);
            if (!tr.failed) fail_msg("%s: the job succeeded", label);
            if (f.failed != 1) fail_msg("%s: the failing call was made %ld times", label, f.failed);
            tu_err_check(label, tr.r, &tr.e, STS_ERR_IO, STS_RULE_IO, errno_name(err), root, (const char *)NULL);
            after = tf_snapshot(root, 0);
            tf_snap_equal(&before, &after, label);
            tf_snap_free(&after);
        }
    tf_snap_free(&before);
    tf_rmtree(root);
}
static void test_faults_task_batch(void **state) { (void)state; task_faults(0, 0); }
static void test_faults_task_kv(void **state) { (void)state; task_faults(1, 0); }
static void test_faults_task_batch_sync(void **state) { (void)state; task_faults(0, 1); }
static void test_faults_task_kv_sync(void **state) { (void)state; task_faults(1, 1); }
static void test_faults_task_kv_arrival(void **state) { (void)state; task_faults(2, 0); }
static void test_faults_task_kv_arrival_sync(void **state) { (void)state; task_faults(2, 1); }
static void test_faults_task_kv_arrival_large(void **state) { (void)state; task_faults(3, 0); }
static void test_faults_task_kv_arrival_large_sync(void **state) { (void)state; task_faults(3, 1); }

/* ================================================================================================
   fault injection in the dataset commit */
/* Two committed tasks into dir (no hook); messages into m. */
static void two_tasks(const char *dir, const sts_write_config *c, int kv, uint32_t base, du_msgs *m) {
    uint32_t t;
    for (t = 0; t < 2; t++) {
        sts_task_writer *w;
        sts_error e;
        int i;
        sts_write_config ct = *c;
        if (kv) ct.target_shard_bytes = 400;
        DU_OK("open", sts_task_open(dir, base + t, &ct, SCH, 3, NULL, &w, &e), e);
        for (i = 0; i < 5; i++) {
            row r;
            DU_OK("row", sts_task_write(w, mk_row(&r, base + t, i, !kv), &e), e);
        }
        DU_OK("commit", sts_task_commit(w, &m->m[m->n], &m->len[m->n], &e), e);
        m->n++;
        sts_task_close(w);
    }
}
/* Back to the state before the job (its lock included: the job holds the folder again). */
static void restore(const char *root, const tf_snap *before) {
    size_t i;
    tf_clear(root);
    for (i = 0; i < before->n; i++) {
        char p[256];
        tf_join(p, sizeof p, root, before->e[i].name);
        tf_write(p, before->e[i].bytes, (size_t)before->e[i].size);
    }
}
static void commit_faults(int kv, int over_old) {
    char root[64], label[160];
    sts_write_config c;
    du_fault f;
    sts_options o;
    sts_error e;
    du_msgs m;
    long n, k;
    int ei;
    tf_snap before;
    tf_fast_tmpdir(root, sizeof root);
    if (kv) cfg_kv(&c); else cfg_batch(&c);
    memset(&m, 0, sizeof m);
    memset(&o, 0, sizeof o);
    if (over_old) {  /* an existing dataset, then a job in overwrite mode */
        DU_OK("prepare old", sts_dataset_prepare(root, &c, SCH, 3, NULL, &e), e);
        two_tasks(root, &c, kv, 10, &m);
        DU_OK("old dataset", du_commit_all(root, &c, &m, NULL, NULL, &e), e);
        du_msgs_free(&m);
        du_check_dataset("old dataset", root, NULL);
        c.overwrite = 1;
    }
    DU_OK("prepare", sts_dataset_prepare(root, &c, SCH, 3, NULL, &e), e);
    before = tf_snapshot(root, 1);
    /* count */
    memset(&f, 0, sizeof f);
    du_fault_opts(&o, &f);
    two_tasks(root, &c, kv, 0, &m);
    f.armed = 1;
    DU_OK("counting commit", du_commit_all(root, &c, &m, &o, NULL, &e), e);
    f.armed = 0;
    n = f.calls;
    assert_true(n >= (over_old ? 9 : 6));
    du_msgs_free(&m);
    {   /* the counted run published the new dataset (overwrite: the old shards are gone) */
        du_ds ds;
        du_check_dataset("counting run", root, &ds);
        assert_int_equal(ds.index, 1);
        du_ds_free(&ds);
    }
    restore(root, &before);
    for (k = 1; k <= n; k++)
        for (ei = 0; ei < 2; ei++) {
            tf_snap after;
            sts_result r;
            int err = ei ? EIO : ENOSPC;
            two_tasks(root, &c, kv, 0, &m);
            memset(&f, 0, sizeof f);
            f.fail_at = k;
            f.err = err;
            f.armed = 1;
            r = du_commit_all(root, &c, &m, &o, NULL, &e);
            f.armed = 0;
            snprintf(label, sizeof label, "%s dataset commit%s, %s at call %ld of %ld (%s)", kv ? "KV" : "batch",
                     over_old ? " over an old dataset" : "", errno_name(err), k, n, f.op);
            if (k == n) {  /* the folder's fsync, after the publication: published, and said so */
                assert_string_equal(f.op, "fsync_dir");
                tu_err_check(label, r, &e, STS_ERR_IO, STS_RULE_DURABLE, errno_name(err), "in place", root,
                             (const char *)NULL);
                du_check_dataset(label, root, NULL);
                r = sts_dataset_discard(root, (const char *const *)m.m, m.len, m.n, NULL, &e);
                tu_err_check(label, r, &e, STS_ERR_DATASET, STS_RULE_DATASET_PUBLISHED, "published", (const char *)NULL);
                du_msgs_free(&m);
                restore(root, &before);
                continue;
            }
            tu_err_check(label, r, &e, STS_ERR_IO, STS_RULE_IO, errno_name(err), root, (const char *)NULL);
            {   /* nothing published, the tasks' shards kept for a retry; discarded, the folder is as before */
                size_t q;
                for (q = 0; q < m.n; q++) {
                    const char *sp = strstr(m.m[q], "\"shard_path\":\"");
                    char name[128], path[256];
                    size_t l;
                    assert_non_null(sp);
                    sp += 14;
                    l = strcspn(sp, "\"");
                    memcpy(name, sp, l);
                    name[l] = 0;
                    tf_join(path, sizeof path, root, name);
                    if (!tf_exists(path)) fail_msg("%s: the failed commit removed the task's shard %s", label, name);
                }
                DU_OK(label, sts_dataset_discard(root, (const char *const *)m.m, m.len, m.n, NULL, &e), e);
            }
            after = tf_snapshot(root, 1);
            tf_snap_equal(&before, &after, label);
            tf_snap_free(&after);
            du_msgs_free(&m);
        }
    tf_snap_free(&before);
    tf_rmtree(root);
}
static void test_faults_commit_kv(void **state) { (void)state; commit_faults(1, 0); }
static void test_faults_commit_batch(void **state) { (void)state; commit_faults(0, 0); }
static void test_faults_commit_overwrite(void **state) { (void)state; commit_faults(1, 1); commit_faults(0, 1); }

/* A successful overwrite replaces the old dataset: its shards and index go, the folder holds the
   new dataset only; without generate_index the old index files go too. */
static void test_overwrite(void **state) {
    char root[64];
    sts_write_config c;
    sts_error e;
    du_msgs m;
    du_ds ds;
    tf_names old, now;
    size_t i, j;
    (void)state;
    memset(&m, 0, sizeof m);
    tf_fast_tmpdir(root, sizeof root);
    cfg_kv(&c);
    DU_OK("prepare old", sts_dataset_prepare(root, &c, SCH, 3, NULL, &e), e);
    two_tasks(root, &c, 1, 0, &m);
    DU_OK("old", du_commit_all(root, &c, &m, NULL, NULL, &e), e);
    du_msgs_free(&m);
    old = du_list_shards(root);
    /* default mode refuses the folder now */
    tu_err_check("default mode", sts_dataset_prepare(root, &c, SCH, 3, NULL, &e), &e, STS_ERR_EXISTS, STS_RULE_EXISTS, root, (const char *)NULL);
    c.overwrite = 1;
    c.generate_index = 0;
    DU_OK("prepare overwrite", sts_dataset_prepare(root, &c, SCH, 3, NULL, &e), e);
    /* the old dataset is intact until the commit */
    du_check_dataset("old, before the new commit", root, NULL);
    two_tasks(root, &c, 1, 0, &m);
    DU_OK("new", du_commit_all(root, &c, &m, NULL, NULL, &e), e);
    du_check_dataset("new", root, &ds);
    assert_int_equal(ds.index, 0);
    now = du_list_shards(root);
    for (i = 0; i < old.n; i++)
        for (j = 0; j < now.n; j++)
            if (strcmp(old.v[i], now.v[j]) == 0) fail_msg("the old shard %s survived the overwrite", old.v[i]);
    {
        int nrows[2] = { 5, 5 };
        du_ds_free(&ds);
        c.generate_index = 1;
        du_msgs_free(&m);
        DU_OK("prepare", sts_dataset_prepare(root, &c, SCH, 3, NULL, &e), e);
        two_tasks(root, &c, 1, 0, &m);
        DU_OK("newer", du_commit_all(root, &c, &m, NULL, NULL, &e), e);
        du_check_dataset("newer", root, &ds);
        verify_kv_values("newer", root, &ds, 2, nrows);
        du_ds_free(&ds);
    }
    tf_names_free(&old);
    tf_names_free(&now);
    du_msgs_free(&m);
    tf_rmtree(root);
}

/* A failed overwrite commit leaves the live dataset byte-for-byte untouched, even when one of the
   messages it is handed is a stale one naming a live shard (a retried driver passing an old
   message along): the failure must not remove files that the published manifest names. */
static void test_overwrite_stale_message(void **state) {
    char root[64];
    sts_write_config c;
    sts_error e;
    du_msgs old, m;
    tf_snap before, after;
    sts_result r;
    (void)state;
    memset(&old, 0, sizeof old);
    memset(&m, 0, sizeof m);
    tf_fast_tmpdir(root, sizeof root);
    cfg_kv(&c);
    DU_OK("prepare old", sts_dataset_prepare(root, &c, SCH, 3, NULL, &e), e);
    two_tasks(root, &c, 1, 0, &old);
    DU_OK("old", du_commit_all(root, &c, &old, NULL, NULL, &e), e);
    du_check_dataset("old", root, NULL);
    before = tf_snapshot(root, 1);
    c.overwrite = 1;
    DU_OK("prepare", sts_dataset_prepare(root, &c, SCH, 3, NULL, &e), e);
    two_tasks(root, &c, 1, 0, &m);  /* the same keys as the old job: duplicates with the stale message */
    m.m[m.n] = old.m[0]; m.len[m.n] = old.len[0]; m.n++;
    r = du_commit_all(root, &c, &m, NULL, NULL, &e);
    m.n--;
    /* the stale message belongs to the old job: refused before anything else is looked at */
    tu_err_check("a stale message", r, &e, STS_ERR_DATASET, STS_RULE_MESSAGE, "belongs to job", (const char *)NULL);
    /* the job gives up: its own shards go, the stale message's live shard stays */
    DU_OK("abort", sts_dataset_abort(root, (const char *const *)m.m, m.len, m.n, NULL, &e), e);
    after = tf_snapshot(root, 1);
    {
        tu_sb why = { 0, 0, 0 };
        int same = tf_snap_same(&before, &after, &why);
        tf_snap_free(&before);
        tf_snap_free(&after);
        du_msgs_free(&old);
        du_msgs_free(&m);
        tf_rmtree(root);
        if (!same) {
            char text[900];
            snprintf(text, sizeof text, "%s", why.p);
            tu_sb_free(&why);
            fail_msg("a failed overwrite commit handed a stale message removed live files: %s", text);
        }
    }
}

/* ================================================================================================
   task writers in parallel threads */
typedef struct thr { const char *dir; const sts_write_config *c; uint32_t task; int rows; char *msg; size_t len; sts_result r; sts_error e; } thr;
static void *thread_task(void *arg) {
    thr *t = (thr *)arg;
    sts_task_writer *w;
    int i;
    sts_write_config ct = *t->c;
    ct.target_shard_bytes = 2000;
    if ((t->r = sts_task_open(t->dir, t->task, &ct, SCH, 3, NULL, &w, &t->e)) != STS_OK) return NULL;
    for (i = 0; i < t->rows && t->r == STS_OK; i++) {
        row r;
        t->r = sts_task_write(w, mk_row(&r, t->task, i, 0), &t->e);
    }
    if (t->r == STS_OK) t->r = sts_task_commit(w, &t->msg, &t->len, &t->e);
    sts_task_close(w);
    return NULL;
}
static void test_threads(void **state) {
    char root[64];
    sts_write_config c;
    sts_error e;
    pthread_t th[4];
    thr a[4];
    du_msgs m;
    du_ds ds;
    int nrows[4], i;
    sts_dataset_summary sum;
    (void)state;
    memset(&m, 0, sizeof m);
    tf_fast_tmpdir(root, sizeof root);
    cfg_kv(&c);
    c.no_fsync = 1;
    DU_OK("prepare", sts_dataset_prepare(root, &c, SCH, 3, NULL, &e), e);
    for (i = 0; i < 4; i++) {
        memset(&a[i], 0, sizeof a[i]);
        a[i].dir = root; a[i].c = &c; a[i].task = (uint32_t)i; a[i].rows = nrows[i] = (tu_quick() ? 40 : 200) + i * 17;
        assert_int_equal(pthread_create(&th[i], NULL, thread_task, &a[i]), 0);
    }
    for (i = 0; i < 4; i++) {
        assert_int_equal(pthread_join(th[i], NULL), 0);
        if (a[i].r != STS_OK) fail_msg("thread %d: %s", i, a[i].e.message);
        m.m[m.n] = a[i].msg; m.len[m.n] = a[i].len; m.n++;
    }
    DU_OK("dataset commit", du_commit_all(root, &c, &m, NULL, &sum, &e), e);
    du_check_dataset("threads", root, &ds);
    assert_int_equal(ds.total_samples, (uint64_t)(nrows[0] + nrows[1] + nrows[2] + nrows[3]));
    assert_int_equal(sum.tensors, 2 * ds.total_samples);
    assert_int_equal(ds.tensors, 2 * ds.total_samples);
    verify_kv_values("threads", root, &ds, 4, nrows);
    du_ds_free(&ds);
    du_msgs_free(&m);
    tf_rmtree(root);
}

/* ================================================================================================
   task writers in separate processes; commit messages cross a pipe */
/* The child never returns into cmocka: it reports "OK <len>\n<message>" or "ERR <text>\n" and
   waits for its parent's SIGKILL (du_park), so no exit-time leak report is made under valgrind. */
static void child_task(int fd, const char *dir, const sts_write_config *c, uint32_t task, int rows, int kv) {
    sts_task_writer *w;
    sts_error e;
    char *msg = NULL, head[64];
    size_t len = 0;
    int i;
    sts_write_config ct = *c;
    sts_result r;
    if (kv) ct.target_shard_bytes = 1500;
    r = sts_task_open(dir, task, &ct, SCH, 3, NULL, &w, &e);
    if (r == STS_OK) {
        for (i = 0; i < rows && r == STS_OK; i++) {
            row rw;
            r = sts_task_write(w, mk_row(&rw, task, i, !kv), &e);
        }
        if (r == STS_OK) r = sts_task_commit(w, &msg, &len, &e);
        sts_task_close(w);
    }
    if (r == STS_OK) {
        size_t off = 0;
        int n = snprintf(head, sizeof head, "OK %zu\n", len);
        if (write(fd, head, (size_t)n) != n) {}
        while (off < len) { ssize_t put = write(fd, msg + off, len - off); if (put <= 0) break; off += (size_t)put; }
        sts_free(NULL, msg, len + 1);
    } else {
        int n = snprintf(head, sizeof head, "ERR ");
        if (write(fd, head, (size_t)n) != n) {}
        if (write(fd, e.message, strlen(e.message)) < 0) {}
        if (write(fd, "\n", 1) < 0) {}
    }
    du_park(-1, 0);
}
static void processes(int kv) {
    char root[64];
    sts_write_config c;
    sts_error e;
    du_msgs m;
    du_ds ds;
    int i, nrows[3];
    pid_t pid[3];
    int fds[3];
    uint64_t want_samples = 0;
    memset(&m, 0, sizeof m);
    tf_fast_tmpdir(root, sizeof root);
    if (kv) cfg_kv(&c); else cfg_batch(&c);
    c.no_fsync = 1;
    DU_OK("prepare", sts_dataset_prepare(root, &c, SCH, 3, NULL, &e), e);
    for (i = 0; i < 3; i++) {
        int pfd[2];
        nrows[i] = (tu_quick() ? 20 : 120) + i * 7;
        assert_int_equal(pipe(pfd), 0);
        fflush(NULL);
        pid[i] = fork();
        assert_true(pid[i] >= 0);
        if (pid[i] == 0) { close(pfd[0]); child_task(pfd[1], root, &c, (uint32_t)i, nrows[i], kv); }
        close(pfd[1]);
        fds[i] = pfd[0];
        want_samples += (uint64_t)nrows[i];
    }
    for (i = 0; i < 3; i++) {
        tu_sb got = { 0, 0, 0 };
        char buf[4096];
        ssize_t n;
        size_t len = 0;
        char *nl = NULL;
        for (;;) {  /* the child keeps the pipe open: read until the whole message is in */
            if (got.p && (nl = strchr(got.p, '\n')) != NULL) {
                if (strncmp(got.p, "OK ", 3) != 0) break;
                len = (size_t)strtoull(got.p + 3, NULL, 10);
                if (got.n >= (size_t)(nl + 1 - got.p) + len) break;
            }
            if ((n = read(fds[i], buf, sizeof buf)) <= 0) break;
            tu_sb_put(&got, buf, (size_t)n);
        }
        du_reap(pid[i]);
        close(fds[i]);
        if (!got.p || strncmp(got.p, "OK ", 3) != 0 || !nl) fail_msg("process %d: %s", i, got.p ? got.p : "(nothing)");
        assert_true(strlen(nl + 1) == len);
        m.m[m.n] = (char *)malloc(len + 1);
        assert_non_null(m.m[m.n]);
        memcpy(m.m[m.n], nl + 1, len + 1);
        m.len[m.n] = len;
        m.n++;
        tu_sb_free(&got);
    }
    DU_OK("dataset commit", sts_dataset_commit(root, &c, (const char *const *)m.m, m.len, m.n, NULL, NULL, &e), e);
    du_check_dataset("processes", root, &ds);
    if (kv) {
        assert_int_equal(ds.total_samples, want_samples);
        verify_kv_values("processes", root, &ds, 3, nrows);
    } else {
        /* batch: every file of task t holds rows 3s..3s+2 of it, in order */
        tf_names names = du_list_shards(root);
        size_t q;
        assert_int_equal(ds.total_samples, want_samples);
        for (q = 0; q < names.n; q++) {
            uint32_t t, s;
            char p[256];
            sts_file *f;
            const sts_tensor *x;
            uint64_t r;
            assert_true(du_shard_name(names.v[q], &t, &s, NULL));
            tf_join(p, sizeof p, root, names.v[q]);
            DU_OK("open", sts_open(p, NULL, &f, &e), e);
            x = sts_find(f, "img", 3);
            assert_non_null(x);
            for (r = 0; r < x->shape[0]; r++) {
                row rw;
                mk_row(&rw, t, (int)(s * 3 + r), 1);
                if (memcmp((const uint8_t *)sts_data(f, x) + r * 6, rw.img, 6) != 0) fail_msg("processes: %s row %llu differs", names.v[q], (unsigned long long)r);
            }
            sts_close(f);
        }
        tf_names_free(&names);
    }
    du_ds_free(&ds);
    for (i = 0; i < (int)m.n; i++) free(m.m[i]);
    tf_rmtree(root);
}
static void test_processes_kv(void **state) { (void)state; processes(1); }
static void test_processes_batch(void **state) { (void)state; processes(0); }

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_faults_task_batch),
        cmocka_unit_test(test_faults_task_kv),
        cmocka_unit_test(test_faults_task_batch_sync),
        cmocka_unit_test(test_faults_task_kv_sync),
        cmocka_unit_test(test_faults_task_kv_arrival),
        cmocka_unit_test(test_faults_task_kv_arrival_sync),
        cmocka_unit_test(test_faults_task_kv_arrival_large),
        cmocka_unit_test(test_faults_task_kv_arrival_large_sync),
        cmocka_unit_test(test_faults_commit_kv),
        cmocka_unit_test(test_faults_commit_batch),
        cmocka_unit_test(test_faults_commit_overwrite),
        cmocka_unit_test(test_overwrite),
        cmocka_unit_test(test_overwrite_stale_message),
        cmocka_unit_test(test_threads),
        cmocka_unit_test(test_processes_kv),
        cmocka_unit_test(test_processes_batch),
    };
    if (getenv("STS_TEST_FILTER")) cmocka_set_test_filter(getenv("STS_TEST_FILTER"));
    return cmocka_run_group_tests(tests, NULL, NULL);
}
