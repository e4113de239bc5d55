/* test_dataset_read_threads.c - layer 9: after open a dataset is read-only; many threads read it at
   once. Built and run plain, under ASan+UBSan and valgrind (UNIT_SRCS) and under ThreadSanitizer
   (make test-tsan).
   - 8 threads x random lookups with data (every value checked) on a freshly opened dataset, so the
     first mapping of each file races; with the index, and without it (the key table is then built
     by whichever threads get there first);
   - 8 threads each scanning their own file range (long with data, wide without) while the others
     look keys up; the union of the ranges is checked against the whole dataset;
   - a lastWin dataset, with its index and without (every thread's first call then races to build
     the key table): every thread sees the later shard's copy;
   - counters: the dataset's files_mapped never exceeds its file count (a file is mapped once);
   - a stale index entry: the first lookups with data of every file race (each file is checked
     against its index entries once); the stale key fails every time, every other key is right.
   Threads never call cmocka: they count failures and the main thread checks. */
#define _POSIX_C_SOURCE 200809L
#ifndef STS_TEST_LINKED  /* the Makefile links tests/sts_impl.c's object instead */
#define STS_IMPLEMENTATION
#endif
#include "../safetensors_spark.h"
#include "test_dataset_read_util.h"
#include <pthread.h>

#define NTHREADS 8

static char g_root[64];
static char g_kv[256], g_lw[256], g_bad[256];
static uint32_t g_tasks = 16, g_rows = 8;

static int setup_root(void **state) {
    dr_kv k;
    (void)state;
    tf_tmpdir(g_root, sizeof g_root);
    tf_join(g_kv, sizeof g_kv, g_root, "kv");
    memset(&k, 0, sizeof k);
    k.tasks = g_tasks;
    k.rows = g_rows;
    k.index = 1;
    dr_write_kv(g_kv, &k);
    tf_join(g_lw, sizeof g_lw, g_root, "lw");
    memset(&k, 0, sizeof k);
    k.tasks = 6;
    k.rows = 4;
    k.last_win = 1;
    k.dup_every = 5;
    k.index = 1;
    dr_write_kv(g_lw, &k);
    {   /* the kv dataset again, with one stale index entry: k003_002__img renamed ghost__img */
        char p[512];
        tf_join(g_bad, sizeof g_bad, g_root, "bad");
        memset(&k, 0, sizeof k);
        k.tasks = g_tasks;
        k.rows = g_rows;
        k.index = 1;
        dr_write_kv(g_bad, &k);
        tf_join(p, sizeof p, g_bad, "_tensor_index.json");
        dr_edit(p, "\"k003_002__img\":{\"file\"", "\"ghost__img\":{\"file\"");
    }
    return 0;
}
static int teardown_root(void **state) {
    (void)state;
    tf_rmtree(g_root);
    return 0;
}

/* The checks of dr_check_kv_view, without cmocka: 1 if the view holds (task, row)'s tensor. */
static int kv_view_ok(const sts_view *v, uint32_t task, uint32_t row) {
    size_t kl = v->key_len;
    if (!v->present || kl <= 5) return 0;
    if (memcmp(v->key + kl - 5, "__img", 5) == 0) {
        uint64_t shape[2], n, i;
        dr_kv_img_shape(task, row, shape);
        n = shape[0] * shape[1];
        if (v->dtype != dr_kv_img_dtype(task, row) || v->rank != 2 || v->shape[0] != shape[0] || v->shape[1] != shape[1] || v->nbytes != n) return 0;
        if (v->data)
            for (i = 0; i < n; i++) if (((const uint8_t *)v->data)[i] != dr_kv_byte(task, row, i)) return 0;
        return 1;
    }
    if (memcmp(v->key + kl - 5, "__emb", 5) != 0 || v->dtype != STS_DTYPE_F32 || v->rank != 1 || v->shape[0] != 3 || v->nbytes != 12) return 0;
    if (v->data) {
        int j;
        for (j = 0; j < 3; j++) {
            float f = tu_lef32((const uint8_t *)v->data + 4 * j);
            if (f != dr_kv_emb(task, row, j)) return 0;
        }
    }
    return 1;
}

