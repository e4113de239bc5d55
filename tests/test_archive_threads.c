/* test_archive_threads.c - layer 10: an archive shared by threads (SPECIFICATION 14.3, Threads).
   Built and run plain, under ASan+UBSan and valgrind (UNIT_SRCS) and under ThreadSanitizer
   (make test-tsan-archive).
   - a sharded checkpoint freshly opened each round, so the first touches of its lazy shards race
     (each shard is published once: every thread sees the same view pointer for a tensor);
   - a single safetensors file as a mapped path, as bytes and through a callback source (which
     counts requests atomically);
   8 threads find, view, read windows, run cursors, materialise (copies, wraps, BF16 -> F32, a
   right and a wrong digest) and hash tensors, different ones and the same "hot" one at once.
   Every result is checked against the values the tensors were written with and their digests.
   Threads never call cmocka: they count failures and the main thread checks. */
#define _POSIX_C_SOURCE 200809L
#ifndef STS_TEST_LINKED  /* the Makefile links tests/sts_impl.c's object instead */
#define STS_IMPLEMENTATION
#endif
#include "../safetensors_spark.h"
#include "test_dataset_read_util.h"
#include "archive_util.h"
#include <pthread.h>

#define NTHREADS 8
#define NSHARDS 8
#define PER_SHARD 4
#define NT (NSHARDS * PER_SHARD)   /* tensors of the checkpoint; the single file has the same ones */

static char g_root[64], g_ckpt[256], g_single[256];
static uint8_t *g_single_bytes;
static size_t g_single_size;
static uint8_t g_digest[NT][32];

/* Tensor k: even k F32 [16, 8] of k * 1000 + i, odd k BF16 [8, 8] of 0x3F80 + 7k + i. */
static void t_name(char *buf, size_t cap, int k) { snprintf(buf, cap, "layer.%d.w%d", k / PER_SHARD, k % PER_SHARD); }
static sts_dtype t_dtype(int k) { return k % 2 ? STS_DTYPE_BF16 : STS_DTYPE_F32; }
static uint64_t t_numel(int k) { return k % 2 ? 64 : 128; }
static uint64_t t_nbytes(int k) { return k % 2 ? 128 : 512; }
static void t_fill(int k, uint8_t *p) {
    uint64_t i;
    for (i = 0; i < t_numel(k); i++) {
        if (k % 2) tu_st16(p + 2 * i, (uint16_t)(0x3F80 + 7 * k + (int)i));
        else tu_stf32(p + 4 * i, (float)(k * 1000 + (int)i));
    }
}
static float t_f32(int k, uint64_t i) {  /* element i as F32 */
    if (k % 2) {
        uint32_t u = (uint32_t)(0x3F80 + 7 * k + (int)i) << 16;
        float f;
        memcpy(&f, &u, 4);
        return f;
    }
    return (float)(k * 1000 + (int)i);
}

