/* bench_dataset_write.c - dataset writer throughput (issue 4): batch mode against raw write() of the
   same files, KV mode with its peak RSS, and the dataset commit of 1M keys with the tensor index.

   Every figure is measured beside its baseline in the same run, in the same folder:
     - durable writes (the default: fsync of every file, then of the folder) against write() +
       fsync() of the same number of files of the same sizes (and one fsync of the folder);
     - non-durable writes (no_fsync = 1, durable=false) against write() alone.

   batch  4 GiB of F32 rows of 1 MiB (262,144 elements) each, batch_size 64: 64 files of 64 MiB.
          F32: tensor cells (STS_VALUE_TENSOR, F32 [262144]); the library gathers rows under 2 MiB
          into 2 MiB buffers written at 2 MiB file offsets (larger rows go out zero-copy).
          BF16: numeric-array cells (STS_VALUE_ARRAY of float) encoded to dtype BF16 (truncation):
          64 files of 32 MiB. Throughput is given as input bytes/s and output bytes/s; the ratio
          compares output bytes/s against raw write() of the output size. A third reference, "by
          hand" (non-durable only), converts with sts_convert into a 1 MiB buffer and write()s it:
          the floor for convert + write in one thread.
          Raw writes use 1 MiB write() calls from the same in-memory rows. A fourth reference writes
          the same files in writev() calls that end on 2 MiB file offsets, as the library does: Linux
          then caches the files in 2 MiB folios, which a later mmap maps whole (fast reads of fresh
          shards), but whose allocation costs more where the host takes back free memory (the 2-vCPU
          VM: see RESULTS-dataset.md). "sts/that" compares like with like.
          Timed: sts_task_open .. sts_task_commit (rows in, files sealed and renamed, folder
          synced when durable). sts_dataset_commit (header checks, manifest) is timed apart.
   kv     1M rows of one 1 KiB tensor each, keys sample-0000000 .. sample-0999999 (tensor names
          sample-0000123__x), default shard target (300 MiB), generate_index. The tensor is
          F32 [256] by default; --kv-dtype u8 makes it U8 [1024] (the same bytes). The same job
          runs in both shard layouts, kv_layout = sorted (the default, the reference writer's)
          and kv_layout = arrival (shards written while they fill, behind reserved header room);
          its dataset commit and read-back too.
          Timed: sts_task_open .. sts_task_commit; GB/s of tensor payload (1 KiB per row) and of
          file bytes. Peak RSS: VmHWM of the child process that runs the task writer (one child
          per measurement; its VmRSS before the writer opens is printed too). Raw baseline: the
          same number of files of the same sizes, 4 MiB write() calls from one 4 MiB buffer (in the
          cache). A second raw baseline writes the same files from a buffer the size of the largest
          shard, filled before the clock starts: a writer that holds a shard in memory until its
          header is known (as ours must: the header comes first and names every tensor) writes
          bytes that left the cache long ago, and this is the fastest such writer can go.
   commit sts_dataset_commit of that KV job (1M keys): header checks of every shard, the key
          index, _tensor_index.csv and _tensor_index.json, dataset_manifest.json; in its own
          child, with its own peak RSS.
   CPU    user + system CPU seconds of the timed part (getrusage in the child) are printed beside
          the wall times: on a shared machine they separate the work done from time lost waiting.

   Checks (untimed), so an error path cannot be what is timed: every library call must return
   STS_OK; the dataset summary must give the expected shards, samples, tensors and bytes; batch
   files are reopened (sts_open) and every row is checked at 4 positions (row number, pattern,
   BF16 as truncated F32 bits); KV datasets are reopened through the index and 1,000 random keys
   are read back with data; raw files must have their sizes.

   Files live in a fresh folder under $BENCH_DIR (default /tmp), emptied right before every
   measurement and removed at the end, on failure and on SIGINT/SIGTERM/SIGHUP.

   usage: bench_dataset_write [--quick] [--runs N] [--mib N] [--kv-rows N] [--kv-bytes N] [--kv-dtype u8|f32]
                              [--only batch|kv|all] [--no-conv] [--no-io-thread] [--batch-case f32|bf16]
          --quick   sizes / 16 (256 MiB batch, 62,500 KV rows): a smoke run
          --runs    repetitions of every measurement (default 3); medians and spread are printed
          --mib     batch volume in MiB (a multiple of 64; default 4096)
          --kv-rows KV rows (default 1,000,000)
          --kv-bytes each KV row's tensor in bytes, a multiple of 4 up to 16 MiB (default 1,024)
          --no-io-thread  the task writers run without their I/O thread (io_thread=false)
          --batch-case    only the F32 or only the BF16 batch cases */
#define _GNU_SOURCE
#define STS_IMPLEMENTATION
#include "../safetensors_spark.h"

#include "bench_util.h"
#include "bench_dataset_util.h"
#include <sys/uio.h>

#define MIB ((uint64_t)1 << 20)
#define ROW_ELEMS ((uint64_t)262144) /* 1 MiB of F32 */
#define POOL_ROWS 16                 /* distinct input rows, reused round-robin */
static uint64_t KV_BYTES = 1024;    /* one 1 KiB tensor per row (--kv-bytes) */
static uint8_t *g_kv_data;          /* its bytes, KV_BYTES of them */
#define MAX_SHARDS 1024

/* ---- parameters (set in main, inherited by the children) ---- */
static int g_quick, g_runs = 3, g_conv = 1, g_kv_f32 = 1, g_no_io_thread, g_batch_case = -1;
static uint64_t g_batch_rows = 4096, g_batch_size = 64, g_kv_rows = 1000000;
static char g_out[4096];             /* the dataset / raw folder */
static uint64_t g_hdr[2];            /* 8 + N of a batch file: [0] F32, [1] BF16 */

enum { C_F32 = 0, C_BF16 = 1 };
enum { W_LIB = 0, W_RAW = 1, W_HAND = 2, W_ALIGN = 3 };

typedef struct meas {                /* one measurement, in memory shared with the child */
    int ok;
    double t_task, t_commit;         /* seconds */
    double cpu_user, cpu_sys;        /* CPU seconds of the timed part */
    double t_rows, caller_cpu;       /* KV: seconds until the last row was taken; the caller thread's CPU */
    uint64_t out_bytes, files;       /* bytes on disk, files */
    uint64_t rss0_kib, hwm_kib;      /* VmRSS before, VmHWM after */
    uint64_t json_bytes, csv_bytes;  /* index files (KV commit) */
    uint64_t shard_bytes[MAX_SHARDS];
    size_t nshards;
    size_t msg_len;
    char msg[1 << 16];               /* the KV task's commit message, for the commit child */
    char why[512];                   /* failure */
} meas;

typedef struct job { int c, durable, who; meas *m; const meas *sizes; } job;

static int failf(meas *m, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m->why, sizeof m->why, fmt, ap);
    va_end(ap);
    m->ok = 0;
    fprintf(stderr, "bench_dataset_write: CHECK FAILED: %s\n", m->why);
    return 1;
}
static int fail_sts(meas *m, const char *what, sts_result r, const sts_error *e) {
    return failf(m, "%s: %s: %s", what, sts_result_name(r), e->message);
}
static int write_all(int fd, const void *p, size_t n) {
    const char *c = (const char *)p;
    while (n) {
        ssize_t k = write(fd, c, n);
        if (k < 0) { if (errno == EINTR) continue; return errno; }
        c += k;
        n -= (size_t)k;
    }
    return 0;
}
static int fsync_dir(const char *dir) {
    int fd = open(dir, O_RDONLY | O_CLOEXEC), e = 0;
    if (fd < 0) return errno;
    if (fsync(fd) != 0) e = errno;
    close(fd);
    return e;
}

