/* npy.h - .npy files for the sts tool (include after safetensors_spark.h with STS_IMPLEMENTATION).

   Reads and writes NumPy's .npy format, versions 1.0, 2.0 and 3.0: the magic "\x93NUMPY", two
   version bytes, a little-endian header length (2 bytes in 1.0, 4 bytes in 2.0 and 3.0), a Python
   dict literal {'descr': ..., 'fortran_order': ..., 'shape': (...), } padded with spaces and a
   newline so that the data starts at a multiple of 64, then the array in C order.

   Supported element types: the ones with a safetensors dtype: bool (|b1), int8/uint8, (u)int16,
   (u)int32, (u)int64, float16, float32, float64 and complex64, little-endian ('<') or
   byte-order-free ('|'). Refused with a clear message: Fortran order, big-endian data, object
   arrays, structured dtypes, and anything else. Loading maps the file (zero-copy); it opens the
   path without blocking and refuses anything but a regular file (a FIFO is refused, not waited
   on). Messages are allocated (never cut): the caller frees them. Writing is the caller's: it
   gets the header bytes from npy_header and sends them where it writes (sts writes through a
   temporary and a rename). */
#ifndef STS_NPY_H
#define STS_NPY_H

#include <stdio.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/mman.h>

#define NPY_MAX_RANK 32

typedef struct npy_array {
    sts_dtype dtype;
    uint32_t rank;
    uint64_t shape[NPY_MAX_RANK];
    const uint8_t *data;        /* into the mapping */
    uint64_t nbytes;
    int version;                /* 1, 2 or 3 */
    void *map;
    size_t map_size;
} npy_array;

static const struct { const char *descr; sts_dtype dtype; } npy_types[] = {
    { "|b1", STS_DTYPE_BOOL }, { "|u1", STS_DTYPE_U8 }, { "|i1", STS_DTYPE_I8 }, { "<u1", STS_DTYPE_U8 }, { "<i1", STS_DTYPE_I8 },
    { "<u2", STS_DTYPE_U16 }, { "<i2", STS_DTYPE_I16 }, { "<u4", STS_DTYPE_U32 }, { "<i4", STS_DTYPE_I32 },
    { "<u8", STS_DTYPE_U64 }, { "<i8", STS_DTYPE_I64 }, { "<f2", STS_DTYPE_F16 }, { "<f4", STS_DTYPE_F32 },
    { "<f8", STS_DTYPE_F64 }, { "<c8", STS_DTYPE_C64 },
};

/* An allocated message (NULL when even that fails: the caller then says "out of memory"). */
static char *npy__msg(const char *fmt, ...) {
    va_list ap;
    int n;
    char *m;
    va_start(ap, fmt);
    n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || !(m = (char *)malloc((size_t)n + 1))) return NULL;
    va_start(ap, fmt);
    vsnprintf(m, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return m;
}

/* The value after 'key': in the header dict, or NULL. */
static const char *npy__find(const char *h, size_t n, const char *key) {
    size_t kl = strlen(key), i;
    for (i = 0; i + kl + 2 < n; i++)
        if ((h[i] == '\'' || h[i] == '"') && memcmp(h + i + 1, key, kl) == 0 && h[i + 1 + kl] == h[i]) {
            const char *p = h + i + kl + 2;
            while (p < h + n && (*p == ' ' || *p == ':')) p++;
            return p < h + n ? p : NULL;
        }
    return NULL;
}

static void npy_free(npy_array *a) {
    if (a->map) munmap(a->map, a->map_size);
    memset(a, 0, sizeof *a);
}

/* What a file that is not a regular file is, for messages. */
static const char *npy_file_kind(mode_t m) {
    if (S_ISDIR(m)) return "a folder";
    if (S_ISFIFO(m)) return "a FIFO";
    if (S_ISSOCK(m)) return "a socket";
    if (S_ISCHR(m) || S_ISBLK(m)) return "a device";
    return "not a regular file";
}

/* Opens path for reading without blocking (open(2) on a FIFO waits for a writer otherwise), and
   refuses anything but a regular file. Returns the descriptor (blocking again), or -1 with
   *err set (allocated). */
