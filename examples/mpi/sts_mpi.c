/* sts_mpi.c - a dataset written and read by MPI ranks (issue 15; make test-mpi, make bench-mpi).

   usage: mpirun -np P sts_mpi write DIR [--rows N] [--dim D] [--batch B] [--no-fsync]
                                         [--fail-after K --fail-rank R] [--fail-write R]
          mpirun -np P sts_mpi read DIR [--rows N] [--dim D] [--skip-shard I] [--extra-shard I]
          mpirun -np P sts_mpi bench DIR [--rows N] [--dim D] [--batch B] [--no-fsync] [--baseline]
                                         [--repeat R]

   Rows are made from their global index g alone: "id" (I64, g) and "x" (F32 [D], x[j] from g and
   j), so that any reader can recompute what every sample must hold.

   write  Rank 0 prepares DIR (the job: folder, lock); each rank is one task writer (task id =
          rank) over rows [rank * N / P, (rank + 1) * N / P), batch mode, B rows a file. Each rank
          sends rank 0 its outcome: the commit message, or why it failed. Rank 0 commits the
          dataset when every rank committed; otherwise it prints the failures, aborts the job with
          the messages it has, which removes the shards they name, what a dead writer left (its
          hidden temporaries) and the job's lock: nothing is
          published and the folder is as it was (rank 0 removes it when it made it). The outcome
          is broadcast, every rank prints it and exits with the same status.
            --fail-after K --fail-rank R   rank R's writer dies after K rows: MPI without fault
                tolerance (ULFM) cannot outlive a dead rank (mpirun ends the job), so rank R runs its
                writer in a child process that writes K rows and is killed (SIGKILL: no commit, no
                cleanup, its I/O thread stopped wherever it was); rank R sees the death and reports it
          --fail-write R   rank R's writes fail: a file-size limit (RLIMIT_FSIZE) makes the
                library's I/O fail (EFBIG); rank R reports the library's error and closes its writer
                without a commit (which removes its files)
   read   Every rank opens DIR, takes its shards through sts_dataset_assign (balance) and reads
          them; per sample it checks the id and hashes the id and the bytes of x. An allreduce of
          (samples, sum of hashes, sum of squared hashes, bad ids) and a reduction of a count per
          id at rank 0 prove that every sample was read exactly once; rank 0 compares them with
          what the generator gives and prints the verdict (exit 1 when it fails).
            --skip-shard I    the owner of file I skips it       (a negative check: must fail)
            --extra-shard I   file I is also read by the next rank (a negative check: must fail)
   bench  R times (--repeat, default 1): a write into DIR/run-r, then its read, each timed between
          barriers on rank 0, and the dataset removed; rank 0 prints the median and best MB/s of the
          row bytes (N * (8 + 4D)). DIR must exist. --baseline (run it with one rank) first times
          the same bytes written with write() to one file in DIR (fsync'd as the dataset's files
          are, unless --no-fsync), read back with read(), then mapped (as the dataset reader reads
          its shards), hashed as the readers hash.
   Exit status: 0 success, 1 failure (the write aborted, the read verdict failed), 2 usage. */
#define _POSIX_C_SOURCE 200809L
#define STS_IMPLEMENTATION
#include "../../safetensors_spark.h"

#include <mpi.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <dirent.h>
#include <time.h>
#include <unistd.h>

typedef struct args {
    const char *mode, *dir;
    uint64_t rows, dim, batch, repeat;
    int no_fsync, baseline;
    long fail_after, fail_rank, fail_write, skip_shard, extra_shard;   /* -1: none */
} args;

static int rank, size;
static double read_done;  /* MPI_Wtime when the read's reductions are done (the verdict's own work follows) */

/* ---- the rows: everything follows from the global row index ---- */
static void gen_row(uint64_t g, uint64_t dim, float *x) {
    uint64_t j;
    for (j = 0; j < dim; j++) x[j] = (float)((g * 1000003u + j * 7919u) & 0xffffffu);  /* exact in F32 */
}
static uint64_t mix64(uint64_t z) {  /* splitmix64's finaliser */
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
/* A sample's hash: its id and x's bytes (little-endian F32, as stored), read without alignment. */
static uint64_t sample_hash(uint64_t g, const uint8_t *x, uint64_t nbytes) {
    uint64_t h = mix64(g ^ 0x5354535f4d5049ull), w, i;
    for (i = 0; i + 8 <= nbytes; i += 8) {
        memcpy(&w, x + i, 8);
        h = (h ^ w) * 0x100000001b3ull;
    }
    for (; i < nbytes; i++) h = (h ^ x[i]) * 0x100000001b3ull;
    return mix64(h);
}
typedef struct sums { uint64_t count, sum, sumsq, bad; } sums;
static void sums_add(sums *s, uint64_t h) { s->count++; s->sum += h; s->sumsq += h * h; }

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}
static int is_little_endian(void) { const uint16_t one = 1; uint8_t b; memcpy(&b, &one, 1); return b == 1; }