static void write_tensors(const char *path, int first, int n) {
    sts_tensor_spec sp[NT];
    uint8_t data[NT][512];
    uint64_t shapes[NT][2];
    char names[NT][32];
    sts_error e;
    int k;
    memset(sp, 0, sizeof sp);
    for (k = 0; k < n; k++) {
        int t = first + k;
        t_name(names[k], sizeof names[k], t);
        t_fill(t, data[k]);
        shapes[k][0] = t % 2 ? 8 : 16;
        shapes[k][1] = 8;
        sp[k].name = names[k]; sp[k].name_len = strlen(names[k]); sp[k].dtype = t_dtype(t);
        sp[k].rank = 2; sp[k].shape = shapes[k]; sp[k].data = data[k]; sp[k].data_size = t_nbytes(t);
    }
    DR_OK(sts_write_path(path, sp, (size_t)n, NULL, 0, NULL, &e));
}
static int setup(void **state) {
    char p[512], names[NT][32], files[NSHARDS][48];
    ta_wm map[NT];
    tu_sb b = { 0, 0, 0 };
    int s, k;
    (void)state;
    tf_tmpdir(g_root, sizeof g_root);
    tf_join(g_ckpt, sizeof g_ckpt, g_root, "ckpt");
    mkdir(g_ckpt, 0755);
    for (s = 0; s < NSHARDS; s++) {
        snprintf(files[s], sizeof files[s], "model-%05d-of-%05d.safetensors", s + 1, NSHARDS);
        tf_join(p, sizeof p, g_ckpt, files[s]);
        write_tensors(p, s * PER_SHARD, PER_SHARD);
    }
    for (k = 0; k < NT; k++) {
        uint8_t data[512];
        t_name(names[k], sizeof names[k], k);
        map[k].name = names[k];
        map[k].file = files[k / PER_SHARD];
        t_fill(k, data);
        sts_sha256_memory(data, (size_t)t_nbytes(k), g_digest[k]);
    }
    ta_hf_index(&b, 0, NULL, map, NT);
    tf_join(p, sizeof p, g_ckpt, "model.safetensors.index.json");
    tf_write(p, b.p, b.n);
    tu_sb_free(&b);
    tf_join(g_single, sizeof g_single, g_root, "single.safetensors");
    write_tensors(g_single, 0, NT);
    g_single_bytes = tf_read(g_single, &g_single_size);
    return 0;
}
static int teardown(void **state) {
    (void)state;
    free(g_single_bytes);
    tf_rmtree(g_root);
    return 0;
}

