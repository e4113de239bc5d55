/* test_dataset_read.c - layer 9, the dataset reader: discovery, schema, scans, lookups.
   - every kind of dataset the writer makes, read back and compared value by value with the rows
     it was given: batch mode with each tail strategy (write, drop, pad), with and without the
     index; KV mode with and without the index (and with the index ignored on request); lastWin
     duplicates (lookups, long scans and the index point to the later shard);
   - discovery without a manifest: *.safetensors in name order, never hidden files or a writer's
     temporaries (a live task writer's files), never folders or other names; a single file opens
     as a dataset of one file (absolute and relative paths, a file directly in "/");
   - schema: inferred from the first header or from the index (the same columns), explicit
     (names only: a missing tensor is null, extra ones ignored; dtype and shape checks with
     STS_DIM_ANY; a mismatch names the file and the column), none (read.schema);
   - wide scans: projection, with and without data; long scans: key, dtype and shape filters;
     file ranges [begin, end) whose union is the whole scan;
   - a header over 1 MiB (the connector failed past 256 KiB), alone and in a folder; one of 24 MiB
     at full strength;
   - edge cases: an empty dataset (shards: []), a projection of zero columns. */
#define _POSIX_C_SOURCE 200809L
#ifndef STS_TEST_LINKED  /* the Makefile links tests/sts_impl.c's object instead */
#define STS_IMPLEMENTATION
#endif
#include "../safetensors_spark.h"
#include "test_dataset_read_util.h"
#include <signal.h>
#include <sys/wait.h>


static sts_dataset *open_ds(const char *path, int infer, int no_index) {
    sts_read_config cfg;
    sts_dataset *ds = NULL;
    sts_error e;
    memset(&cfg, 0, sizeof cfg);
    cfg.infer_schema = infer;
    cfg.no_index = no_index;
    DR_OK(sts_dataset_open(path, &cfg, NULL, &ds, &e));
    assert_non_null(ds);
    return ds;
}

/* Runs fn in a child process: a crash there fails the test instead of killing the suite. fn
   reports a failure with _exit(nonzero), not with cmocka's checks. On success the child execs
   /bin/true: a plain exit would make valgrind and LeakSanitizer report the parent's memory that
   the child inherited. */
static int run_child(void (*fn)(const char *), const char *arg, char *why, size_t cap) {
    pid_t p;
    int st = 0;
    fflush(NULL);
    p = fork();
    assert_true(p >= 0);
    if (p == 0) {  /* cmocka's handlers would longjmp into the parent's test: restore the defaults */
        signal(SIGSEGV, SIG_DFL);
        signal(SIGBUS, SIG_DFL);
        signal(SIGILL, SIG_DFL);
        signal(SIGFPE, SIG_DFL);
        signal(SIGABRT, SIG_DFL);
        fn(arg);
        fflush(NULL);
        execl("/bin/true", "true", (char *)NULL);
        _exit(0);
    }
    assert_int_equal(waitpid(p, &st, 0), p);
    if (WIFSIGNALED(st)) { snprintf(why, cap, "the reader died of signal %d", WTERMSIG(st)); return 0; }
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) { snprintf(why, cap, "the child failed (exit status %d)", WIFEXITED(st) ? WEXITSTATUS(st) : -1); return 0; }
    return 1;
}
static void in_child(const char *what, void (*fn)(const char *), const char *arg) {
    char why[128];
    if (!run_child(fn, arg, why, sizeof why)) fail_msg("%s: %s", what, why);
}

/* ---- batch mode, each tail strategy, with and without the index ---- */
static void check_batch_gets(sts_dataset *ds, const dr_batch *b, const tf_names *shards);
static void check_batch_dataset(const char *dir, const dr_batch *b, int no_index, int gets) {
    sts_dataset *ds = open_ds(dir, 1, no_index);
    sts_dataset_info info = sts_dataset_describe(ds);
    tf_names shards = dr_list_shards(dir);
    uint64_t samples = 0, files = 0;
    uint32_t t;
    size_t i;
    sts_scan_spec sp;
    sts_scan *s;
    sts_error e;
    const sts_view *c;
    size_t nc, rows;
    const sts_view *col;

    for (t = 0; t < b->tasks; t++) {
        uint64_t n = b->rows_per_task[t], full = n / b->batch_size, part = n % b->batch_size;
        files += full + (part && b->tail != STS_TAIL_DROP);
        samples += full * b->batch_size + (b->tail == STS_TAIL_DROP ? 0 : part);
    }
    assert_int_equal(info.files, files);
    assert_int_equal(shards.n, files);
    assert_int_equal(info.has_manifest, 1);
    assert_int_equal(info.has_index, b->index && !no_index);
    assert_int_equal(info.kv, 0);
    assert_int_equal(info.total_samples, samples);
    assert_int_equal(info.columns, 2);
    for (i = 0; i < shards.n; i++) assert_string_equal(sts_dataset_file(ds, i), shards.v[i]);
    assert_null(sts_dataset_file(ds, shards.n));
    /* the schema: the first file's tensors in layout order (BF16 ranks above I16) */
    col = sts_dataset_column(ds, 0);
    assert_non_null(col);
    assert_int_equal(col->key_len, 3);
    assert_memory_equal(col->key, "emb", 3);
    assert_int_equal(col->dtype, STS_DTYPE_BF16);
    assert_int_equal(col->rank, 2);
    col = sts_dataset_column(ds, 1);
    assert_memory_equal(col->key, "img", 3);
    assert_int_equal(col->dtype, STS_DTYPE_I16);
    assert_int_equal(col->rank, 3);
    assert_int_equal(col->shape[1], 2);
    assert_null(sts_dataset_column(ds, 2));

    /* wide, with data: a row per file, every value */
    memset(&sp, 0, sizeof sp);
    sp.with_data = 1;
    DR_OK(sts_scan_open(ds, &sp, &s, &e));
    assert_int_equal(sts_scan_files(s), files);
    for (rows = 0;; rows++) {
        DR_OK(sts_scan_next(s, &c, &nc, &e));
        if (!nc) break;
        assert_int_equal(nc, 2);
        for (i = 0; i < nc; i++) {
            assert_int_equal(c[i].file, rows);
            assert_non_null(c[i].data);
            dr_check_batch_cell(b, shards.v[rows], &c[i]);
        }
    }
    assert_int_equal(rows, files);
    assert_int_equal(sts_scan_get_stats(s).files_mapped, files);
    sts_scan_close(s);

    /* wide, projected to img, header bytes only */
    {
        const char *cols[1] = { "img" };
        sp.columns = cols;
        sp.ncolumns = 1;
        sp.with_data = 0;
        DR_OK(sts_scan_open(ds, &sp, &s, &e));
        for (rows = 0;; rows++) {
            DR_OK(sts_scan_next(s, &c, &nc, &e));
            if (!nc) break;
            assert_int_equal(nc, 1);
            assert_memory_equal(c[0].key, "img", 3);
            assert_null(c[0].data);
            dr_check_batch_cell(b, shards.v[rows], &c[0]);
        }
        assert_int_equal(rows, files);
        assert_int_equal(sts_scan_get_stats(s).files_mapped, 0);
        assert_int_equal(sts_scan_get_stats(s).data_bytes, 0);
        sts_scan_close(s);
    }

    /* long: two tensors per file */
    {
        dr_rows rs;
        memset(&sp, 0, sizeof sp);
        sp.with_data = 1;
        DR_OK(dr_long_scan(ds, &sp, &rs, &e));
        assert_int_equal(rs.n, 2 * files);
        for (i = 0; i < rs.n; i++) assert_int_equal(rs.r[i].file, i / 2);
        dr_rows_free(&rs);
    }

    if (gets) check_batch_gets(ds, b, &shards);
    tf_names_free(&shards);
    sts_dataset_close(ds);
}
/* Rewrites _tensor_index.json with a space after every ':' and ',' outside strings: the same JSON,
   no longer in the writer's exact form, so the index reader's general path reads every entry (the
   writer's own form goes through its fast path). Both must give the same lookups. */
