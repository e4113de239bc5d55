/* Fuzz target: the dataset writer's options as the connector spells them (sts_write_config_set,
   strings from a Spark job's option map), checked against a schema by sts_dataset_prepare and the
   task writer, then a small job through to the dataset commit.

   Input: one flags byte, then NUL-separated key, value pairs until the end (a last key without a
   value is dropped). Flags: bits 0-5: k, the k-th allocation of the job fails (0: none); 0x40:
   the rows' array cells are C doubles ("a" of elem F64), else floats; 0x80: a committed dataset
   is in the folder before the job.
   The schema: "id" string, "t" tensor, "a" F32 (or F64) array, "b" I32 array, "s" string (a second
   string column: the options must leave it out, with columns=, or the job is refused).

   Checked (a failed check aborts: a finding):
     - every refusal, of an option, of prepare, of task open, of a row, of a commit, is a complete
       error (code, rule, message starting with the rule id), NOMEM only when the allocation failed;
     - rows: tensor t of F32 [2, 2], then arrays a and b of the first element count (4, 1, 6, 8, 2,
       3, 16, 12, 9, 24) each is taken with; a row is either taken or refused;
     - when everything succeeded: sts_dataset_check with data finds no problem, and the dataset
       opens;
     - otherwise, after the writer's close and sts_dataset_abort, the folder holds exactly what it
       held before the job (nothing, or the earlier dataset, byte for byte);
     - the checking allocator: no misuse, nothing left allocated.
   Under the replay build the same checks run over fuzz/corpus/options/. */
#define _POSIX_C_SOURCE 200809L
#define STS_IMPLEMENTATION
#include "../safetensors_spark.h"
#define FZ_NO_HEADER_MUTATOR
#include "fuzz_common.h"
#include "../tests/fs_util.h"

#include <dirent.h>
#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char fo_dir[64];
static tu_alloc fo_alloc;

/* The folder as it was (tests/fs_util.h's snapshot): names and bytes. */
static void fo_snap_same(const tf_snap *a, const tf_snap *b) {
    tu_sb why = { NULL, 0, 0 };
    if (!tf_snap_same(a, b, &why)) fprintf(stderr, "the folder changed:%s\n", why.p);
    FZ_CHECK(why.n == 0);
}

/* A refusal: complete, and NOMEM only when the allocator said no. */
static void fo_refused(sts_result r, const sts_error *e) {
    FZ_CHECK(r != STS_OK);
    fz_check_error(r, e, UINT64_MAX);
    if (r == STS_ERR_NOMEM) FZ_CHECK(fo_alloc.failed > 0);
    /* no fault is injected: the folder is a private temporary; but a padded tail of a huge
       batch_size may pass the file system's largest file (ext4: 16 TiB; tmpfs takes it sparse) */
    FZ_CHECK(r != STS_ERR_IO || strstr(e->message, "EFBIG") != NULL);
}

static sts_column fo_schema[5] = {
    { "id", STS_VALUE_STRING, STS_DTYPE_U8 },
    { "t", STS_VALUE_TENSOR, STS_DTYPE_F32 },
    { "a", STS_VALUE_ARRAY, STS_DTYPE_F32 },
    { "b", STS_VALUE_ARRAY, STS_DTYPE_I32 },
    { "s", STS_VALUE_STRING, STS_DTYPE_U8 },
};

