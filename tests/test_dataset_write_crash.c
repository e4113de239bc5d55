/* test_dataset_write_crash.c - layer 8: crash safety of the write protocol.

   A child process runs a whole job (two task writers with several shards each, then the dataset
   commit; durable on) into a folder under /tmp and is killed with SIGKILL:
     - deterministically at the k-th write-side call (the io_fault hook kills the process there),
       for every k of the job, so every phase is hit: shard writes, fsyncs, task renames, index
       and manifest writes, backups, publication;
     - at random moments (seeded delays spread over the job's measured duration).
   Half the jobs write into an empty folder (default mode), half replace an existing dataset
   (mode=overwrite); a third are KV jobs with an index, a third the same with kv_layout=arrival
   (shards written while they fill), a third batch jobs.
   After each kill the parent checks:
     - there is no dataset_manifest.json, or a complete one: every shard it names exists with the
       listed size and passes strict validation of the whole file, the sums agree, and the index it
       lists is there and describes exactly those shards (it is the old dataset or the new one);
     - every final-named part-*.safetensors in the folder is complete and strictly valid;
     - sts_dataset_prepare in default mode removes the temporaries and refuses the folder exactly
       when final-named leftovers remain (documented behaviour);
     - a rerun with mode=overwrite succeeds, leaves a clean folder and reads back correctly.
   With STS_CRASH_KEEP=<dir>, every manifest and index seen after a kill is copied there, for
   tests/check_dataset.py to validate against the JSON Schemas. */
#define _POSIX_C_SOURCE 200809L
#ifndef STS_TEST_LINKED  /* the Makefile links tests/sts_impl.c's object instead */
#define STS_IMPLEMENTATION
#endif
#include "../safetensors_spark.h"
#include "dataset_write_util.h"

static const sts_column SCH[3] = {
    { "id", STS_VALUE_STRING, STS_DTYPE_U8 },
    { "img", STS_VALUE_TENSOR, STS_DTYPE_U8 },
    { "emb", STS_VALUE_ARRAY, STS_DTYPE_F32 },
};
enum { NTASKS = 2, NROWS = 5 };