static void respace_index(const char *dir) {
    char p[512];
    size_t n, i, o = 0;
    uint8_t *t, *u;
    int in_str = 0;
    tf_join(p, sizeof p, dir, "_tensor_index.json");
    t = tf_read(p, &n);
    u = (uint8_t *)malloc(2 * n + 1);
    assert_non_null(u);
    for (i = 0; i < n; i++) {
        u[o++] = t[i];
        if (in_str) {
            if (t[i] == '\\' && i + 1 < n) u[o++] = t[++i];
            else if (t[i] == '"') in_str = 0;
        } else if (t[i] == '"') in_str = 1;
        else if (t[i] == ':' || t[i] == ',') u[o++] = ' ';
    }
    tf_write(p, u, o);
    free(t);
    free(u);
}
/* Lookups: batch keys are "<shard>/<column>" (as in the index), with or without the index. */
static void check_batch_gets(sts_dataset *ds, const dr_batch *b, const tf_names *shards) {
    size_t i;
    sts_error e;
    for (i = 0; i < shards->n; i++) {
        char key[512];
        sts_view v;
        snprintf(key, sizeof key, "%s/img", shards->v[i]);
        DR_OK(sts_dataset_get(ds, key, strlen(key), 1, &v, &e));
        assert_int_equal(v.file, i);
        assert_int_equal(v.key_len, strlen(key));
        dr_check_batch_cell(b, shards->v[i], &v);
        snprintf(key, sizeof key, "%s/emb", shards->v[i]);
        DR_OK(sts_dataset_get(ds, key, strlen(key), 0, &v, &e));
        assert_null(v.data);
        dr_check_batch_cell(b, shards->v[i], &v);
    }
}
static void batch_write(char *dir, size_t cap, sts_tail tail, int index, dr_batch *b) {
    char name[64];
    memset(b, 0, sizeof *b);
    b->tasks = 2;
    b->rows_per_task[0] = 10;
    b->rows_per_task[1] = 7;
    b->batch_size = 4;
    b->tail = tail;
    b->index = index;
    snprintf(name, sizeof name, "batch_%d_%d", (int)tail, index);
    dr_fresh(dir, cap, name);
    dr_write_batch(dir, b);
}
static void batch_case(sts_tail tail, int index) {
    char dir[256];
    dr_batch b;
    batch_write(dir, sizeof dir, tail, index, &b);
    check_batch_dataset(dir, &b, 0, index);
    if (index) {
        check_batch_dataset(dir, &b, 1, 0);
        respace_index(dir);  /* the index's general reader: the same answers */
        check_batch_dataset(dir, &b, 0, index);
    }
    tf_rmtree(dir);
}
static void test_batch_write_tail(void **state) { (void)state; batch_case(STS_TAIL_WRITE, 1); }
static void test_batch_drop_tail(void **state) { (void)state; batch_case(STS_TAIL_DROP, 1); }
static void test_batch_pad_tail(void **state) { (void)state; batch_case(STS_TAIL_PAD, 1); }
static void test_batch_no_index(void **state) { (void)state; batch_case(STS_TAIL_WRITE, 0); }
static void test_batch_no_index_pad(void **state) { (void)state; batch_case(STS_TAIL_PAD, 0); }
/* Without an index (none written, or ignored), the key table built from the headers must answer
   the same "<shard>/<column>" keys the index holds. */
static void test_batch_get_without_index(void **state) {
    char dir[256], why[1024] = "";
    dr_batch b;
    int pass;
    (void)state;
    for (pass = 0; pass < 2 && !why[0]; pass++) {
        sts_dataset *ds;
        tf_names sh;
        size_t i;
        batch_write(dir, sizeof dir, STS_TAIL_WRITE, pass, &b);
        ds = open_ds(dir, 1, 1);
        sh = dr_list_shards(dir);
        for (i = 0; i < sh.n && !why[0]; i++) {   /* the same lookups as check_batch_gets, failing after cleanup */
            char key[512];
            sts_view v;
            sts_error e;
            snprintf(key, sizeof key, "%s/img", sh.v[i]);
            if (sts_dataset_get(ds, key, strlen(key), 1, &v, &e) != STS_OK)
                snprintf(why, sizeof why, "batch dataset (%s), index ignored: get %s: %s", pass ? "index written" : "no index", key, e.message);
        }
        if (!why[0]) check_batch_gets(ds, &b, &sh);
        tf_names_free(&sh);
        sts_dataset_close(ds);
        tf_rmtree(dir);
    }
    if (why[0]) fail_msg("%s", why);
}

/* ---- KV mode ---- */
static void check_kv_dataset(const char *dir, const dr_kv *k, int no_index) {
    sts_dataset *ds = open_ds(dir, 1, no_index);
    sts_dataset_info info = sts_dataset_describe(ds);
    sts_error e;
    uint32_t t, r;
    sts_scan_spec sp;
    dr_rows rs;
    size_t i;
    assert_int_equal(info.files, k->tasks);
    assert_int_equal(info.kv, 1);
    assert_int_equal(info.has_manifest, 1);
    assert_int_equal(info.has_index, k->index && !no_index);
    assert_int_equal(info.total_samples, k->tasks * k->rows);
    /* every key by lookup, with and without data */
    for (t = 0; t < k->tasks; t++)
        for (r = 0; r < k->rows; r++) {
            char key[64];
            sts_view v;
            size_t kl;
            dr_kv_key(key, sizeof key, t, r);
            kl = strlen(key);
            strcpy(key + kl, "__img");
            DR_OK(sts_dataset_get(ds, key, strlen(key), 1, &v, &e));
            assert_int_equal(v.file, t);
            assert_int_equal(v.key_len, strlen(key));
            assert_memory_equal(v.key, key, v.key_len);
            dr_check_kv_view(&v, t, r);
            strcpy(key + kl, "__emb");
            DR_OK(sts_dataset_get(ds, key, strlen(key), r & 1, &v, &e));
            assert_int_equal(v.file, t);
            dr_check_kv_view(&v, t, r);
        }
    {
        sts_view v;
        tu_err_check("absent key", sts_dataset_get(ds, "nope", 4, 1, &v, &e), &e, STS_ERR_NOT_FOUND, STS_RULE_NOT_FOUND, "nope", NULL);
        tu_err_check("a key prefix", sts_dataset_get(ds, "k000_000", 8, 0, &v, &e), &e, STS_ERR_NOT_FOUND, STS_RULE_NOT_FOUND, NULL);
    }
    /* long scan: every tensor once, in file order */
    memset(&sp, 0, sizeof sp);
    sp.with_data = 1;
    DR_OK(dr_long_scan(ds, &sp, &rs, &e));
    assert_int_equal(rs.n, 2 * k->tasks * k->rows);
    for (i = 0; i < rs.n; i++) {
        uint32_t tt, rr;
        assert_true(dr_kv_parse(rs.r[i].key, rs.r[i].key_len, &tt, &rr));
        assert_int_equal(rs.r[i].file, tt);
        if (i) assert_true(rs.r[i].file >= rs.r[i - 1].file);
    }
    dr_rows_free(&rs);
    sts_dataset_close(ds);
}
static void kv_case(int index) {
    char dir[256];
    dr_kv k;
    memset(&k, 0, sizeof k);
    k.tasks = 4;
    k.rows = 5;
    k.index = index;
    dr_fresh(dir, sizeof dir, index ? "kv_index" : "kv_plain");
    dr_write_kv(dir, &k);
    check_kv_dataset(dir, &k, 0);
    if (index) {
        check_kv_dataset(dir, &k, 1);
        respace_index(dir);  /* the index's general reader: the same answers */
        check_kv_dataset(dir, &k, 0);
    }
    tf_rmtree(dir);
}
static void test_kv_index(void **state) { (void)state; kv_case(1); }
static void test_kv_no_index(void **state) { (void)state; kv_case(0); }

/* ---- the key table: keys of every length, shapes of every rank, names that are not keys ----
   The table copies keys, shapes and names into entries of their own (a 32-byte head, the key padded
   to 8 bytes, the dims, the name), so each length around the padding and each rank is read back;
   a hand-written index lists the entries in an order unlike the headers' (files interleaved,
   reversed), spells some keys and names with escapes, and gives every third tensor a key of its
   own ("tensor": its name), which is what the file check of a lookup with data must follow. */
