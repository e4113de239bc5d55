#!/usr/bin/python3
"""The .npy support of sts, checked with numpy on both ends.

    /usr/bin/python3 tests/test_npy.py [path/to/sts]      (default ./sts)

numpy writes .npy files (format versions 1.0, 2.0 and 3.0) of every element type that maps to a
safetensors dtype (bool, int8..uint64, float16/32/64, complex64) and of several shapes (per-row
scalars, 1-D, 3-D, empty); `sts pack` packs them into datasets in batch and KV mode, with and
without --dtype; `sts get --npy` writes tensors back and numpy reads them and compares exactly. For
--dtype the expected values come from an exact rational model of the documented conversion rules
(F16/BF16 targets: truncate = round toward zero with finite overflow to max, nearest_even = IEEE;
other float targets nearest even; float -> integer truncates toward zero and saturates, NaN -> 0;
integer -> integer saturates). BF16 has no numpy type: `sts get --npy` must refuse it clearly,
and `sts convert --dtype F32` followed by get must work. Fortran-order, big-endian, object and
structured arrays must be refused by `sts pack` with a clear message and exit 1. The summary line
of each --dtype pack must count exactly the values the model says do not fit the target (saturated,
or overflowed to inf) and name the rounding; the CLI's default rounding is nearest_even. --name-col
takes key columns of every integer type, --keys - reads standard input, get -o - equals get -o FILE.

Every check runs; each failure is printed; the exit code is 1 if any check failed.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from fractions import Fraction
from concurrent.futures import ThreadPoolExecutor

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STS = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "sts"))
WORK = tempfile.mkdtemp(prefix="sts-npy.")
checks = 0
failures = []
lock = threading.Lock()
warnings.simplefilter("ignore", RuntimeWarning)   # overflow to inf while making float16 samples is intended


def check(ok, what, detail=""):
    global checks
    with lock:
        checks += 1
        if not ok:
            failures.append(what)
            print("FAIL %s%s" % (what, ("\n     " + detail.replace("\n", "\n     ")) if detail else ""), flush=True)
    return ok


def sts(*args):
    p = subprocess.run([STS] + [str(a) for a in args], cwd=WORK, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       env=dict(os.environ, LC_ALL="C"))
    return p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")


def path(*parts):
    return os.path.join(WORK, *parts)


def write_npy(name, arr, version=(1, 0)):
    with open(path(name), "wb") as f:
        np.lib.format.write_array(f, arr, version=version, allow_pickle=False)
    with open(path(name), "rb") as f:
        assert f.read(8)[6] == version[0]
    return name


def same(got, want):
    """Exact: dtype, shape and every value (NaN equal to NaN, -0.0 distinct from 0.0)."""
    if got.dtype != want.dtype or got.shape != want.shape:
        return False
    if want.dtype.kind in "fc":
        g, w = got.reshape(-1), want.reshape(-1)
        if want.dtype.kind == "c":
            g, w = g.view(np.float32), w.view(np.float32)
        return bool(np.all((np.isnan(g) & np.isnan(w)) | ((g == w) & (np.signbit(g) == np.signbit(w)))))
    return got.tobytes() == want.tobytes()


def describe(got, want):
    return "want %s %s %r\n got %s %s %r" % (want.dtype, want.shape, want.ravel()[:12].tolist(),
                                             got.dtype, got.shape, got.ravel()[:12].tolist())


def get_npy(ds, key, out):
    """sts get DS KEY -o OUT --npy; numpy loads OUT. Returns (array or None, message)."""
    rc, _, err = sts("get", ds, key, "-o", out, "--npy") if not key.startswith("-") else sts("get", ds, "--", key, "-o", out, "--npy")
    if rc != 0:
        return None, "sts get %s %s: exit %d: %s" % (ds, key, rc, err.strip())
    try:
        return np.load(path(out), allow_pickle=False), ""
    except Exception as e:  # noqa: BLE001 - any numpy failure is a test failure
        return None, "numpy cannot load what sts get wrote: %s" % e


def parallel(fn, items):
    with ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as ex:
        return list(ex.map(fn, items))


# ---- arrays of every supported element type ----------------------------------------------------
ROWS = 3
DTYPES = ["bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
          "float16", "float32", "float64", "complex64"]


def sample(dtype, shape, seed):
    """Deterministic values covering each type's extremes (and NaN, Inf, -0.0 for floats)."""
    n = int(np.prod(shape))
    dt = np.dtype(dtype)
    if dt.kind == "b":
        flat = np.array([(i * 7 + seed) % 3 == 0 for i in range(n)], dtype=bool)
    elif dt.kind in "iu":
        info = np.iinfo(dt)
        edge = [info.min, info.max, 0, 1, info.max - 1, info.min + 1 if dt.kind == "i" else 2]
        flat = np.array([edge[i % 6] if (i + seed) % 4 == 0 else (i * 2654435761 + seed * 97) % (int(info.max) + 1) for i in range(n)],
                        dtype=object).astype(dt)
    elif dt.kind == "f":
        special = [0.0, -0.0, np.inf, -np.inf, np.nan, float(np.finfo(dt).max), float(np.finfo(dt).tiny), 1 / 3]
        flat = np.array([special[i % 8] if (i + seed) % 3 == 0 else (i - n / 2) * 0.37 + seed for i in range(n)], dtype=np.float64).astype(dt)
    else:
        flat = (np.arange(n) * 0.5 + seed).astype(np.float32) + 1j * (np.arange(n) * -1.25).astype(np.float32)
        flat = flat.astype(np.complex64)
    return flat.reshape(shape)


