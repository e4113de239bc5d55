/* test_dataset_write_batch.c - layer 8, batch mode (batch_size): every batch_size rows of a task
   become one standalone file, one tensor per column named after it, shaped [rows] + the sample
   shape. Each file is compared byte for byte with the reference writer's output for the tensors
   the rows make (sts_write_memory), so order, offsets, header and padding are all checked.
   - golden layouts for each tail strategy (write, drop, pad), two tasks, with and without the
     index: names (part-TTTTT-SSSS-<uuid v4>), the uuid per task, the manifest, the index, the
     commit message, the summary;
   - the tail rewrite when the header shrinks and the schema order differs from the layout order;
   - rows checked against the first row: shape, dtype, sizes; a rejected row changes nothing and
     the writer goes on;
   - arrays with and without the shapes option; all 7 array element types to all 12 dtypes, values
     decoded independently;
   - a cell >= 1 MiB (zero-copy), many small cells (staging), bounded memory;
   - sub-byte dtypes (F4, F6): whole-byte samples stack, others are refused;
   - an empty task, batch_size 1, zero-size cells. */
#define _POSIX_C_SOURCE 200809L
#ifndef STS_TEST_LINKED  /* the Makefile links tests/sts_impl.c's object instead */
#define STS_IMPLEMENTATION
#endif
#include "../safetensors_spark.h"
#include "dataset_write_util.h"
#include <math.h>

/* ---- a model of what a batch job writes ---- */
typedef struct mcol {
    const char *name;
    sts_dtype dtype;        /* output dtype */
    uint32_t rank;          /* sample rank */
    uint64_t shape[6];
    uint64_t row_bytes;
    tu_sb rows;             /* the accepted rows' encoded bytes, concatenated */
} mcol;
typedef struct model { mcol c[8]; size_t n; uint64_t rows; } model;

static void model_col(model *m, const char *name, sts_dtype dt, uint32_t rank, const uint64_t *shape) {
    mcol *c = &m->c[m->n++];
    uint32_t d;
    uint64_t numel = 1;
    memset(c, 0, sizeof *c);
    c->name = name; c->dtype = dt; c->rank = rank;
    for (d = 0; d < rank; d++) { c->shape[d] = shape[d]; numel *= shape[d]; }
    c->row_bytes = numel * sts_dtype_bits(dt) / 8;
}
/* Appends the encoding of one cell to column k. */
static void model_cell(model *m, size_t k, const sts_column *col, const sts_value *v, sts_rounding rnd) {
    mcol *c = &m->c[k];
    if (col->kind == STS_VALUE_TENSOR) { tu_sb_put(&c->rows, v->data, (size_t)v->size); return; }
    {
        size_t out = (size_t)v->size * sts_dtype_bits(c->dtype) / 8;
        uint8_t *tmp = (uint8_t *)malloc(out ? out : 1);
        assert_non_null(tmp);
        assert_int_equal(du_encode_array(tmp, c->dtype, v->data, col->elem, (size_t)v->size, rnd), STS_OK);
        tu_sb_put(&c->rows, tmp, out);
        free(tmp);
    }
}
static void model_free(model *m) {
    size_t i;
    for (i = 0; i < m->n; i++) tu_sb_free(&m->c[i].rows);
    m->n = 0;
}
/* The tensors of a file holding model rows [from, from + rows) and `pad` zero rows after them. */
static void model_file(const model *m, uint64_t from, uint64_t rows, uint64_t pad, du_tl *tl) {
    size_t i;
    for (i = 0; i < m->n; i++) {
        const mcol *c = &m->c[i];
        uint64_t shape[7], bytes = (rows + pad) * c->row_bytes;
        uint8_t *d = (uint8_t *)calloc(bytes ? (size_t)bytes : 1, 1);
        assert_non_null(d);
        shape[0] = rows + pad;
        memcpy(shape + 1, c->shape, c->rank * sizeof *shape);
        if (rows != 0 && c->row_bytes != 0) memcpy(d, c->rows.p + from * c->row_bytes, (size_t)(rows * c->row_bytes));
        du_tl_put(tl, c->name, strlen(c->name), c->dtype, c->rank + 1, shape, d, bytes, 0);
        free(d);
    }
}
/* The folder holds two shards: a batch of `batch` rows (0 .. batch-1), then the tail of `tail`
   rows; each compared byte for byte with the model's file. */
static void expect_batch_and_tail(const char *label, const char *root, const model *md, uint64_t batch, uint64_t tail) {
    tf_names names = du_list_shards(root);
    char p[512];
    size_t i;
    assert_int_equal(names.n, 2);
    for (i = 0; i < 2; i++) {
        du_tl tl = { 0, 0, 0 };
        model_file(md, (uint64_t)i * batch, i ? tail : batch, 0, &tl);
        tf_join(p, sizeof p, root, names.v[i]);
        du_expect_file(label, p, &tl);
        du_tl_free(&tl);
    }
    tf_names_free(&names);
}

/* ---- the schema of the golden tests ---- */
static const sts_column GOLD[4] = {
    { "id", STS_VALUE_STRING, STS_DTYPE_U8 },
    { "img", STS_VALUE_TENSOR, STS_DTYPE_U8 },
    { "emb", STS_VALUE_ARRAY, STS_DTYPE_F32 },
    { "lbl", STS_VALUE_ARRAY, STS_DTYPE_I64 },
};
static const uint64_t IMG_SHAPE[2] = { 2, 3 };
typedef struct grow { uint8_t img[6]; float emb[8]; int64_t lbl[1]; sts_value v[4]; } grow;
static const sts_value *gold_row(grow *b, uint32_t task, int i) {
    int j;
    memset(b->v, 0, sizeof b->v);
    for (j = 0; j < 6; j++) b->img[j] = (uint8_t)(task * 50 + (uint32_t)i * 6 + (uint32_t)j + 1);
    for (j = 0; j < 8; j++) b->emb[j] = (float)task * 100.0f + (float)i + (float)j / 3.0f;  /* thirds: F16 rounding matters */
    b->lbl[0] = (int64_t)task * 1000 + i;
    b->v[0].data = "key"; b->v[0].size = 3;
    b->v[1].data = b->img; b->v[1].size = 6; b->v[1].dtype = STS_DTYPE_U8; b->v[1].rank = 2; b->v[1].shape = IMG_SHAPE;
    b->v[2].data = b->emb; b->v[2].size = 8;
    b->v[3].data = b->lbl; b->v[3].size = 1;
    return b->v;
}
static void gold_model(model *m, sts_dtype dt) {
    uint64_t s8 = 8, s1 = 1;
    memset(m, 0, sizeof *m);
    model_col(m, "img", STS_DTYPE_U8, 2, IMG_SHAPE);
    model_col(m, "emb", dt, 1, &s8);
    model_col(m, "lbl", dt, 1, &s1);
}
static void gold_config(sts_write_config *c) {
    memset(c, 0, sizeof *c);
    c->batch_size = 4;
    c->columns = "img,emb,lbl";
    c->has_dtype = 1;
    c->dtype = STS_DTYPE_F16;
    c->rounding = STS_ROUND_TRUNCATE;
    c->no_fsync = 1;
}

