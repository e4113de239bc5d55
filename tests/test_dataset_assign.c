/* test_dataset_assign.c - shard assignment (sts_assign, sts_dataset_assign; issue 15).
   - round_robin exactly (i mod n), every count of shards and workers up to 40 x 12;
   - balance against a model written here the plain way (a scan of every worker's load for the
     least, the lower id on a tie), on random sample counts with zeros, repeats and values near
     2^64 (the loads saturate), and on more workers than shards;
   - the connector's errors: "num_workers must be > 0", an unknown strategy naming itself;
   - a KV dataset whose shards hold different numbers of samples: sts_dataset_file_order is the
     manifest's order (checked against the positions of the names in dataset_manifest.json's text),
     and sts_dataset_assign is the model over the shards in that order;
   - a folder without a manifest: round_robin in name order, balance refused with its reason. */
#define _POSIX_C_SOURCE 200809L
#ifndef STS_TEST_LINKED  /* the Makefile links tests/sts_impl.c's object instead */
#define STS_IMPLEMENTATION
#endif
#include "../safetensors_spark.h"
#include "test_dataset_read_util.h"

/* the model: for each shard in order, the worker with the least load; ties to the lower id */
static void model_balance(const uint64_t *samples, size_t n, uint32_t workers, uint32_t *owner) {
    uint64_t *load = (uint64_t *)calloc(workers, sizeof *load);
    size_t i;
    uint32_t w;
    assert_non_null(load);
    for (i = 0; i < n; i++) {
        uint32_t best = 0;
        for (w = 1; w < workers; w++)
            if (load[w] < load[best]) best = w;
        owner[i] = best;
        load[best] = samples[i] > UINT64_MAX - load[best] ? UINT64_MAX : load[best] + samples[i];
    }
    free(load);
}

static void test_round_robin(void **state) {
    uint32_t owner[40];
    size_t n, i;
    uint32_t w;
    sts_error e;
    (void)state;
    for (n = 0; n <= 40; n++)
        for (w = 1; w <= 12; w++) {
            memset(owner, 0xFF, sizeof owner);
            assert_int_equal(sts_assign(NULL, n, w, STS_ASSIGN_ROUND_ROBIN, owner, &e), STS_OK);
            for (i = 0; i < n; i++) assert_int_equal(owner[i], i % w);
            for (; i < 40; i++) assert_int_equal(owner[i], 0xFFFFFFFFu);  /* nothing past n written */
        }
}

static void test_balance(void **state) {
    enum { N = 300 };
    uint64_t samples[N];
    uint32_t got[N], want[N];
    sts_error e;
    tu_rng rng = { 15 };
    int round;
    (void)state;
    {   /* by hand: 10, 1, 1, 1, 10 over 2 workers */
        static const uint64_t s[5] = { 10, 1, 1, 1, 10 };
        static const uint32_t w[5] = { 0, 1, 1, 1, 1 };
        assert_int_equal(sts_assign(s, 5, 2, STS_ASSIGN_BALANCE, got, &e), STS_OK);
        assert_memory_equal(got, w, sizeof w);
    }
    {   /* equal shards go round robin; empty shards all go to worker 0 */
        static const uint64_t eq[6] = { 5, 5, 5, 5, 5, 5 }, zero[4] = { 0, 0, 0, 0 };
        size_t i;
        assert_int_equal(sts_assign(eq, 6, 4, STS_ASSIGN_BALANCE, got, &e), STS_OK);
        for (i = 0; i < 6; i++) assert_int_equal(got[i], i % 4);
        assert_int_equal(sts_assign(zero, 4, 3, STS_ASSIGN_BALANCE, got, &e), STS_OK);
        for (i = 0; i < 4; i++) assert_int_equal(got[i], 0);
    }
    for (round = 0; round < 400; round++) {
        size_t n = tu_next(&rng) % N + 1, i;
        uint32_t workers = (uint32_t)(round < 350 ? tu_next(&rng) % 40 + 1 : tu_next(&rng) % 1000 + n);  /* and more workers than shards */
        int kind = round % 4;
        for (i = 0; i < n; i++)
            samples[i] = kind == 0 ? tu_next(&rng) % 1000 : kind == 1 ? tu_next(&rng) % 3 : kind == 2 ? 7
                       : (tu_next(&rng) % 2 ? UINT64_MAX - tu_next(&rng) % 5 : tu_next(&rng) % 5);  /* saturating loads */
        model_balance(samples, n, workers, want);
        assert_int_equal(sts_assign(samples, n, workers, STS_ASSIGN_BALANCE, got, &e), STS_OK);
        if (memcmp(got, want, n * sizeof *got) != 0) {
            for (i = 0; i < n && got[i] == want[i]; i++) continue;
            fail_msg("round %d: %zu shards, %u workers: shard %zu went to %u, the model says %u", round, n, workers, i,
                     got[i], want[i]);
        }
        for (i = 0; i < n; i++) assert_true(got[i] < workers);
    }
    {   /* the largest worker count: only the first n can be chosen */
        static const uint64_t s[3] = { 1, 2, 3 };
        assert_int_equal(sts_assign(s, 3, UINT32_MAX, STS_ASSIGN_BALANCE, got, &e), STS_OK);
        assert_int_equal(got[0], 0); assert_int_equal(got[1], 1); assert_int_equal(got[2], 2);
    }
}

