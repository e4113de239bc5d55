/* test_dataset_read_errors.c - layer 9, every way a dataset can be wrong. Each case checks the
   result code, the rule, and that the message names the file (and the tensor where there is one);
   never a crash, never silently wrong data:
   - the folder: missing, empty, holding no .safetensors file; a path that is a broken file;
   - the manifest: not JSON, no shards array, a shard listed but missing, listed with the wrong
     size, listed twice, a shard_path that is not a file name of the folder; a shard that changes
     size after open;
   - shards: a corrupt header (first file: at open; later files: at the scan row or lookup that
     reads it), a truncated file, a file shorter than 8 bytes;
   - the index: a file that is not a shard of the dataset (stale), a key whose tensor is not in
     its file, dtype / shape / offsets that disagree with the shard's header, not JSON, not UTF-8,
     no "tensors", an entry
     missing a field, an unknown dtype; an index of another dataset (dataset_id not the manifest's)
     is ignored (info.index_stale), keys then found through the headers;
   - allocation failures: the k-th allocation fails for every k (open, lookups, scans): NOMEM or
     success, no leak, and every free passes the allocated size. */
#define _POSIX_C_SOURCE 200809L
#ifndef STS_TEST_LINKED  /* the Makefile links tests/sts_impl.c's object instead */
#define STS_IMPLEMENTATION
#endif
#include "../safetensors_spark.h"
#include "test_dataset_read_util.h"

static sts_dataset *must_open(const char *path, int no_index) {
    sts_dataset *ds;
    sts_error e;
    DR_OK(dr_try_open(path, no_index, &ds, &e));
    return ds;
}
/* A KV dataset of 3 shards x 2 keys (4 tensors per shard), index optional. */
static tf_names kv_dataset(char *dir, size_t cap, const char *name, int index) {
    dr_kv k;
    memset(&k, 0, sizeof k);
    k.tasks = 3;
    k.rows = 2;
    k.index = index;
    dr_fresh(dir, cap, name);
    dr_write_kv(dir, &k);
    return dr_list_shards(dir);
}
/* The byte offset of the first '{' of a shard's header JSON plus i. */
static void corrupt_header(const char *dir, const char *shard, uint64_t at, uint8_t v) {
    char p[1024];
    tf_join(p, sizeof p, dir, shard);
    dr_poke(p, 8 + at, v);
}

/* ---- the folder ---- */
static void test_missing_folder(void **state) {
    char p[256];
    sts_dataset *ds;
    sts_error e;
    (void)state;
    tf_join(p, sizeof p, dr_root, "no/such/folder");
    tu_err_check("missing folder", dr_try_open(p, 0, &ds, &e), &e, STS_ERR_IO, STS_RULE_IO, "no/such/folder", "ENOENT", NULL);
    assert_null(ds);
}
static void test_empty_folder(void **state) {
    char dir[256], p[512];
    sts_dataset *ds;
    sts_error e;
    (void)state;
    dr_fresh(dir, sizeof dir, "empty");
    assert_int_equal(mkdir(dir, 0755), 0);
    tu_err_check("empty folder", dr_try_open(dir, 0, &ds, &e), &e, STS_ERR_NOT_FOUND, STS_RULE_NOT_FOUND, "empty", NULL);
    /* only other files, hidden shards and a folder named like a shard */
    dr_write_in(dir, "README.md", "hello");
    dr_write_in(dir, ".part-00000-0000-a.safetensors.tmp-1", "x");
    dr_subdir(p, sizeof p, dir, "sub.safetensors");
    tu_err_check("no shard", dr_try_open(dir, 0, &ds, &e), &e, STS_ERR_NOT_FOUND, STS_RULE_NOT_FOUND, "empty", NULL);
    tf_rmtree(dir);
}
static void test_broken_single_file(void **state) {
    char dir[256], p[512];
    sts_dataset *ds;
    sts_error e;
    (void)state;
    dr_fresh(dir, sizeof dir, "brokenfile");
    assert_int_equal(mkdir(dir, 0755), 0);
    tf_join(p, sizeof p, dir, "x.safetensors");
    tf_write(p, "\x10\x00\x00\x00\x00\x00\x00\x00{\"a\":1}         ", 24);
    tu_err_check("broken single file", dr_try_open(p, 0, &ds, &e), &e, STS_ERR_INVALID_HEADER_DESERIALIZATION, TU_ANY_RULE, "x.safetensors", NULL);
    dr_write_str(p, "abc");
    tu_err_check("short single file", dr_try_open(p, 0, &ds, &e), &e, STS_ERR_HEADER_TOO_SMALL, STS_RULE_FILE_TOO_SMALL, "x.safetensors", NULL);
    tf_rmtree(dir);
}