/* Checks one commit message: fields, and its shards against the folder. */
static void check_message(const char *label, const char *msg, size_t len, uint32_t task, const char *mode, uint64_t rows,
                          uint64_t batch_size, size_t nshards) {
    du_json j;
    char buf[128], uuid[40];
    uint64_t v;
    uint32_t sh, s, i;
    if (!du_json_text(&j, msg, len)) fail_msg("%s: the commit message is not JSON: %s", label, msg);
    assert_true(strlen(msg) == len);
    assert_true(du_ju64(&j, du_jget(&j, 0, "sts_task_commit"), &v) && v == 1);
    assert_true(du_ju64(&j, du_jget(&j, 0, "task"), &v) && v == task);
    assert_true(du_jstr(&j, du_jget(&j, 0, "mode"), buf, sizeof buf));
    assert_string_equal(buf, mode);
    assert_true(du_ju64(&j, du_jget(&j, 0, "rows"), &v));
    if (v != rows) fail_msg("%s: message rows %llu, expected %llu", label, (unsigned long long)v, (unsigned long long)rows);
    assert_true(du_ju64(&j, du_jget(&j, 0, "batch_size"), &v) && v == batch_size);
    assert_true(du_jstr(&j, du_jget(&j, 0, "uuid"), uuid, sizeof uuid));
    sh = du_jget(&j, 0, "shards");
    if (du_jcount(&j, sh) != nshards) fail_msg("%s: message lists %u shards, expected %zu", label, du_jcount(&j, sh), nshards);
    for (i = 0, s = sh + 1; i < du_jcount(&j, sh); i++, s = du_jnext(&j, s)) {
        char u[40];
        uint32_t t, n;
        assert_true(du_jstr(&j, du_jget(&j, s, "shard_path"), buf, sizeof buf));
        if (!du_shard_name(buf, &t, &n, u)) fail_msg("%s: shard name %s does not follow part-TTTTT-SSSS-<uuid4>.safetensors", label, buf);
        assert_int_equal(t, task);
        assert_int_equal(n, i);
        assert_string_equal(u, uuid);
    }
    du_json_free(&j);
}

/* ================================================================================================
   golden layouts: tails write / drop / pad, with and without the index */
static void golden(sts_tail tail, int index) {
    static const uint32_t tasks[2] = { 0, 7 };
    static const int nrows[2] = { 10, 3 };
    char root[64], label[64];
    sts_write_config c;
    sts_error e;
    du_msgs m;
    model md[2];
    tf_names shards;
    du_ds ds;
    sts_dataset_summary sum;
    char uuid[2][40];
    size_t t, expect_files = 0, f;
    tu_sb notes = { 0, 0, 0 };
    uint64_t expect_samples = 0, expect_bytes = 0;
    snprintf(label, sizeof label, "golden tail=%d index=%d", (int)tail, index);
    memset(&m, 0, sizeof m);
    tf_tmpdir(root, sizeof root);
    gold_config(&c);
    c.tail = tail;
    c.generate_index = index;
    DU_OK(label, sts_dataset_prepare(root, &c, GOLD, 4, NULL, &e), e);
    for (t = 0; t < 2; t++) {
        sts_task_writer *w;
        int i;
        size_t files;
        gold_model(&md[t], STS_DTYPE_F16);
        DU_OK(label, sts_task_open(root, tasks[t], &c, GOLD, 4, NULL, &w, &e), e);
        for (i = 0; i < nrows[t]; i++) {
            grow b;
            const sts_value *v = gold_row(&b, tasks[t], i);
            DU_OK(label, sts_task_write(w, v, &e), e);
            model_cell(&md[t], 0, &GOLD[1], &v[1], STS_ROUND_TRUNCATE);
            model_cell(&md[t], 1, &GOLD[2], &v[2], STS_ROUND_TRUNCATE);
            model_cell(&md[t], 2, &GOLD[3], &v[3], STS_ROUND_TRUNCATE);
        }
        DU_OK(label, sts_task_commit(w, &m.m[m.n], &m.len[m.n], &e), e);
        files = (size_t)(nrows[t] / 4) + (tail != STS_TAIL_DROP && nrows[t] % 4 ? 1 : 0);
        check_message(label, m.m[m.n], m.len[m.n], tasks[t], "batch", (uint64_t)nrows[t], 4, files);
        m.n++;
        sts_task_close(w);
        expect_files += files;
        expect_samples += tail == STS_TAIL_DROP ? (uint64_t)(nrows[t] / 4 * 4) : (uint64_t)nrows[t];
    }
    /* after the task commits: final names, the job's lock, no temporaries, nothing else yet */
    {
        tf_snap s = tf_snapshot(root, 0);
        size_t i;
        assert_int_equal(s.n, expect_files + 1);
        for (i = 0; i < s.n; i++)
            assert_true(du_shard_name(s.e[i].name, NULL, NULL, NULL) || strcmp(s.e[i].name, ".sts_job.lock") == 0);
        tf_snap_free(&s);
    }
    DU_OK(label, du_commit_all(root, &c, &m, NULL, &sum, &e), e);
    du_check_dataset(label, root, &ds);
    shards = du_list_shards(root);
    assert_int_equal(shards.n, expect_files);
    /* the files: names, uuids, bytes */
    for (t = 0; t < 2; t++) {
        uint32_t s;
        int left = nrows[t];
        uuid[t][0] = 0;
        for (s = 0; left > 0; s++) {
            const char *name = du_find_shard(&shards, tasks[t], s);
            int rows = left < 4 ? left : 4;
            char p[256], u[40];
            du_tl tl = { 0, 0, 0 };
            if (rows < 4 && tail == STS_TAIL_DROP) { if (name) fail_msg("%s: the dropped tail was written as %s", label, name); break; }
            if (!name) fail_msg("%s: no file for task %u shard %u", label, tasks[t], s);
            assert_true(du_shard_name(name, NULL, NULL, u));
            if (!uuid[t][0]) strcpy(uuid[t], u);
            else if (strcmp(uuid[t], u) != 0) fail_msg("%s: task %u uses two uuids", label, tasks[t]);
            model_file(&md[t], (uint64_t)(nrows[t] - left), (uint64_t)rows, tail == STS_TAIL_PAD ? (uint64_t)(4 - rows) : 0, &tl);
            tf_join(p, sizeof p, root, name);
            du_expect_file_note(&notes, label, p, &tl);
            expect_bytes += (uint64_t)tf_file_size(p);
            for (f = 0; f < ds.nshards; f++)
                if (strcmp(ds.shards[f].name, name) == 0 && ds.shards[f].samples != (uint64_t)rows)
                    fail_msg("%s: %s samples_count %llu, expected %d real rows", label, name, (unsigned long long)ds.shards[f].samples, rows);
            du_tl_free(&tl);
            left -= rows;
        }
    }
    if (uuid[0][0] && uuid[1][0] && strcmp(uuid[0], uuid[1]) == 0) fail_msg("%s: two tasks share a uuid", label);
    /* the manifest */
    assert_int_equal(ds.kv, 0);
    assert_int_equal(ds.index, index);
    assert_int_equal(ds.batch_size, 4);
    assert_int_equal(ds.nshards, expect_files);
    if (ds.total_samples != expect_samples) fail_msg("%s: total_samples %llu, expected %llu", label, (unsigned long long)ds.total_samples, (unsigned long long)expect_samples);
    assert_int_equal(ds.total_bytes, expect_bytes);
    assert_string_equal(ds.sep, "__");
    {
        char dt[16];
        int64_t dims[8];
        assert_int_equal(du_schema_col(&ds, "img", dt, sizeof dt, dims, 8), 3);
        assert_string_equal(dt, "U8");
        assert_true(dims[0] == 4 && dims[1] == 2 && dims[2] == 3);
        assert_int_equal(du_schema_col(&ds, "emb", dt, sizeof dt, dims, 8), 2);
        assert_string_equal(dt, "F16");
        assert_true(dims[0] == 4 && dims[1] == 8);
        assert_int_equal(du_schema_col(&ds, "lbl", dt, sizeof dt, dims, 8), 2);
        assert_true(dims[0] == 4 && dims[1] == 1);
        assert_int_equal(du_schema_col(&ds, "id", dt, sizeof dt, dims, 8), -1);
        assert_int_equal(du_jcount(&ds.man, du_jget(&ds.man, 0, "schema")), 3);
    }
    assert_int_equal(sum.shards, expect_files);
    assert_int_equal(sum.samples, expect_samples);
    assert_int_equal(sum.bytes, expect_bytes);
    assert_int_equal(sum.tensors, expect_files * 3);
    if (index) {
        /* batch-mode JSON keys are "<shard>/<column>"; metadata carries total_size */
        char key[256], file[128];
        assert_int_equal(ds.tensors, expect_files * 3);
        snprintf(key, sizeof key, "%s/emb", shards.v[0]);
        assert_true(du_index_file(&ds, key, file, sizeof file));
        assert_string_equal(file, shards.v[0]);
        assert_false(du_index_file(&ds, "emb", file, sizeof file));
    }
    du_ds_free(&ds);
    tf_names_free(&shards);
    model_free(&md[0]);
    model_free(&md[1]);
    du_msgs_free(&m);
    tf_rmtree(root);
    tu_notes_done(&notes, label);
}
static void test_golden_write(void **state) { (void)state; golden(STS_TAIL_WRITE, 0); golden(STS_TAIL_WRITE, 1); }
static void test_golden_drop(void **state) { (void)state; golden(STS_TAIL_DROP, 0); golden(STS_TAIL_DROP, 1); }
static void test_golden_pad(void **state) { (void)state; golden(STS_TAIL_PAD, 0); golden(STS_TAIL_PAD, 1); }

