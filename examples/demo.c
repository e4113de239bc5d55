/* demo: the main job on a built-in default (make demo).
   1. Generates a deterministic synthetic dataset in memory, no download: 60,000 samples of 28x28
      uint8 images, int64 labels and 128-d float32 embeddings.
   2. Writes it in batch mode (batch_size 1000, embeddings converted to BF16) and in KV mode
      (keys sample-000123, with the tensor index), each as two tasks merged by a dataset commit.
   3. Opens both datasets, checks every shard, scans them, and looks keys up.
   4. Prints a summary: files, bytes, rows, time and MB/s.
   Output goes to ./demo-batch and ./demo-kv (replaced on every run). */
#define STS_IMPLEMENTATION
#include "../safetensors_spark.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { SAMPLES = 60000, SIDE = 28, EMB = 128, TASKS = 2 };

typedef struct data {
    uint8_t *images;   /* SAMPLES x 28 x 28 */
    int64_t *labels;   /* SAMPLES */
    float *emb;        /* SAMPLES x 128 */
} data;

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}
static uint32_t rng(uint32_t *s) { *s ^= *s << 13; *s ^= *s >> 17; *s ^= *s << 5; return *s; }

/* Digit-like blobs: a ring whose radius depends on the label, plus noise; embeddings cluster by label. */
static void generate(data *d) {
    uint32_t s = 20261121u;
    size_t i;
    for (i = 0; i < SAMPLES; i++) {
        int64_t label = (int64_t)(rng(&s) % 10);
        int x, y, k;
        d->labels[i] = label;
        for (y = 0; y < SIDE; y++)
            for (x = 0; x < SIDE; x++) {
                int dx = x - 14, dy = y - 14, r2 = dx * dx + dy * dy, want = (int)(16 + 8 * label);
                int v = (r2 > want - 20 && r2 < want + 20) ? 200 + (int)(rng(&s) % 56) : (int)(rng(&s) % 24);
                d->images[i * SIDE * SIDE + (size_t)(y * SIDE + x)] = (uint8_t)v;
            }
        for (k = 0; k < EMB; k++)
            d->emb[i * EMB + (size_t)k] = (float)((k % 10 == label) ? 1.0 : 0.0) + ((float)(rng(&s) % 2001) - 1000.0f) / 10000.0f;
    }
}

#define CHECK(call) do { if ((r = (call)) != STS_OK) { fprintf(stderr, "demo: %s failed: %s: %s\n", #call, sts_result_name(err.code), err.message); return 1; } } while (0)

/* Writes the dataset with the given options as TASKS tasks; returns 0 on success. */
static int write_dataset(const char *dir, sts_write_config *cfg, const data *d, int kv, sts_dataset_summary *sum) {
    sts_column schema[4] = {
        { "id", STS_VALUE_STRING, STS_DTYPE_U8 },
        { "image", STS_VALUE_TENSOR, STS_DTYPE_U8 },
        { "label", STS_VALUE_TENSOR, STS_DTYPE_I64 },
        { "embedding", STS_VALUE_ARRAY, STS_DTYPE_F32 },
    };
    uint64_t img_shape[2] = { SIDE, SIDE };
    char *msgs[TASKS];
    size_t lens[TASKS];
    sts_error err;
    sts_result r;
    int t;
    CHECK(sts_dataset_prepare(dir, cfg, schema, 4, NULL, &err));
    for (t = 0; t < TASKS; t++) {  /* in Spark these are separate tasks, possibly separate processes */
        sts_task_writer *w = NULL;
        size_t i, from = (size_t)t * SAMPLES / TASKS, to = (size_t)(t + 1) * SAMPLES / TASKS;
        CHECK(sts_task_open(dir, (uint32_t)t, cfg, schema, 4, NULL, &w, &err));
        for (i = from; i < to; i++) {
            char key[32];
            sts_value row[4];
            memset(row, 0, sizeof row);
            snprintf(key, sizeof key, "sample-%06u", (unsigned)i);
            row[0].data = key; row[0].size = strlen(key);
            row[1].data = d->images + i * SIDE * SIDE; row[1].size = SIDE * SIDE; row[1].dtype = STS_DTYPE_U8; row[1].rank = 2; row[1].shape = img_shape;
            row[2].data = &d->labels[i]; row[2].size = 8; row[2].dtype = STS_DTYPE_I64; row[2].rank = 0;
            row[3].data = d->emb + i * EMB; row[3].size = EMB;
            if ((r = sts_task_write(w, row, &err)) != STS_OK) {
                fprintf(stderr, "demo: row %u: %s: %s\n", (unsigned)i, sts_result_name(err.code), err.message);
                sts_task_close(w);
                return 1;
            }
        }
        CHECK(sts_task_commit(w, &msgs[t], &lens[t], &err));
        sts_task_close(w);
    }
    (void)kv;
    CHECK(sts_dataset_commit(dir, cfg, (const char *const *)msgs, lens, TASKS, NULL, sum, &err));
    for (t = 0; t < TASKS; t++) sts_free(NULL, msgs[t], lens[t] + 1);
    return 0;
}