SHAPES = {"s": (ROWS,), "t": (ROWS, 2, 3), "e": (ROWS, 0)}   # per row: scalar, (2, 3), empty (0,)
VERSIONS = [(1, 0), (2, 0), (3, 0)]
columns = {}   # column name -> array
files = {}     # column name -> .npy file
for i, dt in enumerate(DTYPES):
    for j, (tag, shape) in enumerate(SHAPES.items()):
        name = "%s_%s" % (tag, dt)
        columns[name] = sample(dt, shape, i + 1)
        files[name] = write_npy(name + ".npy", columns[name], VERSIONS[(i + j) % 3])


def pack(out, cols, *opts):
    args = ["pack", out, "--no-fsync"]
    for c in cols:
        args += ["--column", "%s=%s" % (c, files[c])]
    return sts(*args, *opts)


def manifest(ds):
    with open(path(ds, "dataset_manifest.json")) as f:
        return json.load(f)


def main():
    t0 = time.time()
    for name, n in (("keys.txt", ROWS), ("keys2.txt", 2)):
        with open(path(name), "w") as f:
            f.write("".join("k%d\n" % r for r in range(n)))

    # 1. KV mode, every type and shape, back through sts get --npy ------------------------------
    rc, out, err = pack("kv", list(columns), "--keys", "keys.txt", "--generate-index")
    if check(rc == 0, "pack KV of %d columns (every dtype x scalar/3-D/empty rows)" % len(columns), err):
        def one(item):
            r, c = item
            got, msg = get_npy("kv", "k%d__%s" % (r, c), "kv_%d_%s.npy" % (r, c))
            want = columns[c][r]
            return check(got is not None and same(got, want), "KV k%d__%s round trip" % (r, c), msg or describe(got, want))
        parallel(one, [(r, c) for r in range(ROWS) for c in columns])

    # 2. batch mode, same columns, read back shard by shard (sts get on a file) -----------------
    rc, out, err = pack("batch", list(columns), "--batch-size", "2")
    if check(rc == 0, "pack batch of %d columns" % len(columns), err):
        shards = manifest("batch")["shards"]
        check([s["samples_count"] for s in shards] == [2, 1], "batch shards hold 2 and 1 rows", repr(shards))
        items = [(k, s["shard_path"], c) for k, s in enumerate(shards) for c in columns]

        def one(item):
            k, shard, c = item
            got, msg = get_npy(os.path.join("batch", shard), c, "b_%d_%s.npy" % (k, c))
            want = columns[c][2 * k:2 * k + 2]
            return check(got is not None and same(got, want), "batch shard %d column %s round trip" % (k, c), msg or describe(got, want))
        parallel(one, items)

    # 3. the three .npy versions, explicitly, for one array --------------------------------------
    arr = sample("float32", (ROWS, 4), 9)
    for v in VERSIONS:
        name = write_npy("v%d.npy" % v[0], arr, v)
        rc, _, err = sts("pack", "ver%d" % v[0], "--no-fsync", "--column", "a=" + name, "--keys", "keys.txt")
        got, msg = get_npy("ver%d" % v[0], "k1__a", "ver%d_out.npy" % v[0]) if rc == 0 else (None, err)
        check(got is not None and same(got, arr[1]), ".npy version %d.%d read by sts pack" % v, msg or describe(got, arr[1]))
    head = open(path("ver1_out.npy"), "rb").read(10) if os.path.exists(path("ver1_out.npy")) else b""
    check(len(head) == 10 and head[:8] == b"\x93NUMPY\x01\x00" and (10 + (head[8] | head[9] << 8)) % 64 == 0,
          "sts get --npy writes version 1.0 with a 64-byte aligned header", repr(head))

    # 4. empty inputs: zero rows, and a scalar array (no rows axis) ------------------------------
    write_npy("zero_rows.npy", np.zeros((0, 3), np.float32))
    rc, out, err = sts("pack", "zero", "--no-fsync", "--column", "z=zero_rows.npy", "--batch-size", "4")
    check(rc == 0 and manifest("zero")["total_samples"] == 0, "pack of a (0, 3) array: an empty dataset", err)
    write_npy("scalar.npy", np.array(2.5))
    rc, out, err = sts("pack", "scal", "--no-fsync", "--column", "s=scalar.npy", "--batch-size", "1")
    check(rc == 1 and "scalar" in err, "pack refuses a 0-d array (exit 1, says scalar)", "exit %d: %s" % (rc, err))

    # 5. --dtype: every source type into the targets, values from the exact model ----------------
    dtype_tests()

    # 6. BF16 and F8 have no numpy type: get --npy refuses clearly; convert --dtype F32 then works -
    bf16_tests()

    # 7. what numpy can write but sts must refuse -------------------------------------------------
    refusal_tests()

    # 8. --name-col from every integer type; keys from standard input; get -o - ---------------------
    key_tests()

    print("test_npy: %d checks, %d failed (%.1fs)" % (checks, len(failures), time.time() - t0))
    return 1 if failures else 0


