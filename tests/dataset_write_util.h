/* dataset_write_util.h - helpers shared by the dataset-writer tests (tests/test_dataset_write_*.c,
   tests/test_dataset_write_crash.c, tests/dataset_gen.c).

   Include after safetensors_spark.h (public API only: the Makefile links these programs against the
   implementation compiled once, tests/sts_impl.c). Each file
   defines _POSIX_C_SOURCE 200809L before any include. Everything here is static and marked
   unused, so a file pays only for what it calls. Checks fail through cmocka (fail_msg), except
   where a function returns a message instead (du_check_dataset_msg, for the crash driver, which
   checks in a parent process after a child was killed).

   What is here (the level, clock, PRNG, text builder, checking allocator and the sts_error check
   are in test_util.h; files, folders and folder snapshots in fs_util.h):
     - a sleep in microseconds
     - DU_OK: a call that must succeed
     - forked children that park until their parent kills them
     - the io_fault hook: count write-side calls, fail the k-th with an errno, or die there
     - an expected-tensor list and a byte-for-byte comparison of a shard with the reference
       writer's output for those tensors (sts_write_memory)
     - du_encode_array: what the writer stores for an array cell (C values in host order, encoded
       to a dtype as little-endian bytes), through sts_convert
     - shard names: part-TTTTT-SSSS-<uuid v4>.safetensors
     - a structural check of a whole dataset folder: manifest, shards, index (JSON and CSV) */
#ifndef STS_TESTS_DATASET_WRITE_UTIL_H
#define STS_TESTS_DATASET_WRITE_UTIL_H

#include "test_util.h"
#include "fs_util.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#define DU_FN TU_FN

/* ---- sleep ---- */
DU_FN void du_sleep_us(long us) {
    struct timespec ts;
    ts.tv_sec = us / 1000000;
    ts.tv_nsec = (us % 1000000) * 1000;
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
}