/* An earlier dataset (0x80), written with default options: batch mode of "t". */
static void fo_previous(const sts_options *o) {
    sts_write_config c;
    sts_task_writer *w = NULL;
    sts_error e;
    char *msg = NULL;
    size_t len = 0, k;
    const char *const *msgs;
    float t[4] = { 1, 2, 3, 4 };
    uint64_t shape[2] = { 2, 2 };
    memset(&c, 0, sizeof c);
    c.batch_size = 2;
    c.columns = "t";
    c.no_fsync = 1;
    FZ_CHECK(sts_dataset_prepare(fo_dir, &c, fo_schema, 5, o, &e) == STS_OK);
    FZ_CHECK(sts_task_open(fo_dir, 3, &c, fo_schema, 5, o, &w, &e) == STS_OK);
    for (k = 0; k < 3; k++) {
        sts_value row[5];
        memset(row, 0, sizeof row);
        row[1].data = t; row[1].size = sizeof t; row[1].dtype = STS_DTYPE_F32; row[1].rank = 2; row[1].shape = shape;
        FZ_CHECK(sts_task_write(w, row, &e) == STS_OK);
    }
    FZ_CHECK(sts_task_commit(w, &msg, &len, &e) == STS_OK);
    sts_task_close(w);
    msgs = (const char *const *)&msg;
    FZ_CHECK(sts_dataset_commit(fo_dir, &c, msgs, &len, 1, o, NULL, &e) == STS_OK);
    sts_free(o, msg, len + 1);
}

