/* test_lineage.c - the dataset record MLflow stores (sts_dataset_lineage; issue 16).
   - three manifests (batch with a non-ASCII column and an F8 dtype, KV without samples_count,
     no columns) against records built by Python's json.dumps and hashlib from MLflow's rules
     (MetaDataset.to_dict and _compute_digest), pasted below: a name with a control character, a
     non-BMP character and a byte that is not UTF-8; a gs:// and a file:// URI, a plain path;
   - the default source: the folder as os.path.abspath gives it, from relative spellings;
   - the dtype names, every one;
   - errors: arguments, a missing manifest, an invalid one, an empty URI; every allocation failing
     in turn, with nothing leaked. The cross-check against Python on datasets written by sts pack
     is tests/check_lineage.py (make test-lineage). */
#define _POSIX_C_SOURCE 200809L
#ifndef STS_TEST_LINKED  /* the Makefile links tests/sts_impl.c's object instead */
#define STS_IMPLEMENTATION
#endif
#include "../safetensors_spark.h"
#include "test_util.h"
#include "fs_util.h"
#include <unistd.h>

/* The expected records: json.dumps(record) as tests/check_lineage.py builds it. */
static const char GOLD1[] =
    "{\"name\": \"n\\u0001\\u00e9\\ud83d\\ude00\\udcff\", \"digest\": \"d7e35bbd\", \"source\": \"{\\\"uri\\\": \\\"g"
    "s://b/k\\\"}\", \"source_type\": \"gs\", \"schema\": \"{\\\"mlflow_colspec\\\": [{\\\"name\\\": \\\"x\\\", \\\"typ"
    "e\\\": \\\"tensor\\\", \\\"tensor-spec\\\": {\\\"dtype\\\": \\\"float32\\\", \\\"shape\\\": [-1, 2, 2]}}, {\\\"nam"
    "e\\\": \\\"\\\\u00e9mb\\\", \\\"type\\\": \\\"tensor\\\", \\\"tensor-spec\\\": {\\\"dtype\\\": \\\"bfloat16\\\", \\\"sha"
    "pe\\\": [-1]}}, {\\\"name\\\": \\\"f8\\\", \\\"type\\\": \\\"tensor\\\", \\\"tensor-spec\\\": {\\\"dtype\\\": \\\"floa"
    "t8_e4m3fn\\\", \\\"shape\\\": [-1, 1]}}]}\", \"profile\": \"{\\\"num_rows\\\": 6, \\\"num_shards\\\": 2, \\\"t"
    "otal_bytes\\\": 150, \\\"format\\\": \\\"safetensors\\\", \\\"mode\\\": \\\"batch\\\"}\", \"context\": \"ctx\"}"
    ;
static const char GOLD2[] =
    "{\"name\": \"safetensors_dataset\", \"digest\": \"8e52de79\", \"source\": \"{\\\"uri\\\": \\\"file:///d/kv\\"
    "\"}\", \"source_type\": \"local\", \"schema\": \"{\\\"mlflow_colspec\\\": [{\\\"name\\\": \\\"img\\\", \\\"type\\\""
    ": \\\"tensor\\\", \\\"tensor-spec\\\": {\\\"dtype\\\": \\\"uint8\\\", \\\"shape\\\": [-1, 3]}}]}\", \"profile\": "
    "\"{\\\"num_rows\\\": 9, \\\"num_shards\\\": 1, \\\"total_bytes\\\": 10, \\\"format\\\": \\\"safetensors\\\", \\\""
    "mode\\\": \\\"kv\\\"}\"}"
    ;
static const char GOLD3[] =
    "{\"name\": \"safetensors_dataset\", \"digest\": \"368083b9\", \"source\": \"{\\\"uri\\\": \\\"/x/empty\\\"}\","
    " \"source_type\": \"local\", \"profile\": \"{\\\"num_rows\\\": 0, \\\"num_shards\\\": 0, \\\"total_bytes\\\":"
    " 0, \\\"format\\\": \\\"safetensors\\\", \\\"mode\\\": \\\"batch\\\"}\"}"
    ;

static const char M1[] =
    "{\"shards\": [{\"shard_path\": \"part-a.safetensors\", \"bytes\": 100, \"samples_count\": 4},"
    " {\"shard_path\": \"part-b.safetensors\", \"bytes\": 50, \"samples_count\": 2}],"
    " \"schema\": {\"x\": {\"dtype\": \"F32\", \"shape\": [4, 2, 2]}, \"\\u00e9mb\": {\"dtype\": \"BF16\", \"shape\": [4]},"
    " \"f8\": {\"dtype\": \"F8_E4M3\", \"shape\": [4, 1]}}, \"mode\": \"batch\", \"batch_size\": 4}";
static const char M2[] =
    "{\"shards\": [{\"shard_path\": \"p.safetensors\", \"bytes\": 10}], \"total_samples\": 9,"
    " \"schema\": {\"img\": {\"dtype\": \"U8\", \"shape\": [-1, 3]}}, \"mode\": \"kv\"}";
