/* test_dataset_write_limits.c - layer 8 against layers 8 (commit) and 9 (read): what a task writer
   accepts, its own dataset commit and the reader take too (issue 10, bug 2). Each case runs one job
   through every stage, prepare -> task_open -> task_write -> task_commit -> dataset_commit ->
   sts_dataset_open -> sts_dataset_get (every tensor, with data) -> long and wide scans, and either
   succeeds end to end with the bytes it wrote, or fails at the earliest stage that can know, with a
   message that names the column or option and the limit. Never first at commit.
   - ranks: tensor columns of rank 32, 33 and 64 (batch mode adds the batch dimension), KV and batch;
   - column names of 255, 256, 300 and 5000 bytes, and ones whose JSON form is longer than their
     bytes (escapes);
   - kv_separator of 63, 64 and 200 bytes, and one of control characters (escaped 6x in JSON);
   - the limits that remain (found by reading what commit and reader need):
       * a file header holds at most 100,000,000 bytes: one long KV key at the limit and one byte
         past it (refused at task_write); a column name or kv_separator so long that no file can
         hold its tensor names (refused at prepare); batch mode the same with a long column name
         (skipped under STS_TEST_LEVEL=quick: 100 MB names);
       * a dataset schema dim is a signed 64-bit integer (dataset_manifest.schema.json, -1 meaning
         "varies"): batch_size, shapes option dims and tensor dims at 2^63 - 1 and at 2^63;
       * a KV task writer holds fewer than 2^32 - 1 tensor names (its key index is 32-bit): one
         past the limit, white box. */
#define _POSIX_C_SOURCE 200809L
#define STS_IMPLEMENTATION
#include "../safetensors_spark.h"
#include "dataset_write_util.h"

#define HDR_LIMIT ((uint64_t)STS_MAX_HEADER_SIZE)
#define I64_MAX_TEXT "9223372036854775807"

/* ---- one job, stage by stage ---- */
enum { ST_PREPARE, ST_OPEN, ST_WRITE, ST_TASK_COMMIT, ST_COMMIT, ST_DS_OPEN, ST_GET, ST_SCAN, ST_DONE };
static const char *const STAGE[] = { "sts_dataset_prepare", "sts_task_open", "sts_task_write", "sts_task_commit",
                                     "sts_dataset_commit", "sts_dataset_open", "sts_dataset_get", "a scan", "the end" };

typedef struct lcase {
    const char *label;
    int kv;
    const char *col;            /* the tensor column's name (U8 cells) */
    const char *sep;            /* KV: kv_separator, NULL = "__" */
    uint32_t rank;              /* its rank: every dim 1, unless dims is given */
    const uint64_t *dims;       /* its shape in every row (rank entries), or NULL */
    uint64_t batch_size;        /* batch mode: 0 = 2 */
    const char *key;            /* KV: the keys are key + the row number ("" + n when NULL); with
                                   one row, key itself */
    size_t a_count;             /* elements of the F32 array column "a" per row */
    const char *shapes;         /* the shapes option (for "a"); "a" exists when a_count or shapes is set */
    int nrows;                  /* 0 = 3 */
    int fail_at;                /* ST_DONE: succeeds end to end; else the stage that refuses */
    sts_result code;
    sts_rule rule;
    const char *must1, *must2;  /* in the refusal's message */
    uint64_t header;            /* when set: the first shard's header length N, checked after the commit */
} lcase;

typedef struct lrow {           /* a written tensor, for the read stages */
    char *name;                 /* KV: key + sep + column; batch: the column */
    size_t name_len;
    uint32_t rank;
    uint64_t *shape;
    uint64_t nbytes;
    uint8_t first;              /* its first byte (every byte of a tensor cell is the same) */
} lrow;

