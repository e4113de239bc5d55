/* test_dataset_read_pushdown.c - layer 9: what the reader reads, proved by its counters, by the
   process's read counter (/proc/self/io rchar: bytes through read-like system calls) and by a
   sparse 16 GiB file whose data would take long to read.
   - wide scans without data read exactly 8 + N bytes per file and map nothing;
   - a key filter on a 20-shard KV dataset with an index opens exactly the shards that hold the
     keys; without the index it reads every header but maps only the files with matches;
   - a dtype filter that matches nothing: with the index no file is opened, without it every
     header is read and no data;
   - lookups through the index touch no file until data is asked for, then map that file once;
     without an index the key table is built once; 20000 lookups take about as long through an
     index of 100000 keys as through one of 500;
   - a header-only long scan of a lastWin dataset maps nothing;
   - a sparse file with a 16 GiB tensor scans and looks up in milliseconds. */
#define _POSIX_C_SOURCE 200809L
#ifndef STS_TEST_LINKED  /* the Makefile links tests/sts_impl.c's object instead */
#define STS_IMPLEMENTATION
#endif
#include "../safetensors_spark.h"
#include "test_dataset_read_util.h"

static char g_root[64];
static char g_kv20[256];       /* 20 shards, index */
static tf_names g_sh;
static uint64_t g_hdr[20];     /* 8 + N of each shard */

static uint64_t header_bytes_of(const char *path) {
    uint8_t pre[8];
    uint64_t n = 0;
    int fd = open(path, O_RDONLY), j;
    assert_true(fd >= 0);
    assert_int_equal(read(fd, pre, 8), 8);
    close(fd);
    for (j = 7; j >= 0; j--) n = n << 8 | pre[j];
    return 8 + n;
}
static int setup_root(void **state) {
    dr_kv k;
    size_t i;
    (void)state;
    tf_tmpdir(g_root, sizeof g_root);
    tf_join(g_kv20, sizeof g_kv20, g_root, "kv20");
    memset(&k, 0, sizeof k);
    k.tasks = 20;
    k.rows = 3;
    k.index = 1;
    dr_write_kv(g_kv20, &k);
    g_sh = dr_list_shards(g_kv20);
    assert_int_equal(g_sh.n, 20);
    for (i = 0; i < 20; i++) {
        char p[512];
        tf_join(p, sizeof p, g_kv20, g_sh.v[i]);
        g_hdr[i] = header_bytes_of(p);
    }
    return 0;
}
static int teardown_root(void **state) {
    (void)state;
    tf_names_free(&g_sh);
    tf_rmtree(g_root);
    return 0;
}
static uint64_t all_headers(void) {
    uint64_t s = 0;
    size_t i;
    for (i = 0; i < 20; i++) s += g_hdr[i];
    return s;
}
/* What a scan's header reads may return in all: each file's first pread asks for a guessed length
   (4 KiB for the first file, then the previous header and 64 bytes and an eighth more), the
   header itself when that was short. Bounded here by the largest header. */
static uint64_t all_headers_guessed(void) {
    uint64_t s = 0, big = 0;
    size_t i;
    for (i = 0; i < 20; i++) big = g_hdr[i] > big ? g_hdr[i] : big;
    for (i = 0; i < 20; i++) s += i == 0 ? (g_hdr[i] > 4096 ? g_hdr[i] : 4096) : big + 64 + big / 8;
    return s;
}

/* ---- wide scans without data ---- */
static void test_wide_header_only(void **state) {
    int no_index;
    (void)state;
    for (no_index = 0; no_index < 2; no_index++) {
        sts_dataset *ds = dr_open(g_kv20, no_index);
        sts_scan_stats before = sts_dataset_stats(ds), st;
        sts_scan_spec sp;
        sts_scan *s;
        sts_error e;
        const sts_view *c;
        size_t nc, rows = 0, i;
        dr_io io;
        long long got;
        memset(&sp, 0, sizeof sp);
        DR_OK(sts_scan_open(ds, &sp, &s, &e));
        assert_int_equal(sts_scan_files(s), 20);
        dr_io_begin(&io);
        for (;;) {
            DR_OK(sts_scan_next(s, &c, &nc, &e));
            if (!nc) break;
            for (i = 0; i < nc; i++) assert_null(c[i].data);
            rows++;
        }
        got = dr_io_end(&io);
        st = sts_scan_get_stats(s);
        sts_scan_close(s);
        assert_int_equal(rows, 20);
        assert_int_equal(st.files_opened, 20);
        assert_int_equal(st.header_bytes, all_headers());
        assert_int_equal(st.data_bytes, 0);
        assert_int_equal(st.files_mapped, 0);
        if (got >= 0 && (got < (long long)all_headers() || got > (long long)all_headers_guessed()))
            fail_msg("a header-only wide scan read %lld bytes through system calls; the 20 headers are %llu bytes, "
                     "the guessed reads at most %llu", got, (unsigned long long)all_headers(),
                     (unsigned long long)all_headers_guessed());
        /* the dataset's own lookups did nothing meanwhile */
        assert_int_equal(sts_dataset_stats(ds).files_mapped, before.files_mapped);
        assert_int_equal(sts_dataset_stats(ds).data_bytes, 0);
        sts_dataset_close(ds);
    }
}