/* ---- the manifest ---- */
static void test_manifest_missing_shard(void **state) {
    char dir[256], p[512], entry[512];
    tf_names sh = kv_dataset(dir, sizeof dir, "man_missing", 0);
    sts_dataset *ds;
    sts_error e;
    (void)state;
    dr_unlink_in(dir, sh.v[1]);
    tu_err_check("deleted shard", dr_try_open(dir, 0, &ds, &e), &e, STS_ERR_DATASET, STS_RULE_DATASET_MANIFEST, sh.v[1], "missing", NULL);
    assert_null(ds);
    /* a listed shard that never existed */
    tf_rmtree(dir);
    tf_names_free(&sh);
    sh = kv_dataset(dir, sizeof dir, "man_missing", 0);
    tf_join(p, sizeof p, dir, "dataset_manifest.json");
    snprintf(entry, sizeof entry, "\"shards\": [\n    {\"shard_path\": \"part-00009-0000-ghost.safetensors\", \"samples_count\": 1, \"bytes\": 120},");
    dr_edit(p, "\"shards\": [", entry);
    tu_err_check("ghost shard", dr_try_open(dir, 0, &ds, &e), &e, STS_ERR_DATASET, STS_RULE_DATASET_MANIFEST, "part-00009-0000-ghost.safetensors", NULL);
    tf_names_free(&sh);
    tf_rmtree(dir);
}
static void test_manifest_wrong_size(void **state) {
    char dir[256], p[512], from[512], to[512];
    tf_names sh = kv_dataset(dir, sizeof dir, "man_size", 1);
    sts_dataset *ds;
    sts_error e;
    int64_t size;
    (void)state;
    tf_join(p, sizeof p, dir, sh.v[2]);
    size = tf_file_size(p);
    /* the shard grew (a byte appended) */
    {
        FILE *f = fopen(p, "ab");
        assert_non_null(f);
        fputc(' ', f);
        fclose(f);
    }
    tu_err_check("grown shard", dr_try_open(dir, 0, &ds, &e), &e, STS_ERR_DATASET, STS_RULE_DATASET_MANIFEST, sh.v[2], NULL);
    assert_true(strstr(e.message, "bytes") != NULL);
    assert_int_equal(truncate(p, size), 0);
    ds = must_open(dir, 0);
    sts_dataset_close(ds);
    /* the manifest lists another size */
    tf_join(p, sizeof p, dir, "dataset_manifest.json");
    snprintf(from, sizeof from, "\"bytes\": %lld,", (long long)size);  /* crc32c follows */
    snprintf(to, sizeof to, "\"bytes\": %lld,", (long long)size + 8);
    assert_true(dr_contains(p, from));
    dr_edit(p, from, to);
    tu_err_check("manifest size", dr_try_open(dir, 0, &ds, &e), &e, STS_ERR_DATASET, STS_RULE_DATASET_MANIFEST, NULL);
    assert_true(strstr(e.message, "part-0000") != NULL);
    tf_names_free(&sh);
    tf_rmtree(dir);
}
static void test_manifest_malformed(void **state) {
    char dir[256], p[512], q[512];
    tf_names sh = kv_dataset(dir, sizeof dir, "man_bad", 0);
    sts_dataset *ds;
    sts_error e;
    size_t n;
    uint8_t *orig;
    (void)state;
    tf_join(p, sizeof p, dir, "dataset_manifest.json");
    orig = tf_read(p, &n);
    /* not JSON */
    dr_write_str(p, "{\"shards\": [");
    assert_int_equal(dr_try_open(dir, 0, &ds, &e), STS_ERR_DATASET);
    assert_true(strstr(e.message, "dataset_manifest.json") != NULL);
    dr_write_str(p, "");
    assert_int_equal(dr_try_open(dir, 0, &ds, &e), STS_ERR_DATASET);
    assert_true(strstr(e.message, "dataset_manifest.json") != NULL);
    /* JSON, but no shards array */
    dr_write_str(p, "{\"format_version\": \"1.0\"}");
    tu_err_check("no shards", dr_try_open(dir, 0, &ds, &e), &e, STS_ERR_DATASET, STS_RULE_DATASET_MANIFEST, "shards", NULL);
    dr_write_str(p, "[]");
    tu_err_check("an array", dr_try_open(dir, 0, &ds, &e), &e, STS_ERR_DATASET, STS_RULE_DATASET_MANIFEST, "shards", NULL);
    dr_write_str(p, "{\"shards\": {}}");
    tu_err_check("shards object", dr_try_open(dir, 0, &ds, &e), &e, STS_ERR_DATASET, STS_RULE_DATASET_MANIFEST, "shards", NULL);
    /* entries without shard_path or bytes, bytes not a number */
    dr_write_str(p, "{\"shards\": [{\"bytes\": 1}]}");
    tu_err_check("no shard_path", dr_try_open(dir, 0, &ds, &e), &e, STS_ERR_DATASET, STS_RULE_DATASET_MANIFEST, "shard_path", NULL);
    snprintf(q, sizeof q, "{\"shards\": [{\"shard_path\": \"%s\"}]}", sh.v[0]);
    dr_write_str(p, q);
    tu_err_check("no bytes", dr_try_open(dir, 0, &ds, &e), &e, STS_ERR_DATASET, STS_RULE_DATASET_MANIFEST, "bytes", NULL);
    snprintf(q, sizeof q, "{\"shards\": [{\"shard_path\": \"%s\", \"bytes\": \"12\"}]}", sh.v[0]);
    dr_write_str(p, q);
    tu_err_check("bytes string", dr_try_open(dir, 0, &ds, &e), &e, STS_ERR_DATASET, STS_RULE_DATASET_MANIFEST, NULL);
    snprintf(q, sizeof q, "{\"shards\": [\"%s\"]}", sh.v[0]);
    dr_write_str(p, q);
    tu_err_check("entry string", dr_try_open(dir, 0, &ds, &e), &e, STS_ERR_DATASET, STS_RULE_DATASET_MANIFEST, NULL);
    /* shard_path escaping the folder */
    {
        static const char *const bad[] = { "../x.safetensors", "/etc/passwd", "sub/x.safetensors", "..", ".", "" };
        size_t i;
        for (i = 0; i < sizeof bad / sizeof *bad; i++) {
            snprintf(q, sizeof q, "{\"shards\": [{\"shard_path\": \"%s\", \"bytes\": 10}]}", bad[i]);
            dr_write_str(p, q);
            tu_err_check(bad[i], dr_try_open(dir, 0, &ds, &e), &e, STS_ERR_DATASET, STS_RULE_DATASET_MANIFEST, NULL);
        }
        dr_write_str(p, "{\"shards\": [{\"shard_path\": \"a\\u0000b\", \"bytes\": 10}]}");
        tu_err_check("NUL in shard_path", dr_try_open(dir, 0, &ds, &e), &e, STS_ERR_DATASET, STS_RULE_DATASET_MANIFEST, NULL);
    }
    /* a shard listed twice */
    {
        int64_t size;
        char sp[512];
        tf_join(sp, sizeof sp, dir, sh.v[0]);
        size = tf_file_size(sp);
        snprintf(q, sizeof q, "{\"shards\": [{\"shard_path\": \"%s\", \"bytes\": %lld}, {\"shard_path\": \"%s\", \"bytes\": %lld}]}",
                 sh.v[0], (long long)size, sh.v[0], (long long)size);
        dr_write_str(p, q);
        tu_err_check("twice", dr_try_open(dir, 0, &ds, &e), &e, STS_ERR_DATASET, STS_RULE_DATASET_MANIFEST, sh.v[0], "twice", NULL);
        /* a minimal valid manifest of one shard: opens (other files of the folder are not part of it) */
        snprintf(q, sizeof q, "{\"shards\": [{\"shard_path\": \"%s\", \"bytes\": %lld}]}", sh.v[0], (long long)size);
        dr_write_str(p, q);
        ds = must_open(dir, 0);
        assert_int_equal(sts_dataset_describe(ds).files, 1);
        sts_dataset_close(ds);
    }
    tf_write(p, orig, n);
    free(orig);
    ds = must_open(dir, 0);
    assert_int_equal(sts_dataset_describe(ds).files, 3);
    sts_dataset_close(ds);
    tf_names_free(&sh);
    tf_rmtree(dir);
}
/* A shard that changes after open: its first data access says so, naming it. */
static void test_shard_changed_after_open(void **state) {
    char dir[256], p[512];
    tf_names sh = kv_dataset(dir, sizeof dir, "changed", 1);
    sts_dataset *ds = must_open(dir, 0);
    sts_error e;
    sts_view v;
    FILE *f;
    dr_spec other = { "k001_000__img", STS_DTYPE_U8, 2, { 3, 3 }, NULL, 4 };
    (void)state;
    /* trailing bytes: the shard no longer validates */
    tf_join(p, sizeof p, dir, sh.v[1]);
    f = fopen(p, "ab");
    assert_non_null(f);
    fputs("        ", f);
    fclose(f);
    tu_err_check("grown after open", sts_dataset_get(ds, "k001_000__img", 13, 1, &v, &e), &e, STS_ERR_METADATA_INCOMPLETE_BUFFER, STS_RULE_FILE_SIZE, sh.v[1], NULL);
    DR_OK(sts_dataset_get(ds, "k000_000__img", 13, 1, &v, &e));  /* the other shards still read */
    dr_check_kv_view(&v, 0, 0);
    sts_dataset_close(ds);
    /* replaced by a valid file of another size */
    assert_int_equal(truncate(p, tf_file_size(p) - 8), 0);
    ds = must_open(dir, 0);
    dr_write_file(dir, sh.v[2], &other, 1, NULL, 0);
    tu_err_check("replaced after open", sts_dataset_get(ds, "k002_000__img", 13, 1, &v, &e), &e, STS_ERR_DATASET, STS_RULE_DATASET_MANIFEST, sh.v[2], "changed", NULL);
    sts_dataset_close(ds);
    tf_names_free(&sh);
    tf_rmtree(dir);
}

