/* sts: the safetensors_spark.h command-line tool.
   Exit codes: 0 success, 1 invalid input (a file fails validation, a key is missing, a dataset is
   inconsistent, an I/O error), 2 usage error. Every command answers --help. */
#define STS_IMPLEMENTATION
#include "../safetensors_spark.h"
#include "npy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <time.h>
#include <unistd.h>

#define EXIT_INVALID 1
#define EXIT_USAGE 2

/* ---- small helpers ---------------------------------------------------------------------------- */
static const char *prog_cmd = "sts";

static int usage_error(const char *fmt, const char *what) {
    fprintf(stderr, "%s: ", prog_cmd);
    fprintf(stderr, fmt, what);
    fprintf(stderr, "\n(try: %s --help)\n", prog_cmd);
    return EXIT_USAGE;
}
static int fail(const sts_error *e, const char *what) {
    fprintf(stderr, "%s: %s: %s: %s\n", prog_cmd, what, sts_result_name(e->code), e->message);
    return EXIT_INVALID;
}
/* Quote a (pointer, length) name for output: escapes control characters and quotes. Returns the
   columns printed (a UTF-8 character counts one). */
static size_t put_name(FILE *o, const char *s, size_t n, int json) {
    size_t i, w = 0;
    if (json) fputc('"', o), w++;
    for (i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' && json) fputs("\\\"", o), w += 2;
        else if (c == '\\' && json) fputs("\\\\", o), w += 2;
        else if (c < 0x20 || c == 0x7f) fprintf(o, "\\u%04x", c), w += 6;
        else { fputc(c, o); w += (c & 0xC0) != 0x80; }
    }
    if (json) fputc('"', o), w++;
    return w;
}
static void put_shape(FILE *o, const uint64_t *d, uint32_t rank) {
    uint32_t i;
    fputc('[', o);
    for (i = 0; i < rank; i++) fprintf(o, i ? ", %llu" : "%llu", (unsigned long long)d[i]);
    fputc(']', o);
}
static int strcasecmp_ascii(const char *a, const char *b) {  /* 1 when equal ignoring ASCII case */
    while (*a && *b) {
        int x = *a >= 'A' && *a <= 'Z' ? *a + 32 : *a, y = *b >= 'A' && *b <= 'Z' ? *b + 32 : *b;
        if (x != y) return 0;
        a++, b++;
    }
    return !*a && !*b;
}
static int parse_u64(const char *s, uint64_t *v) {
    char *end;
    unsigned long long x;
    if (!s || !*s || *s == '-') return 0;
    x = strtoull(s, &end, 10);
    if (*end) return 0;
    *v = (uint64_t)x;
    return 1;
}
static int is_dir(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}
static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* ---- verify ----------------------------------------------------------------------------------- */
static int cmd_verify(int argc, char **argv) {
    sts_options o;
    int i, files = 0, bad = 0, opts_done = 0;
    memset(&o, 0, sizeof o);
    o.header_only = 1; /* validation needs the 8 + N header bytes and the file size only */
    for (i = 1; i < argc; i++) {
        if (!opts_done && strcmp(argv[i], "--") == 0) { opts_done = 1; continue; }
        if (!opts_done && strcmp(argv[i], "--strict") == 0) { o.strict = 1; continue; }
        if (!opts_done && argv[i][0] == '-' && argv[i][1]) return usage_error("unknown option %s", argv[i]);
        files++;
    }
    if (!files) return usage_error("%s", "no files given; usage: sts verify [--strict] FILE...");
    opts_done = 0;
    for (i = 1; i < argc; i++) {
        sts_file *f;
        sts_error e;
        if (!opts_done && strcmp(argv[i], "--") == 0) { opts_done = 1; continue; }
        if (!opts_done && argv[i][0] == '-' && argv[i][1]) continue;
        if (sts_open(argv[i], &o, &f, &e) == STS_OK) {
            printf("%s\tOK\t%zu\n", argv[i], sts_count(f));
            sts_close(f);
        } else {
            printf("%s\tERR\t%s\t%s\n", argv[i], sts_result_name(e.code), e.message);
            bad = 1;
        }
    }
    return bad ? EXIT_INVALID : 0;
}

/* ---- rules ------------------------------------------------------------------------------------ */
static int cmd_rules(int argc, char **argv) {
    int i;
    if (argc > 1) return usage_error("unexpected argument %s", argv[1]);
    printf("| rule | result code | reference variant | rule statement |\n|---|---|---|---|\n");
    for (i = 1; i < (int)STS_RULE_COUNT; i++) {
        sts_result r = sts_rule_result((sts_rule)i);
        const char *v = sts_result_variant(r);
        printf("| `%s` | `%s` | %s | %s |\n", sts_rule_id((sts_rule)i), sts_result_name(r), v ? v : "-", sts_rule_text((sts_rule)i));
    }
    return 0;
}

