/* sts_jni.c - safetensors_spark.h inside a JVM: the native half of the Java package
   io.safetensors.spark.jni (examples/jni/src). Built by examples/jni/jni.mk into build/jni/libsts_jni.so.

   WHAT MAPS TO WHAT (Java, then the native method in Native.java, then the library)
      BatchWrite.prepare(dir, options, schema)   prepare     sts_write_config_set per option, sts_dataset_prepare
      BatchWrite.commit(byte[][] messages)       commit      sts_dataset_commit
      BatchWrite.abort(byte[][] messages)        abort       sts_dataset_abort
      BatchWrite.discard(byte[][] messages)      discard     sts_dataset_discard (a losing attempt's output)
      WriterFactory.createWriter(partition, id)  taskOpen    sts_task_open (task id = the partition id)
      TaskWriter.write(cells...)                 taskWrite   sts_task_write
      TaskWriter.commit()                        taskCommit  sts_task_commit: the JSON message as a byte[]
      TaskWriter.abort(), close()                taskClose   sts_task_close (removes the files unless committed)
      SafetensorsFile.open, tensors(), get(name) fileOpen, fileTensors, fileGet: sts_open, sts_at, sts_find + sts_data
      Dataset.open, info(key), get(key)          datasetOpen, datasetInfo, datasetGet: sts_dataset_open, sts_dataset_get
      SafetensorsFile/Dataset.close()            fileClose, datasetClose: sts_close, sts_dataset_close
   The driver's calls are stateless: Java keeps the options and the schema and passes them each time
   (the write config only borrows strings, so each call builds one and frees it). A task writer, an
   open file and an open dataset are C objects whose address Java holds in a long.

   CELLS (taskWrite). TaskWriter.write checks each cell's type against its column (in Java, where
   an instanceof costs nothing) and flattens the row into two arrays of its own, which no other
   thread sees: an object per cell, and the row's numbers in one long[] (one JNI copy, instead of a
   JNI call per field):
      cell                      object                      numbers
      String (name_col)         the String                  none; UTF-16 -> UTF-8 into the task's buffer
      Tensor (Tensor Struct)    its direct ByteBuffer       offset, length, dtype, direct (1), rank, dims...
                                (GetDirectBufferAddress)
                                or its byte[] (pinned)      offset, length, dtype, direct (0), rank, dims...
      float[] double[] int[]    the array (pinned)          its length (elements); F32 F64 I32 I64 I16 I8
      long[] short[] byte[]
   Every cell is read first; then the arrays are pinned with GetPrimitiveArrayCritical,
   sts_task_write runs, and every pin is released (JNI_ABORT: nothing was changed) before anything
   else, on every path. No JNI call happens while a pin is held, and no tensor byte is copied into
   a Java array.

   READS. fileGet and datasetGet wrap the mapping with NewDirectByteBuffer: zero copy, no heap. The
   Java side makes the buffer read-only and little-endian; it is valid until close() (the mapping
   is read-only: a writable buffer would crash the JVM on a write).

   ERRORS. A failing library call throws: STS_ERR_OPTION -> IllegalArgumentException, STS_ERR_IO ->
   java.io.IOException, anything else -> SafetensorsException(result name, rule id, byte offset,
   message). TaskWriter.write refuses bad cells itself (IllegalArgumentException); a null path, key
   or message array gives NullPointerException. A native method that throws returns 0/NULL and
   creates nothing, so Java never holds a half-made object. Every JNI call that can throw is
   checked before the next one.

   Strings. Java's strings are UTF-16; the library speaks UTF-8. Both directions are converted here
   (NewStringUTF and GetStringUTFChars use "modified" UTF-8, wrong for NUL and for characters
   outside the BMP). */
#define STS_IMPLEMENTATION         /* built with -fvisibility=hidden: only JNI_OnLoad and Java_* are exported */
#include "../../safetensors_spark.h"

#include <jni.h>
#include <stdlib.h>
#include <string.h>

#define PKG "io/safetensors/spark/jni/"
/* A native method of io.safetensors.spark.jni.Native: JNI_FN(void, prepare) is Native.prepare. */
#define JNI_FN(ret, name) JNIEXPORT ret JNICALL Java_io_safetensors_spark_jni_Native_##name

/* ---- what JNI_OnLoad looks up once ---------------------------------------------------------- */
static struct {
    jclass string, info, sts_exception, iae, ioe, oom, npe;
    jmethodID info_new, exc_new;     /* TensorInfo(...), SafetensorsException(...) */
    jstring dtype_names[STS_DTYPE_COUNT];
} J;

static long jni_live;                /* open task writers, files and datasets (for the tests) */
static void jni_count(int d) { __atomic_add_fetch(&jni_live, d, __ATOMIC_RELAXED); }

#define HANDLE(p) ((jlong)(intptr_t)(p))
#define PTR(type, h) ((type *)(intptr_t)(h))

static void jni_throw_iae(JNIEnv *env, const char *msg);

