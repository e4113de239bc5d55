/* Fuzz target: the read side. Every input is parsed by each entry point that can see it (sts_parse
   default and strict, sts_parse_header from an exact-size copy of the 8 + N prefix, header_only,
   sts_open_source through a memory source, tightened limits, a failing allocator) and the
   verdicts must agree:
     - strict OK implies default OK, with the same tensors and metadata; a file default accepts
       and strict rejects breaks a strict.* rule; otherwise both break the same rule;
     - the header-only entry points give the full parse's verdict, rule, offset and message, and
       read nothing past byte 8 + N;
     - tighter limits only add json.depth or header.too_large rejections;
     - failing the k-th allocation gives NOMEM and leaks nothing; sizes passed to free match;
     - every error is complete (code, rule, "<rule id>: ..." message) and out stays untouched;
     - a header that parses is UTF-8, and one that is not is refused under header.utf8 at its first
       bad byte (an oracle of the target's own: the library checks inside strings as it parses).
   On success every accessor is exercised: sts_at in offset order with contiguous offsets, sts_find
   for each name returns that very tensor, metadata_find for each key, and every name, value and
   data range is read byte by byte (ASan checks the pointers stay in the caller's buffer). */
#define STS_IMPLEMENTATION
#include "../safetensors_spark.h"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int fz_mul(uint64_t a, uint64_t b, uint64_t *r) {
    if (a && b > UINT64_MAX / a) return 0;
    *r = a * b;
    return 1;
}

static int is_strict_rule(sts_rule r) {
    return strncmp(sts_rule_id(r), "strict.", 7) == 0;
}

static void check_file(const sts_file *f, const uint8_t *bytes, size_t size, int with_data, int strict) {
    size_t n = sts_count(f), m = sts_metadata_count(f), i;
    uint64_t hn, cursor = 0;
    const sts_tensor *none;
    FZ_CHECK(f != NULL && size >= 8);
    hn = sts_header_size(f);
    FZ_CHECK(hn == fz_le64(bytes) && hn <= size - 8);
    FZ_CHECK(sts_file_size(f) == size);
    FZ_CHECK(sts_at(f, n) == NULL);
    for (i = 0; i < n; i++) {
        const sts_tensor *t = sts_at(f, i), *u;
        uint64_t numel = 1, bits;
        uint32_t d;
        FZ_CHECK(t != NULL);
        FZ_CHECK((unsigned)t->dtype < (unsigned)STS_DTYPE_COUNT);
        FZ_CHECK(t->rank == 0 || t->shape != NULL);
        FZ_CHECK(t->begin == cursor && t->end >= t->begin);      /* offset order, contiguous */
        for (d = 0; d < t->rank; d++) FZ_CHECK(fz_mul(numel, t->shape[d], &numel));
        FZ_CHECK(fz_mul(numel, sts_dtype_bits(t->dtype), &bits));
        FZ_CHECK(bits % 8 == 0 && t->end - t->begin == bits / 8);
        FZ_CHECK(sts_tensor_numel(t) == numel && sts_tensor_nbytes(t) == t->end - t->begin);
        FZ_CHECK(sts_tensor_file_offset(f, t) == 8 + hn + t->begin);
        FZ_CHECK(sts_find(f, t->name, t->name_len) == t);         /* names are unique */
        FZ_CHECK(!(t->name_len == 12 && memcmp(t->name, "__metadata__", 12) == 0));
        fz_touch(t->name, t->name_len);
        if (strict) FZ_CHECK(t->name_len == 0 || !memchr(t->name, 0, t->name_len));
        if (t->name_len) {  /* a near miss finds nothing, or a tensor with exactly that name */
            u = sts_find(f, t->name, t->name_len - 1);
            FZ_CHECK(!u || (u->name_len == t->name_len - 1 && memcmp(u->name, t->name, u->name_len) == 0));
        }
        if (with_data) {
            const void *p = sts_data(f, t);
            FZ_CHECK(p == bytes + 8 + hn + t->begin);
            fz_touch(p, t->end - t->begin);
        } else {
            FZ_CHECK(sts_data(f, t) == NULL);
        }
        cursor = t->end;
    }
    FZ_CHECK(8 + hn + cursor == size);                            /* no hole, no trailing bytes */
    none = sts_find(f, NULL, 0);
    FZ_CHECK(!none || none->name_len == 0);
    FZ_CHECK(m == 0 || sts_has_metadata(f));
    FZ_CHECK(sts_metadata_at(f, m) == NULL);
    for (i = 0; i < m; i++) {
        const sts_kv *kv = sts_metadata_at(f, i);
        FZ_CHECK(kv != NULL);
        FZ_CHECK(sts_metadata_find(f, kv->key, kv->key_len) == kv); /* keys are unique */
        fz_touch(kv->key, kv->key_len);
        fz_touch(kv->value, kv->value_len);
    }
}

