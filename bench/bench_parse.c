/* bench_parse.c - header throughput of sts_parse_header (JSON scan + schema + validation + name
   index) beside a strict jsmn tokenization and a memcpy of the same bytes, in the same run.

   The headers are generated in memory the way the reference writer lays a file out: compact JSON,
   "__metadata__" first, tensors sorted by descending dtype rank (F32 before BF16) then by name
   bytes, contiguous data offsets from 0, spaces to a multiple of 8. The tensor list is that of a
   mixture-of-experts transformer (model.layers.{i}.mlp.experts.{j}.{gate,up,down}_proj.weight,
   self_attn.{q,k,v,o}_proj.weight, layer norms, router). The data section would be terabytes, so
   the bench calls sts_parse_header(prefix, 8 + N, file_size = 8 + N + data, ...), which does the
   whole parse and validation without a data section.

   Before timing, the generated header is checked byte for byte against the library's own writer
   (sts_write through a sink that keeps the header and refuses the data), and the parsed result is
   checked tensor by tensor through sts_find and sts_at, so an error path cannot be what is timed.

   usage: bench_parse [--case 10k|100k|all] [--iters N] [--warmup N] [--only sts|jsmn|all]
          --case   run one case only (default all)
          --iters  timed repetitions per case (default: 300 for 10k, 40 for 100k)
          --warmup untimed repetitions first (default 5)
          --only   sts: time only sts_parse_header + sts_close (for profilers); jsmn: only jsmn
   Each repetition times, in turn: sts_parse_header, sts_close, jsmn_init + jsmn_parse, memcpy.
   Figures: MB/s of header bytes (1 MB = 1e6 bytes) at the median time, best time and 90th
   percentile time. The ratio column is sts (parse, without close) over jsmn, both medians; the
   "paired" ratio is the median over repetitions of the same-repetition ratio, less sensitive to
   load from other processes. */
#define _POSIX_C_SOURCE 200809L
#define STS_IMPLEMENTATION
#include "../safetensors_spark.h"

#define JSMN_STATIC
#define JSMN_STRICT
#define JSMN_PARENT_LINKS
#include <jsmn.h>

#include <stdarg.h>

#include "bench_util.h"

/* bench_parse_simdjson.cpp: the simdjson On-Demand baseline (a stub when simdjson is missing). */
int bench_simdjson_available(void);
const char *bench_simdjson_about(void);
size_t bench_simdjson_padding(void);
long bench_simdjson_walk(const char *buf, size_t len, size_t capacity, uint64_t *acc);

/* ---- the model: which tensors a checkpoint of this shape holds ---------------------------------- */
typedef struct model_cfg {
    const char *label;
    unsigned layers, experts;
    uint64_t hidden, moe_inter, q_dim, kv_dim, head_dim, vocab;
    int default_iters;
} model_cfg;

static const model_cfg cases[] = {
    /* 50 x (9 + 3 x 64) + 3 = 10,053 tensors, ~1.1 MB of header */
    { "10k", 50, 64, 4096, 1536, 4096, 1024, 128, 151936, 300 },
    /* 128 x (9 + 3 x 256) + 3 = 99,459 tensors, ~11 MB of header */
    { "100k", 128, 256, 4096, 1536, 4096, 1024, 128, 151936, 40 },
};
/* A tiny model, small enough to write with real data through sts_write_memory. */
static const model_cfg tiny = { "tiny", 3, 5, 8, 4, 8, 4, 2, 11, 1 };

typedef struct gen_tensor {
    size_t name_off, name_len;  /* into gen_model.names */
    sts_dtype dtype;
    uint32_t rank;
    uint64_t shape[2];
    uint64_t begin, end;
} gen_tensor;

typedef struct gen_model {
    char *names;
    size_t names_len, names_cap;
    gen_tensor *t;
    size_t n, cap;
    uint8_t *file;        /* 8-byte length + header (the prefix given to sts_parse_header) */
    size_t file_cap;      /* bytes allocated at file: simdjson reads its padding past the header */
    size_t header_len;    /* N */
    uint64_t data_len;    /* sum of tensor sizes */
    uint64_t file_size;   /* 8 + N + data_len */
} gen_model;