/* ---- the input rows ---- */
static float pattern(uint64_t b, uint64_t k) { return (float)((k * 7 + b * 131) % 4093) * 1.0009765625f - 1000.0f; }
/* Row r is pool row r % POOL_ROWS with element 0 = r and the last element = -r. */
static float row_value(uint64_t r, uint64_t k, uint64_t elems) {
    if (k == 0) return (float)r;
    if (k == elems - 1) return -(float)r;
    return pattern(r % POOL_ROWS, k);
}
static float *pool_make(uint64_t elems) {
    float *p = (float *)malloc((size_t)(POOL_ROWS * elems) * sizeof *p);
    uint64_t b, k;
    if (!p) return NULL;
    for (b = 0; b < POOL_ROWS; b++)
        for (k = 0; k < elems; k++) p[b * elems + k] = pattern(b, k);
    return p;
}
static float *pool_row(float *pool, uint64_t r, uint64_t elems) {
    float *row = pool + (r % POOL_ROWS) * elems;
    row[0] = (float)r;
    row[elems - 1] = -(float)r;
    return row;
}
static uint16_t bf16_trunc(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return (uint16_t)(u >> 16);  /* the patterns hold no NaN */
}
static uint64_t file_size(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 ? (uint64_t)st.st_size : UINT64_MAX;
}
/* Sizes of the part-*.safetensors files of dir, in name order (KV shards). */
static size_t list_shards(const char *dir, uint64_t *sizes, size_t cap) {
    DIR *d = opendir(dir);
    struct dirent *e;
    char names[MAX_SHARDS][128], p[4096];
    size_t n = 0, i, j;
    if (!d) return 0;
    while ((e = readdir(d)) != NULL && n < cap)
        if (strncmp(e->d_name, "part-", 5) == 0 && strlen(e->d_name) < 128) snprintf(names[n++], 128, "%s", e->d_name);
    closedir(d);
    for (i = 1; i < n; i++)
        for (j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; j--) {
            char t[128];
            memcpy(t, names[j], 128); memcpy(names[j], names[j - 1], 128); memcpy(names[j - 1], t, 128);
        }
    for (i = 0; i < n; i++) { bd_path(p, sizeof p, dir, names[i]); sizes[i] = file_size(p); }
    return n;
}

/* ---- batch mode ---- */
static void batch_config(sts_write_config *cfg, sts_column *col, int c, int durable) {
    memset(cfg, 0, sizeof *cfg);
    memset(col, 0, sizeof *col);
    cfg->batch_size = g_batch_size;
    cfg->no_fsync = !durable;
    cfg->no_io_thread = g_no_io_thread;
    col->name = "x";
    if (c == C_F32) col->kind = STS_VALUE_TENSOR;
    else {
        col->kind = STS_VALUE_ARRAY;
        col->elem = STS_DTYPE_F32;
        cfg->has_dtype = 1;
        cfg->dtype = STS_DTYPE_BF16;
        cfg->rounding = STS_ROUND_TRUNCATE;
    }
}
/* Every file of the folder's dataset: header, size, and 4 elements of every row. */
static int batch_verify(int c, meas *m) {
    sts_dataset *ds = NULL;
    sts_read_config rc;
    sts_error err;
    sts_result r;
    sts_dataset_info info;
    uint64_t files = g_batch_rows / g_batch_size, i, j, total = 0;
    uint64_t data = g_batch_size * ROW_ELEMS * (c == C_F32 ? 4 : 2);
    memset(&rc, 0, sizeof rc);
    rc.infer_schema = 1;
    if ((r = sts_dataset_open(g_out, &rc, NULL, &ds, &err)) != STS_OK) return fail_sts(m, "sts_dataset_open (verify)", r, &err);
    info = sts_dataset_describe(ds);
    if (info.files != files || info.total_samples != g_batch_rows || !info.has_manifest) {
        sts_dataset_close(ds);
        return failf(m, "batch dataset: %zu files, %llu samples, manifest %d; expected %llu files, %llu samples", info.files,
                     (unsigned long long)info.total_samples, info.has_manifest, (unsigned long long)files, (unsigned long long)g_batch_rows);
    }
    for (i = 0; i < files; i++) {
        char p[4096];
        sts_file *f = NULL;
        const sts_tensor *t;
        bd_path(p, sizeof p, g_out, sts_dataset_file(ds, (size_t)i));
        if ((r = sts_open(p, NULL, &f, &err)) != STS_OK) { sts_dataset_close(ds); return fail_sts(m, "sts_open (verify)", r, &err); }
        t = sts_find(f, "x", 1);
        if (!t || t->dtype != (c == C_F32 ? STS_DTYPE_F32 : STS_DTYPE_BF16) || t->rank != 2 || t->shape[0] != g_batch_size ||
            t->shape[1] != ROW_ELEMS || sts_file_size(f) != g_hdr[c] + data) {
            sts_close(f);
            sts_dataset_close(ds);
            return failf(m, "file %s: wrong tensor or size (%llu bytes, expected %llu)", p, (unsigned long long)file_size(p),
                         (unsigned long long)(g_hdr[c] + data));
        }
        total += sts_file_size(f);
        for (j = 0; j < g_batch_size; j++) {
            uint64_t row = i * g_batch_size + j, ks[4], q;
            ks[0] = 0; ks[1] = 1 + (row * 977) % (ROW_ELEMS - 2); ks[2] = ROW_ELEMS / 2; ks[3] = ROW_ELEMS - 1;
            for (q = 0; q < 4; q++) {
                float want = row_value(row, ks[q], ROW_ELEMS);
                const uint8_t *d = (const uint8_t *)sts_data(f, t);
                int good;
                if (c == C_F32) {
                    float got;
                    memcpy(&got, d + (j * ROW_ELEMS + ks[q]) * 4, 4);
                    good = got == want;
                } else {
                    uint16_t got;
                    memcpy(&got, d + (j * ROW_ELEMS + ks[q]) * 2, 2);
                    good = got == bf16_trunc(want);
                }
                if (!good) {
                    sts_close(f);
                    sts_dataset_close(ds);
                    return failf(m, "file %s: row %llu element %llu holds the wrong value", p, (unsigned long long)row, (unsigned long long)ks[q]);
                }
            }
        }
        sts_close(f);
    }
    sts_dataset_close(ds);
    if (total != m->out_bytes) return failf(m, "batch files hold %llu bytes, the summary says %llu", (unsigned long long)total, (unsigned long long)m->out_bytes);
    return 0;
}
static int batch_lib(void *arg) {
    const job *jb = (const job *)arg;
    meas *m = jb->m;
    sts_write_config cfg;
    sts_column col;
    sts_task_writer *w = NULL;
    sts_error err;
    sts_result r;
    sts_value v;
    sts_dataset_summary sum;
    uint64_t shape[1] = { ROW_ELEMS }, row, files = g_batch_rows / g_batch_size;
    char *msg = NULL;
    size_t msg_len = 0;
    float *pool = pool_make(ROW_ELEMS);
    const char *const *msgs;
    double t0, t1, t2, u0, s0, u1, s1;
    if (!pool) return failf(m, "out of memory");
    batch_config(&cfg, &col, jb->c, jb->durable);
    memset(&v, 0, sizeof v);
    v.dtype = STS_DTYPE_F32;
    v.rank = 1;
    v.shape = shape;
    v.size = jb->c == C_F32 ? ROW_ELEMS * 4 : ROW_ELEMS;
    m->rss0_kib = bd_status_kib("VmRSS");
    if ((r = sts_dataset_prepare(g_out, &cfg, &col, 1, NULL, &err)) != STS_OK) return fail_sts(m, "sts_dataset_prepare", r, &err);
    bd_cpu_times(&u0, &s0);
    t0 = tu_now();
    if ((r = sts_task_open(g_out, 0, &cfg, &col, 1, NULL, &w, &err)) != STS_OK) return fail_sts(m, "sts_task_open", r, &err);
    for (row = 0; row < g_batch_rows; row++) {
        v.data = pool_row(pool, row, ROW_ELEMS);
        if ((r = sts_task_write(w, &v, &err)) != STS_OK) return fail_sts(m, "sts_task_write", r, &err);
    }
    if ((r = sts_task_commit(w, &msg, &msg_len, &err)) != STS_OK) return fail_sts(m, "sts_task_commit", r, &err);
    t1 = tu_now();
    bd_cpu_times(&u1, &s1);
    m->cpu_user = u1 - u0;
    m->cpu_sys = s1 - s0;
    sts_task_close(w);
    msgs = (const char *const *)&msg;
    if ((r = sts_dataset_commit(g_out, &cfg, msgs, &msg_len, 1, NULL, &sum, &err)) != STS_OK) return fail_sts(m, "sts_dataset_commit", r, &err);
    t2 = tu_now();
    m->hwm_kib = bd_status_kib("VmHWM");
    sts_free(NULL, msg, msg_len + 1);
    free(pool);
    m->t_task = t1 - t0;
    m->t_commit = t2 - t1;
    m->out_bytes = sum.bytes;
    m->files = sum.shards;
    if (sum.shards != files || sum.samples != g_batch_rows || sum.tensors != files ||
        sum.bytes != files * (g_hdr[jb->c] + g_batch_size * ROW_ELEMS * (jb->c == C_F32 ? 4 : 2)))
        return failf(m, "summary: %llu shards, %llu samples, %llu tensors, %llu bytes", (unsigned long long)sum.shards,
                     (unsigned long long)sum.samples, (unsigned long long)sum.tensors, (unsigned long long)sum.bytes);
    if (batch_verify(jb->c, m)) return 1;
    m->ok = 1;
    return 0;
}
/* W_ALIGN: a file's data (rows of out_row bytes, row r from pool_row) in writev() calls that end on
   2 MiB file offsets, as the library writes: the page cache then holds the file in 2 MiB folios,
   which a later mmap maps whole (see RESULTS-dataset.md). hdr is where the data starts. The piece
   size is the library's own (STS__FOLIO), so this baseline follows its layout. */