/* one deterministic row of the job with generation g (old dataset: g = 1, the crashing job: 2) */
typedef struct row { char key[32]; uint8_t img[400]; float emb[4]; uint64_t shape[2]; sts_value v[3]; } row;
static const sts_value *mk_row(row *r, int g, uint32_t task, int i) {
    int j;
    snprintf(r->key, sizeof r->key, "g%d-t%u-%d", g, task, i);
    r->shape[0] = 4;
    r->shape[1] = 100;
    for (j = 0; j < 400; j++) r->img[j] = (uint8_t)(g * 101 + (int)task * 37 + i * 11 + j);
    for (j = 0; j < 4; j++) r->emb[j] = (float)g + (float)task * 10.0f + (float)i + (float)j * 0.25f;
    memset(r->v, 0, sizeof r->v);
    r->v[0].data = r->key; r->v[0].size = strlen(r->key);
    r->v[1].data = r->img; r->v[1].size = 400; r->v[1].dtype = STS_DTYPE_U8; r->v[1].rank = 2; r->v[1].shape = r->shape;
    r->v[2].data = r->emb; r->v[2].size = 4;
    return r->v;
}
static void job_config(sts_write_config *c, int kv, int overwrite, int durable) {
    memset(c, 0, sizeof *c);
    if (kv) { c->name_col = "id"; c->generate_index = 1; }
    else { c->batch_size = 2; c->columns = "img,emb"; c->generate_index = 1; }
    if (kv == 2) c->kv_layout = STS_KV_ARRIVAL;  /* shards begun while they fill */
    c->has_dtype = 1;
    c->dtype = STS_DTYPE_F32;
    c->overwrite = overwrite;
    c->no_fsync = !durable;
}
/* The job; returns 0 or the failing result (with e). opts may carry the hook. */
static sts_result job(const char *dir, int kv, int g, int overwrite, int durable, const sts_options *o, sts_error *e) {
    sts_write_config c;
    char *msg[NTASKS];
    size_t len[NTASKS], nm = 0, i;
    uint32_t t;
    sts_result r;
    job_config(&c, kv, overwrite, durable);
    if (kv) c.target_shard_bytes = 1300;  /* three rows per shard */
    if ((r = sts_dataset_prepare(dir, &c, SCH, 3, o, e)) != STS_OK) return r;
    for (t = 0; t < NTASKS; t++) {
        sts_task_writer *w;
        int k;
        if ((r = sts_task_open(dir, t, &c, SCH, 3, o, &w, e)) != STS_OK) goto out;
        for (k = 0; k < NROWS && r == STS_OK; k++) {
            row rw;
            r = sts_task_write(w, mk_row(&rw, g, t, k), e);
        }
        if (r == STS_OK) r = sts_task_commit(w, &msg[nm], &len[nm], e);
        if (r == STS_OK) nm++;
        sts_task_close(w);
        if (r != STS_OK) goto out;
    }
    r = sts_dataset_commit(dir, &c, (const char *const *)msg, len, nm, o, NULL, e);
out:
    for (i = 0; i < nm; i++) sts_free(NULL, msg[i], len[i] + 1);
    return r;
}
/* Checks that dir holds generation g's complete dataset (values included). */
static int verify_values(const char *dir, int kv, int g, const du_ds *ds, char *why, size_t cap) {
    size_t i;
    uint64_t rows = 0;
    for (i = 0; i < ds->nshards; i++) {
        char p[256];
        sts_file *f;
        sts_error e;
        uint32_t t, s;
        size_t q;
        tf_join(p, sizeof p, dir, ds->shards[i].name);
        if (!du_shard_name(ds->shards[i].name, &t, &s, NULL) || sts_open(p, NULL, &f, &e) != STS_OK) { snprintf(why, cap, "cannot open %s", p); return 0; }
        if (kv) {
            for (q = 0; q < sts_count(f); q++) {
                const sts_tensor *x = sts_at(f, q);
                char name[64];
                unsigned tt;
                int k, gg;
                row rw;
                uint8_t emb_le[16];  /* the array cell as the file holds it: little-endian F32 */
                memcpy(name, x->name, x->name_len < 63 ? x->name_len : 63);
                name[x->name_len < 63 ? x->name_len : 63] = 0;
                if (sscanf(name, "g%d-t%u-%d__", &gg, &tt, &k) != 3 || gg != g || tt != t) { snprintf(why, cap, "%s holds a foreign tensor %s", p, name); sts_close(f); return 0; }
                mk_row(&rw, g, tt, k);
                tu_le_copy(emb_le, rw.emb, 4, 4);
                if (strstr(name, "__img") ? memcmp(sts_data(f, x), rw.img, 400) != 0 : memcmp(sts_data(f, x), emb_le, 16) != 0) {
                    snprintf(why, cap, "%s: %s values differ", p, name);
                    sts_close(f);
                    return 0;
                }
            }
            rows += sts_count(f) / 2;
        } else {
            const sts_tensor *x = sts_find(f, "img", 3);
            uint64_t r;
            if (!x) { snprintf(why, cap, "%s has no img", p); sts_close(f); return 0; }
            for (r = 0; r < x->shape[0]; r++) {
                row rw;
                mk_row(&rw, g, t, (int)(s * 2 + r));
                if (memcmp((const uint8_t *)sts_data(f, x) + r * 400, rw.img, 400) != 0) { snprintf(why, cap, "%s row %llu differs", p, (unsigned long long)r); sts_close(f); return 0; }
            }
            rows += x->shape[0];
        }
        sts_close(f);
    }
    if (rows != (uint64_t)(NTASKS * NROWS) || ds->total_samples != rows) { snprintf(why, cap, "%llu rows, expected %d", (unsigned long long)rows, NTASKS * NROWS); return 0; }
    return 1;
}