/* ---- inspect ---------------------------------------------------------------------------------- */
static void inspect_file_text(const char *path, const sts_file *f) {
    size_t i;
    printf("%s: %llu bytes, header %llu bytes, %zu tensors\n", path, (unsigned long long)sts_file_size(f),
           (unsigned long long)sts_header_size(f), sts_count(f));
    printf("%-40s %-11s %-18s %12s  %s\n", "name", "dtype", "shape", "bytes", "data_offsets");
    for (i = 0; i < sts_count(f); i++) {
        const sts_tensor *t = sts_at(f, i);
        char shape[64];
        int n = 0;
        uint32_t d;
        size_t w;
        n += snprintf(shape + n, sizeof shape - (size_t)n, "[");
        for (d = 0; d < t->rank && n < (int)sizeof shape - 24; d++) n += snprintf(shape + n, sizeof shape - (size_t)n, d ? ", %llu" : "%llu", (unsigned long long)t->shape[d]);
        snprintf(shape + n, sizeof shape - (size_t)n, d < t->rank ? ", ...]" : "]");
        w = put_name(stdout, t->name, t->name_len, 0);
        printf("%*s %-11s %-18s %12llu  [%llu, %llu]\n", w < 40 ? (int)(40 - w) : 0, "", sts_dtype_name(t->dtype), shape,
               (unsigned long long)sts_tensor_nbytes(t), (unsigned long long)t->begin, (unsigned long long)t->end);
    }
    if (sts_has_metadata(f)) {
        printf("metadata:\n");
        for (i = 0; i < sts_metadata_count(f); i++) {
            const sts_kv *kv = sts_metadata_at(f, i);
            printf("  ");
            put_name(stdout, kv->key, kv->key_len, 0);
            printf(" = ");
            put_name(stdout, kv->value, kv->value_len, 0);
            printf("\n");
        }
    }
}
static void inspect_file_json(const sts_file *f) {
    size_t i;
    printf("{\"file_size\": %llu, \"header_size\": %llu, \"tensors\": [", (unsigned long long)sts_file_size(f), (unsigned long long)sts_header_size(f));
    for (i = 0; i < sts_count(f); i++) {
        const sts_tensor *t = sts_at(f, i);
        printf(i ? ",\n  {\"name\": " : "\n  {\"name\": ");
        put_name(stdout, t->name, t->name_len, 1);
        printf(", \"dtype\": \"%s\", \"shape\": ", sts_dtype_name(t->dtype));
        put_shape(stdout, t->shape, t->rank);
        printf(", \"bytes\": %llu, \"data_offsets\": [%llu, %llu]}", (unsigned long long)sts_tensor_nbytes(t), (unsigned long long)t->begin, (unsigned long long)t->end);
    }
    printf("%s], \"metadata\": ", sts_count(f) ? "\n" : "");
    if (!sts_has_metadata(f)) printf("null");
    else {
        printf("{");
        for (i = 0; i < sts_metadata_count(f); i++) {
            const sts_kv *kv = sts_metadata_at(f, i);
            if (i) printf(", ");
            put_name(stdout, kv->key, kv->key_len, 1);
            printf(": ");
            put_name(stdout, kv->value, kv->value_len, 1);
        }
        printf("}");
    }
    printf("}\n");
}
static int inspect_dataset(const char *dir, int json) {
    sts_dataset *ds;
    sts_read_config rc;
    sts_error e;
    sts_dataset_info info;
    size_t i;
    memset(&rc, 0, sizeof rc);
    rc.infer_schema = 1;
    if (sts_dataset_open(dir, &rc, NULL, &ds, &e) != STS_OK) return fail(&e, dir);
    info = sts_dataset_describe(ds);
    if (json) {
        printf("{\"path\": ");
        put_name(stdout, dir, strlen(dir), 1);
        printf(", \"manifest\": %s, \"index\": %s, \"index_stale\": %s, \"mode\": \"%s\", \"files\": %zu, ",
               info.has_manifest ? "true" : "false", info.has_index ? "true" : "false", info.index_stale ? "true" : "false",
               info.has_manifest ? (info.kv ? "kv" : "batch") : "files", info.files);
        if (info.has_manifest) printf("\"total_samples\": %llu, \"total_bytes\": %llu, \"columns\": [", (unsigned long long)info.total_samples, (unsigned long long)info.total_bytes);
        else printf("\"total_samples\": null, \"total_bytes\": null, \"columns\": [");
        for (i = 0; i < info.columns && i < 1000; i++) {
            const sts_view *c = sts_dataset_column(ds, i);
            if (i) printf(", ");
            printf("{\"name\": ");
            put_name(stdout, c->key, c->key_len, 1);
            printf(", \"dtype\": \"%s\", \"shape\": ", sts_dtype_name(c->dtype));
            put_shape(stdout, c->shape, c->rank);
            printf("}");
        }
        printf("], \"shards\": [");
    } else {
        printf("%s: %s, %zu files", dir, info.has_manifest ? (info.kv ? "KV-mode dataset" : "batch-mode dataset") : "folder of safetensors files", info.files);
        if (info.has_manifest) printf(", %llu samples, %llu bytes", (unsigned long long)info.total_samples, (unsigned long long)info.total_bytes);
        printf(info.has_index ? ", with _tensor_index\n" : info.index_stale ? ", stale _tensor_index (another dataset_id: rebuild it with sts index)\n" : ", no index\n");
        printf("%s: %zu\n", info.has_manifest && info.kv ? "tensors of the first shard" : "columns (the first file's tensors)", info.columns);
        for (i = 0; i < info.columns && i < 20; i++) {
            const sts_view *c = sts_dataset_column(ds, i);
            printf("  ");
            put_name(stdout, c->key, c->key_len, 0);
            printf("  %s ", sts_dtype_name(c->dtype));
            put_shape(stdout, c->shape, c->rank);
            printf("\n");
        }
        if (info.columns > 20) printf("  ... %zu more\n", info.columns - 20);
        printf("%-72s %10s %14s\n", "shard", "tensors", "bytes");
    }
    for (i = 0; i < info.files; i++) {  /* per-shard counts from the headers (8 + N bytes each) */
        sts_file *f;
        sts_options o;
        char path[4096];
        memset(&o, 0, sizeof o);
        o.header_only = 1;
        snprintf(path, sizeof path, "%s/%s", info.files == 1 && !is_dir(dir) ? "." : dir, sts_dataset_file(ds, i));
        if (!is_dir(dir)) snprintf(path, sizeof path, "%s", dir);
        if (sts_open(path, &o, &f, &e) != STS_OK) { sts_dataset_close(ds); return fail(&e, path); }
        if (json) printf("%s{\"shard_path\": \"%s\", \"tensors\": %zu, \"bytes\": %llu}", i ? ", " : "", sts_dataset_file(ds, i), sts_count(f), (unsigned long long)sts_file_size(f));
        else printf("%-72s %10zu %14llu\n", sts_dataset_file(ds, i), sts_count(f), (unsigned long long)sts_file_size(f));
        sts_close(f);
    }
    if (json) printf("]}\n");
    sts_dataset_close(ds);
    return 0;
}
static int cmd_inspect(int argc, char **argv) {
    const char *path = NULL;
    int i, json = 0, opts_done = 0;
    sts_file *f;
    sts_error e;
    for (i = 1; i < argc; i++) {
        if (!opts_done && strcmp(argv[i], "--") == 0) { opts_done = 1; continue; }
        if (!opts_done && strcmp(argv[i], "--json") == 0) json = 1;
        else if (!opts_done && argv[i][0] == '-' && argv[i][1]) return usage_error("unknown option %s", argv[i]);
        else if (path) return usage_error("one FILE or DIR, got another: %s", argv[i]);
        else path = argv[i];
    }
    if (!path) return usage_error("%s", "which FILE or DIR?");
    if (is_dir(path)) return inspect_dataset(path, json);
    if (sts_open(path, NULL, &f, &e) != STS_OK) return fail(&e, path);
    if (json) inspect_file_json(f);
    else inspect_file_text(path, f);
    sts_close(f);
    return 0;
}

/* ---- dump ------------------------------------------------------------------------------------- */
/* Values printed the way numpy prints arrays: nested brackets, the shortest digits that read back
   to the same value (float32 precision for 16- and 32-bit floats), and "..." past the edge items. */
/* One element as numpy's repr writes it: the fewest significant digits that read back to the same
   value of the tensor's own dtype (F16 and BF16 included), positional for 1e-4 <= |x| < 1e16,
   scientific otherwise; integers exactly (I64/U64 from their bytes, never through double). */
typedef struct dump_ctx { const uint8_t *v; const uint8_t *raw; sts_dtype dt; } dump_ctx;  /* v: F64, little-endian */

static double le_f64(const uint8_t *p) {  /* the codecs write little-endian on every host */
    uint64_t u = 0;
    double d;
    int k;
    for (k = 7; k >= 0; k--) u = u << 8 | p[k];
    memcpy(&d, &u, sizeof d);
    return d;
}
static void f64_le(double d, uint8_t *p) {
    uint64_t u;
    int k;
    memcpy(&u, &d, sizeof u);
    for (k = 0; k < 8; k++, u >>= 8) p[k] = (uint8_t)u;
}

