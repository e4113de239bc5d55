/* bench_open.c - opening a file and getting a data pointer costs time in proportion to the
   header, not to the file.

   Creates, in a fresh temporary folder, sparse files (the header written, the rest made by
   ftruncate, so no data block is allocated) of about 16 MB, 1 GB, 8 GB and 64 GB that share the same
   small header: a few tensors, the last one holding almost all the bytes. Then times, round-robin
   over the sizes so that load from other processes falls on all of them alike:
     open   sts_open (mmap) + sts_find + sts_data + sts_close
     touch  the same, plus reading one byte at the start of the first tensor and one in the last
            page of the huge tensor (two page faults on the mapping)
     hdr    sts_open with header_only (reads exactly 8 + N bytes) + sts_find + sts_close
   and reports the median, best and 90th percentile time of each. The files and the folder are
   removed at the end (also when a check fails).

   usage: bench_open [--iters N] [--warmup N] [--dir PATH]   (default 1000 repetitions, 50 warm-up,
   folder under $TMPDIR or /tmp) */
#define _POSIX_C_SOURCE 200809L
#define STS_IMPLEMENTATION
#include "../safetensors_spark.h"

#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench_util.h"

typedef struct open_case {
    const char *label;
    uint64_t target;          /* approximate file size */
    char path[4096];
    uint64_t file_size, header_len, huge_begin, huge_end;
    int created;
} open_case;

static open_case files[] = {
    { "16 MB", 16000000ull, "", 0, 0, 0, 0, 0 },
    { "1 GB", 1000000000ull, "", 0, 0, 0, 0, 0 },
    { "8 GB", 8000000000ull, "", 0, 0, 0, 0, 0 },
    { "64 GB", 64000000000ull, "", 0, 0, 0, 0, 0 },
};
#define NFILES (sizeof files / sizeof files[0])
static char tmpdir[3072];

static void cleanup(void) {
    size_t i;
    for (i = 0; i < NFILES; i++)
        if (files[i].created) { unlink(files[i].path); files[i].created = 0; }
    if (tmpdir[0]) { rmdir(tmpdir); tmpdir[0] = 0; }
}
static void on_signal(int sig) {  /* unlink and rmdir are async-signal-safe */
    cleanup();
    signal(sig, SIG_DFL);
    raise(sig);
}
static void die(const char *what) {
    fprintf(stderr, "bench_open: %s\n", what);
    cleanup();
    exit(1);
}

/* The small tensors, in the reference writer's layout order (F32, then BF16, then U8). */
static const char *const small_names[] = { "model.norm.weight", "model.layers.0.input_layernorm.weight",
                                           "model.embed_tokens.weight", "lm_head.weight" };
static const char *const small_dtypes[] = { "F32", "F32", "BF16", "BF16" };
static const uint64_t small_rows[] = { 1, 1, 256, 256 }, small_cols[] = { 4096, 4096, 4096, 4096 };
static const unsigned small_bytes[] = { 4, 4, 2, 2 };
static const char huge_name[] = "model.layers.0.mlp.experts.packed.weight";

/* Renders the header (the 8-byte length first) with a last tensor of `huge` bytes; returns 8 + N
   and sets c's header_len, huge_begin, huge_end and file_size. */