#define KT_FILES 3
#define KT_PER_FILE 16
static const size_t kt_lens[KT_PER_FILE] = { 0, 1, 2, 7, 8, 9, 15, 16, 17, 23, 24, 31, 32, 33, 64, 100 };
static const sts_dtype kt_dtypes[5] = { STS_DTYPE_U8, STS_DTYPE_F32, STS_DTYPE_I64, STS_DTYPE_BF16, STS_DTYPE_F16 };
typedef struct kt_tensor {
    char name[128];
    size_t name_len;
    char key[160];                   /* the index's key (unescaped) */
    size_t key_len;
    sts_dtype dtype;
    uint32_t rank;
    uint64_t shape[12];
    uint64_t nbytes;
    uint8_t seed;
} kt_tensor;
static void kt_make(kt_tensor *t, size_t file, size_t i) {
    size_t c;
    uint32_t d;
    memset(t, 0, sizeof *t);
    t->name_len = kt_lens[i] == 0 && file > 0 ? 3 : kt_lens[i];  /* one empty name, in the first file */
    for (c = 0; c < t->name_len; c++) t->name[c] = (char)(c == 0 ? 'a' + file : 'A' + (c * 7 + i) % 26);
    t->dtype = kt_dtypes[(i + file) % 5];
    t->rank = (uint32_t)((i * 5 + file) % 9);  /* 0 .. 8 */
    t->nbytes = sts_dtype_bits(t->dtype) / 8;
    for (d = 0; d < t->rank; d++) { t->shape[d] = d == 0 ? 1 + (i + file) % 3 : 1 + (d == t->rank - 1); t->nbytes *= t->shape[d]; }
    t->seed = (uint8_t)(file * 40 + i);
    if (i % 3 == 2) {  /* a key of its own */
        t->key_len = (size_t)snprintf(t->key, sizeof t->key, "alias/%u/", (unsigned)(file * KT_PER_FILE + i));
        memcpy(t->key + t->key_len, t->name, t->name_len);
        t->key_len += t->name_len;
    } else {
        memcpy(t->key, t->name, t->name_len);
        t->key_len = t->name_len;
    }
}
/* A JSON string of s; the first character escaped as \u00XX when esc. */
static size_t kt_json_str(char *o, const char *s, size_t n, int esc) {
    size_t k = 0, c;
    o[k++] = '"';
    for (c = 0; c < n; c++) {
        if (c == 0 && esc) k += (size_t)sprintf(o + k, "\\u%04x", (unsigned char)s[c]);
        else o[k++] = s[c];
    }
    o[k++] = '"';
    return k;
}
static void kt_check_view(const kt_tensor *t, size_t file, const sts_view *v, int with_index, int with_data) {
    const char *want_key = with_index ? t->key : t->name;
    size_t want_len = with_index ? t->key_len : t->name_len;
    uint32_t d;
    if (v->key_len != want_len || (want_len && memcmp(v->key, want_key, want_len) != 0) || v->file != file || v->dtype != t->dtype ||
        v->rank != t->rank || v->nbytes != t->nbytes || !v->present)
        fail_msg("tensor %.*s (file %zu): the view says key %.*s, file %zu, %s rank %u, %llu bytes", (int)t->name_len, t->name, file, (int)v->key_len,
                 v->key, v->file, sts_dtype_name(v->dtype), v->rank, (unsigned long long)v->nbytes);
    for (d = 0; d < t->rank; d++) assert_true(v->shape[d] == t->shape[d]);
    if (with_data) {
        uint64_t b;
        assert_non_null(v->data);
        for (b = 0; b < t->nbytes; b++) assert_int_equal(((const uint8_t *)v->data)[b], dr_pattern(t->seed, b));
    } else assert_null(v->data);
}
static void test_key_table_layout(void **state) {
    static kt_tensor kt[KT_FILES][KT_PER_FILE];
    static const char *const files[KT_FILES] = { "a.safetensors", "b.safetensors", "c.safetensors" };
    char dir[256], p[512];
    char *json = (char *)malloc(1 << 16);
    size_t f, i, o = 0, n;
    int pass;
    (void)state;
    assert_non_null(json);
    dr_fresh(dir, sizeof dir, "key_table");
    assert_int_equal(mkdir(dir, 0755), 0);
    for (f = 0; f < KT_FILES; f++) {
        sts_tensor_spec ts[KT_PER_FILE];
        uint8_t *bufs[KT_PER_FILE];
        sts_error e;
        for (i = 0; i < KT_PER_FILE; i++) {
            uint64_t b;
            kt_make(&kt[f][i], f, i);
            bufs[i] = (uint8_t *)malloc((size_t)kt[f][i].nbytes + 1);
            assert_non_null(bufs[i]);
            for (b = 0; b < kt[f][i].nbytes; b++) bufs[i][b] = dr_pattern(kt[f][i].seed, b);
            memset(&ts[i], 0, sizeof ts[i]);
            ts[i].name = kt[f][i].name; ts[i].name_len = kt[f][i].name_len; ts[i].dtype = kt[f][i].dtype;
            ts[i].rank = kt[f][i].rank; ts[i].shape = kt[f][i].shape; ts[i].data = bufs[i]; ts[i].data_size = kt[f][i].nbytes;
        }
        tf_join(p, sizeof p, dir, files[f]);
        DR_OK(sts_write_path(p, ts, KT_PER_FILE, NULL, 0, NULL, &e));
        for (i = 0; i < KT_PER_FILE; i++) free(bufs[i]);
    }
    /* the index: the headers' own offsets, listed backwards with the files interleaved */
    o += (size_t)sprintf(json + o, "{\"tensors\":{");
    for (n = KT_FILES * KT_PER_FILE; n-- > 0;) {
        const kt_tensor *t;
        sts_file *h;
        const sts_tensor *x;
        sts_error e;
        sts_options op;
        uint32_t d;
        f = n % KT_FILES;
        i = n / KT_FILES;
        t = &kt[f][i];
        memset(&op, 0, sizeof op);
        op.header_only = 1;
        tf_join(p, sizeof p, dir, files[f]);
        DR_OK(sts_open(p, &op, &h, &e));
        x = sts_find(h, t->name, t->name_len);
        assert_non_null(x);
        o += kt_json_str(json + o, t->key, t->key_len, t->key_len && i % 2 == 1);
        o += (size_t)sprintf(json + o, ":{");
        if (t->key_len != t->name_len) {
            o += (size_t)sprintf(json + o, "\"tensor\":");
            o += kt_json_str(json + o, t->name, t->name_len, i % 4 == 1 || i % 4 == 2);
            o += (size_t)sprintf(json + o, ",");
        }
        o += (size_t)sprintf(json + o, "\"file\":\"%s\",\"dtype\":\"%s\",\"shape\":[", files[f], sts_dtype_name(t->dtype));
        for (d = 0; d < t->rank; d++) o += (size_t)sprintf(json + o, "%s%llu", d ? "," : "", (unsigned long long)t->shape[d]);
        o += (size_t)sprintf(json + o, "],\"data_offsets\":[%llu,%llu]}%s", (unsigned long long)x->begin, (unsigned long long)x->end, n ? "," : "");
        sts_close(h);
        assert_true(o < (1 << 16) - 1024);
    }
    o += (size_t)sprintf(json + o, "}}");
    tf_join(p, sizeof p, dir, "_tensor_index.json");
    tf_write(p, json, o);
    free(json);
    for (pass = 0; pass < 4; pass++) {  /* index without / with data first, no index without / with data first */
        int with_index = pass < 2, data_first = pass & 1, with_data;
        sts_dataset *ds = open_ds(dir, 1, !with_index);
        sts_error e;
        assert_int_equal(sts_dataset_describe(ds).has_index, with_index);
        for (with_data = 0; with_data < 2; with_data++)
            for (n = 0; n < KT_FILES * KT_PER_FILE; n++) {
                const kt_tensor *t = &kt[n % KT_FILES][(n * 7) % KT_PER_FILE];  /* another order again */
                sts_view v;
                int wd = data_first ? !with_data : with_data;
                DR_OK(sts_dataset_get(ds, with_index ? t->key : t->name, with_index ? t->key_len : t->name_len, wd, &v, &e));
                kt_check_view(t, n % KT_FILES, &v, with_index, wd);
            }
        if (with_index) {  /* a tensor's own name is not a key when the index gives it another */
            sts_view v;
            tu_err_check("name of an aliased tensor", sts_dataset_get(ds, kt[1][2].name, kt[1][2].name_len, 1, &v, &e), &e, STS_ERR_NOT_FOUND,
                          STS_RULE_NOT_FOUND, NULL);
            /* the schema inferred from the index: the first file's names, in the index's order */
            assert_int_equal(sts_dataset_describe(ds).columns, KT_PER_FILE);
            for (i = 0; i < KT_PER_FILE; i++) {
                const kt_tensor *t = &kt[0][KT_PER_FILE - 1 - i];
                const sts_view *c = sts_dataset_column(ds, i);
                uint32_t d;
                assert_int_equal(c->key_len, t->name_len);
                if (t->name_len) assert_memory_equal(c->key, t->name, t->name_len);
                assert_int_equal(c->dtype, t->dtype);
                assert_int_equal(c->rank, t->rank);
                for (d = 0; d < t->rank; d++) assert_true(c->shape[d] == t->shape[d]);
            }
        }
        {   /* a long scan pushed down by dtype (the index chooses the files): every F32 tensor, by name */
            sts_scan_spec sp;
            dr_rows rs;
            sts_dtype want = STS_DTYPE_F32;
            size_t count = 0;
            for (f = 0; f < KT_FILES; f++) for (i = 0; i < KT_PER_FILE; i++) count += kt[f][i].dtype == want;
            memset(&sp, 0, sizeof sp);
            sp.with_data = 1;
            sp.dtypes = &want;
            sp.ndtypes = 1;
            DR_OK(dr_long_scan(ds, &sp, &rs, &e));
            assert_int_equal(rs.n, count);
            dr_rows_free(&rs);
        }
        sts_dataset_close(ds);
    }
    tf_rmtree(dir);
}

/* ---- lastWin: the later shard path wins everywhere ---- */
static void last_win_case(int index, int no_index) {
    char dir[256], p[512];
    dr_kv k;
    sts_dataset *ds;
    sts_error e;
    uint32_t d;
    sts_scan_spec sp;
    dr_rows rs;
    memset(&k, 0, sizeof k);
    k.tasks = 3;
    k.rows = 2;
    k.index = index;
    k.last_win = 1;
    k.dup_every = 2;   /* tasks 1 and 2 both write dup_0 and dup_1: task 2's copies win */
    dr_fresh(dir, sizeof dir, "lastwin");
    dr_write_kv(dir, &k);
    ds = open_ds(dir, 1, no_index);
    if (index && !no_index) {
        tf_names sh = dr_list_shards(dir);
        char needle[512];
        tf_join(p, sizeof p, dir, "_tensor_index.json");
        snprintf(needle, sizeof needle, "\"dup_0__img\":{\"file\":\"%s\"", sh.v[2]);
        assert_true(dr_contains(p, needle));
        tf_names_free(&sh);
    }
    for (d = 0; d < 2; d++) {
        char key[64];
        sts_view v;
        snprintf(key, sizeof key, "dup_%u__img", d);
        DR_OK(sts_dataset_get(ds, key, strlen(key), 1, &v, &e));
        assert_int_equal(v.file, 2);
        dr_check_kv_view(&v, 2, 500 + d);
        snprintf(key, sizeof key, "dup_%u__emb", d);
        DR_OK(sts_dataset_get(ds, key, strlen(key), 1, &v, &e));
        assert_int_equal(v.file, 2);
        dr_check_kv_view(&v, 2, 500 + d);
    }
    /* a long scan yields each duplicated key once, from the winner */
    memset(&sp, 0, sizeof sp);
    sp.with_data = 1;
    DR_OK(dr_long_scan(ds, &sp, &rs, &e));
    assert_int_equal(rs.n, 2 * (3 * 2 + 2));
    {
        dr_row *x = dr_rows_find(&rs, "dup_1__emb");
        size_t i, n = 0;
        assert_non_null(x);
        assert_int_equal(x->file, 2);
        for (i = 0; i < rs.n; i++) n += rs.r[i].key_len > 4 && memcmp(rs.r[i].key, "dup_", 4) == 0;
        assert_int_equal(n, 4);
    }
    dr_rows_free(&rs);
    /* and with a key filter */
    {
        const char *keys[2] = { "dup_0__img", "k000_001__img" };
        memset(&sp, 0, sizeof sp);
        sp.keys = keys;
        sp.nkeys = 2;
        sp.with_data = 1;
        DR_OK(dr_long_scan(ds, &sp, &rs, &e));
        assert_int_equal(rs.n, 2);
        assert_int_equal(dr_rows_find(&rs, "dup_0__img")->file, 2);
        assert_int_equal(dr_rows_find(&rs, "k000_001__img")->file, 0);
        dr_rows_free(&rs);
    }
    sts_dataset_close(ds);
    tf_rmtree(dir);
}
static void test_last_win_index(void **state) { (void)state; last_win_case(1, 0); }
static void test_last_win_no_index(void **state) { (void)state; last_win_case(0, 0); }
static void test_last_win_index_ignored(void **state) { (void)state; last_win_case(1, 1); }