/* ---- corrupt shards ---- */
static void test_corrupt_shard(void **state) {
    char dir[256];
    tf_names sh = kv_dataset(dir, sizeof dir, "corrupt", 1);
    sts_dataset *ds;
    sts_error e;
    sts_view v;
    sts_scan_spec sp;
    sts_scan *s;
    const sts_view *c;
    size_t nc;
    int no_index;
    (void)state;
    corrupt_header(dir, sh.v[1], 0, '[');  /* the same size: the manifest still agrees */
    for (no_index = 0; no_index < 2; no_index++) {
        ds = must_open(dir, no_index);
        /* a lookup that reads the shard (with the index: only with data; without: building the key table) */
        tu_err_check("get", sts_dataset_get(ds, "k001_000__img", 13, 1, &v, &e), &e, STS_ERR_INVALID_HEADER_DESERIALIZATION, TU_ANY_RULE, sh.v[1], NULL);
        if (!no_index) DR_OK(sts_dataset_get(ds, "k000_001__emb", 13, 1, &v, &e));
        /* a wide scan: the first row, then the error at the second file */
        memset(&sp, 0, sizeof sp);
        sp.with_data = no_index;
        DR_OK(sts_scan_open(ds, &sp, &s, &e));
        DR_OK(sts_scan_next(s, &c, &nc, &e));
        assert_true(nc > 0);
        tu_err_check("wide", sts_scan_next(s, &c, &nc, &e), &e, STS_ERR_INVALID_HEADER_DESERIALIZATION, TU_ANY_RULE, sh.v[1], NULL);
        assert_int_equal(nc, 0);
        sts_scan_close(s);
        /* a long scan over that file alone */
        sp.long_form = 1;
        sp.file_begin = 1;
        sp.file_end = 2;
        DR_OK(sts_scan_open(ds, &sp, &s, &e));
        tu_err_check("long", sts_scan_next(s, &c, &nc, &e), &e, STS_ERR_INVALID_HEADER_DESERIALIZATION, TU_ANY_RULE, sh.v[1], NULL);
        sts_scan_close(s);
        sts_dataset_close(ds);
    }
    /* the first shard corrupt: inferring the schema from it fails at open, naming it */
    corrupt_header(dir, sh.v[0], 3, 0xff);
    tu_err_check("first shard", dr_try_open(dir, 1, &ds, &e), &e, STS_ERR_INVALID_HEADER, STS_RULE_HEADER_UTF8, sh.v[0], NULL);
    tf_names_free(&sh);
    tf_rmtree(dir);
}
static void test_truncated_shards(void **state) {
    char dir[256], p[512];
    dr_spec a = { "t", STS_DTYPE_F32, 1, { 4 }, NULL, 1 };
    sts_dataset *ds;
    sts_error e;
    sts_view v;
    dr_rows rs;
    sts_scan_spec sp;
    int64_t size;
    (void)state;
    dr_fresh(dir, sizeof dir, "truncated");
    assert_int_equal(mkdir(dir, 0755), 0);
    dr_write_file(dir, "a.safetensors", &a, 1, NULL, 0);
    a.name = "u";
    dr_write_file(dir, "b.safetensors", &a, 1, NULL, 0);
    tf_join(p, sizeof p, dir, "b.safetensors");
    size = tf_file_size(p);
    assert_int_equal(truncate(p, size - 1), 0);  /* the data ends early */
    ds = must_open(dir, 0);
    memset(&sp, 0, sizeof sp);
    tu_err_check("long scan", dr_long_scan(ds, &sp, &rs, &e), &e, STS_ERR_METADATA_INCOMPLETE_BUFFER, STS_RULE_FILE_SIZE, "b.safetensors", NULL);
    assert_int_equal(rs.n, 1);  /* a.safetensors came first */
    dr_rows_free(&rs);
    tu_err_check("get", sts_dataset_get(ds, "t", 1, 1, &v, &e), &e, STS_ERR_METADATA_INCOMPLETE_BUFFER, STS_RULE_FILE_SIZE, "b.safetensors", NULL);
    sts_dataset_close(ds);
    assert_int_equal(truncate(p, 5), 0);  /* shorter than the header length */
    ds = must_open(dir, 0);
    tu_err_check("tiny", dr_long_scan(ds, &sp, &rs, &e), &e, STS_ERR_HEADER_TOO_SMALL, STS_RULE_FILE_TOO_SMALL, "b.safetensors", NULL);
    dr_rows_free(&rs);
    sts_dataset_close(ds);
    assert_int_equal(truncate(p, 0), 0);
    ds = must_open(dir, 0);
    tu_err_check("empty", dr_long_scan(ds, &sp, &rs, &e), &e, STS_ERR_HEADER_TOO_SMALL, STS_RULE_FILE_TOO_SMALL, "b.safetensors", NULL);
    dr_rows_free(&rs);
    sts_dataset_close(ds);
    tf_rmtree(dir);
}

/* ---- the index ---- */
static void index_path(char *p, size_t cap, const char *dir) { tf_join(p, cap, dir, "_tensor_index.json"); }
/* Replaces the value of `field` inside the "tensors" entry of key (the first '"key":{' ...). */
static void edit_entry(const char *dir, const char *key, const char *field, const char *value) {
    char p[512], needle[256], *at, *f, *end;
    size_t n;
    uint8_t *text;
    FILE *out;
    index_path(p, sizeof p, dir);
    text = tf_read(p, &n);
    snprintf(needle, sizeof needle, "\"%s\":{", key);
    at = strstr((char *)text, needle);
    assert_non_null(at);
    snprintf(needle, sizeof needle, "\"%s\":", field);
    f = strstr(at, needle);
    assert_non_null(f);
    f += strlen(needle);
    end = f;
    if (*end == '[') end = strchr(end, ']') + 1;
    else if (*end == '"') end = strchr(end + 1, '"') + 1;
    else while (*end != ',' && *end != '}') end++;
    out = fopen(p, "wb");
    assert_non_null(out);
    fwrite(text, 1, (size_t)(f - (char *)text), out);
    fputs(value, out);
    fwrite(end, 1, n - (size_t)(end - (char *)text), out);
    fclose(out);
    free(text);
}
static void test_index_stale_file(void **state) {
    char dir[256];
    tf_names sh = kv_dataset(dir, sizeof dir, "stale_file", 1);
    sts_dataset *ds;
    sts_error e;
    (void)state;
    /* without a manifest the folder lists the shards; one the index names is gone */
    dr_unlink_in(dir, "dataset_manifest.json");
    ds = must_open(dir, 0);
    assert_int_equal(sts_dataset_describe(ds).has_index, 1);
    sts_dataset_close(ds);
    dr_unlink_in(dir, sh.v[1]);
    tu_err_check("deleted shard", dr_try_open(dir, 0, &ds, &e), &e, STS_ERR_DATASET, STS_RULE_DATASET_INDEX, sh.v[1], "stale", NULL);
    /* the index ignored on request: the folder opens */
    ds = must_open(dir, 1);
    assert_int_equal(sts_dataset_describe(ds).files, 2);
    sts_dataset_close(ds);
    tf_names_free(&sh);
    tf_rmtree(dir);
}
static void test_index_file_outside(void **state) {
    char dir[256];
    tf_names sh = kv_dataset(dir, sizeof dir, "stale_outside", 1);
    sts_dataset *ds;
    sts_error e;
    (void)state;
    edit_entry(dir, "k002_001__emb", "file", "\"../elsewhere.safetensors\"");
    tu_err_check("outside", dr_try_open(dir, 0, &ds, &e), &e, STS_ERR_DATASET, STS_RULE_DATASET_INDEX, "elsewhere.safetensors", NULL);
    tf_names_free(&sh);
    tf_rmtree(dir);
}
/* The index names a tensor its file does not hold: a lookup with data and a key-filtered long scan
   must say so; neither may answer with another tensor's bytes or silently drop the key. */