static int same_in_dtype(double a, double b, sts_dtype dt) {
    uint8_t x[8], y[8];
    if (dt == STS_DTYPE_F64) return a == b;
    if (dt == STS_DTYPE_F16 || dt == STS_DTYPE_BF16) {
        uint8_t la[8], lb[8];
        f64_le(a, la);
        f64_le(b, lb);
        sts_convert(x, dt, la, STS_DTYPE_F64, 1, STS_ROUND_NEAREST_EVEN);
        sts_convert(y, dt, lb, STS_DTYPE_F64, 1, STS_ROUND_NEAREST_EVEN);
        return x[0] == y[0] && x[1] == y[1];
    }
    return (float)a == (float)b;  /* F32, and the F8 formats (exact in float) */
}
static void dump_value(const dump_ctx *c, uint64_t i) {
    double x = c->v ? le_f64(c->v + i * 8) : 0, ax = x < 0 ? -x : x;
    char buf[48], out[64], *m, *ex;
    int p, e, o = 0, k, nd;
    if (c->dt == STS_DTYPE_I64 || c->dt == STS_DTYPE_U64) {
        uint64_t u = 0;
        for (k = 7; k >= 0; k--) u = u << 8 | c->raw[i * 8 + (uint64_t)k];
        if (c->dt == STS_DTYPE_I64) printf("%lld", (long long)(int64_t)u);
        else printf("%llu", (unsigned long long)u);
        return;
    }
    if (c->dt == STS_DTYPE_BOOL) { printf(x != 0 ? "True" : "False"); return; }
    if (c->dt == STS_DTYPE_U8 || c->dt == STS_DTYPE_I8 || c->dt == STS_DTYPE_U16 || c->dt == STS_DTYPE_I16 ||
        c->dt == STS_DTYPE_U32 || c->dt == STS_DTYPE_I32) { printf("%.0f", x); return; }
    if (x != x) { printf("nan"); return; }
    if (x > 1.7976931348623157e308 || x < -1.7976931348623157e308) { printf(x > 0 ? "inf" : "-inf"); return; }
    if (x == 0) { printf(1 / x < 0 ? "-0." : "0."); return; }
    for (p = 1; p <= 17; p++) {  /* d.ddde+XX with p significant digits */
        snprintf(buf, sizeof buf, "%.*e", p - 1, x);
        if (same_in_dtype(strtod(buf, NULL), x, c->dt)) break;
    }
    ex = strchr(buf, 'e');
    e = atoi(ex + 1);
    *ex = 0;
    m = buf;
    if (*m == '-') { out[o++] = '-'; m++; }
    {   /* the digits without the point, trailing zeros dropped */
        char dig[24];
        for (nd = 0; *m; m++) if (*m != '.') dig[nd++] = *m;
        while (nd > 1 && dig[nd - 1] == '0') nd--;
        dig[nd] = 0;
        if (ax >= 1e-4 && ax < 1e16) {
            if (e >= 0) {
                for (k = 0; k <= e || k < nd; k++) {
                    if (k == e + 1) out[o++] = '.';
                    out[o++] = k < nd ? dig[k] : '0';
                }
                if (e + 1 >= nd) out[o++] = '.';
            } else {
                out[o++] = '0'; out[o++] = '.';
                for (k = 0; k < -e - 1; k++) out[o++] = '0';
                for (k = 0; k < nd; k++) out[o++] = dig[k];
            }
            out[o] = 0;
        } else {
            out[o++] = dig[0];
            if (nd > 1) { out[o++] = '.'; for (k = 1; k < nd; k++) out[o++] = dig[k]; }
            snprintf(out + o, sizeof out - (size_t)o, "e%c%02d", e < 0 ? '-' : '+', e < 0 ? -e : e);
        }
    }
    printf("%s", out);
}
static void dump_rec(const dump_ctx *c, const uint64_t *shape, uint32_t rank, uint32_t d, uint64_t base, uint64_t edge, int indent) {
    uint64_t i, n = shape[d], stride = 1;
    uint32_t k;
    for (k = d + 1; k < rank; k++) stride *= shape[k];
    printf("[");
    for (i = 0; i < n; i++) {
        if (n > 2 * edge && i == edge) { printf(d + 1 == rank ? "..., " : "...,\n%*s", d + 1 == rank ? 0 : indent + 1, ""); i = n - edge; }
        if (d + 1 == rank) dump_value(c, base + i);
        else dump_rec(c, shape, rank, d + 1, base + i * stride, edge, indent + 1);
        if (i + 1 < n) printf(d + 1 == rank ? ", " : ",\n%*s", d + 1 == rank ? 0 : indent + 1, "");
    }
    printf("]");
}
static int dump_tensor(const sts_file *f, const sts_tensor *t, uint64_t edge) {
    uint64_t numel = sts_tensor_numel(t), shape[65];
    uint32_t d, rank = t->rank;
    uint8_t *v = NULL;
    dump_ctx c;
    put_name(stdout, t->name, t->name_len, 0);
    printf(": %s ", sts_dtype_name(t->dtype));
    put_shape(stdout, t->shape, t->rank);
    printf("\n");
    c.raw = (const uint8_t *)sts_data(f, t);
    c.dt = t->dtype;
    c.v = NULL;
    for (d = 0; d < rank && d < 64; d++) shape[d] = t->shape[d];
    if (t->dtype == STS_DTYPE_C64) {  /* a trailing axis of 2: (re, im) */
        if (rank >= 64) { printf("(rank %u complex values: too many axes to show)\n", rank); return 0; }
        printf("(complex values: shown as interleaved re, im)\n");
        shape[rank++] = 2;
        numel *= 2;
        c.dt = STS_DTYPE_F32;
    }
    if (t->dtype != STS_DTYPE_I64 && t->dtype != STS_DTYPE_U64) {  /* decoded through the codecs */
        if (numel > ((uint64_t)1 << 31)) { printf("(%llu elements: too many to decode here)\n", (unsigned long long)numel); return 0; }
        if (!(v = (uint8_t *)malloc((size_t)(numel ? numel : 1) * 8))) { fprintf(stderr, "sts dump: out of memory\n"); return EXIT_INVALID; }
        if (sts_convert(v, STS_DTYPE_F64, c.raw, t->dtype, (size_t)(t->dtype == STS_DTYPE_C64 ? numel / 2 : numel), STS_ROUND_NEAREST_EVEN) != STS_OK) {
            printf("(%s values cannot be decoded)\n", sts_dtype_name(t->dtype));
            free(v);
            return 0;
        }
        c.v = v;
    }
    if (rank == 0) dump_value(&c, 0);
    else if (numel == 0) printf("[]");
    else dump_rec(&c, shape, rank, 0, 0, edge, 0);
    printf("\n");
    free(v);
    return 0;
}
static int cmd_dump(int argc, char **argv) {
    const char *path = NULL;
    uint64_t limit = 3;
    int i, names = 0, rc = 0, opts_done = 0;
    sts_file *f;
    sts_error e;
    for (i = 1; i < argc; i++) {
        if (!opts_done && strcmp(argv[i], "--") == 0) { opts_done = 1; continue; }
        if (!opts_done && strcmp(argv[i], "--limit") == 0) {
            if (i + 1 >= argc) return usage_error("--limit needs a positive number, got %s", "nothing");
            if (!parse_u64(argv[++i], &limit) || !limit) return usage_error("--limit needs a positive number, got %s", argv[i]);
        } else if (!opts_done && argv[i][0] == '-' && argv[i][1]) return usage_error("unknown option %s", argv[i]);
        else if (!path) path = argv[i];
        else names++;
    }
    if (!path) return usage_error("%s", "which FILE?");
    if (sts_open(path, NULL, &f, &e) != STS_OK) return fail(&e, path);
    if (!names) {
        size_t k;
        for (k = 0; k < sts_count(f) && !rc; k++) rc = dump_tensor(f, sts_at(f, k), limit);
    } else {
        int seen_path = 0;
        opts_done = 0;
        for (i = 1; i < argc && !rc; i++) {
            const sts_tensor *t;
            if (!opts_done && strcmp(argv[i], "--") == 0) { opts_done = 1; continue; }
            if (!opts_done && strcmp(argv[i], "--limit") == 0) { i++; continue; }
            if (!seen_path) { seen_path = 1; continue; }
            if (!(t = sts_find(f, argv[i], strlen(argv[i])))) { fprintf(stderr, "sts dump: %s has no tensor %s\n", path, argv[i]); rc = EXIT_INVALID; break; }
            rc = dump_tensor(f, t, limit);
        }
    }
    sts_close(f);
    return rc;
}

