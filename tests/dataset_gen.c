/* dataset_gen.c - writes datasets for tests/check_dataset.py (make test-dataset-py).

   usage: dataset_gen OUT_DIR

   For each dataset NAME it writes OUT_DIR/NAME/ (the dataset, through the library) and beside it
   OUT_DIR/NAME.source.json + OUT_DIR/NAME.source.bin: the options and every row handed to the
   writer (cell bytes in the .bin, offsets in the .json), so that the checker can rebuild what
   each shard must hold with numpy alone:
     - arr_<DTYPE>_<rounding>: batch mode, the 7 array element types (F32 F64 I32 I64 I16 I8 U8)
       encoded to each of the 12 dtypes, truncation and nearest-even for F16 and BF16, with
       special values (NaN, infinities, -0, subnormals, overflow, integer extremes);
     - tail_write, tail_drop, tail_pad: batch mode, two tasks, a tensor and an array column, index;
     - kv_plain, kv_index, kv_lastwin: KV mode, two or three tasks, several shards each (small
       white-box target), varying shapes, the shapes option, a custom separator, duplicates;
     - kv_arrival, kv_arrival_lastwin: kv_index's and kv_lastwin's options with kv_layout = arrival
       (shards in the rows' order, written while they fill behind header room). */
#define _POSIX_C_SOURCE 200809L
#ifndef STS_TEST_LINKED  /* the Makefile links tests/sts_impl.c's object instead */
#define STS_IMPLEMENTATION
#endif
#include "../safetensors_spark.h"
#include "dataset_write_util.h"
#include <math.h>

static const char *out_root;