/* ---- strings -------------------------------------------------------------------------------- */
typedef struct jni_buf { void *p; size_t cap; } jni_buf;   /* grows, never shrinks */

static int jni_reserve(jni_buf *b, size_t n) {
    void *p;
    if (n <= b->cap) return 1;
    if (!(p = realloc(b->p, n))) return 0;
    b->p = p;
    b->cap = n;
    return 1;
}

/* UTF-16 -> UTF-8 into out (3 bytes per unit at most). An unpaired surrogate becomes its own
   three bytes, which the library rejects as invalid UTF-8 (it names the rule), never replaced. */
static size_t jni_to_utf8(const jchar *s, size_t n, char *out) {
    size_t i, o = 0;
    for (i = 0; i < n; i++) {
        uint32_t c = s[i];
        if (c >= 0xD800 && c < 0xDC00 && i + 1 < n && s[i + 1] >= 0xDC00 && s[i + 1] < 0xE000)
            c = 0x10000 + ((c - 0xD800) << 10) + (uint32_t)(s[++i] - 0xDC00);
        if (c < 0x80) out[o++] = (char)c;
        else if (c < 0x800) { out[o++] = (char)(0xC0 | c >> 6); out[o++] = (char)(0x80 | (c & 63)); }
        else if (c < 0x10000) {
            out[o++] = (char)(0xE0 | c >> 12);
            out[o++] = (char)(0x80 | (c >> 6 & 63));
            out[o++] = (char)(0x80 | (c & 63));
        } else {
            out[o++] = (char)(0xF0 | c >> 18); out[o++] = (char)(0x80 | (c >> 12 & 63));
            out[o++] = (char)(0x80 | (c >> 6 & 63)); out[o++] = (char)(0x80 | (c & 63));
        }
    }
    return o;
}

/* A Java string as NUL-terminated UTF-8 in out (units: scratch for the UTF-16 copy). Returns 0,
   or -1 with an exception pending (null: NullPointerException). */
static int jni_utf8(JNIEnv *env, jstring s, jni_buf *units, jni_buf *out, size_t *len) {
    jsize n;
    if (!s) { (*env)->ThrowNew(env, J.npe, "a path, option, name or key is null"); return -1; }
    n = (*env)->GetStringLength(env, s);
    if (!jni_reserve(units, (size_t)n * sizeof(jchar) + 1) || !jni_reserve(out, (size_t)n * 3 + 1)) {
        (*env)->ThrowNew(env, J.oom, "sts_jni: a string buffer");
        return -1;
    }
    (*env)->GetStringRegion(env, s, 0, n, (jchar *)units->p);   /* copies: Latin-1 strings inflate here */
    *len = jni_to_utf8((const jchar *)units->p, (size_t)n, (char *)out->p);
    ((char *)out->p)[*len] = 0;
    return 0;
}

/* A Java string as a malloc'd UTF-8 C string (free it), or NULL with an exception pending: paths,
   options and column names, where a NUL would cut the string short. */
static char *jni_utf8_dup(JNIEnv *env, jstring s) {
    jni_buf units = { NULL, 0 }, out = { NULL, 0 };
    size_t len;
    int r = jni_utf8(env, s, &units, &out, &len);
    free(units.p);
    if (!r && strlen((char *)out.p) != len) {
        jni_throw_iae(env, "sts_jni: a path, option or column name holds a NUL");
        r = -1;
    }
    if (r) { free(out.p); return NULL; }
    return (char *)out.p;
}

/* UTF-8 from the library -> a Java string. Names are valid UTF-8; messages are too, but a bad
   byte becomes U+FFFD rather than a failure. NULL with an exception pending on failure. */
static jstring jni_string(JNIEnv *env, const char *s, size_t n) {
    jchar small[256], *u = n <= 256 ? small : (jchar *)malloc(n * sizeof(jchar));
    size_t i = 0, o = 0;
    jstring js;
    small[0] = 0;
    if (!u) { (*env)->ThrowNew(env, J.oom, "sts_jni: a string"); return NULL; }
    while (i < n) {
        const unsigned char *p = (const unsigned char *)s + i;
        uint32_t c = 0xFFFD;
        size_t k = 1, left = n - i;
        if (p[0] < 0x80) c = p[0];
        else if (p[0] >= 0xC2 && p[0] < 0xE0 && left >= 2 && (p[1] & 0xC0) == 0x80) {
            c = (uint32_t)(p[0] & 31) << 6 | (p[1] & 63);
            k = 2;
        }
        else if (p[0] >= 0xE0 && p[0] < 0xF0 && left >= 3 && (p[1] & 0xC0) == 0x80 && (p[2] & 0xC0) == 0x80) {
            c = (uint32_t)(p[0] & 15) << 12 | (uint32_t)(p[1] & 63) << 6 | (p[2] & 63);
            k = 3;
            if (c < 0x800 || (c >= 0xD800 && c < 0xE000)) c = 0xFFFD;
        } else if (p[0] >= 0xF0 && p[0] < 0xF5 && left >= 4 && (p[1] & 0xC0) == 0x80 && (p[2] & 0xC0) == 0x80 &&
                   (p[3] & 0xC0) == 0x80) {
            c = (uint32_t)(p[0] & 7) << 18 | (uint32_t)(p[1] & 63) << 12 | (uint32_t)(p[2] & 63) << 6 | (p[3] & 63);
            k = 4;
            if (c < 0x10000 || c > 0x10FFFF) c = 0xFFFD;
        }
        if (c >= 0x10000) { c -= 0x10000; u[o++] = (jchar)(0xD800 + (c >> 10)); u[o++] = (jchar)(0xDC00 + (c & 1023)); }
        else u[o++] = (jchar)c;
        i += k;
    }
    js = (*env)->NewString(env, u, (jsize)o);
    if (u != small) free(u);
    return js;   /* NULL: NewString threw */
}

