/* bench_sha256.c - SHA-256 of a whole file, warm in the page cache: ours (the path sts_sha256_init
   picks: SHA-NI where the CPU has it) reading the file into a 1 MiB buffer with read(), against
   `openssl dgst -sha256 FILE` timed as a child process from start to exit (nothing subtracted),
   alternately, each --runs times (default 5); then ours through mmap, our portable path on the same
   file, and ours from memory (no read()) for the hash alone. Prints medians in GB/s (10^9 bytes a second), the
   ratio ours / openssl (of the medians, and the median of the per-round ratios), and fails unless
   every digest agrees.

   ./bench_sha256 [--mib N | N] [--runs N] [--dir DIR]
   The file (default 1024 MiB) goes to DIR, else $BENCH_DIR, else /tmp, and is removed at the end. */
#define _POSIX_C_SOURCE 200809L
#define STS_IMPLEMENTATION
#include "../safetensors_spark.h"
#include "bench_util.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#define CHUNK ((size_t)1 << 20)

static char path[4096];

static void die(const char *what) {
    fprintf(stderr, "bench_sha256: %s: %s\n", what, strerror(errno));
    if (path[0]) unlink(path);
    exit(2);
}
static void on_signal(int sig) {
    if (path[0]) unlink(path);
    signal(sig, SIG_DFL);
    raise(sig);
}

/* The file's digest through read() into buf; returns the seconds taken. */
static double hash_file(int use_hw, uint8_t *buf, uint8_t digest[32]) {
    sts_sha256 s;
    double t0 = tu_now();
    int fd = open(path, O_RDONLY);
    ssize_t got;
    if (fd < 0) die("open");
    sts__sha256_init_with(&s, use_hw);
    while ((got = read(fd, buf, CHUNK)) > 0) sts_sha256_update(&s, buf, (size_t)got);
    if (got < 0) die("read");
    close(fd);
    sts_sha256_final(&s, digest);
    return tu_now() - t0;
}

/* The same through mmap (what sts_open does with a file): one sts_sha256_memory over the mapping. */
static double hash_file_mmap(size_t size, uint8_t digest[32]) {
    double t0 = tu_now();
    int fd = open(path, O_RDONLY);
    void *m;
    if (fd < 0) die("open");
    m = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (m == MAP_FAILED) die("mmap");
    close(fd);
    posix_madvise(m, size, POSIX_MADV_SEQUENTIAL);
    sts_sha256_memory(m, size, digest);
    munmap(m, size);
    return tu_now() - t0;
}

/* openssl dgst -sha256 on the file; returns the seconds from start to exit, or -1 if it failed. */
static double hash_openssl(uint8_t digest[32]) {
    char cmd[4200], line[4400];
    const char *eq;
    FILE *p;
    double t0 = tu_now(), t;
    int ok = 0;
    snprintf(cmd, sizeof cmd, "openssl dgst -sha256 '%s' 2>&1", path);
    if (!(p = popen(cmd, "r"))) return -1;
    while (fgets(line, sizeof line, p)) {  /* SHA2-256(FILE)= <64 hex digits> */
        size_t n = strlen(line);
        while (n && (line[n - 1] == '\n' || line[n - 1] == '\r')) line[--n] = 0;
        if ((eq = strrchr(line, '=')) != NULL && strlen(eq) == 66 && sts_sha256_parse_hex(eq + 2, 64, digest)) ok = 1;
        else fprintf(stderr, "openssl: %s\n", line);
    }
    ok = pclose(p) == 0 && ok;
    t = tu_now() - t0;
    return ok ? t : -1;
}

static double gbs(double bytes, double seconds) { return bytes / seconds / 1e9; }