/* ---- one trial ---- */
typedef struct trial { int kv, old; long kill_at; long delay_us; } trial;
static const char *keep_dir;
static int trial_no;
static tu_sb notes;
static int nnotes, manifests_seen, kept;

static void note(const trial *t, const char *fmt, ...) {
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    nnotes++;
    if (nnotes <= 12)
        tu_sb_printf(&notes, "\n  trial %d (%s, %s, %s%ld): %s", trial_no, t->kv == 2 ? "KV arrival" : t->kv ? "KV" : "batch", t->old ? "overwrite over an old dataset" : "empty folder",
                     t->kill_at ? "killed at call " : "killed after us ", t->kill_at ? t->kill_at : t->delay_us, buf);
}
/* Keeps a copy of a file the trial may not have written (then there is nothing to keep). */
static void copy_file(const char *from, const char *to) {
    size_t n;
    uint8_t *b;
    if (!tf_exists(from)) return;
    b = tf_read(from, &n);
    tf_write(to, b, n);
    free(b);
}
static void run_trial(const char *dir, const trial *t) {
    char why[1024], p[256];
    pid_t pid;
    int pfd[2];
    tf_snap s;
    size_t i;
    int has_final = 0;
    sts_write_config c;
    sts_error e;
    sts_result r;
    trial_no++;
    tf_clear(dir);
    if (t->old) {  /* the old dataset: generation 1, complete */
        if (job(dir, t->kv, 1, 0, 0, NULL, &e) != STS_OK) fail_msg("old dataset: %s", e.message);
    }
    assert_int_equal(pipe(pfd), 0);
    fflush(NULL);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {  /* the job; it stops at the kill point (or at its end) and waits for SIGKILL */
        du_fault f;
        sts_options o;
        close(pfd[0]);
        memset(&f, 0, sizeof f);
        memset(&o, 0, sizeof o);
        f.armed = 1;
        f.kill_at = t->kill_at;
        f.park_fd = pfd[1];
        du_fault_opts(&o, &f);
        (void)job(dir, t->kv, 2, t->old, 1, &o, &e);
        du_park(pfd[1], 'D');
    }
    close(pfd[1]);
    if (t->kill_at) {
        char got = 0;
        while (read(pfd[0], &got, 1) < 0 && errno == EINTR) {}
        if (got != 'K') note(t, "the job ended before call %ld", t->kill_at);
    } else du_sleep_us(t->delay_us);
    du_reap(pid);
    close(pfd[0]);
    /* 1. a manifest, if any, is complete, and so is the index it lists */
    tf_join(p, sizeof p, dir, "dataset_manifest.json");
    if (tf_exists(p)) {
        du_ds ds;
        manifests_seen++;
        if (keep_dir) {
            char to[512];
            snprintf(to, sizeof to, "%s/trial%03d.dataset_manifest.json", keep_dir, trial_no);
            copy_file(p, to);
            tf_join(p, sizeof p, dir, "_tensor_index.json");
            snprintf(to, sizeof to, "%s/trial%03d._tensor_index.json", keep_dir, trial_no);
            copy_file(p, to);
            kept++;
        }
        if (!du_check_dataset_ex(dir, &ds, why, sizeof why, 1)) note(t, "the manifest after the kill: %s", why);
        else {
            /* the old dataset or the new one, whole */
            uint32_t tk;
            char id[16];
            int g = 0;
            if (ds.nshards && du_shard_name(ds.shards[0].name, &tk, NULL, NULL)) {
                sts_file *f;
                tf_join(p, sizeof p, dir, ds.shards[0].name);
                if (sts_open(p, NULL, &f, &e) == STS_OK) {
                    if (sts_count(f) && t->kv) { memcpy(id, sts_at(f, 0)->name, 2); g = id[1] - '0'; }
                    sts_close(f);
                }
            }
            if (!t->kv) {  /* batch: tell the generations apart by the first row's bytes */
                row rw;
                sts_file *f;
                mk_row(&rw, 1, 0, 0);
                tf_join(p, sizeof p, dir, ds.shards[0].name);
                if (sts_open(p, NULL, &f, &e) == STS_OK) {
                    const sts_tensor *x = sts_find(f, "img", 3);
                    g = x && memcmp(sts_data(f, x), rw.img, 400) == 0 ? 1 : 2;
                    sts_close(f);
                }
            }
            if (g != 1 && g != 2) note(t, "the manifest's dataset is neither the old nor the new one");
            else if (g == 1 && !t->old) note(t, "a generation-1 dataset appeared in an empty folder");
            else if (!verify_values(dir, t->kv, g, &ds, why, sizeof why)) note(t, "the published dataset (generation %d) is not whole: %s", g, why);
            du_ds_free(&ds);
        }
    } else if (t->old) {
        note(t, "the old dataset's manifest is gone and no new one was published");
    }
    /* 2. every final-named shard is complete */
    s = tf_snapshot(dir, 0);
    for (i = 0; i < s.n; i++) {
        const char *n = s.e[i].name;
        if (n[0] != '.') has_final = 1;
        if (strncmp(n, "part-", 5) == 0) {
            sts_file *f;
            sts_options o;
            memset(&o, 0, sizeof o);
            o.strict = 1;
            tf_join(p, sizeof p, dir, n);
            if (!du_shard_name(n, NULL, NULL, NULL)) note(t, "a final-named file %s does not follow the naming pattern", n);
            else if (sts_open(p, &o, &f, &e) != STS_OK) note(t, "the final-named shard %s is not complete: %s", n, e.message);
            else sts_close(f);
        } else if (n[0] == '.') {
            if (!strstr(n, ".tmp-") && strcmp(n, ".sts_job.lock") != 0) note(t, "an unexpected hidden file %s", n);
        } else if (strcmp(n, "dataset_manifest.json") != 0 && strcmp(n, "_tensor_index.csv") != 0 && strcmp(n, "_tensor_index.json") != 0)
            note(t, "an unexpected file %s", n);
    }
    tf_snap_free(&s);
    /* 2b. the recovery after a crash: clean clears the killed job's lock, its temporaries and (next
       to a manifest) its shards; what a manifest names stays */
    {
        sts_clean_config cl;
        size_t removed = 0;
        memset(&cl, 0, sizeof cl);
        if (sts_dataset_clean(dir, &cl, NULL, &removed, &e) != STS_OK) note(t, "clean after the kill failed: %s", e.message);
        s = tf_snapshot(dir, 0);
        for (i = 0; i < s.n; i++)
            if (s.e[i].name[0] == '.') note(t, "clean left the hidden file %s", s.e[i].name);
        tf_snap_free(&s);
        tf_join(p, sizeof p, dir, "dataset_manifest.json");
        if (tf_exists(p)) {
            sts_check_config cc;
            sts_check_report rep;
            memset(&cc, 0, sizeof cc);
            cc.data = 1;
            if (sts_dataset_check(dir, &cc, NULL, &rep, &e) != STS_OK) note(t, "check after clean: %s", e.message);
        }
    }
    /* 3. default mode: temporaries removed; refused exactly when final-named leftovers remain */
    job_config(&c, t->kv, 0, 0);
    r = sts_dataset_prepare(dir, &c, SCH, 3, NULL, &e);
    if (has_final && r != STS_ERR_EXISTS) note(t, "prepare in default mode over leftovers gave %s", sts_result_name(r));
    if (!has_final && r != STS_OK) note(t, "prepare in default mode over temporaries only gave %s: %s", sts_result_name(r), e.message);
    s = tf_snapshot(dir, 0);
    for (i = 0; i < s.n; i++)  /* the job that prepare started holds the folder: its lock, nothing else hidden */
        if (s.e[i].name[0] == '.' && !(r == STS_OK && strcmp(s.e[i].name, ".sts_job.lock") == 0))
            note(t, "prepare left the temporary %s", s.e[i].name);
    tf_snap_free(&s);
    if (r == STS_OK && sts_dataset_abort(dir, NULL, NULL, 0, NULL, &e) != STS_OK)  /* that job ends unused */
        note(t, "ending the default-mode job failed: %s", e.message);
    /* 4. a rerun with mode=overwrite succeeds and reads back; shards a job killed before any
       manifest existed are orphans next to the new one, which clean then removes */
    if (job(dir, t->kv, 2, 1, 0, NULL, &e) != STS_OK) note(t, "the overwrite rerun failed: %s", e.message);
    else {
        du_ds ds;
        sts_clean_config cl;
        size_t removed = 0;
        memset(&cl, 0, sizeof cl);
        if (sts_dataset_clean(dir, &cl, NULL, &removed, &e) != STS_OK) note(t, "clean after the rerun failed: %s", e.message);
        if (!du_check_dataset_ex(dir, &ds, why, sizeof why, 0)) note(t, "after the overwrite rerun: %s", why);
        else {
            if (!verify_values(dir, t->kv, 2, &ds, why, sizeof why)) note(t, "after the overwrite rerun: %s", why);
            du_ds_free(&ds);
        }
    }
}