/* ---- errors --------------------------------------------------------------------------------- */
static void jni_throw(JNIEnv *env, const sts_error *e) {
    jstring msg = jni_string(env, e->message, strlen(e->message)), name, rule;
    jthrowable t;
    if (!msg) return;
    if (e->code == STS_ERR_OPTION || e->code == STS_ERR_IO) {
        jclass c = e->code == STS_ERR_OPTION ? J.iae : J.ioe;
        jmethodID ctor = (*env)->GetMethodID(env, c, "<init>", "(Ljava/lang/String;)V");
        if (!ctor) return;
        t = (jthrowable)(*env)->NewObject(env, c, ctor, msg);
    } else {
        const char *n = sts_result_name(e->code), *r = sts_rule_id(e->rule);
        if (!(name = jni_string(env, n, strlen(n))) || !(rule = jni_string(env, r, strlen(r)))) return;
        t = (jthrowable)(*env)->NewObject(env, J.sts_exception, J.exc_new, name, rule,
                                          (jlong)(e->offset == STS_OFFSET_UNKNOWN ? -1 : (jlong)e->offset), msg);
    }
    if (t) (*env)->Throw(env, t);
}
static void jni_throw_iae(JNIEnv *env, const char *msg) { (*env)->ThrowNew(env, J.iae, msg); }

/* ---- load: look everything up once ---------------------------------------------------------- */
static jclass jni_class(JNIEnv *env, const char *name) {
    jclass local = (*env)->FindClass(env, name), global;
    if (!local) return NULL;
    global = (jclass)(*env)->NewGlobalRef(env, local);
    (*env)->DeleteLocalRef(env, local);
    return global;
}

JNIEXPORT jint JNICALL JNI_OnLoad(JavaVM *vm, void *reserved) {
    JNIEnv *env;
    int i;
    (void)reserved;
    if ((*vm)->GetEnv(vm, (void **)&env, JNI_VERSION_1_8) != JNI_OK) return JNI_ERR;
    if (!(J.string = jni_class(env, "java/lang/String")) ||
        !(J.info = jni_class(env, PKG "TensorInfo")) ||
        !(J.sts_exception = jni_class(env, PKG "SafetensorsException")) ||
        !(J.iae = jni_class(env, "java/lang/IllegalArgumentException")) ||
        !(J.ioe = jni_class(env, "java/io/IOException")) ||
        !(J.oom = jni_class(env, "java/lang/OutOfMemoryError")) ||
        !(J.npe = jni_class(env, "java/lang/NullPointerException")))
        return JNI_ERR;
    if (!(J.info_new = (*env)->GetMethodID(env, J.info, "<init>",
                                           "(Ljava/lang/String;Ljava/lang/String;[JJLjava/lang/String;)V")) ||
        !(J.exc_new = (*env)->GetMethodID(env, J.sts_exception, "<init>",
                                          "(Ljava/lang/String;Ljava/lang/String;JLjava/lang/String;)V")))
        return JNI_ERR;
    for (i = 0; i < (int)STS_DTYPE_COUNT; i++) {
        const char *n = sts_dtype_name((sts_dtype)i);
        jstring s = (*env)->NewStringUTF(env, n);   /* ASCII: modified UTF-8 is plain UTF-8 here */
        if (!s || !(J.dtype_names[i] = (jstring)(*env)->NewGlobalRef(env, s))) return JNI_ERR;
        (*env)->DeleteLocalRef(env, s);
    }
    return JNI_VERSION_1_8;
}

/* The 22 dtype names in sts_dtype order (Java keeps ids, so a row carries no dtype string). */
JNI_FN(jobjectArray, dtypeNames)(JNIEnv *env, jclass cls) {
    jobjectArray out = (*env)->NewObjectArray(env, (jsize)STS_DTYPE_COUNT, J.string, NULL);
    int i;
    (void)cls;
    for (i = 0; out && i < (int)STS_DTYPE_COUNT; i++) {
        (*env)->SetObjectArrayElement(env, out, i, J.dtype_names[i]);
        if ((*env)->ExceptionCheck(env)) return NULL;
    }
    return out;
}

