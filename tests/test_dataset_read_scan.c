/* test_dataset_read_scan.c - layer 9's scans read headers through sts__hread (layer 5): one pread of a
   guessed length per file, two buffers shared by the whole scan, a header byte-identical to the last
   one (same file size) not parsed again, each column looked up first where it was in the last file,
   the readahead hint only for uncached files. The oracle is the path every header took before,
   sts__ds_header (sts_open with header_only, which stats the file): each file of each case must give
   the same row, or the same error (result, rule, byte offset and message), in a scan as there. Cases:
   - the guess too short (a header much longer than the last), too long (much shorter), a file
     shorter than the guess (the whole file asked for), the first file's fixed guess;
   - truncated files (in the data, inside the header, under 8 bytes, empty), before the dataset
     opens and after it (the read comes up short: sts_open's verdict from the size now);
   - headers that change between files, tensors in another order, a missing column;
   - the cached header: many identical files parsed once; the same header bytes in a file of
     another size (trailing bytes) is parsed and fails as before; an explicit schema that every
     identical file breaks fails on each file, naming it;
   - the reader forced onto sts_open every time, and forced to hint every file;
   - with data (mapped, or read whole under STS_NO_MMAP) and long scans with filters;
   - the key table built from the headers without an index (the same reader);
   - the reader on a folder, a FIFO and a missing file: sts_open's error.
   test_dataset_read_scan_plain.c builds the same cases without _GNU_SOURCE (no RWF_NOWAIT: timed plain
   reads) and with STS_NO_MMAP. */
#ifndef STS_TEST_SCAN_PLAIN
#define _GNU_SOURCE  /* preadv2 and RWF_NOWAIT: the reader asks the page cache first */
#else
#define _POSIX_C_SOURCE 200809L
#endif
#define STS_IMPLEMENTATION
#include "../safetensors_spark.h"
#include "test_dataset_read_util.h"

/* ---- the oracle ---- */
typedef struct sc_count { uint64_t rows, errors, reuses, fallbacks, hints; } sc_count;
enum { SC_PLAIN = 0, SC_FALLBACK = 1, SC_COLD = 2 };

/* A wide scan without data over every file, each row or error compared with sts__ds_header's for
   that file (errors do not end a scan: the next call goes on with the next file). File `stale`
   (or (size_t)-1) changed size after the dataset opened and still fills the reader's pread: the
   reader checks it against the recorded size, so where sts_open fails on it the scan's row must
   be the header's, unless the reader is forced onto sts_open. */
