/* test_dataset_write_options.c - layer 8, the dataset writer: its options and its misuse.
   - sts_write_config_set: every option with the connector's names and values, names and values
     case-insensitive, "path" ignored; every bad value refused with STS_ERR_OPTION naming the option
     and the value, the config left unchanged;
   - sts_dataset_prepare and sts_task_open: every inconsistent combination of options and schema
     refused the same way, before any file or folder is created or touched;
   - the shapes option with 300-byte column names, plain and escaped: found, or named in the
     refusal (never "?");
   - durability: either no_fsync (sts_write_config or sts_options) turns a task writer's fsyncs off;
   - the output folder: created when missing, refused when not empty (unless overwrite), our
     temporaries removed, other hidden files kept;
   - misuse: rows after commit, commit twice, rows after a sticky failure, NULL arguments;
     sts_dataset_abort removes exactly the shards of the given messages; malformed and forged
     commit messages are refused and never make the library open or remove a file outside the
     folder (watched with inotify). */
#define _POSIX_C_SOURCE 200809L
#define STS_IMPLEMENTATION
#include "../safetensors_spark.h"
#include "dataset_write_util.h"
#include <sys/inotify.h>

/* ---- the schema used throughout ---- */
static const sts_column SCHEMA[5] = {
    { "id", STS_VALUE_STRING, STS_DTYPE_U8 },
    { "img", STS_VALUE_TENSOR, STS_DTYPE_U8 },
    { "emb", STS_VALUE_ARRAY, STS_DTYPE_F32 },
    { "lbl", STS_VALUE_ARRAY, STS_DTYPE_I64 },
    { "txt", STS_VALUE_STRING, STS_DTYPE_U8 },
};
static const uint64_t IMG_SHAPE[2] = { 2, 3 };

typedef struct row_buf { char key[64]; uint8_t img[6]; float emb[8]; int64_t lbl[1]; sts_value v[5]; } row_buf;
static const sts_value *make_row(row_buf *b, const char *key, int i) {
    int j;
    memset(b->v, 0, sizeof b->v);
    snprintf(b->key, sizeof b->key, "%s", key);
    for (j = 0; j < 6; j++) b->img[j] = (uint8_t)(i * 6 + j);
    for (j = 0; j < 8; j++) b->emb[j] = (float)(i * 8 + j) * 0.25f;
    b->lbl[0] = i;
    b->v[0].data = b->key; b->v[0].size = strlen(b->key);
    b->v[1].data = b->img; b->v[1].size = 6; b->v[1].dtype = STS_DTYPE_U8; b->v[1].rank = 2; b->v[1].shape = IMG_SHAPE;
    b->v[2].data = b->emb; b->v[2].size = 8;
    b->v[3].data = b->lbl; b->v[3].size = 1;
    b->v[4].data = "t"; b->v[4].size = 1;
    return b->v;
}
static void kv_config(sts_write_config *c) {
    memset(c, 0, sizeof *c);
    c->name_col = "id";
    c->has_dtype = 1;
    c->dtype = STS_DTYPE_F32;
    c->columns = "img,emb,lbl";
    c->no_fsync = 1;
}
static void batch_config(sts_write_config *c) {
    memset(c, 0, sizeof *c);
    c->batch_size = 4;
    c->has_dtype = 1;
    c->dtype = STS_DTYPE_F32;
    c->columns = "img,emb,lbl";
    c->no_fsync = 1;
}
/* One KV task with n rows "k<task>-<i>"; its commit message goes to m. */
static void kv_task(const char *dir, const sts_write_config *c, uint32_t task, int n, du_msgs *m) {
    sts_task_writer *w;
    sts_error e;
    int i;
    DU_OK("kv_task", sts_task_open(dir, task, c, SCHEMA, 5, NULL, &w, &e), e);
    for (i = 0; i < n; i++) {
        row_buf b;
        char key[32];
        snprintf(key, sizeof key, "k%u-%d", task, i);
        DU_OK("kv_task", sts_task_write(w, make_row(&b, key, i), &e), e);
    }
    DU_OK("kv_task", sts_task_commit(w, &m->m[m->n], &m->len[m->n], &e), e);
    m->n++;
    sts_task_close(w);
}

/* ================================================================================================
   sts_write_config_set: accepted values */
static void test_config_set_values(void **state) {
    sts_write_config c;
    sts_error e;
    (void)state;
    memset(&c, 0, sizeof c);
    DU_OK("batch_size", sts_write_config_set(&c, "batch_size", "1000", &e), e);
    assert_int_equal(c.batch_size, 1000);
    DU_OK("BATCH_SIZE", sts_write_config_set(&c, "BATCH_SIZE", " 7 ", &e), e);
    assert_int_equal(c.batch_size, 7);
    DU_OK("Batch_Size max", sts_write_config_set(&c, "Batch_Size", "18446744073709551615", &e), e);
    assert_true(c.batch_size == UINT64_MAX);
    DU_OK("name_col", sts_write_config_set(&c, "NAME_COL", "user_id", &e), e);
    assert_string_equal(c.name_col, "user_id");
    DU_OK("name_col empty", sts_write_config_set(&c, "name_col", "", &e), e);
    assert_null(c.name_col);
    DU_OK("kv_separator", sts_write_config_set(&c, "Kv_Separator", "::", &e), e);
    assert_string_equal(c.kv_separator, "::");
    DU_OK("duplicatesStrategy lastWin", sts_write_config_set(&c, "duplicatesStrategy", "lastWin", &e), e);
    assert_int_equal(c.duplicates, STS_DUPLICATES_LAST_WIN);
    DU_OK("duplicatesstrategy FAIL", sts_write_config_set(&c, "duplicatesstrategy", "FAIL", &e), e);
    assert_int_equal(c.duplicates, STS_DUPLICATES_FAIL);
    DU_OK("DUPLICATESSTRATEGY lastwin", sts_write_config_set(&c, "DUPLICATESSTRATEGY", "LASTWIN", &e), e);
    assert_int_equal(c.duplicates, STS_DUPLICATES_LAST_WIN);
    DU_OK("generate_index true", sts_write_config_set(&c, "generate_index", "TRUE", &e), e);
    assert_int_equal(c.generate_index, 1);
    DU_OK("generate_index false", sts_write_config_set(&c, "Generate_Index", "False", &e), e);
    assert_int_equal(c.generate_index, 0);
    DU_OK("target 50", sts_write_config_set(&c, "target_shard_size_mb", "50", &e), e);
    assert_int_equal(c.target_shard_size_mb, 50);
    DU_OK("target 1000", sts_write_config_set(&c, "TARGET_SHARD_SIZE_MB", "1000", &e), e);
    assert_int_equal(c.target_shard_size_mb, 1000);
    DU_OK("dtype bf16", sts_write_config_set(&c, "dtype", "bf16", &e), e);
    assert_true(c.has_dtype && c.dtype == STS_DTYPE_BF16);
    {
        static const char *names[12] = { "F16", "F32", "F64", "BF16", "U8", "I8", "U16", "I16", "U32", "I32", "U64", "I64" };
        int i;
        for (i = 0; i < 12; i++) {
            sts_dtype want;
            DU_OK(names[i], sts_write_config_set(&c, "DTYPE", names[i], &e), e);
            assert_true(sts_dtype_from_name(names[i], strlen(names[i]), &want));
            assert_int_equal(c.dtype, want);
        }
    }
    DU_OK("columns", sts_write_config_set(&c, "Columns", " a , b ", &e), e);
    assert_string_equal(c.columns, " a , b ");
    DU_OK("shapes", sts_write_config_set(&c, "SHAPES", "{\"a\": [2, 3]}", &e), e);
    assert_string_equal(c.shapes, "{\"a\": [2, 3]}");
    DU_OK("tail pad", sts_write_config_set(&c, "tail_strategy", "PAD", &e), e);
    assert_int_equal(c.tail, STS_TAIL_PAD);
    DU_OK("tail drop", sts_write_config_set(&c, "Tail_Strategy", "drop", &e), e);
    assert_int_equal(c.tail, STS_TAIL_DROP);
    DU_OK("tail write", sts_write_config_set(&c, "tail_strategy", "Write", &e), e);
    assert_int_equal(c.tail, STS_TAIL_WRITE);
    DU_OK("mode overwrite", sts_write_config_set(&c, "mode", "OverWrite", &e), e);
    assert_int_equal(c.overwrite, 1);
    DU_OK("mode error", sts_write_config_set(&c, "MODE", "error", &e), e);
    assert_int_equal(c.overwrite, 0);
    c.overwrite = 1;
    DU_OK("mode errorifexists", sts_write_config_set(&c, "mode", "ErrorIfExists", &e), e);
    assert_int_equal(c.overwrite, 0);
    DU_OK("durable false", sts_write_config_set(&c, "durable", "false", &e), e);
    assert_int_equal(c.no_fsync, 1);
    DU_OK("durable TRUE", sts_write_config_set(&c, "DURABLE", "TRUE", &e), e);
    assert_int_equal(c.no_fsync, 0);
    DU_OK("io_thread false", sts_write_config_set(&c, "io_thread", "false", &e), e);
    assert_int_equal(c.no_io_thread, 1);
    DU_OK("io_thread true", sts_write_config_set(&c, "IO_Thread", "True", &e), e);
    assert_int_equal(c.no_io_thread, 0);
    DU_OK("rounding nearest_even", sts_write_config_set(&c, "rounding", "NEAREST_EVEN", &e), e);
    assert_int_equal(c.rounding, STS_ROUND_NEAREST_EVEN);
    DU_OK("rounding truncate", sts_write_config_set(&c, "Rounding", "truncate", &e), e);
    assert_int_equal(c.rounding, STS_ROUND_TRUNCATE);
    DU_OK("kv_layout arrival", sts_write_config_set(&c, "KV_Layout", "Arrival", &e), e);
    assert_int_equal(c.kv_layout, STS_KV_ARRIVAL);
    DU_OK("kv_layout sorted", sts_write_config_set(&c, "kv_layout", "SORTED", &e), e);
    assert_int_equal(c.kv_layout, STS_KV_SORTED);
    {   /* "path" is accepted and changes nothing */
        sts_write_config before = c;
        DU_OK("path", sts_write_config_set(&c, "path", "/somewhere/else", &e), e);
        DU_OK("PATH", sts_write_config_set(&c, "PATH", "", &e), e);
        assert_memory_equal(&before, &c, sizeof c);
    }
    /* err may be NULL */
    assert_int_equal(sts_write_config_set(&c, "batch_size", "3", NULL), STS_OK);
    assert_int_equal(sts_write_config_set(&c, "batch_size", "x", NULL), STS_ERR_OPTION);
}

