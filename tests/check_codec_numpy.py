#!/usr/bin/python3
"""Cross-checks sts_convert (layer 7) against numpy.

Usage: check_codec_numpy.py build/codec/libsts_codec.so
The library is called through ctypes. STS_TEST_LEVEL=quick samples the 2^32 sweep.

  1. F32 -> F16 nearest-even equals astype(np.float16) for every F32 pattern (NaN by class), and
     F32 -> F16 truncation equals numpy's result stepped one unit toward zero wherever numpy
     rounded away from zero (IEEE round-toward-zero derived from numpy's rounding).
  2. F16 -> F32 and F16 -> F64 equal astype for all 65,536 patterns.
  3. F32 -> BF16 nearest-even equals a rounding computed in numpy float64 from the two
     neighbouring BF16 values and their midpoint (numpy has no bfloat16); truncation is the top 16
     bits; BF16 -> F32 equals the bits shifted left by 16.
  4. Integer and float conversions between numpy's types agree with astype for in-range values,
     F64 -> F32 / F16 and 64-bit integers -> F32 / F64 for all values (numpy rounds to nearest).
  5. Out-of-range and NaN values follow our rule (truncate, saturate, NaN -> 0), asserted
     directly: numpy wraps or is undefined there.
Prints one line per check and "check_codec_numpy: N passed, M failed"; exits 1 on any failure.
"""
import ctypes
import os
import sys
import time

import numpy as np

QUICK = os.environ.get("STS_TEST_LEVEL") == "quick" or os.environ.get("CODEC_NUMPY_QUICK") == "1"
TRUNC, NEAREST = 0, 1

lib = ctypes.CDLL(sys.argv[1] if len(sys.argv) > 1 else "build/codec/libsts_codec.so")
lib.sts_convert.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t, ctypes.c_int]
lib.sts_convert.restype = ctypes.c_int
lib.sts_dtype_name.argtypes = [ctypes.c_int]
lib.sts_dtype_name.restype = ctypes.c_char_p
lib.sts_convert_isa.restype = ctypes.c_char_p
DT = {}
for i in range(64):
    name = lib.sts_dtype_name(i).decode()
    if name == "?":
        break
    DT[name] = i

NP = {"F16": np.float16, "F32": np.float32, "F64": np.float64, "U8": np.uint8, "I8": np.int8,
      "U16": np.uint16, "I16": np.int16, "U32": np.uint32, "I32": np.int32, "U64": np.uint64,
      "I64": np.int64, "BF16": np.uint16}

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


def conv(arr, src, dst, rounding):
    """sts_convert of a contiguous little-endian array; returns a numpy array of dst's type."""
    arr = np.ascontiguousarray(arr)
    out = np.empty(arr.size, dtype=NP[dst])
    r = lib.sts_convert(out.ctypes.data, DT[dst], arr.ctypes.data, DT[src], arr.size, rounding)
    if r != 0:
        raise RuntimeError("sts_convert %s -> %s returned %d" % (src, dst, r))
    return out


def same_or_both_nan(ours, ref, float_view=None):
    """Indices where ours and ref differ in bits, unless both are NaN (judged as float_view)."""
    a = ours.view(np.uint8).reshape(ours.size, -1)
    b = ref.view(np.uint8).reshape(ref.size, -1)
    bad = np.nonzero((a != b).any(axis=1))[0]
    if bad.size and float_view is not None:
        fa, fb = ours.view(float_view)[bad], ref.view(float_view)[bad]
        bad = bad[~(np.isnan(fa) & np.isnan(fb))]
    return bad


def first(bad, src, ours, ref):
    i = bad[0]
    return "%d mismatches, first: input 0x%x -> ours 0x%x, numpy 0x%x" % (
        bad.size, int(src.view(np.uint32 if src.itemsize == 4 else src.dtype)[i]) if src.itemsize <= 4 else 0,
        int(ours.view(np.uint8)[i * ours.itemsize:(i + 1) * ours.itemsize][::-1].tobytes().hex() or "0", 16),
        int(ref.view(np.uint8)[i * ref.itemsize:(i + 1) * ref.itemsize][::-1].tobytes().hex() or "0", 16))


