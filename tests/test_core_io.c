/* test_core_io.c - layer 5: sts_open by mmap, by read (no_mmap) and header-only, which must
   agree; sts_open_source reading exactly 8 + N bytes through a callback, and its failures; a
   sparse file over 4 GiB; clear errors for folders, missing paths, empty and 7-byte files; a cold
   header-only open reads the header's page from the device, not the readahead after it. */
#define _POSIX_C_SOURCE 200809L
#ifndef STS_TEST_LINKED  /* the Makefile links tests/sts_impl.c's object instead */
#define STS_IMPLEMENTATION
#endif
#include "../safetensors_spark.h"
#include "core_util.h"

/* ---- a model file written through the writer ---- */
static void write_model(const char *path, void **mem, size_t *size) {
    static const uint64_t s23[2] = { 2, 3 }, s4[1] = { 4 }, s0[2] = { 5, 0 }, s1k[1] = { 1000 };
    static const uint16_t hv[4] = { 0x3c00, 0x4000, 0x4200, 0x4400 };
    static uint8_t w[6 * 4], h[4 * 2];  /* F32 1..6 and the 16-bit values hv as little-endian bytes */
    static uint8_t big[1000];
    sts_tensor_spec sp[4];
    sts_kv meta[2];
    sts_error e;
    int i;
    for (i = 0; i < 6; i++) tu_stf32(w + 4 * i, (float)(i + 1));
    for (i = 0; i < 4; i++) tu_st16(h + 2 * i, hv[i]);
    for (i = 0; i < 1000; i++) big[i] = (uint8_t)(i * 31 + 7);
    memset(sp, 0, sizeof sp);
    sp[0].name = "weight"; sp[0].name_len = 6; sp[0].dtype = STS_DTYPE_F32; sp[0].rank = 2; sp[0].shape = s23;
    sp[0].data = w; sp[0].data_size = sizeof w;
    sp[1].name = "bias\xC3\xA9"; sp[1].name_len = 6; sp[1].dtype = STS_DTYPE_BF16; sp[1].rank = 1; sp[1].shape = s4;
    sp[1].data = h; sp[1].data_size = sizeof h;
    sp[2].name = "empty"; sp[2].name_len = 5; sp[2].dtype = STS_DTYPE_F64; sp[2].rank = 2; sp[2].shape = s0;
    sp[3].name = "bytes"; sp[3].name_len = 5; sp[3].dtype = STS_DTYPE_U8; sp[3].rank = 1; sp[3].shape = s1k;
    sp[3].data = big; sp[3].data_size = sizeof big;
    meta[0].key = "format"; meta[0].key_len = 6; meta[0].value = "pt"; meta[0].value_len = 2;
    meta[1].key = "note"; meta[1].key_len = 4; meta[1].value = "a\"b"; meta[1].value_len = 3;
    if (sts_write_path(path, sp, 4, meta, 2, NULL, &e) != STS_OK) fail_msg("write_path: %s", e.message);
    assert_int_equal(sts_write_memory(sp, 4, meta, 2, NULL, mem, size, &e), STS_OK);
}

static void same_tables(const sts_file *a, const sts_file *b) {
    size_t i, k;
    assert_int_equal(sts_count(a), sts_count(b));
    assert_int_equal(sts_header_size(a), sts_header_size(b));
    assert_int_equal(sts_file_size(a), sts_file_size(b));
    assert_int_equal(sts_has_metadata(a), sts_has_metadata(b));
    assert_int_equal(sts_metadata_count(a), sts_metadata_count(b));
    for (i = 0; i < sts_count(a); i++) {
        const sts_tensor *x = sts_at(a, i), *y = sts_at(b, i);
        assert_int_equal(x->name_len, y->name_len);
        assert_memory_equal(x->name, y->name, x->name_len);
        assert_int_equal(x->dtype, y->dtype);
        assert_int_equal(x->rank, y->rank);
        for (k = 0; k < x->rank; k++) assert_int_equal(x->shape[k], y->shape[k]);
        assert_int_equal(x->begin, y->begin);
        assert_int_equal(x->end, y->end);
        assert_int_equal(sts_tensor_file_offset(a, x), sts_tensor_file_offset(b, y));
        assert_ptr_equal(sts_find(b, x->name, x->name_len), y);
    }
    for (i = 0; i < sts_metadata_count(a); i++) {
        const sts_kv *x = sts_metadata_at(a, i), *y = sts_metadata_at(b, i);
        assert_int_equal(x->key_len, y->key_len);
        assert_memory_equal(x->key, y->key, x->key_len);
        assert_int_equal(x->value_len, y->value_len);
        assert_memory_equal(x->value, y->value, x->value_len);
    }
}