/* ================================================================================================
   sts_write_config_set: refused values */
typedef struct bad_set { const char *key, *value, *must1, *must2; } bad_set;
static void test_config_set_refused(void **state) {
    static const bad_set cases[] = {
        { "batch_size", "0", "batch_size", "\"0\"" },
        { "batch_size", "-1", "batch_size", "\"-1\"" },
        { "batch_size", "abc", "batch_size", "\"abc\"" },
        { "batch_size", "", "batch_size", "\"\"" },
        { "batch_size", "1.5", "batch_size", "\"1.5\"" },
        { "batch_size", "18446744073709551616", "batch_size", "18446744073709551616" },
        { "BATCH_SIZE", "2e3", "batch_size", "\"2e3\"" },
        { "target_shard_size_mb", "49", "target_shard_size_mb", "49" },
        { "target_shard_size_mb", "1001", "target_shard_size_mb", "1001" },
        { "target_shard_size_mb", "0", "target_shard_size_mb", "\"0\"" },
        { "target_shard_size_mb", "abc", "target_shard_size_mb", "abc" },
        { "target_shard_size_mb", "-50", "target_shard_size_mb", "-50" },
        { "target_shard_size_mb", "4294967346", "target_shard_size_mb", "4294967346" },
        { "duplicatesStrategy", "x", "duplicatesStrategy", "\"x\"" },
        { "duplicatesStrategy", "", "duplicatesStrategy", "\"\"" },
        { "duplicatesStrategy", "first", "duplicatesStrategy", "first" },
        { "tail_strategy", "x", "tail_strategy", "\"x\"" },
        { "tail_strategy", "truncate", "tail_strategy", "truncate" },
        { "generate_index", "maybe", "generate_index", "maybe" },
        { "generate_index", "1", "generate_index", "\"1\"" },
        { "generate_index", "yes", "generate_index", "yes" },
        { "dtype", "F128", "dtype", "F128" },
        { "dtype", "BOOL", "dtype", "BOOL" },
        { "dtype", "F4", "dtype", "F4" },
        { "dtype", "F8_E4M3", "dtype", "F8_E4M3" },
        { "dtype", "C64", "dtype", "C64" },
        { "dtype", "float32", "dtype", "float32" },
        { "dtype", "", "dtype", "\"\"" },
        { "mode", "append", "mode", "append" },
        { "mode", "ignore", "mode", "ignore" },
        { "mode", "x", "mode", "\"x\"" },
        { "durable", "x", "durable", "\"x\"" },
        { "durable", "1", "durable", "\"1\"" },
        { "io_thread", "yes", "io_thread", "\"yes\"" },
        { "rounding", "x", "rounding", "\"x\"" },
        { "rounding", "round", "rounding", "round" },
        { "kv_layout", "stream", "kv_layout", "\"stream\"" },
        { "kv_layout", "", "kv_layout", "\"\"" },
        { "kv_separator", "", "kv_separator", "\"\"" },
        { "batchsize", "4", "batchsize", NULL },
        { "foo", "bar", "foo", NULL },
        { "", "x", "unknown option", NULL },
    };
    size_t i;
    (void)state;
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        sts_write_config c, before;
        sts_error e;
        char label[128];
        sts_result r;
        memset(&c, 0, sizeof c);
        c.batch_size = 9; c.target_shard_size_mb = 77; c.tail = STS_TAIL_PAD; c.duplicates = STS_DUPLICATES_LAST_WIN;
        c.generate_index = 1; c.has_dtype = 1; c.dtype = STS_DTYPE_I16; c.overwrite = 1; c.rounding = STS_ROUND_NEAREST_EVEN; c.kv_separator = "::";
        before = c;
        snprintf(label, sizeof label, "set %s=%s", cases[i].key, cases[i].value);
        r = sts_write_config_set(&c, cases[i].key, cases[i].value, &e);
        tu_err_check(label, r, &e, STS_ERR_OPTION, STS_RULE_OPTION, cases[i].must1, cases[i].must2, (const char *)NULL);
        if (memcmp(&c, &before, sizeof c) != 0) fail_msg("%s: a refused value changed the config", label);
    }
    {   /* NULL arguments */
        sts_write_config c;
        sts_error e;
        memset(&c, 0, sizeof c);
        tu_err_check("NULL config", sts_write_config_set(NULL, "batch_size", "1", &e), &e, STS_ERR_INVALID_ARGUMENT, STS_RULE_ARGUMENT, (const char *)NULL);
        tu_err_check("NULL key", sts_write_config_set(&c, NULL, "1", &e), &e, STS_ERR_INVALID_ARGUMENT, STS_RULE_ARGUMENT, (const char *)NULL);
        tu_err_check("NULL value", sts_write_config_set(&c, "batch_size", NULL, &e), &e, STS_ERR_INVALID_ARGUMENT, STS_RULE_ARGUMENT, (const char *)NULL);
    }
}

/* ================================================================================================
   sts_dataset_prepare / sts_task_open: inconsistent combinations, refused before any file is touched */
typedef struct combo {
    const char *label;
    sts_result code;
    sts_rule rule;
    const char *must1, *must2;
} combo;

static const uint64_t DIMS24[2] = { 2, 4 };
static sts_shape_option SHAPE_EMB = { "emb", 2, DIMS24 };
static sts_shape_option SHAPE_ZZ = { "zz", 1, DIMS24 };
static sts_shape_option SHAPE_NODIMS = { "emb", 2, NULL };

