/* test_dataset_jobs.c - nothing lost, ever (issue 11): one job per folder, commits that cannot
   destroy, sts_dataset_check that misses nothing, sts_dataset_clean, shard checksums.
   - a second job's prepare gets EXISTS naming the job that holds the folder, until it commits;
   - real concurrent processes, in a loop: jobs racing for one folder (overwrite) never lose or mix
     a dataset: after every round the folder checks clean;
   - kill -9 in the middle of a job: the published dataset stays readable, check reports the lock
     and what the job left, clean removes them (the process is gone), check is then clean;
   - a failed dataset commit (the same message twice, another job's message, ENOSPC while writing
     the index) keeps every task's shards and the lock; the corrected commit succeeds;
   - an overwrite removes the old manifest's shards only, never another part-* file;
   - a manifest that appears while a job commits is never replaced;
   - after the commit (or a durable commit whose last folder fsync failed: io.durable), discard and
     abort refuse messages naming the published shards and change nothing of them;
   - check finds each kind of tampering (orphan, temporary, stale lock, stale or short CSV,
     weight_map, schema, samples_count, index offsets, a missing index key, a flipped data byte
     with --data, and the reader's verify_checksums on first touch);
   - clean: dry run, only our own left-overs, a live lock refused without force. */
#define _POSIX_C_SOURCE 200809L
#ifndef STS_TEST_LINKED  /* the Makefile links tests/sts_impl.c's object instead */
#define STS_IMPLEMENTATION
#endif
#include "../safetensors_spark.h"
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "fs_util.h"
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

static char g_root[64];
static int quick(void) { const char *l = getenv("STS_TEST_LEVEL"); return l && strcmp(l, "quick") == 0; }
static int setup_root(void **state) { (void)state; tf_tmpdir(g_root, sizeof g_root); return 0; }
static int teardown_root(void **state) { (void)state; tf_rmtree(g_root); return 0; }
static void fresh(char *dir, size_t cap, const char *name) { tf_join(dir, cap, g_root, name); tf_rmtree(dir); }

#define OK(call) do { sts_result r_ = (call); if (r_ != STS_OK) fail_msg("%s:%d: %s: %s: %s", __FILE__, __LINE__, #call, sts_result_name(r_), e.message); } while (0)

static const sts_column SCHEMA[3] = {
    { "id", STS_VALUE_STRING, STS_DTYPE_U8 },
    { "x", STS_VALUE_ARRAY, STS_DTYPE_F32 },
    { "t", STS_VALUE_TENSOR, STS_DTYPE_U8 },
};
static void kv_config(sts_write_config *c, int overwrite, int index) {
    memset(c, 0, sizeof *c);
    c->name_col = "id";
    c->has_dtype = 1;
    c->dtype = STS_DTYPE_F32;
    c->generate_index = index;
    c->overwrite = overwrite;
    c->no_fsync = 1;
}
/* One task of `rows` rows whose values depend on `seed`; its message comes back (free it). */
static sts_result one_task(const char *dir, const sts_write_config *c, uint32_t task, int rows, int seed, char **msg,
                           size_t *len, sts_error *e) {
    sts_task_writer *w;
    sts_result r;
    int i;
    if ((r = sts_task_open(dir, task, c, SCHEMA, 3, NULL, &w, e)) != STS_OK) return r;
    for (i = 0; i < rows && r == STS_OK; i++) {
        char key[32];
        float x[4];
        uint8_t t[6];
        uint64_t shape[2] = { 2, 3 };
        sts_value v[3];
        int j;
        snprintf(key, sizeof key, "k%u_%d", task, i);
        for (j = 0; j < 4; j++) x[j] = (float)(seed * 1000 + i * 10 + j);
        for (j = 0; j < 6; j++) t[j] = (uint8_t)(seed + i + j);
        memset(v, 0, sizeof v);
        v[0].data = key; v[0].size = strlen(key);
        v[1].data = x; v[1].size = 4;
        v[2].data = t; v[2].size = 6; v[2].dtype = STS_DTYPE_U8; v[2].rank = 2; v[2].shape = shape;
        r = sts_task_write(w, v, e);
    }
    if (r == STS_OK) r = sts_task_commit(w, msg, len, e);
    sts_task_close(w);
    return r;
}
/* A whole job: prepare, `tasks` tasks, commit. */
static sts_result one_job(const char *dir, int overwrite, int index, int tasks, int rows, int seed, sts_error *e) {
    sts_write_config c;
    char *msg[8];
    size_t len[8];
    int t, n = 0;
    sts_result r;
    kv_config(&c, overwrite, index);
    if ((r = sts_dataset_prepare(dir, &c, SCHEMA, 3, NULL, e)) != STS_OK) return r;
    for (t = 0; t < tasks && r == STS_OK; t++)
        if ((r = one_task(dir, &c, (uint32_t)t, rows, seed, &msg[t], &len[t], e)) == STS_OK) n++;
    if (r == STS_OK) r = sts_dataset_commit(dir, &c, (const char *const *)msg, len, (size_t)n, NULL, NULL, e);
    else (void)sts_dataset_abort(dir, (const char *const *)msg, len, (size_t)n, NULL, NULL);
    for (t = 0; t < n; t++) sts_free(NULL, msg[t], len[t] + 1);
    return r;
}
/* The folder checks clean; its key k0_0__x holds seed's value. */
static void expect_clean(const char *dir, int seed, int data) {
    sts_check_config cc;
    sts_check_report rep;
    sts_error e;
    sts_dataset *ds;
    sts_read_config rc;
    sts_view v;
    memset(&cc, 0, sizeof cc);
    cc.data = data;
    if (sts_dataset_check(dir, &cc, NULL, &rep, &e) != STS_OK) fail_msg("%s does not check clean: %s", dir, e.message);
    if (data) assert_int_equal(rep.checksums, rep.shards);
    memset(&rc, 0, sizeof rc);
    rc.infer_schema = 1;
    rc.verify_checksums = 1;
    OK(sts_dataset_open(dir, &rc, NULL, &ds, &e));
    OK(sts_dataset_get(ds, "k0_0__x", 7, 1, &v, &e));
    if (seed >= 0 && tu_lef32((const uint8_t *)v.data + 4) != (float)(seed * 1000 + 1)) fail_msg("%s: k0_0__x is not job %d's", dir, seed);
    sts_dataset_close(ds);
}
/* The dataset reads back whole while the two left-overs may still be there: checked on a copy
   without them. */