/* ================================================================================================
   the tail of a large batch: the header shrinks (shape [1000] -> [3], smaller offsets) and the
   schema order (a: U8, b: F32) differs from the layout order (b first: higher dtype rank) */
static void test_tail_rewrite(void **state) {
    static const sts_column schema[3] = {
        { "a", STS_VALUE_TENSOR, STS_DTYPE_U8 },
        { "b", STS_VALUE_ARRAY, STS_DTYPE_F32 },
        { "c", STS_VALUE_TENSOR, STS_DTYPE_I16 },
    };
    static const uint64_t sa[1] = { 5 }, sc[1] = { 3 };
    uint64_t nrows[4] = { 3, 999, 1001, 2 };
    size_t k;
    tu_sb notes = { 0, 0, 0 };
    (void)state;
    for (k = 0; k < 4; k++) {
        char root[64], p[256], label[64];
        sts_write_config c;
        sts_error e;
        sts_task_writer *w;
        char *msg;
        size_t len;
        model md;
        tf_names names;
        uint64_t i, s8 = 4;
        snprintf(label, sizeof label, "tail rewrite, %llu rows", (unsigned long long)nrows[k]);
        tf_tmpdir(root, sizeof root);
        memset(&c, 0, sizeof c);
        c.batch_size = 1000;
        c.has_dtype = 1;
        c.dtype = STS_DTYPE_F32;
        c.no_fsync = 1;
        memset(&md, 0, sizeof md);
        model_col(&md, "a", STS_DTYPE_U8, 1, sa);
        model_col(&md, "b", STS_DTYPE_F32, 1, &s8);
        model_col(&md, "c", STS_DTYPE_I16, 1, sc);
        DU_OK(label, sts_task_open(root, 0, &c, schema, 3, NULL, &w, &e), e);
        for (i = 0; i < nrows[k]; i++) {
            uint8_t a[5];
            float b[4];
            uint8_t cc[6];  /* a tensor cell of 3 I16: little-endian bytes */
            sts_value v[3];
            int j;
            for (j = 0; j < 5; j++) a[j] = (uint8_t)(i * 5 + (uint64_t)j + 1);
            for (j = 0; j < 4; j++) b[j] = (float)(i * 4 + (uint64_t)j) + 0.5f;
            for (j = 0; j < 3; j++) tu_st16(cc + 2 * j, (uint16_t)(i * 3 + (uint64_t)j + 7));
            memset(v, 0, sizeof v);
            v[0].data = a; v[0].size = 5; v[0].dtype = STS_DTYPE_U8; v[0].rank = 1; v[0].shape = sa;
            v[1].data = b; v[1].size = 4;
            v[2].data = cc; v[2].size = 6; v[2].dtype = STS_DTYPE_I16; v[2].rank = 1; v[2].shape = sc;
            DU_OK(label, sts_task_write(w, v, &e), e);
            for (j = 0; j < 3; j++) model_cell(&md, (size_t)j, &schema[j], &v[j], STS_ROUND_TRUNCATE);
        }
        DU_OK(label, sts_task_commit(w, &msg, &len, &e), e);
        sts_task_close(w);
        names = du_list_shards(root);
        assert_int_equal(names.n, (size_t)((nrows[k] + 999) / 1000));
        for (i = 0; i < names.n; i++) {
            du_tl tl = { 0, 0, 0 };
            uint64_t rows = nrows[k] - i * 1000 < 1000 ? nrows[k] - i * 1000 : 1000;
            model_file(&md, i * 1000, rows, 0, &tl);
            tf_join(p, sizeof p, root, names.v[i]);
            du_expect_file_note(&notes, label, p, &tl);
            du_tl_free(&tl);
        }
        tf_names_free(&names);
        model_free(&md);
        sts_free(NULL, msg, len + 1);
        tf_rmtree(root);
    }
    tu_notes_done(&notes, "tail rewrite");
}

