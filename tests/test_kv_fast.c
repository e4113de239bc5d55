/* test_kv_fast.c - layer 8, KV mode: the one-pass row (sts__kv_row_fast) against the phases.
   The KV writer takes the usual row (a key of UTF-8 without NUL, names ascending, cells of their
   fixed columns' dtype and shape, no roll) in one pass, and every other row through its phases
   (check, names, fit, append). Both must leave the same state. Each case here writes the same rows
   twice, once as the writer chooses and once with every row through the phases (the writer's
   phases_only flag, a white-box switch), commits the dataset, and compares what comes out: each
   row's result and error, the task's commit message, each shard's bytes, and the manifest and
   index files (random ids aside). The rows are random, seeded per case, and built to wander in and
   out of the usual: keys of 3 to 52 bytes, some with escapes, non-ASCII characters or control
   bytes, some out of order or repeated (the key index then takes every later row), duplicates
   (fail or lastWin), cells of another shape or empty, one to three tensor columns of one or
   several dtypes, column names in and out of order, small targets (rolls every few rows), both
   layouts, with and without the I/O thread. Chunks are 16 KiB (as in the writer's fuzz target) so
   that arrival shards stream and chunks fill often. */
#define _POSIX_C_SOURCE 200809L
#define STS_KV_CHUNK_BYTES ((size_t)16 << 10)
#define STS_IMPLEMENTATION
#include "../safetensors_spark.h"
#include "dataset_write_util.h"

typedef struct kf_case {
    uint64_t seed;
    int arrival, threaded, last_win, ncols, mixed_dtypes, cols_desc;
    uint64_t target;
    size_t rows;
    int odd;  /* per mille of rows that leave the usual (key, shape or order) */
} kf_case;

typedef struct kf_out {
    tu_sb log;        /* each row's result and error message, the commit message, the dataset's documents */
    tf_names shards;  /* the shards, sorted by name: part-TTTTT-SSSS-uuid */
    char dir[4096];
} kf_out;

static const char *const KF_NAMES[2][3] = { { "a", "b", "c" }, { "zz", "y", "x" } };
static const sts_dtype KF_DT[3] = { STS_DTYPE_F32, STS_DTYPE_I16, STS_DTYPE_U8 };

/* A key for row i: the case's prefix, the row number in 5, 8 or 12 digits (keys of 5 to 52 bytes),
   and in some cases a tail of 0-30 bytes, random or growing along the rows (rows whose header
   entries differ, so that an arrival shard's room can fill before its target). Odd keys, per
   mille of rows: an escape, a non-ASCII character or a control byte after the number (still in
   order), or, in a third of the cases, one out of order or the last key again (the key index then
   takes every later row of the task). */
static size_t kf_key(const kf_case *c, tu_rng *r, size_t i, char *k, size_t *last_n) {
    static const char *const pre[] = { "", "k", "user-0001/", "a-longer-key-prefix-" };
    static const char *const odd[] = { "\"q", "\xc3\xa9", "\t" };
    unsigned pick = tu_below(r, 1000), mode = (unsigned)((c->seed >> 5) % 3);
    unsigned tail = mode == 1 ? tu_below(r, 31) : mode == 2 ? (unsigned)(i * 31 / c->rows) : 0;
    int width = (int)(5 + 3 * ((c->seed >> 7) % 3) + ((c->seed >> 7) % 3 == 2));
    size_t n;
    if ((int)pick < c->odd && pick % 4 == 3 && c->seed % 3 == 0) {
        if (pick % 8 == 3 && *last_n) return *last_n;  /* the last key again: k still holds it */
        n = (size_t)snprintf(k, 64, "%03u", tu_below(r, 1000));
    } else {
        n = (size_t)snprintf(k, 64, "%s%0*zu%.*s%s", pre[(c->seed >> 3) % 4], width, i, (int)tail,
                             "-tail-tail-tail-tail-tail-tail-", (int)pick < c->odd ? odd[pick % 3] : "");
    }
    *last_n = n;
    return n;
}

