/* test_dataset_write_kv.c - layer 8, KV mode (name_col): each row's tensors are named
   key + kv_separator + column; shards roll over on their real size; duplicates are caught across
   the task and across tasks.
   - golden layouts (with and without the index, fail and lastWin): every shard byte for byte the
     reference writer's output for the rows it holds (the row -> shard map is read from the writer,
     which the tests see), names, manifest (samples, schema with -1 where rows differ), index,
     commit messages;
   - duplicates: fail within a task (error names the key, later rows accepted, nothing changed by
     the rejected row), across shards of a task, across tasks at dataset commit (error names the key
     and both shards, every shard of the job removed, nothing published); lastWin in the same
     shard, across shards, across tasks (the later path, i.e. the higher task id, wins; task ids
     past 5 digits; shard numbers past 4 digits);
   - keys: invalid ones refused (NUL, not UTF-8), a key making "__metadata__";
   - the roller with a small target (target_shard_bytes): shards within the
     target unless a single row is larger, never rolled while the next row would have fitted,
     rows never split, memory bounded; one run at the real minimum of 50 MB with ~120 MB of data
     (skipped under STS_TEST_LEVEL=quick);
   - shards in layout order (sorted keys, escaped names, an order broken mid-shard, lastWin, cells
     larger than a 4 MiB write chunk whose chunks a later shard opens out of their own order):
     each the reference writer's bytes, with its message's CRC-32C checked bit by bit. */
#define _POSIX_C_SOURCE 200809L
#ifndef STS_TEST_LINKED  /* the Makefile links tests/sts_impl.c's object instead */
#define STS_IMPLEMENTATION
#endif
#include "../safetensors_spark.h"
#include "dataset_write_util.h"

static const sts_column KV[3] = {
    { "id", STS_VALUE_STRING, STS_DTYPE_U8 },
    { "img", STS_VALUE_TENSOR, STS_DTYPE_U8 },
    { "emb", STS_VALUE_ARRAY, STS_DTYPE_F32 },
};

/* ---- a recorded row: its key, where the writer put it, the tensors it makes ---- */
typedef struct krow { char key[64]; uint32_t task, shard; du_tl t; int rejected; } krow;
typedef struct krows { krow *r; size_t n, cap; } krows;

typedef struct kcell {       /* what a row holds */
    const char *key;
    size_t key_len;          /* (size_t)-1: strlen */
    sts_dtype img_dtype;
    uint32_t img_rank;
    uint64_t img_shape[4];
    const void *img;         /* NULL: a pattern from seed */
    size_t emb_n;
    uint32_t seed;
} kcell;

static krow *krows_add(krows *rs) {
    if (rs->n == rs->cap) { rs->cap = rs->cap ? 2 * rs->cap : 64; rs->r = (krow *)realloc(rs->r, rs->cap * sizeof *rs->r); assert_non_null(rs->r); }
    memset(&rs->r[rs->n], 0, sizeof rs->r[rs->n]);
    return &rs->r[rs->n++];
}
static void krows_free(krows *rs) {
    size_t i;
    for (i = 0; i < rs->n; i++) du_tl_free(&rs->r[i].t);
    free(rs->r);
    memset(rs, 0, sizeof *rs);
}

/* ---- open writers and the config each was given (kv_put encodes as the writer does) ---- */
typedef struct kv_open_rec { const sts_task_writer *w; sts_write_config c; } kv_open_rec;
static kv_open_rec kv_recs[16];
static size_t kv_rec_next;
/* sts_task_open with a roll-over target in bytes (0: the config's own), remembering the config. */
static sts_result kv_open(const char *root, uint32_t task, const sts_write_config *c, uint64_t target,
                          const sts_options *o, sts_task_writer **w, sts_error *e) {
    sts_write_config x = *c;
    sts_result r;
    size_t i;
    if (target) { x.target_shard_size_mb = 0; x.target_shard_bytes = target; }
    if ((r = sts_task_open(root, task, &x, KV, 3, o, w, e)) != STS_OK) return r;
    for (i = 0; i < 16 && kv_recs[i].w != *w; i++) {}
    if (i == 16) i = kv_rec_next++ % 16;
    kv_recs[i].w = *w;
    kv_recs[i].c = x;
    return r;
}
static const sts_write_config *kv_cfg(const sts_task_writer *w) {
    size_t i;
    for (i = 0; i < 16; i++) if (kv_recs[i].w == w) return &kv_recs[i].c;
    fail_msg("a writer not opened through kv_open");
    return NULL;
}

/* Writes one row; records it (tensors and shard) when accepted. Returns the result. */
static sts_result kv_put(sts_task_writer *w, uint32_t task, const kcell *k, krows *rs, sts_error *e) {
    sts_value v[3];
    uint64_t numel = 1, bytes;
    uint32_t d;
    uint8_t *img;
    float *emb;
    size_t i, kl = k->key_len == (size_t)-1 ? strlen(k->key) : k->key_len;
    sts_result r;
    for (d = 0; d < k->img_rank; d++) numel *= k->img_shape[d];
    bytes = numel * sts_dtype_bits(k->img_dtype) / 8;
    img = (uint8_t *)malloc(bytes ? (size_t)bytes : 1);
    emb = (float *)malloc((k->emb_n ? k->emb_n : 1) * sizeof *emb);
    assert_true(img && emb);
    if (k->img) memcpy(img, k->img, (size_t)bytes);
    else for (i = 0; i < bytes; i++) img[i] = (uint8_t)(i * 7 + k->seed * 13 + 1);
    for (i = 0; i < k->emb_n; i++) emb[i] = (float)k->seed + (float)i / 3.0f;
    memset(v, 0, sizeof v);
    v[0].data = k->key; v[0].size = kl;
    v[1].data = img; v[1].size = bytes; v[1].dtype = k->img_dtype; v[1].rank = k->img_rank; v[1].shape = k->img_shape;
    v[2].data = emb; v[2].size = k->emb_n;
    r = sts_task_write(w, v, e);
    if (r == STS_OK && rs) {
        krow *x = krows_add(rs);
        char name[256];
        uint8_t *enc = (uint8_t *)malloc(k->emb_n * 8 + 1);
        uint64_t en = k->emb_n;
        const sts_write_config *c = kv_cfg(w);
        const char *sep = c->kv_separator ? c->kv_separator : "__";
        size_t sl = strlen(sep);
        assert_non_null(enc);
        assert_true(kl < sizeof x->key);
        memcpy(x->key, k->key, kl);
        x->task = task;
        x->shard = (uint32_t)sts_task_get_progress(w).shards;  /* the shard filling in memory */
        memcpy(name, k->key, kl); memcpy(name + kl, sep, sl); memcpy(name + kl + sl, "img", 3);
        du_tl_put(&x->t, name, kl + sl + 3, k->img_dtype, k->img_rank, k->img_shape, img, bytes, 0);
        assert_int_equal(du_encode_array(enc, c->dtype, emb, STS_DTYPE_F32, k->emb_n, c->rounding), STS_OK);
        memcpy(name + kl + sl, "emb", 3);
        du_tl_put(&x->t, name, kl + sl + 3, c->dtype, 1, &en, enc, k->emb_n * sts_dtype_bits(c->dtype) / 8, 0);
        free(enc);
    }
    free(img);
    free(emb);
    return r;
}
/* The expected tensors of (task, shard): its rows in order, a later row replacing an earlier one. */
static void expect_shard(const krows *rs, uint32_t task, uint32_t shard, du_tl *tl, uint64_t *rows) {
    size_t i, j;
    *rows = 0;
    for (i = 0; i < rs->n; i++) {
        const krow *x = &rs->r[i];
        int fresh = 1;
        if (x->task != task || x->shard != shard) continue;
        for (j = 0; j < x->t.n; j++) {
            const du_t *t = &x->t.t[j];
            if (du_tl_find(tl, t->name, t->name_len)) fresh = 0;
            du_tl_put(tl, t->name, t->name_len, t->dtype, t->rank, t->shape, t->data, t->size, 1);
        }
        *rows += (uint64_t)fresh;
    }
}
/* Every shard of the folder equals the reference layout of its rows; returns the count. Notes
   collect the differences. */
static size_t check_shards(const char *label, const char *dir, const krows *rs, tu_sb *notes) {
    tf_names names = du_list_shards(dir);
    size_t i;
    for (i = 0; i < names.n; i++) {
        uint32_t t, s;
        du_tl tl = { 0, 0, 0 };
        uint64_t rows;
        char p[256];
        assert_true(du_shard_name(names.v[i], &t, &s, NULL));
        expect_shard(rs, t, s, &tl, &rows);
        if (!tl.n) fail_msg("%s: %s holds no recorded row", label, names.v[i]);
        tf_join(p, sizeof p, dir, names.v[i]);
        du_expect_file_note(notes, label, p, &tl);
        du_tl_free(&tl);
    }
    i = names.n;
    tf_names_free(&names);
    return i;
}
static void kv_config(sts_write_config *c) {
    memset(c, 0, sizeof *c);
    c->name_col = "id";
    c->has_dtype = 1;
    c->dtype = STS_DTYPE_BF16;
    c->rounding = STS_ROUND_NEAREST_EVEN;
    c->no_fsync = 1;
}
static kcell cell(const char *key, uint32_t seed, uint64_t d0, uint64_t d1, size_t emb_n) {
    kcell k;
    memset(&k, 0, sizeof k);
    k.key = key; k.key_len = (size_t)-1; k.img_dtype = STS_DTYPE_U8; k.img_rank = 2; k.img_shape[0] = d0; k.img_shape[1] = d1;
    k.emb_n = emb_n; k.seed = seed;
    return k;
}

/* ================================================================================================
   golden layouts */
static void golden(int index, int last_win) {
    static const uint32_t tasks[2] = { 0, 3 };
    char root[64], label[64], p[256];
    sts_write_config c;
    sts_error e;
    du_msgs m;
    krows rs = { 0, 0, 0 };
    du_ds ds;
    tu_sb notes = { 0, 0, 0 };
    sts_dataset_summary sum;
    size_t t, nfiles;
    char uuid[2][40];
    uint64_t rows_total = 0;
    snprintf(label, sizeof label, "kv golden index=%d lastWin=%d", index, last_win);
    memset(&m, 0, sizeof m);
    tf_tmpdir(root, sizeof root);
    kv_config(&c);
    c.generate_index = index;
    c.duplicates = last_win ? STS_DUPLICATES_LAST_WIN : STS_DUPLICATES_FAIL;
    c.kv_separator = index ? "::" : NULL;
    DU_OK(label, sts_dataset_prepare(root, &c, KV, 3, NULL, &e), e);
    for (t = 0; t < 2; t++) {
        sts_task_writer *w;
        int i;
        DU_OK(label, kv_open(root, tasks[t], &c, 900, NULL, &w, &e), e);
        for (i = 0; i < 12; i++) {
            char key[32];
            kcell k;
            /* lastWin: keys repeat within the task and across the tasks */
            if (last_win) snprintf(key, sizeof key, "s%02d", i % 7);
            else snprintf(key, sizeof key, "t%u-%02d", tasks[t], i);
            k = cell(key, tasks[t] * 100 + (uint32_t)i, 2, 3 + (uint64_t)(i % 2), 8);  /* img [2,3] or [2,4] */
            DU_OK(label, kv_put(w, tasks[t], &k, &rs, &e), e);
        }
        DU_OK(label, sts_task_commit(w, &m.m[m.n], &m.len[m.n], &e), e);
        {
            du_json j;
            uint64_t v;
            char buf[32];
            assert_true(du_json_text(&j, m.m[m.n], m.len[m.n]));
            assert_true(du_jstr(&j, du_jget(&j, 0, "mode"), buf, sizeof buf));
            assert_string_equal(buf, "kv");
            assert_true(du_ju64(&j, du_jget(&j, 0, "rows"), &v) && v == 12);
            assert_true(du_jstr(&j, du_jget(&j, 0, "kv_separator"), buf, sizeof buf));
            assert_string_equal(buf, index ? "::" : "__");
            assert_true(du_jcount(&j, du_jget(&j, 0, "shards")) == sts_task_get_progress(w).shards);
            du_json_free(&j);
        }
        m.n++;
        sts_task_close(w);
    }
    DU_OK(label, du_commit_all(root, &c, &m, NULL, &sum, &e), e);
    nfiles = check_shards(label, root, &rs, &notes);
    du_check_dataset(label, root, &ds);
    assert_int_equal(ds.nshards, nfiles);
    assert_true(nfiles >= 4);
    assert_int_equal(ds.kv, 1);
    assert_int_equal(ds.batch_size, 0);
    assert_int_equal(ds.index, index);
    assert_int_equal(ds.dup_last_win, last_win);
    assert_string_equal(ds.sep, index ? "::" : "__");
    /* names: task numbers, uuid per task */
    {
        size_t i;
        uuid[0][0] = uuid[1][0] = 0;
        for (i = 0; i < ds.nshards; i++) {
            uint32_t tk, s;
            char u[40];
            size_t ti;
            assert_true(du_shard_name(ds.shards[i].name, &tk, &s, u));
            ti = tk == tasks[0] ? 0 : 1;
            assert_true(tk == tasks[ti]);
            if (!uuid[ti][0]) strcpy(uuid[ti], u);
            else assert_string_equal(uuid[ti], u);
            /* samples_count: the distinct keys of its rows */
            {
                du_tl tl = { 0, 0, 0 };
                uint64_t rows;
                expect_shard(&rs, tk, s, &tl, &rows);
                if (ds.shards[i].samples != rows) fail_msg("%s: %s samples_count %llu, expected %llu", label, ds.shards[i].name,
                                                           (unsigned long long)ds.shards[i].samples, (unsigned long long)rows);
                rows_total += rows;
                du_tl_free(&tl);
            }
        }
        assert_true(strcmp(uuid[0], uuid[1]) != 0);
    }
    assert_int_equal(ds.total_samples, rows_total);
    assert_int_equal(sum.samples, rows_total);
    assert_int_equal(sum.shards, nfiles);
    /* schema: img U8 [2,-1] (widths 3 and 4), emb BF16 [8] */
    {
        char dt[16];
        int64_t dims[4];
        assert_int_equal(du_schema_col(&ds, "img", dt, sizeof dt, dims, 4), 2);
        assert_string_equal(dt, "U8");
        assert_true(dims[0] == 2 && dims[1] == -1);
        assert_int_equal(du_schema_col(&ds, "emb", dt, sizeof dt, dims, 4), 1);
        assert_string_equal(dt, "BF16");
        assert_true(dims[0] == 8);
    }
    /* the index points every key at its winner: the last row with it, the later task winning */
    if (index) {
        size_t i;
        for (i = 0; i < rs.n; i++) {
            const krow *x = &rs.r[i], *win = x;
            size_t j;
            char file[128];
            const char *want;
            tf_names names = du_list_shards(root);
            for (j = 0; j < rs.n; j++)
                if (strcmp(rs.r[j].key, x->key) == 0 && (rs.r[j].task > win->task || (rs.r[j].task == win->task && j > (size_t)(win - rs.r))))
                    win = &rs.r[j];
            want = du_find_shard(&names, win->task, win->shard);
            for (j = 0; j < x->t.n; j++) {
                if (!du_index_file(&ds, x->t.t[j].name, file, sizeof file)) fail_msg("%s: %s is not indexed", label, x->t.t[j].name);
                if (strcmp(file, want) != 0) fail_msg("%s: the index maps %s to %s, the winner is in %s", label, x->t.t[j].name, file, want);
            }
            tf_names_free(&names);
        }
    } else {
        tf_join(p, sizeof p, root, "_tensor_index.json");
        assert_false(tf_exists(p));
    }
    du_ds_free(&ds);
    krows_free(&rs);
    du_msgs_free(&m);
    tf_rmtree(root);
    tu_notes_done(&notes, label);
}
static void test_golden_plain(void **state) { (void)state; golden(0, 0); }
static void test_golden_index(void **state) { (void)state; golden(1, 0); }
static void test_golden_last_win(void **state) { (void)state; golden(1, 1); }

