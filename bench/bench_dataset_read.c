/* bench_dataset_read.c - dataset reader (issue 5): tensor-index load, key lookup latency, the same
   key found without the index, and a wide scan without data over 1,000 files.

   Datasets (written once per program run with the library's own writer, not timed as reads):
     kv    1M keys in 100 shards: 100 KV-mode tasks of 10,000 rows each (one shard per task),
           one small tensor per row (U8 [32]: bytes 0-3 the row number, 4-7 the task), keys
           sample-0000000 .. sample-0999999, tensor names sample-0000123__x, generate_index.
     wide  1,000 files: batch mode with batch_size 1, three tensors per file (U8 [65536],
           F32 [16], I64 [4]): a header of a few hundred bytes in front of 64 KiB of data.

   Measured, each in a forked child per run, beside its same-run baseline:
     index load    sts_dataset_open of the kv folder (manifest, then _tensor_index.json parsed
                   into the key table), MB/s of the JSON file. "cold": the JSON file's pages were
                   dropped first (fdatasync + posix_fadvise DONTNEED on that file only); "warm":
                   a second open. Also with infer_schema (the schema read from the index).
                   Baseline: read() of the same file in 1 MiB calls, cold and warm (the device's
                   and the page cache's rate, which a load cannot beat).
     lookups       sts_dataset_get of random keys (a random permutation of all 1M keys) after the
                   load: each call timed alone with clock_gettime(CLOCK_MONOTONIC), the clock's
                   own cost (median of back-to-back pairs, same run) subtracted, the caller's key
                   string read just before (so its cache miss is not counted); p50 / p99 / p99.9
                   without and with data (with data after a warm-up that maps every file, and
                   100k untimed lookups first). The CPU time per lookup of a loop over the same
                   keys with no clock inside is given too: back-to-back lookups overlap their
                   cache misses, so it is a throughput figure, not a latency.
     no index      the same keys with cfg.no_index = 1: open, then the first get, which builds the
                   key map from all 100 headers (its time, files and header bytes read), then
                   lookups in that map. And finding one key by scanning: a long scan with a key
                   filter over every header (time to the match and to the end), against the same
                   scan pushed down through the index (one file opened).
     wide scan     a wide scan (a row per file, every column) without data over the 1,000 files:
                   header_bytes and files_opened from sts_scan_get_stats, the process's rchar
                   (bytes returned by read calls) and read_bytes (bytes fetched from the device)
                   from /proc/self/io around the scan, and the time per file; warm (files in the
                   page cache) and cold (their pages dropped first). Baselines in the same run:
                   sts_open(header_only) + sts_close per file, and by hand: open, one pread of
                   the previous file's 8 + N bytes (4 KiB for the first; a second pread only when
                   the 8-byte length says that was short, never here), close. Warm passes are
                   timed --passes times each, scan and hand loop alternating, the best of each
                   kept (a shared machine's noise only ever adds time).

   Checks (untimed): every call must return STS_OK; dataset summaries, file and key counts;
   every lookup's key, file, dtype, shape and size; with data, element 0 must be the key's row; the
   scans' row counts, cells and shapes; the wide scan must read exactly the header bytes.

   Files live in a fresh folder under $BENCH_DIR (default /tmp), removed at the end, on failure
   and on SIGINT/SIGTERM/SIGHUP.

   usage: bench_dataset_read [--quick] [--runs N] [--passes N] [--lookups N] [--only index|scan|all]
          --quick    sizes / 16 (62,500 keys in 100 shards, 62 wide files)
          --runs     repetitions (default 3); medians and spread are printed
          --passes   warm wide-scan passes per run, the best kept (default 5)
          --lookups  timed lookups per kind and run (default: every key) */
#define _GNU_SOURCE
#define STS_IMPLEMENTATION
#include "../safetensors_spark.h"

#include "bench_util.h"
#include "bench_dataset_util.h"

#define KV_BYTES 32 /* one U8 [32] tensor per key: bytes 0-3 the row, 4-7 the task */
#define KEY_STRIDE 24
#define KEY_LEN 17 /* sample-0000123__x */
#define MAX_RUNS 32

static int g_quick, g_runs = 3, g_passes = 5;
static uint64_t g_tasks = 100, g_rows_per_task = 10000, g_keys, g_lookups, g_wide_files = 1000;
static char g_kv[4096], g_wide[4096];

typedef struct built {                /* what the build child reports */
    int ok;
    double t_kv_write, t_kv_commit, t_wide;
    uint64_t shards, json_bytes, csv_bytes, kv_bytes;
    uint64_t wide_header_bytes, wide_bytes;
    char why[512];
} built;

typedef struct rrun {                 /* one run's figures */
    int ok;
    /* index */
    double open_cold, open_warm, open_infer;   /* s */
    double read_cold, read_warm;               /* s: read() of the JSON file alone, 1 MiB calls */
    double map_all;                            /* s: first data access of every file (maps, parses) */
    double clock_ns;
    double nd_p50, nd_p99, nd_p999, nd_mean, nd_raw_p50;  /* ns, without data */
    double wd_p50, wd_p99, wd_p999, wd_mean;              /* ns, with data */
    uint64_t hwm_kib;
    /* no index */
    double ni_open, ni_build, ni_p50, ni_p99, ni_p999;
    uint64_t ni_files, ni_hbytes;
    double scan_match, scan_end, scan_ix;      /* s */
    uint64_t scan_files, scan_hbytes, scan_ix_files;
    /* wide */
    double w_open, w_scan, w_open_hdr, w_raw;                    /* warm, s */
    double wc_scan, wc_raw;                                      /* cold, s */
    uint64_t w_hbytes, w_files, w_rchar, w_raw_rchar, w_hdr_rchar;
    uint64_t wc_readb, wc_raw_readb, wc_rchar, wc_rnd_readb, w_syscr, w_raw_syscr;
    double wc_rnd;                                               /* cold, by hand with POSIX_FADV_RANDOM */
    char why[512];
} rrun;

static built *g_b;
static rrun *g_r;
static char *g_keyv;                  /* g_keys keys, KEY_STRIDE apart (made in the children) */
static uint32_t *g_order;

static int failf(char *why, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, 512, fmt, ap);
    va_end(ap);
    fprintf(stderr, "bench_dataset_read: CHECK FAILED: %s\n", why);
    return 1;
}
static void key_format(char *k, uint64_t i) {  /* sample-%07llu__x */
    int d;
    memcpy(k, "sample-", 7);
    for (d = 13; d >= 7; d--) { k[d] = (char)('0' + i % 10); i /= 10; }
    memcpy(k + 14, "__x", 4);
}
static uint64_t file_size(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 ? (uint64_t)st.st_size : UINT64_MAX;
}
static uint64_t xs_next(uint64_t *x) { *x ^= *x << 13; *x ^= *x >> 7; *x ^= *x << 17; return *x; }
/* The keys and a random permutation of them (Fisher-Yates). */
static int make_keys(void) {
    uint64_t i, x = 0x9E3779B97F4A7C15ull;
    g_keyv = (char *)malloc((size_t)g_keys * KEY_STRIDE);
    g_order = (uint32_t *)malloc((size_t)g_keys * sizeof *g_order);
    if (!g_keyv || !g_order) return 0;
    for (i = 0; i < g_keys; i++) { key_format(g_keyv + i * KEY_STRIDE, i); g_order[i] = (uint32_t)i; }
    for (i = g_keys - 1; i > 0; i--) {
        uint64_t j = xs_next(&x) % (i + 1);
        uint32_t t = g_order[i];
        g_order[i] = g_order[j];
        g_order[j] = t;
    }
    return 1;
}