static float bf16_to_f32(const uint8_t *p) {
    uint32_t u = (uint32_t)p[0] << 16 | (uint32_t)p[1] << 24;
    float f;
    memcpy(&f, &u, 4);
    return f;
}
static int64_t le_i64(const uint8_t *p) {
    uint64_t v = 0;
    int i;
    for (i = 7; i >= 0; i--) v = v << 8 | p[i];
    return (int64_t)v;
}

/* Opens a dataset, validates every shard with a full scan, and returns what it saw. */
static int verify(const char *dir, int *files, uint64_t *tensors, uint64_t *bytes_seen) {
    sts_dataset *ds;
    sts_read_config rc;
    sts_scan_spec spec;
    sts_scan *sc;
    const sts_view *cells = NULL;  /* set by sts_scan_next; initialised for gcc -O3's warnings */
    size_t n = 0;
    sts_error err;
    sts_result r;
    memset(&rc, 0, sizeof rc);
    rc.infer_schema = 1;
    CHECK(sts_dataset_open(dir, &rc, NULL, &ds, &err));
    memset(&spec, 0, sizeof spec);
    spec.long_form = 1;
    spec.with_data = 1;
    CHECK(sts_scan_open(ds, &spec, &sc, &err));
    *tensors = 0;
    *bytes_seen = 0;
    while ((r = sts_scan_next(sc, &cells, &n, &err)) == STS_OK && n) { (*tensors)++; *bytes_seen += cells[0].nbytes; }
    if (r != STS_OK) { fprintf(stderr, "demo: scan of %s failed: %s\n", dir, err.message); return 1; }
    *files = (int)sts_dataset_describe(ds).files;
    sts_scan_close(sc);
    sts_dataset_close(ds);
    return 0;
}