/* ---- the source description, written as the rows go ---- */
typedef struct src {
    FILE *bin;
    uint64_t off;
    tu_sb json;
    int first_task, first_row, first_cell;
} src;
static void src_open(src *s, const char *name) {
    char p[1024];
    snprintf(p, sizeof p, "%s/%s.source.bin", out_root, name);
    s->bin = fopen(p, "wb");
    if (!s->bin) { perror(p); exit(2); }
    s->off = 0;
    memset(&s->json, 0, sizeof s->json);
}
static uint64_t src_bytes(src *s, const void *p, size_t n) {
    uint64_t at = s->off;
    if (n && fwrite(p, 1, n, s->bin) != n) { perror("fwrite"); exit(2); }
    s->off += n;
    return at;
}
static void src_header(src *s, const sts_write_config *c, const sts_column *schema, size_t ncols, const char *const *written, size_t nw) {
    size_t i, j;
    const char *tails[3] = { "write", "drop", "pad" };
    tu_sb *b = &s->json;
    tu_sb_printf(b, "{\"mode\": \"%s\", \"batch_size\": %llu, \"tail\": \"%s\", \"dtype\": \"%s\", \"rounding\": \"%s\", \"sep\": ",
                 c->batch_size ? "batch" : "kv", (unsigned long long)c->batch_size, tails[c->tail], c->has_dtype ? sts_dtype_name(c->dtype) : "",
                 c->rounding ? "nearest_even" : "truncate");
    tu_sb_json(b, c->kv_separator ? c->kv_separator : "__", strlen(c->kv_separator ? c->kv_separator : "__"));
    tu_sb_printf(b, ", \"duplicates\": \"%s\", \"index\": %s, \"layout\": \"%s\", \"columns\": [", c->duplicates ? "lastWin" : "fail",
                 c->generate_index ? "true" : "false", c->kv_layout == STS_KV_ARRIVAL ? "arrival" : "sorted");
    for (i = 0, j = 0; i < nw; i++) {
        size_t k;
        for (k = 0; k < ncols; k++) if (strcmp(schema[k].name, written[i]) == 0) break;
        tu_sb_printf(b, "%s{\"name\": \"%s\", \"index\": %zu, \"kind\": \"%s\", \"elem\": \"%s\"}", j++ ? ", " : "", written[i], k,
                     schema[k].kind == STS_VALUE_TENSOR ? "tensor" : "array", schema[k].kind == STS_VALUE_ARRAY ? sts_dtype_name(schema[k].elem) : "");
    }
    tu_sb_printf(b, "], \"tasks\": [");
    s->first_task = 1;
}
static void src_task(src *s, uint32_t task) {
    if (!s->first_task) tu_sb_printf(&s->json, "]}, ");
    s->first_task = 0;
    tu_sb_printf(&s->json, "{\"task\": %u, \"rows\": [", task);
    s->first_row = 1;
}
/* One accepted row: the key and every cell of the schema (strings skipped). */
static void src_row(src *s, const sts_column *schema, size_t ncols, const sts_value *row, const uint64_t *const *shapes, const uint32_t *ranks) {
    size_t i;
    tu_sb *b = &s->json;
    tu_sb_printf(b, "%s{\"cells\": [", s->first_row ? "" : ", ");
    s->first_row = 0;
    for (i = 0; i < ncols; i++) {
        const sts_value *v = &row[i];
        uint32_t d;
        if (i) tu_sb_printf(b, ", ");
        if (schema[i].kind == STS_VALUE_STRING) { tu_sb_printf(b, "{\"key\": "); tu_sb_json(b, (const char *)v->data, (size_t)v->size); tu_sb_printf(b, "}"); continue; }
        if (schema[i].kind == STS_VALUE_TENSOR) {
            uint64_t at = src_bytes(s, v->data, (size_t)v->size);
            tu_sb_printf(b, "{\"off\": %llu, \"nbytes\": %llu, \"dtype\": \"%s\", \"shape\": [", (unsigned long long)at, (unsigned long long)v->size, sts_dtype_name(v->dtype));
            for (d = 0; d < v->rank; d++) tu_sb_printf(b, "%s%llu", d ? ", " : "", (unsigned long long)v->shape[d]);
            tu_sb_printf(b, "]}");
        } else {  /* an array cell holds host-order C values; the source file is little-endian */
            size_t esz = sts_dtype_bits(schema[i].elem) / 8;
            uint8_t *le = (uint8_t *)malloc(v->size ? (size_t)v->size * esz : 1);
            uint64_t at;
            if (!le) { perror("malloc"); exit(2); }
            tu_le_copy(le, v->data, (size_t)v->size, esz);
            at = src_bytes(s, le, (size_t)v->size * esz);
            free(le);
            tu_sb_printf(b, "{\"off\": %llu, \"count\": %llu, \"shape\": [", (unsigned long long)at, (unsigned long long)v->size);
            if (shapes && shapes[i]) for (d = 0; d < ranks[i]; d++) tu_sb_printf(b, "%s%llu", d ? ", " : "", (unsigned long long)shapes[i][d]);
            else tu_sb_printf(b, "%llu", (unsigned long long)v->size);
            tu_sb_printf(b, "]}");
        }
    }
    tu_sb_printf(b, "]}");
}
static void src_close(src *s, const char *name) {
    char p[1024];
    FILE *f;
    tu_sb_printf(&s->json, "%s]}\n", s->first_task ? "" : "]}");
    fclose(s->bin);
    snprintf(p, sizeof p, "%s/%s.source.json", out_root, name);
    f = fopen(p, "wb");
    if (!f || fwrite(s->json.p, 1, s->json.n, f) != s->json.n) { perror(p); exit(2); }
    fclose(f);
    tu_sb_free(&s->json);
}

#define CHECK(call) do { sts_result r_ = (call); if (r_ != STS_OK) { fprintf(stderr, "dataset_gen: %s: %s\n", #call, e.message); exit(1); } } while (0)