static char *cat3(const char *a, size_t al, const char *b, size_t bl, const char *c, size_t cl, size_t *n) {
    char *p = (char *)malloc(al + bl + cl + 1);
    assert_non_null(p);
    memcpy(p, a, al); memcpy(p + al, b, bl); memcpy(p + al + bl, c, cl);
    p[al + bl + cl] = 0;
    *n = al + bl + cl;
    return p;
}
/* Notes the outcome of one stage; returns 1 to go on to the next one. */
static int stage_done(tu_sb *notes, const lcase *k, int stage, sts_result r, const sts_error *e, int *ok) {
    char label[200];
    snprintf(label, sizeof label, "%s: %s", k->label, STAGE[stage]);
    if (r == STS_OK) {
        if (stage == k->fail_at) { tu_sb_printf(notes, "\n  %s: accepted, but must refuse (%s)", label, sts_rule_id(k->rule)); *ok = 0; return 0; }
        return 1;
    }
    if (stage != k->fail_at) {
        if (k->fail_at < stage) tu_sb_printf(notes, "\n  %s: refused here (%s), but %s must have refused it already", label, e->message, STAGE[k->fail_at]);
        else tu_sb_printf(notes, "\n  %s: refused: %s", label, e->message);
        *ok = 0;
        return 0;
    }
    *ok = tu_err_note(notes, label, r, e, k->code, k->rule, k->must1, k->must2, (const char *)NULL);
    return 0;
}
/* Runs case k in a fresh folder under root; 1 when it behaved as described, else notes why. */
static int run_case(tu_sb *notes, const char *root, int idx, const lcase *k) {
    char dir[256], label[200];
    const char *col = k->col ? k->col : "t";
    const char *sep = k->sep ? k->sep : "__";
    sts_column schema[3];
    size_t ncols = 0, i, nt = 0, colen = strlen(col), seplen = strlen(sep);
    uint64_t batch = k->batch_size ? k->batch_size : 2, numel = 1, *dims;
    int nrows = k->nrows ? k->nrows : 3, ok = 1, r_i;
    sts_write_config c;
    sts_task_writer *w = NULL;
    sts_dataset *ds = NULL;
    sts_error e;
    sts_result r;
    char *msg = NULL;
    size_t msg_len = 0;
    lrow *rows;
    uint32_t d;
    snprintf(dir, sizeof dir, "%s/case%03d", root, idx);
    if (k->kv) { schema[ncols].name = "id"; schema[ncols].kind = STS_VALUE_STRING; schema[ncols].elem = STS_DTYPE_U8; ncols++; }
    schema[ncols].name = col; schema[ncols].kind = STS_VALUE_TENSOR; schema[ncols].elem = STS_DTYPE_U8; ncols++;
    if (k->a_count || k->shapes) { schema[ncols].name = "a"; schema[ncols].kind = STS_VALUE_ARRAY; schema[ncols].elem = STS_DTYPE_F32; ncols++; }
    memset(&c, 0, sizeof c);
    if (k->kv) { c.name_col = "id"; c.kv_separator = k->sep; }
    else c.batch_size = batch;
    c.has_dtype = 1;
    c.dtype = STS_DTYPE_F32;
    c.shapes = k->shapes;
    c.generate_index = 1;
    c.no_fsync = 1;
    dims = (uint64_t *)calloc(k->rank ? k->rank : 1, sizeof *dims);
    rows = (lrow *)calloc((size_t)nrows * 2, sizeof *rows);
    assert_true(dims && rows);
    for (d = 0; d < k->rank; d++) { dims[d] = k->dims ? k->dims[d] : 1; numel *= dims[d]; }

    r = sts_dataset_prepare(dir, &c, schema, ncols, NULL, &e);
    if (!stage_done(notes, k, ST_PREPARE, r, &e, &ok)) {
        if (k->fail_at == ST_PREPARE && ok) {  /* a task writer refuses it the same way */
            char other[256];
            snprintf(other, sizeof other, "%s/case%03d-open", root, idx);
            assert_int_equal(mkdir(other, 0777), 0);
            r = sts_task_open(other, 0, &c, schema, ncols, NULL, &w, &e);
            snprintf(label, sizeof label, "%s: %s", k->label, STAGE[ST_OPEN]);
            if (!tu_err_note(notes, label, r, &e, k->code, k->rule, k->must1, k->must2, (const char *)NULL)) ok = 0;
            if (r == STS_OK) sts_task_close(w);
            w = NULL;
        }
        goto out;
    }
    r = sts_task_open(dir, 0, &c, schema, ncols, NULL, &w, &e);
    if (!stage_done(notes, k, ST_OPEN, r, &e, &ok)) { w = NULL; goto out; }
    for (r_i = 0; r_i < nrows; r_i++) {
        sts_value v[3];
        uint8_t *cell = (uint8_t *)malloc(numel ? (size_t)numel : 1);
        float *a = (float *)malloc((k->a_count ? k->a_count : 1) * sizeof *a);
        char num[24], *key = NULL;
        size_t keylen = 0, at = 0;
        assert_true(cell && a);
        memset(cell, 0x40 + r_i, numel ? (size_t)numel : 1);
        for (i = 0; i < k->a_count; i++) a[i] = (float)r_i + 0.5f * (float)i;
        memset(v, 0, sizeof v);
        if (k->kv) {
            const char *kp = k->key ? k->key : "";
            snprintf(num, sizeof num, "%d", r_i);
            key = cat3(kp, strlen(kp), nrows == 1 && k->key ? "" : num, nrows == 1 && k->key ? 0 : strlen(num), "", 0, &keylen);
            v[at].data = key; v[at].size = keylen; at++;
        }
        v[at].data = cell; v[at].size = numel; v[at].dtype = STS_DTYPE_U8; v[at].rank = k->rank; v[at].shape = dims; at++;
        if (k->a_count || k->shapes) { v[at].data = a; v[at].size = k->a_count; at++; }
        r = sts_task_write(w, v, &e);
        if (r == STS_OK) {  /* what the read stages must find */
            lrow *x = &rows[nt++];
            if (k->kv) x->name = cat3(key, keylen, sep, seplen, col, colen, &x->name_len);
            else x->name = cat3(col, colen, "", 0, "", 0, &x->name_len);
            x->rank = k->rank;
            x->shape = (uint64_t *)malloc((k->rank ? k->rank : 1) * sizeof *x->shape);
            assert_non_null(x->shape);
            if (k->rank) memcpy(x->shape, dims, k->rank * sizeof *dims);
            x->nbytes = numel;
            x->first = (uint8_t)(0x40 + r_i);
        }
        free(cell);
        free(a);
        free(key);
        if (!stage_done(notes, k, ST_WRITE, r, &e, &ok)) goto out;
    }
    r = sts_task_commit(w, &msg, &msg_len, &e);
    if (!stage_done(notes, k, ST_TASK_COMMIT, r, &e, &ok)) goto out;
    sts_task_close(w);
    w = NULL;
    {
        const char *m = msg;
        sts_dataset_summary sum;
        r = sts_dataset_commit(dir, &c, &m, &msg_len, 1, NULL, &sum, &e);
        if (!stage_done(notes, k, ST_COMMIT, r, &e, &ok)) goto out;
    }
    if (k->header) {  /* the shard is as large as the case says */
        tf_names parts = du_list_shards(dir);
        char p[512];
        sts_file *f = NULL;
        sts_options o;
        memset(&o, 0, sizeof o);
        o.header_only = 1;
        if (parts.n) tf_join(p, sizeof p, dir, parts.v[0]);
        if (!parts.n || sts_open(p, &o, &f, &e) != STS_OK || sts_header_size(f) != k->header) {
            tu_sb_printf(notes, "\n  %s: the first shard's header is not %llu bytes long", k->label, (unsigned long long)k->header);
            ok = 0;
        }
        sts_close(f);
        tf_names_free(&parts);
        if (!ok) goto out;
    }
    {
        sts_read_config rc;
        memset(&rc, 0, sizeof rc);
        rc.infer_schema = 1;
        r = sts_dataset_open(dir, &rc, NULL, &ds, &e);
        if (!stage_done(notes, k, ST_DS_OPEN, r, &e, &ok)) { ds = NULL; goto out; }
    }
    {   /* every tensor by key, with its data; batch mode: "shard/column" keys, a file per batch */
        sts_dataset_info info = sts_dataset_describe(ds);
        size_t f, want_files = k->kv ? 1 : (size_t)((nt + batch - 1) / batch);
        snprintf(label, sizeof label, "%s: %s", k->label, STAGE[ST_GET]);
        if (!info.has_manifest || !info.has_index || info.files != want_files || info.kv != k->kv) {
            tu_sb_printf(notes, "\n  %s: the dataset has %zu files (manifest %d, index %d, kv %d), expected %zu", label, info.files,
                         info.has_manifest, info.has_index, info.kv, want_files);
            ok = 0;
            goto out;
        }
        for (i = 0; i < nt; i++) {
            const lrow *x = &rows[i];
            sts_view v;
            char *key;
            size_t keylen;
            uint32_t rank = k->kv ? x->rank : x->rank + 1, q;
            const uint64_t *shape;
            f = k->kv ? 0 : i / (size_t)batch;
            if (k->kv) key = cat3(x->name, x->name_len, "", 0, "", 0, &keylen);
            else key = cat3(sts_dataset_file(ds, f), strlen(sts_dataset_file(ds, f)), "/", 1, x->name, x->name_len, &keylen);
            r = sts_dataset_get(ds, key, keylen, 1, &v, &e);
            free(key);
            if (!stage_done(notes, k, ST_GET, r, &e, &ok)) goto out;
            shape = k->kv ? v.shape : v.shape + 1;
            if (v.rank != rank || v.dtype != STS_DTYPE_U8 || v.file != f ||
                (!k->kv && v.shape[0] != ((f + 1) * batch <= nt ? batch : nt - f * batch)) ||
                v.nbytes != (k->kv ? x->nbytes : x->nbytes * v.shape[0])) {
                tu_sb_printf(notes, "\n  %s: tensor %zu read back as rank %u, dtype %s, %llu bytes in file %zu", label, i, v.rank,
                             sts_dtype_name(v.dtype), (unsigned long long)v.nbytes, v.file);
                ok = 0;
                goto out;
            }
            for (q = 0; q < x->rank; q++)
                if (shape[q] != x->shape[q]) { tu_sb_printf(notes, "\n  %s: tensor %zu: dim %u is %llu, written %llu", label, i, q, (unsigned long long)shape[q], (unsigned long long)x->shape[q]); ok = 0; goto out; }
            if (x->nbytes && ((const uint8_t *)v.data)[(k->kv ? 0 : (i % batch) * x->nbytes)] != x->first) {
                tu_sb_printf(notes, "\n  %s: tensor %zu: its data differs from what was written", label, i);
                ok = 0;
                goto out;
            }
        }
    }
    {   /* a long scan sees every tensor once (the "a" column's too), a wide one a row per file */
        sts_scan_spec sp;
        sts_scan *s = NULL;
        const sts_view *cells = NULL;
        size_t ncells, seen = 0, found = 0, rows_seen = 0, files, per;
        int pass;
        for (pass = 0; pass < 2; pass++) {
            memset(&sp, 0, sizeof sp);
            sp.long_form = pass == 0;
            sp.with_data = 1;
            r = sts_scan_open(ds, &sp, &s, &e);
            if (!stage_done(notes, k, ST_SCAN, r, &e, &ok)) goto out;
            for (;;) {
                r = sts_scan_next(s, &cells, &ncells, &e);
                if (r != STS_OK || !cells) break;
                if (pass == 1) { rows_seen++; continue; }
                seen++;
                for (i = 0; i < nt; i++)
                    if (cells[0].key_len == rows[i].name_len && memcmp(cells[0].key, rows[i].name, rows[i].name_len) == 0) { found++; break; }
            }
            sts_scan_close(s);
            if (!stage_done(notes, k, ST_SCAN, r, &e, &ok)) goto out;
        }
        snprintf(label, sizeof label, "%s: %s", k->label, STAGE[ST_SCAN]);
        files = sts_dataset_describe(ds).files;
        per = k->kv ? nt : files;  /* tensors of the column: one a row (KV), one a file (batch) */
        if (seen != per * (k->a_count || k->shapes ? 2 : 1) || found != per || rows_seen != files) {
            tu_sb_printf(notes, "\n  %s: the long scan saw %zu tensors (%zu of the column), the wide one %zu rows; written %zu rows", label, seen, found, rows_seen, nt);
            ok = 0;
        }
    }
    if (ok && k->fail_at != ST_DONE) { tu_sb_printf(notes, "\n  %s: went through, but %s must refuse it", k->label, STAGE[k->fail_at]); ok = 0; }
out:
    if (w) sts_task_close(w);
    sts_dataset_close(ds);
    if (msg) sts_free(NULL, msg, msg_len + 1);
    for (i = 0; i < nt; i++) { free(rows[i].name); free(rows[i].shape); }
    free(rows);
    free(dims);
    return ok;
}
/* Runs every case; what went wrong is in *notes (the caller frees its buffers, then reports). */
static void run_cases(tu_sb *notes, const lcase *cases, size_t n) {
    char root[64];
    size_t i;
    tf_tmpdir(root, sizeof root);
    for (i = 0; i < n; i++) run_case(notes, root, (int)i, &cases[i]);
    tf_rmtree(root);
}
static char *repeat(const char *unit, size_t n) {  /* n bytes of unit, repeated (whole characters) */
    size_t ul = strlen(unit), i;
    char *p = (char *)malloc(n + 1);
    assert_non_null(p);
    for (i = 0; i < n; i++) p[i] = unit[i % ul];
    p[n] = 0;
    return p;
}

