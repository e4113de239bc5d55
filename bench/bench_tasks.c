/* bench_tasks.c - many task writers at once (issue 17): N task writers of one job writing into one
   folder at the same time, as threads of one process and as N processes, N = 1, 2, 4, 8, 16, in
   batch mode (F32 rows of 64 KiB, 64 rows a file) and KV mode (1 KiB F32 rows), against N raw
   writers of the same bytes in the same run: each raw writer writes files of the sizes its task's
   shards have, in 4 MiB write() calls (+ fsync when durable). Nothing in the library is shared
   between task writers but the folder (and the allocator, the kernel's page cache and its locks),
   so the ratio should hold at every N: the goal is >= 0.8x the parallel raw figure.

   Each measurement: a fresh folder, sts_dataset_prepare, then N tasks released together (a pipe
   closed for processes, a barrier for threads); the time is from the first task's start until the
   last task has committed (sts_task_open .. sts_task_commit; each task reads the clock itself), and
   GB/s is the bytes of all shards over it.
   The dataset commit runs after the clock stops and checks every sample is there. The raw run
   follows in the same folder with the same file sizes, then both are removed. Runs alternate
   library and raw; figures are medians of --runs, the ratio a median of per-run ratios.

   bench_tasks [--n 1,2,4,8,16] [--mib M (per task, default 64)] [--runs R (3)] [--only batch|kv]
               [--kind threads|processes|both] [--durable] [--kv-layout sorted|arrival] [--no-io-thread]
               [--quick (M = 8, N up to 4)] [--svg FILE]
   --no-io-thread: io_thread = false (each task writes on its own thread: no hand-over, no overlap).
   --svg writes the scaling curves as a plot (GB/s and the ratio against N). Files go to a fresh folder under BENCH_DIR (default /tmp), removed at the end. */
#define _GNU_SOURCE
#define STS_IMPLEMENTATION
#include "../safetensors_spark.h"
#include "bench_util.h"
#include "bench_dataset_util.h"
#include <math.h>
#include <pthread.h>

#define MIB ((uint64_t)1 << 20)
#define MAXN 64
#define MSG_CAP (256u << 10)
#define BATCH_ROW_BYTES (64u << 10)
#define KV_ROW_BYTES 1024u

typedef struct slot {           /* one task's outcome (shared with the parent when a process) */
    int ok;
    double t0, t1;              /* when it started and ended (CLOCK_MONOTONIC: one clock for every process) */
    char why[512];
    size_t msg_len;
    char msg[MSG_CAP];
} slot;

static int g_kv, g_durable, g_runs = 3, g_arrival, g_no_io;
static uint64_t g_mib = 64;
static char g_dir[4096];
static slot *g_slots;           /* MAXN slots, in shared memory */
static pthread_barrier_t g_barrier;

static uint64_t task_rows(void) { return g_mib * MIB / (g_kv ? KV_ROW_BYTES : BATCH_ROW_BYTES); }

static const sts_column kv_schema[2] = {
    { "key", STS_VALUE_STRING, STS_DTYPE_U8 }, { "x", STS_VALUE_TENSOR, STS_DTYPE_F32 }
};
static const sts_column batch_schema[1] = { { "x", STS_VALUE_TENSOR, STS_DTYPE_F32 } };

static void config(sts_write_config *c) {
    memset(c, 0, sizeof *c);
    if (g_kv) c->name_col = "key";
    else c->batch_size = 64;
    c->kv_layout = g_arrival ? STS_KV_ARRIVAL : STS_KV_SORTED;
    c->no_fsync = !g_durable;
    c->no_io_thread = g_no_io;
}

/* The next key after k ("tTTT-" and 10 digits): the digits counted up in place. Formatting each
   key with snprintf took ~15% of a KV task's time on the 2-vCPU VM, a cost of the benchmark, not
   of the library (bench_dataset_write counts its keys the same way). */
static void key_next(char *k) {
    int d = 14;
    while (d >= 5 && k[d] == '9') k[d--] = '0';
    if (d >= 5) k[d]++;
}

