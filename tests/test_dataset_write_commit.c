/* test_dataset_write_commit.c - the dataset commit's key index and index files on several threads
   (sts_write_config.commit_threads).

   One job's folder, before its commit, is copied whole (shards, the job's lock, everything) into
   a few folders; each copy is committed with a different number of threads (1, 2, 3, 7, 0 = by
   size, and 64 but under STS_TEST_LEVEL=quick, where valgrind makes threads slow). The index
   files and the manifest must be byte for byte the same in every copy,
   but for the dataset_id each commit draws. The keys mix names held escaped and unescaped in the
   shards' headers, commas (quoted in the CSV), non-ASCII, shapes that change and repeat, and in
   lastWin mode keys that lose (an entry skipped inside a slice and at a slice's edge). Batch mode
   (keys "shard/column") too. Option checks: commit_threads above 64 is refused, as a string and
   typed. */
#define _POSIX_C_SOURCE 200809L
#ifndef STS_TEST_LINKED
#define STS_IMPLEMENTATION
#endif
#include "../safetensors_spark.h"
#include "dataset_write_util.h"

static const sts_column KV_SCHEMA[3] = { { "key", STS_VALUE_STRING, STS_DTYPE_U8 }, { "v", STS_VALUE_ARRAY, STS_DTYPE_F32 },
                                         { "w", STS_VALUE_ARRAY, STS_DTYPE_I32 } };

static void copy_file(const char *from, const char *to) {
    size_t n;
    uint8_t *b = tf_read(from, &n);
    tf_write(to, b, n);
    free(b);
}
/* Every entry of a flat folder (hidden ones included) into another, new folder. */
static void copy_folder(const char *from, const char *to) {
    tf_snap s = tf_snapshot(from, 0);
    size_t i;
    assert_int_equal(mkdir(to, 0755), 0);
    for (i = 0; i < s.n; i++) {
        char a[512], b[512];
        assert_true(s.e[i].size >= 0);  /* no sub-folders in a job's folder */
        tf_join(a, sizeof a, from, s.e[i].name);
        tf_join(b, sizeof b, to, s.e[i].name);
        copy_file(a, b);
    }
    tf_snap_free(&s);
}
/* A file's bytes with every dataset_id value ("dataset_id":"<36>" or "dataset_id": "<36>") blanked. */
static uint8_t *read_blanked(const char *dir, const char *name, size_t *n) {
    char p[512];
    uint8_t *b;
    size_t i;
    tf_join(p, sizeof p, dir, name);
    b = tf_read(p, n);
    for (i = 0; i + 14 < *n; i++)
        if (memcmp(b + i, "\"dataset_id\":", 13) == 0) {
            size_t q = i + 13;
            while (q < *n && b[q] == ' ') q++;
            assert_true(q + 38 <= *n && b[q] == '"' && b[q + 37] == '"');
            memset(b + q + 1, 'x', 36);
        }
    return b;
}
static void same_files(const char *a, const char *b, const char *label) {
    static const char *const files[3] = { "_tensor_index.csv", "_tensor_index.json", "dataset_manifest.json" };
    int i;
    for (i = 0; i < 3; i++) {
        size_t na, nb;
        uint8_t *x = read_blanked(a, files[i], &na), *y = read_blanked(b, files[i], &nb);
        if (na != nb || memcmp(x, y, na) != 0) {
            size_t at = 0;
            while (at < na && at < nb && x[at] == y[at]) at++;
            fail_msg("%s: %s differs from the one-thread commit's at byte %zu (%zu and %zu bytes)", label, files[i], at,
                     na, nb);
        }
        free(x);
        free(y);
    }
}

/* A fresh, empty root folder, root/job as the job's folder, and m and c cleared. */
static void fresh_root(char *root, size_t root_cap, char *job, size_t job_cap, du_msgs *m, sts_write_config *c) {
    memset(m, 0, sizeof *m);
    memset(c, 0, sizeof *c);
    tf_tmpdir(root, root_cap);
    tf_rmtree(root);
    assert_int_equal(mkdir(root, 0755), 0);
    snprintf(job, job_cap, "%s/job", root);
}
/* A task's commit message into m, and the writer closed. */
static void task_done(sts_task_writer *w, du_msgs *m) {
    sts_error e;
    DU_OK("task commit", sts_task_commit(w, &m->m[m->n], &m->len[m->n], &e), e);
    m->n++;
    sts_task_close(w);
}

