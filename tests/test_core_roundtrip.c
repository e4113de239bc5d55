/* test_core_roundtrip.c - property tests with a seeded PRNG (the seed is printed; set
   STS_TEST_SEED to replay one).

   1. Random valid spec sets (names with non-ASCII and characters that need escapes, all 22
      dtypes with legal sizes, ranks 0-5 with zero dims, random metadata, data given or
      produced) -> sts_write_memory. The bytes must equal an independent rendering of the
      reference layout; they must parse in strict mode back to the same tensors, data and
      metadata; and specs rebuilt from the parse must write the identical bytes.
   2. The same sets as random valid but non-canonical headers (whitespace, unsorted offsets,
      entries in any order, positional entries, escaped keys and values, unknown fields,
      duplicates that the last copy overrides, "__metadata__": null): they must parse to the same
      content, strict mode must reject exactly those that use a strict-only feature, and
      rewriting them must give the canonical bytes of 1.

   Several thousand iterations at full level, about 100 under STS_TEST_LEVEL=quick. */
#define _POSIX_C_SOURCE 200809L
#ifndef STS_TEST_LINKED  /* the Makefile links tests/sts_impl.c's object instead */
#define STS_IMPLEMENTATION
#endif
#include "../safetensors_spark.h"
#include "core_util.h"

#define MAXT 12
#define MAXM 6
#define MAXCP 12

typedef struct gstr {            /* a string as code points and as UTF-8 */
    uint32_t cp[MAXCP * 2];
    int n;
    char u8[MAXCP * 2 * 4 + 1];
    size_t len;
} gstr;

typedef struct gset {
    int n, n_meta, meta_mode;    /* meta_mode: 0 none, 1 present */
    gstr names[MAXT], keys[MAXM], vals[MAXM];
    sts_tensor_spec sp[MAXT];
    sts_kv meta[MAXM];
    uint64_t shapes[MAXT][5];
    uint8_t *data[MAXT];
} gset;

static uint8_t g_pool[1 << 20];   /* the largest tensor: 8^5 elements of 8 bytes = 256 KiB */

/* ---- random text ---- */
static uint32_t rand_cp(tu_rng *r, int allow_nul) {
    uint32_t k = tu_below(r, 100), c;
    if (k < 40) return 0x20 + tu_below(r, 0x5f);
    if (k < 50) { c = tu_below(r, 33); return c == 32 ? 0x7f : (c == 0 && !allow_nul ? 1 : c); }
    if (k < 60) { static const uint32_t sp[3] = { '"', '\\', '/' }; return sp[tu_below(r, 3)]; }
    if (k < 75) return 0x80 + tu_below(r, 0x800 - 0x80);
    if (k < 90) { do c = 0x800 + tu_below(r, 0x10000 - 0x800); while (c >= 0xD800 && c <= 0xDFFF); return c; }
    return 0x10000 + tu_below(r, 0x110000 - 0x10000);
}
static size_t put_utf8(char *o, uint32_t c) {
    if (c < 0x80) { o[0] = (char)c; return 1; }
    if (c < 0x800) { o[0] = (char)(0xC0 | c >> 6); o[1] = (char)(0x80 | (c & 63)); return 2; }
    if (c < 0x10000) { o[0] = (char)(0xE0 | c >> 12); o[1] = (char)(0x80 | (c >> 6 & 63)); o[2] = (char)(0x80 | (c & 63)); return 3; }
    o[0] = (char)(0xF0 | c >> 18); o[1] = (char)(0x80 | (c >> 12 & 63)); o[2] = (char)(0x80 | (c >> 6 & 63)); o[3] = (char)(0x80 | (c & 63));
    return 4;
}
static void gstr_fix(gstr *s) {
    int i;
    s->len = 0;
    for (i = 0; i < s->n; i++) s->len += put_utf8(s->u8 + s->len, s->cp[i]);
    s->u8[s->len] = 0;
}
static void rand_str(tu_rng *r, gstr *s, int maxn, int allow_nul) {
    int i;
    s->n = (int)tu_below(r, (uint32_t)maxn + 1);
    for (i = 0; i < s->n; i++) s->cp[i] = rand_cp(r, allow_nul);
    gstr_fix(s);
}
static int gstr_eq(const gstr *a, const gstr *b) { return a->len == b->len && memcmp(a->u8, b->u8, a->len) == 0; }