/* ---- key filters on 20 shards ---- */
static const char *const K3[3] = { "k003_001__img", "k011_002__emb", "k011_000__img" };
static void check_key_rows(const dr_rows *rs) {
    size_t i;
    assert_int_equal(rs->n, 3);
    for (i = 0; i < rs->n; i++) {
        uint32_t t, r;
        assert_true(dr_kv_parse(rs->r[i].key, rs->r[i].key_len, &t, &r));
        assert_int_equal(rs->r[i].file, t);
        assert_true(rs->r[i].has_data);
    }
}
static uint64_t k3_data_bytes(void) {
    /* k003_001__img [2 + 4 % 2 = 2, 3] U8 = 6; k011_002__emb 12; k011_000__img [2 + 11 % 2 = 3, 3] = 9 */
    return 6 + 12 + 9;
}
static void test_key_filter_with_index(void **state) {
    sts_dataset *ds = dr_open(g_kv20, 0);
    sts_scan_spec sp;
    dr_rows rs;
    sts_error e;
    (void)state;
    assert_int_equal(sts_dataset_describe(ds).has_index, 1);
    memset(&sp, 0, sizeof sp);
    sp.keys = K3;
    sp.nkeys = 3;
    sp.with_data = 1;
    DR_OK(dr_long_scan(ds, &sp, &rs, &e));
    check_key_rows(&rs);
    assert_int_equal(rs.files, 2);                        /* shards 3 and 11, chosen from the index */
    assert_int_equal(rs.st.files_opened, 2);
    assert_int_equal(rs.st.header_bytes, g_hdr[3] + g_hdr[11]);
    assert_int_equal(rs.st.files_mapped, 2);
    assert_int_equal(rs.st.data_bytes, k3_data_bytes());
    assert_int_equal(sts_dataset_stats(ds).files_mapped, 2);
    dr_rows_free(&rs);
    /* without data: the same two headers, nothing mapped */
    sp.with_data = 0;
    DR_OK(dr_long_scan(ds, &sp, &rs, &e));
    assert_int_equal(rs.n, 3);
    assert_int_equal(rs.st.files_opened, 2);
    assert_int_equal(rs.st.header_bytes, g_hdr[3] + g_hdr[11]);
    assert_int_equal(rs.st.files_mapped, 0);
    assert_int_equal(rs.st.data_bytes, 0);
    dr_rows_free(&rs);
    /* a range that holds shard 11 only */
    sp.file_begin = 5;
    sp.file_end = 15;
    DR_OK(dr_long_scan(ds, &sp, &rs, &e));
    assert_int_equal(rs.n, 2);
    assert_int_equal(rs.files, 1);
    assert_int_equal(rs.st.files_opened, 1);
    dr_rows_free(&rs);
    /* keys that are nowhere: no file at all */
    {
        const char *none[2] = { "absent", "k999_000__img" };
        memset(&sp, 0, sizeof sp);
        sp.keys = none;
        sp.nkeys = 2;
        sp.with_data = 1;
        DR_OK(dr_long_scan(ds, &sp, &rs, &e));
        assert_int_equal(rs.n, 0);
        assert_int_equal(rs.files, 0);
        assert_int_equal(rs.st.files_opened, 0);
        dr_rows_free(&rs);
    }
    /* keys with a dtype filter (the index's general path): only shard 11's emb */
    {
        sts_dtype dt = STS_DTYPE_F32;
        memset(&sp, 0, sizeof sp);
        sp.keys = K3;
        sp.nkeys = 3;
        sp.dtypes = &dt;
        sp.ndtypes = 1;
        sp.with_data = 1;
        DR_OK(dr_long_scan(ds, &sp, &rs, &e));
        assert_int_equal(rs.n, 1);
        assert_int_equal(rs.files, 1);
        assert_int_equal(rs.st.files_opened, 1);
        assert_int_equal(rs.st.data_bytes, 12);
        dr_rows_free(&rs);
    }
    sts_dataset_close(ds);
}
/* Without an index the filter is answered from header-only reads: every header is read, and only
   the files with a match are mapped. */