/* ---- get -------------------------------------------------------------------------------------- */
static int cmd_get(int argc, char **argv) {
    const char *dir = NULL, *key = NULL, *out = NULL;
    int i, npy = 0, opts_done = 0;
    sts_dataset *ds;
    sts_read_config rc;
    sts_view v;
    sts_error e;
    for (i = 1; i < argc; i++) {
        if (!opts_done && strcmp(argv[i], "--") == 0) { opts_done = 1; continue; }
        if (!opts_done && (strcmp(argv[i], "-o") == 0 || strcmp(argv[i], "--output") == 0)) { if (i + 1 >= argc) return usage_error("%s needs a file", argv[i]); out = argv[++i]; }
        else if (!opts_done && strcmp(argv[i], "--npy") == 0) npy = 1;
        else if (!opts_done && argv[i][0] == '-' && argv[i][1]) return usage_error("unknown option %s (a key that begins with '-' goes after --)", argv[i]);
        else if (!dir) dir = argv[i];
        else if (!key) key = argv[i];
        else return usage_error("unexpected argument %s", argv[i]);
    }
    if (!dir || !key) return usage_error("%s", "usage: sts get DIR KEY [-o FILE] [--npy]");
    if (npy && !out) return usage_error("%s", "--npy writes a file: give -o FILE");
    memset(&rc, 0, sizeof rc);
    rc.infer_schema = 1;
    if (sts_dataset_open(dir, &rc, NULL, &ds, &e) != STS_OK) return fail(&e, dir);
    if (sts_dataset_get(ds, key, strlen(key), 1, &v, &e) != STS_OK) {
        sts_dataset_info info = sts_dataset_describe(ds);
        int batch = info.has_manifest && !info.kv;
        sts_dataset_close(ds);
        fail(&e, key);
        if (batch && e.code == STS_ERR_NOT_FOUND)
            fprintf(stderr, "(a batch-mode dataset keys its tensors as <shard file>/<column>, e.g. %s/<column>; sts inspect lists the shards)\n",
                    "part-00000-0000-<uuid>.safetensors");
        return EXIT_INVALID;
    }
    if (npy) {
        char err[600];
        if (npy_save(out, v.dtype, v.rank, v.shape, v.data, v.nbytes, err, sizeof err) != 0) {
            fprintf(stderr, "sts get: %s\n", err);
            sts_dataset_close(ds);
            return EXIT_INVALID;
        }
    } else {
        FILE *o = out ? fopen(out, "wb") : stdout;
        if (!o || (v.nbytes && fwrite(v.data, 1, (size_t)v.nbytes, o) != (size_t)v.nbytes) || (out && fclose(o) != 0)) {
            fprintf(stderr, "sts get: cannot write %s\n", out ? out : "standard output");
            sts_dataset_close(ds);
            return EXIT_INVALID;
        }
        if (!out) fflush(stdout);
    }
    fprintf(stderr, "%s: %s ", key, sts_dtype_name(v.dtype));
    put_shape(stderr, v.shape, v.rank);
    fprintf(stderr, ", %llu bytes from %s\n", (unsigned long long)v.nbytes, sts_dataset_file(ds, v.file));
    sts_dataset_close(ds);
    return 0;
}

/* ---- pack ------------------------------------------------------------------------------------- */
typedef struct pack_col {
    char name[256];
    npy_array a;
    uint64_t row_bytes, rows;
    uint8_t *conv;        /* --dtype with an element type arrays cannot hold: the column, converted */
    sts_dtype conv_dtype;
} pack_col;

static int pack_elem_ok(sts_dtype d) {  /* element types a numeric-array cell holds (sts_column.elem) */
    return d == STS_DTYPE_F32 || d == STS_DTYPE_F64 || d == STS_DTYPE_I32 || d == STS_DTYPE_I64 ||
           d == STS_DTYPE_I16 || d == STS_DTYPE_I8 || d == STS_DTYPE_U8;
}
/* JSON string body for a column name (quotes and backslashes escaped, controls as \u00XX). */
static size_t json_escape(char *dst, size_t cap, const char *s) {
    size_t o = 0;
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        char tmp[8];
        const char *piece = tmp;
        if (c == '"') piece = "\\\"";
        else if (c == '\\') piece = "\\\\";
        else if (c < 0x20) snprintf(tmp, sizeof tmp, "\\u%04x", c);
        else { tmp[0] = (char)c; tmp[1] = 0; }
        o += (size_t)snprintf(dst + (o < cap ? o : cap), o < cap ? cap - o : 0, "%s", piece);
    }
    return o;
}