int main(int argc, char **argv) {
    size_t mib = 1024, i, done;
    int runs = 5, r, fd, have_openssl = 1, bad = 0;
    const char *dir = getenv("BENCH_DIR");
    uint8_t *buf, d_ours[32], d_ref[32], d[32];
    double *t_ours, *t_ssl, *t_map, *t_sw, *t_mem, *ratio, bytes;
    char hex[65];
    bench_stats so, ss, sp, sw, sm, sr;
    tu_rng rng;

    for (i = 1; i < (size_t)argc; i++) {
        if (!strcmp(argv[i], "--mib") && i + 1 < (size_t)argc) mib = (size_t)atol(argv[++i]);
        else if (!strcmp(argv[i], "--runs") && i + 1 < (size_t)argc) runs = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--dir") && i + 1 < (size_t)argc) dir = argv[++i];
        else if (argv[i][0] >= '0' && argv[i][0] <= '9') mib = (size_t)atol(argv[i]);
        else { fprintf(stderr, "usage: %s [--mib N | N] [--runs N] [--dir DIR]\n", argv[0]); return 2; }
    }
    if (mib == 0 || runs < 1) { fprintf(stderr, "bench_sha256: --mib and --runs must be at least 1\n"); return 2; }
    if (!dir || !*dir) dir = "/tmp";
    bytes = (double)mib * (double)CHUNK;
    bench_print_build(stdout);
    printf("sha256: path %s; file %zu MiB in %s; %d runs each\n", sts_sha256_isa(), mib, dir, runs);

    buf = (uint8_t *)malloc(CHUNK);
    t_ours = (double *)calloc((size_t)runs, sizeof(double));
    t_ssl = (double *)calloc((size_t)runs, sizeof(double));
    t_map = (double *)calloc((size_t)runs, sizeof(double));
    t_sw = (double *)calloc((size_t)runs, sizeof(double));
    t_mem = (double *)calloc((size_t)runs, sizeof(double));
    ratio = (double *)calloc((size_t)runs, sizeof(double));
    if (!buf || !t_ours || !t_ssl || !t_map || !t_sw || !t_mem || !ratio) {
        fprintf(stderr, "bench_sha256: out of memory\n");
        return 2;
    }

    /* the file: pseudo-random bytes, written once, then read once so it is in the page cache */
    if ((size_t)snprintf(path, sizeof path, "%s/sts-bench-sha256-XXXXXX", dir) >= sizeof path) return 2;
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    if ((fd = mkstemp(path)) < 0) { path[0] = 0; die("mkstemp"); }
    rng.s = 12345;
    for (done = 0; done < mib; done++) {
        size_t k, off = 0;
        for (k = 0; k < CHUNK; k += 8) {
            uint64_t v = tu_next(&rng);
            memcpy(buf + k, &v, 8);
        }
        while (off < CHUNK) {
            ssize_t w = write(fd, buf + off, CHUNK - off);
            if (w < 0) { if (errno == EINTR) continue; die("write"); }
            off += (size_t)w;
        }
    }
    if (close(fd) != 0) die("close");
    hash_file(0 /* any: this pass warms the page cache */, buf, d_ours);
    hash_file(1, buf, d_ours);

    /* ours and openssl, alternately */
    for (r = 0; r < runs; r++) {
        t_ours[r] = hash_file(1, buf, d);
        if (memcmp(d, d_ours, 32) != 0) { fprintf(stderr, "ours: the digest changed between runs\n"); bad = 1; }
        if (have_openssl) {
            t_ssl[r] = hash_openssl(d_ref);
            if (t_ssl[r] < 0) {
                fprintf(stderr, "openssl dgst failed or is missing: no comparison\n");
                have_openssl = 0;
            } else if (memcmp(d_ref, d_ours, 32) != 0) {
                fprintf(stderr, "openssl's digest differs from ours\n");
                bad = 1;
            } else {
                ratio[r] = t_ssl[r] / t_ours[r];
            }
        }
        printf("  round %d: ours %.3f GB/s", r + 1, gbs(bytes, t_ours[r]));
        if (have_openssl) printf(", openssl %.3f GB/s, ratio %.3f", gbs(bytes, t_ssl[r]), ratio[r]);
        printf("\n");
        fflush(stdout);
    }
    /* mmap, same file */
    for (r = 0; r < runs; r++) {
        t_map[r] = hash_file_mmap(mib * CHUNK, d);
        if (memcmp(d, d_ours, 32) != 0) { fprintf(stderr, "mmap: digest differs\n"); bad = 1; }
    }
    /* the portable path, same file */
    for (r = 0; r < runs; r++) {
        t_sw[r] = hash_file(0, buf, d);
        if (memcmp(d, d_ours, 32) != 0) { fprintf(stderr, "portable path: digest differs\n"); bad = 1; }
    }
    /* the hash alone: the first min(size, 256 MiB) of the bytes from memory, the default path */
    {
        size_t n = mib < 256 ? mib * CHUNK : (size_t)256 << 20;
        uint8_t *m = (uint8_t *)malloc(n), dm[32];
        if (!m) { fprintf(stderr, "bench_sha256: out of memory\n"); return 2; }
        rng.s = 12345;
        for (i = 0; i + 8 <= n; i += 8) {
            uint64_t v = tu_next(&rng);
            memcpy(m + i, &v, 8);
        }
        for (r = 0; r < runs; r++) {
            double t0 = tu_now();
            sts_sha256_memory(m, n, dm);
            t_mem[r] = gbs((double)n, tu_now() - t0);  /* kept as GB/s */
            bench_sink += dm[0];
        }
        free(m);
    }
    unlink(path);
    path[0] = 0;

    so = bench_summarize(t_ours, (size_t)runs);
    sp = bench_summarize(t_map, (size_t)runs);
    sw = bench_summarize(t_sw, (size_t)runs);
    sm = bench_summarize(t_mem, (size_t)runs);
    sts_sha256_hex(d_ours, hex);
    printf("digest %s (%s)\n", hex,
           bad ? "MISMATCH" : have_openssl ? "ours = mmap = portable = openssl" : "ours = mmap = portable");
    printf("sha256 whole file, ours (%s, read 1 MiB):  %.3f GB/s median (%.3f .. %.3f)\n", sts_sha256_isa(),
           gbs(bytes, so.median), gbs(bytes, so.max), gbs(bytes, so.min));
    if (have_openssl) {
        ss = bench_summarize(t_ssl, (size_t)runs);
        sr = bench_summarize(ratio, (size_t)runs);
        printf("sha256 whole file, openssl dgst -sha256:     %.3f GB/s median (%.3f .. %.3f)\n", gbs(bytes, ss.median),
               gbs(bytes, ss.max), gbs(bytes, ss.min));
        printf("ratio ours / openssl: %.3fx (medians), %.3fx (median of the per-round ratios; goal >= 0.8x)\n",
               ss.median / so.median, sr.median);
    }
    printf("sha256 whole file, ours (%s, mmap):        %.3f GB/s median (%.3f .. %.3f)\n", sts_sha256_isa(),
           gbs(bytes, sp.median), gbs(bytes, sp.max), gbs(bytes, sp.min));
    printf("sha256 whole file, ours portable path:       %.3f GB/s median (%.3f .. %.3f)\n", gbs(bytes, sw.median),
           gbs(bytes, sw.max), gbs(bytes, sw.min));
    printf("sha256 from memory (%s, no read):         %.3f GB/s median (%.3f .. %.3f)\n", sts_sha256_isa(), sm.median,
           sm.min, sm.max);
    free(buf);
    free(t_ours);
    free(t_ssl);
    free(t_map);
    free(t_sw);
    free(t_mem);
    free(ratio);
    return bad ? 1 : 0;
}