/* ================================================================================================
   ranks 32, 33 and 64, in both modes (batch mode writes rank + 1: the batch dimension first) */
static void test_ranks(void **state) {
    lcase cases[8];
    static const uint32_t ranks[4] = { 1, 32, 33, 64 };
    size_t i;
    (void)state;
    memset(cases, 0, sizeof cases);
    for (i = 0; i < 8; i++) {
        static char labels[8][48];
        lcase *k = &cases[i];
        k->kv = (int)(i & 1);
        k->rank = ranks[i / 2];
        k->a_count = 2;
        k->fail_at = ST_DONE;
        snprintf(labels[i], sizeof labels[i], "%s, a rank-%u tensor column", k->kv ? "KV" : "batch", k->rank);
        k->label = labels[i];
    }
    {
        tu_sb notes = { 0, 0, 0 };
        run_cases(&notes, cases, 8);
        tu_notes_done(&notes, "ranks");
    }
}

/* ================================================================================================
   column names of 255, 256, 300 and 5000 bytes, plain and escaped, in both modes, as the tensor
   column and in the shapes option */
static void test_column_names(void **state) {
    static const size_t lens[4] = { 255, 256, 300, 5000 };
    lcase cases[20];
    char *names[7];
    size_t i, n = 0;
    (void)state;
    memset(cases, 0, sizeof cases);
    for (i = 0; i < 4; i++) names[i] = repeat("n", lens[i]);
    names[4] = repeat("\x01", 255);          /* 255 bytes, 1530 in JSON */
    names[5] = repeat("q\"\\", 255);         /* 255 bytes, 425 in JSON */
    names[6] = repeat("\xc3\xa9", 300);      /* 150 two-byte characters */
    for (i = 0; i < 7; i++) {
        int kv;
        for (kv = 0; kv < 2; kv++) {
            static char labels[14][96];
            lcase *k = &cases[n];
            k->kv = kv;
            k->col = names[i];
            k->rank = 2;
            k->a_count = 3;
            k->fail_at = ST_DONE;
            snprintf(labels[n], sizeof labels[n], "%s, a column name of %zu bytes (%s)", kv ? "KV" : "batch", strlen(names[i]),
                     i < 4 ? "plain" : i == 4 ? "control characters" : i == 5 ? "quotes and backslashes" : "UTF-8");
            k->label = labels[n];
            n++;
        }
    }
    /* the long name on the array column, given a shape through the shapes option */
    for (i = 0; i < 2; i++) {
        lcase *k = &cases[n++];
        k->label = i ? "KV, the shapes option beside a 5000-byte tensor column" : "batch, the shapes option beside a 5000-byte tensor column";
        k->kv = (int)i;
        k->col = names[3];
        k->rank = 1;
        k->a_count = 3;
        k->shapes = "{\"a\": [3]}";
        k->fail_at = ST_DONE;
    }
    {
        tu_sb notes = { 0, 0, 0 };
        run_cases(&notes, cases, n);
        for (i = 0; i < 7; i++) free(names[i]);
        tu_notes_done(&notes, "column names");
    }
}

