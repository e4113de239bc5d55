/* fs_util.h - files and folders: one copy, shared by core_util.h, dataset_write_util.h and
   test_dataset_read_util.h (and so by every test program), the fuzz targets and the benchmarks.
   Include after safetensors_spark.h, like test_util.h, which it includes: each helper fails the
   running test (or, under TU_STANDALONE, aborts) on an error it cannot report otherwise; none of
   them is part of the library.
     tf_join      "dir/name" into a buffer that must be large enough
     tf_tmpdir    a fresh folder under $TMPDIR or /tmp
     tf_exists    lstat succeeds (a dangling link exists)
     tf_file_size st_size, or -1
     tf_rmtree    a file, or a folder with everything in it (read-only subfolders too)
     tf_clear     everything in a folder, keeping the folder
     tf_read      a whole file, NUL-terminated (not counted in *n); fails the test if unreadable
     tf_read_opt  the same, or NULL when the file cannot be opened or read (a file that may be absent)
     tf_write     a whole file, created or truncated
     tf_list      the names in a folder with a given prefix and suffix (no hidden ones), sorted */
#ifndef STS_TESTS_FS_UTIL_H
#define STS_TESTS_FS_UTIL_H

#include "test_util.h"

#include <dirent.h>
#include <errno.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#define TF_FN TU_FN

TF_FN void tf_join(char *buf, size_t cap, const char *dir, const char *name) {
    int n = snprintf(buf, cap, "%s/%s", dir, name);
    if (n <= 0 || (size_t)n >= cap) TU_FAIL("path %s/%s does not fit in %zu bytes", dir, name, cap);
}
TF_FN void tf_tmpdir(char *buf, size_t cap) {
    const char *base = getenv("TMPDIR");
    int n;
    if (!base || !*base) base = "/tmp";
    n = snprintf(buf, cap, "%s/sts-test.XXXXXX", base);
    TU_CHECK(n > 0 && (size_t)n < cap);
    if (!mkdtemp(buf)) TU_FAIL("mkdtemp %s: %s", buf, strerror(errno));
}
/* A fresh folder in tmpfs (/dev/shm) when there is one, where fsync costs nothing and the same
   calls happen; else tf_tmpdir's. */
TF_FN void tf_fast_tmpdir(char *buf, size_t cap) {
    struct stat st;
    if (stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) && access("/dev/shm", W_OK) == 0 && cap >= 32) {
        strcpy(buf, "/dev/shm/sts-test.XXXXXX");
        if (mkdtemp(buf)) return;
    }
    tf_tmpdir(buf, cap);
}
TF_FN int tf_exists(const char *path) {
    struct stat st;
    return lstat(path, &st) == 0;
}
TF_FN int64_t tf_file_size(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 ? (int64_t)st.st_size : -1;
}
static void tf__empty(const char *dir, int remove_dir) {
    DIR *d = opendir(dir);
    struct dirent *e;
    char p[4096];
    if (!d) { if (remove_dir) unlink(dir); return; }
    while ((e = readdir(d)) != NULL) {
        struct stat st;
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        tf_join(p, sizeof p, dir, e->d_name);
        if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode)) {
            chmod(p, 0755);  /* a test may have made it read-only */
            tf__empty(p, 1);
        } else unlink(p);
    }
    closedir(d);
    if (remove_dir) rmdir(dir);
}
TF_FN void tf_rmtree(const char *dir) { tf__empty(dir, 1); }
TF_FN void tf_clear(const char *dir) { tf__empty(dir, 0); }
TF_FN uint8_t *tf_read_opt(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    uint8_t *p;
    long len;
    *n = 0;
    if (!f) return NULL;
    if (fseek(f, 0, SEEK_END) != 0 || (len = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) { fclose(f); return NULL; }
    p = (uint8_t *)malloc((size_t)len + 1);
    TU_CHECK(p != NULL);
    if (len && fread(p, 1, (size_t)len, f) != (size_t)len) { fclose(f); free(p); return NULL; }
    fclose(f);
    p[len] = 0;
    *n = (size_t)len;
    return p;
}
TF_FN uint8_t *tf_read(const char *path, size_t *n) {
    uint8_t *p = tf_read_opt(path, n);
    if (!p) TU_FAIL("read %s: %s", path, strerror(errno));
    return p;
}
TF_FN void tf_write(const char *path, const void *bytes, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f) TU_FAIL("create %s: %s", path, strerror(errno));
    if (n && fwrite(bytes, 1, n, f) != n) TU_FAIL("write %s: %s", path, strerror(errno));
    if (fclose(f) != 0) TU_FAIL("close %s: %s", path, strerror(errno));
}

/* The names in dir that do not start with '.', start with prefix and end with suffix (and are
   longer than it), sorted; missing = 1 when dir cannot be opened. Free with tf_names_free. */
