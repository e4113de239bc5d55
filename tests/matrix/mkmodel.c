/* Writes a small valid model file (argv[1]) for the README quick start to read. */
#define STS_IMPLEMENTATION
#include "safetensors_spark.h"
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
    static const float head[4] = {0.5f, -1.0f, 2.0f, 0.25f};
    static const unsigned char emb[6] = {1, 2, 3, 4, 5, 6};
    uint64_t hs[2] = {2, 2}, es[1] = {6};
    sts_tensor_spec s[2];
    sts_kv meta[1];
    sts_error err;
    if (argc != 2) { fprintf(stderr, "usage: mkmodel OUT\n"); return 2; }
    memset(s, 0, sizeof s);
    s[0].name = "lm_head.weight"; s[0].name_len = 14; s[0].dtype = STS_DTYPE_F32;
    s[0].rank = 2; s[0].shape = hs; s[0].data = head; s[0].data_size = sizeof head;
    s[1].name = "model.embed_tokens.weight"; s[1].name_len = 25; s[1].dtype = STS_DTYPE_U8;
    s[1].rank = 1; s[1].shape = es; s[1].data = emb; s[1].data_size = sizeof emb;
    meta[0].key = "format"; meta[0].key_len = 6; meta[0].value = "pt"; meta[0].value_len = 2;
    if (sts_write_path(argv[1], s, 2, meta, 1, NULL, &err) != STS_OK) {
        fprintf(stderr, "%s: %s\n", sts_result_name(err.code), err.message);
        return 1;
    }
    return 0;
}