static long count_calls(const char *dir, int kv, int old, double *seconds) {
    du_fault f;
    sts_options o;
    sts_error e;
    double t0;
    tf_clear(dir);
    if (old && job(dir, kv, 1, 0, 0, NULL, &e) != STS_OK) fail_msg("old dataset: %s", e.message);
    memset(&f, 0, sizeof f);
    memset(&o, 0, sizeof o);
    f.armed = 1;
    du_fault_opts(&o, &f);
    t0 = tu_now();
    if (job(dir, kv, 2, old, 1, &o, &e) != STS_OK) fail_msg("counting job: %s", e.message);
    *seconds = tu_now() - t0;
    return f.calls;
}

static void test_crash(void **state) {
    char root[64];
    tu_rng rng = { 20240611 };
    int combo, i, quick = tu_quick(), random_trials = quick ? 8 : 60, det = 0;
    double seconds[6];
    long calls[6];
    (void)state;
    keep_dir = getenv("STS_CRASH_KEEP");
    if (keep_dir) { mkdir(keep_dir, 0777); }
    tf_tmpdir(root, sizeof root);  /* a real file system with real fsyncs */
    memset(&notes, 0, sizeof notes);
    /* combo: kind (batch, KV, KV with kv_layout=arrival) and folder (empty, an old dataset) */
    for (combo = 0; combo < 6; combo++) calls[combo] = count_calls(root, combo % 3, combo / 3, &seconds[combo]);
    /* every phase: kill at each write-side call */
    for (combo = 0; combo < 6; combo++) {
        long k, step = quick ? 5 : 1;  /* quick (sanitizers, valgrind, qemu): every fifth, from staggered starts */
        for (k = 1 + (quick ? combo % 5 : 0); k <= calls[combo]; k += step) {
            trial t;
            t.kv = combo % 3; t.old = combo / 3; t.kill_at = k; t.delay_us = 0;
            run_trial(root, &t);
            det++;
        }
    }
    /* random moments */
    for (i = 0; i < random_trials; i++) {
        trial t;
        combo = (int)tu_below(&rng, 6);
        t.kv = combo % 3; t.old = combo / 3; t.kill_at = 0;
        t.delay_us = (long)tu_below(&rng, (uint32_t)(seconds[combo] * 1.3e6) + 1);
        run_trial(root, &t);
    }
    tf_rmtree(root);
    fprintf(stderr, "crash: %d trials (%d at every write-side call, %d at random moments; calls per job %ld %ld %ld %ld %ld %ld); "
            "%d saw a manifest%s\n", trial_no, det, random_trials, calls[0], calls[1], calls[2], calls[3], calls[4], calls[5],
            manifests_seen, keep_dir ? " (kept)" : "");
    if (nnotes) {
        fprintf(stderr, "crash safety: %d problems; the first ones:%s\n", nnotes, notes.p);
        tu_sb_free(&notes);
        fail_msg("crash safety: %d problems (see above)", nnotes);
    }
    assert_true(trial_no >= (quick ? 20 : 50));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_crash),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