/* Task ids past five digits: the writer lets the higher task id win a duplicated key (99999 <
   100000, though "part-100000-" sorts before "part-99999-" byte by byte). Lookups and long scans
   must return that copy whether the index is used or not. */
static void test_last_win_wide_task_ids(void **state) {
    char dir[256];
    sts_write_config c;
    sts_error e;
    char *msgs[2];
    size_t lens[2];
    uint32_t ids[2] = { 99999, 100000 };
    sts_dataset_summary sum;
    int t, no_index;
    (void)state;
    dr_fresh(dir, sizeof dir, "lw_wide");
    memset(&c, 0, sizeof c);
    c.name_col = "id";
    c.generate_index = 1;
    c.duplicates = STS_DUPLICATES_LAST_WIN;
    c.has_dtype = 1;
    c.dtype = STS_DTYPE_F32;
    c.no_fsync = 1;
    DR_OK(sts_dataset_prepare(dir, &c, DR_KV_SCHEMA, 3, NULL, &e));
    for (t = 0; t < 2; t++) {
        sts_task_writer *w;
        DR_OK(sts_task_open(dir, ids[t], &c, DR_KV_SCHEMA, 3, NULL, &w, &e));
        dr_kv_put(w, "dup", (uint32_t)t, 7);
        DR_OK(sts_task_commit(w, &msgs[t], &lens[t], &e));
        sts_task_close(w);
    }
    DR_OK(sts_dataset_commit(dir, &c, (const char *const *)msgs, lens, 2, NULL, &sum, &e));
    for (t = 0; t < 2; t++) sts_free(NULL, msgs[t], lens[t] + 1);
    for (no_index = 0; no_index < 2; no_index++) {
        sts_dataset *ds = open_ds(dir, 1, no_index);
        sts_view v;
        sts_scan_spec sp;
        dr_rows rs;
        size_t f100k;
        assert_int_equal(sts_dataset_describe(ds).files, 2);
        f100k = memcmp(sts_dataset_file(ds, 0), "part-100000-", 12) == 0 ? 0 : 1;
        assert_memory_equal(sts_dataset_file(ds, f100k), "part-100000-", 12);
        DR_OK(sts_dataset_get(ds, "dup__img", 8, 1, &v, &e));
        if (v.file != f100k) {
            sts_dataset_close(ds);
            tf_rmtree(dir);
            fail_msg("lastWin, task ids 99999 and 100000, index %s: the lookup returned %s's copy; the writer (and its index) let task 100000 win",
                     no_index ? "ignored" : "used", no_index ? "task 99999" : "task 99999");
        }
        dr_check_kv_view(&v, 1, 7);
        memset(&sp, 0, sizeof sp);
        sp.with_data = 1;
        DR_OK(dr_long_scan(ds, &sp, &rs, &e));
        assert_int_equal(rs.n, 2);
        assert_int_equal(rs.r[0].file, f100k);
        assert_int_equal(rs.r[1].file, f100k);
        dr_rows_free(&rs);
        sts_dataset_close(ds);
    }
    tf_rmtree(dir);
}

/* ---- discovery without a manifest ---- */
static void test_listing_name_order(void **state) {
    char dir[256], p[512];
    dr_spec a = { "t", STS_DTYPE_U8, 1, { 3 }, NULL, 1 }, b = { "t", STS_DTYPE_U8, 1, { 4 }, NULL, 2 }, c = { "t", STS_DTYPE_U8, 1, { 5 }, NULL, 3 };
    dr_spec only_b = { "only_b", STS_DTYPE_F32, 0, { 0 }, NULL, 9 };
    dr_spec two[2];
    sts_dataset *ds;
    sts_error e;
    sts_view v;
    (void)state;
    dr_fresh(dir, sizeof dir, "listing");
    assert_int_equal(mkdir(dir, 0755), 0);
    two[0] = b;
    two[1] = only_b;
    dr_write_file(dir, "b.safetensors", two, 2, NULL, 0);
    dr_write_file(dir, "c.safetensors", &c, 1, NULL, 0);
    dr_write_file(dir, "a.safetensors", &a, 1, NULL, 0);
    /* never read: hidden files, a writer's temporary, other names, a folder, a bare suffix */
    dr_write_in(dir, ".part-00000-0000-x.safetensors.tmp-1234", "garbage");
    dr_write_in(dir, ".hidden.safetensors", "garbage");
    dr_write_in(dir, "notes.txt", "garbage");
    dr_write_in(dir, "x.safetensors.bak", "garbage");
    dr_write_in(dir, ".safetensors", "garbage");
    dr_write_in(dir, "model.safetensors.index.json", "{\"metadata\":{},\"weight_map\":{}}");
    dr_subdir(p, sizeof p, dir, "d.safetensors");
    ds = open_ds(dir, 1, 0);
    assert_int_equal(sts_dataset_describe(ds).files, 3);
    assert_int_equal(sts_dataset_describe(ds).has_manifest, 0);
    assert_int_equal(sts_dataset_describe(ds).has_index, 0);
    assert_int_equal(sts_dataset_describe(ds).kv, 0);
    assert_string_equal(sts_dataset_file(ds, 0), "a.safetensors");
    assert_string_equal(sts_dataset_file(ds, 1), "b.safetensors");
    assert_string_equal(sts_dataset_file(ds, 2), "c.safetensors");
    /* schema from a.safetensors */
    assert_int_equal(sts_dataset_describe(ds).columns, 1);
    assert_int_equal(sts_dataset_column(ds, 0)->shape[0], 3);
    /* "t" is in every file: the last in name order wins */
    DR_OK(sts_dataset_get(ds, "t", 1, 1, &v, &e));
    assert_int_equal(v.file, 2);
    assert_true(dr_pattern_matches(&c, v.data));
    DR_OK(sts_dataset_get(ds, "only_b", 6, 1, &v, &e));
    assert_int_equal(v.file, 1);
    assert_int_equal(v.rank, 0);
    assert_int_equal(v.nbytes, 4);
    assert_true(dr_pattern_matches(&only_b, v.data));
    sts_dataset_close(ds);
    tf_rmtree(dir);
}

/* A live task writer's files (hidden temporaries) are never part of a listing. */
static void test_listing_skips_writer_temporaries(void **state) {
    char dir[256];
    dr_kv k;
    sts_write_config c;
    sts_task_writer *w;
    sts_dataset *ds;
    sts_error e;
    dr_rows rs;
    sts_scan_spec sp;
    size_t hidden = 0;
    DIR *d;
    struct dirent *ent;
    (void)state;
    memset(&k, 0, sizeof k);
    k.tasks = 2;
    k.rows = 3;
    dr_fresh(dir, sizeof dir, "temps");
    dr_write_kv(dir, &k);
    dr_unlink_in(dir, "dataset_manifest.json");
    memset(&c, 0, sizeof c);  /* a batch task writer creates its file (a hidden temporary) at its first row */
    c.batch_size = 2;
    c.has_dtype = 1;
    c.dtype = STS_DTYPE_F32;
    c.no_fsync = 1;
    DR_OK(sts_task_open(dir, 7, &c, DR_BATCH_SCHEMA, 2, NULL, &w, &e));
    {
        uint8_t img[12] = { 0 };  /* a tensor cell of 6 I16 zeros */
        float emb[4] = { 0 };
        uint64_t shape[2] = { 2, 3 };
        sts_value v[2];
        memset(v, 0, sizeof v);
        v[0].data = img; v[0].size = sizeof img; v[0].dtype = STS_DTYPE_I16; v[0].rank = 2; v[0].shape = shape;
        v[1].data = emb; v[1].size = 4;
        DR_OK(sts_task_write(w, v, &e));
    }
    d = opendir(dir);
    assert_non_null(d);
    while ((ent = readdir(d)) != NULL) hidden += strncmp(ent->d_name, ".part-", 6) == 0;
    closedir(d);
    assert_true(hidden >= 1);   /* the writer's temporary exists */
    ds = open_ds(dir, 1, 0);
    assert_int_equal(sts_dataset_describe(ds).files, 2);
    memset(&sp, 0, sizeof sp);
    DR_OK(dr_long_scan(ds, &sp, &rs, &e));
    assert_int_equal(rs.n, 2 * 2 * 3);
    dr_rows_free(&rs);
    sts_dataset_close(ds);
    sts_task_close(w);
    tf_rmtree(dir);
}