/* ---- write ---- */
static const sts_column schema[2] = {
    { "id", STS_VALUE_TENSOR, STS_DTYPE_I64 },  /* a scalar a row: [n] in a file */
    { "x", STS_VALUE_TENSOR, STS_DTYPE_F32 },   /* [D] a row: [n, D] in a file */
};

/* Writes rows [from, to) (at most `limit` of them) through w; 0, or the library's result with err. */
static sts_result write_rows(sts_task_writer *w, const args *a, uint64_t from, uint64_t to, uint64_t limit,
                             float *x, uint64_t *written, sts_error *err) {
    uint64_t g, shape[1];
    sts_value row[2];
    int64_t id;
    sts_result r;
    shape[0] = a->dim;
    memset(row, 0, sizeof row);
    row[0].data = &id; row[0].size = 8; row[0].dtype = STS_DTYPE_I64; row[0].rank = 0;
    row[1].data = x; row[1].size = a->dim * 4; row[1].dtype = STS_DTYPE_F32; row[1].rank = 1; row[1].shape = shape;
    *written = 0;
    for (g = from; g < to && *written < limit; g++) {
        id = (int64_t)g;
        gen_row(g, a->dim, x);
        if ((r = sts_task_write(w, row, err)) != STS_OK) return r;
        ++*written;
    }
    return STS_OK;
}
static char *dup_printf(size_t *len, const char *fmt, const char *a1, const char *a2) {
    int n = snprintf(NULL, 0, fmt, rank, a1, a2);
    char *p = n >= 0 ? (char *)malloc((size_t)n + 1) : NULL;
    if (!p) { *len = 0; return NULL; }
    snprintf(p, (size_t)n + 1, fmt, rank, a1, a2);
    *len = (size_t)n;
    return p;
}
/* Child side of --fail-after: writes K rows and dies, as a process does, in the middle of its work. */
static void die_after(const args *a, const sts_write_config *cfg, uint64_t from, uint64_t to, float *x) {
    sts_task_writer *w;
    sts_error err;
    uint64_t n;
    if (sts_task_open(a->dir, (uint32_t)rank, cfg, schema, 2, NULL, &w, &err) != STS_OK ||
        write_rows(w, a, from, to, (uint64_t)a->fail_after, x, &n, &err) != STS_OK) {
        fprintf(stderr, "rank %d (writer process): %s: %s\n", rank, sts_result_name(err.code), err.message);
        _exit(3);
    }
    raise(SIGKILL);
    _exit(4);  /* not reached */
}
/* This rank's task. ok = 1 and the commit message, or ok = 0 and why (both malloc'd text). */
static char *run_task(const args *a, const sts_write_config *cfg, int *ok, size_t *len) {
    uint64_t from = a->rows * (uint64_t)rank / (uint64_t)size, to = a->rows * (uint64_t)(rank + 1) / (uint64_t)size;
    float *x = (float *)malloc((size_t)a->dim * sizeof(float) + 1);
    sts_task_writer *w = NULL;
    sts_error err;
    sts_result r;
    uint64_t n = 0;
    char *msg, *out, what[96];
    size_t mlen;
    struct rlimit old;
    int limited = 0;
    *ok = 0;
    if (!x) return dup_printf(len, "rank %d: out of memory%s%s", "", "");
    if (a->fail_rank == rank && a->fail_after >= 0) {
        pid_t pid;
        int st;
        fflush(NULL);
        if ((pid = fork()) < 0) { free(x); return dup_printf(len, "rank %d: fork: %s%s", strerror(errno), ""); }
        if (pid == 0) die_after(a, cfg, from, to, x);
        free(x);
        while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
        if (WIFSIGNALED(st)) {
            snprintf(what, sizeof what, "signal %d after %ld rows", WTERMSIG(st), a->fail_after);
            return dup_printf(len, "rank %d: its writer process died (%s), without a commit%s", what, "");
        }
        snprintf(what, sizeof what, "%d", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
        return dup_printf(len, "rank %d: its writer process exited with status %s%s", what, "");
    }
    if (a->fail_write == rank) {  /* files larger than 16 KiB fail with EFBIG (SIGXFSZ ignored) */
        struct rlimit lim;
        signal(SIGXFSZ, SIG_IGN);
        if (getrlimit(RLIMIT_FSIZE, &old) == 0) {
            lim = old;
            lim.rlim_cur = 16384;
            limited = setrlimit(RLIMIT_FSIZE, &lim) == 0;
        }
    }
    r = sts_task_open(a->dir, (uint32_t)rank, cfg, schema, 2, NULL, &w, &err);
    if (r == STS_OK) r = write_rows(w, a, from, to, UINT64_MAX, x, &n, &err);
    if (r == STS_OK) r = sts_task_commit(w, &msg, &mlen, &err);
    sts_task_close(w);  /* not committed: its files are removed */
    if (limited) setrlimit(RLIMIT_FSIZE, &old);
    free(x);
    if (r != STS_OK) {
        snprintf(what, sizeof what, "%s after %llu rows", sts_result_name(err.code), (unsigned long long)n);
        return dup_printf(len, "rank %d: %s: %s", what, err.message);
    }
    /* the message in memory of our own (sts_free frees the library's) */
    if ((out = (char *)malloc(mlen + 1)) != NULL) memcpy(out, msg, mlen + 1);
    sts_free(NULL, msg, mlen + 1);
    if (!out) return dup_printf(len, "rank %d: out of memory%s%s", "", "");
    *ok = 1;
    *len = mlen;
    return out;
}
/* What a dead writer leaves: hidden temporaries (.part-*.tmp-*), listed before the abort. */
static void print_temporaries(const char *dir) {
    DIR *d = opendir(dir);
    struct dirent *e;
    if (!d) return;
    while ((e = readdir(d)) != NULL)
        if (strncmp(e->d_name, ".part-", 6) == 0 && strstr(e->d_name, ".tmp-"))
            printf("rank 0: left by a writer: %s\n", e->d_name);
    closedir(d);
}
/* The job: 0 when the dataset was committed, 1 when it was aborted, 2 when rank 0 could not prepare
   the folder (nothing started); every rank returns the same. */
static int do_write(const args *a, sts_dataset_summary *sum) {
    sts_write_config cfg;
    sts_error err;
    int ok = 1, created = 0, outcome = 0, i;
    char *mine = NULL;
    size_t len = 0;
    int pair[2], *pairs = NULL, *displs = NULL, *lens = NULL;
    char *all = NULL;
    memset(&cfg, 0, sizeof cfg);
    cfg.batch_size = a->batch;
    cfg.no_fsync = a->no_fsync;
    memset(sum, 0, sizeof *sum);
    if (rank == 0) {
        struct stat st;
        created = stat(a->dir, &st) != 0 && errno == ENOENT;
        if (sts_dataset_prepare(a->dir, &cfg, schema, 2, NULL, &err) != STS_OK) {
            fprintf(stderr, "rank 0: sts_dataset_prepare %s: %s: %s\n", a->dir, sts_result_name(err.code),
                    err.message);
            ok = 0;
        }
    }
    MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);  /* the tasks start once the job holds the folder */
    if (!ok) return 2;
    mine = run_task(a, &cfg, &ok, &len);
    if (!mine) { ok = 0; len = 0; }
    if (len > (size_t)INT32_MAX) { ok = 0; len = 0; }
    pair[0] = ok;
    pair[1] = (int)len;
    if (rank == 0 && !(pairs = (int *)malloc(2 * (size_t)size * sizeof(int)))) MPI_Abort(MPI_COMM_WORLD, 1);
    MPI_Gather(pair, 2, MPI_INT, pairs, 2, MPI_INT, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        size_t total = 0;
        displs = (int *)malloc((size_t)size * sizeof(int));
        lens = (int *)malloc((size_t)size * sizeof(int));
        for (i = 0; i < size; i++) total += (size_t)pairs[2 * i + 1];
        if (!displs || !lens || total > (size_t)INT32_MAX || !(all = (char *)malloc(total + 1)))
            MPI_Abort(MPI_COMM_WORLD, 1);
        for (i = 0, total = 0; i < size; i++) {
            lens[i] = pairs[2 * i + 1];
            displs[i] = (int)total;
            total += (size_t)lens[i];
        }
    }
    MPI_Gatherv(mine, (int)len, MPI_CHAR, all, lens, displs, MPI_CHAR, 0, MPI_COMM_WORLD);
    free(mine);
    if (rank == 0) {
        const char **msgs = (const char **)malloc((size_t)size * sizeof(char *));
        size_t *mlens = (size_t *)malloc((size_t)size * sizeof(size_t)), n = 0;
        int failed = 0;
        if (!msgs || !mlens) MPI_Abort(MPI_COMM_WORLD, 1);
        for (i = 0; i < size; i++) {
            if (pairs[2 * i]) { msgs[n] = all + displs[i]; mlens[n++] = (size_t)lens[i]; continue; }
            failed++;
            printf("rank 0: task %d failed: %.*s\n", i, lens[i], all + displs[i]);
        }
        if (!failed) {
            if (sts_dataset_commit(a->dir, &cfg, msgs, mlens, n, NULL, sum, &err) != STS_OK) {
                printf("rank 0: sts_dataset_commit: %s: %s\n", sts_result_name(err.code), err.message);
                failed = 1;
                if (err.rule == STS_RULE_DURABLE) {  /* published, not known durable: nothing to abort */
                    printf("rank 0: the dataset is published, but may not survive a crash\n");
                    outcome = 1;
                    failed = 0;
                }
            }
        }
        if (failed) {
            outcome = 1;
            print_temporaries(a->dir);
            printf("rank 0: aborting the job with the %zu commit message%s it has\n", n, n == 1 ? "" : "s");
            /* every writer has ended (committed, closed or dead): the abort removes the shards the
               messages name, a dead writer's temporaries and the job's lock */
            if (sts_dataset_abort(a->dir, msgs, mlens, n, NULL, &err) != STS_OK)
                printf("rank 0: sts_dataset_abort: %s: %s\n", sts_result_name(err.code), err.message);
            if (created) (void)rmdir(a->dir);  /* as it was: absent (only when empty) */
        }
        free(msgs);
        free(mlens);
    }
    free(pairs);
    free(displs);
    free(lens);
    free(all);
    MPI_Bcast(&outcome, 1, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Bcast(sum, 4, MPI_UINT64_T, 0, MPI_COMM_WORLD);
    return outcome;
}

/* ---- read ---- */
/* Reads file i: every sample's id checked (in range) and hashed with its x; ids counted in seen. */
static int read_file(const sts_dataset *ds, size_t i, const args *a, sums *s, int *seen, uint64_t *bytes) {
    static const char *const cols[2] = { "id", "x" };
    sts_scan_spec spec;
    sts_scan *sc;
    const sts_view *c;
    size_t nc;
    sts_error err;
    sts_result r;
    uint64_t k, n;
    memset(&spec, 0, sizeof spec);
    spec.columns = cols;
    spec.ncolumns = 2;
    spec.with_data = 1;
    spec.file_begin = i;
    spec.file_end = i + 1;
    if ((r = sts_scan_open(ds, &spec, &sc, &err)) != STS_OK) {
        fprintf(stderr, "rank %d: %s: %s: %s\n", rank, sts_dataset_file(ds, i), sts_result_name(err.code), err.message);
        return 1;
    }
    while ((r = sts_scan_next(sc, &c, &nc, &err)) == STS_OK && c) {
        if (nc != 2 || !c[0].present || !c[1].present || c[0].dtype != STS_DTYPE_I64 || c[0].rank != 1 ||
            c[1].dtype != STS_DTYPE_F32 || c[1].rank != 2 || c[1].shape[0] != c[0].shape[0] ||
            c[1].shape[1] != a->dim) {
            const char *name = sts_dataset_file(ds, i);  /* never NULL here; gcc 12 -O2 cannot tell */
            fprintf(stderr, "rank %d: %s: not the tensors id I64 [n] and x F32 [n, %llu]\n", rank,
                    name ? name : "?", (unsigned long long)a->dim);
            sts_scan_close(sc);
            return 1;
        }
        n = c[0].shape[0];
        for (k = 0; k < n; k++) {
            const uint8_t *p = (const uint8_t *)c[0].data + 8 * k;
            uint64_t g = 0;
            int b;
            for (b = 7; b >= 0; b--) g = g << 8 | p[b];  /* little-endian I64 */
            if (g >= a->rows) { s->bad++; continue; }
            seen[g]++;
            sums_add(s, sample_hash(g, (const uint8_t *)c[1].data + k * a->dim * 4, a->dim * 4));
        }
        *bytes += c[0].nbytes + c[1].nbytes;
    }
    sts_scan_close(sc);
    if (r != STS_OK) {
        fprintf(stderr, "rank %d: %s: %s: %s\n", rank, sts_dataset_file(ds, i), sts_result_name(err.code), err.message);
        return 1;
    }
    return 0;
}
static void expected_sums(const args *a, sums *e) {
    float *x = (float *)malloc((size_t)a->dim * sizeof(float) + 1);
    uint64_t g;
    memset(e, 0, sizeof *e);
    if (!x) MPI_Abort(MPI_COMM_WORLD, 1);
    for (g = 0; g < a->rows; g++) {
        gen_row(g, a->dim, x);
        sums_add(e, sample_hash(g, (const uint8_t *)x, a->dim * 4));  /* x86/ARM: the bytes as stored */
    }
    free(x);
}
/* 0 when every sample was read exactly once and holds what the generator gives; the same on every rank. */
static int do_read(const args *a, uint64_t *bytes_read) {
    sts_dataset *ds = NULL;
    sts_error err;
    sums mine, all;
    uint32_t *owner = NULL;
    int *seen = (int *)calloc((size_t)a->rows + 1, sizeof(int));
    int fail = 0, any, verdict = 0;
    size_t i, nfiles = 0;
    uint64_t mine_share[2] = { 0, 0 }, *shares = NULL, bytes = 0;
    /* the schema every shard must have: id I64 [n], x F32 [n, D] */
    uint64_t id_shape[1] = { STS_DIM_ANY }, x_shape[2];
    sts_schema_column want[2];
    sts_read_config rc;
    x_shape[0] = STS_DIM_ANY;
    x_shape[1] = a->dim;
    memset(want, 0, sizeof want);
    want[0].name = "id"; want[0].name_len = 2; want[0].has_dtype = 1; want[0].dtype = STS_DTYPE_I64;
    want[0].has_shape = 1; want[0].rank = 1; want[0].shape = id_shape;
    want[1].name = "x"; want[1].name_len = 1; want[1].has_dtype = 1; want[1].dtype = STS_DTYPE_F32;
    want[1].has_shape = 1; want[1].rank = 2; want[1].shape = x_shape;
    memset(&rc, 0, sizeof rc);
    rc.schema = want;
    rc.nschema = 2;
    memset(&mine, 0, sizeof mine);
    if (!seen) {
        fprintf(stderr, "rank %d: out of memory (a count for each of %llu rows)\n", rank, (unsigned long long)a->rows);
        fail = 1;
    }
    else if (sts_dataset_open(a->dir, &rc, NULL, &ds, &err) != STS_OK) {
        fprintf(stderr, "rank %d: sts_dataset_open %s: %s: %s\n", rank, a->dir, sts_result_name(err.code), err.message);
        fail = 1;
    } else {
        nfiles = sts_dataset_describe(ds).files;
        if (!(owner = (uint32_t *)malloc((nfiles + 1) * sizeof *owner))) fail = 1;
        else if (sts_dataset_assign(ds, (uint32_t)size, STS_ASSIGN_BALANCE, owner, &err) != STS_OK) {
            fprintf(stderr, "rank %d: sts_dataset_assign: %s: %s\n", rank, sts_result_name(err.code), err.message);
            fail = 1;
        }
    }
    for (i = 0; !fail && i < nfiles; i++) {
        int take = owner[i] == (uint32_t)rank && (long)i != a->skip_shard;
        if ((long)i == a->extra_shard && (owner[i] + 1) % (uint32_t)size == (uint32_t)rank) take = 1;
        if (!take) continue;
        fail = read_file(ds, i, a, &mine, seen, &bytes);
        mine_share[0]++;
        mine_share[1] += sts_dataset_file_samples(ds, i);
    }
    MPI_Allreduce(&fail, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (!any) {
        MPI_Allreduce(&mine, &all, 4, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
        MPI_Reduce(rank == 0 ? MPI_IN_PLACE : seen, seen, (int)a->rows, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
        if (rank == 0 && !(shares = (uint64_t *)malloc(2 * (size_t)size * sizeof *shares)))
            MPI_Abort(MPI_COMM_WORLD, 1);
        MPI_Gather(mine_share, 2, MPI_UINT64_T, shares, 2, MPI_UINT64_T, 0, MPI_COMM_WORLD);
        MPI_Allreduce(MPI_IN_PLACE, &bytes, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
        *bytes_read = bytes;
    }
    read_done = MPI_Wtime();
    if (rank == 0 && !any) {
        sums want;
        uint64_t g, missing = 0, dup = 0, first_missing = 0, first_dup = 0;
        int r;
        for (r = 0; r < size; r++)
            printf("rank %d read %llu shard%s, %llu samples (balance)\n", r, (unsigned long long)shares[2 * r],
                   shares[2 * r] == 1 ? "" : "s", (unsigned long long)shares[2 * r + 1]);
        for (g = 0; g < a->rows; g++) {
            if (seen[g] == 0 && !missing++) first_missing = g;
            if (seen[g] > 1 && !dup++) first_dup = g;
        }
        expected_sums(a, &want);
        printf("read: %llu samples in %zu shards over %d ranks; expected %llu; checksums %s\n",
               (unsigned long long)all.count, nfiles, size, (unsigned long long)want.count,
               all.sum == want.sum && all.sumsq == want.sumsq ? "match" : "differ");
        if (missing) printf("read: %llu samples never read (the first: row %llu)\n", (unsigned long long)missing,
                            (unsigned long long)first_missing);
        if (dup) printf("read: %llu samples read more than once (the first: row %llu)\n", (unsigned long long)dup,
                        (unsigned long long)first_dup);
        if (all.bad) printf("read: %llu samples with an id out of range\n", (unsigned long long)all.bad);
        verdict = all.count == want.count && all.sum == want.sum && all.sumsq == want.sumsq && !missing && !dup &&
                  !all.bad;
        printf("read: %s\n", verdict ? "PASS: every sample read exactly once, every checksum as generated"
                                     : "FAIL: the ranks did not read every sample exactly once as generated");
        verdict = !verdict;
    }
    if (any) verdict = 1;
    else MPI_Bcast(&verdict, 1, MPI_INT, 0, MPI_COMM_WORLD);
    free(shares);
    free(owner);
    free(seen);
    sts_dataset_close(ds);
    return verdict;
}

/* ---- bench baseline: the same bytes through write() and read() in one process ---- */
static int baseline(const args *a, double times[3]) {
    char path[4096];
    size_t chunk = 1u << 20, at = 0, rowb = (size_t)(8 + 4 * a->dim), got;
    uint8_t *buf = (uint8_t *)malloc(chunk + rowb);
    float *x = (float *)malloc((size_t)a->dim * sizeof(float) + 1);
    uint64_t g, total = a->rows * rowb;
    sums s, m;
    double t0, tw, tr, tm;
    void *map;
    int fd;
    ssize_t n;
    memset(&s, 0, sizeof s);
    memset(&m, 0, sizeof m);
    snprintf(path, sizeof path, "%s/baseline.bin", a->dir);
    if (!buf || !x || (fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644)) < 0) { perror(path); return 1; }
    t0 = now();
    for (g = 0; g < a->rows; g++) {  /* rows generated as the writers generate them, written in 1 MiB calls */
        int64_t id = (int64_t)g;
        gen_row(g, a->dim, x);
        memcpy(buf + at, &id, 8);
        memcpy(buf + at + 8, x, (size_t)a->dim * 4);
        at += rowb;
        if (at >= chunk || g + 1 == a->rows) {
            if (write(fd, buf, at) != (ssize_t)at) { perror(path); close(fd); return 1; }
            at = 0;
        }
    }
    if (!a->no_fsync && fsync(fd) != 0) { perror(path); close(fd); return 1; }
    close(fd);
    tw = now() - t0;
    if ((fd = open(path, O_RDONLY)) < 0) { perror(path); return 1; }
    t0 = now();
    at = 0;
    got = 0;
    while ((n = read(fd, buf + at, chunk - at)) > 0) {  /* whole rows hashed as the readers hash them */
        size_t have = at + (size_t)n, k = 0;
        for (; k + rowb <= have; k += rowb) {
            uint64_t id;
            memcpy(&id, buf + k, 8);
            sums_add(&s, sample_hash(id, buf + k + 8, a->dim * 4));
        }
        memmove(buf, buf + k, have - k);
        at = have - k;
        got += (size_t)n;
    }
    tr = now() - t0;
    t0 = now();  /* and mapped, as the dataset reader maps its shards: a page fault every 4 KiB */
    if ((map = mmap(NULL, (size_t)total, PROT_READ, MAP_PRIVATE, fd, 0)) == MAP_FAILED) { perror(path); return 1; }
    for (g = 0; g < a->rows; g++) {
        uint64_t id;
        memcpy(&id, (const uint8_t *)map + g * rowb, 8);
        sums_add(&m, sample_hash(id, (const uint8_t *)map + g * rowb + 8, a->dim * 4));
    }
    munmap(map, (size_t)total);
    tm = now() - t0;
    close(fd);
    unlink(path);
    times[0] = tw;
    times[1] = tr;
    times[2] = tm;
    free(buf);
    free(x);
    return got == total && s.count == a->rows && m.sum == s.sum ? 0 : 1;
}

/* ---- bench ---- */
static int cmp_double(const void *x, const void *y) {
    double a = *(const double *)x, b = *(const double *)y;
    return a < b ? -1 : a > b;
}
/* "median M MB/s (best B)" of n times for `bytes` bytes; t is sorted. */
static void rate(const char *what, double *t, int n, uint64_t bytes) {
    qsort(t, (size_t)n, sizeof *t, cmp_double);
    printf("%s %.0f MB/s (best %.0f)", what, (double)bytes / 1e6 / t[n / 2], (double)bytes / 1e6 / t[0]);
}
/* Removes the files of folder p, then p (a dataset of this bench). */
static void remove_dataset(const char *p) {
    DIR *d = opendir(p);
    struct dirent *e;
    char f[4096];
    if (!d) return;
    while ((e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        if ((size_t)snprintf(f, sizeof f, "%s/%s", p, e->d_name) < sizeof f) unlink(f);
    }
    closedir(d);
    rmdir(p);
}
/* --repeat R times: a write into DIR/run-r (committed), its read and check, the dataset removed.
   Rank 0 prints the median and best rate of each phase (of the row bytes: N * (8 + 4D)). */
static int bench(args *a) {
    const char *root = a->dir;
    char dir[4096];
    double *tw = (double *)calloc((size_t)a->repeat, sizeof(double)), *tr = (double *)calloc((size_t)a->repeat,
                                                                                              sizeof(double));
    double bt[3][100];
    uint64_t rowbytes = a->rows * (8 + 4 * a->dim), bytes = 0;
    sts_dataset_summary sum;
    int rc = 0, r;
    if (!tw || !tr) MPI_Abort(MPI_COMM_WORLD, 1);
    memset(&sum, 0, sizeof sum);
    if (a->baseline && rank == 0)
        for (r = 0; r < (int)a->repeat && !rc; r++) {
            double t[3] = { 1, 1, 1 };
            rc = baseline(a, t);
            bt[0][r] = t[0]; bt[1][r] = t[1]; bt[2][r] = t[2];
        }
    MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
    for (r = 0; r < (int)a->repeat && !rc; r++) {
        double t0;
        snprintf(dir, sizeof dir, "%s/run-%d", root, r);
        a->dir = dir;
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = MPI_Wtime();
        rc = do_write(a, &sum);
        MPI_Barrier(MPI_COMM_WORLD);
        tw[r] = MPI_Wtime() - t0;
        if (rc) break;
        t0 = MPI_Wtime();
        rc = do_read(a, &bytes);
        tr[r] = read_done - t0;  /* rank 0: until the reductions are in (the expected sums come after) */
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 0) remove_dataset(dir);
    }
    a->dir = root;
    if (rank == 0 && !rc) {
        if (a->baseline) {
            printf("baseline: 1 process, no MPI, one file, %.1f MB: ", (double)rowbytes / 1e6);
            rate(a->no_fsync ? "write()" : "write() + fsync", bt[0], (int)a->repeat, rowbytes);
            rate("; read() + hash", bt[1], (int)a->repeat, rowbytes);
            rate("; mmap + hash", bt[2], (int)a->repeat, rowbytes);
            printf("; %llu run%s\n", (unsigned long long)a->repeat, a->repeat == 1 ? "" : "s");
        }
        printf("bench: %d rank%s, %llu rows of %llu B (%.1f MB, %llu shards%s): ", size, size == 1 ? "" : "s",
               (unsigned long long)a->rows, (unsigned long long)(8 + 4 * a->dim), (double)rowbytes / 1e6,
               (unsigned long long)sum.shards, a->no_fsync ? ", no fsync" : ", fsync'd");
        rate("write", tw, (int)a->repeat, rowbytes);
        rate("; read + check", tr, (int)a->repeat, rowbytes);
        printf("; %llu run%s\n", (unsigned long long)a->repeat, a->repeat == 1 ? "" : "s");
    }
    free(tw);
    free(tr);
    return rc;
}

/* ---- arguments ---- */
static int usage(void) {
    if (rank == 0)
        fprintf(stderr, "usage: sts_mpi write DIR [--rows N] [--dim D] [--batch B] [--no-fsync]\n"
                        "                         [--fail-after K --fail-rank R] [--fail-write R]\n"
                        "       sts_mpi read DIR [--rows N] [--dim D] [--skip-shard I] [--extra-shard I]\n"
                        "       sts_mpi bench DIR [--rows N] [--dim D] [--batch B] [--no-fsync] [--baseline]\n"
                        "                         [--repeat R]\n");
    return 2;
}
static int num(const char *s, uint64_t lo, uint64_t hi, uint64_t *out) {
    char *end;
    unsigned long long v;
    if (!s || *s < '0' || *s > '9') return 0;
    errno = 0;
    v = strtoull(s, &end, 10);
    if (errno || *end || v < lo || v > hi) return 0;
    *out = v;
    return 1;
}
static int parse(int argc, char **argv, args *a) {
    int i;
    memset(a, 0, sizeof *a);
    a->rows = 10000; a->dim = 64; a->batch = 500; a->repeat = 1;
    a->fail_after = a->fail_rank = a->fail_write = a->skip_shard = a->extra_shard = -1;
    if (argc < 3) return 0;
    a->mode = argv[1];
    a->dir = argv[2];
    if (strcmp(a->mode, "write") && strcmp(a->mode, "read") && strcmp(a->mode, "bench")) return 0;
    for (i = 3; i < argc; i++) {
        const char *o = argv[i];
        uint64_t v;
        long *l = !strcmp(o, "--fail-after") ? &a->fail_after : !strcmp(o, "--fail-rank") ? &a->fail_rank :
                  !strcmp(o, "--fail-write") ? &a->fail_write : !strcmp(o, "--skip-shard") ? &a->skip_shard :
                  !strcmp(o, "--extra-shard") ? &a->extra_shard : NULL;
        if (!strcmp(o, "--no-fsync")) { a->no_fsync = 1; continue; }
        if (!strcmp(o, "--baseline")) { a->baseline = 1; continue; }
        if (i + 1 >= argc) return 0;
        if (l) {
            if (!num(argv[++i], 0, 0x7fffffff, &v)) return 0;
            *l = (long)v;
        } else if (!strcmp(o, "--rows")) { if (!num(argv[++i], 1, 0x7fffffff, &a->rows)) return 0; }
        else if (!strcmp(o, "--dim")) { if (!num(argv[++i], 1, 1u << 24, &a->dim)) return 0; }
        else if (!strcmp(o, "--batch")) { if (!num(argv[++i], 1, 1u << 30, &a->batch)) return 0; }
        else if (!strcmp(o, "--repeat")) { if (!num(argv[++i], 1, 100, &a->repeat)) return 0; }
        else return 0;
    }
    if ((a->fail_after >= 0) != (a->fail_rank >= 0)) return 0;  /* --fail-after and --fail-rank go together */
    return 1;
}

int main(int argc, char **argv) {
    args a;
    int rc = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (!parse(argc, argv, &a)) { MPI_Finalize(); return usage(); }
    if (!is_little_endian()) {  /* the checksums hash x's bytes as stored (little-endian) */
        if (rank == 0) fprintf(stderr, "sts_mpi: this example reads samples as little-endian bytes\n");
        MPI_Finalize();
        return 2;
    }
    if (!strcmp(a.mode, "write")) {
        sts_dataset_summary sum;
        rc = do_write(&a, &sum);
        if (rc == 2) printf("rank %d: sts_dataset_prepare failed at rank 0: no task ran\n", rank);
        else if (rc) printf("rank %d: the job was aborted (a task failed): nothing published\n", rank);
        else printf("rank %d: the dataset was committed: %llu shards, %llu samples, %llu bytes\n", rank,
                    (unsigned long long)sum.shards, (unsigned long long)sum.samples, (unsigned long long)sum.bytes);
    } else if (!strcmp(a.mode, "read")) {
        uint64_t bytes = 0;
        rc = do_read(&a, &bytes);
        if (rc) printf("rank %d: the read check failed\n", rank);
    } else rc = bench(&a);
    MPI_Finalize();
    return rc ? 1 : 0;
}