static int write_aligned(int fd, float *pool, uint64_t first_row, uint64_t out_row, uint64_t hdr) {
    uint64_t data = g_batch_size * out_row, at = 0;
    while (at < data) {
        uint64_t piece = STS__FOLIO - (hdr + at) % STS__FOLIO, done = 0;
        struct iovec iov[8];
        int k = 0;
        ssize_t put;
        if (piece > data - at) piece = data - at;
        while (done < piece && k < 8) {  /* the rows it covers: at most 3 of 1 MiB (F32), 5 of 0.5 MiB (BF16) */
            uint64_t r = (at + done) / out_row, in = (at + done) % out_row, n = out_row - in;
            if (n > piece - done) n = piece - done;
            iov[k].iov_base = (uint8_t *)pool_row(pool, first_row + r, ROW_ELEMS) + in;
            iov[k].iov_len = (size_t)n;
            k++;
            done += n;
        }
        put = writev(fd, iov, k);
        if (put < 0) { if (errno == EINTR) continue; return errno; }
        if (put == 0) return EIO;
        at += (uint64_t)put;  /* a short write: the next piece starts where it stopped */
    }
    return 0;
}
/* Raw write(): the same files (8 + N header bytes, then the rows' output bytes in 1 MiB writes;
   W_ALIGN: in writes that end on 2 MiB file offsets). W_HAND: the BF16 bytes are made with
   sts_convert into a 1 MiB buffer first. */
static int batch_raw(void *arg) {
    const job *jb = (const job *)arg;
    meas *m = jb->m;
    uint64_t files = g_batch_rows / g_batch_size, f, row, out_row = ROW_ELEMS * (jb->c == C_F32 ? 4 : 2);
    uint64_t data = g_batch_size * out_row, total = 0;
    float *pool = pool_make(ROW_ELEMS);
    uint8_t *hdr = (uint8_t *)calloc(1, (size_t)g_hdr[jb->c]), *conv = (uint8_t *)malloc(MIB);
    double t0, t1, u0, s0, u1, s1;
    int e;
    if (!pool || !hdr || !conv) return failf(m, "out of memory");
    m->rss0_kib = bd_status_kib("VmRSS");
    bd_cpu_times(&u0, &s0);
    t0 = tu_now();
    for (f = 0; f < files; f++) {
        char p[4096], name[64];
        int fd;
        snprintf(name, sizeof name, "raw-%05llu.bin", (unsigned long long)f);
        bd_path(p, sizeof p, g_out, name);
        if ((fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) < 0) return failf(m, "open %s: %s", p, strerror(errno));
        if ((e = write_all(fd, hdr, (size_t)g_hdr[jb->c])) != 0) return failf(m, "write: %s", strerror(e));
        if (jb->who == W_ALIGN) {
            if ((e = write_aligned(fd, pool, f * g_batch_size, out_row, g_hdr[jb->c])) != 0)
                return failf(m, "writev: %s", strerror(e));
        } else if (jb->c == C_F32) {
            for (row = f * g_batch_size; row < (f + 1) * g_batch_size; row++)
                if ((e = write_all(fd, pool_row(pool, row, ROW_ELEMS), MIB)) != 0) return failf(m, "write: %s", strerror(e));
        } else {
            for (row = f * g_batch_size; row < (f + 1) * g_batch_size; row += 2) {  /* 2 BF16 rows = 1 MiB */
                if (jb->who == W_HAND) {
                    if (sts_convert(conv, STS_DTYPE_BF16, pool_row(pool, row, ROW_ELEMS), STS_DTYPE_F32, ROW_ELEMS, STS_ROUND_TRUNCATE) != STS_OK ||
                        sts_convert(conv + out_row, STS_DTYPE_BF16, pool_row(pool, row + 1, ROW_ELEMS), STS_DTYPE_F32, ROW_ELEMS, STS_ROUND_TRUNCATE) != STS_OK)
                        return failf(m, "sts_convert failed");
                    e = write_all(fd, conv, MIB);
                } else
                    e = write_all(fd, pool_row(pool, row, ROW_ELEMS), MIB);
                if (e) return failf(m, "write: %s", strerror(e));
            }
        }
        if (jb->durable && fsync(fd) != 0) return failf(m, "fsync: %s", strerror(errno));
        if (close(fd) != 0) return failf(m, "close: %s", strerror(errno));
    }
    if (jb->durable && (e = fsync_dir(g_out)) != 0) return failf(m, "fsync of the folder: %s", strerror(e));
    t1 = tu_now();
    bd_cpu_times(&u1, &s1);
    m->cpu_user = u1 - u0;
    m->cpu_sys = s1 - s0;
    m->hwm_kib = bd_status_kib("VmHWM");
    for (f = 0; f < files; f++) {
        char p[4096], name[64];
        snprintf(name, sizeof name, "raw-%05llu.bin", (unsigned long long)f);
        bd_path(p, sizeof p, g_out, name);
        if (file_size(p) != g_hdr[jb->c] + data) return failf(m, "%s has %llu bytes", p, (unsigned long long)file_size(p));
        total += g_hdr[jb->c] + data;
    }
    if (jb->who == W_HAND) {  /* the by-hand conversion must give the library's bytes */
        char p[4096];
        uint16_t got;
        int fd;
        bd_path(p, sizeof p, g_out, "raw-00000.bin");
        fd = open(p, O_RDONLY | O_CLOEXEC);
        if (fd < 0 || pread(fd, &got, 2, (off_t)(g_hdr[1] + 2 * 5)) != 2 || got != bf16_trunc(row_value(0, 5, ROW_ELEMS)))
            return failf(m, "by-hand BF16 bytes are wrong");
        close(fd);
    }
    free(pool);
    free(hdr);
    free(conv);
    m->t_task = t1 - t0;
    m->out_bytes = total;
    m->files = files;
    m->ok = 1;
    return 0;
}