/* ---- building the datasets ---- */
static const sts_column kv_schema[2] = { { "key", STS_VALUE_STRING, STS_DTYPE_U8 }, { "x", STS_VALUE_TENSOR, STS_DTYPE_F32 } };
static const sts_column wide_schema[3] = { { "a", STS_VALUE_TENSOR, STS_DTYPE_U8 }, { "b", STS_VALUE_TENSOR, STS_DTYPE_F32 }, { "c", STS_VALUE_TENSOR, STS_DTYPE_I64 } };
static const uint64_t wide_a = 65536, wide_b = 16, wide_c = 4;

static int build(void *arg) {
    built *b = g_b;
    sts_write_config cfg;
    sts_error err;
    sts_result r;
    sts_dataset_summary sum;
    char **msgs;
    size_t *lens;
    uint64_t t, i;
    double t0, t1, t2;
    (void)arg;
    /* kv: one task per shard */
    memset(&cfg, 0, sizeof cfg);
    cfg.name_col = "key";
    cfg.generate_index = 1;
    cfg.no_fsync = 1;
    msgs = (char **)calloc((size_t)g_tasks, sizeof *msgs);
    lens = (size_t *)calloc((size_t)g_tasks, sizeof *lens);
    if (!msgs || !lens) return failf(b->why, "out of memory");
    t0 = tu_now();
    if ((r = sts_dataset_prepare(g_kv, &cfg, kv_schema, 2, NULL, &err)) != STS_OK) return failf(b->why, "prepare: %s", err.message);
    for (t = 0; t < g_tasks; t++) {
        sts_task_writer *w;
        uint8_t data[KV_BYTES];
        uint64_t shape[1] = { KV_BYTES };
        sts_value v[2];
        char key[32];
        memset(v, 0, sizeof v);
        for (i = 0; i < KV_BYTES; i++) data[i] = (uint8_t)(i * 5 + 1);
        {
            uint32_t t32 = (uint32_t)t;
            memcpy(data + 4, &t32, 4);
        }
        v[0].data = key; v[0].size = 14;
        v[1].data = data; v[1].size = sizeof data; v[1].dtype = STS_DTYPE_U8; v[1].rank = 1; v[1].shape = shape;
        if ((r = sts_task_open(g_kv, (uint32_t)t, &cfg, kv_schema, 2, NULL, &w, &err)) != STS_OK) return failf(b->why, "task_open: %s", err.message);
        for (i = 0; i < g_rows_per_task; i++) {
            uint64_t row = t * g_rows_per_task + i;
            uint32_t r32 = (uint32_t)row;
            key_format(key, row);
            memcpy(data, &r32, 4);
            if ((r = sts_task_write(w, v, &err)) != STS_OK) return failf(b->why, "task_write: %s", err.message);
        }
        if ((r = sts_task_commit(w, &msgs[t], &lens[t], &err)) != STS_OK) return failf(b->why, "task_commit: %s", err.message);
        sts_task_close(w);
    }
    t1 = tu_now();
    if ((r = sts_dataset_commit(g_kv, &cfg, (const char *const *)msgs, lens, (size_t)g_tasks, NULL, &sum, &err)) != STS_OK)
        return failf(b->why, "dataset_commit: %s", err.message);
    t2 = tu_now();
    for (t = 0; t < g_tasks; t++) sts_free(NULL, msgs[t], lens[t] + 1);
    free(msgs);
    free(lens);
    if (sum.shards != g_tasks || sum.samples != g_keys || sum.tensors != g_keys)
        return failf(b->why, "kv summary: %llu shards, %llu samples, %llu tensors", (unsigned long long)sum.shards,
                     (unsigned long long)sum.samples, (unsigned long long)sum.tensors);
    b->t_kv_write = t1 - t0;
    b->t_kv_commit = t2 - t1;
    b->shards = sum.shards;
    b->kv_bytes = sum.bytes;
    {
        char p[4096];
        bd_path(p, sizeof p, g_kv, "_tensor_index.json");
        b->json_bytes = file_size(p);
        bd_path(p, sizeof p, g_kv, "_tensor_index.csv");
        b->csv_bytes = file_size(p);
    }
    /* wide: a file per row */
    memset(&cfg, 0, sizeof cfg);
    cfg.batch_size = 1;
    cfg.no_fsync = 1;
    t0 = tu_now();
    {
        sts_task_writer *w;
        uint8_t *a = (uint8_t *)malloc((size_t)wide_a);
        float bb[16];
        int64_t c[4];
        sts_value v[3];
        char *msg;
        size_t len;
        if (!a) return failf(b->why, "out of memory");
        if ((r = sts_dataset_prepare(g_wide, &cfg, wide_schema, 3, NULL, &err)) != STS_OK) return failf(b->why, "prepare: %s", err.message);
        if ((r = sts_task_open(g_wide, 0, &cfg, wide_schema, 3, NULL, &w, &err)) != STS_OK) return failf(b->why, "task_open: %s", err.message);
        memset(v, 0, sizeof v);
        v[0].data = a; v[0].size = wide_a; v[0].dtype = STS_DTYPE_U8; v[0].rank = 1; v[0].shape = &wide_a;
        v[1].data = bb; v[1].size = sizeof bb; v[1].dtype = STS_DTYPE_F32; v[1].rank = 1; v[1].shape = &wide_b;
        v[2].data = c; v[2].size = sizeof c; v[2].dtype = STS_DTYPE_I64; v[2].rank = 1; v[2].shape = &wide_c;
        for (i = 0; i < g_wide_files; i++) {
            memset(a, (int)(i & 0xff), (size_t)wide_a);
            for (t = 0; t < 16; t++) bb[t] = (float)(i + t);
            for (t = 0; t < 4; t++) c[t] = (int64_t)(i * 4 + t);
            if ((r = sts_task_write(w, v, &err)) != STS_OK) return failf(b->why, "task_write (wide): %s", err.message);
        }
        if ((r = sts_task_commit(w, &msg, &len, &err)) != STS_OK) return failf(b->why, "task_commit (wide): %s", err.message);
        sts_task_close(w);
        if ((r = sts_dataset_commit(g_wide, &cfg, (const char *const *)&msg, &len, 1, NULL, &sum, &err)) != STS_OK)
            return failf(b->why, "dataset_commit (wide): %s", err.message);
        sts_free(NULL, msg, len + 1);
        free(a);
        if (sum.shards != g_wide_files) return failf(b->why, "wide: %llu files", (unsigned long long)sum.shards);
        b->wide_bytes = sum.bytes;
    }
    b->t_wide = tu_now() - t0;
    {   /* the exact header bytes of the wide files (8 + N each), read by hand */
        DIR *d = opendir(g_wide);
        struct dirent *e;
        uint64_t n = 0;
        if (!d) return failf(b->why, "opendir");
        while ((e = readdir(d)) != NULL) {
            char p[4096];
            uint8_t le[8];
            uint64_t hn = 0;
            int fd, k;
            if (strncmp(e->d_name, "part-", 5) != 0) continue;
            bd_path(p, sizeof p, g_wide, e->d_name);
            fd = open(p, O_RDONLY | O_CLOEXEC);
            if (fd < 0 || pread(fd, le, 8, 0) != 8) return failf(b->why, "read %s", p);
            close(fd);
            for (k = 7; k >= 0; k--) hn = hn << 8 | le[k];
            b->wide_header_bytes += 8 + hn;
            n++;
        }
        closedir(d);
        if (n != g_wide_files) return failf(b->why, "wide folder holds %llu files", (unsigned long long)n);
    }
    b->ok = 1;
    return 0;
}

