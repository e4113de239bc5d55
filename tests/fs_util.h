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
/* Every entry of a folder, hidden ones too, with the bytes of each file, in name order: what a
   failed call must leave exactly as it was. */
typedef struct tf_snap { char **name; uint8_t **bytes; size_t *len, n, cap; } tf_snap;
TF_FN int tf__snap_cmp(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }
TF_FN tf_snap tf_snap_take(const char *dir) {
    tf_snap s;
    DIR *d = opendir(dir);
    struct dirent *e;
    char **order;
    size_t i;
    memset(&s, 0, sizeof s);
    if (!d) TU_FAIL("open folder %s: %s", dir, strerror(errno));
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        if (s.n == s.cap) {
            s.cap = s.cap ? 2 * s.cap : 32;
            s.name = (char **)realloc(s.name, s.cap * sizeof *s.name);
            TU_CHECK(s.name != NULL);
        }
        s.name[s.n] = (char *)malloc(strlen(e->d_name) + 1);
        TU_CHECK(s.name[s.n] != NULL);
        strcpy(s.name[s.n++], e->d_name);
    }
    closedir(d);
    if (s.n) qsort(s.name, s.n, sizeof *s.name, tf__snap_cmp);
    order = s.name;
    s.bytes = (uint8_t **)calloc(s.n + 1, sizeof *s.bytes);
    s.len = (size_t *)calloc(s.n + 1, sizeof *s.len);
    TU_CHECK(s.bytes != NULL && s.len != NULL);
    for (i = 0; i < s.n; i++) {  /* a folder reads as no bytes */
        char p[4096];
        struct stat st;
        tf_join(p, sizeof p, dir, order[i]);
        if (lstat(p, &st) == 0 && S_ISREG(st.st_mode)) s.bytes[i] = tf_read(p, &s.len[i]);
    }
    return s;
}
/* 1 when a and b hold the same names and bytes; else 0, with what differs appended to why. */
TF_FN int tf_snap_same(const tf_snap *a, const tf_snap *b, tu_sb *why) {
    size_t i = 0, j = 0;
    int same = 1;
    while (i < a->n || j < b->n) {
        int c = i == a->n ? 1 : j == b->n ? -1 : strcmp(a->name[i], b->name[j]);
        if (c < 0) { tu_sb_printf(why, " %s is gone;", a->name[i++]); same = 0; }
        else if (c > 0) { tu_sb_printf(why, " %s appeared;", b->name[j++]); same = 0; }
        else {
            if (a->len[i] != b->len[j] || (a->len[i] && memcmp(a->bytes[i], b->bytes[j], a->len[i]) != 0)) {
                tu_sb_printf(why, " %s changed;", a->name[i]);
                same = 0;
            }
            i++, j++;
        }
    }
    return same;
}
TF_FN void tf_snap_free(tf_snap *s) {
    size_t i;
    for (i = 0; i < s->n; i++) { free(s->name[i]); if (s->bytes) free(s->bytes[i]); }
    free(s->name);
    free(s->bytes);
    free(s->len);
    memset(s, 0, sizeof *s);
}
TF_FN void tf_names_free(tf_names *r) {
    size_t i;
    for (i = 0; i < r->n; i++) free(r->v[i]);
    free(r->v);
    memset(r, 0, sizeof *r);
}

#endif