/* ================================================================================================
   every row is checked against the first row; a rejected row changes nothing */
static void test_row_checks(void **state) {
    char root[64];
    sts_write_config c;
    sts_error e;
    sts_task_writer *w;
    model md;
    char *msg = NULL;
    size_t len = 0;
    int accepted = 0, i;
    tu_sb notes = { 0, 0, 0 };
    (void)state;
    tf_tmpdir(root, sizeof root);
    gold_config(&c);
    c.batch_size = 3;
    gold_model(&md, STS_DTYPE_F16);
    DU_OK("open", sts_task_open(root, 0, &c, GOLD, 4, NULL, &w, &e), e);
    for (i = 0; i < 14; i++) {
        grow b;
        sts_value v[4];
        char row[32], label[96];
        sts_result r;
        static const uint64_t s32[2] = { 3, 2 }, s6[1] = { 6 }, s23x[3] = { 2, 3, 1 };
        memcpy(v, gold_row(&b, 0, i), sizeof v);
        snprintf(row, sizeof row, "row %d", i);  /* the caller's row number: rejected rows count too */
        switch (i) {
        case 2: v[1].shape = s32; snprintf(label, sizeof label, "img shape [3,2] after [2,3]");
            r = sts_task_write(w, v, &e); tu_err_note(&notes, label, r, &e, STS_ERR_SCHEMA, STS_RULE_ROW_SHAPE, row, "\"img\"", "[3, 2]", "[2, 3]", (const char *)NULL); continue;
        case 4: v[1].rank = 1; v[1].shape = s6; snprintf(label, sizeof label, "img rank 1 after rank 2");
            r = sts_task_write(w, v, &e); tu_err_note(&notes, label, r, &e, STS_ERR_SCHEMA, STS_RULE_ROW_SHAPE, row, "\"img\"", (const char *)NULL); continue;
        case 5: v[1].rank = 3; v[1].shape = s23x; snprintf(label, sizeof label, "img [2,3,1] after [2,3]");
            r = sts_task_write(w, v, &e); tu_err_note(&notes, label, r, &e, STS_ERR_SCHEMA, STS_RULE_ROW_SHAPE, row, "\"img\"", (const char *)NULL); continue;
        case 6: v[1].dtype = STS_DTYPE_I8; snprintf(label, sizeof label, "img dtype I8 after U8");
            r = sts_task_write(w, v, &e); tu_err_note(&notes, label, r, &e, STS_ERR_SCHEMA, STS_RULE_ROW_DTYPE, row, "\"img\"", "I8", "U8", (const char *)NULL); continue;
        case 7: v[2].size = 7; snprintf(label, sizeof label, "emb 7 elements after 8");
            r = sts_task_write(w, v, &e); tu_err_note(&notes, label, r, &e, STS_ERR_SCHEMA, STS_RULE_ROW_SHAPE, row, "\"emb\"", "7", "8", (const char *)NULL); continue;
        case 9: v[1].size = 5; snprintf(label, sizeof label, "img 5 bytes for U8 [2,3]");
            r = sts_task_write(w, v, &e); tu_err_note(&notes, label, r, &e, STS_ERR_SCHEMA, STS_RULE_ROW_VALUE, row, "\"img\"", (const char *)NULL); continue;
        case 10: v[2].data = NULL; snprintf(label, sizeof label, "emb data NULL");
            r = sts_task_write(w, v, &e); tu_err_note(&notes, label, r, &e, STS_ERR_SCHEMA, STS_RULE_ROW_VALUE, row, "\"emb\"", (const char *)NULL); continue;
        case 11: v[1].dtype = (sts_dtype)99; snprintf(label, sizeof label, "img dtype out of range");
            r = sts_task_write(w, v, &e); tu_err_note(&notes, label, r, &e, STS_ERR_SCHEMA, STS_RULE_ROW_VALUE, row, "\"img\"", (const char *)NULL); continue;
        case 12: v[1].shape = NULL; snprintf(label, sizeof label, "img rank 2 without a shape");
            r = sts_task_write(w, v, &e); tu_err_note(&notes, label, r, &e, STS_ERR_SCHEMA, STS_RULE_ROW_VALUE, row, "\"img\"", (const char *)NULL); continue;
        default: break;
        }
        DU_OK("good row", sts_task_write(w, v, &e), e);
        model_cell(&md, 0, &GOLD[1], &v[1], STS_ROUND_TRUNCATE);
        model_cell(&md, 1, &GOLD[2], &v[2], STS_ROUND_TRUNCATE);
        model_cell(&md, 2, &GOLD[3], &v[3], STS_ROUND_TRUNCATE);
        accepted++;
    }
    assert_int_equal(accepted, 5);
    DU_OK("commit", sts_task_commit(w, &msg, &len, &e), e);
    check_message("row checks", msg, len, 0, "batch", 5, 3, 2);
    sts_task_close(w);
    expect_batch_and_tail("row checks", root, &md, 3, 2);
    model_free(&md);
    sts_free(NULL, msg, len + 1);
    tf_rmtree(root);
    tu_notes_done(&notes, "row checks");
}

/* The row number in a rejection is the caller's: after a rejected row, the next rejected row
   names its own position among the rows handed in. */
static void test_row_numbers(void **state) {
    tu_sb notes = { 0, 0, 0 };
    char root[64];
    sts_write_config c;
    sts_error e;
    sts_task_writer *w;
    grow b;
    sts_value v[4];
    static const uint64_t s32[2] = { 3, 2 };
    (void)state;
    tf_tmpdir(root, sizeof root);
    gold_config(&c);
    DU_OK("open", sts_task_open(root, 0, &c, GOLD, 4, NULL, &w, &e), e);
    DU_OK("row 0", sts_task_write(w, gold_row(&b, 0, 0), &e), e);
    memcpy(v, gold_row(&b, 0, 1), sizeof v);
    v[1].shape = s32;
    tu_err_note(&notes, "row 1 bad", sts_task_write(w, v, &e), &e, STS_ERR_SCHEMA, STS_RULE_ROW_SHAPE, "row 1,", (const char *)NULL);
    memcpy(v, gold_row(&b, 0, 2), sizeof v);
    v[1].shape = s32;
    tu_err_note(&notes, "row 2 bad (the caller's third row)", sts_task_write(w, v, &e), &e, STS_ERR_SCHEMA, STS_RULE_ROW_SHAPE, "row 2,", (const char *)NULL);
    sts_task_close(w);
    tf_rmtree(root);
    tu_notes_done(&notes, "row numbers");
}

/* ================================================================================================
   arrays with and without the shapes option */