static void progress(uint64_t done, uint64_t total, double t0) {
    int width = 40, filled = total ? (int)(width * done / total) : width, i;
    double el = now_s() - t0;
    fprintf(stderr, "\r[");
    for (i = 0; i < width; i++) fputc(i < filled ? '#' : '.', stderr);
    fprintf(stderr, "] %llu/%llu rows %.1fs", (unsigned long long)done, (unsigned long long)total, el);
    if (done == total) fputc('\n', stderr);
}
static int cmd_pack(int argc, char **argv) {
    const char *out = NULL, *keys_file = NULL, *name_col = NULL, *dtype = NULL;
    pack_col cols[64];
    size_t ncols = 0, c;
    uint64_t rows = 0, r;
    sts_write_config cfg;
    sts_column schema[65];
    sts_error e;
    char *keys_text = NULL, **keys = NULL, *msg;
    size_t msg_len, kc = 0;
    int i, code = 0, key_col = -1, tty = isatty(2), created = 0;
    sts_task_writer *w;
    sts_dataset_summary sum;
    double t0 = now_s();
    memset(&cfg, 0, sizeof cfg);
    for (i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        const char *opt = NULL;
        if (strcmp(a, "--column") == 0 || strcmp(a, "-c") == 0) {
            const char *eq;
            if (!v || !(eq = strchr(v, '=')) || eq == v) return usage_error("--column takes NAME=FILE.npy, got %s", v ? v : "nothing");
            if (ncols == 64) return usage_error("%s", "at most 64 columns");
            if ((size_t)(eq - v) >= sizeof cols[0].name) return usage_error("column name too long: %s", v);
            if (memchr(v, ',', (size_t)(eq - v))) return usage_error("column names cannot hold ',' (the columns option is a comma-separated list): %s", v);
            memset(&cols[ncols], 0, sizeof cols[ncols]);
            memcpy(cols[ncols].name, v, (size_t)(eq - v));
            {
                char err[600];
                if (npy_load(eq + 1, &cols[ncols].a, err, sizeof err) != 0) { fprintf(stderr, "sts pack: %s\n", err); code = EXIT_INVALID; goto done; }
            }
            ncols++;
            i++;
            continue;
        }
        if (strcmp(a, "--keys") == 0) { if (!v) return usage_error("%s", "--keys needs a text file"); keys_file = v; i++; continue; }
        if (strcmp(a, "--generate-index") == 0) { sts_write_config_set(&cfg, "generate_index", "true", &e); continue; }
        if (strcmp(a, "--overwrite") == 0) { sts_write_config_set(&cfg, "mode", "overwrite", &e); continue; }
        if (strcmp(a, "--no-fsync") == 0) { sts_write_config_set(&cfg, "durable", "false", &e); continue; }
        if (strcmp(a, "--batch-size") == 0) opt = "batch_size";
        else if (strcmp(a, "--name-col") == 0) opt = "name_col";
        else if (strcmp(a, "--kv-separator") == 0) opt = "kv_separator";
        else if (strcmp(a, "--duplicates") == 0) opt = "duplicatesStrategy";
        else if (strcmp(a, "--dtype") == 0) opt = "dtype";
        else if (strcmp(a, "--rounding") == 0) opt = "rounding";
        else if (strcmp(a, "--tail") == 0) opt = "tail_strategy";
        else if (strcmp(a, "--target-shard-size-mb") == 0) opt = "target_shard_size_mb";
        if (opt) {
            if (!v) return usage_error("%s needs a value", a);
            if (strcmp(opt, "name_col") == 0) { name_col = v; i++; continue; }
            if (strcmp(opt, "dtype") == 0) dtype = v;
            if (sts_write_config_set(&cfg, opt, v, &e) != STS_OK) {
                fprintf(stderr, "sts pack: %s %s: %s\n(try: sts pack --help)\n", a, v, e.message);
                return EXIT_USAGE;
            }
            i++;
            continue;
        }
        if (a[0] == '-' && a[1]) return usage_error("unknown option %s", a);
        if (out) return usage_error("one output folder, got another: %s", a);
        out = a;
    }
    if (!out) return usage_error("%s", "usage: sts pack OUT_DIR --column NAME=FILE.npy ... (--batch-size N | --keys FILE | --name-col COL)");
    if (!ncols) return usage_error("%s", "give at least one --column NAME=FILE.npy");
    if ((keys_file != NULL) + (name_col != NULL) + (cfg.batch_size != 0) != 1) return usage_error("%s", "give exactly one of --batch-size, --keys or --name-col");
    for (c = 0; c < ncols; c++) {  /* the first axis is rows */
        npy_array *a = &cols[c].a;
        uint32_t d;
        if (a->rank == 0) { fprintf(stderr, "sts pack: column %s is a scalar; its first axis must count rows\n", cols[c].name); code = EXIT_INVALID; goto done; }
        cols[c].rows = a->shape[0];
        cols[c].row_bytes = a->shape[0] ? a->nbytes / a->shape[0] : 0;
        for (d = 1, cols[c].row_bytes = sts_dtype_bits(a->dtype) / 8; d < a->rank; d++) cols[c].row_bytes *= a->shape[d];
        if (c && cols[c].rows != rows) { fprintf(stderr, "sts pack: column %s has %llu rows, %s has %llu\n", cols[c].name, (unsigned long long)cols[c].rows, cols[0].name, (unsigned long long)rows); code = EXIT_INVALID; goto done; }
        rows = cols[c].rows;
        if (name_col && strcmp(cols[c].name, name_col) == 0) key_col = (int)c;
    }
    if (name_col && key_col < 0) { fprintf(stderr, "sts pack: --name-col %s is not one of the columns\n", name_col); code = EXIT_USAGE; goto done; }
    if (key_col >= 0 && (cols[key_col].a.rank != 1 || (cols[key_col].a.dtype != STS_DTYPE_I64 && cols[key_col].a.dtype != STS_DTYPE_I32 && cols[key_col].a.dtype != STS_DTYPE_U32 && cols[key_col].a.dtype != STS_DTYPE_U64))) {
        fprintf(stderr, "sts pack: --name-col %s must be a 1-D integer column (its values become the keys)\n", name_col); code = EXIT_INVALID; goto done;
    }
    for (c = 0; dtype && c < ncols; c++) {  /* --dtype: element types arrays cannot hold are converted first */
        npy_array *a = &cols[c].a;
        uint64_t n = a->rank ? a->nbytes / (sts_dtype_bits(a->dtype) / 8) : 0;
        sts_result cr;
        if ((int)c == key_col || pack_elem_ok(a->dtype)) continue;
        if (a->dtype == STS_DTYPE_C64 || !sts_convert_supported(cfg.dtype, a->dtype)) {  /* C64 would need two values each */
            fprintf(stderr, "sts pack: --dtype %s: column %s holds %s, which cannot be converted to %s (pack it without --dtype to keep it as it is)\n",
                    dtype, cols[c].name, sts_dtype_name(a->dtype), sts_dtype_name(cfg.dtype));
            code = EXIT_USAGE; goto done;
        }
        cols[c].conv_dtype = cfg.dtype;
        cols[c].conv = (uint8_t *)malloc(n ? (size_t)n * (sts_dtype_bits(cfg.dtype) / 8) : 1);
        if (!cols[c].conv) { fprintf(stderr, "sts pack: column %s: out of memory converting it to %s\n", cols[c].name, dtype); code = EXIT_INVALID; goto done; }
        cr = sts_convert_ex(cols[c].conv, cfg.dtype, a->data, a->dtype, (size_t)n, (sts_rounding)cfg.rounding, &e);
        if (cr != STS_OK) { code = fail(&e, cols[c].name); goto done; }
        cols[c].row_bytes = cols[c].row_bytes / (sts_dtype_bits(a->dtype) / 8) * (sts_dtype_bits(cfg.dtype) / 8);
    }
    if (keys_file) {  /* one key per line */
        FILE *kf = fopen(keys_file, "rb");
        long sz;
        size_t k;
        if (!kf) { fprintf(stderr, "sts pack: --keys %s: %s\n", keys_file, strerror(errno)); code = EXIT_INVALID; goto done; }
        fseek(kf, 0, SEEK_END); sz = ftell(kf); fseek(kf, 0, SEEK_SET);
        keys_text = (char *)malloc((size_t)sz + 1);
        keys = (char **)malloc(((size_t)rows + 1) * sizeof *keys);
        if (!keys_text || !keys || fread(keys_text, 1, (size_t)sz, kf) != (size_t)sz) { fclose(kf); fprintf(stderr, "sts pack: cannot read %s\n", keys_file); code = EXIT_INVALID; goto done; }
        fclose(kf);
        keys_text[sz] = 0;
        for (k = 0, kc = 0; k < (size_t)sz && kc <= rows;) {
            char *line = keys_text + k, *nl = strchr(line, '\n');
            if (nl) { *nl = 0; if (nl > line && nl[-1] == '\r') nl[-1] = 0; k = (size_t)(nl - keys_text) + 1; } else k = (size_t)sz;
            if (kc < rows) keys[kc] = line;
            kc++;
        }
        if (kc != rows) { fprintf(stderr, "sts pack: %s has %zu keys, the columns have %llu rows\n", keys_file, kc, (unsigned long long)rows); code = EXIT_INVALID; goto done; }
    }
    /* schema: the key (KV), then each column; with --dtype columns are numeric arrays encoded to it */
    {
        size_t s = 0;
        const char *kv_name = name_col ? name_col : "__key";
        char cols_opt[64 * 260];
        size_t co = 0;
        if (keys_file || name_col) {
            schema[s].name = kv_name; schema[s].kind = STS_VALUE_STRING; schema[s].elem = STS_DTYPE_U8; s++;
            if (sts_write_config_set(&cfg, "name_col", kv_name, &e) != STS_OK) { fprintf(stderr, "sts pack: %s\n", e.message); code = EXIT_USAGE; goto done; }
        }
        cols_opt[0] = 0;
        for (c = 0; c < ncols; c++) {
            if ((int)c == key_col) continue;
            schema[s].name = cols[c].name;
            schema[s].kind = dtype && !cols[c].conv ? STS_VALUE_ARRAY : STS_VALUE_TENSOR;
            schema[s].elem = cols[c].conv ? cols[c].conv_dtype : cols[c].a.dtype;
            s++;
            co += (size_t)snprintf(cols_opt + co, sizeof cols_opt - co, "%s%s", co ? "," : "", cols[c].name);
        }
        if (dtype) {  /* per-sample shapes of the array columns */
            static char shapes[64 * (256 * 6 + 8 + 32 * 22)];
            size_t so = 0;
            so += (size_t)snprintf(shapes + so, sizeof shapes - so, "{");
            for (c = 0; c < ncols; c++) {
                uint32_t d;
                char esc[256 * 6 + 1];
                if ((int)c == key_col || cols[c].conv) continue;
                json_escape(esc, sizeof esc, cols[c].name);
                so += (size_t)snprintf(shapes + so, sizeof shapes - so, "%s\"%s\": [", so > 1 ? ", " : "", esc);
                for (d = 1; d < cols[c].a.rank; d++) so += (size_t)snprintf(shapes + so, sizeof shapes - so, d > 1 ? ", %llu" : "%llu", (unsigned long long)cols[c].a.shape[d]);
                so += (size_t)snprintf(shapes + so, sizeof shapes - so, "]");
            }
            snprintf(shapes + so, sizeof shapes - so, "}");
            if (sts_write_config_set(&cfg, "shapes", shapes, &e) != STS_OK) { fprintf(stderr, "sts pack: %s\n", e.message); code = EXIT_USAGE; goto done; }
        }
        if (sts_write_config_set(&cfg, "columns", cols_opt, &e) != STS_OK) { fprintf(stderr, "sts pack: %s\n", e.message); code = EXIT_USAGE; goto done; }
        created = !is_dir(out);
        if (sts_dataset_prepare(out, &cfg, schema, s, NULL, &e) != STS_OK) {
            code = fail(&e, out);
            if (e.code == STS_ERR_OPTION) code = EXIT_USAGE;
            if (e.code == STS_ERR_EXISTS) fprintf(stderr, "(pass --overwrite to replace what is there)\n");
            goto done;
        }
        if (sts_task_open(out, 0, &cfg, schema, s, NULL, &w, &e) != STS_OK) { code = fail(&e, out); goto done; }
        for (r = 0; r < rows; r++) {
            sts_value row[65];
            char kbuf[32];
            size_t k = 0;
            memset(row, 0, sizeof row);
            if (keys_file) { row[k].data = keys[r]; row[k].size = strlen(keys[r]); k++; }
            else if (key_col >= 0) {
                const uint8_t *p = cols[key_col].a.data + r * cols[key_col].row_bytes;
                unsigned long long kvv = 0;
                int b, wdt = (int)cols[key_col].row_bytes;
                for (b = wdt - 1; b >= 0; b--) kvv = kvv << 8 | p[b];
                if (cols[key_col].a.dtype == STS_DTYPE_I64 && (kvv >> 63)) snprintf(kbuf, sizeof kbuf, "%lld", (long long)kvv);
                else if (cols[key_col].a.dtype == STS_DTYPE_I32 && (kvv >> 31)) snprintf(kbuf, sizeof kbuf, "%d", (int)(int32_t)(uint32_t)kvv);
                else snprintf(kbuf, sizeof kbuf, "%llu", kvv);
                row[k].data = kbuf; row[k].size = strlen(kbuf); k++;
            }
            for (c = 0; c < ncols; c++) {
                const npy_array *a = &cols[c].a;
                if ((int)c == key_col) continue;
                row[k].data = (cols[c].conv ? cols[c].conv : a->data) + r * cols[c].row_bytes;
                if (dtype && !cols[c].conv) row[k].size = cols[c].row_bytes / (sts_dtype_bits(a->dtype) / 8);
                else {
                    row[k].size = cols[c].row_bytes;
                    row[k].dtype = cols[c].conv ? cols[c].conv_dtype : a->dtype;
                    row[k].rank = a->rank - 1;
                    row[k].shape = a->shape + 1;
                }
                k++;
            }
            if (sts_task_write(w, row, &e) != STS_OK) {
                char where[64];
                if (tty) fputc('\n', stderr);
                snprintf(where, sizeof where, "row %llu", (unsigned long long)r);
                code = fail(&e, where);
                sts_task_close(w);
                goto done;
            }
            if (tty && (r % 4096 == 0 || r + 1 == rows)) progress(r + 1, rows, t0);
        }
        if (sts_task_commit(w, &msg, &msg_len, &e) != STS_OK) { code = fail(&e, out); sts_task_close(w); goto done; }
        sts_task_close(w);
        if (sts_dataset_commit(out, &cfg, (const char *const *)&msg, &msg_len, 1, NULL, &sum, &e) != STS_OK) code = fail(&e, out);
        else printf("%s: %llu shard%s, %llu samples, %llu tensors, %llu bytes in %.2fs\n", out, (unsigned long long)sum.shards, sum.shards == 1 ? "" : "s",
                    (unsigned long long)sum.samples, (unsigned long long)sum.tensors, (unsigned long long)sum.bytes, now_s() - t0);
        sts_free(NULL, msg, msg_len + 1);
    }
done:
    if (code && created && out) rmdir(out);  /* a folder this run created goes again when empty */
    for (c = 0; c < ncols; c++) { npy_free(&cols[c].a); free(cols[c].conv); }
    free(keys_text);
    free(keys);
    return code;
}