typedef struct job {
    const sts_dataset *ds;
    pthread_barrier_t *start;
    int id, gets, scan;
    uint32_t tasks, rows;
    int lastwin;
    /* results */
    int bad;
    char why[600];
    size_t rows_seen, tensors_seen;
    uint64_t sum;
} job;

static void job_fail(job *j, const char *fmt, const char *a, const char *b) {
    if (!j->bad) snprintf(j->why, sizeof j->why, fmt, a, b);
    j->bad++;
}
static void do_gets(job *j, tu_rng *rng, int n) {
    int i;
    for (i = 0; i < n; i++) {
        uint32_t t = tu_below(rng, j->tasks), r = tu_below(rng, j->rows);
        int with_data = tu_below(rng, 4) != 0;
        char key[64];
        sts_view v;
        sts_error e;
        if (j->lastwin && tu_below(rng, 3) == 0) {  /* a duplicated key: the last task's copy */
            r = tu_below(rng, 5);
            snprintf(key, sizeof key, "dup_%u%s", r, tu_below(rng, 2) ? "__img" : "__emb");
            if (sts_dataset_get(j->ds, key, strlen(key), with_data, &v, &e) != STS_OK) { job_fail(j, "get %s: %s", key, e.message); continue; }
            if (v.file != j->tasks - 1 || !kv_view_ok(&v, j->tasks - 1, 500 + r)) job_fail(j, "get %s: wrong tensor%s", key, "");
            continue;
        }
        dr_kv_key(key, sizeof key, t, r);
        strcat(key, tu_below(rng, 2) ? "__img" : "__emb");
        if (sts_dataset_get(j->ds, key, strlen(key), with_data, &v, &e) != STS_OK) { job_fail(j, "get %s: %s", key, e.message); continue; }
        if (v.file != t || !kv_view_ok(&v, t, r) || (with_data && !v.data)) job_fail(j, "get %s: wrong tensor%s", key, "");
    }
}
/* Long scan with data over this thread's files, then a wide scan without data. */
static void do_scan(job *j) {
    size_t per = (j->tasks + NTHREADS - 1) / NTHREADS;
    sts_scan_spec sp;
    sts_scan *s;
    sts_error e;
    const sts_view *c;
    size_t nc;
    memset(&sp, 0, sizeof sp);
    sp.long_form = 1;
    sp.with_data = 1;
    sp.file_begin = (size_t)j->id * per;
    sp.file_end = sp.file_begin + per;
    if (sp.file_end > j->tasks) sp.file_end = j->tasks;
    if (sp.file_begin >= sp.file_end) return;
    if (sts_scan_open(j->ds, &sp, &s, &e) != STS_OK) { job_fail(j, "scan_open: %s%s", e.message, ""); return; }
    for (;;) {
        uint32_t t, r;
        if (sts_scan_next(s, &c, &nc, &e) != STS_OK) { job_fail(j, "scan_next: %s%s", e.message, ""); break; }
        if (!nc) break;
        if (!dr_kv_parse(c->key, c->key_len, &t, &r) || t != c->file || c->file < sp.file_begin || c->file >= sp.file_end || !c->data || !kv_view_ok(c, t, r))
            job_fail(j, "long scan: wrong row %s%s", "", "");
        j->tensors_seen++;
        j->sum += dr_sum(c->data, c->nbytes);
    }
    sts_scan_close(s);
    sp.long_form = 0;
    sp.with_data = 0;
    if (sts_scan_open(j->ds, &sp, &s, &e) != STS_OK) { job_fail(j, "wide scan_open: %s%s", e.message, ""); return; }
    for (;;) {
        if (sts_scan_next(s, &c, &nc, &e) != STS_OK) { job_fail(j, "wide scan_next: %s%s", e.message, ""); break; }
        if (!nc) break;
        if (c[0].file < sp.file_begin || c[0].file >= sp.file_end) job_fail(j, "wide scan: wrong file%s%s", "", "");
        j->rows_seen++;
    }
    sts_scan_close(s);
}
static void *worker(void *arg) {
    job *j = (job *)arg;
    tu_rng rng;
    rng.s = 0x1234u + (uint64_t)j->id * 977u;
    pthread_barrier_wait(j->start);
    do_gets(j, &rng, 1 + (int)tu_below(&rng, 3));  /* everyone at once: the first maps race */
    if (j->scan) do_scan(j);
    do_gets(j, &rng, j->gets);
    return NULL;
}
/* Runs NTHREADS jobs on ds; returns the summed results (and fails on any thread's failure). */
static void run_jobs(const sts_dataset *ds, uint32_t tasks, uint32_t rows, int lastwin, int gets, int scan, size_t *tensors, size_t *wide_rows, uint64_t *sum) {
    pthread_t th[NTHREADS];
    job jobs[NTHREADS];
    pthread_barrier_t start;
    int i;
    assert_int_equal(pthread_barrier_init(&start, NULL, NTHREADS), 0);
    for (i = 0; i < NTHREADS; i++) {
        memset(&jobs[i], 0, sizeof jobs[i]);
        jobs[i].ds = ds; jobs[i].start = &start; jobs[i].id = i; jobs[i].gets = gets; jobs[i].scan = scan;
        jobs[i].tasks = tasks; jobs[i].rows = rows; jobs[i].lastwin = lastwin;
        assert_int_equal(pthread_create(&th[i], NULL, worker, &jobs[i]), 0);
    }
    for (i = 0; i < NTHREADS; i++) assert_int_equal(pthread_join(th[i], NULL), 0);
    pthread_barrier_destroy(&start);
    *tensors = *wide_rows = 0;
    *sum = 0;
    for (i = 0; i < NTHREADS; i++) {
        if (jobs[i].bad) fail_msg("thread %d: %d failure(s), the first: %s", i, jobs[i].bad, jobs[i].why);
        *tensors += jobs[i].tensors_seen;
        *wide_rows += jobs[i].rows_seen;
        *sum += jobs[i].sum;
    }
}