/* ================================================================================================
   kv_separator of 63, 64 and 200 bytes, and one of control characters */
static void test_separators(void **state) {
    static const size_t lens[3] = { 63, 64, 200 };
    lcase cases[5];
    char *seps[5];
    size_t i;
    (void)state;
    memset(cases, 0, sizeof cases);
    for (i = 0; i < 3; i++) seps[i] = repeat("-", lens[i]);
    seps[3] = repeat("\x02", 30);     /* 30 bytes, 180 in JSON */
    seps[4] = repeat("\xe2\x80\x94", 63);  /* 21 em dashes */
    for (i = 0; i < 5; i++) {
        static char labels[5][96];
        lcase *k = &cases[i];
        k->kv = 1;
        k->sep = seps[i];
        k->rank = 1;
        k->a_count = 2;
        k->fail_at = ST_DONE;
        snprintf(labels[i], sizeof labels[i], "kv_separator of %zu bytes (%s)", strlen(seps[i]), i < 3 ? "plain" : i == 3 ? "control characters" : "UTF-8");
        k->label = labels[i];
    }
    {
        tu_sb notes = { 0, 0, 0 };
        run_cases(&notes, cases, 5);
        for (i = 0; i < 5; i++) free(seps[i]);
        tu_notes_done(&notes, "separators");
    }
}