/* ---- index ------------------------------------------------------------------------------------ */
static int cmd_index(int argc, char **argv) {
    sts_error e;
    sts_dataset_summary s;
    if (argc != 2 || argv[1][0] == '-') return usage_error("%s", "usage: sts index DIR");
    if (sts_dataset_reindex(argv[1], NULL, &s, &e) != STS_OK) return fail(&e, argv[1]);
    printf("%s: _tensor_index.csv and _tensor_index.json rebuilt from %llu shards (%llu tensors)\n", argv[1],
           (unsigned long long)s.shards, (unsigned long long)s.tensors);
    return 0;
}

/* ---- check ------------------------------------------------------------------------------------ */
static int cmd_check(int argc, char **argv) {
    const char *dir;
    sts_dataset *ds;
    sts_read_config rc;
    sts_dataset_info info;
    sts_scan_spec spec;
    sts_scan *sc;
    const sts_view *cells;
    size_t n, i, problems = 0, index_problems = 0;
    uint64_t tensors = 0, bytes = 0, samples = 0;
    sts_error e;
    sts_options strict;
    int single;
    if (argc != 2 || (argv[1][0] == '-' && argv[1][1])) return usage_error("%s", "usage: sts check DIR|FILE");
    dir = argv[1];
    single = !is_dir(dir);
    memset(&rc, 0, sizeof rc);
    rc.infer_schema = 1;
    /* open: the manifest's shards exist with their sizes; the index is read and tied to the manifest */
    if (sts_dataset_open(dir, &rc, NULL, &ds, &e) != STS_OK) return fail(&e, dir);
    info = sts_dataset_describe(ds);
    memset(&strict, 0, sizeof strict);
    strict.strict = 1;
    for (i = 0; i < info.files; i++) {  /* every shard valid, strictly */
        char path[4096];
        sts_file *f;
        uint64_t s = sts_dataset_file_samples(ds, i);
        const char *name = sts_dataset_file(ds, i);
        if (single || !name) snprintf(path, sizeof path, "%s", dir);
        else snprintf(path, sizeof path, "%s/%s", dir, name);
        if (s != UINT64_MAX) samples += s;
        if (sts_open(path, &strict, &f, &e) != STS_OK) { printf("FAIL %s: %s: %s\n", sts_dataset_file(ds, i), sts_result_name(e.code), e.message); problems++; continue; }
        bytes += sts_file_size(f);
        sts_close(f);
    }
    if (info.has_manifest && !problems && bytes != info.total_bytes) {
        printf("FAIL dataset_manifest.json: total_bytes %llu, but the shards hold %llu\n", (unsigned long long)info.total_bytes, (unsigned long long)bytes);
        problems++;
    }
    if (info.has_manifest && !problems && samples != info.total_samples) {
        printf("FAIL dataset_manifest.json: total_samples %llu, but the shards' samples_count add up to %llu\n", (unsigned long long)info.total_samples, (unsigned long long)samples);
        problems++;
    }
    if (info.index_stale) { printf("FAIL _tensor_index.json belongs to another dataset_id: rebuild it with sts index %s\n", dir); index_problems++; }
    /* every tensor (winners only in lastWin datasets); with an index, each one looked up through it,
       which checks the index entry against the header */
    memset(&spec, 0, sizeof spec);
    spec.long_form = 1;
    if (!problems && sts_scan_open(ds, &spec, &sc, &e) == STS_OK) {
        sts_result r;
        while ((r = sts_scan_next(sc, &cells, &n, &e)) == STS_OK && cells) {
            sts_view v;
            tensors++;
            if (!info.has_index || !info.kv) continue;
            if (sts_dataset_get(ds, cells[0].key, cells[0].key_len, 1, &v, &e) != STS_OK) { printf("FAIL %s\n", e.message); index_problems++; }
            else if (v.file != cells[0].file || v.nbytes != cells[0].nbytes) {
                printf("FAIL the index places ");
                put_name(stdout, cells[0].key, cells[0].key_len, 1);
                printf(" in %s, the scan found it in %s\n", sts_dataset_file(ds, v.file), sts_dataset_file(ds, cells[0].file));
                index_problems++;
            }
        }
        if (r != STS_OK) { printf("FAIL %s\n", e.message); problems++; }
        sts_scan_close(sc);
    } else if (!problems) { printf("FAIL %s\n", e.message); problems++; }
    if (problems || index_problems)
        printf("%s: %zu shard%s; problems: %zu with the shards or manifest, %zu with the index: PROBLEMS\n", dir, info.files,
               info.files == 1 ? "" : "s", problems, index_problems);
    else
        printf("%s: %zu shard%s, %llu tensors, %llu bytes, all valid (strict)%s%s: OK\n", dir, info.files, info.files == 1 ? "" : "s",
               (unsigned long long)tensors, (unsigned long long)bytes, info.has_manifest ? ", manifest consistent" : ", no manifest",
               info.has_index ? (info.kv ? ", index agrees with every header" : ", index present") : ", no index");
    sts_dataset_close(ds);
    return problems || index_problems ? EXIT_INVALID : 0;
}