static void *xrealloc(void *p, size_t n) {
    void *q = realloc(p, n ? n : 1);
    if (!q) { fprintf(stderr, "bench_parse: out of memory\n"); exit(2); }
    return q;
}

static void add_tensor(gen_model *m, sts_dtype dt, uint64_t d0, uint64_t d1, uint32_t rank, const char *fmt, ...) {
    char name[256];
    int len;
    va_list ap;
    gen_tensor *t;
    va_start(ap, fmt);
    len = vsnprintf(name, sizeof name, fmt, ap);
    va_end(ap);
    if (len < 0 || (size_t)len >= sizeof name) { fprintf(stderr, "bench_parse: name too long\n"); exit(2); }
    if (m->names_len + (size_t)len > m->names_cap) {
        m->names_cap = (m->names_cap + (size_t)len) * 2;
        m->names = (char *)xrealloc(m->names, m->names_cap);
    }
    if (m->n == m->cap) {
        m->cap = m->cap ? m->cap * 2 : 1024;
        m->t = (gen_tensor *)xrealloc(m->t, m->cap * sizeof *m->t);
    }
    t = &m->t[m->n++];
    memcpy(m->names + m->names_len, name, (size_t)len);
    t->name_off = m->names_len;
    t->name_len = (size_t)len;
    m->names_len += (size_t)len;
    t->dtype = dt;
    t->rank = rank;
    t->shape[0] = d0;
    t->shape[1] = d1;
}

static const char *gen_sort_names;  /* qsort has no context argument */
static int gen_layout_cmp(const void *pa, const void *pb) {
    const gen_tensor *a = (const gen_tensor *)pa, *b = (const gen_tensor *)pb;
    size_t k = a->name_len < b->name_len ? a->name_len : b->name_len;
    int c;
    if (a->dtype != b->dtype) return a->dtype > b->dtype ? -1 : 1;  /* descending rank */
    c = memcmp(gen_sort_names + a->name_off, gen_sort_names + b->name_off, k);
    if (c) return c;
    return a->name_len < b->name_len ? -1 : a->name_len > b->name_len;
}

static char *put_str(char *o, const char *s, size_t n) { memcpy(o, s, n); return o + n; }
#define PUT_LIT(o, lit) put_str((o), (lit), sizeof(lit) - 1)
static char *put_u64(char *o, uint64_t v) {
    char tmp[20];
    int k = 0;
    do { tmp[k++] = (char)('0' + v % 10); v /= 10; } while (v);
    while (k) *o++ = tmp[--k];
    return o;
}