static void test_key_filter_without_index(void **state) {
    sts_dataset *ds = dr_open(g_kv20, 1);
    sts_scan_spec sp;
    dr_rows rs;
    sts_error e;
    (void)state;
    assert_int_equal(sts_dataset_describe(ds).has_index, 0);
    memset(&sp, 0, sizeof sp);
    sp.keys = K3;
    sp.nkeys = 3;
    sp.with_data = 0;
    DR_OK(dr_long_scan(ds, &sp, &rs, &e));
    assert_int_equal(rs.n, 3);
    assert_int_equal(rs.st.files_opened, 20);
    assert_int_equal(rs.st.header_bytes, all_headers());
    assert_int_equal(rs.st.files_mapped, 0);
    dr_rows_free(&rs);
    sp.with_data = 1;
    DR_OK(dr_long_scan(ds, &sp, &rs, &e));
    check_key_rows(&rs);
    assert_int_equal(rs.st.files_opened, 20);
    assert_int_equal(rs.st.header_bytes, all_headers());
    assert_int_equal(rs.st.data_bytes, k3_data_bytes());
    {
        uint64_t mapped = rs.st.files_mapped, ds_mapped = sts_dataset_stats(ds).files_mapped;
        dr_rows_free(&rs);
        sts_dataset_close(ds);
        if (mapped != 2 || ds_mapped != 2)
            fail_msg("a key filter matching 2 of 20 files (no index, with data) mapped %llu files (dataset: %llu); expected only the 2 with matches",
                     (unsigned long long)mapped, (unsigned long long)ds_mapped);
    }
}

/* ---- a dtype filter that matches nothing ---- */
static void test_dtype_filter_nothing(void **state) {
    int no_index, with_data;
    (void)state;
    for (no_index = 0; no_index < 2; no_index++)
        for (with_data = 0; with_data < 2; with_data++) {
            sts_dataset *ds = dr_open(g_kv20, no_index);
            sts_scan_spec sp;
            dr_rows rs;
            sts_error e;
            sts_dtype dts[2] = { STS_DTYPE_BF16, STS_DTYPE_I64 };
            memset(&sp, 0, sizeof sp);
            sp.dtypes = dts;
            sp.ndtypes = 2;
            sp.with_data = with_data;
            DR_OK(dr_long_scan(ds, &sp, &rs, &e));
            assert_int_equal(rs.n, 0);
            assert_int_equal(rs.st.data_bytes, 0);
            if (!no_index) {  /* the index answers: no file at all */
                assert_int_equal(rs.files, 0);
                assert_int_equal(rs.st.files_opened, 0);
                assert_int_equal(rs.st.header_bytes, 0);
            } else {          /* every header, nothing else */
                assert_int_equal(rs.st.files_opened, 20);
                assert_int_equal(rs.st.header_bytes, all_headers());
            }
            {
                uint64_t mapped = rs.st.files_mapped, ds_mapped = sts_dataset_stats(ds).files_mapped;
                dr_rows_free(&rs);
                sts_dataset_close(ds);
                if (mapped != 0 || ds_mapped != 0)
                    fail_msg("a dtype filter matching nothing (index %s, with_data %d) mapped %llu files (dataset: %llu)",
                             no_index ? "ignored" : "used", with_data, (unsigned long long)mapped, (unsigned long long)ds_mapped);
            }
        }
}
/* A shape filter through the index picks the files whose tensors match. */
static void test_shape_filter_index(void **state) {
    sts_dataset *ds = dr_open(g_kv20, 0);
    sts_scan_spec sp;
    dr_rows rs;
    sts_error e;
    uint64_t shape[2] = { 3, STS_DIM_ANY };
    size_t i, want = 0;
    uint32_t t, r;
    (void)state;
    for (t = 0; t < 20; t++) for (r = 0; r < 3; r++) { uint64_t s[2]; dr_kv_img_shape(t, r, s); want += s[0] == 3; }
    memset(&sp, 0, sizeof sp);
    sp.has_shape = 1;
    sp.rank = 2;
    sp.shape = shape;
    DR_OK(dr_long_scan(ds, &sp, &rs, &e));
    assert_int_equal(rs.n, want);
    for (i = 0; i < rs.n; i++) assert_int_equal(rs.r[i].shape[0], 3);
    assert_int_equal(rs.files, 20);  /* every shard holds a [3, 3] image */
    dr_rows_free(&rs);
    shape[0] = 7;                    /* none */
    DR_OK(dr_long_scan(ds, &sp, &rs, &e));
    assert_int_equal(rs.n, 0);
    assert_int_equal(rs.files, 0);
    assert_int_equal(rs.st.files_opened, 0);
    dr_rows_free(&rs);
    sts_dataset_close(ds);
}

