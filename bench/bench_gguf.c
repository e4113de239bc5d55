/* bench_gguf.c - GGUF header parse + validation (issue 14): GB/s of header bytes, beside
   @huggingface/gguf parsing the same file in the same run.

   The file is shaped like Llama-3-8B-Instruct Q4_K_M: 292 tensors with the real shapes and types
   (Q4_K, Q6_K, F32; 5.2 GB of data, written as a hole: a sparse file), 29 KVs among them a
   128,256-string tokenizer.ggml.tokens, its token_type (INT32), a 280,147-string
   tokenizer.ggml.merges, a chat template and small string arrays; strings of realistic lengths and
   bytes (GPT-2 byte-level BPE: 'Ġ' is two bytes). Every open builds every KV (one sts_meta per array
   item) and every descriptor, and validates the whole header and the data section's extent.

   Ours, --runs times each, medians (range): from memory (sts_input.bytes over the file's bytes: the
   header, then untouched pages), from the path (mapped), and through a callback source that serves
   the header from memory (chunked reads). @huggingface/gguf (node, bench/bench_gguf_hf.cjs): gguf()
   on the local file, and gguf() on an https URL whose fetch answers the Range requests from memory
   (no disk), timed inside node after a warm-up run, min(--runs, 5) times (a parse takes seconds).
   Skipped with the reason when node or the package (make test-gguf-hf installs it into build/node)
   is missing.

   ./bench_gguf [--runs N] [--dir DIR] [--samples]     (--samples: print every run of ours)
   The file goes to DIR, else $BENCH_DIR, else /tmp, and is removed at the end. */
#define _DEFAULT_SOURCE   /* MAP_ANONYMOUS, MAP_NORESERVE */
#define _POSIX_C_SOURCE 200809L
#define STS_IMPLEMENTATION
#include "../safetensors_spark.h"
#include "bench_util.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

static char path[4096];
static void on_signal(int sig) {
    if (path[0]) unlink(path);
    signal(sig, SIG_DFL);
    raise(sig);
}
static void die(const char *what) {
    fprintf(stderr, "bench_gguf: %s: %s\n", what, strerror(errno));
    if (path[0]) unlink(path);
    exit(2);
}

/* ---- the header ---- */
typedef struct hb { uint8_t *p; size_t n, cap; } hb;
static void put(hb *b, const void *s, size_t n) {
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2;
        if (!(b->p = (uint8_t *)realloc(b->p, b->cap))) die("realloc");
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
}
static void u(hb *b, uint64_t v, int bytes) {
    uint8_t t[8];
    int i;
    for (i = 0; i < bytes; i++) t[i] = (uint8_t)(v >> (8 * i));
    put(b, t, (size_t)bytes);
}
static void str(hb *b, const char *s, size_t n) { u(b, n, 8); put(b, s, n); }
static void key(hb *b, const char *k, uint32_t type) { str(b, k, strlen(k)); u(b, type, 4); }
static void kv_str(hb *b, const char *k, const char *v) { key(b, k, 8); str(b, v, strlen(v)); }
static void kv_u32(hb *b, const char *k, uint32_t v) { key(b, k, 4); u(b, v, 4); }
static void kv_f32(hb *b, const char *k, float f) {
    uint32_t v;
    memcpy(&v, &f, 4);
    key(b, k, 6);
    u(b, v, 4);
}
static void arr(hb *b, const char *k, uint32_t item, uint64_t n) { key(b, k, 9); u(b, item, 4); u(b, n, 8); }

/* A token of a byte-level BPE vocabulary: 1 to 16 characters, often starting with 'Ġ' (2 bytes). */
static size_t token(tu_rng *r, char *out) {
    static const char al[] = "etaoinshrdlucmfwypvbgkjqxz_ETAOINSHRD0123456789.,;:!?()[]{}";
    size_t n = 0, len = 1 + tu_below(r, 4) + tu_below(r, 5) + tu_below(r, 8), i;
    if (tu_below(r, 3) == 0) { out[n++] = (char)0xC4; out[n++] = (char)0xA0; }
    for (i = 0; i < len; i++) out[n++] = al[tu_below(r, sizeof al - 1)];
    return n;
}

