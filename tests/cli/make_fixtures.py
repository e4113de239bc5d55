#!/usr/bin/env python3
"""Writes the small fixtures of the CLI tests (tests/test_cli.sh) into the folder given.

Standard library only: .npy and .safetensors files are assembled byte by byte, so the fixtures are
the same on every machine and with every numpy version (tests/test_npy.py is where numpy itself
writes and reads .npy files). Every file is a few hundred bytes at most.

    python3 tests/cli/make_fixtures.py OUT_DIR
    python3 tests/cli/make_fixtures.py --edit OPERATION FILE [ARG...]
    python3 tests/cli/make_fixtures.py --read FILE [NAME]

--edit damages a file of a dataset in place, keeping every size unchanged (the setup steps of
tests/cli/cases.txt use it):
    leading-space SHARD          move the header one byte right ('{' preceded by a space, one
                                 padding space less): only strict validation notices
    rename SHARD OLD NEW         rename a tensor in the header (same length)
    bump-total-bytes MANIFEST    add 1 to the manifest's total_bytes
    swap-index-offsets INDEX K1 K2   swap two tensors' data_offsets in _tensor_index.json (the
                                 index then disagrees with the shard's header about both)

--read FILE --metadata prints a safetensors file's __metadata__, a key a line, sorted.
--read writes a tensor's bytes to standard output, little-endian (as safetensors holds them), read
with the standard library alone, for comparing with what sts get wrote: a .npy file's array (a
big-endian one swapped), tensor NAME of a safetensors file, or tensor NAME of a sharded checkpoint
(FILE: its model.safetensors.index.json, whose weight_map names the shard).
"""
import ast
import json
import os
import struct
import sys


def npy(path, descr, shape, data, version=1, fortran=False, raw_header=None):
    """A .npy file: magic, version, header length, dict literal padded to 64 bytes, data."""
    if raw_header is None:
        dims = ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "")
        d = descr if descr.startswith("[") else "'%s'" % descr
        raw_header = "{'descr': %s, 'fortran_order': %s, 'shape': (%s), }" % (d, fortran, dims)
    pre = 10 if version == 1 else 12
    body = raw_header.encode("latin-1")
    pad = (64 - (pre + len(body) + 1) % 64) % 64
    body += b" " * pad + b"\n"
    head = b"\x93NUMPY" + bytes([version, 0])
    head += struct.pack("<H", len(body)) if version == 1 else struct.pack("<I", len(body))
    with open(path, "wb") as f:
        f.write(head + body + data)


def safetensors(path, tensors, metadata=None):
    """tensors: list of (name, dtype, shape, bytes), laid out in list order."""
    header, off = {}, 0
    if metadata is not None:
        header["__metadata__"] = metadata
    for name, dtype, shape, data in tensors:
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [off, off + len(data)]}
        off += len(data)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(t[3] for t in tensors))


def pack(fmt, values):
    return struct.pack("<%d%s" % (len(values), fmt), *values)