/* Sets case k up; returns 0 when k is past the last case. */
static int combo_case(int k, combo *cs, sts_write_config *c, sts_column *schema, size_t *ncols, sts_options *o) {
    static tu_alloc half;
    memcpy(schema, SCHEMA, sizeof SCHEMA);
    *ncols = 5;
    memset(o, 0, sizeof *o);
    kv_config(c);
    cs->code = STS_ERR_OPTION;
    cs->rule = STS_RULE_OPTION;
    cs->must1 = cs->must2 = NULL;
#define CASE(n, lab, m1, m2) case n: cs->label = lab; cs->must1 = m1; cs->must2 = m2;
    switch (k) {
    CASE(0, "batch_size and name_col", "batch_size", "name_col") c->batch_size = 4; break;
    CASE(1, "neither batch_size nor name_col", "batch_size", "name_col") c->name_col = NULL; break;
    CASE(2, "name_col names no column", "name_col", "\"nope\"") c->name_col = "nope"; break;
    CASE(3, "name_col is numeric", "name_col", "\"lbl\"") c->name_col = "lbl"; c->columns = "img,emb"; break;
    CASE(4, "name_col is a tensor column", "name_col", "\"img\"") c->name_col = "img"; c->columns = "emb"; break;
    CASE(5, "columns names an unknown column", "columns", "\"zzz\"") c->columns = "img, zzz"; break;
    CASE(6, "columns repeats a column", "columns", "\"img\"") c->columns = "img,emb,img"; break;
    CASE(7, "columns includes name_col", "columns", "\"id\"") c->columns = "img,id"; break;
    CASE(8, "columns is empty", "columns", NULL) c->columns = ""; break;
    CASE(9, "columns holds only separators", "columns", NULL) c->columns = " , ,"; break;
    CASE(10, "a string column is written (KV)", "columns", "\"txt\"") c->columns = "img,txt"; break;
    CASE(11, "a string column is written (batch, default columns)", "columns", "\"id\"") batch_config(c); c->columns = NULL; break;
    CASE(12, "dtype missing with an array column", "dtype", "\"emb\"") c->has_dtype = 0; break;
    CASE(13, "dtype missing with an array column (batch)", "dtype", "\"lbl\"") batch_config(c); c->has_dtype = 0; c->columns = "img,lbl"; break;
    CASE(14, "shapes is malformed JSON", "shapes", NULL) c->shapes = "{\"emb\": [2, 4]"; cs->rule = STS_RULE_OPTION;  /* JSON problems in our own documents break the document's rule */ break;
    CASE(15, "shapes is not an object", "shapes", "[2,4]") c->shapes = "[2,4]"; break;
    CASE(16, "shapes names an unknown column", "shapes", "\"zz\"") c->shapes = "{\"zz\": [1]}"; break;
    CASE(17, "shapes names a column not written", "shapes", "\"lbl\"") c->columns = "img,emb"; c->shapes = "{\"lbl\": [1]}"; break;
    CASE(18, "shapes names a tensor column", "shapes", "\"img\"") c->shapes = "{\"img\": [2, 3]}"; break;
    CASE(19, "shapes has a fractional dim", "shapes", "\"emb\"") c->shapes = "{\"emb\": [2.5, 4]}"; break;
    CASE(20, "shapes has a negative dim", "shapes", "\"emb\"") c->shapes = "{\"emb\": [-1, 8]}"; break;
    CASE(21, "shapes value is not an array", "shapes", "\"emb\"") c->shapes = "{\"emb\": \"2x4\"}"; break;
    CASE(22, "shapes value is nested", "shapes", "\"emb\"") c->shapes = "{\"emb\": [[2, 4]]}"; break;
    CASE(23, "shapes names a column twice", "shapes", "\"emb\"") c->shapes = "{\"emb\": [8], \"emb\": [2, 4]}"; break;
    CASE(24, "shapes as JSON and typed", "shapes", NULL) c->shapes = "{\"emb\": [2, 4]}"; c->shape_list = &SHAPE_EMB; c->n_shapes = 1; break;
    CASE(25, "typed shapes name an unknown column", "shapes", "\"zz\"") c->shape_list = &SHAPE_ZZ; c->n_shapes = 1; break;
    CASE(26, "typed shapes without dims", "shapes", "\"emb\"") c->shape_list = &SHAPE_NODIMS; c->n_shapes = 1; break;
    CASE(27, "kv_separator empty", "kv_separator", NULL) c->kv_separator = ""; break;
    CASE(28, "kv_separator not UTF-8", "kv_separator", NULL) c->kv_separator = "\xff"; break;
    CASE(29, "target_shard_size_mb 49", "target_shard_size_mb", "49") c->target_shard_size_mb = 49; break;
    CASE(30, "target_shard_size_mb 1001 (batch mode too)", "target_shard_size_mb", "1001") batch_config(c); c->target_shard_size_mb = 1001; break;
    CASE(31, "duplicatesStrategy out of range", "duplicatesStrategy", "2") c->duplicates = (sts_duplicates)2; break;
    CASE(32, "tail_strategy out of range", "tail_strategy", "3") batch_config(c); c->tail = (sts_tail)3; break;
    CASE(33, "rounding out of range", "rounding", "2") c->rounding = (sts_rounding)2; break;
    CASE(34, "dtype F4", "dtype", "F4") c->dtype = STS_DTYPE_F4; break;
    CASE(35, "dtype BOOL", "dtype", "BOOL") c->dtype = STS_DTYPE_BOOL; break;
    CASE(36, "dtype C64", "dtype", "C64") c->dtype = STS_DTYPE_C64; break;
    CASE(37, "schema names a column twice", "\"img\"", "twice") schema[4].name = "img"; break;
    CASE(38, "schema column without a name", "schema column", NULL) schema[3].name = ""; break;
    CASE(39, "schema column NULL name", "schema column", NULL) schema[3].name = NULL; break;
    CASE(40, "array of U16 elements", "\"lbl\"", "U16") schema[3].elem = STS_DTYPE_U16; break;
    CASE(41, "array of BF16 elements", "\"emb\"", "BF16") schema[2].elem = STS_DTYPE_BF16; break;
    CASE(42, "unknown column kind", "\"lbl\"", "kind") schema[3].kind = (sts_value_kind)9; break;
    CASE(43, "KV schema with only the key", "name_col", NULL) *ncols = 1; c->columns = NULL; break;
    CASE(44, "no config", NULL, NULL) cs->code = STS_ERR_INVALID_ARGUMENT; cs->rule = STS_RULE_ARGUMENT; return 2;
    CASE(45, "no columns", NULL, NULL) cs->code = STS_ERR_INVALID_ARGUMENT; cs->rule = STS_RULE_ARGUMENT; *ncols = 0; break;
    CASE(46, "half an allocator", NULL, NULL) cs->code = STS_ERR_INVALID_ARGUMENT; cs->rule = STS_RULE_ARGUMENT;
        memset(&half, 0, sizeof half); o->allocator.alloc = tu_a_alloc; o->allocator.user = &half; break;
    CASE(47, "columns names a column with surrounding blanks trimmed, unknown", "columns", "\"im g\"") c->columns = "im g"; break;
    CASE(48, "kv_layout out of range (batch mode too)", "kv_layout", "2") batch_config(c); c->kv_layout = (sts_kv_layout)2; break;
    default: return 0;
    }
#undef CASE
    return 1;
}

static void test_prepare_refuses_combinations(void **state) {
    char root[64], fresh[128], exist[128], tmpname[256];
    int k;
    tu_sb notes = { 0, 0, 0 };
    (void)state;
    tf_tmpdir(root, sizeof root);
    tf_join(fresh, sizeof fresh, root, "fresh/nested");
    tf_join(exist, sizeof exist, root, "exist");
    assert_int_equal(mkdir(exist, 0777), 0);
    /* a temporary of ours: prepare removes those, so a refused call must leave it */
    tf_join(tmpname, sizeof tmpname, exist, ".part-00000-0000-00000000-0000-4000-8000-000000000000.safetensors.tmp-0123456789abcdef");
    tf_write(tmpname, "x", 1);
    for (k = 0;; k++) {
        combo cs;
        sts_write_config c;
        sts_column schema[5];
        size_t ncols;
        sts_options o;
        sts_error e;
        sts_task_writer *w = (sts_task_writer *)(uintptr_t)0x1;
        tf_snap before, after;
        sts_result r;
        int kind = combo_case(k, &cs, &c, schema, &ncols, &o);
        char label[160];
        if (!kind) break;
        before = tf_snapshot(root, 1);
        snprintf(label, sizeof label, "prepare (new folder): %s", cs.label);
        r = sts_dataset_prepare(fresh, kind == 2 ? NULL : &c, schema, ncols, &o, &e);
        tu_err_note(&notes, label, r, &e, cs.code, cs.rule, cs.must1, cs.must2, (const char *)NULL);
        snprintf(label, sizeof label, "prepare (existing folder): %s", cs.label);
        r = sts_dataset_prepare(exist, kind == 2 ? NULL : &c, schema, ncols, &o, &e);
        tu_err_note(&notes, label, r, &e, cs.code, cs.rule, cs.must1, cs.must2, (const char *)NULL);
        snprintf(label, sizeof label, "task_open: %s", cs.label);
        r = sts_task_open(exist, 0, kind == 2 ? NULL : &c, schema, ncols, &o, &w, &e);
        tu_err_note(&notes, label, r, &e, cs.code, cs.rule, cs.must1, cs.must2, (const char *)NULL);
        if (r == STS_OK) sts_task_close(w);
        else if (w != (sts_task_writer *)(uintptr_t)0x1) fail_msg("%s: out changed on failure", label);
        after = tf_snapshot(root, 1);
        tf_snap_equal(&before, &after, label);
        assert_false(tf_exists(fresh));
        assert_true(tf_exists(tmpname));
        tf_snap_free(&before);
        tf_snap_free(&after);
    }
    assert_true(k >= 40);
    {   /* the base configurations are valid: the failures above come from the one change each */
        sts_write_config c;
        sts_error e;
        sts_task_writer *w;
        kv_config(&c);
        DU_OK("kv base", sts_task_open(exist, 0, &c, SCHEMA, 5, NULL, &w, &e), e);
        sts_task_close(w);
        batch_config(&c);
        DU_OK("batch base", sts_task_open(exist, 0, &c, SCHEMA, 5, NULL, &w, &e), e);
        sts_task_close(w);
        /* shapes: JSON and typed, valid */
        kv_config(&c);
        c.shapes = " { \"emb\" : [ 2 , 4 ] } ";
        DU_OK("json shapes", sts_task_open(exist, 0, &c, SCHEMA, 5, NULL, &w, &e), e);
        sts_task_close(w);
        kv_config(&c);
        c.shape_list = &SHAPE_EMB;
        c.n_shapes = 1;
        DU_OK("typed shapes", sts_task_open(exist, 0, &c, SCHEMA, 5, NULL, &w, &e), e);
        sts_task_close(w);
        /* columns trimmed and case-sensitive: " img , emb " is fine, "IMG" is not a column */
        kv_config(&c);
        c.columns = " img , emb ";
        DU_OK("trimmed columns", sts_task_open(exist, 0, &c, SCHEMA, 5, NULL, &w, &e), e);
        sts_task_close(w);
        c.columns = NULL;
        c.target_shard_size_mb = 50;
        c.target_shard_bytes = 1000;
        tu_err_check("both targets", sts_task_open(exist, 0, &c, SCHEMA, 5, NULL, &w, &e), &e, STS_ERR_OPTION, STS_RULE_OPTION,
                     "target_shard_size_mb", "target_shard_bytes", "not both", (const char *)NULL);
        tu_err_check("both targets (prepare)", sts_dataset_prepare(exist, &c, SCHEMA, 5, NULL, &e), &e, STS_ERR_OPTION,
                     STS_RULE_OPTION, "not both", (const char *)NULL);
        c.target_shard_size_mb = 0;
        c.target_shard_bytes = 0;
        c.columns = "IMG";
        tu_err_check("columns are case-sensitive", sts_task_open(exist, 0, &c, SCHEMA, 5, NULL, &w, &e), &e, STS_ERR_OPTION, STS_RULE_OPTION, "columns", "\"IMG\"", (const char *)NULL);
        /* NULL folder, NULL out, empty folder name */
        tu_err_check("task_open NULL dir", sts_task_open(NULL, 0, &c, SCHEMA, 5, NULL, &w, &e), &e, STS_ERR_INVALID_ARGUMENT, STS_RULE_ARGUMENT, (const char *)NULL);
        tu_err_check("task_open NULL out", sts_task_open(exist, 0, &c, SCHEMA, 5, NULL, NULL, &e), &e, STS_ERR_INVALID_ARGUMENT, STS_RULE_ARGUMENT, (const char *)NULL);
        tu_err_check("prepare NULL dir", sts_dataset_prepare(NULL, &c, SCHEMA, 5, NULL, &e), &e, STS_ERR_INVALID_ARGUMENT, STS_RULE_ARGUMENT, (const char *)NULL);
        tu_err_check("prepare empty dir", sts_dataset_prepare("", &c, SCHEMA, 5, NULL, &e), &e, STS_ERR_INVALID_ARGUMENT, STS_RULE_ARGUMENT, (const char *)NULL);
        /* a task writer needs the folder to exist */
        kv_config(&c);
        tu_err_check("task_open missing folder", sts_task_open(fresh, 0, &c, SCHEMA, 5, NULL, &w, &e), &e, STS_ERR_IO, STS_RULE_IO, "ENOENT", (const char *)NULL);
        assert_false(tf_exists(fresh));
    }
    tf_rmtree(root);
    tu_notes_done(&notes, "refused combinations");
}