# ---- 1. F32 -> F16 for every pattern ------------------------------------------------------------
CHUNK = 1 << 24


def f16_chunk(job):
    """Worker: nearest-even over the patterns [lo, hi) | sign. kind "numpy": equal to astype; "zero"
    or "inf": every result is that constant (numpy agrees there, checked on a sample).
    Returns (patterns, mismatches, first)."""
    lo, hi, sign, kind = job
    np.seterr(all="ignore")
    bits = np.arange(lo, hi, dtype=np.uint64).astype(np.uint32) | np.uint32(sign)
    ours = conv(bits, "F32", "F16", NEAREST)
    if kind == "numpy":
        ref = bits.view(np.float32).astype(np.float16)
        if np.array_equal(ours.view(np.uint16), ref.view(np.uint16)):
            return bits.size, 0, ""
        bad = same_or_both_nan(ours, ref, np.float16)
        want = ref.view(np.uint16)
    else:
        want = np.full(bits.size, (sign >> 16) | (0x7c00 if kind == "inf" else 0), dtype=np.uint16)
        bad = np.nonzero(ours.view(np.uint16) != want)[0]
    if not bad.size:
        return bits.size, 0, ""
    return bits.size, int(bad.size), "F32 0x%08x -> ours 0x%04x, want 0x%04x" % (bits[bad[0]], ours.view(np.uint16)[bad[0]], want[bad[0]])


def f32_sample():
    """Every 4099th F32 pattern, edges, and 2^20 random ones."""
    edges = np.array([0x33000000, 0x33000001, 0x387fe000, 0x38800000, 0x477fe000, 0x477fefff, 0x477ff000,
                      0x7f7fffff, 0x7f800000, 0x7f800001, 0x7fc00000, 1, 0x3f801000, 0x3f803000], dtype=np.uint32)
    return np.concatenate([np.arange(0, 1 << 32, 4099, dtype=np.uint64).astype(np.uint32), edges,
                           edges | np.uint32(0x80000000),
                           np.random.default_rng(7).integers(0, 1 << 32, 1 << 20, dtype=np.uint64).astype(np.uint32)])


def check_f32_to_f16():
    t0 = time.time()
    # nearest even: every pattern (two worker processes), or the sample under QUICK
    if QUICK:
        bits = f32_sample()
        ref = bits.view(np.float32).astype(np.float16)
        bad = same_or_both_nan(conv(bits, "F32", "F16", NEAREST), ref, np.float16)
        n, nbad, msg = bits.size, int(bad.size), ("first F32 0x%08x" % bits[bad[0]]) if bad.size else ""
    else:
        # numpy raises the overflow / underflow flag for each such element (~80 ns), which makes
        # astype over all 2^32 patterns take minutes. So: every pattern whose F16 result varies,
        # |x| in [2^-25, 65520] and the Inf/NaN block, is compared with astype itself; in the two
        # saturated ranges below (result +-0) and above (+-Inf) every pattern is checked to give
        # that constant, and astype is compared on every 4099th pattern there.
        import multiprocessing
        LO, HI = 0x33000000, 0x477ff000 + 1
        ranges = [(LO, HI, "numpy"), (0x7f800000, 0x80000000, "numpy"), (0, LO, "zero"), (HI, 0x7f800000, "inf")]
        jobs = [(a, min(a + CHUNK, hi), sg, kind) for lo, hi, kind in ranges for sg in (0, 0x80000000)
                for a in range(lo, hi, CHUNK)]
        n, nbad, msg, n_np = 0, 0, "", 0
        with multiprocessing.get_context("fork").Pool(2) as pool:
            for job, (k, b, m) in zip(jobs, pool.imap(f16_chunk, jobs)):
                n += k
                n_np += k if job[3] == "numpy" else 0
                nbad += b
                msg = msg or m
        bits = np.concatenate([np.arange(0, LO, 4099, dtype=np.uint32), np.arange(HI, 0x7f800000, 4099, dtype=np.uint32)])
        bits = np.concatenate([bits, bits | np.uint32(0x80000000)])
        bad = same_or_both_nan(conv(bits, "F32", "F16", NEAREST), bits.view(np.float32).astype(np.float16), np.float16)
        nbad += bad.size
        msg = msg or (("saturated sample: F32 0x%08x" % bits[bad[0]]) if bad.size else "")
        msg = "(%d compared with astype, %d with the saturated constant + %d sampled with astype) %s" % (
            n_np, n - n_np, bits.size, msg)
    report("F32 -> F16 nearest == astype(float16)", nbad == 0,
           "%d patterns, %d mismatches (%.1f s) %s" % (n, nbad, time.time() - t0, msg))
    # round-toward-zero: numpy's nearest, stepped one unit back where it went away from zero
    bits = np.concatenate([f32_sample(), np.arange(0x33000000, 0x33000000 + (1 << 22), dtype=np.uint32),
                           np.arange(0x477f0000, 0x477f0000 + (1 << 20), dtype=np.uint32)])
    bits = np.concatenate([bits, bits ^ np.uint32(0x80000000)])
    x = bits.view(np.float32)
    ref = x.astype(np.float16)
    rb = ref.view(np.uint16)
    away = np.abs(ref.astype(np.float32)) > np.abs(x)
    rz = np.where(away, rb - np.uint16(1), rb).astype(np.uint16)
    ours = conv(bits, "F32", "F16", TRUNC)
    bad = same_or_both_nan(ours, rz, np.float16)
    report("F32 -> F16 truncate == numpy-derived round-toward-zero", bad.size == 0,
           "%d patterns, %d mismatches%s" % (bits.size, bad.size, (" first F32 0x%08x -> 0x%04x want 0x%04x" % (
               bits[bad[0]], ours.view(np.uint16)[bad[0]], rz[bad[0]])) if bad.size else ""))