typedef struct job {
    const sts_archive *a;
    pthread_barrier_t *start;
    int id, ops, mapped;            /* mapped: views (mapped or in memory, and this host little-endian) */
    const void *views[NT];          /* the view each tensor had (mapped archives) */
    long bad, done;
    char why[300];
} job;
static void job_fail(job *j, const char *what, int k, const sts_error *e) {
    if (!j->bad++) snprintf(j->why, sizeof j->why, "%s of tensor %d: %s", what, k, e ? e->message : "wrong bytes");
}
static int bytes_ok(int k, const uint8_t *p, uint64_t off, uint64_t n) {  /* the stored (little-endian) bytes */
    uint8_t want[512];
    t_fill(k, want);
    return memcmp(p, want + off, (size_t)n) == 0;
}
static int host_ok(int k, const uint8_t *p) {  /* a copy: elements in the host's byte order */
    uint8_t want[512];
    t_fill(k, want);
    tu_le_copy(want, want, (size_t)t_numel(k), k % 2 ? 2 : 4);
    return memcmp(p, want, (size_t)t_nbytes(k)) == 0;
}
static void one_op(job *j, tu_rng *rng) {
    int k = tu_below(rng, 4) == 0 ? 5 : (int)tu_below(rng, NT);  /* a hot tensor, and the others */
    int op = (int)tu_below(rng, 7);
    char name[32];
    const sts_tensor_desc *d = NULL;
    sts_error e;
    t_name(name, sizeof name, k);
    if (sts_archive_find(j->a, name, strlen(name), &d, &e) != STS_OK) { job_fail(j, "find", k, &e); return; }
    if (d->nbytes != t_nbytes(k) || d->type->dtype != t_dtype(k) || d->rank != 2) { job_fail(j, "descriptor", k, NULL); return; }
    switch (op) {
    case 0: {  /* a view: the same pointer in every thread */
        const void *v = NULL;
        sts_result r = sts_archive_view(j->a, d, &v, &e);
        if (!j->mapped) { if (r != STS_ERR_UNSUPPORTED || e.rule != STS_RULE_VIEW) job_fail(j, "no view", k, &e); break; }
        if (r != STS_OK) { job_fail(j, "view", k, &e); break; }
        if (!bytes_ok(k, (const uint8_t *)v, 0, d->nbytes)) job_fail(j, "view bytes", k, NULL);
        if (j->views[k] && j->views[k] != v) job_fail(j, "view pointer changed", k, NULL);
        j->views[k] = v;
        break;
    }
    case 1: {  /* a window */
        uint8_t buf[512];
        uint64_t off = tu_below(rng, (uint32_t)d->nbytes), len = tu_below(rng, (uint32_t)(d->nbytes - off + 1));
        if (sts_archive_read(j->a, d, off, buf, (size_t)len, &e) != STS_OK) { job_fail(j, "read", k, &e); break; }
        if (!bytes_ok(k, buf, off, len)) job_fail(j, "read bytes", k, NULL);
        break;
    }
    case 2: {  /* a cursor of small chunks with the digest */
        sts_cursor *c;
        const void *chunk;
        size_t len;
        uint64_t at = 0;
        if (sts_cursor_open(j->a, d, 0, d->nbytes, 1 + tu_below(rng, 200), g_digest[k], &c, &e) != STS_OK) { job_fail(j, "cursor", k, &e); break; }
        for (;;) {
            if (sts_cursor_next(c, &chunk, &len, &e) != STS_OK) { job_fail(j, "cursor next", k, &e); break; }
            if (!len) break;
            if (!bytes_ok(k, (const uint8_t *)chunk, at, len)) { job_fail(j, "cursor bytes", k, NULL); break; }
            at += len;
        }
        sts_cursor_close(c);
        if (at != d->nbytes) job_fail(j, "cursor length", k, NULL);
        break;
    }
    case 3: case 4: {  /* materialise: wrap or copy (right digest), or BF16 -> F32 */
        ta_fac f;
        sts_factory fac;
        sts_materialize_options mo;
        sts_materialized m;
        memset(&f, 0, sizeof f);
        f.wrap_answer = (int)tu_below(rng, 2);
        fac = ta_factory(&f);
        memset(&mo, 0, sizeof mo);
        mo.sha256 = g_digest[k];
        if (op == 4) { mo.convert = 1; mo.target = STS_DTYPE_F32; }
        if (sts_archive_materialize(j->a, d, &fac, &mo, &m, &e) != STS_OK) { job_fail(j, "materialize", k, &e); break; }
        if (op == 4) {
            uint64_t i;
            for (i = 0; i < d->numel; i++) if (((const float *)m.data)[i] != t_f32(k, i)) { job_fail(j, "converted value", k, NULL); break; }
        } else if (!host_ok(k, (const uint8_t *)m.data)) {
            job_fail(j, "materialized bytes", k, NULL);
        }
        /* converting F32 to F32 is no conversion: it may wrap */
        if (m.wrapped != ((op == 3 || t_dtype(k) == STS_DTYPE_F32) && j->mapped && f.wrap_answer)) job_fail(j, "wrapped", k, NULL);
        ta_unmaterialize(&m);
        break;
    }
    case 5: {  /* a wrong digest: refused, what was allocated released */
        ta_fac f;
        sts_factory fac;
        sts_materialize_options mo;
        sts_materialized m;
        uint8_t wrong[32];
        memcpy(wrong, g_digest[k], 32);
        wrong[31] ^= 0x80;
        memset(&f, 0, sizeof f);
        fac = ta_factory(&f);
        memset(&mo, 0, sizeof mo);
        mo.sha256 = wrong;
        if (sts_archive_materialize(j->a, d, &fac, &mo, &m, &e) != STS_ERR_CHECKSUM || e.rule != STS_RULE_SHA256) job_fail(j, "wrong digest", k, &e);
        if (f.allocs != f.releases) job_fail(j, "release", k, NULL);
        break;
    }
    default: {  /* the tensor's digest */
        uint8_t dig[32];
        if (sts_archive_sha256(j->a, d, dig, &e) != STS_OK) { job_fail(j, "sha256", k, &e); break; }
        if (memcmp(dig, g_digest[k], 32) != 0) job_fail(j, "digest", k, NULL);
        break;
    }
    }
    j->done++;
}
static void *worker(void *arg) {
    job *j = (job *)arg;
    tu_rng rng;
    int i;
    rng.s = 0xA5C4u + (uint64_t)j->id * 7919u;
    pthread_barrier_wait(j->start);
    for (i = 0; i < j->ops; i++) one_op(j, &rng);
    return NULL;
}
/* NTHREADS jobs on a; fails on any thread's failure; views of mapped archives must agree. */
static void run_jobs(const sts_archive *a, int mapped, int ops, int round) {
    pthread_t th[NTHREADS];
    job jobs[NTHREADS];
    pthread_barrier_t start;
    int i, k;
    assert_int_equal(pthread_barrier_init(&start, NULL, NTHREADS), 0);
    for (i = 0; i < NTHREADS; i++) {
        memset(&jobs[i], 0, sizeof jobs[i]);
        jobs[i].a = a; jobs[i].start = &start; jobs[i].id = i + NTHREADS * round; jobs[i].ops = ops; jobs[i].mapped = mapped;
        assert_int_equal(pthread_create(&th[i], NULL, worker, &jobs[i]), 0);
    }
    for (i = 0; i < NTHREADS; i++) assert_int_equal(pthread_join(th[i], NULL), 0);
    pthread_barrier_destroy(&start);
    for (i = 0; i < NTHREADS; i++) {
        if (jobs[i].bad) fail_msg("thread %d: %ld failure(s), the first: %s", i, jobs[i].bad, jobs[i].why);
        assert_int_equal(jobs[i].done, ops);
    }
    for (k = 0; k < NT; k++)  /* one published copy of each shard: one pointer per tensor */
        for (i = 1; i < NTHREADS; i++)
            if (jobs[i].views[k] && jobs[0].views[k] && jobs[i].views[k] != jobs[0].views[k])
                fail_msg("tensor %d: threads 0 and %d saw different views", k, i);
}

