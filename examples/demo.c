/* demo: the main job on a built-in default.
   Writes a small model-like safetensors file (several dtypes, metadata) atomically, reopens it
   with mmap, validates it strictly, and prints its tensors. Runs from any folder; writes
   demo_model.safetensors into the current folder. */
#define STS_IMPLEMENTATION
#include "../safetensors_spark.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NAME(s) s, sizeof(s) - 1

static uint16_t bf16_of(float f) {  /* round-to-nearest-even; the demo's inputs are finite */
    uint32_t u;
    memcpy(&u, &f, 4);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}
static void put_le(uint8_t *p, uint64_t v, int bytes) {
    int i;
    for (i = 0; i < bytes; i++) p[i] = (uint8_t)(v >> (8 * i));
}

int main(void) {
    enum { VOCAB = 512, DIM = 64, HID = 256 };
    static uint8_t embed[VOCAB * DIM * 2], up[DIM * HID * 4], norm[DIM * 4], pos[VOCAB * 8], mask[VOCAB];
    uint64_t s_embed[2] = { VOCAB, DIM }, s_up[2] = { HID, DIM }, s_norm[1] = { DIM }, s_pos[1] = { VOCAB }, s_mask[1] = { VOCAB };
    sts_tensor_spec t[5];
    sts_kv meta[2];
    sts_options strict;
    sts_file *f;
    sts_error err;
    uint32_t seed = 12345u;
    size_t i;
    const char *path = "demo_model.safetensors";

    for (i = 0; i < VOCAB * DIM; i++) {  /* deterministic pseudo-random weights */
        float v;
        seed = seed * 1664525u + 1013904223u;
        v = (float)((int32_t)(seed >> 8) - (1 << 23)) / (float)(1 << 26);
        put_le(embed + 2 * i, bf16_of(v), 2);
    }
    for (i = 0; i < DIM * HID; i++) {
        float v = (float)((int)(i % 97) - 48) / 100.0f;
        uint32_t u;
        memcpy(&u, &v, 4);
        put_le(up + 4 * i, u, 4);
    }
    for (i = 0; i < DIM; i++) { float one = 1.0f; uint32_t u; memcpy(&u, &one, 4); put_le(norm + 4 * i, u, 4); }
    for (i = 0; i < VOCAB; i++) { put_le(pos + 8 * i, i, 8); mask[i] = (uint8_t)(i % 3 == 0); }

    memset(t, 0, sizeof t);
    t[0].name = "model.embed_tokens.weight"; t[0].name_len = strlen(t[0].name);
    t[0].dtype = STS_DTYPE_BF16; t[0].rank = 2; t[0].shape = s_embed; t[0].data = embed; t[0].data_size = sizeof embed;
    t[1].name = "model.layers.0.mlp.up_proj.weight"; t[1].name_len = strlen(t[1].name);
    t[1].dtype = STS_DTYPE_F32; t[1].rank = 2; t[1].shape = s_up; t[1].data = up; t[1].data_size = sizeof up;
    t[2].name = "model.norm.weight"; t[2].name_len = strlen(t[2].name);
    t[2].dtype = STS_DTYPE_F32; t[2].rank = 1; t[2].shape = s_norm; t[2].data = norm; t[2].data_size = sizeof norm;
    t[3].name = "model.position_ids"; t[3].name_len = strlen(t[3].name);
    t[3].dtype = STS_DTYPE_I64; t[3].rank = 1; t[3].shape = s_pos; t[3].data = pos; t[3].data_size = sizeof pos;
    t[4].name = "model.token_mask"; t[4].name_len = strlen(t[4].name);
    t[4].dtype = STS_DTYPE_BOOL; t[4].rank = 1; t[4].shape = s_mask; t[4].data = mask; t[4].data_size = sizeof mask;
    meta[0].key = "format"; meta[0].key_len = 6; meta[0].value = "pt"; meta[0].value_len = 2;
    meta[1].key = "producer"; meta[1].key_len = 8; meta[1].value = "safetensors_spark.h demo"; meta[1].value_len = 24;

    if (sts_write_path(path, t, 5, meta, 2, NULL, &err) != STS_OK) {
        fprintf(stderr, "demo: write failed: %s: %s\n", sts_result_name(err.code), err.message);
        return 1;
    }
    memset(&strict, 0, sizeof strict);
    strict.strict = 1;
    if (sts_open(path, &strict, &f, &err) != STS_OK) {
        fprintf(stderr, "demo: verify failed: %s: %s\n", sts_result_name(err.code), err.message);
        return 1;
    }
    printf("wrote %s: %llu bytes, header %llu bytes, %zu tensors, strict validation OK\n\n", path,
           (unsigned long long)sts_file_size(f), (unsigned long long)sts_header_size(f), sts_count(f));
    printf("%-36s %-5s %-12s %10s  %s\n", "tensor", "dtype", "shape", "bytes", "data_offsets");
    for (i = 0; i < sts_count(f); i++) {
        const sts_tensor *x = sts_at(f, i);
        char shape[64];
        int n = 0;
        uint32_t d;
        n += snprintf(shape + n, sizeof shape - (size_t)n, "[");
        for (d = 0; d < x->rank; d++) n += snprintf(shape + n, sizeof shape - (size_t)n, d ? ",%llu" : "%llu", (unsigned long long)x->shape[d]);
        snprintf(shape + n, sizeof shape - (size_t)n, "]");
        printf("%-36.*s %-5s %-12s %10llu  [%llu, %llu]\n", (int)x->name_len, x->name, sts_dtype_name(x->dtype), shape,
               (unsigned long long)sts_tensor_nbytes(x), (unsigned long long)x->begin, (unsigned long long)x->end);
    }
    printf("\nmetadata:\n");
    for (i = 0; i < sts_metadata_count(f); i++) {
        const sts_kv *kv = sts_metadata_at(f, i);
        printf("  %.*s = %.*s\n", (int)kv->key_len, kv->key, (int)kv->value_len, kv->value);
    }
    {
        const sts_tensor *pos_t = sts_find(f, NAME("model.position_ids"));
        const uint8_t *p = (const uint8_t *)sts_data(f, pos_t);
        printf("\nlookup model.position_ids[511] = %llu (zero-copy from the mapping)\n",
               (unsigned long long)(p[511 * 8] | (uint64_t)p[511 * 8 + 1] << 8));
    }
    sts_close(f);
    return 0;
}