static sc_count sc_wide_like_old_but(const sts_dataset *ds, int mode, size_t stale) {
    sts_scan_spec sp;
    sts_scan *s;
    sts_error e, eo;
    sc_count n;
    size_t f, i;
    memset(&sp, 0, sizeof sp);
    memset(&n, 0, sizeof n);
    DR_OK(sts_scan_open(ds, &sp, &s, &e));
    s->hr.test_fallback = mode == SC_FALLBACK;
    s->hr.test_cold = mode == SC_COLD;
    for (f = 0; f < ds->nfiles; f++) {
        const sts_view *c;
        size_t nc;
        sts_file *old = NULL;
        sts_result ro = sts__ds_header(ds, f, &old, NULL, &eo), r;
        memset(&e, 0x5a, sizeof e);
        r = sts_scan_next(s, &c, &nc, &e);
        if (ro != STS_OK && f == stale && mode != SC_FALLBACK) {
            assert_int_equal(r, STS_OK);  /* the header as the recorded size makes it: parses */
            assert_int_equal(ro, STS_ERR_METADATA_INCOMPLETE_BUFFER);
            assert_int_equal(nc, ds->ncols);
            assert_int_equal(c[0].file, f);
            n.rows++;
            continue;
        }
        if (ro != STS_OK) {
            if (r != ro || e.code != eo.code || e.rule != eo.rule || e.offset != eo.offset ||
                strcmp(e.message, eo.message) != 0)
                fail_msg("file %zu: the scan gave %s \"%s\" at %llu; sts_open gave %s \"%s\" at %llu", f,
                         sts_result_name(r), e.message, (unsigned long long)e.offset, sts_result_name(ro), eo.message,
                         (unsigned long long)eo.offset);
            assert_null(c);
            n.errors++;
            continue;
        }
        if (r != STS_OK) fail_msg("file %zu: the scan failed (%s) where sts_open did not", f, e.message);
        assert_non_null(c);
        assert_int_equal(nc, ds->ncols);
        for (i = 0; i < nc; i++) {
            const sts_tensor *t = sts_find(old, ds->cols[i].v.key, ds->cols[i].v.key_len);
            assert_int_equal(c[i].file, f);
            assert_int_equal(c[i].key_len, ds->cols[i].v.key_len);
            assert_memory_equal(c[i].key, ds->cols[i].v.key, c[i].key_len);
            assert_null(c[i].data);
            assert_int_equal(c[i].present, t != NULL);
            if (!t) continue;
            assert_int_equal(c[i].dtype, t->dtype);
            assert_int_equal(c[i].rank, t->rank);
            assert_memory_equal(c[i].shape, t->shape, t->rank * sizeof *t->shape);
            assert_int_equal(c[i].nbytes, t->end - t->begin);
        }
        sts_close(old);
        n.rows++;
    }
    {
        const sts_view *c;
        size_t nc;
        DR_OK(sts_scan_next(s, &c, &nc, &e));
        assert_null(c);
    }
    n.reuses = s->hr.reuses;
    n.fallbacks = s->hr.fallbacks;
    n.hints = s->hr.hints;
    assert_int_equal(sts_scan_get_stats(s).files_opened, n.rows);
    sts_scan_close(s);
    return n;
}
static sc_count sc_wide_like_old(const sts_dataset *ds, int mode) { return sc_wide_like_old_but(ds, mode, (size_t)-1); }
/* All three modes agree with the oracle; the plain mode's counts are returned. */
static sc_count sc_check(const char *dir) {
    sts_dataset *ds = dr_open(dir, 0);
    sc_count n = sc_wide_like_old(ds, SC_PLAIN), m;
    m = sc_wide_like_old(ds, SC_FALLBACK);
    assert_int_equal(m.rows, n.rows);
    assert_int_equal(m.fallbacks, m.rows + m.errors);
    m = sc_wide_like_old(ds, SC_COLD);
    assert_int_equal(m.rows, n.rows);
    assert_true(m.hints >= m.rows);
    sts_dataset_close(ds);
    return n;
}

/* ---- files ---- */
static const dr_spec SC_ABC[3] = {
    { "a", STS_DTYPE_U8, 1, { 300 }, NULL, 1 },
    { "b", STS_DTYPE_F32, 2, { 2, 3 }, NULL, 2 },
    { "c", STS_DTYPE_I64, 1, { 4 }, NULL, 3 },
};
static void sc_name(char *buf, size_t cap, int i) { snprintf(buf, cap, "f%03d.safetensors", i); }
static void sc_write(const char *dir, int i, const dr_spec *specs, size_t n, const char *meta_value) {
    char name[64];
    sts_kv kv;
    kv.key = "note";
    kv.key_len = 4;
    kv.value = meta_value;
    kv.value_len = meta_value ? strlen(meta_value) : 0;
    sc_name(name, sizeof name, i);
    dr_write_file(dir, name, specs, n, meta_value ? &kv : NULL, meta_value ? 1 : 0);
}
static void sc_path(char *buf, size_t cap, const char *dir, int i) {
    char name[64];
    sc_name(name, sizeof name, i);
    tf_join(buf, cap, dir, name);
}
static char *sc_text(size_t n, char c) {
    char *s = (char *)malloc(n + 1);
    assert_non_null(s);
    memset(s, c, n);
    s[n] = 0;
    return s;
}
static void sc_append(const char *path, const char *bytes, size_t n) {
    FILE *f = fopen(path, "ab");
    assert_non_null(f);
    assert_int_equal(fwrite(bytes, 1, n, f), n);
    fclose(f);
}