typedef struct tens { char name[64]; uint32_t nd, type; uint64_t ne[2]; } tens;
static uint64_t tens_bytes(const tens *t) {
    uint64_t n = t->ne[0] * (t->nd > 1 ? t->ne[1] : 1);
    switch (t->type) {
    case 12: return n / 256 * 144;  /* Q4_K */
    case 14: return n / 256 * 210;  /* Q6_K */
    default: return n * 4;          /* F32 */
    }
}

/* The header (up to the data section) and the file's size. */
static void make_header(hb *b, uint64_t *file_size, size_t *n_tensors) {
    tu_rng r;
    tens ts[300];
    size_t nt = 0, i, l;
    uint64_t off = 0;
    char t[64], t2[64];
    const char *blk[9][2] = { { "attn_norm", "F" }, { "attn_q", "4" }, { "attn_k", "4" }, { "attn_v", "6" },
                              { "attn_output", "4" }, { "ffn_norm", "F" }, { "ffn_gate", "4" }, { "ffn_up", "4" },
                              { "ffn_down", "6" } };
    const uint64_t dims[9][2] = { { 4096, 1 }, { 4096, 4096 }, { 4096, 1024 }, { 4096, 1024 }, { 4096, 4096 },
                                  { 4096, 1 }, { 4096, 14336 }, { 4096, 14336 }, { 14336, 4096 } };
#define T_(nm, n_d, ty, a, b_) do { snprintf(ts[nt].name, 64, "%s", nm); ts[nt].nd = n_d; ts[nt].type = ty; \
                                    ts[nt].ne[0] = a; ts[nt].ne[1] = b_; nt++; } while (0)
    T_("rope_freqs.weight", 1, 0, 64, 1);
    T_("token_embd.weight", 2, 12, 4096, 128256);
    for (l = 0; l < 32; l++)
        for (i = 0; i < 9; i++) {
            char nm[64];
            snprintf(nm, sizeof nm, "blk.%zu.%s.weight", l, blk[i][0]);
            T_(nm, dims[i][1] > 1 ? 2 : 1, blk[i][1][0] == 'F' ? 0u : blk[i][1][0] == '4' ? 12u : 14u, dims[i][0],
               dims[i][1]);
        }
    T_("output_norm.weight", 1, 0, 4096, 1);
    T_("output.weight", 2, 14, 4096, 128256);
    r.s = 2026;
    memset(b, 0, sizeof *b);
    put(b, "GGUF", 4);
    u(b, 3, 4);
    u(b, nt, 8);
    u(b, 29, 8);
    kv_str(b, "general.architecture", "llama");
    kv_str(b, "general.type", "model");
    kv_str(b, "general.name", "Meta Llama 3.1 8B Instruct");
    kv_str(b, "general.finetune", "Instruct");
    kv_str(b, "general.basename", "Meta-Llama-3.1");
    kv_str(b, "general.size_label", "8B");
    kv_str(b, "general.license", "llama3.1");
    arr(b, "general.tags", 8, 6);
    for (i = 0; i < 6; i++) str(b, "facebook meta pytorch llama llama-3 text-generation" + i * 8, 7);
    arr(b, "general.languages", 8, 8);
    for (i = 0; i < 8; i++) str(b, "enderfritptheshth" + 2 * i, 2);
    kv_u32(b, "llama.block_count", 32);
    kv_u32(b, "llama.context_length", 131072);
    kv_u32(b, "llama.embedding_length", 4096);
    kv_u32(b, "llama.feed_forward_length", 14336);
    kv_u32(b, "llama.attention.head_count", 32);
    kv_u32(b, "llama.attention.head_count_kv", 8);
    kv_f32(b, "llama.rope.freq_base", 500000.0f);
    kv_f32(b, "llama.attention.layer_norm_rms_epsilon", 1e-5f);
    kv_u32(b, "general.file_type", 15);
    kv_u32(b, "llama.vocab_size", 128256);
    kv_u32(b, "llama.rope.dimension_count", 128);
    kv_str(b, "tokenizer.ggml.model", "gpt2");
    kv_str(b, "tokenizer.ggml.pre", "llama-bpe");
    arr(b, "tokenizer.ggml.tokens", 8, 128256);
    for (i = 0; i < 128256; i++) str(b, t, token(&r, t));
    arr(b, "tokenizer.ggml.token_type", 5, 128256);
    for (i = 0; i < 128256; i++) u(b, i < 128000 ? 1 : 3, 4);
    arr(b, "tokenizer.ggml.merges", 8, 280147);
    for (i = 0; i < 280147; i++) {
        size_t a = token(&r, t), c = token(&r, t2);
        t[a] = ' ';
        memcpy(t + a + 1, t2, c > 30 ? 30 : c);
        str(b, t, a + 1 + (c > 30 ? 30 : c));
    }
    kv_u32(b, "tokenizer.ggml.bos_token_id", 128000);
    kv_u32(b, "tokenizer.ggml.eos_token_id", 128009);
    {
        char tmpl[1400];
        memset(tmpl, 'x', sizeof tmpl);
        memcpy(tmpl, "{{- bos_token }}{%- if custom_tools is defined %}", 49);
        key(b, "tokenizer.chat_template", 8);
        str(b, tmpl, sizeof tmpl);
    }
    kv_u32(b, "general.quantization_version", 2);
    for (i = 0; i < nt; i++) {
        str(b, ts[i].name, strlen(ts[i].name));
        u(b, ts[i].nd, 4);
        u(b, ts[i].ne[0], 8);
        if (ts[i].nd > 1) u(b, ts[i].ne[1], 8);
        u(b, ts[i].type, 4);
        u(b, off, 8);
        off += (tens_bytes(&ts[i]) + 31) / 32 * 32;
    }
    while (b->n % 32) put(b, "", 1);
    *file_size = b->n + off;
    *n_tensors = nt;
}