/* The JSON index's metadata against its entries: tensor_count is the number of entries (and
   `tensors`), total_size the sum of their data_offsets' spans. */
static void index_totals(const char *dir, uint64_t tensors, const char *label) {
    size_t n, i;
    uint8_t *b = read_blanked(dir, "_tensor_index.json", &n);
    const char *s = (const char *)b, *p;
    unsigned long long total = 0, count = 0, want_total, want_count;
    b = (uint8_t *)realloc(b, n + 1);
    assert_non_null(b);
    b[n] = 0;
    s = (const char *)b;
    assert_non_null(p = strstr(s, "\"total_size\":"));
    assert_int_equal(sscanf(p, "\"total_size\":%llu,\"tensor_count\":%llu", &want_total, &want_count), 2);
    /* strtoull, not sscanf: glibc's sscanf measures the rest of its string at each call */
    for (i = 0; (p = strstr(s + i, "\"data_offsets\":[")) != NULL; i = (size_t)(p - s) + 1) {
        char *end;
        unsigned long long a = strtoull(p + 16, &end, 10), z;
        assert_true(*end == ',');
        z = strtoull(end + 1, &end, 10);
        assert_true(*end == ']');
        total += z - a;
        count++;
    }
    if (count != want_count || total != want_total || count != tensors)
        fail_msg("%s: the index holds %llu entries of %llu bytes; its metadata says %llu of %llu, the summary %llu", label,
                 count, total, want_count, want_total, (unsigned long long)tensors);
    free(b);
}

/* Writes one job (two tasks) into root; messages in m. */
static void write_kv_job(const char *root, sts_write_config *c, du_msgs *m, int last_win) {
    sts_error e;
    uint32_t t;
    DU_OK("prepare", sts_dataset_prepare(root, c, KV_SCHEMA, 3, NULL, &e), e);
    for (t = 0; t < 2; t++) {
        sts_task_writer *w;
        int i;
        DU_OK("open", sts_task_open(root, t * 3 + 1, c, KV_SCHEMA, 3, NULL, &w, &e), e);
        for (i = 0; i < 700; i++) {
            char key[64];
            float v[6];
            int32_t wv[3];
            sts_value x[3];
            int j, kind = i % 5;
            if (last_win) snprintf(key, sizeof key, "k%03d", (i * 7) % 400);  /* repeats, within and across tasks */
            else if (kind == 0) snprintf(key, sizeof key, "t%u/r%04d \"q\"", t, i);  /* escaped in the header */
            else if (kind == 1) snprintf(key, sizeof key, "t%u,r%04d", t, i);       /* a comma: quoted in the CSV */
            else if (kind == 2) snprintf(key, sizeof key, "t%u\xc3\xa9r%04d", t, i); /* non-ASCII */
            else snprintf(key, sizeof key, "t%ur%04d", t, i);
            for (j = 0; j < 6; j++) v[j] = (float)(i * 6 + j);
            for (j = 0; j < 3; j++) wv[j] = i - j;
            memset(x, 0, sizeof x);
            x[0].data = key; x[0].size = strlen(key);
            x[1].data = v; x[1].size = (uint64_t)(1 + (i / 3) % 6);  /* shapes that repeat, then change */
            x[2].data = wv; x[2].size = 3;
            DU_OK("row", sts_task_write(w, x, &e), e);
        }
        task_done(w, m);
    }
}
/* A fresh root folder holding one KV job, written but not committed, in root/job. */
static void kv_job_in(char *root, size_t root_cap, char *job, size_t job_cap, sts_write_config *c, du_msgs *m,
                      sts_dtype dtype, uint64_t shard_bytes, int last_win) {
    fresh_root(root, root_cap, job, job_cap, m, c);
    c->name_col = "key";
    c->has_dtype = 1;
    c->dtype = dtype;
    c->generate_index = 1;
    c->no_fsync = 1;
    c->target_shard_bytes = shard_bytes;  /* many shards */
    c->duplicates = last_win ? STS_DUPLICATES_LAST_WIN : STS_DUPLICATES_FAIL;
    write_kv_job(job, c, m, last_win);
}
static void threads_agree(int last_win) {
    static const uint32_t threads[6] = { 1, 2, 3, 7, 0, 64 };  /* quick (valgrind): not 64 */
    char root[64], job[160], copies[6][128];
    sts_write_config c;
    du_msgs m;
    sts_error e;
    int i;
    const char *label = last_win ? "lastWin" : "fail";
    kv_job_in(root, sizeof root, job, sizeof job, &c, &m, STS_DTYPE_F16, 9000, last_win);
    for (i = 0; i < (tu_quick() ? 5 : 6); i++) {
        snprintf(copies[i], sizeof copies[i], "%s/t%d", root, i);
        copy_folder(job, copies[i]);
    }
    for (i = 0; i < (tu_quick() ? 5 : 6); i++) {
        sts_dataset_summary sum;
        char what[64];
        c.commit_threads = threads[i];
        snprintf(what, sizeof what, "%s, commit_threads=%u", label, (unsigned)threads[i]);
        DU_OK(what, du_commit_all(copies[i], &c, &m, NULL, &sum, &e), e);
        assert_true(sum.shards > 8);
        /* fail: 2 tasks x 700 keys x 2 columns; lastWin: 400 keys x 2 columns win */
        assert_int_equal(sum.tensors, last_win ? 800 : 2800);
        index_totals(copies[i], sum.tensors, what);
        if (i) same_files(copies[0], copies[i], what);
    }
    du_msgs_free(&m);
    tf_rmtree(root);
}
static void test_kv_threads_agree(void **state) { (void)state; threads_agree(0); }
static void test_kv_last_win_threads_agree(void **state) { (void)state; threads_agree(1); }