/* ---- KV mode ---- */
static const sts_column kv_schema[2] = { { "key", STS_VALUE_STRING, STS_DTYPE_U8 }, { "x", STS_VALUE_TENSOR, STS_DTYPE_F32 } };
static void kv_config(sts_write_config *cfg, int durable, int arrival) {
    memset(cfg, 0, sizeof *cfg);
    cfg->name_col = "key";
    cfg->kv_layout = arrival ? STS_KV_ARRIVAL : STS_KV_SORTED;
    cfg->generate_index = 1;
    cfg->no_fsync = !durable;
    cfg->no_io_thread = g_no_io_thread;
}
static void key_format(char *k, uint64_t i) {  /* "sample-%07llu", 14 bytes */
    int d;
    memcpy(k, "sample-", 7);
    for (d = 13; d >= 7; d--) { k[d] = (char)('0' + i % 10); i /= 10; }
    k[14] = 0;
}
static void key_next(char *k) {  /* increments the 7 digits in place */
    int d = 13;
    while (d >= 7 && k[d] == '9') k[d--] = '0';
    if (d >= 7) k[d]++;
}
static uint8_t kv_byte(uint64_t i) { return (uint8_t)(i * 7 + 3); }
static int kv_lib(void *arg) {
    const job *jb = (const job *)arg;
    meas *m = jb->m;
    sts_write_config cfg;
    sts_task_writer *w = NULL;
    sts_error err;
    sts_result r;
    sts_value v[2];
    uint64_t shape[1], i;
    char key[16], *msg = NULL;
    size_t msg_len = 0;
    double t0, t1, u0, s0, u1, s1;
    kv_config(&cfg, jb->durable, jb->c);  /* c: 1 = kv_layout arrival */
    for (i = 0; i < KV_BYTES; i++) g_kv_data[i] = kv_byte(i);  /* the same bytes as U8 [n] or F32 [n / 4] */
    shape[0] = g_kv_f32 ? KV_BYTES / 4 : KV_BYTES;
    memset(v, 0, sizeof v);
    key_format(key, 0);
    v[0].data = key; v[0].size = 14;
    v[1].data = g_kv_data; v[1].size = KV_BYTES; v[1].dtype = g_kv_f32 ? STS_DTYPE_F32 : STS_DTYPE_U8; v[1].rank = 1; v[1].shape = shape;
    if ((r = sts_dataset_prepare(g_out, &cfg, kv_schema, 2, NULL, &err)) != STS_OK) return fail_sts(m, "sts_dataset_prepare", r, &err);
    m->rss0_kib = bd_status_kib("VmRSS");
    bd_cpu_times(&u0, &s0);
    t0 = tu_now();
    if ((r = sts_task_open(g_out, 0, &cfg, kv_schema, 2, NULL, &w, &err)) != STS_OK) return fail_sts(m, "sts_task_open", r, &err);
    for (i = 0; i < g_kv_rows; i++) {
        uint32_t stamp = (uint32_t)i;
        memcpy(g_kv_data, &stamp, 4);  /* the row number in the first 4 bytes */
        if ((r = sts_task_write(w, v, &err)) != STS_OK) return fail_sts(m, "sts_task_write", r, &err);
        key_next(key);
    }
    m->t_rows = tu_now() - t0;
    if ((r = sts_task_commit(w, &msg, &msg_len, &err)) != STS_OK) return fail_sts(m, "sts_task_commit", r, &err);
    t1 = tu_now();
    bd_cpu_times(&u1, &s1);
    m->caller_cpu = bd_thread_cpu();  /* the caller's thread only: the rest of the process CPU is the I/O thread's */
    m->cpu_user = u1 - u0;
    m->cpu_sys = s1 - s0;
    m->hwm_kib = bd_status_kib("VmHWM");
    sts_task_close(w);
    m->t_task = t1 - t0;
    if (msg_len >= sizeof m->msg) return failf(m, "commit message of %zu bytes", msg_len);
    memcpy(m->msg, msg, msg_len + 1);
    m->msg_len = msg_len;
    sts_free(NULL, msg, msg_len + 1);
    m->nshards = list_shards(g_out, m->shard_bytes, MAX_SHARDS);
    for (i = 0, m->out_bytes = 0; i < m->nshards; i++) m->out_bytes += m->shard_bytes[i];
    m->files = m->nshards;
    if (!m->nshards) return failf(m, "no shard written");
    m->ok = 1;
    return 0;
}
static int kv_commit(void *arg) {
    const job *jb = (const job *)arg;
    meas *m = jb->m;
    const meas *w = jb->sizes;
    sts_write_config cfg;
    sts_error err;
    sts_result r;
    sts_dataset_summary sum;
    const char *msg = w->msg;
    size_t len = w->msg_len;
    char p[4096];
    double t0, t1;
    kv_config(&cfg, jb->durable, jb->c);
    m->rss0_kib = bd_status_kib("VmRSS");
    t0 = tu_now();
    if ((r = sts_dataset_commit(g_out, &cfg, &msg, &len, 1, NULL, &sum, &err)) != STS_OK) return fail_sts(m, "sts_dataset_commit", r, &err);
    t1 = tu_now();
    m->hwm_kib = bd_status_kib("VmHWM");
    m->t_commit = t1 - t0;
    if (sum.samples != g_kv_rows || sum.tensors != g_kv_rows || sum.shards != w->nshards || sum.bytes != w->out_bytes)
        return failf(m, "KV summary: %llu shards, %llu samples, %llu tensors, %llu bytes", (unsigned long long)sum.shards,
                     (unsigned long long)sum.samples, (unsigned long long)sum.tensors, (unsigned long long)sum.bytes);
    bd_path(p, sizeof p, g_out, "_tensor_index.json");
    m->json_bytes = file_size(p);
    bd_path(p, sizeof p, g_out, "_tensor_index.csv");
    m->csv_bytes = file_size(p);
    if (m->json_bytes == UINT64_MAX || m->csv_bytes == UINT64_MAX) return failf(m, "the index files are missing");
    m->ok = 1;
    return 0;
}
/* Reopens the KV dataset through its index: 1,000 random keys with data, one absent key. */
static int kv_verify(void *arg) {
    const job *jb = (const job *)arg;
    meas *m = jb->m;
    sts_dataset *ds = NULL;
    sts_read_config rc;
    sts_schema_column sc;
    sts_dataset_info info;
    sts_error err;
    sts_result r;
    sts_view v;
    uint64_t i, x = 88172645463325252ull;
    memset(&rc, 0, sizeof rc);
    memset(&sc, 0, sizeof sc);
    sc.name = "x"; sc.name_len = 1;
    rc.schema = &sc; rc.nschema = 1;
    if ((r = sts_dataset_open(g_out, &rc, NULL, &ds, &err)) != STS_OK) return fail_sts(m, "sts_dataset_open (verify)", r, &err);
    info = sts_dataset_describe(ds);
    if (!info.has_index || !info.kv || info.total_samples != g_kv_rows || info.files != jb->sizes->nshards) {
        sts_dataset_close(ds);
        return failf(m, "KV dataset: index %d, kv %d, %llu samples, %zu files", info.has_index, info.kv, (unsigned long long)info.total_samples, info.files);
    }
    for (i = 0; i < 1000; i++) {
        char name[32];
        uint64_t k;
        uint32_t got;
        x ^= x << 13; x ^= x >> 7; x ^= x << 17;
        k = i == 0 ? 0 : i == 1 ? g_kv_rows - 1 : x % g_kv_rows;
        key_format(name, k);
        memcpy(name + 14, "__x", 4);
        if ((r = sts_dataset_get(ds, name, 17, 1, &v, &err)) != STS_OK) { sts_dataset_close(ds); return fail_sts(m, "sts_dataset_get (verify)", r, &err); }
        memcpy(&got, v.data, 4);
        if (v.nbytes != KV_BYTES || v.dtype != (g_kv_f32 ? STS_DTYPE_F32 : STS_DTYPE_U8) || v.rank != 1 ||
            v.shape[0] != (g_kv_f32 ? KV_BYTES / 4 : KV_BYTES) || got != (uint32_t)k || ((const uint8_t *)v.data)[5] != kv_byte(5) ||
            ((const uint8_t *)v.data)[KV_BYTES - 1] != kv_byte(KV_BYTES - 1)) {
            sts_dataset_close(ds);
            return failf(m, "key %s: wrong tensor read back", name);
        }
    }
    if (sts_dataset_get(ds, "sample-x__x", 11, 0, &v, &err) != STS_ERR_NOT_FOUND) { sts_dataset_close(ds); return failf(m, "an absent key was found"); }
    sts_dataset_close(ds);
    m->ok = 1;
    return 0;
}
/* jb->c 0: every write() from one 4 MiB buffer; 1: each file from the start of a buffer as large as
   the largest file (filled before the clock starts), as a writer that holds a shard must; its
   memory on huge pages, as the library's shard chunks are (MADV_HUGEPAGE on 2 MiB boundaries). */