# ---- the exact model of --dtype ----------------------------------------------------------------
FLOAT_FORMATS = {  # target: (precision p incl. the implicit bit, emin, emax)
    "F16": (11, -14, 15), "BF16": (8, -126, 127), "F32": (24, -126, 127), "F64": (53, -1022, 1023)}
INT_RANGES = {"U8": (0, 2**8 - 1), "I8": (-2**7, 2**7 - 1), "U16": (0, 2**16 - 1), "I16": (-2**15, 2**15 - 1),
              "U32": (0, 2**32 - 1), "I32": (-2**31, 2**31 - 1), "U64": (0, 2**64 - 1), "I64": (-2**63, 2**63 - 1)}
NUMPY_OF = {"F16": np.float16, "F32": np.float32, "F64": np.float64, "BF16": np.float32,  # BF16 read back as F32
            "U8": np.uint8, "I8": np.int8, "U16": np.uint16, "I16": np.int16, "U32": np.uint32, "I32": np.int32,
            "U64": np.uint64, "I64": np.int64}


def round_to(q, fmt, nearest):
    """An exact rational q rounded into a float format; returns a Python float (exact)."""
    p, emin, emax = FLOAT_FORMATS[fmt]
    if q == 0:
        return 0.0
    neg, a = q < 0, abs(q)
    e = a.numerator.bit_length() - a.denominator.bit_length()
    if Fraction(2) ** e > a:
        e -= 1
    e = max(e, emin)
    quantum = Fraction(2) ** (e - p + 1)
    m = a / quantum
    n = m.numerator // m.denominator
    r = m - n
    if nearest and (r > Fraction(1, 2) or (r == Fraction(1, 2) and n % 2 == 1)):
        n += 1
    res = n * quantum
    top = (2 - Fraction(2) ** (1 - p)) * Fraction(2) ** emax
    if res > top:
        res = None if nearest else top
    value = float("inf") if res is None else float(res)
    return -value if neg else value


def model(values, target, nearest):
    """The documented result of encoding values (a numpy array) to target, as a numpy array."""
    out = []
    for v in values.ravel().tolist():
        if isinstance(v, bool):
            v = int(v)
        if target in FLOAT_FORMATS:
            if isinstance(v, float) and (v != v or v in (float("inf"), float("-inf"))):
                out.append(v)
            elif isinstance(v, float) and v == 0:
                out.append(v)   # keeps the sign of -0.0
            else:
                out.append(round_to(Fraction(v), target, nearest or target in ("F32", "F64")))
        else:
            lo, hi = INT_RANGES[target]
            if isinstance(v, float):
                v = 0 if v != v else (hi if v == float("inf") else lo if v == float("-inf") else int(v))
            out.append(min(max(v, lo), hi))
    dt = NUMPY_OF[target]
    arr = np.array(out, dtype=object if dt in (np.uint64, np.int64) else np.float64).astype(dt) if out else np.zeros(0, dt)
    return arr.reshape(values.shape)