/* One task writer over its rows; the outcome in its slot. */
static void task_run(uint32_t t) {
    slot *s = &g_slots[t];
    sts_write_config c;
    sts_task_writer *w;
    sts_error e;
    sts_value v[2];
    uint64_t shape[1], i, rows = task_rows();
    size_t bytes = g_kv ? KV_ROW_BYTES : BATCH_ROW_BYTES;
    float *x = (float *)malloc(bytes);
    char key[32], *msg = NULL;
    size_t len = 0;
    config(&c);
    s->ok = 0;
    if (!x) { snprintf(s->why, sizeof s->why, "out of memory"); return; }
    for (i = 0; i < bytes / 4; i++) x[i] = (float)(i * 7 + t);
    shape[0] = bytes / 4;
    memset(v, 0, sizeof v);
    v[0].data = key;
    v[0].size = (uint64_t)snprintf(key, sizeof key, "t%03u-%010llu", t, 0ull);
    if (sts_task_open(g_dir, t, &c, g_kv ? kv_schema : batch_schema, g_kv ? 2 : 1, NULL, &w, &e) != STS_OK) {
        snprintf(s->why, sizeof s->why, "task %u open: %s", t, e.message);
        free(x);
        return;
    }
    for (i = 0; i < rows; i++) {
        sts_value *cell = g_kv ? &v[1] : &v[0];
        if (g_kv && i) key_next(key);
        x[0] = (float)i;
        cell->data = x; cell->size = bytes; cell->dtype = STS_DTYPE_F32; cell->rank = 1; cell->shape = shape;
        if (sts_task_write(w, v, &e) != STS_OK) {
            snprintf(s->why, sizeof s->why, "task %u row %llu: %s", t, (unsigned long long)i, e.message);
            sts_task_close(w);
            free(x);
            return;
        }
    }
    if (sts_task_commit(w, &msg, &len, &e) != STS_OK || len >= MSG_CAP) {
        snprintf(s->why, sizeof s->why, "task %u commit: %s", t, msg ? "message too long" : e.message);
        sts_task_close(w);
        free(x);
        return;
    }
    memcpy(s->msg, msg, len + 1);
    s->msg_len = len;
    sts_free(NULL, msg, len + 1);
    sts_task_close(w);
    free(x);
    s->ok = 1;
}

/* ---- the raw writers: task t writes files of its shards' sizes ---- */
typedef struct rawplan { uint64_t sizes[MAXN][64]; size_t n[MAXN]; } rawplan;
static rawplan g_plan;