/* ---- the driver: options and schema from Java, rebuilt per call ----------------------------- */
typedef struct jni_job {
    sts_write_config cfg;
    char *dir;
    char **strings;                  /* option values and column names: the config borrows them */
    size_t nstrings;
    sts_column *schema;
    size_t ncols;
} jni_job;

static void jni_job_free(jni_job *j) {
    size_t i;
    for (i = 0; i < j->nstrings; i++) free(j->strings[i]);
    free(j->strings);
    free(j->schema);
    free(j->dir);
}

/* dir, the options (keys[i] = values[i], as Spark's options map holds them) and, when names is not
   NULL, the schema (kinds: sts_value_kind, elems: sts_dtype of array elements). 0, or -1 with an
   exception pending and nothing left allocated. */
static int jni_job_make(JNIEnv *env, jni_job *j, jstring dir, jobjectArray keys, jobjectArray values,
                        jobjectArray names, jintArray kinds, jintArray elems) {
    jsize nopt, ncols, i;
    sts_error e;
    memset(j, 0, sizeof *j);
    if (!keys || !values) { (*env)->ThrowNew(env, J.npe, "the options are null"); return -1; }
    nopt = (*env)->GetArrayLength(env, keys);
    ncols = names ? (*env)->GetArrayLength(env, names) : 0;
    if ((*env)->GetArrayLength(env, values) != nopt ||
        (names && ((*env)->GetArrayLength(env, kinds) != ncols || (*env)->GetArrayLength(env, elems) != ncols))) {
        jni_throw_iae(env, "sts_jni: options and schema arrays differ in length");
        return -1;
    }
    j->strings = (char **)calloc((size_t)nopt + (size_t)ncols + 1, sizeof *j->strings);
    j->schema = (sts_column *)calloc((size_t)ncols + 1, sizeof *j->schema);
    if (!j->strings || !j->schema) { (*env)->ThrowNew(env, J.oom, "sts_jni: the job"); goto fail; }
    if (!(j->dir = jni_utf8_dup(env, dir))) goto fail;
    for (i = 0; i < nopt; i++) {
        jstring k = (jstring)(*env)->GetObjectArrayElement(env, keys, i);
        jstring v = (jstring)(*env)->GetObjectArrayElement(env, values, i);
        char *ks = NULL;
        if (!k || !v) { jni_throw_iae(env, "sts_jni: an option key or value is null"); goto fail; }
        if (!(ks = jni_utf8_dup(env, k)) || !(j->strings[j->nstrings] = jni_utf8_dup(env, v))) { free(ks); goto fail; }
        (*env)->DeleteLocalRef(env, k);
        (*env)->DeleteLocalRef(env, v);
        if (sts_write_config_set(&j->cfg, ks, j->strings[j->nstrings++], &e) != STS_OK) {
            free(ks);
            jni_throw(env, &e);
            goto fail;
        }
        free(ks);
    }
    if (names) {
        jint *k = (*env)->GetIntArrayElements(env, kinds, NULL), *el;
        if (!k) goto fail;
        if (!(el = (*env)->GetIntArrayElements(env, elems, NULL))) {
            (*env)->ReleaseIntArrayElements(env, kinds, k, JNI_ABORT);
            goto fail;
        }
        for (i = 0; i < ncols; i++) { j->schema[i].kind = (sts_value_kind)k[i]; j->schema[i].elem = (sts_dtype)el[i]; }
        (*env)->ReleaseIntArrayElements(env, kinds, k, JNI_ABORT);
        (*env)->ReleaseIntArrayElements(env, elems, el, JNI_ABORT);
        for (i = 0; i < ncols; i++) {
            jstring n = (jstring)(*env)->GetObjectArrayElement(env, names, i);
            if (!n) { jni_throw_iae(env, "sts_jni: a column name is null"); goto fail; }
            if (!(j->strings[j->nstrings] = jni_utf8_dup(env, n))) goto fail;
            (*env)->DeleteLocalRef(env, n);
            j->schema[i].name = j->strings[j->nstrings++];
        }
        j->ncols = (size_t)ncols;
    }
    return 0;
fail:
    jni_job_free(j);
    return -1;
}

JNI_FN(void, prepare)(JNIEnv *env, jclass cls, jstring dir, jobjectArray keys,
        jobjectArray values, jobjectArray names, jintArray kinds, jintArray elems) {
    jni_job j;
    sts_error e;
    (void)cls;
    if (jni_job_make(env, &j, dir, keys, values, names, kinds, elems)) return;
    if (sts_dataset_prepare(j.dir, &j.cfg, j.schema, j.ncols, NULL, &e) != STS_OK) jni_throw(env, &e);
    jni_job_free(&j);
}

/* The messages as C strings: copied out of the byte[]s (they are small, and the commit does I/O,
   too long to hold a pin). 0, or -1 with an exception pending; free with jni_messages_free
   either way. */