static int kv_raw(void *arg) {
    const job *jb = (const job *)arg;
    meas *m = jb->m;
    const meas *w = jb->sizes;
    size_t chunk = (size_t)(4 * MIB), f, most = chunk;
    uint8_t *buf;
    void *map = NULL;
    double t0, t1, u0, s0, u1, s1;
    int e;
    if (jb->c)
        for (f = 0; f < w->nshards; f++) if (w->shard_bytes[f] > most) most = (size_t)w->shard_bytes[f];
    if (jb->c) {
        map = mmap(NULL, most + 2 * MIB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (map == MAP_FAILED) return failf(m, "out of memory");
        buf = (uint8_t *)(((uintptr_t)map + 2 * MIB - 1) & ~(uintptr_t)(2 * MIB - 1));
        (void)madvise(buf, most / (2 * MIB) * (2 * MIB), MADV_HUGEPAGE);  /* a hint, as in the library */
    } else if (!(buf = (uint8_t *)malloc(most))) return failf(m, "out of memory");
    memset(buf, 0x5a, most);
    m->rss0_kib = bd_status_kib("VmRSS");
    bd_cpu_times(&u0, &s0);
    t0 = tu_now();
    for (f = 0; f < w->nshards; f++) {
        char p[4096], name[64];
        uint64_t left = w->shard_bytes[f];
        int fd;
        snprintf(name, sizeof name, "raw-%05zu.bin", f);
        bd_path(p, sizeof p, g_out, name);
        if ((fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) < 0) return failf(m, "open %s: %s", p, strerror(errno));
        while (left) {
            size_t n = left < chunk ? (size_t)left : chunk;
            if ((e = write_all(fd, jb->c ? buf + (w->shard_bytes[f] - left) : buf, n)) != 0)
                return failf(m, "write: %s", strerror(e));
            left -= n;
        }
        if (jb->durable && fsync(fd) != 0) return failf(m, "fsync: %s", strerror(errno));
        if (close(fd) != 0) return failf(m, "close: %s", strerror(errno));
    }
    if (jb->durable && (e = fsync_dir(g_out)) != 0) return failf(m, "fsync of the folder: %s", strerror(e));
    t1 = tu_now();
    bd_cpu_times(&u1, &s1);
    m->cpu_user = u1 - u0;
    m->cpu_sys = s1 - s0;
    m->hwm_kib = bd_status_kib("VmHWM");
    for (f = 0; f < w->nshards; f++) {
        char p[4096], name[64];
        snprintf(name, sizeof name, "raw-%05zu.bin", f);
        bd_path(p, sizeof p, g_out, name);
        if (file_size(p) != w->shard_bytes[f]) return failf(m, "%s has the wrong size", p);
    }
    if (map) munmap(map, most + 2 * MIB);
    else free(buf);
    m->t_task = t1 - t0;
    m->out_bytes = w->out_bytes;
    m->files = w->nshards;
    m->ok = 1;
    return 0;
}

/* ---- running ---- */
static meas *g_m;  /* shared: [0] library, [1] raw, [2] by hand, [3] KV commit, [4] verify, [5] KV raw from a shard-sized buffer,
                      [6] batch raw in 2 MiB-aligned pieces, [7] KV library with kv_layout arrival, [8] its dataset commit */

/* Empties the folder right before a measurement. No syncfs and no pause: on this kind of VM the
   page-cache pages that the deletion frees are only cheap to reuse for a short while (freed
   2 MiB blocks are handed back to the host; touching them again costs a host fault), so every
   measurement starts the same way: just after the previous one's files were deleted. Deleted
   dirty pages are dropped, not written back. */
static void fresh(void) {
    tf_clear(g_out);
    bd_check_stop();
}
static void run(int (*fn)(void *), job *jb, const char *label) {
    int rc;
    memset(jb->m, 0, sizeof *jb->m);
    rc = bd_run_child(fn, jb);
    if (rc != 0 || !jb->m->ok) bd_die("%s failed (exit %d)%s%s", label, rc, jb->m->why[0] ? ": " : "", jb->m->why);
}
static double gbps(double bytes, double s) { return s > 0 ? bytes / s / 1e9 : 0; }

typedef struct series { double v[64]; size_t n; } series;
static void put(series *s, double x) { if (s->n < 64) s->v[s->n++] = x; }
static double med(const series *s) { return bd_median(s->v, s->n); }
static const char *spread(char *out, size_t cap, const series *s, const char *fmt) {
    char a[32], b[32];
    snprintf(a, sizeof a, fmt, bd_min(s->v, s->n));
    snprintf(b, sizeof b, fmt, bd_max(s->v, s->n));
    snprintf(out, cap, "%s-%s", a, b);
    return out;
}
static double cpu(const meas *m) { return m->cpu_user + m->cpu_sys; }

static void bench_batch(void) {
    int c, d;
    printf("\n== batch mode: %llu rows of 1 MiB F32 (%.2f GiB in), batch_size %llu: %llu files; %d runs; lib/raw order alternates\n",
           (unsigned long long)g_batch_rows, (double)g_batch_rows / 1024.0, (unsigned long long)g_batch_size,
           (unsigned long long)(g_batch_rows / g_batch_size), g_runs);
    {   /* warm-up, untimed: the first measurement should also follow a deletion of as many pages */
        job jw;
        jw.c = C_F32; jw.durable = 0; jw.who = W_RAW; jw.m = &g_m[1]; jw.sizes = NULL;
        fresh();
        run(batch_raw, &jw, "warm-up");
        printf("   warm-up (untimed): raw write() of %.2f GB took %.2f s (%.2f GB/s)\n", (double)g_m[1].out_bytes / 1e9, g_m[1].t_task,
               gbps((double)g_m[1].out_bytes, g_m[1].t_task));
    }
    printf("\n| case | durable | sts in GB/s | sts out GB/s | raw write() out GB/s | sts/raw (out), median of per-run ratios | goal 0.85x | raw in 2 MiB-aligned pieces GB/s | sts/that | sts CPU s | raw CPU s | aligned raw CPU s | by hand convert+write GB/s | dataset commit ms |\n");
    printf("|---|---|---:|---:|---:|---|---|---:|---:|---:|---:|---:|---:|---:|\n");
    for (c = 0; c < 2; c++)
        for (d = 1; d >= 0; d--) {
            if (g_batch_case >= 0 && c != g_batch_case) continue;
            {
            series lib_in, lib_out, raw_out, hand_out, ratio, commit, lcpu, rcpu, al_out, al_ratio, acpu;
            int run_i, hand = c == C_BF16 && !d && g_conv;
            double in_bytes = (double)g_batch_rows * (double)MIB;
            char sp[64], sp2[64], sp3[64];
            memset(&lib_in, 0, sizeof lib_in); memset(&lib_out, 0, sizeof lib_out); memset(&raw_out, 0, sizeof raw_out);
            memset(&hand_out, 0, sizeof hand_out); memset(&ratio, 0, sizeof ratio); memset(&commit, 0, sizeof commit);
            memset(&lcpu, 0, sizeof lcpu); memset(&rcpu, 0, sizeof rcpu);
            memset(&al_out, 0, sizeof al_out); memset(&al_ratio, 0, sizeof al_ratio); memset(&acpu, 0, sizeof acpu);
            for (run_i = 0; run_i < g_runs; run_i++) {
                job jl, jr, jh, ja;
                int k, order[4] = { W_LIB, W_RAW, W_ALIGN, W_HAND }, n = hand ? 4 : 3;
                if (run_i % 2) { order[0] = W_ALIGN; order[2] = W_LIB; }  /* alternate who goes first */
                jl.c = jr.c = jh.c = ja.c = c; jl.durable = jr.durable = jh.durable = ja.durable = d;
                jl.who = W_LIB; jr.who = W_RAW; jh.who = W_HAND; ja.who = W_ALIGN;
                jl.m = &g_m[0]; jr.m = &g_m[1]; jh.m = &g_m[2]; ja.m = &g_m[6];
                jl.sizes = jr.sizes = jh.sizes = ja.sizes = NULL;
                for (k = 0; k < n; k++) {
                    fresh();
                    if (order[k] == W_LIB) run(batch_lib, &jl, "batch sts");
                    else if (order[k] == W_RAW) run(batch_raw, &jr, "batch raw");
                    else if (order[k] == W_ALIGN) run(batch_raw, &ja, "batch raw, aligned");
                    else run(batch_raw, &jh, "batch by hand");
                }
                {
                    double lo = gbps((double)g_m[0].out_bytes, g_m[0].t_task), ro = gbps((double)g_m[1].out_bytes, g_m[1].t_task),
                           ao = gbps((double)g_m[6].out_bytes, g_m[6].t_task);
                    put(&al_out, ao);
                    put(&al_ratio, lo / ao);
                    put(&acpu, cpu(&g_m[6]));
                    put(&lib_in, gbps(in_bytes, g_m[0].t_task));
                    put(&lib_out, lo);
                    put(&raw_out, ro);
                    put(&ratio, lo / ro);
                    put(&commit, g_m[0].t_commit * 1e3);
                    put(&lcpu, cpu(&g_m[0]));
                    put(&rcpu, cpu(&g_m[1]));
                    if (hand) put(&hand_out, gbps((double)g_m[2].out_bytes, g_m[2].t_task));
                    printf("   run %d %s %s: sts %.3f s (%.2f GB/s out; CPU user %.2f + sys %.2f s; dataset commit %.1f ms; peak RSS %.0f MiB), "
                           "raw %.3f s (%.2f GB/s; CPU %.2f + %.2f s), aligned %.3f s (%.2f GB/s; CPU %.2f + %.2f s)",
                           run_i, c == C_F32 ? "F32" : "BF16", d ? "durable" : "non-durable", g_m[0].t_task, lo, g_m[0].cpu_user, g_m[0].cpu_sys,
                           g_m[0].t_commit * 1e3, (double)g_m[0].hwm_kib / 1024.0, g_m[1].t_task, ro, g_m[1].cpu_user, g_m[1].cpu_sys,
                           g_m[6].t_task, ao, g_m[6].cpu_user, g_m[6].cpu_sys);
                    if (hand) printf(", by hand %.3f s (%.2f GB/s; CPU %.2f + %.2f s)", g_m[2].t_task, gbps((double)g_m[2].out_bytes, g_m[2].t_task),
                                     g_m[2].cpu_user, g_m[2].cpu_sys);
                    printf("; load %.2f\n", bd_loadavg());
                }
            }
            {
                double rm = med(&ratio);
                char hs[48] = "-";
                if (hand_out.n) snprintf(hs, sizeof hs, "%.2f (%s)", med(&hand_out), spread(sp3, sizeof sp3, &hand_out, "%.2f"));
                char sp4[64], sp5[64];
                printf("| %s | %s | %.2f | %.2f (%s) | %.2f (%s) | %.2fx (%s) | %s | %.2f (%s) | %.2fx (%s) | %.2f | %.2f | %.2f | %s | %.1f |\n",
                       c == C_F32 ? "F32 tensor" : "F32 array -> BF16", d ? "yes" : "no", med(&lib_in), med(&lib_out),
                       spread(sp, sizeof sp, &lib_out, "%.2f"), med(&raw_out), spread(sp2, sizeof sp2, &raw_out, "%.2f"), rm,
                       spread(sp3, sizeof sp3, &ratio, "%.2f"), rm >= 0.85 ? "met" : "**missed**", med(&al_out),
                       spread(sp4, sizeof sp4, &al_out, "%.2f"), med(&al_ratio), spread(sp5, sizeof sp5, &al_ratio, "%.2f"),
                       med(&lcpu), med(&rcpu), med(&acpu), hs, med(&commit));
            }
            fflush(stdout);
            }
        }
}

static void bench_kv(void) {
    int d;
    double payload = (double)g_kv_rows * KV_BYTES;
    printf("\n== KV mode: %llu rows of one %llu-byte tensor (%s [%llu]), keys sample-%%07d, shard target 300 MiB, generate_index; "
           "%d runs\n", (unsigned long long)g_kv_rows, (unsigned long long)KV_BYTES, g_kv_f32 ? "F32" : "U8",
           (unsigned long long)(g_kv_f32 ? KV_BYTES / 4 : KV_BYTES), g_runs);
    {   /* warm-up, untimed: the first measurement should not be the first to touch this much memory */
        job jw;
        jw.durable = 0; jw.c = 0; jw.who = W_LIB; jw.m = &g_m[0]; jw.sizes = NULL;
        fresh();
        run(kv_lib, &jw, "KV warm-up");
        printf("   warm-up (untimed): %.2f s\n", g_m[0].t_task);
    }
    printf("\n| durable | sts payload GB/s | sts file GB/s | goal 1.5 GB/s | raw write() GB/s | sts/raw | raw from a shard-sized buffer GB/s | sts/that | sts CPU s | raw CPU s | shards | peak RSS MiB (writer) | goal <= 364 MiB | dataset commit s | commit peak RSS MiB | index JSON MB | CSV MB | arrival file GB/s | arrival/raw | arrival CPU s | arrival peak RSS MiB | arrival shards | arrival commit s |\n");
    printf("|---|---|---:|---|---|---:|---|---:|---:|---:|---:|---|---|---|---:|---:|---:|---|---:|---:|---:|---:|---|\n");
    for (d = 0; d <= 1; d++) {
        series pay, fil, raw, ratio, hwm, com, chwm, lcpu, rcpu, cold, cratio, afil, aratio, acpu, ahwm, acom;
        uint64_t ashards = 0;
        char sp5[64], sp6[64];
        int run_i;
        uint64_t shards = 0, json = 0, csv = 0;
        char sp1[64], sp2[64], sp3[64], sp4[64];
        memset(&pay, 0, sizeof pay); memset(&fil, 0, sizeof fil); memset(&raw, 0, sizeof raw); memset(&ratio, 0, sizeof ratio);
        memset(&cold, 0, sizeof cold); memset(&cratio, 0, sizeof cratio);
        memset(&hwm, 0, sizeof hwm); memset(&com, 0, sizeof com); memset(&chwm, 0, sizeof chwm);
        memset(&lcpu, 0, sizeof lcpu); memset(&rcpu, 0, sizeof rcpu);
        memset(&afil, 0, sizeof afil); memset(&aratio, 0, sizeof aratio); memset(&acpu, 0, sizeof acpu);
        memset(&ahwm, 0, sizeof ahwm); memset(&acom, 0, sizeof acom);
        for (run_i = 0; run_i < g_runs; run_i++) {
            job jl, jr, jc, jv, jb, ja, jac, jav;
            int k;
            jl.durable = jr.durable = jc.durable = jv.durable = jb.durable = d;
            jl.c = jr.c = jc.c = jv.c = 0;
            jb.c = 1;  /* kv_raw from a shard-sized buffer */
            jl.who = W_LIB; jr.who = jb.who = W_RAW; jc.who = jv.who = W_LIB;
            jl.m = &g_m[0]; jr.m = &g_m[1]; jc.m = &g_m[3]; jv.m = &g_m[4]; jb.m = &g_m[5];
            jl.sizes = NULL; jr.sizes = jc.sizes = jv.sizes = jb.sizes = &g_m[0];
            ja = jl; ja.c = 1; ja.m = &g_m[7];  /* kv_layout arrival, its commit and read-back */
            jac = jc; jac.c = 1; jac.m = &g_m[8]; jac.sizes = &g_m[7];
            jav = jv; jav.sizes = &g_m[7];
            for (k = 0; k < 4; k++) {
                /* run 0: the library first (its shard sizes feed raw); then each run starts one later */
                int who = (k + run_i) % 4;
                fresh();
                if (who == 0) {
                    run(kv_lib, &jl, "KV sts");
                    run(kv_commit, &jc, "KV dataset commit");
                    run(kv_verify, &jv, "KV verify");
                } else if (who == 1)
                    run(kv_raw, &jr, "KV raw");
                else if (who == 2)
                    run(kv_raw, &jb, "KV raw from a shard-sized buffer");
                else {
                    run(kv_lib, &ja, "KV sts, kv_layout arrival");
                    run(kv_commit, &jac, "KV dataset commit, kv_layout arrival");
                    run(kv_verify, &jav, "KV verify, kv_layout arrival");
                }
            }
            put(&afil, gbps((double)g_m[7].out_bytes, g_m[7].t_task));
            put(&aratio, gbps((double)g_m[7].out_bytes, g_m[7].t_task) / gbps((double)g_m[1].out_bytes, g_m[1].t_task));
            put(&acpu, cpu(&g_m[7]));
            put(&ahwm, (double)g_m[7].hwm_kib / 1024.0);
            put(&acom, g_m[8].t_commit);
            ashards = g_m[7].nshards;
            printf("   run %d %s, kv_layout arrival: sts %.3f s (%.2f GB/s of %.1f MB; CPU user %.2f + sys %.2f s, %.2f s of it the "
                   "caller's thread; last row taken at %.3f s; %llu shards; peak RSS %.1f MiB); dataset commit %.3f s\n",
                   run_i, d ? "durable" : "non-durable", g_m[7].t_task, gbps((double)g_m[7].out_bytes, g_m[7].t_task),
                   (double)g_m[7].out_bytes / 1e6, g_m[7].cpu_user, g_m[7].cpu_sys, g_m[7].caller_cpu, g_m[7].t_rows,
                   (unsigned long long)g_m[7].nshards, (double)g_m[7].hwm_kib / 1024.0, g_m[8].t_commit);
            put(&pay, gbps(payload, g_m[0].t_task));
            put(&fil, gbps((double)g_m[0].out_bytes, g_m[0].t_task));
            put(&raw, gbps((double)g_m[1].out_bytes, g_m[1].t_task));
            put(&ratio, gbps((double)g_m[0].out_bytes, g_m[0].t_task) / gbps((double)g_m[1].out_bytes, g_m[1].t_task));
            put(&cold, gbps((double)g_m[5].out_bytes, g_m[5].t_task));
            put(&cratio, gbps((double)g_m[0].out_bytes, g_m[0].t_task) / gbps((double)g_m[5].out_bytes, g_m[5].t_task));
            put(&hwm, (double)g_m[0].hwm_kib / 1024.0);
            put(&com, g_m[3].t_commit);
            put(&chwm, (double)g_m[3].hwm_kib / 1024.0);
            put(&lcpu, cpu(&g_m[0]));
            put(&rcpu, cpu(&g_m[1]));
            shards = g_m[0].nshards; json = g_m[3].json_bytes; csv = g_m[3].csv_bytes;
            printf("   run %d %s: sts %.3f s (%.2f GB/s payload; CPU user %.2f + sys %.2f s, %.2f s of it the caller's thread; "
                   "last row taken at %.3f s; %llu shards, %.1f MB; peak RSS %.1f MiB, %.1f MiB before), "
                   "raw %.3f s (%.2f GB/s; CPU %.2f + %.2f s), from a shard-sized buffer %.3f s (%.2f GB/s; CPU %.2f + %.2f s); "
                   "dataset commit %.3f s (peak RSS %.1f MiB); load %.2f\n",
                   run_i, d ? "durable" : "non-durable", g_m[0].t_task, gbps(payload, g_m[0].t_task), g_m[0].cpu_user, g_m[0].cpu_sys,
                   g_m[0].caller_cpu, g_m[0].t_rows, (unsigned long long)g_m[0].nshards, (double)g_m[0].out_bytes / 1e6, (double)g_m[0].hwm_kib / 1024.0, (double)g_m[0].rss0_kib / 1024.0,
                   g_m[1].t_task, gbps((double)g_m[1].out_bytes, g_m[1].t_task), g_m[1].cpu_user, g_m[1].cpu_sys,
                   g_m[5].t_task, gbps((double)g_m[5].out_bytes, g_m[5].t_task), g_m[5].cpu_user, g_m[5].cpu_sys, g_m[3].t_commit,
                   (double)g_m[3].hwm_kib / 1024.0, bd_loadavg());
            fflush(stdout);
        }
        printf("| %s | %.2f (%s) | %.2f | %s | %.2f (%s) | %.2fx | %.2f (%s) | %.2fx | %.2f | %.2f | %llu | %.0f | %s | %.2f (%s) | %.0f | %.1f | %.1f | %.2f (%s) | %.2fx (%s) | %.2f | %.0f | %llu | %.2f |\n", d ? "yes" : "no",
               med(&pay), spread(sp1, sizeof sp1, &pay, "%.2f"), med(&fil), med(&pay) >= 1.5 ? "met" : "**missed**", med(&raw),
               spread(sp2, sizeof sp2, &raw, "%.2f"), med(&ratio), med(&cold), spread(sp4, sizeof sp4, &cold, "%.2f"), med(&cratio), med(&lcpu), med(&rcpu), (unsigned long long)shards, med(&hwm),
               med(&hwm) <= 364.0 ? "met" : "**missed**", med(&com), spread(sp3, sizeof sp3, &com, "%.2f"), med(&chwm), (double)json / 1e6,
               (double)csv / 1e6, med(&afil), spread(sp5, sizeof sp5, &afil, "%.2f"), med(&aratio),
               spread(sp6, sizeof sp6, &aratio, "%.2f"), med(&acpu), med(&ahwm), (unsigned long long)ashards, med(&acom));
        fflush(stdout);
    }
}

static void usage(void) {
    fprintf(stderr, "usage: bench_dataset_write [--quick] [--runs N] [--mib N] [--kv-rows N] [--kv-bytes N] [--kv-dtype u8|f32] [--only batch|kv|all] [--no-conv] [--no-io-thread] [--batch-case f32|bf16]\n");
    exit(2);
}
int main(int argc, char **argv) {
    const char *only = "all";
    int a;
    uint64_t need, mib = 0, kv_rows = 0;
    bd_prog = "bench_dataset_write";
    for (a = 1; a < argc; a++) {
        if (strcmp(argv[a], "--quick") == 0) g_quick = 1;
        else if (strcmp(argv[a], "--runs") == 0 && a + 1 < argc) g_runs = atoi(argv[++a]);
        else if (strcmp(argv[a], "--mib") == 0 && a + 1 < argc) mib = strtoull(argv[++a], NULL, 10);
        else if (strcmp(argv[a], "--kv-rows") == 0 && a + 1 < argc) kv_rows = strtoull(argv[++a], NULL, 10);
        else if (strcmp(argv[a], "--kv-bytes") == 0 && a + 1 < argc) {
            KV_BYTES = strtoull(argv[++a], NULL, 10);
            if (!KV_BYTES || KV_BYTES % 4 || KV_BYTES > ((uint64_t)16 << 20)) usage();
        }
        else if (strcmp(argv[a], "--only") == 0 && a + 1 < argc) only = argv[++a];
        else if (strcmp(argv[a], "--no-conv") == 0) g_conv = 0;
        else if (strcmp(argv[a], "--no-io-thread") == 0) g_no_io_thread = 1;
        else if (strcmp(argv[a], "--batch-case") == 0 && a + 1 < argc) {
            a++;
            if (strcmp(argv[a], "f32") == 0) g_batch_case = C_F32;
            else if (strcmp(argv[a], "bf16") == 0) g_batch_case = C_BF16;
            else usage();
        }
        else if (strcmp(argv[a], "--kv-dtype") == 0 && a + 1 < argc) {
            const char *t = argv[++a];
            if (strcmp(t, "f32") == 0) g_kv_f32 = 1;
            else if (strcmp(t, "u8") == 0) g_kv_f32 = 0;
            else usage();
        }
        else usage();
    }
    if (g_runs < 1 || g_runs > 64 || (strcmp(only, "all") && strcmp(only, "batch") && strcmp(only, "kv"))) usage();
    if (g_quick) { g_batch_rows /= 16; g_kv_rows /= 16; }
    if (mib) {
        if (mib % g_batch_size) { fprintf(stderr, "--mib must be a multiple of %llu\n", (unsigned long long)g_batch_size); return 2; }
        g_batch_rows = mib;
    }
    if (kv_rows) g_kv_rows = kv_rows;
    if (!(g_kv_data = (uint8_t *)malloc((size_t)KV_BYTES))) bd_die("out of memory");
    need = strcmp(only, "kv") == 0 ? (uint64_t)2 << 30 : g_batch_rows * MIB + ((uint64_t)1 << 30);
    bd_install_signals();
    bd_make_root("sts-bench-dataset-write", need);
    bd_path(g_out, sizeof g_out, bd_root, "out");
    if (mkdir(g_out, 0777) != 0) bd_die("mkdir %s: %s", g_out, strerror(errno));
    bd_print_machine(stdout, bd_root);
    printf("library: safetensors_spark.h %s; convert ISA %s\n", STS_VERSION_STRING, sts_convert_isa());
    {   /* 8 + N of a batch file, from the library's own writer */
        int c;
        for (c = 0; c < 2; c++) {
            sts_tensor_spec s;
            uint64_t shape[2] = { g_batch_size, ROW_ELEMS }, n = 0, fs = 0;
            sts_error err;
            memset(&s, 0, sizeof s);
            s.name = "x"; s.name_len = 1; s.dtype = c == C_F32 ? STS_DTYPE_F32 : STS_DTYPE_BF16; s.rank = 2; s.shape = shape;
            s.data_size = g_batch_size * ROW_ELEMS * (c == C_F32 ? 4 : 2);
            s.data = (const void *)1;  /* never read: sizes only */
            if (sts_write_size(&s, 1, NULL, 0, NULL, &n, &fs, &err) != STS_OK) bd_die("sts_write_size: %s", err.message);
            g_hdr[c] = 8 + n;
        }
    }
    g_m = (meas *)bd_shared(9 * sizeof *g_m);
    printf("sizes: %s; the folder is emptied right before every measurement; every measurement runs in its own child process\n",
           g_quick ? "--quick (1/16)" : mib ? "--mib" : "full");
    if (strcmp(only, "kv") != 0) bench_batch();
    if (strcmp(only, "batch") != 0) bench_kv();
    printf("\nload average at end %.2f\n", bd_loadavg());
    bd_cleanup();
    return 0;
}