/* ---- lookups ---- */
static void test_get_through_index(void **state) {
    sts_dataset *ds = dr_open(g_kv20, 0);
    sts_scan_stats st0 = sts_dataset_stats(ds), st;
    sts_error e;
    sts_view v;
    uint32_t t, r;
    (void)state;
    assert_int_equal(st0.files_opened, 0);   /* schema and keys from the index */
    assert_int_equal(st0.files_mapped, 0);
    /* every key without data: no file touched */
    for (t = 0; t < 20; t++)
        for (r = 0; r < 3; r++) {
            char key[64];
            dr_kv_key(key, sizeof key, t, r);
            strcat(key, "__img");
            DR_OK(sts_dataset_get(ds, key, strlen(key), 0, &v, &e));
            assert_int_equal(v.file, t);
            assert_null(v.data);
            dr_check_kv_view(&v, t, r);
        }
    st = sts_dataset_stats(ds);
    assert_int_equal(st.files_opened, 0);
    assert_int_equal(st.files_mapped, 0);
    assert_int_equal(st.data_bytes, 0);
    assert_int_equal(st.header_bytes, st0.header_bytes);
    /* with data: shard 7 is mapped once, whatever the number of lookups in it */
    for (r = 0; r < 3; r++) {
        char key[64];
        dr_kv_key(key, sizeof key, 7, r);
        strcat(key, "__emb");
        DR_OK(sts_dataset_get(ds, key, strlen(key), 1, &v, &e));
        dr_check_kv_view(&v, 7, r);
        DR_OK(sts_dataset_get(ds, key, strlen(key), 1, &v, &e));
    }
    st = sts_dataset_stats(ds);
    assert_int_equal(st.files_mapped, 1);
    assert_int_equal(st.data_bytes, 6 * 12);
    {   /* zero-copy: every lookup and a scan hand out the same address (the file's mapping) */
        sts_view a, b;
        sts_scan_spec sp;
        sts_scan *s;
        const sts_view *c;
        size_t nc;
        const char *keys[1] = { "k007_002__emb" };
        DR_OK(sts_dataset_get(ds, "k007_002__emb", 13, 1, &a, &e));
        DR_OK(sts_dataset_get(ds, "k007_002__emb", 13, 1, &b, &e));
        assert_ptr_equal(a.data, b.data);
        memset(&sp, 0, sizeof sp);
        sp.long_form = 1;
        sp.with_data = 1;
        sp.keys = keys;
        sp.nkeys = 1;
        DR_OK(sts_scan_open(ds, &sp, &s, &e));
        DR_OK(sts_scan_next(s, &c, &nc, &e));
        assert_int_equal(nc, 1);
        assert_ptr_equal(c->data, a.data);
        sts_scan_close(s);
        assert_int_equal(sts_dataset_stats(ds).files_mapped, 1);
    }
    sts_dataset_close(ds);
}
static void test_get_without_index_builds_once(void **state) {
    sts_dataset *ds = dr_open(g_kv20, 1);
    sts_scan_stats st1, st2;
    sts_error e;
    sts_view v;
    (void)state;
    DR_OK(sts_dataset_get(ds, "k019_002__emb", 13, 0, &v, &e));
    assert_int_equal(v.file, 19);
    dr_check_kv_view(&v, 19, 2);
    st1 = sts_dataset_stats(ds);
    assert_true(st1.files_opened >= 20);  /* every header, once (plus the schema's first) */
    DR_OK(sts_dataset_get(ds, "k000_000__emb", 13, 1, &v, &e));
    dr_check_kv_view(&v, 0, 0);
    DR_OK(sts_dataset_get(ds, "k010_001__img", 13, 1, &v, &e));
    dr_check_kv_view(&v, 10, 1);
    st2 = sts_dataset_stats(ds);
    assert_int_equal(st2.files_opened, st1.files_opened);
    assert_int_equal(st2.header_bytes, st1.header_bytes);
    sts_dataset_close(ds);
}