/* ---- cases ---- */
/* A scan of dir with every file read by one guess and no error: rows and reuses as given. */
static void sc_check_clean(const char *dir, uint64_t rows, uint64_t reuses) {
    sc_count n = sc_check(dir);
    assert_int_equal(n.rows, rows);
    assert_int_equal(n.errors, 0);
    assert_int_equal(n.reuses, reuses);
    assert_int_equal(n.fallbacks, 0);
}
/* A fresh, empty folder dr_root/name in dir. */
static void sc_dir(char *dir, size_t cap, const char *name) {
    dr_fresh(dir, cap, name);
    dr_subdir(dir, cap, dr_root, name);
}
static void test_identical_headers_parsed_once(void **state) {
    char dir[256];
    int i;
    (void)state;
    sc_dir(dir, sizeof dir, "same");
    for (i = 0; i < 40; i++) sc_write(dir, i, SC_ABC, 3, NULL);
    sc_check_clean(dir, 40, 39);
    tf_rmtree(dir);
}
static void test_guess_short_long_and_whole_file(void **state) {
    char dir[256], *big = sc_text(20000, 'x'), *mid = sc_text(300, 'y');
    (void)state;
    sc_dir(dir, sizeof dir, "guess");
    sc_write(dir, 0, SC_ABC, 3, NULL);   /* under the first guess (4 KiB): the whole file is asked for */
    sc_write(dir, 1, SC_ABC, 3, big);    /* a header of 20 KB after one of 200 bytes: the guess is short */
    sc_write(dir, 2, SC_ABC, 3, NULL);   /* 200 bytes after 20 KB: the guess runs far into the data */
    sc_write(dir, 3, SC_ABC, 3, mid);    /* 300 bytes more than the last: past the slack */
    sc_write(dir, 4, SC_ABC, 3, "z");    /* a byte more than... the header is padded: within the slack */
    sc_write(dir, 5, SC_ABC, 1, NULL);   /* a file of 308 bytes after a guess of about 600: the whole file */
    sc_write(dir, 6, SC_ABC, 3, big);
    sc_check_clean(dir, 7, 0);
    free(big);
    free(mid);
    tf_rmtree(dir);
}
static void test_first_file_larger_than_first_guess(void **state) {
    char dir[256], *big = sc_text(9000, 'q');
    (void)state;
    sc_dir(dir, sizeof dir, "firstbig");
    sc_write(dir, 0, SC_ABC, 3, big);
    sc_write(dir, 1, SC_ABC, 3, big);
    sc_check_clean(dir, 2, 1);
    free(big);
    tf_rmtree(dir);
}
static void test_headers_change_and_order(void **state) {
    char dir[256];
    dr_spec swapped[3], fewer[2];
    int i;
    (void)state;
    memcpy(swapped, SC_ABC, sizeof swapped);
    swapped[0].dtype = STS_DTYPE_F64;  /* a now sorts first (the writer orders by dtype, then name) */
    swapped[0].shape[0] = 5;
    swapped[2].dtype = STS_DTYPE_U8;   /* and c last */
    memcpy(fewer, SC_ABC + 1, sizeof fewer);  /* no column a: null cells */
    sc_dir(dir, sizeof dir, "change");
    for (i = 0; i < 12; i++) {
        if (i % 4 == 1) sc_write(dir, i, swapped, 3, NULL);
        else if (i % 4 == 2) sc_write(dir, i, fewer, 2, NULL);
        else if (i % 4 == 3) sc_write(dir, i, SC_ABC, 3, i % 8 == 3 ? "x" : "yy");  /* the same length, other bytes */
        else sc_write(dir, i, SC_ABC, 3, NULL);
    }
    sc_check_clean(dir, 12, 0);
    tf_rmtree(dir);
}
static void test_truncated_before_open(void **state) {
    char dir[256], p[512];
    sc_count n;
    int64_t size;
    int i;
    (void)state;
    sc_dir(dir, sizeof dir, "trunc");
    for (i = 0; i < 8; i++) sc_write(dir, i, SC_ABC, 3, NULL);
    sc_path(p, sizeof p, dir, 0);
    size = tf_file_size(p);
    sc_path(p, sizeof p, dir, 2);
    assert_int_equal(truncate(p, size - 1), 0);  /* the data ends early */
    sc_path(p, sizeof p, dir, 3);
    assert_int_equal(truncate(p, 100), 0);       /* inside the header */
    sc_path(p, sizeof p, dir, 4);
    assert_int_equal(truncate(p, 5), 0);         /* under 8 bytes */
    sc_path(p, sizeof p, dir, 5);
    assert_int_equal(truncate(p, 0), 0);         /* empty */
    sc_path(p, sizeof p, dir, 6);
    sc_append(p, "        ", 8);                 /* trailing bytes: the same header, another size */
    n = sc_check(dir);
    assert_int_equal(n.rows, 3);
    assert_int_equal(n.errors, 5);
    tf_rmtree(dir);
}
static void test_truncated_after_open(void **state) {
    char dir[256], p[512];
    sts_dataset *ds;
    sc_count n;
    int64_t size;
    int i, mode;
    (void)state;
    for (mode = 0; mode < 3; mode++) {
        sc_dir(dir, sizeof dir, "trunc_after");
        for (i = 0; i < 6; i++) sc_write(dir, i, SC_ABC, 3, NULL);
        ds = dr_open(dir, 0);
        sc_path(p, sizeof p, dir, 0);
        size = tf_file_size(p);
        sc_path(p, sizeof p, dir, 2);
        assert_int_equal(truncate(p, 150), 0);  /* shorter than the guess: the read comes up short */
        sc_path(p, sizeof p, dir, 3);
        assert_int_equal(truncate(p, 4), 0);
        sc_path(p, sizeof p, dir, 4);
        assert_int_equal(truncate(p, size - 200), 0);  /* the guess still fits: the read is long enough */
        n = sc_wide_like_old_but(ds, mode, 4);
        /* 2 and 3: sts_open's verdict from the size now. 4: its header, read in full, is checked
           against the size the dataset recorded; mapping the file for its data checks it again */
        assert_int_equal(n.errors, mode == SC_FALLBACK ? 3 : 2);
        if (mode == SC_PLAIN) assert_int_equal(n.fallbacks, 2);
        {
            sts_scan_spec sp;
            sts_scan *s;
            sts_error e;
            const sts_view *c;
            size_t nc;
            memset(&sp, 0, sizeof sp);
            sp.with_data = 1;
            sp.file_begin = 4;
            DR_OK(sts_scan_open(ds, &sp, &s, &e));
            tu_err_check("mapped", sts_scan_next(s, &c, &nc, &e), &e, STS_ERR_METADATA_INCOMPLETE_BUFFER,
                         STS_RULE_FILE_SIZE, "f004.safetensors", NULL);
            sts_scan_close(s);
        }
        sts_dataset_close(ds);
        tf_rmtree(dir);
    }
}
static void test_cached_header_other_size(void **state) {
    char dir[256], p[512];
    sc_count n;
    int i;
    (void)state;
    sc_dir(dir, sizeof dir, "cached_size");
    for (i = 0; i < 6; i++) sc_write(dir, i, SC_ABC, 3, NULL);
    sc_path(p, sizeof p, dir, 3);
    sc_append(p, "\0\0\0\0\0\0\0\0", 8);  /* file 3: the same header bytes as 2, 8 bytes more */
    n = sc_check(dir);
    assert_int_equal(n.rows, 5);
    assert_int_equal(n.errors, 1);
    assert_int_equal(n.reuses, 4);  /* 1, 2, 4 and 5: 3 failed, and the reader kept the parse before it */
    tf_rmtree(dir);
}
static void test_schema_broken_by_every_file(void **state) {
    char dir[256];
    sts_read_config cfg;
    sts_schema_column sc;
    uint64_t shape[1] = { 7 };
    sts_dataset *ds;
    sts_scan_spec sp;
    sts_scan *s;
    sts_error e;
    const sts_view *c;
    size_t nc;
    int i;
    (void)state;
    sc_dir(dir, sizeof dir, "schema");
    for (i = 0; i < 3; i++) sc_write(dir, i, SC_ABC, 3, NULL);
    memset(&cfg, 0, sizeof cfg);
    memset(&sc, 0, sizeof sc);
    sc.name = "a"; sc.name_len = 1; sc.dtype = STS_DTYPE_U8; sc.has_dtype = 1;
    sc.rank = 1; sc.shape = shape; sc.has_shape = 1;  /* a is U8 [300] in every file */
    cfg.schema = &sc;
    cfg.nschema = 1;
    DR_OK(sts_dataset_open(dir, &cfg, NULL, &ds, &e));
    memset(&sp, 0, sizeof sp);
    DR_OK(sts_scan_open(ds, &sp, &s, &e));
    for (i = 0; i < 3; i++) {
        char name[64];
        sc_name(name, sizeof name, i);
        tu_err_check("schema", sts_scan_next(s, &c, &nc, &e), &e, STS_ERR_SCHEMA, STS_RULE_READ_SCHEMA, name, "\"a\"",
                     NULL);
    }
    assert_int_equal(s->hr.reuses, 2);  /* the header was not parsed again, the schema was checked again */
    DR_OK(sts_scan_next(s, &c, &nc, &e));
    assert_null(c);
    sts_scan_close(s);
    sts_dataset_close(ds);
    tf_rmtree(dir);
}
/* With data (each file mapped, or read whole under STS_NO_MMAP) and long scans with a filter that
   reads headers first: every row's bytes are the pattern. */