# sources the dataset writer takes as array elements today, and the other numeric types
DTYPE_SOURCES = ["int8", "uint8", "int16", "int32", "int64", "float32", "float64",
                 "float16", "uint16", "uint32", "uint64", "bool"]
DTYPE_TARGETS = [("F32", None), ("F64", None), ("F16", "truncate"), ("F16", "nearest_even"), ("F16", None),
                 ("BF16", "truncate"), ("BF16", "nearest_even"), ("BF16", None), ("I16", None), ("U8", None), ("I64", None)]


def out_of_range(values, target, nearest):
    """How many values the documented conversion cannot hold: integers saturate (NaN and +-Inf
    too); F16/BF16 under truncate saturate at the largest finite value; float targets rounding to
    nearest overflow to inf. NaN and Inf into a float target are kept, not counted."""
    n = 0
    for v in values.ravel().tolist():
        if isinstance(v, bool):
            v = int(v)
        if target in FLOAT_FORMATS:
            if isinstance(v, float) and (v != v or v in (float("inf"), float("-inf"))):
                continue
            near = nearest or target in ("F32", "F64")
            r = round_to(Fraction(v), target, near)
            p, emin, emax = FLOAT_FORMATS[target]
            top = (2 - Fraction(2) ** (1 - p)) * Fraction(2) ** emax
            n += (r in (float("inf"), float("-inf"))) if near else abs(Fraction(v)) > top
        else:
            lo, hi = INT_RANGES[target]
            if isinstance(v, float) and (v != v or v in (float("inf"), float("-inf"))):
                n += 1
            else:
                n += not lo <= int(v) <= hi
    return n


def summary_count(out):
    """The N of "N value(s) saturated" / "N value(s) overflowed to inf" in a summary line (0 if absent)."""
    import re
    m = re.search(r", (\d+) values? (saturated|overflowed to inf)", out)
    return int(m.group(1)) if m else 0