/* ---- a call that must succeed ---- */
#define DU_OK(label, call, e) do { sts_result r_ = (call); \
    if (r_ != STS_OK) fail_msg("%s: %s -> %s: %s", (label), #call, sts_result_name(r_), (e).message); } while (0)

/* ---- child processes ----
   A forked child never returns into cmocka and never exits by itself: it writes one byte to fd
   ('K' at a kill point, 'D' when done) and waits to be killed with SIGKILL by its parent. A kill
   from outside is the only end that valgrind does not follow with an exit-time leak report of the
   heap the child inherited. */
DU_FN void du_park(int fd, char what) {
    if (fd >= 0 && write(fd, &what, 1) != 1) {}
    for (;;) pause();
}
/* The parent's side: SIGKILL the child and reap it. */
DU_FN void du_reap(pid_t pid) {
    int status;
    kill(pid, SIGKILL);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
}

/* ---- io_fault hook ---- */
typedef struct du_fault {
    int armed;          /* count only while armed */
    long calls;         /* write-side calls seen while armed */
    long fail_at;       /* this call (1-based) returns err; 0 = never */
    int err;
    long kill_at;       /* at this call the process stops (du_park on park_fd) to be killed (crash tests) */
    int park_fd;        /* where du_park reports; set it (-1 = none) whenever kill_at is used */
    long failed;        /* calls that returned err */
    char op[16];        /* the op of the failing call */
    char ops[64][12];   /* the first 64 ops seen, for diagnosis */
} du_fault;
DU_FN int du_fault_fn(void *user, const char *op) {
    du_fault *f = (du_fault *)user;
    if (!f->armed) return 0;
    f->calls++;
    if (f->calls <= 64) { strncpy(f->ops[f->calls - 1], op, 11); f->ops[f->calls - 1][11] = 0; }
    if (f->kill_at && f->calls == f->kill_at) du_park(f->park_fd, 'K');
    if (f->fail_at && f->calls == f->fail_at) {
        f->failed++;
        strncpy(f->op, op, sizeof f->op - 1);
        return f->err;
    }
    return 0;
}
DU_FN void du_fault_opts(sts_options *o, du_fault *f) {
    o->io_fault = du_fault_fn;
    o->io_fault_user = f;
}

/* ---- shard names: part-TTTTT-SSSS-<uuid v4>.safetensors ---- */
DU_FN int du_is_hex(int c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }
/* 1 when name matches; task, shard and uuid (37 bytes) are filled when not NULL. */
DU_FN int du_shard_name(const char *name, uint32_t *task, uint32_t *shard, char *uuid) {
    size_t len = strlen(name), i, p = 5, start;
    uint64_t t = 0, s = 0;
    const char *u;
    if (len < 5 || strncmp(name, "part-", 5) != 0) return 0;
    for (start = p; p < len && name[p] >= '0' && name[p] <= '9'; p++) t = t * 10 + (uint64_t)(name[p] - '0');
    if (p - start < 5 || (p - start > 5 && name[start] == '0') || name[p] != '-') return 0;
    for (start = ++p; p < len && name[p] >= '0' && name[p] <= '9'; p++) s = s * 10 + (uint64_t)(name[p] - '0');
    if (p - start < 4 || (p - start > 4 && name[start] == '0') || name[p] != '-') return 0;
    u = name + p + 1;
    if (strlen(u) != 36 + 12 || strcmp(u + 36, ".safetensors") != 0) return 0;
    for (i = 0; i < 36; i++) {
        if (i == 8 || i == 13 || i == 18 || i == 23) { if (u[i] != '-') return 0; }
        else if (!du_is_hex(u[i])) return 0;
    }
    if (u[14] != '4') return 0;                                          /* version 4 */
    if (u[19] != '8' && u[19] != '9' && u[19] != 'a' && u[19] != 'b') return 0;  /* RFC 4122 variant */
    if (task) *task = (uint32_t)t;
    if (shard) *shard = (uint32_t)s;
    if (uuid) { memcpy(uuid, u, 36); uuid[36] = 0; }
    return 1;
}
/* The part-* names in dir, sorted (none when dir is missing); free with tf_names_free. */
DU_FN tf_names du_list_shards(const char *dir) { return tf_list(dir, "part-", ""); }
/* The shard of (task, shard number) among names, or NULL. */
DU_FN const char *du_find_shard(const tf_names *r, uint32_t task, uint32_t shard) {
    size_t i;
    for (i = 0; i < r->n; i++) {
        uint32_t t, s;
        if (du_shard_name(r->v[i], &t, &s, NULL) && t == task && s == shard) return r->v[i];
    }
    return NULL;
}

/* ---- expected tensors and the reference writer's bytes ---- */
typedef struct du_t {
    char *name;
    size_t name_len;
    sts_dtype dtype;
    uint32_t rank;
    uint64_t shape[8];
    uint8_t *data;
    uint64_t size;
} du_t;
typedef struct du_tl { du_t *t; size_t n, cap; } du_tl;

DU_FN du_t *du_tl_find(const du_tl *l, const char *name, size_t len) {
    size_t i;
    for (i = 0; i < l->n; i++)
        if (l->t[i].name_len == len && memcmp(l->t[i].name, name, len) == 0) return &l->t[i];
    return NULL;
}
/* Adds a tensor (copying name, shape and data), or replaces the one with the same name when
   replace is set (lastWin). */
DU_FN du_t *du_tl_put(du_tl *l, const char *name, size_t len, sts_dtype dt, uint32_t rank, const uint64_t *shape,
                      const void *data, uint64_t size, int replace) {
    du_t *t = replace ? du_tl_find(l, name, len) : NULL;
    assert_true(rank <= 8);
    if (!t) {
        if (l->n == l->cap) { l->cap = l->cap ? 2 * l->cap : 16; l->t = (du_t *)realloc(l->t, l->cap * sizeof *l->t); assert_non_null(l->t); }
        t = &l->t[l->n++];
        memset(t, 0, sizeof *t);
        t->name = (char *)malloc(len + 1);
        assert_non_null(t->name);
        memcpy(t->name, name, len);
        t->name[len] = 0;
        t->name_len = len;
    } else free(t->data);
    t->dtype = dt;
    t->rank = rank;
    if (rank) memcpy(t->shape, shape, rank * sizeof *shape);
    t->size = size;
    t->data = (uint8_t *)malloc(size ? (size_t)size : 1);
    assert_non_null(t->data);
    if (size) memcpy(t->data, data, (size_t)size);
    return t;
}
DU_FN void du_tl_free(du_tl *l) {
    size_t i;
    for (i = 0; i < l->n; i++) { free(l->t[i].name); free(l->t[i].data); }
    free(l->t);
    memset(l, 0, sizeof *l);
}
DU_FN sts_tensor_spec *du_tl_specs(const du_tl *l) {
    sts_tensor_spec *sp = (sts_tensor_spec *)calloc(l->n ? l->n : 1, sizeof *sp);
    size_t i;
    assert_non_null(sp);
    for (i = 0; i < l->n; i++) {
        sp[i].name = l->t[i].name; sp[i].name_len = l->t[i].name_len; sp[i].dtype = l->t[i].dtype;
        sp[i].rank = l->t[i].rank; sp[i].shape = l->t[i].shape; sp[i].data = l->t[i].data; sp[i].data_size = l->t[i].size;
    }
    return sp;
}
/* n elements of an array cell (C values of elem in the host's byte order) encoded to dt into dst,
   as the writer stores them: little-endian bytes. sts_convert reads little-endian values, so the
   host values go through tu_le_copy first (a copy on a little-endian host). */
DU_FN sts_result du_encode_array(void *dst, sts_dtype dt, const void *src, sts_dtype elem, size_t n, sts_rounding rnd) {
    size_t esz = sts_dtype_bits(elem) / 8;
    uint8_t *le = (uint8_t *)malloc(n ? n * esz : 1);
    sts_result r;
    assert_non_null(le);
    tu_le_copy(le, src, n, esz);
    r = sts_convert(dst, dt, le, elem, n, rnd);
    free(le);
    return r;
}
/* The exact size of a file holding these tensors, per the reference layout. */
DU_FN uint64_t du_tl_file_size(const du_tl *l) {
    sts_tensor_spec *sp = du_tl_specs(l);
    uint64_t hs = 0, fs = 0;
    sts_error e;
    if (sts_write_size(sp, l->n, NULL, 0, NULL, &hs, &fs, &e) != STS_OK) fail_msg("sts_write_size: %s", e.message);
    free(sp);
    return fs;
}
/* The file at path is byte-for-byte what sts_write_memory makes of l. The _note form appends
   the difference to notes and returns 0; the other fails at once. */
DU_FN int du_expect_file_note(tu_sb *notes, const char *label, const char *path, const du_tl *l) {
    sts_tensor_spec *sp = du_tl_specs(l);
    void *want = NULL;
    size_t want_n = 0, got_n = 0, i;
    uint8_t *got;
    sts_error e;
    int ok = 1;
    if (sts_write_memory(sp, l->n, NULL, 0, NULL, &want, &want_n, &e) != STS_OK) fail_msg("%s: sts_write_memory: %s", label, e.message);
    free(sp);
    got = tf_read_opt(path, &got_n);
    if (!got) { tu_sb_printf(notes, "\n  %s: cannot read %s", label, path); sts_free(NULL, want, want_n); return 0; }
    if (got_n != want_n || memcmp(got, want, want_n) != 0) {
        const char *slash = strrchr(path, '/');
        for (i = 0; i < got_n && i < want_n && got[i] == ((uint8_t *)want)[i]; i++) {}
        tu_sb_printf(notes, "\n  %s: %s has %zu bytes, the reference layout %zu; first difference at byte %zu", label, slash ? slash + 1 : path, got_n, want_n, i);
        ok = 0;
    }
    free(got);
    sts_free(NULL, want, want_n);
    return ok;
}
DU_FN void du_expect_file(const char *label, const char *path, const du_tl *l) {
    tu_sb notes = { 0, 0, 0 };
    if (!du_expect_file_note(&notes, label, path, l)) {
        char text[1024];
        snprintf(text, sizeof text, "%s", notes.p + 3);
        tu_sb_free(&notes);
        fail_msg("%s", text);
    }
}

/* ---- little readers for the JSON documents ----
   A strict RFC 8259 reader of its own (no library internals, so these tests link the implementation
   compiled once): a token tape in document order, token 0 the root. Tokens: type '{' '[' '"' '0'
   (number) 't' 'f' 'n'; containers count their members or elements; next is the first token after
   a subtree; strings keep their raw bytes between the quotes. Index 0 doubles as "absent" for
   du_jget, as the root is never a member. */
typedef struct du_jtok { uint8_t type; uint32_t count, next; size_t at, len; } du_jtok;
typedef struct du_json { du_jtok *tok; size_t n, cap; uint8_t *text; size_t len; } du_json;

DU_FN size_t du_jws(const du_json *j, size_t i) {
    while (i < j->len && (j->text[i] == ' ' || j->text[i] == '\t' || j->text[i] == '\n' || j->text[i] == '\r')) i++;
    return i;
}
DU_FN uint32_t du_jpush(du_json *j, uint8_t type, size_t at) {
    if (j->n == j->cap) {
        j->cap = j->cap ? j->cap * 2 : 64;
        j->tok = (du_jtok *)realloc(j->tok, j->cap * sizeof *j->tok);
        assert_non_null(j->tok);
    }
    memset(&j->tok[j->n], 0, sizeof j->tok[j->n]);
    j->tok[j->n].type = type;
    j->tok[j->n].at = at;
    return (uint32_t)j->n++;
}
DU_FN int du_jdigits(const du_json *j, size_t *i) {
    size_t s = *i;
    while (*i < j->len && j->text[*i] >= '0' && j->text[*i] <= '9') (*i)++;
    return *i > s;
}
/* One value at *i (whitespace skipped first): its tokens appended; 0 on a syntax error. */
DU_FN int du_jvalue(du_json *j, size_t *i, int depth) {
    size_t p = du_jws(j, *i);
    uint32_t t;
    if (p >= j->len || depth > 64) return 0;
    switch (j->text[p]) {
    case '{': case '[': {
        uint8_t open = j->text[p], close = open == '{' ? '}' : ']';
        t = du_jpush(j, open, p);
        p = du_jws(j, p + 1);
        if (p < j->len && j->text[p] == close) { p++; break; }
        for (;;) {
            if (open == '{') {
                p = du_jws(j, p);
                if (p >= j->len || j->text[p] != '"' || !du_jvalue(j, &p, depth + 1)) return 0;
                p = du_jws(j, p);
                if (p >= j->len || j->text[p++] != ':') return 0;
            }
            if (!du_jvalue(j, &p, depth + 1)) return 0;
            j->tok[t].count++;
            p = du_jws(j, p);
            if (p < j->len && j->text[p] == ',') { p++; continue; }
            if (p < j->len && j->text[p] == close) { p++; break; }
            return 0;
        }
        break;
    }
    case '"': {
        size_t q = p + 1;
        while (q < j->len && j->text[q] != '"') {
            if (j->text[q] < 0x20) return 0;
            if (j->text[q] == '\\') {
                q++;
                if (q >= j->len) return 0;
                if (j->text[q] == 'u') {
                    int k;
                    for (k = 1; k <= 4; k++)
                        if (q + (size_t)k >= j->len || !isxdigit(j->text[q + (size_t)k])) return 0;
                    q += 4;
                } else if (!strchr("\"\\/bfnrt", j->text[q])) {
                    return 0;
                }
            }
            q++;
        }
        if (q >= j->len) return 0;
        t = du_jpush(j, '"', p + 1);
        j->tok[t].len = q - p - 1;
        p = q + 1;
        break;
    }
    case 't': case 'f': case 'n': {
        const char *word = j->text[p] == 't' ? "true" : j->text[p] == 'f' ? "false" : "null";
        size_t n = strlen(word);
        if (j->len - p < n || memcmp(j->text + p, word, n) != 0) return 0;
        t = du_jpush(j, j->text[p], p);
        j->tok[t].len = n;
        p += n;
        break;
    }
    default: {
        size_t s = p;
        if (j->text[p] == '-') p++;
        if (p < j->len && j->text[p] == '0') p++;
        else if (!du_jdigits(j, &p)) return 0;
        if (p < j->len && j->text[p] == '.') { p++; if (!du_jdigits(j, &p)) return 0; }
        if (p < j->len && (j->text[p] == 'e' || j->text[p] == 'E')) {
            p++;
            if (p < j->len && (j->text[p] == '+' || j->text[p] == '-')) p++;
            if (!du_jdigits(j, &p)) return 0;
        }
        t = du_jpush(j, '0', s);
        j->tok[t].len = p - s;
        break;
    }
    }
    j->tok[t].next = (uint32_t)j->n;
    *i = p;
    return 1;
}
/* Parses j->text[0, len): one value and nothing after it but whitespace. */
DU_FN int du_json_parse(du_json *j) {
    size_t i = 0;
    if (du_jvalue(j, &i, 0) && du_jws(j, i) == j->len) return 1;
    free(j->tok);
    free(j->text);
    memset(j, 0, sizeof *j);
    return 0;
}
DU_FN int du_json_load(du_json *j, const char *path) {
    memset(j, 0, sizeof *j);
    if (!(j->text = tf_read_opt(path, &j->len))) return 0;
    return du_json_parse(j);
}
DU_FN int du_json_text(du_json *j, const char *text, size_t len) {
    memset(j, 0, sizeof *j);
    j->text = (uint8_t *)malloc(len + 1);
    assert_non_null(j->text);
    memcpy(j->text, text, len);
    j->text[len] = 0;
    j->len = len;
    return du_json_parse(j);
}
DU_FN void du_json_free(du_json *j) { free(j->tok); free(j->text); memset(j, 0, sizeof *j); }
DU_FN uint32_t du_jnext(const du_json *j, uint32_t t) { return j->tok[t].next; }
/* A string token copied into buf (NUL-terminated, escapes decoded, \u to UTF-8); 0 when t is not
   a string or buf is too small. */
DU_FN int du_jstr(const du_json *j, uint32_t t, char *buf, size_t cap) {
    const uint8_t *s, *e;
    size_t n = 0;
    if (!t || j->tok[t].type != '"') return 0;
    s = j->text + j->tok[t].at;
    e = s + j->tok[t].len;
    while (s < e) {
        uint32_t c = *s++;
        uint8_t u[4];
        size_t k, w = 1;
        int esc = c == '\\';
        if (esc) {
            c = *s++;
            switch (c) {
            case 'b': c = '\b'; break;
            case 'f': c = '\f'; break;
            case 'n': c = '\n'; break;
            case 'r': c = '\r'; break;
            case 't': c = '\t'; break;
            case 'u': {
                char hex[5] = {0};
                memcpy(hex, s, 4);
                c = (uint32_t)strtoul(hex, NULL, 16);
                s += 4;
                if (c >= 0xD800 && c < 0xDC00 && e - s >= 6 && s[0] == '\\' && s[1] == 'u') {
                    uint32_t lo;
                    memcpy(hex, s + 2, 4);
                    lo = (uint32_t)strtoul(hex, NULL, 16);
                    if (lo >= 0xDC00 && lo < 0xE000) { c = 0x10000 + ((c - 0xD800) << 10) + (lo - 0xDC00); s += 6; }
                }
                break;
            }
            default: break;  /* " \ / stand for themselves */
            }
        }
        u[0] = (uint8_t)c;  /* a byte of the text as it is, or an escape's code point in UTF-8 */
        if (!esc || c < 0x80) {}
        else if (c < 0x800) { u[0] = (uint8_t)(0xC0 | c >> 6); u[1] = (uint8_t)(0x80 | (c & 63)); w = 2; }
        else if (c < 0x10000) {
            u[0] = (uint8_t)(0xE0 | c >> 12); u[1] = (uint8_t)(0x80 | (c >> 6 & 63)); u[2] = (uint8_t)(0x80 | (c & 63)); w = 3;
        } else {
            u[0] = (uint8_t)(0xF0 | c >> 18); u[1] = (uint8_t)(0x80 | (c >> 12 & 63));
            u[2] = (uint8_t)(0x80 | (c >> 6 & 63)); u[3] = (uint8_t)(0x80 | (c & 63)); w = 4;
        }
        if (n + w >= cap) return 0;
        for (k = 0; k < w; k++) buf[n++] = (char)u[k];
    }
    buf[n] = 0;
    return 1;
}
/* The value of key in object obj (0 when obj is not an object or key is absent; the last one wins). */
DU_FN uint32_t du_jget(const du_json *j, uint32_t obj, const char *key) {
    uint32_t k, i, found = 0;
    char name[4096];
    if (obj >= j->n || j->tok[obj].type != '{') return 0;
    for (k = obj + 1, i = 0; i < j->tok[obj].count; i++) {
        uint32_t v = j->tok[k].next;
        if (du_jstr(j, k, name, sizeof name) && strcmp(name, key) == 0) found = v;
        k = j->tok[v].next;
    }
    return found;
}
DU_FN int du_jtype(const du_json *j, uint32_t t) { return t < j->n ? j->tok[t].type : 0; }
/* Decimal digits only (no sign, fraction or exponent), no overflow. */
DU_FN int du_jdec(const uint8_t *s, size_t n, uint64_t *v) {
    uint64_t x = 0;
    size_t i;
    if (n == 0) return 0;
    for (i = 0; i < n; i++) {
        unsigned d = (unsigned)(s[i] - '0');
        if (d > 9 || x > (UINT64_MAX - d) / 10) return 0;
        x = x * 10 + d;
    }
    *v = x;
    return 1;
}
/* A number token as uint64 (du_jdec's rules). */
DU_FN int du_ju64(const du_json *j, uint32_t t, uint64_t *v) {
    return t && j->tok[t].type == '0' && du_jdec(j->text + j->tok[t].at, j->tok[t].len, v);
}
/* A number token as int64 (an optional minus, then digits). */
DU_FN int du_ji64(const du_json *j, uint32_t t, int64_t *v) {
    uint64_t u;
    int neg;
    if (!t || j->tok[t].type != '0') return 0;
    neg = j->text[j->tok[t].at] == '-';
    if (!du_jdec(j->text + j->tok[t].at + (size_t)neg, j->tok[t].len - (size_t)neg, &u)) return 0;
    if (u > (uint64_t)INT64_MAX + (uint64_t)neg) return 0;
    *v = neg ? -(int64_t)(u - 1) - 1 : (int64_t)u;
    return 1;
}
DU_FN uint32_t du_jfirst(const du_json *j, uint32_t container) { (void)j; return container + 1; }
DU_FN uint32_t du_jcount(const du_json *j, uint32_t t) { return t ? j->tok[t].count : 0; }

/* ---- the structural check of a dataset folder ----
   The manifest: format_version and safetensors_version "1.0"; shards sorted by path with unique
   names of our pattern; each file exists with exactly `bytes` bytes and passes strict validation
   of the whole file; total_samples and total_bytes are the sums; schema is an object of
   {dtype, shape}. The folder: no hidden temporaries, the part-* files are exactly the manifest's,
   the index files are there exactly when the manifest lists them. The index: the JSON index's
   total_size is the sum of its tensors' data bytes, weight_map and tensors have the same keys,
   each entry agrees with the shard's header (file, dtype, shape, data_offsets); in KV mode every
   tensor name of every shard is indexed once, in batch mode every tensor of every shard is, under
   "<shard>/<name>"; the CSV (header tensor_key,file_name,shape,dtype; CRLF) holds the same
   entries in the same order. */
typedef struct du_shard_info { char name[128]; uint64_t samples, bytes; } du_shard_info;
typedef struct du_ds {
    int kv, index, dup_last_win;
    uint64_t batch_size, total_samples, total_bytes, total_size, tensors;
    char sep[64];
    du_shard_info *shards;
    size_t nshards;
    du_json man;        /* the manifest, parsed */
    du_json idx;        /* the JSON index when present */
} du_ds;
DU_FN void du_ds_free(du_ds *d) {
    free(d->shards);
    du_json_free(&d->man);
    du_json_free(&d->idx);
    memset(d, 0, sizeof *d);
}

/* vsnprintf: messages may be cut, which is fine for a diagnosis */
DU_FN void du_why(char *why, size_t cap, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, cap, fmt, ap);
    va_end(ap);
}
#define DU_BAD(...) do { du_why(why, why_cap, __VA_ARGS__); goto bad; } while (0)