static void test_with_data_and_long(void **state) {
    char dir[256];
    dr_spec swapped[3];
    sts_dataset *ds;
    sts_scan_spec sp;
    sts_scan *s;
    sts_error e;
    const sts_view *c;
    size_t nc, rows = 0, i;
    dr_rows rs;
    sts_dtype dt = STS_DTYPE_F32;
    (void)state;
    memcpy(swapped, SC_ABC, sizeof swapped);
    swapped[0].dtype = STS_DTYPE_F64;
    swapped[0].shape[0] = 5;
    sc_dir(dir, sizeof dir, "data");
    for (i = 0; i < 10; i++) sc_write(dir, (int)i, i % 3 == 2 ? swapped : SC_ABC, 3, NULL);
    ds = dr_open(dir, 0);
    memset(&sp, 0, sizeof sp);
    sp.with_data = 1;
    DR_OK(sts_scan_open(ds, &sp, &s, &e));
    for (;;) {
        DR_OK(sts_scan_next(s, &c, &nc, &e));
        if (!c) break;
        for (i = 0; i < nc; i++) {
            const dr_spec *sp3 = rows % 3 == 2 ? swapped : SC_ABC;
            assert_true(c[i].present);
            assert_non_null(c[i].data);
            assert_true(dr_pattern_matches(&sp3[c[i].key[0] - 'a'], c[i].data));
        }
        rows++;
    }
    sts_scan_close(s);
    assert_int_equal(rows, 10);
    memset(&sp, 0, sizeof sp);
    sp.long_form = 1;
    sp.with_data = 1;
    sp.dtypes = &dt;
    sp.ndtypes = 1;
    DR_OK(dr_long_scan(ds, &sp, &rs, &e));
    assert_int_equal(rs.n, 10);  /* b in every file */
    assert_int_equal(rs.st.files_opened, 10);
    dr_rows_free(&rs);
    sp.with_data = 0;
    sp.ndtypes = 0;
    DR_OK(dr_long_scan(ds, &sp, &rs, &e));
    assert_int_equal(rs.n, 30);
    dr_rows_free(&rs);
    sts_dataset_close(ds);
    tf_rmtree(dir);
}
/* A batch dataset (manifest, the writer's files): identical headers per batch size. */
/* A fresh batch dataset of two tasks (9 and 7 rows, batches of 2) in dir. */
static void sc_write_batch(char *dir, size_t cap, const char *name) {
    dr_batch b;
    memset(&b, 0, sizeof b);
    b.tasks = 2;
    b.rows_per_task[0] = 9;
    b.rows_per_task[1] = 7;
    b.batch_size = 2;
    dr_fresh(dir, cap, name);
    dr_write_batch(dir, &b);
}
static void test_batch_dataset(void **state) {
    char dir[256];
    sc_count n;
    (void)state;
    sc_write_batch(dir, sizeof dir, "batch");
    n = sc_check(dir);
    assert_true(n.rows >= 2);
    assert_int_equal(n.errors, 0);
    assert_int_equal(n.fallbacks, 0);
    tf_rmtree(dir);
}