static void expect_clean_but(const char *dir, int seed, const char *a, const char *b) {
    char copy[600], cmd[4096];
    snprintf(copy, sizeof copy, "%s.copy", dir);
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && cp -a '%s' '%s' && rm -f '%s%s' '%s%s'", copy, dir, copy, copy,
             a + strlen(dir), copy, b + strlen(dir));
    assert_int_equal(system(cmd), 0);
    expect_clean(copy, seed, 1);
    tf_rmtree(copy);
}
/* Each problem check reports, collected. */
typedef struct problems { int n; sts_rule rules[64]; char text[4096]; } problems;
static void on_problem(void *user, const sts_error *p) {
    problems *ps = (problems *)user;
    size_t l = strlen(ps->text);
    if (ps->n < 64) ps->rules[ps->n] = p->rule;
    ps->n++;
    snprintf(ps->text + l, sizeof ps->text - l, "%s\n", p->message);
}
static problems check_dir(const char *dir, int data) {
    problems ps;
    sts_check_config cc;
    sts_check_report rep;
    sts_error e;
    sts_result r;
    memset(&ps, 0, sizeof ps);
    memset(&cc, 0, sizeof cc);
    cc.data = data;
    cc.problem = on_problem;
    cc.user = &ps;
    r = sts_dataset_check(dir, &cc, NULL, &rep, &e);
    assert_true(r == (ps.n ? STS_ERR_DATASET : STS_OK));
    assert_int_equal(rep.problems, (uint64_t)ps.n);
    return ps;
}
static void expect_problem(const char *what, const char *dir, int data, sts_rule rule, const char *needle) {
    problems ps = check_dir(dir, data);
    int i, found = 0;
    for (i = 0; i < ps.n && i < 64; i++) found |= ps.rules[i] == rule;
    if (!found || (needle && !strstr(ps.text, needle)))
        fail_msg("%s: check did not report %s%s%s; it said:\n%s", what, sts_rule_id(rule), needle ? " with " : "",
                 needle ? needle : "", ps.text);
}
static void copy_dir(const char *from, const char *to) {
    char cmd[1200];
    tf_rmtree(to);
    snprintf(cmd, sizeof cmd, "cp -a '%s' '%s'", from, to);
    assert_int_equal(system(cmd), 0);
}
static void edit(const char *dir, const char *file, const char *from, const char *to) {
    char path[600];
    size_t n;
    char *text, *at, *out;
    tf_join(path, sizeof path, dir, file);
    text = (char *)tf_read(path, &n);
    at = strstr(text, from);
    if (!at) fail_msg("%s: no %s to edit", path, from);
    out = (char *)malloc(n + strlen(to) + 1);
    memcpy(out, text, (size_t)(at - text));
    memcpy(out + (at - text), to, strlen(to));
    memcpy(out + (at - text) + strlen(to), at + strlen(from), n - (size_t)(at - text) - strlen(from));
    tf_write(path, out, n - strlen(from) + strlen(to));
    free(out);
    free(text);
}
static char *first_shard(const char *dir) {  /* its name, from the manifest */
    char path[600], *text, *p, *q, *name;
    size_t n;
    tf_join(path, sizeof path, dir, "dataset_manifest.json");
    text = (char *)tf_read(path, &n);
    p = strstr(text, "\"shard_path\": \"");
    assert_non_null(p);
    p += 15;
    q = strchr(p, '"');
    name = (char *)malloc((size_t)(q - p) + 1);
    memcpy(name, p, (size_t)(q - p));
    name[q - p] = 0;
    free(text);
    return name;
}
static int exists_in(const char *dir, const char *name) {
    char path[600];
    tf_join(path, sizeof path, dir, name);
    return access(path, F_OK) == 0;
}

