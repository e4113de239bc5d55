/* bench_dataset_util.h - helpers shared by the dataset benchmarks (bench_dataset_write.c,
   bench_dataset_read.c): a scratch folder that is always removed (normal exit, failure, SIGINT,
   SIGTERM, SIGHUP), measurements run in forked children (so each one has its own peak RSS and a
   crash or failed check cannot leave the parent's state half-changed), results passed back through
   shared memory, /proc readers (VmHWM, VmRSS, rchar/read_bytes), percentiles, the clock's own
   overhead, and a description of the machine and of the scratch folder's file system. Removing
   folders is tests/fs_util.h's (tf_rmtree, tf_clear).

   Include after defining _GNU_SOURCE (syncfs, MAP_ANONYMOUS, posix_fadvise) and after
   bench_util.h. Everything here is static. */
#ifndef BENCH_DATASET_UTIL_H
#define BENCH_DATASET_UTIL_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/types.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_util.h"
#include "../tests/fs_util.h"   /* tf_rmtree, tf_clear */

#if defined(__GNUC__) || defined(__clang__)
#define BD_FN static __attribute__((unused))
#else
#define BD_FN static
#endif

/* ---- the scratch folder ------------------------------------------------------------------------ */
static char bd_root[4096];           /* mkdtemp'd folder; empty string = none */
static volatile sig_atomic_t bd_stop; /* the signal that asked us to stop, or 0 */
static pid_t bd_child;               /* the child being waited for, or 0 */
static const char *bd_prog = "bench";

BD_FN void bd_on_signal(int sig) { bd_stop = sig; }

BD_FN void bd_cleanup(void) {
    if (bd_root[0]) {
        tf_rmtree(bd_root);
        bd_root[0] = 0;
    }
}
/* Ends the program: kills the child being waited for, removes the scratch folder. */
BD_FN void bd_exit(int code) {
    if (bd_child > 0) {
        int st;
        kill(bd_child, SIGKILL);
        while (waitpid(bd_child, &st, 0) < 0 && errno == EINTR) {}
        bd_child = 0;
    }
    bd_cleanup();
    fflush(stdout);
    exit(code);
}
BD_FN void bd_die(const char *fmt, ...) {
    va_list ap;
    fprintf(stderr, "%s: ", bd_prog);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    bd_exit(2);
}
BD_FN void bd_check_stop(void) {
    if (bd_stop) {
        fprintf(stderr, "%s: stopped by signal %d; scratch folder removed\n", bd_prog, (int)bd_stop);
        bd_exit(130);
    }
}
/* Signals end the program through bd_check_stop (no SA_RESTART: waitpid returns EINTR). */
BD_FN void bd_install_signals(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = bd_on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
}
/* Creates <BENCH_DIR or /tmp>/<tag>-XXXXXX; checks that need_bytes are free there. */
BD_FN void bd_make_root(const char *tag, uint64_t need_bytes) {
    const char *base = getenv("BENCH_DIR");
    struct statvfs vs;
    if (!base || !base[0]) base = "/tmp";
    if ((size_t)snprintf(bd_root, sizeof bd_root, "%s/%s-XXXXXX", base, tag) >= sizeof bd_root) bd_die("BENCH_DIR too long");
    if (!mkdtemp(bd_root)) {
        int e = errno;
        bd_root[0] = 0;
        bd_die("cannot create a scratch folder under %s: %s", base, strerror(e));
    }
    if (statvfs(bd_root, &vs) == 0) {
        uint64_t avail = (uint64_t)vs.f_bavail * (uint64_t)vs.f_frsize;
        if (avail < need_bytes)
            bd_die("%s has %.2f GiB free; this run needs %.2f GiB (set BENCH_DIR elsewhere, or use --quick)", base,
                   (double)avail / 1073741824.0, (double)need_bytes / 1073741824.0);
    }
}
/* Writes back what the scratch folder's file system has dirty, so one measurement does not pay
   for the previous one's writeback. Not timed. */
BD_FN void bd_settle(const char *dir) {
    int fd = open(dir, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        syncfs(fd);
        close(fd);
    }
}
BD_FN void bd_path(char *out, size_t cap, const char *dir, const char *name) {
    if ((size_t)snprintf(out, cap, "%s/%s", dir, name) >= cap) bd_die("path too long: %s/%s", dir, name);
}