static int jni_messages(JNIEnv *env, jobjectArray msgs, char ***out, size_t **lens, size_t *n) {
    jsize count, i;
    char **m;
    size_t *l;
    *out = NULL;
    *lens = NULL;
    *n = 0;
    if (!msgs) { (*env)->ThrowNew(env, J.npe, "the messages are null"); return -1; }
    count = (*env)->GetArrayLength(env, msgs);
    m = (char **)calloc((size_t)count + 1, sizeof *m);
    l = (size_t *)calloc((size_t)count + 1, sizeof *l);
    if (!m || !l) { free(m); free(l); (*env)->ThrowNew(env, J.oom, "sts_jni: the messages"); return -1; }
    *out = m;
    *lens = l;
    *n = (size_t)count;
    for (i = 0; i < count; i++) {
        jbyteArray b = (jbyteArray)(*env)->GetObjectArrayElement(env, msgs, i);
        jsize len;
        if (!b) { jni_throw_iae(env, "sts_jni: a commit message is null"); return -1; }
        len = (*env)->GetArrayLength(env, b);
        if (!(m[i] = (char *)malloc((size_t)len + 1))) {
            (*env)->ThrowNew(env, J.oom, "sts_jni: a message");
            return -1;
        }
        (*env)->GetByteArrayRegion(env, b, 0, len, (jbyte *)m[i]);
        m[i][len] = 0;
        l[i] = (size_t)len;
        (*env)->DeleteLocalRef(env, b);
    }
    return 0;
}
static void jni_messages_free(char **m, size_t *l, size_t n) {
    size_t i;
    for (i = 0; i < n; i++) free(m[i]);
    free(m);
    free(l);
}

/* Returns {shards, samples, bytes, tensors}. */
JNI_FN(jlongArray, commit)(JNIEnv *env, jclass cls, jstring dir, jobjectArray keys,
        jobjectArray values, jobjectArray msgs) {
    jni_job j;
    char **m = NULL;
    size_t *l = NULL, n = 0;
    sts_dataset_summary s;
    sts_error e;
    jlongArray out = NULL;
    (void)cls;
    if (jni_job_make(env, &j, dir, keys, values, NULL, NULL, NULL)) return NULL;
    if (jni_messages(env, msgs, &m, &l, &n) == 0) {
        memset(&s, 0, sizeof s);
        if (sts_dataset_commit(j.dir, &j.cfg, (const char *const *)m, l, n, NULL, &s, &e) != STS_OK) jni_throw(env, &e);
        else if ((out = (*env)->NewLongArray(env, 4)) != NULL) {
            jlong v[4];
            v[0] = (jlong)s.shards; v[1] = (jlong)s.samples; v[2] = (jlong)s.bytes; v[3] = (jlong)s.tensors;
            (*env)->SetLongArrayRegion(env, out, 0, 4, v);
        }
    }
    jni_messages_free(m, l, n);
    jni_job_free(&j);
    return out;
}

/* abort and discard: the same call shape, the library's function differs */
typedef sts_result (*jni_msgs_fn)(const char *, const char *const *, const size_t *, size_t, const sts_options *,
                                  sts_error *);
static void jni_on_messages(JNIEnv *env, jstring dir, jobjectArray msgs, jni_msgs_fn fn) {
    char *d, **m = NULL;
    size_t *l = NULL, n = 0;
    sts_error e;
    if (!(d = jni_utf8_dup(env, dir))) return;
    if (jni_messages(env, msgs, &m, &l, &n) == 0 && fn(d, (const char *const *)m, l, n, NULL, &e) != STS_OK)
        jni_throw(env, &e);
    jni_messages_free(m, l, n);
    free(d);
}
JNI_FN(void, abort)(JNIEnv *env, jclass cls, jstring dir, jobjectArray msgs) {
    (void)cls;
    jni_on_messages(env, dir, msgs, sts_dataset_abort);
}
JNI_FN(void, discard)(JNIEnv *env, jclass cls, jstring dir, jobjectArray msgs) {
    (void)cls;
    jni_on_messages(env, dir, msgs, sts_dataset_discard);
}

/* ---- task writers --------------------------------------------------------------------------- */
typedef struct jni_col {             /* per column: what a row's cell is, and scratch for it */
    sts_value_kind kind;
    jni_buf shape;                   /* tensors: the shape as uint64 */
    jni_buf text, units;             /* strings: UTF-8 and its UTF-16 scratch */
    jarray pin;                      /* an array to pin for this row, or NULL */
    size_t pin_offset;               /* where the cell starts inside it, in bytes */
    char *pinned;                    /* its elements while pinned */
} jni_col;

typedef struct jni_task {
    sts_task_writer *w;
    size_t ncols;
    jni_col *cols;
    sts_value *row;
    jni_buf meta;                    /* a row's numbers (TaskWriter's meta array), copied */
} jni_task;

static void jni_task_free(jni_task *t) {
    size_t i;
    if (!t) return;
    sts_task_close(t->w);            /* NULL-safe; removes the files unless committed */
    for (i = 0; t->cols && i < t->ncols; i++) {
        free(t->cols[i].shape.p); free(t->cols[i].text.p); free(t->cols[i].units.p);
    }
    free(t->cols);
    free(t->row);
    free(t->meta.p);
    free(t);
}