static void test_array_shapes(void **state) {
    static const sts_column schema[2] = { { "emb", STS_VALUE_ARRAY, STS_DTYPE_F64 }, { "ids", STS_VALUE_ARRAY, STS_DTYPE_I32 } };
    static const uint64_t d24[2] = { 2, 4 }, d8[1] = { 8 }, d3[1] = { 3 }, d131[3] = { 1, 3, 1 };
    int variant;
    (void)state;
    for (variant = 0; variant < 3; variant++) {
        char root[64], label[64];
        sts_write_config c;
        sts_error e;
        sts_task_writer *w;
        model md;
        char *msg;
        size_t len;
        int i;
        sts_shape_option typed[2];
        snprintf(label, sizeof label, "array shapes variant %d", variant);
        tf_tmpdir(root, sizeof root);
        memset(&c, 0, sizeof c);
        c.batch_size = 5;
        c.has_dtype = 1;
        c.dtype = STS_DTYPE_BF16;
        c.rounding = STS_ROUND_NEAREST_EVEN;
        c.no_fsync = 1;
        memset(&md, 0, sizeof md);
        if (variant == 0) { model_col(&md, "emb", STS_DTYPE_BF16, 1, d8); model_col(&md, "ids", STS_DTYPE_BF16, 1, d3); }
        else if (variant == 1) {
            c.shapes = "{\"emb\": [2, 4], \"ids\": [1, 3, 1]}";
            model_col(&md, "emb", STS_DTYPE_BF16, 2, d24); model_col(&md, "ids", STS_DTYPE_BF16, 3, d131);
        } else {
            typed[0].column = "emb"; typed[0].rank = 2; typed[0].dims = d24;
            c.shape_list = typed; c.n_shapes = 1;
            model_col(&md, "emb", STS_DTYPE_BF16, 2, d24); model_col(&md, "ids", STS_DTYPE_BF16, 1, d3);
        }
        DU_OK(label, sts_task_open(root, 0, &c, schema, 2, NULL, &w, &e), e);
        for (i = 0; i < 7; i++) {
            double emb[8];
            int32_t ids[3];
            sts_value v[2];
            int j;
            for (j = 0; j < 8; j++) emb[j] = (double)i * 1.001 + (double)j * 0.123456789;
            for (j = 0; j < 3; j++) ids[j] = i * 1000 + j * 257 + 1;
            memset(v, 0, sizeof v);
            v[0].data = emb; v[0].size = 8;
            v[1].data = ids; v[1].size = 3;
            DU_OK(label, sts_task_write(w, v, &e), e);
            model_cell(&md, 0, &schema[0], &v[0], STS_ROUND_NEAREST_EVEN);
            model_cell(&md, 1, &schema[1], &v[1], STS_ROUND_NEAREST_EVEN);
            if (i == 3 && variant == 1) {  /* the shapes option fixes the element count */
                v[0].size = 7;
                tu_err_check(label, sts_task_write(w, v, &e), &e, STS_ERR_SCHEMA, STS_RULE_ROW_SHAPE, "\"emb\"", "shapes", (const char *)NULL);
            }
        }
        DU_OK(label, sts_task_commit(w, &msg, &len, &e), e);
        sts_task_close(w);
        expect_batch_and_tail(label, root, &md, 5, 2);
        model_free(&md);
        sts_free(NULL, msg, len + 1);
        tf_rmtree(root);
    }
    {   /* a shapes option whose element count differs from the first row is refused */
        char root[64];
        sts_write_config c;
        sts_error e;
        sts_task_writer *w;
        double emb[8] = { 0 };
        int32_t ids[3] = { 0 };
        sts_value v[2];
        tf_tmpdir(root, sizeof root);
        memset(&c, 0, sizeof c);
        c.batch_size = 2; c.has_dtype = 1; c.dtype = STS_DTYPE_F32; c.no_fsync = 1;
        c.shapes = "{\"emb\": [3, 3]}";
        DU_OK("open", sts_task_open(root, 0, &c, schema, 2, NULL, &w, &e), e);
        memset(v, 0, sizeof v);
        v[0].data = emb; v[0].size = 8;
        v[1].data = ids; v[1].size = 3;
        tu_err_check("9 != 8", sts_task_write(w, v, &e), &e, STS_ERR_SCHEMA, STS_RULE_ROW_SHAPE, "\"emb\"", "9", "8", (const char *)NULL);
        sts_task_close(w);
        tf_rmtree(root);
    }
}

/* ================================================================================================
   the 7 array element types to the 12 dtypes; values decoded independently of the codec */