/* The strings the connector passes go through sts_write_config_set and then prepare: a
   complete option map, as JNI glue would pass it. */
static void test_prepare_from_strings(void **state) {
    static const char *opts[][2] = {
        { "path", "/ignored" }, { "NAME_COL", "id" }, { "dtype", "bf16" }, { "Columns", "img, emb" },
        { "shapes", "{\"emb\": [2, 4]}" }, { "generate_index", "true" }, { "duplicatesStrategy", "lastwin" },
        { "target_shard_size_mb", "50" }, { "kv_separator", "::" }, { "mode", "overwrite" }, { "durable", "false" },
        { "rounding", "nearest_even" },
    };
    char root[64], dir[128];
    sts_write_config c;
    sts_error e;
    size_t i;
    sts_task_writer *w;
    (void)state;
    tf_tmpdir(root, sizeof root);
    tf_join(dir, sizeof dir, root, "out");
    memset(&c, 0, sizeof c);
    for (i = 0; i < sizeof opts / sizeof opts[0]; i++) DU_OK(opts[i][0], sts_write_config_set(&c, opts[i][0], opts[i][1], &e), e);
    DU_OK("prepare", sts_dataset_prepare(dir, &c, SCHEMA, 5, NULL, &e), e);
    DU_OK("task_open", sts_task_open(dir, 3, &c, SCHEMA, 5, NULL, &w, &e), e);
    assert_int_equal(w->c.kv, 1);
    assert_int_equal(w->c.dtype, STS_DTYPE_BF16);
    assert_int_equal(w->c.rounding, STS_ROUND_NEAREST_EVEN);
    assert_int_equal(w->c.dup, STS_DUPLICATES_LAST_WIN);
    assert_int_equal(w->c.index, 1);
    assert_int_equal(w->c.overwrite, 1);
    assert_int_equal(w->c.durable, 0);
    assert_string_equal(w->c.sep, "::");
    assert_int_equal(w->c.ncols, 2);
    assert_string_equal(w->c.cols[0].name, "img");
    assert_string_equal(w->c.cols[1].name, "emb");
    assert_int_equal(w->c.cols[1].has_opt, 1);
    assert_int_equal(w->c.cols[1].opt_rank, 2);
    sts_task_close(w);
    tf_rmtree(root);
}

/* ================================================================================================
   the output folder */
static void test_prepare_folder(void **state) {
    char root[64], dir[128], p[256], ours[4][256], foreign[256];
    sts_write_config c;
    sts_error e;
    tf_snap s;
    int i;
    static const char *temps[4] = {
        ".part-00001-0002-2b5e9c1a-3f4d-4e5f-8a6b-7c8d9e0f1a2b.safetensors.tmp-00112233aabbccdd",
        "._tensor_index.csv.tmp-0011223344556677",
        "._tensor_index.json.tmp-8899aabbccddeeff",
        ".dataset_manifest.json.tmp-backup",
    };
    (void)state;
    tf_tmpdir(root, sizeof root);
    kv_config(&c);
    /* a missing nested folder is created; the job's lock is all it holds */
    tf_join(dir, sizeof dir, root, "a/b/c");
    DU_OK("create", sts_dataset_prepare(dir, &c, SCHEMA, 5, NULL, &e), e);
    s = tf_snapshot(dir, 0);
    assert_false(s.missing);
    assert_int_equal(s.n, 1);
    assert_string_equal(s.e[0].name, ".sts_job.lock");
    tf_snap_free(&s);
    /* a second job is refused while the first holds the folder, naming it and how to clear a crash's lock */
    tu_err_check("second job", sts_dataset_prepare(dir, &c, SCHEMA, 5, NULL, &e), &e, STS_ERR_EXISTS, STS_RULE_EXISTS,
                 "held by job", "sts clean", (const char *)NULL);
    DU_OK("end the job", sts_dataset_abort(dir, NULL, NULL, 0, NULL, &e), e);
    /* free again: an empty folder is fine */
    DU_OK("again", sts_dataset_prepare(dir, &c, SCHEMA, 5, NULL, &e), e);
    DU_OK("end the job", sts_dataset_abort(dir, NULL, NULL, 0, NULL, &e), e);
    /* our temporaries are removed once the folder is taken; the folder is then accepted */
    for (i = 0; i < 4; i++) { tf_join(ours[i], sizeof ours[i], dir, temps[i]); tf_write(ours[i], "tmp", 3); }
    DU_OK("temporaries", sts_dataset_prepare(dir, &c, SCHEMA, 5, NULL, &e), e);
    for (i = 0; i < 4; i++) if (tf_exists(ours[i])) fail_msg("prepare left the temporary %s", temps[i]);
    DU_OK("end the job", sts_dataset_abort(dir, NULL, NULL, 0, NULL, &e), e);
    /* a foreign hidden file is kept and makes the folder non-empty; a refused prepare removes
       nothing (not even our temporaries) and holds no lock */
    tf_join(foreign, sizeof foreign, dir, ".keep.tmp-1");
    tf_write(foreign, "k", 1);
    for (i = 0; i < 4; i++) tf_write(ours[i], "tmp", 3);
    tu_err_check("foreign hidden", sts_dataset_prepare(dir, &c, SCHEMA, 5, NULL, &e), &e, STS_ERR_EXISTS, STS_RULE_EXISTS,
                 "\".keep.tmp-1\"", "overwrite", (const char *)NULL);
    assert_true(tf_exists(foreign));
    for (i = 0; i < 4; i++) if (!tf_exists(ours[i])) fail_msg("a refused prepare removed the temporary %s", temps[i]);
    tf_join(p, sizeof p, dir, ".sts_job.lock");
    assert_false(tf_exists(p));
    unlink(foreign);
    for (i = 0; i < 4; i++) unlink(ours[i]);
    /* a non-empty folder: refused, naming the folder and an entry; nothing removed */
    tf_join(p, sizeof p, dir, "data.txt");
    tf_write(p, "hello", 5);
    tu_err_check("non-empty", sts_dataset_prepare(dir, &c, SCHEMA, 5, NULL, &e), &e, STS_ERR_EXISTS, STS_RULE_EXISTS,
                 dir, "\"data.txt\"", (const char *)NULL);
    assert_true(tf_exists(p));
    /* ... accepted with overwrite, and still nothing removed at prepare time */
    c.overwrite = 1;
    DU_OK("overwrite", sts_dataset_prepare(dir, &c, SCHEMA, 5, NULL, &e), e);
    assert_true(tf_exists(p));
    DU_OK("end the job", sts_dataset_abort(dir, NULL, NULL, 0, NULL, &e), e);
    c.overwrite = 0;
    /* the folder is a regular file, or lies under one */
    tu_err_check("folder is a file", sts_dataset_prepare(p, &c, SCHEMA, 5, NULL, &e), &e, STS_ERR_IO, STS_RULE_IO, "ENOTDIR", (const char *)NULL);
    {
        char under[300];
        tf_join(under, sizeof under, p, "sub");
        tu_err_check("folder under a file", sts_dataset_prepare(under, &c, SCHEMA, 5, NULL, &e), &e, STS_ERR_IO, STS_RULE_IO, "ENOTDIR", (const char *)NULL);
    }
    tf_rmtree(root);
}

