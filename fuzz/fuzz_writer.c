/* Fuzz target: the dataset writer (layer 8) end to end. An input is a job: its options, a list of
   rows (good ones, and ones the writer must refuse), and a fault to inject; the target runs it
   through sts_dataset_prepare, one or two task writers, their commits and sts_dataset_commit,
   keeping a model of what the dataset must hold, then reads the folder back.

   Built with STS_KV_CHUNK_BYTES = 16 KiB, so the KV writer's chunks fill, roll, are held back and
   sent (kv_layout = arrival) with a few kilobytes of rows, and shard targets of 256 bytes to 3 MiB
   (target_shard_bytes) roll shards often.

   Input: four bytes, then ops of three bytes [op][a][b] until the end.
     byte 0: bits 0-1 mode (3: batch, else KV)   0x04 kv_layout arrival   0x08 duplicates lastWin
             0x10 io_thread false   0x20 generate_index   0x40 two task writers (rows alternate
             between them with op 7)   0x80 a committed dataset is there first (overwrite mode)
     byte 1: KV: bits 0-3 the shard target (a table); batch: bits 0-2 batch_size - 1, bits 3-4
             tail_strategy; both: 0x20 durable, 0x40 kv_separator "/" (else "__"), 0x80 arrays
             encoded to BF16 (truncate; else F32)
     byte 2: bits 0-1 data columns (1 + value % 3); bit 2 + i: column i is an F32 array (else a
             tensor); 0x40 kv_separator "__meta" and the third column "data__" (the key "" then
             names a tensor "__metadata__", which the writer must refuse); 0x80 (KV) the third
             column holds kv_separator, which sts_dataset_prepare must refuse
     byte 3: the fault: bits 0-1 none / the k-th allocation fails / the k-th write-side call
             fails with ENOSPC / with EIO; k = 1 + (byte 3 >> 2) * 5 for allocations (the job's
             allocations are numbered from sts_dataset_prepare on), 1 + (byte 3 >> 2) for calls
     ops: op % 8 in 0..5: a row; a = its key (bits 6-7: one of 8 keys, one of 64, a new key in
          ascending order, a new key in descending order; some keys need JSON escapes, some are
          multibyte UTF-8), b = its cells' size (bits 6-7: b & 63 elements, times 17, times 129,
          the column's usual size; batch mode: the usual size unless b & 63 is 63, then as in KV,
          or 62, a cell of 540,000 elements, whose F32 bytes pass the 2 MiB stage and go out from
          the caller's buffer); op bits 3-4 a tensor's dtype (0: its column's; KV only), bits 5-6
          its shape (rank 1, rank 2, a scalar, rank 3; KV only); op % 8 == 5 breaks the row
          instead, by a % 5:
          a key that is not UTF-8, a key with NUL, a cell with bytes but no data, a tensor whose
          bytes disagree with its shape, an unknown dtype.
          op % 8 == 6: the next rows go to the other task writer (two tasks); 7, by a % 4: once the
          job has committed and been checked, sts_dataset_reindex rebuilds the index from the
          shards (0; b: 0, or odd: allocation 1 + b / 2 fails, even: write-side call b / 2 fails), or the driver calls sts_dataset_discard and sts_dataset_abort with the
          job's messages (4; b % 33: 0, or the allocation in them that fails); before the dataset commit, a wrong one: a task's message twice (1,
          5), the earlier job's message added (2, 6; with 0x80 in byte 0), a task's message cut
          short (3, 7).

   Checked (a failed check aborts: a finding):
     - every refused row is refused under the rule the model expects (the key first, then the
       cells in column order, then duplicatesStrategy=fail), with a complete error, and changes
       nothing: the dataset at the end holds exactly the model's rows;
     - progress counts the rows taken;
     - without a fault, or when the fault never fires: the job commits, sts_dataset_check with data
       (headers strictly, CRC-32C of every shard, the index both ways, no orphan, temporary or
       lock) finds no problem; every key read back through the index, and again through the
       shards' headers (no_index), has the model's dtype, shape and bytes (lastWin: the last row's);
       every shard of the sorted layout and every batch file is the reference writer's bytes
       (sts_write_memory of its tensors and metadata gives the file again); a long scan names no
       tensor the model lacks, and (duplicates=fail) each exactly once; a KV
       shard is over the target only when it holds one sample; batch files hold the rows in
       order, stacked, with the tail as tail_strategy says; after sts_dataset_reindex (op 7) the
       folder checks clean again and every key still reads the model's value (the same winner
       for a key that lastWin left in two shards);
     - a wrong dataset commit (op 7) is refused with a complete error and changes nothing in
       the folder (the tasks' shards and the lock stay, for the right commit, which follows);
       discard and abort after the commit refuse the messages naming its shards
       (dataset.published; always when no allocation fails in them) and change nothing either;
     - when a fault fires: the failing call returns NOMEM or IO (only then), a task writer that
       failed refuses what follows, and after the writers' close and sts_dataset_abort the folder
       is byte for byte what it was before the job (empty, or the earlier dataset; with an
       allocation fault the abort is first called with one failing too: NOMEM, or done; and after
       a commit, check and clean with an allocation failing: NOMEM or a clean verdict, nothing
       removed), but for a
       durable commit or reindex whose last call, the folder's fsync, failed: io.durable, and the
       dataset (or the index) is published, checked as above;
     - the checking allocator: no misuse, nothing left allocated.
   Under the replay build the same checks run over fuzz/corpus/writer/. */
#define _POSIX_C_SOURCE 200809L
#ifndef FW_CHUNK_KIB
#define FW_CHUNK_KIB 16  /* a campaign may build with another: -DFW_CHUNK_KIB=4 */
#endif
#define STS_KV_CHUNK_BYTES ((size_t)FW_CHUNK_KIB << 10)
#define STS_IMPLEMENTATION
#include "../safetensors_spark.h"
#define FZ_NO_HEADER_MUTATOR
#include "fuzz_common.h"
#include "../tests/fs_util.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FW_MAX_ROWS 320
#define FW_MAX_BYTES ((uint64_t)6 << 20)   /* the rows' bytes an input may ask for */
#define FW_BIG 540000                        /* batch: elements of a large cell (F32: over the 2 MiB stage,
                                                written from the caller's bytes) */
#define FW_CELL_MAX (8 * 63 * 129 > 4 * (FW_BIG + 32) ? 8 * 63 * 129 : 4 * (FW_BIG + 32))
#define FW_MAX_NAMES (2 * FW_MAX_ROWS * 3)

static const uint64_t FW_TARGETS[16] = { 256,   700,   2048,   5000,   12000,   16384,   30000,     65536,
                                         100000, 200000, 400000, 1 << 20, 3 << 20, 100, 50000, 8192 };