/* ---- index load and lookups ---- */
static sts_result open_kv(const char *dir, int no_index, int infer, sts_dataset **ds, sts_error *err) {
    sts_read_config rc;
    static sts_schema_column sc;
    memset(&rc, 0, sizeof rc);
    memset(&sc, 0, sizeof sc);
    sc.name = "x"; sc.name_len = 1;
    if (infer) rc.infer_schema = 1;
    else { rc.schema = &sc; rc.nschema = 1; }
    rc.no_index = no_index;
    return sts_dataset_open(dir, &rc, NULL, ds, err);
}
static int check_view(rrun *o, const sts_view *v, uint64_t k, int with_data) {
    const char *want = g_keyv + k * KEY_STRIDE;
    if (v->key_len != KEY_LEN || memcmp(v->key, want, KEY_LEN) != 0 || v->file != k / g_rows_per_task || v->dtype != STS_DTYPE_U8 ||
        v->rank != 1 || v->shape[0] != KV_BYTES || v->nbytes != KV_BYTES)
        return failf(o->why, "lookup of %.17s: wrong view (file %zu, %llu bytes)", want, v->file, (unsigned long long)v->nbytes);
    if (with_data) {
        uint32_t r0, t0;
        memcpy(&r0, v->data, 4);
        memcpy(&t0, (const char *)v->data + 4, 4);
        if (r0 != (uint32_t)k || t0 != (uint32_t)(k / g_rows_per_task) || ((const uint8_t *)v->data)[KV_BYTES - 1] != (uint8_t)((KV_BYTES - 1) * 5 + 1))
            return failf(o->why, "lookup of %.17s: wrong data", want);
    }
    return 0;
}
/* n lookups of g_order[from..], each timed; fills sorted ns samples (overhead not yet subtracted). */
static int timed_lookups(rrun *o, const sts_dataset *ds, int with_data, float *ns, uint64_t n, uint64_t from) {
    uint64_t i;
    sts_error err;
    for (i = 0; i < n; i++) {
        uint64_t k = g_order[(from + i) % g_keys];
        const char *key = g_keyv + k * KEY_STRIDE;
        sts_view v;
        sts_result r;
        uint64_t t0, t1;
        bench_sink += (uint8_t)key[0] + (uint8_t)key[KEY_LEN - 1];  /* the caller's key in cache: its miss is not the library's */
        t0 = bd_ns();
        r = sts_dataset_get(ds, key, KEY_LEN, with_data, &v, &err);
        t1 = bd_ns();
        ns[i] = (float)(t1 - t0);
        if (r != STS_OK) return failf(o->why, "sts_dataset_get: %s", err.message);
        if (check_view(o, &v, k, with_data)) return 1;
    }
    qsort(ns, (size_t)n, sizeof *ns, bd_cmp_float);
    return 0;
}
/* CPU time per lookup of a loop with no clock inside (CPU time: slices lost to other processes
   do not count). */