/* Whether p starts with a UUID's 36 characters: 8-4-4-4-12 lowercase hex digits. */
static int kf_is_uuid(const char *p, size_t n) {
    size_t i;
    if (n < 36) return 0;
    for (i = 0; i < 36; i++)
        if (i == 8 || i == 13 || i == 18 || i == 23 ? p[i] != '-' : !du_is_hex((unsigned char)p[i])) return 0;
    return 1;
}

/* A document into the log, its random ids (the job's, the task's, in the shards' names) as "<id>". */
static void kf_log_text(tu_sb *log, const char *p, size_t n) {
    size_t i;
    for (i = 0; i < n;) {
        if (kf_is_uuid(p + i, n - i)) { tu_sb_str(log, "<id>"); i += 36; }
        else tu_sb_put(log, p + i++, 1);
    }
}

/* Writes the case's rows into a fresh folder and commits the dataset; phases_only: every row through the phases. */
static void kf_write(const kf_case *c, int phases_only, kf_out *o) {
    sts_column schema[4];
    sts_write_config cfg;
    sts_task_writer *w = NULL;
    sts_error e;
    tu_rng r;
    size_t i, j, last_n = 0;
    char key[64] = "", *msg = NULL;
    size_t msg_len = 0;
    static uint8_t cell[3][4096];
    uint64_t shape[3][2];
    sts_value v[4];
    sts_dtype dt[3];
    const char *const *names = KF_NAMES[c->cols_desc];
    memset(o, 0, sizeof *o);
    tf_fast_tmpdir(o->dir, sizeof o->dir);
    memset(schema, 0, sizeof schema);
    schema[0].name = "key"; schema[0].kind = STS_VALUE_STRING; schema[0].elem = STS_DTYPE_U8;
    for (j = 0; j < (size_t)c->ncols; j++) {
        schema[1 + j].name = names[j];
        schema[1 + j].kind = STS_VALUE_TENSOR;
        dt[j] = c->mixed_dtypes ? KF_DT[j] : STS_DTYPE_F32;
    }
    memset(&cfg, 0, sizeof cfg);
    cfg.name_col = "key";
    cfg.kv_separator = ".";
    cfg.duplicates = c->last_win ? STS_DUPLICATES_LAST_WIN : STS_DUPLICATES_FAIL;
    cfg.target_shard_bytes = c->target;
    cfg.kv_layout = c->arrival ? STS_KV_ARRIVAL : STS_KV_SORTED;
    cfg.no_fsync = 1;
    cfg.no_io_thread = !c->threaded;
    cfg.generate_index = 1;
    DU_OK("prepare", sts_dataset_prepare(o->dir, &cfg, schema, 1 + (size_t)c->ncols, NULL, &e), e);
    DU_OK("open", sts_task_open(o->dir, 0, &cfg, schema, 1 + (size_t)c->ncols, NULL, &w, &e), e);
    w->phases_only = phases_only;
    r.s = c->seed;
    for (i = 0; i < sizeof cell[0]; i++) cell[0][i] = cell[1][i] = cell[2][i] = (uint8_t)(i * 131 + c->seed);
    for (i = 0; i < c->rows; i++) {
        sts_result res;
        size_t kn = kf_key(c, &r, i, key, &last_n);
        memset(v, 0, sizeof v);
        v[0].data = key;
        v[0].size = kn;
        for (j = 0; j < (size_t)c->ncols; j++) {
            unsigned odd = tu_below(&r, 1000);
            size_t esz = sts_dtype_bits(dt[j]) / 8;
            shape[j][0] = 16 + (uint64_t)(c->seed % 5) * 40;  /* the column's usual shape */
            shape[j][1] = 2;
            if ((int)odd < c->odd / 2) shape[j][0] = odd % 3 ? shape[j][0] + 1 + odd % 7 : 0;  /* another, or empty */
            v[1 + j].data = cell[j];
            v[1 + j].dtype = dt[j];
            v[1 + j].rank = 2;
            v[1 + j].shape = shape[j];
            v[1 + j].size = shape[j][0] * 2 * esz;
            cell[j][0] = (uint8_t)i;  /* each row's bytes its own */
            cell[j][1] = (uint8_t)(i >> 8);
        }
        res = sts_task_write(w, v, &e);
        tu_sb_printf(&o->log, "row %zu: %s %s\n", i, sts_result_name(res), res == STS_OK ? "" : e.message);
        if (w->failed != STS_OK) break;
    }
    if (sts_task_commit(w, &msg, &msg_len, &e) != STS_OK) {
        tu_sb_printf(&o->log, "commit: %s %s\n", sts_result_name(e.code), e.message);
        sts_task_close(w);
        return;
    }
    sts_task_close(w);
    kf_log_text(&o->log, msg, msg_len);
    if (sts_dataset_commit(o->dir, &cfg, (const char *const *)&msg, &msg_len, 1, NULL, NULL, &e) != STS_OK)
        tu_sb_printf(&o->log, "dataset commit: %s %s\n", sts_result_name(e.code), e.message);
    sts_free(NULL, msg, msg_len + 1);
    o->shards = du_list_shards(o->dir);
    {
        static const char *const docs[] = { "dataset_manifest.json", "_tensor_index.csv", "_tensor_index.json" };
        for (j = 0; j < sizeof docs / sizeof *docs; j++) {
            char path[4200];
            size_t n;
            uint8_t *text;
            tf_join(path, sizeof path, o->dir, docs[j]);
            text = tf_read_opt(path, &n);
            tu_sb_printf(&o->log, "\n%s:%s\n", docs[j], text ? "" : " none");
            if (text) kf_log_text(&o->log, (const char *)text, n);
            free(text);
        }
    }
}