/* ---- the job ---- */
typedef struct fw_job {
    int kv, arrival, lastwin, no_io, index, two, previous, durable, bf16;
    uint64_t target, batch;
    sts_tail tail;
    const char *sep;
    size_t ncols;                /* data columns */
    int array[3];                /* column i is an F32 array */
    const char *cname[3];
    int sep_in_col;              /* a column holds kv_separator: prepare refuses the job */
    int fault;                   /* 0 none, 1 allocation, 2 ENOSPC, 3 EIO (0 once the job ends) */
    int fault_kind;              /* the same, kept for the trace */
    long fault_at;
} fw_job;

/* a row's cell as the model keeps it: where its bytes come from and how they look */
typedef struct fw_cell {
    uint32_t task, row, col;     /* the generator's seed */
    sts_dtype dtype;             /* tensors: the cell's; arrays: the element dtype (F32) */
    uint32_t rank;
    uint64_t shape[3];
    uint64_t n;                  /* elements */
} fw_cell;
typedef struct fw_name {         /* a KV tensor name and its latest value */
    char name[64];
    size_t len;
    fw_cell cell;
    int used;
} fw_name;

static fw_job J;
static fw_name g_names[FW_MAX_NAMES];
static size_t g_nnames;
static fw_cell g_rows[2][FW_MAX_ROWS][3];   /* batch: each task's accepted rows */
static size_t g_nrows[2];
static int g_fixed[2][3];                   /* a task's column took its first row (its dtype, batch: shape) */
static fw_cell g_first[2][3];
static tu_alloc g_alloc;
static sts_options g_opts;
static long g_calls, g_fired;              /* write-side calls, faults injected */
static char g_dir[64];
static char *g_prev_msg;                   /* the earlier job's commit message (0x80) */
static size_t g_prev_len;

/* The hook runs on the I/O threads too: the fault kind and the counters are atomics. */
static int fw_io_fault(void *user, const char *op) {
    long k = __atomic_add_fetch(&g_calls, 1, __ATOMIC_SEQ_CST);
    int f = __atomic_load_n(&J.fault, __ATOMIC_SEQ_CST);
    (void)user; (void)op;
    if ((f == 2 || f == 3) && k == J.fault_at) {
        __atomic_add_fetch(&g_fired, 1, __ATOMIC_SEQ_CST);
        return f == 2 ? ENOSPC : EIO;
    }
    return 0;
}
static int fw_fired(void) { return g_alloc.failed > 0 || __atomic_load_n(&g_fired, __ATOMIC_SEQ_CST) > 0; }
/* A call refused for the injected fault alone: a complete error, NOMEM or IO, and a fault fired. */
static void fw_fault_only(const char *what, sts_result r, const sts_error *e) {
    fz_check_error(r, e, UINT64_MAX);
    if (!((r == STS_ERR_NOMEM || r == STS_ERR_IO) && fw_fired())) fprintf(stderr, "%s: %s\n", what, e->message);
    FZ_CHECK((r == STS_ERR_NOMEM || r == STS_ERR_IO) && fw_fired());
}
static void fw_faults_off(void) { __atomic_store_n(&J.fault, 0, __ATOMIC_SEQ_CST); g_alloc.fail_at = 0; }
static uint64_t g_files;  /* files of the committed dataset (the trace) */

/* ---- the cells' bytes ---- */
static uint64_t fw_mix(uint64_t x) {
    x ^= x >> 31; x *= 0x7fb5d329728ea185ull; x ^= x >> 27; x *= 0x81dadef4bc2dd44dull; x ^= x >> 33;
    return x;
}
static size_t fw_esize(sts_dtype d) { return sts_dtype_bits(d) / 8; }
/* The cell's input: tensor bytes, or the array's floats (exact in F32, truncated in BF16). */
static void fw_fill(const fw_cell *c, int array, uint8_t *out) {
    uint64_t s = fw_mix((uint64_t)c->task << 48 ^ (uint64_t)c->row << 8 ^ c->col), i;
    if (array) {
        float *f = (float *)(void *)out;
        for (i = 0; i < c->n; i++) f[i] = (float)((int)(fw_mix(s + i) % 4001) - 2000) / 8.0f;
    } else {
        uint64_t n = c->n * fw_esize(c->dtype);
        for (i = 0; i < n; i++) out[i] = (uint8_t)fw_mix(s + i / 8) >> (i % 8);
    }
}
/* The bytes the file must hold for the cell (little-endian). */
static void fw_expect(const fw_cell *c, int array, uint8_t *out, uint8_t *tmp) {
    uint64_t i;
    if (!array) { fw_fill(c, 0, out); return; }
    fw_fill(c, 1, tmp);
    for (i = 0; i < c->n; i++) {
        uint32_t u;
        float f;
        memcpy(&f, tmp + 4 * i, 4);
        memcpy(&u, &f, 4);
        if (J.bf16) { out[2 * i] = (uint8_t)(u >> 16); out[2 * i + 1] = (uint8_t)(u >> 24); }
        else { out[4 * i] = (uint8_t)u; out[4 * i + 1] = (uint8_t)(u >> 8); out[4 * i + 2] = (uint8_t)(u >> 16); out[4 * i + 3] = (uint8_t)(u >> 24); }
    }
}
static uint64_t fw_file_bytes(const fw_cell *c, int array) {
    return array ? c->n * (J.bf16 ? 2u : 4u) : c->n * fw_esize(c->dtype);
}

/* ---- the model's names ---- */
static fw_name *fw_find(const char *name, size_t len) {
    size_t i;
    for (i = 0; i < g_nnames; i++)
        if (g_names[i].len == len && memcmp(g_names[i].name, name, len) == 0) return &g_names[i];
    return NULL;
}
/* a key: bits 6-7 of a pick the kind; the task's letter first keeps the tasks' keys apart */
static size_t fw_key(uint32_t task, uint8_t a, uint32_t *fresh, char *out) {
    static const char *const odd[8] = { "", "\"q", "\\b", "t\tab", "\xc3\xa9t\xc3\xa9", "\xe2\x82\xac", "sp ace", "\x01" };
    int n;
    switch (a >> 6) {
    case 0:
        if ((a & 15) == 8 && task == 0) n = 0, out[0] = 0;  /* "" */
        else if (a & 8) n = snprintf(out, 48, "%c%s", 'A' + task, odd[a & 7]);
        else n = snprintf(out, 48, "%cp%u", 'A' + task, a & 7);
        break;
    case 1: n = snprintf(out, 48, "%cq%02u", 'A' + task, a & 63); break;
    case 2: n = snprintf(out, 48, "%cn%06u", 'A' + task, (*fresh)++); break;
    default: n = snprintf(out, 48, "%cz%06u", 'A' + task, 999999u - (*fresh)++); break;
    }
    return (size_t)n;
}
/* the empty key (when the third column is "metadata__"): "__metadata__" with separator "__" */
static size_t fw_name_of(char *out, const char *key, size_t klen, size_t col) {
    size_t sl = strlen(J.sep), cl = strlen(J.cname[col]);
    memcpy(out, key, klen);
    memcpy(out + klen, J.sep, sl);
    memcpy(out + klen + sl, J.cname[col], cl);
    return klen + sl + cl;
}