/* ================================================================================================
   the schema of KV columns: -1 where rows differ, within a task and across tasks */
static void test_schema_varying(void **state) {
    char root[64];
    sts_write_config c;
    sts_error e;
    du_msgs m;
    du_ds ds;
    char dt[16];
    int64_t dims[4];
    int t;
    (void)state;
    memset(&m, 0, sizeof m);
    tf_tmpdir(root, sizeof root);
    kv_config(&c);
    DU_OK("prepare", sts_dataset_prepare(root, &c, KV, 3, NULL, &e), e);
    for (t = 0; t < 2; t++) {
        sts_task_writer *w;
        kcell k;
        char key[16];
        DU_OK("open", kv_open(root, (uint32_t)t, &c, 0, NULL, &w, &e), e);
        /* task 0: img [4,5] then [4,6] (dim 1 varies), emb 8 then 8; task 1: img [4,5], emb 3 */
        snprintf(key, sizeof key, "a%d", t);
        k = cell(key, 1, 4, 5, t ? 3 : 8);
        DU_OK("row", kv_put(w, (uint32_t)t, &k, NULL, &e), e);
        if (!t) {
            k = cell("b", 2, 4, 6, 8);
            DU_OK("row", kv_put(w, 0, &k, NULL, &e), e);
        }
        DU_OK("commit", sts_task_commit(w, &m.m[m.n], &m.len[m.n], &e), e);
        m.n++;
        sts_task_close(w);
    }
    DU_OK("commit", du_commit_all(root, &c, &m, NULL, NULL, &e), e);
    du_check_dataset("varying", root, &ds);
    assert_int_equal(du_schema_col(&ds, "img", dt, sizeof dt, dims, 4), 2);
    if (!(dims[0] == 4 && dims[1] == -1)) fail_msg("img schema [%lld, %lld], expected [4, -1]", (long long)dims[0], (long long)dims[1]);
    assert_int_equal(du_schema_col(&ds, "emb", dt, sizeof dt, dims, 4), 1);
    if (dims[0] != -1) fail_msg("emb schema [%lld], expected [-1] (8 and 3 elements)", (long long)dims[0]);
    du_ds_free(&ds);
    du_msgs_free(&m);
    tf_rmtree(root);
}

/* ================================================================================================
   tensor cells of every element width: the bytes land as given (sizes are bytes, never elements
   times the element size; F4/F6 cells are whole bytes too). The cells are exact-size heap blocks,
   so an over-read shows under ASan and valgrind, and every shard is compared byte for byte. */
static void test_tensor_dtypes(void **state) {
    static const sts_dtype dts[] = { STS_DTYPE_F32, STS_DTYPE_F64, STS_DTYPE_I16, STS_DTYPE_BF16, STS_DTYPE_I64,
                                     STS_DTYPE_C64, STS_DTYPE_BOOL, STS_DTYPE_F8_E4M3, STS_DTYPE_F4, STS_DTYPE_F6_E2M3 };
    size_t di;
    (void)state;
    for (di = 0; di < sizeof dts / sizeof dts[0]; di++) {
        char root[64], label[64];
        sts_write_config c;
        sts_error e;
        du_msgs m;
        krows rs = { 0, 0, 0 };
        tu_sb notes = { 0, 0, 0 };
        du_ds ds;
        sts_task_writer *w;
        int i;
        snprintf(label, sizeof label, "kv tensor cells %s", sts_dtype_name(dts[di]));
        memset(&m, 0, sizeof m);
        tf_tmpdir(root, sizeof root);
        kv_config(&c);
        DU_OK(label, sts_dataset_prepare(root, &c, KV, 3, NULL, &e), e);
        DU_OK(label, kv_open(root, 0, &c, 0, NULL, &w, &e), e);
        for (i = 0; i < 5; i++) {
            char key[16];
            kcell k;
            snprintf(key, sizeof key, "r%d", i);
            k = cell(key, (uint32_t)i + 1, 4, 6, 3);  /* [4, 6]: 24 elements, whole bytes for F4 and F6 */
            k.img_dtype = dts[di];
            DU_OK(label, kv_put(w, 0, &k, &rs, &e), e);
        }
        DU_OK(label, sts_task_commit(w, &m.m[m.n], &m.len[m.n], &e), e);
        m.n++;
        sts_task_close(w);
        DU_OK(label, du_commit_all(root, &c, &m, NULL, NULL, &e), e);
        assert_int_equal(check_shards(label, root, &rs, &notes), 1);
        du_check_dataset(label, root, &ds);
        du_ds_free(&ds);
        krows_free(&rs);
        du_msgs_free(&m);
        tf_rmtree(root);
        tu_notes_done(&notes, label);
    }
}

/* ================================================================================================
   duplicates, duplicatesStrategy=fail */
static void test_dup_fail_in_task(void **state) {
    char root[64];
    sts_write_config c;
    sts_error e;
    sts_task_writer *w;
    krows rs = { 0, 0, 0 };
    char *msg;
    size_t len;
    tu_sb notes = { 0, 0, 0 };
    kcell k;
    (void)state;
    tf_tmpdir(root, sizeof root);
    kv_config(&c);
    DU_OK("open", kv_open(root, 0, &c, 700, NULL, &w, &e), e);
    k = cell("alpha", 1, 2, 3, 4); DU_OK("alpha", kv_put(w, 0, &k, &rs, &e), e);
    k = cell("beta", 2, 2, 3, 4); DU_OK("beta", kv_put(w, 0, &k, &rs, &e), e);
    /* the same shard */
    k = cell("alpha", 3, 2, 3, 4);
    tu_err_check("alpha again", kv_put(w, 0, &k, &rs, &e), &e, STS_ERR_DUPLICATE_KEY, STS_RULE_DUPLICATE_KEY, "\"alpha\"", "alpha__img", "fail", (const char *)NULL);
    /* later rows are accepted; a row with a different shape is fine in KV mode */
    k = cell("gamma", 4, 5, 5, 4); DU_OK("gamma", kv_put(w, 0, &k, &rs, &e), e);
    k = cell("delta", 5, 2, 3, 4); DU_OK("delta", kv_put(w, 0, &k, &rs, &e), e);
    k = cell("eps", 6, 2, 3, 4); DU_OK("eps", kv_put(w, 0, &k, &rs, &e), e);
    assert_true(sts_task_get_progress(w).shards >= 1);  /* alpha's shard has been rolled out */
    /* a duplicate of a key in an earlier shard of the task */
    k = cell("alpha", 7, 2, 3, 4);
    tu_err_check("alpha in an earlier shard", kv_put(w, 0, &k, &rs, &e), &e, STS_ERR_DUPLICATE_KEY, STS_RULE_DUPLICATE_KEY, "\"alpha\"", (const char *)NULL);
    k = cell("beta", 8, 9, 9, 40);
    tu_err_check("beta (another shape)", kv_put(w, 0, &k, &rs, &e), &e, STS_ERR_DUPLICATE_KEY, STS_RULE_DUPLICATE_KEY, "\"beta\"", (const char *)NULL);
    k = cell("zeta", 9, 2, 3, 4); DU_OK("zeta", kv_put(w, 0, &k, &rs, &e), e);
    DU_OK("commit", sts_task_commit(w, &msg, &len, &e), e);
    {
        du_json j;
        uint64_t v;
        assert_true(du_json_text(&j, msg, len));
        assert_true(du_ju64(&j, du_jget(&j, 0, "rows"), &v));
        if (v != 6) fail_msg("the message counts %llu rows; 6 were accepted", (unsigned long long)v);
        du_json_free(&j);
    }
    sts_task_close(w);
    check_shards("dup fail", root, &rs, &notes);  /* the rejected rows left no trace */
    sts_free(NULL, msg, len + 1);
    krows_free(&rs);
    tf_rmtree(root);
    tu_notes_done(&notes, "dup fail in task");
}
/* Keys and columns that concatenate to the same tensor name collide too. */
static void test_dup_fail_ambiguous_names(void **state) {
    static const sts_column schema[3] = { { "id", STS_VALUE_STRING, STS_DTYPE_U8 }, { "c", STS_VALUE_ARRAY, STS_DTYPE_U8 },
                                          { "b__c", STS_VALUE_ARRAY, STS_DTYPE_U8 } };
    char root[64];
    sts_write_config c;
    sts_error e;
    sts_task_writer *w = NULL;
    (void)state;
    tf_tmpdir(root, sizeof root);
    memset(&c, 0, sizeof c);
    c.name_col = "id"; c.has_dtype = 1; c.dtype = STS_DTYPE_U8; c.no_fsync = 1;
    /* "b__c" holds the separator: key "a" + "__b__c" and key "a__b" + "__c" would be one name; refused
       before a row is written, at prepare and at task open alike */
    tu_err_check("prepare", sts_dataset_prepare(root, &c, schema, 3, NULL, &e), &e, STS_ERR_OPTION, STS_RULE_OPTION,
                 "\"b__c\"", "kv_separator", (const char *)NULL);
    tu_err_check("open", sts_task_open(root, 0, &c, schema, 3, NULL, &w, &e), &e, STS_ERR_OPTION, STS_RULE_OPTION,
                 "\"b__c\"", (const char *)NULL);
    assert_null(w);
    /* with another separator the names are fine; batch mode has no keys, so no such rule */
    c.kv_separator = "::";
    DU_OK("prepare ::", sts_dataset_prepare(root, &c, schema, 3, NULL, &e), e);
    DU_OK("abort", sts_dataset_abort(root, NULL, NULL, 0, NULL, &e), e);
    tf_rmtree(root);
}

/* Across tasks: the dataset commit names the key and both shards, removes every shard of the
   job and publishes nothing. */