static double untimed_loop_ns(rrun *o, const sts_dataset *ds, int with_data, uint64_t n) {
    uint64_t i, acc = 0;
    double t0 = bd_cpu_now(), t;
    for (i = 0; i < n; i++) {
        uint64_t k = g_order[i % g_keys];
        sts_view v;
        if (sts_dataset_get(ds, g_keyv + k * KEY_STRIDE, KEY_LEN, with_data, &v, NULL) != STS_OK) { failf(o->why, "get failed"); return -1; }
        acc += v.file + (with_data ? *(const uint8_t *)v.data : 0);
    }
    t = bd_cpu_now() - t0;
    bench_sink += acc;
    return t / (double)n * 1e9;
}
/* Baseline for the index load: read() the whole file in 1 MiB calls and nothing else. */
static double read_file_s(const char *path) {
    static char buf[1 << 20];
    double t0 = tu_now();
    int fd = open(path, O_RDONLY);
    ssize_t k;
    if (fd < 0) return -1.0;
    while ((k = read(fd, buf, sizeof buf)) > 0) bench_sink += (unsigned char)buf[0];
    close(fd);
    return k < 0 ? -1.0 : tu_now() - t0;
}
static int run_index(void *arg) {
    rrun *o = (rrun *)arg;
    sts_dataset *ds = NULL;
    sts_error err;
    sts_result r;
    sts_dataset_info info;
    char p[4096];
    float *ns;
    double t0, ov;
    uint64_t f;
    if (!make_keys()) return failf(o->why, "out of memory");
    ns = (float *)malloc((size_t)g_lookups * sizeof *ns);
    if (!ns) return failf(o->why, "out of memory");
    bd_path(p, sizeof p, g_kv, "_tensor_index.json");
    bd_drop_cache(p);
    if ((o->read_cold = read_file_s(p)) < 0) return failf(o->why, "read %s failed", p);
    if ((o->read_warm = read_file_s(p)) < 0) return failf(o->why, "read %s failed", p);
    bd_drop_cache(p);
    t0 = tu_now();
    if ((r = open_kv(g_kv, 0, 0, &ds, &err)) != STS_OK) return failf(o->why, "open (cold): %s", err.message);
    o->open_cold = tu_now() - t0;
    sts_dataset_close(ds);
    t0 = tu_now();
    if ((r = open_kv(g_kv, 0, 1, &ds, &err)) != STS_OK) return failf(o->why, "open (infer): %s", err.message);
    o->open_infer = tu_now() - t0;
    info = sts_dataset_describe(ds);
    sts_dataset_close(ds);
    if (info.columns != g_rows_per_task) return failf(o->why, "inferred schema of %zu columns", info.columns);
    t0 = tu_now();
    if ((r = open_kv(g_kv, 0, 0, &ds, &err)) != STS_OK) return failf(o->why, "open (warm): %s", err.message);
    o->open_warm = tu_now() - t0;
    info = sts_dataset_describe(ds);
    if (!info.has_index || info.index_stale || !info.kv || info.files != g_tasks || info.total_samples != g_keys)
        return failf(o->why, "dataset: index %d, stale %d, %zu files, %llu samples", info.has_index, info.index_stale, info.files,
                     (unsigned long long)info.total_samples);
    {   /* absent keys miss */
        sts_view v;
        if (sts_dataset_get(ds, "sample-9999999__x", KEY_LEN, 0, &v, &err) != STS_ERR_NOT_FOUND ||
            sts_dataset_get(ds, "sample-0000000", 14, 0, &v, &err) != STS_ERR_NOT_FOUND)
            return failf(o->why, "an absent key was found");
    }
    ov = bd_clock_overhead_ns(1000000);
    o->clock_ns = ov;
    /* without data: warm-up, then timed */
    if (timed_lookups(o, ds, 0, ns, g_lookups < 100000 ? g_lookups : 100000, g_lookups / 2)) return 1;
    if (timed_lookups(o, ds, 0, ns, g_lookups, 0)) return 1;
    o->nd_raw_p50 = bd_pct_sorted_f(ns, (size_t)g_lookups, 0.5);
    o->nd_p50 = o->nd_raw_p50 - ov;
    o->nd_p99 = bd_pct_sorted_f(ns, (size_t)g_lookups, 0.99) - ov;
    o->nd_p999 = bd_pct_sorted_f(ns, (size_t)g_lookups, 0.999) - ov;
    if ((o->nd_mean = untimed_loop_ns(o, ds, 0, g_lookups)) < 0) return 1;
    /* with data: the first access of every file maps it (timed as a whole), then timed lookups */
    t0 = tu_now();
    for (f = 0; f < g_tasks; f++) {
        sts_view v;
        uint64_t k = f * g_rows_per_task;
        if ((r = sts_dataset_get(ds, g_keyv + k * KEY_STRIDE, KEY_LEN, 1, &v, &err)) != STS_OK) return failf(o->why, "get with data: %s", err.message);
        if (check_view(o, &v, k, 1)) return 1;
    }
    o->map_all = tu_now() - t0;
    if (sts_dataset_stats(ds).files_mapped != g_tasks) return failf(o->why, "%llu files mapped", (unsigned long long)sts_dataset_stats(ds).files_mapped);
    if (timed_lookups(o, ds, 1, ns, g_lookups < 100000 ? g_lookups : 100000, g_lookups / 3)) return 1;
    if (timed_lookups(o, ds, 1, ns, g_lookups, 0)) return 1;
    o->wd_p50 = bd_pct_sorted_f(ns, (size_t)g_lookups, 0.5) - ov;
    o->wd_p99 = bd_pct_sorted_f(ns, (size_t)g_lookups, 0.99) - ov;
    o->wd_p999 = bd_pct_sorted_f(ns, (size_t)g_lookups, 0.999) - ov;
    if ((o->wd_mean = untimed_loop_ns(o, ds, 1, g_lookups)) < 0) return 1;
    o->hwm_kib = bd_status_kib("VmHWM");
    /* the index-backed scan for one key: pushdown opens one file */
    {
        sts_scan_spec sp;
        sts_scan *s;
        const sts_view *cells;
        size_t nc, rows = 0;
        uint64_t k = g_keys / 2 + 7;
        const char *key = g_keyv + k * KEY_STRIDE;
        size_t kl = KEY_LEN;
        memset(&sp, 0, sizeof sp);
        sp.long_form = 1; sp.keys = &key; sp.key_lens = &kl; sp.nkeys = 1;
        t0 = tu_now();
        if ((r = sts_scan_open(ds, &sp, &s, &err)) != STS_OK) return failf(o->why, "scan_open: %s", err.message);
        for (;;) {
            if ((r = sts_scan_next(s, &cells, &nc, &err)) != STS_OK) return failf(o->why, "scan_next: %s", err.message);
            if (!cells) break;
            if (check_view(o, cells, k, 0)) return 1;
            rows++;
        }
        o->scan_ix = tu_now() - t0;
        o->scan_ix_files = sts_scan_get_stats(s).files_opened;
        sts_scan_close(s);
        if (rows != 1) return failf(o->why, "index scan: %zu rows", rows);
    }
    sts_dataset_close(ds);
    free(ns);
    o->ok = 1;
    return 0;
}
static int run_noindex(void *arg) {
    rrun *o = (rrun *)arg;
    sts_dataset *ds = NULL;
    sts_error err;
    sts_result r;
    sts_view v;
    sts_scan_stats st;
    float *ns;
    double t0, ov;
    uint64_t n = g_lookups < 200000 ? g_lookups : 200000, k;
    if (!make_keys()) return failf(o->why, "out of memory");
    ns = (float *)malloc((size_t)n * sizeof *ns);
    if (!ns) return failf(o->why, "out of memory");
    t0 = tu_now();
    if ((r = open_kv(g_kv, 1, 0, &ds, &err)) != STS_OK) return failf(o->why, "open (no index): %s", err.message);
    o->ni_open = tu_now() - t0;
    if (sts_dataset_describe(ds).has_index) return failf(o->why, "no_index ignored");
    k = g_order[0];
    t0 = tu_now();
    if ((r = sts_dataset_get(ds, g_keyv + k * KEY_STRIDE, KEY_LEN, 0, &v, &err)) != STS_OK) return failf(o->why, "first get: %s", err.message);
    o->ni_build = tu_now() - t0;
    if (check_view(o, &v, k, 0)) return 1;
    st = sts_dataset_stats(ds);
    o->ni_files = st.files_opened;
    o->ni_hbytes = st.header_bytes;
    if (st.files_opened != g_tasks) return failf(o->why, "the map was built from %llu files", (unsigned long long)st.files_opened);
    ov = bd_clock_overhead_ns(1000000);
    if (timed_lookups(o, ds, 0, ns, n < 50000 ? n : 50000, n)) return 1;
    if (timed_lookups(o, ds, 0, ns, n, 0)) return 1;
    o->ni_p50 = bd_pct_sorted_f(ns, (size_t)n, 0.5) - ov;
    o->ni_p99 = bd_pct_sorted_f(ns, (size_t)n, 0.99) - ov;
    o->ni_p999 = bd_pct_sorted_f(ns, (size_t)n, 0.999) - ov;
    sts_dataset_close(ds);
    /* finding one key by scanning every header (no index) */
    if ((r = open_kv(g_kv, 1, 0, &ds, &err)) != STS_OK) return failf(o->why, "open (no index): %s", err.message);
    {
        sts_scan_spec sp;
        sts_scan *s;
        const sts_view *cells;
        size_t nc, rows = 0;
        uint64_t kk = g_keys / 2 + 7;
        const char *key = g_keyv + kk * KEY_STRIDE;
        size_t kl = KEY_LEN;
        memset(&sp, 0, sizeof sp);
        sp.long_form = 1; sp.keys = &key; sp.key_lens = &kl; sp.nkeys = 1;
        t0 = tu_now();
        if ((r = sts_scan_open(ds, &sp, &s, &err)) != STS_OK) return failf(o->why, "scan_open: %s", err.message);
        for (;;) {
            if ((r = sts_scan_next(s, &cells, &nc, &err)) != STS_OK) return failf(o->why, "scan_next: %s", err.message);
            if (!cells) break;
            if (check_view(o, cells, kk, 0)) return 1;
            if (!rows++) o->scan_match = tu_now() - t0;
        }
        o->scan_end = tu_now() - t0;
        st = sts_scan_get_stats(s);
        o->scan_files = st.files_opened;
        o->scan_hbytes = st.header_bytes;
        sts_scan_close(s);
        if (rows != 1 || o->scan_files != g_tasks) return failf(o->why, "header scan: %zu rows, %llu files", rows, (unsigned long long)o->scan_files);
    }
    sts_dataset_close(ds);
    free(ns);
    o->ok = 1;
    return 0;
}

