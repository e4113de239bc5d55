/* bench_archive.c - the archive (layer 10) against the direct calls it stands on, in the same run
   (issue 12). Three parts, each figure beside its baseline, medians of several repetitions:

   open   One safetensors file of ~10k and of ~100k tensors (the mixture-of-experts tensor list of
          bench_parse.c, small shapes: the header is what costs), in the page cache. Per repetition,
          in alternating order:
            archive open      sts_archive_open(registry, path)            vs  sts_open(path)
            first at          the first sts_archive_at after that open (the descriptors of a single
                              file are built lazily, on first use)
            open + list all   sts_archive_open + sts_archive_at of every tensor, reading its offset,
                              size, name and shape  vs  sts_open + sts_at of every tensor, reading the
                              same facts (sts_tensor_file_offset, end - begin, name, shape)
          Close is outside the timings. The registry (the built-ins) is made once, outside them.
          Goal: archive open <= 1.05x sts_open.
   shards A Hugging Face sharded checkpoint: model.safetensors.index.json (sorted keys, indent 2, as
          transformers writes it) + 100 shards of 100 tensors written with sts_write_path. Per
          repetition: the index file read whole with open/fstat/read/close (the baseline), then
          sts_archive_open of the folder, one sts_archive_find (a tensor of the middle shard), and
          sts_archive_at of every tensor; the counters of sts_archive_get_stats after each step
          (files_opened must be 1, 2, 1 + shards). Beside the first find: sts_open of that one shard
          + sts_find; beside touching all: sts_open of every shard + sts_at of every tensor.
          Both parts run twice: with malloc as it comes, then (glibc) with a heap that keeps what is
          freed (mallopt: mmap threshold 32 MiB, no trimming), so that after the warm-up nothing
          page-faults: a long-running process's heap, or what a machine with cheap page faults
          shows. Minor page faults (getrusage) are printed beside the open times. Every part (and
          each of the two heaps) runs in a child process of its own, so none inherits another's
          heap (glibc's mmap threshold moves with what was freed before).
   materialize
          One BF16 and one F16 tensor of 256 MiB (one file each, written with sts_write_path, in the
          page cache), opened through the archive once (mapped; the first round faults the mapping in
          and is not counted). Per round, each case right after its baseline:
            BF16 -> F32, F16 -> F32   sts_archive_materialize(convert = 1, target F32)
                                      vs memcpy of the same number of output bytes (512 MiB:
                                         the mapped tensor twice, into the two halves)
                                      vs sts_convert of the mapped bytes (sts_archive_view)
            copy (BF16, no convert)   sts_archive_materialize(STS_ZERO_COPY_NEVER)
                                      vs memcpy of the same mapped bytes
          twice: with a malloc factory (fresh memory each time: malloc inside the timing for every
          side, page faults included, free outside) and with a factory that hands back one buffer
          touched before (the pass itself, without page faults). The first output is checked
          against sts_convert's. Goal: materialize >= 0.8x memcpy.

   usage: bench_archive [--part open,shards,materialize] [--quick] [--reps N] [--shards N]
                        [--per-shard N] [--mib N] [--rounds N] [--fresh-rounds N] [--dir PATH] [--keep]
     --part       the parts to run, comma-separated (default all three)
     --quick      small sizes (1k / 10k tensors, 20 shards, 32 MiB): a smoke test
     --reps N     repetitions of the open and shards parts (default: 10k 101, 100k 21, shards 21)
     --shards N, --per-shard N   the sharded checkpoint (default 100 x 100)
     --mib N      the materialize source size (default 256), --rounds N (default 7, warm factory),
                  --fresh-rounds N (default 3, malloc factory; 0 leaves that table out)
     --keep       leave the scratch folder and its files (to profile on them)
     --dir PATH   where the scratch folder goes (default $BENCH_DIR, else $TMPDIR, else /tmp)
   The scratch folder is removed at the end, on a failed check, and on Ctrl-C (at the next step).
   The default run takes about 1.5 minutes on the 2-vCPU VM (most of it the malloc factory's page
   faults) and needs about 600 MiB of disk and 2.5 GiB of memory. */
#define _POSIX_C_SOURCE 200809L
#define STS_IMPLEMENTATION
#include "../safetensors_spark.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <limits.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#if defined(__GLIBC__)
#include <malloc.h>   /* mallopt: the heap-kept pass */
#endif

#include "bench_util.h"
#include "../tests/fs_util.h"   /* tf_rmtree */

/* ---- the scratch folder, failures, Ctrl-C ------------------------------------------------------- */
static char root[3072];
static volatile sig_atomic_t stop_sig;
static int keep;                  /* --keep: leave the files (profiling) */
static int in_child;              /* a part run in a child process: the parent owns the folder */
static const char *regime = "malloc as is";   /* which heap the open and shards parts ran with */
static const char *tag = "";      /* file-name suffix of the pass */

static void cleanup(void) {
    if (root[0] && !keep && !in_child) tf_rmtree(root);
    root[0] = 0;
}
static void remove_file(const char *path) { if (!keep) unlink(path); }
static void on_signal(int sig) { stop_sig = sig; }
static void check_stop(void) {
    if (stop_sig) {
        if (!in_child) fprintf(stderr, "bench_archive: stopped by signal %d; removing %s\n", (int)stop_sig, root);
        cleanup();
        fflush(stdout);
        signal((int)stop_sig, SIG_DFL);
        raise((int)stop_sig);
        exit(1);
    }
}
static void die(const char *what, const sts_error *err) {
    fprintf(stderr, "bench_archive: %s%s%s\n", what, err ? ": " : "", err ? err->message : "");
    cleanup();
    exit(1);
}
static void *xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) die("out of memory", NULL);
    return p;
}

/* minor page faults of this process so far (this VM: ~10 us each for fresh memory) */
static long minflt(void) {
    struct rusage ru;
    return getrusage(RUSAGE_SELF, &ru) == 0 ? ru.ru_minflt : 0;
}

