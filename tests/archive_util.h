/* archive_util.h - helpers shared by the archive tests (tests/test_archive.c,
   tests/test_archive_threads.c) and the archive's fuzz target (fuzz/fuzz_archive.c).

   Include after safetensors_spark.h with STS_IMPLEMENTATION (and after test_util.h's users define
   TU_STANDALONE, when they do): checks go through TU_CHECK / TU_FAIL, so they fail the running
   cmocka test, or abort in a standalone program. Everything is static and marked unused.
     ta_src       a callback source over bytes in memory that behaves like a remote file read with
                  HTTP range requests: it counts requests and bytes (atomically: threads may share
                  it), records the first TA_RANGES ranges, refuses ranges past the end (counted in
                  bad), and can fail its k-th request
     ta_fac       a factory (sts_factory) that allocates with malloc, answers wrap as told and
                  counts allocate, wrap and release calls (atomically); release frees
     ta_npy_*     .npy files as NumPy's np.save writes them (the dict's repr, padded with spaces
                  to a multiple of 64 bytes, ended by a newline), any version
     ta_hf_index  a model.safetensors.index.json as transformers' save_pretrained writes it
                  (json.dumps(index, indent=2, sort_keys=True) + "\n")
     ta_align     the largest power of two up to 4096 dividing an offset (4096 for 0)
     ta_sha256sum the SHA-256 of a file, or of bytes through a temporary file, by running the
                  sha256sum program: digests computed outside the library */
#ifndef STS_TESTS_ARCHIVE_UTIL_H
#define STS_TESTS_ARCHIVE_UTIL_H

#include "test_util.h"
#include "fs_util.h"

#define TA_FN TU_FN

/* ---- a callback source over bytes: remote reads, counted ---- */
#define TA_RANGES 64
typedef struct ta_range { uint64_t off, len; } ta_range;
typedef struct ta_src {
    const uint8_t *bytes;
    uint64_t size;
    long requests;                  /* read calls */
    uint64_t bytes_read;            /* bytes they asked for */
    long bad;                       /* calls for bytes past the end (refused with STS_ERR_IO) */
    long fail_at;                   /* this call (from 1) fails with STS_ERR_IO; 0 = never */
    size_t nranges;                 /* calls recorded (may exceed TA_RANGES: the first are kept) */
    ta_range ranges[TA_RANGES];
} ta_src;
TA_FN sts_result ta_src_read(void *user, uint64_t off, void *dst, size_t len) {
    ta_src *s = (ta_src *)user;
    long k = __atomic_add_fetch(&s->requests, 1, __ATOMIC_RELAXED);
    size_t at = __atomic_fetch_add(&s->nranges, 1, __ATOMIC_RELAXED);
    if (at < TA_RANGES) { s->ranges[at].off = off; s->ranges[at].len = len; }
    if (off > s->size || len > s->size - off) { __atomic_add_fetch(&s->bad, 1, __ATOMIC_RELAXED); return STS_ERR_IO; }
    if (s->fail_at && k == s->fail_at) return STS_ERR_IO;
    __atomic_add_fetch(&s->bytes_read, (uint64_t)len, __ATOMIC_RELAXED);
    if (len) memcpy(dst, s->bytes + off, len);
    return STS_OK;
}
/* A fresh counter over (p, n) and the sts_source that reads through it. */
TA_FN sts_source ta_src_init(ta_src *s, const void *p, uint64_t n) {
    sts_source src;
    memset(s, 0, sizeof *s);
    s->bytes = (const uint8_t *)p;
    s->size = n;
    src.read = ta_src_read;
    src.user = s;
    src.size = n;
    return src;
}
TA_FN void ta_src_reset(ta_src *s) {
    s->requests = 0;
    s->bytes_read = 0;
    s->bad = 0;
    s->nranges = 0;
}

/* ---- inputs ---- */
TA_FN sts_input ta_in_path(const char *path, int no_mmap) {
    sts_input in;
    memset(&in, 0, sizeof in);
    in.path = path;
    in.no_mmap = no_mmap;
    return in;
}
TA_FN sts_input ta_in_bytes(const void *p, size_t n) {
    sts_input in;
    memset(&in, 0, sizeof in);
    in.bytes = p;
    in.size = n;
    return in;
}
TA_FN sts_input ta_in_source(const sts_source *src) {
    sts_input in;
    memset(&in, 0, sizeof in);
    in.source = src;
    return in;
}

