/* gguf_dump.c - prints what the archive reads from GGUF files, in the line format that
   tests/gguf/hf_dump.cjs prints for @huggingface/gguf's reading of the same files (the cross-check of
   tests/gguf/hf_check.py). Usage: gguf_dump [--strict] [--sha] FILE... ; exit 1 when a file does not open
   (--strict: in strict mode; --sha: also "sha <name hex> <SHA-256 of the tensor's stored bytes>").
     file <name>
     version <n>
     big_endian <0|1>
     data_offset <n>                                   (files with tensors)
     kv <key hex> <type> <value>                       u<dec> i<dec> f<IEEE double bits, hex> b0|b1 s<hex>
                                                       a<item type>[<value>,...]
     tensor <name hex> <ggml type> <dims, ggml order, comma-separated, or -> <offset in the data section> */
#define _POSIX_C_SOURCE 200809L
#define STS_IMPLEMENTATION
#include "../../safetensors_spark.h"
#include <stdio.h>
#include <string.h>

static void hex(const char *p, size_t n) {
    size_t i;
    for (i = 0; i < n; i++) printf("%02x", (unsigned char)p[i]);
}
static void value(const sts_meta *m) {
    uint64_t k, bits;
    switch (m->type) {
    case STS_META_UINT: printf("u%llu", (unsigned long long)m->u); break;
    case STS_META_INT: printf("i%lld", (long long)m->i); break;
    case STS_META_FLOAT: memcpy(&bits, &m->f, 8); printf("f%016llx", (unsigned long long)bits); break;
    case STS_META_BOOL: printf("b%d", m->u ? 1 : 0); break;
    case STS_META_STRING: printf("s"); hex(m->str, m->str_len); break;
    default:
        printf("a%llu[", (unsigned long long)m->u);
        for (k = 0; k < m->count; k++) {
            if (k) printf(",");
            value(&m->items[k]);
        }
        printf("]");
        break;
    }
}
int main(int argc, char **argv) {
    int i, rc = 0, strict = 0, sha = 0;
    for (i = 1; i < argc; i++) {
        sts_options o;
        sts_input in;
        sts_archive *a;
        sts_error e;
        size_t k, j;
        const char *base = strrchr(argv[i], '/');
        if (strcmp(argv[i], "--strict") == 0) { strict = 1; continue; }
        if (strcmp(argv[i], "--sha") == 0) { sha = 1; continue; }
        memset(&in, 0, sizeof in);
        memset(&o, 0, sizeof o);
        o.strict = strict;
        in.path = argv[i];
        printf("file %s\n", base ? base + 1 : argv[i]);
        if (sts_archive_open(NULL, &in, &o, &a, &e) != STS_OK) {
            printf("error %s\n", e.message);
            rc = 1;
            continue;
        }
        printf("version %u\n", sts_archive_version(a));
        for (k = 0; k < sts_archive_meta_count(a); k++) {
            const sts_meta *m = sts_archive_meta_at(a, k);
            printf("kv ");
            hex(m->key, m->key_len);
            printf(" %u ", m->format_type);
            value(m);
            printf("\n");
        }
        for (k = 0; k < sts_archive_count(a); k++) {
            const sts_tensor_desc *d;
            if (sts_archive_at(a, k, &d, &e) != STS_OK) { printf("error %s\n", e.message); rc = 1; break; }
            if (k == 0) {
                printf("big_endian %d\n", d->big_endian);
                printf("data_offset %llu\n", (unsigned long long)(d->offset - d->extras[1].u));
            }
            printf("tensor ");
            hex(d->name, d->name_len);
            printf(" %llu ", (unsigned long long)d->extras[0].u);
            for (j = 0; j < d->rank; j++) printf("%s%llu", j ? "," : "", (unsigned long long)d->format_shape[j]);
            printf("%s %llu\n", d->rank ? "" : "-", (unsigned long long)d->extras[1].u);
            if (sha) {
                uint8_t dg[32];
                char hx[65];
                if (sts_archive_sha256(a, d, dg, &e) != STS_OK) { printf("error %s\n", e.message); rc = 1; break; }
                sts_sha256_hex(dg, hx);
                printf("sha ");
                hex(d->name, d->name_len);
                printf(" %s\n", hx);
            }
        }
        sts_archive_close(a);
    }
    return rc;
}