/* Builds the tensor list of cfg, lays it out as the reference writer does, and renders the header. */
static void gen_model_build(gen_model *m, const model_cfg *c) {
    unsigned i, e, k;
    size_t cap, json_len, pad;
    uint64_t off = 0;
    char *o, *h;
    static const char *const attn[4] = { "q", "k", "v", "o" };
    static const char *const mlp[3] = { "gate", "up", "down" };
    memset(m, 0, sizeof *m);
    add_tensor(m, STS_DTYPE_BF16, c->vocab, c->hidden, 2, "model.embed_tokens.weight");
    add_tensor(m, STS_DTYPE_F32, c->hidden, 0, 1, "model.norm.weight");
    add_tensor(m, STS_DTYPE_BF16, c->vocab, c->hidden, 2, "lm_head.weight");
    for (i = 0; i < c->layers; i++) {
        add_tensor(m, STS_DTYPE_F32, c->hidden, 0, 1, "model.layers.%u.input_layernorm.weight", i);
        add_tensor(m, STS_DTYPE_F32, c->hidden, 0, 1, "model.layers.%u.post_attention_layernorm.weight", i);
        for (k = 0; k < 4; k++) {
            uint64_t rows = k == 0 ? c->q_dim : k == 3 ? c->hidden : c->kv_dim, cols = k == 3 ? c->q_dim : c->hidden;
            add_tensor(m, STS_DTYPE_BF16, rows, cols, 2, "model.layers.%u.self_attn.%s_proj.weight", i, attn[k]);
        }
        add_tensor(m, STS_DTYPE_F32, c->head_dim, 0, 1, "model.layers.%u.self_attn.q_norm.weight", i);
        add_tensor(m, STS_DTYPE_F32, c->head_dim, 0, 1, "model.layers.%u.self_attn.k_norm.weight", i);
        add_tensor(m, STS_DTYPE_F32, c->experts, c->hidden, 2, "model.layers.%u.mlp.gate.weight", i);
        for (e = 0; e < c->experts; e++)
            for (k = 0; k < 3; k++) {
                uint64_t rows = k == 2 ? c->hidden : c->moe_inter, cols = k == 2 ? c->moe_inter : c->hidden;
                add_tensor(m, STS_DTYPE_BF16, rows, cols, 2, "model.layers.%u.mlp.experts.%u.%s_proj.weight", i, e, mlp[k]);
            }
    }
    gen_sort_names = m->names;
    qsort(m->t, m->n, sizeof *m->t, gen_layout_cmp);
    for (i = 0; i < m->n; i++) {
        gen_tensor *t = &m->t[i];
        uint64_t numel = t->rank == 2 ? t->shape[0] * t->shape[1] : t->shape[0];
        t->begin = off;
        off += numel * (sts_dtype_bits(t->dtype) / 8);
        t->end = off;
    }
    m->data_len = off;

    cap = 8 + 64 + m->n * 160 + m->names_len;  /* 160 > the fixed bytes of an entry with two 20-digit dims and offsets */
    m->file = (uint8_t *)xrealloc(NULL, cap);
    m->file_cap = cap;
    h = (char *)m->file + 8;
    o = h;
    o = PUT_LIT(o, "{\"__metadata__\":{\"format\":\"pt\"}");
    for (i = 0; i < m->n; i++) {
        gen_tensor *t = &m->t[i];
        uint32_t d;
        o = PUT_LIT(o, ",\"");
        o = put_str(o, m->names + t->name_off, t->name_len);
        o = PUT_LIT(o, "\":{\"dtype\":\"");
        o = put_str(o, sts_dtype_name(t->dtype), strlen(sts_dtype_name(t->dtype)));
        o = PUT_LIT(o, "\",\"shape\":[");
        for (d = 0; d < t->rank; d++) { if (d) *o++ = ','; o = put_u64(o, t->shape[d]); }
        o = PUT_LIT(o, "],\"data_offsets\":[");
        o = put_u64(o, t->begin);
        *o++ = ',';
        o = put_u64(o, t->end);
        o = PUT_LIT(o, "]}");
    }
    *o++ = '}';
    json_len = (size_t)(o - h);
    pad = (8 - json_len % 8) % 8;
    memset(o, ' ', pad);
    m->header_len = json_len + pad;
    if (8 + m->header_len > cap) { fprintf(stderr, "bench_parse: header buffer overrun\n"); exit(2); }
    for (k = 0; k < 8; k++) m->file[k] = (uint8_t)((uint64_t)m->header_len >> (8 * k));
    m->file_size = 8 + m->header_len + m->data_len;
}

static void gen_model_free(gen_model *m) {
    free(m->names);
    free(m->t);
    free(m->file);
    memset(m, 0, sizeof *m);
}

/* ---- checks: the generator against the library's writer, the parse against the generator -------- */
typedef struct capture {
    uint8_t *buf;
    size_t len, cap;  /* keeps the first cap bytes, refuses any byte past them */
} capture;
static sts_result capture_write(void *user, const void *bytes, size_t len) {
    capture *c = (capture *)user;
    if (len > c->cap - c->len) return STS_ERR_IO;
    memcpy(c->buf + c->len, bytes, len);
    c->len += len;
    return STS_OK;
}
static sts_result produce_zeros(void *user, const sts_tensor_spec *spec, sts_stream *out) {
    static const uint8_t zeros[4096];
    uint64_t left = spec->data_size;
    (void)user;
    while (left) {
        size_t k = left > sizeof zeros ? sizeof zeros : (size_t)left;
        sts_result r = sts_stream_write(out, zeros, k);
        if (r != STS_OK) return r;
        left -= k;
    }
    return STS_OK;
}