static size_t render_with(open_case *c, uint64_t huge, char *buf, size_t cap) {
    uint64_t off = 0;
    size_t len = 8, i, pad;
    int w;
    w = snprintf(buf + len, cap - len, "{\"__metadata__\":{\"format\":\"pt\"}");
    len += (size_t)w;
    for (i = 0; i < sizeof small_names / sizeof small_names[0]; i++) {
        uint64_t bytes = small_rows[i] * small_cols[i] * small_bytes[i];
        if (small_rows[i] == 1)
            w = snprintf(buf + len, cap - len, ",\"%s\":{\"dtype\":\"%s\",\"shape\":[%llu],\"data_offsets\":[%llu,%llu]}",
                         small_names[i], small_dtypes[i], (unsigned long long)small_cols[i], (unsigned long long)off,
                         (unsigned long long)(off + bytes));
        else
            w = snprintf(buf + len, cap - len, ",\"%s\":{\"dtype\":\"%s\",\"shape\":[%llu,%llu],\"data_offsets\":[%llu,%llu]}",
                         small_names[i], small_dtypes[i], (unsigned long long)small_rows[i], (unsigned long long)small_cols[i],
                         (unsigned long long)off, (unsigned long long)(off + bytes));
        len += (size_t)w;
        off += bytes;
    }
    w = snprintf(buf + len, cap - len, ",\"%s\":{\"dtype\":\"U8\",\"shape\":[%llu],\"data_offsets\":[%llu,%llu]}}",
                 huge_name, (unsigned long long)huge, (unsigned long long)off, (unsigned long long)(off + huge));
    len += (size_t)w;
    if (len + 8 > cap) die("header buffer too small");
    pad = (8 - (len - 8) % 8) % 8;
    memset(buf + len, ' ', pad);
    len += pad;
    c->header_len = len - 8;
    for (i = 0; i < 8; i++) buf[i] = (char)(c->header_len >> (8 * i));
    c->huge_begin = off;
    c->huge_end = off + huge;
    c->file_size = 8 + c->header_len + c->huge_end;
    return len;
}

/* The header of a file of about c->target bytes, checked by the library before use. */
static size_t render(open_case *c, char *buf, size_t cap) {
    sts_file *f = NULL;
    sts_error err;
    const sts_tensor *t;
    size_t len = render_with(c, 1, buf, cap);  /* sizes the rest */
    if (c->file_size >= c->target) die("target too small for the header");
    len = render_with(c, c->target - c->file_size + 1, buf, cap);
    if (sts_parse_header(buf, len, c->file_size, NULL, &f, &err) != STS_OK) {
        fprintf(stderr, "bench_open: generated header rejected: %s\n", err.message);
        die("header");
    }
    t = sts_find(f, huge_name, sizeof huge_name - 1);
    if (!t || t->begin != c->huge_begin || t->end != c->huge_end || sts_count(f) != 5) die("header check");
    sts_close(f);
    return len;
}

static void make_file(open_case *c) {
    char buf[4096];
    size_t len = render(c, buf, sizeof buf), done = 0;
    int fd;
    struct stat st;
    if (snprintf(c->path, sizeof c->path, "%s/open-%llu.safetensors", tmpdir, (unsigned long long)c->target) >= (int)sizeof c->path)
        die("path too long");
    fd = open(c->path, O_WRONLY | O_CREAT | O_EXCL, 0600);
    if (fd < 0) die("cannot create a file in the temporary folder");
    c->created = 1;
    while (done < len) {
        ssize_t k = write(fd, buf + done, len - done);
        if (k <= 0) { if (k < 0 && errno == EINTR) continue; close(fd); die("write failed"); }
        done += (size_t)k;
    }
    if (ftruncate(fd, (off_t)c->file_size) != 0) { close(fd); die("ftruncate failed (no room for a sparse file?)"); }
    if (fstat(fd, &st) != 0) { close(fd); die("fstat"); }
    close(fd);
    printf("  %-6s %s: %llu bytes, header N = %llu, %llu bytes allocated on disk\n", c->label, c->path,
           (unsigned long long)st.st_size, (unsigned long long)c->header_len, (unsigned long long)st.st_blocks * 512ull);
}

enum { M_OPEN, M_TOUCH, M_HDR, NMODES };
static const char *const mode_names[NMODES] = { "open+find+data+close", "  + read 2 bytes", "header_only open" };

