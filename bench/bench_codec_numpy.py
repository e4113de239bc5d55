#!/usr/bin/python3
"""numpy's astype on the bench_codec cases, for comparison (bench/codec.mk runs it after bench_codec).

Same input size (256 MiB, or --mib N), same kind of values (weights ~ N(0, 0.02)), median of
--rounds (default 7) timed runs after one warm-up; GB/s counts input plus output bytes (1e9).
np.copyto of the same 256 MiB is the same-run baseline. numpy has no bfloat16."""
import sys
import time

import numpy as np


def median_time(fn, rounds):
    fn()
    ts = []
    for _ in range(rounds):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    ts.sort()
    return ts[len(ts) // 2]


def main():
    mib, rounds = 256, 7
    args = sys.argv[1:]
    while args:
        a = args.pop(0)
        if a == "--mib":
            mib = int(args.pop(0))
        elif a == "--rounds":
            rounds = int(args.pop(0))
    nbytes = mib << 20
    rng = np.random.default_rng(1)
    f32 = (rng.standard_normal(nbytes // 4) * 0.02).astype(np.float32)
    f16 = (rng.standard_normal(nbytes // 2) * 0.02).astype(np.float16)
    out16 = np.empty(f32.size, np.float16)
    out32 = np.empty(f16.size, np.float32)
    cpy = np.empty_like(f32)
    cases = [
        ("np.copyto (memcpy)", 2 * nbytes, lambda: np.copyto(cpy, f32)),
        ("F32 -> F16 astype", nbytes + nbytes // 2, lambda: np.copyto(out16, f32, casting="unsafe")),
        ("F16 -> F32 astype", nbytes + 2 * nbytes, lambda: np.copyto(out32, f16, casting="unsafe")),
    ]
    print("bench_codec_numpy: numpy %s, input %d MiB, median of %d" % (np.__version__, mib, rounds))
    base = None
    for name, moved, fn in cases:
        t = median_time(fn, rounds)
        rate = moved / t / 1e9
        base = base or rate
        print("  %-22s %8.1f ms %8.2f GB/s  %5.2f x copy" % (name, t * 1e3, rate, rate / base))


if __name__ == "__main__":
    main()