static void test_dup_fail_across_tasks(void **state) {
    char root[64];
    sts_write_config c;
    sts_error e;
    du_msgs m;
    tf_snap before, after;
    int t;
    char shard_of[2][128];
    (void)state;
    memset(&m, 0, sizeof m);
    tf_tmpdir(root, sizeof root);
    kv_config(&c);
    c.generate_index = 1;
    DU_OK("prepare", sts_dataset_prepare(root, &c, KV, 3, NULL, &e), e);
    before = tf_snapshot(root, 0);
    for (t = 0; t < 2; t++) {
        sts_task_writer *w;
        kcell k;
        char key[16];
        int i;
        DU_OK("open", kv_open(root, (uint32_t)t, &c, 500, NULL, &w, &e), e);
        for (i = 0; i < 4; i++) {
            snprintf(key, sizeof key, "u%d-%d", t, i);
            k = cell(i == 2 ? "x" : key, (uint32_t)i, 2, 2, 2);
            DU_OK("row", kv_put(w, (uint32_t)t, &k, NULL, &e), e);
            if (i == 2) {  /* the shard "x" went to */
                snprintf(shard_of[t], sizeof shard_of[t], "part-%05d-%04u-", t, (unsigned)sts_task_get_progress(w).shards);
            }
        }
        DU_OK("commit", sts_task_commit(w, &m.m[m.n], &m.len[m.n], &e), e);
        m.n++;
        sts_task_close(w);
    }
    {
        tf_names n = du_list_shards(root);
        assert_true(n.n >= 4);
        tf_names_free(&n);
    }
    tu_err_check("x in two tasks", du_commit_all(root, &c, &m, NULL, NULL, &e), &e, STS_ERR_DUPLICATE_KEY, STS_RULE_DUPLICATE_KEY,
                 "x__", shard_of[0], shard_of[1], (const char *)NULL);
    {   /* nothing published; every task's shard stays for a corrected commit */
        tf_names n = du_list_shards(root);
        char mp[128];
        assert_true(n.n >= 4);
        tf_names_free(&n);
        tf_join(mp, sizeof mp, root, "dataset_manifest.json");
        assert_false(tf_exists(mp));
    }
    /* the job aborted with its messages: the folder is as it was before the job took it */
    DU_OK("abort", sts_dataset_abort(root, (const char *const *)m.m, m.len, m.n, NULL, &e), e);
    DU_OK("prepare again", sts_dataset_prepare(root, &c, KV, 3, NULL, &e), e);
    after = tf_snapshot(root, 0);
    tf_snap_equal(&before, &after, "a failed dataset commit, then its abort");
    tf_snap_free(&before);
    tf_snap_free(&after);
    du_msgs_free(&m);
    tf_rmtree(root);
}

/* ================================================================================================
   duplicatesStrategy=lastWin */
static void test_last_win(void **state) {
    char root[64], file[128];
    sts_write_config c;
    sts_error e;
    du_msgs m;
    krows rs = { 0, 0, 0 };
    du_ds ds;
    tf_names names;
    tu_sb notes = { 0, 0, 0 };
    sts_task_writer *w;
    kcell k;
    uint32_t t5_shard;
    (void)state;
    memset(&m, 0, sizeof m);
    tf_tmpdir(root, sizeof root);
    kv_config(&c);
    c.duplicates = STS_DUPLICATES_LAST_WIN;
    c.generate_index = 1;
    /* task 2: "same" twice in one shard, "early" in shard 0 and again in a later shard */
    DU_OK("prepare", sts_dataset_prepare(root, &c, KV, 3, NULL, &e), e);
    DU_OK("open", kv_open(root, 2, &c, 800, NULL, &w, &e), e);
    k = cell("early", 1, 2, 2, 2); DU_OK("early", kv_put(w, 2, &k, &rs, &e), e);
    k = cell("same", 2, 2, 2, 2); DU_OK("same", kv_put(w, 2, &k, &rs, &e), e);
    k = cell("same", 3, 3, 3, 5); DU_OK("same again", kv_put(w, 2, &k, &rs, &e), e);   /* another shape too */
    assert_int_equal(sts_task_get_progress(w).shards, 0);
    k = cell("f1", 4, 8, 8, 2); DU_OK("f1", kv_put(w, 2, &k, &rs, &e), e);
    k = cell("f2", 5, 8, 8, 2); DU_OK("f2", kv_put(w, 2, &k, &rs, &e), e);
    k = cell("f3", 6, 8, 8, 2); DU_OK("f3", kv_put(w, 2, &k, &rs, &e), e);
    assert_true(sts_task_get_progress(w).shards >= 1);
    k = cell("early", 7, 1, 1, 1); DU_OK("early again", kv_put(w, 2, &k, &rs, &e), e);
    k = cell("both", 8, 2, 2, 2); DU_OK("both", kv_put(w, 2, &k, &rs, &e), e);
    DU_OK("commit", sts_task_commit(w, &m.m[m.n], &m.len[m.n], &e), e);
    m.n++;
    sts_task_close(w);
    /* task 5: "both" again (the later task wins); task 1: "both" too (loses to 2 and 5) */
    DU_OK("open", kv_open(root, 5, &c, 0, NULL, &w, &e), e);
    k = cell("both", 9, 2, 2, 2); DU_OK("both 5", kv_put(w, 5, &k, &rs, &e), e);
    t5_shard = (uint32_t)sts_task_get_progress(w).shards;
    DU_OK("commit", sts_task_commit(w, &m.m[m.n], &m.len[m.n], &e), e);
    m.n++;
    sts_task_close(w);
    DU_OK("open", kv_open(root, 1, &c, 0, NULL, &w, &e), e);
    k = cell("both", 10, 2, 2, 2); DU_OK("both 1", kv_put(w, 1, &k, &rs, &e), e);
    DU_OK("commit", sts_task_commit(w, &m.m[m.n], &m.len[m.n], &e), e);
    m.n++;
    sts_task_close(w);
    /* messages in any order */
    {
        char *tm = m.m[0]; size_t tl = m.len[0];
        m.m[0] = m.m[1]; m.len[0] = m.len[1];
        m.m[1] = tm; m.len[1] = tl;
    }
    DU_OK("dataset commit", du_commit_all(root, &c, &m, NULL, NULL, &e), e);
    check_shards("lastWin", root, &rs, &notes);
    du_check_dataset("lastWin", root, &ds);
    names = du_list_shards(root);
    /* "same": the second row, in shard 0 of task 2 */
    assert_true(du_index_file(&ds, "same__img", file, sizeof file));
    assert_string_equal(file, du_find_shard(&names, 2, 0));
    {
        char p[256];
        sts_file *f;
        const sts_tensor *x;
        tf_join(p, sizeof p, root, file);
        DU_OK("open", sts_open(p, NULL, &f, &e), e);
        x = sts_find(f, "same__img", 9);
        assert_non_null(x);
        assert_true(x->rank == 2 && x->shape[0] == 3 && x->shape[1] == 3);
        assert_int_equal(((const uint8_t *)sts_data(f, x))[0], (uint8_t)(3 * 13 + 1));  /* seed 3 */
        sts_close(f);
    }
    /* "early": the later shard of task 2 */
    {
        const krow *last = NULL;
        size_t i;
        for (i = 0; i < rs.n; i++) if (strcmp(rs.r[i].key, "early") == 0) last = &rs.r[i];
        assert_true(du_index_file(&ds, "early__emb", file, sizeof file));
        assert_true(last->shard >= 1);
        assert_string_equal(file, du_find_shard(&names, 2, last->shard));
    }
    /* "both": task 5 */
    assert_true(du_index_file(&ds, "both__img", file, sizeof file));
    assert_string_equal(file, du_find_shard(&names, 5, t5_shard));
    assert_true(du_index_file(&ds, "both__emb", file, sizeof file));
    assert_string_equal(file, du_find_shard(&names, 5, t5_shard));
    /* every key indexed once: early, same, f1, f2, f3, both: 12 tensors */
    assert_int_equal(ds.tensors, 12);
    tf_names_free(&names);
    du_ds_free(&ds);
    krows_free(&rs);
    du_msgs_free(&m);
    tf_rmtree(root);
    tu_notes_done(&notes, "lastWin");
}
/* The later task wins whatever the width of the task number: 99999 < 100000. */
static void test_last_win_wide_task_ids(void **state) {
    static const uint32_t ids[3] = { 99999, 100000, 9 };
    char root[64], file[128];
    sts_write_config c;
    sts_error e;
    du_msgs m;
    du_ds ds;
    tf_names names;
    int t, wrong;
    (void)state;
    memset(&m, 0, sizeof m);
    tf_tmpdir(root, sizeof root);
    kv_config(&c);
    c.duplicates = STS_DUPLICATES_LAST_WIN;
    c.generate_index = 1;
    DU_OK("prepare", sts_dataset_prepare(root, &c, KV, 3, NULL, &e), e);
    for (t = 0; t < 3; t++) {
        sts_task_writer *w;
        kcell k = cell("k", (uint32_t)t, 1, 1, 1);
        DU_OK("open", kv_open(root, ids[t], &c, 0, NULL, &w, &e), e);
        DU_OK("row", kv_put(w, ids[t], &k, NULL, &e), e);
        DU_OK("commit", sts_task_commit(w, &m.m[m.n], &m.len[m.n], &e), e);
        m.n++;
        sts_task_close(w);
    }
    DU_OK("dataset commit", du_commit_all(root, &c, &m, NULL, NULL, &e), e);
    du_check_dataset("wide ids", root, &ds);
    names = du_list_shards(root);
    assert_non_null(du_find_shard(&names, 100000, 0));
    assert_true(du_index_file(&ds, "k__img", file, sizeof file));
    wrong = strcmp(file, du_find_shard(&names, 100000, 0)) != 0;
    tf_names_free(&names);
    du_ds_free(&ds);
    du_msgs_free(&m);
    tf_rmtree(root);
    if (wrong) fail_msg("lastWin across tasks 9, 99999 and 100000: the index points at %s, expected task 100000's shard", file);
}
/* The later shard of a task wins whatever the width of the shard number: 9999 < 10000.
   10001 one-row shards (full level only). */
static void test_last_win_wide_shard_numbers(void **state) {
    char root[64], file[128];
    sts_write_config c;
    sts_error e;
    du_msgs m;
    du_ds ds;
    tf_names names;
    sts_task_writer *w;
    int i;
    (void)state;
    if (tu_quick()) { skip(); return; }
    memset(&m, 0, sizeof m);
    tf_tmpdir(root, sizeof root);
    kv_config(&c);
    c.duplicates = STS_DUPLICATES_LAST_WIN;
    c.generate_index = 1;
    DU_OK("prepare", sts_dataset_prepare(root, &c, KV, 3, NULL, &e), e);
    DU_OK("open", kv_open(root, 0, &c, 1, NULL, &w, &e), e);
    for (i = 0; i <= 10000; i++) {
        char key[16];
        kcell k;
        snprintf(key, sizeof key, "r%d", i);
        k = cell(i == 9999 || i == 10000 ? "dup" : key, (uint32_t)i, 1, 1, 1);
        DU_OK("row", kv_put(w, 0, &k, NULL, &e), e);
    }
    DU_OK("commit", sts_task_commit(w, &m.m[m.n], &m.len[m.n], &e), e);
    m.n++;
    sts_task_close(w);
    DU_OK("dataset commit", du_commit_all(root, &c, &m, NULL, NULL, &e), e);
    du_check_dataset("wide shard numbers", root, &ds);
    names = du_list_shards(root);
    assert_int_equal(names.n, 10001);
    assert_true(du_index_file(&ds, "dup__img", file, sizeof file));
    i = strcmp(file, du_find_shard(&names, 0, 10000)) != 0;
    tf_names_free(&names);
    du_ds_free(&ds);
    du_msgs_free(&m);
    tf_rmtree(root);
    if (i) fail_msg("lastWin across shards 9999 and 10000 of one task: the index points at %s, expected shard 10000", file);
}

/* ================================================================================================
   keys */