static int fail(const char *what, const char *label) {
    fprintf(stderr, "bench_parse: CHECK FAILED (%s): %s\n", label, what);
    return 0;
}

/* The library's writer must produce exactly the bytes the generator rendered. With full = 1 the
   whole file is written (tiny model); otherwise the header is captured and the data refused. */
static int check_against_writer(const gen_model *m, const char *label, int full) {
    sts_tensor_spec *specs = (sts_tensor_spec *)xrealloc(NULL, m->n * sizeof *specs);
    sts_kv meta = { "format", 6, "pt", 2 };
    capture c;
    sts_error err;
    sts_result r;
    size_t i;
    int ok = 1;
    uint64_t hs = 0, fs = 0;
    memset(specs, 0, m->n * sizeof *specs);
    /* reverse order, so the writer's sort has work to do */
    for (i = 0; i < m->n; i++) {
        const gen_tensor *t = &m->t[m->n - 1 - i];
        specs[i].name = m->names + t->name_off;
        specs[i].name_len = t->name_len;
        specs[i].dtype = t->dtype;
        specs[i].rank = t->rank;
        specs[i].shape = t->shape;
        specs[i].data = NULL;
        specs[i].data_size = t->end - t->begin;
        specs[i].produce = produce_zeros;
    }
    if ((r = sts_write_size(specs, m->n, &meta, 1, NULL, &hs, &fs, &err)) != STS_OK) {
        fprintf(stderr, "  sts_write_size: %s: %s\n", sts_result_name(r), err.message);
        ok = fail("sts_write_size failed", label);
    } else if (hs != m->header_len || fs != m->file_size) {
        fprintf(stderr, "  writer N=%llu file=%llu, generator N=%llu file=%llu\n", (unsigned long long)hs,
                (unsigned long long)fs, (unsigned long long)m->header_len, (unsigned long long)m->file_size);
        ok = fail("header or file size differs from the library writer's", label);
    }
    c.cap = full ? (size_t)m->file_size : 8 + m->header_len;
    c.buf = (uint8_t *)xrealloc(NULL, c.cap);
    c.len = 0;
    if (ok) {
        sts_sink sink;
        sink.write = capture_write;
        sink.user = &c;
        r = sts_write(specs, m->n, &meta, 1, &sink, NULL, &err);
        if (full ? r != STS_OK : c.len != 8 + m->header_len) {
            fprintf(stderr, "  sts_write: %s: %s (captured %zu bytes)\n", sts_result_name(r), err.message, c.len);
            ok = fail("the library writer did not emit the expected header", label);
        } else if (memcmp(c.buf, m->file, 8 + m->header_len) != 0) {
            size_t k = 0;
            while (c.buf[k] == m->file[k]) k++;
            fprintf(stderr, "  first difference at byte %zu: writer \"%.40s\" generator \"%.40s\"\n", k,
                    (const char *)c.buf + k, (const char *)m->file + k);
            ok = fail("generated header differs from the library writer's bytes", label);
        } else if (full) {  /* the complete tiny file must also parse */
            sts_file *f = NULL;
            if (sts_parse(c.buf, c.len, NULL, &f, &err) != STS_OK || sts_count(f) != m->n)
                ok = fail("the tiny file written by sts_write does not parse back", label);
            sts_close(f);
        }
    }
    free(c.buf);
    free(specs);
    return ok;
}

/* Every generated tensor must be found by name with its dtype, shape and offsets, and sts_at must
   return them in layout (data-offset) order. */