static void raw_run(uint32_t t) {
    slot *s = &g_slots[t];
    size_t f, chunk = (size_t)(4 * MIB);
    uint8_t *buf = (uint8_t *)malloc(chunk);
    s->ok = 0;
    if (!buf) { snprintf(s->why, sizeof s->why, "out of memory"); return; }
    memset(buf, 0x5a, chunk);
    for (f = 0; f < g_plan.n[t]; f++) {
        char p[4200];
        uint64_t left = g_plan.sizes[t][f];
        int fd;
        snprintf(p, sizeof p, "%.4000s/raw-%03u-%03zu.bin", g_dir, t, f);
        if ((fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) < 0) {
            snprintf(s->why, sizeof s->why, "open %.300s: %s", p, strerror(errno));
            free(buf);
            return;
        }
        while (left) {
            ssize_t k = write(fd, buf, left < chunk ? (size_t)left : chunk);
            if (k < 0 && errno == EINTR) continue;
            if (k <= 0) { snprintf(s->why, sizeof s->why, "write: %s", strerror(errno)); close(fd); free(buf); return; }
            left -= (uint64_t)k;
        }
        if ((g_durable && fsync(fd) != 0) || close(fd) != 0) {
            snprintf(s->why, sizeof s->why, "fsync/close: %s", strerror(errno));
            free(buf);
            return;
        }
    }
    if (g_durable) {
        int d = open(g_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (d >= 0) { (void)fsync(d); close(d); }
    }
    free(buf);
    s->ok = 1;
}

/* ---- running N at once ---- */
typedef struct targ { uint32_t t; int raw; } targ;
static void timed(uint32_t t, int raw) {
    g_slots[t].t0 = tu_now();
    if (raw) raw_run(t);
    else task_run(t);
    g_slots[t].t1 = tu_now();
}
static void *thread_main(void *p) {
    const targ *a = (const targ *)p;
    pthread_barrier_wait(&g_barrier);
    timed(a->t, a->raw);
    return NULL;
}
/* Runs N tasks (library or raw) as threads or processes; returns the seconds from the first task's
   start to the last one's end, each task timing itself (on 2 CPUs the releasing thread may run only
   after the tasks are done), or -1 (a task failed: its reason printed). */
static double run_n(uint32_t n, int processes, int raw) {
    double t0, t1;
    uint32_t i;
    if (processes) {
        int go[2];
        pid_t pid[MAXN];
        if (pipe(go) != 0) bd_die("pipe: %s", strerror(errno));
        for (i = 0; i < n; i++) {
            if ((pid[i] = fork()) < 0) bd_die("fork: %s", strerror(errno));
            if (pid[i] == 0) {
                char c;
                close(go[1]);
                while (read(go[0], &c, 1) < 0 && errno == EINTR) {}
                timed(i, raw);
                _exit(0);
            }
        }
        close(go[0]);
        usleep(20000);  /* let every child reach its read */
        close(go[1]);   /* EOF: every child starts */
        for (i = 0; i < n; i++) {
            int st;
            while (waitpid(pid[i], &st, 0) < 0 && errno == EINTR) {}
        }
    } else {
        pthread_t th[MAXN];
        targ a[MAXN];
        pthread_barrier_init(&g_barrier, NULL, n + 1);
        for (i = 0; i < n; i++) {
            a[i].t = i;
            a[i].raw = raw;
            if (pthread_create(&th[i], NULL, thread_main, &a[i]) != 0) bd_die("pthread_create failed");
        }
        pthread_barrier_wait(&g_barrier);
        for (i = 0; i < n; i++) pthread_join(th[i], NULL);
        pthread_barrier_destroy(&g_barrier);
    }
    t0 = g_slots[0].t0;
    t1 = g_slots[0].t1;
    for (i = 0; i < n; i++) {
        if (!g_slots[i].ok) { printf("  task %u failed: %s\n", i, g_slots[i].why); return -1; }
        if (g_slots[i].t0 < t0) t0 = g_slots[i].t0;
        if (g_slots[i].t1 > t1) t1 = g_slots[i].t1;
    }
    return t1 - t0;
}

/* The shards of the job just written, by task: their sizes become the raw writers' files. */
static uint64_t plan_from_folder(uint32_t n) {
    DIR *d = opendir(g_dir);
    struct dirent *e;
    uint64_t total = 0;
    memset(&g_plan, 0, sizeof g_plan);
    if (!d) bd_die("opendir %s: %s", g_dir, strerror(errno));
    while ((e = readdir(d)) != NULL) {
        unsigned t;
        char p[4200];
        struct stat st;
        if (sscanf(e->d_name, "part-%5u-", &t) != 1 || t >= n || g_plan.n[t] >= 64) continue;
        snprintf(p, sizeof p, "%.3900s/%.255s", g_dir, e->d_name);
        if (stat(p, &st) != 0) continue;
        g_plan.sizes[t][g_plan.n[t]++] = (uint64_t)st.st_size;
        total += (uint64_t)st.st_size;
    }
    closedir(d);
    return total;
}

/* Every measurement, for the plot. */
typedef struct point { int kv, processes; uint32_t n; double lib, raw, ratio; } point;
static point g_points[64];
static size_t g_npoints;

/* An SVG of the scaling curves: left, GB/s against N (sts solid, raw dashed), right, sts/raw
   against N with the 0.8 goal; N on a log2 axis. One colour per mode and kind. */
static void write_svg(const char *path) {
    static const char *const colour[4] = { "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728" };
    static const char *const label[4] = { "batch, threads", "batch, processes", "KV, threads", "KV, processes" };
    FILE *f = fopen(path, "w");
    double gmax = 0.1, rmax = 1.2, lmax = 1;
    size_t i;
    int panel, series;
    if (!f) bd_die("%s: %s", path, strerror(errno));
    for (i = 0; i < g_npoints; i++) {
        if (g_points[i].lib > gmax) gmax = g_points[i].lib;
        if (g_points[i].raw > gmax) gmax = g_points[i].raw;
        if (g_points[i].ratio > rmax) rmax = g_points[i].ratio;
        if (log2(g_points[i].n) > lmax) lmax = log2(g_points[i].n);
    }
    gmax *= 1.1;
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"960\" height=\"420\" font-family=\"sans-serif\" "
               "font-size=\"12\">\n<rect width=\"960\" height=\"420\" fill=\"white\"/>\n");
    fprintf(f, "<text x=\"480\" y=\"20\" text-anchor=\"middle\" font-size=\"14\">bench_tasks: %llu MiB a task, %s, "
               "%ld CPUs</text>\n", (unsigned long long)g_mib, g_durable ? "durable" : "non-durable",
            sysconf(_SC_NPROCESSORS_ONLN));
    for (panel = 0; panel < 2; panel++) {
        double x0 = 60 + panel * 470, y0 = 360, w = 400, h = 300, top = panel ? rmax : gmax;
        int t;
        fprintf(f, "<rect x=\"%.0f\" y=\"%.0f\" width=\"%.0f\" height=\"%.0f\" fill=\"none\" stroke=\"#888\"/>\n",
                x0, y0 - h, w, h);
        fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"middle\">%s</text>\n", x0 + w / 2, y0 - h - 8,
                panel ? "sts / raw (goal 0.8, dashed)" : "GB/s: sts (solid), raw write() (dashed)");
        for (t = 0; t <= 4; t++) {  /* y ticks */
            double v = top * t / 4, y = y0 - h * t / 4;
            fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"end\">%.2f</text>\n", x0 - 4, y + 4, v);
        }
        for (t = 0; t <= (int)lmax; t++) {  /* x ticks: N = 1, 2, 4, ... */
            double x = x0 + w * t / lmax;
            fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"middle\">%d</text>\n", x, y0 + 16, 1 << t);
        }
        fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"middle\">N (task writers at once)</text>\n",
                x0 + w / 2, y0 + 34);
        if (panel) {
            double y = y0 - h * 0.8 / top;
            fprintf(f, "<line x1=\"%.0f\" x2=\"%.0f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#000\" "
                       "stroke-dasharray=\"2,3\"/>\n", x0, x0 + w, y, y);
        }
        for (series = 0; series < 4; series++) {
            int line;
            for (line = 0; line < (panel ? 1 : 2); line++) {  /* panel 0: sts, then raw */
                int any = 0;
                fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\"%s points=\"", colour[series],
                        line ? " stroke-dasharray=\"6,4\"" : "");
                for (i = 0; i < g_npoints; i++) {
                    const point *q = &g_points[i];
                    double v = panel ? q->ratio : line ? q->raw : q->lib;
                    if (q->kv * 2 + q->processes != series) continue;
                    fprintf(f, "%s%.1f,%.1f", any++ ? " " : "", x0 + w * log2(q->n) / lmax, y0 - h * v / top);
                }
                fprintf(f, "\"/>\n");
            }
        }
    }
    for (series = 0; series < 4; series++)
        fprintf(f, "<rect x=\"%d\" y=\"400\" width=\"14\" height=\"4\" fill=\"%s\"/><text x=\"%d\" y=\"406\">%s"
                   "</text>\n", 120 + series * 200, colour[series], 140 + series * 200, label[series]);
    fprintf(f, "</svg>\n");
    if (fclose(f) != 0) bd_die("%s: write failed", path);
    printf("plot: %s\n", path);
}