static void test_second_job_refused(void **state) {
    char dir[512], *msg;
    size_t len;
    sts_write_config c;
    sts_error e;
    sts_result r;
    (void)state;
    fresh(dir, sizeof dir, "second_job");
    kv_config(&c, 0, 1);
    OK(sts_dataset_prepare(dir, &c, SCHEMA, 3, NULL, &e));
    r = sts_dataset_prepare(dir, &c, SCHEMA, 3, NULL, &e);  /* a second job, into a new folder */
    assert_int_equal(r, STS_ERR_EXISTS);
    assert_non_null(strstr(e.message, "held by job"));
    assert_non_null(strstr(e.message, "sts clean"));
    c.overwrite = 1;
    assert_int_equal(sts_dataset_prepare(dir, &c, SCHEMA, 3, NULL, &e), STS_ERR_EXISTS);  /* overwrite too */
    assert_int_equal(sts_dataset_reindex(dir, NULL, NULL, &e), STS_ERR_EXISTS);  /* and a reindex */
    c.overwrite = 0;
    OK(one_task(dir, &c, 0, 3, 1, &msg, &len, &e));
    OK(sts_dataset_commit(dir, &c, (const char *const *)&msg, &len, 1, NULL, NULL, &e));
    sts_free(NULL, msg, len + 1);
    assert_false(exists_in(dir, ".sts_job.lock"));
    expect_clean(dir, 1, 1);
    /* the job is over: a commit of its message again finds no job */
    assert_int_equal(one_job(dir, 1, 1, 1, 2, 2, &e), STS_OK);
    expect_clean(dir, 2, 1);
}

/* Jobs in real processes race for one folder with overwrite; after each round it checks clean. */
static void test_concurrent_processes(void **state) {
    char dir[512];
    int round, rounds = quick() ? 3 : 12, wins = 0, losses = 0;
    sts_error e;
    (void)state;
    fresh(dir, sizeof dir, "race");
    OK(one_job(dir, 0, 1, 1, 2, 0, &e));
    for (round = 0; round < rounds; round++) {
        pid_t pid[2];
        int k, status, ok[2], fds[2][2];
        for (k = 0; k < 2; k++) {
            assert_int_equal(pipe(fds[k]), 0);
            fflush(NULL);
            pid[k] = fork();
            assert_true(pid[k] >= 0);
            if (pid[k] == 0) {  /* the verdict goes through the pipe; the child then waits to be killed (no
                                   exit-time leak report of the parent's memory under valgrind) */
                sts_error ce;
                char v = one_job(dir, 1, 1, 2, 400, 10 + round * 2 + k, &ce) == STS_OK ? '0' : '1';
                if (write(fds[k][1], &v, 1) != 1) {}
                for (;;) pause();
            }
            close(fds[k][1]);
        }
        for (k = 0; k < 2; k++) {
            char v = 'x';
            if (read(fds[k][0], &v, 1) != 1) v = 'x';
            close(fds[k][0]);
            kill(pid[k], SIGKILL);
            assert_int_equal(waitpid(pid[k], &status, 0), pid[k]);
            ok[k] = v == '0';
            if (v == 'x') fail_msg("round %d: job %d died without a verdict", round, k);
        }
        wins += ok[0] + ok[1];
        losses += !ok[0] + !ok[1];
        assert_true(ok[0] || ok[1]);  /* the one that took the folder finished */
        expect_clean(dir, -1, 1);     /* never an empty, mixed or orphaned dataset */
    }
    print_message("race: %d rounds, %d jobs won, %d refused (EXISTS)\n", rounds, wins, losses);
}

/* kill -9 in the middle of a job: nothing published is lost; clean clears what the job left. */
static void test_kill9_then_clean(void **state) {
    char dir[512];
    int fds[2], status;
    pid_t pid;
    char ready;
    sts_error e;
    size_t count = 0;
    sts_clean_config cl;
    (void)state;
    fresh(dir, sizeof dir, "kill9");
    OK(one_job(dir, 0, 1, 2, 5, 7, &e));
    assert_int_equal(pipe(fds), 0);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {  /* a job that committed one task and is then killed */
        sts_write_config c;
        char *msg;
        size_t len;
        sts_error ce;
        kv_config(&c, 1, 1);
        if (sts_dataset_prepare(dir, &c, SCHEMA, 3, NULL, &ce) != STS_OK) _exit(2);
        if (one_task(dir, &c, 0, 50, 8, &msg, &len, &ce) != STS_OK) _exit(3);
        if (write(fds[1], "r", 1) != 1) _exit(4);
        for (;;) pause();
    }
    close(fds[1]);
    assert_int_equal(read(fds[0], &ready, 1), 1);
    close(fds[0]);
    kill(pid, SIGKILL);
    assert_int_equal(waitpid(pid, &status, 0), pid);
    expect_problem("after kill -9", dir, 0, STS_RULE_DATASET_LOCK, "process is gone");
    expect_problem("after kill -9", dir, 0, STS_RULE_DATASET_ORPHAN, NULL);
    {   /* the published dataset is whole and readable */
        sts_dataset *ds;
        sts_read_config rc;
        sts_view v;
        memset(&rc, 0, sizeof rc);
        rc.infer_schema = 1;
        OK(sts_dataset_open(dir, &rc, NULL, &ds, &e));
        OK(sts_dataset_get(ds, "k1_4__x", 7, 1, &v, &e));
        assert_true(tu_lef32(v.data) == (float)(7 * 1000 + 40));
        sts_dataset_close(ds);
    }
    assert_int_equal(one_job(dir, 1, 1, 1, 2, 9, &e), STS_ERR_EXISTS);  /* the dead job still holds it */
    memset(&cl, 0, sizeof cl);
    OK(sts_dataset_clean(dir, &cl, NULL, &count, &e));
    assert_true(count >= 2);  /* the lock and the killed job's shard */
    expect_clean(dir, 7, 1);
    OK(one_job(dir, 1, 1, 1, 2, 9, &e));
    expect_clean(dir, 9, 1);
}