static int check_parse(const gen_model *m, const sts_file *f, const char *label) {
    size_t i;
    const sts_kv *kv;
    if (sts_count(f) != m->n) return fail("sts_count differs from the generated tensor count", label);
    if (sts_header_size(f) != m->header_len || sts_file_size(f) != m->file_size) return fail("header or file size", label);
    kv = sts_metadata_find(f, "format", 6);
    if (!kv || kv->value_len != 2 || memcmp(kv->value, "pt", 2) != 0) return fail("__metadata__ format=pt not found", label);
    for (i = 0; i < m->n; i++) {
        const gen_tensor *g = &m->t[i];
        const char *name = m->names + g->name_off;
        const sts_tensor *t = sts_find(f, name, g->name_len);
        uint32_t d;
        if (!t) return fail("sts_find missed a tensor", label);
        if (t != sts_at(f, i)) return fail("sts_at order differs from the layout order", label);
        if (t->name_len != g->name_len || memcmp(t->name, name, g->name_len) != 0) return fail("name", label);
        if (t->dtype != g->dtype || t->rank != g->rank || t->begin != g->begin || t->end != g->end) return fail("entry", label);
        for (d = 0; d < t->rank; d++) if (t->shape[d] != g->shape[d]) return fail("shape", label);
        if (sts_data(f, t) != NULL) return fail("header-only parse gave a data pointer", label);
    }
    if (sts_find(f, "model.layers.0.mlp.experts.0.up_proj.bias", 41) != NULL) return fail("sts_find hit an absent name", label);
    if (sts_find(f, "model.norm.weigh", 16) != NULL) return fail("sts_find hit a prefix of a name", label);
    return 1;
}

/* Tokens the strict jsmn parser produces for this header (counted once, untimed). */
static int jsmn_count(const gen_model *m) {
    jsmn_parser p;
    jsmn_init(&p);
    return jsmn_parse(&p, (const char *)m->file + 8, m->header_len, NULL, 0);
}

/* ---- memory: every byte the parse asks of its allocator ------------------------------------------ */
typedef struct count_mem {
    size_t live, peak, calls;
} count_mem;
static void count_add(count_mem *c, size_t old, size_t now) {
    c->live = c->live - old + now;
    if (c->live > c->peak) c->peak = c->live;
    c->calls++;
}
static void *count_alloc(void *user, size_t size) {
    void *p = malloc(size ? size : 1);
    if (p) count_add((count_mem *)user, 0, size);
    return p;
}
static void *count_realloc(void *user, void *ptr, size_t old_size, size_t new_size) {
    void *p = realloc(ptr, new_size ? new_size : 1);
    if (p) count_add((count_mem *)user, old_size, new_size);
    return p;
}
static void count_free(void *user, void *ptr, size_t size) {
    if (ptr) count_add((count_mem *)user, size, 0);
    free(ptr);
}

/* ---- timing ------------------------------------------------------------------------------------ */
enum { ONLY_ALL, ONLY_STS, ONLY_JSMN };

typedef struct case_result {
    const char *label;
    double mb, tensors;
    bench_stats sts, sts_close, sts_total, jsmn, copy, paired;  /* seconds; paired: ratio */
    bench_stats simd, paired_simd;                              /* simdjson; sts/simdjson ratio */
    double find_ns;
    size_t mem_peak, mem_kept, mem_calls;                       /* bytes asked of the allocator */
    int reps, ntok, have_simd;
} case_result;

static double mbps(double bytes, double seconds) { return seconds > 0 ? bytes / seconds / 1e6 : 0; }