static void one(uint32_t n, int processes) {
    double lib[64], rawv[64], ratio[64];
    int r, k = 0;
    uint64_t bytes = 0;
    for (r = 0; r < g_runs; r++) {
        sts_write_config c;
        sts_error e;
        sts_dataset_summary sum;
        const char *msgs[MAXN];
        size_t lens[MAXN];
        double tl, tr;
        uint32_t i;
        tf_clear(g_dir);
        config(&c);
        if (sts_dataset_prepare(g_dir, &c, g_kv ? kv_schema : batch_schema, g_kv ? 2 : 1, NULL, &e) != STS_OK)
            bd_die("prepare: %s", e.message);
        if ((tl = run_n(n, processes, 0)) < 0) bd_exit(1);
        bytes = plan_from_folder(n);
        for (i = 0; i < n; i++) { msgs[i] = g_slots[i].msg; lens[i] = g_slots[i].msg_len; }
        if (sts_dataset_commit(g_dir, &c, msgs, lens, n, NULL, &sum, &e) != STS_OK) bd_die("commit: %s", e.message);
        if (sum.samples != (uint64_t)n * task_rows())
            bd_die("the dataset holds %llu samples, not %llu", (unsigned long long)sum.samples,
                   (unsigned long long)((uint64_t)n * task_rows()));
        if ((tr = run_n(n, processes, 1)) < 0) bd_exit(1);
        lib[k] = (double)bytes / tl / 1e9;
        rawv[k] = (double)bytes / tr / 1e9;
        ratio[k] = lib[k] / rawv[k];
        k++;
    }
    tf_clear(g_dir);
    if (g_npoints < sizeof g_points / sizeof g_points[0]) {
        point *q = &g_points[g_npoints++];
        q->kv = g_kv; q->processes = processes; q->n = n;
        q->lib = bd_median(lib, (size_t)k); q->raw = bd_median(rawv, (size_t)k); q->ratio = bd_median(ratio, (size_t)k);
    }
    printf("%-5s %-9s %3u   %8.2f   %8.2f   %6.2fx   (ratios %.2f..%.2f; %.0f MiB a run)\n", g_kv ? "kv" : "batch",
           processes ? "processes" : "threads", n, bd_median(lib, (size_t)k), bd_median(rawv, (size_t)k),
           bd_median(ratio, (size_t)k), bd_min(ratio, (size_t)k), bd_max(ratio, (size_t)k), (double)bytes / MIB);
    fflush(stdout);
}