static void test_open_modes_agree(void **state) {
    char dir[256], path[512];
    void *mem;
    size_t size, i;
    sts_file *fm, *fr, *fh, *fp;
    sts_options o;
    sts_error e;
    (void)state;
    tf_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/m.safetensors", dir);
    write_model(path, &mem, &size);
    assert_int_equal(sts_parse(mem, size, NULL, &fp, &e), STS_OK);
    memset(&o, 0, sizeof o);
    o.strict = 1;
    assert_int_equal(sts_open(path, &o, &fm, &e), STS_OK);
    o.no_mmap = 1;
    assert_int_equal(sts_open(path, &o, &fr, &e), STS_OK);
    o.no_mmap = 0;
    o.header_only = 1;
    cu_err_poison(&e);
    assert_int_equal(sts_open(path, &o, &fh, &e), STS_OK);
    assert_int_equal(e.code, STS_OK);
    assert_int_equal(e.rule, STS_RULE_NONE);
    same_tables(fp, fm);
    same_tables(fp, fr);
    same_tables(fp, fh);
    assert_int_equal(sts_count(fm), 4);
    assert_int_equal(sts_file_size(fm), size);
    for (i = 0; i < sts_count(fp); i++) {
        const sts_tensor *t = sts_at(fp, i);
        const uint8_t *dm = (const uint8_t *)sts_data(fm, sts_at(fm, i)), *dr = (const uint8_t *)sts_data(fr, sts_at(fr, i));
        assert_non_null(dm);
        assert_non_null(dr);
        assert_null(sts_data(fh, sts_at(fh, i)));
        if (sts_tensor_nbytes(t)) {
            assert_memory_equal(dm, sts_data(fp, t), (size_t)sts_tensor_nbytes(t));
            assert_memory_equal(dr, sts_data(fp, t), (size_t)sts_tensor_nbytes(t));
        }
        /* the writer pads the header to 8: data starts 8-aligned in a map or a heap block */
        assert_int_equal((uintptr_t)dm % 8, 0);
        assert_int_equal((uintptr_t)dr % 8, 0);
        /* data pointers sit at 8 + N + begin from the start of the file's bytes */
        assert_int_equal(sts_tensor_file_offset(fm, sts_at(fm, i)), 8 + sts_header_size(fm) + t->begin);
    }
    {
        const sts_tensor *w = sts_find(fm, "weight", 6);
        assert_true(tu_lef32((const uint8_t *)sts_data(fm, w) + 20) == 6.0f);
        assert_non_null(sts_find(fh, "bias\xC3\xA9", 6));
        assert_int_equal(sts_metadata_find(fh, "note", 4)->value_len, 3);
        assert_memory_equal(sts_metadata_find(fr, "note", 4)->value, "a\"b", 3);
    }
    sts_close(fm);
    sts_close(fr);
    sts_close(fh);
    sts_close(fp);
    sts_free(NULL, mem, size);
    tf_rmtree(dir);
}

/* ---- bytes read by this process, from /proc/self/io (rchar counts read and pread) ---- */
/* rchar at the moment of reading; *len = the bytes this call itself read (counted in the next
   snapshot, not in this one) */