/* ---- random spec sets ---- */
static sts_result produce_chunks(void *user, const sts_tensor_spec *s, sts_stream *out) {
    const uint8_t *p = (const uint8_t *)user;
    uint64_t left = s->data_size;
    size_t step = 1 + (size_t)(p[0] % 7);
    sts_result r;
    while (left) {
        size_t c = left < step ? (size_t)left : step;
        if ((r = sts_stream_write(out, p, c)) != STS_OK) return r;
        p += c;
        left -= c;
    }
    return STS_OK;
}
static void rand_set(tu_rng *r, gset *g) {
    static const uint64_t dimv[8] = { 0, 1, 2, 3, 4, 5, 8, 1 };
    size_t pool_at = 0;
    int i, j;
    memset(g, 0, sizeof *g);
    g->n = (int)tu_below(r, MAXT + 1);
    for (i = 0; i < g->n; i++) {
        sts_tensor_spec *s = &g->sp[i];
        uint64_t numel, bytes;
        unsigned bits;
        int tries = 0;
        /* a unique name, never "__metadata__" (it cannot be made at random anyway) */
        do {
            rand_str(r, &g->names[i], MAXCP, 0);
            for (j = 0; j < i && !gstr_eq(&g->names[j], &g->names[i]); j++) {}
        } while (j < i);
        s->name = g->names[i].u8;
        s->name_len = g->names[i].len;
        s->dtype = (sts_dtype)tu_below(r, STS_DTYPE_COUNT);
        bits = sts_dtype_bits(s->dtype);
        do {  /* a shape whose bit size is whole bytes (F4: even count, F6: multiple of 4) */
            s->rank = tu_below(r, 6);
            numel = 1;
            for (j = 0; j < (int)s->rank; j++) { g->shapes[i][j] = dimv[tu_below(r, 8)]; numel *= g->shapes[i][j]; }
            if (++tries > 50) { s->rank = 1; g->shapes[i][0] = 4; numel = 4; }
        } while ((numel * bits) % 8 != 0);
        s->shape = s->rank ? g->shapes[i] : (tu_below(r, 2) ? g->shapes[i] : NULL);
        bytes = numel * bits / 8;
        s->data_size = bytes;
        assert_true(bytes <= sizeof g_pool);
        if (pool_at + bytes > sizeof g_pool) pool_at = 0;
        g->data[i] = g_pool + pool_at;
        pool_at += (size_t)bytes;
        if (bytes && tu_below(r, 4) == 0) {  /* produced in chunks */
            s->data = NULL;
            s->produce = produce_chunks;
            s->produce_user = g->data[i];
        } else s->data = g->data[i];
    }
    g->meta_mode = tu_below(r, 10) < 3 ? 0 : 1;
    g->n_meta = g->meta_mode ? (int)tu_below(r, MAXM + 1) : 0;
    for (i = 0; i < g->n_meta; i++) {
        do {
            rand_str(r, &g->keys[i], 8, 1);
            for (j = 0; j < i && !gstr_eq(&g->keys[j], &g->keys[i]); j++) {}
        } while (j < i);
        rand_str(r, &g->vals[i], 16, 1);
        g->meta[i].key = g->keys[i].u8;
        g->meta[i].key_len = g->keys[i].len;
        g->meta[i].value = g->vals[i].u8;
        g->meta[i].value_len = g->vals[i].len;
    }
}