static void test_keys(void **state) {
    static const sts_column schema[2] = { { "id", STS_VALUE_STRING, STS_DTYPE_U8 }, { "data__", STS_VALUE_ARRAY, STS_DTYPE_U8 } };
    char root[64];
    sts_write_config c;
    sts_error e;
    sts_task_writer *w;
    kcell k;
    char *msg = NULL;
    size_t len = 0;
    sts_result r;
    (void)state;
    tf_tmpdir(root, sizeof root);
    kv_config(&c);
    DU_OK("prepare", sts_dataset_prepare(root, &c, KV, 3, NULL, &e), e);
    DU_OK("open", kv_open(root, 0, &c, 0, NULL, &w, &e), e);
    k = cell("a\0b", 1, 1, 1, 1); k.key_len = 3;
    tu_err_check("key with NUL", kv_put(w, 0, &k, NULL, &e), &e, STS_ERR_SCHEMA, STS_RULE_ROW_VALUE, "UTF-8", (const char *)NULL);
    k = cell("\xc3\x28", 1, 1, 1, 1);
    tu_err_check("key not UTF-8", kv_put(w, 0, &k, NULL, &e), &e, STS_ERR_SCHEMA, STS_RULE_ROW_VALUE, "UTF-8", (const char *)NULL);
    k = cell("caf\xc3\xa9 \"q\" \\ \n,", 1, 1, 1, 1);  /* escapes in JSON and CSV */
    DU_OK("key with UTF-8, quotes, newline, comma", kv_put(w, 0, &k, NULL, &e), e);
    k = cell("", 2, 1, 1, 1);
    DU_OK("empty key", kv_put(w, 0, &k, NULL, &e), e);
    {
        sts_value v[3];
        memset(v, 0, sizeof v);
        v[0].data = NULL; v[0].size = 2;
        tu_err_check("key without data", sts_task_write(w, v, &e), &e, STS_ERR_SCHEMA, STS_RULE_ROW_VALUE, (const char *)NULL);
    }
    DU_OK("commit", sts_task_commit(w, &msg, &len, &e), e);
    sts_task_close(w);
    sts_free(NULL, msg, len + 1);
    {   /* the odd key must go through the index */
        du_msgs m;
        du_ds ds;
        memset(&m, 0, sizeof m);
        tf_clear(root);
        c.generate_index = 1;
        DU_OK("prepare", sts_dataset_prepare(root, &c, KV, 3, NULL, &e), e);
        DU_OK("open", kv_open(root, 0, &c, 0, NULL, &w, &e), e);
        k = cell("caf\xc3\xa9 \"q\" \\ \n,", 1, 1, 1, 1);
        DU_OK("odd key", kv_put(w, 0, &k, NULL, &e), e);
        DU_OK("commit", sts_task_commit(w, &m.m[m.n], &m.len[m.n], &e), e);
        m.n++;
        sts_task_close(w);
        DU_OK("dataset commit", du_commit_all(root, &c, &m, NULL, NULL, &e), e);
        du_check_dataset("odd key", root, &ds);
        assert_int_equal(ds.tensors, 2);
        du_ds_free(&ds);
        du_msgs_free(&m);
        tf_clear(root);
    }
    /* a key that makes the reserved name "__metadata__" ("" + "__meta" + "data__"; a column may not
       hold the separator, so the separator does the work): the row must be refused up front, and
       the writer must stay usable */
    memset(&c, 0, sizeof c);
    c.name_col = "id"; c.has_dtype = 1; c.dtype = STS_DTYPE_U8; c.no_fsync = 1;
    c.kv_separator = "__meta";
    DU_OK("open", sts_task_open(root, 0, &c, schema, 2, NULL, &w, &e), e);
    {
        sts_value v[2];
        uint8_t x = 1;
        memset(v, 0, sizeof v);
        v[1].data = &x; v[1].size = 1;
        v[0].data = ""; v[0].size = 0;
        r = sts_task_write(w, v, &e);
        if (r == STS_OK) {
            sts_result r2;
            v[0].data = "fine"; v[0].size = 4;
            r2 = sts_task_write(w, v, &e);
            if (r2 == STS_OK) r2 = sts_task_commit(w, &msg, &len, &e);
            sts_task_close(w);
            if (r2 == STS_OK) sts_free(NULL, msg, len + 1);
            tf_rmtree(root);
            fail_msg("a row whose tensor is named \"__metadata__\" was accepted; the task then %s (%s)",
                     r2 == STS_OK ? "committed" : "failed", r2 == STS_OK ? "a file readers reject?" : e.message);
        }
        if (r != STS_ERR_SCHEMA && r != STS_ERR_INVALID_ARGUMENT) fail_msg("__metadata__ key: %s %s", sts_result_name(r), e.message);
        v[0].data = "fine"; v[0].size = 4;
        DU_OK("a good row after", sts_task_write(w, v, &e), e);
        DU_OK("commit", sts_task_commit(w, &msg, &len, &e), e);
        sts_free(NULL, msg, len + 1);
    }
    sts_task_close(w);
    tf_rmtree(root);
}

/* ================================================================================================
   the roller */
typedef struct roll_stats { size_t shards, single_big; } roll_stats;

/* Checks the roll rules for a finished task whose rows rs went to dir; target in bytes. */
static void check_rolls(const char *label, const char *dir, const krows *rs, uint64_t target, roll_stats *st, tu_sb *notes) {
    tf_names names = du_list_shards(dir);
    size_t i, r = 0;
    memset(st, 0, sizeof *st);
    for (i = 0; i < names.n; i++) {
        uint32_t t, s;
        char p[256];
        int64_t size;
        size_t first = r, count = 0, q;
        sts_file *f;
        sts_error e;
        assert_true(du_shard_name(names.v[i], &t, &s, NULL));
        assert_int_equal(s, i);  /* shards numbered from 0 without gaps */
        tf_join(p, sizeof p, dir, names.v[i]);
        size = tf_file_size(p);
        while (r < rs->n && rs->r[r].shard == s) { r++; count++; }
        if (!count) fail_msg("%s: shard %u holds no row", label, s);
        /* rows never split: every tensor of each row is in this file */
        DU_OK(label, sts_open(p, NULL, &f, &e), e);
        for (q = first; q < first + count; q++) {
            size_t j;
            for (j = 0; j < rs->r[q].t.n; j++)
                if (!sts_find(f, rs->r[q].t.t[j].name, rs->r[q].t.t[j].name_len))
                    fail_msg("%s: row %s's tensor %s is not in its shard %u", label, rs->r[q].key, rs->r[q].t.t[j].name, s);
        }
        assert_int_equal(sts_count(f), count * 2);
        sts_close(f);
        /* within the target, unless a single row is larger than it */
        if ((uint64_t)size > target) {
            if (count != 1) tu_sb_printf(notes, "\n  %s: shard %u has %lld bytes > target %llu with %zu rows", label, s, (long long)size, (unsigned long long)target, count);
            else if (du_tl_file_size(&rs->r[first].t) <= target) tu_sb_printf(notes, "\n  %s: shard %u of one row is over the target, but the row alone fits", label, s);
            else st->single_big++;
        }
        /* a row larger than the target is alone */
        for (q = first; q < first + count; q++)
            if (du_tl_file_size(&rs->r[q].t) > target && count != 1)
                tu_sb_printf(notes, "\n  %s: row %s is larger than the target but shares shard %u", label, rs->r[q].key, s);
        /* never rolled while the next row would have fitted: shard + next row > target */
        if (i + 1 < names.n && r < rs->n) {
            du_tl all = { 0, 0, 0 };
            uint64_t with_next;
            for (q = first; q <= r; q++) {
                size_t j;
                for (j = 0; j < rs->r[q].t.n; j++) {
                    const du_t *x = &rs->r[q].t.t[j];
                    du_tl_put(&all, x->name, x->name_len, x->dtype, x->rank, x->shape, x->data, x->size, 1);
                }
            }
            with_next = du_tl_file_size(&all);
            if (with_next <= target)
                tu_sb_printf(notes, "\n  %s: shard %u (%lld bytes) was rolled although the next row would have fitted (%llu <= target %llu)",
                             label, s, (long long)size, (unsigned long long)with_next, (unsigned long long)target);
            du_tl_free(&all);
        }
        st->shards++;
    }
    assert_int_equal(r, rs->n);
    tf_names_free(&names);
}

/* shuffle: keys arrive in a scrambled order (a layout sort, then merges, behind each exact count) */
static void roller(int shuffle) {
    char root[64];
    sts_write_config c;
    sts_error e;
    sts_task_writer *w;
    krows rs = { 0, 0, 0 };
    char *msg;
    size_t len;
    tu_rng rng = { 42 };
    int i, n = tu_quick() ? 150 : 400;
    roll_stats st;
    tu_sb notes = { 0, 0, 0 };
    tu_alloc al;
    sts_options o;
    const uint64_t target = 64 * 1024;
    tf_tmpdir(root, sizeof root);
    kv_config(&c);
    o = tu_alloc_opts(&al, NULL);
    DU_OK("open", kv_open(root, 0, &c, target, &o, &w, &e), e);
    for (i = 0; i < n; i++) {
        char key[32];
        uint64_t d1;
        kcell k;
        uint32_t pick = tu_below(&rng, 100);
        snprintf(key, sizeof key, "row-%05d", shuffle ? (int)(((unsigned)i * 7919u) % 100003u) : i);
        d1 = pick < 3 ? 70000 + tu_below(&rng, 150000) : 1 + tu_below(&rng, pick < 50 ? 2000 : 20000);  /* a few rows > 64 KiB */
        k = cell(key, (uint32_t)i, 1, d1, 1 + tu_below(&rng, 64));
        DU_OK("row", kv_put(w, 0, &k, &rs, &e), e);
    }
    DU_OK("commit", sts_task_commit(w, &msg, &len, &e), e);
    sts_task_close(w);
    sts_free(&o, msg, len + 1);
    tu_alloc_check("roller", &al);
    check_rolls("roller 64 KiB", root, &rs, target, &st, &notes);
    check_shards("roller 64 KiB", root, &rs, &notes);
    assert_true(st.shards > 10);
    assert_true(st.single_big >= 1);
    /* memory: one shard's buffer (a 4 MiB chunk at least) and the task's key set, not the data */
    if (al.peak > (int64_t)(12u << 20)) fail_msg("roller: peak memory %lld bytes with a 64 KiB target", (long long)al.peak);
    krows_free(&rs);
    tf_rmtree(root);
    tu_notes_done(&notes, "roller");
}
static void test_roller(void **state) { (void)state; roller(0); }
static void test_roller_shuffled(void **state) { (void)state; roller(1); }

/* The roll happens only when the next row would push the shard PAST the target: a shard whose
   rows fill the target to the exact byte keeps them. The target is set to the exact size of a
   file holding the first k rows. */
static void test_roll_exact_fit(void **state) {
    static const int ks[4] = { 1, 2, 7, 40 };
    size_t v;
    tu_sb notes = { 0, 0, 0 };
    (void)state;
    for (v = 0; v < 4; v++) {
        char root[64], label[64];
        sts_write_config c;
        sts_error e;
        sts_task_writer *w;
        krows rs = { 0, 0, 0 };
        du_tl first = { 0, 0, 0 };
        char *msg;
        size_t len, q, j;
        uint64_t target;
        int i;
        snprintf(label, sizeof label, "exact fit of %d rows", ks[v]);
        tf_tmpdir(root, sizeof root);
        kv_config(&c);
        /* a dry run to learn the exact size of the first k rows */
        DU_OK("open", kv_open(root, 0, &c, 0, NULL, &w, &e), e);
        for (i = 0; i < ks[v] + 3; i++) {
            char key[32];
            kcell k;
            snprintf(key, sizeof key, "key-%d", i * 37);
            k = cell(key, (uint32_t)i, 3, 100 + (uint64_t)(i % 5) * 311, 6);
            DU_OK("row", kv_put(w, 0, &k, &rs, &e), e);
        }
        sts_task_close(w);
        for (q = 0; q < (size_t)ks[v]; q++)
            for (j = 0; j < rs.r[q].t.n; j++) {
                const du_t *x = &rs.r[q].t.t[j];
                du_tl_put(&first, x->name, x->name_len, x->dtype, x->rank, x->shape, x->data, x->size, 0);
            }
        target = du_tl_file_size(&first);
        du_tl_free(&first);
        krows_free(&rs);
        /* the real run */
        DU_OK("open", kv_open(root, 0, &c, target, NULL, &w, &e), e);
        for (i = 0; i < ks[v] + 3; i++) {
            char key[32];
            kcell k;
            snprintf(key, sizeof key, "key-%d", i * 37);
            k = cell(key, (uint32_t)i, 3, 100 + (uint64_t)(i % 5) * 311, 6);
            DU_OK("row", kv_put(w, 0, &k, &rs, &e), e);
        }
        DU_OK("commit", sts_task_commit(w, &msg, &len, &e), e);
        sts_task_close(w);
        {
            size_t in0 = 0;
            for (q = 0; q < rs.n; q++) in0 += rs.r[q].shard == 0;
            if (in0 != (size_t)ks[v])
                tu_sb_printf(&notes, "\n  %s: target %llu bytes is exactly the file of the first %d rows, but shard 0 took %zu rows",
                             label, (unsigned long long)target, ks[v], in0);
        }
        {
            roll_stats st;
            check_rolls(label, root, &rs, target, &st, &notes);
        }
        sts_free(NULL, msg, len + 1);
        krows_free(&rs);
        tf_rmtree(root);
    }
    tu_notes_done(&notes, "exact fit");
}