static const char M3[] = "{\"shards\": [], \"mode\": \"batch\"}";

static void put_manifest(const char *dir, const char *text) {
    char p[512];
    tf_join(p, sizeof p, dir, "dataset_manifest.json");
    tf_write(p, text, strlen(text));
}
/* root/name, created, holding `manifest` as its dataset_manifest.json (none when NULL). */
static void make_ds(char *out, size_t cap, const char *root, const char *name, const char *manifest) {
    tf_join(out, cap, root, name);
    assert_int_equal(mkdir(out, 0777), 0);
    if (manifest) put_manifest(out, manifest);
}
static char *record(const char *dir, const sts_lineage_config *c) {
    char *out = NULL;
    size_t len = 0;
    sts_error e;
    sts_result r = sts_dataset_lineage(dir, c, NULL, &out, &len, &e);
    if (r != STS_OK) fail_msg("lineage of %s: %s", dir, e.message);
    assert_int_equal(strlen(out), len);
    return out;
}
static void expect(const char *dir, const sts_lineage_config *c, const char *want) {
    char *got = record(dir, c);
    if (strcmp(got, want) != 0) fail_msg("record of %s:\n  got  %s\n  want %s", dir, got, want);
    sts_free(NULL, got, strlen(got) + 1);
}

static void test_records(void **state) {
    char root[64], d1[128], d2[128], d3[128];
    sts_lineage_config c;
    (void)state;
    tf_tmpdir(root, sizeof root);
    make_ds(d1, sizeof d1, root, "batch", M1);
    make_ds(d2, sizeof d2, root, "kv", M2);
    make_ds(d3, sizeof d3, root, "empty", M3);
    memset(&c, 0, sizeof c);
    c.name = "n\x01\xc3\xa9\xf0\x9f\x98\x80\xff";
    c.uri = "gs://b/k";
    c.context = "ctx";
    expect(d1, &c, GOLD1);
    memset(&c, 0, sizeof c);
    c.uri = "file:///d/kv";
    expect(d2, &c, GOLD2);
    c.uri = "/x/empty";
    expect(d3, &c, GOLD3);
    tf_rmtree(root);
}

/* Without a URI the source is the folder made absolute and normalised, as os.path.abspath does. */
static void test_default_source(void **state) {
    char root[64], ds[128], sub[128], cwd[1024], want[512];
    const char *spellings[] = { "ds", "./ds", "ds/", "ds//.", "sub/../ds", "sub/./../ds/", "../../../../../../../../..%s" };
    size_t i;
    (void)state;
    tf_tmpdir(root, sizeof root);
    make_ds(ds, sizeof ds, root, "ds", M3);
    make_ds(sub, sizeof sub, root, "sub", NULL);
    assert_non_null(getcwd(cwd, sizeof cwd));
    assert_int_equal(chdir(root), 0);
    snprintf(want, sizeof want, "\"source\": \"{\\\"uri\\\": \\\"%s\\\"}\"", ds);
    for (i = 0; i < sizeof spellings / sizeof *spellings; i++) {
        char path[512], *rec;
        snprintf(path, sizeof path, spellings[i], ds);  /* the last: .. past the root, then ds */
        rec = record(path, NULL);
        if (!strstr(rec, want)) fail_msg("%s: %s does not hold %s", path, rec, want);
        assert_non_null(strstr(rec, "\"source_type\": \"local\""));
        sts_free(NULL, rec, strlen(rec) + 1);
    }
    {   /* the absolute folder itself: three leading slashes are one, exactly two stay (POSIX leaves
           their meaning to the system, and Python keeps them); trailing ones go */
        char path[512], *rec, want2[512];
        snprintf(path, sizeof path, "//%s//", ds);
        rec = record(path, NULL);
        if (!strstr(rec, want)) fail_msg("%s: %s does not hold %s", path, rec, want);
        sts_free(NULL, rec, strlen(rec) + 1);
        snprintf(path, sizeof path, "/%s/", ds);
        snprintf(want2, sizeof want2, "\"source\": \"{\\\"uri\\\": \\\"/%s\\\"}\"", ds);
        rec = record(path, NULL);
        if (!strstr(rec, want2)) fail_msg("%s: %s does not hold %s", path, rec, want2);
        sts_free(NULL, rec, strlen(rec) + 1);
    }
    assert_int_equal(chdir(cwd), 0);
    tf_rmtree(root);
}

