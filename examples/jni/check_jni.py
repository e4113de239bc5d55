#!/usr/bin/env python3
"""The JNI harness's datasets, read back with numpy alone (no library code, no JVM).

usage: check_jni.py WORKDIR

For every WORKDIR/NAME.expected.json that examples/jni/test/.../JniTests.java saved beside the
dataset WORKDIR/NAME/:
  - the folder holds dataset_manifest.json, the manifest's shards, the index when written, and
    nothing else (no hidden temporaries, no shard of an aborted attempt);
  - total_samples is what the harness wrote;
  - every shard is parsed here: the 8-byte little-endian length, the JSON header, contiguous
    offsets, the file size;
  - every expected tensor (a key in KV mode, or a shard's tensor in batch mode) has the expected
    dtype, shape and bytes; BF16 tensors are also recomputed from their F32 bits with numpy
    (truncation: the top 16 bits).
Exit status 0 when everything holds.
"""
import json
import os
import struct
import sys

import numpy as np

problems = []


def read_shard(path):
    with open(path, "rb") as f:
        buf = f.read()
    (n,) = struct.unpack("<Q", buf[:8])
    header = json.loads(buf[8:8 + n].decode("utf-8"))
    header.pop("__metadata__", None)
    data = np.frombuffer(buf, dtype=np.uint8, offset=8 + n)
    end = 0
    for name, t in sorted(header.items(), key=lambda kv: kv[1]["data_offsets"]):
        b, e = t["data_offsets"]
        if b != end:
            problems.append(f"{path}: {name!r} starts at {b}, expected {end}")
        end = e
    if end != len(data):
        problems.append(f"{path}: data ends at {end}, the file holds {len(data)} bytes")
    return {name: (t["dtype"], t["shape"], data[t["data_offsets"][0]:t["data_offsets"][1]])
            for name, t in header.items()}


def check(work, name):
    d = os.path.join(work, name)
    with open(os.path.join(work, name + ".expected.json"), encoding="utf-8") as f:
        want = json.load(f)
    with open(os.path.join(d, "dataset_manifest.json"), encoding="utf-8") as f:
        manifest = json.load(f)
    shards = [s["shard_path"] for s in manifest["shards"]]
    allowed = set(shards) | {"dataset_manifest.json", "_tensor_index.csv", "_tensor_index.json"}
    stray = sorted(set(os.listdir(d)) - allowed)
    if stray:
        problems.append(f"{name}: files no manifest lists: {stray}")
    if manifest["total_samples"] != want["total_samples"]:
        problems.append(f"{name}: total_samples {manifest['total_samples']}, expected {want['total_samples']}")
    kv = not any(e["file_prefix"] for e in want["entries"])
    by_key, by_file = {}, {}
    for s in shards:
        tensors = read_shard(os.path.join(d, s))
        by_file[s[:15]] = tensors  # part-TTTTT-SSSS
        for k, v in tensors.items():
            if kv and k in by_key:
                problems.append(f"{name}: key {k!r} in two shards")
            by_key[k] = v
    for e in want["entries"]:
        where = f"{name}: {e['file_prefix'] + '/' if e['file_prefix'] else ''}{e['key']!r}"
        got = (by_file.get(e["file_prefix"], {}) if e["file_prefix"] else by_key).get(e["key"])
        if got is None:
            problems.append(f"{where}: missing")
            continue
        dtype, shape, data = got
        if dtype != e["dtype"] or shape != e["shape"]:
            problems.append(f"{where}: {dtype} {shape}, expected {e['dtype']} {e['shape']}")
        if data.tobytes() != bytes.fromhex(e["hex"]):
            problems.append(f"{where}: the bytes differ")
        if "f32_bits" in e:  # BF16 by truncation, recomputed here
            bits = np.array(e["f32_bits"], dtype=np.uint32)
            bf16 = (bits >> 16).astype("<u2")
            if not np.array_equal(data.view("<u2"), bf16):
                problems.append(f"{where}: BF16 is not the truncation of the F32 values")
    return len(want["entries"])


def main():
    work = sys.argv[1]
    names = sorted(n[:-len(".expected.json")] for n in os.listdir(work) if n.endswith(".expected.json"))
    if not names:
        print("check_jni: no datasets to check")
        return 1
    total = sum(check(work, n) for n in names)
    for p in problems:
        print("check_jni:", p)
    if problems:
        return 1
    print(f"check_jni: numpy read {total} tensors of {len(names)} datasets ({', '.join(names)}): "
          "bytes, dtypes and shapes agree")
    return 0


if __name__ == "__main__":
    sys.exit(main())