/* The real minimum: target_shard_size_mb=50 and ~120 MB of rows of ~1 MB. */
static void test_roller_50mb(void **state) {
    char root[64];
    sts_write_config c;
    sts_error e;
    sts_task_writer *w;
    char *msg;
    size_t len, i;
    tu_alloc al;
    sts_options o;
    uint8_t *img;
    tf_names names;
    uint64_t target, total = 0, sizes[8];
    size_t rows_in[8] = { 0 };
    uint32_t row_shard[130];
    uint64_t row_bytes = 1000000;
    tu_sb notes = { 0, 0, 0 };
    (void)state;
    if (tu_quick()) { skip(); return; }
    tf_tmpdir(root, sizeof root);
    kv_config(&c);
    DU_OK("set", sts_write_config_set(&c, "target_shard_size_mb", "50", &e), e);
    o = tu_alloc_opts(&al, NULL);
    img = (uint8_t *)malloc((size_t)row_bytes);
    assert_non_null(img);
    DU_OK("open", kv_open(root, 0, &c, 0, &o, &w, &e), e);
    target = 50u * 1048576u;  /* MiB, as the connector counts: a shard that rolls with a row's room left fails below */
    for (i = 0; i < 120; i++) {
        sts_value v[3];
        char key[16];
        uint64_t shape[1] = { row_bytes };
        float emb[4] = { 1, 2, 3, (float)i };
        memset(img, (int)i, (size_t)row_bytes);
        snprintf(key, sizeof key, "r%03zu", i);
        memset(v, 0, sizeof v);
        v[0].data = key; v[0].size = strlen(key);
        v[1].data = img; v[1].size = row_bytes; v[1].dtype = STS_DTYPE_U8; v[1].rank = 1; v[1].shape = shape;
        v[2].data = emb; v[2].size = 4;
        DU_OK("row", sts_task_write(w, v, &e), e);
        row_shard[i] = (uint32_t)sts_task_get_progress(w).shards;
    }
    DU_OK("commit", sts_task_commit(w, &msg, &len, &e), e);
    sts_task_close(w);
    sts_free(&o, msg, len + 1);
    tu_alloc_check("50 MB", &al);
    free(img);
    names = du_list_shards(root);
    assert_int_equal(names.n, 3);
    for (i = 0; i < 120; i++) rows_in[row_shard[i]]++;
    for (i = 0; i < names.n; i++) {
        char p[256];
        sts_file *f;
        sts_options so;
        tf_join(p, sizeof p, root, names.v[i]);
        sizes[i] = (uint64_t)tf_file_size(p);
        total += sizes[i];
        memset(&so, 0, sizeof so);
        so.strict = 1;
        so.header_only = 1;
        DU_OK("strict", sts_open(p, &so, &f, &e), e);
        assert_int_equal(sts_count(f), rows_in[i] * 2);
        sts_close(f);
        if (sizes[i] > target) tu_sb_printf(&notes, "\n  shard %zu: %llu bytes > target %llu", i, (unsigned long long)sizes[i], (unsigned long long)target);
        /* one more row (its two tensors and their header entries, ~1,000,100 bytes) would not have fitted */
        if (i + 1 < names.n && sizes[i] + row_bytes + 16 + 100 <= target)
            tu_sb_printf(&notes, "\n  shard %zu: rolled at %llu bytes although a ~%llu-byte row fits under %llu", i, (unsigned long long)sizes[i],
                         (unsigned long long)row_bytes, (unsigned long long)target);
    }
    assert_true(total > 120000000u);
    /* memory: one open shard (<= target) plus buffers, never the whole task */
    if ((uint64_t)al.peak > target + ((uint64_t)8 << 20))
        tu_sb_printf(&notes, "\n  peak memory %lld bytes for a %llu-byte target and %llu bytes of data", (long long)al.peak, (unsigned long long)target, (unsigned long long)total);
    tf_names_free(&names);
    tf_rmtree(root);
    tu_notes_done(&notes, "50 MB");
}

/* ================================================================================================
   one tensor column: shards in layout order (the writer keeps their size and CRC as rows come)
   and shards that leave it mid-way, every shard byte for byte the reference writer's and its
   commit-message CRC-32C that of the file's bytes */
static const sts_column KV1[4] = { { "k", STS_VALUE_STRING, STS_DTYPE_U8 }, { "x", STS_VALUE_TENSOR, STS_DTYPE_F32 },
                                   { "y", STS_VALUE_TENSOR, STS_DTYPE_I64 }, { "z", STS_VALUE_TENSOR, STS_DTYPE_U8 } };
/* the same columns, in the layout's order (dtype rank descending): a row's tensors in order */
static const sts_column KV1_LAYOUT[4] = { { "k", STS_VALUE_STRING, STS_DTYPE_U8 }, { "y", STS_VALUE_TENSOR, STS_DTYPE_I64 },
                                          { "x", STS_VALUE_TENSOR, STS_DTYPE_F32 }, { "z", STS_VALUE_TENSOR, STS_DTYPE_U8 } };
static size_t k1_cols = 2;  /* KV1's first 2 columns, or all 4: tensors of three dtypes a row */
static const sts_column *k1_schema = KV1;  /* or KV1_LAYOUT (k1_cols 4) */
static const uint64_t K1_Y_SHAPE[1] = { 2 }, K1_Z_SHAPE[2] = { 3, 1 };
static void k1_yz(uint8_t *y, uint8_t *z, size_t row) {  /* the row's y (I64 [2]) and z (U8 [3, 1]) */
    size_t i;
    for (i = 0; i < 16; i++) y[i] = (uint8_t)(row * 13 + i);
    for (i = 0; i < 3; i++) z[i] = (uint8_t)(row + 100 * i);
}
typedef struct k1row { char key[48]; size_t klen; uint32_t rank; uint64_t shape[3]; uint32_t shard; } k1row;
static int k1_lw;  /* the run's duplicatesStrategy is lastWin: a later row's tensors replace (else the keys are distinct) */
static int k1_sync;  /* k1_run without the I/O thread: chunks come back as they are written, in a fixed order */
static uint32_t crc_bits(const uint8_t *p, size_t n) {  /* bit by bit, reflected 0x82F63B78 */
    uint32_t c = 0xffffffffu;
    size_t i;
    int k;
    for (i = 0; i < n; i++) {
        c ^= p[i];
        for (k = 0; k < 8; k++) c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1u)));
    }
    return ~c;
}
static int k1_cmp(const void *a, const void *b) {
    const k1row *x = (const k1row *)a, *y = (const k1row *)b;
    size_t m = x->klen < y->klen ? x->klen : y->klen;
    int c = memcmp(x->key, y->key, m);
    return c ? c : (x->klen > y->klen) - (x->klen < y->klen);
}
static void k1_data(uint8_t *d, size_t n, size_t row) {
    size_t i;
    for (i = 0; i < n; i++) d[i] = (uint8_t)(i * 31 + row * 7 + 5);
}
static uint64_t k1_bytes(const k1row *r) {
    uint64_t b = 4;
    uint32_t d;
    for (d = 0; d < r->rank; d++) b *= r->shape[d];
    return b;
}
/* The rows' tensors in shard s (a later row with the same key replaces, lastWin). */
static size_t k1_most(const k1row *rs, size_t n) {  /* the largest row's x bytes, at least 64 KiB */
    size_t i, most = 1 << 16;
    for (i = 0; i < n; i++) if (k1_bytes(&rs[i]) > most) most = (size_t)k1_bytes(&rs[i]);
    return most;
}
static void k1_expect(const k1row *rs, size_t n, uint32_t s, size_t extra, du_tl *tl) {
    size_t i;
    uint8_t *d = (uint8_t *)malloc(k1_most(rs, n));
    char name[64];
    assert_non_null(d);
    for (i = 0; i < n; i++) {
        if (rs[i].shard != s && !(extra && i == extra)) continue;
        memcpy(name, rs[i].key, rs[i].klen);
        memcpy(name + rs[i].klen, "__x", 3);
        k1_data(d, (size_t)k1_bytes(&rs[i]), i);
        du_tl_put(tl, name, rs[i].klen + 3, STS_DTYPE_F32, rs[i].rank, rs[i].shape, d, k1_bytes(&rs[i]), k1_lw);
        if (k1_cols == 4) {
            uint8_t y[16], z[3];
            k1_yz(y, z, i);
            name[rs[i].klen + 2] = 'y';
            du_tl_put(tl, name, rs[i].klen + 3, STS_DTYPE_I64, 1, K1_Y_SHAPE, y, 16, k1_lw);
            name[rs[i].klen + 2] = 'z';
            du_tl_put(tl, name, rs[i].klen + 3, STS_DTYPE_U8, 2, K1_Z_SHAPE, z, 3, k1_lw);
        }
    }
    free(d);
}
/* ---- kv_layout = arrival (format/SPECIFICATION.md 12.2.3), checked from the bytes alone ---- */
static int k1_arrival;     /* k1_run: the arrival layout; every shard checked by arrival_expect_note */
static long k1_padded;     /* arrival shards whose header left room unused (they went out while filling) */
static long k1_calls[2];   /* the hook's pwrite and ftruncate calls */
static int k1_count(void *user, const char *op) {
    (void)user;
    if (!strcmp(op, "pwrite")) k1_calls[0]++;
    else if (!strcmp(op, "ftruncate")) k1_calls[1]++;
    return 0;
}
static void ar_str(tu_sb *j, const char *p, size_t n) {  /* a JSON string as section 7 escapes it */
    size_t i;
    tu_sb_printf(j, "\"");
    for (i = 0; i < n; i++) {
        unsigned char c = (unsigned char)p[i];
        if (c == '"' || c == '\\') tu_sb_printf(j, "\\%c", c);
        else if (c == 8) tu_sb_printf(j, "\\b");
        else if (c == 9) tu_sb_printf(j, "\\t");
        else if (c == 10) tu_sb_printf(j, "\\n");
        else if (c == 12) tu_sb_printf(j, "\\f");
        else if (c == 13) tu_sb_printf(j, "\\r");
        else if (c < 0x20) tu_sb_printf(j, "\\u%04x", c);
        else tu_sb_printf(j, "%c", c);
    }
    tu_sb_printf(j, "\"");
}
/* The header's JSON for l's tensors in l's order, their data from position `wrap` on first (offsets
   from 0), then that of those before it (offsets from `front`, the others' bytes). */
static void ar_json(tu_sb *j, const du_tl *l, size_t wrap, uint64_t front) {
    uint64_t off = front;
    size_t i;
    tu_sb_printf(j, "{");
    for (i = 0; i < l->n; i++) {
        const du_t *t = &l->t[i];
        uint32_t d;
        if (i == wrap) off = 0;
        if (i) tu_sb_printf(j, ",");
        ar_str(j, t->name, t->name_len);
        tu_sb_printf(j, ":{\"dtype\":\"%s\",\"shape\":[", sts_dtype_name(t->dtype));
        for (d = 0; d < t->rank; d++) tu_sb_printf(j, d ? ",%llu" : "%llu", (unsigned long long)t->shape[d]);
        tu_sb_printf(j, "],\"data_offsets\":[%llu,%llu]}", (unsigned long long)off, (unsigned long long)(off + t->size));
        off += t->size;
    }
    tu_sb_printf(j, "}");
}
/* The file at path holds l's tensors in l's order (12.2.3): N % 8 == 0; the compact header naming
   them in that order, the data of the last ones first (offsets from 0; none: F = 0), then the
   others' (offsets from F, the first ones' bytes), no gap; spaces to N, at most an eighth of the
   file unused beyond the 8-byte padding; then their bytes in that order. F is read from the
   first entry's offset; the run of last tensors from it. Differences go to notes (returns 0). */
static long k1_front;      /* arrival shards whose last tensors went in front (F > 0) */
static int arrival_expect_note(tu_sb *notes, const char *label, const char *path, const du_tl *l) {
    tu_sb j = { 0, 0, 0 };
    uint64_t n = 0, hl, pos, k, front = 0, total = 0, tail = 0;
    size_t i, wrap, got_n = 0;
    uint8_t *got = tf_read_opt(path, &got_n);
    const char *name = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    const char *why = got && got_n >= 8 ? "no run of last tensors holds the first entry's offset" : "no file, or under 8 bytes";
    static const char key[] = "\"data_offsets\":[";
    for (i = 0; i < l->n; i++) total += l->t[i].size;
    if (got && got_n >= 8 && (n = tu_le64(got)) <= got_n - 8) {  /* F: the first entry's begin offset */
        for (k = 8; k + sizeof key - 1 < 8 + n; k++)
            if (memcmp(got + k, key, sizeof key - 1) == 0) { front = strtoull((const char *)got + k + sizeof key - 1, NULL, 10); break; }
    }
    /* every run of last tensors with F bytes (empty tensors make several); the first that matches */
    for (wrap = l->n + 1, tail = 0; wrap-- > 0 && why;) {
        if (wrap < l->n) tail += l->t[wrap].size;
        if (tail > front) break;
        if (tail != front || (front && wrap == l->n)) continue;
        j.n = 0;
        ar_json(&j, l, front ? wrap : l->n, front);
        hl = (j.n + 7) / 8 * 8;
        why = NULL;
        if (!got || got_n < 8) why = "no file, or under 8 bytes";
        else if (n % 8 || n < j.n || 8 + n + total != got_n) why = "N, or the file's size";
        else if (memcmp(got + 8, j.p, j.n) != 0) why = "the header's JSON";
        else if ((n - hl) * 8 > got_n) why = "more than an eighth of the file is unused room";
        else {
            for (k = 8 + j.n; k < 8 + n && !why; k++) if (got[k] != ' ') why = "the padding";
            pos = 8 + n;
            for (i = front ? wrap : l->n; i < l->n && !why; pos += l->t[i].size, i++)
                if (l->t[i].size && memcmp(got + pos, l->t[i].data, (size_t)l->t[i].size) != 0) why = "a tensor's bytes";
            for (i = 0; i < (front ? wrap : l->n) && !why; pos += l->t[i].size, i++)
                if (l->t[i].size && memcmp(got + pos, l->t[i].data, (size_t)l->t[i].size) != 0) why = "a tensor's bytes";
            if (!why && n > hl) k1_padded++;
            if (!why && front) k1_front++;
        }
    }
    if (why) tu_sb_printf(notes, "\n  %s: %s (%zu bytes, %zu tensors, F %llu): %s", label, name, got_n, l->n,
                          (unsigned long long)front, why);
    free(got);
    tu_sb_free(&j);
    return !why;
}
/* The KV1 jobs' config: key column "k", no fsync, the roll-over target in bytes, the layout. */
static void k1_config(sts_write_config *c, uint64_t target, int arrival) {
    memset(c, 0, sizeof *c);
    c->name_col = "k";
    c->no_fsync = 1;
    c->target_shard_bytes = target;
    c->kv_layout = arrival ? STS_KV_ARRIVAL : STS_KV_SORTED;
}
/* Writes rs (target in bytes), then checks every shard: bytes, CRC-32C, and the roll rule (within
   the target unless one row alone; rolled only when the next row would not fit). */