static long long proc_rchar(long long *len) {
    char buf[512];
    FILE *fp = fopen("/proc/self/io", "r");
    long long v = -1, n = 0;
    if (!fp) return -1;
    while (fgets(buf, sizeof buf, fp)) {
        n += (long long)strlen(buf);
        if (strncmp(buf, "rchar:", 6) == 0) v = atoll(buf + 6);
    }
    fclose(fp);
    if (len) *len = n;
    return v;
}
static long long bytes_read_by_open(const char *path, const sts_options *o) {
    long long lb, b = proc_rchar(&lb), c;
    sts_file *f;
    sts_error e;
    assert_int_equal(sts_open(path, o, &f, &e), STS_OK);
    c = proc_rchar(NULL);
    sts_close(f);
    if (b < 0) return -1;
    return c - b - lb;
}
/* Header-only opens read 8 + N bytes and no data; mmap opens read only the 8-byte prefix. */
static void test_open_bytes_read(void **state) {
    char dir[256], path[512];
    void *mem;
    size_t size;
    sts_options o;
    long long got, slack;
    uint64_t n;
    (void)state;
    if (proc_rchar(NULL) < 0) { skip(); return; }
    tf_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/m.safetensors", dir);
    write_model(path, &mem, &size);
    n = cu_ld64((const uint8_t *)mem);
    memset(&o, 0, sizeof o);
    o.header_only = 1;
    /* valgrind does a few reads of its own in between: allow it a little slack (the data section
       is over 1000 bytes, so reading it would still show) */
    {
        const char *pre = getenv("LD_PRELOAD");
        slack = pre && strstr(pre, "vgpreload") ? 64 : 0;
    }
    got = bytes_read_by_open(path, &o);
    if (got < (long long)(8 + n) || got > (long long)(8 + n) + slack)
        fail_msg("header-only open read %lld bytes, expected 8 + N = %llu", got, (unsigned long long)(8 + n));
    o.header_only = 0;
    got = bytes_read_by_open(path, &o);
    /* (valgrind reads the first KiB of every file mapping itself, so only without it) */
    if (!slack && got != 8) fail_msg("mmap open read %lld bytes, expected 8", got);
    o.no_mmap = 1;
    got = bytes_read_by_open(path, &o);
    if (got < (long long)(8 + size) || got > (long long)(8 + size) + slack)
        fail_msg("no_mmap open read %lld bytes, expected %zu", got, 8 + size);
    sts_free(NULL, mem, size);
    tf_rmtree(dir);
}

/* A header of 4 MiB or more (STS__MAP_HEADER) is mapped by a header-only open rather than read: the
   same tables, no data, nothing read but the 8-byte prefix; with no_mmap, 8 + N bytes are read. The
   mapping holds the file's bytes as a read does: a file replaced after the open changes nothing. */
static void test_open_large_header(void **state) {
    enum { COUNT = 45000 };
    static const uint64_t one[1] = { 1 };
    char dir[256], path[512], *names;
    uint8_t *bytes;
    sts_tensor_spec *sp;
    sts_options o;
    sts_file *fp, *fh, *fr;
    sts_error e;
    void *mem;
    size_t size, i;
    long long got, slack;
    uint64_t n;
    (void)state;
    tf_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/big.safetensors", dir);
    sp = (sts_tensor_spec *)calloc(COUNT, sizeof *sp);
    names = (char *)malloc((size_t)COUNT * 64);
    bytes = (uint8_t *)malloc(COUNT);
    assert_non_null(sp);
    assert_non_null(names);
    assert_non_null(bytes);
    for (i = 0; i < COUNT; i++) {
        char *nm = names + i * 64;
        snprintf(nm, 64, "model.layers.%05u.self_attention.query_key_value.w", (unsigned)i);
        bytes[i] = (uint8_t)(i * 13 + 5);
        sp[i].name = nm; sp[i].name_len = strlen(nm); sp[i].dtype = STS_DTYPE_U8; sp[i].rank = 1;
        sp[i].shape = one; sp[i].data = bytes + i; sp[i].data_size = 1;
    }
    if (sts_write_path(path, sp, COUNT, NULL, 0, NULL, &e) != STS_OK) fail_msg("write_path: %s", e.message);
    assert_int_equal(sts_write_memory(sp, COUNT, NULL, 0, NULL, &mem, &size, &e), STS_OK);
    n = cu_ld64((const uint8_t *)mem);
    assert_true(n >= ((uint64_t)4 << 20));  /* past the size from which a header is mapped */
    assert_int_equal(sts_parse(mem, size, NULL, &fp, &e), STS_OK);
    memset(&o, 0, sizeof o);
    o.header_only = 1;
    o.strict = 1;
    assert_int_equal(sts_open(path, &o, &fh, &e), STS_OK);
    o.no_mmap = 1;
    assert_int_equal(sts_open(path, &o, &fr, &e), STS_OK);
    /* the file replaced under both: their tables keep the bytes they opened */
    assert_int_equal(unlink(path), 0);
    tf_write(path, "garbage!", 8);
    same_tables(fp, fh);
    same_tables(fp, fr);
    for (i = 0; i < COUNT; i += 997) {
        assert_null(sts_data(fh, sts_at(fh, i)));
        assert_null(sts_data(fr, sts_at(fr, i)));
    }
    sts_close(fh);
    sts_close(fr);
    assert_int_equal(sts_write_path(path, sp, COUNT, NULL, 0, NULL, &e), STS_OK);
    if (proc_rchar(NULL) >= 0) {
        const char *pre = getenv("LD_PRELOAD");
        slack = pre && strstr(pre, "vgpreload") ? 64 : 0;
        o.no_mmap = 0;
        got = bytes_read_by_open(path, &o);
        /* (valgrind reads the first KiB of every file mapping itself, so only without it) */
        if (!slack && got != 8) fail_msg("header-only open of a %llu-byte header read %lld bytes, expected 8 (mapped)",
                                         (unsigned long long)n, got);
        o.no_mmap = 1;
        got = bytes_read_by_open(path, &o);
        if (got < (long long)(8 + n) || got > (long long)(8 + n) + slack)
            fail_msg("header-only no_mmap open read %lld bytes, expected 8 + N = %llu", got,
                     (unsigned long long)(8 + n));
    }
    sts_close(fp);
    sts_free(NULL, mem, size);
    free(sp);
    free(names);
    free(bytes);
    tf_rmtree(dir);
}