/* Failed commits keep the tasks' shards and the lock; the corrected commit succeeds. */
static int g_rename_fault, g_write_fault;
static int fault_hook(void *user, const char *op) {
    (void)user;
    if (strcmp(op, "write") == 0 && g_write_fault > 0 && --g_write_fault == 0) return 28;  /* ENOSPC */
    if (strcmp(op, "rename") == 0 && g_rename_fault > 0 && --g_rename_fault == 0) {
        char path[600];
        tf_join(path, sizeof path, (const char *)user ? (const char *)user : ".", "dataset_manifest.json");
        tf_write(path, "FOREIGN", 7);  /* another job's manifest appears right now */
    }
    return 0;
}
static void test_commit_retry(void **state) {
    char dir[512], *msg[2], *forged;
    size_t len[2];
    const char *twice[2];
    size_t tlen[2];
    sts_write_config c;
    sts_options o;
    sts_error e;
    sts_result r;
    (void)state;
    fresh(dir, sizeof dir, "retry");
    kv_config(&c, 0, 1);
    OK(sts_dataset_prepare(dir, &c, SCHEMA, 3, NULL, &e));
    OK(one_task(dir, &c, 0, 4, 3, &msg[0], &len[0], &e));
    OK(one_task(dir, &c, 1, 4, 3, &msg[1], &len[1], &e));
    twice[0] = twice[1] = msg[0];
    tlen[0] = tlen[1] = len[0];
    r = sts_dataset_commit(dir, &c, twice, tlen, 2, NULL, NULL, &e);  /* the same message twice */
    assert_int_equal(r, STS_ERR_DATASET);
    forged = (char *)malloc(len[1] + 1);
    memcpy(forged, msg[1], len[1] + 1);
    {   /* another job's message */
        char *j = strstr(forged, "\"job\":\"");
        assert_non_null(j);
        j[7] = j[7] == 'a' ? 'b' : 'a';
    }
    twice[1] = forged;
    tlen[1] = len[1];
    r = sts_dataset_commit(dir, &c, twice, tlen, 2, NULL, NULL, &e);
    assert_int_equal(r, STS_ERR_DATASET);
    assert_non_null(strstr(e.message, "belongs to job"));
    memset(&o, 0, sizeof o);
    o.io_fault = fault_hook;
    {
        int k;
        for (k = 1; k <= 3; k++) {  /* ENOSPC while writing the CSV, the JSON index, the manifest */
            g_write_fault = k;
            r = sts_dataset_commit(dir, &c, (const char *const *)msg, len, 2, &o, NULL, &e);
            g_write_fault = 0;
            assert_int_equal(r, STS_ERR_IO);
            assert_false(exists_in(dir, "dataset_manifest.json"));
        }
    }
    assert_true(exists_in(dir, ".sts_job.lock"));  /* the job still holds the folder, shards in place */
    OK(sts_dataset_commit(dir, &c, (const char *const *)msg, len, 2, NULL, NULL, &e));
    expect_clean(dir, 3, 1);
    free(forged);
    sts_free(NULL, msg[0], len[0] + 1);
    sts_free(NULL, msg[1], len[1] + 1);
}

/* Overwrite removes the old manifest's shards only; a manifest that appears meanwhile stays. */
static void test_overwrite_and_appearing_manifest(void **state) {
    char dir[512], *old, path[600], *msg;
    size_t len, n;
    sts_write_config c;
    sts_options o;
    sts_error e;
    sts_result r;
    uint8_t *text;
    (void)state;
    fresh(dir, sizeof dir, "overwrite");
    OK(one_job(dir, 0, 1, 1, 3, 4, &e));
    old = first_shard(dir);
    tf_join(path, sizeof path, dir, "part-99999-0000-00000000-0000-4000-8000-000000000000.safetensors");
    {   /* someone else's part file */
        char src[600];
        uint8_t *b;
        tf_join(src, sizeof src, dir, old);
        b = tf_read(src, &n);
        tf_write(path, b, n);
        free(b);
    }
    OK(one_job(dir, 1, 1, 1, 3, 5, &e));
    assert_false(exists_in(dir, old));  /* the replaced dataset's shard went */
    assert_true(exists_in(dir, "part-99999-0000-00000000-0000-4000-8000-000000000000.safetensors"));  /* not ours: kept */
    expect_problem("a foreign part file", dir, 0, STS_RULE_DATASET_ORPHAN, "part-99999");
    free(old);
    /* a manifest that appears while the commit publishes is never replaced */
    fresh(dir, sizeof dir, "appearing");
    kv_config(&c, 0, 0);
    OK(sts_dataset_prepare(dir, &c, SCHEMA, 3, NULL, &e));
    OK(one_task(dir, &c, 0, 2, 6, &msg, &len, &e));
    memset(&o, 0, sizeof o);
    o.io_fault = fault_hook;
    o.io_fault_user = dir;
    g_rename_fault = 1;
    r = sts_dataset_commit(dir, &c, (const char *const *)&msg, &len, 1, &o, NULL, &e);
    g_rename_fault = 0;
    assert_int_equal(r, STS_ERR_EXISTS);
    tf_join(path, sizeof path, dir, "dataset_manifest.json");
    text = tf_read(path, &n);
    assert_int_equal(n, 7);
    assert_memory_equal(text, "FOREIGN", 7);
    free(text);
    sts_free(NULL, msg, len + 1);
}