typedef struct tf_names { char **v; size_t n; int missing; } tf_names;
static int tf__strp_cmp(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }
TF_FN tf_names tf_list(const char *dir, const char *prefix, const char *suffix) {
    tf_names r;
    DIR *d = opendir(dir);
    struct dirent *e;
    size_t cap = 0, pl = strlen(prefix), sl = strlen(suffix);
    memset(&r, 0, sizeof r);
    if (!d) { r.missing = 1; return r; }
    while ((e = readdir(d)) != NULL) {
        size_t n = strlen(e->d_name);
        if (e->d_name[0] == '.' || n <= sl || strncmp(e->d_name, prefix, pl) != 0 || strcmp(e->d_name + n - sl, suffix) != 0) continue;
        if (r.n == cap) { cap = cap ? 2 * cap : 16; r.v = (char **)realloc(r.v, cap * sizeof *r.v); TU_CHECK(r.v != NULL); }
        r.v[r.n] = (char *)malloc(n + 1);
        TU_CHECK(r.v[r.n] != NULL);
        memcpy(r.v[r.n++], e->d_name, n + 1);
    }
    closedir(d);
    if (r.n) qsort(r.v, r.n, sizeof *r.v, tf__strp_cmp);
    return r;
}
/* ---- folder snapshots: every entry (hidden ones too), sorted, with size and, when asked, bytes:
   what a failed call must leave exactly as it was ---- */
typedef struct tf_entry { char name[256]; int64_t size; uint8_t *bytes; } tf_entry;
typedef struct tf_snap { tf_entry *e; size_t n; int missing; } tf_snap;

TF_FN int tf_entry_cmp(const void *a, const void *b) { return strcmp(((const tf_entry *)a)->name, ((const tf_entry *)b)->name); }
TF_FN tf_snap tf_snapshot(const char *dir, int with_bytes) {
    tf_snap s;
    DIR *d = opendir(dir);
    struct dirent *e;
    size_t cap = 0;
    memset(&s, 0, sizeof s);
    if (!d) { s.missing = 1; return s; }
    while ((e = readdir(d)) != NULL) {
        char p[4096];
        tf_entry *x;
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        if (s.n == cap) { cap = cap ? cap * 2 : 16; s.e = (tf_entry *)realloc(s.e, cap * sizeof *s.e); TU_CHECK(s.e != NULL); }
        x = &s.e[s.n++];
        memset(x, 0, sizeof *x);
        TU_CHECK(strlen(e->d_name) < sizeof x->name);
        strcpy(x->name, e->d_name);
        tf_join(p, sizeof p, dir, e->d_name);
        x->size = tf_file_size(p);
        {
            struct stat st;
            if (with_bytes && lstat(p, &st) == 0 && S_ISREG(st.st_mode)) { size_t n; x->bytes = tf_read_opt(p, &n); }
            if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode)) x->size = -2;  /* folders: no size */
        }
    }
    closedir(d);
    if (s.n) qsort(s.e, s.n, sizeof *s.e, tf_entry_cmp);
    return s;
}
TF_FN void tf_snap_free(tf_snap *s) {
    size_t i;
    for (i = 0; i < s->n; i++) free(s->e[i].bytes);
    free(s->e);
    memset(s, 0, sizeof *s);
}
TF_FN void tf_snap_text(const tf_snap *s, tu_sb *b) {
    size_t i;
    if (s->missing) { tu_sb_printf(b, "(no folder)"); return; }
    for (i = 0; i < s->n; i++) tu_sb_printf(b, "%s%s:%lld", i ? " " : "", s->e[i].name, (long long)s->e[i].size);
    if (!s->n) tu_sb_printf(b, "(empty)");
}
/* 1 when equal (names, sizes, and bytes when both have them); else fills why. */
TF_FN int tf_snap_same(const tf_snap *a, const tf_snap *b, tu_sb *why) {
    size_t i;
    int same = a->missing == b->missing && a->n == b->n;
    for (i = 0; same && i < a->n; i++) {
        if (strcmp(a->e[i].name, b->e[i].name) != 0 || a->e[i].size != b->e[i].size) same = 0;
        else if (a->e[i].bytes && b->e[i].bytes && memcmp(a->e[i].bytes, b->e[i].bytes, (size_t)a->e[i].size) != 0) {
            same = 0;
            if (why) tu_sb_printf(why, "bytes of %s differ; ", a->e[i].name);
        }
    }
    if (!same && why) {
        tu_sb_printf(why, "before: ");
        tf_snap_text(a, why);
        tu_sb_printf(why, " | after: ");
        tf_snap_text(b, why);
    }
    return same;
}
#define tf_snap_equal(a, b, label) do { tu_sb why_ = {0, 0, 0}; \
    if (!tf_snap_same((a), (b), &why_)) TU_FAIL("%s: folder changed: %s", (label), why_.p); } while (0)
TF_FN void tf_names_free(tf_names *r) {
    size_t i;
    for (i = 0; i < r->n; i++) free(r->v[i]);
    free(r->v);
    memset(r, 0, sizeof *r);
}

#endif