/* Header-only opens turn the kernel's readahead off: from a cold file, the device delivers the
   header's page, not the data after it. Observable only where the file system counts device reads
   (read_bytes in /proc/self/io) and readahead happens: a control read by hand without the hint must
   show it first, or the test is skipped (tmpfs, no accounting, readahead disabled). */
static long long proc_read_bytes(void) {
    char buf[512];
    FILE *fp = fopen("/proc/self/io", "r");
    long long v = -1;
    if (!fp) return -1;
    while (fgets(buf, sizeof buf, fp)) if (strncmp(buf, "read_bytes:", 11) == 0) v = atoll(buf + 11);
    fclose(fp);
    return v;
}
static int drop_pages(const char *path) {
#ifdef POSIX_FADV_DONTNEED
    int fd = open(path, O_RDONLY), r;
    if (fd < 0) return -1;
    r = fdatasync(fd) == 0 && posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) == 0 ? 0 : -1;
    close(fd);
    return r;
#else
    (void)path;
    return -1;
#endif
}
static void test_header_only_no_readahead(void **state) {
    static const uint64_t shape[1] = { 1 << 20 };
    char dir[256], path[512];
    uint8_t *big, head[8 + 256];
    sts_tensor_spec sp;
    sts_options o;
    sts_error e;
    sts_file *f;
    long long b0, control, got;
    int fd;
    uint64_t n;
    (void)state;
    if (proc_read_bytes() < 0) { skip(); return; }
    tf_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/ra.safetensors", dir);
    big = (uint8_t *)malloc((size_t)shape[0]);
    assert_non_null(big);
    memset(big, 0x5A, (size_t)shape[0]);
    memset(&sp, 0, sizeof sp);
    sp.name = "x"; sp.name_len = 1; sp.dtype = STS_DTYPE_U8; sp.rank = 1; sp.shape = shape;
    sp.data = big; sp.data_size = (size_t)shape[0];
    if (sts_write_path(path, &sp, 1, NULL, 0, NULL, &e) != STS_OK) fail_msg("write_path: %s", e.message);
    free(big);
    /* control: the same two reads by hand, without the hint */
    if (drop_pages(path) != 0) { tf_rmtree(dir); skip(); return; }
    b0 = proc_read_bytes();
    fd = open(path, O_RDONLY);
    assert_true(fd >= 0);
    assert_int_equal(pread(fd, head, 8, 0), 8);
    n = cu_ld64(head);
    assert_true(n <= 256);
    assert_int_equal(pread(fd, head + 8, (size_t)n, 8), (ssize_t)n);
    close(fd);
    control = proc_read_bytes() - b0;
    if (control <= 8192) { tf_rmtree(dir); skip(); return; }  /* no readahead to see here */
    assert_int_equal(drop_pages(path), 0);
    memset(&o, 0, sizeof o);
    o.header_only = 1;
    b0 = proc_read_bytes();
    assert_int_equal(sts_open(path, &o, &f, &e), STS_OK);
    got = proc_read_bytes() - b0;
    sts_close(f);
    if (got > 4096) fail_msg("a cold header-only open of a %llu-byte header read %lld bytes from the device (by hand without the hint: %lld)",
                             (unsigned long long)n, got, control);
    tf_rmtree(dir);
}

