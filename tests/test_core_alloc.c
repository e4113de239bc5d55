/* test_core_alloc.c - allocation-failure injection through sts_options.allocator.

   A tracking allocator (core_util.h) fails the k-th request. For k = 1, 2, ... until the call
   succeeds, each entry point must fail with STS_ERR_NOMEM under rule alloc, leave nothing
   allocated, pass the right size to every free and realloc, and leave its out-parameters alone.
   The inputs reach every allocation site: escaped names and metadata (arena), more than 16
   tensors, dims and metadata entries (growth by realloc), duplicates and unsorted offsets (the
   re-sort and the metadata re-index). */
#define _POSIX_C_SOURCE 200809L
#ifndef STS_TEST_LINKED  /* the Makefile links tests/sts_impl.c's object instead */
#define STS_IMPLEMENTATION
#endif
#include "../safetensors_spark.h"
#include "core_util.h"

#define MAX_K 100000

/* A header that takes every allocating path of the parser. */
static cu_img busy_image(void) {
    tu_sb b = { 0 };
    int i, nt = 40;
    uint64_t off = 0;
    cu_img im;
    tu_sb_str(&b, "{\"__metadata__\":{");
    for (i = 0; i < 24; i++)   /* escaped keys and values; keys 0-3 appear again below */
        tu_sb_printf(&b, "%s\"k\\u00e9%d\":\"v\\n%d\"", i ? "," : "", i, i);
    for (i = 0; i < 4; i++) tu_sb_printf(&b, ",\"k\\u00e9%d\":\"again%d\"", i, i);
    tu_sb_str(&b, "},");
    /* an early copy of t0 that vanishes */
    tu_sb_str(&b, "\"t\\u00300\\t\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]},");
    for (i = nt - 1; i >= 0; i--) {   /* reversed offsets: the table must be sorted */
        uint64_t begin = (uint64_t)(nt - 1 - i) * 6;
        (void)off;
        tu_sb_printf(&b, "\"t\\u0030%d\\t\":{\"dtype\":\"I16\",\"shape\":[1,1,1,3],\"data_offsets\":[%llu,%llu]}%s", i,
                     (unsigned long long)begin, (unsigned long long)(begin + 6), i ? "," : "");
    }
    tu_sb_str(&b, ",\"plain\":[\"U8\",[0],[0,0]]}");
    im = cu_img_bytes(b.p, b.n, (size_t)nt * 6);
    tu_sb_free(&b);
    return im;
}

/* After each attempt: nothing outstanding, every size right. */
static void check_clean(const tu_alloc *a, long k) {
    char label[32];
    snprintf(label, sizeof label, "k=%ld", k);
    tu_alloc_check(label, a);
}
static void check_nomem(sts_result r, const sts_error *e, const tu_alloc *a, long k) {
    if (r != STS_ERR_NOMEM || e->code != STS_ERR_NOMEM || e->rule != STS_RULE_ALLOC)
        fail_msg("k=%ld: expected NOMEM/alloc, got %s/%s: %s", k, sts_result_name(r), sts_rule_id(e->rule), e->message);
    tu_err_has(cu_label, e, (const char *)NULL);
    assert_int_equal(a->failed, 1);
    assert_int_equal(e->offset, STS_OFFSET_UNKNOWN);
}

/* The parse-side entry points under one driver. */
typedef struct opener {
    int kind;                 /* 0 parse, 1 parse_header, 2 open, 3 open no_mmap, 4 open header_only, 5 open_source */
    const cu_img *im;
    const char *path;
} opener;
static sts_result msrc_read(void *user, uint64_t off, void *dst, size_t len) {
    const cu_img *im = (const cu_img *)user;
    memcpy(dst, im->p + off, len);
    return STS_OK;
}
static sts_result run_open(const opener *p, sts_options *o, sts_file **f, sts_error *e) {
    o->no_mmap = p->kind == 3;
    o->header_only = p->kind == 4;
    switch (p->kind) {
    case 0: return sts_parse(p->im->p, p->im->size, o, f, e);
    case 1: return sts_parse_header(p->im->p, 8 + p->im->hlen, p->im->size, o, f, e);
    case 5: {
        sts_source s;
        s.read = msrc_read;
        s.user = (void *)p->im;
        s.size = p->im->size;
        return sts_open_source(&s, o, f, e);
    }
    default: return sts_open(p->path, o, f, e);
    }
}
static void check_busy_file(const sts_file *f, int with_data) {
    const sts_tensor *t;
    const sts_kv *kv;
    assert_int_equal(sts_count(f), 41);
    assert_int_equal(sts_metadata_count(f), 24);
    t = sts_find(f, "t00\t", 4);
    assert_non_null(t);
    assert_int_equal(t->dtype, STS_DTYPE_I16);
    assert_int_equal(t->rank, 4);
    assert_int_equal(t->shape[3], 3);
    assert_ptr_equal(sts_at(f, 1), sts_find(f, "t039\t", 5));
    kv = sts_metadata_find(f, "k\xC3\xA9" "2", 4);
    assert_non_null(kv);
    assert_int_equal(kv->value_len, 6);
    assert_memory_equal(kv->value, "again2", 6);
    kv = sts_metadata_find(f, "k\xC3\xA9" "20", 5);
    assert_non_null(kv);
    assert_memory_equal(kv->value, "v\n20", 4);
    assert_true((sts_data(f, t) != NULL) == with_data);
}