/* ================================================================================================
   misuse of a task writer */
static void test_writer_state(void **state) {
    char root[64];
    sts_write_config c;
    sts_error e;
    sts_task_writer *w;
    row_buf b;
    char *msg = NULL;
    size_t len = 0;
    tf_snap s;
    (void)state;
    tf_tmpdir(root, sizeof root);
    kv_config(&c);
    DU_OK("open", sts_task_open(root, 0, &c, SCHEMA, 5, NULL, &w, &e), e);
    assert_true(sts_task_get_progress(w).rows == 0);
    DU_OK("row", sts_task_write(w, make_row(&b, "a", 0), &e), e);
    assert_true(sts_task_get_progress(w).rows == 1 && sts_task_get_progress(w).shards == 0);
    assert_true(sts_task_get_progress(NULL).rows == 0 && sts_task_get_progress(NULL).shards == 0);
    tu_err_check("write NULL writer", sts_task_write(NULL, b.v, &e), &e, STS_ERR_INVALID_ARGUMENT, STS_RULE_ARGUMENT, (const char *)NULL);
    tu_err_check("write NULL row", sts_task_write(w, NULL, &e), &e, STS_ERR_INVALID_ARGUMENT, STS_RULE_ARGUMENT, (const char *)NULL);
    tu_err_check("commit NULL writer", sts_task_commit(NULL, &msg, &len, &e), &e, STS_ERR_INVALID_ARGUMENT, STS_RULE_ARGUMENT, (const char *)NULL);
    tu_err_check("commit NULL message", sts_task_commit(w, NULL, &len, &e), &e, STS_ERR_INVALID_ARGUMENT, STS_RULE_ARGUMENT, (const char *)NULL);
    tu_err_check("commit NULL len", sts_task_commit(w, &msg, NULL, &e), &e, STS_ERR_INVALID_ARGUMENT, STS_RULE_ARGUMENT, (const char *)NULL);
    DU_OK("commit", sts_task_commit(w, &msg, &len, &e), e);
    assert_int_equal(strlen(msg), len);
    tu_err_check("row after commit", sts_task_write(w, make_row(&b, "b", 1), &e), &e, STS_ERR_INVALID_ARGUMENT, STS_RULE_STATE, "committed", (const char *)NULL);
    {
        char *msg2 = (char *)(uintptr_t)0x1;
        size_t len2 = 77;
        tu_err_check("commit twice", sts_task_commit(w, &msg2, &len2, &e), &e, STS_ERR_INVALID_ARGUMENT, STS_RULE_STATE, "committed", (const char *)NULL);
        assert_true(msg2 == (char *)(uintptr_t)0x1 && len2 == 77);
    }
    sts_task_close(w);
    sts_task_close(NULL);
    s = tf_snapshot(root, 0);
    assert_int_equal(s.n, 1);  /* the committed shard stays after close */
    tf_snap_free(&s);
    sts_free(NULL, msg, len + 1);
    tf_clear(root);

    {   /* a sticky I/O failure: every later call is refused, close removes everything. Without
           the I/O thread the failing row reports it; with it, a later call does (the commit at the
           latest, which waits for every write) */
        int threaded;
        for (threaded = 0; threaded < 2; threaded++) {
            du_fault f;
            sts_options o;
            sts_result r;
            memset(&f, 0, sizeof f);
            memset(&o, 0, sizeof o);
            du_fault_opts(&o, &f);
            batch_config(&c);
            c.batch_size = 1;
            c.no_io_thread = !threaded;
            DU_OK("open", sts_task_open(root, 0, &c, SCHEMA, 5, &o, &w, &e), e);
            f.armed = 1; f.fail_at = 1; f.err = ENOSPC;
            r = sts_task_write(w, make_row(&b, "a", 0), &e);
            if (!threaded || r != STS_OK) tu_err_check("failing row", r, &e, STS_ERR_IO, STS_RULE_IO, "ENOSPC", root, (const char *)NULL);
            else tu_err_check("commit after a failed write", sts_task_commit(w, &msg, &len, &e), &e, STS_ERR_IO, STS_RULE_IO, "ENOSPC", root, (const char *)NULL);
            f.fail_at = 0;
            tu_err_check("row after failure", sts_task_write(w, make_row(&b, "b", 1), &e), &e, STS_ERR_INVALID_ARGUMENT, STS_RULE_STATE, "failed earlier", "IO", (const char *)NULL);
            tu_err_check("commit after failure", sts_task_commit(w, &msg, &len, &e), &e, STS_ERR_INVALID_ARGUMENT, STS_RULE_STATE, "failed earlier", (const char *)NULL);
            sts_task_close(w);
            s = tf_snapshot(root, 0);
            if (s.n) { tu_sb t = { 0, 0, 0 }; tf_snap_text(&s, &t); fail_msg("after an aborted writer the folder holds %s", t.p); }
            tf_snap_free(&s);
        }
    }
    {   /* close without commit removes published-to-be and open files alike (abort) */
        kv_config(&c);
        c.target_shard_bytes = 300;  /* a shard every row or two */
        DU_OK("open", sts_task_open(root, 0, &c, SCHEMA, 5, NULL, &w, &e), e);
        DU_OK("r0", sts_task_write(w, make_row(&b, "a", 0), &e), e);
        DU_OK("r1", sts_task_write(w, make_row(&b, "b", 1), &e), e);
        DU_OK("r2", sts_task_write(w, make_row(&b, "c", 2), &e), e);
        assert_true(sts_task_get_progress(w).rows == 3 && sts_task_get_progress(w).shards >= 1);
        s = tf_snapshot(root, 0);
        assert_true(s.n >= 1);  /* sealed temporaries exist now */
        for (size_t i = 0; i < s.n; i++) assert_true(s.e[i].name[0] == '.');
        tf_snap_free(&s);
        sts_task_close(w);
        s = tf_snapshot(root, 0);
        assert_int_equal(s.n, 0);
        tf_snap_free(&s);
    }
    tf_rmtree(root);
}

/* ================================================================================================
   sts_dataset_abort removes exactly the shards of the messages it is given */
static void test_dataset_abort(void **state) {
    char root[64], p[256], tmp[256], lock[256];
    sts_write_config c;
    sts_error e;
    du_msgs m;
    tf_names before, after;
    size_t i;
    const char *sel[2];
    size_t sel_len[2];
    (void)state;
    memset(&m, 0, sizeof m);
    tf_tmpdir(root, sizeof root);
    kv_config(&c);
    c.target_shard_bytes = 400;
    DU_OK("prepare", sts_dataset_prepare(root, &c, SCHEMA, 5, NULL, &e), e);
    tf_join(lock, sizeof lock, root, ".sts_job.lock");
    assert_true(tf_exists(lock));
    for (i = 0; i < 3; i++) {
        sts_task_writer *w;
        int r;
        DU_OK("open", sts_task_open(root, (uint32_t)i, &c, SCHEMA, 5, NULL, &w, &e), e);
        for (r = 0; r < 5; r++) {
            row_buf b;
            char key[16];
            snprintf(key, sizeof key, "t%zu-%d", i, r);
            DU_OK("row", sts_task_write(w, make_row(&b, key, r), &e), e);
        }
        DU_OK("commit", sts_task_commit(w, &m.m[m.n], &m.len[m.n], &e), e);
        m.n++;
        sts_task_close(w);
    }
    tf_join(p, sizeof p, root, "unrelated.bin");
    tf_write(p, "u", 1);
    /* what a writer that died leaves: a temporary, removed by the abort that ends the job */
    tf_join(tmp, sizeof tmp, root, ".part-00009-0000-00000000-0000-4000-8000-000000000000.safetensors.tmp-0123456789abcdef");
    tf_write(tmp, "x", 1);
    before = du_list_shards(root);
    assert_true(before.n >= 6);
    sel[0] = m.m[0]; sel_len[0] = m.len[0];
    sel[1] = m.m[2]; sel_len[1] = m.len[2];
    DU_OK("abort", sts_dataset_abort(root, sel, sel_len, 2, NULL, &e), e);
    assert_false(tf_exists(tmp));
    assert_false(tf_exists(lock));
    tf_write(tmp, "x", 1);  /* no job holds the folder now: an abort leaves temporaries alone */
    after = du_list_shards(root);
    for (i = 0; i < before.n; i++) {
        uint32_t t;
        int present = 0;
        size_t j;
        assert_true(du_shard_name(before.v[i], &t, NULL, NULL));
        for (j = 0; j < after.n; j++) present |= strcmp(after.v[j], before.v[i]) == 0;
        if (present != (t == 1)) fail_msg("after aborting tasks 0 and 2, %s is %s", before.v[i], present ? "still there" : "gone");
    }
    assert_true(tf_exists(p));
    /* lens may be NULL (NUL-terminated messages); aborting again is harmless */
    DU_OK("abort again, lens NULL", sts_dataset_abort(root, (const char *const *)m.m, NULL, 3, NULL, &e), e);
    assert_true(tf_exists(tmp));
    assert_int_equal(unlink(tmp), 0);
    tf_names_free(&after);
    after = du_list_shards(root);
    assert_int_equal(after.n, 0);
    assert_true(tf_exists(p));
    tu_err_check("abort NULL dir", sts_dataset_abort(NULL, sel, sel_len, 2, NULL, &e), &e, STS_ERR_INVALID_ARGUMENT, STS_RULE_ARGUMENT, (const char *)NULL);
    tu_err_check("abort NULL messages", sts_dataset_abort(root, NULL, NULL, 2, NULL, &e), &e, STS_ERR_INVALID_ARGUMENT, STS_RULE_ARGUMENT, (const char *)NULL);
    DU_OK("abort nothing", sts_dataset_abort(root, NULL, NULL, 0, NULL, &e), e);
    tf_names_free(&before);
    tf_names_free(&after);
    du_msgs_free(&m);
    tf_rmtree(root);
}