static int npy_open_regular(const char *path, const char *expected, struct stat *st, char **err) {
    int fd, fl;
    do fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC); while (fd < 0 && errno == EINTR);
    if (fd < 0) { *err = npy__msg("%s: cannot open: %s", path, strerror(errno)); return -1; }
    if (fstat(fd, st) != 0) { *err = npy__msg("%s: cannot stat: %s", path, strerror(errno)); close(fd); return -1; }
    if (!S_ISREG(st->st_mode)) {
        *err = S_ISDIR(st->st_mode) ? npy__msg("%s: not a regular file (%s is expected)", path, expected)
                                    : npy__msg("%s: not a regular file (%s, where %s is expected): refused rather than waited on",
                                               path, npy_file_kind(st->st_mode), expected);
        close(fd);
        return -1;
    }
    if ((fl = fcntl(fd, F_GETFL)) == -1 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) == -1) {
        *err = npy__msg("%s: cannot open: %s", path, strerror(errno));
        close(fd);
        return -1;
    }
    return fd;
}

/* Returns 0, or -1 with an allocated message in *err (NULL if out of memory). */
static int npy_load(const char *path, npy_array *a, char **err) {
    struct stat st;
    const uint8_t *b;
    const char *h, *p, *end;
    size_t hl, hstart, i;
    uint64_t count = 1;
    int fd;
    memset(a, 0, sizeof *a);
    *err = NULL;
    if ((fd = npy_open_regular(path, "a .npy file", &st, err)) < 0) return -1;
    if (st.st_size < 12) { close(fd); *err = npy__msg("%s: not a .npy file (too short)", path); return -1; }
    a->map_size = (size_t)st.st_size;
    a->map = mmap(NULL, a->map_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (a->map == MAP_FAILED) { a->map = NULL; *err = npy__msg("%s: cannot map: %s", path, strerror(errno)); return -1; }
    b = (const uint8_t *)a->map;
#define NPY__FAIL(...) do { *err = npy__msg(__VA_ARGS__); npy_free(a); return -1; } while (0)
    if (memcmp(b, "\x93NUMPY", 6) != 0) NPY__FAIL("%s: not a .npy file (bad magic)", path);
    a->version = b[6];
    if (a->version == 1) { hl = (size_t)b[8] | (size_t)b[9] << 8; hstart = 10; }
    else if (a->version == 2 || a->version == 3) { hl = (size_t)b[8] | (size_t)b[9] << 8 | (size_t)b[10] << 16 | (size_t)b[11] << 24; hstart = 12; }
    else NPY__FAIL("%s: .npy version %d.%d is not supported (1, 2 and 3 are)", path, b[6], b[7]);
    if (hl > a->map_size - hstart) NPY__FAIL("%s: truncated .npy header", path);
    h = (const char *)b + hstart;
    end = h + hl;
    /* descr */
    p = npy__find(h, hl, "descr");
    if (!p || (*p != '\'' && *p != '"')) NPY__FAIL("%s: the .npy header has no descr string (structured dtypes are not supported)", path);
    {
        char q = *p++, d[16];
        size_t n = 0;
        int found = 0;
        while (p < end && *p != q && n < sizeof d - 1) d[n++] = *p++;
        d[n] = 0;
        if (d[0] == '>' && strcmp(d, ">u1") != 0 && strcmp(d, ">i1") != 0) NPY__FAIL("%s: big-endian data ('%s') is not supported; use arr.astype(arr.dtype.newbyteorder('<'))", path, d);
        if (strchr(d, 'O')) NPY__FAIL("%s: object arrays ('%s') cannot become tensors", path, d);
        if (d[0] == '>') d[0] = '|';
        if (d[0] == '=') d[0] = '<';
        for (i = 0; i < sizeof npy_types / sizeof npy_types[0]; i++)
            if (strcmp(d, npy_types[i].descr) == 0) { a->dtype = npy_types[i].dtype; found = 1; break; }
        if (!found) NPY__FAIL("%s: element type '%s' has no safetensors dtype", path, d);
    }
    /* fortran_order */
    p = npy__find(h, hl, "fortran_order");
    if (!p) NPY__FAIL("%s: the .npy header has no fortran_order", path);
    if ((size_t)(end - p) >= 4 && strncmp(p, "True", 4) == 0) NPY__FAIL("%s: Fortran-order arrays are not supported; save np.ascontiguousarray(arr)", path);
    if ((size_t)(end - p) < 5 || strncmp(p, "False", 5) != 0) NPY__FAIL("%s: bad fortran_order value", path);
    /* shape */
    p = npy__find(h, hl, "shape");
    if (!p || *p != '(') NPY__FAIL("%s: the .npy header has no shape tuple", path);
    p++;
    for (;;) {
        uint64_t v = 0;
        int digits = 0;
        while (p < end && (*p == ' ' || *p == ',')) p++;
        if (p < end && *p == ')') break;
        while (p < end && *p >= '0' && *p <= '9') {
            if (v > (UINT64_MAX - 9) / 10) NPY__FAIL("%s: shape overflows", path);
            v = v * 10 + (uint64_t)(*p++ - '0');
            digits++;
        }
        while (p < end && *p == 'L') p++;  /* Python 2 longs */
        if (!digits || a->rank == NPY_MAX_RANK) NPY__FAIL("%s: bad shape in the .npy header", path);
        a->shape[a->rank++] = v;
        if (count && v > UINT64_MAX / (count ? count : 1)) NPY__FAIL("%s: shape overflows", path);
        count *= v;
    }
    a->data = b + hstart + hl;
    if (count > UINT64_MAX / 8) NPY__FAIL("%s: shape overflows", path);
    a->nbytes = count * sts_dtype_bits(a->dtype) / 8;
    if (a->nbytes != a->map_size - hstart - hl)
        NPY__FAIL("%s: the data holds %llu bytes, the header announces %llu", path,
                  (unsigned long long)(a->map_size - hstart - hl), (unsigned long long)a->nbytes);
#undef NPY__FAIL
    return 0;
}

static const char *npy_descr(sts_dtype d) {
    switch (d) {
    case STS_DTYPE_BOOL: return "|b1";
    case STS_DTYPE_U8: return "|u1";
    case STS_DTYPE_I8: return "|i1";
    case STS_DTYPE_U16: return "<u2";
    case STS_DTYPE_I16: return "<i2";
    case STS_DTYPE_U32: return "<u4";
    case STS_DTYPE_I32: return "<i4";
    case STS_DTYPE_U64: return "<u8";
    case STS_DTYPE_I64: return "<i8";
    case STS_DTYPE_F16: return "<f2";
    case STS_DTYPE_F32: return "<f4";
    case STS_DTYPE_F64: return "<f8";
    case STS_DTYPE_C64: return "<c8";
    default: return NULL;
    }
}
/* The bytes of a .npy file before its data: magic, version (1.0 unless the header needs 2.0),
   header length and the dict padded so that the data starts at a multiple of 64. Returns an
   allocated buffer of *len bytes, or NULL with an allocated message in *err. */
static uint8_t *npy_header(sts_dtype dtype, uint32_t rank, const uint64_t *shape, size_t *len, char **err) {
    const char *descr = npy_descr(dtype);
    size_t n = 0, cap, i, pad, hl, pre;
    int version = 1;
    char *dict;
    uint8_t *out;
    *err = NULL;
    if (!descr) {
        *err = npy__msg("dtype %s has no NumPy type (convert it first, e.g. sts convert --dtype F32)", sts_dtype_name(dtype));
        return NULL;
    }
    cap = 64 + (size_t)rank * 22;  /* a uint64 is at most 20 digits, plus ", " */
    if (!(dict = (char *)malloc(cap))) return NULL;
    n += (size_t)snprintf(dict + n, cap - n, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
    for (i = 0; i < rank; i++)  /* Python tuples: (), (3,), (2, 3) */
        n += (size_t)snprintf(dict + n, cap - n, i ? ", %llu" : "%llu", (unsigned long long)shape[i]);
    n += (size_t)snprintf(dict + n, cap - n, rank == 1 ? ",), }" : "), }");
    pre = 10;
    pad = (64 - (pre + n + 1) % 64) % 64;
    hl = n + pad + 1;
    if (hl > 65535) { version = 2; pre = 12; pad = (64 - (pre + n + 1) % 64) % 64; hl = n + pad + 1; }
    if (!(out = (uint8_t *)malloc(pre + hl))) { free(dict); return NULL; }
    memcpy(out, "\x93NUMPY", 6);
    out[6] = (uint8_t)version;
    out[7] = 0;
    for (i = 0; i < pre - 8; i++) out[8 + i] = (uint8_t)((hl >> (8 * i)) & 255);
    memcpy(out + pre, dict, n);
    memset(out + pre + n, ' ', pad);
    out[pre + hl - 1] = '\n';
    free(dict);
    *len = pre + hl;
    return out;
}

#endif /* STS_NPY_H */