def dtype_tests():
    src = {}
    for i, dt in enumerate(DTYPE_SOURCES):
        a = sample(dt, (2, 8), 20 + i)
        if dt.startswith("float"):   # plus values where the roundings differ, ties and overflow
            extra = np.array([1 / 3, 2 / 3, 1.0009765625, 1 + 2**-11, 65520.0, 70000.0, -1e-9, 3.0e38], np.float64)
            a = np.concatenate([a.reshape(-1), extra.astype(dt)]).reshape(2, 12)
        src[dt] = a
        files["d_" + dt] = write_npy("d_%s.npy" % dt, a)
    supported = DTYPE_SOURCES[:7]

    refused = {}   # source -> [(target label, message)] for packs that failed

    def run(job):
        target, rounding, sources, tag = job
        ds = "dt_%s_%s_%s" % (target, rounding or "x", tag)
        opts = ["--batch-size", "2", "--dtype", target] + (["--rounding", rounding] if rounding else [])
        rc, out, err = pack(ds, ["d_" + s for s in sources], *opts)
        label = "--dtype %s%s" % (target, " --rounding " + rounding if rounding else "")
        if rc != 0:
            with lock:
                refused.setdefault(tag, []).append((label, "exit %d: %s" % (rc, err.strip())))
            return
        nearest = rounding != "truncate"   # the CLI's default is nearest_even
        want_n = sum(out_of_range(src[s], target, nearest) for s in sources)
        check(summary_count(out) == want_n, "%s of %s: the summary counts the %d values out of range" % (label, "/".join(sources), want_n),
              out.strip())
        check(target not in ("F16", "BF16") or ("rounding %s" % (rounding or "nearest_even")) in out,
              "%s: the summary names the rounding used" % label, out.strip())
        shard = os.path.join(ds, manifest(ds)["shards"][0]["shard_path"])
        if target == "BF16":   # no numpy type: through sts convert --dtype F32 (exact)
            conv = ds + "_f32.safetensors"
            rc, _, err = sts("convert", shard, conv, "--dtype", "F32")
            if not check(rc == 0, "convert the %s shard to F32" % label, err):
                return
            shard = conv
        for s in sources:
            got, msg = get_npy(shard, "d_" + s, ds + "_" + s + ".npy")
            want = model(src[s], target, rounding != "truncate")
            check(got is not None and same(got, want), "%s: %s column" % (label, s), msg or describe(got, want))

    jobs = []
    for target, rounding in DTYPE_TARGETS:
        jobs.append((target, rounding, supported, "supported"))
        for s in DTYPE_SOURCES[7:]:   # one pack each: a refusal names the one source type
            jobs.append((target, rounding, [s], s))
    parallel(run, jobs)
    targets = ", ".join(t + ("/" + r if r else "") for t, r in DTYPE_TARGETS)
    for tag in ["supported"] + DTYPE_SOURCES[7:]:   # one verdict per source type over every target
        what = "/".join(supported) if tag == "supported" else tag
        bad = refused.get(tag, [])
        check(not bad, "pack --dtype takes %s columns (into %s)" % (what, targets),
              "refused for %d of %d targets, e.g. %s: %s" % (len(bad), len(DTYPE_TARGETS), bad[0][0], bad[0][1]) if bad else "")
    # complex64 has two parts per element: --dtype may refuse it, but clearly, naming the column
    files["d_complex64"] = write_npy("d_complex64.npy", sample("complex64", (2, 3), 5))
    rc, _, err = pack("dt_c64", ["d_complex64"], "--batch-size", "2", "--dtype", "F32")
    check(rc == 0 or (rc in (1, 2) and "d_complex64" in err and ("C64" in err or "complex" in err)),
          "pack --dtype F32 of a complex64 column: done, or refused naming the column and C64", "exit %d: %s" % (rc, err))
    # KV mode with --dtype as well
    rc, _, err = pack("dt_kv", ["d_float32", "d_int16"], "--keys", "keys2.txt", "--dtype", "F16", "--rounding", "nearest_even")
    if check(rc == 0, "pack KV --dtype F16 --rounding nearest_even", err):
        for s in ("float32", "int16"):
            for r in range(2):
                got, msg = get_npy("dt_kv", "k%d__d_%s" % (r, s), "dt_kv_%d_%s.npy" % (r, s))
                want = model(src[s][r], "F16", True)
                check(got is not None and same(got, want), "KV --dtype F16 k%d__d_%s" % (r, s), msg or describe(got, want))


def bf16_tests():
    a = sample("float32", (2, 5), 3)
    write_npy("bf.npy", a)
    rc, _, err = sts("pack", "bf", "--no-fsync", "--column", "w=bf.npy", "--keys", "keys2.txt", "--dtype", "BF16")
    if not check(rc == 0, "pack --dtype BF16 (KV)", err):
        return
    rc, _, err = sts("get", "bf", "k1__w", "-o", "bf_out.npy", "--npy")
    check(rc == 1 and "BF16" in err and "convert" in err and not os.path.exists(path("bf_out.npy")),
          "get --npy of a BF16 tensor: exit 1, names BF16 and sts convert, writes nothing", "exit %d: %s" % (rc, err))
    rc, _, err = sts("get", "bf", "k1__w", "-o", "bf_raw.bin")
    check(rc == 0 and os.path.getsize(path("bf_raw.bin")) == 10, "get of a BF16 tensor without --npy: raw bytes", err)
    shard = os.path.join("bf", manifest("bf")["shards"][0]["shard_path"])
    os.mkdir(path("bf32"))
    rc, out, err = sts("convert", shard, "bf32/all.safetensors", "--dtype", "F32")
    if check(rc == 0, "convert --dtype F32 of the BF16 shard", err):
        got, msg = get_npy("bf32", "k1__w", "bf32_out.npy")
        want = model(a[1], "BF16", True)   # the CLI's one default rounding: nearest_even (pack as convert)
        check(got is not None and same(got, want), "BF16 -> convert F32 -> get --npy equals the values rounded to nearest even", msg or describe(got, want))
        raw = np.frombuffer(open(path("bf_raw.bin"), "rb").read(), "<u2").astype(np.uint32) << 16
        check(got is not None and raw.view(np.float32).tobytes() == got.tobytes(), "convert F32 is exact on the BF16 bits")
    f8 = os.path.join(ROOT, "tests", "conformance", "shared", "v_dtype_06_F8_E5M2.safetensors")
    rc, _, err = sts("get", f8, "t", "-o", "f8.npy", "--npy")
    check(rc == 1 and "F8_E5M2" in err and not os.path.exists(path("f8.npy")), "get --npy of an F8 tensor: exit 1, names the dtype", "exit %d: %s" % (rc, err))


