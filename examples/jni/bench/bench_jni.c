/* bench_jni.c - the C baselines of examples/jni/bench/.../Bench.java, in the same JVM process and run:
   the same KV rows written by C calling the library directly, and sts_dataset_get timed in C.
   Built into build/jni/libsts_jni_bench.so (only Java_* exported); Bench.java has the method list. */
#define STS_IMPLEMENTATION
#include "../../../safetensors_spark.h"

#include <jni.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define RING 1024                      /* distinct 1 KiB tensors, reused round-robin (as Bench.java) */
#define ELEMS 256                      /* F32 [256] = 1 KiB */

static uint64_t clock_ns(clockid_t c) {
    struct timespec t;
    clock_gettime(c, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}
static uint64_t now_ns(void) { return clock_ns(CLOCK_MONOTONIC); }
static void fail(JNIEnv *env, const char *what, const sts_error *e) {
    char msg[400];
    jclass c = (*env)->FindClass(env, "java/lang/RuntimeException");
    snprintf(msg, sizeof msg, "%s: %s: %s", what, sts_result_name(e->code), e->message);
    if (c) (*env)->ThrowNew(env, c, msg);
}
/* "row-0000123": the key of row r, as Bench.key builds it (7 digits, more when larger) */
static size_t key(char *out, uint32_t r) {
    char d[10];
    size_t n = 0, o = 4, i;
    memcpy(out, "row-", 4);
    do { d[n++] = (char)('0' + r % 10); r /= 10; } while (r);
    for (i = n; i < 7; i++) out[o++] = '0';
    while (n) out[o++] = d[--n];
    out[o] = 0;
    return o;
}
static const sts_column schema[2] = {
    { "id", STS_VALUE_STRING, STS_DTYPE_U8 }, { "x", STS_VALUE_TENSOR, STS_DTYPE_F32 }
};
static void config(sts_write_config *c, int io_thread) {   /* Bench.options(), typed */
    memset(c, 0, sizeof *c);
    c->no_io_thread = !io_thread;
    c->name_col = "id";
    c->generate_index = 1;
    c->no_fsync = 1;                       /* durable=false */
}

/* Writes rows [0, rows) into dir (prepared here) and commits the job; returns the nanoseconds from
   sts_task_open to sts_task_commit (what Bench times on the JNI side), and in cpu[0] the calling
   thread's CPU time over the same span (the I/O thread's is not in it). */
#define BENCH_FN(ret, name) JNIEXPORT ret JNICALL Java_io_safetensors_spark_jni_bench_Bench_##name
BENCH_FN(jlong, writeC)(JNIEnv *env, jclass cls, jstring jdir, jint rows, jboolean io_thread, jlongArray cpu) {
    static float ring[RING][ELEMS];
    const char *dir = (*env)->GetStringUTFChars(env, jdir, NULL);   /* an ASCII path */
    sts_write_config c;
    sts_task_writer *w = NULL;
    sts_error e;
    sts_value v[2];
    uint64_t shape[1] = { ELEMS }, t0, t1 = 0, c0;
    jlong used;
    char k[16], *msg = NULL;
    size_t len = 0;
    int i, j;
    (void)cls;
    if (!dir) return 0;
    for (i = 0; i < RING; i++)
        for (j = 0; j < ELEMS; j++) ring[i][j] = (float)i * 0.5f + (float)j;   /* Bench.fill */
    config(&c, io_thread);
    memset(v, 0, sizeof v);
    v[1].dtype = STS_DTYPE_F32; v[1].rank = 1; v[1].shape = shape; v[1].size = sizeof ring[0];
    if (sts_dataset_prepare(dir, &c, schema, 2, NULL, &e) != STS_OK) { fail(env, "prepare", &e); goto out; }
    t0 = now_ns();
    c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
    if (sts_task_open(dir, 0, &c, schema, 2, NULL, &w, &e) != STS_OK) { fail(env, "task open", &e); goto out; }
    for (i = 0; i < rows; i++) {
        v[0].size = key(k, (uint32_t)i);
        v[0].data = k;
        v[1].data = ring[i & (RING - 1)];
        if (sts_task_write(w, v, &e) != STS_OK) { fail(env, "write", &e); goto out; }
    }
    if (sts_task_commit(w, &msg, &len, &e) != STS_OK) { fail(env, "task commit", &e); goto out; }
    t1 = now_ns() - t0;
    used = (jlong)(clock_ns(CLOCK_THREAD_CPUTIME_ID) - c0);
    (*env)->SetLongArrayRegion(env, cpu, 0, 1, &used);
    if (sts_dataset_commit(dir, &c, (const char *const *)&msg, &len, 1, NULL, NULL, &e) != STS_OK) {
        fail(env, "commit", &e);
        t1 = 0;
    }
out:
    if (msg) sts_free(NULL, msg, len + 1);
    sts_task_close(w);
    (*env)->ReleaseStringUTFChars(env, jdir, dir);
    return (jlong)t1;
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}
/* sts_dataset_get(with data) of `lookups` keys chosen as Bench chooses them (rows[i]), each timed
   alone after one warm-up pass; returns {p50, p99} in ns. The dataset is opened here (its index load
   is not timed). */
BENCH_FN(jlongArray, getC)(JNIEnv *env, jclass cls, jstring jdir, jintArray jrows) {
    const char *dir = (*env)->GetStringUTFChars(env, jdir, NULL);
    jsize n = (*env)->GetArrayLength(env, jrows), i;
    jint *rows = (jint *)malloc((size_t)n * sizeof *rows);
    uint64_t *t = (uint64_t *)malloc((size_t)n * sizeof *t);
    sts_dataset *ds = NULL;
    sts_read_config rc;
    sts_error e;
    jlongArray out = NULL;
    int pass;
    (void)cls;
    if (!dir || !rows || !t) goto done;
    (*env)->GetIntArrayRegion(env, jrows, 0, n, rows);
    memset(&rc, 0, sizeof rc);
    rc.infer_schema = 1;
    if (sts_dataset_open(dir, &rc, NULL, &ds, &e) != STS_OK) { fail(env, "open", &e); goto done; }
    for (pass = 0; pass < 2; pass++)
        for (i = 0; i < n; i++) {
            char k[32];
            size_t kl = key(k, (uint32_t)rows[i]);
            sts_view v;
            uint64_t t0;
            memcpy(k + kl, "__x", 4);
            t0 = now_ns();
            if (sts_dataset_get(ds, k, kl + 3, 1, &v, &e) != STS_OK) { fail(env, "get", &e); goto done; }
            t[i] = now_ns() - t0;
        }
    qsort(t, (size_t)n, sizeof *t, cmp_u64);
    if ((out = (*env)->NewLongArray(env, 2)) != NULL) {
        jlong r[2];
        r[0] = (jlong)t[n / 2]; r[1] = (jlong)t[(size_t)n * 99 / 100];
        (*env)->SetLongArrayRegion(env, out, 0, 2, r);
    }
done:
    sts_dataset_close(ds);
    free(rows);
    free(t);
    if (dir) (*env)->ReleaseStringUTFChars(env, jdir, dir);
    return out;
}