/* ================================================================================================
   malformed and forged commit messages */
typedef struct watch { int fd; int wd_root, wd_victim, wd_victim2; } watch;
static void watch_start(watch *w, const char *root, const char *victim, const char *victim2) {
    w->fd = inotify_init1(IN_NONBLOCK);
    assert_true(w->fd >= 0);
    w->wd_root = inotify_add_watch(w->fd, root, IN_DELETE | IN_MOVED_FROM | IN_CREATE);
    w->wd_victim = inotify_add_watch(w->fd, victim, IN_OPEN | IN_DELETE_SELF | IN_MODIFY | IN_ATTRIB);
    w->wd_victim2 = inotify_add_watch(w->fd, victim2, IN_OPEN | IN_DELETE_SELF | IN_MODIFY | IN_ATTRIB);
    assert_true(w->wd_root >= 0 && w->wd_victim >= 0 && w->wd_victim2 >= 0);
}
/* Fails when anything happened to the files outside the folder. */
static void watch_stop(watch *w, const char *label) {
    char buf[4096] __attribute__((aligned(8)));
    ssize_t n = read(w->fd, buf, sizeof buf);
    if (n > 0) {
        const struct inotify_event *ev = (const struct inotify_event *)(void *)buf;
        fail_msg("%s: a file outside the dataset folder was touched (inotify mask 0x%x, name %s)", label, ev->mask, ev->len ? ev->name : "(the victim)");
    }
    close(w->fd);
}
/* Replaces the first `from` in text with `to` (into out). */
static void forge(char *out, size_t cap, const char *text, const char *from, const char *to) {
    const char *at = strstr(text, from);
    size_t pre;
    assert_non_null(at);
    pre = (size_t)(at - text);
    assert_true(strlen(text) - strlen(from) + strlen(to) < cap);
    memcpy(out, text, pre);
    strcpy(out + pre, to);
    strcat(out, at + strlen(from));
}

static void test_forged_messages(void **state) {
    char root[64], dir[128], victim[256], victim2[256], inside[256];
    sts_write_config c;
    int k;
    tu_sb left = { 0, 0, 0 };
    (void)state;
    tf_tmpdir(root, sizeof root);
    tf_join(dir, sizeof dir, root, "ds");
    tf_join(victim, sizeof victim, root, "victim.safetensors");
    tf_join(victim2, sizeof victim2, root, "part-00000-0000-11111111-2222-4333-8444-555555555555.safetensors");
    kv_config(&c);
    {   /* the victims: valid safetensors files beside the folder */
        sts_tensor_spec sp;
        sts_error e;
        uint64_t sh = 4;
        uint8_t d[4] = { 1, 2, 3, 4 };
        memset(&sp, 0, sizeof sp);
        sp.name = "v"; sp.name_len = 1; sp.dtype = STS_DTYPE_U8; sp.rank = 1; sp.shape = &sh; sp.data = d; sp.data_size = 4;
        DU_OK("victim", sts_write_path(victim, &sp, 1, NULL, 0, NULL, &e), e);
        DU_OK("victim2", sts_write_path(victim2, &sp, 1, NULL, 0, NULL, &e), e);
    }
    for (k = 0;; k++) {
        du_msgs m;
        char forged[4096], name[128];
        const char *label = NULL, *must = NULL;
        sts_result code = STS_ERR_DATASET;
        sts_rule rule = STS_RULE_MESSAGE;
        sts_error e;
        sts_result r;
        tf_snap before, after;
        watch wt;
        tu_alloc al;
        sts_options o;
        const char *msgs[2];
        size_t lens[2], n = 2;
        memset(&m, 0, sizeof m);
        tf_rmtree(dir);
        assert_int_equal(mkdir(dir, 0777), 0);
        before = tf_snapshot(dir, 0);
        DU_OK("prepare", sts_dataset_prepare(dir, &c, SCHEMA, 5, NULL, &e), e);
        kv_task(dir, &c, 0, 3, &m);
        kv_task(dir, &c, 1, 3, &m);
        {
            du_json j;
            uint32_t sh;
            assert_true(du_json_text(&j, m.m[1], m.len[1]));
            sh = du_jget(&j, 0, "shards");
            assert_true(du_jstr(&j, du_jget(&j, sh + 1, "shard_path"), name, sizeof name));  /* shards[0].shard_path */
            du_json_free(&j);
        }
        switch (k) {
        case 0: label = "not JSON"; strcpy(forged, "{\"sts_task_commit\":1,"); rule = STS_RULE_MESSAGE; break;
        case 1: label = "an array"; strcpy(forged, "[1,2]"); must = "not a JSON object"; break;
        case 2: label = "not UTF-8"; strcpy(forged, "{\"a\":\"\xff\"}"); rule = STS_RULE_MESSAGE; break;
        case 3: label = "version 2"; forge(forged, sizeof forged, m.m[1], "\"sts_task_commit\":1", "\"sts_task_commit\":2"); must = "version"; break;
        case 4: label = "no version"; forge(forged, sizeof forged, m.m[1], "\"sts_task_commit\":1,", ""); must = "sts_task_commit"; break;
        case 5: label = "mode batch"; forge(forged, sizeof forged, m.m[1], "\"mode\":\"kv\"", "\"mode\":\"batch\""); must = "batch"; break;
        case 6: label = "mode unknown"; forge(forged, sizeof forged, m.m[1], "\"mode\":\"kv\"", "\"mode\":\"KV\""); must = "mode"; break;
        case 7: label = "kv_separator differs"; forge(forged, sizeof forged, m.m[1], "\"kv_separator\":\"__\"", "\"kv_separator\":\"::\""); must = "kv_separator"; break;
        case 8: label = "duplicates differ"; forge(forged, sizeof forged, m.m[1], "\"duplicates\":\"fail\"", "\"duplicates\":\"lastWin\""); must = "duplicates"; break;
        case 9: label = "batch_size differs"; forge(forged, sizeof forged, m.m[1], "\"batch_size\":0", "\"batch_size\":5"); must = "batch_size"; break;
        case 10: label = "shard_path ../victim"; forge(forged, sizeof forged, m.m[1], name, "../victim.safetensors"); must = "../victim.safetensors"; break;
        case 11: label = "shard_path ../part-..."; forge(forged, sizeof forged, m.m[1], name, "../part-00000-0000-11111111-2222-4333-8444-555555555555.safetensors"); must = "shard_path"; break;
        case 12: label = "shard_path part-../.."; forge(forged, sizeof forged, m.m[1], name, "part-00000-0000-/../../victim.safetensors"); must = "shard_path"; break;
        case 13: label = "shard_path absolute"; { char abs[300]; snprintf(abs, sizeof abs, "%s", victim2); forge(forged, sizeof forged, m.m[1], name, abs); } must = "shard_path"; break;
        case 14: label = "shard_path .."; forge(forged, sizeof forged, m.m[1], name, ".."); must = "shard_path"; break;
        case 15: label = "shard_path with NUL"; forge(forged, sizeof forged, m.m[1], name, "part-00000-0000-x\\u0000.safetensors"); must = "shard_path"; break;
        case 16: label = "shard_path escaped slash"; forge(forged, sizeof forged, m.m[1], name, "part-00000-0000-\\/..\\/..\\/victim.safetensors"); must = "shard_path"; break;
        case 17: label = "shard_path not ours"; forge(forged, sizeof forged, m.m[1], name, "model.safetensors"); must = "shard_path"; break;
        case 18: label = "shard_path a temporary"; forge(forged, sizeof forged, m.m[1], name, ".part-00001-0000-x.safetensors.tmp-1"); must = "shard_path"; break;
        case 19: label = "shard missing"; forge(forged, sizeof forged, m.m[1], name, "part-00001-0099-aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee.safetensors");
                 rule = STS_RULE_SHARD; must = "part-00001-0099-"; break;
        case 20: label = "bytes differ"; { char from[64]; const char *b = strstr(m.m[1], "\"bytes\":"); size_t l = strcspn(b, ","); memcpy(from, b, l); from[l] = 0;
                 forge(forged, sizeof forged, m.m[1], from, "\"bytes\":9"); } rule = STS_RULE_SHARD; must = "bytes"; break;
        case 21: label = "tensors differ"; { char from[64]; const char *b = strstr(m.m[1], "\"tensors\":"); size_t l = strcspn(b, "}"); memcpy(from, b, l); from[l] = 0;
                 forge(forged, sizeof forged, m.m[1], from, "\"tensors\":1"); } rule = STS_RULE_SHARD; must = "tensors"; break;
        case 22: label = "shards not an array"; { const char *b = strstr(m.m[1], "\"shards\":"); size_t pre = (size_t)(b - m.m[1]);
                 memcpy(forged, m.m[1], pre); strcpy(forged + pre, "\"shards\":{}}"); } must = "shards"; break;
        case 23: label = "no samples_count"; forge(forged, sizeof forged, m.m[1], "\"samples_count\"", "\"samples\""); must = "samples_count"; break;
        case 24: label = "schema dtype unknown"; forge(forged, sizeof forged, m.m[1], "\"dtype\":\"U8\"", "\"dtype\":\"U9\""); must = "dtype"; break;
        case 25: label = "schema dtype differs from the other task"; forge(forged, sizeof forged, m.m[1], "\"dtype\":\"U8\"", "\"dtype\":\"I8\""); must = "\"img\""; break;
        case 26: label = "the same message twice"; strcpy(forged, m.m[0]); must = "both of task 0"; break;
        case 27: label = "a NULL message"; forged[0] = 0; must = "NULL"; break;
        case 28: label = "schema dim below -1"; forge(forged, sizeof forged, m.m[1], "\"shape\":[2,3]", "\"shape\":[-2,3]"); must = "dim"; break;
        /* another attempt of task 0 (its own shards): one message a task */
        case 29: label = "two messages of task 0"; forge(forged, sizeof forged, m.m[1], "\"task\":1,", "\"task\":0,"); must = "both of task 0"; break;
        case 30: label = "no task"; forge(forged, sizeof forged, m.m[1], "\"task\":1,", ""); must = "task id"; break;
        case 31: label = "task over 32 bits"; forge(forged, sizeof forged, m.m[1], "\"task\":1,", "\"task\":4294967296,"); must = "task id"; break;
        default: break;
        }
        if (!label) { du_msgs_free(&m); tf_snap_free(&before); break; }
        msgs[0] = m.m[0]; lens[0] = m.len[0];
        msgs[1] = k == 27 ? NULL : forged; lens[1] = strlen(forged);
        o = tu_alloc_opts(&al, NULL);
        watch_start(&wt, root, victim, victim2);
        r = sts_dataset_commit(dir, &c, msgs, lens, n, &o, NULL, &e);
        watch_stop(&wt, label);
        tu_err_note(&left, label, r, &e, code, rule, must, (const char *)NULL);
        if (al.bad) tu_sb_printf(&left, "\n  %s: allocator misuse in sts_dataset_commit: %s", label, al.why);
        else tu_alloc_check(label, &al);
        memset(&al, 0, sizeof al);
        /* nothing published, and the shards of the valid message (task 0) stay for a corrected commit */
        {
            tf_names sh = du_list_shards(dir);
            size_t q;
            int kept = 0;
            for (q = 0; q < sh.n; q++) {
                uint32_t t;
                if (du_shard_name(sh.v[q], &t, NULL, NULL) && t == 0) kept = 1;
            }
            if (!kept)
                tu_sb_printf(&left, "\n  %s: the failed commit removed the valid task 0's shard (documented: a failed commit keeps every task's shards for a retry)", label);
            tf_names_free(&sh);
        }
        tf_join(inside, sizeof inside, dir, "dataset_manifest.json");
        assert_false(tf_exists(inside));
        tf_join(inside, sizeof inside, dir, "_tensor_index.json");
        assert_false(tf_exists(inside));
        assert_true(tf_exists(victim));
        assert_true(tf_exists(victim2));
        /* the forged message again, through sts_dataset_abort: still nothing outside is touched */
        watch_start(&wt, root, victim, victim2);
        (void)sts_dataset_abort(dir, msgs, lens, n, &o, &e);
        watch_stop(&wt, label);
        if (al.bad) tu_sb_printf(&left, "\n  %s: allocator misuse in sts_dataset_abort: %s", label, al.why);
        else tu_alloc_check(label, &al);
        (void)sts_dataset_abort(dir, (const char *const *)m.m, m.len, m.n, NULL, &e);
        after = tf_snapshot(dir, 0);
        tf_snap_equal(&before, &after, label);
        tf_snap_free(&before);
        tf_snap_free(&after);
        du_msgs_free(&m);
    }
    assert_true(k >= 31);
    tf_rmtree(root);
    tu_notes_done(&left, "forged messages");
}

