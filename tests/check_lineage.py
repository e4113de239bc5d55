#!/usr/bin/python3
"""Cross-checks `sts lineage` (sts_dataset_lineage) against MLflow's rules, written here from
MLflow's documented algorithm with Python's own json and hashlib (MLflow itself is not in Debian
and no package index is reachable, so it cannot be installed here; nothing stands in for it).

For datasets written by `sts pack` (batch with F32, I64 and a non-ASCII column; KV with BF16;
an empty one; folders with non-ASCII names and a name that is not UTF-8), and for --name, --uri
(s3, file, none), --context and relative paths:
  - the output is one JSON object of strings, in MLflow's order: name, digest, source,
    source_type, schema (absent without columns), profile, then context when given;
  - source is json.dumps({"uri": os.path.abspath(DIR)}) (or the URI), source_type "local" or the
    URI's scheme;
  - schema is json.dumps({"mlflow_colspec": [TensorSpec.to_dict() per manifest column]}) with
    numpy dtype names (ml_dtypes names where numpy has none) and -1 as batch mode's leading dim;
  - digest is sha256(json.dumps({"name", "source", "source_type", "schema": <list or "">}))[:8],
    MetaDataset._compute_digest;
  - profile holds num_rows, num_shards, total_bytes, format and mode, from the manifest;
  - the whole line is json.dumps(record) byte for byte, and the same folder gives the same bytes;
  - a missing manifest and an invalid one fail (exit 1) naming the rule, with nothing on stdout.

usage: check_lineage.py STS        (exit 0 when every check passes)
"""
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

NUMPY_NAMES = {
    "BOOL": "bool", "U8": "uint8", "I8": "int8", "U16": "uint16", "I16": "int16", "U32": "uint32",
    "I32": "int32", "U64": "uint64", "I64": "int64", "F16": "float16", "F32": "float32",
    "F64": "float64", "C64": "complex64", "BF16": "bfloat16", "F8_E4M3": "float8_e4m3fn",
    "F8_E5M2": "float8_e5m2", "F8_E8M0": "float8_e8m0fnu", "F8_E4M3FNUZ": "float8_e4m3fnuz",
    "F8_E5M2FNUZ": "float8_e5m2fnuz", "F4": "float4_e2m1fn", "F6_E2M3": "float6_e2m3fn",
    "F6_E3M2": "float6_e3m2fn",
}

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL", what)


def expected(dirb, name="safetensors_dataset", uri=None, context=None):
    """The record MLflow would store, built from the manifest with the documented rules."""
    with open(os.path.join(dirb, b"dataset_manifest.json"), "rb") as f:
        man = json.load(f)
    batch = man.get("mode", "batch") == "batch"
    specs = []
    for col, c in man.get("schema", {}).items():
        shape = list(c["shape"])
        if batch and shape:
            shape[0] = -1
        specs.append({"name": col, "type": "tensor",
                      "tensor-spec": {"dtype": NUMPY_NAMES[c["dtype"]], "shape": shape}})
    if uri is None:
        source_uri, source_type = os.path.abspath(os.fsdecode(dirb)), "local"
    else:
        scheme = uri.split(":", 1)[0].lower() if ":" in uri else ""
        source_uri, source_type = uri, ("local" if scheme in ("", "file") else scheme)
    source = json.dumps({"uri": source_uri})
    config = {"name": name, "source": source, "source_type": source_type, "schema": specs if specs else ""}
    digest = hashlib.sha256(json.dumps(config).encode("utf-8")).hexdigest()[:8]
    rec = {"name": name, "digest": digest, "source": source, "source_type": source_type}
    if specs:
        rec["schema"] = json.dumps({"mlflow_colspec": specs})
    shards = man["shards"]
    rec["profile"] = json.dumps({"num_rows": sum(s["samples_count"] for s in shards), "num_shards": len(shards),
                                 "total_bytes": sum(s["bytes"] for s in shards), "format": "safetensors",
                                 "mode": "batch" if batch else "kv"})
    if context is not None:
        rec["context"] = context
    return rec, man


def run(sts, args, cwd=None):
    return subprocess.run([sts, "lineage"] + args, cwd=cwd, capture_output=True)