/* ---- convert ---------------------------------------------------------------------------------- */
typedef struct conv { const sts_file *f; const sts_tensor *t; sts_dtype to; sts_rounding rnd; } conv;
static sts_result conv_produce(void *user, const sts_tensor_spec *spec, sts_stream *out) {  /* streamed in 1 MiB pieces */
    const conv *c = (const conv *)user;
    static uint8_t buf[1 << 20];
    uint64_t numel = sts_tensor_numel(c->t), i = 0;
    size_t in_sz = sts_dtype_bits(c->t->dtype) / 8, out_sz = sts_dtype_bits(c->to) / 8, chunk = sizeof buf / out_sz;
    const uint8_t *src = (const uint8_t *)sts_data(c->f, c->t);
    (void)spec;
    while (i < numel) {
        size_t n = numel - i < chunk ? (size_t)(numel - i) : chunk;
        sts_result r = sts_convert(buf, c->to, src + i * in_sz, c->t->dtype, n, c->rnd);
        if (r == STS_OK) r = sts_stream_write(out, buf, n * out_sz);
        if (r != STS_OK) return r;
        i += n;
    }
    return STS_OK;
}
static int cmd_convert(int argc, char **argv) {
    const char *in = NULL, *out = NULL;
    sts_dtype to = STS_DTYPE_COUNT;
    sts_rounding rnd = STS_ROUND_NEAREST_EVEN;
    sts_file *f;
    sts_error e;
    sts_tensor_spec *specs;
    conv *cv;
    sts_kv *meta = NULL;
    size_t i, n, converted = 0;
    int k;
    for (k = 1; k < argc; k++) {
        if (strcmp(argv[k], "--dtype") == 0) {
            static const struct { const char *n; sts_dtype d; } fl[4] = { { "F16", STS_DTYPE_F16 }, { "BF16", STS_DTYPE_BF16 }, { "F32", STS_DTYPE_F32 }, { "F64", STS_DTYPE_F64 } };
            int j;
            to = STS_DTYPE_COUNT;
            for (j = 0; k + 1 < argc && j < 4; j++) if (strcasecmp_ascii(argv[k + 1], fl[j].n)) to = fl[j].d;
            if (to == STS_DTYPE_COUNT) return usage_error("--dtype takes F16, BF16, F32 or F64, got %s", k + 1 < argc ? argv[k + 1] : "nothing");
            k++;
        } else if (strcmp(argv[k], "--rounding") == 0) {
            if (k + 1 >= argc) return usage_error("--rounding takes truncate or nearest_even, got %s", "nothing");
            if (strcmp(argv[k + 1], "truncate") == 0) rnd = STS_ROUND_TRUNCATE;
            else if (strcmp(argv[k + 1], "nearest_even") == 0) rnd = STS_ROUND_NEAREST_EVEN;
            else return usage_error("--rounding takes truncate or nearest_even, got %s", argv[k + 1]);
            k++;
        } else if (argv[k][0] == '-' && argv[k][1]) return usage_error("unknown option %s", argv[k]);
        else if (!in) in = argv[k];
        else if (!out) out = argv[k];
        else return usage_error("unexpected argument %s", argv[k]);
    }
    if (!in || !out || to == STS_DTYPE_COUNT) return usage_error("%s", "usage: sts convert IN OUT --dtype F16|BF16|F32|F64 [--rounding truncate|nearest_even]");
    if (sts_open(in, NULL, &f, &e) != STS_OK) return fail(&e, in);
    n = sts_count(f);
    specs = (sts_tensor_spec *)calloc(n ? n : 1, sizeof *specs);
    cv = (conv *)calloc(n ? n : 1, sizeof *cv);
    if (sts_has_metadata(f)) {
        meta = (sts_kv *)calloc(sts_metadata_count(f) + 1, sizeof *meta);
        for (i = 0; meta && i < sts_metadata_count(f); i++) meta[i] = *sts_metadata_at(f, i);
    }
    if (!specs || !cv || (sts_has_metadata(f) && !meta)) { fprintf(stderr, "sts convert: out of memory\n"); sts_close(f); return EXIT_INVALID; }
    for (i = 0; i < n; i++) {
        const sts_tensor *t = sts_at(f, i);
        int floating = t->dtype == STS_DTYPE_F16 || t->dtype == STS_DTYPE_BF16 || t->dtype == STS_DTYPE_F32 || t->dtype == STS_DTYPE_F64;
        specs[i].name = t->name; specs[i].name_len = t->name_len; specs[i].rank = t->rank; specs[i].shape = t->shape;
        if (floating && t->dtype != to) {
            cv[i].f = f; cv[i].t = t; cv[i].to = to; cv[i].rnd = rnd;
            specs[i].dtype = to;
            specs[i].data_size = sts_tensor_numel(t) * (sts_dtype_bits(to) / 8);
            specs[i].produce = conv_produce;
            specs[i].produce_user = &cv[i];
            converted++;
        } else {  /* everything else is copied as it is */
            specs[i].dtype = t->dtype;
            specs[i].data = sts_data(f, t);
            specs[i].data_size = sts_tensor_nbytes(t);
        }
    }
    if (sts_write_path(out, specs, n, meta, meta ? sts_metadata_count(f) : 0, NULL, &e) != STS_OK) {
        free(specs); free(cv); free(meta); sts_close(f);
        return fail(&e, out);
    }
    printf("%s: %zu of %zu tensors converted to %s (%s)\n", out, converted, n, sts_dtype_name(to), rnd == STS_ROUND_TRUNCATE ? "truncate" : "nearest_even");
    free(specs); free(cv); free(meta);
    sts_close(f);
    return 0;
}