/* One CSV record (RFC 4180) from p; fields into f[0..3]; returns the position after its CRLF,
   or NULL when malformed. */
DU_FN const char *du_csv_record(const char *p, const char *end, char f[4][512], int *nf) {
    int k = 0;
    *nf = 0;
    for (;;) {
        size_t n = 0;
        if (k >= 4) return NULL;
        if (p < end && *p == '"') {
            p++;
            for (;;) {
                if (p >= end) return NULL;
                if (*p == '"') { if (p + 1 < end && p[1] == '"') { if (n < 511) f[k][n++] = '"'; p += 2; continue; } p++; break; }
                if (n < 511) f[k][n++] = *p;
                p++;
            }
        } else {
            while (p < end && *p != ',' && *p != '\r' && *p != '\n' && *p != '"') { if (n < 511) f[k][n++] = *p; p++; }
        }
        f[k][n] = 0;
        k++;
        if (p < end && *p == ',') { p++; continue; }
        if (p + 1 < end + 1 && p + 2 <= end && p[0] == '\r' && p[1] == '\n') { *nf = k; return p + 2; }
        return NULL;
    }
}
DU_FN void du_shape_text(char *buf, size_t cap, const uint64_t *shape, uint32_t rank) {
    size_t n = 0;
    uint32_t i;
    n += (size_t)snprintf(buf + n, cap - n, "[");
    for (i = 0; i < rank && n < cap; i++) n += (size_t)snprintf(buf + n, cap - n, "%s%llu", i ? "," : "", (unsigned long long)shape[i]);
    if (n < cap) snprintf(buf + n, cap - n, "]");
}
typedef struct du_ixent { char key[512]; char file[128]; } du_ixent;
DU_FN int du_ixent_cmp(const void *a, const void *b) { return strcmp(((const du_ixent *)a)->key, ((const du_ixent *)b)->key); }