/* ---- folder snapshots (tests/fs_util.h): a failed job leaves the folder as it found it ---- */
static void fw_snap_same(const tf_snap *a, const tf_snap *b) {
    tu_sb why = { NULL, 0, 0 };
    if (!tf_snap_same(a, b, &why)) fprintf(stderr, "the folder changed:%s\n", why.p);
    FZ_CHECK(why.n == 0);
}

/* ---- the schema and the config ---- */
static sts_column g_schema[4];
static size_t g_nschema;
static void fw_config(sts_write_config *c, int overwrite) {
    memset(c, 0, sizeof *c);
    if (J.kv) {
        c->name_col = "id";
        c->kv_separator = J.sep;
        c->duplicates = J.lastwin ? STS_DUPLICATES_LAST_WIN : STS_DUPLICATES_FAIL;
        c->target_shard_bytes = J.target;
        c->kv_layout = J.arrival ? STS_KV_ARRIVAL : STS_KV_SORTED;
    } else {
        c->batch_size = J.batch;
        c->tail = J.tail;
    }
    c->has_dtype = 1;
    c->dtype = J.bf16 ? STS_DTYPE_BF16 : STS_DTYPE_F32;
    c->generate_index = J.index;
    c->no_fsync = !J.durable;
    c->no_io_thread = J.no_io;
    c->overwrite = overwrite;
    c->commit_threads = 1;
}
static void fw_schema(void) {
    size_t i;
    g_nschema = 0;
    if (J.kv) { g_schema[0].name = "id"; g_schema[0].kind = STS_VALUE_STRING; g_schema[0].elem = STS_DTYPE_U8; g_nschema = 1; }
    for (i = 0; i < J.ncols; i++) {
        g_schema[g_nschema].name = J.cname[i];
        g_schema[g_nschema].kind = J.array[i] ? STS_VALUE_ARRAY : STS_VALUE_TENSOR;
        g_schema[g_nschema].elem = STS_DTYPE_F32;
        g_nschema++;
    }
}

/* ---- a job's run ---- */
typedef struct fw_task {
    sts_task_writer *w;
    int failed;                  /* refused as failed earlier: the job stops */
    int faulted;                 /* a call returned NOMEM or IO */
    uint64_t taken;
    char *msg;
    size_t msg_len;
} fw_task;

static const sts_dtype FW_DTYPES[4][3] = {  /* [variant][column]: 0 is the column's own */
    { STS_DTYPE_F32, STS_DTYPE_U8, STS_DTYPE_F16 },
    { STS_DTYPE_U8, STS_DTYPE_I64, STS_DTYPE_U8 },
    { STS_DTYPE_I64, STS_DTYPE_F32, STS_DTYPE_BF16 },
    { STS_DTYPE_BF16, STS_DTYPE_F16, STS_DTYPE_I64 },
};

/* Whether a writer refuses everything since a failure: a row that is refused at its first cell
   (a key or a cell with bytes but no data: SCHEMA) changes nothing, so it can ask. */
static int fw_sticky(sts_task_writer *w) {
    sts_value row[4];
    sts_error e;
    sts_result r;
    memset(row, 0, sizeof row);
    row[0].size = 1;
    if (!J.kv && !J.array[0]) row[0].dtype = (sts_dtype)(STS_DTYPE_COUNT + 3);
    r = sts_task_write(w, row, &e);
    fz_check_error(r, &e, UINT64_MAX);
    if (e.rule == STS_RULE_STATE) return 1;
    FZ_CHECK(r == STS_ERR_SCHEMA);
    return 0;
}

/* One row: builds it, predicts the verdict, writes it, checks the verdict; 1 to go on, 0 when
   the job stops (a fault). */