static double time_one(const open_case *c, int mode) {
    sts_options o;
    sts_file *f = NULL;
    sts_error err;
    const sts_tensor *t;
    double t0;
    memset(&o, 0, sizeof o);
    o.header_only = mode == M_HDR;
    t0 = tu_now();
    if (sts_open(c->path, &o, &f, &err) != STS_OK) { fprintf(stderr, "bench_open: %s\n", err.message); die("sts_open failed"); }
    t = sts_find(f, huge_name, sizeof huge_name - 1);
    if (!t) die("sts_find failed");
    if (mode == M_HDR) {
        if (sts_data(f, t) != NULL) die("header_only gave a data pointer");
        bench_sink += t->end;
    } else {
        const uint8_t *d = (const uint8_t *)sts_data(f, t);
        if (!d) die("sts_data returned NULL");
        bench_sink += (uintptr_t)d;
        if (mode == M_TOUCH) {
            const uint8_t *first = (const uint8_t *)sts_data(f, sts_at(f, 0));
            bench_sink += first[0] + d[t->end - t->begin - 1];
        }
    }
    sts_close(f);
    return tu_now() - t0;
}

int main(int argc, char **argv) {
    int iters = 1000, warmup = 50, a, i, m;
    size_t k;
    const char *base = getenv("TMPDIR");
    double *samples[NFILES][NMODES];
    bench_stats st[NFILES][NMODES];
    if (!base || !*base) base = "/tmp";
    for (a = 1; a < argc; a++) {
        if (strcmp(argv[a], "--iters") == 0 && a + 1 < argc) iters = atoi(argv[++a]);
        else if (strcmp(argv[a], "--warmup") == 0 && a + 1 < argc) warmup = atoi(argv[++a]);
        else if (strcmp(argv[a], "--dir") == 0 && a + 1 < argc) base = argv[++a];
        else { fprintf(stderr, "usage: bench_open [--iters N] [--warmup N] [--dir PATH]\n"); return 2; }
    }
    if (iters <= 0 || warmup < 0) { fprintf(stderr, "bench_open: bad --iters/--warmup\n"); return 2; }
    bench_print_build(stdout);
    if (snprintf(tmpdir, sizeof tmpdir, "%s/sts-bench-open-XXXXXX", base) >= (int)sizeof tmpdir) { tmpdir[0] = 0; die("--dir too long"); }
    if (!mkdtemp(tmpdir)) { tmpdir[0] = 0; die("mkdtemp failed"); }
    atexit(cleanup);
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    signal(SIGHUP, on_signal);
    printf("sparse files (header written, the rest by ftruncate):\n");
    for (k = 0; k < NFILES; k++) make_file(&files[k]);
    for (k = 0; k < NFILES; k++)
        for (m = 0; m < NMODES; m++) {
            samples[k][m] = (double *)malloc((size_t)iters * sizeof(double));
            if (!samples[k][m]) die("out of memory");
        }
    for (i = -warmup; i < iters; i++)
        for (m = 0; m < NMODES; m++)
            for (k = 0; k < NFILES; k++) {
                double t = time_one(&files[k], m);
                if (i >= 0) samples[k][m][i] = t;
            }
    for (k = 0; k < NFILES; k++)
        for (m = 0; m < NMODES; m++) { st[k][m] = bench_summarize(samples[k][m], (size_t)iters); free(samples[k][m]); }

    printf("\n%d timed repetitions after %d warm-up, round-robin over the files; times in microseconds\n\n", iters, warmup);
    printf("| file size | header N | what | median us | best us | p90 us |\n|---|---:|---|---:|---:|---:|\n");
    for (m = 0; m < NMODES; m++)
        for (k = 0; k < NFILES; k++)
            printf("| %s | %llu | %s | %.1f | %.1f | %.1f |\n", files[k].label, (unsigned long long)files[k].header_len,
                   mode_names[m], st[k][m].median * 1e6, st[k][m].min * 1e6, st[k][m].p90 * 1e6);
    printf("\nlargest / smallest file, median time:");
    for (m = 0; m < NMODES; m++)
        printf("  %s %.2fx%s", mode_names[m][0] == ' ' ? "+read" : mode_names[m], st[NFILES - 1][m].median / st[0][m].median,
               m + 1 < NMODES ? ";" : "\n");
    printf("(file sizes differ by %.0fx)\n", (double)files[NFILES - 1].file_size / (double)files[0].file_size);
    cleanup();
    return 0;
}