JNI_FN(jlong, taskOpen)(JNIEnv *env, jclass cls, jstring dir, jobjectArray keys,
        jobjectArray values, jobjectArray names, jintArray kinds, jintArray elems, jint partition) {
    jni_job j;
    jni_task *t;
    sts_error e;
    size_t i;
    (void)cls;
    if (partition < 0) { jni_throw_iae(env, "sts_jni: the partition id is negative"); return 0; }
    if (jni_job_make(env, &j, dir, keys, values, names, kinds, elems)) return 0;
    t = (jni_task *)calloc(1, sizeof *t);
    if (!t || !(t->cols = (jni_col *)calloc(j.ncols + 1, sizeof *t->cols)) ||
        !(t->row = (sts_value *)calloc(j.ncols + 1, sizeof *t->row))) {
        jni_task_free(t);
        jni_job_free(&j);
        (*env)->ThrowNew(env, J.oom, "sts_jni: the task writer");
        return 0;
    }
    t->ncols = j.ncols;
    for (i = 0; i < j.ncols; i++) t->cols[i].kind = j.schema[i].kind;
    if (sts_task_open(j.dir, (uint32_t)partition, &j.cfg, j.schema, j.ncols, NULL, &t->w, &e) != STS_OK) {
        jni_throw(env, &e);
        jni_task_free(t);
        t = NULL;
    } else jni_count(1);
    jni_job_free(&j);
    return HANDLE(t);
}

/* Reads cell i (its object, and its numbers from *meta, which it advances) into t->row[i], or marks
   an array to pin. 0, or -1 with an exception pending. */
static int jni_cell(JNIEnv *env, jni_task *t, size_t i, jobject obj, const jlong **meta) {
    jni_col *c = &t->cols[i];
    sts_value *v = &t->row[i];
    const jlong *m = *meta;
    memset(v, 0, sizeof *v);
    c->pin = NULL;
    if (!obj) { jni_throw_iae(env, "sts_jni: a null cell"); return -1; }   /* TaskWriter.write refuses them */
    if (c->kind == STS_VALUE_STRING) {
        size_t len;
        if (jni_utf8(env, (jstring)obj, &c->units, &c->text, &len)) return -1;
        v->data = c->text.p;
        v->size = len;
    } else if (c->kind == STS_VALUE_TENSOR) {      /* offset, length, dtype, direct, rank, dims */
        uint32_t d, rank = (uint32_t)m[4];
        if (!jni_reserve(&c->shape, ((size_t)rank + 1) * sizeof(uint64_t))) {
            (*env)->ThrowNew(env, J.oom, "sts_jni: a shape");
            return -1;
        }
        for (d = 0; d < rank; d++) ((uint64_t *)c->shape.p)[d] = (uint64_t)m[5 + d];
        v->size = (uint64_t)m[1];
        v->dtype = (sts_dtype)m[2];
        v->rank = rank;
        v->shape = (const uint64_t *)c->shape.p;
        if (m[3]) {                                /* a direct ByteBuffer: read in place, no pin */
            char *base = (char *)(*env)->GetDirectBufferAddress(env, obj);
            if (!base) { jni_throw_iae(env, "sts_jni: a direct buffer without an address"); return -1; }
            v->data = base + m[0];
        } else {                                   /* a byte[]: pinned just before the write */
            c->pin = (jarray)obj;
            c->pin_offset = (size_t)m[0];
        }
        *meta = m + 5 + rank;
    } else {                                       /* a numeric array: its length */
        v->size = (uint64_t)m[0];
        c->pin = (jarray)obj;
        c->pin_offset = 0;
        *meta = m + 1;
    }
    return 0;
}

JNI_FN(void, taskWrite)(JNIEnv *env, jclass cls, jlong h, jobjectArray objs, jlongArray meta, jint nmeta) {
    jni_task *t = PTR(jni_task, h);
    const jlong *m;
    size_t i;
    int pin_failed = 0;
    sts_result r = STS_OK;
    sts_error e;
    (void)cls;
    /* 1. read every cell (JNI calls allowed): the numbers in one copy, then each object */
    if (!jni_reserve(&t->meta, (size_t)nmeta * sizeof(jlong) + 1)) {
        (*env)->ThrowNew(env, J.oom, "sts_jni: a row");
        return;
    }
    (*env)->GetLongArrayRegion(env, meta, 0, nmeta, (jlong *)t->meta.p);
    m = (const jlong *)t->meta.p;
    if (t->ncols + 4 > 16 && (*env)->EnsureLocalCapacity(env, (jint)(t->ncols + 4)) != 0) return;
    for (i = 0; i < t->ncols; i++)                 /* a local reference per cell: all go when this returns */
        if (jni_cell(env, t, i, (*env)->GetObjectArrayElement(env, objs, (jsize)i), &m)) return;
    /* 2. pin the arrays, write, release every pin: no other JNI call in between */
    for (i = 0; i < t->ncols && !pin_failed; i++) {
        jni_col *c = &t->cols[i];
        if (!c->pin) continue;
        if (!(c->pinned = (char *)(*env)->GetPrimitiveArrayCritical(env, c->pin, NULL))) pin_failed = 1;
        else t->row[i].data = c->pinned + c->pin_offset;
    }
    if (!pin_failed) r = sts_task_write(t->w, t->row, &e);
    for (i = 0; i < t->ncols; i++) {
        jni_col *c = &t->cols[i];
        if (c->pinned) (*env)->ReleasePrimitiveArrayCritical(env, c->pin, c->pinned, JNI_ABORT);
        c->pinned = NULL;
        c->pin = NULL;
    }
    /* 3. report */
    if (pin_failed) {
        if (!(*env)->ExceptionCheck(env)) (*env)->ThrowNew(env, J.oom, "sts_jni: GetPrimitiveArrayCritical failed");
        return;
    }
    if (r != STS_OK) jni_throw(env, &e);
}