/* ---- the reference layout, rendered independently ---- */
static void esc_canon(tu_sb *b, const char *s, size_t n) {
    size_t i;
    tu_sb_str(b, "\"");
    for (i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        switch (c) {
        case '"': tu_sb_str(b, "\\\""); break;
        case '\\': tu_sb_str(b, "\\\\"); break;
        case 8: tu_sb_str(b, "\\b"); break;
        case 12: tu_sb_str(b, "\\f"); break;
        case 10: tu_sb_str(b, "\\n"); break;
        case 13: tu_sb_str(b, "\\r"); break;
        case 9: tu_sb_str(b, "\\t"); break;
        default:
            if (c < 0x20) tu_sb_printf(b, "\\u%04x", c);
            else tu_sb_put(b, &s[i], 1);
        }
    }
    tu_sb_str(b, "\"");
}
static int layout_cmp(const sts_tensor_spec *a, const sts_tensor_spec *b) {
    size_t m = a->name_len < b->name_len ? a->name_len : b->name_len;
    int c;
    if (a->dtype != b->dtype) return a->dtype > b->dtype ? -1 : 1;
    c = m ? memcmp(a->name, b->name, m) : 0;
    if (c) return c;
    return a->name_len < b->name_len ? -1 : a->name_len > b->name_len;
}
static void layout_order(const gset *g, int *ord) {
    int i, j;
    for (i = 0; i < g->n; i++) ord[i] = i;
    for (i = 1; i < g->n; i++)  /* insertion sort: tiny sets */
        for (j = i; j > 0 && layout_cmp(&g->sp[ord[j]], &g->sp[ord[j - 1]]) < 0; j--) { int t = ord[j]; ord[j] = ord[j - 1]; ord[j - 1] = t; }
}
static void canon_bytes(const gset *g, tu_sb *out) {
    tu_sb j = { 0 };
    int ord[MAXT], i;
    uint32_t d;
    uint64_t off = 0, n;
    uint8_t len8[8];
    layout_order(g, ord);
    tu_sb_str(&j, "{");
    if (g->meta_mode) {
        tu_sb_str(&j, "\"__metadata__\":{");
        for (i = 0; i < g->n_meta; i++) {
            if (i) tu_sb_str(&j, ",");
            esc_canon(&j, g->meta[i].key, g->meta[i].key_len);
            tu_sb_str(&j, ":");
            esc_canon(&j, g->meta[i].value, g->meta[i].value_len);
        }
        tu_sb_str(&j, "}");
        if (g->n) tu_sb_str(&j, ",");
    }
    for (i = 0; i < g->n; i++) {
        const sts_tensor_spec *s = &g->sp[ord[i]];
        if (i) tu_sb_str(&j, ",");
        esc_canon(&j, s->name, s->name_len);
        tu_sb_printf(&j, ":{\"dtype\":\"%s\",\"shape\":[", sts_dtype_name(s->dtype));
        for (d = 0; d < s->rank; d++) tu_sb_printf(&j, "%s%llu", d ? "," : "", (unsigned long long)s->shape[d]);
        tu_sb_printf(&j, "],\"data_offsets\":[%llu,%llu]}", (unsigned long long)off, (unsigned long long)(off + s->data_size));
        off += s->data_size;
    }
    tu_sb_str(&j, "}");
    n = (j.n + 7) / 8 * 8;
    while (j.n < n) tu_sb_str(&j, " ");
    cu_st64(len8, n);
    tu_sb_put(out, len8, 8);
    tu_sb_put(out, j.p, j.n);
    for (i = 0; i < g->n; i++) tu_sb_put(out, g->data[ord[i]], (size_t)g->sp[ord[i]].data_size);
    tu_sb_free(&j);
}