/* Fail each request of a clean run in turn. A failure must come back as NOMEM with nothing
   left allocated, unless the library absorbs it (a fast path that falls back to the general
   one): then the result must still be right and complete. Absorbed failures are counted and
   printed, not rejected. */
static void sweep_open(const opener *p) {
    long k, allocs, absorbed = 0;
    tu_alloc a;
    int with_data = p->kind == 0 || p->kind == 2 || p->kind == 3;
    {   /* the clean run */
        sts_options o = tu_alloc_opts(&a, NULL);
        sts_file *f;
        assert_int_equal(run_open(p, &o, &f, NULL), STS_OK);
        check_busy_file(f, with_data);
        sts_close(f);
        check_clean(&a, 0);
        allocs = a.calls;
        assert_true(allocs >= 1);
    }
    for (k = 1; k <= allocs; k++) {
        sts_options o = tu_alloc_opts(&a, NULL);
        sts_file *f = (sts_file *)(uintptr_t)0xabc;
        sts_error e;
        sts_result r;
        a.fail_at = k;
        cu_err_poison(&e);
        r = run_open(p, &o, &f, &e);
        assert_int_equal(a.failed, 1);
        if (r == STS_OK) {
            absorbed++;
            check_busy_file(f, with_data);
            sts_close(f);
            check_clean(&a, k);
            continue;
        }
        check_nomem(r, &e, &a, k);
        assert_ptr_equal(f, (sts_file *)(uintptr_t)0xabc);
        check_clean(&a, k);
        /* the same failure without an error struct */
        o = tu_alloc_opts(&a, NULL);
        a.fail_at = k;
        assert_int_equal(run_open(p, &o, &f, NULL), STS_ERR_NOMEM);
        assert_ptr_equal(f, (sts_file *)(uintptr_t)0xabc);
        check_clean(&a, k);
    }
    print_message("kind %d: %ld allocation requests, each failed in turn (%ld absorbed by a fallback)\n", p->kind, allocs, absorbed);
}

static void test_parse_alloc(void **state) {
    cu_img im = busy_image();
    opener p;
    sts_file *f;
    (void)state;
    /* the image is valid and uses the growth paths */
    assert_int_equal(sts_parse(im.p, im.size, NULL, &f, NULL), STS_OK);
    check_busy_file(f, 1);
    sts_close(f);
    p.im = &im;
    p.path = NULL;
    p.kind = 0;
    sweep_open(&p);
    p.kind = 1;
    sweep_open(&p);
    p.kind = 5;
    sweep_open(&p);
    cu_img_free(&im);
}

static void test_open_alloc(void **state) {
    cu_img im = busy_image();
    char dir[256], path[512];
    opener p;
    (void)state;
    tf_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/busy.safetensors", dir);
    tf_write(path, im.p, im.size);
    p.im = &im;
    p.path = path;
    for (p.kind = 2; p.kind <= 4; p.kind++) sweep_open(&p);
    cu_img_free(&im);
    tf_rmtree(dir);
}