/* ---- arr_<DTYPE>_<rounding> ---- */
static void gen_arrays(sts_dtype dt, int rne) {
    static const sts_column schema[7] = {
        { "f32", STS_VALUE_ARRAY, STS_DTYPE_F32 }, { "f64", STS_VALUE_ARRAY, STS_DTYPE_F64 }, { "i32", STS_VALUE_ARRAY, STS_DTYPE_I32 },
        { "i64", STS_VALUE_ARRAY, STS_DTYPE_I64 }, { "i16", STS_VALUE_ARRAY, STS_DTYPE_I16 }, { "i8", STS_VALUE_ARRAY, STS_DTYPE_I8 },
        { "u8", STS_VALUE_ARRAY, STS_DTYPE_U8 },
    };
    static const char *names[7] = { "f32", "f64", "i32", "i64", "i16", "i8", "u8" };
    static const double specials[] = { 0.0, -0.0, 1.0 / 3.0, -2.5, 65504.0, 65519.0, 65520.0, 70000.0, -1e5, 6e-8, 3e-8, 1e-6, -5.96e-8,
                                       1e-40, -1e-45, 3.4e38, 3.5e38, 1e39, -1e300, 1e-310, 0.1, 1.00390625, 1.005859375, 2049.0, 2051.0,
                                       255.5, -128.9, 127.99, 4294967295.9, 9.3e18, -9.3e18, 2.5, 3.5, -0.5 };
    static const int64_t iextreme[] = { INT64_MIN, INT64_MAX, (int64_t)INT32_MIN - 1, (int64_t)INT32_MAX + 1, -129, 128, 255, 256, 65535, 65536,
                                        -32769, 2049, 2051, 16777217, (int64_t)1 << 53, ((int64_t)1 << 53) + 1, -1, 0, 1, 9007199254740993LL };
    char name[64], dir[1024];
    sts_write_config c;
    sts_error e;
    sts_task_writer *w;
    src s;
    tu_rng rng = { (uint64_t)dt * 7 + (uint64_t)rne };
    char *msg;
    size_t len;
    int i, j;
    const size_t n = 6;
    snprintf(name, sizeof name, "arr_%s_%s", sts_dtype_name(dt), rne ? "nearest_even" : "truncate");
    snprintf(dir, sizeof dir, "%s/%s", out_root, name);
    memset(&c, 0, sizeof c);
    c.batch_size = 4; c.has_dtype = 1; c.dtype = dt; c.rounding = rne ? STS_ROUND_NEAREST_EVEN : STS_ROUND_TRUNCATE; c.no_fsync = 1; c.generate_index = 1;
    CHECK(sts_dataset_prepare(dir, &c, schema, 7, NULL, &e));
    src_open(&s, name);
    src_header(&s, &c, schema, 7, names, 7);
    src_task(&s, 0);
    CHECK(sts_task_open(dir, 0, &c, schema, 7, NULL, &w, &e));
    for (i = 0; i < 11; i++) {
        float a0[6]; double a1[6]; int32_t a2[6]; int64_t a3[6]; int16_t a4[6]; int8_t a5[6]; uint8_t a6[6];
        sts_value v[7];
        memset(v, 0, sizeof v);
        for (j = 0; j < (int)n; j++) {
            size_t at = (size_t)(i * (int)n + j);
            double x;
            int64_t k;
            if (at < sizeof specials / sizeof specials[0]) x = specials[at];
            else if (at % 3 == 0) x = (double)(int64_t)(tu_next(&rng) % 200001) / 7.0 - 14000.0;
            else x = ((double)(tu_next(&rng) >> 11) / 9007199254740992.0 - 0.5) * pow(10.0, (double)(int)(tu_next(&rng) % 12) - 6);
            if (at == 40) x = NAN;
            if (at == 41) x = -NAN;
            if (at == 42) x = INFINITY;
            if (at == 43) x = -INFINITY;
            a0[j] = (float)x; a1[j] = x;
            k = at < sizeof iextreme / sizeof iextreme[0] ? iextreme[at] : (int64_t)(tu_next(&rng) >> (tu_next(&rng) % 64)) * ((at & 1) ? -1 : 1);
            a3[j] = k;
            a2[j] = (int32_t)(k % 2147483647);
            if (at < 4) a2[j] = at == 0 ? INT32_MIN : at == 1 ? INT32_MAX : at == 2 ? -65536 : 65535;
            a4[j] = (int16_t)(k % 32768);
            if (at == 5) a4[j] = INT16_MIN;
            a5[j] = (int8_t)(k % 128);
            if (at == 6) a5[j] = INT8_MIN;
            a6[j] = (uint8_t)((uint64_t)k & 0xff);
        }
        v[0].data = a0; v[1].data = a1; v[2].data = a2; v[3].data = a3; v[4].data = a4; v[5].data = a5; v[6].data = a6;
        for (j = 0; j < 7; j++) v[j].size = n;
        CHECK(sts_task_write(w, v, &e));
        src_row(&s, schema, 7, v, NULL, NULL);
    }
    CHECK(sts_task_commit(w, &msg, &len, &e));
    sts_task_close(w);
    CHECK(sts_dataset_commit(dir, &c, (const char *const *)&msg, &len, 1, NULL, NULL, &e));
    sts_free(NULL, msg, len + 1);
    src_close(&s, name);
}