/* ---- checking a parsed file against the set ---- */
static void check_file(const gset *g, const sts_file *f, int with_data) {
    int i, ord[MAXT];
    uint32_t d;
    uint64_t off = 0;
    assert_int_equal(sts_count(f), g->n);
    for (i = 0; i < g->n; i++) {
        const sts_tensor_spec *s = &g->sp[i];
        const sts_tensor *t = sts_find(f, s->name, s->name_len);
        if (!t) fail_msg("[%s] tensor %d not found", cu_label, i);
        assert_int_equal(t->name_len, s->name_len);
        if (s->name_len) assert_memory_equal(t->name, s->name, s->name_len);
        assert_int_equal(t->dtype, s->dtype);
        assert_int_equal(t->rank, s->rank);
        for (d = 0; d < s->rank; d++) assert_int_equal(t->shape[d], s->shape[d]);
        assert_int_equal(sts_tensor_nbytes(t), s->data_size);
        if (with_data && s->data_size) assert_memory_equal(sts_data(f, t), g->data[i], (size_t)s->data_size);
    }
    /* order = the reference layout (for files in canonical layout) */
    if (with_data == 2) {
        layout_order(g, ord);
        for (i = 0; i < g->n; i++) {
            const sts_tensor *t = sts_at(f, (size_t)i);
            assert_int_equal(t->begin, off);
            assert_ptr_equal(t, sts_find(f, g->sp[ord[i]].name, g->sp[ord[i]].name_len));
            off += g->sp[ord[i]].data_size;
        }
    }
    assert_int_equal(sts_has_metadata(f), g->meta_mode);
    assert_int_equal(sts_metadata_count(f), g->n_meta);
    for (i = 0; i < g->n_meta; i++) {
        const sts_kv *kv = sts_metadata_at(f, (size_t)i);
        assert_int_equal(kv->key_len, g->meta[i].key_len);
        assert_memory_equal(kv->key, g->meta[i].key, kv->key_len);
        assert_int_equal(kv->value_len, g->meta[i].value_len);
        assert_memory_equal(kv->value, g->meta[i].value, kv->value_len);
        assert_ptr_equal(sts_metadata_find(f, g->meta[i].key, g->meta[i].key_len), kv);
    }
}
/* Specs rebuilt from a parsed file, written again. */
static void rewrite(const sts_file *f, void **out, size_t *size) {
    sts_tensor_spec sp[MAXT];
    sts_kv meta[MAXM + 1];
    size_t i, n = sts_count(f);
    sts_error e;
    for (i = 0; i < n; i++) {
        const sts_tensor *t = sts_at(f, i);
        memset(&sp[i], 0, sizeof sp[i]);
        sp[i].name = t->name;
        sp[i].name_len = t->name_len;
        sp[i].dtype = t->dtype;
        sp[i].rank = t->rank;
        sp[i].shape = t->shape;
        sp[i].data = sts_data(f, t);
        sp[i].data_size = sts_tensor_nbytes(t);
    }
    for (i = 0; i < sts_metadata_count(f); i++) meta[i] = *sts_metadata_at(f, i);
    if (sts_write_memory(sp, n, sts_has_metadata(f) ? meta : NULL, sts_metadata_count(f), NULL, out, size, &e) != STS_OK)
        fail_msg("[%s] rewrite failed: %s", cu_label, e.message);
}