def main(out):
    os.makedirs(out, exist_ok=True)
    p = lambda name: os.path.join(out, name)

    # ---- .npy columns: 6 rows each ----
    x = [i * 0.5 - 2.0 for i in range(18)]                    # exact in F16 and BF16
    npy(p("x.npy"), "<f4", (6, 3), pack("f", x))
    npy(p("x_v2.npy"), "<f4", (6, 3), pack("f", x), version=2)
    npy(p("x_v3.npy"), "<f4", (6, 3), pack("f", x), version=3)
    npy(p("y.npy"), "<i8", (6,), pack("q", [0, -1, 2**62 + 1, -2**63, 5, 2**63 - 1]))
    npy(p("img.npy"), "|u1", (6, 2, 2), bytes(range(0, 240, 10)))
    npy(p("mask.npy"), "|b1", (6,), bytes([1, 0, 1, 1, 0, 0]))
    npy(p("half.npy"), "<f2", (6,), pack("e", [0.5, -1.0, 65504.0, 0.0, 2.0, -0.25]))
    npy(p("z.npy"), "<c8", (6,), pack("f", [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]))
    # values that round differently under truncate and nearest_even (F16/BF16 targets)
    npy(p("frac.npy"), "<f4", (6,), pack("f", [1 / 3, 2 / 3, 1.0009765625, 3.14159265, 70000.0, -1e-9]))
    npy(p("frac64.npy"), "<f8", (6,), pack("d", [1 / 3, 2 / 3, 1.0009765625, 3.14159265, 70000.0, -1e-9]))
    npy(p("id.npy"), "<i8", (6,), pack("q", [10, 20, 30, -40, 50, 60]))
    npy(p("id_u32.npy"), "<u4", (6,), pack("I", [7, 8, 9, 4294967295, 11, 12]))
    npy(p("id_dup.npy"), "<i8", (6,), pack("q", [1, 2, 3, 3, 4, 5]))
    npy(p("id_f32.npy"), "<f4", (6,), pack("f", [1, 2, 3, 4, 5, 6]))
    # key columns of every integer width (--name-col), with each type's extremes
    npy(p("id_i8.npy"), "|i1", (6,), pack("b", [-128, -1, 0, 1, 2, 127]))
    npy(p("id_u8.npy"), "|u1", (6,), pack("B", [0, 1, 2, 3, 128, 255]))
    npy(p("id_i16.npy"), "<i2", (6,), pack("h", [-32768, -1, 0, 1, 2, 32767]))
    npy(p("id_u16.npy"), "<u2", (6,), pack("H", [0, 1, 2, 3, 32768, 65535]))
    npy(p("id_bool.npy"), "|b1", (6,), bytes([0, 1, 0, 1, 0, 1]))
    # values that do not fit U8: 2^40, -3, NaN and 1e300 saturate; 255.9 and -0.5 truncate into range
    npy(p("sat.npy"), "<f8", (6,), pack("d", [2.0**40, -3.0, float("nan"), 255.9, -0.5, 1e300]))
    npy(p("id_2d.npy"), "<i8", (6, 2), pack("q", list(range(12))))
    npy(p("short.npy"), "<i8", (5,), pack("q", [1, 2, 3, 4, 5]))
    npy(p("scalar.npy"), "<f8", (), pack("d", [2.5]))
    npy(p("empty.npy"), "<f4", (0, 3), b"")
    npy(p("rows0.npy"), "<f4", (6, 0), b"")
    # refused: Fortran order, big-endian, object, structured, no safetensors dtype, broken files
    npy(p("fortran.npy"), "<f4", (3, 2), pack("f", [1, 2, 3, 4, 5, 6]), fortran=True)
    npy(p("bigendian.npy"), ">f4", (6,), struct.pack(">6f", 1, 2, 3, 4, 5, 6))
    npy(p("object.npy"), "|O", (6,), b"\x80\x02" + b"\x00" * 10)   # the pickle is never read
    npy(p("structured.npy"), "[('a', '<i4'), ('b', '<f4')]", (6,), b"\x00" * 48)
    npy(p("c128.npy"), "<c16", (6,), b"\x00" * 96)
    npy(p("unicode.npy"), "<U3", (6,), b"\x00" * 72)
    npy(p("v9.npy"), "<f4", (6,), b"\x00" * 24, raw_header="{'descr': '<f4', 'fortran_order': False, 'shape': (6,), }")
    with open(p("v9.npy"), "r+b") as f:
        f.seek(6)
        f.write(b"\x09")
    npy(p("truncated.npy"), "<f4", (6, 3), pack("f", x)[:40])
    npy(p("badshape.npy"), "<f4", (6,), b"\x00" * 24, raw_header="{'descr': '<f4', 'fortran_order': False, 'shape': (six,), }")
    with open(p("notnpy.npy"), "wb") as f:
        f.write(b"this is not a .npy file\n")
    with open(p("tiny.npy"), "wb") as f:
        f.write(b"\x93NUM")

    # ---- key files ----
    keys = ["a0", "a1", "a2", "a3", "a4", "a5"]
    with open(p("keys.txt"), "w") as f:
        f.write("".join(k + "\n" for k in keys))
    with open(p("keys_crlf.txt"), "wb") as f:
        f.write(b"".join(k.encode() + b"\r\n" for k in keys))
    with open(p("keys_short.txt"), "w") as f:
        f.write("".join(k + "\n" for k in keys[:5]))
    with open(p("keys_dup.txt"), "w") as f:
        f.write("a0\na1\na2\na1\na4\na5\n")
    with open(p("keys_long.txt"), "w") as f:               # 10 keys for 6 rows
        f.write("".join("a%d\n" % i for i in range(10)))
    with open(p("keys_nul.txt"), "wb") as f:               # a NUL byte on line 3
        f.write(b"a0\na1\na\x002\na3\na4\na5\n")
    with open(p("keys_no_newline.txt"), "w") as f:          # the last line has no newline
        f.write("a0\na1\na2\na3\na4\na5")

    # ---- .safetensors files ----
    safetensors(p("small.safetensors"), [
        ("weight", "F32", (2, 3), pack("f", [1.5, -2, 3.25, 0, 1e-3, 1e6])),
        ("ids", "I64", (4,), pack("q", [0, -1, 2**63 - 1, -2**63])),
        ("big", "U64", (2,), pack("Q", [2**64 - 1, 1])),
        ("mask", "BOOL", (3,), bytes([1, 0, 1])),
        ("pix", "U8", (2, 2), bytes([0, 127, 128, 255])),
        ("half", "F16", (2,), pack("e", [0.5, -65504.0])),
        ("brain", "BF16", (2,), bytes([0x80, 0x3f, 0xc0, 0x7f])),      # 1.0, nan
        ("z", "C64", (2,), pack("f", [1, -1, 0.5, 2])),
        ("scalar", "F64", (), pack("d", [3.141592653589793])),
        ("empty", "F32", (0, 4), b""),
        ('odd "name"\twith tab', "I8", (2,), bytes([0x80, 0x7f])),
    ], metadata={"format": "pt", "note": "a \"quoted\" value"})
    safetensors(p("long.safetensors"), [
        ("seq", "I32", (100,), pack("i", list(range(100)))),
        ("grid", "F32", (10, 10), pack("f", [i / 4 for i in range(100)])),
        ("cube", "U16", (3, 3, 3), pack("H", list(range(27)))),
    ])
    safetensors(p("nometa.safetensors"), [("only", "F64", (3,), pack("d", [1, 2, 3]))])
    safetensors(p("no_tensors.safetensors"), [], metadata={"k": "v"})

    # ---- a sharded checkpoint as transformers' save_pretrained lays it out: two shards and
    # model.safetensors.index.json; ckpt_bad's second shard lacks a tensor its index gives it ----
    shards = [("model-00001-of-00002.safetensors", [
                  ("embed.weight", "F32", (4, 2), pack("f", [0.5 * i - 1 for i in range(8)])),
                  ("layers.0.w", "BF16", (2, 2), bytes([0x80, 0x3f, 0x00, 0x40, 0x40, 0x40, 0x80, 0xbf]))]),  # 1, 2, 3, -1
              ("model-00002-of-00002.safetensors", [
                  ("layers.1.w", "F16", (3,), pack("e", [0.25, -2.0, 1024.0])),
                  ("lm_head.bias", "I32", (2,), pack("i", [-7, 2**31 - 1]))])]
    for folder, drop in (("ckpt", None), ("ckpt_bad", "lm_head.bias")):
        os.makedirs(p(folder), exist_ok=True)
        wm = {}
        for fn, ts in shards:
            safetensors(os.path.join(out, folder, fn), [t for t in ts if t[0] != drop], metadata={"format": "pt"})
            wm.update({t[0]: fn for t in ts})
        total = sum(len(t[3]) for _, ts in shards for t in ts)
        with open(os.path.join(out, folder, "model.safetensors.index.json"), "w") as f:
            json.dump({"metadata": {"total_size": total}, "weight_map": wm}, f, indent=2)

    # ---- GGUF files, by the corpus's writer (tests/gguf/make_corpus.py): a small model in both byte
    # orders (plain and block types, typed KVs and arrays), and one with a type we do not decode ----
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "gguf"))
    import make_corpus as mc
    kvs = mc.base_kvs() + [
        (b"general.name", mc.STR, b"tiny"), (b"llama.context_length", mc.U32, 2048),
        (b"llama.rope.freq_base", mc.F32, 10000.0), (b"tokenizer.ggml.tokens", mc.ARR, (mc.STR, [b"<s>", b"\"q\"", b"\xc3\xa9"])),
        (b"tokenizer.ggml.scores", mc.ARR, (mc.F32, [0.0, -1.5, 0.25])), (b"flag", mc.BOOL, 1), (b"tiny_u8", mc.U8, 7)]
    tensors = [mc.T(b"token_embd.weight", [4, 3], 0), mc.T(b"norm", [4], 1), mc.T(b"blk.0.q", [32, 2], 8),
               mc.T(b"blk.0.k", [256], 12), mc.T(b"ids", [3], 26), mc.T(b"scalar", [], 0)]
    for name, be in (("model.gguf", False), ("model_be.gguf", True)):
        with open(p(name), "wb") as f:
            f.write(mc.Gguf(be=be, kvs=kvs, tensors=tensors).build()[0])
    with open(p("iq.gguf"), "wb") as f:
        f.write(mc.Gguf(kvs=mc.base_kvs(), tensors=[mc.T(b"iq", [256], 16)]).build()[0])