static void test_index_tensor_missing(void **state) {
    char dir[256], p[512];
    tf_names sh = kv_dataset(dir, sizeof dir, "stale_tensor", 1);
    sts_dataset *ds;
    sts_error e;
    sts_view v;
    (void)state;
    index_path(p, sizeof p, dir);
    dr_edit(p, "\"k001_000__img\":{\"file\"", "\"ghost__img\":{\"file\"");
    ds = must_open(dir, 0);
    tu_err_check("get", sts_dataset_get(ds, "ghost__img", 10, 1, &v, &e), &e, STS_ERR_DATASET, STS_RULE_DATASET_INDEX, sh.v[1], "ghost__img", NULL);
    sts_dataset_close(ds);
    tf_names_free(&sh);
    tf_rmtree(dir);
}
static void test_index_tensor_missing_long_scan(void **state) {
    char dir[256], p[512];
    tf_names sh = kv_dataset(dir, sizeof dir, "stale_tensor_scan", 1);
    sts_dataset *ds;
    sts_error e;
    sts_scan_spec sp;
    dr_rows rs;
    const char *keys[1] = { "ghost__img" };
    sts_result r;
    (void)state;
    index_path(p, sizeof p, dir);
    dr_edit(p, "\"k001_000__img\":{\"file\"", "\"ghost__img\":{\"file\"");
    ds = must_open(dir, 0);
    memset(&sp, 0, sizeof sp);
    sp.keys = keys;
    sp.nkeys = 1;
    sp.with_data = 1;
    r = dr_long_scan(ds, &sp, &rs, &e);
    {
        char why[600] = "";
        size_t files = rs.files, n = rs.n;
        dr_rows_free(&rs);
        sts_dataset_close(ds);
        if (r == STS_OK)
            snprintf(why, sizeof why, "a long scan for ghost__img, which the index places in %s (planned %zu file(s)), gave %zu row(s) and no error: "
                     "the stale index went unnoticed", sh.v[1], files, n);
        tf_names_free(&sh);
        tf_rmtree(dir);
        if (why[0]) fail_msg("%s", why);
    }
    tu_err_check("long scan", r, &e, STS_ERR_DATASET, STS_RULE_DATASET_INDEX, "ghost__img", NULL);
}
static void disagree_case(const char *what, const char *key, const char *field, const char *value) {
    char dir[256];
    tf_names sh = kv_dataset(dir, sizeof dir, "disagree", 1);
    sts_dataset *ds;
    sts_error e;
    sts_view v;
    dr_rows rs;
    sts_scan_spec sp;
    uint32_t t = 0, r = 0;
    edit_entry(dir, key, field, value);
    ds = must_open(dir, 0);
    assert_true(dr_kv_parse(key, strlen(key), &t, &r));
    tu_err_check(what, sts_dataset_get(ds, key, strlen(key), 1, &v, &e), &e, STS_ERR_DATASET, STS_RULE_DATASET_INDEX, sh.v[t], key, NULL);
    /* scans read the header itself: the truth */
    memset(&sp, 0, sizeof sp);
    sp.with_data = 1;
    DR_OK(dr_long_scan(ds, &sp, &rs, &e));
    assert_int_equal(rs.n, 12);
    dr_rows_free(&rs);
    sts_dataset_close(ds);
    tf_names_free(&sh);
    tf_rmtree(dir);
}
static void test_index_disagrees_dtype(void **state) {
    (void)state;
    disagree_case("dtype", "k001_000__img", "dtype", "\"I8\"");
    disagree_case("dtype, same size", "k002_001__emb", "dtype", "\"I32\"");
}
static void test_index_disagrees_shape(void **state) {
    (void)state;
    disagree_case("shape, same size", "k001_000__img", "shape", "[9,1]");
    disagree_case("rank", "k001_000__img", "shape", "[9]");
    disagree_case("rank 0", "k000_001__emb", "shape", "[]");
}
static void test_index_disagrees_offsets(void **state) {
    (void)state;
    disagree_case("offsets shifted", "k001_001__emb", "data_offsets", "[1,13]");
    disagree_case("offsets, another tensor's", "k001_001__emb", "data_offsets", "[0,12]");
    disagree_case("offsets, wrong size", "k000_000__emb", "data_offsets", "[0,16]");
}
/* A file's header is checked against all of its index entries once, at the first lookup with data
   of that file, not at each lookup. Whatever comes first (a good key of the file or the bad one),
   the bad key is reported every time with the code, rule and message of a per-lookup check, the
   file's other keys still give their own bytes, other files are untouched, and a lookup without
   data still answers from the index. */