static void test_errors(void **state) {
    uint32_t owner[2];
    uint64_t s[2] = { 1, 2 };
    sts_assign_strategy st = STS_ASSIGN_ROUND_ROBIN;
    sts_error e;
    (void)state;
    tu_err_check("no workers", sts_assign(s, 2, 0, STS_ASSIGN_BALANCE, owner, &e), &e, STS_ERR_INVALID_ARGUMENT,
                 STS_RULE_ARGUMENT, "num_workers must be > 0", NULL);
    tu_err_check("unknown strategy", sts_assign_strategy_parse("zigzag", &st, &e), &e, STS_ERR_INVALID_ARGUMENT,
                 STS_RULE_ARGUMENT, "unknown strategy \"zigzag\"", NULL);
    assert_int_equal(st, STS_ASSIGN_ROUND_ROBIN);
    tu_err_check("strategy out of range", sts_assign(s, 2, 2, STS_ASSIGN_STRATEGY_COUNT, owner, &e), &e,
                 STS_ERR_INVALID_ARGUMENT, STS_RULE_ARGUMENT, "unknown strategy", NULL);
    tu_err_check("balance without samples", sts_assign(NULL, 2, 2, STS_ASSIGN_BALANCE, owner, &e), &e,
                 STS_ERR_INVALID_ARGUMENT, STS_RULE_ARGUMENT, NULL);
    assert_int_equal(sts_assign_strategy_parse("balance", &st, &e), STS_OK);
    assert_int_equal(st, STS_ASSIGN_BALANCE);
    assert_int_equal(sts_assign_strategy_parse("round_robin", &st, &e), STS_OK);
    assert_int_equal(st, STS_ASSIGN_ROUND_ROBIN);
    assert_string_equal(sts_assign_strategy_name(STS_ASSIGN_BALANCE), "balance");
    assert_string_equal(sts_assign_strategy_name(STS_ASSIGN_ROUND_ROBIN), "round_robin");
    assert_null(sts_assign_strategy_name(STS_ASSIGN_STRATEGY_COUNT));
    assert_int_equal(sts_assign(NULL, 0, 3, STS_ASSIGN_BALANCE, NULL, &e), STS_OK);  /* no shards */
}

/* A KV dataset of `tasks` shards, task t holding rows[t] samples. */
static void write_kv(const char *dir, const uint32_t *rows, uint32_t tasks) {
    sts_write_config c;
    sts_error e;
    char *msgs[16];
    size_t lens[16];
    uint32_t t, r;
    sts_dataset_summary sum;
    memset(&c, 0, sizeof c);
    c.name_col = "id";
    c.has_dtype = 1;
    c.dtype = STS_DTYPE_F32;
    c.no_fsync = 1;
    assert_true(tasks <= 16);
    DR_OK(sts_dataset_prepare(dir, &c, DR_KV_SCHEMA, 3, NULL, &e));
    for (t = 0; t < tasks; t++) {
        sts_task_writer *w;
        char key[64];
        DR_OK(sts_task_open(dir, t, &c, DR_KV_SCHEMA, 3, NULL, &w, &e));
        for (r = 0; r < rows[t]; r++) {
            dr_kv_key(key, sizeof key, t, r);
            dr_kv_put(w, key, t, r);
        }
        DR_OK(sts_task_commit(w, &msgs[t], &lens[t], &e));
        sts_task_close(w);
    }
    DR_OK(sts_dataset_commit(dir, &c, (const char *const *)msgs, lens, tasks, NULL, &sum, &e));
    for (t = 0; t < tasks; t++) sts_free(NULL, msgs[t], lens[t] + 1);
}

