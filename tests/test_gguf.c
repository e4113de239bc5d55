/* test_gguf.c - the GGUF provider of the archive (issue 14).
   The corpus of tests/gguf/make_corpus.py (build/gguf/corpus, made by `make` before this runs; or
   $STS_GGUF_CORPUS): every file opened four ways (mapped, read with pread, from memory, through a
   callback source) in both modes, each verdict being the corpus's (result, rule, byte offset);
   every valid file's descriptors (names, types, shapes in both orders, offsets, sizes, byte order),
   every KV (typed, found by key, its value's canonical form hashed like the generator's), the
   digest of every tensor's stored bytes, and what a copy gives on this host (big-endian files
   swapped, plain and block types alike). Then: views of big-endian tensors refused with the reason,
   a 128k-string vocabulary whose items point into the mapped bytes (no copies) and, through a
   callback, reads that stop at the header, allocation failures at every step, the built-in
   registry choosing the provider. STS_TEST_LEVEL=quick opens a sample of the truncations. */
#define _POSIX_C_SOURCE 200809L
#ifndef STS_TEST_LINKED  /* the Makefile links tests/sts_impl.c's object instead */
#define STS_IMPLEMENTATION
#endif
#include "../safetensors_spark.h"
#include "fs_util.h"

#include <stdlib.h>

static const char *corpus_dir(void) {
    const char *d = getenv("STS_GGUF_CORPUS");
    return d && *d ? d : "build/gguf/corpus";
}

/* ---- a registry whose one provider is the built-in GGUF reader behind a probe that always says yes
   (the built-in probe sends files without the magic elsewhere; this reaches gguf.magic) ---- */
static const sts_provider *builtin_gguf(void) {
    size_t i;
    for (i = 0; i < sts_registry_count(NULL); i++)
        if (strcmp(sts_registry_at(NULL, i)->format, "gguf") == 0) return sts_registry_at(NULL, i);
    TU_FAIL("no built-in gguf provider");
    return NULL;
}
static void yes_probe(void *user, const sts_probe_input *in, sts_probe_result *o) {
    (void)user; (void)in;
    o->supported = 1;
    o->confidence = 100;
}
static sts_result gguf_open_fwd(void *user, sts_builder *b, sts_error *err) {
    (void)user;
    return builtin_gguf()->open(builtin_gguf()->user, b, err);
}
static sts_registry *gguf_only(const sts_options *o) {
    sts_registry *r;
    sts_provider p;
    sts_error e;
    memset(&p, 0, sizeof p);
    p.format = "gguf";
    p.name = "gguf (always probed)";
    p.probe = yes_probe;
    p.open = gguf_open_fwd;
    TU_CHECK(sts_registry_new(o, 0, &r, &e) == STS_OK);
    TU_CHECK(sts_registry_add(r, &p, &e) == STS_OK);
    return r;
}

/* ---- a callback source over bytes in memory that counts what it is asked for ---- */
typedef struct mem_src { const uint8_t *p; uint64_t size, max_end, bytes; int reads; } mem_src;
static sts_result mem_read(void *user, uint64_t off, void *dst, size_t len) {
    mem_src *m = (mem_src *)user;
    if (off > m->size || len > m->size - off) return STS_ERR_IO;
    memcpy(dst, m->p + off, len);
    if (off + len > m->max_end) m->max_end = off + len;
    m->bytes += len;
    m->reads++;
    return STS_OK;
}

enum { VIA_MAP, VIA_PREAD, VIA_BYTES, VIA_SOURCE, VIA_COUNT };
static const char *const via_name[VIA_COUNT] = { "mapped", "pread", "bytes", "source" };
static sts_result open_via(const sts_registry *r, int via, const char *path, const uint8_t *buf, size_t n, int strict,
                           sts_archive **out, sts_error *err, mem_src *ms) {
    sts_input in;
    sts_options o;
    sts_source src;
    memset(&in, 0, sizeof in);
    memset(&o, 0, sizeof o);
    o.strict = strict;
    switch (via) {
    case VIA_MAP: in.path = path; break;
    case VIA_PREAD: in.path = path; in.no_mmap = 1; break;
    case VIA_BYTES: in.bytes = n ? buf : (const void *)""; in.size = n; break;
    default:
        memset(ms, 0, sizeof *ms);
        ms->p = buf;
        ms->size = n;
        src.read = mem_read;
        src.user = ms;
        src.size = n;
        in.source = &src;
        break;
    }
    if (via == VIA_BYTES && n == 0) {  /* an empty input: a zero-size buffer is no input, use a source */
        memset(ms, 0, sizeof *ms);
        ms->p = buf;
        src.read = mem_read;
        src.user = ms;
        src.size = 0;
        memset(&in, 0, sizeof in);
        in.source = &src;
    }
    return sts_archive_open(r, &in, &o, out, err);
}

