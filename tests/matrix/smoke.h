/* Shared by the compile-matrix programs: a small round trip through the public API, compiled as
   C and C++ under every configuration. Include it after safetensors_spark.h. Returns 0 on
   success, else prints what failed. dir: a writable folder for the path-based calls, or NULL. */
#include <stdio.h>
#include <string.h>

#define MATRIX_CHECK(cond)                                                               \
    do {                                                                                 \
        if (!(cond)) {                                                                   \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);    \
            return 1;                                                                    \
        }                                                                                \
    } while (0)

static int matrix_check_file(const sts_file *f, int with_data) {
    const sts_tensor *w = sts_find(f, "weight", 6), *b = sts_find(f, "bias", 4);
    const sts_kv *kv = sts_metadata_find(f, "format", 6);
    MATRIX_CHECK(sts_count(f) == 2);
    MATRIX_CHECK(w && b && w == sts_at(f, 0) && b == sts_at(f, 1)); /* F32 ranks above F16 */
    MATRIX_CHECK(w->dtype == STS_DTYPE_F32 && w->rank == 2 && w->shape[0] == 2 && w->shape[1] == 3);
    MATRIX_CHECK(b->dtype == STS_DTYPE_F16 && b->rank == 1 && b->shape[0] == 2);
    MATRIX_CHECK(w->begin == 0 && w->end == 24 && b->begin == 24 && b->end == 28);
    MATRIX_CHECK(kv && kv->value_len == 2 && memcmp(kv->value, "pt", 2) == 0);
    MATRIX_CHECK(strcmp(sts_dtype_name(b->dtype), "F16") == 0);
    if (with_data) {
        float last;
        memcpy(&last, (const unsigned char *)sts_data(f, w) + 20, sizeof last);
        MATRIX_CHECK(last == 6.0f);
    } else {
        MATRIX_CHECK(sts_data(f, w) == NULL);
    }
    return 0;
}

static int matrix_smoke(const char *dir) {
    static const float w[6] = {1, 2, 3, 4, 5, 6};
    static const unsigned char h[4] = {0x00, 0x3c, 0x00, 0x40}; /* F16 1.0, 2.0 */
    uint64_t wshape[2] = {2, 3}, hshape[1] = {2};
    sts_tensor_spec specs[2];
    sts_kv meta[1];
    sts_options strict;
    sts_error err;
    sts_file *f = NULL;
    void *bytes = NULL;
    size_t size = 0;
    uint64_t hsize = 0, fsize = 0;

    memset(specs, 0, sizeof specs);
    memset(&strict, 0, sizeof strict);
    strict.strict = 1;
    specs[0].name = "bias"; specs[0].name_len = 4; specs[0].dtype = STS_DTYPE_F16;
    specs[0].rank = 1; specs[0].shape = hshape; specs[0].data = h; specs[0].data_size = sizeof h;
    specs[1].name = "weight"; specs[1].name_len = 6; specs[1].dtype = STS_DTYPE_F32;
    specs[1].rank = 2; specs[1].shape = wshape; specs[1].data = w; specs[1].data_size = sizeof w;
    meta[0].key = "format"; meta[0].key_len = 6; meta[0].value = "pt"; meta[0].value_len = 2;

    MATRIX_CHECK(strcmp(sts_result_name(STS_ERR_INVALID_OFFSET), "INVALID_OFFSET") == 0);
    MATRIX_CHECK(sts_write_size(specs, 2, meta, 1, NULL, &hsize, &fsize, &err) == STS_OK);
    MATRIX_CHECK(sts_write_memory(specs, 2, meta, 1, NULL, &bytes, &size, &err) == STS_OK);
    MATRIX_CHECK(size == fsize && hsize % 8 == 0);
    MATRIX_CHECK(sts_parse(bytes, size, &strict, &f, &err) == STS_OK);
    MATRIX_CHECK(matrix_check_file(f, 1) == 0);
    sts_close(f);
    MATRIX_CHECK(sts_parse(bytes, size - 1, NULL, &f, &err) == STS_ERR_METADATA_INCOMPLETE_BUFFER);
    MATRIX_CHECK(strncmp(err.message, "file.size: ", 11) == 0);
    sts_free(NULL, bytes, size);
#ifndef STS_NO_STDIO
    if (dir) {
        char path[4096];
        sts_options o;
        memset(&o, 0, sizeof o);
        MATRIX_CHECK(strlen(dir) < sizeof path - 32);
        snprintf(path, sizeof path, "%s/smoke.safetensors", dir);
        MATRIX_CHECK(sts_write_path(path, specs, 2, meta, 1, NULL, &err) == STS_OK);
        MATRIX_CHECK(sts_open(path, NULL, &f, &err) == STS_OK);
        MATRIX_CHECK(matrix_check_file(f, 1) == 0);
        sts_close(f);
        o.no_mmap = 1;
        MATRIX_CHECK(sts_open(path, &o, &f, &err) == STS_OK);
        MATRIX_CHECK(matrix_check_file(f, 1) == 0);
        sts_close(f);
        o.no_mmap = 0; o.header_only = 1;
        MATRIX_CHECK(sts_open(path, &o, &f, &err) == STS_OK);
        MATRIX_CHECK(matrix_check_file(f, 0) == 0);
        sts_close(f);
        MATRIX_CHECK(remove(path) == 0);
    }
#else
    (void)dir;
#endif
    return 0;
}