/* ---- a factory: malloc, a wrap that answers as told, counted ---- */
typedef struct ta_fac {
    int wrap_answer;                /* what wrap returns */
    int no_wrap;                    /* the factory has no wrap */
    int refuse;                     /* allocate returns NULL */
    long allocs, wraps, releases;
    void *last;                     /* what allocate gave last */
    uint64_t last_nbytes;
    const sts_type *last_type;
    const void *last_view;          /* what wrap was offered last */
    void *released;                 /* what release got last */
    uint64_t released_nbytes;
} ta_fac;
TA_FN void *ta_fac_allocate(void *user, const sts_tensor_desc *d, const sts_type *type, uint64_t nbytes) {
    ta_fac *f = (ta_fac *)user;
    void *p;
    (void)d;
    __atomic_add_fetch(&f->allocs, 1, __ATOMIC_RELAXED);
    if (f->refuse || nbytes > ((uint64_t)1 << 32)) return NULL;
    p = malloc(nbytes ? (size_t)nbytes : 1);
    f->last = p;
    f->last_nbytes = nbytes;
    f->last_type = type;
    return p;
}
TA_FN int ta_fac_wrap(void *user, const sts_tensor_desc *d, const void *view) {
    ta_fac *f = (ta_fac *)user;
    (void)d;
    __atomic_add_fetch(&f->wraps, 1, __ATOMIC_RELAXED);
    f->last_view = view;
    return f->wrap_answer;
}
TA_FN void ta_fac_release(void *user, const sts_tensor_desc *d, void *ptr, uint64_t nbytes) {
    ta_fac *f = (ta_fac *)user;
    (void)d;
    __atomic_add_fetch(&f->releases, 1, __ATOMIC_RELAXED);
    f->released = ptr;
    f->released_nbytes = nbytes;
    free(ptr);
}
TA_FN sts_factory ta_factory(ta_fac *f) {
    sts_factory x;
    x.allocate = ta_fac_allocate;
    x.wrap = f->no_wrap ? NULL : ta_fac_wrap;
    x.release = ta_fac_release;
    x.user = f;
    return x;
}
/* Frees what a successful materialise gave (a copy; a wrapped view belongs to the archive). */
TA_FN void ta_unmaterialize(sts_materialized *m) {
    if (!m->wrapped) free(m->data);
    memset(m, 0, sizeof *m);
}

/* ---- .npy files as np.save writes them ---- */
/* NumPy's header dict: {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), } */
TA_FN void ta_npy_dict(tu_sb *b, const char *descr, int fortran, const uint64_t *shape, uint32_t rank) {
    uint32_t i;
    tu_sb_printf(b, "{'descr': '%s', 'fortran_order': %s, 'shape': (", descr, fortran ? "True" : "False");
    for (i = 0; i < rank; i++) tu_sb_printf(b, "%s%llu", i ? ", " : "", (unsigned long long)shape[i]);
    tu_sb_str(b, rank == 1 ? ",), }" : "), }");
}
/* A whole file: the magic, version (major, 0), the header length (2 bytes in 1.0, 4 after), the
   dict padded with spaces so that the data starts at a multiple of 64, a newline, the data. */
TA_FN void ta_npy_file(tu_sb *out, int major, const char *dict, const void *data, size_t n) {
    size_t dl = strlen(dict), lensz = major == 1 ? 2 : 4, pre = 6 + 2 + lensz, hlen = dl + 1;
    uint8_t head[12];
    while ((pre + hlen) % 64) hlen++;
    memcpy(head, "\x93NUMPY", 6);
    head[6] = (uint8_t)major;
    head[7] = 0;
    if (lensz == 2) tu_st16(head + 8, (uint16_t)hlen);
    else tu_st32(head + 8, (uint32_t)hlen);
    tu_sb_put(out, head, pre);
    tu_sb_put(out, dict, dl);
    while (out->n < pre + hlen - 1) tu_sb_put(out, " ", 1);
    tu_sb_put(out, "\n", 1);
    if (n) tu_sb_put(out, data, n);
}
/* Offset of the data in a file made by ta_npy_file. */
TA_FN uint64_t ta_npy_data_at(int major, const char *dict) {
    size_t pre = major == 1 ? 10 : 12, hlen = strlen(dict) + 1;
    while ((pre + hlen) % 64) hlen++;
    return pre + hlen;
}