/* ================================================================================================
   a dataset schema's dims are signed 64-bit (dataset_manifest.schema.json: -1 says "varies"):
   batch_size, the shapes option's dims and tensor dims at 2^63 - 1 go through, at 2^63 they are
   refused by prepare (options) or by the row (tensors) */
static void test_schema_dims(void **state) {
    static const uint64_t at_limit[2] = { 0, (uint64_t)INT64_MAX }, past[2] = { 0, (uint64_t)INT64_MAX + 1 };
    lcase cases[10];
    size_t n = 0;
    int kv;
    (void)state;
    memset(cases, 0, sizeof cases);
    for (kv = 0; kv < 2; kv++) {
        lcase *k = &cases[n++];
        k->label = kv ? "KV, a tensor dim of 2^63 - 1 (an empty tensor)" : "batch, a tensor dim of 2^63 - 1 (an empty tensor)";
        k->kv = kv; k->rank = 2; k->dims = at_limit; k->fail_at = ST_DONE;
        k = &cases[n++];
        k->label = kv ? "KV, a tensor dim of 2^63" : "batch, a tensor dim of 2^63";
        k->kv = kv; k->rank = 2; k->dims = past; k->fail_at = ST_WRITE;
        k->code = STS_ERR_SCHEMA; k->rule = STS_RULE_ROW_SHAPE; k->must1 = "\"t\""; k->must2 = I64_MAX_TEXT;
        k = &cases[n++];  /* "a" of shape [0, 2^63 - 1] holds no elements */
        k->label = kv ? "KV, a shapes option dim of 2^63 - 1" : "batch, a shapes option dim of 2^63 - 1";
        k->kv = kv; k->rank = 1; k->shapes = "{\"a\": [0, 9223372036854775807]}"; k->fail_at = ST_DONE;
        k = &cases[n++];
        k->label = kv ? "KV, a shapes option dim of 2^63" : "batch, a shapes option dim of 2^63";
        k->kv = kv; k->rank = 1; k->shapes = "{\"a\": [0, 9223372036854775808]}"; k->fail_at = ST_PREPARE;
        k->code = STS_ERR_OPTION; k->rule = STS_RULE_OPTION; k->must1 = "\"a\""; k->must2 = I64_MAX_TEXT;
    }
    cases[n].label = "batch, batch_size 2^63 - 1 (empty rows, one tail file)";
    cases[n].batch_size = (uint64_t)INT64_MAX; cases[n].rank = 1; cases[n].dims = at_limit; cases[n].nrows = 2; cases[n].fail_at = ST_DONE;
    n++;
    cases[n].label = "batch, batch_size 2^63";
    cases[n].batch_size = (uint64_t)INT64_MAX + 1; cases[n].rank = 1; cases[n].fail_at = ST_PREPARE;
    cases[n].code = STS_ERR_OPTION; cases[n].rule = STS_RULE_OPTION; cases[n].must1 = "batch_size"; cases[n].must2 = I64_MAX_TEXT;
    n++;
    {
        tu_sb notes = { 0, 0, 0 };
        run_cases(&notes, cases, n);
        tu_notes_done(&notes, "schema dims");
    }
}