static void per_file_case(const char *what, const char *bad, const char *field, const char *value, const char *msg, int bad_first) {
    char dir[256], p[512];
    tf_names sh = kv_dataset(dir, sizeof dir, "per_file", 1);
    const char *lookup = bad;
    sts_dataset *ds;
    sts_error e;
    sts_view v;
    int round;
    static const struct { const char *key; uint32_t t, r; } good[] = {
        { "k001_000__emb", 1, 0 }, { "k001_001__img", 1, 1 }, { "k001_001__emb", 1, 1 }, { "k000_000__img", 0, 0 }, { "k002_001__emb", 2, 1 },
    };
    size_t g;
    if (field) edit_entry(dir, bad, field, value);
    else {  /* the key names a tensor its file does not hold */
        index_path(p, sizeof p, dir);
        dr_edit(p, "\"k001_000__img\":{\"file\"", "\"ghost__img\":{\"file\"");
        lookup = "ghost__img";
    }
    ds = must_open(dir, 0);
    for (round = 0; round < 3; round++) {
        if (round > 0 || bad_first) {
            char label[160];
            snprintf(label, sizeof label, "%s (%s first, round %d)", what, bad_first ? "bad key" : "good key", round);
            tu_err_check(label, sts_dataset_get(ds, lookup, strlen(lookup), 1, &v, &e), &e, STS_ERR_DATASET, STS_RULE_DATASET_INDEX, sh.v[1], lookup, msg, NULL);
        }
        for (g = 0; g < sizeof good / sizeof *good; g++) {
            DR_OK(sts_dataset_get(ds, good[g].key, strlen(good[g].key), 1, &v, &e));
            assert_int_equal(v.file, good[g].t);
            dr_check_kv_view(&v, good[g].t, good[g].r);
        }
    }
    DR_OK(sts_dataset_get(ds, lookup, strlen(lookup), 0, &v, &e));  /* without data: the index's word */
    assert_int_equal(v.file, 1);
    assert_null(v.data);
    assert_int_equal(sts_dataset_stats(ds).files_mapped, 3);
    sts_dataset_close(ds);
    tf_names_free(&sh);
    tf_rmtree(dir);
}
static void test_index_disagreement_checked_per_file(void **state) {
    int bad_first;
    (void)state;
    for (bad_first = 0; bad_first < 2; bad_first++) {
        per_file_case("no such tensor", "k001_000__img", NULL, NULL, "which has no such tensor", bad_first);
        per_file_case("dtype", "k001_000__img", "dtype", "\"I8\"", "about tensor", bad_first);
        per_file_case("shape, same size", "k001_000__img", "shape", "[3,2]", "about the shape of", bad_first);
        per_file_case("rank", "k001_000__img", "shape", "[6]", "about tensor", bad_first);
        per_file_case("offsets", "k001_000__img", "data_offsets", "[1,7]", "about tensor", bad_first);
    }
}
static void test_index_file_moved(void **state) {
    char dir[256], val[512];
    tf_names sh = kv_dataset(dir, sizeof dir, "moved", 1);
    sts_dataset *ds;
    sts_error e;
    sts_view v;
    (void)state;
    snprintf(val, sizeof val, "\"%s\"", sh.v[0]);   /* k002_000__emb is in shard 2; the index says shard 0 */
    edit_entry(dir, "k002_000__emb", "file", val);
    ds = must_open(dir, 0);
    tu_err_check("moved", sts_dataset_get(ds, "k002_000__emb", 13, 1, &v, &e), &e, STS_ERR_DATASET, STS_RULE_DATASET_INDEX, sh.v[0], "k002_000__emb", NULL);
    sts_dataset_close(ds);
    tf_names_free(&sh);
    tf_rmtree(dir);
}
/* An index whose dataset_id is not the manifest's belongs to another dataset (an overwrite
   interrupted between its index and its manifest): the manifest is the truth, the index is ignored
   (info.index_stale) and keys are found through the headers, with the right values. */