/* ---- the corpus's expectations ---- */
typedef struct tline { char *f[12]; int n; } tline;
static char *g_cases;
static tline *g_lines;
static size_t g_nlines;
static void load_cases(void) {
    char path[1024], *p;
    size_t n, cap = 0;
    if (g_lines) return;
    tf_join(path, sizeof path, corpus_dir(), "cases.tsv");
    g_cases = (char *)tf_read_opt(path, &n);
    if (!g_cases) TU_FAIL("no corpus at %s: run `make build/gguf/corpus/cases.tsv` (tests/gguf/make_corpus.py)", path);
    for (p = g_cases; *p;) {
        char *e = strchr(p, '\n'), *q;
        tline *l;
        if (e) *e = 0;
        if (g_nlines == cap) {
            cap = cap ? cap * 2 : 1024;
            g_lines = (tline *)realloc(g_lines, cap * sizeof *g_lines);
            TU_CHECK(g_lines != NULL);
        }
        l = &g_lines[g_nlines++];
        memset(l, 0, sizeof *l);
        for (q = p; q && l->n < 12;) {
            char *t = strchr(q, '\t');
            l->f[l->n++] = q;
            if (t) { *t = 0; q = t + 1; } else q = NULL;
        }
        if (!e) break;
        p = e + 1;
    }
}
static int hexval(int c) { return c <= '9' ? c - '0' : (c | 32) - 'a' + 10; }
static size_t unhex(const char *h, char *out) {
    size_t n = strlen(h) / 2, i;
    for (i = 0; i < n; i++) out[i] = (char)(hexval((unsigned char)h[2 * i]) << 4 | hexval((unsigned char)h[2 * i + 1]));
    return n;
}
/* "OK" or RESULT:rule:offset against what an open gave. */
static const char *verdict_mismatch(const char *want, sts_result got, const sts_error *e, char *why, size_t cap) {
    char exp[160];
    const char *w;
    if (strcmp(want, "OK") == 0) {
        if (got == STS_OK) return NULL;
        snprintf(why, cap, "expected OK, got %s: %s", sts_result_name(got), e->message);
        return why;
    }
    if (got == STS_OK) { snprintf(why, cap, "expected %s, got OK", want); return why; }
    if (e->offset == STS_OFFSET_UNKNOWN)
        snprintf(exp, sizeof exp, "%s:%s:-", sts_result_name(got), sts_rule_id(e->rule));
    else
        snprintf(exp, sizeof exp, "%s:%s:%llu", sts_result_name(got), sts_rule_id(e->rule),
                 (unsigned long long)e->offset);
    if (strcmp(exp, want) != 0) { snprintf(why, cap, "expected %s, got %s (%s)", want, exp, e->message); return why; }
    w = tu_err_why(why, cap, got, e, TU_ANY_CODE, e->rule, NULL);
    return w;
}

/* ---- canonical values, as make_corpus.py writes them ---- */
static void canon(tu_sb *b, const sts_meta *m) {
    uint64_t k;
    size_t i;
    switch (m->type) {
    case STS_META_UINT: tu_sb_printf(b, "u%llu", (unsigned long long)m->u); break;
    case STS_META_INT: tu_sb_printf(b, "i%lld", (long long)m->i); break;
    case STS_META_FLOAT: tu_sb_printf(b, "f%.17g", m->f); break;
    case STS_META_BOOL: tu_sb_printf(b, "b%d", m->u ? 1 : 0); break;
    case STS_META_STRING:
        tu_sb_str(b, "s");
        for (i = 0; i < m->str_len; i++) tu_sb_printf(b, "%02x", (unsigned char)m->str[i]);
        break;
    default:
        tu_sb_printf(b, "a%llu[", (unsigned long long)m->u);  /* the items' type, kept by an empty array too */
        for (k = 0; k < m->count; k++) {
            if (k) tu_sb_str(b, ",");
            canon(b, &m->items[k]);
        }
        tu_sb_str(b, "]");
        break;
    }
}
static void sha_hex(const void *p, size_t n, char hex[65]) {
    uint8_t d[32];
    sts_sha256_memory(p, n, d);
    sts_sha256_hex(d, hex);
}

/* The factory of the copy checks: plain malloc. */
static void *fac_alloc(void *user, const sts_tensor_desc *d, const sts_type *t, uint64_t n) {
    (void)user; (void)d; (void)t;
    return malloc(n ? (size_t)n : 1);
}
static void fac_release(void *user, const sts_tensor_desc *d, void *p, uint64_t n) {
    (void)user; (void)d; (void)n;
    free(p);
}