/* Same tensors (in the same order) and the same metadata. */
static void same_files(const sts_file *a, const sts_file *b) {
    size_t i, n = sts_count(a);
    FZ_CHECK(sts_count(b) == n);
    for (i = 0; i < n; i++) {
        const sts_tensor *x = sts_at(a, i), *y = sts_at(b, i);
        FZ_CHECK(x->name_len == y->name_len && memcmp(x->name, y->name, x->name_len) == 0);
        FZ_CHECK(x->dtype == y->dtype && x->rank == y->rank && x->begin == y->begin && x->end == y->end);
        FZ_CHECK(x->rank == 0 || memcmp(x->shape, y->shape, x->rank * sizeof *x->shape) == 0);
    }
    FZ_CHECK(sts_has_metadata(a) == sts_has_metadata(b));
    FZ_CHECK(sts_metadata_count(a) == sts_metadata_count(b));
    for (i = 0; i < sts_metadata_count(a); i++) {
        const sts_kv *x = sts_metadata_at(a, i), *y = sts_metadata_at(b, i);
        FZ_CHECK(x->key_len == y->key_len && memcmp(x->key, y->key, x->key_len) == 0);
        FZ_CHECK(x->value_len == y->value_len && memcmp(x->value, y->value, x->value_len) == 0);
    }
}

/* Two results of the same input must name the same broken rule at the same place. */
static void same_error(const sts_error *a, const sts_error *b) {
    FZ_CHECK(a->code == b->code && a->rule == b->rule && a->offset == b->offset);
    FZ_CHECK(strcmp(a->message, b->message) == 0);
}

/* A memory source that may fail its k-th read, and asserts that only the header is read. */
typedef struct fz_src {
    const uint8_t *p;
    size_t size;
    uint64_t limit;
    int reads, fail_read;
} fz_src;
static sts_result fz_src_read(void *user, uint64_t off, void *dst, size_t len) {
    fz_src *s = (fz_src *)user;
    FZ_CHECK(off <= s->size && len <= s->size - off);
    FZ_CHECK(off + len <= s->limit);
    if (++s->reads == s->fail_read) return STS_ERR_IO;
    memcpy(dst, s->p + off, len);
    return STS_OK;
}