/* ---- statistics: medians of samples, paired ratios --------------------------------------------- */
typedef struct series { double *v; size_t n, cap; } series;
static void put(series *s, double x) {
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 64;
        s->v = (double *)realloc(s->v, s->cap * sizeof *s->v);
        if (!s->v) die("out of memory", NULL);
    }
    s->v[s->n++] = x;
}
static bench_stats stats(const series *s) { return bench_summarize(s->v, s->n); }
static double med(const series *s) { return stats(s).median; }
static void drop(series *s) { free(s->v); memset(s, 0, sizeof *s); }

/* ---- safetensors files written with the library ------------------------------------------------- */
typedef struct tlist {            /* tensor specs with their names and shapes */
    sts_tensor_spec *spec;
    uint64_t (*shape)[2];
    char *names;                  /* every name, NUL-terminated, back to back */
    size_t n, names_len, names_cap;
} tlist;
static void tl_add(tlist *t, size_t cap_hint, const char *name, sts_dtype dt, uint64_t r, uint64_t c,
                   const void *zeros) {
    size_t len = strlen(name);
    if (!t->spec) {
        t->spec = (sts_tensor_spec *)xmalloc(cap_hint * sizeof *t->spec);
        t->shape = (uint64_t (*)[2])xmalloc(cap_hint * sizeof *t->shape);
        t->names_cap = cap_hint * 64;
        t->names = (char *)xmalloc(t->names_cap);
    }
    if (t->n >= cap_hint) die("tensor list overflow", NULL);
    if (t->names_len + len + 1 > t->names_cap) die("name buffer overflow", NULL);
    memcpy(t->names + t->names_len, name, len + 1);
    memset(&t->spec[t->n], 0, sizeof t->spec[t->n]);
    t->spec[t->n].name = (const char *)(uintptr_t)t->names_len;  /* an offset until tl_fix */
    t->spec[t->n].name_len = len;
    t->spec[t->n].dtype = dt;
    t->shape[t->n][0] = r;
    t->shape[t->n][1] = c;
    t->spec[t->n].rank = c ? 2 : 1;
    t->spec[t->n].data = zeros;
    t->spec[t->n].data_size = r * (c ? c : 1) * (sts_dtype_bits(dt) / 8);
    t->names_len += len + 1;
    t->n++;
}
static void tl_fix(tlist *t) {    /* offsets to pointers, once the buffers stop moving */
    size_t i;
    for (i = 0; i < t->n; i++) {
        t->spec[i].name = t->names + (size_t)(uintptr_t)t->spec[i].name;
        t->spec[i].shape = t->shape[i];
    }
}
static void tl_free(tlist *t) {
    free(t->spec); free(t->shape); free(t->names);
    memset(t, 0, sizeof *t);
}
static void write_file(const char *path, const tlist *t) {
    sts_options o;
    sts_error err;
    memset(&o, 0, sizeof o);
    o.no_fsync = 1;  /* scratch files: the page cache is where they are read from */
    if (sts_write_path(path, t->spec, t->n, NULL, 0, &o, &err) != STS_OK) die("sts_write_path", &err);
}
static long long file_size(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 ? (long long)st.st_size : -1;
}

/* ---- part 1: open through the archive vs sts_open ----------------------------------------------- */
typedef struct open_case { const char *label; unsigned layers, experts; int reps; } open_case;

/* The tensor list of a mixture-of-experts transformer (as bench_parse.c): per layer 9 tensors and
   3 per expert, plus embeddings, the final norm and the head; small shapes. */
static void moe_tensors(tlist *t, unsigned layers, unsigned experts, const void *zeros) {
    static const char *const attn[] = { "q_proj", "k_proj", "v_proj", "o_proj" };
    static const char *const proj[] = { "gate_proj", "up_proj", "down_proj" };
    size_t cap = (size_t)layers * (9 + 3 * (size_t)experts) + 3;
    char name[160];
    unsigned l, e, k;
    snprintf(name, sizeof name, "model.embed_tokens.weight");
    tl_add(t, cap, name, STS_DTYPE_BF16, 64, 16, zeros);
    for (l = 0; l < layers; l++) {
        snprintf(name, sizeof name, "model.layers.%u.input_layernorm.weight", l);
        tl_add(t, cap, name, STS_DTYPE_F32, 16, 0, zeros);
        snprintf(name, sizeof name, "model.layers.%u.post_attention_layernorm.weight", l);
        tl_add(t, cap, name, STS_DTYPE_F32, 16, 0, zeros);
        for (k = 0; k < 4; k++) {
            snprintf(name, sizeof name, "model.layers.%u.self_attn.%s.weight", l, attn[k]);
            tl_add(t, cap, name, STS_DTYPE_BF16, 16, 16, zeros);
        }
        snprintf(name, sizeof name, "model.layers.%u.self_attn.q_norm.weight", l);
        tl_add(t, cap, name, STS_DTYPE_F32, 8, 0, zeros);
        snprintf(name, sizeof name, "model.layers.%u.self_attn.k_norm.weight", l);
        tl_add(t, cap, name, STS_DTYPE_F32, 8, 0, zeros);
        snprintf(name, sizeof name, "model.layers.%u.mlp.gate.weight", l);
        tl_add(t, cap, name, STS_DTYPE_BF16, experts, 16, zeros);
        for (e = 0; e < experts; e++)
            for (k = 0; k < 3; k++) {
                snprintf(name, sizeof name, "model.layers.%u.mlp.experts.%u.%s.weight", l, e, proj[k]);
                tl_add(t, cap, name, STS_DTYPE_BF16, k == 2 ? 16 : 8, k == 2 ? 8 : 16, zeros);
            }
    }
    snprintf(name, sizeof name, "model.norm.weight");
    tl_add(t, cap, name, STS_DTYPE_F32, 16, 0, zeros);
    snprintf(name, sizeof name, "lm_head.weight");
    tl_add(t, cap, name, STS_DTYPE_BF16, 64, 16, zeros);
    tl_fix(t);
}