/* ---- tail_<strategy> ---- */
static void gen_tail(sts_tail tail) {
    static const sts_column schema[3] = { { "key", STS_VALUE_STRING, STS_DTYPE_U8 }, { "pix", STS_VALUE_TENSOR, STS_DTYPE_U8 },
                                          { "vec", STS_VALUE_ARRAY, STS_DTYPE_F32 } };
    static const char *written[2] = { "pix", "vec" };
    static const char *tn[3] = { "write", "drop", "pad" };
    static const uint64_t vshape[2] = { 2, 3 };
    char name[64], dir[1024];
    sts_write_config c;
    sts_error e;
    src s;
    char *msg[2];
    size_t len[2];
    uint32_t t;
    snprintf(name, sizeof name, "tail_%s", tn[tail]);
    snprintf(dir, sizeof dir, "%s/%s", out_root, name);
    memset(&c, 0, sizeof c);
    c.batch_size = 4; c.has_dtype = 1; c.dtype = STS_DTYPE_BF16; c.tail = tail; c.no_fsync = 1; c.generate_index = 1;
    c.columns = "pix,vec"; c.shapes = "{\"vec\": [2, 3]}";
    CHECK(sts_dataset_prepare(dir, &c, schema, 3, NULL, &e));
    src_open(&s, name);
    src_header(&s, &c, schema, 3, written, 2);
    for (t = 0; t < 2; t++) {
        sts_task_writer *w;
        int i, rows = t ? 3 : 10;
        uint32_t id = t ? 12 : 3;
        src_task(&s, id);
        CHECK(sts_task_open(dir, id, &c, schema, 3, NULL, &w, &e));
        for (i = 0; i < rows; i++) {
            uint8_t pix[12];  /* a tensor cell of 6 I16: little-endian bytes */
            float vec[6];
            uint64_t ps[2] = { 3, 2 };
            sts_value v[3];
            const uint64_t *shapes[3] = { NULL, NULL, vshape };
            uint32_t ranks[3] = { 0, 0, 2 };
            int j;
            for (j = 0; j < 6; j++) { tu_st16(pix + 2 * j, (uint16_t)(id * 1000 + (uint32_t)i * 10 + (uint32_t)j)); vec[j] = (float)i / 3.0f + (float)j * 1.5f - (float)id; }
            memset(v, 0, sizeof v);
            v[0].data = "k"; v[0].size = 1;
            v[1].data = pix; v[1].size = 12; v[1].dtype = STS_DTYPE_I16; v[1].rank = 2; v[1].shape = ps;
            v[2].data = vec; v[2].size = 6;
            CHECK(sts_task_write(w, v, &e));
            src_row(&s, schema, 3, v, shapes, ranks);
        }
        CHECK(sts_task_commit(w, &msg[t], &len[t], &e));
        sts_task_close(w);
    }
    CHECK(sts_dataset_commit(dir, &c, (const char *const *)msg, len, 2, NULL, NULL, &e));
    sts_free(NULL, msg[0], len[0] + 1);
    sts_free(NULL, msg[1], len[1] + 1);
    src_close(&s, name);
}