/* ---- a source over memory that records its reads ---- */
typedef struct msrc {
    const uint8_t *p;
    uint64_t size;
    int calls;
    uint64_t total, max_end;
    int fail_at;             /* fail the k-th read (from 1) */
    sts_result fail_code;
    uint64_t offs[8], lens[8];
} msrc;
static sts_result msrc_read(void *user, uint64_t off, void *dst, size_t len) {
    msrc *s = (msrc *)user;
    s->calls++;
    if (s->calls <= 8) { s->offs[s->calls - 1] = off; s->lens[s->calls - 1] = len; }
    if (s->fail_at && s->calls == s->fail_at) return s->fail_code;
    assert_true(off <= s->size && len <= s->size - off);
    memcpy(dst, s->p + off, len);
    s->total += len;
    if (off + len > s->max_end) s->max_end = off + len;
    return STS_OK;
}
static sts_source msrc_source(msrc *s, const void *p, uint64_t size) {
    sts_source src;
    memset(s, 0, sizeof *s);
    s->p = (const uint8_t *)p;
    s->size = size;
    src.read = msrc_read;
    src.user = s;
    src.size = size;
    return src;
}

static void test_source_header_only(void **state) {
    static const uint64_t s[1] = { 100000 };
    sts_tensor_spec sp;
    void *mem;
    size_t size;
    msrc ms;
    sts_source src;
    sts_file *f, *g;
    sts_error e;
    uint64_t n;
    (void)state;
    memset(&sp, 0, sizeof sp);
    sp.name = "t"; sp.name_len = 1; sp.dtype = STS_DTYPE_U8; sp.rank = 1; sp.shape = s;
    sp.data = calloc(100000, 1);
    sp.data_size = 100000;
    assert_int_equal(sts_write_memory(&sp, 1, NULL, 0, NULL, &mem, &size, NULL), STS_OK);
    free((void *)sp.data);
    n = cu_ld64((const uint8_t *)mem);
    src = msrc_source(&ms, mem, size);
    assert_int_equal(sts_open_source(&src, NULL, &f, &e), STS_OK);
    assert_int_equal(ms.total, 8 + n);
    assert_int_equal(ms.max_end, 8 + n);   /* never asked for a data byte */
    assert_int_equal(ms.calls, 2);
    assert_true(ms.offs[0] == 0 && ms.lens[0] == 8 && ms.offs[1] == 8 && ms.lens[1] == n);
    assert_int_equal(sts_count(f), 1);
    assert_null(sts_data(f, sts_at(f, 0)));
    assert_int_equal(sts_tensor_file_offset(f, sts_at(f, 0)), 8 + n);
    assert_int_equal(sts_file_size(f), size);
    assert_int_equal(sts_header_size(f), n);
    /* the same tables as a full parse */
    assert_int_equal(sts_parse(mem, size, NULL, &g, &e), STS_OK);
    same_tables(g, f);
    sts_close(g);
    sts_close(f);
    /* the header buffer is the file's own: the source's memory may go away */
    {
        uint8_t *copy = (uint8_t *)malloc(size);
        memcpy(copy, mem, size);
        src = msrc_source(&ms, copy, size);
        assert_int_equal(sts_open_source(&src, NULL, &f, &e), STS_OK);
        memset(copy, 0xAA, size);
        free(copy);
        assert_ptr_equal(sts_find(f, "t", 1), sts_at(f, 0));
        assert_int_equal(sts_at(f, 0)->end, 100000);
        sts_close(f);
    }
    /* the file size is still checked against what the source reports */
    src = msrc_source(&ms, mem, size);
    src.size = size - 1;
    ms.size = size - 1;
    f = (sts_file *)(uintptr_t)3;
    assert_int_equal(sts_open_source(&src, NULL, &f, &e), STS_ERR_METADATA_INCOMPLETE_BUFFER);
    assert_int_equal(e.rule, STS_RULE_FILE_SIZE);
    assert_ptr_equal(f, (sts_file *)(uintptr_t)3);
    assert_int_equal(ms.max_end, 8 + n);
    /* N past the size: only the prefix is read */
    src = msrc_source(&ms, mem, size);
    src.size = 8 + n - 1;
    ms.size = 8 + n - 1;
    assert_int_equal(sts_open_source(&src, NULL, &f, &e), STS_ERR_INVALID_HEADER_LENGTH);
    assert_int_equal(ms.calls, 1);
    /* a tightened header limit refuses before reading the header */
    {
        sts_options o;
        memset(&o, 0, sizeof o);
        o.max_header_size = n - 1;
        src = msrc_source(&ms, mem, size);
        assert_int_equal(sts_open_source(&src, &o, &f, &e), STS_ERR_HEADER_TOO_LARGE);
        assert_int_equal(ms.calls, 1);
    }
    sts_free(NULL, mem, size);
}