/* ================================================================================================
   the header cap, 100,000,000 bytes: a file whose header holds one long name, at the cap and one
   byte past it. The writer knows the exact header of a row's tensors at task_write (KV: a long
   key; batch: a long column name, shaped by the first row), and a lower bound at prepare (the
   column names and kv_separator alone): names that no file can hold are refused there. */
/* The JSON length of a header holding one U8 tensor of this shape and 1 byte, named by
   `name_len` ASCII bytes: the reference layout's N is this rounded up to 8 (found with
   sts_write_size on short names, then extended by one byte a byte). */
static uint64_t json_len(size_t name_len, uint32_t rank, const uint64_t *shape) {
    char name[64];
    uint8_t byte = 0;
    size_t l, base = 0;
    uint64_t n_prev = 0;
    memset(name, 'x', sizeof name);
    for (l = 16; l < 40; l++) {
        sts_tensor_spec sp;
        uint64_t hs = 0, fs = 0;
        sts_error e;
        memset(&sp, 0, sizeof sp);
        sp.name = name; sp.name_len = l; sp.dtype = STS_DTYPE_U8; sp.rank = rank; sp.shape = shape; sp.data = &byte; sp.data_size = 1;
        DU_OK("sts_write_size", sts_write_size(&sp, 1, NULL, 0, NULL, &hs, &fs, &e), e);
        if (l > 16 && hs > n_prev) { base = (size_t)(n_prev - (l - 1)); break; }  /* the JSON of l - 1 bytes filled N exactly */
        n_prev = hs;
    }
    assert_true(base > 0);
    return base + name_len;
}
static void test_header_cap(void **state) {
    static const uint64_t one[2] = { 1, 1 };
    lcase cases[8];
    char *key_at, *key_past, *col_at, *col_past, *col_prepare, *sep_huge, *col_huge;
    size_t n = 0, lk, lb;
    (void)state;
    if (tu_quick()) { skip(); return; }
    /* KV: name = key + "__" + "t"; batch (batch_size 1): name = the column, shape [1, 1] */
    lk = (size_t)(HDR_LIMIT - json_len(0, 1, one)) - 3;
    lb = (size_t)(HDR_LIMIT - json_len(0, 2, one));
    key_at = repeat("k", lk);
    key_past = repeat("k", lk + 1);
    col_at = repeat("c", lb);
    col_past = repeat("c", lb + 1);
    col_prepare = repeat("c", lb + 3);  /* even [batch_size] alone (no sample dims) passes the cap */
    sep_huge = repeat("-", (size_t)HDR_LIMIT);
    col_huge = repeat("c", (size_t)HDR_LIMIT);
    memset(cases, 0, sizeof cases);
    cases[n].label = "KV, a key that fills the header to the cap"; cases[n].kv = 1; cases[n].key = key_at; cases[n].nrows = 1;
    cases[n].rank = 1; cases[n].fail_at = ST_DONE; cases[n].header = HDR_LIMIT; n++;
    cases[n].label = "KV, a key one byte longer"; cases[n].kv = 1; cases[n].key = key_past; cases[n].nrows = 1; cases[n].rank = 1;
    cases[n].fail_at = ST_WRITE; cases[n].code = STS_ERR_SCHEMA; cases[n].rule = STS_RULE_ROW_VALUE; cases[n].must1 = "100000000"; cases[n].must2 = "\"t\""; n++;
    cases[n].label = "KV, a kv_separator no header can hold"; cases[n].kv = 1; cases[n].sep = sep_huge; cases[n].rank = 1;
    cases[n].fail_at = ST_PREPARE; cases[n].code = STS_ERR_OPTION; cases[n].rule = STS_RULE_OPTION; cases[n].must1 = "kv_separator"; cases[n].must2 = "100000000"; n++;
    cases[n].label = "KV, a column name no header can hold"; cases[n].kv = 1; cases[n].col = col_huge; cases[n].rank = 1;
    cases[n].fail_at = ST_PREPARE; cases[n].code = STS_ERR_OPTION; cases[n].rule = STS_RULE_OPTION; cases[n].must1 = "\"ccccccccc"; cases[n].must2 = "100000000"; n++;
    cases[n].label = "batch, a column name that fills the header to the cap"; cases[n].col = col_at; cases[n].batch_size = 1; cases[n].nrows = 1;
    cases[n].rank = 1; cases[n].fail_at = ST_DONE; cases[n].header = HDR_LIMIT; n++;
    cases[n].label = "batch, a column name one byte longer"; cases[n].col = col_past; cases[n].batch_size = 1; cases[n].nrows = 1; cases[n].rank = 1;
    cases[n].fail_at = ST_WRITE; cases[n].code = STS_ERR_SCHEMA; cases[n].rule = STS_RULE_ROW_VALUE; cases[n].must1 = "100000000"; cases[n].must2 = "\"ccccccccc"; n++;
    cases[n].label = "batch, a column name too long for any first row"; cases[n].col = col_prepare; cases[n].batch_size = 1; cases[n].rank = 1;
    cases[n].fail_at = ST_PREPARE; cases[n].code = STS_ERR_OPTION; cases[n].rule = STS_RULE_OPTION; cases[n].must1 = "\"ccccccccc"; cases[n].must2 = "100000000"; n++;
    {
        tu_sb notes = { 0, 0, 0 };
        run_cases(&notes, cases, n);
        free(key_at); free(key_past); free(col_at); free(col_past); free(col_prepare); free(sep_huge); free(col_huge);
        tu_notes_done(&notes, "header cap");
    }
}