/* duplicatesStrategy=fail, keys repeated across tasks in three shards: every thread count reports
   the same duplicate, the first in path order (a0900, written before a0500 and a0010 by the later
   task, so in an earlier shard of it), and publishes nothing. */
static void test_kv_fail_threads_agree(void **state) {
    static const uint32_t threads[6] = { 1, 2, 3, 7, 0, 64 };  /* quick (valgrind): not 64 */
    char root[64], job[160], copy[192], p[256];
    sts_write_config c;
    du_msgs m;
    sts_error e, first;
    uint32_t t;
    int i;
    (void)state;
    memset(&first, 0, sizeof first);
    fresh_root(root, sizeof root, job, sizeof job, &m, &c);
    c.name_col = "key";
    c.has_dtype = 1; c.dtype = STS_DTYPE_F32;
    c.generate_index = 1;
    c.no_fsync = 1;
    c.target_shard_bytes = 9000;
    DU_OK("prepare", sts_dataset_prepare(job, &c, KV_SCHEMA, 3, NULL, &e), e);
    for (t = 1; t <= 4; t += 3) {
        sts_task_writer *w;
        int r;
        DU_OK("open", sts_task_open(job, t, &c, KV_SCHEMA, 3, NULL, &w, &e), e);
        for (r = 0; r < 1000; r++) {
            char key[16];
            float v[2] = { (float)r, (float)t };
            int32_t wv[3] = { r, 1, 2 };
            sts_value x[3];
            if (t == 4 && (r == 100 || r == 300 || r == 600))
                snprintf(key, sizeof key, "a%04d", r == 100 ? 900 : r == 300 ? 500 : 10);
            else snprintf(key, sizeof key, "%c%04d", t == 1 ? 'a' : 'b', r);
            memset(x, 0, sizeof x);
            x[0].data = key; x[0].size = strlen(key);
            x[1].data = v; x[1].size = 2;
            x[2].data = wv; x[2].size = 3;
            DU_OK("row", sts_task_write(w, x, &e), e);
        }
        task_done(w, &m);
    }
    for (i = 0; i < (tu_quick() ? 5 : 6); i++) {
        char what[64];
        snprintf(copy, sizeof copy, "%s/t%d", root, i);
        copy_folder(job, copy);
        c.commit_threads = threads[i];
        snprintf(what, sizeof what, "fail, commit_threads=%u", (unsigned)threads[i]);
        tu_err_check(what, du_commit_all(copy, &c, &m, NULL, NULL, &e), &e, STS_ERR_DUPLICATE_KEY, STS_RULE_DUPLICATE_KEY,
                     "a0900__", "duplicatesStrategy=fail", (const char *)NULL);
        if (!i) first = e;
        else assert_string_equal(first.message, e.message);
        tf_join(p, sizeof p, copy, "dataset_manifest.json");
        assert_false(tf_exists(p));
    }
    du_msgs_free(&m);
    tf_rmtree(root);
}