/* ---- a single file is a dataset of one file ---- */
static void test_single_file(void **state) {
    char dir[256], p[512], cwd[4096];
    dr_spec specs[3] = {
        { "w", STS_DTYPE_F32, 2, { 2, 3 }, NULL, 1 },
        { "b", STS_DTYPE_BF16, 1, { 3 }, NULL, 2 },
        { "s", STS_DTYPE_I64, 0, { 0 }, NULL, 3 },
    };
    sts_kv meta[1] = { { "format", 6, "pt", 2 } };
    int pass;
    (void)state;
    dr_fresh(dir, sizeof dir, "single");
    assert_int_equal(mkdir(dir, 0755), 0);
    dr_write_file(dir, "one.safetensors", specs, 3, meta, 1);
    tf_join(p, sizeof p, dir, "one.safetensors");
    assert_non_null(getcwd(cwd, sizeof cwd));
    for (pass = 0; pass < 2; pass++) {  /* an absolute path, then a bare file name */
        sts_dataset *ds;
        sts_error e;
        sts_view v;
        size_t i, nc;
        sts_scan_spec sp;
        sts_scan *s;
        const sts_view *c;
        if (pass) assert_int_equal(chdir(dir), 0);  /* the dataset is used from the folder it was opened in */
        ds = open_ds(pass ? "one.safetensors" : p, 1, 0);
        assert_int_equal(sts_dataset_describe(ds).files, 1);
        assert_int_equal(sts_dataset_describe(ds).has_manifest, 0);
        assert_int_equal(sts_dataset_describe(ds).has_index, 0);
        assert_int_equal(sts_dataset_describe(ds).columns, 3);
        assert_string_equal(sts_dataset_file(ds, 0), "one.safetensors");
        for (i = 0; i < 3; i++) {
            DR_OK(sts_dataset_get(ds, specs[i].name, strlen(specs[i].name), 1, &v, &e));
            assert_int_equal(v.file, 0);
            assert_int_equal(v.dtype, specs[i].dtype);
            assert_int_equal(v.rank, specs[i].rank);
            assert_int_equal(v.nbytes, dr_spec_bytes(&specs[i]));
            assert_true(dr_pattern_matches(&specs[i], v.data));
        }
        memset(&sp, 0, sizeof sp);
        sp.with_data = 1;
        DR_OK(sts_scan_open(ds, &sp, &s, &e));
        DR_OK(sts_scan_next(s, &c, &nc, &e));
        assert_int_equal(nc, 3);
        for (i = 0; i < nc; i++) assert_true(c[i].present && c[i].data);
        DR_OK(sts_scan_next(s, &c, &nc, &e));
        assert_int_equal(nc, 0);
        sts_scan_close(s);
        sts_dataset_close(ds);
        if (pass) assert_int_equal(chdir(cwd), 0);
    }
    tf_rmtree(dir);
}

/* A file directly in "/": the dataset's folder is "/". The checking allocator (guard bytes after
   every block) catches a write past the end of one (the folder string is one byte short). Skipped when "/" is
   not writable. Runs in a child: under ASan or valgrind the overflow itself is reported there. */
static void root_file_open(const char *path) {
    tu_alloc c;
    sts_options o = tu_alloc_opts(&c, NULL);
    sts_read_config cfg;
    sts_dataset *ds;
    sts_error e;
    sts_view v;
    memset(&cfg, 0, sizeof cfg);
    cfg.infer_schema = 1;
    if (sts_dataset_open(path, &cfg, &o, &ds, &e) != STS_OK) { fprintf(stderr, "open %s: %s\n", path, e.message); _exit(3); }
    if (sts_dataset_get(ds, "t", 1, 1, &v, &e) != STS_OK) { fprintf(stderr, "get: %s\n", e.message); _exit(4); }
    sts_dataset_close(ds);
    if (c.bad) { fprintf(stderr, "allocator misuse: %s\n", c.why); _exit(5); }
    if (c.blocks) _exit(6);
}
static void test_single_file_in_root(void **state) {
    char name[64], p[80];
    dr_spec a = { "t", STS_DTYPE_U8, 1, { 3 }, NULL, 1 };
    (void)state;
    snprintf(name, sizeof name, "dsr-%ld.safetensors", (long)getpid());
    snprintf(p, sizeof p, "/%s", name);
    {   /* writable? */
        int fd = open(p, O_CREAT | O_EXCL | O_WRONLY, 0644);
        if (fd < 0) { skip(); return; }
        close(fd);
        unlink(p);
    }
    dr_write_file("/", name, &a, 1, NULL, 0);
    {
        char why[128];
        int ok = run_child(root_file_open, p, why, sizeof why);
        unlink(p);
        if (!ok) fail_msg("a file in /: %s", why);
    }
}

/* ---- schema ---- */
static void test_schema_from_index_equals_header(void **state) {
    char dir[256];
    dr_kv k;
    sts_dataset *a, *b;
    size_t i;
    (void)state;
    memset(&k, 0, sizeof k);
    k.tasks = 3;
    k.rows = 4;
    k.index = 1;
    dr_fresh(dir, sizeof dir, "schema_src");
    dr_write_kv(dir, &k);
    a = open_ds(dir, 1, 0);   /* from the index */
    b = open_ds(dir, 1, 1);   /* from the first header */
    assert_int_equal(sts_dataset_describe(a).columns, 2 * 4);
    assert_int_equal(sts_dataset_describe(b).columns, 2 * 4);
    assert_int_equal(sts_dataset_stats(a).files_opened, 0);  /* the index answered */
    assert_int_equal(sts_dataset_stats(b).files_opened, 1);  /* one header read */
    for (i = 0; i < 8; i++) {
        const sts_view *x = sts_dataset_column(a, i), *y = sts_dataset_column(b, i);
        uint32_t t, r;
        assert_int_equal(x->key_len, y->key_len);
        assert_memory_equal(x->key, y->key, x->key_len);
        assert_int_equal(x->dtype, y->dtype);
        assert_int_equal(x->rank, y->rank);
        assert_memory_equal(x->shape, y->shape, x->rank * sizeof *x->shape);
        assert_true(dr_kv_parse(x->key, x->key_len, &t, &r));
        assert_int_equal(t, 0);
    }
    sts_dataset_close(a);
    sts_dataset_close(b);
    tf_rmtree(dir);
}

static void test_no_schema(void **state) {
    char dir[256];
    dr_spec a = { "t", STS_DTYPE_U8, 1, { 3 }, NULL, 1 };
    sts_read_config cfg;
    sts_dataset *ds = NULL;
    sts_error e;
    (void)state;
    dr_fresh(dir, sizeof dir, "noschema");
    assert_int_equal(mkdir(dir, 0755), 0);
    dr_write_file(dir, "a.safetensors", &a, 1, NULL, 0);
    memset(&cfg, 0, sizeof cfg);
    tu_err_check("zero config", sts_dataset_open(dir, &cfg, NULL, &ds, &e), &e, STS_ERR_SCHEMA, STS_RULE_READ_SCHEMA, "schema", NULL);
    tu_err_check("NULL config", sts_dataset_open(dir, NULL, NULL, &ds, &e), &e, STS_ERR_SCHEMA, STS_RULE_READ_SCHEMA, "schema", NULL);
    {   /* nschema without the array */
        cfg.nschema = 1;
        tu_err_check("nschema, no schema", sts_dataset_open(dir, &cfg, NULL, &ds, &e), &e, STS_ERR_INVALID_ARGUMENT, STS_RULE_ARGUMENT, NULL);
    }
    {   /* a malformed column: a dtype out of range, a shape without its array */
        sts_schema_column sc;
        memset(&sc, 0, sizeof sc);
        sc.name = "t"; sc.name_len = 1; sc.has_dtype = 1; sc.dtype = STS_DTYPE_COUNT;
        cfg.schema = &sc;
        cfg.nschema = 1;
        tu_err_check("bad dtype", sts_dataset_open(dir, &cfg, NULL, &ds, &e), &e, STS_ERR_INVALID_ARGUMENT, STS_RULE_ARGUMENT, NULL);
        sc.has_dtype = 0; sc.has_shape = 1; sc.rank = 2; sc.shape = NULL;
        tu_err_check("bad shape", sts_dataset_open(dir, &cfg, NULL, &ds, &e), &e, STS_ERR_INVALID_ARGUMENT, STS_RULE_ARGUMENT, NULL);
    }
    tf_rmtree(dir);
}