/* ---- children ---------------------------------------------------------------------------------- */
BD_FN void *bd_shared(size_t n) {  /* zeroed memory the parent and its children share */
    void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) bd_die("mmap of %zu shared bytes failed: %s", n, strerror(errno));
    memset(p, 0, n);
    return p;
}
/* Runs fn(arg) in a child; returns its exit code (0 = success; 128 + signal when killed). The
   child restores default signal handling, so Ctrl-C ends both; the parent then cleans up. */
BD_FN int bd_run_child(int (*fn)(void *), void *arg) {
    pid_t pid;
    int st = 0;
    bd_check_stop();
    fflush(stdout);
    fflush(stderr);
    pid = fork();
    if (pid < 0) bd_die("fork failed: %s", strerror(errno));
    if (pid == 0) {
        int rc;
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        signal(SIGHUP, SIG_DFL);
        bd_root[0] = 0;  /* the parent owns the folder */
        rc = fn(arg);
        fflush(stdout);
        fflush(stderr);
        _exit(rc);
    }
    bd_child = pid;
    for (;;) {
        pid_t w = waitpid(pid, &st, 0);
        if (w == pid) break;
        if (w < 0 && errno != EINTR) bd_die("waitpid: %s", strerror(errno));
        bd_check_stop();
    }
    bd_child = 0;
    bd_check_stop();
    if (WIFSIGNALED(st)) return 128 + WTERMSIG(st);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}

/* ---- /proc -------------------------------------------------------------------------------------- */
/* A "Field:   123 kB" line of /proc/self/status, in KiB; 0 if absent. */
BD_FN uint64_t bd_status_kib(const char *field) {
    char line[256];
    size_t fl = strlen(field);
    uint64_t v = 0;
    FILE *f = fopen("/proc/self/status", "r");
    if (!f) return 0;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, field, fl) == 0 && line[fl] == ':') { v = strtoull(line + fl + 1, NULL, 10); break; }
    fclose(f);
    return v;
}
typedef struct bd_io { uint64_t rchar, syscr, read_bytes, self; } bd_io;
/* /proc/self/io with one read(); self = the bytes that read returned, which the kernel adds to
   rchar after the snapshot: bd_io_rchar subtracts them, so a delta is exact. */
BD_FN bd_io bd_io_now(void) {
    char buf[1024], *p;
    bd_io io;
    ssize_t n;
    int fd = open("/proc/self/io", O_RDONLY | O_CLOEXEC);
    memset(&io, 0, sizeof io);
    if (fd < 0) return io;
    n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return io;
    buf[n] = 0;
    io.self = (uint64_t)n;
    if ((p = strstr(buf, "rchar:")) != NULL) io.rchar = strtoull(p + 6, NULL, 10);
    if ((p = strstr(buf, "syscr:")) != NULL) io.syscr = strtoull(p + 6, NULL, 10);
    if ((p = strstr(buf, "read_bytes:")) != NULL) io.read_bytes = strtoull(p + 11, NULL, 10);
    return io;
}
/* Bytes returned by read calls between two snapshots, the first snapshot's own read excluded. */
BD_FN uint64_t bd_io_rchar(bd_io a, bd_io b) { return b.rchar - a.rchar - a.self; }
/* Read calls between two snapshots, the first snapshot's own read excluded. */
BD_FN uint64_t bd_io_syscr(bd_io a, bd_io b) { return b.syscr - a.syscr - 1; }
/* Drops a file's clean pages from the page cache (it is written back first). */
BD_FN void bd_drop_cache(const char *path) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    fdatasync(fd);
    posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    close(fd);
}
BD_FN double bd_loadavg(void) {
    double l = -1;
    FILE *f = fopen("/proc/loadavg", "r");
    if (f) {
        if (fscanf(f, "%lf", &l) != 1) l = -1;
        fclose(f);
    }
    return l;
}

/* ---- statistics ---------------------------------------------------------------------------------- */
BD_FN int bd_cmp_float(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return x < y ? -1 : x > y;
}
/* Percentile p (0..1) of n sorted values: the element at round(p * (n - 1)), as bench_summarize. */
BD_FN double bd_pct_sorted_f(const float *v, size_t n, double p) {
    return n ? (double)v[(size_t)(p * (double)(n - 1) + 0.5)] : 0;
}
BD_FN double bd_median(const double *v, size_t n) { return bench_summarize(v, n).median; }
BD_FN double bd_min(const double *v, size_t n) { return bench_summarize(v, n).min; }
BD_FN double bd_max(const double *v, size_t n) { return bench_summarize(v, n).max; }