static void kf_free(kf_out *o) {
    tf_rmtree(o->dir);
    tf_names_free(&o->shards);
    tu_sb_free(&o->log);
}

/* Both runs of a case must agree byte for byte; returns the number of shards. */
static size_t kf_compare(const kf_case *c) {
    kf_out a, b;
    size_t i, n = 0;
    char label[200];
    snprintf(label, sizeof label, "seed %llu (%s, %s, %s, %d cols%s%s, target %llu, %zu rows, odd %d)",
             (unsigned long long)c->seed, c->arrival ? "arrival" : "sorted", c->threaded ? "thread" : "no thread",
             c->last_win ? "lastWin" : "fail", c->ncols, c->mixed_dtypes ? ", dtypes" : "",
             c->cols_desc ? ", names descending" : "", (unsigned long long)c->target, c->rows, c->odd);
    kf_write(c, 0, &a);
    kf_write(c, 1, &b);
    if (a.log.n != b.log.n || memcmp(a.log.p, b.log.p, a.log.n) != 0) {
        size_t k = 0;
        while (k < a.log.n && k < b.log.n && a.log.p[k] == b.log.p[k]) k++;
        fail_msg("%s: the results differ at byte %zu: one pass \"%.160s\", phases \"%.160s\"", label, k,
                 a.log.p + (k > 40 ? k - 40 : 0), b.log.p + (k > 40 ? k - 40 : 0));
    }
    tu_sb_put(&a.log, "", 1);  /* NUL-terminated for strstr */
    if (!strstr(a.log.p, "\ndataset_manifest.json:\n") || !strstr(a.log.p, "\n_tensor_index.json:\n"))
        fail_msg("%s: the dataset commit left no manifest or index: %.300s", label,
                 strstr(a.log.p, "commit") ? strstr(a.log.p, "commit") : a.log.p);
    if (a.shards.n != b.shards.n) fail_msg("%s: %zu shards against %zu", label, a.shards.n, b.shards.n);
    for (i = 0; i < a.shards.n; i++) {
        char pa[4200], pb[4200];
        size_t na, nb;
        uint8_t *da, *db;
        tf_join(pa, sizeof pa, a.dir, a.shards.v[i]);
        tf_join(pb, sizeof pb, b.dir, b.shards.v[i]);
        da = tf_read(pa, &na);
        db = tf_read(pb, &nb);
        if (na != nb || memcmp(da, db, na) != 0) {
            size_t k = 0;
            while (k < na && k < nb && da[k] == db[k]) k++;
            fail_msg("%s: shard %zu (%s) differs at byte %zu (%zu and %zu bytes)", label, i, a.shards.v[i], k, na, nb);
        }
        free(da);
        free(db);
        n++;
    }
    kf_free(&a);
    kf_free(&b);
    return n;
}