static void k1_run(const char *label, k1row *rs, size_t n, uint64_t target, int last_win, tu_sb *notes) {
    char root[64], p[256];
    sts_write_config c;
    sts_error e;
    sts_task_writer *w;
    sts_value v[4];
    uint8_t *d = (uint8_t *)malloc(k1_most(rs, n)), y[16], z[3];
    char *msg;
    size_t len, i;
    tf_names names;
    sts_options o;
    assert_non_null(d);
    tf_tmpdir(root, sizeof root);
    k1_config(&c, target, k1_arrival);
    if (last_win) c.duplicates = STS_DUPLICATES_LAST_WIN;
    k1_lw = last_win;
    c.no_io_thread = k1_sync;
    memset(&o, 0, sizeof o);
    o.io_fault = k1_count;
    DU_OK("prepare", sts_dataset_prepare(root, &c, k1_schema, k1_cols, NULL, &e), e);
    DU_OK("open", sts_task_open(root, 0, &c, k1_schema, k1_cols, &o, &w, &e), e);
    for (i = 0; i < n; i++) {
        memset(v, 0, sizeof v);
        v[0].data = rs[i].key; v[0].size = rs[i].klen;
        k1_data(d, (size_t)k1_bytes(&rs[i]), i);
        v[1].data = d; v[1].size = k1_bytes(&rs[i]); v[1].dtype = STS_DTYPE_F32; v[1].rank = rs[i].rank;
        v[1].shape = rs[i].shape;
        k1_yz(y, z, i);
        v[2].data = y; v[2].size = 16; v[2].dtype = STS_DTYPE_I64; v[2].rank = 1; v[2].shape = K1_Y_SHAPE;
        v[3].data = z; v[3].size = 3; v[3].dtype = STS_DTYPE_U8; v[3].rank = 2; v[3].shape = K1_Z_SHAPE;
        if (k1_schema == KV1_LAYOUT) { sts_value t = v[1]; v[1] = v[2]; v[2] = t; }
        DU_OK(label, sts_task_write(w, v, &e), e);
        rs[i].shard = (uint32_t)sts_task_get_progress(w).shards;
    }
    DU_OK("commit", sts_task_commit(w, &msg, &len, &e), e);
    sts_task_close(w);
    names = du_list_shards(root);
    for (i = 0; i < names.n; i++) {
        uint32_t t, s;
        du_tl tl = { 0, 0, 0 };
        const char *at;
        uint8_t *bytes;
        size_t nb, q, first = n, next = n;
        char want[128];
        unsigned long crc;
        assert_true(du_shard_name(names.v[i], &t, &s, NULL));
        tf_join(p, sizeof p, root, names.v[i]);
        k1_expect(rs, n, s, 0, &tl);
        if (k1_arrival) arrival_expect_note(notes, label, p, &tl);
        else du_expect_file_note(notes, label, p, &tl);
        /* the message's CRC-32C is the file's */
        snprintf(want, sizeof want, "\"shard_path\":\"%s\"", names.v[i]);
        at = strstr(msg, want);
        assert_non_null(at);
        at = strstr(at, "\"crc32c\":");
        assert_non_null(at);
        crc = strtoul(at + 9, NULL, 10);
        bytes = tf_read_opt(p, &nb);
        assert_non_null(bytes);
        if (crc != crc_bits(bytes, nb))
            tu_sb_printf(notes, "\n  %s: shard %u: the message says CRC-32C %lu, its bytes have %lu", label, s, crc,
                         (unsigned long)crc_bits(bytes, nb));
        /* the roll rule */
        for (q = 0; q < n; q++) {
            if (rs[q].shard == s && first == n) first = q;
            if (rs[q].shard == s + 1 && next == n) next = q;
        }
        if (nb > target) {
            size_t rows = 0;
            for (q = 0; q < n; q++) rows += rs[q].shard == s;
            if (rows != 1) tu_sb_printf(notes, "\n  %s: shard %u has %zu bytes > target", label, s, nb);
        }
        if (next < n && !k1_arrival) {  /* arrival: a streaming shard rolls on its room, unseen here */
            du_tl with = { 0, 0, 0 };
            k1_expect(rs, n, s, next, &with);
            if (du_tl_file_size(&with) <= target)
                tu_sb_printf(notes, "\n  %s: shard %u was rolled although the next row fitted", label, s);
            du_tl_free(&with);
        }
        free(bytes);
        du_tl_free(&tl);
    }
    if (k1_arrival) {  /* the dataset commit reads every header; the check reads every byte against its CRC */
        const char *const msgs[1] = { msg };
        sts_dataset_summary sum;
        sts_check_config cc;
        sts_check_report rep;
        DU_OK(label, sts_dataset_commit(root, &c, msgs, &len, 1, NULL, &sum, &e), e);
        memset(&cc, 0, sizeof cc);
        cc.data = 1;
        DU_OK(label, sts_dataset_check(root, &cc, NULL, &rep, &e), e);
        if (rep.checksums != rep.shards || rep.shards != names.n)
            tu_sb_printf(notes, "\n  %s: the check read %llu shards' bytes of %llu", label,
                         (unsigned long long)rep.checksums, (unsigned long long)rep.shards);
    }
    tf_names_free(&names);
    sts_free(NULL, msg, len + 1);
    free(d);
    tf_rmtree(root);
}
static void test_in_order_shards(void **state) {
    static const char *odd[] = { "a\"q", "b\\\\s", "c\nl", "d\001c", "e\xc3\xa9t\xe2\x82\xac", "f\x7f", "g/\t" };
    k1row *rs = (k1row *)calloc(600, sizeof *rs);
    tu_rng rng = { 7 };
    tu_sb notes = { 0, 0, 0 };
    size_t i, n;
    (void)state;
    assert_non_null(rs);
    /* 1. sorted keys of varying lengths, shapes changing mid-shard (rank 0 to 3), rolls on a small
          target with offsets crossing powers of ten */
    for (n = 0; n < 500; n++) {
        k1row *r = &rs[n];
        uint32_t kl = 1 + tu_below(&rng, 30), k, pick = tu_below(&rng, 10);
        for (k = 0; k < kl; k++) r->key[k] = (char)('a' + tu_below(&rng, 26));
        r->klen = kl;
        if (pick < 6) { r->rank = 1; r->shape[0] = 64; }  /* runs of one shape */
        else if (pick < 7) r->rank = 0;
        else if (pick < 8) { r->rank = 1; r->shape[0] = 0; }
        else { r->rank = 3; r->shape[0] = 1 + tu_below(&rng, 4); r->shape[1] = 1 + tu_below(&rng, 9);
               r->shape[2] = 1 + tu_below(&rng, 30); }
    }
    qsort(rs, n, sizeof *rs, k1_cmp);
    for (i = 1, n = 1; i < 500; i++) if (k1_cmp(&rs[n - 1], &rs[i]) != 0) rs[n++] = rs[i];  /* distinct */
    k1_run("in order, 20 KB target", rs, n, 20000, 0, &notes);
    k1_run("in order, 1 MB target", rs, n, 1000000, 0, &notes);
    k1_run("in order, 9 KB target", rs, n, 9000, 0, &notes);
    /* 2. names the header escapes, in order */
    for (i = 0; i < sizeof odd / sizeof *odd; i++) {
        rs[i].klen = strlen(odd[i]);
        memcpy(rs[i].key, odd[i], rs[i].klen);
        rs[i].rank = 1;
        rs[i].shape[0] = 3 + i;
    }
    n = i;
    qsort(rs, n, sizeof *rs, k1_cmp);
    k1_run("escaped names", rs, n, 1000000, 0, &notes);
    k1_run("escaped names, small target", rs, n, 200, 0, &notes);
    /* 3. the order breaks mid-shard (a key sorting earlier), then goes on */
    for (n = 0; n < 300; n++) {
        snprintf(rs[n].key, sizeof rs[n].key, "key-%05u", (unsigned)(n == 150 ? 8 : n * 2 + 1));
        rs[n].klen = strlen(rs[n].key);
        rs[n].rank = 1;
        rs[n].shape[0] = 25 + n % 3;
    }
    k1_run("order broken", rs, n, 40000, 0, &notes);
    /* 4. lastWin: a key of the open shard again (a replacement), in a shard still in order */
    snprintf(rs[150].key, sizeof rs[150].key, "key-%05u", 297u);
    rs[150].klen = strlen(rs[150].key);
    k1_run("lastWin", rs, n, 40000, 1, &notes);
    k1_run("lastWin, one shard", rs, n, 10000000, 1, &notes);
    /* 5. a cell larger than a 4 MiB write chunk gets a chunk of its own: the second shard opens that
          chunk (the only one it fits) before the first one, so its data must go out in the order
          the chunks opened, not in the chunks' own order */
    for (n = 0; n < 4; n++) {
        snprintf(rs[n].key, sizeof rs[n].key, "big-%u", (unsigned)n);
        rs[n].klen = strlen(rs[n].key);
        rs[n].rank = 1;
        rs[n].shape[0] = n % 3 ? ((uint64_t)1 << 20) + 1 : 4;  /* 16 bytes, 4 MiB + 4, 4 MiB + 4, 16 */
    }
    k1_run("a cell over a chunk", rs, n, ((uint64_t)4 << 20) + 4096, 0, &notes);
    /* 6. shards of several full 4 MiB chunks: a chunk that opens while the shard before is still
          going out has its CRC taken by the caller, cell by cell (sts__kv_chunk_open); the others
          by the I/O thread; each shard's CRC-32C must be its bytes' either way */
    {
        size_t most = tu_quick() ? 150 : 400;
        for (n = 0; n < most; n++) {
            snprintf(rs[n].key, sizeof rs[n].key, "row-%05u", (unsigned)n);
            rs[n].klen = strlen(rs[n].key);
            rs[n].rank = 1;
            rs[n].shape[0] = 16384;  /* 64 KiB */
        }
        k1_run("full chunks, several shards", rs, n, tu_quick() ? 5000000 : 10000000, 0, &notes);
        /* lastWin: a key of the open shard again, once in the first shard and once in a later one
           (its chunk's bytes then are not the shard's data whole: the CRC must not be the chunk's) */
        snprintf(rs[60].key, sizeof rs[60].key, "row-%05u", 59u);
        snprintf(rs[n - 10].key, sizeof rs[n - 10].key, "row-%05u", (unsigned)(n - 12));
        k1_run("full chunks, several shards, lastWin", rs, n, tu_quick() ? 5000000 : 10000000, 1, &notes);
    }
    free(rs);
    tu_notes_done(&notes, "in-order shards");
}
/* n rows of KV1 through w: keys from fmt and the row number, each one F32 [16384] tensor (64 KiB)
   of d's bytes. */
static void ar_rows(sts_task_writer *w, const uint8_t *d, size_t n, const char *fmt) {
    static const uint64_t shape[1] = { 16384 };
    size_t i;
    for (i = 0; i < n; i++) {
        char key[16];
        sts_value v[2];
        sts_error e;
        snprintf(key, sizeof key, fmt, (unsigned)i);
        memset(v, 0, sizeof v);
        v[0].data = key; v[0].size = strlen(key);
        v[1].data = d; v[1].size = 1 << 16; v[1].dtype = STS_DTYPE_F32; v[1].rank = 1; v[1].shape = shape;
        DU_OK("row", sts_task_write(w, v, &e), e);
    }
}
/* kv_layout = arrival: rows in any order, of one or three dtypes, escaped names, small and large
   targets, a cell over a chunk, shards of several full chunks written while they fill, lastWin
   (a key of the open shard rolls it); each shard as arrival_expect_note says, its CRC-32C its
   bytes', the roll within the target, the dataset committed and checked byte by byte. Some shards
   must have gone out while filling (padded room, pwrite calls) and a task's short last shard must
   have been written again compact (ftruncate). */