/* ---- our side ---- */
typedef struct msrc { const uint8_t *p; size_t n; } msrc;
static sts_result msrc_read(void *user, uint64_t off, void *dst, size_t len) {
    msrc *m = (msrc *)user;
    if (off > m->n || len > m->n - off) return STS_ERR_IO;  /* the header only: the data is never read */
    memcpy(dst, m->p + off, len);
    return STS_OK;
}
static double open_once(const sts_input *in, size_t want_tensors) {
    sts_archive *a;
    sts_error e;
    double t0 = tu_now(), t;
    if (sts_archive_open(NULL, in, NULL, &a, &e) != STS_OK) {
        fprintf(stderr, "bench_gguf: open: %s\n", e.message);
        exit(2);
    }
    t = tu_now() - t0;
    if (sts_archive_count(a) != want_tensors || sts_archive_meta_count(a) != 29 ||
        sts_archive_meta_find(a, "tokenizer.ggml.merges", 21)->count != 280147) {
        fprintf(stderr, "bench_gguf: the archive does not hold what was written\n");
        exit(2);
    }
    bench_sink += sts_archive_total_bytes(a);
    sts_archive_close(a);
    return t;
}
static int show_samples;
static bench_stats run_ours(const sts_input *in, size_t nt, int runs, double header, const char *label) {
    double *s = (double *)malloc((size_t)runs * sizeof *s);
    bench_stats st;
    int k;
    struct rusage r0, r1;
    double first;
    getrusage(RUSAGE_SELF, &r0);
    first = open_once(in, nt);  /* warm-up; the first one in the process touches fresh memory */
    getrusage(RUSAGE_SELF, &r1);
    for (k = 0; k < runs; k++) {
        s[k] = header / open_once(in, nt) / 1e9;
        if (show_samples) printf("    run %d: %.3f GB/s\n", k, s[k]);
    }
    st = bench_summarize(s, (size_t)runs);
    printf("  %-44s %6.3f GB/s (%.3f-%.3f)   %.2f ms; warm-up %.1f ms, %ld page faults\n", label, st.median,
           st.min, st.max, header / st.median / 1e6, first * 1e3, r1.ru_minflt - r0.ru_minflt);
    free(s);
    return st;
}

