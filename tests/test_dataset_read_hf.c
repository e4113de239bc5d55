/* test_dataset_read_hf.c - layer 9 on files laid out by Hugging Face's writer. tests/make_hf_files.py
   (numpy only; $STS_PYTHON or /usr/bin/python3) writes them into a temporary folder with the values
   a reader must find; this program reads them through the dataset API and compares:
   - single.safetensors as a one-file dataset: the schema (names, dtypes, shapes, layout order:
     descending dtype rank then name), every tensor by lookup and by long scan, decoded here
     independently (F16, BF16 bit by bit, integers, BOOL) and through sts_convert to F64, with
     signed zeros, subnormals, infinities, NaN and rounding ties; non-ASCII and escaped names;
   - model/ (model-0000K-of-00003.safetensors + model.safetensors.index.json, no manifest and no
     _tensor_index.json): three files in name order, every tensor found in the file the Hugging
     Face index names, total data bytes equal to its metadata.total_size, a wide scan whose columns
     (the first shard's tensors) are null in the other shards, an explicit schema across shards. */
#define _POSIX_C_SOURCE 200809L
#ifndef STS_TEST_LINKED  /* the Makefile links tests/sts_impl.c's object instead */
#define STS_IMPLEMENTATION
#endif
#include "../safetensors_spark.h"
#include "test_dataset_read_util.h"
#include <math.h>
#include <sys/wait.h>

static char g_root[64];

typedef struct hf_t {
    char path[128];
    char name[128];
    size_t name_len;
    sts_dtype dtype;
    uint32_t rank;
    uint64_t shape[8];
    char kind;
    uint64_t off, count;
} hf_t;
static hf_t *g_t;
static size_t g_n;
static uint8_t *g_bin;
static size_t g_bin_n;

static int hexval(int c) { return c <= '9' ? c - '0' : c - 'a' + 10; }
static int setup_root(void **state) {
    char p[512], *line, *save = NULL;
    const char *py = getenv("STS_PYTHON");
    size_t n;
    uint8_t *tsv;
    pid_t pid;
    int st = 0;
    (void)state;
    tf_tmpdir(g_root, sizeof g_root);
    if (!py || !*py) py = "/usr/bin/python3";
    fflush(NULL);
    pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        execl(py, py, "tests/make_hf_files.py", g_root, (char *)NULL);
        fprintf(stderr, "exec %s: %s\n", py, strerror(errno));
        _exit(127);
    }
    if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        fprintf(stderr, "tests/make_hf_files.py failed (status %d)\n", st);
        return -1;
    }
    tf_join(p, sizeof p, g_root, "expected.tsv");
    tsv = tf_read(p, &n);
    tf_join(p, sizeof p, g_root, "expected.bin");
    g_bin = tf_read(p, &g_bin_n);
    g_t = (hf_t *)calloc(256, sizeof *g_t);
    for (line = strtok_r((char *)tsv, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        hf_t *t = &g_t[g_n++];
        char *f[7], *s2 = NULL, *d;
        int i;
        size_t k;
        if (g_n > 256) return -1;
        for (i = 0; i < 7; i++) {
            f[i] = line;
            d = strchr(line, '\t');
            if (d) { *d = 0; line = d + 1; }
            else if (i < 6) return -1;
        }
        snprintf(t->path, sizeof t->path, "%s", f[0]);
        for (k = 0; f[1][2 * k]; k++) t->name[k] = (char)(hexval(f[1][2 * k]) << 4 | hexval(f[1][2 * k + 1]));
        t->name_len = k;
        if (!sts_dtype_from_name(f[2], strlen(f[2]), &t->dtype)) return -1;
        for (d = strtok_r(f[3], ",", &s2); d; d = strtok_r(NULL, ",", &s2)) t->shape[t->rank++] = strtoull(d, NULL, 10);
        t->kind = f[4][0];
        t->off = strtoull(f[5], NULL, 10);
        t->count = strtoull(f[6], NULL, 10);
    }
    free(tsv);
    return 0;
}
static int teardown_root(void **state) {
    (void)state;
    free(g_t);
    free(g_bin);
    tf_rmtree(g_root);
    return 0;
}