static void archive_open(const sts_registry *reg, const char *path, sts_archive **a) {
    sts_input in;
    sts_error err;
    memset(&in, 0, sizeof in);
    in.path = path;
    if (sts_archive_open(reg, &in, NULL, a, &err) != STS_OK) die("sts_archive_open", &err);
}

static void run_open(const sts_registry *reg, const open_case *c, int reps_override) {
    static uint8_t zeros[64 * 64 * 4];
    tlist t;
    char path[4096];
    int reps = reps_override > 0 ? reps_override : c->reps, warm = 3, r;
    size_t n, i;
    series ar, di, first, arl, dil, pr_open, pr_list, f_ar, f_di, f_first;
    sts_error err;
    memset(&t, 0, sizeof t);
    memset(&ar, 0, sizeof ar); memset(&di, 0, sizeof di); memset(&first, 0, sizeof first);
    memset(&arl, 0, sizeof arl); memset(&dil, 0, sizeof dil);
    memset(&pr_open, 0, sizeof pr_open); memset(&pr_list, 0, sizeof pr_list);
    memset(&f_ar, 0, sizeof f_ar); memset(&f_di, 0, sizeof f_di); memset(&f_first, 0, sizeof f_first);
    moe_tensors(&t, c->layers, c->experts, zeros);
    n = t.n;
    tf_join(path, sizeof path, root, c->label);
    strncat(path, tag, sizeof path - strlen(path) - 1);
    strncat(path, ".safetensors", sizeof path - strlen(path) - 1);
    write_file(path, &t);
    tl_free(&t);
    {   /* the two readers agree before anything is timed */
        sts_archive *a;
        sts_file *f;
        const sts_tensor_desc *d;
        archive_open(reg, path, &a);
        if (sts_open(path, NULL, &f, &err) != STS_OK) die("sts_open", &err);
        if (sts_archive_count(a) != n || sts_count(f) != n || strcmp(sts_archive_format(a), "safetensors") != 0)
            die("open: the archive and sts_open disagree on the count or the format", NULL);
        for (i = 0; i < n; i++) {
            const sts_tensor *x = sts_at(f, i);
            if (sts_archive_at(a, i, &d, &err) != STS_OK) die("sts_archive_at", &err);
            if (d->offset != sts_tensor_file_offset(f, x) || d->nbytes != x->end - x->begin ||
                d->name_len != x->name_len || memcmp(d->name, x->name, x->name_len) != 0)
                die("open: a descriptor differs from sts_at's tensor", NULL);
        }
        sts_archive_close(a);
        sts_close(f);
    }
    printf("\n## open: %s tensors [%s], %s (%lld bytes), %d repetitions after %d warm-up\n", c->label, regime,
           path, file_size(path), reps, warm);
    for (r = -warm; r < reps; r++) {
        double t_ar = 0, t_di = 0, t_first = 0, t_arl = 0, t_dil = 0;
        long fa = 0, fd = 0, ff = 0;
        int k;
        check_stop();
        for (k = 0; k < 2; k++) {
            if ((k == 0) == (r % 2 == 0)) {  /* the archive first on even repetitions */
                sts_archive *a;
                const sts_tensor_desc *d;
                long f0 = minflt(), f1;
                double t0 = tu_now(), t1, t2;
                archive_open(reg, path, &a);
                t1 = tu_now();
                f1 = minflt();
                if (sts_archive_at(a, 0, &d, &err) != STS_OK) die("sts_archive_at", &err);
                t2 = tu_now();
                fa = f1 - f0;
                ff = minflt() - f1;
                bench_sink += d->offset;
                sts_archive_close(a);
                t_ar = t1 - t0;
                t_first = t2 - t1;
                t0 = tu_now();
                archive_open(reg, path, &a);
                for (i = 0; i < n; i++) {
                    if (sts_archive_at(a, i, &d, &err) != STS_OK) die("sts_archive_at", &err);
                    bench_sink += d->offset + d->nbytes + d->name_len + (uint8_t)d->name[0] + d->shape[0];
                }
                t_arl = tu_now() - t0;
                sts_archive_close(a);
            } else {
                sts_file *f;
                long f0 = minflt();
                double t0 = tu_now();
                if (sts_open(path, NULL, &f, &err) != STS_OK) die("sts_open", &err);
                t_di = tu_now() - t0;
                fd = minflt() - f0;
                sts_close(f);
                t0 = tu_now();
                if (sts_open(path, NULL, &f, &err) != STS_OK) die("sts_open", &err);
                for (i = 0; i < n; i++) {
                    const sts_tensor *x = sts_at(f, i);
                    bench_sink += sts_tensor_file_offset(f, x) + (x->end - x->begin) + x->name_len +
                                  (uint8_t)x->name[0] + x->shape[0];
                }
                t_dil = tu_now() - t0;
                sts_close(f);
            }
        }
        if (r < 0) continue;
        put(&ar, t_ar); put(&di, t_di); put(&first, t_first); put(&arl, t_arl); put(&dil, t_dil);
        put(&pr_open, t_ar / t_di);
        put(&f_ar, (double)fa); put(&f_di, (double)fd); put(&f_first, (double)ff);
        put(&pr_list, t_arl / t_dil);
    }
    {
        bench_stats sa = stats(&ar), sd = stats(&di), sf = stats(&first), sal = stats(&arl), sdl = stats(&dil);
        bench_stats po = stats(&pr_open), pl = stats(&pr_list);
        printf("| %s tensors | archive median (best) | direct median (best) | archive / direct, paired median |\n"
               "|---|---:|---:|---:|\n", c->label);
        printf("| open | %.1f us (%.1f), %.0f page faults | sts_open %.1f us (%.1f), %.0f page faults | **%.3fx** (ratio of medians %.3fx) |\n",
               sa.median * 1e6, sa.min * 1e6, med(&f_ar), sd.median * 1e6, sd.min * 1e6, med(&f_di), po.median,
               sa.median / sd.median);
        printf("| first sts_archive_at (builds %zu descriptors) | %.1f us (%.1f), %.0f page faults | - | open + first at = %.3fx sts_open |\n",
               n, sf.median * 1e6, sf.min * 1e6, med(&f_first), (sa.median + sf.median) / sd.median);
        printf("| open + every descriptor | %.1f us (%.1f) | sts_open + sts_at x %zu: %.1f us (%.1f) | **%.3fx** (%.3fx) |\n",
               sal.median * 1e6, sal.min * 1e6, n, sdl.median * 1e6, sdl.min * 1e6, pl.median, sal.median / sdl.median);
        printf("goal archive open <= 1.05x sts_open: %s (paired median %.3fx)\n", po.median <= 1.05 ? "met" : "MISSED",
               po.median);
    }
    drop(&ar); drop(&di); drop(&first); drop(&arl); drop(&dil); drop(&pr_open); drop(&pr_list);
    drop(&f_ar); drop(&f_di); drop(&f_first);
    remove_file(path);
}