/* Every detail of a valid file against its T and K lines. */
static void check_valid(tu_sb *notes, const char *name, const sts_archive *a, const tline *c, int via) {
    size_t i, j, nt = strtoul(c->f[6], NULL, 10), nkv = strtoul(c->f[7], NULL, 10);
    uint64_t data_at = strtoull(c->f[8], NULL, 10);
    int be = atoi(c->f[5]), host_be = tu_big_endian();
    char lab[512];
    snprintf(lab, sizeof lab, "%s (%s)", name, via_name[via]);
    if (strcmp(sts_archive_format(a), "gguf") != 0 || sts_archive_version(a) != (uint32_t)atoi(c->f[4]) ||
        sts_archive_count(a) != nt || sts_archive_meta_count(a) != nkv) {
        tu_sb_printf(notes, "\n  %s: format %s version %u, %zu tensors %zu KVs; expected gguf %s, %zu, %zu", lab,
                     sts_archive_format(a), sts_archive_version(a), sts_archive_count(a), sts_archive_meta_count(a),
                     c->f[4], nt, nkv);
        return;
    }
    for (i = 0; i < g_nlines; i++) {
        const tline *l = &g_lines[i];
        char key[70000], hex[65], want_name[128];
        if (l->n < 2 || strcmp(l->f[1], name) != 0) continue;
        if (l->f[0][0] == 'K') {
            size_t k = strtoul(l->f[2], NULL, 10), kl = unhex(l->f[3], key);
            const sts_meta *m = sts_archive_meta_at(a, k), *f = sts_archive_meta_find(a, key, kl);
            tu_sb s;
            memset(&s, 0, sizeof s);
            if (!m || m->key_len != kl || memcmp(m->key, key, kl) != 0 || f != m) {
                tu_sb_printf(notes, "\n  %s: KV %zu is not %s or not found by its key", lab, k, l->f[3]);
                continue;
            }
            if (m->format_type != (uint32_t)atoi(l->f[4])) {
                tu_sb_printf(notes, "\n  %s: KV %zu has GGUF type %u, expected %s", lab, k, m->format_type, l->f[4]);
                continue;
            }
            canon(&s, m);
            sha_hex(s.p ? s.p : "", s.n, hex);
            if (strcmp(hex, l->f[5]) != 0)
                tu_sb_printf(notes, "\n  %s: KV %zu's value %.200s hashes to %s, expected %s", lab, k, s.p, hex,
                             l->f[5]);
            tu_sb_free(&s);
        } else if (l->f[0][0] == 'T') {
            size_t k = strtoul(l->f[2], NULL, 10), nl = unhex(l->f[3], want_name);
            uint32_t ty = (uint32_t)atoi(l->f[4]), nd = (uint32_t)atoi(l->f[5]);
            uint64_t ne[4] = { 1, 1, 1, 1 }, off = strtoull(l->f[7], NULL, 10), nb = strtoull(l->f[8], NULL, 10);
            const sts_tensor_desc *d, *fd;
            sts_error e;
            uint8_t dg[32];
            char *q = l->f[6];
            const char *want_host = host_be ? l->f[11] : l->f[10];
            sts_factory fac;
            sts_materialize_options mo;
            sts_materialized mat;
            sts_result r;
            for (j = 0; j < nd; j++) { ne[j] = strtoull(q, &q, 10); if (*q == ',') q++; }
            if (sts_archive_at(a, k, &d, &e) != STS_OK ||
                sts_archive_find(a, want_name, nl, &fd, &e) != STS_OK || fd != d) {
                tu_sb_printf(notes, "\n  %s: tensor %zu (%s) not found: %s", lab, k, l->f[3], e.message);
                continue;
            }
            if (d->name_len != nl || memcmp(d->name, want_name, nl) != 0 || d->rank != nd || d->offset != off ||
                d->nbytes != nb || d->big_endian != be || d->file != 0 || d->index != k) {
                tu_sb_printf(notes, "\n  %s: tensor %zu: name/rank/offset/bytes/order %.*s %u %llu %llu %d", lab, k,
                             (int)d->name_len, d->name, d->rank, (unsigned long long)d->offset,
                             (unsigned long long)d->nbytes, d->big_endian);
                continue;
            }
            for (j = 0; j < nd; j++)
                if (d->format_shape[j] != ne[j] || d->shape[nd - 1 - j] != ne[j])
                    tu_sb_printf(notes, "\n  %s: tensor %zu: dimension %zu is %llu/%llu, expected %llu", lab, k, j,
                                 (unsigned long long)d->format_shape[j], (unsigned long long)d->shape[nd - 1 - j],
                                 (unsigned long long)ne[j]);
            if (d->n_extras != 2 || d->extras[0].u != ty || d->extras[1].u + data_at != off ||
                strcmp(d->extras[0].key, "ggml_type") != 0 || strcmp(d->extras[1].key, "offset") != 0)
                tu_sb_printf(notes, "\n  %s: tensor %zu: extras wrong", lab, k);
            if (!d->type || !d->type->name || (d->type->plain ? d->type->block_elems != 1 : d->type->block_elems < 32))
                tu_sb_printf(notes, "\n  %s: tensor %zu: a bad type descriptor", lab, k);
            if (d->alignment == 0 || (d->offset % d->alignment) != 0)
                tu_sb_printf(notes, "\n  %s: tensor %zu: alignment %llu does not divide the offset", lab, k,
                             (unsigned long long)d->alignment);
            if (sts_archive_sha256(a, d, dg, &e) != STS_OK) {
                tu_sb_printf(notes, "\n  %s: tensor %zu: sha256: %s", lab, k, e.message);
                continue;
            }
            sts_sha256_hex(dg, hex);
            if (strcmp(hex, l->f[9]) != 0) tu_sb_printf(notes, "\n  %s: tensor %zu: stored bytes hash %s", lab, k, hex);
            /* a copy: the host's byte order, the stored bytes' digest checked in the same pass */
            memset(&fac, 0, sizeof fac);
            fac.allocate = fac_alloc;
            fac.release = fac_release;
            memset(&mo, 0, sizeof mo);
            mo.zero_copy = STS_ZERO_COPY_NEVER;
            mo.sha256 = dg;
            r = sts_archive_materialize(a, d, &fac, &mo, &mat, &e);
            if (strcmp(want_host, "-") == 0) {
                if (r != STS_ERR_UNSUPPORTED || e.rule != STS_RULE_UNSUPPORTED || !strstr(e.message, "byte order"))
                    tu_sb_printf(notes, "\n  %s: tensor %zu: a copy in the other byte order should be refused: %s",
                                 lab, k, r == STS_OK ? "it was made" : e.message);
                if (r == STS_OK) free(mat.data);
                continue;
            }
            if (r != STS_OK) {
                tu_sb_printf(notes, "\n  %s: tensor %zu: materialize: %s", lab, k, e.message);
                continue;
            }
            sha_hex(mat.data, (size_t)mat.nbytes, hex);
            if (strcmp(hex, want_host) != 0 || mat.wrapped || mat.nbytes != nb)
                tu_sb_printf(notes, "\n  %s: tensor %zu (%s): the copy hashes to %s, expected %s", lab, k,
                             d->type->name, hex, want_host);
            free(mat.data);
        }
    }
}