static int fw_row(fw_task *t, uint32_t task, uint8_t op, uint8_t a, uint8_t b, uint32_t *fresh, uint64_t *budget,
                  uint32_t seq) {
    static uint8_t buf[3][FW_CELL_MAX];
    static uint64_t shapes[3][3];
    sts_value row[4];
    fw_cell cells[3];
    char key[64];
    size_t klen, i, base = J.kv ? 1 : 0;
    sts_rule want = STS_RULE_NONE;
    int broken = op % 8 == 5 ? a % 5 : -1;
    uint64_t bytes = 0;
    sts_error e;
    sts_result r;
    memset(row, 0, sizeof row);
    klen = fw_key(task, broken >= 0 ? (uint8_t)(a & 0x3f) : a, fresh, key);
    if (J.kv) {
        if (broken == 0) { key[klen++] = '\xff'; }
        if (broken == 1) { if (klen) key[klen / 2] = 0; else key[klen++] = 0; }
        row[0].data = key;
        row[0].size = klen;
        if (broken == 0 || broken == 1) want = STS_RULE_ROW_VALUE;
    }
    for (i = 0; i < J.ncols; i++) {
        fw_cell *c = &cells[i];
        sts_value *v = &row[base + i];
        uint64_t n;
        int cls = b >> 6, dv = (op >> 3) & 3, rv = (op >> 5) & 3, last = broken >= 2 && i == J.ncols - 1;
        sts_rule cell = STS_RULE_NONE;  /* this cell's verdict, in sts__cell_check's order */
        memset(c, 0, sizeof *c);
        c->task = task; c->row = seq; c->col = (uint32_t)i;
        if (!J.kv) { dv = 0; rv = 0; if ((b & 63) < 62) cls = 3; }  /* batch: the usual row, mostly */
        n = cls == 0 ? (uint64_t)(b & 63) : cls == 1 ? (uint64_t)(b & 63) * 17 : cls == 2 ? (uint64_t)(b & 63) * 129 : 48 + 16 * i;
        if (!J.kv && (b & 63) == 62) n = FW_BIG + 16 * i;  /* batch: a large cell */
        if (J.array[i]) {
            c->dtype = STS_DTYPE_F32;
            c->rank = 1; c->shape[0] = n; c->n = n;
            fw_fill(c, 1, buf[i]);
            v->data = n ? buf[i] : NULL;
            v->size = n;
            if (!J.kv && g_fixed[task][i] && n != g_first[task][i].n) cell = STS_RULE_ROW_SHAPE;
            if (last && broken == 2 && n && cell == STS_RULE_NONE) { v->data = NULL; cell = STS_RULE_ROW_VALUE; }
        } else {
            int shape_differs;
            c->dtype = FW_DTYPES[dv][i];
            switch (rv) {
            case 0: c->rank = 1; c->shape[0] = n; break;
            case 1: c->rank = 2; c->shape[0] = 2; c->shape[1] = n / 2; break;
            case 2: c->rank = 0; break;
            default: c->rank = 3; c->shape[0] = 1; c->shape[1] = n; c->shape[2] = 1; break;
            }
            c->n = 1;
            { uint32_t d; for (d = 0; d < c->rank; d++) c->n *= c->shape[d]; }
            fw_fill(c, 0, buf[i]);
            memcpy(shapes[i], c->shape, sizeof shapes[i]);
            v->data = buf[i];
            v->size = c->n * fw_esize(c->dtype);
            v->dtype = c->dtype;
            v->rank = c->rank;
            v->shape = shapes[i];
            shape_differs = !J.kv && g_fixed[task][i] &&
                            (c->rank != g_first[task][i].rank || memcmp(c->shape, g_first[task][i].shape, c->rank * sizeof c->shape[0]) != 0);
            if (last && broken == 2 && v->size) v->data = NULL;
            if (last && broken == 3) v->size += 1;
            if (last && broken == 4) v->dtype = (sts_dtype)(STS_DTYPE_COUNT + 3);
            if (last && broken == 4) cell = STS_RULE_ROW_VALUE;                  /* dtype out of range */
            else if (g_fixed[task][i] && c->dtype != g_first[task][i].dtype) cell = STS_RULE_ROW_DTYPE;
            else if (last && broken == 3) cell = STS_RULE_ROW_VALUE;             /* bytes against the shape */
            else if (shape_differs) cell = STS_RULE_ROW_SHAPE;                   /* batch mode stacks rows */
            else if (last && broken == 2 && v->size) cell = STS_RULE_ROW_VALUE;  /* bytes but no data */
        }
        if (want == STS_RULE_NONE) want = cell;
        bytes += fw_file_bytes(c, J.array[i]);
    }
    if (bytes > *budget) return 1;  /* the input asked for too much: the row is skipped */
    *budget -= bytes;
    /* KV names: "__metadata__", then duplicates (fail) */
    if (J.kv && want == STS_RULE_NONE) {
        for (i = 0; i < J.ncols && want == STS_RULE_NONE; i++) {  /* column by column, as the writer names them */
            char nm[80];
            size_t nl = fw_name_of(nm, key, klen, i);
            if (nl == 12 && memcmp(nm, "__metadata__", 12) == 0) want = STS_RULE_ROW_VALUE;
            else if (!J.lastwin && fw_find(nm, nl)) want = STS_RULE_DUPLICATE_KEY;
        }
    }
    r = sts_task_write(t->w, row, &e);
    if (getenv("FZ_WR_TRACE"))
        fprintf(stderr, "    task %u row %u: key %zu bytes, %llu bytes of cells: want %s, got %s%s%s\n", task, seq, klen,
                (unsigned long long)bytes, want == STS_RULE_NONE ? "ok" : sts_rule_id(want), sts_result_name(r),
                r == STS_OK ? "" : ": ", r == STS_OK ? "" : e.message);
    if (r == STS_ERR_NOMEM || r == STS_ERR_IO) {  /* the fault: IO is sticky, NOMEM may be */
        fz_check_error(r, &e, UINT64_MAX);
        FZ_CHECK(fw_fired());
        t->faulted = 1;
        if (fw_sticky(t->w)) { t->failed = 1; return 0; }  /* the job stops */
        FZ_CHECK(r == STS_ERR_NOMEM);
        return 1;  /* refused, and nothing changed (the model says so at the end) */
    }
    if (r != STS_OK && e.rule == STS_RULE_STATE) {  /* failed earlier: only after a fault */
        fz_check_error(r, &e, UINT64_MAX);
        FZ_CHECK(t->faulted);
        t->failed = 1;
        return 0;
    }
    if (want != STS_RULE_NONE) {
        if (r == STS_OK || e.rule != want)
            fprintf(stderr, "row %u of task %u: want %s, got %s: %s\n", seq, task, sts_rule_id(want), sts_result_name(r), e.message);
        FZ_CHECK(r != STS_OK);
        fz_check_error(r, &e, UINT64_MAX);
        FZ_CHECK(e.rule == want);
        return 1;
    }
    if (r != STS_OK) fprintf(stderr, "row %u of task %u refused: %s\n", seq, task, e.message);
    FZ_CHECK(r == STS_OK);
    t->taken++;
    for (i = 0; i < J.ncols; i++)
        if (!g_fixed[task][i]) { g_fixed[task][i] = 1; g_first[task][i] = cells[i]; }
    if (J.kv) {
        for (i = 0; i < J.ncols; i++) {
            char nm[80];
            size_t nl = fw_name_of(nm, key, klen, i);
            fw_name *m = fw_find(nm, nl);
            if (!m) {
                FZ_CHECK(g_nnames < FW_MAX_NAMES && nl <= sizeof m->name);
                m = &g_names[g_nnames++];
                memcpy(m->name, nm, nl);
                m->len = nl;
            }
            m->cell = cells[i];
            m->used = 0;
        }
    } else {
        FZ_CHECK(g_nrows[task] < FW_MAX_ROWS);
        memcpy(g_rows[task][g_nrows[task]++], cells, sizeof cells);
    }
    return 1;
}

/* ---- the checks of a committed dataset ---- */
static uint8_t g_want[FW_CELL_MAX], g_tmp[FW_CELL_MAX];
static void fw_same_tensor(const fw_cell *c, int array, sts_dtype dtype, uint32_t rank, const uint64_t *shape,
                           const void *data, uint64_t nbytes) {
    uint64_t n = fw_file_bytes(c, array);
    FZ_CHECK(dtype == (array ? (J.bf16 ? STS_DTYPE_BF16 : STS_DTYPE_F32) : c->dtype));
    FZ_CHECK(rank == c->rank);
    FZ_CHECK(rank == 0 || memcmp(shape, c->shape, rank * sizeof *shape) == 0);
    FZ_CHECK(nbytes == n);
    fw_expect(c, array, g_want, g_tmp);
    FZ_CHECK(n == 0 || (data && memcmp(data, g_want, (size_t)n) == 0));
}
/* A shard of the sorted layout (and a batch file) is the reference writer's bytes: sts_write_memory
   of its own tensors and metadata gives the file again, byte for byte. */