/* The index of name among the sorted manifest shards, or n. */
DU_FN size_t du_shard_index(const du_shard_info *sh, size_t n, const char *name) {
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int cmp = strcmp(sh[mid].name, name);
        if (cmp == 0) return mid;
        if (cmp < 0) lo = mid + 1; else hi = mid;
    }
    return n;
}
/* Returns 1 when the folder is a complete, consistent dataset; else 0 with the reason in why.
   Fills *out (free with du_ds_free) on success. after_crash: the folder may also hold
   temporaries and shards the manifest does not name (a killed writer's leftovers); everything the
   manifest names, the index included, must still be complete and consistent. */
DU_FN int du_check_dataset_ex(const char *dir, du_ds *out, char *why, size_t why_cap, int after_crash) {
    du_ds d;
    char p[4096], buf[512];
    uint32_t t, sh, s, i;
    uint64_t sum_samples = 0, sum_bytes = 0;
    tf_snap snap;
    sts_file **files = NULL;
    du_ixent *ents = NULL, *wmap = NULL;
    size_t nents = 0, k;
    uint8_t *csv = NULL;
    size_t csv_n = 0;
    memset(&d, 0, sizeof d);
    memset(&snap, 0, sizeof snap);
    why[0] = 0;
    tf_join(p, sizeof p, dir, "dataset_manifest.json");
    if (!tf_exists(p)) DU_BAD("no dataset_manifest.json");
    if (!du_json_load(&d.man, p)) DU_BAD("dataset_manifest.json is not valid JSON");
    if (du_jtype(&d.man, 0) != '{') DU_BAD("the manifest is not an object");
    t = du_jget(&d.man, 0, "format_version");
    if (!du_jstr(&d.man, t, buf, sizeof buf) || strcmp(buf, "1.0") != 0) DU_BAD("format_version is not \"1.0\"");
    t = du_jget(&d.man, 0, "safetensors_version");
    if (!du_jstr(&d.man, t, buf, sizeof buf) || strcmp(buf, "1.0") != 0) DU_BAD("safetensors_version is not \"1.0\"");
    if (!du_ju64(&d.man, du_jget(&d.man, 0, "total_samples"), &d.total_samples)) DU_BAD("total_samples missing");
    if (!du_ju64(&d.man, du_jget(&d.man, 0, "total_bytes"), &d.total_bytes)) DU_BAD("total_bytes missing");
    t = du_jget(&d.man, 0, "mode");
    if (!du_jstr(&d.man, t, buf, sizeof buf) || (strcmp(buf, "kv") != 0 && strcmp(buf, "batch") != 0)) DU_BAD("mode missing");
    d.kv = strcmp(buf, "kv") == 0;
    if (!du_jstr(&d.man, du_jget(&d.man, 0, "kv_separator"), d.sep, sizeof d.sep)) DU_BAD("kv_separator missing");
    if (!du_jstr(&d.man, du_jget(&d.man, 0, "duplicates"), buf, sizeof buf)) DU_BAD("duplicates missing");
    d.dup_last_win = strcmp(buf, "lastWin") == 0;
    if (!du_ju64(&d.man, du_jget(&d.man, 0, "batch_size"), &d.batch_size)) DU_BAD("batch_size missing");
    if ((d.batch_size == 0) != d.kv) DU_BAD("batch_size %llu disagrees with mode", (unsigned long long)d.batch_size);
    /* The manifest promises no index: the index stands on its own, tied to its manifest by
       dataset_id, and whenever it is present it must describe the manifest's shards (an overwrite
       moves the old index aside before the new manifest arrives, and adds the new one after). */
    if (du_jget(&d.man, 0, "index")) DU_BAD("the manifest has an index field; the index is not promised by the manifest");
    {
        char pj[4096];
        tf_join(pj, sizeof pj, dir, "_tensor_index.json");
        d.index = tf_exists(pj);
    }
    sh = du_jget(&d.man, 0, "schema");
    if (!sh || du_jtype(&d.man, sh) != '{') DU_BAD("schema is not an object");
    for (i = 0, s = sh + 1; i < du_jcount(&d.man, sh); i++, s = du_jnext(&d.man, s + 1)) {
        uint32_t v = s + 1, dt = du_jget(&d.man, v, "dtype"), sp = du_jget(&d.man, v, "shape"), e, q;
        sts_dtype dd;
        if (!du_jstr(&d.man, dt, buf, sizeof buf) || !sts_dtype_from_name(buf, strlen(buf), &dd)) DU_BAD("a schema column has no valid dtype");
        if (!sp || du_jtype(&d.man, sp) != '[') DU_BAD("a schema column has no shape");
        for (q = 0, e = sp + 1; q < du_jcount(&d.man, sp); q++, e = du_jnext(&d.man, e)) {
            int64_t x;
            if (!du_ji64(&d.man, e, &x) || x < -1) DU_BAD("a schema dim is not an integer >= -1");
            if (!d.kv && x < 0) DU_BAD("a batch-mode schema dim is -1");
        }
        if (!d.kv && du_jcount(&d.man, sp) < 1) DU_BAD("a batch-mode schema shape lacks the batch dimension");
    }
    sh = du_jget(&d.man, 0, "shards");
    if (!sh || du_jtype(&d.man, sh) != '[') DU_BAD("shards is not an array");
    d.nshards = du_jcount(&d.man, sh);
    d.shards = (du_shard_info *)calloc(d.nshards ? d.nshards : 1, sizeof *d.shards);
    files = (sts_file **)calloc(d.nshards ? d.nshards : 1, sizeof *files);
    assert_true(d.shards && files);
    for (i = 0, s = sh + 1; i < d.nshards; i++, s = du_jnext(&d.man, s)) {
        du_shard_info *x = &d.shards[i];
        sts_options o;
        sts_error e;
        if (du_jtype(&d.man, s) != '{') DU_BAD("shard %u is not an object", i);
        if (!du_jstr(&d.man, du_jget(&d.man, s, "shard_path"), x->name, sizeof x->name)) DU_BAD("shard %u has no shard_path", i);
        if (!du_shard_name(x->name, NULL, NULL, NULL)) DU_BAD("shard_path %s does not follow the naming pattern", x->name);
        if (i && strcmp(d.shards[i - 1].name, x->name) >= 0) DU_BAD("shards are not sorted by path: %s then %s", d.shards[i - 1].name, x->name);
        if (!du_ju64(&d.man, du_jget(&d.man, s, "samples_count"), &x->samples)) DU_BAD("shard %s has no samples_count", x->name);
        if (!du_ju64(&d.man, du_jget(&d.man, s, "bytes"), &x->bytes)) DU_BAD("shard %s has no bytes", x->name);
        tf_join(p, sizeof p, dir, x->name);
        if (tf_file_size(p) < 0) DU_BAD("shard %s does not exist", x->name);
        if ((uint64_t)tf_file_size(p) != x->bytes) DU_BAD("shard %s has %lld bytes, the manifest says %llu", x->name, (long long)tf_file_size(p), (unsigned long long)x->bytes);
        memset(&o, 0, sizeof o);
        o.strict = 1;
        if (sts_open(p, &o, &files[i], &e) != STS_OK) DU_BAD("shard %s fails strict validation: %s", x->name, e.message);
        sum_samples += x->samples;
        sum_bytes += x->bytes;
    }
    if (sum_samples != d.total_samples) DU_BAD("total_samples %llu is not the sum %llu", (unsigned long long)d.total_samples, (unsigned long long)sum_samples);
    if (sum_bytes != d.total_bytes) DU_BAD("total_bytes %llu is not the sum %llu", (unsigned long long)d.total_bytes, (unsigned long long)sum_bytes);
    /* the folder */
    snap = tf_snapshot(dir, 0);
    if (!after_crash) {
        size_t nparts = 0;
        for (k = 0; k < snap.n; k++) {
            const char *n = snap.e[k].name;
            if (strcmp(n, ".sts_job.lock") == 0) continue;  /* a job's lock: held while a job writes */
            if (n[0] == '.') DU_BAD("a hidden file %s is left in the dataset folder", n);
            if (strncmp(n, "part-", 5) == 0) {
                size_t lo = 0, hi = d.nshards;  /* the manifest's shards are sorted (checked above) */
                int found = 0;
                while (lo < hi && !found) {
                    size_t mid = (lo + hi) / 2;
                    int cmp = strcmp(d.shards[mid].name, n);
                    if (cmp == 0) found = 1;
                    else if (cmp < 0) lo = mid + 1;
                    else hi = mid;
                }
                if (!found) DU_BAD("%s is in the folder but not in the manifest", n);
                nparts++;
            } else if (strcmp(n, "dataset_manifest.json") == 0) {
            } else if (strcmp(n, "_tensor_index.csv") == 0 || strcmp(n, "_tensor_index.json") == 0) {
                if (!d.index) DU_BAD("%s is in the folder without _tensor_index.json", n);
            } else DU_BAD("unexpected entry %s in the dataset folder", n);
        }
        (void)nparts;
    }
    /* the index */
    if (d.index) {
        uint32_t wm, ts, meta;
        size_t ntensors = 0;
        uint64_t total = 0;
        tf_join(p, sizeof p, dir, "_tensor_index.json");
        if (!du_json_load(&d.idx, p)) DU_BAD("_tensor_index.json is missing or not JSON");
        meta = du_jget(&d.idx, 0, "metadata");
        if (!meta || du_jtype(&d.idx, meta) != '{') DU_BAD("index metadata is not an object");
        if (!du_ju64(&d.idx, du_jget(&d.idx, meta, "total_size"), &d.total_size)) DU_BAD("index metadata.total_size missing");
        wm = du_jget(&d.idx, 0, "weight_map");
        ts = du_jget(&d.idx, 0, "tensors");
        if (!wm || du_jtype(&d.idx, wm) != '{' || !ts || du_jtype(&d.idx, ts) != '{') DU_BAD("index weight_map / tensors missing");
        if (du_jcount(&d.idx, wm) != du_jcount(&d.idx, ts)) DU_BAD("weight_map and tensors differ in size");
        for (k = 0; k < d.nshards; k++) ntensors += sts_count(files[k]);
        nents = du_jcount(&d.idx, ts);
        ents = (du_ixent *)calloc(nents ? nents : 1, sizeof *ents);
        wmap = (du_ixent *)calloc(nents ? nents : 1, sizeof *wmap);
        assert_true(ents && wmap);
        for (i = 0, s = wm + 1; i < du_jcount(&d.idx, wm); i++, s = du_jnext(&d.idx, s + 1))
            if (!du_jstr(&d.idx, s, wmap[i].key, sizeof wmap[i].key) || !du_jstr(&d.idx, s + 1, wmap[i].file, sizeof wmap[i].file))
                DU_BAD("a weight_map entry is not a string pair");
        qsort(wmap, nents, sizeof *wmap, du_ixent_cmp);
        for (i = 0, s = ts + 1; i < du_jcount(&d.idx, ts); i++, s = du_jnext(&d.idx, s + 1)) {
            uint32_t v = s + 1, wv, q, e;
            char file[128], wfile[128], dt[32], tname[512];
            const char *name = ents[i].key;
            size_t a;
            const sts_tensor *x = NULL;
            uint64_t off[2];
            if (!du_jstr(&d.idx, s, ents[i].key, sizeof ents[i].key)) DU_BAD("an index key is too long");
            if (!du_jstr(&d.idx, du_jget(&d.idx, v, "file"), file, sizeof file)) DU_BAD("index entry %s has no file", name);
            strcpy(ents[i].file, file);
            {
                du_ixent *hit = (du_ixent *)bsearch(&ents[i], wmap, nents, sizeof *wmap, du_ixent_cmp);
                if (!hit || strcmp(hit->file, file) != 0) DU_BAD("weight_map[%s] disagrees with tensors[%s].file", name, name);
                (void)wv; (void)wfile;
            }
            a = du_shard_index(d.shards, d.nshards, file);
            if (a == d.nshards) DU_BAD("index entry %s names %s, which is not a manifest shard", name, file);
            if (d.kv) strcpy(tname, name);
            else {
                size_t fl = strlen(file);
                if (strncmp(name, file, fl) != 0 || name[fl] != '/') DU_BAD("batch-mode index key %s is not <shard>/<column>", name);
                strcpy(tname, name + fl + 1);
            }
            x = sts_find(files[a], tname, strlen(tname));
            if (!x) DU_BAD("index entry %s: %s holds no tensor %s", name, file, tname);
            if (!du_jstr(&d.idx, du_jget(&d.idx, v, "dtype"), dt, sizeof dt) || strcmp(dt, sts_dtype_name(x->dtype)) != 0) DU_BAD("index entry %s: dtype differs from the file's", name);
            q = du_jget(&d.idx, v, "shape");
            if (!q || du_jtype(&d.idx, q) != '[' || du_jcount(&d.idx, q) != x->rank) DU_BAD("index entry %s: rank differs", name);
            for (a = 0, e = q + 1; a < x->rank; a++, e = du_jnext(&d.idx, e)) {
                uint64_t dim;
                if (!du_ju64(&d.idx, e, &dim) || dim != x->shape[a]) DU_BAD("index entry %s: shape differs", name);
            }
            q = du_jget(&d.idx, v, "data_offsets");
            if (!q || du_jcount(&d.idx, q) != 2 || !du_ju64(&d.idx, q + 1, &off[0]) || !du_ju64(&d.idx, q + 2, &off[1]) || off[0] != x->begin || off[1] != x->end)
                DU_BAD("index entry %s: data_offsets differ from the file's", name);
            total += x->end - x->begin;
        }
        if (total != d.total_size) DU_BAD("total_size %llu is not the sum of the data bytes %llu", (unsigned long long)d.total_size, (unsigned long long)total);
        d.tensors = nents;
        /* coverage: batch = every tensor of every shard; kv = every distinct name once */
        {
            du_ixent *sorted = (du_ixent *)malloc((nents ? nents : 1) * sizeof *sorted);
            assert_non_null(sorted);
            memcpy(sorted, ents, nents * sizeof *ents);
            qsort(sorted, nents, sizeof *sorted, du_ixent_cmp);
            for (k = 1; k < nents; k++)
                if (strcmp(sorted[k - 1].key, sorted[k].key) == 0) {
                    du_why(why, why_cap, "index key %s appears twice", sorted[k].key);  /* before the free: the key is in sorted */
                    free(sorted);
                    goto bad;
                }
            for (k = 0; k < d.nshards; k++) {
                size_t q;
                for (q = 0; q < sts_count(files[k]); q++) {
                    const sts_tensor *x = sts_at(files[k], q);
                    du_ixent key, *hit;
                    if (x->name_len >= 300) continue;
                    if (d.kv) { memcpy(key.key, x->name, x->name_len); key.key[x->name_len] = 0; }
                    else snprintf(key.key, sizeof key.key, "%s/%.*s", d.shards[k].name, (int)x->name_len, x->name);
                    hit = (du_ixent *)bsearch(&key, sorted, nents, sizeof *sorted, du_ixent_cmp);
                    if (!hit) { free(sorted); DU_BAD("tensor %s of %s is not in the index", key.key, d.shards[k].name); }
                }
            }
            free(sorted);
            if (!d.kv && nents != ntensors) DU_BAD("the batch index has %zu entries, the shards %zu tensors", nents, ntensors);
        }
        /* CSV */
        tf_join(p, sizeof p, dir, "_tensor_index.csv");
        csv = tf_read_opt(p, &csv_n);
        /* after a crash between the two index renames one file may be alone: it still belongs to
           the visible manifest (checked above for the JSON one) */
        if (!csv && !after_crash) DU_BAD("_tensor_index.csv missing");
        if (csv) {
            const char *c = (const char *)csv, *end = c + csv_n;
            char f[4][512];
            int nf;
            if (!(c = du_csv_record(c, end, f, &nf)) || nf != 4 || strcmp(f[0], "tensor_key") != 0 || strcmp(f[1], "file_name") != 0 ||
                strcmp(f[2], "shape") != 0 || strcmp(f[3], "dtype") != 0) DU_BAD("the CSV header is not tensor_key,file_name,shape,dtype + CRLF");
            for (k = 0; k < nents; k++) {
                char want_key[512], shape_txt[512];
                uint32_t v;
                du_ixent *en = &ents[k];
                sts_file *sf = NULL;
                const sts_tensor *x;
                size_t a;
                if (!(c = du_csv_record(c, end, f, &nf)) || nf != 4) DU_BAD("CSV record %zu is malformed or missing", k + 1);
                if (d.kv) strcpy(want_key, en->key);
                else strcpy(want_key, en->key + strlen(en->file) + 1);
                if (strcmp(f[0], want_key) != 0 || strcmp(f[1], en->file) != 0) DU_BAD("CSV record %zu (%s, %s) differs from the JSON index's (%s, %s)", k + 1, f[0], f[1], want_key, en->file);
                a = du_shard_index(d.shards, d.nshards, en->file);
                if (a < d.nshards) sf = files[a];
                x = sts_find(sf, want_key, strlen(want_key));
                if (!x) DU_BAD("CSV record %zu names a missing tensor", k + 1);
                du_shape_text(shape_txt, sizeof shape_txt, x->shape, x->rank);
                if (strcmp(f[2], shape_txt) != 0 || strcmp(f[3], sts_dtype_name(x->dtype)) != 0) DU_BAD("CSV record %zu: shape %s dtype %s, the file has %s %s", k + 1, f[2], f[3], shape_txt, sts_dtype_name(x->dtype));
                (void)v;
            }
            if (c != end) DU_BAD("the CSV has more records than the JSON index");
        }
    } else if (!after_crash) {
        tf_join(p, sizeof p, dir, "_tensor_index.json");
        if (tf_exists(p)) DU_BAD("_tensor_index.json exists, but the manifest lists no index");
        tf_join(p, sizeof p, dir, "_tensor_index.csv");
        if (tf_exists(p)) DU_BAD("_tensor_index.csv exists, but the manifest lists no index");
    }
    for (k = 0; k < d.nshards; k++) sts_close(files[k]);
    free(files);
    free(ents);
    free(wmap);
    free(csv);
    tf_snap_free(&snap);
    if (out) *out = d;
    else du_ds_free(&d);
    return 1;
bad:
    for (k = 0; files && k < d.nshards; k++) sts_close(files[k]);
    free(files);
    free(ents);
    free(wmap);
    free(csv);
    tf_snap_free(&snap);
    du_ds_free(&d);
    return 0;
}
#undef DU_BAD
DU_FN int du_check_dataset_msg(const char *dir, du_ds *out, char *why, size_t why_cap) { return du_check_dataset_ex(dir, out, why, why_cap, 0); }
DU_FN void du_check_dataset(const char *label, const char *dir, du_ds *out) {
    char why[1024];
    if (!du_check_dataset_msg(dir, out, why, sizeof why)) fail_msg("%s: dataset %s: %s", label, dir, why);
}
/* The manifest's schema entry of a column: dtype name and shape (returns the rank, -1 if absent). */
DU_FN int du_schema_col(const du_ds *d, const char *col, char *dtype, size_t dcap, int64_t *dims, int max) {
    uint32_t sh = du_jget(&d->man, 0, "schema"), v, sp, e;
    int q;
    if (!sh || !(v = du_jget(&d->man, sh, col))) return -1;
    if (!du_jstr(&d->man, du_jget(&d->man, v, "dtype"), dtype, dcap)) return -1;
    sp = du_jget(&d->man, v, "shape");
    for (q = 0, e = sp + 1; q < (int)du_jcount(&d->man, sp) && q < max; q++, e = du_jnext(&d->man, e))
        if (!du_ji64(&d->man, e, &dims[q])) return -1;
    return (int)du_jcount(&d->man, sp);
}
/* The file the JSON index maps key to (copied into file), or 0. */
DU_FN int du_index_file(const du_ds *d, const char *key, char *file, size_t cap) {
    uint32_t wm = du_jget(&d->idx, 0, "weight_map");
    return wm && du_jstr(&d->idx, du_jget(&d->idx, wm, key), file, cap);
}

/* ---- commit messages ---- */
typedef struct du_msgs { char *m[64]; size_t len[64]; size_t n; } du_msgs;
DU_FN void du_msgs_free(du_msgs *m) {
    size_t i;
    for (i = 0; i < m->n; i++) sts_free(NULL, m->m[i], m->len[i] + 1);
    m->n = 0;
}
DU_FN sts_result du_commit_all(const char *dir, const sts_write_config *c, const du_msgs *m, const sts_options *o, sts_dataset_summary *s, sts_error *e) {
    return sts_dataset_commit(dir, c, (const char *const *)m->m, m->len, m->n, o, s, e);
}

#endif /* STS_TESTS_DATASET_WRITE_UTIL_H */