static void test_source_failures(void **state) {
    static const char file[] = "\x10\0\0\0\0\0\0\0{}              ";
    msrc ms;
    sts_source src;
    sts_file *f = (sts_file *)(uintptr_t)5;
    sts_error e;
    (void)state;
    /* sanity: it opens */
    src = msrc_source(&ms, file, 24);
    assert_int_equal(sts_open_source(&src, NULL, &f, &e), STS_OK);
    sts_close(f);
    f = (sts_file *)(uintptr_t)5;
    /* the prefix read fails: its code comes back, rule io, offset 0 */
    src = msrc_source(&ms, file, 24);
    ms.fail_at = 1;
    ms.fail_code = STS_ERR_NOT_FOUND;
    cu_err_poison(&e);
    assert_int_equal(sts_open_source(&src, NULL, &f, &e), STS_ERR_NOT_FOUND);
    assert_int_equal(e.code, STS_ERR_NOT_FOUND);
    assert_int_equal(e.rule, STS_RULE_IO);
    assert_int_equal(e.offset, 0);
    tu_err_has(cu_label, &e, (const char *)NULL);
    tu_err_has(cu_label, &e, "NOT_FOUND", (const char *)NULL);
    assert_ptr_equal(f, (sts_file *)(uintptr_t)5);
    /* the header read fails: offset 8 */
    src = msrc_source(&ms, file, 24);
    ms.fail_at = 2;
    ms.fail_code = STS_ERR_IO;
    assert_int_equal(sts_open_source(&src, NULL, &f, &e), STS_ERR_IO);
    assert_int_equal(e.rule, STS_RULE_IO);
    assert_int_equal(e.offset, 8);
    assert_ptr_equal(f, (sts_file *)(uintptr_t)5);
    assert_int_equal(sts_open_source(&src, NULL, &f, NULL), STS_OK);  /* third call succeeds... */
    sts_close(f);
    f = (sts_file *)(uintptr_t)5;
    /* a source under 8 bytes is never read */
    src = msrc_source(&ms, file, 7);
    assert_int_equal(sts_open_source(&src, NULL, &f, &e), STS_ERR_HEADER_TOO_SMALL);
    assert_int_equal(ms.calls, 0);
    src = msrc_source(&ms, file, 0);
    assert_int_equal(sts_open_source(&src, NULL, &f, &e), STS_ERR_HEADER_TOO_SMALL);
    assert_int_equal(ms.calls, 0);
    /* arguments */
    assert_int_equal(sts_open_source(NULL, NULL, &f, &e), STS_ERR_INVALID_ARGUMENT);
    assert_int_equal(e.rule, STS_RULE_ARGUMENT);
    src = msrc_source(&ms, file, 24);
    assert_int_equal(sts_open_source(&src, NULL, NULL, &e), STS_ERR_INVALID_ARGUMENT);
    src.read = NULL;
    assert_int_equal(sts_open_source(&src, NULL, &f, &e), STS_ERR_INVALID_ARGUMENT);
    assert_ptr_equal(f, (sts_file *)(uintptr_t)5);
    /* N = 0: nothing but the prefix is read, and the empty header is a JSON error */
    src = msrc_source(&ms, "\0\0\0\0\0\0\0\0", 8);
    assert_int_equal(sts_open_source(&src, NULL, &f, &e), STS_ERR_INVALID_HEADER_DESERIALIZATION);
    assert_int_equal(e.rule, STS_RULE_JSON_SYNTAX);
    assert_int_equal(e.offset, 8);
    assert_int_equal(ms.calls, 1);
}