static void test_arrival_layout(void **state) {
    static const char *odd[] = { "z\"q", "b\\\\s", "c\nl", "d\001c", "e\xc3\xa9t\xe2\x82\xac", "f\x7f", "g/\t" };
    k1row *rs = (k1row *)calloc(600, sizeof *rs);
    tu_rng rng = { 11 };
    tu_sb notes = { 0, 0, 0 };
    size_t i, n, most = tu_quick() ? 150 : 400;
    (void)state;
    assert_non_null(rs);
    k1_arrival = 1;
    k1_padded = k1_front = k1_calls[0] = k1_calls[1] = 0;
    /* 1. keys in no order, shapes of rank 0 to 3 and empty tensors; one and three dtypes a row */
    for (n = 0; n < 500; n++) {
        k1row *r = &rs[n];
        uint32_t kl = 1 + tu_below(&rng, 30), k, pick = tu_below(&rng, 10);
        for (k = 0; k < kl; k++) r->key[k] = (char)('a' + tu_below(&rng, 26));
        snprintf(r->key + kl, sizeof r->key - kl, "%03u", (unsigned)n);  /* distinct */
        r->klen = kl + 3;
        if (pick < 6) { r->rank = 1; r->shape[0] = 64; }
        else if (pick < 7) r->rank = 0;
        else if (pick < 8) { r->rank = 1; r->shape[0] = 0; }
        else { r->rank = 3; r->shape[0] = 1 + tu_below(&rng, 4); r->shape[1] = 1 + tu_below(&rng, 9);
               r->shape[2] = 1 + tu_below(&rng, 30); }
    }
    k1_run("arrival, 20 KB target", rs, n, 20000, 0, &notes);
    k1_run("arrival, 1 MB target (one shard, its room given back)", rs, n, 1000000, 0, &notes);
    k1_run("arrival, 9 KB target", rs, n, 9000, 0, &notes);
    k1_cols = 4;
    k1_run("arrival, three dtypes a row, 20 KB target", rs, n, 20000, 0, &notes);
    k1_cols = 2;
    /* 2. names the header escapes */
    for (i = 0; i < sizeof odd / sizeof *odd; i++) {
        rs[i].klen = strlen(odd[i]);
        memcpy(rs[i].key, odd[i], rs[i].klen);
        rs[i].rank = 1;
        rs[i].shape[0] = 3 + i;
    }
    k1_run("arrival, escaped names", rs, i, 1000000, 0, &notes);
    k1_run("arrival, escaped names, small target", rs, i, 200, 0, &notes);
    /* 3. lastWin: a key of the open shard again rolls it (the earlier copy stays in its shard) */
    for (n = 0; n < 300; n++) {
        snprintf(rs[n].key, sizeof rs[n].key, "key-%05u", (unsigned)((n * 7919) % 300));
        rs[n].klen = strlen(rs[n].key);
        rs[n].rank = 1;
        rs[n].shape[0] = 25 + n % 3;
    }
    snprintf(rs[150].key, sizeof rs[150].key, "%s", rs[148].key);
    snprintf(rs[151].key, sizeof rs[151].key, "%s", rs[20].key);
    k1_run("arrival, lastWin", rs, n, 40000, 1, &notes);
    k1_run("arrival, lastWin, one shard", rs, n, 10000000, 1, &notes);
    /* lastWin in place: ten keys again and again, the same shapes, their bytes still in memory: one
       shard holding each key's last row where its first one was */
    for (n = 0; n < 300; n++) {
        snprintf(rs[n].key, sizeof rs[n].key, "rep-%u", (unsigned)(n % 10));
        rs[n].klen = strlen(rs[n].key);
        rs[n].rank = 1;
        rs[n].shape[0] = 25;
    }
    k1_run("arrival, lastWin in place", rs, n, 10000000, 1, &notes);
    if (rs[n - 1].shard != 0) tu_sb_printf(&notes, "\n  lastWin in place: %u shards for 10 keys", (unsigned)rs[n - 1].shard + 1);
    k1_cols = 4;
    k1_run("arrival, lastWin in place, three dtypes a row", rs, n, 10000000, 1, &notes);
    k1_cols = 2;
    if (rs[n - 1].shard != 0) tu_sb_printf(&notes, "\n  lastWin in place, 3 dtypes: %u shards for 10 keys", (unsigned)rs[n - 1].shard + 1);
    /* a key whose bytes are still in memory is replaced in place; one whose bytes went out already
       rolls the shard, and so does one of another shape */
    for (n = 0; n < 153; n++) {  /* 64 rows a chunk: by row 151, row 0's chunk went out (and, without
                                     the thread, came back and holds rows from 129 on) */
        snprintf(rs[n].key, sizeof rs[n].key, "big-%03u", (unsigned)(n < 150 ? n : n == 150 ? 149 : 0));
        rs[n].klen = strlen(rs[n].key);
        rs[n].rank = 1;
        rs[n].shape[0] = n == 152 ? 16383 : 16384;  /* 64 KiB */
    }
    for (k1_sync = 0; k1_sync < 2; k1_sync++) {  /* without the thread, row 0's chunk holds newer rows by row 201 */
        k1_run(k1_sync ? "arrival, lastWin in place and not, no I/O thread" : "arrival, lastWin in place and not", rs, n,
               40000000, 1, &notes);
        if (rs[150].shard != rs[149].shard || rs[151].shard != rs[149].shard + 1 || rs[152].shard != rs[151].shard + 1)
            tu_sb_printf(&notes, "\n  lastWin%s: rows 149-152 went to shards %u, %u, %u, %u (want s, s, s + 1, s + 2)",
                         k1_sync ? " (no I/O thread)" : "", (unsigned)rs[149].shard, (unsigned)rs[150].shard,
                         (unsigned)rs[151].shard, (unsigned)rs[152].shard);
    }
    k1_sync = 0;
    {   /* random: 600 rows over 60 keys (repeats near and far), 1 KiB or 64 KiB by key, now and then
           another shape, random targets of 3 to 12 MB: in place, rolls, held chunks and runs in
           front together, every shard's bytes as k1_expect says (lastWin keeps an entry's place) */
        int round, rounds = tu_quick() ? 2 : 6;
        for (round = 0; round < rounds; round++) {
            char label[96];
            uint64_t target = 3000000 + tu_below(&rng, 9000000);
            for (n = 0; n < 600; n++) {
                uint32_t key = tu_below(&rng, 60);
                snprintf(rs[n].key, sizeof rs[n].key, "p%02u", (unsigned)key);
                rs[n].klen = strlen(rs[n].key);
                rs[n].rank = 1;
                rs[n].shape[0] = (key % 4 ? 256 : 16384) - (tu_below(&rng, 20) == 0);
            }
            snprintf(label, sizeof label, "arrival, lastWin at random, %llu-byte target", (unsigned long long)target);
            k1_run(label, rs, n, target, 1, &notes);
        }
    }
    /* 4. cells over a chunk; then shards of several full 4 MiB chunks, going out as they fill */
    for (n = 0; n < 4; n++) {
        snprintf(rs[n].key, sizeof rs[n].key, "big-%u", (unsigned)(3 - n));
        rs[n].klen = strlen(rs[n].key);
        rs[n].rank = 1;
        rs[n].shape[0] = n % 3 ? ((uint64_t)1 << 20) + 1 : 4;
    }
    k1_run("arrival, a cell over a chunk", rs, n, ((uint64_t)4 << 20) + 4096, 0, &notes);
    for (n = 0; n < most; n++) {
        snprintf(rs[n].key, sizeof rs[n].key, "row-%05u", (unsigned)((n * 37) % most));
        rs[n].klen = strlen(rs[n].key);
        rs[n].rank = 1;
        rs[n].shape[0] = 16384;  /* 64 KiB */
    }
    k1_run("arrival, full chunks, several shards", rs, n, tu_quick() ? 5000000 : 10000000, 0, &notes);
    snprintf(rs[60].key, sizeof rs[60].key, "%s", rs[59].key);
    k1_run("arrival, full chunks, lastWin", rs, n, tu_quick() ? 5000000 : 10000000, 1, &notes);
    {   /* 5. shards of several chunks whose last rows fill the room in front: rows of 1 KiB at a 10 MB
           target; then (not quick) 24,500 rows of 256 bytes and one of 2.5 MB at 16 MB: one shard
           whose room the cells after its header leave far larger than its last cell (none fits in
           front): written, then compacted */
        size_t many = tu_quick() ? 9000 : 24500;  /* and at least 9,000 */
        k1row *sm = (k1row *)calloc(many + 1, sizeof *sm);
        assert_non_null(sm);
        for (n = 0; n < many; n++) {
            snprintf(sm[n].key, sizeof sm[n].key, "s%05u", (unsigned)n);
            sm[n].klen = strlen(sm[n].key);
            sm[n].rank = 1;
            sm[n].shape[0] = 255 + n % 2;  /* 1,020 and 1,024 bytes: not every run of last rows keeps N % 8 */
        }
        k1_run("arrival, 1 KiB rows, 10 MB target", sm, n, 10000000, 0, &notes);
        {   /* one shard of 1 KiB rows with a band of 2,000 rows of 8 bytes across offset 10^6 and
               20 to 59 rows of 32 KiB last, at random targets of 11 to 14 MB: the run in front moves
               the band's offsets past 10^6 (two more digits each) while the run's own lose fewer,
               so the JSON outgrows the room left and the run must be found again, shorter */
            int round, rounds = tu_quick() ? 2 : 6;
            for (round = 0; round < rounds; round++) {
                char label[96];
                uint64_t target = 11000000 + tu_below(&rng, 3000000);
                size_t m = 9000, big = 20 + tu_below(&rng, 40);
                for (n = 0; n < m; n++) {
                    sm[n].rank = 1;
                    sm[n].shape[0] = n >= 950 && n < 2950 ? 2 : n >= m - big ? 8192 : 256;
                }
                long fronts = k1_front;
                snprintf(label, sizeof label, "arrival, a run found again, %llu-byte target", (unsigned long long)target);
                k1_run(label, sm, m, target, 0, &notes);
                if (k1_front == fronts) tu_sb_printf(&notes, "\n  %s: no run in front", label);
            }
        }
        if (!tu_quick()) {
            for (n = 0; n < many; n++) sm[n].shape[0] = 64;
            snprintf(sm[n].key, sizeof sm[n].key, "t");
            sm[n].klen = 1;
            sm[n].shape[0] = 625000;
            sm[n].rank = 1;
            k1_run("arrival, small rows and a large one, 16 MB target", sm, n + 1, 16000000, 0, &notes);
        }
        free(sm);
    }
    k1_arrival = 0;
    {   /* 6. a writer closed without its commit while a shard is going out: the folder is as before */
        char root[64];
        sts_write_config c;
        sts_error e;
        sts_task_writer *w;
        uint8_t *d = (uint8_t *)calloc(1, 1 << 16);
        tf_snap before, after;
        long pw = k1_calls[0];
        sts_options o;
        assert_non_null(d);
        tf_tmpdir(root, sizeof root);
        k1_config(&c, 4000000, 1);
        memset(&o, 0, sizeof o);
        o.io_fault = k1_count;
        DU_OK("prepare", sts_dataset_prepare(root, &c, KV1, 2, NULL, &e), e);
        before = tf_snapshot(root, 0);
        DU_OK("open", sts_task_open(root, 0, &c, KV1, 2, &o, &w, &e), e);
        ar_rows(w, d, 100, "a%03u");  /* 6.5 MB: a first shard sealed, the second one going out */
        assert_int_equal(sts_task_get_progress(w).shards, 1);
        sts_task_close(w);
        if (k1_calls[0] == pw) tu_sb_printf(&notes, "\n  abort: no shard went out while filling");
        after = tf_snapshot(root, 0);
        tf_snap_equal(&before, &after, "an arrival writer closed while a shard was going out");
        tf_snap_free(&before);
        tf_snap_free(&after);
        free(d);
        tf_rmtree(root);
    }
    {   /* 7. memory: once the first shard goes out, no buffer is added; the default layout holds a shard */
        static const long most_mib[2] = { 44, 16 };  /* sorted: 10 chunks of 4 MiB; arrival: the 2 it held at 5 MB, + 1 */
        int layout;
        for (layout = 0; layout < 2; layout++) {
            char root[64];
            sts_write_config c;
            sts_error e;
            sts_task_writer *w;
                uint8_t *d = (uint8_t *)calloc(1, 1 << 16);
                tu_alloc al;
            sts_options o = tu_alloc_opts(&al, NULL);
            char *msg;
            size_t len;
            assert_non_null(d);
            tf_tmpdir(root, sizeof root);
            k1_config(&c, 40000000, layout);
            DU_OK("prepare", sts_dataset_prepare(root, &c, KV1, 2, NULL, &e), e);
            DU_OK("open", sts_task_open(root, 0, &c, KV1, 2, &o, &w, &e), e);
            ar_rows(w, d, 700, "m%04u");  /* 45.9 MB: a shard of 40 MB and one of 6 */
            DU_OK("commit", sts_task_commit(w, &msg, &len, &e), e);
            sts_task_close(w);
            sts_free(&o, msg, len + 1);
            tu_alloc_check("memory", &al);
            if (al.peak > most_mib[layout] << 20)
                tu_sb_printf(&notes, "\n  memory, %s: the writer held %lld bytes at its peak", layout ? "arrival" : "sorted",
                             (long long)al.peak);
            if (!layout && al.peak < (40 << 20))  /* the measure sees the default layout hold its shard */
                tu_sb_printf(&notes, "\n  memory, sorted: a peak of %lld bytes, under the shard it holds", (long long)al.peak);
            free(d);
            tf_rmtree(root);
        }
    }
    if (!k1_padded) tu_sb_printf(&notes, "\n  no shard went out while filling (none has unused room)");
    if (!k1_calls[0]) tu_sb_printf(&notes, "\n  no pwrite: no shard's data went out behind its room");
    if (!k1_calls[1] && !tu_quick()) tu_sb_printf(&notes, "\n  no ftruncate: no shard was written again compact");
    if (!k1_front) tu_sb_printf(&notes, "\n  no shard put its last tensors in front of the rest");
    free(rs);
    tu_notes_done(&notes, "arrival layout");
}
/* kv_layout = arrival, every allocation of a task refused in turn (quick: every third): the row or
   commit that meets it fails with NOMEM naming the allocation rule, and the writer, closed (an
   abort), has freed all it took and left the folder as it was; an attempt whose refusal was only a
   hint's, and the first that meets none, write every shard. Shards of 64 KiB rows over a 300 KB target, so
   several go out while they fill and the last is compacted. */