/* The reader alone, on what is not a regular file (a dataset's open lets none through, but a file
   can be replaced after it): the error is sts_open's, message included. */
static void test_reader_not_a_file(void **state) {
    char dir[256], fifo[512], missing[512];
    const char *paths[3];
    sts__mem m = sts__mem_from(NULL);
    int i;
    (void)state;
    sc_dir(dir, sizeof dir, "notfile");
    tf_join(fifo, sizeof fifo, dir, "fifo.safetensors");
    tf_join(missing, sizeof missing, dir, "gone.safetensors");
    assert_int_equal(mkfifo(fifo, 0644), 0);
    paths[0] = dir; paths[1] = fifo; paths[2] = missing;
    for (i = 0; i < 3; i++) {
        sts__hread h;
        sts_file *f = NULL, *g = NULL;
        sts_options o;
        sts_error e, eo;
        sts_result r, ro;
        memset(&o, 0, sizeof o);
        o.header_only = 1;
        sts__hread_init(&h, &m, NULL);
        r = sts__hread_open(&h, paths[i], 4096, &f, &e);
        ro = sts_open(paths[i], &o, &g, &eo);
        assert_int_not_equal(ro, STS_OK);
        assert_int_equal(r, ro);
        assert_int_equal(e.rule, eo.rule);
        assert_string_equal(e.message, eo.message);
        assert_null(f);
        assert_int_equal(h.fallbacks, 1);
        sts__hread_free(&h);
    }
    tf_rmtree(dir);
}
/* Without an index, the first lookup builds the key table from every header through the same reader:
   each file's keys ("file/name" in a batch dataset) find that file's tensors as its header has them. */