/* After the commit: a durable commit whose folder fsync fails has published (io.durable); a discard
   or abort naming the published shards is refused (dataset.published) and changes nothing, while
   another message of the same call is still handled; an unreadable manifest protects every shard. */
static int g_dirsync_fault;
static int dirsync_hook(void *user, const char *op) {
    (void)user;
    return strcmp(op, "fsync_dir") == 0 && g_dirsync_fault ? 5 /* EIO */ : 0;
}
static void expect_refused(sts_result r, const sts_error *e, const char *needle) {
    if (r != STS_ERR_DATASET || e->rule != STS_RULE_DATASET_PUBLISHED || !strstr(e->message, needle))
        fail_msg("want dataset.published naming %s, got %s: %s", needle, sts_result_name(r), e->message);
}
static void test_after_commit(void **state) {
    char dir[512], *msg[3];
    size_t len[3];
    sts_write_config c;
    sts_options o;
    sts_error e;
    sts_result r;
    tf_snap before, after;
    int i;
    (void)state;
    fresh(dir, sizeof dir, "after_commit");
    kv_config(&c, 0, 1);
    c.no_fsync = 0;
    OK(sts_dataset_prepare(dir, &c, SCHEMA, 3, NULL, &e));
    OK(one_task(dir, &c, 0, 3, 21, &msg[0], &len[0], &e));
    OK(one_task(dir, &c, 1, 3, 21, &msg[1], &len[1], &e));
    memset(&o, 0, sizeof o);
    o.io_fault = dirsync_hook;
    g_dirsync_fault = 1;
    r = sts_dataset_commit(dir, &c, (const char *const *)msg, len, 2, &o, NULL, &e);
    g_dirsync_fault = 0;
    if (r != STS_ERR_IO || e.rule != STS_RULE_DURABLE || !strstr(e.message, "in place"))
        fail_msg("a failed folder fsync after the publication: %s: %s", sts_result_name(r), e.message);
    assert_false(exists_in(dir, ".sts_job.lock"));  /* published: the job is over */
    expect_clean(dir, 21, 1);
    /* the driver, told the commit failed, discards and aborts with the job's messages */
    before = tf_snapshot(dir, 1);
    r = sts_dataset_discard(dir, (const char *const *)msg, len, 2, NULL, &e);
    expect_refused(r, &e, "commit message 0 names");
    r = sts_dataset_abort(dir, (const char *const *)msg, len, 2, NULL, &e);
    expect_refused(r, &e, "a shard of the published dataset");
    after = tf_snapshot(dir, 1);
    tf_snap_equal(&before, &after, "discard and abort after the commit");
    tf_snap_free(&after);
    /* the next job (overwrite): a stale message beside its own task's is refused, its own task's
       shards go */
    kv_config(&c, 1, 1);
    OK(sts_dataset_prepare(dir, &c, SCHEMA, 3, NULL, &e));
    OK(one_task(dir, &c, 0, 2, 22, &msg[2], &len[2], &e));
    {
        const char *mix[2];
        size_t mlen[2];
        mix[0] = msg[2]; mlen[0] = len[2];
        mix[1] = msg[1]; mlen[1] = len[1];
        r = sts_dataset_abort(dir, mix, mlen, 2, NULL, &e);
        expect_refused(r, &e, "commit message 1 names");
    }
    after = tf_snapshot(dir, 1);
    tf_snap_equal(&before, &after, "an abort with a stale message: the new task's shards gone, the lock released");
    tf_snap_free(&after);
    expect_clean(dir, 21, 1);
    /* a manifest that cannot be read protects every shard */
    kv_config(&c, 1, 1);
    OK(sts_dataset_prepare(dir, &c, SCHEMA, 3, NULL, &e));
    sts_free(NULL, msg[2], len[2] + 1);
    OK(one_task(dir, &c, 0, 2, 23, &msg[2], &len[2], &e));
    edit(dir, "dataset_manifest.json", "{", "[");
    r = sts_dataset_discard(dir, (const char *const *)&msg[2], &len[2], 1, NULL, &e);
    expect_refused(r, &e, "is unreadable");
    edit(dir, "dataset_manifest.json", "[", "{");
    OK(sts_dataset_discard(dir, (const char *const *)&msg[2], &len[2], 1, NULL, &e));
    OK(sts_dataset_abort(dir, NULL, NULL, 0, NULL, &e));
    after = tf_snapshot(dir, 1);
    tf_snap_equal(&before, &after, "discard once the manifest reads again");
    tf_snap_free(&after);
    tf_snap_free(&before);
    for (i = 0; i < 3; i++) sts_free(NULL, msg[i], len[i] + 1);
}

/* sts_dataset_abort with each of its allocations failing in turn: NOMEM, or OK with the job over
   (its shards and its lock gone); never OK with the lock left, so a driver knows to call it again,
   and the call again ends the job. sts_dataset_discard likewise: NOMEM, or OK with the task's
   shards gone. */