/* ---- part 2: a sharded checkpoint --------------------------------------------------------------- */
typedef struct wm_ent { const char *name; unsigned shard; } wm_ent;
static int wm_cmp(const void *x, const void *y) {
    return strcmp(((const wm_ent *)x)->name, ((const wm_ent *)y)->name);
}
static void shard_name(char *buf, size_t cap, unsigned s, unsigned nsh) {
    snprintf(buf, cap, "model-%05u-of-%05u.safetensors", s + 1, nsh);
}

static void run_shards(const sts_registry *reg, unsigned nsh, unsigned per, int reps) {
    static uint8_t zeros[16 * 16 * 2];
    static const char *const proj[] = { "gate_proj", "up_proj", "down_proj" };
    char dir[4096], path[4096], ipath[4096], name[160], mid_name[160];
    tlist t;
    wm_ent *wm = (wm_ent *)xmalloc((size_t)nsh * per * sizeof *wm);
    char *allnames = (char *)xmalloc((size_t)nsh * per * 80);
    size_t an = 0, total = (size_t)nsh * per, i;
    uint64_t total_bytes = 0;
    unsigned s, k;
    int r, warm = 2;
    series t_idx, t_open, t_find, t_all, t_one, t_every, pr_open, pr_find, pr_all;
    series f_idx, f_open, f_find, f_all, f_one, f_every;
    sts_archive_stats st_open, st_find, st_all;
    sts_error err;
    FILE *fp;
    memset(&t_idx, 0, sizeof t_idx); memset(&t_open, 0, sizeof t_open); memset(&t_find, 0, sizeof t_find);
    memset(&t_all, 0, sizeof t_all); memset(&t_one, 0, sizeof t_one); memset(&t_every, 0, sizeof t_every);
    memset(&pr_open, 0, sizeof pr_open); memset(&pr_find, 0, sizeof pr_find); memset(&pr_all, 0, sizeof pr_all);
    memset(&f_idx, 0, sizeof f_idx); memset(&f_open, 0, sizeof f_open); memset(&f_find, 0, sizeof f_find);
    memset(&f_all, 0, sizeof f_all); memset(&f_one, 0, sizeof f_one); memset(&f_every, 0, sizeof f_every);
    memset(&st_open, 0, sizeof st_open); st_find = st_all = st_open;
    tf_join(dir, sizeof dir, root, "sharded");
    strncat(dir, tag, sizeof dir - strlen(dir) - 1);
    if (mkdir(dir, 0755) != 0) die("mkdir of the checkpoint folder", NULL);
    for (s = 0; s < nsh; s++) {
        memset(&t, 0, sizeof t);
        for (k = 0; k < per; k++) {
            snprintf(name, sizeof name, "model.layers.%u.mlp.experts.%u.%s.weight", s, k / 3, proj[k % 3]);
            tl_add(&t, per, name, STS_DTYPE_BF16, 16, 16, zeros);
            total_bytes += 16 * 16 * 2;
        }
        tl_fix(&t);
        for (k = 0; k < per; k++) {
            size_t len = t.spec[k].name_len;
            memcpy(allnames + an, t.spec[k].name, len + 1);
            wm[(size_t)s * per + k].name = allnames + an;  /* fixed below: allnames does not move */
            wm[(size_t)s * per + k].shard = s;
            an += len + 1;
        }
        shard_name(name, sizeof name, s, nsh);
        tf_join(path, sizeof path, dir, name);
        write_file(path, &t);
        tl_free(&t);
        check_stop();
    }
    qsort(wm, total, sizeof *wm, wm_cmp);  /* transformers writes json.dumps(index, indent=2, sort_keys=True) */
    tf_join(ipath, sizeof ipath, dir, "model.safetensors.index.json");
    if (!(fp = fopen(ipath, "wb"))) die("cannot create the index", NULL);
    fprintf(fp, "{\n  \"metadata\": {\n    \"total_size\": %llu\n  },\n  \"weight_map\": {\n",
            (unsigned long long)total_bytes);
    for (i = 0; i < total; i++) {
        shard_name(name, sizeof name, wm[i].shard, nsh);
        fprintf(fp, "    \"%s\": \"%s\"%s\n", wm[i].name, name, i + 1 < total ? "," : "");
    }
    fprintf(fp, "  }\n}\n");
    if (fclose(fp) != 0) die("cannot write the index", NULL);
    snprintf(mid_name, sizeof mid_name, "model.layers.%u.mlp.experts.0.gate_proj.weight", nsh / 2);
    printf("\n## shards: %u shards x %u tensors [%s], index %lld bytes (%s), %d repetitions after %d warm-up\n", nsh,
           per, regime, file_size(ipath), ipath, reps, warm);

    for (r = -warm; r < reps; r++) {
        sts_archive *a;
        const sts_tensor_desc *d;
        sts_archive_stats s1, s2, s3;
        double t0, ti, to, tf, ta, t1, te;
        long g0, gi, go, gf, ga, g1, ge;
        check_stop();
        {   /* the baseline: the index file read whole */
            int fd;
            struct stat sb;
            char *buf;
            size_t got = 0;
            g0 = minflt();
            t0 = tu_now();
            if ((fd = open(ipath, O_RDONLY | O_CLOEXEC)) < 0 || fstat(fd, &sb) != 0) die("open the index", NULL);
            buf = (char *)xmalloc((size_t)sb.st_size + 1);
            while (got < (size_t)sb.st_size) {
                ssize_t k2 = read(fd, buf + got, (size_t)sb.st_size - got);
                if (k2 < 0 && errno == EINTR) continue;
                if (k2 <= 0) die("read the index", NULL);
                got += (size_t)k2;
            }
            close(fd);
            buf[got] = 0;
            ti = tu_now() - t0;
            gi = minflt() - g0;
            bench_sink += (uint8_t)buf[got / 2];
            free(buf);
        }
        g0 = minflt();
        t0 = tu_now();
        archive_open(reg, dir, &a);
        to = tu_now() - t0;
        go = minflt() - g0;
        s1 = sts_archive_get_stats(a);
        g0 = minflt();
        t0 = tu_now();
        if (sts_archive_find(a, mid_name, strlen(mid_name), &d, &err) != STS_OK) die("sts_archive_find", &err);
        tf = tu_now() - t0;
        gf = minflt() - g0;
        bench_sink += d->offset;
        s2 = sts_archive_get_stats(a);
        g0 = minflt();
        t0 = tu_now();
        for (i = 0; i < sts_archive_count(a); i++) {
            if (sts_archive_at(a, i, &d, &err) != STS_OK) die("sts_archive_at", &err);
            bench_sink += d->offset + d->nbytes;
        }
        ta = tu_now() - t0;
        ga = minflt() - g0;
        s3 = sts_archive_get_stats(a);
        if (sts_archive_count(a) != total || sts_archive_files(a) != nsh ||
            strcmp(sts_archive_format(a), "safetensors-sharded") != 0 || sts_archive_total_bytes(a) != total_bytes)
            die("shards: the archive's count, files, format or total bytes are not the checkpoint's", NULL);
        sts_archive_close(a);
        {   /* direct: the one shard of the found tensor, then every shard */
            sts_file *f, **all = (sts_file **)xmalloc(nsh * sizeof *all);
            const sts_tensor *x;
            shard_name(name, sizeof name, nsh / 2, nsh);
            tf_join(path, sizeof path, dir, name);
            g0 = minflt();
            t0 = tu_now();
            if (sts_open(path, NULL, &f, &err) != STS_OK) die("sts_open", &err);
            if (!(x = sts_find(f, mid_name, strlen(mid_name)))) die("sts_find", NULL);
            t1 = tu_now() - t0;
            g1 = minflt() - g0;
            bench_sink += sts_tensor_file_offset(f, x);
            sts_close(f);
            g0 = minflt();
            t0 = tu_now();
            for (s = 0; s < nsh; s++) {
                shard_name(name, sizeof name, s, nsh);
                tf_join(path, sizeof path, dir, name);
                if (sts_open(path, NULL, &all[s], &err) != STS_OK) die("sts_open", &err);
                for (i = 0; i < sts_count(all[s]); i++) {
                    x = sts_at(all[s], i);
                    bench_sink += sts_tensor_file_offset(all[s], x) + (x->end - x->begin);
                }
            }
            te = tu_now() - t0;
            ge = minflt() - g0;
            for (s = 0; s < nsh; s++) sts_close(all[s]);
            free(all);
        }
        if (r < 0) continue;
        if (r == 0) { st_open = s1; st_find = s2; st_all = s3; }
        else if (s1.files_opened != st_open.files_opened || s2.files_opened != st_find.files_opened ||
                 s3.files_opened != st_all.files_opened)
            die("shards: the counters changed between repetitions", NULL);
        put(&t_idx, ti); put(&t_open, to); put(&t_find, tf); put(&t_all, ta); put(&t_one, t1); put(&t_every, te);
        put(&pr_open, to / ti); put(&pr_find, tf / t1); put(&pr_all, ta / te);
        put(&f_idx, (double)gi); put(&f_open, (double)go); put(&f_find, (double)gf);
        put(&f_all, (double)ga); put(&f_one, (double)g1); put(&f_every, (double)ge);
    }
    printf("| step | archive median (best) | files_opened / reads / bytes_read after it | baseline median (best) | archive / baseline, paired median | page faults: archive / baseline |\n"
           "|---|---:|---|---:|---:|---:|\n");
    printf("| sts_archive_open of the folder | %.1f us (%.1f) | %llu / %llu / %llu | read the index whole: %.1f us (%.1f) | **%.2fx** | %.0f / %.0f |\n",
           med(&t_open) * 1e6, stats(&t_open).min * 1e6, (unsigned long long)st_open.files_opened,
           (unsigned long long)st_open.reads, (unsigned long long)st_open.bytes_read, med(&t_idx) * 1e6,
           stats(&t_idx).min * 1e6, med(&pr_open), med(&f_open), med(&f_idx));
    printf("| then sts_archive_find of one tensor | %.1f us (%.1f) | %llu / %llu / %llu | sts_open of its shard + sts_find: %.1f us (%.1f) | %.2fx | %.0f / %.0f |\n",
           med(&t_find) * 1e6, stats(&t_find).min * 1e6, (unsigned long long)st_find.files_opened,
           (unsigned long long)st_find.reads, (unsigned long long)st_find.bytes_read, med(&t_one) * 1e6,
           stats(&t_one).min * 1e6, med(&pr_find), med(&f_find), med(&f_one));
    printf("| then sts_archive_at of all %zu tensors | %.1f us (%.1f) | %llu / %llu / %llu | sts_open of all %u shards + sts_at: %.1f us (%.1f) | %.2fx | %.0f / %.0f |\n",
           total, med(&t_all) * 1e6, stats(&t_all).min * 1e6, (unsigned long long)st_all.files_opened,
           (unsigned long long)st_all.reads, (unsigned long long)st_all.bytes_read, nsh, med(&t_every) * 1e6,
           stats(&t_every).min * 1e6, med(&pr_all), med(&f_all), med(&f_every));
    printf("open read the index and no shard: %s; one find opened one shard: %s; all tensors: %llu files (1 + %u)\n",
           st_open.files_opened == 1 ? "yes" : "NO", st_find.files_opened == 2 ? "yes" : "NO",
           (unsigned long long)st_all.files_opened, nsh);
    drop(&t_idx); drop(&t_open); drop(&t_find); drop(&t_all); drop(&t_one); drop(&t_every);
    drop(&pr_open); drop(&pr_find); drop(&pr_all);
    drop(&f_idx); drop(&f_open); drop(&f_find); drop(&f_all); drop(&f_one); drop(&f_every);
    free(wm);
    free(allnames);
    if (!keep) tf_rmtree(dir);
}