/* The clock's own cost: the median of back-to-back clock_gettime(CLOCK_MONOTONIC) pairs, in ns. */
BD_FN double bd_clock_overhead_ns(size_t pairs) {
    float *d = (float *)malloc(pairs * sizeof *d);
    size_t i;
    double med;
    if (!d) bd_die("out of memory");
    for (i = 0; i < pairs; i++) {
        struct timespec a, b;
        clock_gettime(CLOCK_MONOTONIC, &a);
        clock_gettime(CLOCK_MONOTONIC, &b);
        d[i] = (float)((double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec));
    }
    qsort(d, pairs, sizeof *d, bd_cmp_float);
    med = bd_pct_sorted_f(d, pairs, 0.5);
    free(d);
    return med;
}
BD_FN inline uint64_t bd_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* CPU seconds this process has used (immune to time slices lost to other processes). */
BD_FN double bd_cpu_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* User and system CPU seconds of this process so far. */
BD_FN void bd_cpu_times(double *user, double *sys) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    *user = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6;
    *sys = (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
}

/* CPU seconds of the calling thread (user + system), where the system can tell; else -1. */
BD_FN double bd_thread_cpu(void) {
#ifdef CLOCK_THREAD_CPUTIME_ID
    struct timespec t;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t) == 0) return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
#endif
    return -1;
}

/* ---- the machine ---------------------------------------------------------------------------------- */
BD_FN const char *bd_fs_name(unsigned long magic) {
    switch (magic) {
    case 0xEF53: return "ext2/3/4";
    case 0x58465342: return "xfs";
    case 0x9123683E: return "btrfs";
    case 0x01021994: return "tmpfs";
    case 0x794c7630: return "overlayfs";
    case 0x2fc12fc1: return "zfs";
    case 0x6969: return "nfs";
    case 0xF2F52010: return "f2fs";
    default: return "other";
    }
}
/* Prints CPU, memory, compiler and the scratch folder's mount (device, type, options). */
BD_FN void bd_print_machine(FILE *out, const char *dir) {
    char line[1024], model[256] = "?";
    FILE *f;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    struct statfs sf;
    if ((f = fopen("/proc/cpuinfo", "r")) != NULL) {
        while (fgets(line, sizeof line, f))
            if (strncmp(line, "model name", 10) == 0) {
                char *c = strchr(line, ':');
                if (c) { snprintf(model, sizeof model, "%s", c + 2); model[strcspn(model, "\n")] = 0; }
                break;
            }
        fclose(f);
    }
    fprintf(out, "machine: %s, %ld online CPUs, %.1f GiB RAM, load average %.2f at start\n", model, cpus,
            (double)sysconf(_SC_PHYS_PAGES) * (double)sysconf(_SC_PAGESIZE) / 1073741824.0, bd_loadavg());
    bench_print_build(out);
    if (statfs(dir, &sf) == 0) {
        /* the mount holding dir: the longest mount point that prefixes it (mountinfo fields 5, 9, 10, 6) */
        char best_mp[1024] = "?", best_src[256] = "?", best_type[64] = "?", best_opts[512] = "?";
        size_t best_len = 0;
        if ((f = fopen("/proc/self/mountinfo", "r")) != NULL) {
            while (fgets(line, sizeof line, f)) {
                char mp[1024], opts[512], type[64], src[256], *dash;
                size_t ml;
                if (sscanf(line, "%*s %*s %*s %*s %1023s %511s", mp, opts) != 2) continue;
                if (!(dash = strstr(line, " - ")) || sscanf(dash + 3, "%63s %255s", type, src) != 2) continue;
                ml = strlen(mp);
                if (strncmp(dir, mp, ml) == 0 && (ml == 1 || dir[ml] == '/' || dir[ml] == 0) && ml >= best_len) {
                    best_len = ml;
                    snprintf(best_mp, sizeof best_mp, "%s", mp);
                    snprintf(best_src, sizeof best_src, "%s", src);
                    snprintf(best_type, sizeof best_type, "%s", type);
                    snprintf(best_opts, sizeof best_opts, "%s", opts);
                }
            }
            fclose(f);
        }
        fprintf(out, "scratch: %s, mount %s (device %s, type %s, statfs magic 0x%lx = %s, options %s), %.1f GiB free\n", dir,
                best_mp, best_src, best_type, (unsigned long)sf.f_type, bd_fs_name((unsigned long)sf.f_type), best_opts,
                (double)sf.f_bavail * (double)sf.f_bsize / 1073741824.0);
    }
}

#endif /* BENCH_DATASET_UTIL_H */