int main(int argc, char **argv) {
    int runs = 20, i, fd;
    const char *dir = getenv("BENCH_DIR");
    hb b;
    uint64_t size;
    size_t nt;
    sts_input in;
    sts_source src;
    msrc ms;
    uint8_t *mem;
    bench_stats mem_st;
    char cmd[16384], hf_pkg[1024];
    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc) runs = atoi(argv[++i]);
        else if (strcmp(argv[i], "--dir") == 0 && i + 1 < argc) dir = argv[++i];
        else if (strcmp(argv[i], "--samples") == 0) show_samples = 1;
        else { fprintf(stderr, "usage: bench_gguf [--runs N] [--dir DIR] [--samples]\n"); return 2; }
    }
    if (runs < 1) runs = 1;
    if (!dir || !*dir) dir = "/tmp";
    bench_print_build(stdout);
    make_header(&b, &size, &nt);
    printf("file: Llama-3.1-8B-shaped Q4_K_M: %zu tensors, 29 KVs (128,256 tokens, 128,256 token types, "
           "280,147 merges); header %zu bytes (%.2f MB), file %.2f GB (sparse)\n", nt, b.n, b.n / 1e6, size / 1e9);

    /* the file: the header, then a hole up to its size */
    snprintf(path, sizeof path, "%s/bench_gguf.%ld.gguf", dir, (long)getpid());
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    if ((fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0644)) < 0) die("open");
    if (write(fd, b.p, b.n) != (ssize_t)b.n || ftruncate(fd, (off_t)size) != 0) die("write");
    close(fd);

    /* memory: an anonymous mapping of the file's size; its untouched pages cost nothing */
    mem = (uint8_t *)mmap(NULL, (size_t)size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                          -1, 0);
    if (mem == MAP_FAILED) die("mmap");
    memcpy(mem, b.p, b.n);
    printf("ours (sts_archive_open, %d runs each; header bytes / open time, medians (range)):\n", runs);
    memset(&in, 0, sizeof in);
    in.bytes = mem;
    in.size = (size_t)size;
    mem_st = run_ours(&in, nt, runs, (double)b.n, "from memory (bytes)");
    memset(&in, 0, sizeof in);
    in.path = path;
    run_ours(&in, nt, runs, (double)b.n, "from the path (mapped)");
    memset(&in, 0, sizeof in);
    ms.p = b.p;
    ms.n = b.n;
    src.read = msrc_read;
    src.user = &ms;
    src.size = size;
    in.source = &src;
    run_ours(&in, nt, runs, (double)b.n, "through a callback source (chunked reads)");
    munmap(mem, (size_t)size);

    /* @huggingface/gguf on the same file, in the same run */
    if (!getcwd(hf_pkg, sizeof hf_pkg - 64)) die("getcwd");
    strcat(hf_pkg, "/build/node/node_modules/@huggingface/gguf");  /* make bench runs from the repository root */
    if (access(hf_pkg, R_OK) != 0 || system("node --version > /dev/null 2>&1") != 0) {
        printf("@huggingface/gguf: skipped: node or %s is missing (make test-gguf-hf installs it)\n", hf_pkg);
    } else {
        FILE *p;
        char line[512];
        double hf_mem = 0;
        int hf_runs = runs < 5 ? runs : 5;  /* seconds a parse: 5 runs are enough */
        snprintf(cmd, sizeof cmd, "HF_GGUF=%s node bench/bench_gguf_hf.cjs %s %d %zu", hf_pkg, path, hf_runs, b.n);
        printf("@huggingface/gguf (%d runs each, timed in node after a warm-up):\n", hf_runs);
        fflush(stdout);
        if (!(p = popen(cmd, "r"))) die("popen");
        while (fgets(line, sizeof line, p)) {
            double v;
            fputs(line, stdout);
            if (sscanf(line, " from memory (fetch of Range requests) %lf", &v) == 1) hf_mem = v;
        }
        if (pclose(p) != 0) printf("@huggingface/gguf: the node script failed\n");
        if (hf_mem > 0) printf("ours / @huggingface/gguf, both from memory: %.1fx (medians)\n", mem_st.median / hf_mem);
    }
    printf("goal: >= 1 GB/s of header bytes from memory: %s (%.3f GB/s)\n", mem_st.median >= 1.0 ? "met" : "MISSED",
           mem_st.median);
    unlink(path);
    free(b.p);
    return 0;
}