/* Parse failures release everything too (validation errors after all the tables are built). */
static void test_failure_paths_clean(void **state) {
    static const char *const bad[] = {
        "{\"__metadata__\":{\"a\\n\":\"b\\n\",\"a\\n\":\"c\"},\"x\\u0041\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[1,2]}}",
        "{\"x\\u0041\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]},\"x\\u0041\":{\"dtype\":\"U8\",\"shape\":[1,2],\"data_offsets\":[0,1]}}",
        "{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]},\"b\\n\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}, 7}",
        "{\"__metadata__\":{\"k\\t\":\"v\"},\"a\":{\"dtype\":\"F4\",\"shape\":[1],\"data_offsets\":[0,0]}}",
    };
    size_t i;
    (void)state;
    for (i = 0; i < sizeof bad / sizeof *bad; i++) {
        cu_img im = cu_img_json(bad[i], 2);
        tu_alloc a;
        sts_options o = tu_alloc_opts(&a, NULL);
        sts_file *f = (sts_file *)(uintptr_t)0xabc;
        sts_error e;
        sts_result r = sts_parse(im.p, im.size, &o, &f, &e);
        assert_true(r != STS_OK && r != STS_ERR_NOMEM);
        assert_ptr_equal(f, (sts_file *)(uintptr_t)0xabc);
        assert_true(a.calls > 0);
        check_clean(&a, 0);
        o.strict = 1;
        r = sts_parse(im.p, im.size, &o, &f, &e);
        assert_true(r != STS_OK);
        check_clean(&a, 0);
        cu_img_free(&im);
    }
}

/* ---- the writer ---- */
static sts_result rec_write(void *user, const void *bytes, size_t len) {
    tu_sb_put((tu_sb *)user, bytes, len);
    return STS_OK;
}
typedef struct wspecs {
    sts_tensor_spec sp[40];
    sts_kv meta[20];
    char names[40][24];
    char keys[20][16];
    uint64_t shape[4];
    uint8_t data[64];
} wspecs;
static void make_specs(wspecs *w) {
    int i;
    memset(w, 0, sizeof *w);
    w->shape[0] = 2; w->shape[1] = 1; w->shape[2] = 4; w->shape[3] = 1;  /* 8 elements: legal for F4 and F6 */
    for (i = 0; i < 40; i++) {
        int l = snprintf(w->names[i], sizeof w->names[i], "layer\"%d\n\xC3\xA9", 39 - i);
        w->sp[i].name = w->names[i];
        w->sp[i].name_len = (size_t)l;
        w->sp[i].dtype = (sts_dtype)(i % (int)STS_DTYPE_COUNT);
        w->sp[i].rank = 4;
        w->sp[i].shape = w->shape;
        w->sp[i].data = w->data;
        w->sp[i].data_size = sts_dtype_bits(w->sp[i].dtype);
    }
    for (i = 0; i < 20; i++) {
        int l = snprintf(w->keys[i], sizeof w->keys[i], "key\t%d", i);
        w->meta[i].key = w->keys[i];
        w->meta[i].key_len = (size_t)l;
        w->meta[i].value = "value\\";
        w->meta[i].value_len = 6;
    }
}

static void test_write_memory_alloc(void **state) {
    static wspecs w;
    long k, allocs = -1;
    tu_alloc a;
    void *ref;
    size_t ref_n;
    (void)state;
    make_specs(&w);
    assert_int_equal(sts_write_memory(w.sp, 40, w.meta, 20, NULL, &ref, &ref_n, NULL), STS_OK);
    for (k = 1; k < MAX_K; k++) {
        sts_options o = tu_alloc_opts(&a, NULL);
        void *out = (void *)(uintptr_t)0x5;
        size_t n = 55;
        sts_error e;
        sts_result r;
        a.fail_at = k;
        r = sts_write_memory(w.sp, 40, w.meta, 20, &o, &out, &n, &e);
        if (r == STS_OK) {
            assert_int_equal(n, ref_n);
            assert_memory_equal(out, ref, n);
            assert_int_equal(a.blocks, 1);        /* the output only */
            sts_free(&o, out, n);
            check_clean(&a, k);
            allocs = a.calls;
            break;
        }
        check_nomem(r, &e, &a, k);
        assert_ptr_equal(out, (void *)(uintptr_t)0x5);
        assert_int_equal(n, 55);
        check_clean(&a, k);
    }
    assert_true(allocs >= 1);
    assert_int_equal(allocs, k - 1);
    print_message("sts_write_memory: %ld allocation requests\n", allocs);
    sts_free(NULL, ref, ref_n);
    /* sts_write (a sink) and sts_write_size the same way; the sink never sees a byte on failure */
    for (k = 1; k < MAX_K; k++) {
        sts_options o = tu_alloc_opts(&a, NULL);
        tu_sb got = { 0 };
        sts_sink sink;
        sts_error e;
        sts_result r;
        uint64_t hs = 3, fs = 4;
        a.fail_at = k;
        r = sts_write_size(w.sp, 40, w.meta, 20, &o, &hs, &fs, &e);
        if (r != STS_OK) {
            check_nomem(r, &e, &a, k);
            assert_true(hs == 3 && fs == 4);
        } else assert_int_equal(fs, ref_n);
        check_clean(&a, k);
        o = tu_alloc_opts(&a, NULL);
        a.fail_at = k;
        sink.write = rec_write;
        sink.user = &got;
        r = sts_write(w.sp, 40, w.meta, 20, &sink, &o, &e);
        if (r == STS_OK) {
            assert_int_equal(got.n, ref_n);
            check_clean(&a, k);
            tu_sb_free(&got);
            break;
        }
        check_nomem(r, &e, &a, k);
        if (got.n != 0) fail_msg("k=%ld: the sink saw %zu bytes before an allocation failure", k, got.n);
        check_clean(&a, k);
        tu_sb_free(&got);
    }
    assert_int_equal(k - 1, allocs - 1);  /* sts_write_memory's requests minus its output buffer */
}