/* A sparse file over 4 GiB: one small tensor, then 5 GiB of U8 zeros. */
static void test_big_sparse(void **state) {
    char dir[256], path[512], json[256];
    const uint64_t big = (uint64_t)5 << 30;
    uint8_t head[512];
    size_t hl, n;
    int fd;
    sts_file *f;
    sts_error e;
    sts_options o;
    const sts_tensor *a, *b;
    (void)state;
    if (sizeof(size_t) < 8) { skip(); return; }
    tf_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/big.safetensors", dir);
    hl = (size_t)snprintf(json, sizeof json,
                          "{\"a\":{\"dtype\":\"U8\",\"shape\":[16],\"data_offsets\":[0,16]},"
                          "\"b\":{\"dtype\":\"U8\",\"shape\":[%llu],\"data_offsets\":[16,%llu]}}",
                          (unsigned long long)big, (unsigned long long)(16 + big));
    n = (hl + 7) / 8 * 8;
    cu_st64(head, n);
    memset(head + 8, ' ', n);
    memcpy(head + 8, json, hl);
    for (hl = 0; hl < 16; hl++) head[8 + n + hl] = (uint8_t)(hl + 1);
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, head, 8 + n + 16), (long)(8 + n + 16));
    if (ftruncate(fd, (off_t)(8 + n + 16 + big)) != 0) { close(fd); tf_rmtree(dir); skip(); return; }
    close(fd);
    /* mmap */
    assert_int_equal(sts_open(path, NULL, &f, &e), STS_OK);
    assert_int_equal(sts_file_size(f), 8 + n + 16 + big);
    a = sts_find(f, "a", 1);
    b = sts_find(f, "b", 1);
    assert_non_null(a);
    assert_non_null(b);
    assert_ptr_equal(b, sts_at(f, 1));
    assert_int_equal(b->shape[0], big);
    assert_int_equal(sts_tensor_nbytes(b), big);
    assert_int_equal(sts_tensor_file_offset(f, b), 8 + n + 16);
    {
        const uint8_t *pa = (const uint8_t *)sts_data(f, a), *pb = (const uint8_t *)sts_data(f, b);
        assert_non_null(pa);
        /* a's data starts right after the header, which the map holds too */
        assert_memory_equal(pa - 8 - n, head, 8 + n + 16);
        assert_ptr_equal(pb, pa + 16);
        assert_int_equal(pb[big - 1], 0);          /* the last byte of the file */
        assert_int_equal(pb[big - 4096 - 7], 0);
        assert_int_equal(pb[((uint64_t)4 << 30) + 3], 0);  /* past 4 GiB */
    }
    sts_close(f);
    /* header-only */
    memset(&o, 0, sizeof o);
    o.header_only = 1;
    assert_int_equal(sts_open(path, &o, &f, &e), STS_OK);
    b = sts_find(f, "b", 1);
    assert_null(sts_data(f, b));
    assert_int_equal(sts_tensor_file_offset(f, b), 8 + n + 16);
    assert_int_equal(sts_file_size(f), 8 + n + 16 + big);
    sts_close(f);
    /* one byte short: the file-size rule, in both modes */
    assert_int_equal(truncate(path, (off_t)(8 + n + 16 + big - 1)), 0);
    assert_int_equal(sts_open(path, &o, &f, &e), STS_ERR_METADATA_INCOMPLETE_BUFFER);
    assert_int_equal(e.offset, 8 + n + 16 + big - 1);
    assert_int_equal(sts_open(path, NULL, &f, &e), STS_ERR_METADATA_INCOMPLETE_BUFFER);
    tf_rmtree(dir);
}