/* ---- part 3: materialize ------------------------------------------------------------------------ */
static uint64_t rng = 0x243f6a8885a308d3ull;
static uint64_t next_rand(void) {
    rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
    return rng;
}
/* n 16-bit values of dtype dt: weights ~ N(0, 0.02), a block of 1M values repeated */
static void fill16(uint8_t *out, size_t n, sts_dtype dt) {
    size_t blk = (size_t)1 << 20, i;
    float *f = (float *)xmalloc(blk * sizeof *f);
    for (i = 0; i < blk; i++) {
        double u = ((double)(next_rand() >> 11) + 0.5) / 9007199254740992.0;
        double v = (double)(next_rand() >> 11) / 9007199254740992.0;
        f[i] = (float)(0.02 * sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v));
    }
    for (i = 0; i < n; i += blk) {
        size_t k = n - i < blk ? n - i : blk;
        if (sts_convert(out + 2 * i, dt, f, STS_DTYPE_F32, k, STS_ROUND_NEAREST_EVEN) != STS_OK)
            die("sts_convert (generating)", NULL);
    }
    free(f);
}

typedef struct fac_user { uint8_t *warm; size_t cap; } fac_user;
static void *fac_malloc(void *user, const sts_tensor_desc *d, const sts_type *type, uint64_t nbytes) {
    (void)user; (void)d; (void)type;
    return malloc((size_t)nbytes);
}
static void fac_free(void *user, const sts_tensor_desc *d, void *p, uint64_t nbytes) {
    (void)user; (void)d; (void)nbytes;
    free(p);
}
static void *fac_warm(void *user, const sts_tensor_desc *d, const sts_type *type, uint64_t nbytes) {
    fac_user *u = (fac_user *)user;
    (void)d; (void)type;
    return nbytes <= u->cap ? u->warm : NULL;
}
static void fac_none(void *user, const sts_tensor_desc *d, void *p, uint64_t nbytes) {
    (void)user; (void)d; (void)p; (void)nbytes;
}