static void test_write_path_alloc(void **state) {
    static wspecs w;
    char dir[256], path[512];
    long k, allocs = -1;
    tu_alloc a;
    uint8_t *before, *after;
    size_t nb, na;
    (void)state;
    make_specs(&w);
    tf_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/out.safetensors", dir);
    tf_write(path, "old contents", 12);
    before = tf_read(path, &nb);
    for (k = 1; k < MAX_K; k++) {
        sts_options o = tu_alloc_opts(&a, NULL);
        sts_error e;
        sts_result r;
        a.fail_at = k;
        o.no_fsync = 1;
        r = sts_write_path(path, w.sp, 40, w.meta, 20, &o, &e);
        if (r == STS_OK) {
            sts_file *f;
            check_clean(&a, k);
            allocs = a.calls;
            assert_int_equal(sts_open(path, NULL, &f, &e), STS_OK);
            assert_int_equal(sts_count(f), 40);
            assert_int_equal(sts_metadata_count(f), 20);
            sts_close(f);
            break;
        }
        check_nomem(r, &e, &a, k);
        check_clean(&a, k);
        /* the old file is untouched and no temporary is left */
        assert_int_equal(cu_dir_count(dir), 1);
        after = tf_read(path, &na);
        assert_int_equal(na, nb);
        assert_memory_equal(after, before, nb);
        free(after);
    }
    assert_true(allocs >= 1);
    assert_int_equal(allocs, k - 1);
    assert_int_equal(cu_dir_count(dir), 1);
    free(before);
    tf_rmtree(dir);
}

/* An allocator with some hooks but not all is an argument error everywhere, before any call. */
static void test_partial_allocator(void **state) {
    static const char file[] = "\x08\0\0\0\0\0\0\0{}      ";
    int which;
    (void)state;
    for (which = 0; which < 6; which++) {
        tu_alloc a;
        sts_options o = tu_alloc_opts(&a, NULL);
        sts_file *f = (sts_file *)(uintptr_t)0xabc;
        sts_error e;
        void *out = (void *)(uintptr_t)0x5;
        size_t n = 5;
        sts_source src;
        tu_sb got = { 0 };
        sts_sink sink;
        char dir[256], path[512];
        /* drop one or two of the three hooks */
        if (which == 0 || which == 3 || which == 4) o.allocator.alloc = NULL;
        if (which == 1 || which == 3 || which == 5) o.allocator.realloc = NULL;
        if (which == 2 || which == 4 || which == 5) o.allocator.free = NULL;
        assert_int_equal(sts_parse(file, 16, &o, &f, &e), STS_ERR_INVALID_ARGUMENT);
        assert_int_equal(e.rule, STS_RULE_ARGUMENT);
        tu_err_has(cu_label, &e, (const char *)NULL);
        assert_int_equal(sts_parse_header(file, 16, 16, &o, &f, &e), STS_ERR_INVALID_ARGUMENT);
        src.read = msrc_read; src.user = NULL; src.size = 16;
        assert_int_equal(sts_open_source(&src, &o, &f, &e), STS_ERR_INVALID_ARGUMENT);
        assert_int_equal(sts_open("/nonexistent/x", &o, &f, &e), STS_ERR_INVALID_ARGUMENT);
        assert_ptr_equal(f, (sts_file *)(uintptr_t)0xabc);
        assert_int_equal(sts_write_memory(NULL, 0, NULL, 0, &o, &out, &n, &e), STS_ERR_INVALID_ARGUMENT);
        assert_int_equal(e.rule, STS_RULE_ARGUMENT);
        assert_ptr_equal(out, (void *)(uintptr_t)0x5);
        assert_int_equal(sts_write_size(NULL, 0, NULL, 0, &o, NULL, NULL, &e), STS_ERR_INVALID_ARGUMENT);
        sink.write = rec_write;
        sink.user = &got;
        assert_int_equal(sts_write(NULL, 0, NULL, 0, &sink, &o, &e), STS_ERR_INVALID_ARGUMENT);
        assert_int_equal(got.n, 0);
        tf_tmpdir(dir, sizeof dir);
        snprintf(path, sizeof path, "%s/x.safetensors", dir);
        assert_int_equal(sts_write_path(path, NULL, 0, NULL, 0, &o, &e), STS_ERR_INVALID_ARGUMENT);
        assert_int_equal(e.rule, STS_RULE_ARGUMENT);
        assert_int_equal(cu_dir_count(dir), 0);
        tf_rmtree(dir);
        assert_int_equal(a.calls, 0);
    }
}