/* ---- lookups take constant time: 20000 random gets through an index of n keys, n = 500 and
   n = 100000 (20000 quick); a search through the keys would be hundreds of times slower ---- */
static double timed_gets(size_t n) {
    char dir[256], name[32], p[512];
    dr_spec *specs = (dr_spec *)calloc(n, sizeof *specs);
    char (*names)[24] = (char (*)[24])malloc(n * 24);
    FILE *f;
    size_t i;
    sts_dataset *ds;
    sts_error e;
    tu_rng rng;
    double t0, t;
    assert_true(specs && names);
    snprintf(name, sizeof name, "o1_%zu", n);
    tf_join(dir, sizeof dir, g_root, name);
    assert_int_equal(mkdir(dir, 0755), 0);
    for (i = 0; i < n; i++) {
        snprintf(names[i], 24, "t%07zu", i);
        specs[i].name = names[i];
        specs[i].dtype = STS_DTYPE_U8;
        specs[i].rank = 1;
        specs[i].shape[0] = 1;
    }
    dr_write_file(dir, "a.safetensors", specs, n, NULL, 0);
    tf_join(p, sizeof p, dir, "_tensor_index.json");
    f = fopen(p, "wb");
    assert_non_null(f);
    fputs("{\"metadata\":{},\"tensors\":{", f);
    for (i = 0; i < n; i++)
        fprintf(f, "%s\"%s\":{\"file\":\"a.safetensors\",\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[%zu,%zu]}", i ? "," : "", names[i], i, i + 1);
    fputs("}}", f);
    fclose(f);
    ds = dr_open(dir, 0);
    assert_int_equal(sts_dataset_describe(ds).has_index, 1);
    rng.s = 99;
    t0 = tu_now();
    for (i = 0; i < 20000; i++) {
        size_t k = tu_below(&rng, (uint32_t)n);
        sts_view v;
        DR_OK(sts_dataset_get(ds, names[k], 8, 0, &v, &e));
        assert_int_equal(v.nbytes, 1);
    }
    t = tu_now() - t0;
    {
        sts_view v;
        DR_OK(sts_dataset_get(ds, names[n - 1], 8, 1, &v, &e));  /* and the index agrees with the file */
    }
    sts_dataset_close(ds);
    tf_rmtree(dir);
    free(specs);
    free(names);
    return t;
}
static void test_get_constant_time(void **state) {
    double small, large;
    (void)state;
    small = timed_gets(500);
    large = timed_gets(tu_quick() ? 20000 : 100000);
    if (large > 20 * small + 0.05) fail_msg("20000 lookups: %.4f s with 500 keys, %.4f s with %d keys", small, large, tu_quick() ? 20000 : 100000);
}

/* ---- lastWin without an index: a header-only long scan maps nothing ---- */
static void test_last_win_scan_header_only(void **state) {
    char dir[256];
    dr_kv k;
    sts_dataset *ds;
    sts_scan_spec sp;
    dr_rows rs;
    sts_error e;
    const char *keys[1] = { "dup_0__img" };
    (void)state;
    memset(&k, 0, sizeof k);
    k.tasks = 4;
    k.rows = 2;
    k.last_win = 1;
    k.dup_every = 1;
    tf_join(dir, sizeof dir, g_root, "lw");
    dr_write_kv(dir, &k);
    ds = dr_open(dir, 1);
    memset(&sp, 0, sizeof sp);
    sp.keys = keys;
    sp.nkeys = 1;
    DR_OK(dr_long_scan(ds, &sp, &rs, &e));
    assert_int_equal(rs.n, 1);
    assert_int_equal(rs.r[0].file, 3);
    assert_int_equal(rs.st.files_mapped, 0);
    {
        uint64_t mapped = sts_dataset_stats(ds).files_mapped;
        dr_rows_free(&rs);
        sts_dataset_close(ds);
        tf_rmtree(dir);
        if (mapped != 0) fail_msg("a header-only long scan of a lastWin dataset without index mapped %llu of 4 files (to find the winners)", (unsigned long long)mapped);
    }
}