static void test_threads_sharded(void **state) {
    int rounds = tu_quick() ? 2 : 12, ops = tu_quick() ? 60 : 400, round;
    (void)state;
    for (round = 0; round < rounds; round++) {
        sts_input in = ta_in_path(g_ckpt, 0);
        sts_archive *a = NULL;
        sts_archive_stats st;
        sts_error e;
        DR_OK(sts_archive_open(NULL, &in, NULL, &a, &e));
        assert_int_equal(sts_archive_get_stats(a).files_opened, 1);
        run_jobs(a, !tu_big_endian(), ops, round);
        st = sts_archive_get_stats(a);  /* a shard may be opened by several racing threads: the losers' copies are dropped */
        assert_true(st.files_opened >= 1 + NSHARDS && st.files_opened <= 1 + NSHARDS * NTHREADS);
        sts_archive_close(a);
    }
}
static void test_threads_single(void **state) {
    int rounds = tu_quick() ? 1 : 3, ops = tu_quick() ? 60 : 400, round, how;
    (void)state;
    for (round = 0; round < rounds; round++)
        for (how = 0; how < 4; how++) {  /* mapped path, pread path, bytes, callback */
            sts_input in;
            sts_source src;
            ta_src s;
            sts_archive *a = NULL;
            sts_error e;
            if (how < 2) in = ta_in_path(g_single, how);
            else if (how == 2) in = ta_in_bytes(g_single_bytes, g_single_size);
            else { src = ta_src_init(&s, g_single_bytes, g_single_size); in = ta_in_source(&src); }
            DR_OK(sts_archive_open(NULL, &in, NULL, &a, &e));
            run_jobs(a, (how == 0 || how == 2) && !tu_big_endian(), ops, round * 4 + how);
            if (how == 3) {
                sts_archive_stats st = sts_archive_get_stats(a);
                assert_int_equal(s.bad, 0);
                assert_int_equal(st.reads, s.requests);  /* the counters are atomic: none lost */
                assert_int_equal(st.bytes_read, s.bytes_read);
            }
            sts_archive_close(a);
        }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_threads_sharded),
        cmocka_unit_test(test_threads_single),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