/* ---- independent decoding ---- */
static double f16_value(uint16_t h) {
    int s = h >> 15, e = (h >> 10) & 31, m = h & 1023;
    double v;
    if (e == 31) v = m ? NAN : INFINITY;
    else if (e == 0) v = ldexp((double)m, -24);
    else v = ldexp((double)(m | 1024), e - 25);
    return s ? -v : v;
}
static double bf16_value(uint16_t b) {
    uint32_t bits = (uint32_t)b << 16;
    float f;
    memcpy(&f, &bits, 4);
    return (double)f;
}
static uint64_t le(const uint8_t *p, int n) {
    uint64_t v = 0;
    int i;
    for (i = n - 1; i >= 0; i--) v = v << 8 | p[i];
    return v;
}
static int same_f64(double a, double b) {
    if (isnan(a) || isnan(b)) return isnan(a) && isnan(b);
    return memcmp(&a, &b, 8) == 0;
}
/* The view holds exactly the expected values. */
static void check_values(const hf_t *t, const sts_view *v) {
    const uint8_t *p = (const uint8_t *)v->data;
    const uint8_t *want = g_bin + t->off;
    uint64_t i, bits = sts_dtype_bits(t->dtype);
    uint8_t *conv;  /* little-endian F64, U64 or I64 */
    assert_true(t->off + t->count * 8 <= g_bin_n);
    assert_int_equal(v->nbytes, t->count * bits / 8);
    if (t->count) assert_non_null(p);
    for (i = 0; i < t->count; i++) {
        const uint8_t *x = p + i * bits / 8;
        if (t->kind == 'f') {
            double got, exp = tu_lef64(want + 8 * i);
            switch (t->dtype) {
            case STS_DTYPE_F16: got = f16_value((uint16_t)le(x, 2)); break;
            case STS_DTYPE_BF16: got = bf16_value((uint16_t)le(x, 2)); break;
            case STS_DTYPE_F32: { uint32_t b = (uint32_t)le(x, 4); float f; memcpy(&f, &b, 4); got = f; break; }
            default: { uint64_t b = le(x, 8); memcpy(&got, &b, 8); break; }
            }
            if (!same_f64(got, exp)) fail_msg("%s %.*s [%llu]: %.17g, want %.17g", t->path, (int)t->name_len, t->name, (unsigned long long)i, got, exp);
        } else {
            uint64_t got = le(x, (int)(bits / 8)), exp = le(want + 8 * i, 8);
            int sign = t->dtype == STS_DTYPE_I8 || t->dtype == STS_DTYPE_I16 || t->dtype == STS_DTYPE_I32 || t->dtype == STS_DTYPE_I64;
            if (sign && bits < 64 && (got >> (bits - 1)) & 1) got |= ~(uint64_t)0 << bits;
            if (got != exp) fail_msg("%s %.*s [%llu]: %llx, want %llx", t->path, (int)t->name_len, t->name, (unsigned long long)i,
                                     (unsigned long long)got, (unsigned long long)exp);
        }
    }
    /* the codec agrees (floats to F64 exactly; integers to I64 / U64) */
    if (!t->count || t->dtype == STS_DTYPE_BOOL) return;
    conv = (uint8_t *)malloc(t->count * 8);
    assert_non_null(conv);
    if (t->kind == 'f') {
        assert_int_equal(sts_convert(conv, STS_DTYPE_F64, p, t->dtype, (size_t)t->count, STS_ROUND_NEAREST_EVEN), STS_OK);
        for (i = 0; i < t->count; i++) {  /* the codec writes little-endian F64 bytes */
            double got = tu_lef64((const uint8_t *)conv + 8 * i), exp = tu_lef64(want + 8 * i);
            if (!same_f64(got, exp)) fail_msg("sts_convert %s [%llu]: %.17g, want %.17g", sts_dtype_name(t->dtype), (unsigned long long)i, got, exp);
        }
    } else {
        assert_int_equal(sts_convert(conv, t->kind == 'u' ? STS_DTYPE_U64 : STS_DTYPE_I64, p, t->dtype, (size_t)t->count, STS_ROUND_TRUNCATE), STS_OK);
        assert_memory_equal(conv, want, (size_t)t->count * 8);
    }
    free(conv);
}
static void check_meta(const hf_t *t, const sts_view *v) {
    assert_int_equal(v->key_len, t->name_len);
    assert_memory_equal(v->key, t->name, t->name_len);
    assert_int_equal(v->dtype, t->dtype);
    assert_int_equal(v->rank, t->rank);
    if (t->rank) assert_memory_equal(v->shape, t->shape, t->rank * sizeof *t->shape);
}
static sts_dataset *open_ds(const char *path) {
    sts_read_config cfg;
    sts_dataset *ds;
    sts_error e;
    memset(&cfg, 0, sizeof cfg);
    cfg.infer_schema = 1;
    DR_OK(sts_dataset_open(path, &cfg, NULL, &ds, &e));
    return ds;
}