static int run_case(const model_cfg *c, int iters, int warmup, int only, case_result *res) {
    gen_model m;
    sts_file *f = NULL;
    sts_error err;
    sts_result r;
    jsmntok_t *toks = NULL;
    int ntok = 0, i;
    double *t_sts, *t_close, *t_total, *t_jsmn, *t_copy, *ratio, *t_simd, *ratio_simd;
    char *dst;
    const char *hdr;
    size_t n;
    double g0 = tu_now();

    gen_model_build(&m, c);
    n = m.header_len;
    hdr = (const char *)m.file + 8;
    fprintf(stderr, "[%s] generated %zu tensors, N = %zu bytes (%.2f MB), data %.3f TB, in %.2f s\n", c->label, m.n, n,
            (double)n / 1e6, (double)m.data_len / 1e12, tu_now() - g0);

    /* correctness before speed */
    if (!check_against_writer(&m, c->label, 0)) return 0;
    {   /* this parse counts what it allocates: the peak, and what the open file keeps */
        sts_options o;
        count_mem cm;
        memset(&o, 0, sizeof o);
        memset(&cm, 0, sizeof cm);
        o.allocator.alloc = count_alloc;
        o.allocator.realloc = count_realloc;
        o.allocator.free = count_free;
        o.allocator.user = &cm;
        r = sts_parse_header(m.file, 8 + n, m.file_size, &o, &f, &err);
        if (r != STS_OK) {
            fprintf(stderr, "bench_parse: sts_parse_header failed: %s: %s\n", sts_result_name(r), err.message);
            return 0;
        }
        if (!check_parse(&m, f, c->label)) return 0;
        res->mem_peak = cm.peak;
        res->mem_kept = cm.live;
        res->mem_calls = cm.calls;
        sts_close(f);
        if (cm.live != 0) return fail("sts_close did not give back every byte", c->label);
    }
    r = sts_parse_header(m.file, 8 + n, m.file_size, NULL, &f, &err);
    if (r != STS_OK || !check_parse(&m, f, c->label)) return 0;
    res->have_simd = only == ONLY_ALL && bench_simdjson_available();
    if (res->have_simd) {  /* simdjson must see every tensor, with its padding inside the buffer */
        uint64_t acc = 0;
        long got;
        if (m.file_cap - 8 < n + bench_simdjson_padding()) return fail("no room for simdjson's padding", c->label);
        got = bench_simdjson_walk(hdr, n, m.file_cap - 8, &acc);
        if (got != (long)m.n) return fail("simdjson did not walk every tensor", c->label);
    }
    {   /* lookup cost: every name once, through the index */
        double t0 = tu_now();
        size_t k, rounds = c->default_iters > 100 ? 20 : 3;
        uint64_t acc = 0;
        for (k = 0; k < rounds; k++)
            for (i = 0; i < (int)m.n; i++) acc += sts_find(f, m.names + m.t[i].name_off, m.t[i].name_len)->end;
        bench_sink += acc;
        res->find_ns = (tu_now() - t0) / (double)(rounds * m.n) * 1e9;
    }
    sts_close(f);
    f = NULL;
    if (only != ONLY_STS) {
        ntok = jsmn_count(&m);
        if (ntok <= 0) { fprintf(stderr, "bench_parse: jsmn rejects the header (%d)\n", ntok); return 0; }
        toks = (jsmntok_t *)xrealloc(NULL, (size_t)ntok * sizeof *toks);
        memset(toks, 0, (size_t)ntok * sizeof *toks);
    }
    dst = (char *)xrealloc(NULL, n);
    memset(dst, 0, n);
    t_sts = (double *)xrealloc(NULL, (size_t)iters * sizeof(double));
    t_close = (double *)xrealloc(NULL, (size_t)iters * sizeof(double));
    t_total = (double *)xrealloc(NULL, (size_t)iters * sizeof(double));
    t_jsmn = (double *)xrealloc(NULL, (size_t)iters * sizeof(double));
    t_copy = (double *)xrealloc(NULL, (size_t)iters * sizeof(double));
    ratio = (double *)xrealloc(NULL, (size_t)iters * sizeof(double));
    t_simd = (double *)xrealloc(NULL, (size_t)iters * sizeof(double));
    ratio_simd = (double *)xrealloc(NULL, (size_t)iters * sizeof(double));

    for (i = -warmup; i < iters; i++) {
        double a = 0, b = 0, cl = 0, d = 0, sj = 0;
        if (only != ONLY_JSMN) {
            double t0 = tu_now(), t1, t2;
            r = sts_parse_header(m.file, 8 + n, m.file_size, NULL, &f, NULL);
            t1 = tu_now();
            if (r != STS_OK || sts_count(f) != m.n) { fprintf(stderr, "bench_parse: parse failed in the loop\n"); return 0; }
            sts_close(f);
            t2 = tu_now();
            a = t1 - t0;
            cl = t2 - t1;
        }
        if (only != ONLY_STS) {
            jsmn_parser p;
            int got;
            double t0 = tu_now();
            jsmn_init(&p);
            got = jsmn_parse(&p, hdr, n, toks, (unsigned)ntok);
            b = tu_now() - t0;
            if (got != ntok) { fprintf(stderr, "bench_parse: jsmn returned %d, expected %d\n", got, ntok); return 0; }
            bench_sink += (uint64_t)toks[ntok - 1].end;
        }
        if (only == ONLY_ALL) {
            double t0 = tu_now();
            memcpy(dst, hdr, n);
            d = tu_now() - t0;
            bench_sink += (uint8_t)dst[n / 2];
        }
        if (res->have_simd) {
            uint64_t acc = 0;
            double t0 = tu_now();
            long got = bench_simdjson_walk(hdr, n, m.file_cap - 8, &acc);
            sj = tu_now() - t0;
            if (got != (long)m.n) { fprintf(stderr, "bench_parse: simdjson failed in the loop\n"); return 0; }
            bench_sink += acc;
        }
        if (i >= 0) {
            t_simd[i] = sj;
            ratio_simd[i] = a > 0 && sj > 0 ? sj / a : 0;  /* sts speed / simdjson speed */
            t_sts[i] = a;
            t_close[i] = cl;
            t_total[i] = a + cl;
            t_jsmn[i] = b;
            t_copy[i] = d;
            ratio[i] = a > 0 && b > 0 ? b / a : 0;  /* sts speed / jsmn speed */
        }
    }
    res->label = c->label;
    res->mb = (double)n / 1e6;
    res->tensors = (double)m.n;
    res->reps = iters;
    res->ntok = ntok;
    res->sts = bench_summarize(t_sts, (size_t)iters);
    res->sts_close = bench_summarize(t_close, (size_t)iters);
    res->sts_total = bench_summarize(t_total, (size_t)iters);
    res->jsmn = bench_summarize(t_jsmn, (size_t)iters);
    res->copy = bench_summarize(t_copy, (size_t)iters);
    res->paired = bench_summarize(ratio, (size_t)iters);
    res->simd = bench_summarize(t_simd, (size_t)iters);
    res->paired_simd = bench_summarize(ratio_simd, (size_t)iters);
    free(t_simd); free(ratio_simd);
    free(t_sts); free(t_close); free(t_total); free(t_jsmn); free(t_copy); free(ratio);
    free(dst);
    free(toks);
    gen_model_free(&m);
    return 1;
}