/* ================================================================================================
   batch mode lays a whole file out at a batch's first row: a file past 2^63 - 1 bytes (what a
   file offset holds) is refused there, naming the column, and a refused first row fixes nothing
   (the next row, of another shape, starts the columns afresh) */
static void test_batch_file_size(void **state) {
    static const uint64_t one[1] = { 1 }, eight[1] = { 8 }, none[1] = { 0 };
    static const char *const names[8] = { "t0", "t1", "t2", "t3", "t4", "t5", "t6", "t7" };
    sts_column schema[8];
    char root[64], dir[128];
    sts_write_config c;
    sts_task_writer *w;
    sts_error e;
    sts_value v[8];
    uint8_t bytes[8] = { 0 };
    char *msg;
    size_t len, i;
    int k;
    (void)state;
    for (i = 0; i < 8; i++) { schema[i].name = names[i]; schema[i].kind = STS_VALUE_TENSOR; schema[i].elem = STS_DTYPE_U8; }
    tf_tmpdir(root, sizeof root);
    for (k = 0; k < 2; k++) {
        memset(&c, 0, sizeof c);
        c.batch_size = k == 0 ? (uint64_t)1 << 60 : (uint64_t)1 << 62;
        c.no_fsync = 1;
        snprintf(dir, sizeof dir, "%s/d%d", root, k);
        DU_OK("prepare", sts_dataset_prepare(dir, &c, schema, 8, NULL, &e), e);
        DU_OK("open", sts_task_open(dir, 0, &c, schema, 8, NULL, &w, &e), e);
        memset(v, 0, sizeof v);
        for (i = 0; i < 8; i++) {
            v[i].data = bytes; v[i].dtype = STS_DTYPE_U8; v[i].rank = 1;
            v[i].size = k == 0 ? 1 : 8; v[i].shape = k == 0 ? one : eight;
        }
        if (k == 0)  /* 8 columns of 2^60 one-byte rows: 2^63 bytes of data */
            tu_err_check("a batch file over 2^63 - 1 bytes", sts_task_write(w, v, &e), &e, STS_ERR_VALIDATION_OVERFLOW, STS_RULE_WRITE_TOTAL,
                         "\"t", I64_MAX_TEXT, (const char *)NULL);
        else  /* 2^62 rows of 8 bytes: 2^65, past 64 bits */
            tu_err_check("a batch of 2^65 bytes", sts_task_write(w, v, &e), &e, STS_ERR_VALIDATION_OVERFLOW, STS_RULE_WRITE_TOTAL, "\"t0\"", (const char *)NULL);
        for (i = 0; i < 8; i++) { v[i].size = 0; v[i].shape = none; }  /* [0]: nothing was fixed by the refused row */
        DU_OK("an empty row after the refused one", sts_task_write(w, v, &e), e);
        DU_OK("commit", sts_task_commit(w, &msg, &len, &e), e);
        sts_task_close(w);
        DU_OK("dataset commit", sts_dataset_commit(dir, &c, (const char *const *)&msg, &len, 1, NULL, NULL, &e), e);
        sts_free(NULL, msg, len + 1);
    }
    tf_rmtree(root);
}