static void test_arrival_alloc_failures(void **state) {
    char root[64];
    sts_write_config c;
    sts_error e;
    sts_result r = STS_ERR_NOMEM;
    uint8_t *d = (uint8_t *)calloc(1, 1 << 16);
    uint64_t shape[1] = { 16384 };
    tf_snap before;
    long k, attempts = 0, refused = 1;
    size_t shards = 0, ref_n[8];
    uint8_t *ref[8] = { 0 };
    (void)state;
    assert_non_null(d);
    tf_tmpdir(root, sizeof root);
    k1_config(&c, 300000, 1);
    DU_OK("prepare", sts_dataset_prepare(root, &c, KV1, 2, NULL, &e), e);
    before = tf_snapshot(root, 0);
    for (k = 0; k < 5000 && refused; k += k && tu_quick() ? 3 : 1) {  /* k = 0: none refused */
        tu_alloc al;
        sts_options o = tu_alloc_opts(&al, NULL);
        sts_task_writer *w = NULL;
        char *msg = NULL, label[64];
        size_t len = 0;
        int i;
        al.fail_at = k;
        attempts++;
        snprintf(label, sizeof label, "allocation %ld refused", k);
        r = sts_task_open(root, 0, &c, KV1, 2, &o, &w, &e);
        for (i = 0; i < 13 && r == STS_OK; i++) {
            char key[16];
            sts_value v[2];
            snprintf(key, sizeof key, "b%03d", (i * 7) % 13);
            memset(v, 0, sizeof v);
            d[0] = (uint8_t)i;
            v[0].data = key; v[0].size = strlen(key);
            v[1].data = d; v[1].size = 1 << 16; v[1].dtype = STS_DTYPE_F32; v[1].rank = 1; v[1].shape = shape;
            r = sts_task_write(w, v, &e);
        }
        if (r == STS_OK) r = sts_task_commit(w, &msg, &len, &e);
        if (r != STS_OK) {
            tf_snap after;
            tu_err_check(label, r, &e, STS_ERR_NOMEM, STS_RULE_ALLOC, (const char *)NULL);
            assert_int_equal(al.failed, 1);
            sts_task_close(w);
            after = tf_snapshot(root, 0);
            tf_snap_equal(&before, &after, label);
            tf_snap_free(&after);
        } else {  /* no refusal, or one of a hint's (memory faulted in ahead): every shard */
            tf_names n;
            size_t j;
            sts_task_close(w);
            sts_free(&o, msg, len + 1);
            n = du_list_shards(root);
            if (!k) shards = n.n;  /* four: 13 rows of 64 KiB, four a shard */
            assert_int_equal(n.n, shards);
            assert_true(n.n <= 8);
            for (j = 0; j < n.n; j++) {  /* the bytes of the attempt that met no refusal; gone again */
                char p[256];
                size_t got_n;
                uint8_t *got;
                tf_join(p, sizeof p, root, n.v[j]);
                got = tf_read_opt(p, &got_n);
                assert_non_null(got);
                if (!k) { ref[j] = got; ref_n[j] = got_n; }
                else {
                    if (got_n != ref_n[j] || memcmp(got, ref[j], got_n) != 0)
                        fail_msg("%s: shard %zu differs from the one written with no refusal", label, j);
                    free(got);
                }
                assert_int_equal(unlink(p), 0);
            }
            tf_names_free(&n);
        }
        refused = !k || al.failed;  /* k past the task's allocations: done */
        tu_alloc_check(label, &al);
    }
    assert_int_equal(r, STS_OK);
    assert_int_equal(refused, 0);
    assert_int_equal(shards, 4);
    for (k = 0; k < 8; k++) free(ref[k]);
    assert_true(attempts > 10);
    tf_snap_free(&before);
    free(d);
    tf_rmtree(root);
}
/* Rows of three dtypes (F32, I64, U8): the shard's layout is each dtype's run in name order, one
   after another (sts__kv_grouped while every run came in order, the general sort once one did
   not): each shard is the reference writer's bytes for its tensors, rolled on its real size. */
static void test_rows_of_three_dtypes(void **state) {
    k1row *rs = (k1row *)calloc(400, sizeof *rs);
    tu_sb notes = { 0, 0, 0 };
    size_t n;
    (void)state;
    k1_arrival = 0;  /* whatever an earlier failure left */
    assert_non_null(rs);
    k1_cols = 4;
    for (n = 0; n < 400; n++) {  /* ascending keys; offsets cross powers of ten */
        snprintf(rs[n].key, sizeof rs[n].key, "key-%05u", (unsigned)(n * 2 + 1));
        rs[n].klen = strlen(rs[n].key);
        rs[n].rank = n % 7 ? 1 : 0;
        rs[n].shape[0] = 20 + n % 5;
    }
    k1_run("three dtypes, one shard", rs, n, 10000000, 0, &notes);
    k1_run("three dtypes, 30 KB target", rs, n, 30000, 0, &notes);
    k1_run("three dtypes, 3 KB target", rs, n, 3000, 0, &notes);
    /* the key "key-1" sorts after "key-00399": its F32 entry breaks the F32 run's order */
    snprintf(rs[200].key, sizeof rs[200].key, "key-1");
    rs[200].klen = strlen(rs[200].key);
    k1_run("three dtypes, order broken", rs, n, 30000, 0, &notes);
    k1_run("three dtypes, order broken, one shard", rs, n, 10000000, 0, &notes);
    /* lastWin: a key of the open shard again */
    snprintf(rs[200].key, sizeof rs[200].key, "key-%05u", 397u);
    rs[200].klen = strlen(rs[200].key);
    k1_run("three dtypes, lastWin", rs, n, 30000, 1, &notes);
    /* columns in the layout's order: the first row is in order, the second breaks it (each
       dtype's CRC is then taken up from the entries so far) */
    snprintf(rs[200].key, sizeof rs[200].key, "key-%05u", 401u);
    rs[200].klen = strlen(rs[200].key);
    k1_schema = KV1_LAYOUT;
    k1_run("three dtypes in layout order, one shard", rs, n, 10000000, 0, &notes);
    k1_run("three dtypes in layout order, 20 KB target", rs, n, 20000, 0, &notes);
    k1_schema = KV1;
    k1_cols = 2;
    free(rs);
    tu_notes_done(&notes, "rows of three dtypes");
}
/* Duplicates while the task's names still ascend (none hashed yet): the last name again, an
   earlier one, across a roll; the refused rows change nothing. */
static void test_dup_after_ascending(void **state) {
    static const char *keys[] = { "a", "b", "c", "c", "d", "a", "e", "b", "f" };
    static const int dup[] = { 0, 0, 0, 1, 0, 1, 0, 1, 0 };
    char root[64];
    sts_write_config c;
    sts_error e;
    sts_task_writer *w;
    sts_value v[2];
    uint8_t d[64];
    uint64_t shape[1] = { 16 };
    char *msg;
    size_t len, i;
    (void)state;
    memset(d, 7, sizeof d);
    tf_tmpdir(root, sizeof root);
    memset(&c, 0, sizeof c);
    c.name_col = "k";
    c.no_fsync = 1;
    c.target_shard_bytes = 300;  /* about two rows a shard */
    DU_OK("prepare", sts_dataset_prepare(root, &c, KV1, 2, NULL, &e), e);
    DU_OK("open", sts_task_open(root, 0, &c, KV1, 2, NULL, &w, &e), e);
    for (i = 0; i < sizeof keys / sizeof *keys; i++) {
        memset(v, 0, sizeof v);
        v[0].data = keys[i]; v[0].size = strlen(keys[i]);
        v[1].data = d; v[1].size = 64; v[1].dtype = STS_DTYPE_F32; v[1].rank = 1; v[1].shape = shape;
        if (dup[i]) tu_err_check(keys[i], sts_task_write(w, v, &e), &e, STS_ERR_DUPLICATE_KEY, STS_RULE_DUPLICATE_KEY,
                                 (const char *)NULL);
        else DU_OK(keys[i], sts_task_write(w, v, &e), e);
    }
    DU_OK("commit", sts_task_commit(w, &msg, &len, &e), e);
    assert_non_null(strstr(msg, "\"rows\":6"));
    sts_task_close(w);
    sts_free(NULL, msg, len + 1);
    tf_rmtree(root);
}
/* lastWin, columns "x" and "_x": key "a_" names "a___x", which key "a" already made with its
   second column, and a new "a____x". The writer builds a row's names where it keeps the new ones:
   the new second name moves down over the first, known one. One shard, the reference layout of
   the rows (row 2's x replacing row 1's _x), with lastWin in the open shard. */
static void test_last_win_known_then_new_name(void **state) {
    static const sts_column schema[3] = { { "k", STS_VALUE_STRING, STS_DTYPE_U8 }, { "x", STS_VALUE_TENSOR, STS_DTYPE_U8 },
                                          { "_x", STS_VALUE_TENSOR, STS_DTYPE_U8 } };
    static const char *keys[] = { "a", "a_", "b" };
    char root[64], p[256], name[32];
    sts_write_config c;
    sts_error e;
    sts_task_writer *w;
    sts_value v[3];
    uint8_t d[2][4];
    uint64_t shape[1] = { 4 };
    du_tl tl = { 0, 0, 0 };
    tu_sb notes = { 0, 0, 0 };
    tf_names names;
    char *msg;
    size_t len, i, j;
    (void)state;
    tf_tmpdir(root, sizeof root);
    memset(&c, 0, sizeof c);
    c.name_col = "k";
    c.no_fsync = 1;
    c.duplicates = STS_DUPLICATES_LAST_WIN;
    DU_OK("prepare", sts_dataset_prepare(root, &c, schema, 3, NULL, &e), e);
    DU_OK("open", sts_task_open(root, 0, &c, schema, 3, NULL, &w, &e), e);
    for (i = 0; i < 3; i++) {
        memset(v, 0, sizeof v);
        v[0].data = keys[i]; v[0].size = strlen(keys[i]);
        for (j = 0; j < 2; j++) {
            memset(d[j], (int)(10 * i + j + 1), 4);
            v[1 + j].data = d[j]; v[1 + j].size = 4; v[1 + j].dtype = STS_DTYPE_U8; v[1 + j].rank = 1;
            v[1 + j].shape = shape;
            snprintf(name, sizeof name, "%s__%s", keys[i], j ? "_x" : "x");
            du_tl_put(&tl, name, strlen(name), STS_DTYPE_U8, 1, shape, d[j], 4, 1);
        }
        DU_OK(keys[i], sts_task_write(w, v, &e), e);
    }
    DU_OK("commit", sts_task_commit(w, &msg, &len, &e), e);
    sts_task_close(w);
    assert_int_equal(tl.n, 5);  /* "a___x" once, row 2's */
    names = du_list_shards(root);
    assert_int_equal(names.n, 1);
    tf_join(p, sizeof p, root, names.v[0]);
    du_expect_file_note(&notes, "known then new name", p, &tl);
    tu_notes_done(&notes, "known then new name");
    tf_names_free(&names);
    du_tl_free(&tl);
    sts_free(NULL, msg, len + 1);
    tf_rmtree(root);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_last_win_known_then_new_name),
        cmocka_unit_test(test_golden_plain),
        cmocka_unit_test(test_golden_index),
        cmocka_unit_test(test_golden_last_win),
        cmocka_unit_test(test_schema_varying),
        cmocka_unit_test(test_tensor_dtypes),
        cmocka_unit_test(test_dup_fail_in_task),
        cmocka_unit_test(test_dup_fail_ambiguous_names),
        cmocka_unit_test(test_dup_fail_across_tasks),
        cmocka_unit_test(test_last_win),
        cmocka_unit_test(test_last_win_wide_task_ids),
        cmocka_unit_test(test_last_win_wide_shard_numbers),
        cmocka_unit_test(test_keys),
        cmocka_unit_test(test_roller),
        cmocka_unit_test(test_roller_shuffled),
        cmocka_unit_test(test_roll_exact_fit),
        cmocka_unit_test(test_roller_50mb),
        cmocka_unit_test(test_in_order_shards),
        cmocka_unit_test(test_arrival_layout),
        cmocka_unit_test(test_arrival_alloc_failures),
        cmocka_unit_test(test_rows_of_three_dtypes),
        cmocka_unit_test(test_dup_after_ascending),
    };
    if (getenv("STS_TEST_FILTER")) cmocka_set_test_filter(getenv("STS_TEST_FILTER"));
    return cmocka_run_group_tests(tests, NULL, NULL);
}