int main(void) {
    data d;
    sts_write_config batch, kv;
    sts_dataset_summary sb, sk;
    sts_error err;
    sts_result r;
    double t0, t_gen, t_batch, t_kv, t_verify;
    uint64_t raw = (uint64_t)SAMPLES * (SIDE * SIDE + 8 + EMB * 4), tb, tk, bb, bk;
    int fb, fk, i;
    sts_dataset *ds;
    sts_read_config rc;

    d.images = (uint8_t *)malloc((size_t)SAMPLES * SIDE * SIDE);
    d.labels = (int64_t *)malloc((size_t)SAMPLES * sizeof(int64_t));
    d.emb = (float *)malloc((size_t)SAMPLES * EMB * sizeof(float));
    if (!d.images || !d.labels || !d.emb) { fprintf(stderr, "demo: out of memory\n"); return 1; }
    printf("safetensors_spark.h %s demo: %d samples of 28x28 uint8 images, int64 labels, 128-d float32 embeddings\n\n",
           STS_VERSION_STRING, SAMPLES);
    t0 = now();
    generate(&d);
    t_gen = now() - t0;

    /* batch mode: 1000 rows per file, embeddings encoded to BF16 (round-to-nearest-even) */
    memset(&batch, 0, sizeof batch);
    CHECK(sts_write_config_set(&batch, "batch_size", "1000", &err));
    CHECK(sts_write_config_set(&batch, "columns", "image,label,embedding", &err));
    CHECK(sts_write_config_set(&batch, "dtype", "BF16", &err));
    CHECK(sts_write_config_set(&batch, "rounding", "nearest_even", &err));
    CHECK(sts_write_config_set(&batch, "mode", "overwrite", &err));
    t0 = now();
    if (write_dataset("demo-batch", &batch, &d, 0, &sb)) return 1;
    t_batch = now() - t0;

    /* KV mode: one tensor per column per sample, keyed sample-000123__image, with the index */
    memset(&kv, 0, sizeof kv);
    CHECK(sts_write_config_set(&kv, "name_col", "id", &err));
    CHECK(sts_write_config_set(&kv, "dtype", "F32", &err));
    CHECK(sts_write_config_set(&kv, "generate_index", "true", &err));
    CHECK(sts_write_config_set(&kv, "target_shard_size_mb", "50", &err));
    CHECK(sts_write_config_set(&kv, "mode", "overwrite", &err));
    t0 = now();
    if (write_dataset("demo-kv", &kv, &d, 1, &sk)) return 1;
    t_kv = now() - t0;

    /* verify both: every shard read back through a full long scan */
    t0 = now();
    if (verify("demo-batch", &fb, &tb, &bb) || verify("demo-kv", &fk, &tk, &bk)) return 1;
    t_verify = now() - t0;

    printf("%-10s %6s %8s %12s %10s %9s %10s\n", "dataset", "files", "rows", "bytes", "tensors", "time", "MB/s");
    printf("%-10s %6d %8llu %12llu %10llu %8.3fs %10.0f\n", "batch", fb, (unsigned long long)sb.samples, (unsigned long long)sb.bytes,
           (unsigned long long)tb, t_batch, (double)sb.bytes / 1e6 / t_batch);
    printf("%-10s %6d %8llu %12llu %10llu %8.3fs %10.0f\n", "kv+index", fk, (unsigned long long)sk.samples, (unsigned long long)sk.bytes,
           (unsigned long long)tk, t_kv, (double)sk.bytes / 1e6 / t_kv);
    printf("\n(input %.1f MB generated in %.2fs; both datasets re-read and validated in %.3fs, %.0f MB/s of tensor data)\n",
           raw / 1e6, t_gen, t_verify, (double)(bb + bk) / 1e6 / t_verify);

    /* lookups through the index: O(1), zero-copy */
    memset(&rc, 0, sizeof rc);
    rc.infer_schema = 1;
    CHECK(sts_dataset_open("demo-kv", &rc, NULL, &ds, &err));
    printf("\nkey lookups in demo-kv (through _tensor_index.json):\n");
    for (i = 0; i < 4; i++) {
        static const unsigned picks[4] = { 0, 123, 31415, 59999 };
        char key[48];
        sts_view lab, emb, img;
        float e0;
        snprintf(key, sizeof key, "sample-%06u__label", picks[i]);
        CHECK(sts_dataset_get(ds, key, strlen(key), 1, &lab, &err));
        snprintf(key, sizeof key, "sample-%06u__embedding", picks[i]);
        CHECK(sts_dataset_get(ds, key, strlen(key), 1, &emb, &err));
        snprintf(key, sizeof key, "sample-%06u__image", picks[i]);
        CHECK(sts_dataset_get(ds, key, strlen(key), 1, &img, &err));
        {   /* the file's bytes are little-endian on every host: assembled, then reinterpreted */
            const uint8_t *b = (const uint8_t *)emb.data;
            uint32_t u = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
            memcpy(&e0, &u, 4);
        }
        printf("  sample-%06u: label %lld (expected %lld), image %s [%llu,%llu] in %s, embedding[0] %.4f (expected %.4f)\n",
               picks[i], (long long)le_i64((const uint8_t *)lab.data), (long long)d.labels[picks[i]], sts_dtype_name(img.dtype),
               (unsigned long long)img.shape[0], (unsigned long long)img.shape[1], sts_dataset_file(ds, img.file), e0,
               d.emb[(size_t)picks[i] * EMB]);
        if (le_i64((const uint8_t *)lab.data) != d.labels[picks[i]] || e0 != d.emb[(size_t)picks[i] * EMB] ||
            memcmp(img.data, d.images + (size_t)picks[i] * SIDE * SIDE, SIDE * SIDE) != 0) {
            fprintf(stderr, "demo: sample %u read back wrong\n", picks[i]);
            return 1;
        }
    }
    sts_dataset_close(ds);

    /* batch mode: the BF16 embeddings of the last file, as PyTorch will see them */
    CHECK(sts_dataset_open("demo-batch", &rc, NULL, &ds, &err));
    {
        sts_scan_spec spec;
        sts_scan *sc;
        const sts_view *cells;
        size_t n;
        const char *cols[1] = { "embedding" };
        memset(&spec, 0, sizeof spec);
        spec.columns = cols;
        spec.ncolumns = 1;
        spec.with_data = 1;
        spec.file_begin = sts_dataset_describe(ds).files - 1;
        CHECK(sts_scan_open(ds, &spec, &sc, &err));
        CHECK(sts_scan_next(sc, &cells, &n, &err));
        printf("\nbatch file %s: embedding %s [%llu,%llu]; row 999 starts %.4f %.4f (float32 was %.4f %.4f)\n",
               sts_dataset_file(ds, cells[0].file), sts_dtype_name(cells[0].dtype), (unsigned long long)cells[0].shape[0],
               (unsigned long long)cells[0].shape[1], bf16_to_f32((const uint8_t *)cells[0].data + 999 * EMB * 2),
               bf16_to_f32((const uint8_t *)cells[0].data + 999 * EMB * 2 + 2), d.emb[(size_t)(SAMPLES - 1) * EMB], d.emb[(size_t)(SAMPLES - 1) * EMB + 1]);
        sts_scan_close(sc);
    }
    sts_dataset_close(ds);
    printf("\nread them from Python: safetensors.torch.load_file('demo-batch/<file>') or json.load(open('demo-kv/_tensor_index.json'))\n");
    free(d.images);
    free(d.labels);
    free(d.emb);
    return 0;
}