/* Memory per tensor (issue 17: at most 64 bytes with the bench's checkpoint headers). A header of
   n entries with `shapes` distinct rank-2 shapes and names of about name_len bytes; returns the
   bytes the open file keeps, and the peak, per tensor. */
static void memory_case(size_t n, size_t shapes, int name_len, const char *meta_value, double *kept, double *peak) {
    tu_sb b = { 0 };
    tu_alloc a;
    sts_options o;
    sts_file *f = NULL;
    sts_error e;
    uint64_t off = 0;
    size_t i, hl;
    uint8_t *img;
    memset(&a, 0, sizeof a);
    tu_sb_str(&b, "{\"__metadata__\":{\"format\":\"");
    tu_sb_str(&b, meta_value);
    tu_sb_str(&b, "\"}");
    for (i = 0; i < n; i++) {
        uint64_t d0 = 1 + i % shapes, d1 = 3;
        tu_sb_printf(&b, ",\"%0*zu\":{\"dtype\":\"F32\",\"shape\":[%llu,%llu],\"data_offsets\":[%llu,%llu]}",
                     name_len, i, (unsigned long long)d0, (unsigned long long)d1, (unsigned long long)off,
                     (unsigned long long)(off + d0 * d1 * 4));
        off += d0 * d1 * 4;
    }
    tu_sb_str(&b, "}");
    hl = b.n;
    img = (uint8_t *)malloc(8 + hl);
    assert_non_null(img);
    for (i = 0; i < 8; i++) img[i] = (uint8_t)((uint64_t)hl >> (8 * i));
    memcpy(img + 8, b.p, hl);
    o = tu_alloc_opts(&a, NULL);
    assert_int_equal(sts_parse_header(img, 8 + hl, 8 + hl + off, &o, &f, &e), STS_OK);
    assert_int_equal(sts_count(f), n);
    assert_non_null(sts_find(f, sts_at(f, n / 2)->name, sts_at(f, n / 2)->name_len));
    *kept = (double)a.bytes / (double)n;
    *peak = (double)a.peak / (double)n;
    sts_close(f);
    assert_int_equal(a.bytes, 0);
    assert_int_equal(a.bad, 0);
    print_message("%zu tensors, %zu shapes, names of %d bytes, %zu header bytes: kept %.1f B, peak %.1f B "
                  "per tensor\n", n, shapes, name_len, hl, *kept, *peak);
    free(img);
    tu_sb_free(&b);
}
static void test_parse_memory(void **state) {
    char *big = (char *)malloc(1 << 20);
    double kept, peak;
    (void)state;
    assert_non_null(big);
    /* checkpoint-like: 40-byte names, a few shapes (the table is sized from the header once) */
    memory_case(50000, 8, 40, "pt", &kept, &peak);
    assert_true(kept <= 64.0);
    assert_true(peak <= 64.0);
    /* short names: the table and the index grow as the header projects */
    memory_case(50000, 8, 4, "pt", &kept, &peak);
    assert_true(kept <= 64.0);
    /* every shape distinct: 16 bytes of dims each on top */
    memory_case(20000, 20000, 40, "pt", &kept, &peak);
    assert_true(kept <= 84.0);
    /* a long __metadata__ value: the index sized from the header length is given back */
    memset(big, 'x', (1 << 20) - 1);
    big[(1 << 20) - 1] = 0;
    memory_case(10, 1, 8, big, &kept, &peak);
    assert_true(kept * 10 <= 4096.0);
    free(big);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_alloc),
        cmocka_unit_test(test_open_alloc),
        cmocka_unit_test(test_failure_paths_clean),
        cmocka_unit_test(test_write_memory_alloc),
        cmocka_unit_test(test_write_path_alloc),
        cmocka_unit_test(test_partial_allocator),
        cmocka_unit_test(test_parse_memory),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