int main(int argc, char **argv) {
    uint32_t ns[16] = { 1, 2, 4, 8, 16 };
    size_t nn = 5, i;
    int only = -1, kinds = 3, a;
    const char *svg = NULL;
    bd_prog = "bench_tasks";
    for (a = 1; a < argc; a++) {
        if (!strcmp(argv[a], "--n") && a + 1 < argc) {
            char *p = argv[++a];
            nn = 0;
            while (*p && nn < 16) {
                unsigned long v = strtoul(p, &p, 10);
                if (v < 1 || v > MAXN) bd_die("--n: each N is 1..%d", MAXN);
                ns[nn++] = (uint32_t)v;
                if (*p == ',') p++;
            }
        } else if (!strcmp(argv[a], "--mib") && a + 1 < argc) g_mib = strtoull(argv[++a], NULL, 10);
        else if (!strcmp(argv[a], "--runs") && a + 1 < argc) g_runs = atoi(argv[++a]);
        else if (!strcmp(argv[a], "--only") && a + 1 < argc) { a++; only = !strcmp(argv[a], "kv"); }
        else if (!strcmp(argv[a], "--kind") && a + 1 < argc) {
            a++;
            kinds = !strcmp(argv[a], "threads") ? 1 : !strcmp(argv[a], "processes") ? 2 : 3;
        } else if (!strcmp(argv[a], "--durable")) g_durable = 1;
        else if (!strcmp(argv[a], "--kv-layout") && a + 1 < argc) g_arrival = !strcmp(argv[++a], "arrival");
        else if (!strcmp(argv[a], "--no-io-thread")) g_no_io = 1;
        else if (!strcmp(argv[a], "--quick")) { g_mib = 8; nn = 3; }
        else if (!strcmp(argv[a], "--svg") && a + 1 < argc) svg = argv[++a];
        else {
            fprintf(stderr, "usage: bench_tasks [--n 1,2,4,8,16] [--mib M] [--runs R] [--only batch|kv] "
                            "[--kind threads|processes|both] [--durable] [--kv-layout sorted|arrival] [--no-io-thread] [--quick] [--svg FILE]\n");
            return 2;
        }
    }
    if (g_mib < 1 || g_runs < 1 || g_runs > 64) bd_die("--mib >= 1, --runs 1..64");
    bd_install_signals();
    {
        uint32_t most = 1;
        for (i = 0; i < nn; i++) if (ns[i] > most) most = ns[i];
        bd_make_root("tasks", (uint64_t)most * g_mib * MIB * 2 + (64 * MIB));
    }
    snprintf(g_dir, sizeof g_dir, "%.4000s/job", bd_root);
    if (mkdir(g_dir, 0755) != 0) bd_die("mkdir %s: %s", g_dir, strerror(errno));
    if (!(g_slots = (slot *)bd_shared(MAXN * sizeof *g_slots))) bd_die("shared memory");
    bd_print_machine(stdout, bd_root);
    printf("bench_tasks: %llu MiB per task (batch: 64 KiB F32 rows, 64 a file; KV: 1 KiB F32 rows, kv_layout %s), %s%s, "
           "median of %d runs, library and raw alternating; %ld CPUs\n", (unsigned long long)g_mib,
           g_arrival ? "arrival" : "sorted", g_durable ? "durable (fsync)" : "non-durable",
           g_no_io ? ", io_thread false" : "", g_runs, sysconf(_SC_NPROCESSORS_ONLN));
    printf("mode  kind        N   sts GB/s   raw GB/s    ratio\n");
    for (g_kv = 0; g_kv < 2; g_kv++) {
        int pk;
        if (only >= 0 && only != g_kv) continue;
        for (pk = 0; pk < 2; pk++) {
            if (!(kinds & (1 << pk))) continue;
            for (i = 0; i < nn; i++) one(ns[i], pk);
        }
    }
    if (svg) write_svg(svg);
    bd_exit(0);
    return 0;
}