def refusal_tests():
    base = np.arange(12, dtype=np.float32).reshape(3, 4)
    cases = [
        ("fortran", np.asfortranarray(base), False, "Fortran"),
        ("bigendian_f4", base.astype(">f4"), False, "big-endian"),
        ("bigendian_i8", np.arange(3, dtype=">i8"), False, "big-endian"),
        ("bigendian_c8", np.arange(3, dtype=">c8"), False, "big-endian"),
        ("object", np.array([1, "two", None], dtype=object), True, "object"),
        ("structured", np.zeros(3, dtype=[("a", "<i4"), ("b", "<f4")]), False, "structured"),
        ("complex128", np.arange(3, dtype=np.complex128), False, "c16"),
        ("longdouble", np.arange(3, dtype=np.longdouble), False, "no safetensors dtype"),
        ("unicode", np.array(["a", "bc", "d"]), False, "no safetensors dtype"),
        ("datetime", np.array(["2024-01-01"] * 3, dtype="datetime64[D]"), False, "no safetensors dtype"),
    ]
    for name, arr, pickle, needle in cases:
        with open(path(name + ".npy"), "wb") as f:
            np.lib.format.write_array(f, arr, allow_pickle=pickle)
        rc, out, err = sts("pack", "ref_" + name, "--no-fsync", "--column", "c=%s.npy" % name, "--batch-size", "2")
        check(rc == 1 and needle in err and name + ".npy" in err and out == "" and
              not os.path.exists(path("ref_" + name, "dataset_manifest.json")),
              "pack refuses %s arrays (exit 1, message names the file and says %r)" % (name, needle), "exit %d: %s" % (rc, err.strip()))
    # the same data in C order and little-endian is accepted
    write_npy("fixed.npy", np.ascontiguousarray(base.astype("<f4")))
    rc, _, err = sts("pack", "ref_fixed", "--no-fsync", "--column", "c=fixed.npy", "--batch-size", "2")
    check(rc == 0, "the C-order little-endian copy packs", err)


def key_tests():
    """--name-col takes any integer column (int8 ... uint64): each value, written as numpy prints it,
    is a key; --keys - reads standard input; get -o - writes what get -o FILE writes."""
    data = sample("float32", (6, 2), 11)
    write_npy("kt_data.npy", data)
    for dt in ("int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64"):
        info = np.iinfo(dt)
        ids = np.array([info.min, info.max, 5, 1, info.max - 1, info.min + 1 if info.min else 2], dtype=dt)
        write_npy("kt_%s.npy" % dt, ids)
        rc, _, err = sts("pack", "kt_" + dt, "--no-fsync", "--column", "id=kt_%s.npy" % dt, "--column", "v=kt_data.npy",
                         "--name-col", "id")
        if not check(rc == 0, "pack --name-col with a %s key column" % dt, err):
            continue
        for r, k in enumerate(ids.tolist()):
            got, msg = get_npy("kt_" + dt, "%d__v" % k, "kt_%s_%d.npy" % (dt, r))
            check(got is not None and same(got, data[r]), "--name-col %s: key %d finds row %d" % (dt, k, r), msg or describe(got, data[r]))
    keys = "".join("s%d\n" % r for r in range(6)).encode()
    p = subprocess.run([STS, "pack", "kt_stdin", "--no-fsync", "--column", "v=kt_data.npy", "--keys", "-"], cwd=WORK, input=keys,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if check(p.returncode == 0, "pack --keys - reads the keys from standard input", p.stderr.decode(errors="replace")):
        got, msg = get_npy("kt_stdin", "s4__v", "kt_stdin_4.npy")
        check(got is not None and same(got, data[4]), "--keys -: key s4 finds row 4", msg or describe(got, data[4]))
        p = subprocess.run([STS, "get", "kt_stdin", "s4__v", "--npy", "-o", "-"], cwd=WORK, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        check(p.returncode == 0 and p.stdout == open(path("kt_stdin_4.npy"), "rb").read(),
              "get --npy -o - writes the bytes get --npy -o FILE writes", p.stderr.decode(errors="replace"))


if __name__ == "__main__":
    try:
        sys.exit(main())
    finally:
        shutil.rmtree(WORK, ignore_errors=True)
