/* Conformance runner: every case of tests/conformance/shared/expected.tsv and tests/conformance/own.tsv
   through every read path, plus the strict verdicts and the writer's golden files.

   Run from the repository root (or pass the root as argv[1]):
       ./build/unit/test_conformance [ROOT]

   For each case and each read path (sts_parse from memory, sts_open with mmap, sts_open with no_mmap,
   sts_open header_only, sts_open_source over pread, sts_parse_header) it checks the verdict, the
   reference variant (sts_result_variant), the tensor count, and, for every rejection, that the
   error is well formed: code != OK, sts_rule_result(rule) == code, a non-empty message starting with
   "<rule id>:" without TAB or newline, and the out-parameter left untouched. The same paths run
   again with opts.strict = 1 against the strict column (shared_strict.tsv for the shared cases).
   For rewrite_identical = yes the parsed file is written back with sts_write_memory and must come
   out byte for byte (sts_write_size must agree); when strict also rejects such a file (a NUL in a
   name), the always-strict writer must refuse it instead.

   Prints a summary per read path and every disagreement; exits 1 on any. STS_TEST_LEVEL changes
   nothing: the run takes well under a second. */
#ifndef STS_TEST_LINKED  /* the Makefile links tests/sts_impl.c's object instead */
#define STS_IMPLEMENTATION
#endif
#include "../safetensors_spark.h"
#define TU_STANDALONE   /* plain C: no cmocka */
#include "test_util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- small utilities ------------------------------------------------------------------------ */
static void *xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) { fprintf(stderr, "test_conformance: out of memory\n"); exit(2); }
    return p;
}
static char *xstrdup(const char *s) {
    size_t n = strlen(s) + 1;
    char *p = (char *)xmalloc(n);
    memcpy(p, s, n);
    return p;
}
static int read_whole(const char *path, unsigned char **out, size_t *size) {
    FILE *fp = fopen(path, "rb");
    size_t cap = 4096, len = 0, got;
    unsigned char *buf;
    if (!fp) return -1;
    buf = (unsigned char *)xmalloc(cap);
    while ((got = fread(buf + len, 1, cap - len, fp)) > 0) {
        len += got;
        if (len == cap) {
            unsigned char *nb = (unsigned char *)realloc(buf, cap * 2);
            if (!nb) { free(buf); fclose(fp); return -1; }
            buf = nb;
            cap *= 2;
        }
    }
    if (ferror(fp)) { free(buf); fclose(fp); return -1; }
    fclose(fp);
    *out = buf;
    *size = len;
    return 0;
}
static uint64_t le64(const unsigned char *p) {
    uint64_t v = 0;
    int i;
    for (i = 7; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}

/* ---- disagreements ---------------------------------------------------------------------------- */
static char **g_fail;
static size_t g_nfail, g_capfail;
static void failf(const char *fmt, ...) {
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (g_nfail == g_capfail) {
        g_capfail = g_capfail ? 2 * g_capfail : 64;
        g_fail = (char **)realloc(g_fail, g_capfail * sizeof *g_fail);
        if (!g_fail) { fprintf(stderr, "test_conformance: out of memory\n"); exit(2); }
    }
    g_fail[g_nfail++] = xstrdup(buf);
}

/* ---- cases ------------------------------------------------------------------------------------------ */
typedef struct tcase {
    char *set;       /* "shared" or "own" */
    char *file;      /* file name */
    char *path;      /* path from the root */
    int ok;          /* default verdict */
    char *variant;   /* "-" or the reference variant */
    long n;          /* tensor count or -1 */
    int rewrite;     /* rewrite_identical == yes */
    int strict_ok;   /* verdict with opts.strict; -1 when unknown */
} tcase;

static tcase *g_cases;
static size_t g_ncases, g_capcases;

/* Splits line in place at TABs; returns the number of fields (at most max). */
static size_t split_tabs(char *line, char **fields, size_t max) {
    size_t n = 0;
    char *p = line;
    while (n < max) {
        char *t = strchr(p, '\t');
        fields[n++] = p;
        if (!t) break;
        *t = '\0';
        p = t + 1;
    }
    return n;
}
static int col(char **head, size_t nhead, const char *name) {
    size_t i;
    for (i = 0; i < nhead; i++)
        if (strcmp(head[i], name) == 0) return (int)i;
    return -1;
}

/* Reads a TSV into lines; returns the number of lines, with *text to free. */
static size_t tsv_lines(const char *path, char **text, char ***lines) {
    unsigned char *buf;
    size_t size, i, n = 0, cap = 256;
    char **ls;
    if (read_whole(path, &buf, &size) != 0) {
        fprintf(stderr, "test_conformance: cannot read %s: %s (run from the repository root)\n", path, strerror(errno));
        exit(2);
    }
    buf = (unsigned char *)realloc(buf, size + 1);
    if (!buf) exit(2);
    buf[size] = '\0';
    ls = (char **)xmalloc(cap * sizeof *ls);
    for (i = 0; i < size;) {
        char *start = (char *)buf + i;
        char *nl = strchr(start, '\n');
        if (nl) *nl = '\0';
        if (nl && nl > start && nl[-1] == '\r') nl[-1] = '\0';
        if (*start) {
            if (n == cap) { cap *= 2; ls = (char **)realloc(ls, cap * sizeof *ls); if (!ls) exit(2); }
            ls[n++] = start;
        }
        if (!nl) break;
        i = (size_t)(nl - (char *)buf) + 1;
    }
    *text = (char *)buf;
    *lines = ls;
    return n;
}

static void add_case(const char *set, const char *dir, const char *file, const char *verdict, const char *variant,
                     const char *n, const char *rewrite, int strict_ok) {
    tcase *c;
    size_t plen = strlen(dir) + strlen(file) + 2;
    if (g_ncases == g_capcases) {
        g_capcases = g_capcases ? 2 * g_capcases : 256;
        g_cases = (tcase *)realloc(g_cases, g_capcases * sizeof *g_cases);
        if (!g_cases) exit(2);
    }
    c = &g_cases[g_ncases++];
    c->set = xstrdup(set);
    c->file = xstrdup(file);
    c->path = (char *)xmalloc(plen);
    snprintf(c->path, plen, "%s/%s", dir, file);
    if (strcmp(verdict, "OK") != 0 && strcmp(verdict, "ERR") != 0) failf("%s: bad verdict column '%s'", file, verdict);
    c->ok = strcmp(verdict, "OK") == 0;
    c->variant = xstrdup(variant);
    c->n = strcmp(n, "-") == 0 ? -1 : strtol(n, NULL, 10);
    c->rewrite = strcmp(rewrite, "yes") == 0;
    c->strict_ok = strict_ok;
}

static void load_table(const char *root, const char *set, const char *tsv, const char *dir, const char *strict_tsv) {
    char path[4096], dpath[4096];
    char *text, **lines, *stext = NULL, **slines = NULL;
    char *head[16], *f[16];
    size_t nl, nsl = 0, nh, i, j;
    int cf, cv, cvar, cn, crw, cst;
    snprintf(path, sizeof path, "%s/%s", root, tsv);
    snprintf(dpath, sizeof dpath, "%s/%s", root, dir);
    nl = tsv_lines(path, &text, &lines);
    if (nl == 0) { fprintf(stderr, "test_conformance: %s is empty\n", path); exit(2); }
    nh = split_tabs(lines[0], head, 16);
    cf = col(head, nh, "file");
    cv = col(head, nh, "verdict");
    cvar = col(head, nh, "variant");
    cn = col(head, nh, "n_tensors");
    crw = col(head, nh, "rewrite_identical");
    cst = col(head, nh, "strict");
    if (cf < 0 || cv < 0 || cvar < 0 || cn < 0 || crw < 0) {
        fprintf(stderr, "test_conformance: %s lacks a required column\n", path);
        exit(2);
    }
    if (strict_tsv) {
        snprintf(path, sizeof path, "%s/%s", root, strict_tsv);
        nsl = tsv_lines(path, &stext, &slines);
    }
    for (i = 1; i < nl; i++) {
        size_t nf = split_tabs(lines[i], f, 16);
        int strict_ok = -1;
        if ((size_t)cf >= nf || (size_t)cv >= nf || (size_t)cvar >= nf || (size_t)cn >= nf || (size_t)crw >= nf) {
            failf("%s line %zu: too few columns", tsv, i + 1);
            continue;
        }
        if (cst >= 0 && (size_t)cst < nf) strict_ok = strcmp(f[cst], "OK") == 0;
        for (j = 1; j < nsl && strict_ok < 0; j++) {
            size_t flen = strlen(f[cf]);
            if (strncmp(slines[j], f[cf], flen) == 0 && slines[j][flen] == '\t')
                strict_ok = strncmp(slines[j] + flen + 1, "OK\t", 3) == 0 || strcmp(slines[j] + flen + 1, "OK") == 0;
        }
        if (strict_ok < 0) failf("%s: no strict verdict (own.tsv strict column or shared_strict.tsv)", f[cf]);
        add_case(set, dpath, f[cf], f[cv], f[cvar], f[cn], f[crw], strict_ok);
    }
    free(lines);
    free(text);
    free(slines);
    free(stext);
}

/* ---- read paths ------------------------------------------------------------------------------------- */
enum { P_PARSE, P_MMAP, P_NO_MMAP, P_HEADER_ONLY, P_SOURCE, P_PARSE_HEADER, P_COUNT };
static const char *const g_path_name[P_COUNT] = {
    "sts_parse (memory)", "sts_open (mmap)", "sts_open no_mmap", "sts_open header_only",
    "sts_open_source (pread)", "sts_parse_header"};
static unsigned long g_pass[2][P_COUNT], g_total[2][P_COUNT];
static unsigned long g_rw_pass, g_rw_total;
static char g_sentinel; /* *out is preset to &g_sentinel and must survive a failure untouched */
#define SENTINEL ((sts_file *)(void *)&g_sentinel)

typedef struct pread_src {
    int fd;
    uint64_t size, total, limit;
    int out_of_bounds;
} pread_src;

static sts_result src_read(void *user, uint64_t offset, void *dst, size_t len) {
    pread_src *s = (pread_src *)user;
    size_t done = 0;
    if (offset > s->size || len > s->size - offset) { s->out_of_bounds = 1; return STS_ERR_IO; }
    while (done < len) {
        ssize_t r = pread(s->fd, (char *)dst + done, len - done, (off_t)(offset + done));
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return STS_ERR_IO;
        done += (size_t)r;
    }
    s->total += len;
    return STS_OK;
}

static int is_strict_rule(sts_rule r) {
    return r == STS_RULE_STRICT_LEADING_WS || r == STS_RULE_STRICT_PADDING || r == STS_RULE_STRICT_DUPLICATE ||
           r == STS_RULE_STRICT_POSITIONAL || r == STS_RULE_STRICT_UNKNOWN || r == STS_RULE_STRICT_META_NULL ||
           r == STS_RULE_STRICT_NAME_NUL;
}

/* Checks one outcome against the case; returns 1 when everything agrees. */
static int check(const tcase *c, int path, int strict, sts_result rc, sts_file *f, const sts_error *err,
                 const unsigned char *bytes, size_t size) {
    const char *mode = strict ? " [strict]" : "";
    int want_ok = strict ? c->strict_ok : c->ok;
    int good = 1;
    if (want_ok) {
        size_t i, count;
        if (rc != STS_OK || !f) {
            failf("%s/%s via %s%s: expected OK, got %s: %s", c->set, c->file, g_path_name[path], mode,
                  sts_result_name(rc), err->message);
            return 0;
        }
        count = sts_count(f);
        if (c->n >= 0 && count != (size_t)c->n) {
            failf("%s/%s via %s%s: expected %ld tensors, got %zu", c->set, c->file, g_path_name[path], mode, c->n, count);
            good = 0;
        }
        for (i = 0; i < count; i++) {
            const sts_tensor *t = sts_at(f, i), *prev = i ? sts_at(f, i - 1) : NULL;
            const void *d = sts_data(f, t);
            if (sts_find(f, t->name, t->name_len) != t) {
                failf("%s/%s via %s%s: sts_find does not return tensor %zu", c->set, c->file, g_path_name[path], mode, i);
                good = 0;
            }
            if (prev && (prev->begin > t->begin || (prev->begin == t->begin && prev->end > t->end))) {
                failf("%s/%s via %s%s: sts_at is not in (begin, end) order at %zu", c->set, c->file, g_path_name[path], mode, i);
                good = 0;
            }
            if (path == P_HEADER_ONLY || path == P_SOURCE || path == P_PARSE_HEADER) {
                if (d) {
                    failf("%s/%s via %s%s: sts_data is not NULL on a header-only path", c->set, c->file, g_path_name[path], mode);
                    good = 0;
                }
            } else if (path == P_PARSE && d != (const void *)(bytes + 8 + sts_header_size(f) + t->begin)) {
                failf("%s/%s via %s%s: sts_data of tensor %zu does not point into the caller's bytes", c->set, c->file,
                      g_path_name[path], mode, i);
                good = 0;
            } else if (path != P_PARSE && t->end > t->begin && (!d ||
                       memcmp(d, bytes + 8 + sts_header_size(f) + t->begin, (size_t)(t->end - t->begin)) != 0)) {
                failf("%s/%s via %s%s: the data of tensor %zu differ from the file", c->set, c->file, g_path_name[path], mode, i);
                good = 0;
            }
        }
        if (sts_file_size(f) != size) {
            failf("%s/%s via %s%s: sts_file_size %llu != %zu", c->set, c->file, g_path_name[path], mode,
                  (unsigned long long)sts_file_size(f), size);
            good = 0;
        }
        return good;
    }
    if (rc == STS_OK) {
        failf("%s/%s via %s%s: expected ERR %s, got OK (%zu tensors)", c->set, c->file, g_path_name[path], mode,
              c->ok ? "(strict)" : c->variant, sts_count(f));
        return 0;
    }
    if (f != SENTINEL) {
        failf("%s/%s via %s%s: *out was changed on failure", c->set, c->file, g_path_name[path], mode);
        good = 0;
    }
    {   /* the error is complete: code, a real rule, a message "<rule id>: ..." without TAB or newline */
        char why[512];
        if (tu_err_why(why, sizeof why, rc, err, TU_ANY_CODE, TU_ANY_RULE, (const char *)NULL)) {
            failf("%s/%s via %s%s: %s", c->set, c->file, g_path_name[path], mode, why);
            good = 0;
        }
    }
    if (!strict || !c->ok) {
        const char *v = sts_result_variant(rc);
        /* strict may report an earlier strict rule instead of the default variant: verdict only */
        if (!strict && (!v || strcmp(v, c->variant) != 0)) {
            failf("%s/%s via %s%s: expected %s, got %s (%s): %s", c->set, c->file, g_path_name[path], mode, c->variant,
                  v ? v : "(no variant)", sts_result_name(rc), err->message);
            good = 0;
        }
    } else if (!is_strict_rule(err->rule)) {
        failf("%s/%s via %s%s: rejected only by strict, but the rule is %s, not a strict.* rule", c->set, c->file,
              g_path_name[path], mode, sts_rule_id(err->rule));
        good = 0;
    }
    if ((int)err->rule > (int)STS_RULE_NONE && (int)err->rule < (int)STS_RULE_COUNT && sts_rule_result(err->rule) != err->code) {
        failf("%s/%s via %s%s: err.rule %d (%s) maps to %s, not %s", c->set, c->file, g_path_name[path], mode,
              (int)err->rule, sts_rule_id(err->rule), sts_result_name(sts_rule_result(err->rule)), sts_result_name(err->code));
        good = 0;
    }
    return good;
}

static void run_path(const tcase *c, int path, int strict, const unsigned char *bytes, size_t size) {
    sts_options o;
    sts_error err;
    sts_file *f = SENTINEL;
    sts_result rc = STS_ERR_UNSUPPORTED;
    pread_src ps;
    memset(&o, 0, sizeof o);
    memset(&err, 0, sizeof err);
    o.strict = strict;
    switch (path) {
    case P_PARSE:
        rc = sts_parse(bytes, size, &o, &f, &err);
        {   /* the same verdict without an error struct */
            sts_file *g = NULL;
            sts_result r2 = sts_parse(bytes, size, &o, &g, NULL);
            if (r2 != rc) failf("%s/%s: sts_parse with err=NULL returned %s, with err %s", c->set, c->file,
                                sts_result_name(r2), sts_result_name(rc));
            if (r2 == STS_OK) sts_close(g);
        }
        break;
    case P_MMAP: rc = sts_open(c->path, &o, &f, &err); break;
    case P_NO_MMAP: o.no_mmap = 1; rc = sts_open(c->path, &o, &f, &err); break;
    case P_HEADER_ONLY: o.header_only = 1; rc = sts_open(c->path, &o, &f, &err); break;
    case P_SOURCE: {
        sts_source src;
        uint64_t n = size >= 8 ? le64(bytes) : 0;
        memset(&ps, 0, sizeof ps);
        ps.fd = open(c->path, O_RDONLY);
        if (ps.fd < 0) { failf("%s/%s: cannot open: %s", c->set, c->file, strerror(errno)); return; }
        ps.size = size;
        /* reading a header reads 8 + N bytes and nothing more (DESIGN 7) */
        ps.limit = size < 8 ? size : (n > STS_MAX_HEADER_SIZE || n > size - 8) ? 8 : 8 + n;
        src.read = src_read;
        src.user = &ps;
        src.size = size;
        rc = sts_open_source(&src, &o, &f, &err);
        close(ps.fd);
        if (ps.out_of_bounds) failf("%s/%s via %s: a read past the end of the source", c->set, c->file, g_path_name[path]);
        if (ps.total > ps.limit)
            failf("%s/%s via %s: read %llu bytes, more than the %llu of 8 + N", c->set, c->file, g_path_name[path],
                  (unsigned long long)ps.total, (unsigned long long)ps.limit);
        break;
    }
    case P_PARSE_HEADER: {
        size_t prefix = size;
        if (size >= 8) {
            uint64_t n = le64(bytes);
            if (n <= size - 8) prefix = (size_t)(8 + n);
        }
        rc = sts_parse_header(bytes, prefix, size, &o, &f, &err);
        break;
    }
    }
    g_total[strict][path]++;
    if (check(c, path, strict, rc, f, &err, bytes, size)) g_pass[strict][path]++;
    if (rc == STS_OK && f && f != SENTINEL) sts_close(f);
}

/* Writes the parsed file back; the reference writer's bytes must come out. */
static void run_rewrite(const tcase *c, const unsigned char *bytes, size_t size) {
    sts_file *f = NULL;
    sts_error err;
    sts_tensor_spec *specs;
    sts_kv *meta, dummy;
    size_t i, n, nm, out_size = 0;
    void *out = NULL;
    uint64_t hs = 0, fs = 0;
    sts_result r1, r2;
    int must_refuse = !c->strict_ok; /* the writer is always strict */
    g_rw_total++;
    if (sts_parse(bytes, size, NULL, &f, &err) != STS_OK) {
        failf("%s/%s rewrite: parse failed: %s", c->set, c->file, err.message);
        return;
    }
    n = sts_count(f);
    nm = sts_metadata_count(f);
    specs = (sts_tensor_spec *)xmalloc((n ? n : 1) * sizeof *specs);
    meta = (sts_kv *)xmalloc((nm ? nm : 1) * sizeof *meta);
    for (i = 0; i < n; i++) {
        const sts_tensor *t = sts_at(f, i);
        memset(&specs[i], 0, sizeof specs[i]);
        specs[i].name = t->name;
        specs[i].name_len = t->name_len;
        specs[i].dtype = t->dtype;
        specs[i].rank = t->rank;
        specs[i].shape = t->shape;
        specs[i].data = sts_data(f, t);
        specs[i].data_size = t->end - t->begin;
    }
    for (i = 0; i < nm; i++) meta[i] = *sts_metadata_at(f, i);
    memset(&dummy, 0, sizeof dummy);
    r1 = sts_write_size(specs, n, sts_has_metadata(f) ? (nm ? meta : &dummy) : NULL, nm, NULL, &hs, &fs, &err);
    if (must_refuse) {
        if (r1 == STS_OK) failf("%s/%s rewrite: strict rejects this file, yet sts_write_size accepts its content",
                                c->set, c->file);
    } else if (r1 != STS_OK) {
        failf("%s/%s rewrite: sts_write_size failed: %s", c->set, c->file, err.message);
    } else if (fs != size || hs != le64(bytes)) {
        failf("%s/%s rewrite: sts_write_size gives N=%llu size=%llu, the file has N=%llu size=%zu", c->set, c->file,
              (unsigned long long)hs, (unsigned long long)fs, (unsigned long long)le64(bytes), size);
    }
    r2 = sts_write_memory(specs, n, sts_has_metadata(f) ? (nm ? meta : &dummy) : NULL, nm, NULL, &out, &out_size, &err);
    if (must_refuse) {
        if (r2 == STS_OK) failf("%s/%s rewrite: strict rejects this file, yet the (always strict) writer wrote it",
                                c->set, c->file);
        else if (r1 != STS_OK) g_rw_pass++;
    } else if (r2 != STS_OK) {
        failf("%s/%s rewrite: sts_write_memory failed: %s", c->set, c->file, err.message);
    } else if (out_size != size || memcmp(out, bytes, size) != 0) {
        size_t k = 0;
        while (k < size && k < out_size && ((const unsigned char *)out)[k] == bytes[k]) k++;
        failf("%s/%s rewrite: sts_write_memory output differs (size %zu vs %zu, first difference at byte %zu)",
              c->set, c->file, out_size, size, k);
    } else if (r1 == STS_OK && fs == size) {
        g_rw_pass++;
    }
    if (r2 == STS_OK) sts_free(NULL, out, out_size);
    free(specs);
    free(meta);
    sts_close(f);
}

int main(int argc, char **argv) {
    const char *root = argc > 1 ? argv[1] : ".";
    size_t i;
    int p, s;
    unsigned long agree = 0, total = 0, cases_agree = 0;
    load_table(root, "shared", "tests/conformance/shared/expected.tsv", "tests/conformance/shared",
               "tests/conformance/shared_strict.tsv");
    load_table(root, "own", "tests/conformance/own.tsv", "tests/conformance/own", NULL);
    for (i = 0; i < g_ncases; i++) {
        const tcase *c = &g_cases[i];
        unsigned char *bytes;
        size_t size;
        size_t before = g_nfail;
        if (read_whole(c->path, &bytes, &size) != 0) {
            failf("%s/%s: cannot read %s: %s", c->set, c->file, c->path, strerror(errno));
            continue;
        }
        for (s = 0; s < 2; s++) {
            if (s == 1 && c->strict_ok < 0) continue;
            for (p = 0; p < P_COUNT; p++) run_path(c, p, s, bytes, size);
        }
        if (c->rewrite && c->ok) run_rewrite(c, bytes, size);
        if (g_nfail == before) cases_agree++;
        free(bytes);
    }
    printf("conformance: %zu cases, %lu agree in every check, %zu disagreements\n", g_ncases, cases_agree, g_nfail);
    for (s = 0; s < 2; s++)
        for (p = 0; p < P_COUNT; p++) {
            printf("  %-26s %-8s %5lu / %5lu\n", g_path_name[p], s ? "strict" : "default", g_pass[s][p], g_total[s][p]);
            agree += g_pass[s][p];
            total += g_total[s][p];
        }
    printf("  %-26s %-8s %5lu / %5lu\n", "rewrite (sts_write_memory)", "", g_rw_pass, g_rw_total);
    printf("  verdict checks: %lu / %lu agree\n", agree, total);
    for (i = 0; i < g_nfail; i++) printf("DISAGREE %s\n", g_fail[i]);
    for (i = 0; i < g_nfail; i++) free(g_fail[i]);
    free(g_fail);
    for (i = 0; i < g_ncases; i++) {
        free(g_cases[i].set);
        free(g_cases[i].file);
        free(g_cases[i].path);
        free(g_cases[i].variant);
    }
    free(g_cases);
    return g_nfail ? 1 : 0;
}
