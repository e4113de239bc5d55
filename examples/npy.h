/* npy.h - .npy files for the sts tool (include after safetensors_spark.h with STS_IMPLEMENTATION).

   Reads and writes NumPy's .npy format, versions 1.0, 2.0 and 3.0: the magic "\x93NUMPY", two
   version bytes, a little-endian header length (2 bytes in 1.0, 4 bytes in 2.0 and 3.0), a Python
   dict literal {'descr': ..., 'fortran_order': ..., 'shape': (...), } padded with spaces and a
   newline so that the data starts at a multiple of 64, then the array in C order.

   Supported element types: the ones with a safetensors dtype: bool (|b1), int8/uint8, (u)int16,
   (u)int32, (u)int64, float16, float32, float64 and complex64, little-endian ('<') or
   byte-order-free ('|'). Refused with a clear message: Fortran order, big-endian data, object
   arrays, structured dtypes, and anything else. Loading maps the file (zero-copy). */
#ifndef STS_NPY_H
#define STS_NPY_H

#include <stdio.h>
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

/* Returns 0, or -1 with a message in err. */
static int npy_load(const char *path, npy_array *a, char *err, size_t errlen) {
    struct stat st;
    const uint8_t *b;
    const char *h, *p, *end;
    size_t hl, hstart, i;
    uint64_t count = 1;
    int fd = open(path, O_RDONLY);
    memset(a, 0, sizeof *a);
    if (fd < 0) { snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno)); return -1; }
    if (fstat(fd, &st) != 0) { snprintf(err, errlen, "%s: cannot stat: %s", path, strerror(errno)); close(fd); return -1; }
    if (!S_ISREG(st.st_mode)) { close(fd); snprintf(err, errlen, "%s: not a regular file (a .npy file is expected)", path); return -1; }
    if (st.st_size < 12) { close(fd); snprintf(err, errlen, "%s: not a .npy file (too short)", path); return -1; }
    a->map_size = (size_t)st.st_size;
    a->map = mmap(NULL, a->map_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (a->map == MAP_FAILED) { a->map = NULL; snprintf(err, errlen, "%s: cannot map: %s", path, strerror(errno)); return -1; }
    b = (const uint8_t *)a->map;
    if (memcmp(b, "\x93NUMPY", 6) != 0) { snprintf(err, errlen, "%s: not a .npy file (bad magic)", path); npy_free(a); return -1; }
    a->version = b[6];
    if (a->version == 1) { hl = (size_t)b[8] | (size_t)b[9] << 8; hstart = 10; }
    else if (a->version == 2 || a->version == 3) { hl = (size_t)b[8] | (size_t)b[9] << 8 | (size_t)b[10] << 16 | (size_t)b[11] << 24; hstart = 12; }
    else { snprintf(err, errlen, "%s: .npy version %d.%d is not supported (1, 2 and 3 are)", path, b[6], b[7]); npy_free(a); return -1; }
    if (hstart + hl > a->map_size) { snprintf(err, errlen, "%s: truncated .npy header", path); npy_free(a); return -1; }
    h = (const char *)b + hstart;
    end = h + hl;
    /* descr */
    p = npy__find(h, hl, "descr");
    if (!p || (*p != '\'' && *p != '"')) { snprintf(err, errlen, "%s: the .npy header has no descr string (structured dtypes are not supported)", path); npy_free(a); return -1; }
    {
        char q = *p++, d[16];
        size_t n = 0;
        int found = 0;
        while (p < end && *p != q && n < sizeof d - 1) d[n++] = *p++;
        d[n] = 0;
        if (d[0] == '>' && strcmp(d, ">u1") != 0 && strcmp(d, ">i1") != 0) { snprintf(err, errlen, "%s: big-endian data ('%s') is not supported; use arr.astype(arr.dtype.newbyteorder('<'))", path, d); npy_free(a); return -1; }
        if (strchr(d, 'O')) { snprintf(err, errlen, "%s: object arrays ('%s') cannot become tensors", path, d); npy_free(a); return -1; }
        if (d[0] == '>') d[0] = '|';
        if (d[0] == '=') d[0] = '<';
        for (i = 0; i < sizeof npy_types / sizeof npy_types[0]; i++)
            if (strcmp(d, npy_types[i].descr) == 0) { a->dtype = npy_types[i].dtype; found = 1; break; }
        if (!found) { snprintf(err, errlen, "%s: element type '%s' has no safetensors dtype", path, d); npy_free(a); return -1; }
    }
    /* fortran_order */
    p = npy__find(h, hl, "fortran_order");
    if (!p) { snprintf(err, errlen, "%s: the .npy header has no fortran_order", path); npy_free(a); return -1; }
    if (strncmp(p, "True", 4) == 0) { snprintf(err, errlen, "%s: Fortran-order arrays are not supported; save np.ascontiguousarray(arr)", path); npy_free(a); return -1; }
    if (strncmp(p, "False", 5) != 0) { snprintf(err, errlen, "%s: bad fortran_order value", path); npy_free(a); return -1; }
    /* shape */
    p = npy__find(h, hl, "shape");
    if (!p || *p != '(') { snprintf(err, errlen, "%s: the .npy header has no shape tuple", path); npy_free(a); return -1; }
    p++;
    for (;;) {
        uint64_t v = 0;
        int digits = 0;
        while (p < end && (*p == ' ' || *p == ',')) p++;
        if (p < end && *p == ')') break;
        while (p < end && *p >= '0' && *p <= '9') {
            if (v > (UINT64_MAX - 9) / 10) { snprintf(err, errlen, "%s: shape overflows", path); npy_free(a); return -1; }
            v = v * 10 + (uint64_t)(*p++ - '0');
            digits++;
        }
        while (p < end && *p == 'L') p++;  /* Python 2 longs */
        if (!digits || a->rank == NPY_MAX_RANK) { snprintf(err, errlen, "%s: bad shape in the .npy header", path); npy_free(a); return -1; }
        a->shape[a->rank++] = v;
        if (count && v > UINT64_MAX / (count ? count : 1)) { snprintf(err, errlen, "%s: shape overflows", path); npy_free(a); return -1; }
        count *= v;
    }
    a->data = b + hstart + hl;
    if (count > UINT64_MAX / 8) { snprintf(err, errlen, "%s: shape overflows", path); npy_free(a); return -1; }
    a->nbytes = count * sts_dtype_bits(a->dtype) / 8;
    if (a->nbytes != a->map_size - hstart - hl) {
        snprintf(err, errlen, "%s: the data holds %llu bytes, the header announces %llu", path,
                 (unsigned long long)(a->map_size - hstart - hl), (unsigned long long)a->nbytes);
        npy_free(a);
        return -1;
    }
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
/* Writes path through a temporary and a rename. Version 1.0 unless the header needs 2.0.
   0, or -1 with a message in err. */
static int npy_save(const char *path, sts_dtype dtype, uint32_t rank, const uint64_t *shape, const void *data, uint64_t nbytes,
                    char *err, size_t errlen) {
    char hdr[4096], tmp[4096];
    const char *descr = npy_descr(dtype);
    size_t n, i, pad, hl;
    int version = 1, fd;
    FILE *f;
    if (!descr) {
        snprintf(err, errlen, "%s: dtype %s has no NumPy type (convert it first, e.g. sts convert --dtype F32)", path, sts_dtype_name(dtype));
        return -1;
    }
    if (rank > NPY_MAX_RANK) { snprintf(err, errlen, "%s: rank %u is too large for this tool", path, (unsigned)rank); return -1; }
    n = (size_t)snprintf(hdr, sizeof hdr, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
    for (i = 0; i < rank; i++)  /* Python tuples: (), (3,), (2, 3) */
        n += (size_t)snprintf(hdr + n, sizeof hdr - n, i ? ", %llu" : "%llu", (unsigned long long)shape[i]);
    n += (size_t)snprintf(hdr + n, sizeof hdr - n, rank == 1 ? ",), }" : "), }");
    pad = (64 - (10 + n + 1) % 64) % 64;   /* data at a multiple of 64 */
    hl = n + pad + 1;
    if (hl > 65535) { version = 2; pad = (64 - (12 + n + 1) % 64) % 64; hl = n + pad + 1; }
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0666);
    if (fd < 0 || !(f = fdopen(fd, "wb"))) { snprintf(err, errlen, "%s: cannot create: %s", path, strerror(errno)); if (fd >= 0) close(fd); return -1; }
    fwrite("\x93NUMPY", 1, 6, f);
    fputc(version, f);
    fputc(0, f);
    for (i = 0; i < (version == 1 ? 2u : 4u); i++) fputc((int)((hl >> (8 * i)) & 255), f);
    fwrite(hdr, 1, n, f);
    for (i = 0; i < pad; i++) fputc(' ', f);
    fputc('\n', f);
    if (nbytes && fwrite(data, 1, (size_t)nbytes, f) != (size_t)nbytes) { fclose(f); unlink(tmp); snprintf(err, errlen, "%s: write failed", path); return -1; }
    if (fclose(f) != 0 || rename(tmp, path) != 0) { unlink(tmp); snprintf(err, errlen, "%s: write failed: %s", path, strerror(errno)); return -1; }
    return 0;
}

#endif /* STS_NPY_H */