static void test_corpus(void **state) {
    sts_registry *reg = gguf_only(NULL);
    tu_sb notes;
    size_t i, cases = 0, opens = 0, cut_seen = 0;
    (void)state;
    memset(&notes, 0, sizeof notes);
    load_cases();
    for (i = 0; i < g_nlines; i++) {
        const tline *c = &g_lines[i];
        char path[1024];
        uint8_t *buf;
        size_t n;
        int strict, via;
        if (c->n < 10 || c->f[0][0] != 'C') continue;
        if (tu_quick() && strncmp(c->f[1], "cut_", 4) == 0 && cut_seen++ % 9) continue;
        tf_join(path, sizeof path, corpus_dir(), c->f[1]);
        buf = (uint8_t *)tf_read(path, &n);
        cases++;
        for (strict = 0; strict <= 1; strict++)
            for (via = 0; via < VIA_COUNT; via++) {
                sts_archive *a = NULL;
                sts_error e;
                mem_src ms;
                char why[600];
                const char *w;
                sts_result r = open_via(reg, via, path, buf, n, strict, &a, &e, &ms);
                opens++;
                if ((w = verdict_mismatch(c->f[2 + strict], r, &e, why, sizeof why)) != NULL)
                    tu_sb_printf(&notes, "\n  %s (%s, %s): %s", c->f[1], strict ? "strict" : "default",
                                 via_name[via], w);
                if (r == STS_OK) {
                    /* nothing past the header but what the probe read */
                    if (via == VIA_SOURCE && ms.max_end > strtoull(c->f[8], NULL, 10) && ms.max_end > 4096)
                        tu_sb_printf(&notes, "\n  %s: the source was read to byte %llu; the data starts at %s", c->f[1],
                                     (unsigned long long)ms.max_end, c->f[8]);
                    if (!strict || via == VIA_MAP || via == VIA_SOURCE) check_valid(&notes, c->f[1], a, c, via);
                    sts_archive_close(a);
                }
            }
        free(buf);
    }
    sts_registry_free(reg);
    printf("gguf corpus: %zu files, %zu opens\n", cases, opens);
    tu_notes_done(&notes, "gguf corpus");
}

/* ---- views: mapped little-endian tensors are views; big-endian ones are refused with the reason ---- */
static void test_views(void **state) {
    const char *names[2] = { "valid_basic_le_v3.gguf", "valid_basic_be_v3.gguf" };
    int k;
    (void)state;
    for (k = 0; k < 2; k++) {
        char path[1024];
        sts_archive *a;
        sts_error e;
        sts_input in;
        const sts_tensor_desc *d;
        const void *v;
        sts_result r;
        tf_join(path, sizeof path, corpus_dir(), names[k]);
        memset(&in, 0, sizeof in);
        in.path = path;
        TU_CHECK(sts_archive_open(NULL, &in, NULL, &a, &e) == STS_OK);
        TU_CHECK(strcmp(sts_archive_format(a), "gguf") == 0 && strcmp(sts_archive_provider(a), "gguf") == 0);
        TU_CHECK(sts_archive_find(a, "token_embd.weight", 17, &d, &e) == STS_OK);
        TU_CHECK(d->rank == 2 && d->shape[0] == 3 && d->shape[1] == 64 && d->format_shape[0] == 64);
        TU_CHECK(d->type->plain && d->type->dtype == STS_DTYPE_F32 && strcmp(d->type->name, "F32") == 0);
        TU_CHECK(d->alignment >= 32);
        r = sts_archive_view(a, d, &v, &e);
        if (k == tu_big_endian()) {
            TU_CHECK(r == STS_OK && v != NULL);
        } else {
            tu_err_check("a view of the other byte order", r, &e, STS_ERR_UNSUPPORTED, STS_RULE_VIEW, "endian",
                         "token_embd.weight", NULL);
        }
        TU_CHECK(sts_archive_find(a, "q8_0", 4, &d, &e) == STS_OK);
        TU_CHECK(!d->type->plain && d->type->block_elems == 32 && d->type->block_bytes == 34 &&
                 d->type->dtype == STS_DTYPE_COUNT && strcmp(d->type->name, "Q8_0") == 0);
        TU_CHECK(d->numel == 128 && d->nbytes == 136 && d->shape[0] == 2 && d->shape[1] == 64);
        sts_archive_close(a);
    }
}