/* Explicit schema over a batch dataset whose tail file has fewer rows. */
static sts_result wide_all(sts_dataset *ds, int with_data, const char *const *cols, size_t ncols, size_t *rows, size_t *nulls, sts_error *e) {
    sts_scan_spec sp;
    sts_scan *s;
    const sts_view *c;
    size_t nc, i;
    sts_result r;
    memset(&sp, 0, sizeof sp);
    sp.with_data = with_data;
    sp.columns = cols;
    sp.ncolumns = ncols;
    *rows = *nulls = 0;
    if ((r = sts_scan_open(ds, &sp, &s, e)) != STS_OK) return r;
    for (;;) {
        if ((r = sts_scan_next(s, &c, &nc, e)) != STS_OK || !nc) break;
        (*rows)++;
        for (i = 0; i < nc; i++) {
            if (!c[i].present) { (*nulls)++; assert_null(c[i].data); }
            else if (with_data) assert_true(c[i].data != NULL || c[i].nbytes == 0);
        }
    }
    sts_scan_close(s);
    return r;
}
static sts_result open_explicit(const char *dir, const sts_schema_column *sc, size_t n, sts_dataset **ds, sts_error *e) {
    sts_read_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.schema = sc;
    cfg.nschema = n;
    cfg.infer_schema = 1;  /* an explicit schema wins over inference */
    return sts_dataset_open(dir, &cfg, NULL, ds, e);
}
static void test_explicit_schema(void **state) {
    char dir[256];
    dr_batch b;
    tf_names sh;
    sts_dataset *ds;
    sts_error e;
    size_t rows, nulls;
    uint64_t any3[3] = { STS_DIM_ANY, 2, 3 }, exact3[3] = { 4, 2, 3 }, rank2[2] = { 4, 6 }, wrong_dim[3] = { STS_DIM_ANY, 3, 2 };
    uint64_t any_any[2] = { STS_DIM_ANY, STS_DIM_ANY };
    (void)state;
    memset(&b, 0, sizeof b);
    b.tasks = 1;
    b.rows_per_task[0] = 10;
    b.batch_size = 4;
    dr_fresh(dir, sizeof dir, "explicit");
    dr_write_batch(dir, &b);
    sh = dr_list_shards(dir);
    assert_int_equal(sh.n, 3);
    {   /* names only: "img" present, "label" missing everywhere (null), "emb" not asked for (ignored) */
        sts_schema_column sc[2];
        const sts_view *c0;
        memset(sc, 0, sizeof sc);
        sc[0].name = "img"; sc[0].name_len = 3;
        sc[1].name = "label"; sc[1].name_len = 5;
        DR_OK(open_explicit(dir, sc, 2, &ds, &e));
        assert_int_equal(sts_dataset_describe(ds).columns, 2);
        c0 = sts_dataset_column(ds, 1);
        assert_int_equal(c0->key_len, 5);
        assert_memory_equal(c0->key, "label", 5);
        DR_OK(wide_all(ds, 1, NULL, 0, &rows, &nulls, &e));
        assert_int_equal(rows, 3);
        assert_int_equal(nulls, 3);
        {   /* projection of the missing column alone, header bytes only */
            const char *cols[1] = { "label" };
            DR_OK(wide_all(ds, 0, cols, 1, &rows, &nulls, &e));
            assert_int_equal(rows, 3);
            assert_int_equal(nulls, 3);
            cols[0] = "emb";  /* not in the explicit schema */
            tu_err_check("projection outside the schema", wide_all(ds, 0, cols, 1, &rows, &nulls, &e), &e, STS_ERR_SCHEMA, STS_RULE_READ_SCHEMA, "emb", NULL);
        }
        sts_dataset_close(ds);
    }
    {   /* dtype and shape with STS_DIM_ANY: every file agrees */
        sts_schema_column sc[2];
        memset(sc, 0, sizeof sc);
        sc[0].name = "img"; sc[0].name_len = 3; sc[0].has_dtype = 1; sc[0].dtype = STS_DTYPE_I16; sc[0].has_shape = 1; sc[0].rank = 3; sc[0].shape = any3;
        sc[1].name = "emb"; sc[1].name_len = 3; sc[1].has_dtype = 1; sc[1].dtype = STS_DTYPE_BF16; sc[1].has_shape = 1; sc[1].rank = 2; sc[1].shape = any_any;
        DR_OK(open_explicit(dir, sc, 2, &ds, &e));
        DR_OK(wide_all(ds, 1, NULL, 0, &rows, &nulls, &e));
        assert_int_equal(rows, 3);
        assert_int_equal(nulls, 0);
        DR_OK(wide_all(ds, 0, NULL, 0, &rows, &nulls, &e));
        sts_dataset_close(ds);
    }
    {   /* an exact first dimension: the tail file (2 rows) differs, and is named */
        sts_schema_column sc;
        memset(&sc, 0, sizeof sc);
        sc.name = "img"; sc.name_len = 3; sc.has_shape = 1; sc.rank = 3; sc.shape = exact3;
        DR_OK(open_explicit(dir, &sc, 1, &ds, &e));
        tu_err_check("shape", wide_all(ds, 0, NULL, 0, &rows, &nulls, &e), &e, STS_ERR_SCHEMA, STS_RULE_READ_SCHEMA, sh.v[2], "img", NULL);
        assert_int_equal(rows, 2);  /* the first two files passed */
        sts_dataset_close(ds);
        /* a file range without the tail file passes */
        DR_OK(open_explicit(dir, &sc, 1, &ds, &e));
        {
            sts_scan_spec sp;
            sts_scan *s;
            const sts_view *c;
            size_t nc, n = 0;
            memset(&sp, 0, sizeof sp);
            sp.file_begin = 0;
            sp.file_end = 2;
            DR_OK(sts_scan_open(ds, &sp, &s, &e));
            for (;;) { DR_OK(sts_scan_next(s, &c, &nc, &e)); if (!nc) break; n++; }
            assert_int_equal(n, 2);
            sts_scan_close(s);
        }
        sts_dataset_close(ds);
    }
    {   /* a wrong dtype: the first file is named */
        sts_schema_column sc;
        memset(&sc, 0, sizeof sc);
        sc.name = "emb"; sc.name_len = 3; sc.has_dtype = 1; sc.dtype = STS_DTYPE_F16;
        DR_OK(open_explicit(dir, &sc, 1, &ds, &e));
        tu_err_check("dtype", wide_all(ds, 1, NULL, 0, &rows, &nulls, &e), &e, STS_ERR_SCHEMA, STS_RULE_READ_SCHEMA, sh.v[0], "emb", "BF16", "F16", NULL);
        sts_dataset_close(ds);
    }
    {   /* a wrong rank, a wrong inner dimension */
        sts_schema_column sc;
        memset(&sc, 0, sizeof sc);
        sc.name = "img"; sc.name_len = 3; sc.has_shape = 1; sc.rank = 2; sc.shape = rank2;
        DR_OK(open_explicit(dir, &sc, 1, &ds, &e));
        tu_err_check("rank", wide_all(ds, 0, NULL, 0, &rows, &nulls, &e), &e, STS_ERR_SCHEMA, STS_RULE_READ_SCHEMA, sh.v[0], "img", NULL);
        sts_dataset_close(ds);
        sc.rank = 3; sc.shape = wrong_dim;
        DR_OK(open_explicit(dir, &sc, 1, &ds, &e));
        tu_err_check("dim", wide_all(ds, 0, NULL, 0, &rows, &nulls, &e), &e, STS_ERR_SCHEMA, STS_RULE_READ_SCHEMA, sh.v[0], "img",
                     "the schema says any [-1, 3, 2]", NULL);  /* STS_DIM_ANY as -1, as manifests write it */
        sts_dataset_close(ds);
    }
    {   /* a rank-0 column shape: matches only scalars */
        sts_schema_column sc;
        memset(&sc, 0, sizeof sc);
        sc.name = "img"; sc.name_len = 3; sc.has_shape = 1; sc.rank = 0; sc.shape = NULL;
        DR_OK(open_explicit(dir, &sc, 1, &ds, &e));
        tu_err_check("scalar", wide_all(ds, 0, NULL, 0, &rows, &nulls, &e), &e, STS_ERR_SCHEMA, STS_RULE_READ_SCHEMA, "img", NULL);
        sts_dataset_close(ds);
    }
    tf_names_free(&sh);
    tf_rmtree(dir);
}