/* Argument errors touch nothing; the commit then goes through. */
static void test_commit_arguments(void **state) {
    char root[64];
    sts_write_config c;
    sts_error e;
    du_msgs m;
    sts_dataset_summary sum;
    (void)state;
    memset(&m, 0, sizeof m);
    tf_tmpdir(root, sizeof root);
    kv_config(&c);
    DU_OK("prepare", sts_dataset_prepare(root, &c, SCHEMA, 5, NULL, &e), e);
    kv_task(root, &c, 0, 2, &m);
    tu_err_check("commit NULL dir", sts_dataset_commit(NULL, &c, (const char *const *)m.m, m.len, 1, NULL, NULL, &e), &e, STS_ERR_INVALID_ARGUMENT, STS_RULE_ARGUMENT, (const char *)NULL);
    tu_err_check("commit NULL cfg", sts_dataset_commit(root, NULL, (const char *const *)m.m, m.len, 1, NULL, NULL, &e), &e, STS_ERR_INVALID_ARGUMENT, STS_RULE_ARGUMENT, (const char *)NULL);
    tu_err_check("commit NULL messages", sts_dataset_commit(root, &c, NULL, NULL, 1, NULL, NULL, &e), &e, STS_ERR_INVALID_ARGUMENT, STS_RULE_ARGUMENT, (const char *)NULL);
    {
        sts_write_config both = c;
        both.batch_size = 3;
        tu_err_check("commit both modes", sts_dataset_commit(root, &both, (const char *const *)m.m, m.len, 1, NULL, NULL, &e), &e, STS_ERR_OPTION, STS_RULE_OPTION, "batch_size", (const char *)NULL);
    }
    /* the shard is still there after argument errors */
    {
        tf_names s = du_list_shards(root);
        assert_int_equal(s.n, 1);
        tf_names_free(&s);
    }
    DU_OK("commit", sts_dataset_commit(root, &c, (const char *const *)m.m, NULL, 1, NULL, &sum, &e), e);
    assert_int_equal(sum.shards, 1);
    assert_int_equal(sum.samples, 2);
    assert_int_equal(sum.tensors, 6);
    du_check_dataset("commit", root, NULL);
    du_msgs_free(&m);
    tf_rmtree(root);
}

/* ================================================================================================
   batch mode names a tensor after its column: a column named "__metadata__" would make files
   that readers reject. It must be refused with the other options, before any file is touched,
   not at every row. (In KV mode the name is key + separator + column and is checked per row.) */
static void test_reserved_column_name(void **state) {
    static const sts_column schema[2] = { { "__metadata__", STS_VALUE_ARRAY, STS_DTYPE_U8 }, { "ok", STS_VALUE_ARRAY, STS_DTYPE_U8 } };
    char root[64], dir[128];
    sts_write_config c;
    sts_error e;
    sts_result r;
    (void)state;
    tf_tmpdir(root, sizeof root);
    tf_join(dir, sizeof dir, root, "out");
    memset(&c, 0, sizeof c);
    c.batch_size = 2; c.has_dtype = 1; c.dtype = STS_DTYPE_U8; c.no_fsync = 1;
    r = sts_dataset_prepare(dir, &c, schema, 2, NULL, &e);
    {
        int created = tf_exists(dir);
        tf_rmtree(root);
        if (r == STS_OK) fail_msg("batch mode with a column named \"__metadata__\" passed sts_dataset_prepare (every row then fails with write.reserved_name)");
        if (!strstr(e.message, "__metadata__")) fail_msg("the refusal does not name the column: %s", e.message);
        if (created) fail_msg("the refused prepare created the folder");
    }
}

/* ================================================================================================
   the shapes option with long column names (issue 10, bug 3: a fixed 256-byte buffer made every
   key over 256 bytes "?"): a 300-byte name in the schema is found, plain or with JSON escapes; one
   that is not names the real column, shortened with a visible "..." */