static void fw_same_as_writer(const char *name) {
    char p[256];
    size_t n, i, k;
    uint8_t *bytes;
    sts_file *f = NULL;
    sts_error e;
    sts_tensor_spec *specs;
    int same = 0;
    tf_join(p, sizeof p, g_dir, name);
    bytes = tf_read(p, &n);
    FZ_CHECK(sts_parse(bytes, n, &g_opts, &f, &e) == STS_OK);
    FZ_CHECK((specs = (sts_tensor_spec *)calloc(sts_count(f) + 1, sizeof *specs)) != NULL);
    for (i = 0; i < sts_count(f); i++) {
        const sts_tensor *t = sts_at(f, i);
        specs[i].name = t->name; specs[i].name_len = t->name_len; specs[i].dtype = t->dtype;
        specs[i].rank = t->rank; specs[i].shape = t->shape;
        specs[i].data = sts_data(f, t); specs[i].data_size = t->end - t->begin;
    }
    for (k = 0; k < 2 && !same; k++) {  /* no metadata: without the key, or "__metadata__":{} */
        size_t nm = sts_metadata_count(f);
        sts_kv *meta = NULL;
        void *out = NULL;
        size_t out_size = 0;
        if (nm || k) {
            FZ_CHECK((meta = (sts_kv *)calloc(nm + 1, sizeof *meta)) != NULL);
            for (i = 0; i < nm; i++) meta[i] = *sts_metadata_at(f, i);
        }
        FZ_CHECK(sts_write_memory(specs, sts_count(f), meta, nm, &g_opts, &out, &out_size, &e) == STS_OK);
        same = out_size == n && memcmp(out, bytes, n) == 0;
        sts_free(&g_opts, out, out_size);
        free(meta);
        if (nm) break;
    }
    if (!same) fprintf(stderr, "%s: not the reference writer's bytes\n", name);
    FZ_CHECK(same);
    free(specs);
    sts_close(f);
    free(bytes);
}
static void fw_check_kv(void) {
    sts_read_config rc;
    size_t i, pass;
    for (pass = 0; pass < 2; pass++) {
        sts_dataset *ds = NULL;
        sts_error e;
        sts_dataset_info info;
        sts_scan_spec sp;
        sts_scan *s = NULL;
        size_t f;
        memset(&rc, 0, sizeof rc);
        rc.no_index = (int)pass;
        rc.infer_schema = 1;
        if (sts_dataset_open(g_dir, &rc, &g_opts, &ds, &e) != STS_OK) fprintf(stderr, "open: %s\n", e.message);
        FZ_CHECK(ds != NULL);
        info = sts_dataset_describe(ds);
        g_files = info.files;
        FZ_CHECK(info.kv && info.has_manifest);
        if (!pass) FZ_CHECK(info.has_index == J.index);
        for (i = 0; i < g_nnames; i++) {
            const fw_name *m = &g_names[i];
            sts_view v;
            sts_result r = sts_dataset_get(ds, m->name, m->len, 1, &v, &e);
            if (r != STS_OK) fprintf(stderr, "get %.*s: %s\n", (int)m->len, m->name, e.message);
            FZ_CHECK(r == STS_OK);
            fw_same_tensor(&m->cell, J.array[m->cell.col], v.dtype, v.rank, v.shape, v.data, v.nbytes);
        }
        /* every file within the target, unless it holds one sample */
        for (f = 0; f < info.files; f++) {
            char p[256];
            int64_t sz;
            tf_join(p, sizeof p, g_dir, sts_dataset_file(ds, f));
            sz = tf_file_size(p);
            FZ_CHECK(sz > 0);
            if ((uint64_t)sz > J.target && sts_dataset_file_samples(ds, f) > 1)
                fprintf(stderr, "%s: %lld bytes over the target %llu with %llu samples\n", sts_dataset_file(ds, f),
                        (long long)sz, (unsigned long long)J.target, (unsigned long long)sts_dataset_file_samples(ds, f));
            FZ_CHECK((uint64_t)sz <= J.target || sts_dataset_file_samples(ds, f) <= 1);
            if (!pass && !J.arrival) fw_same_as_writer(sts_dataset_file(ds, f));
        }
        /* a long scan: names the model has, each once unless lastWin left older copies */
        memset(&sp, 0, sizeof sp);
        sp.long_form = 1;
        FZ_CHECK(sts_scan_open(ds, &sp, &s, &e) == STS_OK);
        for (i = 0; i < g_nnames; i++) g_names[i].used = 0;
        for (;;) {
            const sts_view *c = NULL;
            size_t nc = 0;
            fw_name *m;
            FZ_CHECK(sts_scan_next(s, &c, &nc, &e) == STS_OK);
            if (!nc) break;
            m = fw_find(c->key, c->key_len);
            if (!m) fprintf(stderr, "scan: tensor %.*s is not in the model\n", (int)c->key_len, c->key);
            FZ_CHECK(m != NULL);
            m->used++;
        }
        sts_scan_close(s);
        for (i = 0; i < g_nnames; i++) FZ_CHECK(g_names[i].used >= 1 && (J.lastwin || g_names[i].used == 1));
        sts_dataset_close(ds);
    }
}
static void fw_check_batch(void) {
    sts_dataset *ds = NULL;
    sts_error e;
    sts_dataset_info info;
    size_t f, i, cons[2] = { 0, 0 };
    unsigned last = 0;
    sts_read_config rc;
    memset(&rc, 0, sizeof rc);
    rc.infer_schema = 1;
    if (sts_dataset_open(g_dir, &rc, &g_opts, &ds, &e) != STS_OK) fprintf(stderr, "open: %s\n", e.message);
    FZ_CHECK(ds != NULL);
    info = sts_dataset_describe(ds);
    g_files = info.files;
    FZ_CHECK(!info.kv);
    for (f = 0; f < info.files; f++) {  /* name order: a task's files in the order its rows came */
        const char *name = sts_dataset_file(ds, f);
        char p[256];
        sts_file *sf = NULL;
        unsigned task = 99;
        size_t at;
        uint64_t rows, slots;
        FZ_CHECK(sscanf(name, "part-%5u-", &task) == 1 && task < 2 && task >= last);
        last = task;
        at = cons[task];
        FZ_CHECK(at < g_nrows[task]);
        rows = g_nrows[task] - at < J.batch ? g_nrows[task] - at : J.batch;
        FZ_CHECK(!(rows < J.batch && J.tail == STS_TAIL_DROP));
        slots = rows < J.batch && J.tail == STS_TAIL_PAD ? J.batch : rows;
        FZ_CHECK(sts_dataset_file_samples(ds, f) == rows);
        tf_join(p, sizeof p, g_dir, name);
        fw_same_as_writer(name);
        FZ_CHECK(sts_open(p, &g_opts, &sf, &e) == STS_OK);
        FZ_CHECK(sts_count(sf) == J.ncols);
        for (i = 0; i < J.ncols; i++) {
            const sts_tensor *t = sts_find(sf, J.cname[i], strlen(J.cname[i]));
            const uint8_t *d;
            const fw_cell *c0 = &g_rows[task][at][i];
            uint64_t per = fw_file_bytes(c0, J.array[i]), r2, k;
            FZ_CHECK(t != NULL);
            FZ_CHECK(t->rank == 1 + c0->rank && t->shape[0] == slots);
            FZ_CHECK(c0->rank == 0 || memcmp(t->shape + 1, c0->shape, c0->rank * sizeof *t->shape) == 0);
            FZ_CHECK(t->end - t->begin == slots * per);
            d = (const uint8_t *)sts_data(sf, t);
            for (r2 = 0; r2 < slots; r2++) {
                if (r2 < rows) {
                    fw_same_tensor(&g_rows[task][at + r2][i], J.array[i], J.array[i] ? (J.bf16 ? STS_DTYPE_BF16 : STS_DTYPE_F32) : c0->dtype,
                                   c0->rank, c0->shape, d + r2 * per, per);
                } else {
                    for (k = 0; k < per; k++) FZ_CHECK(d[r2 * per + k] == 0);  /* a padding row */
                }
            }
        }
        sts_close(sf);
        cons[task] += rows;
    }
    for (i = 0; i < 2; i++)  /* every row is in a file, but a dropped tail */
        FZ_CHECK(cons[i] == g_nrows[i] || (J.tail == STS_TAIL_DROP && g_nrows[i] - cons[i] < J.batch));
    sts_dataset_close(ds);
}