static void test_single_file(void **state) {
    char p[512];
    sts_dataset *ds;
    sts_error e;
    size_t i, n = 0;
    sts_scan_spec sp;
    sts_scan *s;
    const sts_view *c;
    size_t nc;
    (void)state;
    tf_join(p, sizeof p, g_root, "single.safetensors");
    ds = open_ds(p);
    for (i = 0; i < g_n; i++) n += strcmp(g_t[i].path, "single.safetensors") == 0;
    assert_int_equal(n, 19);
    assert_int_equal(sts_dataset_describe(ds).columns, n);
    /* the schema in the file's layout order, which is the expected file's order */
    for (i = 0; i < n; i++) check_meta(&g_t[i], sts_dataset_column(ds, i));
    /* lookups */
    for (i = 0; i < n; i++) {
        sts_view v;
        DR_OK(sts_dataset_get(ds, g_t[i].name, g_t[i].name_len, 1, &v, &e));
        check_meta(&g_t[i], &v);
        assert_int_equal(v.file, 0);
        check_values(&g_t[i], &v);
    }
    /* long scan, in layout order */
    memset(&sp, 0, sizeof sp);
    sp.long_form = 1;
    sp.with_data = 1;
    DR_OK(sts_scan_open(ds, &sp, &s, &e));
    for (i = 0;; i++) {
        DR_OK(sts_scan_next(s, &c, &nc, &e));
        if (!nc) break;
        assert_true(i < n);
        check_meta(&g_t[i], c);
        check_values(&g_t[i], c);
    }
    assert_int_equal(i, n);
    sts_scan_close(s);
    /* dtype filter BF16 + F16: the five half-precision tensors */
    {
        sts_dtype dts[2] = { STS_DTYPE_BF16, STS_DTYPE_F16 };
        dr_rows rs;
        memset(&sp, 0, sizeof sp);
        sp.dtypes = dts;
        sp.ndtypes = 2;
        DR_OK(dr_long_scan(ds, &sp, &rs, &e));
        assert_int_equal(rs.n, 5);
        dr_rows_free(&rs);
    }
    sts_dataset_close(ds);
}

