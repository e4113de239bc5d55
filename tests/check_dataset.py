#!/usr/bin/env python3
"""Cross-checks datasets written by the library against the JSON Schemas and the source rows.

usage: check_dataset.py GEN_DIR [CRASH_DIR]

GEN_DIR holds datasets written by tests/dataset_gen.c: NAME/ (the dataset) with NAME.source.json
and NAME.source.bin beside it (the options and every row handed to the writer). For each:
  - dataset_manifest.json and _tensor_index.json validate against format/*.schema.json
    (jsonschema, draft 2020-12);
  - every shard is read with numpy alone, through the 8-byte length, the header and the data
    offsets (no library code): the header is checked (sorted, contiguous offsets, sizes, padding),
    then every tensor's values are compared with the source rows, converted independently here:
    exact rational rounding to F16 / BF16 / F32 / F64 (round toward zero or to nearest even),
    integers truncated and saturated; F16 read as np.float16, BF16 as (bits << 16) viewed as
    float32;
  - the manifest: sums, sorted shard paths, exact file sizes, samples (real rows only), schema;
  - the index: the CSV (csv module) agrees with the JSON index, total_size is the sum of the data
    bytes, every key points at the shard holding its winner.
CRASH_DIR (optional) holds manifests and JSON indexes that survived kills (test_dataset_write_crash.c
with STS_CRASH_KEEP): each must validate against its schema.
Exit status 0 when everything holds; the problems are printed otherwise.
"""
import csv
import io
import json
import math
import os
import re
import struct
import sys
from fractions import Fraction

import numpy as np
import jsonschema

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARD_RE = re.compile(r"^part-(\d{5,})-(\d{4,})-([0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12})\.safetensors$")

NP = {"BOOL": "u1", "U8": "u1", "I8": "i1", "U16": "<u2", "I16": "<i2", "F16": "<f2", "BF16": "<u2", "U32": "<u4",
      "I32": "<i4", "F32": "<f4", "U64": "<u8", "I64": "<i8", "F64": "<f8"}
BITS = {"BOOL": 8, "F4": 4, "F6_E2M3": 6, "F6_E3M2": 6, "U8": 8, "I8": 8, "F8_E5M2": 8, "F8_E4M3": 8, "F8_E8M0": 8,
        "F8_E4M3FNUZ": 8, "F8_E5M2FNUZ": 8, "I16": 16, "U16": 16, "F16": 16, "BF16": 16, "I32": 32, "U32": 32, "F32": 32,
        "C64": 64, "F64": 64, "I64": 64, "U64": 64}
RANK = list(BITS.keys())  # the reference writer's sort rank
FLOATS = {"F16": (11, -14, 15), "BF16": (8, -126, 127), "F32": (24, -126, 127), "F64": (53, -1022, 1023)}
INTS = {"U8": (8, False), "I8": (8, True), "U16": (16, False), "I16": (16, True), "U32": (32, False), "I32": (32, True),
        "U64": (64, False), "I64": (64, True)}

problems = []


def problem(where, what):
    problems.append(f"{where}: {what}")


# ---- independent conversion -------------------------------------------------------------------
def floor_log2(a):
    """floor(log2(a)) for a positive Fraction."""
    e = a.numerator.bit_length() - a.denominator.bit_length()
    while Fraction(2) ** e > a:
        e -= 1
    while Fraction(2) ** (e + 1) <= a:
        e += 1
    return e


def round_float(x, target, rne):
    """x: a Python int or float (exact). Returns a float (nan, +-inf, +-0.0 included)."""
    p, emin, emax = FLOATS[target]
    if isinstance(x, float):
        if math.isnan(x):
            return math.nan
        if math.isinf(x):
            return x
        if x == 0:
            return x  # keeps the sign of zero
    if x == 0:
        return 0.0  # an integer zero
    neg = x < 0
    a = abs(Fraction(x))
    e = max(floor_log2(a), emin)
    ulp = Fraction(2) ** (e - (p - 1))
    m = a / ulp
    n = m.numerator // m.denominator
    rem = m - n
    if rne and (rem > Fraction(1, 2) or (rem == Fraction(1, 2) and n % 2 == 1)):
        n += 1
    r = n * ulp
    maxfinite = (2 - Fraction(2) ** (1 - p)) * Fraction(2) ** emax
    if r > maxfinite:
        out = math.inf if rne else float(maxfinite)
    else:
        out = float(r)  # exact: r has at most p <= 53 significant bits
    return -out if neg else out