/* ---- a tokenizer-sized header: 128k strings ---- */
typedef struct gbuf { uint8_t *p; size_t n, cap; int be; } gbuf;
static void gb_put(gbuf *b, const void *s, size_t n) {
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2 + 1024;
        b->p = (uint8_t *)realloc(b->p, b->cap);
        TU_CHECK(b->p != NULL);
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
}
static void gb_u(gbuf *b, uint64_t v, int bytes) {
    uint8_t t[8];
    int i;
    for (i = 0; i < bytes; i++) t[b->be ? bytes - 1 - i : i] = (uint8_t)(v >> (8 * i));
    gb_put(b, t, (size_t)bytes);
}
static void gb_s(gbuf *b, const char *s, size_t n) { gb_u(b, n, 8); gb_put(b, s, n); }
/* KVs: general.architecture, then `count` token strings "tok<i>"; one F32 tensor of `data` bytes. */
static void make_vocab(gbuf *b, int be, size_t count, size_t data) {
    size_t i;
    char t[32];
    memset(b, 0, sizeof *b);
    b->be = be;
    gb_put(b, "GGUF", 4);
    gb_u(b, 3, 4);
    gb_u(b, 1, 8);
    gb_u(b, 2, 8);
    gb_s(b, "general.architecture", 20);
    gb_u(b, 8, 4);
    gb_s(b, "llama", 5);
    gb_s(b, "tokenizer.ggml.tokens", 21);
    gb_u(b, 9, 4);
    gb_u(b, 8, 4);
    gb_u(b, count, 8);
    for (i = 0; i < count; i++) gb_s(b, t, (size_t)snprintf(t, sizeof t, "tok%zu", i));
    gb_s(b, "w", 1);
    gb_u(b, 1, 4);
    gb_u(b, data / 4, 8);
    gb_u(b, 0, 4);
    gb_u(b, 0, 8);
    while (b->n % 32) gb_put(b, "", 1);
    for (i = 0; i < data; i++) gb_put(b, "\x5a", 1);
}
static void test_vocab(void **state) {
    size_t count = tu_quick() ? 20000 : 128000, i;
    int be;
    (void)state;
    for (be = 0; be <= 1; be++) {
        gbuf b;
        sts_archive *a;
        sts_error e;
        mem_src ms;
        const sts_meta *m;
        sts_registry *reg;
        int via;
        make_vocab(&b, be, count, (size_t)8 << 20);
        TU_CHECK(sts_registry_new(NULL, 1, &reg, &e) == STS_OK);
        for (via = VIA_BYTES; via <= VIA_SOURCE; via++) {
            TU_CHECK(open_via(reg, via, NULL, b.p, b.n, 0, &a, &e, &ms) == STS_OK);
            m = sts_archive_meta_find(a, "tokenizer.ggml.tokens", 21);
            TU_CHECK(m && m->type == STS_META_ARRAY && m->count == count && m->format_type == 9);
            for (i = 0; i < count; i += count / 97) {
                char t[32];
                size_t tl = (size_t)snprintf(t, sizeof t, "tok%zu", i);
                TU_CHECK(m->items[i].type == STS_META_STRING && m->items[i].format_type == 8);
                TU_CHECK(m->items[i].str_len == tl && memcmp(m->items[i].str, t, tl) == 0);
                if (via == VIA_BYTES)  /* not copied: the items point into the caller's bytes */
                    TU_CHECK((const uint8_t *)m->items[i].str > b.p && (const uint8_t *)m->items[i].str < b.p + b.n);
            }
            if (via == VIA_SOURCE) {  /* the header only (8 MiB of data follow it), each byte about once */
                uint64_t header = b.n - ((size_t)8 << 20);
                if (ms.max_end > header || ms.bytes > header + header / 8 + 4096)
                    TU_FAIL("read to byte %llu (%llu bytes in %d reads) of a %llu-byte header",
                            (unsigned long long)ms.max_end, (unsigned long long)ms.bytes, ms.reads,
                            (unsigned long long)header);
                TU_CHECK(sts_archive_get_stats(a).reads == (uint64_t)ms.reads);
            }
            sts_archive_close(a);
        }
        sts_registry_free(reg);
        free(b.p);
    }
}