static double dec(const uint8_t *p, sts_dtype d) {  /* one little-endian element as a double */
    uint64_t u = 0;
    unsigned i, n = sts_dtype_bits(d) / 8;
    for (i = 0; i < n; i++) u |= (uint64_t)p[i] << (8 * i);
    switch (d) {
    case STS_DTYPE_U8: case STS_DTYPE_U16: case STS_DTYPE_U32: case STS_DTYPE_U64: return (double)u;
    case STS_DTYPE_I8: return (double)(int8_t)u;
    case STS_DTYPE_I16: return (double)(int16_t)u;
    case STS_DTYPE_I32: return (double)(int32_t)u;
    case STS_DTYPE_I64: return (double)(int64_t)u;
    case STS_DTYPE_F32: { float f; uint32_t b = (uint32_t)u; memcpy(&f, &b, 4); return f; }
    case STS_DTYPE_F64: { double f; memcpy(&f, &u, 8); return f; }
    case STS_DTYPE_BF16: { float f; uint32_t b = (uint32_t)u << 16; memcpy(&f, &b, 4); return f; }
    case STS_DTYPE_F16: {
        int e = (int)((u >> 10) & 31), m = (int)(u & 1023);
        double v = e == 0 ? ldexp(m, -24) : ldexp(1024 + m, e - 25);
        return (u & 0x8000) ? -v : v;
    }
    default: fail_msg("dec: dtype %s", sts_dtype_name(d)); return 0;
    }
}
static void test_all_element_types(void **state) {
    static const sts_dtype targets[12] = { STS_DTYPE_F16, STS_DTYPE_BF16, STS_DTYPE_F32, STS_DTYPE_F64, STS_DTYPE_I8, STS_DTYPE_U8,
                                           STS_DTYPE_I16, STS_DTYPE_U16, STS_DTYPE_I32, STS_DTYPE_U32, STS_DTYPE_I64, STS_DTYPE_U64 };
    static const sts_column schema[7] = {
        { "f32", STS_VALUE_ARRAY, STS_DTYPE_F32 }, { "f64", STS_VALUE_ARRAY, STS_DTYPE_F64 }, { "i32", STS_VALUE_ARRAY, STS_DTYPE_I32 },
        { "i64", STS_VALUE_ARRAY, STS_DTYPE_I64 }, { "i16", STS_VALUE_ARRAY, STS_DTYPE_I16 }, { "i8", STS_VALUE_ARRAY, STS_DTYPE_I8 },
        { "u8", STS_VALUE_ARRAY, STS_DTYPE_U8 },
    };
    size_t k;
    (void)state;
    for (k = 0; k < 12; k++) {
        char root[64], p[256], label[64];
        sts_write_config c;
        sts_error e;
        sts_task_writer *w;
        model md;
        char *msg;
        size_t len, col;
        tf_names names;
        sts_file *f;
        int i, j;
        uint64_t s5 = 5;
        double src[6][7][5];
        snprintf(label, sizeof label, "element types to %s", sts_dtype_name(targets[k]));
        tf_tmpdir(root, sizeof root);
        memset(&c, 0, sizeof c);
        c.batch_size = 6; c.has_dtype = 1; c.dtype = targets[k]; c.no_fsync = 1;
        memset(&md, 0, sizeof md);
        for (col = 0; col < 7; col++) model_col(&md, schema[col].name, targets[k], 1, &s5);
        DU_OK(label, sts_task_open(root, 0, &c, schema, 7, NULL, &w, &e), e);
        for (i = 0; i < 6; i++) {
            float a0[5]; double a1[5]; int32_t a2[5]; int64_t a3[5]; int16_t a4[5]; int8_t a5[5]; uint8_t a6[5];
            sts_value v[7];
            memset(v, 0, sizeof v);
            for (j = 0; j < 5; j++) {
                int x = ((i * 5 + j) * 37) % 201 - 100;  /* -100..100: exact in every float dtype */
                a0[j] = (float)x; a1[j] = (double)x; a2[j] = x; a3[j] = x; a4[j] = (int16_t)x; a5[j] = (int8_t)x; a6[j] = (uint8_t)(x + 100);
                for (col = 0; col < 6; col++) src[i][col][j] = (double)x;
                src[i][6][j] = (double)(x + 100);
            }
            v[0].data = a0; v[1].data = a1; v[2].data = a2; v[3].data = a3; v[4].data = a4; v[5].data = a5; v[6].data = a6;
            for (col = 0; col < 7; col++) v[col].size = 5;
            DU_OK(label, sts_task_write(w, v, &e), e);
            for (col = 0; col < 7; col++) model_cell(&md, col, &schema[col], &v[col], STS_ROUND_TRUNCATE);
        }
        DU_OK(label, sts_task_commit(w, &msg, &len, &e), e);
        sts_task_close(w);
        names = du_list_shards(root);
        assert_int_equal(names.n, 1);
        tf_join(p, sizeof p, root, names.v[0]);
        {
            du_tl tl = { 0, 0, 0 };
            model_file(&md, 0, 6, 0, &tl);
            du_expect_file(label, p, &tl);
            du_tl_free(&tl);
        }
        DU_OK(label, sts_open(p, NULL, &f, &e), e);
        for (col = 0; col < 7; col++) {
            const sts_tensor *t = sts_find(f, schema[col].name, strlen(schema[col].name));
            const uint8_t *d;
            assert_non_null(t);
            assert_int_equal(t->dtype, targets[k]);
            assert_int_equal(t->rank, 2);
            assert_true(t->shape[0] == 6 && t->shape[1] == 5);
            d = (const uint8_t *)sts_data(f, t);
            for (i = 0; i < 6; i++)
                for (j = 0; j < 5; j++) {
                    double want = src[i][col][j], got = dec(d + (size_t)(i * 5 + j) * sts_dtype_bits(targets[k]) / 8, targets[k]);
                    int is_unsigned = targets[k] == STS_DTYPE_U8 || targets[k] == STS_DTYPE_U16 || targets[k] == STS_DTYPE_U32 || targets[k] == STS_DTYPE_U64;
                    if (is_unsigned && want < 0) want = 0;  /* saturation */
                    if (targets[k] == STS_DTYPE_I8 && want > 127) want = 127;
                    if (got != want) fail_msg("%s: column %s row %d element %d: got %g, expected %g", label, schema[col].name, i, j, got, want);
                }
        }
        sts_close(f);
        tf_names_free(&names);
        model_free(&md);
        sts_free(NULL, msg, len + 1);
        tf_rmtree(root);
    }
}

/* ================================================================================================
   a cell >= 1 MiB (written straight from the caller's buffer), large arrays through the stage,
   and many small cells; memory stays at the write-combining buffers, not the batch */