def to_int(x, target):
    bits, signed = INTS[target]
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    if isinstance(x, float):
        if math.isnan(x):
            return 0
        if math.isinf(x):
            return hi if x > 0 else lo
        x = math.trunc(x)  # exact for floats
    return min(max(int(x), lo), hi)


def expected_values(src, target, rounding):
    """src: a list of Python numbers. Returns the expected list in the target dtype."""
    if target in INTS:
        return [to_int(v, target) for v in src]
    rne = rounding == "nearest_even" or target in ("F32", "F64")
    return [round_float(v, target, rne) for v in src]


def decode(raw, dtype, count):
    """Values of a tensor's bytes, with numpy only, as Python numbers."""
    if dtype == "BF16":
        bits = np.frombuffer(raw, dtype="<u2", count=count).astype(np.uint32) << 16
        return [float(v) for v in bits.view("<f4")]
    arr = np.frombuffer(raw, dtype=NP[dtype], count=count)
    if dtype.startswith("F"):
        return [float(v) for v in arr]  # np.float16 -> float64 is exact
    return [int(v) for v in arr]


def same_value(got, want):
    if isinstance(want, float):
        if math.isnan(want):
            return isinstance(got, float) and math.isnan(got)
        if got != want:
            return False
        return math.copysign(1.0, got) == math.copysign(1.0, want)  # -0.0 stays -0.0
    return got == want


# ---- a safetensors file read with numpy alone -------------------------------------------------
def read_shard(path, where, layout="sorted"):
    data = open(path, "rb").read()
    if len(data) < 8:
        problem(where, "shorter than 8 bytes")
        return None
    n = struct.unpack("<Q", data[:8])[0]
    header = data[8:8 + n]
    if n % 8 or not header.startswith(b"{") or not header.rstrip(b" ").endswith(b"}"):
        problem(where, "header not padded with spaces to a multiple of 8")
    room = n - (len(header.rstrip(b" ")) + 7) // 8 * 8  # spaces beyond the 8-byte padding
    if room and (layout != "arrival" or room * 8 > len(data)):
        problem(where, f"{room} bytes of header room unused ({layout} layout, a {len(data)}-byte file)")
    try:
        h = json.loads(header.decode("utf-8"))
    except Exception as ex:  # noqa: BLE001
        problem(where, f"header is not JSON: {ex}")
        return None
    meta = h.pop("__metadata__", None)
    if meta is not None:
        problem(where, "a dataset shard carries __metadata__")
    body = data[8 + n:]
    tensors = {}
    cursor = 0
    order = sorted(h.items(), key=lambda kv: tuple(kv[1]["data_offsets"]))
    for name, t in order:
        b, e = t["data_offsets"]
        if b != cursor or e < b:
            problem(where, f"{name}: offsets {b},{e} not contiguous")
        numel = 1
        for d in t["shape"]:
            numel *= d
        if numel * BITS[t["dtype"]] != (e - b) * 8:
            problem(where, f"{name}: {e - b} bytes for {t['dtype']} {t['shape']}")
        cursor = e
        tensors[name] = {"dtype": t["dtype"], "shape": t["shape"], "offsets": (b, e), "raw": body[b:e], "numel": numel}
    if cursor != len(body):
        problem(where, f"data section is {len(body)} bytes, the tensors end at {cursor}")
    # sorted: the reference writer's order, descending dtype rank, then name bytes; arrival: the
    # header's entries in the rows' order, the data the same order turned once (its last tensors
    # may come first: 12.2.3); the rows' order is checked against the source
    want = sorted(h.keys(), key=lambda k: (-RANK.index(h[k]["dtype"]), k.encode("utf-8")))
    got = [k for k, _ in order]
    if layout == "arrival":
        want = list(h.keys())
        turn = want.index(got[0]) if got else 0
        want = want[turn:] + want[:turn]
    if got != want:
        problem(where, f"tensors are not in the {layout} layout's order")
    return {k: tensors[k] for k in h if k in tensors}  # in the header's order


# ---- schemas ------------------------------------------------------------------------------------
def load_validator(name):
    schema = json.load(open(os.path.join(ROOT, "format", name)))
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker())


def validate(validator, doc, where):
    errors = sorted(validator.iter_errors(doc), key=lambda er: list(er.path))
    for er in errors[:3]:
        problem(where, f"schema: {er.message} at {list(er.path)}")