enum { C_BF16, C_F16, C_COPY, NCASES };
static const char *const case_names[NCASES] = { "BF16 -> F32", "F16 -> F32", "copy BF16 (no convert)" };

static void run_materialize(const sts_registry *reg, size_t mib, int rounds, int fresh_rounds) {
    size_t bytes = mib << 20, n16 = bytes / 2, out_max = 2 * bytes;
    char path[2][4096];
    sts_archive *a[2];
    const sts_tensor_desc *d[2];
    const uint8_t *view[2];
    uint8_t *warm, *check;
    fac_user fu;
    sts_factory fm, fw;
    sts_materialize_options mo_conv, mo_copy;
    sts_error err;
    series t_mem[2][NCASES], t_mat[2][NCASES], t_dir[2][NCASES], pr_mem[2][NCASES], pr_dir[2][NCASES];
    series f_mem[2][NCASES], f_mat[2][NCASES];
    int r, w, c, k;
    memset(t_mem, 0, sizeof t_mem); memset(t_mat, 0, sizeof t_mat); memset(t_dir, 0, sizeof t_dir);
    memset(pr_mem, 0, sizeof pr_mem); memset(pr_dir, 0, sizeof pr_dir);
    memset(f_mem, 0, sizeof f_mem); memset(f_mat, 0, sizeof f_mat);
    for (k = 0; k < 2; k++) {  /* the two files, written, then opened through the archive */
        sts_dtype dt = k == 0 ? STS_DTYPE_BF16 : STS_DTYPE_F16;
        uint8_t *src = (uint8_t *)xmalloc(bytes);
        tlist t;
        uint64_t cols = 16384, rows = n16 / cols;
        if (rows * cols != n16) die("--mib must make a whole number of 16384-element rows", NULL);
        fill16(src, n16, dt);
        memset(&t, 0, sizeof t);
        tl_add(&t, 1, "model.layers.0.mlp.experts.packed.weight", dt, rows, cols, src);
        tl_fix(&t);
        tf_join(path[k], sizeof path[k], root, k == 0 ? "mat-bf16.safetensors" : "mat-f16.safetensors");
        write_file(path[k], &t);
        tl_free(&t);
        free(src);
        archive_open(reg, path[k], &a[k]);
        if (sts_archive_at(a[k], 0, &d[k], &err) != STS_OK) die("sts_archive_at", &err);
        if (sts_archive_view(a[k], d[k], (const void **)&view[k], &err) != STS_OK) die("sts_archive_view", &err);
        check_stop();
    }
    warm = (uint8_t *)xmalloc(out_max);   /* the warm destination */
    check = (uint8_t *)xmalloc(out_max);
    memset(warm, 0x5a, out_max);          /* not 0: malloc + memset 0 may become calloc, which touches nothing */
    memset(check, 0x5a, out_max);
    fu.warm = warm;
    fu.cap = out_max;
    memset(&fm, 0, sizeof fm);
    fm.allocate = fac_malloc; fm.release = fac_free;
    memset(&fw, 0, sizeof fw);
    fw.allocate = fac_warm; fw.release = fac_none; fw.user = &fu;
    memset(&mo_conv, 0, sizeof mo_conv);
    mo_conv.convert = 1;
    mo_conv.target = STS_DTYPE_F32;
    memset(&mo_copy, 0, sizeof mo_copy);
    mo_copy.zero_copy = STS_ZERO_COPY_NEVER;
    {   /* correctness, once: materialize gives sts_convert's bytes, and the copy the stored bytes */
        for (k = 0; k < 2; k++) {
            sts_materialized m;
            if (sts_archive_materialize(a[k], d[k], &fw, &mo_conv, &m, &err) != STS_OK) die("materialize", &err);
            if (m.nbytes != out_max || m.wrapped || m.data != warm) die("materialize: unexpected result", NULL);
            if (sts_convert(check, STS_DTYPE_F32, view[k], d[k]->type->dtype, n16, STS_ROUND_TRUNCATE) != STS_OK)
                die("sts_convert", NULL);
            if (memcmp(warm, check, out_max) != 0) die("materialize: the output differs from sts_convert's", NULL);
        }
        {
            sts_materialized m;
            if (sts_archive_materialize(a[0], d[0], &fw, &mo_copy, &m, &err) != STS_OK) die("materialize", &err);
            if (m.nbytes != bytes || m.wrapped || memcmp(warm, view[0], bytes) != 0)
                die("materialize: the copy differs from the stored bytes", NULL);
        }
    }
    free(check);
    printf("\n## materialize: %zu MiB sources (%s, %s), mapped, in the page cache\n"
           "warm factory: %d rounds after 1 warm-up; malloc factory: %d rounds\n", mib, path[0], path[1], rounds,
           fresh_rounds);
    /* w 1: the warm factory first (its warm-up round also faults the mappings in), then w 0: malloc */
    for (w = 1; w >= 0; w--)
        for (r = w ? -1 : 0; r < (w ? rounds : fresh_rounds); r++)
            for (c = 0; c < NCASES; c++) {
                int fi = c == C_F16 ? 1 : 0;
                size_t ob = c == C_COPY ? bytes : out_max;
                const sts_materialize_options *mo = c == C_COPY ? &mo_copy : &mo_conv;
                sts_materialized m;
                double t0, tm, tt, td;
                long f0, fmem, fmat;
                uint8_t *dst;
                check_stop();
                /* the baseline: memcpy of the same number of output bytes from the same mapped bytes
                   (a conversion's 2x output: the mapped tensor twice, into the two halves) */
                f0 = minflt();
                t0 = tu_now();
                dst = w == 0 ? (uint8_t *)xmalloc(ob) : warm;
                memcpy(dst, view[fi], bytes);
                if (c != C_COPY) memcpy(dst + bytes, view[fi], bytes);
                tm = tu_now() - t0;
                fmem = minflt() - f0;
                bench_sink += dst[(size_t)(r + 1) * 4099 % ob];
                if (w == 0) free(dst);
                /* the archive */
                f0 = minflt();
                t0 = tu_now();
                if (sts_archive_materialize(a[fi], d[fi], w == 0 ? &fm : &fw, mo, &m, &err) != STS_OK)
                    die("materialize", &err);
                tt = tu_now() - t0;
                fmat = minflt() - f0;
                bench_sink += ((uint8_t *)m.data)[(size_t)(r + 1) * 4099 % ob];
                if (w == 0) free(m.data);
                /* direct: sts_convert (the copy: memcpy) of the mapped bytes */
                t0 = tu_now();
                dst = w == 0 ? (uint8_t *)xmalloc(ob) : warm;
                if (c == C_COPY) memcpy(dst, view[0], ob);
                else if (sts_convert(dst, STS_DTYPE_F32, view[fi], d[fi]->type->dtype, n16, STS_ROUND_TRUNCATE) != STS_OK)
                    die("sts_convert", NULL);
                td = tu_now() - t0;
                bench_sink += dst[(size_t)(r + 1) * 4099 % ob];
                if (w == 0) free(dst);
                if (r < 0) continue;
                put(&t_mem[w][c], tm); put(&t_mat[w][c], tt); put(&t_dir[w][c], td);
                put(&pr_mem[w][c], tm / tt); put(&pr_dir[w][c], td / tt);
                put(&f_mem[w][c], (double)fmem); put(&f_mat[w][c], (double)fmat);
            }
    for (w = 1; w >= (fresh_rounds > 0 ? 0 : 1); w--) {
        printf("\n%s\n", w == 0 ? "malloc factory: fresh memory for every output (malloc and its page faults inside every timing)"
                                : "warm factory: one buffer, touched before (the pass alone)");
        printf("| case | out MiB | materialize ms (best) | GB/s out | memcpy ms | direct ms | page faults: materialize / memcpy | materialize / memcpy, paired | materialize / direct, paired |\n"
               "|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
        for (c = 0; c < NCASES; c++) {
            size_t ob = c == C_COPY ? bytes : out_max;
            bench_stats st = stats(&t_mat[w][c]);
            printf("| %s | %zu | %.1f (%.1f) | %.2f | %.1f | %s %.1f | %.0f / %.0f | **%.2fx** | %.2fx |\n", case_names[c],
                   ob >> 20, st.median * 1e3, st.min * 1e3, (double)ob / st.median / 1e9, med(&t_mem[w][c]) * 1e3,
                   c == C_COPY ? "memcpy" : "sts_convert", med(&t_dir[w][c]) * 1e3, med(&f_mat[w][c]), med(&f_mem[w][c]),
                   med(&pr_mem[w][c]), med(&pr_dir[w][c]));
        }
        for (c = 0; c < NCASES; c++)
            printf("%s%s: goal >= 0.8x memcpy %s (%.2fx)", c ? "; " : "", case_names[c],
                   med(&pr_mem[w][c]) >= 0.8 ? "met" : "MISSED", med(&pr_mem[w][c]));
        printf("\n");
    }
    printf("ratios are speeds: memcpy (or direct) time / materialize time, median over rounds of the same round's pair;\n"
           "GB/s counts output bytes (1 GB = 1e9 B); convert rounding: truncate (F32 targets are exact anyway);\n"
           "page faults: minor faults (getrusage) during the call, median\n");
    for (w = 0; w < 2; w++)
        for (c = 0; c < NCASES; c++) {
            drop(&t_mem[w][c]); drop(&t_mat[w][c]); drop(&t_dir[w][c]); drop(&pr_mem[w][c]); drop(&pr_dir[w][c]);
            drop(&f_mem[w][c]); drop(&f_mat[w][c]);
        }
    free(warm);
    for (k = 0; k < 2; k++) { sts_archive_close(a[k]); remove_file(path[k]); }
}

/* ---- child processes ---------------------------------------------------------------------------- */
/* In the parent: runs nothing, waits for the child and returns 0 (a failed child ends the program).
   In the child: returns 1, with the heap set up for `heap` (1: keep what is freed; glibc only). */
static int child(int heap) {
    pid_t pid;
    int st;
#if !defined(__GLIBC__)
    if (heap) { printf("\n(heap-kept pass skipped: it needs glibc's mallopt)\n"); return 0; }
#endif
    fflush(stdout);
    if ((pid = fork()) < 0) die("fork", NULL);
    if (pid == 0) {
        in_child = 1;
        regime = heap ? "heap kept" : "malloc as is";
        tag = heap ? "-heap" : "";
#if defined(__GLIBC__)
        if (heap) {
            mallopt(M_MMAP_THRESHOLD, 32 << 20);   /* the most glibc takes: every table here is below it */
            mallopt(M_TRIM_THRESHOLD, INT_MAX);    /* never give the heap's top back */
        }
#endif
        return 1;
    }
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
    check_stop();
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) die("a part failed (its message is above)", NULL);
    return 0;
}
static void child_exit(void) {
    fflush(stdout);
    _exit(0);
}