/* ---- wide scan ---- */
typedef struct wpaths { char (*p)[4096]; size_t n; } wpaths;
static int wide_scan(rrun *o, const sts_dataset *ds, double *t, uint64_t *hbytes, uint64_t *files) {
    sts_scan_spec sp;
    sts_scan *s;
    sts_error err;
    sts_result r;
    const sts_view *cells;
    size_t nc, rows = 0, i;
    double t0;
    sts_scan_stats st;
    memset(&sp, 0, sizeof sp);  /* wide, every column, no data */
    t0 = tu_now();
    if ((r = sts_scan_open(ds, &sp, &s, &err)) != STS_OK) return failf(o->why, "wide scan_open: %s", err.message);
    for (;;) {
        if ((r = sts_scan_next(s, &cells, &nc, &err)) != STS_OK) return failf(o->why, "wide scan_next: %s", err.message);
        if (!cells) break;
        if (nc != 3 || cells[0].file != rows) return failf(o->why, "wide row %zu: %zu cells, file %zu", rows, nc, cells[0].file);
        for (i = 0; i < nc; i++) {
            const sts_view *c = &cells[i];
            uint64_t want = c->key[0] == 'a' ? wide_a : c->key[0] == 'b' ? wide_b : wide_c;
            if (!c->present || c->rank != 2 || c->shape[0] != 1 || c->shape[1] != want || c->data) return failf(o->why, "wide row %zu: cell %.*s wrong (present %d rank %u shape0 %llu data %p)", rows, (int)c->key_len, c->key, c->present, c->rank, (unsigned long long)(c->rank ? c->shape[0] : 0), (const void *)c->data);
        }
        rows++;
    }
    *t = tu_now() - t0;
    st = sts_scan_get_stats(s);
    sts_scan_close(s);
    *hbytes = st.header_bytes;
    *files = st.files_opened;
    if (rows != g_wide_files || st.files_opened != g_wide_files || st.data_bytes || st.files_mapped)
        return failf(o->why, "wide scan: %zu rows, %llu files opened, %llu data bytes", rows, (unsigned long long)st.files_opened, (unsigned long long)st.data_bytes);
    return 0;
}
static int wide_headers(rrun *o, const wpaths *w, double *t) {  /* sts_open(header_only) + close */
    sts_options op;
    size_t i;
    double t0;
    memset(&op, 0, sizeof op);
    op.header_only = 1;
    t0 = tu_now();
    for (i = 0; i < w->n; i++) {
        sts_file *f;
        sts_error err;
        if (sts_open(w->p[i], &op, &f, &err) != STS_OK) return failf(o->why, "sts_open: %s", err.message);
        if (sts_count(f) != 3) return failf(o->why, "sts_open: %zu tensors", sts_count(f));
        sts_close(f);
    }
    *t = tu_now() - t0;
    return 0;
}
/* open, one pread, close: the pread asks for the previous file's 8 + N bytes (4 KiB for the first
   file), as a caller who knows the files look alike would; a second pread only when the length
   read says the first was short. advise = 1 adds posix_fadvise(POSIX_FADV_RANDOM) after open (no
   readahead). */
static int wide_raw(rrun *o, const wpaths *w, double *t, uint64_t *bytes, int advise) {
    static uint8_t buf[1 << 16];
    size_t i, want = 4096;
    double t0;
    uint64_t total = 0;
    t0 = tu_now();
    for (i = 0; i < w->n; i++) {
        uint64_t n = 0;
        ssize_t got;
        int fd = open(w->p[i], O_RDONLY | O_CLOEXEC), k;
        if (fd >= 0 && advise) posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM);
        if (fd < 0 || (got = pread(fd, buf, want, 0)) < 8) return failf(o->why, "read %s", w->p[i]);
        for (k = 7; k >= 0; k--) n = n << 8 | buf[k];
        if (n > sizeof buf - 8) return failf(o->why, "read %s: header length %llu", w->p[i], (unsigned long long)n);
        if ((uint64_t)got < 8 + n && pread(fd, buf + got, (size_t)(8 + n) - (size_t)got, got) != (ssize_t)(8 + n) - got)
            return failf(o->why, "read %s", w->p[i]);
        close(fd);
        want = (size_t)(8 + n);
        total += 8 + n;
        bench_sink += buf[8];
    }
    *t = tu_now() - t0;
    *bytes = total;
    return 0;
}
static void wide_drop(const wpaths *w) {
    size_t i;
    for (i = 0; i < w->n; i++) bd_drop_cache(w->p[i]);
}
static int run_wide(void *arg) {
    rrun *o = (rrun *)arg;
    sts_dataset *ds = NULL;
    sts_read_config rc;
    sts_error err;
    sts_result r;
    wpaths w;
    bd_io io0, io1;
    size_t i;
    double t0, dummy;
    uint64_t hb, files, raw_bytes, hb2, f2;
    memset(&rc, 0, sizeof rc);
    rc.infer_schema = 1;
    t0 = tu_now();
    if ((r = sts_dataset_open(g_wide, &rc, NULL, &ds, &err)) != STS_OK) return failf(o->why, "open (wide): %s", err.message);
    o->w_open = tu_now() - t0;
    if (sts_dataset_describe(ds).files != g_wide_files || sts_dataset_describe(ds).columns != 3) return failf(o->why, "wide dataset shape");
    w.n = sts_dataset_describe(ds).files;
    w.p = (char (*)[4096])malloc(w.n * sizeof *w.p);
    if (!w.p) return failf(o->why, "out of memory");
    for (i = 0; i < w.n; i++) bd_path(w.p[i], sizeof w.p[i], g_wide, sts_dataset_file(ds, i));
    /* warm: a warm-up pass of each, then the timed passes (order alternates with the run number) */
    if (wide_scan(o, ds, &dummy, &hb, &files) || wide_raw(o, &w, &dummy, &raw_bytes, 0)) return 1;
    o->w_scan = o->w_raw = 1e30;
    for (i = 0; i < 2 * (size_t)g_passes; i++) {
        int scan_first = (i % 2 == 0) == ((o - g_r) % 2 == 0);
        double t1;
        if (scan_first) {
            io0 = bd_io_now();
            if (wide_scan(o, ds, &t1, &o->w_hbytes, &o->w_files)) return 1;
            io1 = bd_io_now();
            if (t1 < o->w_scan) o->w_scan = t1;
            o->w_rchar = bd_io_rchar(io0, io1);
            o->w_syscr = bd_io_syscr(io0, io1);
        } else {
            io0 = bd_io_now();
            if (wide_raw(o, &w, &t1, &raw_bytes, 0)) return 1;
            io1 = bd_io_now();
            if (t1 < o->w_raw) o->w_raw = t1;
            o->w_raw_rchar = bd_io_rchar(io0, io1);
            o->w_raw_syscr = bd_io_syscr(io0, io1);
        }
    }
    io0 = bd_io_now();
    if (wide_headers(o, &w, &o->w_open_hdr)) return 1;
    io1 = bd_io_now();
    o->w_hdr_rchar = bd_io_rchar(io0, io1);
    if (o->w_hbytes != g_b->wide_header_bytes || raw_bytes != g_b->wide_header_bytes)
        return failf(o->why, "header bytes: scan %llu, by hand %llu, files %llu", (unsigned long long)o->w_hbytes, (unsigned long long)raw_bytes,
                     (unsigned long long)g_b->wide_header_bytes);
    /* cold: the files' pages dropped before each pass */
    for (i = 0; i < 2; i++) {
        int scan_first = (i == 0) == ((o - g_r) % 2 == 0);
        wide_drop(&w);
        io0 = bd_io_now();
        if (scan_first) {
            if (wide_scan(o, ds, &o->wc_scan, &hb2, &f2)) return 1;
            io1 = bd_io_now();
            o->wc_readb = io1.read_bytes - io0.read_bytes;
            o->wc_rchar = bd_io_rchar(io0, io1);
        } else {
            if (wide_raw(o, &w, &o->wc_raw, &raw_bytes, 0)) return 1;
            io1 = bd_io_now();
            o->wc_raw_readb = io1.read_bytes - io0.read_bytes;
        }
    }
    wide_drop(&w);  /* what readahead costs: the same by hand without it */
    io0 = bd_io_now();
    if (wide_raw(o, &w, &o->wc_rnd, &raw_bytes, 1)) return 1;
    io1 = bd_io_now();
    o->wc_rnd_readb = io1.read_bytes - io0.read_bytes;
    sts_dataset_close(ds);
    free(w.p);
    o->ok = 1;
    return 0;
}