def case(sts, label, dirb, cwd=None, arg=None, **kw):
    args = [arg if arg is not None else dirb]
    if "name" in kw:
        args += [b"--name", kw["name"].encode("utf-8", "surrogateescape")]
    if "uri" in kw:
        args += [b"--uri", kw["uri"].encode()]
    if "context" in kw:
        args += [b"--context", kw["context"].encode()]
    p = run(sts, args, cwd)
    check(p.returncode == 0, f"{label}: exit {p.returncode}: {p.stderr.decode(errors='replace')}")
    if p.returncode:
        return
    line = p.stdout
    check(line.endswith(b"\n") and line.count(b"\n") == 1, f"{label}: not one line")
    rec = json.loads(line)
    check(all(isinstance(v, str) for v in rec.values()), f"{label}: a value is not a string")
    want, man = expected(dirb, **kw)
    check(list(rec) == list(want), f"{label}: fields {list(rec)} != {list(want)}")
    for k in want:
        check(rec.get(k) == want[k], f"{label}: {k}: {rec.get(k)!r} != {want[k]!r}")
    check(line == (json.dumps(want) + "\n").encode(), f"{label}: the bytes are not json.dumps(record)")
    if "schema" in rec:  # the features list every column with its dtype and shape
        cols = json.loads(rec["schema"])["mlflow_colspec"]
        check([c["name"] for c in cols] == list(man["schema"]), f"{label}: schema columns")
    prof = json.loads(rec["profile"])
    check(prof["num_rows"] == man["total_samples"] and prof["num_shards"] == len(man["shards"]) and
          prof["total_bytes"] == man["total_bytes"], f"{label}: profile against the manifest totals")
    again = run(sts, args, cwd)
    check(again.stdout == line, f"{label}: a second run gave other bytes")


def pack(sts, out, cols, extra):
    args = [sts, "pack", out]
    for name, path in cols:
        args += [b"--column", name.encode() + b"=" + path]
    p = subprocess.run(args + extra, capture_output=True)
    if p.returncode:
        sys.exit(f"sts pack failed: {p.stderr.decode(errors='replace')}")


def main():
    sts = os.path.abspath(sys.argv[1]).encode()
    root = tempfile.mkdtemp(prefix="sts-lineage.").encode()
    try:
        j = lambda *p: os.path.join(root, *p)
        np.save(os.fsdecode(j(b"f.npy")), np.arange(40, dtype=np.float32).reshape(10, 2, 2))
        np.save(os.fsdecode(j(b"i.npy")), np.arange(10, dtype=np.int64))
        np.save(os.fsdecode(j(b"e.npy")), np.zeros((0, 3), dtype=np.float32))
        np.save(os.fsdecode(j(b"v.npy")), np.arange(21, dtype=np.float32).reshape(7, 3))
        with open(j(b"keys"), "w") as f:
            f.write("".join(f"k{i}\n" for i in range(7)))
        batch = j(b"batch")
        pack(sts, batch, [("x", j(b"f.npy")), ("id", j(b"i.npy")), ("émb😀", j(b"f.npy"))], [b"--batch-size", b"4"])
        kv = j(b"kv")
        pack(sts, kv, [("v", j(b"v.npy"))], [b"--keys", j(b"keys"), b"--dtype", b"BF16"])
        empty = j(b"empty")
        pack(sts, empty, [("x", j(b"e.npy"))], [b"--batch-size", b"4"])
        uni = j("données ✓".encode())
        pack(sts, uni, [("x", j(b"i.npy"))], [b"--batch-size", b"3"])
        raw = j(b"raw\xff\xfename")  # not UTF-8: Python's surrogate escapes
        pack(sts, raw, [("x", j(b"i.npy"))], [b"--batch-size", b"5"])

        case(sts, "batch", batch)
        case(sts, "kv", kv)
        case(sts, "empty", empty)
        case(sts, "unicode folder", uni)
        case(sts, "non-UTF-8 folder", raw)
        case(sts, "name", batch, name="zwölf \"quoted\" \\ \t\x7f 😀")
        case(sts, "s3 uri", batch, uri="S3://bucket/prefix/ds")
        case(sts, "file uri", kv, uri="file:///data/ds")
        case(sts, "hdfs uri + context", kv, uri="hdfs://nn:8020/ds", context="training")
        case(sts, "context", batch, context="eval")
        # relative spellings resolve as os.path.abspath does, from the working folder
        os.makedirs(j(b"sub", b"deeper"))
        case(sts, "relative", batch, cwd=root, arg=b"./sub/../batch//")
        case(sts, "relative, from a sub-folder", batch, cwd=j(b"sub", b"deeper"), arg=b"../../batch/.")

        # errors: a missing and an invalid manifest
        p = run(sts, [j(b"sub")])
        check(p.returncode == 1 and not p.stdout and b"dataset.manifest" in p.stderr and
              b"dataset_manifest.json not found" in p.stderr, f"missing manifest: {p.returncode} {p.stderr!r}")
        bad = j(b"bad")
        shutil.copytree(kv, bad)
        with open(os.path.join(bad, b"dataset_manifest.json"), "r+b") as f:
            f.truncate(40)
        p = run(sts, [bad])
        check(p.returncode == 1 and not p.stdout and b"dataset.manifest" in p.stderr, f"invalid manifest: {p.stderr!r}")
        p = run(sts, [batch, b"--uri", b""])
        check(p.returncode == 1 and not p.stdout and b"uri" in p.stderr, f"empty uri: {p.stderr!r}")
    finally:
        shutil.rmtree(root)
    if failures:
        print(f"check_lineage: {len(failures)} failure(s)")
        return 1
    print("check_lineage: 12 datasets and options match MLflow's record and digest rules; 3 errors refused")
    return 0


if __name__ == "__main__":
    sys.exit(main())