static void print_line(const char *what, double bytes, const bench_stats *s) {
    printf("  %-34s median %9.1f MB/s  best %9.1f  p90 %9.1f   (median %.3f ms)\n", what, mbps(bytes, s->median),
           mbps(bytes, s->min), mbps(bytes, s->p90), s->median * 1e3);
}

static void usage(void) {
    fprintf(stderr, "usage: bench_parse [--case 10k|100k|all] [--iters N] [--warmup N] [--only sts|jsmn|all]\n");
    exit(2);
}

int main(int argc, char **argv) {
    const char *which = "all";
    int iters = 0, warmup = 5, only = ONLY_ALL, a, ran = 0;
    size_t k;
    case_result res[sizeof cases / sizeof cases[0]];

    for (a = 1; a < argc; a++) {
        if (strcmp(argv[a], "--case") == 0 && a + 1 < argc) which = argv[++a];
        else if (strcmp(argv[a], "--iters") == 0 && a + 1 < argc) iters = atoi(argv[++a]);
        else if (strcmp(argv[a], "--warmup") == 0 && a + 1 < argc) warmup = atoi(argv[++a]);
        else if (strcmp(argv[a], "--only") == 0 && a + 1 < argc) {
            const char *o = argv[++a];
            only = strcmp(o, "sts") == 0 ? ONLY_STS : strcmp(o, "jsmn") == 0 ? ONLY_JSMN : strcmp(o, "all") == 0 ? ONLY_ALL : -1;
            if (only < 0) usage();
        } else usage();
    }
    if (iters < 0 || warmup < 0) usage();
    bench_print_build(stdout);
    printf("jsmn: /usr/include/jsmn.h with JSMN_STRICT, JSMN_PARENT_LINKS, JSMN_STATIC; tokens preallocated\n");
    printf("simdjson: %s\n", bench_simdjson_about());

    {   /* the generator itself, against a complete file written by the library */
        gen_model m;
        gen_model_build(&m, &tiny);
        if (!check_against_writer(&m, "tiny", 1)) return 1;
        gen_model_free(&m);
    }

    for (k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const model_cfg *c = &cases[k];
        case_result *r = &res[ran];
        int n_it = iters ? iters : c->default_iters;
        if (strcmp(which, "all") != 0 && strcmp(which, c->label) != 0) continue;
        memset(r, 0, sizeof *r);
        if (!run_case(c, n_it, warmup, only, r)) return 1;
        printf("\n%s: %.0f tensors, header %.3f MB, %d timed repetitions after %d warm-up, checks passed\n", c->label,
               r->tensors, r->mb, r->reps, warmup);
        if (only != ONLY_JSMN) {
            print_line("sts_parse_header", r->mb * 1e6, &r->sts);
            print_line("sts_parse_header + sts_close", r->mb * 1e6, &r->sts_total);
            printf("  %-34s median %9.3f ms\n", "sts_close alone", r->sts_close.median * 1e3);
            printf("  %-34s %9.1f ns per lookup (all names, untimed loop outside the table)\n", "sts_find", r->find_ns);
            printf("  %-34s peak %.1f B per tensor (%.2f MB), kept by the open file %.1f B per tensor (%.2f MB), "
                   "%zu allocator calls\n", "memory asked of the allocator", (double)r->mem_peak / r->tensors,
                   (double)r->mem_peak / 1e6, (double)r->mem_kept / r->tensors, (double)r->mem_kept / 1e6,
                   r->mem_calls);
        }
        if (only != ONLY_STS) {
            print_line("jsmn strict tokenize", r->mb * 1e6, &r->jsmn);
            printf("  %-34s %d tokens\n", "jsmn token array", r->ntok);
        }
        if (only == ONLY_ALL && r->have_simd) {
            print_line("simdjson On-Demand, every field", r->mb * 1e6, &r->simd);
            printf("  %-34s median %.2fx (per-repetition sts/simdjson speed ratio; min %.2fx, max %.2fx)\n",
                   "sts/simdjson paired ratio", r->paired_simd.median, r->paired_simd.min, r->paired_simd.max);
        }
        if (only == ONLY_ALL) print_line("memcpy", r->mb * 1e6, &r->copy);
        if (only == ONLY_ALL)
            printf("  %-34s median %.2fx (per-repetition sts/jsmn speed ratio; min %.2fx, max %.2fx)\n",
                   "sts/jsmn paired ratio", r->paired.median, r->paired.min, r->paired.max);
        ran++;
    }
    if (!ran) usage();
    if (only == ONLY_ALL) {
        int i;
        printf("\n| case | header MB | tensors | sts MB/s (median) | sts+close MB/s | jsmn MB/s (median) | ratio sts/jsmn "
               "| paired ratio | simdjson MB/s | paired sts/simdjson | memcpy MB/s | B per tensor (peak / kept) |\n");
        printf("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
        for (i = 0; i < ran; i++) {
            const case_result *r = &res[i];
            double s = mbps(r->mb * 1e6, r->sts.median), j = mbps(r->mb * 1e6, r->jsmn.median);
            printf("| %s | %.2f | %.0f | %.0f | %.0f | %.0f | %.2fx | %.2fx | ", r->label, r->mb, r->tensors, s,
                   mbps(r->mb * 1e6, r->sts_total.median), j, j > 0 ? s / j : 0, r->paired.median);
            if (r->have_simd) printf("%.0f | %.2fx | ", mbps(r->mb * 1e6, r->simd.median), r->paired_simd.median);
            else printf("- | - | ");
            printf("%.0f | %.0f / %.0f |\n", mbps(r->mb * 1e6, r->copy.median), (double)r->mem_peak / r->tensors,
                   (double)r->mem_kept / r->tensors);
        }
    }
    return 0;
}