static void test_large_and_small_cells(void **state) {
    static const sts_column schema[3] = { { "big", STS_VALUE_TENSOR, STS_DTYPE_U8 }, { "same", STS_VALUE_ARRAY, STS_DTYPE_F32 },
                                          { "conv", STS_VALUE_ARRAY, STS_DTYPE_F32 } };
    char root[64], p[256];
    sts_write_config c;
    sts_error e;
    sts_task_writer *w;
    model md;
    char *msg;
    size_t len, big = (size_t)3 << 19, nsame = 300000, nconv = 700000;  /* 1.5 MiB, 1.2 MB, 2.8 MB -> 1.4 MB */
    tf_names names;
    int i;
    uint64_t sb = (uint64_t)big, ss = nsame, sc = nconv;
    uint8_t *bigbuf = (uint8_t *)malloc(big);
    float *same = (float *)malloc(nsame * sizeof(float)), *conv = (float *)malloc(nconv * sizeof(float));
    tu_alloc al;
    sts_options o;
    (void)state;
    assert_true(bigbuf && same && conv);
    tf_tmpdir(root, sizeof root);
    memset(&c, 0, sizeof c);
    c.batch_size = 3; c.has_dtype = 1; c.dtype = STS_DTYPE_F32; c.no_fsync = 1;
    o = tu_alloc_opts(&al, NULL);
    memset(&md, 0, sizeof md);
    model_col(&md, "big", STS_DTYPE_U8, 1, &sb);
    model_col(&md, "same", STS_DTYPE_F32, 1, &ss);
    model_col(&md, "conv", STS_DTYPE_F32, 1, &sc);
    DU_OK("open", sts_task_open(root, 0, &c, schema, 3, &o, &w, &e), e);
    for (i = 0; i < 4; i++) {  /* 3 rows, then a tail of 1 (rewritten to its own size) */
        sts_value v[3];
        size_t j;
        for (j = 0; j < big; j++) bigbuf[j] = (uint8_t)(j * 131 + (size_t)i * 7);
        for (j = 0; j < nsame; j++) same[j] = (float)j * 0.5f + (float)i;
        for (j = 0; j < nconv; j++) conv[j] = (float)j / 7.0f - (float)i;
        memset(v, 0, sizeof v);
        v[0].data = bigbuf; v[0].size = big; v[0].dtype = STS_DTYPE_U8; v[0].rank = 1; v[0].shape = &sb;
        v[1].data = same; v[1].size = nsame;
        v[2].data = conv; v[2].size = nconv;
        DU_OK("row", sts_task_write(w, v, &e), e);
        model_cell(&md, 0, &schema[0], &v[0], STS_ROUND_TRUNCATE);
        model_cell(&md, 1, &schema[1], &v[1], STS_ROUND_TRUNCATE);
        model_cell(&md, 2, &schema[2], &v[2], STS_ROUND_TRUNCATE);
    }
    DU_OK("commit", sts_task_commit(w, &msg, &len, &e), e);
    sts_task_close(w);
    sts_free(&o, msg, len + 1);
    tu_alloc_check("large cells", &al);
    if (al.peak > (int64_t)(17u << 20))  /* the two staged columns' buffers: at most 4 x 2 MiB each, + 1 MiB */
        fail_msg("batch mode held %lld bytes at its peak for 3-row batches of %zu bytes each: memory must stay at the write buffers",
                 (long long)al.peak, big + nsame * 4 + nconv * 4);
    expect_batch_and_tail("large cells", root, &md, 3, 1);
    model_free(&md);
    tf_rmtree(root);
    free(bigbuf); free(same); free(conv);

    {   /* many small cells through the stage: 5000 rows of 3 bytes + 1 element, batches of 2000 */
        static const sts_column sm[2] = { { "t", STS_VALUE_TENSOR, STS_DTYPE_U8 }, { "a", STS_VALUE_ARRAY, STS_DTYPE_I16 } };
        uint64_t s3 = 3, s1 = 1;
        int rows = tu_quick() ? 2500 : 5000;
        tf_tmpdir(root, sizeof root);
        memset(&c, 0, sizeof c);
        c.batch_size = 2000; c.has_dtype = 1; c.dtype = STS_DTYPE_I32; c.no_fsync = 1; c.tail = STS_TAIL_PAD;
        memset(&md, 0, sizeof md);
        model_col(&md, "t", STS_DTYPE_U8, 1, &s3);
        model_col(&md, "a", STS_DTYPE_I32, 1, &s1);
        DU_OK("open", sts_task_open(root, 0, &c, sm, 2, NULL, &w, &e), e);
        for (i = 0; i < rows; i++) {
            uint8_t t[3] = { (uint8_t)i, (uint8_t)(i >> 8), (uint8_t)(i * 3) };
            int16_t a = (int16_t)(i - 2500);
            sts_value v[2];
            memset(v, 0, sizeof v);
            v[0].data = t; v[0].size = 3; v[0].dtype = STS_DTYPE_U8; v[0].rank = 1; v[0].shape = &s3;
            v[1].data = &a; v[1].size = 1;
            DU_OK("small row", sts_task_write(w, v, &e), e);
            model_cell(&md, 0, &sm[0], &v[0], STS_ROUND_TRUNCATE);
            model_cell(&md, 1, &sm[1], &v[1], STS_ROUND_TRUNCATE);
        }
        DU_OK("commit", sts_task_commit(w, &msg, &len, &e), e);
        sts_task_close(w);
        names = du_list_shards(root);
        assert_int_equal(names.n, (size_t)((rows + 1999) / 2000));
        for (i = 0; i < (int)names.n; i++) {
            du_tl tl = { 0, 0, 0 };
            int real = rows - i * 2000 < 2000 ? rows - i * 2000 : 2000;
            model_file(&md, (uint64_t)i * 2000, (uint64_t)real, (uint64_t)(2000 - real), &tl);
            tf_join(p, sizeof p, root, names.v[i]);
            du_expect_file("small cells", p, &tl);
            du_tl_free(&tl);
        }
        tf_names_free(&names);
        model_free(&md);
        sts_free(NULL, msg, len + 1);
        tf_rmtree(root);
    }
}

/* ================================================================================================
   sub-byte dtypes: an F4 sample of two elements (one byte) stacks; a sample that is not a whole
   number of bytes is refused clearly; F6 samples of 4 elements (3 bytes) stack too */
static void test_sub_byte(void **state) {
    static const sts_column schema[2] = { { "f4", STS_VALUE_TENSOR, STS_DTYPE_U8 }, { "f6", STS_VALUE_TENSOR, STS_DTYPE_U8 } };
    static const uint64_t s2[1] = { 2 }, s3[1] = { 3 }, s4[1] = { 4 }, s1[1] = { 1 };
    char root[64];
    sts_write_config c;
    sts_error e;
    sts_task_writer *w;
    model md;
    char *msg;
    size_t len;
    int i;
    (void)state;
    tf_tmpdir(root, sizeof root);
    memset(&c, 0, sizeof c);
    c.batch_size = 4; c.no_fsync = 1;
    memset(&md, 0, sizeof md);
    model_col(&md, "f4", STS_DTYPE_F4, 1, s2);
    model_col(&md, "f6", STS_DTYPE_F6_E2M3, 1, s4);
    DU_OK("open", sts_task_open(root, 0, &c, schema, 2, NULL, &w, &e), e);
    {   /* first rows that are not whole bytes: refused, nothing fixed */
        uint8_t b[2] = { 0x21, 0x43 }, f6[3] = { 1, 2, 3 };
        sts_value v[2];
        memset(v, 0, sizeof v);
        v[0].data = b; v[0].size = 2; v[0].dtype = STS_DTYPE_F4; v[0].rank = 1; v[0].shape = s3;
        v[1].data = f6; v[1].size = 3; v[1].dtype = STS_DTYPE_F6_E2M3; v[1].rank = 1; v[1].shape = s4;
        tu_err_check("F4 [3]", sts_task_write(w, v, &e), &e, STS_ERR_SCHEMA, STS_RULE_ROW_VALUE, "\"f4\"", "F4", "12 bits", (const char *)NULL);
        v[0].size = 1; v[0].rank = 0; v[0].shape = NULL;
        tu_err_check("F4 scalar", sts_task_write(w, v, &e), &e, STS_ERR_SCHEMA, STS_RULE_ROW_VALUE, "\"f4\"", "4 bits", (const char *)NULL);
        v[0].rank = 1; v[0].shape = s1;
        tu_err_check("F4 [1]", sts_task_write(w, v, &e), &e, STS_ERR_SCHEMA, STS_RULE_ROW_VALUE, "\"f4\"", (const char *)NULL);
        v[0].shape = s2;
        v[1].shape = s3; v[1].size = 3;
        tu_err_check("F6 [3]", sts_task_write(w, v, &e), &e, STS_ERR_SCHEMA, STS_RULE_ROW_VALUE, "\"f6\"", "18 bits", (const char *)NULL);
    }
    for (i = 0; i < 6; i++) {
        uint8_t b[1] = { (uint8_t)(0x10 * i + 3) }, f6[3] = { (uint8_t)i, (uint8_t)(i + 1), (uint8_t)(i + 2) };
        sts_value v[2];
        memset(v, 0, sizeof v);
        v[0].data = b; v[0].size = 1; v[0].dtype = STS_DTYPE_F4; v[0].rank = 1; v[0].shape = s2;
        v[1].data = f6; v[1].size = 3; v[1].dtype = STS_DTYPE_F6_E2M3; v[1].rank = 1; v[1].shape = s4;
        DU_OK("F4 [2] row", sts_task_write(w, v, &e), e);
        model_cell(&md, 0, &schema[0], &v[0], STS_ROUND_TRUNCATE);
        model_cell(&md, 1, &schema[1], &v[1], STS_ROUND_TRUNCATE);
        if (i == 2) {  /* a later row of another shape is refused by the batch-shape rule */
            uint8_t two[2] = { 0, 0 };
            v[0].data = two; v[0].size = 2; v[0].shape = s4;
            tu_err_check("F4 [4] after [2]", sts_task_write(w, v, &e), &e, STS_ERR_SCHEMA, STS_RULE_ROW_SHAPE, "\"f4\"", (const char *)NULL);
        }
    }
    DU_OK("commit", sts_task_commit(w, &msg, &len, &e), e);
    sts_task_close(w);
    expect_batch_and_tail("sub-byte", root, &md, 4, 2);
    model_free(&md);
    sts_free(NULL, msg, len + 1);
    tf_rmtree(root);
}