static void test_abort_nomem(void **state) {
    char dir[512], *msg[2];
    size_t len[2];
    long k, total = 0;
    sts_write_config c;
    sts_error e;
    (void)state;
    fresh(dir, sizeof dir, "abort_nomem");
    kv_config(&c, 0, 1);
    for (k = 1;; k++) {
        tu_alloc a;
        sts_options o = tu_alloc_opts(&a, NULL);
        sts_result r;
        OK(sts_dataset_prepare(dir, &c, SCHEMA, 3, NULL, &e));
        OK(one_task(dir, &c, 0, 3, 31, &msg[0], &len[0], &e));
        OK(one_task(dir, &c, 1, 3, 31, &msg[1], &len[1], &e));
        a.fail_at = k;
        r = sts_dataset_abort(dir, (const char *const *)msg, len, 2, &o, &e);
        if (a.bytes || a.blocks) fail_msg("abort with allocation %ld failing left %ld blocks", k, a.blocks);
        if (r == STS_OK) {
            if (exists_in(dir, ".sts_job.lock")) fail_msg("abort with allocation %ld failing: OK, but the lock stays", k);
        } else {
            if (r != STS_ERR_NOMEM) fail_msg("abort with allocation %ld failing: %s: %s", k, sts_result_name(r), e.message);
            OK(sts_dataset_abort(dir, (const char *const *)msg, len, 2, NULL, &e));  /* again, with memory */
        }
        {   /* the folder as before the job: empty */
            tf_snap now = tf_snapshot(dir, 0);
            if (now.n) fail_msg("abort with allocation %ld failing: %zu entries left, the first %s", k, now.n, now.e[0].name);
            tf_snap_free(&now);
        }
        sts_free(NULL, msg[0], len[0] + 1);
        sts_free(NULL, msg[1], len[1] + 1);
        if (!a.failed) { total = k - 1; break; }
    }
    if (total < 4) fail_msg("only %ld allocations in an abort", total);
    print_message("sts_dataset_abort: %ld allocations, each failed in turn\n", total);
    for (k = 1;; k++) {  /* discard: NOMEM, or OK with the discarded task's shards gone; the job goes on */
        tu_alloc a;
        sts_options o = tu_alloc_opts(&a, NULL);
        sts_result r;
        tf_snap kept, now;
        OK(sts_dataset_prepare(dir, &c, SCHEMA, 3, NULL, &e));
        OK(one_task(dir, &c, 0, 3, 31, &msg[0], &len[0], &e));
        kept = tf_snapshot(dir, 1);
        OK(one_task(dir, &c, 1, 3, 32, &msg[1], &len[1], &e));
        a.fail_at = k;
        r = sts_dataset_discard(dir, (const char *const *)&msg[1], &len[1], 1, &o, &e);
        if (a.bytes || a.blocks) fail_msg("discard with allocation %ld failing left %ld blocks", k, a.blocks);
        if (r != STS_OK) {
            if (r != STS_ERR_NOMEM) fail_msg("discard with allocation %ld failing: %s: %s", k, sts_result_name(r), e.message);
            OK(sts_dataset_discard(dir, (const char *const *)&msg[1], &len[1], 1, NULL, &e));
        }
        now = tf_snapshot(dir, 1);
        tf_snap_equal(&kept, &now, "discard: the other task's shards and the lock, nothing else");
        tf_snap_free(&now);
        tf_snap_free(&kept);
        OK(sts_dataset_abort(dir, (const char *const *)msg, len, 2, NULL, &e));
        sts_free(NULL, msg[0], len[0] + 1);
        sts_free(NULL, msg[1], len[1] + 1);
        if (!a.failed) break;
    }
}

/* A prepare refused (a folder that is not empty) with each of its allocations failing in turn gives
   back the lock it took: EXISTS or NOMEM, and never a lock left behind. */
static void test_prepare_refused_nomem(void **state) {
    char dir[512], path[600];
    long k;
    sts_write_config c;
    sts_error e;
    (void)state;
    fresh(dir, sizeof dir, "prepare_nomem");
    OK(one_job(dir, 0, 1, 1, 3, 41, &e));  /* a dataset: prepare without overwrite refuses the folder */
    tf_join(path, sizeof path, dir, ".sts_job.lock");
    kv_config(&c, 0, 1);
    for (k = 1;; k++) {
        tu_alloc a;
        sts_options o = tu_alloc_opts(&a, NULL);
        sts_result r;
        a.fail_at = k;
        r = sts_dataset_prepare(dir, &c, SCHEMA, 3, &o, &e);
        if (r != STS_ERR_EXISTS && r != STS_ERR_NOMEM)
            fail_msg("prepare with allocation %ld failing: %s: %s", k, sts_result_name(r), e.message);
        if (tf_exists(path)) fail_msg("prepare with allocation %ld failing (%s) left its lock", k, sts_result_name(r));
        if (a.bytes || a.blocks) fail_msg("prepare with allocation %ld failing left %ld blocks", k, a.blocks);
        if (!a.failed) break;
    }
    expect_clean(dir, 41, 1);
}