/* ---- report ---- */
typedef double (*getter)(const rrun *);
static double col_med(getter g, double *lo, double *hi) {
    double v[MAX_RUNS];
    int i;
    for (i = 0; i < g_runs; i++) v[i] = g(&g_r[i]);
    *lo = bd_min(v, (size_t)g_runs);
    *hi = bd_max(v, (size_t)g_runs);
    return bd_median(v, (size_t)g_runs);
}
#define G(name, expr) static double name(const rrun *r) { return (expr); }
G(g_open_cold, r->open_cold) G(g_read_cold, r->read_cold) G(g_read_warm, r->read_warm) G(g_open_warm, r->open_warm) G(g_open_infer, r->open_infer) G(g_map_all, r->map_all)
G(g_nd50, r->nd_p50) G(g_nd99, r->nd_p99) G(g_nd999, r->nd_p999) G(g_ndm, r->nd_mean) G(g_ndraw, r->nd_raw_p50) G(g_clock, r->clock_ns)
G(g_wd50, r->wd_p50) G(g_wd99, r->wd_p99) G(g_wd999, r->wd_p999) G(g_wdm, r->wd_mean) G(g_hwm, (double)r->hwm_kib / 1024.0)
G(g_niopen, r->ni_open) G(g_nibuild, r->ni_build) G(g_ni50, r->ni_p50) G(g_ni99, r->ni_p99) G(g_ni999, r->ni_p999)
G(g_smatch, r->scan_match) G(g_send, r->scan_end) G(g_six, r->scan_ix)
G(g_wopen, r->w_open) G(g_wscan, r->w_scan) G(g_whdr, r->w_open_hdr) G(g_wraw, r->w_raw) G(g_wcscan, r->wc_scan) G(g_wcraw, r->wc_raw)
G(g_wratio, r->w_scan / r->w_raw) G(g_wcratio, r->wc_scan / r->wc_raw)
G(g_wcreadb, (double)r->wc_readb) G(g_wcrawreadb, (double)r->wc_raw_readb) G(g_wcrnd, r->wc_rnd) G(g_wcrndreadb, (double)r->wc_rnd_readb)