# ---- one generated dataset ----------------------------------------------------------------------
def check_dataset(gen_dir, name, vman, vidx):
    src = json.load(open(os.path.join(gen_dir, name + ".source.json")))
    bin_ = open(os.path.join(gen_dir, name + ".source.bin"), "rb").read()
    ddir = os.path.join(gen_dir, name)
    where = name
    man = json.load(open(os.path.join(ddir, "dataset_manifest.json")))
    validate(vman, man, where + "/dataset_manifest.json")
    kv = src["mode"] == "kv"
    cols = src["columns"]

    # cell values of the source
    def cell_source(col, cell):
        if col["kind"] == "tensor":
            return bin_[cell["off"]:cell["off"] + cell["nbytes"]]
        raw = bin_[cell["off"]:cell["off"] + cell["count"] * BITS[col["elem"]] // 8]
        return decode(raw, col["elem"], cell["count"])

    def expect_cell(col, cell):
        """(dtype, sample shape, values or bytes) that the writer must store."""
        if col["kind"] == "tensor":
            return cell["dtype"], cell["shape"], cell_source(col, cell)
        vals = cell_source(col, cell)
        return src["dtype"], cell["shape"], expected_values(vals, src["dtype"], src["rounding"])

    def compare(where2, t, dtype, shape, want, rows=None):
        if t["dtype"] != dtype:
            problem(where2, f"dtype {t['dtype']}, expected {dtype}")
            return
        if t["shape"] != shape:
            problem(where2, f"shape {t['shape']}, expected {shape}")
            return
        if isinstance(want, (bytes, bytearray)):
            if t["raw"] != want:
                problem(where2, "bytes differ from the source")
            return
        got = decode(t["raw"], dtype, t["numel"])
        for i, (g, w) in enumerate(zip(got, want)):
            if not same_value(g, w):
                problem(where2, f"element {i}: got {g!r}, expected {w!r}")
                return

    files = sorted(f for f in os.listdir(ddir) if f.startswith("part-"))
    hidden = [f for f in os.listdir(ddir) if f.startswith(".")]
    if hidden:
        problem(where, f"hidden files left: {hidden}")
    for f in files:
        if not SHARD_RE.match(f):
            problem(where, f"{f} does not follow part-TTTTT-SSSS-<uuid4>.safetensors")
    layout = src.get("layout", "sorted")
    shards = {f: read_shard(os.path.join(ddir, f), f"{where}/{f}", layout) for f in files}

    # manifest
    paths = [s["shard_path"] for s in man["shards"]]
    if paths != sorted(paths):
        problem(where, "manifest shards are not sorted by path")
    if sorted(paths) != files:
        problem(where, f"manifest shards {paths} differ from the folder's {files}")
    for s in man["shards"]:
        size = os.path.getsize(os.path.join(ddir, s["shard_path"])) if s["shard_path"] in files else -1
        if s["bytes"] != size:
            problem(where, f"{s['shard_path']}: bytes {s['bytes']}, the file has {size}")
    if man["total_bytes"] != sum(s["bytes"] for s in man["shards"]):
        problem(where, "total_bytes is not the sum of the shards' bytes")
    if man["total_samples"] != sum(s["samples_count"] for s in man["shards"]):
        problem(where, "total_samples is not the sum of samples_count")
    for key in ("format_version", "safetensors_version"):
        if man[key] != "1.0":
            problem(where, f"{key} is {man[key]!r}")
    samples = {s["shard_path"]: s["samples_count"] for s in man["shards"]}

    # values
    if not kv:
        bsz = src["batch_size"]
        expect_files = {}
        for task in src["tasks"]:
            rows = task["rows"]
            for j, start in enumerate(range(0, len(rows), bsz)):
                chunk = rows[start:start + bsz]
                if len(chunk) < bsz and src["tail"] == "drop":
                    continue
                expect_files[(task["task"], j)] = chunk
        got_files = {}
        for f in files:
            m = SHARD_RE.match(f)
            if m:
                got_files[(int(m.group(1)), int(m.group(2)))] = f
        if set(got_files) != set(expect_files):
            problem(where, f"files {sorted(got_files)} but expected {sorted(expect_files)}")
        for key, chunk in expect_files.items():
            f = got_files.get(key)
            if f is None or shards.get(f) is None:
                continue
            pad = bsz - len(chunk) if src["tail"] == "pad" else 0
            if samples.get(f) != len(chunk):
                problem(where, f"{f}: samples_count {samples.get(f)}, {len(chunk)} real rows")
            if sorted(shards[f]) != sorted(c["name"] for c in cols):
                problem(where, f"{f} holds {sorted(shards[f])}")
                continue
            for col in cols:
                parts = [expect_cell(col, r["cells"][col["index"]]) for r in chunk]
                dtype, sample = parts[0][0], parts[0][1]
                if isinstance(parts[0][2], (bytes, bytearray)):
                    want = b"".join(p[2] for p in parts) + bytes(pad * len(parts[0][2]))
                else:
                    want = [v for p in parts for v in p[2]] + [0] * (pad * len(parts[0][2]))
                compare(f"{where}/{f}/{col['name']}", shards[f][col["name"]], dtype, [len(chunk) + pad] + sample, want)
        # schema: [batch_size] + sample shape
        for col in cols:
            first = next(r for t in src["tasks"] for r in t["rows"])
            dtype, sample, _ = expect_cell(col, first["cells"][col["index"]])
            want = {"dtype": dtype, "shape": [bsz] + sample}
            if man["schema"].get(col["name"]) != want:
                problem(where, f"schema[{col['name']}] = {man['schema'].get(col['name'])}, expected {want}")
    else:
        sep = src["sep"]
        versions = {}  # tensor name -> list of (task order, row order, expectation)
        for ti, task in enumerate(sorted(src["tasks"], key=lambda t: t["task"])):
            for ri, r in enumerate(task["rows"]):
                key = next(c["key"] for c in r["cells"] if "key" in c)
                for col in cols:
                    versions.setdefault(key + sep + col["name"], []).append(((ti, ri), expect_cell(col, r["cells"][col["index"]])))
        # every tensor in every shard is some row's version of that name
        where_is = {}
        for f, ts in shards.items():
            if ts is None:
                continue
            for tname, t in ts.items():
                if tname not in versions:
                    problem(where, f"{f} holds {tname!r}, which no row made")
                    continue
                ok = False
                for _, (dtype, shape, want) in versions[tname]:
                    before = len(problems)
                    compare(f"{where}/{f}/{tname}", t, dtype, shape, want)
                    if len(problems) == before:
                        ok = True
                        break
                    del problems[before:]
                if not ok:
                    problem(where, f"{f}/{tname!r} matches no row that made it")
                where_is.setdefault(tname, []).append(f)
        for tname in versions:
            if tname not in where_is:
                problem(where, f"{tname!r} is in no shard")
        if layout == "arrival":  # each shard's tensors in the order its task's rows made them
            made = {}  # task id -> tensor names in row order, each row's in column order
            for task in src["tasks"]:
                made[task["task"]] = [next(c["key"] for c in r["cells"] if "key" in c) + sep + col["name"]
                                      for r in task["rows"] for col in cols]
            for f, ts in shards.items():
                if not ts:
                    continue
                seq, at = made.get(int(SHARD_RE.match(f).group(1)), []), -1
                for tname in ts:  # the header's order
                    nxt = next((i for i in range(at + 1, len(seq)) if seq[i] == tname), None)
                    if nxt is None:
                        problem(where, f"{f}: {tname!r} is out of its rows' order")
                        break
                    at = nxt
        if src["duplicates"] == "fail":
            dups = [n for n, v in versions.items() if len(v) > 1]
            if dups:
                problem(where, f"the source repeats keys {dups[:3]} under duplicatesStrategy=fail")
            if man["total_samples"] != sum(len(t["rows"]) for t in src["tasks"]):
                problem(where, "total_samples differs from the number of rows")
        # schema: -1 where the rows differ
        for col in cols:
            shapes_ = [v[1][1] for n, vs in versions.items() if n.endswith(sep + col["name"]) for v in vs]
            dtypes = {v[1][0] for n, vs in versions.items() if n.endswith(sep + col["name"]) for v in vs}
            rank = len(shapes_[0])
            if all(len(s) == rank for s in shapes_):
                want_shape = [shapes_[0][d] if all(s[d] == shapes_[0][d] for s in shapes_) else -1 for d in range(rank)]
                want = {"dtype": dtypes.pop(), "shape": want_shape}
                if man["schema"].get(col["name"]) != want:
                    problem(where, f"schema[{col['name']}] = {man['schema'].get(col['name'])}, expected {want}")
        # the winners, through the index
        if src["index"]:
            idx = json.load(open(os.path.join(ddir, "_tensor_index.json")))
            for tname, vs in versions.items():
                f = idx["weight_map"].get(tname)
                if f is None:
                    problem(where, f"{tname!r} is not in the index")
                    continue
                _, (dtype, shape, want) = vs[-1]  # the last row of the highest task
                if shards.get(f) is None or tname not in shards[f]:
                    problem(where, f"the index maps {tname!r} to {f}, which does not hold it")
                    continue
                compare(f"{where}/index/{tname}", shards[f][tname], dtype, shape, want)

    # index files
    has_index = os.path.exists(os.path.join(ddir, "_tensor_index.json"))
    if has_index != bool(src["index"]) or os.path.exists(os.path.join(ddir, "_tensor_index.csv")) != bool(src["index"]):
        problem(where, f"index files present: {has_index}, generate_index: {src['index']}")
    if "index" in man:
        problem(where, "the manifest promises an index; the index stands on its own (dataset_id)")
    if src["index"] and has_index:
        idx = json.load(open(os.path.join(ddir, "_tensor_index.json")))
        validate(vidx, idx, where + "/_tensor_index.json")
        entries = idx["tensors"]
        if set(entries) != set(idx["weight_map"]):
            problem(where, "weight_map and tensors have different keys")
        total = 0
        for key, ent in entries.items():
            if idx["weight_map"].get(key) != ent["file"]:
                problem(where, f"weight_map[{key!r}] != tensors[{key!r}].file")
            tname = key if kv else key[len(ent["file"]) + 1:]
            if not kv and not key.startswith(ent["file"] + "/"):
                problem(where, f"batch index key {key!r} is not <shard>/<column>")
            if "tensor" in ent and ent["tensor"] != tname:
                problem(where, f"index entry {key!r} names tensor {ent['tensor']!r}, expected {tname!r}")
            t = (shards.get(ent["file"]) or {}).get(tname)
            if t is None:
                problem(where, f"index entry {key!r}: {ent['file']} has no tensor {tname!r}")
                continue
            if ent["dtype"] != t["dtype"] or ent["shape"] != t["shape"] or tuple(ent["data_offsets"]) != t["offsets"]:
                problem(where, f"index entry {key!r} disagrees with the file's header")
            total += t["offsets"][1] - t["offsets"][0]
        if idx["metadata"]["total_size"] != total:
            problem(where, f"total_size {idx['metadata']['total_size']}, the data bytes sum to {total}")
        if not kv and len(entries) != sum(len(ts or {}) for ts in shards.values()):
            problem(where, "the batch index does not list every tensor of every shard")
        raw = open(os.path.join(ddir, "_tensor_index.csv"), "rb").read()
        if not raw.startswith(b"tensor_key,file_name,shape,dtype\r\n"):
            problem(where, "CSV header is not tensor_key,file_name,shape,dtype + CRLF")
        rows = list(csv.reader(io.StringIO(raw.decode("utf-8"), newline="")))
        body = rows[1:]
        if len(body) != len(entries):
            problem(where, f"CSV has {len(body)} records, the JSON index {len(entries)}")
        for rec, (key, ent) in zip(body, entries.items()):
            want_key = key if kv else key[len(ent["file"]) + 1:]
            want = [want_key, ent["file"], "[" + ",".join(str(d) for d in ent["shape"]) + "]", ent["dtype"]]
            if rec != want:
                problem(where, f"CSV record {rec} differs from the JSON entry {want}")
                break


def main():
    if len(sys.argv) not in (2, 3):
        print(__doc__)
        return 2
    gen_dir = sys.argv[1]
    vman = load_validator("dataset_manifest.schema.json")
    vidx = load_validator("tensor_index.schema.json")
    names = sorted(f[:-len(".source.json")] for f in os.listdir(gen_dir) if f.endswith(".source.json"))
    for name in names:
        try:
            check_dataset(gen_dir, name, vman, vidx)
        except Exception as ex:  # noqa: BLE001
            problem(name, f"checker error: {type(ex).__name__}: {ex}")
    crash = 0
    if len(sys.argv) == 3 and not os.path.isdir(sys.argv[2]):
        problem("crash", f"{sys.argv[2]} holds no post-crash documents")
    if len(sys.argv) == 3 and os.path.isdir(sys.argv[2]):
        for f in sorted(os.listdir(sys.argv[2])):
            doc = json.load(open(os.path.join(sys.argv[2], f)))
            validate(vman if f.endswith("dataset_manifest.json") else vidx, doc, "crash/" + f)
            crash += 1
        if not crash:
            problem("crash", f"{sys.argv[2]} holds no post-crash documents")
    if problems:
        for p in problems[:60]:
            print("FAIL", p)
        print(f"check_dataset: {len(problems)} problems in {len(names)} datasets")
        return 1
    print(f"check_dataset: {len(names)} datasets and {crash} post-crash documents agree with the schemas and the source rows")
    return 0


if __name__ == "__main__":
    sys.exit(main())