# ---- 2. F16 -> F32 / F64 ---------------------------------------------------------------------------
def check_f16_decode():
    h = np.arange(65536, dtype=np.uint32).astype(np.uint16)
    f = h.view(np.float16)
    for dst, npt in (("F32", np.float32), ("F64", np.float64)):
        ours = conv(h, "F16", dst, TRUNC)
        bad = same_or_both_nan(ours, f.astype(npt), npt)
        report("F16 -> %s == astype (all 65536)" % dst, bad.size == 0, "%d mismatches" % bad.size if bad.size else "")


# ---- 3. BF16 -------------------------------------------------------------------------------------
def bf16_patterns():
    rng = np.random.default_rng(11)
    parts = [np.arange(0, 1 << 32, 4099 if QUICK else 1031, dtype=np.uint64).astype(np.uint32),
             rng.integers(0, 1 << 32, 1 << (18 if QUICK else 21), dtype=np.uint64).astype(np.uint32)]
    for lo in (0x00000000, 0x3f800000, 0x7f7f0000, 0x00800000 - (1 << 17)):   # whole regions
        parts.append(np.arange(lo, lo + (1 << (17 if QUICK else 20)), dtype=np.uint64).astype(np.uint32))
    b = np.concatenate(parts)
    return np.concatenate([b, b ^ np.uint32(0x80000000)])