static void test_dtype_names(void **state) {
    static const char *const want[][2] = {
        { "BOOL", "bool" }, { "U8", "uint8" }, { "I8", "int8" }, { "U16", "uint16" }, { "I16", "int16" },
        { "U32", "uint32" }, { "I32", "int32" }, { "U64", "uint64" }, { "I64", "int64" }, { "F16", "float16" },
        { "F32", "float32" }, { "F64", "float64" }, { "C64", "complex64" }, { "BF16", "bfloat16" },
        { "F8_E4M3", "float8_e4m3fn" }, { "F8_E5M2", "float8_e5m2" }, { "F8_E8M0", "float8_e8m0fnu" },
        { "F8_E4M3FNUZ", "float8_e4m3fnuz" }, { "F8_E5M2FNUZ", "float8_e5m2fnuz" }, { "F4", "float4_e2m1fn" },
        { "F6_E2M3", "float6_e2m3fn" }, { "F6_E3M2", "float6_e3m2fn" },
    };
    size_t i;
    (void)state;
    assert_int_equal(sizeof want / sizeof *want, STS_DTYPE_COUNT);
    for (i = 0; i < STS_DTYPE_COUNT; i++) {
        sts_dtype d;
        assert_true(sts_dtype_from_name(want[i][0], strlen(want[i][0]), &d));
        assert_string_equal(sts_lineage_dtype_name(d), want[i][1]);
    }
    assert_null(sts_lineage_dtype_name(STS_DTYPE_COUNT));
}

static void test_errors(void **state) {
    char root[64], ds[128], bad[128], none[128];
    char *out = (char *)(uintptr_t)0x1;
    size_t len = 7;
    sts_lineage_config c;
    sts_error e;
    (void)state;
    tf_tmpdir(root, sizeof root);
    make_ds(ds, sizeof ds, root, "ds", M2);
    make_ds(bad, sizeof bad, root, "bad", "{\"shards\": [{\"shard_path\": \"p.safetensors\"}]}");
    make_ds(none, sizeof none, root, "none", NULL);
    tu_err_check("NULL dir", sts_dataset_lineage(NULL, NULL, NULL, &out, &len, &e), &e, STS_ERR_INVALID_ARGUMENT,
                 STS_RULE_ARGUMENT, (const char *)NULL);
    tu_err_check("NULL out", sts_dataset_lineage(ds, NULL, NULL, NULL, &len, &e), &e, STS_ERR_INVALID_ARGUMENT,
                 STS_RULE_ARGUMENT, (const char *)NULL);
    tu_err_check("NULL len", sts_dataset_lineage(ds, NULL, NULL, &out, NULL, &e), &e, STS_ERR_INVALID_ARGUMENT,
                 STS_RULE_ARGUMENT, (const char *)NULL);
    tu_err_check("no manifest", sts_dataset_lineage(none, NULL, NULL, &out, &len, &e), &e, STS_ERR_DATASET,
                 STS_RULE_DATASET_MANIFEST, "dataset_manifest.json not found", none, (const char *)NULL);
    tu_err_check("a shard without bytes", sts_dataset_lineage(bad, NULL, NULL, &out, &len, &e), &e, STS_ERR_DATASET,
                 STS_RULE_DATASET_MANIFEST, "shard 0", "bytes", (const char *)NULL);
    put_manifest(bad, "{\"shards\": [");
    tu_err_check("not JSON", sts_dataset_lineage(bad, NULL, NULL, &out, &len, &e), &e, TU_ANY_CODE,
                 STS_RULE_DATASET_MANIFEST, (const char *)NULL);
    memset(&c, 0, sizeof c);
    c.uri = "";
    tu_err_check("empty uri", sts_dataset_lineage(ds, &c, NULL, &out, &len, &e), &e, STS_ERR_INVALID_ARGUMENT,
                 STS_RULE_ARGUMENT, "uri", (const char *)NULL);
    assert_true(out == (char *)(uintptr_t)0x1 && len == 7);  /* untouched by every failure */
    tf_rmtree(root);
}

/* Every allocation refused in turn: out of memory reported, nothing leaked, then the record. */
static void test_allocations(void **state) {
    char root[64], ds[128];
    long k;
    (void)state;
    tf_tmpdir(root, sizeof root);
    make_ds(ds, sizeof ds, root, "ds", M1);
    for (k = 1;; k++) {
        tu_alloc al;
        sts_options o;
        sts_error e;
        char *out = NULL;
        size_t len = 0;
        sts_result r;
        o = tu_alloc_opts(&al, NULL);  /* zeroes al */
        al.fail_at = k;
        r = sts_dataset_lineage(ds, NULL, &o, &out, &len, &e);
        if (r == STS_OK) {
            assert_int_equal(al.failed, 0);
            sts_free(&o, out, len + 1);
            tu_alloc_check("lineage", &al);
            break;
        }
        tu_err_check("refused allocation", r, &e, STS_ERR_NOMEM, STS_RULE_ALLOC, (const char *)NULL);
        tu_alloc_check("lineage, an allocation refused", &al);
        assert_true(k < 1000);
    }
    if (k <= 5) fail_msg("only %ld allocations", k);
    tf_rmtree(root);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_records),
        cmocka_unit_test(test_default_source),
        cmocka_unit_test(test_dtype_names),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_allocations),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