/* ---- kv_<variant> ---- */
static void gen_kv(int which) {
    static const sts_column schema[4] = { { "img", STS_VALUE_TENSOR, STS_DTYPE_U8 }, { "id", STS_VALUE_STRING, STS_DTYPE_U8 },
                                          { "emb", STS_VALUE_ARRAY, STS_DTYPE_F64 }, { "lbl", STS_VALUE_ARRAY, STS_DTYPE_I32 } };
    static const char *written[3] = { "img", "emb", "lbl" };
    static const char *vn[5] = { "kv_plain", "kv_index", "kv_lastwin", "kv_arrival", "kv_arrival_lastwin" };
    static const uint64_t eshape[1] = { 4 };
    const char *name = vn[which];
    int variant = which >= 3 ? which - 2 : which;  /* the arrival ones: kv_index's and kv_lastwin's options */
    char dir[1024];
    sts_write_config c;
    sts_error e;
    src s;
    char *msg[3];
    size_t len[3];
    uint32_t t, ntasks = variant == 2 ? 3 : 2;
    tu_rng rng = { 99 + (uint64_t)which };
    snprintf(dir, sizeof dir, "%s/%s", out_root, name);
    memset(&c, 0, sizeof c);
    c.name_col = "id"; c.has_dtype = 1; c.no_fsync = 1;
    c.dtype = variant == 0 ? STS_DTYPE_F16 : variant == 1 ? STS_DTYPE_I64 : STS_DTYPE_BF16;
    c.rounding = variant == 2 ? STS_ROUND_NEAREST_EVEN : STS_ROUND_TRUNCATE;
    c.generate_index = variant != 0;
    c.kv_separator = variant == 1 ? "::" : NULL;
    c.duplicates = variant == 2 ? STS_DUPLICATES_LAST_WIN : STS_DUPLICATES_FAIL;
    c.target_shard_bytes = 1200;  /* several shards */
    c.kv_layout = which >= 3 ? STS_KV_ARRIVAL : STS_KV_SORTED;
    c.shapes = variant == 1 ? "{\"emb\": [2, 2]}" : NULL;
    CHECK(sts_dataset_prepare(dir, &c, schema, 4, NULL, &e));
    src_open(&s, name);
    src_header(&s, &c, schema, 4, written, 3);
    for (t = 0; t < ntasks; t++) {
        sts_task_writer *w;
        int i;
        uint32_t id = t * 4 + 1;
        src_task(&s, id);
        CHECK(sts_task_open(dir, id, &c, schema, 4, NULL, &w, &e));
        for (i = 0; i < 14; i++) {
            char key[32];
            uint8_t img[64];
            double emb[4];
            int32_t lbl[3];
            uint64_t is[2];
            sts_value v[4];
            const uint64_t eshape22[2] = { 2, 2 };
            const uint64_t *shapes[4] = { NULL, NULL, variant == 1 ? eshape22 : eshape, NULL };
            uint32_t ranks[4] = { 0, 0, variant == 1 ? 2u : 1u, 0 };
            int j, nl = 1 + i % 3;
            if (variant == 2) snprintf(key, sizeof key, "k,%02d", (i * 5) % 9);  /* repeats; a comma, no escape */
            else snprintf(key, sizeof key, "t%u/r%02d \"x\",y", id, i);
            is[0] = 1 + (uint64_t)(i % 4); is[1] = 8;
            for (j = 0; j < 64; j++) img[j] = (uint8_t)tu_next(&rng);
            for (j = 0; j < 4; j++) emb[j] = ((double)(int64_t)(tu_next(&rng) % 2000001) - 1000000.0) / 997.0;
            if (i == 3) { emb[0] = NAN; emb[1] = -0.0; emb[2] = 1e300; emb[3] = -1e-300; }
            for (j = 0; j < 3; j++) lbl[j] = (int32_t)(tu_next(&rng) >> 33) * (j == 1 ? -1 : 1);
            memset(v, 0, sizeof v);
            v[0].data = img; v[0].size = is[0] * 8; v[0].dtype = STS_DTYPE_U8; v[0].rank = 2; v[0].shape = is;
            v[1].data = key; v[1].size = strlen(key);
            v[2].data = emb; v[2].size = 4;
            v[3].data = lbl; v[3].size = (uint64_t)nl;
            shapes[3] = NULL;
            CHECK(sts_task_write(w, v, &e));
            src_row(&s, schema, 4, v, shapes, ranks);
        }
        CHECK(sts_task_commit(w, &msg[t], &len[t], &e));
        sts_task_close(w);
    }
    CHECK(sts_dataset_commit(dir, &c, (const char *const *)msg, len, ntasks, NULL, NULL, &e));
    for (t = 0; t < ntasks; t++) sts_free(NULL, msg[t], len[t] + 1);
    src_close(&s, name);
}

int main(int argc, char **argv) {
    static const sts_dtype dts[12] = { STS_DTYPE_F16, STS_DTYPE_BF16, STS_DTYPE_F32, STS_DTYPE_F64, STS_DTYPE_U8, STS_DTYPE_I8,
                                       STS_DTYPE_U16, STS_DTYPE_I16, STS_DTYPE_U32, STS_DTYPE_I32, STS_DTYPE_U64, STS_DTYPE_I64 };
    int i;
    if (argc != 2) { fprintf(stderr, "usage: dataset_gen OUT_DIR\n"); return 2; }
    out_root = argv[1];
    if (mkdir(out_root, 0777) != 0 && errno != EEXIST) { perror(out_root); return 2; }
    for (i = 0; i < 12; i++) {
        gen_arrays(dts[i], 0);
        if (dts[i] == STS_DTYPE_F16 || dts[i] == STS_DTYPE_BF16) gen_arrays(dts[i], 1);
    }
    gen_tail(STS_TAIL_WRITE);
    gen_tail(STS_TAIL_DROP);
    gen_tail(STS_TAIL_PAD);
    gen_kv(0);
    gen_kv(1);
    gen_kv(2);
    gen_kv(3);
    gen_kv(4);
    printf("dataset_gen: 22 datasets in %s\n", out_root);
    return 0;
}