static void test_no_index_keys(void **state) {
    char dir[256];
    sts_dataset *ds;
    sts_error e;
    size_t f, t;
    uint64_t opened;
    (void)state;
    sc_write_batch(dir, sizeof dir, "noindex");
    ds = dr_open(dir, 1);
    opened = sts_dataset_stats(ds).files_opened;  /* the schema was inferred from the first file */
    for (f = 0; f < ds->nfiles; f++) {
        sts_file *old;
        DR_OK(sts__ds_header(ds, f, &old, NULL, &e));
        for (t = 0; t < sts_count(old); t++) {
            const sts_tensor *x = sts_at(old, t);
            char key[512];
            sts_view v;
            int kl = snprintf(key, sizeof key, "%s/%.*s", sts_dataset_file(ds, f), (int)x->name_len, x->name);
            DR_OK(sts_dataset_get(ds, key, (size_t)kl, 0, &v, &e));
            assert_int_equal(v.file, f);
            assert_int_equal(v.dtype, x->dtype);
            assert_int_equal(v.rank, x->rank);
            assert_memory_equal(v.shape, x->shape, x->rank * sizeof *x->shape);
        }
        sts_close(old);
    }
    assert_int_equal(sts_dataset_stats(ds).files_opened - opened, ds->nfiles);  /* each header read once */
    sts_dataset_close(ds);
    tf_rmtree(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_identical_headers_parsed_once),
        cmocka_unit_test(test_guess_short_long_and_whole_file),
        cmocka_unit_test(test_first_file_larger_than_first_guess),
        cmocka_unit_test(test_headers_change_and_order),
        cmocka_unit_test(test_truncated_before_open),
        cmocka_unit_test(test_truncated_after_open),
        cmocka_unit_test(test_cached_header_other_size),
        cmocka_unit_test(test_schema_broken_by_every_file),
        cmocka_unit_test(test_with_data_and_long),
        cmocka_unit_test(test_batch_dataset),
        cmocka_unit_test(test_no_index_keys),
        cmocka_unit_test(test_reader_not_a_file),
    };
    return cmocka_run_group_tests(tests, dr_root_setup, dr_root_teardown);
}