/* ================================================================================================
   a KV task writer's key index holds 32-bit entry numbers: at most 2^32 - 1 tensor names a task.
   One past the limit, white box (the count is set, no memory is spent): the row is refused with
   a message naming the limit, and nothing changes */
static void test_task_key_count(void **state) {
    static const sts_column schema[2] = { { "id", STS_VALUE_STRING, STS_DTYPE_U8 }, { "t", STS_VALUE_TENSOR, STS_DTYPE_U8 } };
    static const uint64_t shape[1] = { 1 };
    char root[64];
    sts_write_config c;
    sts_task_writer *w;
    sts_error e;
    sts_value v[2];
    uint8_t byte = 7;
    size_t keys;
    (void)state;
    tf_tmpdir(root, sizeof root);
    memset(&c, 0, sizeof c);
    c.name_col = "id";
    c.no_fsync = 1;
    DU_OK("open", sts_task_open(root, 0, &c, schema, 2, NULL, &w, &e), e);
    memset(v, 0, sizeof v);
    v[0].data = "a"; v[0].size = 1;
    v[1].data = &byte; v[1].size = 1; v[1].dtype = STS_DTYPE_U8; v[1].rank = 1; v[1].shape = shape;
    DU_OK("first row", sts_task_write(w, v, &e), e);
    keys = w->nkeys;
    w->nkeys = (size_t)0xffffffffu;  /* white box: the index is full */
    v[0].data = "b";
    tu_err_check("one name past 2^32 - 1", sts_task_write(w, v, &e), &e, STS_ERR_SCHEMA, STS_RULE_ROW_VALUE, "4294967295", (const char *)NULL);
    w->nkeys = keys;
    DU_OK("the next row", sts_task_write(w, v, &e), e);
    sts_task_close(w);
    tf_rmtree(root);
}

/* White box: the KV shard header's offsets past every power of ten up to 20 digits, as the header
   renderer adds each data size to the running offset in decimal (sts__kv_dec_add: one word for
   sizes of up to eight digits, digit by digit beyond), against snprintf. */
static void test_offset_digits(void **state) {
    static const uint64_t sizes[] = { 1, 7, 9, 10, 99, 1024, 4096, 99999999, 100000000, 123456789012ull,
                                      9999999999999999999ull };
    tu_rng rng = { 99 };
    size_t si, k;
    (void)state;
    for (si = 0; si < sizeof sizes / sizeof *sizes; si++) {
        uint64_t size = sizes[si];
        for (k = 0; k < 400; k++) {
            uint8_t run[48], sd[48], tmp[24];
            char want[32], got[32];
            uint64_t from, yd;
            size_t rl, sl;
            int p = (int)(k % 20);
            uint64_t ten = 1;
            while (p--) ten *= 10;
            /* just below a power of ten (carries through every digit), or anywhere */
            from = k < 200 ? ten - 1 - tu_below(&rng, 3) * (k % 3) : tu_next(&rng) >> (k % 64);
            if (from > UINT64_MAX - size) from = UINT64_MAX - size;
            memset(run, '0', sizeof run);
            memset(sd, '0', sizeof sd);
            rl = (size_t)(sts__u64_put(tmp, from) - tmp);
            memcpy(run + 24 - rl, tmp, rl);
            sl = (size_t)(sts__u64_put(tmp, size) - tmp);
            memcpy(sd + 24 - sl, tmp, sl);
            yd = sts__kv_be64(sd + 16) - 0x3030303030303030ull;
            rl = sts__kv_dec_add(run, rl, sd, sl, yd);
            snprintf(want, sizeof want, "%llu", (unsigned long long)(from + size));
            memcpy(got, run + 24 - rl, rl);
            got[rl] = 0;
            if (strcmp(want, got) != 0) fail_msg("%llu + %llu: %s, not %s", (unsigned long long)from,
                                                 (unsigned long long)size, got, want);
        }
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ranks),
        cmocka_unit_test(test_column_names),
        cmocka_unit_test(test_separators),
        cmocka_unit_test(test_schema_dims),
        cmocka_unit_test(test_header_cap),
        cmocka_unit_test(test_batch_file_size),
        cmocka_unit_test(test_task_key_count),
        cmocka_unit_test(test_offset_digits),
    };
    if (getenv("STS_TEST_FILTER")) cmocka_set_test_filter(getenv("STS_TEST_FILTER"));
    return cmocka_run_group_tests(tests, NULL, NULL);
}