/* ---- model.safetensors.index.json as transformers writes it ---- */
typedef struct ta_wm { const char *name, *file; } ta_wm;
static int ta__wm_cmp(const void *a, const void *b) { return strcmp(((const ta_wm *)a)->name, ((const ta_wm *)b)->name); }
/* json.dumps({"metadata": {"total_size": N}, "weight_map": {...}}, indent=2, sort_keys=True) + "\n";
   extra_meta (may be NULL) is more members of metadata, already JSON ("\"k\": 1"), sorted by the caller. */
TA_FN void ta_hf_index(tu_sb *b, uint64_t total_size, const char *extra_meta, const ta_wm *map, size_t n) {
    ta_wm *s = (ta_wm *)malloc((n ? n : 1) * sizeof *s);
    size_t i;
    TU_CHECK(s != NULL);
    if (n) memcpy(s, map, n * sizeof *s);
    qsort(s, n, sizeof *s, ta__wm_cmp);
    tu_sb_str(b, "{\n  \"metadata\": {\n");
    if (extra_meta) tu_sb_printf(b, "    %s,\n", extra_meta);
    tu_sb_printf(b, "    \"total_size\": %llu\n  },\n  \"weight_map\": {", (unsigned long long)total_size);
    for (i = 0; i < n; i++) {
        tu_sb_str(b, i ? ",\n    " : "\n    ");
        tu_sb_json(b, s[i].name, strlen(s[i].name));
        tu_sb_str(b, ": ");
        tu_sb_json(b, s[i].file, strlen(s[i].file));
    }
    tu_sb_str(b, n ? "\n  }\n}\n" : "}\n}\n");
    free(s);
}

/* ---- small facts ---- */
TA_FN uint64_t ta_align(uint64_t off) {
    uint64_t al = off ? off & (~off + 1) : 4096;
    return al > 4096 ? 4096 : al;
}
TA_FN int ta_hexval(int c) {
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}
TA_FN void ta_hex(const uint8_t d[32], char out[65]) {
    static const char hx[] = "0123456789abcdef";
    int i;
    for (i = 0; i < 32; i++) { out[2 * i] = hx[d[i] >> 4]; out[2 * i + 1] = hx[d[i] & 15]; }
    out[64] = 0;
}

/* ---- SHA-256 by the sha256sum program ---- */
TA_FN void ta_sha256sum(const char *path, uint8_t out[32]) {
    char cmd[4200], line[256];
    FILE *p;
    int i;
    TU_CHECK(strchr(path, '\'') == NULL);
    snprintf(cmd, sizeof cmd, "sha256sum '%s'", path);
    p = popen(cmd, "r");
    if (!p) TU_FAIL("popen %s", cmd);
    if (!fgets(line, sizeof line, p)) { pclose(p); TU_FAIL("%s printed nothing", cmd); }
    if (pclose(p) != 0) TU_FAIL("%s failed", cmd);
    for (i = 0; i < 64; i++) if (ta_hexval(line[i]) < 0) TU_FAIL("%s printed %s", cmd, line);
    for (i = 0; i < 32; i++) out[i] = (uint8_t)(ta_hexval(line[2 * i]) << 4 | ta_hexval(line[2 * i + 1]));
}
/* The digest of n bytes, written to dir/sha256sum.tmp first. */
TA_FN void ta_sha256sum_bytes(const char *dir, const void *p, size_t n, uint8_t out[32]) {
    char path[4096];
    tf_join(path, sizeof path, dir, "sha256sum.tmp");
    tf_write(path, p, n);
    ta_sha256sum(path, out);
    unlink(path);
}

#endif /* STS_TESTS_ARCHIVE_UTIL_H */