/* check finds every kind of tampering; the reader verifies checksums on first touch when asked. */
static void test_check_finds(void **state) {
    char base[512], dir[512], path[600], *shard;
    sts_error e;
    (void)state;
    fresh(base, sizeof base, "check_base");
    OK(one_job(base, 0, 1, 2, 4, 11, &e));
    expect_clean(base, 11, 1);
    shard = first_shard(base);
    tf_join(dir, sizeof dir, g_root, "check_case");
    /* orphan, temporary, stale lock */
    copy_dir(base, dir);
    {
        char src[600], dst[600];
        size_t n;
        uint8_t *b;
        tf_join(src, sizeof src, dir, shard);
        tf_join(dst, sizeof dst, dir, "part-00007-0000-11111111-1111-4111-8111-111111111111.safetensors");
        b = tf_read(src, &n);
        tf_write(dst, b, n);
        free(b);
    }
    expect_problem("orphan", dir, 0, STS_RULE_DATASET_ORPHAN, "part-00007");
    copy_dir(base, dir);
    tf_join(path, sizeof path, dir, ".part-00000-0000-x.safetensors.tmp-0123456789abcdef");
    tf_write(path, "x", 1);
    expect_problem("temporary", dir, 0, STS_RULE_DATASET_TEMPORARY, ".tmp-");
    copy_dir(base, dir);
    {
        pid_t dead = fork();
        char lock[512], host[128];
        int st;
        if (dead == 0) _exit(0);
        waitpid(dead, &st, 0);
        gethostname(host, sizeof host);
        host[sizeof host - 1] = 0;
        snprintf(lock, sizeof lock, "{\"job\":\"j\",\"pid\":%d,\"host\":\"%s\",\"started\":1}\n", (int)dead, host);
        tf_join(path, sizeof path, dir, ".sts_job.lock");
        tf_write(path, lock, strlen(lock));
    }
    expect_problem("stale lock", dir, 0, STS_RULE_DATASET_LOCK, "process is gone");
    /* text tamperings of the index (CSV stale or renamed, weight_map, offsets) and of the manifest
       (schema and samples_count against the headers): each on a fresh copy */
    {
        static const struct { const char *what, *file, *from, *to; sts_rule rule; const char *needle; } T[] = {
            { "stale CSV", "_tensor_index.csv", "\"[2,3]\"", "\"[3,2]\"", STS_RULE_DATASET_INDEX, "stale CSV" },
            { "renamed CSV key", "_tensor_index.csv", "k0_0__x,", "k0_0__zz,", STS_RULE_DATASET_INDEX, "k0_0__zz" },
            { "weight_map", "_tensor_index.json", "\"k0_1__t\":\"part-00000", "\"k0_1__t\":\"part-00001",
              STS_RULE_DATASET_INDEX, "weight_map" },
            { "index offsets", "_tensor_index.json", "\"data_offsets\":[0,", "\"data_offsets\":[1,",
              STS_RULE_DATASET_INDEX, "disagrees" },
            { "schema dtype", "dataset_manifest.json", "\"x\": {\"dtype\": \"F32\"", "\"x\": {\"dtype\": \"F64\"",
              STS_RULE_DATASET_MANIFEST, "schema" },
            { "samples_count", "dataset_manifest.json", "\"samples_count\": 4", "\"samples_count\": 3",
              STS_RULE_DATASET_MANIFEST, "samples_count" },
        };
        size_t t;
        for (t = 0; t < sizeof T / sizeof T[0]; t++) {
            copy_dir(base, dir);
            edit(dir, T[t].file, T[t].from, T[t].to);
            expect_problem(T[t].what, dir, 0, T[t].rule, T[t].needle);
        }
    }
    /* a flipped data byte: only the data check and the verifying reader see it */
    copy_dir(base, dir);
    {
        size_t n;
        uint8_t *b;
        sts_dataset *ds;
        sts_read_config rc;
        sts_view v;
        problems ps;
        tf_join(path, sizeof path, dir, shard);
        b = tf_read(path, &n);
        b[n - 1] ^= 0x40;
        tf_write(path, b, n);
        free(b);
        ps = check_dir(dir, 0);
        assert_int_equal(ps.n, 0);
        expect_problem("flipped byte", dir, 1, STS_RULE_DATASET_CHECKSUM, shard);
        memset(&rc, 0, sizeof rc);
        rc.infer_schema = 1;
        OK(sts_dataset_open(dir, &rc, NULL, &ds, &e));
        OK(sts_dataset_get(ds, "k0_0__x", 7, 1, &v, &e));  /* not asked to verify */
        sts_dataset_close(ds);
        rc.verify_checksums = 1;
        OK(sts_dataset_open(dir, &rc, NULL, &ds, &e));
        assert_int_equal(sts_dataset_get(ds, "k0_0__x", 7, 1, &v, &e), STS_ERR_DATASET);
        assert_int_equal(e.rule, STS_RULE_DATASET_CHECKSUM);
        sts_dataset_close(ds);
    }
    free(shard);
}