/* ---- main -------------------------------------------------------------------------------------- */
int main(int argc, char **argv) {
    open_case open_cases[2] = { { "10k", 50, 64, 101 }, { "100k", 128, 256, 21 } };
    const char *parts = "open,shards,materialize", *base = getenv("BENCH_DIR");
    int reps = 0, rounds = 7, fresh_rounds = 3, quick = 0, i;
    unsigned nsh = 100, per = 100;
    size_t mib = 256;
    sts_registry *reg;
    sts_error err;
    double t_start = tu_now();
    if (!base || !*base) base = getenv("TMPDIR");
    if (!base || !*base) base = "/tmp";
    for (i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--part") && i + 1 < argc) parts = argv[++i];
        else if (!strcmp(argv[i], "--quick")) quick = 1;
        else if (!strcmp(argv[i], "--keep")) keep = 1;
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--shards") && i + 1 < argc) nsh = (unsigned)atoi(argv[++i]);
        else if (!strcmp(argv[i], "--per-shard") && i + 1 < argc) per = (unsigned)atoi(argv[++i]);
        else if (!strcmp(argv[i], "--mib") && i + 1 < argc) mib = (size_t)atoi(argv[++i]);
        else if (!strcmp(argv[i], "--rounds") && i + 1 < argc) rounds = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--fresh-rounds") && i + 1 < argc) fresh_rounds = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--dir") && i + 1 < argc) base = argv[++i];
        else {
            fprintf(stderr, "usage: bench_archive [--part open,shards,materialize] [--quick] [--reps N] [--shards N]\n"
                            "                     [--per-shard N] [--mib N] [--rounds N] [--fresh-rounds N] [--dir PATH] [--keep]\n");
            return 2;
        }
    }
    if (quick) {
        open_cases[0].label = "1k"; open_cases[0].layers = 5; open_cases[0].experts = 64; open_cases[0].reps = 21;
        open_cases[1].label = "10k"; open_cases[1].layers = 50; open_cases[1].experts = 64; open_cases[1].reps = 11;
        nsh = 20; per = 50; mib = 32; rounds = 3; fresh_rounds = 1;
    }
    if (rounds < 1 || fresh_rounds < 0 || mib < 1 || nsh < 1 || per < 1 || per > 3000 || reps < 0) {
        fprintf(stderr, "bench_archive: bad sizes\n");
        return 2;
    }
    bench_print_build(stdout);
    printf("bench_archive: parts %s; codec isa %s\n", parts, sts_convert_isa());
    if (snprintf(root, sizeof root, "%s/sts-bench-archive-XXXXXX", base) >= (int)sizeof root) {
        root[0] = 0;
        die("--dir too long", NULL);
    }
    if (!mkdtemp(root)) { root[0] = 0; die("mkdtemp failed", NULL); }
    atexit(cleanup);
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    signal(SIGHUP, on_signal);
    if (sts_registry_new(NULL, 1, &reg, &err) != STS_OK) die("sts_registry_new", &err);
    /* every part in a fresh child process, so that no part inherits another's heap; the open and
       shards parts twice: with malloc as it comes, then with a heap that keeps what is freed (no page
       faults after the warm-up: a long-running process, or a machine where a page fault is cheap;
       on this VM each costs ~10 us) */
    if (strstr(parts, "open")) {
        for (i = 0; i < 4; i++)
            if (child(i % 2)) { run_open(reg, &open_cases[i / 2], reps); child_exit(); }
    }
    if (strstr(parts, "shards")) {
        for (i = 0; i < 2; i++)
            if (child(i)) { run_shards(reg, nsh, per, reps > 0 ? reps : quick ? 7 : 21); child_exit(); }
    }
    if (strstr(parts, "materialize") && child(0)) {
        run_materialize(reg, mib, rounds, fresh_rounds);
        child_exit();
    }
    sts_registry_free(reg);
    if (keep) printf("\nbench_archive: --keep: the files are in %s\n", root);
    cleanup();
    printf("\nbench_archive: done in %.1f s\n", tu_now() - t_start);
    return 0;
}