/* ---- bench ------------------------------------------------------------------------------------ */
static int cmd_bench(int argc, char **argv) {
    enum { NT = 10000, REPS = 20 };
    size_t i, cap = (size_t)NT * 140 + 1024, len = 0;
    char *h = (char *)malloc(cap + 8);
    uint64_t off = 0, total;
    double best = 1e9, t;
    int rep;
    sts_file *f;
    sts_error e;
    size_t nconv = (size_t)64 << 20;
    float *src;
    uint16_t *dst;
    (void)argv;
    if (argc > 1) return usage_error("unexpected argument %s", argv[1]);
    if (!h) return EXIT_INVALID;
    /* a writer-shaped header of 10,000 BF16 tensors */
    len += (size_t)snprintf(h + 8 + len, cap - len, "{\"__metadata__\":{\"format\":\"pt\"}");
    for (i = 0; i < NT; i++) {
        uint64_t sz = 4096ull * 1024 * 2;
        len += (size_t)snprintf(h + 8 + len, cap - len, ",\"model.layers.%zu.mlp.experts.%zu.up_proj.weight\":{\"dtype\":\"BF16\",\"shape\":[4096,1024],\"data_offsets\":[%llu,%llu]}",
                                i / 100, i % 100, (unsigned long long)off, (unsigned long long)(off + sz));
        off += sz;
    }
    h[8 + len++] = '}';
    while (len % 8) h[8 + len++] = ' ';
    for (i = 0; i < 8; i++) h[i] = (char)((uint64_t)len >> (8 * i));
    total = 8 + len + off;
    for (rep = 0; rep < REPS; rep++) {
        double t0 = now_s();
        if (sts_parse_header(h, 8 + len, total, NULL, &f, &e) != STS_OK) { free(h); return fail(&e, "bench header"); }
        t = now_s() - t0;
        if (t < best) best = t;
        sts_close(f);
    }
    printf("header parse + validation + name index: %zu tensors, %.2f MB header: %.0f MB/s (best of %d)\n", (size_t)NT, len / 1e6, len / 1e6 / best, REPS);
    free(h);
    src = (float *)malloc(nconv * sizeof *src);
    dst = (uint16_t *)malloc(nconv * sizeof *dst);
    if (!src || !dst) { free(src); free(dst); return EXIT_INVALID; }
    for (i = 0; i < nconv; i++) src[i] = (float)i * 0.001f - 1000.0f;
    best = 1e9;
    for (rep = 0; rep < 5; rep++) {
        double t0 = now_s();
        sts_convert(dst, STS_DTYPE_BF16, src, STS_DTYPE_F32, nconv, STS_ROUND_NEAREST_EVEN);
        t = now_s() - t0;
        if (t < best) best = t;
    }
    printf("F32 -> BF16 (nearest even), %zu MiB in: %.1f GB/s of input+output (best of 5)\n", nconv * 4 >> 20, nconv * 6 / 1e9 / best);
    best = 1e9;
    for (rep = 0; rep < 5; rep++) {
        double t0 = now_s();
        memcpy(dst, src, nconv * 2);
        t = now_s() - t0;
        if (t < best) best = t;
    }
    printf("memcpy of the same output size for comparison: %.1f GB/s of input+output\n", nconv * 4 / 1e9 / best);
    free(src);
    free(dst);
    return 0;
}

/* ---- the command table ------------------------------------------------------------------------ */
typedef struct command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *usage;
    const char *help;
} command;

static const command commands[] = {
    { "verify", cmd_verify, "sts verify [--strict] FILE...",
      "Validate each file as the Hugging Face reference does (with --strict, also what the format\n"
      "text forbids). Reads only the 8 + N header bytes. One line per file:\n"
      "  FILE<TAB>OK<TAB>N_TENSORS\n"
      "  FILE<TAB>ERR<TAB>RESULT_NAME<TAB>message\n"
      "Exit 0 if every file is valid, 1 if any is not, 2 on usage errors." },
    { "inspect", cmd_inspect, "sts inspect [--json] FILE|DIR",
      "A file: a table of its tensors (name, dtype, shape, bytes, data offsets) and its metadata.\n"
      "A dataset folder: the manifest summary, the schema and per-shard counts.\n"
      "--json prints the same as one JSON object." },
    { "dump", cmd_dump, "sts dump [--limit N] FILE [NAME...]",
      "Decode tensor values through the codecs and print them (all tensors, or the named ones).\n"
      "Each value is written as numpy's repr writes it: the fewest digits that read back to the\n"
      "same value of its own dtype (F16 and BF16 too); integers exactly. An axis longer than 2N\n"
      "shows its first and last N values (--limit N, numpy's edgeitems, default 3). -- ends the\n"
      "options." },
    { "get", cmd_get, "sts get DIR KEY [-o FILE] [--npy]",
      "Look KEY up in a dataset (through its tensor index, else its headers) and write the tensor's\n"
      "raw bytes to FILE or standard output, or, with --npy, a .npy file numpy loads. KV datasets\n"
      "key tensors as <key><separator><column>; batch datasets as <shard file>/<column>. A KEY that\n"
      "begins with '-' goes after --." },
    { "pack", cmd_pack, "sts pack OUT_DIR --column NAME=FILE.npy ... (--batch-size N | --keys FILE | --name-col COL) [options]",
      "Build a dataset from .npy files, one per column, whose first axis is rows.\n"
      "  --batch-size N               batch mode: N rows per file\n"
      "  --keys FILE                  KV mode, one key per line of FILE\n"
      "  --name-col COL               KV mode, keys from the 1-D integer column COL\n"
      "  --kv-separator S             between key and column in tensor names (default __)\n"
      "  --duplicates fail|lastWin    KV mode duplicates (default fail)\n"
      "  --dtype D                    encode every column to D (F16 F32 F64 BF16 U8 I8 U16 I16 U32 I32 U64 I64)\n"
      "  --rounding truncate|nearest_even   F16/BF16 rounding (default truncate, the connector's)\n"
      "  --tail drop|pad|write        batch mode: the last, partial batch (default write)\n"
      "  --target-shard-size-mb N     KV mode shard size, 50..1000 (default 300)\n"
      "  --generate-index             write _tensor_index.csv and _tensor_index.json\n"
      "  --overwrite                  replace an existing dataset in OUT_DIR\n"
      "  --no-fsync                   skip fsync (faster, not crash-safe)\n"
      "A progress bar goes to standard error when it is a terminal." },
    { "index", cmd_index, "sts index DIR",
      "Rebuild _tensor_index.csv and _tensor_index.json from the dataset's shard headers." },
    { "check", cmd_check, "sts check DIR|FILE",
      "Verify a whole dataset: every shard valid (strict), the manifest's counts and sizes match,\n"
      "and the index belongs to the manifest and agrees with the headers. Exit 1 on any problem." },
    { "convert", cmd_convert, "sts convert IN OUT --dtype F16|BF16|F32|F64 [--rounding truncate|nearest_even]",
      "Convert every floating tensor (F16, BF16, F32, F64) of IN to the dtype and write OUT (other\n"
      "tensors and the metadata are copied). Default rounding: nearest_even, as PyTorch does." },
    { "bench", cmd_bench, "sts bench",
      "Quick benchmarks on this machine: header parsing and the F32 -> BF16 codec beside memcpy." },
    { "rules", cmd_rules, "sts rules", "Print the validation-rule table (rule, result code, reference variant)." },
};
#define NCOMMANDS (sizeof commands / sizeof commands[0])

static void usage(FILE *to) {
    size_t i;
    fprintf(to, "sts %s - safetensors_spark.h command-line tool\n\nusage:\n", STS_VERSION_STRING);
    for (i = 0; i < NCOMMANDS; i++) fprintf(to, "  %s\n", commands[i].usage);
    fprintf(to, "\nsts COMMAND --help explains a command. Exit codes: 0 ok, 1 invalid input, 2 usage.\n");
}

int main(int argc, char **argv) {
    size_t i;
    if (argc < 2) { usage(stderr); return EXIT_USAGE; }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "help") == 0) { usage(stdout); return 0; }
    if (strcmp(argv[1], "--version") == 0) { printf("sts %s\n", STS_VERSION_STRING); return 0; }
    for (i = 0; i < NCOMMANDS; i++) {
        if (strcmp(argv[1], commands[i].name) == 0) {
            int k;
            static char name[64];
            snprintf(name, sizeof name, "sts %s", commands[i].name);
            prog_cmd = name;
            for (k = 2; k < argc; k++)
                if (strcmp(argv[k], "--help") == 0 || strcmp(argv[k], "-h") == 0) { printf("usage: %s\n\n%s\n", commands[i].usage, commands[i].help); return 0; }
            return commands[i].run(argc - 1, argv + 1);
        }
    }
    fprintf(stderr, argv[1][0] == '-' ? "sts: unknown option %s\n\n" : "sts: unknown command %s\n\n", argv[1]);
    usage(stderr);
    return EXIT_USAGE;
}