/* ---- long-scan filters and file ranges ---- */
static void test_long_filters(void **state) {
    char dir[256];
    dr_kv k;
    sts_dataset *ds;
    sts_error e;
    sts_scan_spec sp;
    dr_rows rs;
    size_t i;
    uint32_t t, r;
    (void)state;
    memset(&k, 0, sizeof k);
    k.tasks = 4;
    k.rows = 6;
    k.index = 1;
    dr_fresh(dir, sizeof dir, "filters");
    dr_write_kv(dir, &k);
    for (i = 0; i < 2; i++) {
        ds = open_ds(dir, 1, (int)i);
        {   /* dtype: U8 = the images */
            sts_dtype dt = STS_DTYPE_U8;
            memset(&sp, 0, sizeof sp);
            sp.dtypes = &dt;
            sp.ndtypes = 1;
            sp.with_data = 1;
            DR_OK(dr_long_scan(ds, &sp, &rs, &e));
            assert_int_equal(rs.n, 24);
            for (r = 0; r < rs.n; r++) {
                assert_int_equal(rs.r[r].dtype, STS_DTYPE_U8);
                assert_memory_equal(rs.r[r].key + rs.r[r].key_len - 5, "__img", 5);
            }
            dr_rows_free(&rs);
            dt = STS_DTYPE_U16;  /* nothing */
            DR_OK(dr_long_scan(ds, &sp, &rs, &e));
            assert_int_equal(rs.n, 0);
            assert_int_equal(rs.st.data_bytes, 0);
            dr_rows_free(&rs);
        }
        {   /* dtype list: U8 or F32 = everything */
            sts_dtype dts[3] = { STS_DTYPE_F32, STS_DTYPE_U8, STS_DTYPE_F32 };
            memset(&sp, 0, sizeof sp);
            sp.dtypes = dts;
            sp.ndtypes = 3;
            DR_OK(dr_long_scan(ds, &sp, &rs, &e));
            assert_int_equal(rs.n, 48);
            dr_rows_free(&rs);
        }
        {   /* shape [3, 3] images; [ANY, 3]: every image; [3]: every emb */
            uint64_t s33[2] = { 3, 3 }, sa3[2] = { STS_DIM_ANY, 3 }, s3[1] = { 3 };
            size_t n33 = 0;
            memset(&sp, 0, sizeof sp);
            sp.has_shape = 1;
            sp.rank = 2;
            sp.shape = s33;
            DR_OK(dr_long_scan(ds, &sp, &rs, &e));
            for (t = 0; t < 4; t++) for (r = 0; r < 6; r++) { uint64_t sh[2]; dr_kv_img_shape(t, r, sh); n33 += sh[0] == 3; }
            assert_int_equal(rs.n, n33);
            dr_rows_free(&rs);
            sp.shape = sa3;
            DR_OK(dr_long_scan(ds, &sp, &rs, &e));
            assert_int_equal(rs.n, 24);
            dr_rows_free(&rs);
            sp.rank = 1;
            sp.shape = s3;
            DR_OK(dr_long_scan(ds, &sp, &rs, &e));
            assert_int_equal(rs.n, 24);
            for (r = 0; r < rs.n; r++) assert_memory_equal(rs.r[r].key + rs.r[r].key_len - 5, "__emb", 5);
            dr_rows_free(&rs);
            sp.rank = 0;  /* scalars: none */
            sp.shape = NULL;
            DR_OK(dr_long_scan(ds, &sp, &rs, &e));
            assert_int_equal(rs.n, 0);
            dr_rows_free(&rs);
        }
        {   /* keys with explicit lengths (not NUL-terminated), combined with a dtype filter */
            const char buf[] = "k002_003__imgk001_005__embXXXX";
            const char *keys[3] = { buf, buf + 13, "absent" };
            size_t lens[3] = { 13, 13, 6 };
            sts_dtype dt = STS_DTYPE_F32;
            memset(&sp, 0, sizeof sp);
            sp.keys = keys;
            sp.key_lens = lens;
            sp.nkeys = 3;
            sp.with_data = 1;
            DR_OK(dr_long_scan(ds, &sp, &rs, &e));
            assert_int_equal(rs.n, 2);
            assert_non_null(dr_rows_find(&rs, "k002_003__img"));
            assert_non_null(dr_rows_find(&rs, "k001_005__emb"));
            dr_rows_free(&rs);
            sp.dtypes = &dt;
            sp.ndtypes = 1;
            DR_OK(dr_long_scan(ds, &sp, &rs, &e));
            assert_int_equal(rs.n, 1);
            assert_non_null(dr_rows_find(&rs, "k001_005__emb"));
            dr_rows_free(&rs);
        }
        sts_dataset_close(ds);
    }
    tf_rmtree(dir);
}

static void test_file_ranges(void **state) {
    char dir[256];
    dr_kv k;
    sts_dataset *ds;
    sts_error e;
    sts_scan_spec sp;
    dr_rows all, part;
    sts_scan *s;
    size_t b, i, got = 0;
    (void)state;
    memset(&k, 0, sizeof k);
    k.tasks = 7;
    k.rows = 3;
    k.index = 1;
    dr_fresh(dir, sizeof dir, "ranges");
    dr_write_kv(dir, &k);
    ds = open_ds(dir, 1, 0);
    memset(&sp, 0, sizeof sp);
    sp.with_data = 1;
    DR_OK(dr_long_scan(ds, &sp, &all, &e));
    assert_int_equal(all.n, 42);
    assert_int_equal(all.files, 7);
    for (b = 0; b < 7; b += 3) {  /* [0,3) [3,6) [6,7): the union is the whole scan, in order */
        sp.file_begin = b;
        sp.file_end = b + 3 < 7 ? b + 3 : 7;
        DR_OK(dr_long_scan(ds, &sp, &part, &e));
        assert_int_equal(part.files, sp.file_end - sp.file_begin);
        assert_int_equal(part.st.files_opened, sp.file_end - sp.file_begin);
        for (i = 0; i < part.n; i++, got++) {
            assert_true(part.r[i].file >= b && part.r[i].file < sp.file_end);
            assert_int_equal(part.r[i].key_len, all.r[got].key_len);
            assert_memory_equal(part.r[i].key, all.r[got].key, part.r[i].key_len);
            assert_true(part.r[i].sum == all.r[got].sum);
        }
        dr_rows_free(&part);
    }
    assert_int_equal(got, all.n);
    dr_rows_free(&all);
    /* an empty range, a range past the end, begin > end */
    sp.file_begin = 3;
    sp.file_end = 3;
    DR_OK(sts_scan_open(ds, &sp, &s, &e));
    assert_int_equal(sts_scan_files(s), 0);
    {
        const sts_view *c;
        size_t nc;
        DR_OK(sts_scan_next(s, &c, &nc, &e));
        assert_int_equal(nc, 0);
    }
    sts_scan_close(s);
    sp.file_begin = 5;
    sp.file_end = 8;
    tu_err_check("past the end", sts_scan_open(ds, &sp, &s, &e), &e, STS_ERR_INVALID_ARGUMENT, STS_RULE_ARGUMENT, NULL);
    sp.file_begin = 5;
    sp.file_end = 4;
    tu_err_check("begin > end", sts_scan_open(ds, &sp, &s, &e), &e, STS_ERR_INVALID_ARGUMENT, STS_RULE_ARGUMENT, NULL);
    /* wide ranges: one row per file of the range */
    memset(&sp, 0, sizeof sp);
    sp.file_begin = 2;
    sp.file_end = 5;
    DR_OK(sts_scan_open(ds, &sp, &s, &e));
    for (i = 2;; i++) {
        const sts_view *c;
        size_t nc;
        DR_OK(sts_scan_next(s, &c, &nc, &e));
        if (!nc) break;
        assert_int_equal(c[0].file, i);
    }
    assert_int_equal(i, 5);
    sts_scan_close(s);
    /* argument checks */
    memset(&sp, 0, sizeof sp);
    sp.nkeys = 1;
    tu_err_check("nkeys without keys", sts_scan_open(ds, &sp, &s, &e), &e, STS_ERR_INVALID_ARGUMENT, STS_RULE_ARGUMENT, NULL);
    tu_err_check("no spec", sts_scan_open(ds, NULL, &s, &e), &e, STS_ERR_INVALID_ARGUMENT, STS_RULE_ARGUMENT, NULL);
    {
        sts_view v;
        tu_err_check("no out", sts_dataset_get(ds, "x", 1, 0, NULL, &e), &e, STS_ERR_INVALID_ARGUMENT, STS_RULE_ARGUMENT, NULL);
        tu_err_check("no key", sts_dataset_get(ds, NULL, 3, 0, &v, &e), &e, STS_ERR_INVALID_ARGUMENT, STS_RULE_ARGUMENT, NULL);
    }
    sts_dataset_close(ds);
    sts_dataset_close(NULL);
    assert_null(sts_dataset_file(NULL, 0));
    assert_int_equal(sts_dataset_describe(NULL).files, 0);
    tf_rmtree(dir);
}