static sts_file *const untouched = (sts_file *)(uintptr_t)0x5157u; /* a sentinel, never used */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    sts_options strict, o;
    sts_error e0, e1, e;
    sts_file *f0 = untouched, *f1 = untouched, *f = untouched;
    sts_result r0, r1, r;
    uint64_t h = fz_hash(data, size), hn = size >= 8 ? fz_le64(data) : 0;
    size_t plen = size >= 8 ? (hn <= size - 8 ? (size_t)(8 + hn) : size) : size;
    uint8_t *prefix;
    tu_alloc a;
    fz_src src;
    sts_source source;
    size_t calls;

    /* 1. the full parse, default and strict */
    r0 = sts_parse(data, size, NULL, &f0, &e0);
    if (r0 == STS_OK) {
        FZ_CHECK(f0 != untouched && e0.code == STS_OK && e0.rule == STS_RULE_NONE && e0.message[0] == 0);
        check_file(f0, data, size, 1, 0);
    } else {
        FZ_CHECK(f0 == untouched);
        fz_check_error(r0, &e0, size);
    }
    memset(&strict, 0, sizeof strict);
    strict.strict = 1;
    strict.hash_seed = h | 1;
    r1 = sts_parse(data, size, &strict, &f1, &e1);
    if (r1 == STS_OK) {
        FZ_CHECK(r0 == STS_OK);
        check_file(f1, data, size, 1, 1);
        same_files(f0, f1);
    } else {
        FZ_CHECK(f1 == untouched);
        fz_check_error(r1, &e1, size);
        if (r0 == STS_OK) FZ_CHECK(is_strict_rule(e1.rule));
        else FZ_CHECK(e1.rule == e0.rule || is_strict_rule(e1.rule));
    }

    /* 1b. UTF-8, against the oracle above: a header that parses is UTF-8; one that is not gives
       header.utf8 at its first bad byte, whatever else is wrong after the prefix checks */
    if (size >= 8 && hn <= size - 8) {
        size_t bad = fz_utf8_bad(data + 8, (size_t)hn);
        if (r0 == STS_OK) FZ_CHECK(bad == hn);
        if (r0 == STS_ERR_INVALID_HEADER && e0.rule == STS_RULE_HEADER_UTF8) FZ_CHECK(bad < hn && e0.offset == 8 + bad);
        if (bad < hn && e0.rule != STS_RULE_HEADER_TOO_LARGE && e0.rule != STS_RULE_HEADER_LENGTH &&
            e0.rule != STS_RULE_FILE_TOO_SMALL)
            FZ_CHECK(e0.rule == STS_RULE_HEADER_UTF8 && e0.offset == 8 + bad);
    }

    /* 2. header-only from a copy of exactly the 8 + N prefix: same verdict, nothing read past it */
    prefix = (uint8_t *)malloc(plen ? plen : 1);
    FZ_CHECK(prefix != NULL);
    if (plen) memcpy(prefix, data, plen);
    r = sts_parse_header(prefix, plen, size, NULL, &f, &e);
    FZ_CHECK(r == r0);
    if (r == STS_OK) { check_file(f, data, size, 0, 0); same_files(f0, f); sts_close(f); f = untouched; }
    else { FZ_CHECK(f == untouched); same_error(&e, &e0); }
    r = sts_parse_header(prefix, plen, size, &strict, &f, &e);
    FZ_CHECK(r == r1);
    if (r == STS_OK) { check_file(f, data, size, 0, 1); same_files(f1, f); sts_close(f); f = untouched; }
    else { FZ_CHECK(f == untouched); same_error(&e, &e1); }
    free(prefix);

    /* 3. the header_only option on the full buffer */
    memset(&o, 0, sizeof o);
    o.header_only = 1;
    r = sts_parse(data, size, &o, &f, &e);
    FZ_CHECK(r == r0);
    if (r == STS_OK) { check_file(f, data, size, 0, 0); same_files(f0, f); sts_close(f); f = untouched; }
    else same_error(&e, &e0);

    /* 4. a pread-style source: reads stay inside 8 + N; a failing read is an I/O error */
    memset(&src, 0, sizeof src);
    src.p = data;
    src.size = size;
    src.limit = size >= 8 && hn <= size - 8 ? 8 + hn : 8;
    src.fail_read = (int)(h >> 8 & 3); /* 0: never, else the 1st, 2nd or 3rd read */
    source.read = fz_src_read;
    source.user = &src;
    source.size = size;
    r = sts_open_source(&source, NULL, &f, &e);
    if (src.fail_read && src.reads >= src.fail_read) {
        FZ_CHECK(r == STS_ERR_IO && e.rule == STS_RULE_IO && f == untouched);
        FZ_CHECK(e.message[0] != 0);
    } else {
        FZ_CHECK(r == r0);
        if (r == STS_OK) { check_file(f, data, size, 0, 0); same_files(f0, f); sts_close(f); f = untouched; }
        else same_error(&e, &e0);
    }

    /* 5. tighter limits only add depth and size rejections */
    memset(&o, 0, sizeof o);
    o.max_depth = (uint32_t)(1 + (h >> 12) % 6);
    o.max_header_size = (h >> 20 & 1) ? 1 + hn / 2 : 0;
    r = sts_parse(data, size, &o, &f, &e);
    if (r == STS_OK) { FZ_CHECK(r0 == STS_OK); check_file(f, data, size, 1, 0); same_files(f0, f); sts_close(f); f = untouched; }
    else {
        fz_check_error(r, &e, size);
        FZ_CHECK(e.rule == STS_RULE_JSON_DEPTH || e.rule == STS_RULE_HEADER_TOO_LARGE || (r == r0 && e.rule == e0.rule));
    }

    /* 6. the allocator: sizes round-trip, nothing leaks, and failing any one call gives NOMEM */
    memset(&o, 0, sizeof o);
    o.strict = (int)(h >> 24 & 1);
    o.hash_seed = 7;
    fz_use_alloc(&o, &a, 0);
    r = sts_parse(data, size, &o, &f, &e);
    FZ_CHECK(r == (o.strict ? r1 : r0));
    if (r == STS_OK) { sts_close(f); f = untouched; }
    FZ_CHECK(a.bytes == 0);
    calls = a.calls;
    if (calls) {
        fz_use_alloc(&o, &a, 1 + (size_t)(h >> 32) % calls);
        r = sts_parse(data, size, &o, &f, &e);
        FZ_CHECK(a.failed);
        FZ_CHECK(r == STS_ERR_NOMEM && e.rule == STS_RULE_ALLOC && f == untouched);
        fz_check_error(r, &e, size);
        FZ_CHECK(a.bytes == 0);
    }

    if (r0 == STS_OK) sts_close(f0);
    if (r1 == STS_OK) sts_close(f1);
    return 0;
}