/* A committed dataset for the overwrite case: a few rows of the job's own kind, no faults. */
static void fw_previous(void) {
    sts_write_config c;
    sts_task_writer *w = NULL;
    sts_error e;
    char *msg = NULL;
    size_t len = 0, i, k;
    const char *const *msgs;
    static uint8_t cell[3][256];
    static float arr[3][64];
    static uint64_t shape[3][1];
    int fault = J.fault;
    __atomic_store_n(&J.fault, 0, __ATOMIC_SEQ_CST);  /* the earlier job runs without faults */
    fw_config(&c, 0);
    c.duplicates = STS_DUPLICATES_FAIL;
    FZ_CHECK(sts_dataset_prepare(g_dir, &c, g_schema, g_nschema, &g_opts, &e) == STS_OK);
    FZ_CHECK(sts_task_open(g_dir, 7, &c, g_schema, g_nschema, &g_opts, &w, &e) == STS_OK);
    for (k = 0; k < 5; k++) {
        sts_value row[4];
        char key[16];
        memset(row, 0, sizeof row);
        snprintf(key, sizeof key, "old%u", (unsigned)k);
        if (J.kv) { row[0].data = key; row[0].size = strlen(key); }
        for (i = 0; i < J.ncols; i++) {
            sts_value *v = &row[(J.kv ? 1 : 0) + i];
            memset(cell[i], (int)(k * 16 + i), sizeof cell[i]);
            if (J.array[i]) { size_t q; for (q = 0; q < 64; q++) arr[i][q] = (float)(k + q); v->data = arr[i]; v->size = 64; }
            else { shape[i][0] = 256; v->data = cell[i]; v->size = 256; v->dtype = STS_DTYPE_U8; v->rank = 1; v->shape = shape[i]; }
        }
        FZ_CHECK(sts_task_write(w, row, &e) == STS_OK);
    }
    FZ_CHECK(sts_task_commit(w, &msg, &len, &e) == STS_OK);
    sts_task_close(w);
    msgs = (const char *const *)&msg;
    FZ_CHECK(sts_dataset_commit(g_dir, &c, msgs, &len, 1, &g_opts, NULL, &e) == STS_OK);
    FZ_CHECK((g_prev_msg = (char *)malloc(len + 1)) != NULL);
    memcpy(g_prev_msg, msg, len + 1);
    g_prev_len = len;
    sts_free(&g_opts, msg, len + 1);
    __atomic_store_n(&J.fault, fault, __ATOMIC_SEQ_CST);
}

static void fw_setup(const uint8_t *d) {
    static const char *const names[3] = { "c0", "c1", "c2" };
    size_t i;
    memset(&J, 0, sizeof J);
    J.kv = (d[0] & 3) != 3;
    J.arrival = (d[0] >> 2) & 1;
    J.lastwin = (d[0] >> 3) & 1;
    J.no_io = (d[0] >> 4) & 1;
    J.index = (d[0] >> 5) & 1;
    J.two = (d[0] >> 6) & 1;
    J.previous = (d[0] >> 7) & 1;
    J.target = FW_TARGETS[d[1] & 15];
    J.batch = 1 + (d[1] & 7);
    J.tail = (sts_tail)((d[1] >> 3) & 3) == STS_TAIL_COUNT ? STS_TAIL_WRITE : (sts_tail)((d[1] >> 3) & 3);
    J.durable = (d[1] >> 5) & 1;
    J.sep = (d[1] & 0x40) ? "/" : "__";
    J.bf16 = (d[1] >> 7) & 1;
    J.ncols = 1 + (d[2] & 3) % 3;
    for (i = 0; i < 3; i++) { J.array[i] = (d[2] >> (2 + i)) & 1; J.cname[i] = names[i]; }
    if (d[2] & 0x40) { J.cname[2] = "data__"; J.sep = "__meta"; }  /* key "" names "__metadata__" */
    J.sep_in_col = J.kv && (d[2] & 0x80);
    if (J.sep_in_col) J.cname[2] = !strcmp(J.sep, "/") ? "a/b" : !strcmp(J.sep, "__") ? "a__b" : "a__metab";
    J.fault = J.fault_kind = d[3] & 3;
    J.fault_at = J.fault == 1 ? 1 + (long)(d[3] >> 2) * 5 : 1 + (long)(d[3] >> 2);
}