/* ---- a small file through a callback: one request (the probed prefix serves the header) ---- */
static void test_small_source(void **state) {
    gbuf b;
    sts_archive *a;
    sts_error e;
    mem_src ms;
    const sts_tensor_desc *d;
    float out[4];
    (void)state;
    make_vocab(&b, 0, 10, 64);
    TU_CHECK(open_via(NULL, VIA_SOURCE, NULL, b.p, b.n, 0, &a, &e, &ms) == STS_OK);
    TU_CHECK(ms.reads == 1 && ms.max_end == (b.n < 4096 ? b.n : 4096));
    TU_CHECK(sts_archive_find(a, "w", 1, &d, &e) == STS_OK && d->nbytes == 64);
    TU_CHECK(sts_archive_read(a, d, 0, out, sizeof out, &e) == STS_OK && ms.reads == 2);  /* data: one more */
    TU_CHECK(tu_le32(out) == 0x5a5a5a5au);
    sts_archive_close(a);
    free(b.p);
}

/* ---- a header read through a callback ends where the header does: the bound on what is left is kept
   as a file offset, so reads in the middle of a tensor info (past its name) do not stretch it. Scalars
   (no dimensions: 24 bytes of fixed fields) with long names make the header's least size much smaller
   than its real one, so the reader refills many times near its end. ---- */
static void test_source_stops_at_data(void **state) {
    size_t nt, nl, i;
    (void)state;
    for (nt = 200; nt <= 260; nt += 7)
        for (nl = 4; nl <= 63; nl += 3) {
            gbuf b;
            sts_archive *a;
            sts_error e;
            mem_src ms;
            const sts_tensor_desc *d;
            char name[64];
            uint64_t data_at;
            memset(&b, 0, sizeof b);
            gb_put(&b, "GGUF", 4);
            gb_u(&b, 3, 4);
            gb_u(&b, nt, 8);
            gb_u(&b, 1, 8);
            gb_s(&b, "general.architecture", 20);
            gb_u(&b, 8, 4);
            gb_s(&b, "llama", 5);
            for (i = 0; i < nt; i++) {
                memset(name, 'n', nl);
                snprintf(name, sizeof name, "%zu", i);
                name[strlen(name)] = 'n';
                gb_s(&b, name, nl);
                gb_u(&b, 0, 4);            /* n_dims 0: a scalar */
                gb_u(&b, 0, 4);            /* F32 */
                gb_u(&b, i * 32, 8);       /* 4 bytes padded to 32 */
            }
            while (b.n % 32) gb_put(&b, "", 1);
            data_at = b.n;
            for (i = 0; i < nt * 32; i++) gb_put(&b, "\x11", 1);
            TU_CHECK(open_via(NULL, VIA_SOURCE, NULL, b.p, b.n, 0, &a, &e, &ms) == STS_OK);
            TU_CHECK(sts_archive_at(a, 0, &d, &e) == STS_OK && d->offset == data_at);
            if (ms.max_end > data_at && ms.max_end > 4096)
                TU_FAIL("%zu tensors, names of %zu bytes: read to byte %llu; the data section starts at %llu", nt,
                        nl, (unsigned long long)ms.max_end, (unsigned long long)data_at);
            sts_archive_close(a);
            free(b.p);
        }
}

/* ---- every allocation refused in turn: NOMEM (or a clean success), nothing leaked ---- */
static void test_alloc_failures(void **state) {
    char path[1024];
    uint8_t *buf;
    size_t n, k;
    int via;
    (void)state;
    tf_join(path, sizeof path, corpus_dir(), "valid_basic_be_v3.gguf");
    buf = (uint8_t *)tf_read(path, &n);
    for (via = VIA_BYTES; via <= VIA_SOURCE; via++)
        for (k = 1;; k++) {
            tu_alloc al;
            sts_options o;
            sts_input in;
            sts_source src;
            mem_src ms;
            sts_archive *a;
            sts_error e;
            sts_result r;
            memset(&al, 0, sizeof al);
            al.fail_at = (long)k;
            o = tu_alloc_opts(&al, NULL);
            memset(&in, 0, sizeof in);
            memset(&ms, 0, sizeof ms);
            ms.p = buf;
            ms.size = n;
            if (via == VIA_BYTES) { in.bytes = buf; in.size = n; }
            else { src.read = mem_read; src.user = &ms; src.size = n; in.source = &src; }
            r = sts_archive_open(NULL, &in, &o, &a, &e);
            if (r == STS_OK) sts_archive_close(a);
            else tu_err_check("allocation failure", r, &e, STS_ERR_NOMEM, STS_RULE_ALLOC, NULL);
            tu_alloc_check("gguf open", &al);
            if (r == STS_OK) break;
        }
    free(buf);
}