JNI_FN(jbyteArray, taskCommit)(JNIEnv *env, jclass cls, jlong h) {
    jni_task *t = PTR(jni_task, h);
    char *msg = NULL;
    size_t len = 0;
    sts_error e;
    jbyteArray out;
    (void)cls;
    if (sts_task_commit(t->w, &msg, &len, &e) != STS_OK) { jni_throw(env, &e); return NULL; }
    /* the shards are published now; if the byte[] cannot be made, the driver never learns of them
       and its job abort cannot name them: Spark would rerun the task, and the dataset commit
       removes shards no message names */
    if ((out = (*env)->NewByteArray(env, (jsize)len)) != NULL)
        (*env)->SetByteArrayRegion(env, out, 0, (jsize)len, (const jbyte *)msg);
    sts_free(NULL, msg, len + 1);
    return out;
}

JNI_FN(void, taskClose)(JNIEnv *env, jclass cls, jlong h) {
    (void)env; (void)cls;
    jni_task_free(PTR(jni_task, h));
    jni_count(-1);
}

/* ---- reading -------------------------------------------------------------------------------- */
static const char jni_empty[1] = { 0 };   /* the address of empty buffers (NewDirectByteBuffer wants one) */

/* A direct ByteBuffer over n bytes at p: zero copy. NULL with an exception pending on failure. */
static jobject jni_buffer(JNIEnv *env, const void *p, uint64_t n) {
    if (n > 0x7fffffff) {
        sts_error e;
        memset(&e, 0, sizeof e);
        e.code = STS_ERR_UNSUPPORTED;
        e.rule = STS_RULE_UNSUPPORTED;
        e.offset = STS_OFFSET_UNKNOWN;
        snprintf(e.message, sizeof e.message,
                 "unsupported: a tensor of %llu bytes does not fit one ByteBuffer (2 GiB - 1)", (unsigned long long)n);
        jni_throw(env, &e);
        return NULL;
    }
    {
        jobject b = (*env)->NewDirectByteBuffer(env, (void *)(uintptr_t)(n ? p : jni_empty), (jlong)n);
        if (!b && !(*env)->ExceptionCheck(env)) (*env)->ThrowNew(env, J.oom, "sts_jni: NewDirectByteBuffer failed");
        return b;
    }
}

/* TensorInfo(name, dtype, shape, nbytes, file); file may be NULL. */
static jobject jni_info(JNIEnv *env, const char *name, size_t name_len, sts_dtype dt, uint32_t rank,
                        const uint64_t *shape, uint64_t nbytes, const char *file) {
    jstring n = jni_string(env, name, name_len), f = NULL;
    jlongArray s;
    jobject o;
    uint32_t d;
    if (!n) return NULL;
    if (file && !(f = jni_string(env, file, strlen(file)))) return NULL;
    if (!(s = (*env)->NewLongArray(env, (jsize)rank))) return NULL;
    for (d = 0; d < rank; d++) {               /* dimensions over 2^63 cannot occur: sizes fit 64 bits */
        jlong v = (jlong)shape[d];
        (*env)->SetLongArrayRegion(env, s, (jsize)d, 1, &v);
    }
    o = (*env)->NewObject(env, J.info, J.info_new, n, J.dtype_names[dt], s, (jlong)nbytes, f);
    (*env)->DeleteLocalRef(env, n);
    (*env)->DeleteLocalRef(env, s);
    if (f) (*env)->DeleteLocalRef(env, f);
    return o;
}

JNI_FN(jlong, fileOpen)(JNIEnv *env, jclass cls, jstring path) {
    char *p = jni_utf8_dup(env, path);
    sts_file *f = NULL;
    sts_error e;
    (void)cls;
    if (!p) return 0;
    if (sts_open(p, NULL, &f, &e) != STS_OK) jni_throw(env, &e);
    else jni_count(1);
    free(p);
    return HANDLE(f);
}