def edit(op, path, *args):
    with open(path, "rb") as f:
        b = bytearray(f.read())
    if op == "leading-space":
        n = struct.unpack("<Q", b[:8])[0]
        assert b[8 + n - 1:8 + n] == b" ", "the header has no padding space to give up"
        b[8:8 + n] = b" " + b[8:8 + n - 1]
    elif op == "rename":
        old, new = ('"%s"' % args[0]).encode(), ('"%s"' % args[1]).encode()
        assert len(old) == len(new) and b.count(old) == 1, "rename needs one name of the same length"
        b = b.replace(old, new)
    elif op == "bump-total-bytes":
        j = json.loads(b.decode())
        j["total_bytes"] += 1
        b = bytearray(json.dumps(j, indent=2).encode())
    elif op == "swap-index-offsets":
        j = json.loads(b.decode())
        t = j["tensors"]
        t[args[0]]["data_offsets"], t[args[1]]["data_offsets"] = t[args[1]]["data_offsets"], t[args[0]]["data_offsets"]
        b = bytearray(json.dumps(j, separators=(",", ":")).encode())
    else:
        sys.exit("unknown edit %s" % op)
    with open(path, "wb") as f:
        f.write(b)


def read_tensor(path, name=None):
    with open(path, "rb") as f:
        b = f.read()
    if b[:6] == b"\x93NUMPY":
        pre = 10 if b[6] == 1 else 12
        hlen = struct.unpack("<H", b[8:10])[0] if b[6] == 1 else struct.unpack("<I", b[8:12])[0]
        descr = ast.literal_eval(b[pre:pre + hlen].decode("latin-1"))["descr"]
        data = b[pre + hlen:]
        size = int(descr[2:])
        unit = size // 2 if descr[1] == "c" else size        # a complex number is two floats
        if descr[0] == ">" and unit > 1:
            data = b"".join(data[i:i + unit][::-1] for i in range(0, len(data), unit))
        return data
    if path.endswith(".json"):
        shard = json.loads(b.decode())["weight_map"][name]
        return read_tensor(os.path.join(os.path.dirname(path), shard), name)
    n = struct.unpack("<Q", b[:8])[0]
    begin, end = json.loads(b[8:8 + n].decode())[name]["data_offsets"]
    return b[8 + n + begin:8 + n + end]


if __name__ == "__main__":
    if len(sys.argv) >= 4 and sys.argv[1] == "--edit":
        edit(*sys.argv[2:])
    elif len(sys.argv) == 4 and sys.argv[1] == "--read" and sys.argv[3] == "--metadata":
        with open(sys.argv[2], "rb") as f:     # a safetensors file's __metadata__, one key a line
            b = f.read()
        meta = json.loads(b[8:8 + struct.unpack("<Q", b[:8])[0]].decode()).get("__metadata__", {})
        for k in sorted(meta):
            print("%s = %s" % (k, json.dumps(meta[k], ensure_ascii=False)))
    elif len(sys.argv) in (3, 4) and sys.argv[1] == "--read":
        sys.stdout.buffer.write(read_tensor(*sys.argv[2:]))
    elif len(sys.argv) == 2:
        main(sys.argv[1])
    else:
        sys.exit("usage: make_fixtures.py OUT_DIR | make_fixtures.py --edit OPERATION FILE [ARG...] | make_fixtures.py --read FILE [NAME]")
