#!/usr/bin/env python3
"""Writes safetensors files the way Hugging Face's writer lays them out, with numpy alone, plus
the values a reader must find in them (tests/test_dataset_read_hf.c runs this and compares).

usage: make_hf_files.py OUT_DIR

OUT_DIR/single.safetensors      one file: every numeric dtype of the 12 seed dtypes plus BOOL,
                                special values (signed zeros, subnormals, infinities, NaN, the
                                largest finite values, rounding ties for F16 and BF16), a scalar,
                                an empty tensor, non-ASCII and escaped names, __metadata__
OUT_DIR/model/                  a sharded checkpoint: model-0000K-of-00003.safetensors and
                                model.safetensors.index.json (metadata.total_size, weight_map)
OUT_DIR/expected.tsv            one line per tensor, in each file's layout order:
                                path  name_hex  dtype  shape(d0,d1,..)  kind  offset  count
                                kind f: count float64 values at byte offset of expected.bin;
                                kind i / u: count int64 / uint64 values
OUT_DIR/expected.bin            the values, little-endian

The layout (what the reference writer does, written here from its description, not its code):
tensors sorted by descending dtype rank, then by name bytes; offsets contiguous from 0; the
header is compact JSON ("__metadata__" first, then the tensors in layout order, each entry
{"dtype","shape","data_offsets"}), non-ASCII emitted raw, padded with spaces to a multiple of 8;
an 8-byte little-endian header length in front.

Encodings: BF16 is the top 16 bits of the float32 after round-to-nearest-even (a NaN stays a
quiet NaN); F16 is numpy's float16 (round-to-nearest-even, overflow to infinity)."""
import json
import os
import struct
import sys

import numpy as np

RANK = ["BOOL", "F4", "F6_E2M3", "F6_E3M2", "U8", "I8", "F8_E5M2", "F8_E4M3", "F8_E8M0", "F8_E4M3FNUZ",
        "F8_E5M2FNUZ", "I16", "U16", "F16", "BF16", "I32", "U32", "F32", "C64", "F64", "I64", "U64"]
NUMPY = {"BOOL": "|b1", "U8": "|u1", "I8": "|i1", "I16": "<i2", "U16": "<u2", "F16": "<f2",
         "I32": "<i4", "U32": "<u4", "F32": "<f4", "F64": "<f8", "I64": "<i8", "U64": "<u8"}


def bf16_bits(x):
    """float32 array -> uint16 BF16 bits, round to nearest even; NaN kept quiet."""
    u = np.asarray(x, dtype="<f4").view("<u4").astype(np.uint64)
    rounded = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) & 0xFFFF
    nan = np.isnan(np.asarray(x, dtype="<f4"))
    quiet = ((u >> 16) | 0x0040) & 0xFFFF
    return np.where(nan, quiet, rounded).astype("<u2")


def bf16_values(bits):
    """BF16 bits -> float64 values (exact)."""
    return (bits.astype(np.uint32) << 16).astype("<u4").view("<f4").astype(np.float64)


class Tensor:
    def __init__(self, name, dtype, shape, raw, values, kind):
        self.name, self.dtype, self.shape = name, dtype, list(shape)
        self.raw = raw            # the bytes in the file
        self.values = values      # what a reader must decode (float64 / int64 / uint64 array)
        self.kind = kind


def tensor(name, dtype, shape, source):
    """A tensor of dtype from float or integer source values (reshaped to shape)."""
    count = int(np.prod(shape)) if shape else 1
    if dtype == "BF16":
        bits = bf16_bits(np.asarray(source, dtype=np.float32).reshape(-1)[:count])
        return Tensor(name, dtype, shape, bits.tobytes(), bf16_values(bits), "f")
    arr = np.asarray(source).reshape(-1)[:count]
    if dtype in ("F16", "F32", "F64"):
        with np.errstate(over="ignore"):
            enc = arr.astype(np.float64).astype(NUMPY[dtype])
        return Tensor(name, dtype, shape, enc.tobytes(), enc.astype(np.float64), "f")
    if dtype == "BOOL":
        enc = arr.astype(bool)
        return Tensor(name, dtype, shape, enc.astype(np.uint8).tobytes(), enc.astype(np.int64), "i")
    enc = arr.astype(NUMPY[dtype])
    kind = "u" if dtype == "U64" else "i"
    return Tensor(name, dtype, shape, enc.tobytes(), enc.astype(np.uint64 if kind == "u" else np.int64), kind)


def layout(tensors):
    return sorted(tensors, key=lambda t: (-RANK.index(t.dtype), t.name.encode("utf-8")))


def write_file(path, tensors, metadata=None):
    """The reference layout; returns the tensors in layout order."""
    ordered = layout(tensors)
    header, data, off = {}, bytearray(), 0
    if metadata is not None:
        header["__metadata__"] = metadata
    for t in ordered:
        header[t.name] = {"dtype": t.dtype, "shape": t.shape, "data_offsets": [off, off + len(t.raw)]}
        data += t.raw
        off += len(t.raw)
    text = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    text += b" " * (-len(text) % 8)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + bytes(data))
    os.replace(tmp, path)
    return ordered