JNI_FN(jobjectArray, fileTensors)(JNIEnv *env, jclass cls, jlong h) {
    const sts_file *f = PTR(const sts_file, h);
    size_t n = sts_count(f), i;
    jobjectArray out;
    (void)cls;
    if (!(out = (*env)->NewObjectArray(env, (jsize)n, J.info, NULL))) return NULL;
    for (i = 0; i < n; i++) {
        const sts_tensor *t = sts_at(f, i);
        jobject o = jni_info(env, t->name, t->name_len, t->dtype, t->rank, t->shape, sts_tensor_nbytes(t), NULL);
        if (!o) return NULL;
        (*env)->SetObjectArrayElement(env, out, (jsize)i, o);
        (*env)->DeleteLocalRef(env, o);
    }
    return out;
}

/* Key lookups share one small scratch per thread-free call: the key's UTF-8 on the stack when short. */
typedef struct jni_key { jni_buf units, text; size_t len; jchar u[128]; char s[384]; } jni_key;
static int jni_key_get(JNIEnv *env, jstring k, jni_key *key) {
    jsize n = k ? (*env)->GetStringLength(env, k) : 0;
    key->units.p = key->text.p = NULL;
    key->units.cap = key->text.cap = 0;
    if (k && n <= 128) {                            /* the common case: no allocation */
        (*env)->GetStringRegion(env, k, 0, n, key->u);
        key->len = jni_to_utf8(key->u, (size_t)n, key->s);
        key->text.p = key->s;
        return 0;
    }
    return jni_utf8(env, k, &key->units, &key->text, &key->len);
}
static void jni_key_free(jni_key *key) {
    free(key->units.p);
    if (key->text.p != key->s) free(key->text.p);
}

/* null when the file has no such tensor */
JNI_FN(jobject, fileGet)(JNIEnv *env, jclass cls, jlong h, jstring name) {
    const sts_file *f = PTR(const sts_file, h);
    const sts_tensor *t;
    jni_key k;
    jobject out = NULL;
    (void)cls;
    if (jni_key_get(env, name, &k) == 0 && (t = sts_find(f, (const char *)k.text.p, k.len)) != NULL)
        out = jni_buffer(env, sts_data(f, t), sts_tensor_nbytes(t));
    jni_key_free(&k);
    return out;
}

JNI_FN(void, fileClose)(JNIEnv *env, jclass cls, jlong h) {
    (void)env; (void)cls;
    sts_close(PTR(sts_file, h));
    jni_count(-1);
}

JNI_FN(jlong, datasetOpen)(JNIEnv *env, jclass cls, jstring path) {
    char *p = jni_utf8_dup(env, path);
    sts_dataset *ds = NULL;
    sts_read_config rc;
    sts_error e;
    (void)cls;
    if (!p) return 0;
    memset(&rc, 0, sizeof rc);
    rc.infer_schema = 1;                       /* lookups need no schema; inference never reads data */
    if (sts_dataset_open(p, &rc, NULL, &ds, &e) != STS_OK) jni_throw(env, &e);
    else jni_count(1);
    free(p);
    return HANDLE(ds);
}

/* with_data: the tensor's bytes as a buffer; else its TensorInfo. null when the key is absent. */
static jobject jni_dataset_get(JNIEnv *env, jlong h, jstring key, int with_data) {
    const sts_dataset *ds = PTR(const sts_dataset, h);
    jni_key k;
    sts_view v;
    sts_error e;
    sts_result r;
    jobject out = NULL;
    if (jni_key_get(env, key, &k)) return NULL;
    r = sts_dataset_get(ds, (const char *)k.text.p, k.len, with_data, &v, &e);
    jni_key_free(&k);
    if (r == STS_ERR_NOT_FOUND) return NULL;
    if (r != STS_OK) { jni_throw(env, &e); return NULL; }
    if (with_data) out = jni_buffer(env, v.data, v.nbytes);
    else out = jni_info(env, v.key, v.key_len, v.dtype, v.rank, v.shape, v.nbytes, sts_dataset_file(ds, v.file));
    return out;
}
JNI_FN(jobject, datasetGet)(JNIEnv *env, jclass cls, jlong h, jstring key) {
    (void)cls;
    return jni_dataset_get(env, h, key, 1);
}
JNI_FN(jobject, datasetInfo)(JNIEnv *env, jclass cls, jlong h, jstring key) {
    (void)cls;
    return jni_dataset_get(env, h, key, 0);
}

JNI_FN(void, datasetClose)(JNIEnv *env, jclass cls, jlong h) {
    (void)env; (void)cls;
    sts_dataset_close(PTR(sts_dataset, h));
    jni_count(-1);
}

/* ---- for the tests -------------------------------------------------------------------------- */
JNI_FN(jlong, liveHandles)(JNIEnv *env, jclass cls) {
    (void)env; (void)cls;
    return (jlong)__atomic_load_n(&jni_live, __ATOMIC_RELAXED);
}
JNI_FN(jlong, address)(JNIEnv *env, jclass cls, jobject buffer) {
    (void)cls;
    return (jlong)(intptr_t)(*env)->GetDirectBufferAddress(env, buffer);
}