/* ================================================================================================
   small corners: a task without rows, batch_size 1, a dropped only-batch, zero-size cells */
static void test_corners(void **state) {
    static const sts_column schema[2] = { { "z", STS_VALUE_TENSOR, STS_DTYPE_U8 }, { "a", STS_VALUE_ARRAY, STS_DTYPE_U8 } };
    static const uint64_t s0[2] = { 3, 0 };
    char root[64], p[256];
    sts_write_config c;
    sts_error e;
    sts_task_writer *w;
    du_msgs m;
    du_ds ds;
    tf_names names;
    int i;
    (void)state;
    memset(&m, 0, sizeof m);
    tf_tmpdir(root, sizeof root);
    memset(&c, 0, sizeof c);
    c.batch_size = 1; c.has_dtype = 1; c.dtype = STS_DTYPE_U8; c.no_fsync = 1; c.generate_index = 1;
    DU_OK("prepare", sts_dataset_prepare(root, &c, schema, 2, NULL, &e), e);
    /* task 0: no rows at all */
    DU_OK("open", sts_task_open(root, 0, &c, schema, 2, NULL, &w, &e), e);
    DU_OK("commit empty", sts_task_commit(w, &m.m[m.n], &m.len[m.n], &e), e);
    check_message("empty", m.m[m.n], m.len[m.n], 0, "batch", 0, 1, 0);
    m.n++;
    sts_task_close(w);
    /* task 1: batch_size 1, zero-size cells */
    DU_OK("open", sts_task_open(root, 1, &c, schema, 2, NULL, &w, &e), e);
    for (i = 0; i < 3; i++) {
        sts_value v[2];
        uint8_t one = (uint8_t)i;
        memset(v, 0, sizeof v);
        v[0].data = NULL; v[0].size = 0; v[0].dtype = STS_DTYPE_U8; v[0].rank = 2; v[0].shape = s0;
        v[1].data = &one; v[1].size = 1;
        DU_OK("zero-size row", sts_task_write(w, v, &e), e);
    }
    DU_OK("commit", sts_task_commit(w, &m.m[m.n], &m.len[m.n], &e), e);
    check_message("batch_size 1", m.m[m.n], m.len[m.n], 1, "batch", 3, 1, 3);
    m.n++;
    sts_task_close(w);
    DU_OK("dataset commit", du_commit_all(root, &c, &m, NULL, NULL, &e), e);
    du_check_dataset("corners", root, &ds);
    assert_int_equal(ds.nshards, 3);
    assert_int_equal(ds.total_samples, 3);
    names = du_list_shards(root);
    for (i = 0; i < 3; i++) {
        du_tl tl = { 0, 0, 0 };
        uint64_t sh[3] = { 1, 3, 0 }, sa[2] = { 1, 1 };
        uint8_t one = (uint8_t)i;
        du_tl_put(&tl, "z", 1, STS_DTYPE_U8, 3, sh, NULL, 0, 0);
        du_tl_put(&tl, "a", 1, STS_DTYPE_U8, 2, sa, &one, 1, 0);
        tf_join(p, sizeof p, root, names.v[i]);
        du_expect_file("zero-size cells", p, &tl);
        du_tl_free(&tl);
    }
    tf_names_free(&names);
    du_ds_free(&ds);
    du_msgs_free(&m);
    tf_rmtree(root);

    /* a job whose only batch is a dropped tail: no files, an empty manifest */
    tf_tmpdir(root, sizeof root);
    c.batch_size = 10; c.tail = STS_TAIL_DROP;
    DU_OK("prepare", sts_dataset_prepare(root, &c, schema, 2, NULL, &e), e);
    DU_OK("open", sts_task_open(root, 0, &c, schema, 2, NULL, &w, &e), e);
    for (i = 0; i < 9; i++) {
        sts_value v[2];
        uint8_t one = 1;
        memset(v, 0, sizeof v);
        v[0].dtype = STS_DTYPE_U8; v[0].rank = 2; v[0].shape = s0;
        v[1].data = &one; v[1].size = 1;
        DU_OK("row", sts_task_write(w, v, &e), e);
    }
    DU_OK("commit", sts_task_commit(w, &m.m[m.n], &m.len[m.n], &e), e);
    m.n++;
    sts_task_close(w);
    {   /* only the job's lock */
        tf_snap s = tf_snapshot(root, 0);
        assert_int_equal(s.n, 1);
        tf_snap_free(&s);
    }
    DU_OK("dataset commit", du_commit_all(root, &c, &m, NULL, NULL, &e), e);
    du_check_dataset("dropped only batch", root, &ds);
    assert_int_equal(ds.nshards, 0);
    assert_int_equal(ds.total_samples, 0);
    assert_int_equal(ds.total_bytes, 0);
    du_ds_free(&ds);
    du_msgs_free(&m);
    tf_rmtree(root);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_golden_write),
        cmocka_unit_test(test_golden_drop),
        cmocka_unit_test(test_golden_pad),
        cmocka_unit_test(test_tail_rewrite),
        cmocka_unit_test(test_row_checks),
        cmocka_unit_test(test_row_numbers),
        cmocka_unit_test(test_array_shapes),
        cmocka_unit_test(test_all_element_types),
        cmocka_unit_test(test_large_and_small_cells),
        cmocka_unit_test(test_sub_byte),
        cmocka_unit_test(test_corners),
    };
    if (getenv("STS_TEST_FILTER")) cmocka_set_test_filter(getenv("STS_TEST_FILTER"));
    return cmocka_run_group_tests(tests, NULL, NULL);
}