def check_bf16():
    bits = bf16_patterns()
    x = bits.view(np.float32)
    mag = bits & np.uint32(0x7fffffff)
    sign = (bits >> np.uint32(16)) & np.uint32(0x8000)
    nan = np.isnan(x)
    lo_bits = mag & np.uint32(0xffff0000)
    lo = lo_bits.view(np.float32).astype(np.float64)
    hi_bits = lo_bits + np.uint32(0x10000)
    with np.errstate(over="ignore", invalid="ignore"):
        hi = np.where(hi_bits == 0x7f800000, 2.0 ** 128, hi_bits.view(np.float32).astype(np.float64))
        v = np.abs(x.astype(np.float64))
        mid = (lo + hi) / 2
        up = (v > mid) | ((v == mid) & (((lo_bits >> np.uint32(16)) & np.uint32(1)) == 1))
    k = (lo_bits >> np.uint32(16)) + up.astype(np.uint32)
    inf_in = mag == 0x7f800000
    k = np.where(inf_in, np.uint32(0x7f80), k)
    want = (sign | k).astype(np.uint16)
    ours = conv(bits, "F32", "BF16", NEAREST)
    bad = np.nonzero((ours != want) & ~nan)[0]
    badnan = np.nonzero(nan & ~(((ours & 0x7f80) == 0x7f80) & ((ours & 0x7f) != 0)))[0]
    report("F32 -> BF16 nearest == numpy float64 midpoint rounding", bad.size == 0 and badnan.size == 0,
           "%d patterns, %d mismatches, %d NaNs lost%s" % (bits.size, bad.size, badnan.size,
           (" first 0x%08x -> 0x%04x want 0x%04x" % (bits[bad[0]], ours[bad[0]], want[bad[0]])) if bad.size else ""))
    ours = conv(bits, "F32", "BF16", TRUNC)
    top = (bits >> np.uint32(16)).astype(np.uint16)
    bad = np.nonzero((ours != top) & ~nan)[0]
    badnan = np.nonzero(nan & ~(((ours & 0x7f80) == 0x7f80) & ((ours & 0x7f) != 0)))[0]
    kept = np.nonzero(nan & ((top & 0x7f) != 0) & (ours != top))[0]
    report("F32 -> BF16 truncate == top 16 bits, NaN stays NaN", bad.size + badnan.size + kept.size == 0,
           "%d patterns, %d mismatches, %d NaNs lost, %d NaN payloads changed" % (bits.size, bad.size, badnan.size, kept.size))
    h = np.arange(65536, dtype=np.uint32).astype(np.uint16)
    ours = conv(h, "BF16", "F32", TRUNC)
    report("BF16 -> F32 == bits << 16 (all 65536)", np.array_equal(ours.view(np.uint32), h.astype(np.uint32) << np.uint32(16)))


# ---- 4. in-range conversions agree with astype ------------------------------------------------------
INTS = ["U8", "I8", "U16", "I16", "U32", "I32", "U64", "I64"]


def irange(t):
    i = np.iinfo(NP[t])
    return int(i.min), int(i.max)


def check_astype_in_range():
    rng = np.random.default_rng(5)
    n = 1 << (14 if QUICK else 17)
    bad_pairs = []
    checked = 0
    for s in INTS:
        smin, smax = irange(s)
        vals = rng.integers(smin, smax, n, dtype=NP[s], endpoint=True)
        vals[:4] = np.array([smin, smax, 0, 1 if smax > 0 else 0], dtype=object).astype(NP[s])
        for d in INTS + ["F32", "F64", "F16", "BF16"]:
            if d in INTS:          # only values inside the target's range
                dmin, dmax = irange(d)
                lo, hi = max(smin, dmin), min(smax, dmax)
                v = vals[(vals >= np.array(lo).astype(NP[s])) & (vals <= np.array(hi).astype(NP[s]))] if lo <= hi else vals[:0]
                ref = v.astype(NP[d])
            elif d == "BF16":
                continue           # numpy has no bfloat16 (integer -> BF16 is covered by test_codec)
            else:
                v = vals
                if d == "F16":
                    v = v[(v.astype(np.float64) > -65504) & (v.astype(np.float64) < 65504)] if s not in ("U8", "I8") else v
                with np.errstate(over="ignore"):
                    ref = v.astype(NP[d])
            for mode in (TRUNC, NEAREST) if d != "F16" else (NEAREST,):
                ours = conv(v, s, d, mode)
                checked += v.size
                if not np.array_equal(ours.view(np.uint8), ref.view(np.uint8)):
                    bad_pairs.append("%s->%s(%d)" % (s, d, mode))
    for s, npt in (("F32", np.float32), ("F64", np.float64), ("F16", np.float16)):
        raw = rng.standard_normal(n) * rng.choice([1.0, 100.0, 3e4, 2e9, 4e18], n)
        vals = raw.astype(npt)
        vals = vals[np.isfinite(vals)]
        for d in INTS:
            dmin, dmax = irange(d)
            t = np.trunc(vals.astype(np.float64))
            keep = (t >= float(dmin)) & (t <= float(dmax)) & (t < 2.0 ** 63) & (t < 2.0 ** 64)
            v = vals[keep]
            ref = v.astype(NP[d])
            for mode in (TRUNC, NEAREST):
                ours = conv(v, s, d, mode)
                checked += v.size
                if not np.array_equal(ours, ref):
                    bad_pairs.append("%s->%s(%d)" % (s, d, mode))
    # float <-> float with numpy's rounding (nearest): F64 -> F32, F64 -> F16, F32 -> F64
    bits64 = rng.integers(0, 1 << 64, n, dtype=np.uint64, endpoint=False)
    f64 = np.concatenate([bits64.view(np.float64), rng.standard_normal(n) * 2.0 ** rng.integers(-160, 160, n)])
    for d, npt in (("F32", np.float32), ("F16", np.float16)):
        with np.errstate(over="ignore", invalid="ignore"):
            ref = f64.astype(npt)
        for mode in (TRUNC, NEAREST) if d == "F32" else (NEAREST,):
            ours = conv(f64, "F64", d, mode)
            checked += f64.size
            if same_or_both_nan(ours, ref, npt).size:
                bad_pairs.append("F64->%s(%d)" % (d, mode))
    f32 = rng.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32).view(np.float32)
    if same_or_both_nan(conv(f32, "F32", "F64", TRUNC), f32.astype(np.float64), np.float64).size:
        bad_pairs.append("F32->F64")
    checked += f32.size
    report("in-range conversions == astype (ints, floats, every 64-bit integer -> F32/F64)", not bad_pairs,
           "%d values checked%s" % (checked, (" bad: " + " ".join(bad_pairs)) if bad_pairs else ""))