/* ---- non-canonical headers ---- */
typedef struct nc {
    tu_rng *r;
    tu_sb *b;
    int strict_bad;      /* uses something only the lenient mode accepts */
    int lenient;         /* may use such things (half the iterations) */
} nc;
static void ws(nc *c) {
    static const char w[4] = { ' ', '\t', '\n', '\r' };
    int k = (int)tu_below(c->r, 5) - 2;
    while (k-- > 0) tu_sb_put(c->b, &w[tu_below(c->r, 4)], 1);
}
static void esc_cp(nc *c, uint32_t cp) {
    static const char *const hexl = "0123456789abcdef", *const hexu = "0123456789ABCDEF";
    const char *hx = tu_below(c->r, 2) ? hexl : hexu;
    char t[16];
    if (cp >= 0x10000) {
        uint32_t v = cp - 0x10000, hi = 0xD800 + (v >> 10), lo = 0xDC00 + (v & 0x3ff);
        snprintf(t, sizeof t, "\\u%c%c%c%c\\u%c%c%c%c", hx[hi >> 12], hx[hi >> 8 & 15], hx[hi >> 4 & 15], hx[hi & 15],
                 hx[lo >> 12], hx[lo >> 8 & 15], hx[lo >> 4 & 15], hx[lo & 15]);
    } else snprintf(t, sizeof t, "\\u%c%c%c%c", hx[cp >> 12], hx[cp >> 8 & 15], hx[cp >> 4 & 15], hx[cp & 15]);
    tu_sb_str(c->b, t);
}
static void str_nc(nc *c, const uint32_t *cp, int n) {
    int i;
    tu_sb_str(c->b, "\"");
    for (i = 0; i < n; i++) {
        uint32_t x = cp[i];
        int esc = tu_below(c->r, 4) == 0;
        char u[4];
        if (x == '"') tu_sb_str(c->b, esc ? "\\u0022" : "\\\"");
        else if (x == '\\') tu_sb_str(c->b, esc ? "\\u005C" : "\\\\");
        else if (x == '/' && esc) tu_sb_str(c->b, "\\/");
        else if (x < 0x20) {
            const char *s = x == 8 ? "\\b" : x == 12 ? "\\f" : x == 10 ? "\\n" : x == 13 ? "\\r" : x == 9 ? "\\t" : NULL;
            if (s && !esc) tu_sb_str(c->b, s);
            else esc_cp(c, x);
        } else if (esc) esc_cp(c, x);
        else tu_sb_put(c->b, u, put_utf8(u, x));
    }
    tu_sb_str(c->b, "\"");
}
static void lit_nc(nc *c, const char *s) {  /* an ASCII key or value, maybe escaped */
    uint32_t cp[32];
    int n = 0;
    while (*s) cp[n++] = (uint8_t)*s++;
    str_nc(c, cp, n);
}
static void junk_value(nc *c, int depth) {
    uint32_t k = tu_below(c->r, depth > 2 ? 5 : 7);
    switch (k) {
    case 0: tu_sb_str(c->b, "null"); break;
    case 1: tu_sb_str(c->b, tu_below(c->r, 2) ? "true" : "false"); break;
    case 2: tu_sb_str(c->b, tu_below(c->r, 2) ? "-12.5e+3" : "0"); break;
    case 3: tu_sb_str(c->b, "18446744073709551616"); break;
    case 4: lit_nc(c, "junk"); break;
    case 5: {
        int i, n = (int)tu_below(c->r, 3);
        tu_sb_str(c->b, "[");
        for (i = 0; i < n; i++) { if (i) tu_sb_str(c->b, ","); ws(c); junk_value(c, depth + 1); ws(c); }
        tu_sb_str(c->b, "]");
        break;
    }
    default: {
        int i, n = (int)tu_below(c->r, 3);
        tu_sb_str(c->b, "{");
        for (i = 0; i < n; i++) { if (i) tu_sb_str(c->b, ","); ws(c); lit_nc(c, "k"); ws(c); tu_sb_str(c->b, ":"); ws(c); junk_value(c, depth + 1); }
        tu_sb_str(c->b, "}");
        break;
    }
    }
}
static void entry_nc(nc *c, sts_dtype dt, uint32_t rank, const uint64_t *shape, uint64_t b, uint64_t e) {
    int field[3] = { 0, 1, 2 }, i, unknown = c->lenient && tu_below(c->r, 8) == 0;
    uint32_t d;
    if (c->lenient && tu_below(c->r, 6) == 0) {  /* positional [dtype, shape, offsets] */
        c->strict_bad = 1;
        tu_sb_str(c->b, "[");
        ws(c); lit_nc(c, sts_dtype_name(dt)); ws(c); tu_sb_str(c->b, ","); ws(c);
        tu_sb_str(c->b, "[");
        for (d = 0; d < rank; d++) tu_sb_printf(c->b, "%s%llu", d ? "," : "", (unsigned long long)shape[d]);
        tu_sb_str(c->b, "]");
        ws(c); tu_sb_str(c->b, ","); ws(c);
        tu_sb_printf(c->b, "[%llu,", (unsigned long long)b);
        ws(c);
        tu_sb_printf(c->b, "%llu]", (unsigned long long)e);
        ws(c); tu_sb_str(c->b, "]");
        return;
    }
    for (i = 2; i > 0; i--) { int k = (int)tu_below(c->r, (uint32_t)i + 1), t = field[i]; field[i] = field[k]; field[k] = t; }
    tu_sb_str(c->b, "{");
    for (i = 0; i < 3; i++) {
        ws(c);
        if (i) { tu_sb_str(c->b, ","); ws(c); }
        if (unknown && i == 1) {
            c->strict_bad = 1;
            lit_nc(c, tu_below(c->r, 2) ? "extra" : "Dtype");
            ws(c); tu_sb_str(c->b, ":"); ws(c);
            junk_value(c, 0);
            ws(c); tu_sb_str(c->b, ","); ws(c);
        }
        switch (field[i]) {
        case 0: lit_nc(c, "dtype"); ws(c); tu_sb_str(c->b, ":"); ws(c); lit_nc(c, sts_dtype_name(dt)); break;
        case 1:
            lit_nc(c, "shape"); ws(c); tu_sb_str(c->b, ":"); ws(c); tu_sb_str(c->b, "[");
            for (d = 0; d < rank; d++) { if (d) tu_sb_str(c->b, ","); ws(c); tu_sb_printf(c->b, "%llu", (unsigned long long)shape[d]); ws(c); }
            tu_sb_str(c->b, "]");
            break;
        default:
            lit_nc(c, "data_offsets"); ws(c); tu_sb_str(c->b, ":"); ws(c);
            tu_sb_printf(c->b, "[%llu", (unsigned long long)b); ws(c); tu_sb_str(c->b, ","); ws(c);
            tu_sb_printf(c->b, "%llu]", (unsigned long long)e);
            break;
        }
    }
    ws(c);
    tu_sb_str(c->b, "}");
}
static void meta_nc(nc *c, const gset *g) {
    int i;
    static const uint32_t md[12] = { '_', '_', 'm', 'e', 't', 'a', 'd', 'a', 't', 'a', '_', '_' };
    str_nc(c, md, 12);
    ws(c); tu_sb_str(c->b, ":"); ws(c);
    if (!g->meta_mode) { tu_sb_str(c->b, "null"); c->strict_bad = 1; return; }
    tu_sb_str(c->b, "{");
    for (i = 0; i < g->n_meta; i++) {
        if (c->lenient && tu_below(c->r, 6) == 0) {   /* an earlier copy of the key, overridden below */
            static const uint32_t junk[3] = { 'o', 'l', 'd' };
            c->strict_bad = 1;
            ws(c); str_nc(c, g->keys[i].cp, g->keys[i].n); ws(c); tu_sb_str(c->b, ":"); ws(c); str_nc(c, junk, 3);
            ws(c); tu_sb_str(c->b, ",");
        }
        ws(c);
        str_nc(c, g->keys[i].cp, g->keys[i].n);
        ws(c); tu_sb_str(c->b, ":"); ws(c);
        str_nc(c, g->vals[i].cp, g->vals[i].n);
        ws(c);
        if (i + 1 < g->n_meta) tu_sb_str(c->b, ",");
    }
    ws(c);
    tu_sb_str(c->b, "}");
}
/* A non-canonical file for the set: header text and data section. */
static void noncanon_bytes(tu_rng *r, const gset *g, tu_sb *out, int *strict_bad) {
    tu_sb h = { 0 };
    nc c;
    int lay[MAXT], emit[MAXT], i, meta_at, k, total, members = 0;
    uint64_t begin[MAXT], off = 0, n;
    uint8_t len8[8];
    c.r = r; c.b = &h; c.strict_bad = 0; c.lenient = (int)tu_below(r, 2);
    for (i = 0; i < g->n; i++) lay[i] = emit[i] = i;
    for (i = g->n - 1; i > 0; i--) {  /* random data order and random header order */
        int a = (int)tu_below(r, (uint32_t)i + 1), b = (int)tu_below(r, (uint32_t)i + 1), t;
        t = lay[i]; lay[i] = lay[a]; lay[a] = t;
        t = emit[i]; emit[i] = emit[b]; emit[b] = t;
    }
    for (i = 0; i < g->n; i++) { begin[lay[i]] = off; off += g->sp[lay[i]].data_size; }
    if (c.lenient && tu_below(r, 5) == 0) { tu_sb_str(&h, tu_below(r, 2) ? " " : "\n\t"); c.strict_bad = 1; }
    tu_sb_str(&h, "{");
    ws(&c);
    total = g->n + 1;
    meta_at = (g->meta_mode || (c.lenient && tu_below(r, 2))) ? (int)tu_below(r, (uint32_t)total) : -1;  /* -1: no key at all */
    for (k = 0, i = 0; k < total; k++) {
        if (k == meta_at) {
            if (members++) tu_sb_str(&h, ",");
            ws(&c);
            meta_nc(&c, g);
            ws(&c);
            continue;
        }
        if (i >= g->n) continue;
        {
            const sts_tensor_spec *s = &g->sp[emit[i]];
            if (c.lenient && tu_below(r, 8) == 0) {  /* an earlier copy that the real entry overrides */
                uint64_t junk_shape[1];
                junk_shape[0] = tu_below(r, 9);
                c.strict_bad = 1;
                if (members++) tu_sb_str(&h, ",");
                ws(&c);
                str_nc(&c, g->names[emit[i]].cp, g->names[emit[i]].n);
                ws(&c); tu_sb_str(&h, ":"); ws(&c);
                entry_nc(&c, STS_DTYPE_F4, 1, junk_shape, 1000, 3);
                ws(&c);
            }
            if (members++) tu_sb_str(&h, ",");
            ws(&c);
            str_nc(&c, g->names[emit[i]].cp, g->names[emit[i]].n);
            ws(&c); tu_sb_str(&h, ":"); ws(&c);
            entry_nc(&c, s->dtype, s->rank, s->shape, begin[emit[i]], begin[emit[i]] + s->data_size);
            ws(&c);
            i++;
        }
    }
    tu_sb_str(&h, "}");
    /* padding: spaces, or other whitespace (strict rejects) */
    k = (int)tu_below(r, 10);
    while (k-- > 0) {
        uint32_t w = tu_below(r, 8);
        if (w < 5 || !c.lenient) tu_sb_str(&h, " ");
        else { tu_sb_str(&h, w == 5 ? "\t" : w == 6 ? "\n" : "\r"); c.strict_bad = 1; }
    }
    n = h.n;
    cu_st64(len8, n);
    tu_sb_put(out, len8, 8);
    tu_sb_put(out, h.p, h.n);
    for (i = 0; i < g->n; i++) tu_sb_put(out, g->data[lay[i]], (size_t)g->sp[lay[i]].data_size);
    *strict_bad = c.strict_bad;
    tu_sb_free(&h);
}