/* ---- a sparse file with a 16 GiB tensor ---- */
static void test_sparse_huge_file(void **state) {
    char dir[256], p[512], hdr[512];
    const uint64_t big = (uint64_t)1 << 34;   /* F32 [2^31, 2] */
    sts_dataset *ds;
    sts_error e;
    sts_view v;
    size_t hl;
    int fd;
    double t0;
    dr_io io;
    long long got;
    (void)state;
    tf_join(dir, sizeof dir, g_root, "sparse");
    assert_int_equal(mkdir(dir, 0755), 0);
    tf_join(p, sizeof p, dir, "huge.safetensors");
    hl = (size_t)snprintf(hdr + 8, sizeof hdr - 8,
                          "{\"__metadata__\":{\"format\":\"pt\"},\"huge\":{\"dtype\":\"F32\",\"shape\":[2147483648,2],\"data_offsets\":[0,%llu]},"
                          "\"small\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[%llu,%llu]}}",
                          (unsigned long long)big, (unsigned long long)big, (unsigned long long)big + 4);
    while (hl % 8) hdr[8 + hl++] = ' ';
    { size_t j; for (j = 0; j < 8; j++) hdr[j] = (char)((uint64_t)hl >> (8 * j)); }
    fd = open(p, O_CREAT | O_TRUNC | O_WRONLY, 0644);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, hdr, 8 + hl), (ssize_t)(8 + hl));
    assert_int_equal(ftruncate(fd, (off_t)(8 + hl + big + 4)), 0);
    close(fd);
    t0 = tu_now();
    ds = dr_open(dir, 0);
    {
        sts_scan_spec sp;
        dr_rows rs;
        sts_dtype dt = STS_DTYPE_U8;
        memset(&sp, 0, sizeof sp);
        dr_io_begin(&io);
        DR_OK(dr_long_scan(ds, &sp, &rs, &e));
        got = dr_io_end(&io);
        assert_int_equal(rs.n, 2);
        assert_int_equal(dr_rows_find(&rs, "huge")->nbytes, big);
        assert_int_equal(rs.st.header_bytes, 8 + hl);
        if (got >= 0) assert_int_equal(got, 4096);  /* the first guess: 4 KiB, the header's 8 + N within it */
        dr_rows_free(&rs);
        sp.dtypes = &dt;
        sp.ndtypes = 1;
        DR_OK(dr_long_scan(ds, &sp, &rs, &e));
        assert_int_equal(rs.n, 1);
        assert_int_equal(rs.st.data_bytes, 0);
        dr_rows_free(&rs);
    }
    DR_OK(sts_dataset_get(ds, "huge", 4, 0, &v, &e));
    assert_int_equal(v.nbytes, big);
    assert_int_equal(v.shape[0], (uint64_t)1 << 31);
    if (sizeof(size_t) == 8) {  /* with data: a map of the whole file, nothing copied */
        DR_OK(sts_dataset_get(ds, "small", 5, 1, &v, &e));
        assert_memory_equal(v.data, "\0\0\0\0", 4);
        DR_OK(sts_dataset_get(ds, "huge", 4, 1, &v, &e));
        assert_non_null(v.data);
        assert_int_equal(((const uint8_t *)v.data)[big - 1], 0);
    }
    sts_dataset_close(ds);
    if (tu_now() - t0 > 10.0) fail_msg("the sparse 16 GiB file took %.1f s", tu_now() - t0);
    tf_rmtree(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_wide_header_only),
        cmocka_unit_test(test_key_filter_with_index),
        cmocka_unit_test(test_key_filter_without_index),
        cmocka_unit_test(test_dtype_filter_nothing),
        cmocka_unit_test(test_shape_filter_index),
        cmocka_unit_test(test_get_through_index),
        cmocka_unit_test(test_get_without_index_builds_once),
        cmocka_unit_test(test_get_constant_time),
        cmocka_unit_test(test_last_win_scan_header_only),
        cmocka_unit_test(test_sparse_huge_file),
    };
    return cmocka_run_group_tests(tests, setup_root, teardown_root);
}