static void check_stale_ignored(const char *what, const char *dir) {
    sts_dataset *ds = must_open(dir, 0);
    sts_dataset_info info = sts_dataset_describe(ds);
    sts_error e;
    sts_view v;
    dr_rows rs;
    sts_scan_spec sp;
    const char *keys[1] = { "k002_001__img" };
    if (info.has_index || !info.index_stale) fail_msg("%s: has_index %d, index_stale %d", what, info.has_index, info.index_stale);
    DR_OK(sts_dataset_get(ds, "k002_001__img", 13, 1, &v, &e));
    assert_int_equal(v.file, 2);
    dr_check_kv_view(&v, 2, 1);
    memset(&sp, 0, sizeof sp);
    sp.keys = keys;
    sp.nkeys = 1;
    sp.with_data = 1;
    DR_OK(dr_long_scan(ds, &sp, &rs, &e));
    assert_int_equal(rs.n, 1);
    assert_int_equal(rs.st.files_opened, 3);  /* no index: every header */
    dr_rows_free(&rs);
    sts_dataset_close(ds);
}
static void test_index_dataset_id(void **state) {
    char dir[256], other[256], p[512], q[512];
    tf_names sh = kv_dataset(dir, sizeof dir, "dsid", 1), sh2;
    dr_kv k;
    size_t n;
    uint8_t *text;
    char *id;
    (void)state;
    index_path(p, sizeof p, dir);
    text = tf_read(p, &n);
    id = strstr((char *)text, "\"dataset_id\":\"");
    assert_non_null(id);
    id += 14;
    id[0] = id[0] == 'a' ? 'b' : 'a';   /* another id */
    tf_write(p, text, n);
    check_stale_ignored("another dataset_id", dir);
    id[-4] = 'X';   /* "dataset_iX": no id at all, while the manifest has one */
    tf_write(p, text, n);
    check_stale_ignored("no dataset_id", dir);
    free(text);
    /* the index of another dataset (other shard names, other keys) */
    memset(&k, 0, sizeof k);
    k.tasks = 2;
    k.rows = 5;
    k.index = 1;
    dr_fresh(other, sizeof other, "dsid_other");
    dr_write_kv(other, &k);
    sh2 = dr_list_shards(other);
    index_path(q, sizeof q, other);
    text = tf_read(q, &n);
    tf_write(p, text, n);
    free(text);
    check_stale_ignored("another dataset's index", dir);
    tf_names_free(&sh2);
    tf_rmtree(other);
    tf_names_free(&sh);
    tf_rmtree(dir);
}
static void test_index_malformed(void **state) {
    char dir[256], p[512];
    tf_names sh = kv_dataset(dir, sizeof dir, "index_bad", 1);
    sts_dataset *ds;
    sts_error e;
    size_t n, i;
    uint8_t *orig;
    static const char *const bad[] = {
        "",
        "{",
        "[]",
        "{\"metadata\":{},\"weight_map\":{}}",                         /* no tensors */
        "{\"tensors\":[]}",
        "{\"tensors\":{\"a\":1}}",
        "{\"tensors\":{\"a\":{}}}",
        "{\"tensors\":{\"a\":{\"file\":\"x\",\"dtype\":\"U8\",\"shape\":[1]}}}",
        "{\"tensors\":{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}}}",
        "{\"tensors\":{}} x",
        "{\"tensors\":{}}{}",
        "{\"tensors\":{\"a\":{\"file\":3}}}",
    };
    (void)state;
    index_path(p, sizeof p, dir);
    orig = tf_read(p, &n);
    dr_unlink_in(dir, "dataset_manifest.json");  /* no dataset_id to compare with */
    for (i = 0; i < sizeof bad / sizeof *bad; i++) {
        sts_result r;
        dr_write_str(p, bad[i]);
        r = dr_try_open(dir, 0, &ds, &e);
        if (r != STS_ERR_DATASET) fail_msg("index %zu (%s): %s: %s", i, bad[i], sts_result_name(r), e.message);
        assert_non_null(strstr(e.message, "_tensor_index.json"));
        assert_null(ds);
    }
    {   /* an unknown dtype, a negative dimension, offsets backwards, not UTF-8 */
        char q[1024];
        static const char *const entries[] = {
            "{\"file\":\"%s\",\"dtype\":\"F128\",\"shape\":[1],\"data_offsets\":[0,1]}",
            "{\"file\":\"%s\",\"dtype\":\"U8\",\"shape\":[-1],\"data_offsets\":[0,1]}",
            "{\"file\":\"%s\",\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[1,0]}",
            "{\"file\":\"%s\",\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0]}",
            "{\"file\":\"%s\",\"dtype\":\"U8\",\"shape\":[1.5],\"data_offsets\":[0,1]}",
            "{\"file\":\"%s\",\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,18446744073709551616]}",
        };
        for (i = 0; i < sizeof entries / sizeof *entries; i++) {
            char entry[512];
            sts_result r;
            snprintf(entry, sizeof entry, entries[i], sh.v[0]);
            snprintf(q, sizeof q, "{\"metadata\":{},\"tensors\":{\"a\":%s}}", entry);
            dr_write_str(p, q);
            r = dr_try_open(dir, 0, &ds, &e);
            if (r != STS_ERR_DATASET) fail_msg("entry %zu: %s: %s", i, sts_result_name(r), e.message);
            assert_non_null(strstr(e.message, "_tensor_index.json"));
        }
        dr_write_str(p, "{\"tensors\":{\"\xff\":{}}}");
        tu_err_check("not UTF-8", dr_try_open(dir, 0, &ds, &e), &e, STS_ERR_DATASET, STS_RULE_DATASET_INDEX, "_tensor_index.json", NULL);
        dr_write_str(p, "\x92\x92\x92\x92{}");  /* continuation bytes first: the very first byte is the verdict */
        tu_err_check("not UTF-8 from its first byte", dr_try_open(dir, 0, &ds, &e), &e, STS_ERR_DATASET,
                     STS_RULE_DATASET_INDEX, "not UTF-8 at byte 0", NULL);
        /* entries in the writer's form (the fast reader) with a bad byte in a string: its exact byte,
           as a check of the whole text gives; a good character there is read */
        {
            static const char *const forms[] = {
                "{\"tensors\":{\"a\":{\"file\":\"%s\",\"tensor\":\"x\xC3(\",\"dtype\":\"U8\",\"shape\":[1],"
                "\"data_offsets\":[0,1]}}}",
                "{\"tensors\":{\"a\":{\"file\":\"%s\",\"tensor\":\"x\xED\xA0\x80\",\"dtype\":\"U8\",\"shape\":[1],"
                "\"data_offsets\":[0,1]}}}",
                "{\"tensors\":{\"a\":{\"file\":\"%s\",\"dtype\":\"U8\xF4\x90\x80\x80\",\"shape\":[1],"
                "\"data_offsets\":[0,1]}}}",
                "{\"tensors\":{\"a\":{\"file\":\"%s\",\"tensor\":\"x\xC3\xA9\",\"dtype\":\"U8\",\"shape\":[1],"
                "\"data_offsets\":[0,1]}}}",
            };
            for (i = 0; i < sizeof forms / sizeof *forms; i++) {
                char want[64];
                const char *b;
                sts_result r;
                snprintf(q, sizeof q, forms[i], sh.v[0]);
                dr_write_str(p, q);
                r = dr_try_open(dir, 0, &ds, &e);
                if (i == 3) {
                    if (r != STS_OK) fail_msg("a good character: %s", e.message);
                    sts_dataset_close(ds);
                    continue;
                }
                for (b = q; (unsigned char)*b < 0x80; b++) {}  /* the sequence that breaks starts here */
                snprintf(want, sizeof want, "not UTF-8 at byte %zu", (size_t)(b - q));
                tu_err_check("a bad byte in an entry", r, &e, STS_ERR_DATASET, STS_RULE_DATASET_INDEX, want, NULL);
            }
        }
    }
    /* a hand-written index with escapes, unknown fields and a key that is not the tensor's name */
    {
        char q[2048];
        sts_view v;
        snprintf(q, sizeof q,
                 "{\"weight_map\":{}, \"extra\":[1,{\"x\":null}],\"tensors\":{"
                 "\"alias\\u0041\":{\"tensor\":\"k000_000\\u005f_img\",\"file\":\"%s\",\"dtype\":\"U8\",\"shape\":[2,3],\"data_offsets\":[24,30],\"note\":{}},"
                 "\"k000_000__emb\":{\"file\":\"%s\",\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,12]}}}",
                 sh.v[0], sh.v[0]);
        dr_write_str(p, q);
        ds = must_open(dir, 0);
        assert_int_equal(sts_dataset_describe(ds).has_index, 1);
        {
            sts_result r = sts_dataset_get(ds, "aliasA", 6, 1, &v, &e);
            uint64_t b;
            if (r != STS_OK) fail_msg("aliasA: %s", e.message);
            assert_int_equal(v.key_len, 6);
            assert_memory_equal(v.key, "aliasA", 6);
            assert_int_equal(v.dtype, STS_DTYPE_U8);
            assert_int_equal(v.nbytes, 6);
            for (b = 0; b < 6; b++) assert_int_equal(((const uint8_t *)v.data)[b], dr_kv_byte(0, 0, b));
            DR_OK(sts_dataset_get(ds, "k000_000__emb", 13, 1, &v, &e));
            dr_check_kv_view(&v, 0, 0);
            tu_err_check("the name is not a key", sts_dataset_get(ds, "k000_000__img", 13, 0, &v, &e), &e, STS_ERR_NOT_FOUND, STS_RULE_NOT_FOUND, NULL);
        }
        sts_dataset_close(ds);
    }
    free(orig);
    tf_names_free(&sh);
    tf_rmtree(dir);
}

/* The index's UTF-8 is checked in its strings as they are parsed (its pages given back behind the
   parser), and the rest of the text when the parse stops early: the verdict must be the one a check
   of the whole text gives. Characters of 2 and 4 bytes across
   the 16 MiB mark (where a windowed check once split the text) are valid; a truncated character there, a run of continuation bytes across it,
   and a bad byte far past a JSON error or in a stale index are reported at their exact byte. */