static void expect_open_fail(const char *path, const sts_options *o, sts_result code, sts_rule rule, const char *must) {
    sts_file *f = (sts_file *)(uintptr_t)9;
    sts_error e;
    sts_result r;
    cu_err_poison(&e);
    r = sts_open(path, o, &f, &e);
    tu_err_check(cu_label, r, &e, code, rule, (const char *)NULL);
    if (must) tu_err_has(cu_label, &e, must, (const char *)NULL);
    assert_ptr_equal(f, (sts_file *)(uintptr_t)9);
    assert_int_equal(sts_open(path, o, &f, NULL), code);
}
static void test_open_errors(void **state) {
    char dir[256], p[512], q[512];
    sts_options modes[3];
    int m;
    (void)state;
    tf_tmpdir(dir, sizeof dir);
    memset(modes, 0, sizeof modes);
    modes[1].no_mmap = 1;
    modes[2].header_only = 1;
    for (m = 0; m < 3; m++) {
        cu_label = m == 0 ? "mmap" : m == 1 ? "no_mmap" : "header_only";
        /* a folder */
        expect_open_fail(dir, &modes[m], STS_ERR_IO, STS_RULE_IO, "EISDIR");
        expect_open_fail(dir, &modes[m], STS_ERR_IO, STS_RULE_IO, dir);
        /* a missing path */
        snprintf(p, sizeof p, "%s/missing.safetensors", dir);
        expect_open_fail(p, &modes[m], STS_ERR_IO, STS_RULE_IO, "ENOENT");
        expect_open_fail(p, &modes[m], STS_ERR_IO, STS_RULE_IO, p);
        snprintf(q, sizeof q, "%s/missing/x.safetensors", dir);
        expect_open_fail(q, &modes[m], STS_ERR_IO, STS_RULE_IO, "ENOENT");
        /* empty and 7-byte files */
        snprintf(p, sizeof p, "%s/empty.safetensors", dir);
        tf_write(p, "", 0);
        expect_open_fail(p, &modes[m], STS_ERR_HEADER_TOO_SMALL, STS_RULE_FILE_TOO_SMALL, "0 bytes");
        snprintf(p, sizeof p, "%s/seven.safetensors", dir);
        tf_write(p, "\x02\0\0\0\0\0\0", 7);
        expect_open_fail(p, &modes[m], STS_ERR_HEADER_TOO_SMALL, STS_RULE_FILE_TOO_SMALL, "7 bytes");
        /* the header runs past the end */
        snprintf(p, sizeof p, "%s/long.safetensors", dir);
        tf_write(p, "\x09\0\0\0\0\0\0\0{}      ", 16);
        expect_open_fail(p, &modes[m], STS_ERR_INVALID_HEADER_LENGTH, STS_RULE_HEADER_LENGTH, NULL);
        /* a trailing byte */
        snprintf(p, sizeof p, "%s/trail.safetensors", dir);
        tf_write(p, "\x08\0\0\0\0\0\0\0{}      X", 17);
        expect_open_fail(p, &modes[m], STS_ERR_METADATA_INCOMPLETE_BUFFER, STS_RULE_FILE_SIZE, NULL);
        /* a JSON error */
        snprintf(p, sizeof p, "%s/json.safetensors", dir);
        tf_write(p, "\x08\0\0\0\0\0\0\0{]      ", 16);
        expect_open_fail(p, &modes[m], STS_ERR_INVALID_HEADER_DESERIALIZATION, STS_RULE_JSON_SYNTAX, NULL);
        /* strict through sts_open */
        snprintf(p, sizeof p, "%s/tab.safetensors", dir);
        tf_write(p, "\x08\0\0\0\0\0\0\0{}     \t", 16);
        {
            sts_options so = modes[m];
            sts_file *f;
            so.strict = 1;
            expect_open_fail(p, &so, STS_ERR_INVALID_HEADER_DESERIALIZATION, STS_RULE_STRICT_PADDING, NULL);
            assert_int_equal(sts_open(p, &modes[m], &f, NULL), STS_OK);
            sts_close(f);
        }
    }
    {   /* arguments */
        sts_file *f = (sts_file *)(uintptr_t)9;
        sts_error e;
        sts_options o;
        assert_int_equal(sts_open(NULL, NULL, &f, &e), STS_ERR_INVALID_ARGUMENT);
        assert_int_equal(e.rule, STS_RULE_ARGUMENT);
        assert_int_equal(sts_open(p, NULL, NULL, &e), STS_ERR_INVALID_ARGUMENT);
        memset(&o, 0, sizeof o);
        o.allocator.realloc = tu_a_realloc;
        assert_int_equal(sts_open(p, &o, &f, &e), STS_ERR_INVALID_ARGUMENT);
        assert_ptr_equal(f, (sts_file *)(uintptr_t)9);
    }
    tf_rmtree(dir);
}

/* The file stays usable after the path is unlinked or replaced: it owns its map or buffer. */
static void test_open_owns_bytes(void **state) {
    char dir[256], path[512];
    void *mem;
    size_t size;
    int m;
    (void)state;
    tf_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/m.safetensors", dir);
    for (m = 0; m < 2; m++) {
        sts_options o;
        sts_file *f;
        const sts_tensor *t;
        write_model(path, &mem, &size);
        memset(&o, 0, sizeof o);
        o.no_mmap = m;
        assert_int_equal(sts_open(path, &o, &f, NULL), STS_OK);
        assert_int_equal(unlink(path), 0);
        tf_write(path, "garbage!", 8);
        t = sts_find(f, "bytes", 5);
        assert_non_null(t);
        assert_int_equal(((const uint8_t *)sts_data(f, t))[999], (uint8_t)(999 * 31 + 7));
        sts_close(f);
        sts_free(NULL, mem, size);
        unlink(path);
    }
    tf_rmtree(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_open_modes_agree),
        cmocka_unit_test(test_open_bytes_read),
        cmocka_unit_test(test_open_large_header),
        cmocka_unit_test(test_header_only_no_readahead),
        cmocka_unit_test(test_source_header_only),
        cmocka_unit_test(test_source_failures),
        cmocka_unit_test(test_big_sparse),
        cmocka_unit_test(test_open_errors),
        cmocka_unit_test(test_open_owns_bytes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