static void fo_run(const uint8_t *data, size_t size) {
    static char text[8192 + 2];
    static const uint64_t counts[10] = { 4, 1, 6, 8, 2, 3, 16, 12, 9, 24 };
    sts_write_config c;
    sts_options o;
    sts_error e;
    sts_result r;
    sts_task_writer *w = NULL;
    sts_dataset_summary sum;
    tf_snap before, after;
    char *msg = NULL;
    size_t msg_len = 0, at, k, taken = 0;
    uint8_t flags = data[0];
    int ok = 1, committed = 0;
    if (size - 1 > sizeof text - 2) return;
    memcpy(text, data + 1, size - 1);
    text[size - 1] = 0;
    text[size] = 0;
    memset(&o, 0, sizeof o);
    fz_use_alloc(&o, &fo_alloc, 0);
    tf_clear(fo_dir);
    if (flags & 0x80) fo_previous(&o);
    before = tf_snapshot(fo_dir, 1);
    fo_schema[2].elem = (flags & 0x40) ? STS_DTYPE_F64 : STS_DTYPE_F32;

    memset(&c, 0, sizeof c);
    for (at = 0; at < size - 1;) {  /* key NUL value NUL ... (strings borrowed from text) */
        const char *key = text + at, *value;
        size_t kl = strlen(key);
        if (at + kl + 1 >= size - 1) break;
        value = text + at + kl + 1;
        at += kl + 1 + strlen(value) + 1;
        r = sts_write_config_set(&c, key, value, &e);
        if (r != STS_OK) {
            fo_refused(r, &e);
            FZ_CHECK(e.rule == STS_RULE_OPTION || e.rule == STS_RULE_ARGUMENT);
            if (getenv("FZ_OPT_TRACE")) fprintf(stderr, "  option refused: %s\n", e.message);
        }
    }
    fo_alloc.calls = 0;
    fo_alloc.fail_at = flags & 63;

    r = sts_dataset_prepare(fo_dir, &c, fo_schema, 5, &o, &e);
    if (r != STS_OK) {
        fo_refused(r, &e);
        ok = 0;
        if (getenv("FZ_OPT_TRACE")) fprintf(stderr, "  prepare refused: %s\n", e.message);
    }
    if (ok && (r = sts_task_open(fo_dir, 0, &c, fo_schema, 5, &o, &w, &e)) != STS_OK) {
        fo_refused(r, &e);
        FZ_CHECK(w == NULL);
        ok = 0;
    }
    for (k = 0; ok && k < 3; k++) {  /* three rows, each with the first array sizes it is taken with */
        static float fa[24];
        static double da[24];
        static int32_t ib[24];
        float t[4] = { 1.5f, -2.0f, 0.25f, (float)k };
        uint64_t shape[2] = { 2, 2 };
        char key[16];
        size_t i, j;
        int done = 0;
        for (i = 0; i < 24; i++) { fa[i] = (float)i * 0.5f; da[i] = (double)i * 0.25; ib[i] = (int32_t)(i * 7 - 20); }
        snprintf(key, sizeof key, "k%u", (unsigned)k);
        for (i = 0; i < 10 && !done; i++)
            for (j = 0; j < 10 && !done; j++) {
                sts_value row[5];
                memset(row, 0, sizeof row);
                row[0].data = key; row[0].size = strlen(key);
                row[1].data = t; row[1].size = sizeof t; row[1].dtype = STS_DTYPE_F32; row[1].rank = 2; row[1].shape = shape;
                row[2].data = (flags & 0x40) ? (const void *)da : (const void *)fa; row[2].size = counts[i];
                row[3].data = ib; row[3].size = counts[j];
                row[4].data = "s"; row[4].size = 1;
                r = sts_task_write(w, row, &e);
                if (r == STS_OK) { done = 1; taken++; break; }
                fo_refused(r, &e);
                if (r == STS_ERR_NOMEM || e.rule == STS_RULE_STATE) { ok = 0; break; }
                if (e.rule != STS_RULE_ROW_SHAPE) { done = 1; break; }  /* another refusal: the next row */
            }
        if (ok) FZ_CHECK(sts_task_get_progress(w).rows == taken);
    }
    if (ok && (r = sts_task_commit(w, &msg, &msg_len, &e)) != STS_OK) { fo_refused(r, &e); ok = 0; }
    if (ok) {
        const char *const *msgs = (const char *const *)&msg;
        r = sts_dataset_commit(fo_dir, &c, msgs, &msg_len, 1, &o, &sum, &e);
        if (r != STS_OK) { fo_refused(r, &e); ok = 0; }
        else committed = 1;
    }
    fo_alloc.fail_at = 0;
    sts_task_close(w);
    if (committed) {
        sts_check_config cc;
        sts_check_report rep;
        sts_dataset *ds = NULL;
        memset(&cc, 0, sizeof cc);
        cc.data = sum.bytes <= ((uint64_t)64 << 20);  /* a padded tail of a huge batch_size: a sparse file of terabytes */
        r = sts_dataset_check(fo_dir, &cc, &o, &rep, &e);
        if (r != STS_OK) fprintf(stderr, "check: %s\n", e.message);
        FZ_CHECK(r == STS_OK && rep.problems == 0);
        sts_read_config rc;
        memset(&rc, 0, sizeof rc);
        rc.infer_schema = 1;
        r = sts_dataset_open(fo_dir, &rc, &o, &ds, &e);
        if (r != STS_OK) fprintf(stderr, "open: %s\n", e.message);
        FZ_CHECK(r == STS_OK);
        sts_dataset_close(ds);
    } else {
        const char *const *msgs = (const char *const *)&msg;
        r = sts_dataset_abort(fo_dir, msgs, &msg_len, msg ? 1 : 0, &o, &e);
        if (r != STS_OK) fprintf(stderr, "abort: %s\n", e.message);
        FZ_CHECK(r == STS_OK);
        after = tf_snapshot(fo_dir, 1);
        fo_snap_same(&before, &after);
        tf_snap_free(&after);
    }
    if (getenv("FZ_OPT_TRACE"))
        fprintf(stderr, "  %s mode, rows taken %zu, %s; allocation %ld of %ld %s\n", c.batch_size ? "batch" : "KV", taken,
                committed ? "committed" : "not committed", (long)(flags & 63), fo_alloc.calls,
                fo_alloc.failed ? "failed" : "-");
    if (msg) sts_free(&o, msg, msg_len + 1);
    tf_snap_free(&before);
    FZ_CHECK(fo_alloc.bad == 0);
    if (fo_alloc.bytes || fo_alloc.blocks)
        fprintf(stderr, "%lld bytes in %ld blocks still allocated\n", (long long)fo_alloc.bytes, fo_alloc.blocks);
    FZ_CHECK(fo_alloc.bytes == 0 && fo_alloc.blocks == 0);
}

static void fo_cleanup(void) { if (fo_dir[0]) tf_rmtree(fo_dir); }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!fo_dir[0]) {
        tf_fast_tmpdir(fo_dir, sizeof fo_dir);
        atexit(fo_cleanup);
    }
    if (size < 1) return 0;
    fo_run(data, size);
    return 0;
}