#define W16 ((size_t)16 << 20)
static void utf8_index_case(const char *dir, const char *what, const uint8_t *tail, size_t tail_len, size_t tail_at,
                            const char *head, int stale, long long want_bad) {
    char p[512];
    size_t n = tail_at + tail_len + 64, hl = strlen(head), i;
    uint8_t *t = (uint8_t *)malloc(n);
    sts_dataset *ds;
    sts_error e;
    sts_result r;
    assert_non_null(t);
    memcpy(t, head, hl);                        /* ... "pad":" */
    for (i = hl; i < tail_at; i++) t[i] = 'a';
    memcpy(t + tail_at, tail, tail_len);
    i = tail_at + tail_len;
    i += (size_t)sprintf((char *)t + i, "\",\"tensors\":{}}");
    index_path(p, sizeof p, dir);
    tf_write(p, t, i);
    free(t);
    r = dr_try_open(dir, 0, &ds, &e);
    if (want_bad < 0) {
        if (r != STS_OK) fail_msg("%s: %s", what, e.message);
        assert_int_equal(sts_dataset_describe(ds).has_index, !stale);
        assert_int_equal(sts_dataset_describe(ds).index_stale, stale);
        sts_dataset_close(ds);
    } else {
        char at[64];
        snprintf(at, sizeof at, "not UTF-8 at byte %lld", want_bad);
        tu_err_check(what, r, &e, STS_ERR_DATASET, STS_RULE_DATASET_INDEX, "_tensor_index.json", at, NULL);
        assert_true(e.offset == (uint64_t)want_bad);
    }
}
static void test_index_utf8_windows(void **state) {
    char dir[256];
    tf_names sh = kv_dataset(dir, sizeof dir, "utf8_windows", 1);
    static const char *const head = "{\"metadata\":{\"dataset_id\":\"%s\"},\"pad\":\"";
    char h[256], hs[256];
    const uint8_t two[] = { 0xC3, 0xA9 }, four[] = { 0xF0, 0x9F, 0x98, 0x80 }, cut[] = { 0xC3, 'A' }, run[] = { 0xF0, 0x9F, 0x98, 0x80, 0x80, 0x80 };
    const uint8_t late[] = { 'x', 0xFF };
    size_t off;
    char *id;
    (void)state;
    {   /* the manifest's dataset_id, so the index is current (or, given another, stale) */
        char mp[512];
        size_t n;
        uint8_t *m;
        char *q;
        tf_join(mp, sizeof mp, dir, "dataset_manifest.json");
        m = tf_read(mp, &n);
        q = strstr((char *)m, "\"dataset_id\":");
        assert_non_null(q);
        q = strchr(q + 13, '"') + 1;
        id = (char *)malloc(64);
        assert_non_null(id);
        memcpy(id, q, (size_t)(strchr(q, '"') - q));
        id[strchr(q, '"') - q] = 0;
        free(m);
    }
    snprintf(h, sizeof h, head, id);
    snprintf(hs, sizeof hs, head, "another-dataset");
    for (off = 0; off < 4; off++) {  /* every split of a character by the mark */
        utf8_index_case(dir, "2-byte character across the mark", two, 2, W16 - 1 + (off & 1), h, 0, -1);
        utf8_index_case(dir, "4-byte character across the mark", four, 4, W16 - off, h, 0, -1);
    }
    utf8_index_case(dir, "truncated character at the mark", cut, 2, W16 - 1, h, 0, (long long)(W16 - 1));
    utf8_index_case(dir, "continuation bytes across the mark", run, 6, W16 - 4, h, 0, (long long)(W16));
    utf8_index_case(dir, "continuation bytes from the mark", run, 6, W16 - 2, h, 0, (long long)(W16 + 2));
    utf8_index_case(dir, "a bad byte past the mark", late, 2, W16 + 4321, h, 0, (long long)(W16 + 4322));
    utf8_index_case(dir, "a stale index, valid", two, 2, W16 + 10, hs, 1, -1);
    utf8_index_case(dir, "a stale index, not UTF-8", late, 2, W16 + 10, hs, 1, (long long)(W16 + 11));
    /* a JSON error near the start, a bad byte 16 MiB later: the UTF-8 verdict, as before */
    utf8_index_case(dir, "JSON error first", late, 2, W16 + 99, "{\"tensors\":{}, x \"", 0, (long long)(W16 + 100));
    free(id);
    tf_names_free(&sh);
    tf_rmtree(dir);
}
/* The pages behind the parser are given back (8 MiB at a time, on page boundaries) and the UTF-8
   verdict of a parse that stops later starts where they end, which can be inside a character: a
   string of 3-byte characters over 9 MiB, every split of a character by the page boundary, then
   a JSON error (the verdict: JSON, no false UTF-8 error) or a bad byte (reported at its byte). */
static void test_index_utf8_after_drop(void **state) {
    char dir[256], p[512];
    tf_names sh = kv_dataset(dir, sizeof dir, "utf8_drop", 1);
    size_t chars = ((size_t)9 << 20) / 3, shift, i;
    int bad;
    (void)state;
    index_path(p, sizeof p, dir);
    for (shift = 0; shift < 3; shift++)
        for (bad = 0; bad <= 1; bad++) {
            size_t n = chars * 3 + 256, at;
            uint8_t *t = (uint8_t *)malloc(n);
            sts_dataset *ds;
            sts_error e;
            sts_result r;
            char want[64];
            assert_non_null(t);
            at = (size_t)sprintf((char *)t, "{\"p\":\"%.*s", (int)shift, "xxx");
            for (i = 0; i < chars; i++, at += 3) memcpy(t + at, "\xE2\x82\xAC", 3);  /* U+20AC */
            at += (size_t)sprintf((char *)t + at, "\",\"q\":\"x\",\"r\":");
            if (bad) {
                t[at] = 0xFF;
                snprintf(want, sizeof want, "not UTF-8 at byte %zu", at);
                at++;
            }
            at += (size_t)sprintf((char *)t + at, " nope}");
            tf_write(p, t, at);
            free(t);
            r = dr_try_open(dir, 0, &ds, &e);
            if (bad) tu_err_check("a bad byte after the pages given back", r, &e, STS_ERR_DATASET,
                                  STS_RULE_DATASET_INDEX, "_tensor_index.json", want, NULL);
            else {
                tu_err_check("a JSON error after the pages given back", r, &e, STS_ERR_DATASET, STS_RULE_DATASET_INDEX,
                             "expected a value", NULL);
                if (strstr(e.message, "UTF-8")) fail_msg("shift %zu: %s", shift, e.message);
            }
        }
    tf_names_free(&sh);
    tf_rmtree(dir);
}
/* Any valid JSON spelling of the index's strings is read as its value: a file name or a dtype
   written with escapes (Python's json.dump escapes every non-ASCII character, for one) must
   not make the index "stale" or the dtype "unknown". */
static void test_index_escaped_strings(void **state) {
    char dir[256], p[512], q[2048], file_esc[300];
    tf_names sh = kv_dataset(dir, sizeof dir, "index_esc", 1);
    sts_dataset *ds;
    sts_error e;
    sts_view v;
    sts_result r;
    (void)state;
    index_path(p, sizeof p, dir);
    dr_unlink_in(dir, "dataset_manifest.json");
    snprintf(file_esc, sizeof file_esc, "\\u0070%s", sh.v[0] + 1);  /* "\u0070art-..." = "part-..." */
    snprintf(q, sizeof q, "{\"tensors\":{\"k000_000__emb\":{\"file\":\"%s\",\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,12]},"
             "\"k000_001__emb\":{\"file\":\"%s\",\"dtype\":\"\\u0046\\u0033\\u0032\",\"shape\":[3],\"data_offsets\":[12,24]}}}", file_esc, sh.v[0]);
    dr_write_str(p, q);
    r = dr_try_open(dir, 0, &ds, &e);
    if (r != STS_OK) {
        tf_names_free(&sh);
        tf_rmtree(dir);
        fail_msg("an index with an escaped file name and an escaped dtype: %s", e.message);
    }
    DR_OK(sts_dataset_get(ds, "k000_000__emb", 13, 1, &v, &e));
    dr_check_kv_view(&v, 0, 0);
    DR_OK(sts_dataset_get(ds, "k000_001__emb", 13, 1, &v, &e));
    dr_check_kv_view(&v, 0, 1);
    sts_dataset_close(ds);
    tf_names_free(&sh);
    tf_rmtree(dir);
}

/* ---- allocation failures ----
   The k-th allocation fails, for every k until a run needs fewer: each call gives NOMEM or
   succeeds, nothing leaks, every free and realloc passes the size that was allocated (the
   allocator hooks receive sizes; an arena or a sized allocator depends on them), and a current
   index is never dropped as "stale" because an allocation failed while reading it. */