static void threads_case(int no_index) {
    int rounds = tu_quick() ? 2 : 40, gets = tu_quick() ? 200 : 4000, round;
    uint64_t want_sum = 0;
    {   /* the whole dataset, one thread */
        sts_dataset *ds = dr_open(g_kv, no_index);
        sts_scan_spec sp;
        dr_rows rs;
        sts_error e;
        size_t i;
        memset(&sp, 0, sizeof sp);
        sp.with_data = 1;
        DR_OK(dr_long_scan(ds, &sp, &rs, &e));
        assert_int_equal(rs.n, 2 * g_tasks * g_rows);
        for (i = 0; i < rs.n; i++) want_sum += rs.r[i].sum;
        dr_rows_free(&rs);
        sts_dataset_close(ds);
    }
    for (round = 0; round < rounds; round++) {
        sts_dataset *ds = dr_open(g_kv, no_index);
        size_t tensors, wide;
        uint64_t sum;
        run_jobs(ds, g_tasks, g_rows, 0, gets, 1, &tensors, &wide, &sum);
        assert_int_equal(tensors, 2 * g_tasks * g_rows);
        assert_int_equal(wide, g_tasks);
        assert_true(sum == want_sum);
        assert_true(sts_dataset_stats(ds).files_mapped <= g_tasks);
        sts_dataset_close(ds);
    }
}
static void test_threads_index(void **state) { (void)state; threads_case(0); }
static void test_threads_no_index(void **state) { (void)state; threads_case(1); }

static void test_threads_last_win(void **state) {
    int rounds = tu_quick() ? 2 : 40, round, no_index;
    (void)state;
    for (no_index = 0; no_index < 2; no_index++)
        for (round = 0; round < rounds; round++) {
            sts_dataset *ds = dr_open(g_lw, no_index);
            size_t tensors, wide;
            uint64_t sum;
            run_jobs(ds, 6, 4, 1, tu_quick() ? 100 : 2000, 0, &tensors, &wide, &sum);
            assert_true(sts_dataset_stats(ds).files_mapped <= 6);
            sts_dataset_close(ds);
        }
}