def single_file():
    f32 = np.float32
    specials32 = np.array([0.0, -0.0, 1.5, -2.25, 1e-40, -1e-45, np.inf, -np.inf, np.nan, 3.4028234663852886e38,
                           -3.4028234663852886e38, 1.1754943508222875e-38], dtype=f32)
    f16_src = np.array([0.0, -0.0, 1.0 / 3.0, 65504.0, 65520.0, 70000.0, -70000.0, 6e-8, 5.96e-8, 2e-8, 1e-3,
                        np.inf, -np.inf, np.nan, 1.0009765625, 1.00048828125, 2049.0, -2051.0], dtype=np.float64)
    bf16_src = np.array([0.0, -0.0, 1.0 / 3.0, 1.00390625, 1.01171875, -1.00390625, 3.3895313892515355e38, 3.4e38,
                         -1e-39, 1e-45, np.inf, -np.inf, np.nan, 255.5, 256.5, 65536.0 + 128.0, 7.0e-39, 1.0e20],
                        dtype=f32)
    rng = np.random.default_rng(20240601)
    ts = [
        tensor("weight.f32", "F32", [3, 4], specials32),
        tensor("weight.f16", "F16", [3, 6], f16_src),
        tensor("weight.bf16", "BF16", [2, 9], bf16_src),
        tensor("random.bf16", "BF16", [64], rng.standard_normal(64).astype(f32) * f32(1000)),
        tensor("random.f16", "F16", [8, 8], rng.standard_normal(64) * 10.0),
        tensor("weight.f64", "F64", [5], [0.1, -0.0, np.inf, np.nan, 2.0 ** -1074]),
        tensor("ids.i64", "I64", [4], np.array([-(2 ** 63), 2 ** 63 - 1, 0, -1], dtype=np.int64)),
        tensor("ids.u64", "U64", [3], np.array([0, 2 ** 64 - 1, 2 ** 53 + 1], dtype=np.uint64)),
        tensor("ids.i32", "I32", [2, 2], np.array([-(2 ** 31), 2 ** 31 - 1, 7, -7], dtype=np.int64)),
        tensor("ids.u32", "U32", [3], np.array([0, 2 ** 32 - 1, 12345], dtype=np.int64)),
        tensor("ids.i16", "I16", [3], np.array([-32768, 32767, -1], dtype=np.int64)),
        tensor("ids.u16", "U16", [3], np.array([0, 65535, 258], dtype=np.int64)),
        tensor("ids.i8", "I8", [4], np.array([-128, 127, 0, -1], dtype=np.int64)),
        tensor("ids.u8", "U8", [2, 3], np.arange(250, 256, dtype=np.int64)),
        tensor("mask", "BOOL", [5], [1, 0, 0, 1, 1]),
        tensor("scalar", "F32", [], [42.5]),
        tensor("empty", "F32", [0, 3], []),
        tensor("caf\u00e9.\u6743\u91cd", "F16", [2], [1.5, -0.5]),
        tensor('quote"back\\slash\ttab', "I32", [1], np.array([99], dtype=np.int64)),
    ]
    return ts


def model_shards():
    rng = np.random.default_rng(7)
    hidden, vocab = 4, 8
    ts = [tensor("model.embed_tokens.weight", "BF16", [vocab, hidden], rng.standard_normal(vocab * hidden).astype(np.float32))]
    for layer in range(2):
        p = "model.layers.%d." % layer
        ts.append(tensor(p + "self_attn.q_proj.weight", "BF16", [hidden, hidden], rng.standard_normal(16).astype(np.float32)))
        ts.append(tensor(p + "self_attn.k_proj.weight", "BF16", [hidden, hidden], rng.standard_normal(16).astype(np.float32)))
        ts.append(tensor(p + "input_layernorm.weight", "F32", [hidden], rng.standard_normal(hidden)))
        ts.append(tensor(p + "mlp.down_proj.weight", "F16", [hidden, 2 * hidden], rng.standard_normal(8 * hidden)))
    ts.append(tensor("model.norm.weight", "F32", [hidden], np.ones(hidden)))
    ts.append(tensor("lm_head.weight", "F16", [vocab, hidden], rng.standard_normal(vocab * hidden)))
    # shard by order of appearance, the way save_pretrained fills shards up to a size
    groups = [ts[0:3], ts[3:7], ts[7:]]
    return groups


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: make_hf_files.py OUT_DIR")
    out = sys.argv[1]
    os.makedirs(os.path.join(out, "model"), exist_ok=True)
    rows, blob = [], bytearray()

    def record(rel, ordered):
        for t in ordered:
            vals = np.asarray(t.values).reshape(-1)
            if t.kind == "f":
                b = vals.astype("<f8").tobytes()
            elif t.kind == "u":
                b = vals.astype("<u8").tobytes()
            else:
                b = vals.astype("<i8").tobytes()
            rows.append("\t".join([rel, t.name.encode("utf-8").hex(), t.dtype, ",".join(str(d) for d in t.shape),
                                   t.kind, str(len(blob)), str(len(vals))]))
            blob.extend(b)

    record("single.safetensors", write_file(os.path.join(out, "single.safetensors"), single_file(),
                                           {"format": "pt", "note": "caf\u00e9 \"quoted\"\n"}))
    groups = model_shards()
    weight_map, total = {}, 0
    for k, group in enumerate(groups):
        name = "model-%05d-of-%05d.safetensors" % (k + 1, len(groups))
        record("model/" + name, write_file(os.path.join(out, "model", name), group, {"format": "pt"}))
        for t in group:
            weight_map[t.name] = name
            total += len(t.raw)
    with open(os.path.join(out, "model", "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": dict(sorted(weight_map.items()))}, f, indent=2)
        f.write("\n")
    with open(os.path.join(out, "expected.tsv"), "w", encoding="utf-8") as f:
        f.write("\n".join(rows) + "\n")
    with open(os.path.join(out, "expected.bin"), "wb") as f:
        f.write(bytes(blob))


if __name__ == "__main__":
    main()