static void test_sharded_model(void **state) {
    char dir[512], p[600];
    sts_dataset *ds;
    sts_error e;
    size_t i, nshards = 3;
    uint64_t total = 0, total_size = 0;
    uint8_t *index;
    size_t index_n;
    const char *at;
    (void)state;
    tf_join(dir, sizeof dir, g_root, "model");
    ds = open_ds(dir);
    assert_int_equal(sts_dataset_describe(ds).files, nshards);
    assert_int_equal(sts_dataset_describe(ds).has_manifest, 0);
    assert_int_equal(sts_dataset_describe(ds).has_index, 0);
    assert_string_equal(sts_dataset_file(ds, 0), "model-00001-of-00003.safetensors");
    assert_string_equal(sts_dataset_file(ds, 2), "model-00003-of-00003.safetensors");
    tf_join(p, sizeof p, dir, "model.safetensors.index.json");
    index = tf_read(p, &index_n);
    at = strstr((const char *)index, "\"total_size\":");
    assert_non_null(at);
    total_size = strtoull(at + 13, NULL, 10);
    for (i = 0; i < g_n; i++) {
        const hf_t *t = &g_t[i];
        sts_view v;
        char needle[300];
        if (strncmp(t->path, "model/", 6) != 0) continue;
        DR_OK(sts_dataset_get(ds, t->name, t->name_len, 1, &v, &e));
        check_meta(t, &v);
        check_values(t, &v);
        assert_string_equal(sts_dataset_file(ds, v.file), t->path + 6);
        /* the Hugging Face index agrees on the file */
        snprintf(needle, sizeof needle, "\"%.*s\": \"%s\"", (int)t->name_len, t->name, t->path + 6);
        if (!strstr((const char *)index, needle)) fail_msg("model.safetensors.index.json lacks %s", needle);
        total += v.nbytes;
    }
    assert_int_equal(total, total_size);
    free(index);
    {   /* a long scan's bytes add up to total_size too */
        sts_scan_spec sp;
        dr_rows rs;
        uint64_t sum = 0;
        memset(&sp, 0, sizeof sp);
        DR_OK(dr_long_scan(ds, &sp, &rs, &e));
        for (i = 0; i < rs.n; i++) sum += rs.r[i].nbytes;
        assert_int_equal(rs.n, 11);
        assert_int_equal(sum, total_size);
        dr_rows_free(&rs);
    }
    {   /* wide: the first shard's 3 tensors are columns; the other shards hold none of them */
        sts_scan_spec sp;
        sts_scan *s;
        const sts_view *c;
        size_t nc, row;
        memset(&sp, 0, sizeof sp);
        sp.with_data = 1;
        assert_int_equal(sts_dataset_describe(ds).columns, 3);
        DR_OK(sts_scan_open(ds, &sp, &s, &e));
        for (row = 0;; row++) {
            DR_OK(sts_scan_next(s, &c, &nc, &e));
            if (!nc) break;
            assert_int_equal(nc, 3);
            for (i = 0; i < nc; i++) assert_int_equal(c[i].present, row == 0);
        }
        assert_int_equal(row, 3);
        sts_scan_close(s);
    }
    sts_dataset_close(ds);
    {   /* an explicit schema across shards: each layer's norm is in a different shard */
        sts_schema_column sc[3];
        sts_read_config cfg;
        uint64_t four = 4;
        sts_scan_spec sp;
        sts_scan *s;
        const sts_view *c;
        size_t nc, row, present = 0;
        memset(sc, 0, sizeof sc);
        sc[0].name = "model.layers.0.input_layernorm.weight"; sc[0].name_len = strlen(sc[0].name);
        sc[1].name = "model.layers.1.input_layernorm.weight"; sc[1].name_len = strlen(sc[1].name);
        sc[2].name = "lm_head.weight"; sc[2].name_len = strlen(sc[2].name);
        for (i = 0; i < 2; i++) { sc[i].has_dtype = 1; sc[i].dtype = STS_DTYPE_F32; sc[i].has_shape = 1; sc[i].rank = 1; sc[i].shape = &four; }
        sc[2].has_dtype = 1;
        sc[2].dtype = STS_DTYPE_F16;
        memset(&cfg, 0, sizeof cfg);
        cfg.schema = sc;
        cfg.nschema = 3;
        DR_OK(sts_dataset_open(dir, &cfg, NULL, &ds, &e));
        memset(&sp, 0, sizeof sp);
        sp.with_data = 1;
        DR_OK(sts_scan_open(ds, &sp, &s, &e));
        for (row = 0;; row++) {
            DR_OK(sts_scan_next(s, &c, &nc, &e));
            if (!nc) break;
            for (i = 0; i < nc; i++) present += (size_t)c[i].present;
        }
        assert_int_equal(row, 3);
        assert_int_equal(present, 3);
        sts_scan_close(s);
        sts_dataset_close(ds);
        sc[2].dtype = STS_DTYPE_BF16;  /* lm_head is F16: the third shard is named */
        DR_OK(sts_dataset_open(dir, &cfg, NULL, &ds, &e));
        DR_OK(sts_scan_open(ds, &sp, &s, &e));
        DR_OK(sts_scan_next(s, &c, &nc, &e));
        DR_OK(sts_scan_next(s, &c, &nc, &e));
        tu_err_check("lm_head dtype", sts_scan_next(s, &c, &nc, &e), &e, STS_ERR_SCHEMA, STS_RULE_READ_SCHEMA, "model-00003-of-00003.safetensors", "lm_head.weight", NULL);
        sts_scan_close(s);
        sts_dataset_close(ds);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_single_file),
        cmocka_unit_test(test_sharded_model),
    };
    return cmocka_run_group_tests(tests, setup_root, teardown_root);
}