/* One run; returns a description of the first problem, or NULL. */
static const char *alloc_run(const char *dir, const sts_read_config *cfg, int has_index, size_t fail_at, int *failed, char *why, size_t cap) {
    tu_alloc a;
    sts_options o;
    sts_dataset *ds = NULL;
    sts_error e;
    sts_result r;
    o = tu_alloc_opts(&a, NULL);
    a.fail_at = (long)fail_at;
    why[0] = 0;
    r = sts_dataset_open(dir, cfg, &o, &ds, &e);
    if (r != STS_OK && r != STS_ERR_NOMEM) snprintf(why, cap, "open: %s", e.message);
    if (r == STS_OK && has_index && !cfg->no_index && (!sts_dataset_describe(ds).has_index || sts_dataset_describe(ds).index_stale))
        snprintf(why, cap, "open succeeded but ignored the (current) index: has_index %d, index_stale %d",
                 sts_dataset_describe(ds).has_index, sts_dataset_describe(ds).index_stale);
    if (r == STS_OK) {
        sts_view v;
        sts_scan_spec sp;
        sts_scan *s;
        int pass;
        r = sts_dataset_get(ds, "k001_001__img", 13, 1, &v, &e);
        if (r != STS_OK && r != STS_ERR_NOMEM && r != STS_ERR_NOT_FOUND) snprintf(why, cap, "get: %s", e.message);
        for (pass = 0; pass < 3 && !why[0]; pass++) {
            const char *keys[1] = { "k002_000__emb" };
            memset(&sp, 0, sizeof sp);
            sp.long_form = pass != 2;
            sp.with_data = 1;
            if (pass == 1) { sp.keys = keys; sp.nkeys = 1; }
            r = sts_scan_open(ds, &sp, &s, &e);
            if (r == STS_OK) {
                const sts_view *c;
                size_t nc;
                while ((r = sts_scan_next(s, &c, &nc, &e)) == STS_OK && nc) {}
                sts_scan_close(s);
            }
            if (r != STS_OK && r != STS_ERR_NOMEM) snprintf(why, cap, "scan %d: %s", pass, e.message);
        }
        sts_dataset_close(ds);
    }
    *failed = a.failed != 0;
    if (!why[0] && (a.bytes || a.blocks)) snprintf(why, cap, "%lld bytes in %ld blocks left allocated", (long long)a.bytes, a.blocks);
    if (!why[0] && a.bad) snprintf(why, cap, "%ld allocator call(s) broke the contract, the first: %s", a.bad, a.why);
    return why[0] ? why : NULL;
}
static void test_alloc_failures(void **state) {
    char kv[256], lw[256], batch[256], why[512], first[3000] = "";
    tf_names a, b;
    dr_kv k;
    dr_batch bt;
    static const uint64_t any2[2] = { STS_DIM_ANY, STS_DIM_ANY };
    sts_schema_column sc[2];
    struct { const char *dir; int infer, no_index, explicit_schema; } cases[6];
    size_t c, runs = 0;
    (void)state;
    a = kv_dataset(kv, sizeof kv, "alloc_kv", 1);
    memset(&k, 0, sizeof k);
    k.tasks = 3; k.rows = 2; k.last_win = 1; k.dup_every = 1;
    dr_fresh(lw, sizeof lw, "alloc_lw");
    dr_write_kv(lw, &k);
    memset(&bt, 0, sizeof bt);
    bt.tasks = 1; bt.rows_per_task[0] = 5; bt.batch_size = 2;
    dr_fresh(batch, sizeof batch, "alloc_batch");
    dr_write_batch(batch, &bt);
    b = dr_list_shards(batch);
    memset(sc, 0, sizeof sc);
    sc[0].name = "k000_000__img"; sc[0].name_len = 13; sc[0].has_dtype = 1; sc[0].dtype = STS_DTYPE_U8; sc[0].has_shape = 1; sc[0].rank = 2; sc[0].shape = any2;
    sc[1].name = "absent"; sc[1].name_len = 6;
    cases[0].dir = kv; cases[0].infer = 1; cases[0].no_index = 0; cases[0].explicit_schema = 0;
    cases[1].dir = kv; cases[1].infer = 1; cases[1].no_index = 1; cases[1].explicit_schema = 0;
    cases[2].dir = kv; cases[2].infer = 0; cases[2].no_index = 0; cases[2].explicit_schema = 1;
    cases[3].dir = lw; cases[3].infer = 1; cases[3].no_index = 1; cases[3].explicit_schema = 0;
    cases[4].dir = batch; cases[4].infer = 1; cases[4].no_index = 1; cases[4].explicit_schema = 0;
    cases[5].dir = batch; cases[5].infer = 0; cases[5].no_index = 1; cases[5].explicit_schema = 1;
    for (c = 0; c < 6; c++) {
        sts_read_config cfg;
        size_t at;
        int failed = 1, reported = 0;
        memset(&cfg, 0, sizeof cfg);
        cfg.infer_schema = cases[c].infer;
        cfg.no_index = cases[c].no_index;
        if (cases[c].explicit_schema) { cfg.schema = sc; cfg.nschema = 2; }
        for (at = 1; failed && at < 100000; at++, runs++) {
            const char *bad = alloc_run(cases[c].dir, &cfg, cases[c].dir == kv, at, &failed, why, sizeof why);
            if (bad && !reported) {  /* the first problem of each case */
                size_t used = strlen(first);
                snprintf(first + used, sizeof first - used, "%scase %zu, allocation %zu failing: %s", used ? " | " : "", c, at, bad);
                reported = 1;
            }
        }
    }
    tf_names_free(&a);
    tf_names_free(&b);
    tf_rmtree(kv);
    tf_rmtree(lw);
    tf_rmtree(batch);
    assert_true(runs > 50);
    if (first[0]) fail_msg("%s", first);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_missing_folder),
        cmocka_unit_test(test_empty_folder),
        cmocka_unit_test(test_broken_single_file),
        cmocka_unit_test(test_manifest_missing_shard),
        cmocka_unit_test(test_manifest_wrong_size),
        cmocka_unit_test(test_manifest_malformed),
        cmocka_unit_test(test_shard_changed_after_open),
        cmocka_unit_test(test_corrupt_shard),
        cmocka_unit_test(test_truncated_shards),
        cmocka_unit_test(test_index_stale_file),
        cmocka_unit_test(test_index_file_outside),
        cmocka_unit_test(test_index_tensor_missing),
        cmocka_unit_test(test_index_tensor_missing_long_scan),
        cmocka_unit_test(test_index_disagrees_dtype),
        cmocka_unit_test(test_index_disagrees_shape),
        cmocka_unit_test(test_index_disagrees_offsets),
        cmocka_unit_test(test_index_disagreement_checked_per_file),
        cmocka_unit_test(test_index_file_moved),
        cmocka_unit_test(test_index_dataset_id),
        cmocka_unit_test(test_index_malformed),
        cmocka_unit_test(test_index_escaped_strings),
        cmocka_unit_test(test_index_utf8_windows),
        cmocka_unit_test(test_index_utf8_after_drop),
        cmocka_unit_test(test_alloc_failures),
    };
    return cmocka_run_group_tests(tests, dr_root_setup, dr_root_teardown);
}