static void test_dataset(void **state) {
    static const uint32_t rows[7] = { 3, 9, 1, 4, 4, 12, 2 };
    char dir[512], path[600];
    sts_dataset *ds;
    sts_error e;
    uint8_t *manifest;
    size_t mlen, i, n;
    uint32_t owner[7], want[7], w;
    uint64_t samples[7];
    size_t by[7];
    long pos[7];
    (void)state;
    dr_fresh(dir, sizeof dir, "assign_kv");
    write_kv(dir, rows, 7);
    ds = dr_open(dir, 1);
    n = sts_dataset_describe(ds).files;
    assert_int_equal(n, 7);
    tf_join(path, sizeof path, dir, "dataset_manifest.json");
    manifest = tf_read(path, &mlen);
    for (i = 0; i < n; i++) {  /* the manifest's order: where each name stands in its text */
        const char *at = strstr((const char *)manifest, sts_dataset_file(ds, i));
        assert_non_null(at);
        pos[i] = (long)(at - (const char *)manifest);
    }
    for (i = 0; i < n; i++) {
        size_t j, before = 0;
        for (j = 0; j < n; j++) before += pos[j] < pos[i];
        assert_int_equal(sts_dataset_file_order(ds, i), before);
        by[before] = i;
    }
    free(manifest);
    for (i = 0; i < n; i++) samples[i] = sts_dataset_file_samples(ds, by[i]);
    for (w = 1; w <= 9; w++) {
        int s;
        for (s = 0; s < 2; s++) {
            sts_assign_strategy st = s ? STS_ASSIGN_ROUND_ROBIN : STS_ASSIGN_BALANCE;
            DR_OK(sts_dataset_assign(ds, w, st, owner, &e));
            if (st == STS_ASSIGN_BALANCE) model_balance(samples, n, w, want);
            else for (i = 0; i < n; i++) want[i] = (uint32_t)(i % w);
            for (i = 0; i < n; i++) assert_int_equal(owner[by[i]], want[i]);
        }
    }
    tu_err_check("no workers", sts_dataset_assign(ds, 0, STS_ASSIGN_BALANCE, owner, &e), &e, STS_ERR_INVALID_ARGUMENT,
                 STS_RULE_ARGUMENT, "num_workers must be > 0", NULL);
    assert_int_equal(sts_dataset_file_order(ds, 7), (size_t)-1);
    sts_dataset_close(ds);
    {   /* no manifest: name order; balance has no sample counts */
        char plain[512];
        dr_spec sp;
        memset(&sp, 0, sizeof sp);
        sp.name = "t";
        sp.dtype = STS_DTYPE_F32;
        sp.rank = 1;
        sp.shape[0] = 2;
        dr_fresh(plain, sizeof plain, "assign_plain");
        dr_subdir(plain, sizeof plain, dr_root, "assign_plain");
        dr_write_file(plain, "b.safetensors", &sp, 1, NULL, 0);
        dr_write_file(plain, "a.safetensors", &sp, 1, NULL, 0);
        dr_write_file(plain, "c.safetensors", &sp, 1, NULL, 0);
        ds = dr_open(plain, 1);
        for (i = 0; i < 3; i++) assert_int_equal(sts_dataset_file_order(ds, i), i);
        assert_string_equal(sts_dataset_file(ds, 0), "a.safetensors");
        DR_OK(sts_dataset_assign(ds, 2, STS_ASSIGN_ROUND_ROBIN, owner, &e));
        assert_int_equal(owner[0], 0); assert_int_equal(owner[1], 1); assert_int_equal(owner[2], 0);
        tu_err_check("balance without a manifest", sts_dataset_assign(ds, 2, STS_ASSIGN_BALANCE, owner, &e), &e,
                     STS_ERR_UNSUPPORTED, STS_RULE_UNSUPPORTED, "samples_count", NULL);
        sts_dataset_close(ds);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_robin),
        cmocka_unit_test(test_balance),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_dataset),
    };
    return cmocka_run_group_tests(tests, dr_root_setup, dr_root_teardown);
}