static int is_strict_rule(sts_rule r) {
    return r == STS_RULE_STRICT_LEADING_WS || r == STS_RULE_STRICT_PADDING || r == STS_RULE_STRICT_DUPLICATE ||
           r == STS_RULE_STRICT_POSITIONAL || r == STS_RULE_STRICT_UNKNOWN || r == STS_RULE_STRICT_META_NULL;
}

static void test_roundtrip(void **state) {
    uint64_t seed = 0x5afe7e45015eedull;
    long iters = tu_quick() ? 100 : 10000, it, strict_rejects = 0, produced = 0;
    const char *env = getenv("STS_TEST_SEED");
    tu_rng r, dr;
    static gset g;
    size_t i;
    (void)state;
    if (env && *env) seed = strtoull(env, NULL, 0);
    print_message("roundtrip: seed 0x%llx, %ld iterations (STS_TEST_SEED replays)\n", (unsigned long long)seed, iters);
    r.s = seed;
    dr.s = seed ^ 0x1234;
    for (i = 0; i < sizeof g_pool; i++) g_pool[i] = (uint8_t)tu_next(&dr);
    for (it = 0; it < iters; it++) {
        char label[64];
        tu_sb want = { 0 }, ncb = { 0 };
        void *out, *out2;
        size_t size, size2;
        sts_file *f;
        sts_error e;
        sts_options strict;
        uint64_t hs, fs;
        int bad, k;
        snprintf(label, sizeof label, "seed 0x%llx iteration %ld", (unsigned long long)seed, it);
        cu_label = label;
        rand_set(&r, &g);
        for (k = 0; k < g.n; k++) produced += g.sp[k].produce != NULL;
        /* 1. canonical bytes */
        if (sts_write_memory(g.sp, (size_t)g.n, g.meta_mode ? g.meta : NULL, (size_t)g.n_meta, NULL, &out, &size, &e) != STS_OK)
            fail_msg("[%s] write failed: %s", label, e.message);
        canon_bytes(&g, &want);
        if (size != want.n || memcmp(out, want.p, size) != 0) {
            size_t at = 0;
            while (at < size && at < want.n && ((uint8_t *)out)[at] == (uint8_t)want.p[at]) at++;
            fail_msg("[%s] bytes differ from the reference layout at byte %zu (got %zu bytes, want %zu)", label, at, size, want.n);
        }
        assert_int_equal(sts_write_size(g.sp, (size_t)g.n, g.meta_mode ? g.meta : NULL, (size_t)g.n_meta, NULL, &hs, &fs, NULL), STS_OK);
        assert_int_equal(fs, size);
        assert_int_equal(hs, cu_ld64((const uint8_t *)out));
        memset(&strict, 0, sizeof strict);
        strict.strict = 1;
        if (sts_parse(out, size, &strict, &f, &e) != STS_OK) fail_msg("[%s] strict parse: %s", label, e.message);
        check_file(&g, f, 2);
        rewrite(f, &out2, &size2);
        assert_int_equal(size2, size);
        assert_memory_equal(out2, out, size);
        sts_free(NULL, out2, size2);
        sts_close(f);
        /* 2. a non-canonical spelling of the same set */
        noncanon_bytes(&r, &g, &ncb, &bad);
        if (sts_parse(ncb.p, ncb.n, NULL, &f, &e) != STS_OK)
            fail_msg("[%s] lenient parse of a non-canonical header: %s\n%.*s", label, e.message, (int)(ncb.n > 2000 ? 2000 : ncb.n - 8), ncb.p + 8);
        check_file(&g, f, 1);
        rewrite(f, &out2, &size2);
        assert_int_equal(size2, size);
        if (memcmp(out2, out, size) != 0) fail_msg("[%s] rewriting a non-canonical header did not give the canonical bytes", label);
        sts_free(NULL, out2, size2);
        sts_close(f);
        {
            sts_result sr = sts_parse(ncb.p, ncb.n, &strict, &f, &e);
            if (bad) {
                if (sr == STS_OK) { sts_close(f); fail_msg("[%s] strict mode accepted a strict-only feature", label); }
                if (sr != STS_ERR_INVALID_HEADER_DESERIALIZATION || !is_strict_rule(e.rule))
                    fail_msg("[%s] strict: expected a strict.* rule, got %s: %s", label, sts_rule_id(e.rule), e.message);
                strict_rejects++;
            } else {
                if (sr != STS_OK) fail_msg("[%s] strict rejected a header without strict-only features: %s", label, e.message);
                check_file(&g, f, 1);
                sts_close(f);
            }
        }
        sts_free(NULL, out, size);
        tu_sb_free(&want);
        tu_sb_free(&ncb);
    }
    print_message("roundtrip: %ld strict-only headers rejected by strict mode, %ld tensors produced by callbacks\n", strict_rejects, produced);
    assert_true(strict_rejects > iters / 10);
    assert_true(strict_rejects < iters);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roundtrip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