/* ---- block types decoded through materialize: F32 (and F16 after it), big-endian blocks swapped first,
   the stored bytes' digest checked in the same pass, pieces of whole blocks on every path ---- */
static const char *const dq_types[] = { "Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q2_K", "Q3_K", "Q4_K", "Q5_K",
                                        "Q6_K" };
static int g_released;
static void fac_release_count(void *user, const sts_tensor_desc *d, void *p, uint64_t n) {
    (void)user; (void)d; (void)n;
    g_released++;
    free(p);
}
/* Materialises d converted to target; the expected bytes (host order) in want. */
static void check_decoded(const sts_archive *a, const sts_tensor_desc *d, sts_dtype target, const void *want,
                          size_t want_n, const char *label) {
    sts_factory fac;
    sts_materialize_options mo;
    sts_materialized mat;
    sts_error e;
    uint8_t dg[32];
    sts_result r;
    memset(&fac, 0, sizeof fac);
    fac.allocate = fac_alloc;
    fac.release = fac_release_count;
    memset(&mo, 0, sizeof mo);
    mo.convert = 1;
    mo.target = target;
    mo.rounding = STS_ROUND_NEAREST_EVEN;
    TU_CHECK(sts_archive_sha256(a, d, dg, &e) == STS_OK);
    mo.sha256 = dg;
    r = sts_archive_materialize(a, d, &fac, &mo, &mat, &e);
    if (r != STS_OK) TU_FAIL("%s: %s", label, e.message);
    if (mat.nbytes != want_n || mat.type->dtype != target || mat.wrapped || memcmp(mat.data, want, want_n) != 0)
        TU_FAIL("%s: %s %s decoded to %s differs (%llu bytes)", label, d->name, d->type->name,
                sts_dtype_name(target), (unsigned long long)mat.nbytes);
    free(mat.data);
    dg[0] ^= 1;  /* a wrong digest: CHECKSUM after the pass, the memory given back */
    g_released = 0;
    r = sts_archive_materialize(a, d, &fac, &mo, &mat, &e);
    tu_err_check(label, r, &e, STS_ERR_CHECKSUM, STS_RULE_SHA256, "SHA-256", NULL);
    TU_CHECK(g_released == 1);
}
static void check_dequant_file(const uint8_t *le, size_t le_n, const uint8_t *be, size_t be_n, const char *tname,
                               const char *label) {
    sts_archive *al, *ab;
    sts_error e;
    mem_src ms;
    const sts_tensor_desc *dl, *db;
    uint8_t *stored;
    float *ref;
    uint8_t *ref_le, *half_le, *half;
    int via;
    TU_CHECK(open_via(NULL, VIA_BYTES, NULL, le, le_n, 0, &al, &e, &ms) == STS_OK);
    TU_CHECK(sts_archive_find(al, tname, strlen(tname), &dl, &e) == STS_OK);
    stored = (uint8_t *)malloc((size_t)dl->nbytes);
    ref = (float *)malloc((size_t)dl->numel * 4);
    ref_le = (uint8_t *)malloc((size_t)dl->numel * 4);
    half_le = (uint8_t *)malloc((size_t)dl->numel * 2);
    half = (uint8_t *)malloc((size_t)dl->numel * 2);
    TU_CHECK(stored && ref && ref_le && half_le && half);
    TU_CHECK(sts_archive_read(al, dl, 0, stored, (size_t)dl->nbytes, &e) == STS_OK);
    TU_CHECK(sts_dequantize(ref, stored, dl->type->name, (size_t)dl->numel) == STS_OK);
    tu_le_copy(ref_le, ref, (size_t)dl->numel, 4);
    TU_CHECK(sts_convert(half_le, STS_DTYPE_F16, ref_le, STS_DTYPE_F32, (size_t)dl->numel, STS_ROUND_NEAREST_EVEN)
             == STS_OK);
    tu_le_copy(half, half_le, (size_t)dl->numel, 2);
    for (via = VIA_BYTES; via <= VIA_SOURCE; via++) {
        char lab[256];
        int k;
        for (k = 0; k < 2; k++) {
            snprintf(lab, sizeof lab, "%s %s %s", label, k ? "big-endian" : "little-endian", via_name[via]);
            TU_CHECK(open_via(NULL, via, NULL, k ? be : le, k ? be_n : le_n, 0, &ab, &e, &ms) == STS_OK);
            TU_CHECK(sts_archive_find(ab, tname, strlen(tname), &db, &e) == STS_OK);
            TU_CHECK(db->big_endian == k && db->numel == dl->numel);
            check_decoded(ab, db, STS_DTYPE_F32, ref, (size_t)dl->numel * 4, lab);
            check_decoded(ab, db, STS_DTYPE_F16, half, (size_t)dl->numel * 2, lab);
            sts_archive_close(ab);
        }
    }
    free(stored); free(ref); free(ref_le); free(half_le); free(half);
    sts_archive_close(al);
}
static void test_dequant(void **state) {
    char le_path[1024], be_path[1024], tname[64];
    uint8_t *le, *be;
    size_t le_n, be_n, i, j;
    (void)state;
    tf_join(le_path, sizeof le_path, corpus_dir(), "valid_all_types_le_v3.gguf");
    tf_join(be_path, sizeof be_path, corpus_dir(), "valid_all_types_be_v3.gguf");
    le = (uint8_t *)tf_read(le_path, &le_n);
    be = (uint8_t *)tf_read(be_path, &be_n);
    for (i = 0; i < sizeof dq_types / sizeof dq_types[0]; i++) {
        sts_archive *a;
        sts_error e;
        mem_src ms;
        TU_CHECK(open_via(NULL, VIA_BYTES, NULL, le, le_n, 0, &a, &e, &ms) == STS_OK);
        for (j = 0; j < sts_archive_count(a); j++) {
            size_t nl;
            const char *nm = sts_archive_name(a, j, &nl);
            const char *u = (const char *)memchr(nm, '_', nl);  /* "t<id>_<type>" */
            size_t tl = strlen(dq_types[i]);
            if (u && (size_t)(nm + nl - u - 1) == tl && memcmp(u + 1, dq_types[i], tl) == 0)
                snprintf(tname, sizeof tname, "%.*s", (int)nl, nm);
        }
        sts_archive_close(a);
        TU_CHECK(sts_dequantize_supported(dq_types[i]));
        check_dequant_file(le, le_n, be, be_n, tname, dq_types[i]);
    }
    free(le);
    free(be);
    {  /* a Q8_0 tensor of several 1 MiB pieces, both byte orders */
        gbuf b[2];
        tu_rng rng;
        size_t nblocks = tu_quick() ? 40000 : 100000, k;
        int ord;
        rng.s = 14;
        for (ord = 0; ord < 2; ord++) {
            memset(&b[ord], 0, sizeof b[ord]);
            b[ord].be = ord;
            gb_put(&b[ord], "GGUF", 4);
            gb_u(&b[ord], 3, 4);
            gb_u(&b[ord], 1, 8);
            gb_u(&b[ord], 0, 8);
            gb_s(&b[ord], "big.q8_0", 8);
            gb_u(&b[ord], 2, 4);
            gb_u(&b[ord], 64, 8);
            gb_u(&b[ord], nblocks / 2, 8);
            gb_u(&b[ord], 8, 4);
            gb_u(&b[ord], 0, 8);
            while (b[ord].n % 32) gb_put(&b[ord], "", 1);
        }
        for (k = 0; k < nblocks; k++) {
            uint8_t blk[34];
            uint16_t h = (uint16_t)(0x2000 + tu_below(&rng, 0x1800) + (tu_below(&rng, 2) << 15));  /* finite scale */
            for (j = 2; j < 34; j++) blk[j] = (uint8_t)tu_next(&rng);
            blk[0] = (uint8_t)h; blk[1] = (uint8_t)(h >> 8);
            gb_put(&b[0], blk, 34);
            blk[0] = (uint8_t)(h >> 8); blk[1] = (uint8_t)h;
            gb_put(&b[1], blk, 34);
        }
        check_dequant_file(b[0].p, b[0].n, b[1].p, b[1].n, "big.q8_0", "Q8_0 in pieces");
        free(b[0].p);
        free(b[1].p);
    }
}