static void test_kv_fast_matches_phases(void **state) {
    size_t k, cases = tu_quick() ? 150 : 1000, shards = 0;
    tu_rng r;
    (void)state;
    r.s = 0x6b7666617374ull;
    for (k = 0; k < cases; k++) {
        kf_case c;
        memset(&c, 0, sizeof c);
        c.seed = tu_next(&r);
        c.arrival = (int)(k & 1);
        c.threaded = (int)((k >> 1) & 1);
        c.last_win = tu_below(&r, 3) == 0;
        c.ncols = 1 + (int)tu_below(&r, 3);
        c.mixed_dtypes = tu_below(&r, 3) == 0;
        c.cols_desc = tu_below(&r, 4) == 0;
        c.target = (uint64_t)(1u << (11 + tu_below(&r, 9)));  /* 2 KiB .. 512 KiB */
        c.rows = 50 + tu_below(&r, 600);
        c.odd = k % 4 == 0 ? 0 : (int)tu_below(&r, 120);  /* a quarter of the cases all usual */
        shards += kf_compare(&c);
    }
    if (shards < cases) fail_msg("only %zu shards in %zu cases: the cases write too little", shards, cases);
}

/* The one pass must take the usual row: a writer of usual rows takes every row after its second
   through it (the first fixes the columns, the second counts their header bytes) but those where
   a table grows (the phases grow them), in both layouts. The one pass is called here as
   sts__kv_row calls it first, and the row goes to sts_task_write when it declines. */
static void test_kv_fast_taken(void **state) {
    kf_out o;
    sts_column schema[2] = { { "key", STS_VALUE_STRING, STS_DTYPE_U8 }, { "x", STS_VALUE_TENSOR, STS_DTYPE_F32 } };
    sts_write_config cfg;
    sts_task_writer *w = NULL;
    sts_error e;
    float x[64];
    uint64_t shape[1] = { 64 };
    sts_value v[2];
    char key[32];
    size_t i, fast = 0;
    int arrival;
    static const char *const mode_name[2] = { "sorted", "arrival" };
    (void)state;
    memset(x, 0, sizeof x);
    for (arrival = 0; arrival < 2; arrival++) {
        memset(&o, 0, sizeof o);
        tf_fast_tmpdir(o.dir, sizeof o.dir);
        memset(&cfg, 0, sizeof cfg);
        cfg.name_col = "key";
        cfg.no_fsync = 1;
        cfg.kv_layout = arrival ? STS_KV_ARRIVAL : STS_KV_SORTED;
        DU_OK("prepare", sts_dataset_prepare(o.dir, &cfg, schema, 2, NULL, &e), e);
        DU_OK("open", sts_task_open(o.dir, 0, &cfg, schema, 2, NULL, &w, &e), e);
        for (i = 0, fast = 0; i < 1000; i++) {
            size_t before = w->nents;
            const char *mode = mode_name[arrival];
            memset(v, 0, sizeof v);
            v[0].data = key;
            v[0].size = (uint64_t)snprintf(key, sizeof key, "key-%06zu", i);
            v[1].data = x; v[1].size = sizeof x; v[1].dtype = STS_DTYPE_F32; v[1].rank = 1; v[1].shape = shape;
            if (i >= 2) {  /* the one pass alone */
                int taken = sts__kv_row_fast(w, v, &e);
                if (taken < 0) fail_msg("%s, row %zu: the one pass failed: %s", mode, i, e.message);
                if (!taken) {
                    if (w->nents != before) fail_msg("%s, row %zu: declined, with an entry added", mode, i);
                    DU_OK("a declined row", sts_task_write(w, v, &e), e);
                    continue;
                }
                if (w->nents != before + 1) fail_msg("%s, row %zu: %zu entries after the one pass, not %zu", mode, i,
                                                     w->nents, before + 1);
                w->calls++;
                fast++;
            } else DU_OK("rows 0 and 1", sts_task_write(w, v, &e), e);
        }
        sts_task_close(w);
        tf_rmtree(o.dir);
        if (fast < 980) fail_msg("%s: %zu of 998 usual rows through the one pass", mode_name[arrival], fast);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kv_fast_matches_phases),
        cmocka_unit_test(test_kv_fast_taken),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