static void usage(void) {
    fprintf(stderr, "usage: bench_dataset_read [--quick] [--runs N] [--passes N] [--lookups N] [--only index|scan|all]\n");
    exit(2);
}
int main(int argc, char **argv) {
    const char *only = "all";
    int a, i, do_index, do_scan;
    uint64_t lookups = 0;
    double lo, hi, m, json_mb, rb;
    bd_prog = "bench_dataset_read";
    for (a = 1; a < argc; a++) {
        if (strcmp(argv[a], "--quick") == 0) g_quick = 1;
        else if (strcmp(argv[a], "--runs") == 0 && a + 1 < argc) g_runs = atoi(argv[++a]);
        else if (strcmp(argv[a], "--passes") == 0 && a + 1 < argc) g_passes = atoi(argv[++a]);
        else if (strcmp(argv[a], "--lookups") == 0 && a + 1 < argc) lookups = strtoull(argv[++a], NULL, 10);
        else if (strcmp(argv[a], "--only") == 0 && a + 1 < argc) only = argv[++a];
        else usage();
    }
    if (g_runs < 1 || g_runs > MAX_RUNS || g_passes < 1 || (strcmp(only, "all") && strcmp(only, "index") && strcmp(only, "scan"))) usage();
    do_index = strcmp(only, "scan") != 0;
    do_scan = strcmp(only, "index") != 0;
    if (g_quick) { g_rows_per_task /= 16; g_wide_files /= 16; }
    g_keys = g_tasks * g_rows_per_task;
    g_lookups = lookups ? lookups : g_keys;
    bd_install_signals();
    bd_make_root("sts-bench-dataset-read", (uint64_t)2 << 30);
    bd_path(g_kv, sizeof g_kv, bd_root, "kv");
    bd_path(g_wide, sizeof g_wide, bd_root, "wide");
    bd_print_machine(stdout, bd_root);
    printf("library: safetensors_spark.h %s\n", STS_VERSION_STRING);
    g_b = (built *)bd_shared(sizeof *g_b);
    g_r = (rrun *)bd_shared(MAX_RUNS * sizeof *g_r);
    if (bd_run_child(build, NULL) != 0 || !g_b->ok) bd_die("building the datasets failed: %s", g_b->why);
    bd_settle(bd_root);  /* written back, so dropping pages later makes reads cold */
    json_mb = (double)g_b->json_bytes / 1e6;
    printf("kv dataset: %llu keys in %llu shards (%.1f MB), _tensor_index.json %.1f MB, .csv %.1f MB; written in %.2f s + dataset commit %.2f s\n",
           (unsigned long long)g_keys, (unsigned long long)g_b->shards, (double)g_b->kv_bytes / 1e6, json_mb, (double)g_b->csv_bytes / 1e6,
           g_b->t_kv_write, g_b->t_kv_commit);
    printf("wide dataset: %llu files, %.1f MB, header bytes (8 + N) %llu in all, %.0f per file; written in %.2f s\n",
           (unsigned long long)g_wide_files, (double)g_b->wide_bytes / 1e6, (unsigned long long)g_b->wide_header_bytes,
           (double)g_b->wide_header_bytes / (double)g_wide_files, g_b->t_wide);
    printf("%d runs, each measurement in a fresh child process; %llu timed lookups per kind and run\n", g_runs, (unsigned long long)g_lookups);
    for (i = 0; i < g_runs; i++) {
        rrun *o = &g_r[i];
        int rc;
        if (do_index) {
            rc = bd_run_child(run_index, o);
            if (rc || !o->ok) bd_die("run %d (index) failed: %s", i, o->why);
            o->ok = 0;
            rc = bd_run_child(run_noindex, o);
            if (rc || !o->ok) bd_die("run %d (no index) failed: %s", i, o->why);
            printf("   run %d: index open cold %.3f s warm %.3f s (%.0f MB/s), lookups p50 %.0f / p99 %.0f ns (clock %.0f ns), with data %.0f / %.0f ns; "
                   "no index: build %.3f s, header scan %.3f s; load %.2f\n",
                   i, o->open_cold, o->open_warm, json_mb / o->open_warm, o->nd_p50, o->nd_p99, o->clock_ns, o->wd_p50, o->wd_p99, o->ni_build,
                   o->scan_end, bd_loadavg());
        }
        if (do_scan) {
            o->ok = 0;
            rc = bd_run_child(run_wide, o);
            if (rc || !o->ok) bd_die("run %d (wide) failed: %s", i, o->why);
            printf("   run %d: wide scan warm %.2f us/file (by hand %.2f), cold %.2f us/file (by hand %.2f), rchar %llu = header bytes %llu, "
                   "cold read_bytes %llu (by hand %llu); load %.2f\n",
                   i, o->w_scan / (double)g_wide_files * 1e6, o->w_raw / (double)g_wide_files * 1e6, o->wc_scan / (double)g_wide_files * 1e6,
                   o->wc_raw / (double)g_wide_files * 1e6, (unsigned long long)o->w_rchar, (unsigned long long)o->w_hbytes,
                   (unsigned long long)o->wc_readb, (unsigned long long)o->wc_raw_readb, bd_loadavg());
        }
        fflush(stdout);
    }
    printf("\nmedians over %d runs (min-max in parentheses)\n", g_runs);
    if (do_index) {
        printf("\n### index load: %llu keys, %llu shards, _tensor_index.json %.1f MB\n\n", (unsigned long long)g_keys, (unsigned long long)g_b->shards, json_mb);
        printf("| what | time | MB/s of index JSON | goal >= 500 MB/s |\n|---|---:|---:|---|\n");
        m = col_med(g_open_warm, &lo, &hi);
        printf("| sts_dataset_open, warm (file in page cache) | %.3f s (%.3f-%.3f) | %.0f (%.0f-%.0f) | %s |\n", m, lo, hi, json_mb / m, json_mb / hi, json_mb / lo,
               json_mb / m >= 500 ? "met" : "**missed**");
        m = col_med(g_open_cold, &lo, &hi);
        printf("| sts_dataset_open, cold (JSON pages dropped) | %.3f s (%.3f-%.3f) | %.0f (%.0f-%.0f) | %s |\n", m, lo, hi, json_mb / m, json_mb / hi, json_mb / lo,
               json_mb / m >= 500 ? "met" : "**missed**");
        m = col_med(g_read_warm, &lo, &hi);
        printf("| baseline: read() of the JSON file in 1 MiB calls, warm | %.3f s (%.3f-%.3f) | %.0f (%.0f-%.0f) | - |\n", m, lo, hi, json_mb / m, json_mb / hi, json_mb / lo);
        m = col_med(g_read_cold, &lo, &hi);
        printf("| baseline: read() of the JSON file in 1 MiB calls, cold | %.3f s (%.3f-%.3f) | %.0f (%.0f-%.0f) | - |\n", m, lo, hi, json_mb / m, json_mb / hi, json_mb / lo);
        m = col_med(g_open_infer, &lo, &hi);
        printf("| sts_dataset_open, warm, infer_schema (%llu columns from the index) | %.3f s (%.3f-%.3f) | %.0f | - |\n", (unsigned long long)g_rows_per_task, m, lo, hi, json_mb / m);
        m = col_med(g_niopen, &lo, &hi);
        printf("| baseline: sts_dataset_open with no_index (manifest only) | %.4f s (%.4f-%.4f) | - | - |\n", m, lo, hi);
        m = col_med(g_hwm, &lo, &hi);
        printf("\npeak RSS of the lookup process (index loaded, all %llu files mapped): %.0f MiB (%.0f-%.0f)\n", (unsigned long long)g_tasks, m, lo, hi);

        printf("\n### lookups after the load (ns, clock overhead subtracted; %llu random keys per kind)\n\n", (unsigned long long)g_lookups);
        printf("| lookup | p50 | p99 | p99.9 | CPU ns per lookup, untimed loop | goal < 1 us |\n|---|---:|---:|---:|---:|---|\n");
        {
            double a50 = col_med(g_nd50, &lo, &hi), a99, a999, am;
            char s50[48];
            snprintf(s50, sizeof s50, "%.0f (%.0f-%.0f)", a50, lo, hi);
            a99 = col_med(g_nd99, &lo, &hi);
            a999 = col_med(g_nd999, &lo, &hi);
            am = col_med(g_ndm, &lo, &hi);
            printf("| sts_dataset_get, index, no data | %s | %.0f | %.0f | %.0f | %s |\n", s50, a99, a999, am, a50 < 1000 && a99 < 1000 ? "met (p50 and p99)" : a50 < 1000 ? "met at p50, **missed at p99**" : "**missed**");
            a50 = col_med(g_wd50, &lo, &hi);
            snprintf(s50, sizeof s50, "%.0f (%.0f-%.0f)", a50, lo, hi);
            a99 = col_med(g_wd99, &lo, &hi);
            a999 = col_med(g_wd999, &lo, &hi);
            am = col_med(g_wdm, &lo, &hi);
            printf("| sts_dataset_get, index, with data (files mapped) | %s | %.0f | %.0f | %.0f | %s |\n", s50, a99, a999, am, a50 < 1000 && a99 < 1000 ? "met (p50 and p99)" : a50 < 1000 ? "met at p50, **missed at p99**" : "**missed**");
            a50 = col_med(g_ni50, &lo, &hi);
            snprintf(s50, sizeof s50, "%.0f (%.0f-%.0f)", a50, lo, hi);
            a99 = col_med(g_ni99, &lo, &hi);
            a999 = col_med(g_ni999, &lo, &hi);
            printf("| sts_dataset_get, no index (map built from headers), no data | %s | %.0f | %.0f | - | - |\n", s50, a99, a999);
        }
        m = col_med(g_clock, &lo, &hi);
        printf("\nclock_gettime pair: %.0f ns (subtracted); raw p50 without data %.0f ns\n", m, col_med(g_ndraw, &lo, &hi));
        m = col_med(g_map_all, &lo, &hi);
        printf("first data access of each of the %llu files (map + full header parse): %.1f ms in all, %.2f ms per file\n", (unsigned long long)g_tasks,
               m * 1e3, m * 1e3 / (double)g_tasks);

        printf("\n### the same key without the index\n\n| what | time | files opened | header bytes read |\n|---|---:|---:|---:|\n");
        m = col_med(g_nibuild, &lo, &hi);
        printf("| first sts_dataset_get (no_index): builds the key map from every header | %.3f s (%.3f-%.3f) | %llu | %.1f MB |\n", m, lo, hi,
               (unsigned long long)g_r[0].ni_files, (double)g_r[0].ni_hbytes / 1e6);
        m = col_med(g_smatch, &lo, &hi);
        printf("| long scan, key filter, no index: until the match | %.3f s (%.3f-%.3f) | - | - |\n", m, lo, hi);
        m = col_med(g_send, &lo, &hi);
        printf("| long scan, key filter, no index: to the end (a scan cannot stop at the first match) | %.3f s (%.3f-%.3f) | %llu | %.1f MB |\n", m, lo, hi,
               (unsigned long long)g_r[0].scan_files, (double)g_r[0].scan_hbytes / 1e6);
        m = col_med(g_six, &lo, &hi);
        printf("| long scan, key filter, pushed down through the index (after the load) | %.2f ms (%.2f-%.2f) | %llu | - |\n", m * 1e3, lo * 1e3, hi * 1e3,
               (unsigned long long)g_r[0].scan_ix_files);
        printf("| sts_dataset_get through the index (p50, above) | %.0f ns | 0 | 0 |\n", col_med(g_nd50, &lo, &hi));
    }
    if (do_scan) {
        double per = 1e6 / (double)g_wide_files;
        printf("\n### wide scan without data: %llu files, 3 columns, %.0f header bytes per file, %.0f KiB of data per file\n\n",
               (unsigned long long)g_wide_files, (double)g_b->wide_header_bytes / (double)g_wide_files,
               (double)(g_b->wide_bytes - g_b->wide_header_bytes) / (double)g_wide_files / 1024.0);
        printf("| pass | us per file | total ms | bytes returned by read calls (rchar) | read calls | bytes from the device (read_bytes) |\n|---|---:|---:|---:|---:|---:|\n");
        m = col_med(g_wscan, &lo, &hi);
        printf("| sts_scan wide, warm | %.2f (%.2f-%.2f) | %.1f | %llu (header bytes by sts_scan_get_stats: %llu) | %llu | 0 (cached) |\n", m * per, lo * per, hi * per,
               m * 1e3, (unsigned long long)g_r[0].w_rchar, (unsigned long long)g_r[0].w_hbytes, (unsigned long long)g_r[0].w_syscr);
        m = col_med(g_whdr, &lo, &hi);
        printf("| baseline: sts_open(header_only) + sts_close per file, warm | %.2f (%.2f-%.2f) | %.1f | %llu | - | 0 |\n", m * per, lo * per, hi * per, m * 1e3,
               (unsigned long long)g_r[0].w_hdr_rchar);
        m = col_med(g_wraw, &lo, &hi);
        printf("| baseline: open + one pread + close by hand, warm | %.2f (%.2f-%.2f) | %.1f | %llu | %llu | 0 |\n", m * per, lo * per, hi * per, m * 1e3,
               (unsigned long long)g_r[0].w_raw_rchar, (unsigned long long)g_r[0].w_raw_syscr);
        rb = col_med(g_wcreadb, &lo, &hi);
        m = col_med(g_wcscan, &lo, &hi);
        printf("| sts_scan wide, cold | %.2f (%.2f-%.2f) | %.1f | %llu | - | %.0f (%.1f KiB per file) |\n", m * per, lo * per, hi * per, m * 1e3,
               (unsigned long long)g_r[0].wc_rchar, rb, rb / (double)g_wide_files / 1024.0);
        rb = col_med(g_wcrawreadb, &lo, &hi);
        m = col_med(g_wcraw, &lo, &hi);
        printf("| baseline: by hand, cold | %.2f (%.2f-%.2f) | %.1f | - | - | %.0f (%.1f KiB per file) |\n", m * per, lo * per, hi * per, m * 1e3, rb,
               rb / (double)g_wide_files / 1024.0);
        rb = col_med(g_wcrndreadb, &lo, &hi);
        m = col_med(g_wcrnd, &lo, &hi);
        printf("| reference: by hand + posix_fadvise(POSIX_FADV_RANDOM), cold | %.2f (%.2f-%.2f) | %.1f | - | - | %.0f (%.1f KiB per file) |\n", m * per, lo * per,
               hi * per, m * 1e3, rb, rb / (double)g_wide_files / 1024.0);
        {
            double ws = col_med(g_wscan, &lo, &hi) * per, wr = col_med(g_wraw, &lo, &hi) * per, q = col_med(g_wratio, &lo, &hi);
            printf("\nWARM RATIO sts_scan / hand loop: %.2fx (%.2f-%.2f over runs; %.2f vs %.2f us per file, best of %d passes; "
                   "goal <= 1.20x: %s)\n", q, lo, hi, ws, wr, g_passes, q <= 1.2 ? "met" : "**missed**");
        }
        printf("read calls per file (syscr): sts_scan %.2f, hand loop %.2f\n", (double)g_r[0].w_syscr / (double)g_wide_files,
               (double)g_r[0].w_raw_syscr / (double)g_wide_files);
        printf("cold ratio sts_scan / hand loop: %.2fx; sts_dataset_open of the %llu-file dataset (manifest + a stat per file): %.2f ms\n",
               col_med(g_wcratio, &lo, &hi), (unsigned long long)g_wide_files, col_med(g_wopen, &lo, &hi) * 1e3);
        if (g_r[0].w_rchar >= g_r[0].w_hbytes)
            printf("bytes read: rchar of the scan %llu = header bytes %llu + %llu past the headers (%.1f per file: guessed lengths)\n",
                   (unsigned long long)g_r[0].w_rchar, (unsigned long long)g_r[0].w_hbytes,
                   (unsigned long long)(g_r[0].w_rchar - g_r[0].w_hbytes), (double)(g_r[0].w_rchar - g_r[0].w_hbytes) / (double)g_wide_files);
        else
            printf("bytes read: rchar of the scan %llu is LESS than the header bytes %llu\n", (unsigned long long)g_r[0].w_rchar,
                   (unsigned long long)g_r[0].w_hbytes);
    }
    printf("\nload average at end %.2f\n", bd_loadavg());
    bd_cleanup();
    return 0;
}
