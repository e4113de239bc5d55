/* fuzz_codec.c - libFuzzer target for sts_convert (layer 7).

   Input: byte 0 picks the source dtype, byte 1 the destination dtype, byte 2 the rounding (bit 0)
   and the source / destination misalignment (bits 1-3, 4-6), byte 3 the instruction-set level
   (scalar, SSE2/NEON, AVX2, AVX-512, capped at what the machine has), bytes 4-5 the count
   (little-endian, capped by the data); the rest is element data.

   For the picked pair, and then for the picked source into every one of the 22 dtypes in both
   roundings, it checks:
     - the result code: STS_OK exactly when sts_convert_supported says so and the sizes work out,
       else UNSUPPORTED / INVALID_ARGUMENT, with nothing written;
     - no byte outside the destination is written (guard bytes) and nothing past the source is
       read (the source is copied into an exactly sized heap block; ASan watches the edges);
     - the output equals converting one element at a time on the scalar level, bit for bit, and
       equals the general decode/encode mechanism (NaN judged by class there: the BF16 bit move
       and BF16 truncation keep NaN payloads the general path quiets).
   The non-temporal threshold is lowered so that fuzzed lengths reach those paths too.

   Seeds in fuzz/corpus/codec/ (one per source dtype with specials, plus misaligned and
   every-level variants) were written by hand with the layout above. */
#define STS_CONVERT_NT_BYTES ((size_t)256)
#define STS_IMPLEMENTATION
#include "../safetensors_spark.h"
/* Without fuzz_common.h's mutator: it rewrites the first 8 bytes as a header length, which suits
   the parser targets but not this layout. */
#define FZ_NO_HEADER_MUTATOR
#include "fuzz_common.h"

static int fzc_is_nan(const uint8_t *p, sts_dtype t) {
    uint64_t u = 0;
    unsigned i, b = sts_dtype_bits(t) / 8;
    for (i = b; i-- > 0;) u = u << 8 | p[i];
    switch (t) {
    case STS_DTYPE_F16: return (u & 0x7c00) == 0x7c00 && (u & 0x3ff);
    case STS_DTYPE_BF16: return (u & 0x7f80) == 0x7f80 && (u & 0x7f);
    case STS_DTYPE_F32: return (u & 0x7f800000u) == 0x7f800000u && (u & 0x7fffffu);
    case STS_DTYPE_F64: return (u & 0x7ff0000000000000ull) == 0x7ff0000000000000ull && (u & 0xfffffffffffffull);
    default: return 0;
    }
}

static void fzc_one(const uint8_t *data, size_t dlen, sts_dtype st, sts_dtype dt, sts_rounding rd, size_t count,
                    unsigned soff, unsigned doff, int isa) {
    unsigned sbits = sts_dtype_bits(st), dbits = sts_dtype_bits(dt);
    int sup = sts_convert_supported(dt, st);
    size_t mult = (st == STS_DTYPE_C64 && dt != STS_DTYPE_C64) ? 2 : 1;
    size_t sbytes = (count * sbits + 7) / 8, dbytes = count * mult * dbits / 8, k;
    int whole = (count * sbits) % 8 == 0;
    uint8_t *src, *dst, *one, *gen;
    sts_error err;
    sts_result r;
    if (sbytes > dlen) return;
    src = (uint8_t *)malloc(soff + sbytes + 1);       /* exactly sized: ASan sees any over-read */
    dst = (uint8_t *)malloc(doff + dbytes + 32);
    one = (uint8_t *)malloc(dbytes + 16);
    gen = (uint8_t *)malloc(dbytes + 16);
    FZ_CHECK(src && dst && one && gen);
    memcpy(src + soff, data, sbytes);
    memset(dst, 0xa5, doff + dbytes + 32);
    r = sts__convert_at(dst + doff, dt, src + soff, st, count, rd, isa, &err);
    if (!sup) {
        FZ_CHECK(r == STS_ERR_UNSUPPORTED && err.code == STS_ERR_UNSUPPORTED);
    } else if (!whole) {
        FZ_CHECK(r == STS_ERR_INVALID_ARGUMENT);
    } else {
        FZ_CHECK(r == STS_OK);
    }
    if (r != STS_OK) {
        for (k = 0; k < doff + dbytes + 32; k++) FZ_CHECK(dst[k] == 0xa5);
        goto done;
    }
    for (k = 0; k < doff; k++) FZ_CHECK(dst[k] == 0xa5);
    for (k = doff + dbytes; k < doff + dbytes + 32; k++) FZ_CHECK(dst[k] == 0xa5);
    if (sbits < 8 || dt == st) {                        /* a copy */
        FZ_CHECK(memcmp(dst + doff, src + soff, dbytes) == 0);
        goto done;
    }
    for (k = 0; k < count; k++)                         /* one element at a time, scalar level */
        FZ_CHECK(sts__convert_at(one + k * mult * dbits / 8, dt, src + soff + k * sbits / 8, st, 1, rd,
                                 STS__ISA_SCALAR, NULL) == STS_OK);
    FZ_CHECK(memcmp(dst + doff, one, dbytes) == 0);
    /* the general mechanism */
    if (st == STS_DTYPE_C64) sts__convert_generic(gen, dt, src + soff, STS_DTYPE_F32, count * 2, 1);
    else sts__convert_generic(gen, dt, src + soff, st, count, rd == STS_ROUND_NEAREST_EVEN);
    for (k = 0; k < count * mult; k++) {
        const uint8_t *a = dst + doff + k * dbits / 8, *b = gen + k * dbits / 8;
        if (memcmp(a, b, dbits / 8) == 0) continue;
        FZ_CHECK(fzc_is_nan(a, dt) && fzc_is_nan(b, dt));
    }
done:
    free(src); free(dst); free(one); free(gen);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    sts_dtype st, dt;
    unsigned flags, soff, doff, sbits, d, m;
    size_t count, avail;
    int isa;
    if (size < 6) return 0;
    st = (sts_dtype)(data[0] % STS_DTYPE_COUNT);
    dt = (sts_dtype)(data[1] % STS_DTYPE_COUNT);
    flags = data[2];
    soff = flags >> 1 & 7;
    doff = flags >> 4 & 7;
    isa = data[3] % 4;
    if (isa > sts__isa()) isa = sts__isa();
    count = (size_t)data[4] | (size_t)data[5] << 8;
    data += 6; size -= 6;
    sbits = sts_dtype_bits(st);
    avail = size * 8 / sbits;
    if (count > avail) count = avail;
    fzc_one(data, size, st, dt, (sts_rounding)(flags & 1), count, soff, doff, isa);
    for (d = 0; d < STS_DTYPE_COUNT; d++)                /* the same data into every dtype */
        for (m = 0; m < 2; m++)
            fzc_one(data, size, st, (sts_dtype)d, (sts_rounding)m, count, soff, doff, isa);
    /* argument errors never crash and never write */
    FZ_CHECK(sts_convert(NULL, dt, data, st, count ? count : 1, (sts_rounding)(flags & 1)) != STS_OK);
    FZ_CHECK(sts_convert(NULL, dt, NULL, st, 0, (sts_rounding)(flags & 1)) ==
             (sts_convert_supported(dt, st) ? STS_OK : STS_ERR_UNSUPPORTED));
    return 0;
}