static void test_batch_threads_agree(void **state) {
    static const uint32_t threads[3] = { 1, 4, 64 };  /* quick (valgrind): not 64 */
    static const sts_column schema[2] = { { "a", STS_VALUE_ARRAY, STS_DTYPE_F32 }, { "b,\"c\"", STS_VALUE_ARRAY, STS_DTYPE_I32 } };
    char root[64], job[160], copies[3][160];
    sts_write_config c;
    du_msgs m;
    sts_error e;
    int i, t;
    (void)state;
    fresh_root(root, sizeof root, job, sizeof job, &m, &c);
    c.batch_size = 3;
    c.has_dtype = 1; c.dtype = STS_DTYPE_I64;
    c.generate_index = 1;
    c.no_fsync = 1;
    DU_OK("prepare", sts_dataset_prepare(job, &c, schema, 2, NULL, &e), e);
    for (t = 0; t < 3; t++) {
        sts_task_writer *w;
        int r;
        DU_OK("open", sts_task_open(job, (uint32_t)t, &c, schema, 2, NULL, &w, &e), e);
        for (r = 0; r < 40; r++) {
            float a[2] = { (float)r, (float)t };
            int32_t b[2] = { r, -t };
            sts_value x[2];
            memset(x, 0, sizeof x);
            x[0].data = a; x[0].size = 2;
            x[1].data = b; x[1].size = 2;
            DU_OK("row", sts_task_write(w, x, &e), e);
        }
        task_done(w, &m);
    }
    for (i = 0; i < (tu_quick() ? 2 : 3); i++) {
        snprintf(copies[i], sizeof copies[i], "%s/t%d", root, i);
        copy_folder(job, copies[i]);
    }
    for (i = 0; i < (tu_quick() ? 2 : 3); i++) {
        char what[64];
        c.commit_threads = threads[i];
        snprintf(what, sizeof what, "batch, commit_threads=%u", (unsigned)threads[i]);
        DU_OK(what, du_commit_all(copies[i], &c, &m, NULL, NULL, &e), e);
        if (i) same_files(copies[0], copies[i], what);
    }
    du_msgs_free(&m);
    tf_rmtree(root);
}

/* Every allocation of a threaded commit refused in turn (STS_TEST_LEVEL=quick: the first 200,
   then every fifth): each attempt fails with NOMEM, frees all it took and leaves the folder
   committable; the one that succeeds writes the same files as a commit that met no failure. The allocator is not thread-safe (ThreadSanitizer would see the
   index threads use it: they must not). */
static void test_alloc_failures(void **state) {
    char root[64], job[160], ref[160];
    sts_write_config c;
    du_msgs m;
    sts_error e;
    tu_alloc al;
    sts_options o;
    long k;
    sts_result r = STS_ERR_NOMEM;
    (void)state;
    kv_job_in(root, sizeof root, job, sizeof job, &c, &m, STS_DTYPE_F32, 30000, 0);
    snprintf(ref, sizeof ref, "%s/ref", root);
    copy_folder(job, ref);
    c.commit_threads = 3;
    DU_OK("reference commit", du_commit_all(ref, &c, &m, NULL, NULL, &e), e);
    /* quick (valgrind, sanitizers): every allocation of the first 200, then every fifth */
    for (k = 1; k < 20000 && r != STS_OK; k += tu_quick() && k >= 200 ? 5 : 1) {
        o = tu_alloc_opts(&al, NULL);
        al.fail_at = k;
        r = du_commit_all(job, &c, &m, &o, NULL, &e);
        tu_alloc_check("commit with a refused allocation", &al);
        if (r != STS_OK) {
            char what[64];
            snprintf(what, sizeof what, "allocation %ld refused", k);
            assert_int_equal(al.failed, 1);
            tu_err_check(what, r, &e, STS_ERR_NOMEM, STS_RULE_ALLOC, (const char *)NULL);
        } else if (al.failed) fail_msg("allocation %ld was refused, yet the commit succeeded", k);
    }
    assert_int_equal(r, STS_OK);
    assert_true(k > 20);
    same_files(ref, job, "the commit after refused allocations");
    du_msgs_free(&m);
    tf_rmtree(root);
}

/* Two bad shards (a header byte changed, a file cut short) in copies of one job: the commit on
   four threads reports what the one-thread commit reports (the first bad shard in name order),
   and publishes nothing. */