/* clean: dry run, our own left-overs only, a live lock refused without force. */
static void test_clean(void **state) {
    char dir[512], path[600], *shard;
    sts_clean_config cl;
    sts_write_config c;
    size_t count = 0;
    sts_error e;
    (void)state;
    fresh(dir, sizeof dir, "clean");
    OK(one_job(dir, 0, 1, 1, 3, 12, &e));
    shard = first_shard(dir);
    tf_join(path, sizeof path, dir, "part-00003-0000-22222222-2222-4222-8222-222222222222.safetensors");
    tf_write(path, "orphan", 6);
    tf_join(path, sizeof path, dir, "._tensor_index.json.tmp-00");
    tf_write(path, "t", 1);
    tf_join(path, sizeof path, dir, "notes.txt");
    tf_write(path, "mine", 4);
    memset(&cl, 0, sizeof cl);
    cl.dry_run = 1;
    OK(sts_dataset_clean(dir, &cl, NULL, &count, &e));
    assert_int_equal(count, 2);
    assert_true(exists_in(dir, "part-00003-0000-22222222-2222-4222-8222-222222222222.safetensors"));
    cl.dry_run = 0;
    OK(sts_dataset_clean(dir, &cl, NULL, &count, &e));
    assert_int_equal(count, 2);
    assert_false(exists_in(dir, "part-00003-0000-22222222-2222-4222-8222-222222222222.safetensors"));
    assert_false(exists_in(dir, "._tensor_index.json.tmp-00"));
    assert_true(exists_in(dir, "notes.txt"));  /* not ours */
    assert_true(exists_in(dir, shard));        /* named by the manifest */
    tf_join(path, sizeof path, dir, "notes.txt");
    unlink(path);
    expect_clean(dir, 12, 1);
    /* a live job (this process) holds the folder: clean refuses, force clears */
    kv_config(&c, 1, 1);
    OK(sts_dataset_prepare(dir, &c, SCHEMA, 3, NULL, &e));
    assert_int_equal(sts_dataset_clean(dir, &cl, NULL, &count, &e), STS_ERR_EXISTS);
    assert_true(exists_in(dir, ".sts_job.lock"));
    cl.force = 1;
    OK(sts_dataset_clean(dir, &cl, NULL, &count, &e));
    assert_false(exists_in(dir, ".sts_job.lock"));
    expect_clean(dir, 12, 1);
    free(shard);
}

/* clean and check with each allocation failing in turn: clean gives NOMEM or OK, never removes a
   shard of the dataset (a failed allocation once made every shard read as an orphan), never says
   it removed what stays; check gives NOMEM or its findings (the orphan, the temporary), never the
   dataset's own shards as orphans. */
static void count_removed(void *user, const char *name, const char *why) { (void)name; (void)why; ++*(size_t *)user; }
static void test_clean_check_nomem(void **state) {
    char dir[512], path[600], orphan[600], temp[600];
    long k;
    sts_error e;
    (void)state;
    fresh(dir, sizeof dir, "clean_nomem");
    OK(one_job(dir, 0, 1, 2, 3, 51, &e));
    tf_join(orphan, sizeof orphan, dir, "part-00009-0000-33333333-3333-4333-8333-333333333333.safetensors");
    tf_join(temp, sizeof temp, dir, "._tensor_index.json.tmp-01");
    for (k = 1;; k++) {  /* check */
        tu_alloc a;
        sts_options o = tu_alloc_opts(&a, NULL);
        sts_check_config cc;
        sts_check_report rep;
        problems ps;
        sts_result r;
        tf_write(orphan, "orphan", 6);
        memset(&ps, 0, sizeof ps);
        memset(&cc, 0, sizeof cc);
        cc.problem = on_problem;
        cc.user = &ps;
        a.fail_at = k;
        r = sts_dataset_check(dir, &cc, &o, &rep, &e);
        if (r != STS_ERR_NOMEM && r != STS_ERR_DATASET)
            fail_msg("check with allocation %ld failing: %s: %s", k, sts_result_name(r), e.message);
        if (ps.n > 1 || (ps.n == 1 && !strstr(ps.text, "part-00009")))
            fail_msg("check with allocation %ld failing (%s) reported %d:\n%s", k, sts_result_name(r), ps.n, ps.text);
        if (a.bytes || a.blocks) fail_msg("check with allocation %ld failing left %ld blocks", k, a.blocks);
        if (!a.failed) { assert_int_equal(ps.n, 1); break; }
    }
    for (k = 1;; k++) {  /* clean */
        tu_alloc a;
        sts_options o = tu_alloc_opts(&a, NULL);
        sts_clean_config cl;
        size_t count = 0, called = 0;
        sts_result r;
        int left;
        tf_write(orphan, "orphan", 6);
        tf_write(temp, "t", 1);
        memset(&cl, 0, sizeof cl);
        cl.removed = count_removed;
        cl.user = &called;
        a.fail_at = k;
        r = sts_dataset_clean(dir, &cl, &o, &count, &e);
        if (r != STS_OK && r != STS_ERR_NOMEM)
            fail_msg("clean with allocation %ld failing: %s: %s", k, sts_result_name(r), e.message);
        left = tf_exists(orphan) + tf_exists(temp);
        if (r == STS_OK && left) fail_msg("clean with allocation %ld failing: OK, but %d left-overs stay", k, left);
        if (r == STS_OK) assert_int_equal(count, 2);
        assert_int_equal((long)called, 2 - left);  /* reported removed: exactly what went */
        expect_clean_but(dir, 51, orphan, temp);
        if (a.bytes || a.blocks) fail_msg("clean with allocation %ld failing left %ld blocks", k, a.blocks);
        if (!a.failed) break;
    }
    tf_join(path, sizeof path, dir, "dataset_manifest.json");
    assert_true(tf_exists(path));
    expect_clean(dir, 51, 1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_second_job_refused),
        cmocka_unit_test(test_concurrent_processes),
        cmocka_unit_test(test_kill9_then_clean),
        cmocka_unit_test(test_commit_retry),
        cmocka_unit_test(test_overwrite_and_appearing_manifest),
        cmocka_unit_test(test_after_commit),
        cmocka_unit_test(test_abort_nomem),
        cmocka_unit_test(test_prepare_refused_nomem),
        cmocka_unit_test(test_clean_check_nomem),
        cmocka_unit_test(test_check_finds),
        cmocka_unit_test(test_clean),
    };
    return cmocka_run_group_tests(tests, setup_root, teardown_root);
}