/* ---- the built-in registry: GGUF files go to the gguf provider, with its reason ---- */
static void test_probe(void **state) {
    char path[1024];
    sts_input in;
    sts_probe_result res[16];
    size_t win, i;
    sts_error e;
    (void)state;
    tf_join(path, sizeof path, corpus_dir(), "valid_basic_be_v2.gguf");
    memset(&in, 0, sizeof in);
    in.path = path;
    TU_CHECK(sts_registry_count(NULL) <= 16);
    TU_CHECK(sts_probe(NULL, &in, NULL, res, 16, &win, &e) == STS_OK);
    TU_CHECK(strcmp(sts_registry_at(NULL, win)->format, "gguf") == 0);
    TU_CHECK(res[win].confidence == 95 && res[win].version == 2 && strstr(res[win].reason, "big-endian"));
    for (i = 0; i < sts_registry_count(NULL); i++)
        if (i != win) TU_CHECK(res[i].confidence < 95);
    tf_join(path, sizeof path, corpus_dir(), "bad_version_4.gguf");
    TU_CHECK(sts_probe(NULL, &in, NULL, res, 16, &win, &e) == STS_OK);
    TU_CHECK(strcmp(sts_registry_at(NULL, win)->format, "gguf") == 0 && res[win].confidence == 60);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_corpus),
        cmocka_unit_test(test_views),
        cmocka_unit_test(test_vocab),
        cmocka_unit_test(test_small_source),
        cmocka_unit_test(test_source_stops_at_data),
        cmocka_unit_test(test_alloc_failures),
        cmocka_unit_test(test_dequant),
        cmocka_unit_test(test_probe),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    free(g_lines);
    free(g_cases);
    return rc;
}
