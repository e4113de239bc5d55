#!/usr/bin/python3
"""Cross-checks sts_dequantize (the header's >>dequant) against decoders written here in numpy.

Usage: check_dequant_numpy.py build/dequant/libsts_dequant.so
The library is called through ctypes (tests/dequant_shlib.c), at every instruction-set level the
machine has (scalar, then the SIMD kernels) and through the public sts_dequantize.

The references below are written from ggml's block layouts (ggml-common.h, and the element order
of docs/gguf.md and ggml-quants.c's dequantize_row_*), independently of the C code: each builds,
for every element index e of a block, which byte and which bits hold its quant and which scale
applies, then computes in numpy float32 (IEEE single, each operation rounded once):
    Q8_0, Q4_0, Q5_0, Q3_K, Q6_K   y = (d * sc) * q            (sc = 1 for the 32-element types)
    Q4_1, Q5_1                     y = d * q + m
    Q2_K, Q4_K, Q5_K               y = (d * sc) * q - dmin * mn
The blocks are random bytes with finite fp16 scales (random bit patterns, Inf and NaN redrawn),
plus blocks with extreme scales (the largest fp16, subnormals, zeros of both signs). Every float
must match bit for bit. Source buffers are also tried at odd addresses.
Prints one line per check and "check_dequant_numpy: N passed, M failed"; exits 1 on any failure.
"""
import ctypes
import os
import sys

import numpy as np

QUICK = os.environ.get("STS_TEST_LEVEL") == "quick"
F32 = np.float32

lib = ctypes.CDLL(sys.argv[1] if len(sys.argv) > 1 else "build/dequant/libsts_dequant.so")
lib.sts_dequantize.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t]
lib.sts_dequantize.restype = ctypes.c_int
lib.sts_test_dequantize_at.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_int]
lib.sts_test_dequantize_at.restype = ctypes.c_int
lib.sts_test_dequant_isa.restype = ctypes.c_int
lib.sts_dequantize_block.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_uint32), ctypes.POINTER(ctypes.c_uint32)]
lib.sts_dequantize_block.restype = ctypes.c_int
ISA_NAMES = ["scalar", "sse2", "avx2", "avx512"]

passed = failed = 0


def report(name, ok, detail=""):
    global passed, failed
    if ok:
        passed += 1
        print("  ok   %s%s" % (name, (": " + detail) if detail else ""))
    else:
        failed += 1
        print("  FAIL %s: %s" % (name, detail))
    sys.stdout.flush()


# ---- field helpers: blocks is an (n, block_bytes) uint8 array ----
def f16(blocks, at):
    """The little-endian fp16 at byte `at` of each block, as an (n, 1) float32 column (exact)."""
    lo = blocks[:, at].astype(np.uint16)
    hi = blocks[:, at + 1].astype(np.uint16)
    return (lo | (hi << 8)).view(np.float16).astype(F32).reshape(-1, 1)


def u32(blocks, at):
    """The little-endian uint32 at byte `at`, as an (n, 1) uint64 column."""
    v = np.zeros(blocks.shape[0], dtype=np.uint64)
    for k in range(4):
        v |= blocks[:, at + k].astype(np.uint64) << np.uint64(8 * k)
    return v.reshape(-1, 1)


def bits(v, shift, width):
    return (v >> shift) & ((1 << width) - 1)


def as_f32(q):
    """Integer quants to float32 (exact: all are small)."""
    return np.asarray(q).astype(F32)