/* A file whose header disagrees with one of its index entries: the first lookups with data of
   every file race (each file is checked against its entries once, the verdict published by CAS).
   Every thread must get the DATASET error for the stale key, every time, and the right bytes for
   every other key, the stale key's file included. */
typedef struct bjob {
    const sts_dataset *ds;
    pthread_barrier_t *start;
    int id, gets;
    int bad, stale_seen;
    char why[600];
} bjob;
static void *bad_worker(void *arg) {
    bjob *j = (bjob *)arg;
    tu_rng rng;
    int i;
    rng.s = 0x777u + (uint64_t)j->id * 131u;
    pthread_barrier_wait(j->start);
    for (i = 0; i < j->gets; i++) {
        uint32_t t = tu_below(&rng, g_tasks), r = tu_below(&rng, g_rows);
        int with_data = tu_below(&rng, 5) != 0;
        char key[64];
        sts_view v;
        sts_error e;
        sts_result res;
        if (tu_below(&rng, 6) == 0) {  /* the stale entry */
            res = sts_dataset_get(j->ds, "ghost__img", 10, with_data, &v, &e);
            if (with_data ? (res != STS_ERR_DATASET || e.rule != STS_RULE_DATASET_INDEX || !strstr(e.message, "ghost__img")) : (res != STS_OK || v.file != 3)) {
                if (!j->bad) snprintf(j->why, sizeof j->why, "ghost__img (data %d): %s: %s", with_data, sts_result_name(res), e.message);
                j->bad++;
            }
            j->stale_seen++;
            continue;
        }
        if (t == 3 && r == 2) r = 1;  /* k003_002__img is now ghost__img in the index */
        dr_kv_key(key, sizeof key, t, r);
        strcat(key, tu_below(&rng, 2) ? "__img" : "__emb");
        res = sts_dataset_get(j->ds, key, strlen(key), with_data, &v, &e);
        if (res != STS_OK || v.file != t || !kv_view_ok(&v, t, r) || (with_data && !v.data)) {
            if (!j->bad) snprintf(j->why, sizeof j->why, "get %s: %s: %s", key, sts_result_name(res), e.message);
            j->bad++;
        }
    }
    return NULL;
}
static void test_threads_stale_entry(void **state) {
    int rounds = tu_quick() ? 3 : 40, round, i;
    char p[512];
    (void)state;
    tf_join(p, sizeof p, g_bad, "_tensor_index.json");
    for (round = 0; round < rounds; round++) {
        sts_dataset *ds = dr_open(g_bad, 0);
        pthread_t th[NTHREADS];
        bjob jobs[NTHREADS];
        pthread_barrier_t start;
        int stale = 0;
        assert_int_equal(pthread_barrier_init(&start, NULL, NTHREADS), 0);
        for (i = 0; i < NTHREADS; i++) {
            memset(&jobs[i], 0, sizeof jobs[i]);
            jobs[i].ds = ds; jobs[i].start = &start; jobs[i].id = i + round * NTHREADS; jobs[i].gets = tu_quick() ? 150 : 1500;
            assert_int_equal(pthread_create(&th[i], NULL, bad_worker, &jobs[i]), 0);
        }
        for (i = 0; i < NTHREADS; i++) assert_int_equal(pthread_join(th[i], NULL), 0);
        pthread_barrier_destroy(&start);
        for (i = 0; i < NTHREADS; i++) {
            if (jobs[i].bad) fail_msg("thread %d: %d failure(s), the first: %s", i, jobs[i].bad, jobs[i].why);
            stale += jobs[i].stale_seen;
        }
        assert_true(stale > 0);
        assert_true(sts_dataset_stats(ds).files_mapped <= g_tasks);
        sts_dataset_close(ds);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_threads_index),
        cmocka_unit_test(test_threads_no_index),
        cmocka_unit_test(test_threads_last_win),
        cmocka_unit_test(test_threads_stale_entry),
    };
    return cmocka_run_group_tests(tests, setup_root, teardown_root);
}