/* ---- a header over 1 MiB ---- */
static void test_big_header(void **state) {
    char dir[256], p[512];
    enum { N = 9000 };
    dr_spec *specs = (dr_spec *)calloc(N, sizeof *specs);
    char (*names)[112] = (char (*)[112])malloc(N * 112);
    sts_dataset *ds;
    sts_error e;
    sts_view v;
    size_t i;
    int64_t fsize;
    (void)state;
    assert_true(specs && names);
    for (i = 0; i < N; i++) {
        snprintf(names[i], 112, "model.encoder.layers.%05zu.attention.self.query_key_value.weight.with.a.rather.long.suffix.%05zu", i, i);
        specs[i].name = names[i];
        specs[i].dtype = i % 2 ? STS_DTYPE_F16 : STS_DTYPE_BF16;
        specs[i].rank = 1;
        specs[i].shape[0] = 1 + i % 3;
        specs[i].seed = (uint8_t)i;
    }
    dr_fresh(dir, sizeof dir, "bigheader");
    assert_int_equal(mkdir(dir, 0755), 0);
    dr_write_file(dir, "a.safetensors", specs, N, NULL, 0);
    specs[0].seed = 77;
    dr_write_file(dir, "b.safetensors", specs, N, NULL, 0);
    tf_join(p, sizeof p, dir, "a.safetensors");
    fsize = tf_file_size(p);
    {   /* the header alone is over 1 MiB */
        int fd = open(p, O_RDONLY);
        uint8_t pre[8];
        uint64_t hn = 0;
        int j;
        assert_true(fd >= 0);
        assert_int_equal(read(fd, pre, 8), 8);
        close(fd);
        for (j = 7; j >= 0; j--) hn = hn << 8 | pre[j];
        assert_true(hn > (1u << 20));
        assert_true((int64_t)hn < fsize);
    }
    /* as a single file */
    ds = open_ds(p, 1, 0);
    assert_int_equal(sts_dataset_describe(ds).columns, N);
    DR_OK(sts_dataset_get(ds, names[N - 1], strlen(names[N - 1]), 1, &v, &e));
    assert_true(dr_pattern_matches(&specs[N - 1], v.data));
    sts_dataset_close(ds);
    /* as a folder of two: header-only wide scan, long scan with a key filter */
    ds = open_ds(dir, 1, 0);
    {
        sts_scan_spec sp;
        sts_scan *s;
        const sts_view *c;
        size_t nc, rows = 0;
        dr_rows rs;
        const char *keys[1];
        memset(&sp, 0, sizeof sp);
        DR_OK(sts_scan_open(ds, &sp, &s, &e));
        for (;;) {
            DR_OK(sts_scan_next(s, &c, &nc, &e));
            if (!nc) break;
            assert_int_equal(nc, N);
            for (i = 0; i < nc; i++) assert_true(c[i].present);
            rows++;
        }
        assert_int_equal(rows, 2);
        assert_true(sts_scan_get_stats(s).header_bytes > (2u << 20));
        assert_int_equal(sts_scan_get_stats(s).files_mapped, 0);
        sts_scan_close(s);
        keys[0] = names[4321];
        memset(&sp, 0, sizeof sp);
        sp.keys = keys;
        sp.nkeys = 1;
        sp.with_data = 1;
        DR_OK(dr_long_scan(ds, &sp, &rs, &e));
        assert_int_equal(rs.n, 2);
        dr_rows_free(&rs);
        DR_OK(sts_dataset_get(ds, names[0], strlen(names[0]), 1, &v, &e));
        assert_int_equal(v.file, 1);
        assert_true(dr_pattern_matches(&specs[0], v.data));
    }
    sts_dataset_close(ds);
    free(specs);
    free(names);
    tf_rmtree(dir);
}

/* A 24 MiB header (metadata), at full strength: header-only scans and lookups work at any size up
   to the format's cap. */
static void test_huge_header(void **state) {
    char dir[256], p[512];
    const size_t big = (size_t)24 << 20;
    char *hdr;
    size_t hl = 0;
    FILE *f;
    sts_dataset *ds;
    sts_error e;
    sts_view v;
    (void)state;
    if (tu_quick()) { skip(); return; }
    dr_fresh(dir, sizeof dir, "hugeheader");
    assert_int_equal(mkdir(dir, 0755), 0);
    hdr = (char *)malloc(big + 256);
    assert_non_null(hdr);
    hl += (size_t)sprintf(hdr + hl, "{\"__metadata__\":{\"blob\":\"");
    memset(hdr + hl, 'x', big);
    hl += big;
    hl += (size_t)sprintf(hdr + hl, "\"},\"t\":{\"dtype\":\"I32\",\"shape\":[2],\"data_offsets\":[0,8]}}");
    while (hl % 8) hdr[hl++] = ' ';
    tf_join(p, sizeof p, dir, "huge.safetensors");
    f = fopen(p, "wb");
    assert_non_null(f);
    {
        uint8_t pre[8];
        int j;
        for (j = 0; j < 8; j++) pre[j] = (uint8_t)((uint64_t)hl >> (8 * j));
        assert_int_equal(fwrite(pre, 1, 8, f), 8);
    }
    assert_int_equal(fwrite(hdr, 1, hl, f), hl);
    assert_int_equal(fwrite("\x01\0\0\0\x02\0\0\0", 1, 8, f), 8);
    fclose(f);
    free(hdr);
    ds = open_ds(dir, 1, 0);
    assert_int_equal(sts_dataset_describe(ds).columns, 1);
    {
        sts_scan_spec sp;
        dr_rows rs;
        memset(&sp, 0, sizeof sp);
        DR_OK(dr_long_scan(ds, &sp, &rs, &e));
        assert_int_equal(rs.n, 1);
        assert_int_equal(rs.st.header_bytes, 8 + hl);
        dr_rows_free(&rs);
    }
    DR_OK(sts_dataset_get(ds, "t", 1, 1, &v, &e));
    assert_memory_equal(v.data, "\x01\0\0\0\x02\0\0\0", 8);
    sts_dataset_close(ds);
    tf_rmtree(dir);
}

/* ---- edge cases ---- */
/* A job that wrote no row: the manifest lists no shard (shards: []). Opening it must give an empty
   dataset or a clear error, never a crash; with an explicit schema it opens, and scans are empty. */
static void empty_open_infer(const char *dir) {
    sts_read_config cfg;
    sts_dataset *ds = NULL;
    sts_error e;
    sts_result r;
    memset(&cfg, 0, sizeof cfg);
    cfg.infer_schema = 1;
    r = sts_dataset_open(dir, &cfg, NULL, &ds, &e);
    if (r == STS_OK) {
        if (sts_dataset_describe(ds).files != 0) _exit(3);
        sts_dataset_close(ds);
    } else if (e.code != r || !e.message[0])
        _exit(4);
}
static void test_empty_dataset(void **state) {
    char dir[256];
    dr_kv k;
    sts_dataset *ds;
    sts_schema_column sc;
    sts_error e;
    sts_read_config cfg;
    (void)state;
    memset(&k, 0, sizeof k);
    k.tasks = 1;
    k.rows = 0;
    dr_fresh(dir, sizeof dir, "empty_ds");
    dr_write_kv(dir, &k);
    {
        tf_names sh = dr_list_shards(dir);
        assert_int_equal(sh.n, 0);
        tf_names_free(&sh);
    }
    memset(&sc, 0, sizeof sc);
    sc.name = "x"; sc.name_len = 1;
    memset(&cfg, 0, sizeof cfg);
    cfg.schema = &sc;
    cfg.nschema = 1;
    DR_OK(sts_dataset_open(dir, &cfg, NULL, &ds, &e));
    assert_int_equal(sts_dataset_describe(ds).files, 0);
    {
        sts_scan_spec sp;
        dr_rows rs;
        sts_view v;
        memset(&sp, 0, sizeof sp);
        DR_OK(dr_long_scan(ds, &sp, &rs, &e));
        assert_int_equal(rs.n, 0);
        dr_rows_free(&rs);
        tu_err_check("get", sts_dataset_get(ds, "x", 1, 1, &v, &e), &e, STS_ERR_NOT_FOUND, STS_RULE_NOT_FOUND, NULL);
    }
    sts_dataset_close(ds);
    in_child("empty dataset, inferred schema", empty_open_infer, dir);
    tf_rmtree(dir);
}

/* A projection of zero columns still has one row per file (a row count needs no column); the API
   marks the end with *ncells == 0, so such rows cannot be told from the end. */
static void test_wide_zero_columns(void **state) {
    char dir[256];
    dr_kv k;
    sts_dataset *ds;
    sts_scan_spec sp;
    sts_scan *s;
    sts_error e;
    const sts_view *c;
    size_t nc, rows = 0;
    const char *none[1] = { NULL };
    (void)state;
    memset(&k, 0, sizeof k);
    k.tasks = 3;
    k.rows = 1;
    dr_fresh(dir, sizeof dir, "zerocols");
    dr_write_kv(dir, &k);
    ds = open_ds(dir, 1, 0);
    memset(&sp, 0, sizeof sp);
    sp.columns = none;
    sp.ncolumns = 0;
    DR_OK(sts_scan_open(ds, &sp, &s, &e));
    assert_int_equal(sts_scan_files(s), 3);
    for (;;) {  /* the end is *cells == NULL: a row of zero cells is still a row */
        DR_OK(sts_scan_next(s, &c, &nc, &e));
        if (!c) break;
        assert_int_equal(nc, 0);
        rows++;
    }
    sts_scan_close(s);
    sts_dataset_close(ds);
    tf_rmtree(dir);
    if (rows != 3) fail_msg("a wide scan projecting zero columns gave %zu rows for 3 files", rows);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_batch_write_tail),
        cmocka_unit_test(test_batch_drop_tail),
        cmocka_unit_test(test_batch_pad_tail),
        cmocka_unit_test(test_batch_no_index),
        cmocka_unit_test(test_batch_no_index_pad),
        cmocka_unit_test(test_batch_get_without_index),
        cmocka_unit_test(test_kv_index),
        cmocka_unit_test(test_kv_no_index),
        cmocka_unit_test(test_key_table_layout),
        cmocka_unit_test(test_last_win_index),
        cmocka_unit_test(test_last_win_no_index),
        cmocka_unit_test(test_last_win_index_ignored),
        cmocka_unit_test(test_last_win_wide_task_ids),
        cmocka_unit_test(test_listing_name_order),
        cmocka_unit_test(test_listing_skips_writer_temporaries),
        cmocka_unit_test(test_single_file),
        cmocka_unit_test(test_single_file_in_root),
        cmocka_unit_test(test_schema_from_index_equals_header),
        cmocka_unit_test(test_no_schema),
        cmocka_unit_test(test_explicit_schema),
        cmocka_unit_test(test_long_filters),
        cmocka_unit_test(test_file_ranges),
        cmocka_unit_test(test_big_header),
        cmocka_unit_test(test_huge_header),
        cmocka_unit_test(test_empty_dataset),
        cmocka_unit_test(test_wide_zero_columns),
    };
    return cmocka_run_group_tests(tests, dr_root_setup, dr_root_teardown);
}