# ---- the 32-element types. Element e < 16 is the low nibble of quant byte e, element e >= 16
# the high nibble of byte e - 16; the fifth bit of element e (Q5_*) is bit e of a 32-bit word. ----
E32 = np.arange(32)
NIB_BYTE, NIB_SHIFT = E32 % 16, 4 * (E32 // 16)


def ref_q8_0(b):
    d = f16(b, 0)
    q = b[:, 2:34].view(np.int8)
    return d * as_f32(q)


def ref_q4_0(b):
    d = f16(b, 0)
    q = bits(b[:, 2 + NIB_BYTE].astype(np.int32), NIB_SHIFT, 4) - 8
    return d * as_f32(q)


def ref_q4_1(b):
    d, m = f16(b, 0), f16(b, 2)
    q = bits(b[:, 4 + NIB_BYTE].astype(np.int32), NIB_SHIFT, 4)
    return d * as_f32(q) + m


def ref_q5_0(b):
    d, qh = f16(b, 0), u32(b, 2)
    q = bits(b[:, 6 + NIB_BYTE].astype(np.int64), NIB_SHIFT, 4) | (bits(qh, E32.astype(np.uint64), 1).astype(np.int64) << 4)
    return d * as_f32(q - 16)


def ref_q5_1(b):
    d, m, qh = f16(b, 0), f16(b, 2), u32(b, 4)
    q = bits(b[:, 8 + NIB_BYTE].astype(np.int64), NIB_SHIFT, 4) | (bits(qh, E32.astype(np.uint64), 1).astype(np.int64) << 4)
    return d * as_f32(q) + m


# ---- the super-blocks of 256 ----
E = np.arange(256)
# Q2_K / Q3_K: 2-bit fields. Element e lies in half g = e // 128 (32 quant bytes each); within it
# the 2-bit plane j = (e % 128) // 32 (bits 2j, 2j+1) of byte (e % 32). Sub-blocks of 16: e // 16.
G, J, R = E // 128, (E % 128) // 32, E % 32
F2_BYTE, F2_SHIFT = 32 * G + R, 2 * J
SUB16 = E // 16


def ref_q2_k(b):
    sc = b[:, 0:16].astype(np.int32)
    q = bits(b[:, 16 + F2_BYTE].astype(np.int32), F2_SHIFT, 2)
    d, dmin = f16(b, 80), f16(b, 82)
    scale = as_f32(sc & 15)[:, SUB16]
    mins = as_f32(sc >> 4)[:, SUB16]
    return (d * scale) * as_f32(q) - dmin * mins


def q3_scales(b):
    """The 16 six-bit scales of Q3_K (12 bytes at offset 96), minus 32: scale i has its low
    nibble in byte i (i < 8) or the high nibble of byte i - 8, and its top two bits in byte
    8 + i % 4 at bit 2 (i // 4)."""
    s = b[:, 96:108].astype(np.int32)
    i = np.arange(16)
    low = np.where(i < 8, s[:, i % 8] & 15, s[:, i % 8] >> 4)
    high = (s[:, 8 + i % 4] >> (2 * (i // 4))) & 3
    return (low | (high << 4)) - 32


def ref_q3_k(b):
    low = bits(b[:, 32 + F2_BYTE].astype(np.int32), F2_SHIFT, 2)
    # the high bit of element e: byte e % 32 of hmask, bit (e // 32): one bit plane per 32 elements
    high = bits(b[:, R].astype(np.int32), E // 32, 1)
    q = low - 4 * (1 - high)
    d = f16(b, 108)
    scale = as_f32(q3_scales(b))[:, SUB16]
    return (d * scale) * as_f32(q)


def k4_scales(b):
    """Q4_K / Q5_K: eight 6-bit (scale, min) pairs from 12 bytes at offset 4."""
    p = b[:, 4:16].astype(np.int32)
    sc = np.empty((b.shape[0], 8), dtype=np.int32)
    mn = np.empty_like(sc)
    for j in range(8):
        if j < 4:
            sc[:, j] = p[:, j] & 63
            mn[:, j] = p[:, j + 4] & 63
        else:
            sc[:, j] = (p[:, j + 4] & 15) | ((p[:, j - 4] >> 6) << 4)
            mn[:, j] = (p[:, j + 4] >> 4) | ((p[:, j] >> 6) << 4)
    return sc, mn


# Q4_K / Q5_K: element e is in chunk c = e // 64 of 32 bytes; the low nibble of byte e % 32 of the
# chunk for the first 32 elements of the chunk, the high nibble for the next 32. Sub-blocks of 32.
C4, R4 = E // 64, E % 64
N4_BYTE, N4_SHIFT = 32 * C4 + R4 % 32, 4 * (R4 // 32)
SUB32 = E // 32


def ref_q4_k(b):
    d, dmin = f16(b, 0), f16(b, 2)
    sc, mn = k4_scales(b)
    q = bits(b[:, 16 + N4_BYTE].astype(np.int32), N4_SHIFT, 4)
    return (d * as_f32(sc)[:, SUB32]) * as_f32(q) - dmin * as_f32(mn)[:, SUB32]


def ref_q5_k(b):
    d, dmin = f16(b, 0), f16(b, 2)
    sc, mn = k4_scales(b)
    low = bits(b[:, 48 + N4_BYTE].astype(np.int32), N4_SHIFT, 4)
    high = bits(b[:, 16 + E % 32].astype(np.int32), SUB32, 1)  # byte e % 32 of qh, bit e // 32
    q = low | (high << 4)
    return (d * as_f32(sc)[:, SUB32]) * as_f32(q) - dmin * as_f32(mn)[:, SUB32]


def ref_q6_k(b):
    # element e: half h = e // 128 (64 bytes of ql, 32 of qh each), quarter k = (e % 128) // 32,
    # lane l = e % 32. Low 4 bits: ql byte 64h + 32 (k % 2) + l, high nibble when k >= 2.
    # High 2 bits: qh byte 32h + l, bits 2k and 2k + 1. Scale: int8 number e // 16.
    h, k, l = E // 128, (E % 128) // 32, E % 32
    low = bits(b[:, 64 * h + 32 * (k % 2) + l].astype(np.int32), 4 * (k // 2), 4)
    high = bits(b[:, 128 + 32 * h + l].astype(np.int32), 2 * k, 2)
    q = (low | (high << 4)) - 32
    d = f16(b, 208)
    sc = b[:, 192:208].view(np.int8)
    return (d * as_f32(sc)[:, SUB16]) * as_f32(q)


# name: (elements, bytes, reference, byte offsets of the fp16 fields)
TYPES = {
    "Q8_0": (32, 34, ref_q8_0, [0]),
    "Q4_0": (32, 18, ref_q4_0, [0]),
    "Q4_1": (32, 20, ref_q4_1, [0, 2]),
    "Q5_0": (32, 22, ref_q5_0, [0]),
    "Q5_1": (32, 24, ref_q5_1, [0, 2]),
    "Q2_K": (256, 84, ref_q2_k, [80, 82]),
    "Q3_K": (256, 110, ref_q3_k, [108]),
    "Q4_K": (256, 144, ref_q4_k, [0, 2]),
    "Q5_K": (256, 176, ref_q5_k, [0, 2]),
    "Q6_K": (256, 210, ref_q6_k, [208]),
}


def random_blocks(rng, n, nbytes, f16_at):
    b = rng.integers(0, 256, size=(n, nbytes), dtype=np.uint8)
    for at in f16_at:
        h = rng.integers(0, 65536, size=n, dtype=np.uint32)
        bad = (h & 0x7C00) == 0x7C00  # Inf or NaN: draw a finite one instead
        h[bad] &= 0xBFFF                # clears the exponent's top bit: finite
        special = np.array([0x7BFF, 0xFBFF, 0x0001, 0x8001, 0x03FF, 0x0000, 0x8000, 0x3C00, 0x0400], dtype=np.uint32)
        m = min(n, special.size)
        h[:m] = np.roll(special, at)[:m]  # the first blocks: extreme scales (largest, subnormal, zeros)
        b[:, at] = (h & 0xFF).astype(np.uint8)
        b[:, at + 1] = (h >> 8).astype(np.uint8)
    return b


def run_c(name, src_bytes, count, isa, offset):
    """Our decoder on src placed at `offset` bytes into a buffer; isa None = sts_dequantize."""
    buf = np.zeros(src_bytes.size + offset + 64, dtype=np.uint8)
    buf[offset:offset + src_bytes.size] = src_bytes
    out = np.full(count, np.nan, dtype=F32)
    addr = buf.ctypes.data + offset
    if isa is None:
        r = lib.sts_dequantize(out.ctypes.data, addr, name.encode(), count)
    else:
        r = lib.sts_test_dequantize_at(out.ctypes.data, addr, name.encode(), count, isa)
    if r != 0:
        raise RuntimeError("%s: result %d" % (name, r))
    return out


def main():
    rng = np.random.default_rng(20240614)
    best = lib.sts_test_dequant_isa()
    levels = list(range(best + 1))
    print("check_dequant_numpy: levels %s, %s" % (", ".join(ISA_NAMES[i] for i in levels), "quick" if QUICK else "full"))
    nblocks = 64 if QUICK else 4096
    for name, (elems, nbytes, ref, f16_at) in TYPES.items():
        e, by = ctypes.c_uint32(0), ctypes.c_uint32(0)
        ok = lib.sts_dequantize_block(name.encode(), ctypes.byref(e), ctypes.byref(by)) == 1
        report("%s geometry" % name, ok and e.value == elems and by.value == nbytes,
               "%d elements, %d bytes" % (e.value, by.value))
        blocks = random_blocks(rng, nblocks, nbytes, f16_at)
        want = ref(blocks).astype(F32).reshape(-1)
        assert want.dtype == F32 and want.size == nblocks * elems
        if not np.all(np.isfinite(want)):
            report("%s reference finite" % name, False, "the reference produced Inf/NaN from finite scales")
        flat = blocks.reshape(-1)
        for isa in [None] + levels:
            for offset in (0, 1, 3):
                if isa is not None and offset and QUICK:
                    continue
                got = run_c(name, flat, nblocks * elems, isa, offset)
                bad = np.nonzero(got.view(np.uint32) != want.view(np.uint32))[0]
                label = "%s %s src+%d" % (name, "sts_dequantize" if isa is None else ISA_NAMES[isa], offset)
                if bad.size:
                    i = bad[0]
                    report(label, False, "%d of %d differ; first at element %d (block %d): ours %r (0x%08x), numpy %r (0x%08x)"
                           % (bad.size, want.size, i, i // elems, float(got[i]), int(got.view(np.uint32)[i]),
                              float(want[i]), int(want.view(np.uint32)[i])))
                else:
                    report(label, True, "%d blocks, %d floats bit-exact" % (nblocks, want.size))
        # every partial count: a prefix of k blocks decodes as the first k blocks
        for k in (1, 2, 3, 7):
            got = run_c(name, flat[:k * nbytes].copy(), k * elems, None, 0)
            report("%s %d blocks" % (name, k), np.array_equal(got.view(np.uint32), want[:k * elems].view(np.uint32)))
    print("check_dequant_numpy: %d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