# ---- 5. our rule where numpy has none ----------------------------------------------------------------
def check_saturation():
    rng = np.random.default_rng(9)
    vals = np.concatenate([np.array([np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 1e300, -1e300, 2.0 ** 63,
                                     -2.0 ** 63, 2.0 ** 64, -1.0, -0.5, 255.5, 256.0, -129.0, 65536.0,
                                     4294967296.0, -2147483649.0]),
                           rng.standard_normal(4096) * 10.0 ** rng.integers(0, 25, 4096)])
    bad = []
    for s, npt in (("F64", np.float64), ("F32", np.float32)):
        with np.errstate(over="ignore", invalid="ignore"):
            v = vals.astype(npt)
        for d in INTS:
            dmin, dmax = irange(d)
            want = []
            for e in v.astype(np.float64):
                if np.isnan(e):
                    want.append(0)
                else:
                    t = float(np.trunc(e))
                    want.append(dmin if t < dmin else dmax if t > dmax else int(t))
            want = np.array(want, dtype=object).astype(NP[d])
            for mode in (TRUNC, NEAREST):
                if not np.array_equal(conv(v, s, d, mode), want):
                    bad.append("%s->%s" % (s, d))
    for s in INTS:                                   # integer -> integer saturation
        smin, smax = irange(s)
        v = np.array(sorted({smin, smax, 0, 1, smin // 2, smax // 2, max(smin, -1), min(smax, 300),
                             max(smin, -40000), min(smax, 70000), min(smax, 1 << 40)}), dtype=object).astype(NP[s])
        for d in INTS:
            dmin, dmax = irange(d)
            want = np.array([min(max(int(e), dmin), dmax) for e in v], dtype=object).astype(NP[d])
            if not np.array_equal(conv(v, s, d, TRUNC), want):
                bad.append("%s->%s" % (s, d))
    report("saturation and NaN -> 0 (float and integer sources, every integer target)", not bad,
           " ".join(bad) if bad else "%d float values x 8 targets x 2 sources x 2 modes, 8 x 8 integer pairs" % vals.size)


def main():
    np.seterr(all="ignore")   # casts of NaN / out-of-range values are the point of several checks
    t0 = time.time()
    print("check_codec_numpy: numpy %s, %s, isa %s, %s" % (np.__version__, sys.argv[1] if len(sys.argv) > 1 else "",
          lib.sts_convert_isa().decode(), "quick (sampled)" if QUICK else "full"))
    check_f16_decode()
    check_bf16()
    check_astype_in_range()
    check_saturation()
    check_f32_to_f16()
    print("check_codec_numpy: %.1f s" % (time.time() - t0))
    print("check_codec_numpy: %d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