static void test_shapes_long_names(void **state) {
    char root[64], name[301], esc_name[301], other[301], json[2048], *o;
    sts_column schema[4];
    sts_write_config c;
    sts_error e;
    int k, i;
    (void)state;
    tf_tmpdir(root, sizeof root);
    memset(name, 'A', 300); name[300] = 0;
    memset(other, 'B', 300); other[300] = 0;
    for (i = 0; i < 300; i++) esc_name[i] = "q\"\\/\xc3\xa9"[i % 6];  /* a quote, a backslash, a slash, U+00E9 */
    esc_name[300] = 0;
    schema[0] = SCHEMA[0];
    schema[1].name = name; schema[1].kind = STS_VALUE_ARRAY; schema[1].elem = STS_DTYPE_F32;
    schema[2].name = esc_name; schema[2].kind = STS_VALUE_ARRAY; schema[2].elem = STS_DTYPE_F32;
    schema[3] = SCHEMA[1];
    for (k = 0; k < 3; k++) {  /* the plain name, the escaped one (both columns), a name not in the schema */
        const char *col = k == 0 ? name : k == 1 ? esc_name : other;
        char label[64];
        sts_task_writer *w;
        sts_result r;
        snprintf(label, sizeof label, "shapes naming a 300-byte column, case %d", k);
        o = json;
        *o++ = '{'; *o++ = '"';
        for (i = 0; i < 300; i++) {  /* JSON escapes for everything that may take one */
            unsigned char ch = (unsigned char)col[i];
            if (ch == '"' || ch == '\\') { *o++ = '\\'; *o++ = (char)ch; }
            else if (ch == '/') { memcpy(o, "\\/", 2); o += 2; }
            else if (ch == 0xc3) { memcpy(o, "\\u00e9", 6); o += 6; i++; }
            else *o++ = (char)ch;
        }
        strcpy(o, "\": [2, 4]}");
        kv_config(&c);
        c.columns = NULL;
        c.shapes = json;
        r = sts_task_open(root, 0, &c, schema, 4, NULL, &w, &e);
        if (k < 2) {
            float emb[8] = { 0 };
            uint8_t img[4] = { 0 };
            uint64_t img_shape[1] = { 4 };
            size_t shaped = k == 0 ? 1 : 2, free_col = k == 0 ? 2 : 1;
            sts_value row[4];
            if (r != STS_OK) fail_msg("%s: %s", label, e.message);
            memset(row, 0, sizeof row);
            row[0].data = "k"; row[0].size = 1;
            row[shaped].data = emb; row[shaped].size = 8;
            row[free_col].data = emb; row[free_col].size = 5;  /* no shapes option: any count */
            row[3].data = img; row[3].size = 4; row[3].dtype = STS_DTYPE_U8; row[3].rank = 1; row[3].shape = img_shape;
            DU_OK(label, sts_task_write(w, row, &e), e);
            row[0].data = "k2"; row[0].size = 2;
            row[shaped].size = 7;  /* the option is attached to its column: [2, 4] holds 8 */
            tu_err_check(label, sts_task_write(w, row, &e), &e, STS_ERR_SCHEMA, STS_RULE_ROW_SHAPE, "shapes option", (const char *)NULL);
            sts_task_close(w);
        } else {
            char must[64];
            snprintf(must, sizeof must, "shapes names \"%.40s", col);
            tu_err_check(label, r, &e, STS_ERR_OPTION, STS_RULE_OPTION, must, "\"...", "not a column being written", (const char *)NULL);
            /* an escaped name that is not a column is quoted unescaped */
            c.shapes = "{\"\\u00e9t\\u00e9\": [1]}";
            tu_err_check(label, sts_task_open(root, 0, &c, schema, 4, NULL, &w, &e), &e, STS_ERR_OPTION, STS_RULE_OPTION,
                         "shapes names \"\xc3\xa9t\xc3\xa9\"", (const char *)NULL);
        }
    }
    tf_rmtree(root);
}

/* ================================================================================================
   durability: sts_write_config.no_fsync and sts_options.no_fsync each turn every fsync of a task
   writer off (one rule, sts__durable); with neither, its shards and folder are fsynced */
static int count_fsync(void *user, const char *op) {
    if (strcmp(op, "fsync") == 0) ++*(long *)user;
    return 0;
}
static void test_durability_switches(void **state) {
    char root[64];
    int k;
    (void)state;
    tf_tmpdir(root, sizeof root);
    for (k = 0; k < 8; k++) {
        int cfg_off = k & 1, opts_off = k >> 1 & 1, batch = k >> 2 & 1, i;
        char dir[128], label[96];
        sts_write_config c;
        sts_options o;
        sts_task_writer *w;
        sts_error e;
        long fsyncs = 0;
        char *msg;
        size_t len;
        snprintf(dir, sizeof dir, "%s/d%d", root, k);
        snprintf(label, sizeof label, "%s, config no_fsync=%d, options no_fsync=%d", batch ? "batch" : "KV", cfg_off, opts_off);
        if (batch) batch_config(&c); else kv_config(&c);
        c.no_fsync = cfg_off;
        memset(&o, 0, sizeof o);
        o.no_fsync = opts_off;
        o.io_fault = count_fsync;
        o.io_fault_user = &fsyncs;
        DU_OK(label, sts_dataset_prepare(dir, &c, SCHEMA, 5, &o, &e), e);
        DU_OK(label, sts_task_open(dir, 0, &c, SCHEMA, 5, &o, &w, &e), e);
        for (i = 0; i < 4; i++) {
            row_buf b;
            char key[16];
            snprintf(key, sizeof key, "k%d", i);
            DU_OK(label, sts_task_write(w, make_row(&b, key, i), &e), e);
        }
        DU_OK(label, sts_task_commit(w, &msg, &len, &e), e);
        sts_task_close(w);
        sts_free(NULL, msg, len + 1);
        if ((cfg_off || opts_off) && fsyncs) fail_msg("%s: %ld fsync calls, expected none", label, fsyncs);
        if (!cfg_off && !opts_off && fsyncs < 1) fail_msg("%s: no fsync call, expected the shard's", label);
    }
    tf_rmtree(root);
}

/* ================================================================================================
   uuids: version 4, RFC 4122 variant, lowercase, one per task writer, never repeated, and
   random in every free digit (a clock or a counter would leave most digits constant) */
static int uuid_cmp(const void *a, const void *b) { return strcmp((const char *)a, (const char *)b); }
static void test_uuids(void **state) {
    enum { N = 400 };
    static char ids[N][40];
    char root[64], name[128];
    sts_write_config c;
    sts_error e;
    int i, pos;
    (void)state;
    tf_tmpdir(root, sizeof root);
    kv_config(&c);
    for (i = 0; i < N; i++) {
        sts_task_writer *w;
        DU_OK("open", sts_task_open(root, (uint32_t)i, &c, SCHEMA, 5, NULL, &w, &e), e);
        strcpy(ids[i], w->uuid);  /* white box: the writer's uuid */
        sts_task_close(w);
        assert_int_equal(strlen(ids[i]), 36);
        memcpy(name, "part-00000-0000-", 16);
        memcpy(name + 16, ids[i], 36);
        strcpy(name + 52, ".safetensors");
        if (!du_shard_name(name, NULL, NULL, NULL)) fail_msg("uuid %s is not a lowercase RFC 4122 version-4 uuid", ids[i]);
    }
    for (pos = 0; pos < 36; pos++) {
        int seen[16] = { 0 }, distinct = 0;
        if (pos == 8 || pos == 13 || pos == 18 || pos == 23 || pos == 14) continue;  /* dashes, version */
        for (i = 0; i < N; i++) {
            char ch = ids[i][pos];
            seen[ch >= 'a' ? ch - 'a' + 10 : ch - '0'] = 1;
        }
        for (i = 0; i < 16; i++) distinct += seen[i];
        if (distinct < (pos == 19 ? 4 : 14)) fail_msg("uuid digit %d takes only %d values over %d task writers: not random", pos, distinct, N);
    }
    qsort(ids, N, sizeof ids[0], uuid_cmp);
    for (i = 1; i < N; i++) if (strcmp(ids[i - 1], ids[i]) == 0) fail_msg("two task writers drew the uuid %s", ids[i]);
    {   /* nothing was created by opening and closing writers without rows */
        tf_snap s = tf_snapshot(root, 0);
        assert_int_equal(s.n, 0);
        tf_snap_free(&s);
    }
    tf_rmtree(root);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_config_set_values),
        cmocka_unit_test(test_config_set_refused),
        cmocka_unit_test(test_prepare_refuses_combinations),
        cmocka_unit_test(test_prepare_from_strings),
        cmocka_unit_test(test_prepare_folder),
        cmocka_unit_test(test_writer_state),
        cmocka_unit_test(test_dataset_abort),
        cmocka_unit_test(test_forged_messages),
        cmocka_unit_test(test_commit_arguments),
        cmocka_unit_test(test_uuids),
        cmocka_unit_test(test_reserved_column_name),
        cmocka_unit_test(test_shapes_long_names),
        cmocka_unit_test(test_durability_switches),
    };
    if (getenv("STS_TEST_FILTER")) cmocka_set_test_filter(getenv("STS_TEST_FILTER"));
    return cmocka_run_group_tests(tests, NULL, NULL);
}