static void test_bad_shards_threads(void **state) {
    char root[64], job[160], dirs[2][160];
    sts_write_config c;
    du_msgs m;
    sts_error e[2];
    sts_result r[2];
    int i;
    (void)state;
    kv_job_in(root, sizeof root, job, sizeof job, &c, &m, STS_DTYPE_F32, 9000, 0);
    for (i = 0; i < 2; i++) {
        tf_names n;
        char p[512];
        size_t len;
        uint8_t *b;
        snprintf(dirs[i], sizeof dirs[i], "%s/d%d", root, i);
        copy_folder(job, dirs[i]);
        n = du_list_shards(dirs[i]);
        assert_true(n.n > 12);
        tf_join(p, sizeof p, dirs[i], n.v[5]);  /* a header byte: '{' becomes '[' */
        b = tf_read(p, &len);
        b[8] = '[';
        tf_write(p, b, len);
        free(b);
        tf_join(p, sizeof p, dirs[i], n.v[11]);  /* cut short */
        b = tf_read(p, &len);
        tf_write(p, b, len - 3);
        free(b);
        tf_names_free(&n);
        c.commit_threads = i ? 4 : 1;
        r[i] = du_commit_all(dirs[i], &c, &m, NULL, NULL, &e[i]);
        tu_err_check("a bad shard", r[i], &e[i], STS_ERR_DATASET, STS_RULE_SHARD, (const char *)NULL);
        tf_join(p, sizeof p, dirs[i], "dataset_manifest.json");
        assert_false(tf_exists(p));
    }
    assert_int_equal(r[0], r[1]);
    assert_int_equal(e[0].rule, e[1].rule);
    assert_int_equal(e[0].offset, e[1].offset);
    assert_string_equal(e[0].message, e[1].message);
    du_msgs_free(&m);
    tf_rmtree(root);
}

static void test_option(void **state) {
    sts_write_config c;
    sts_error e;
    char root[64];
    du_msgs m;
    (void)state;
    memset(&c, 0, sizeof c);
    memset(&m, 0, sizeof m);
    assert_int_equal(sts_write_config_set(&c, "commit_threads", "7", &e), STS_OK);
    assert_int_equal(c.commit_threads, 7);
    assert_int_equal(sts_write_config_set(&c, "COMMIT_THREADS", "0", &e), STS_OK);
    assert_int_equal(c.commit_threads, 0);
    tu_err_check("65 as text", sts_write_config_set(&c, "commit_threads", "65", &e), &e, STS_ERR_OPTION, STS_RULE_OPTION,
                 "commit_threads", "65", (const char *)NULL);
    tu_err_check("-1 as text", sts_write_config_set(&c, "commit_threads", "-1", &e), &e, STS_ERR_OPTION, STS_RULE_OPTION,
                 "commit_threads", (const char *)NULL);
    assert_int_equal(c.commit_threads, 0);
    /* typed: refused where the options are first checked, and by the commit itself */
    tf_tmpdir(root, sizeof root);
    c.name_col = "key";
    c.has_dtype = 1; c.dtype = STS_DTYPE_F32;
    c.no_fsync = 1;
    c.commit_threads = 65;
    tu_err_check("65 typed, prepare", sts_dataset_prepare(root, &c, KV_SCHEMA, 3, NULL, &e), &e, STS_ERR_OPTION,
                 STS_RULE_OPTION, "commit_threads", "65", (const char *)NULL);
    c.commit_threads = 0;
    DU_OK("prepare", sts_dataset_prepare(root, &c, KV_SCHEMA, 3, NULL, &e), e);
    c.commit_threads = 65;
    tu_err_check("65 typed, commit", du_commit_all(root, &c, &m, NULL, NULL, &e), &e, STS_ERR_OPTION, STS_RULE_OPTION,
                 "commit_threads", "65", (const char *)NULL);
    c.commit_threads = 0;
    DU_OK("commit", du_commit_all(root, &c, &m, NULL, NULL, &e), e);
    tf_rmtree(root);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kv_threads_agree),
        cmocka_unit_test(test_kv_last_win_threads_agree),
        cmocka_unit_test(test_kv_fail_threads_agree),
        cmocka_unit_test(test_batch_threads_agree),
        cmocka_unit_test(test_alloc_failures),
        cmocka_unit_test(test_bad_shards_threads),
        cmocka_unit_test(test_option),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