static void fw_run(const uint8_t *data, size_t size) {
    fw_task tasks[2];
    tf_snap before, after;
    sts_write_config c;
    sts_error e;
    sts_result r;
    uint32_t fresh[2] = { 0, 0 }, seq[2] = { 0, 0 }, cur = 0;
    uint64_t budget = FW_MAX_BYTES;
    size_t at, i, ntasks;
    int stop = 0, committed = 0, reindex = 0, wrong = 0, late = 0;
    const char *msgs[2];
    size_t lens[2], nmsgs = 0;

    fw_setup(data);
    g_files = 0;
    fw_schema();
    g_nnames = 0;
    g_nrows[0] = g_nrows[1] = 0;
    memset(g_fixed, 0, sizeof g_fixed);
    memset(g_first, 0, sizeof g_first);
    memset(tasks, 0, sizeof tasks);
    g_calls = g_fired = 0;
    memset(&g_opts, 0, sizeof g_opts);
    fz_use_alloc(&g_opts, &g_alloc, 0);
    g_opts.io_fault = fw_io_fault;
    tf_clear(g_dir);
    if (J.previous && !(J.sep_in_col && J.ncols == 3)) fw_previous();
    before = tf_snapshot(g_dir, 1);
    /* the job: allocations counted from here */
    g_alloc.calls = 0;
    g_calls = 0;
    if (J.fault == 1) g_alloc.fail_at = J.fault_at;
    ntasks = J.two ? 2 : 1;
    fw_config(&c, J.previous);
    r = sts_dataset_prepare(g_dir, &c, g_schema, g_nschema, &g_opts, &e);
    if (J.sep_in_col && J.ncols == 3) {  /* names that could be read as another key and column */
        FZ_CHECK(r != STS_OK);
        fz_check_error(r, &e, UINT64_MAX);
        FZ_CHECK(e.rule == STS_RULE_OPTION || ((r == STS_ERR_NOMEM || r == STS_ERR_IO) && fw_fired()));
        stop = 1;
    } else if (r != STS_OK) {
        fw_fault_only("prepare", r, &e);
        stop = 1;
    }
    for (i = 0; i < ntasks && !stop; i++) {
        r = sts_task_open(g_dir, (uint32_t)i, &c, g_schema, g_nschema, &g_opts, &tasks[i].w, &e);
        if (r != STS_OK) {
            fw_fault_only("task open", r, &e);
            FZ_CHECK(tasks[i].w == NULL);
            stop = 1;
        }
    }
    for (at = 4; !stop && at + 3 <= size && seq[0] + seq[1] < 2 * FW_MAX_ROWS; at += 3) {
        uint8_t op = data[at], a = data[at + 1], b = data[at + 2];
        if (op % 8 == 6) { if (J.two) cur ^= 1; continue; }
        if (op % 8 == 7) {
            if (a % 8 == 0) reindex = 1 + b;
            else if (a % 8 == 4) late = 1 + b % 33;
            else wrong = a % 4;
            continue;
        }
        if (seq[cur] >= FW_MAX_ROWS) continue;
        if (!fw_row(&tasks[cur], cur, op, a, b, &fresh[cur], &budget, seq[cur]++)) stop = 1;

        else {
            sts_task_progress pg = sts_task_get_progress(tasks[cur].w);
            FZ_CHECK(pg.rows == tasks[cur].taken);
        }
    }
    for (i = 0; i < ntasks && !stop; i++) {
        r = sts_task_commit(tasks[i].w, &tasks[i].msg, &tasks[i].msg_len, &e);
        if (r != STS_OK) {
            fw_fault_only("task commit", r, &e);
            stop = 1;
        } else {
            msgs[nmsgs] = tasks[i].msg;
            lens[nmsgs++] = tasks[i].msg_len;
        }
    }
    if (!stop) {
        /* tasks that took rows of other dtypes (batch: other sample shapes) in a column */
        int disagree = 0;
        for (i = 0; i < J.ncols && ntasks == 2; i++)
            if (g_fixed[0][i] && g_fixed[1][i]) {
                const fw_cell *x = &g_first[0][i], *y = &g_first[1][i];
                disagree |= x->dtype != y->dtype;
                if (!J.kv) disagree |= x->rank != y->rank || memcmp(x->shape, y->shape, x->rank * sizeof x->shape[0]) != 0;
            }
        if (wrong && nmsgs && (wrong != 2 || g_prev_msg)) {  /* a wrong commit first: refused, nothing changes */
            const char *bad[3];
            size_t bad_lens[3], nbad = nmsgs;
            tf_snap then, now;
            for (i = 0; i < nmsgs; i++) { bad[i] = msgs[i]; bad_lens[i] = lens[i]; }
            if (wrong == 1) { bad[nbad] = msgs[0]; bad_lens[nbad++] = lens[0]; }
            else if (wrong == 2) { bad[nbad] = g_prev_msg; bad_lens[nbad++] = g_prev_len; }
            else bad_lens[0] = lens[0] / 2;
            then = tf_snapshot(g_dir, 1);
            r = sts_dataset_commit(g_dir, &c, bad, bad_lens, nbad, &g_opts, NULL, &e);
            if (r == STS_OK) fprintf(stderr, "a wrong dataset commit (%d) was taken\n", wrong);
            else if (getenv("FZ_WR_TRACE")) fprintf(stderr, "  wrong commit (%d) refused: %s\n", wrong, e.message);
            FZ_CHECK(r != STS_OK);
            fz_check_error(r, &e, UINT64_MAX);
            if (r == STS_ERR_NOMEM || r == STS_ERR_IO) FZ_CHECK(fw_fired());
            now = tf_snapshot(g_dir, 1);
            fw_snap_same(&then, &now);
            tf_snap_free(&then);
            tf_snap_free(&now);
        }
        r = sts_dataset_commit(g_dir, &c, msgs, lens, nmsgs, &g_opts, NULL, &e);
        if (getenv("FZ_WR_TRACE")) fprintf(stderr, "  dataset commit: %s\n", r == STS_OK ? "OK" : e.message);
        if (disagree && !(r == STS_ERR_NOMEM || r == STS_ERR_IO)) {
            if (r == STS_OK) fprintf(stderr, "dataset commit: tasks disagree on a column, but it committed\n");
            FZ_CHECK(r != STS_OK);
            fz_check_error(r, &e, UINT64_MAX);
            FZ_CHECK(e.rule == STS_RULE_MESSAGE);
            stop = 1;
        } else if (r != STS_OK) {
            fw_fault_only("dataset commit", r, &e);
            if (e.rule == STS_RULE_DURABLE) committed = 1;  /* the folder's fsync failed: published all the same */
            else stop = 1;
        } else committed = 1;
    }
    fw_faults_off();
    for (i = 0; i < ntasks; i++) sts_task_close(tasks[i].w);
    if (committed) {
        sts_check_config cc;
        sts_check_report rep;
        memset(&cc, 0, sizeof cc);
        cc.data = 1;
        r = sts_dataset_check(g_dir, &cc, &g_opts, &rep, &e);
        if (r != STS_OK) {
            tf_snap now;
            tu_sb t = { NULL, 0, 0 };
            fprintf(stderr, "check: %s\n", e.message);
            now = tf_snapshot(g_dir, 0);
            tf_snap_text(&before, &t);
            tu_sb_printf(&t, " | now: ");
            tf_snap_text(&now, &t);
            fprintf(stderr, "  before the job: %s\n", t.p);
            free(t.p);
            tf_snap_free(&now);
        }
        FZ_CHECK(r == STS_OK && rep.problems == 0);
        if (J.kv) fw_check_kv();
        else fw_check_batch();
        if (J.fault_kind == 1) {  /* check and clean out of memory: NOMEM or their verdict, the folder untouched */
            sts_clean_config cl;
            size_t removed = 0;
            tf_snap then = tf_snapshot(g_dir, 1), now;
            g_alloc.calls = 0;
            g_alloc.fail_at = 1 + J.fault_at % 61;
            r = sts_dataset_check(g_dir, &cc, &g_opts, &rep, &e);
            if (r != STS_OK) fz_check_error(r, &e, UINT64_MAX);
            if (r != STS_OK && getenv("FZ_WR_TRACE")) fprintf(stderr, "  check out of memory: %s\n", e.message);
            FZ_CHECK(r == STS_OK || (r == STS_ERR_NOMEM && rep.problems == 0));
            g_alloc.calls = 0;
            memset(&cl, 0, sizeof cl);
            r = sts_dataset_clean(g_dir, &cl, &g_opts, &removed, &e);
            g_alloc.fail_at = 0;
            if (r != STS_OK) fz_check_error(r, &e, UINT64_MAX);
            FZ_CHECK((r == STS_OK || r == STS_ERR_NOMEM) && removed == 0);
            now = tf_snapshot(g_dir, 1);
            fw_snap_same(&then, &now);
            tf_snap_free(&then);
            tf_snap_free(&now);
        }
        if (late) {  /* a driver that discards or aborts after the commit: the published dataset stays,
                        even when an allocation fails in them (late - 1: which one; 0 none) */
            tf_snap then, now;
            then = tf_snapshot(g_dir, 1);
            g_alloc.calls = 0;
            g_alloc.fail_at = late - 1;
            for (i = 0; i < 2; i++) {  /* messages naming published shards are refused (always when no allocation fails) */
                r = (i ? sts_dataset_abort : sts_dataset_discard)(g_dir, msgs, lens, nmsgs, &g_opts, &e);
                if (getenv("FZ_WR_TRACE"))
                    fprintf(stderr, "  %s after the commit: %s\n", i ? "abort" : "discard", r == STS_OK ? "OK" : e.message);
                if (r != STS_OK) {
                    fz_check_error(r, &e, UINT64_MAX);
                    FZ_CHECK(e.rule == STS_RULE_DATASET_PUBLISHED || r == STS_ERR_NOMEM);
                    FZ_CHECK(!strstr(e.message, "is unreadable"));  /* the manifest is sound: a failure is NOMEM */
                }
                if (late == 1 && g_files) FZ_CHECK(r == STS_ERR_DATASET && e.rule == STS_RULE_DATASET_PUBLISHED);
            }
            g_alloc.fail_at = 0;
            now = tf_snapshot(g_dir, 1);
            fw_snap_same(&then, &now);
            tf_snap_free(&then);
            tf_snap_free(&now);
        }
        if (reindex) {  /* reindex - 1: 0 no fault, odd: an allocation fails, even: a write-side call (ENOSPC) */
            sts_dataset_summary sum;
            int rf = reindex - 1;
            tf_snap then, now;
            then = tf_snapshot(g_dir, 1);
            g_alloc.calls = g_alloc.failed = 0;
            g_calls = g_fired = 0;
            if (rf & 1) g_alloc.fail_at = 1 + (rf >> 1);
            else if (rf) { J.fault_at = rf >> 1; __atomic_store_n(&J.fault, 2, __ATOMIC_SEQ_CST); }
            r = sts_dataset_reindex(g_dir, &g_opts, &sum, &e);
            fw_faults_off();
            if (getenv("FZ_WR_TRACE")) fprintf(stderr, "  reindex (fault %d): %s\n", rf, r == STS_OK ? "OK" : e.message);
            if (r != STS_OK && e.rule == STS_RULE_DURABLE) {  /* the folder's fsync, last: the new index is in place */
                fw_fault_only("reindex", r, &e);
                if (J.kv) J.index = 1;
            } else if (r != STS_OK) {  /* refused for the fault alone, and the folder as it was */
                fw_fault_only("reindex", r, &e);
                now = tf_snapshot(g_dir, 1);
                fw_snap_same(&then, &now);
                tf_snap_free(&now);
            } else {
                FZ_CHECK(sum.shards == g_files);
                if (J.kv) J.index = 1;  /* the index files are there now */
            }
            tf_snap_free(&then);
            r = sts_dataset_check(g_dir, &cc, &g_opts, &rep, &e);
            if (r != STS_OK) fprintf(stderr, "check after reindex: %s\n", e.message);
            FZ_CHECK(r == STS_OK && rep.problems == 0);
            if (J.kv) fw_check_kv();
            else fw_check_batch();
        }
    } else {
        r = STS_ERR_NOMEM;
        if (J.fault_kind == 1) {  /* the driver's abort out of memory too: NOMEM (the job stays) or done */
            g_alloc.calls = 0;
            g_alloc.fail_at = 1 + J.fault_at % 23;
            r = sts_dataset_abort(g_dir, msgs, lens, nmsgs, &g_opts, &e);
            g_alloc.fail_at = 0;
            if (getenv("FZ_WR_TRACE")) fprintf(stderr, "  abort out of memory: %s\n", r == STS_OK ? "OK" : e.message);
            if (r != STS_OK) {
                fz_check_error(r, &e, UINT64_MAX);
                FZ_CHECK(r == STS_ERR_NOMEM);
            }
        }
        if (r != STS_OK) r = sts_dataset_abort(g_dir, msgs, lens, nmsgs, &g_opts, &e);  /* OK: checked as it is */
        if (r != STS_OK) fprintf(stderr, "abort: %s\n", e.message);
        FZ_CHECK(r == STS_OK);
        after = tf_snapshot(g_dir, 1);
        fw_snap_same(&before, &after);
        tf_snap_free(&after);
    }
    if (getenv("FZ_WR_TRACE"))
        fprintf(stderr, "  %s%s%s, %zu column(s), target %llu: rows taken %llu + %llu, %zu name(s); %s, %llu file(s); "
                        "fault %d at %ld: %s (calls %ld, allocations %ld)\n",
                J.kv ? "kv" : "batch", J.kv && J.arrival ? " arrival" : "", J.kv && J.lastwin ? " lastWin" : "", J.ncols,
                (unsigned long long)(J.kv ? J.target : J.batch), (unsigned long long)tasks[0].taken,
                (unsigned long long)tasks[1].taken, g_nnames, committed ? "committed" : "not committed",
                (unsigned long long)g_files, J.fault_kind, J.fault_at, fw_fired() ? "fired" : "not reached",
                g_calls, g_alloc.calls);
    for (i = 0; i < ntasks; i++) if (tasks[i].msg) sts_free(&g_opts, tasks[i].msg, tasks[i].msg_len + 1);
    tf_snap_free(&before);
    free(g_prev_msg);
    g_prev_msg = NULL;
    FZ_CHECK(g_alloc.bad == 0);
    if (g_alloc.bytes || g_alloc.blocks)
        fprintf(stderr, "%lld bytes in %ld blocks still allocated\n", (long long)g_alloc.bytes, g_alloc.blocks);
    if (!getenv("FZ_WR_LEAKS")) FZ_CHECK(g_alloc.bytes == 0 && g_alloc.blocks == 0);
}

static void fw_cleanup(void) { if (g_dir[0]) tf_rmtree(g_dir); }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!g_dir[0]) {
        tf_fast_tmpdir(g_dir, sizeof g_dir);
        atexit(fw_cleanup);
    }
    if (size < 4) return 0;
    fw_run(data, size);
    return 0;
}
