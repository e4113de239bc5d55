#!/usr/bin/python3
"""make_corpus.py OUT_DIR - the GGUF corpus: valid and invalid files with their verdicts.

Every file is written by a small GGUF writer here (little- and big-endian, versions 2 and 3) and
judged by a model of the rules of format/SPECIFICATION.md section 15, written here from the rules
(not from the C code): the first rule broken while reading in ggml's order, its result code and
the byte offset the error names, in the default mode and in strict mode. Hand-made cases carry the
verdict their author expects, and the model must agree with it (the script fails otherwise); the
truncations (every valid base file cut at every structural boundary, and one byte inside each
field) take the model's verdict.

OUT_DIR/cases.tsv, one line a record, fields separated by TABs:
  C file default strict version big_endian n_tensors n_kv data_offset hf
       default/strict: OK, or RESULT:rule:offset (offset "-" when none applies)
       hf: 1 when @huggingface/gguf reads the file as ggml does (the cross-check uses those)
  T file index name_hex type_id n_dims ne(ggml order, comma-separated, "-" for none) offset nbytes
       sha256_stored sha256_host_little sha256_host_big
       (offset: from the start of the file; the host digests: the bytes a copy gives on a host of
       that byte order, block types with their multi-byte fields swapped when the library swaps them;
       "-" when the library refuses the copy)
  K file index key_hex value_type canonical_sha256
       (canonical: u<dec>, i<dec>, f<%.17g>, b0/b1, s<hex>, a<type>[item,item,...])
"""
import hashlib
import os
import random
import struct
import sys

# ---- ggml's types: id -> (name, block elements, block bytes, plain element bytes or 0) ----
TYPES = {
    0: ("F32", 1, 4, 4), 1: ("F16", 1, 2, 2), 2: ("Q4_0", 32, 18, 0), 3: ("Q4_1", 32, 20, 0),
    6: ("Q5_0", 32, 22, 0), 7: ("Q5_1", 32, 24, 0), 8: ("Q8_0", 32, 34, 0), 9: ("Q8_1", 32, 36, 0),
    10: ("Q2_K", 256, 84, 0), 11: ("Q3_K", 256, 110, 0), 12: ("Q4_K", 256, 144, 0), 13: ("Q5_K", 256, 176, 0),
    14: ("Q6_K", 256, 210, 0), 15: ("Q8_K", 256, 292, 0), 16: ("IQ2_XXS", 256, 66, 0), 17: ("IQ2_XS", 256, 74, 0),
    18: ("IQ3_XXS", 256, 98, 0), 19: ("IQ1_S", 256, 50, 0), 20: ("IQ4_NL", 32, 18, 0), 21: ("IQ3_S", 256, 110, 0),
    22: ("IQ2_S", 256, 82, 0), 23: ("IQ4_XS", 256, 136, 0), 24: ("I8", 1, 1, 1), 25: ("I16", 1, 2, 2),
    26: ("I32", 1, 4, 4), 27: ("I64", 1, 8, 8), 28: ("F64", 1, 8, 8), 29: ("IQ1_M", 256, 56, 0),
    30: ("BF16", 1, 2, 2), 34: ("TQ1_0", 256, 54, 0), 35: ("TQ2_0", 256, 66, 0), 39: ("MXFP4", 32, 17, 0),
}
# The multi-byte fields of the block types the library swaps for big-endian files (offset, size).
SWAP_FIELDS = {
    2: [(0, 2)], 8: [(0, 2)], 3: [(0, 2), (2, 2)], 12: [(0, 2), (2, 2)], 13: [(0, 2), (2, 2)],
    6: [(0, 2), (2, 4)], 7: [(0, 2), (2, 2), (4, 4)], 10: [(80, 2), (82, 2)], 11: [(108, 2)], 14: [(208, 2)],
    39: [],
}
VSIZE = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
FMT = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "B", 10: "Q", 11: "q", 12: "d"}
U8, I8, U16, I16, U32, I32, F32, BOOL, STR, ARR, U64, I64, F64 = range(13)
INT64_MAX = (1 << 63) - 1
RESULT = {"gguf.version": "UNSUPPORTED", "gguf.type": "UNSUPPORTED"}


def result_of(rule):
    return RESULT.get(rule, "FORMAT")


# ---- the writer ----------------------------------------------------------------------------------
class Gguf:
    """A GGUF file: kvs are (key bytes, type, value) with arrays as (ARR, (item type, [items]));
    tensors are dicts: name (bytes), ne (ggml order), type, data (little-endian stored bytes, made when
    None), offset (None: the running padded sum)."""

    def __init__(self, be=False, version=3, magic=b"GGUF", kvs=None, tensors=None, align=32):
        self.be, self.version, self.magic = be, version, magic
        self.kvs = list(kvs or [])
        self.tensors = list(tensors or [])
        self.align = align          # the alignment the writer pads with
        self.pad_byte = 0
        self.n_tensors = None       # overrides of the counts
        self.n_kv = None
        self.trailing = b""
        self.raw_version = None

    def e(self, fmt, *v):
        return struct.pack((">" if self.be else "<") + fmt, *v)

    def s(self, b):
        return self.e("Q", len(b)) + b

    def value(self, t, v, bounds, at):
        if t == STR:
            bounds += [at, at + 8]
            return self.s(v)
        if t == ARR:
            it, items = v
            out = self.e("I", it) + self.e("Q", len(items))
            bounds += [at, at + 4, at + 12]
            for x in items:
                out += self.value(it, x, bounds, at + len(out))
            return out
        bounds.append(at)
        return self.e(FMT[t], v) if t != BOOL else bytes([v])

    def build(self):
        """The file's bytes, the boundaries of its fields, and the data offset."""
        b = []
        out = bytearray(self.magic)
        out += self.e("I", self.raw_version if self.raw_version is not None else self.version)
        out += self.e("Q", len(self.tensors) if self.n_tensors is None else self.n_tensors)
        out += self.e("Q", len(self.kvs) if self.n_kv is None else self.n_kv)
        b += [0, 4, 8, 16, 24]
        self.kv_at, self.t_at = [], []
        for key, t, v in self.kvs:
            b += [len(out), len(out) + 8]
            k_at = len(out)
            out += self.s(key)
            b.append(len(out))
            t_at = len(out)
            out += self.e("I", t)
            self.kv_at.append((k_at, t_at, len(out)))
            out += self.value(t, v, b, len(out))
        running = 0
        datas = []
        for t in self.tensors:
            data = t["data"] if t.get("data") is not None else make_data(t)
            datas.append(data)
            b += [len(out), len(out) + 8]
            at = {"at": len(out), "dims": []}
            out += self.s(t["name"])
            b.append(len(out))
            at["nd"] = len(out)
            out += self.e("I", len(t["ne"]))
            for d in t["ne"]:
                b.append(len(out))
                at["dims"].append(len(out))
                out += self.e("Q", d)
            b.append(len(out))
            at["type"] = len(out)
            out += self.e("I", t["type"])
            b.append(len(out))
            at["off"] = len(out)
            self.t_at.append(at)
            off = running if t.get("offset") is None else t["offset"]
            out += self.e("Q", off)
            t["_off"] = off
            running += pad(len(data), self.align)
        b.append(len(out))
        self.infos_end = len(out)
        data_at = pad(len(out), self.align) if self.tensors else len(out)
        out += bytes([self.pad_byte]) * (data_at - len(out))
        for t, data in zip(self.tensors, datas):
            b.append(len(out))
            stored = to_big(t["type"], data) if self.be else data
            out += stored + bytes(pad(len(data), self.align) - len(data))
        out += self.trailing
        b.append(len(out))
        return bytes(out), sorted(set(b)), data_at


def pad(n, a):
    return (n + a - 1) // a * a


def nbytes(t):
    name, blk, bb, _ = TYPES[t["type"]]
    n = 1
    for d in t["ne"]:
        n *= d
    return n // blk * bb


def make_data(t):
    """Deterministic little-endian bytes for a tensor: finite floats, sane block scales."""
    rnd = random.Random(t["name"] + bytes([t["type"]]))
    tid = t["type"]
    name, blk, bb, unit = TYPES[tid]
    n = nbytes(t)
    if unit:
        count = n // unit
        if name == "F32":
            return b"".join(struct.pack("<f", rnd.uniform(-4, 4)) for _ in range(count))
        if name == "F16":
            return b"".join(struct.pack("<e", rnd.uniform(-4, 4)) for _ in range(count))
        if name == "BF16":
            return b"".join(struct.pack("<I", struct.unpack("<I", struct.pack("<f", rnd.uniform(-4, 4)))[0])[2:]
                            for _ in range(count))
        if name == "F64":
            return b"".join(struct.pack("<d", rnd.uniform(-4, 4)) for _ in range(count))
        return bytes(rnd.randrange(256) for _ in range(n))
    out = bytearray(rnd.randrange(256) for _ in range(n))
    for k in range(0, n, bb):  # the 2-byte fields of the swappable types are fp16 scales: keep them finite
        for at, size in SWAP_FIELDS.get(tid, []):
            if size == 2:
                out[k + at:k + at + 2] = struct.pack("<e", rnd.uniform(-0.5, 0.5))
    return bytes(out)


def to_big(tid, data):
    """The big-endian form of little-endian tensor bytes (block types: the swapped fields only)."""
    name, blk, bb, unit = TYPES[tid]
    if unit:
        if unit == 1:
            return data
        return b"".join(data[k:k + unit][::-1] for k in range(0, len(data), unit))
    out = bytearray(data)
    for k in range(0, len(data), bb):
        for at, size in SWAP_FIELDS.get(tid, []):
            out[k + at:k + at + size] = out[k + at:k + at + size][::-1]
    return bytes(out)


# ---- the model of the rules -------------------------------------------------------------------------
class Fail(Exception):
    def __init__(self, rule, offset):
        super().__init__(rule)
        self.rule, self.offset = rule, offset


def utf8_ok(b):
    try:
        b.decode("utf-8", "strict")
    except UnicodeDecodeError:
        return False
    return not any(0xD800 <= ord(c) <= 0xDFFF for c in b.decode("utf-8", "surrogatepass"))


def key_form(k):
    if len(k) > 65535 or not k:
        return False
    for seg in k.split(b"."):
        if not seg or any(not (97 <= c <= 122 or 48 <= c <= 57 or c == 95) for c in seg):
            return False
    return True


def model(buf, strict):
    """(None, info) when the file is valid, else (Fail, None)."""
    size = len(buf)
    st = {"pos": 0, "be": False}

    def need(n, rule="gguf.truncated"):
        if n > size - st["pos"]:
            raise Fail(rule, st["pos"])

    def rd(fmt, n):
        need(n)
        v = struct.unpack_from((">" if st["be"] else "<") + fmt, buf, st["pos"])[0]
        st["pos"] += n
        return v

    def string():
        at = st["pos"]
        need(8)
        n = struct.unpack_from((">" if st["be"] else "<") + "Q", buf, at)[0]
        if n > 1 << 30:
            raise Fail("gguf.string", at)
        if n > size - at - 8:
            raise Fail("gguf.string", at)
        st["pos"] = at + 8 + n
        return buf[at + 8:at + 8 + n], at

    try:
        need(4)
        if buf[:4] != b"GGUF":
            raise Fail("gguf.magic", 0)
        st["pos"] = 4
        need(4)
        v = struct.unpack_from("<I", buf, 4)[0]
        if v == 0:
            raise Fail("gguf.version", 4)
        if v & 0xFFFF == 0:
            st["be"] = True
            v = struct.unpack_from(">I", buf, 4)[0]
        if v == 1 or v > 3:
            raise Fail("gguf.version", 4)
        if strict and st["be"] and v != 3:
            raise Fail("gguf.strict_big_endian", 4)
        st["pos"] = 8
        need(16)
        nt, nkv = rd("Q", 8), rd("Q", 8)
        if nt > INT64_MAX:
            raise Fail("gguf.count", 8)
        if nkv > INT64_MAX:
            raise Fail("gguf.count", 16)
        if nkv * 14 + nt * 24 > size - 24:
            raise Fail("gguf.count", 8)
        kvs, keys, align_kv = [], {}, None
        for i in range(nkv):
            key, at = string()
            if not key:
                raise Fail("gguf.key", at)
            if key in keys:
                raise Fail("gguf.duplicate_key", at)
            keys[key] = i
            if strict and not key_form(key):
                raise Fail("gguf.strict_key", at)
            tat = st["pos"]
            t = rd("I", 4)
            vt, n = t, 1
            if t == ARR:
                need(12)
                vt, n = rd("I", 4), rd("Q", 8)
            if vt > 12 or vt == ARR:
                raise Fail("gguf.value_type", tat)

            def scalar(vt):
                at = st["pos"]
                need(VSIZE[vt])
                if vt == BOOL:
                    b = buf[at]
                    if strict and b > 1:
                        raise Fail("gguf.strict_bool", at)
                    st["pos"] += 1
                    return b != 0
                return rd(FMT[vt], VSIZE[vt])

            def strval():
                s, at = string()
                if strict and not utf8_ok(s):
                    raise Fail("gguf.strict_utf8", at)
                return s

            if t == ARR:
                if n > 1 << 30:
                    raise Fail("gguf.array", tat + 8)
                if n * (8 if vt == STR else VSIZE[vt]) > size - st["pos"]:
                    raise Fail("gguf.array", tat + 8)
                val = (vt, [strval() if vt == STR else scalar(vt) for _ in range(n)])
            else:
                val = strval() if vt == STR else scalar(vt)
            if align_kv is None and key.split(b"\0")[0] == b"general.alignment":
                align_kv = (t, vt, val, at)
            kvs.append((key, t, val))
        align = 32
        if align_kv is not None:
            t, vt, val, at = align_kv
            if t != U32:
                raise Fail("gguf.alignment", at)
            if val == 0 or val & (val - 1):
                raise Fail("gguf.alignment", at)
            if strict and val % 8:
                raise Fail("gguf.strict_alignment", at)
            align = val
        infos, names = [], set()
        for i in range(nt):
            at = st["pos"]
            name, _ = string()
            if len(name) >= 64:
                raise Fail("gguf.name", at)
            short = name.split(b"\0")[0]
            if short in names:
                raise Fail("gguf.duplicate_name", at)
            names.add(short)
            if strict and (short != name or not utf8_ok(name)):
                raise Fail("gguf.strict_name", at)
            nd_at = st["pos"]
            nd = rd("I", 4)
            if nd > 4:
                raise Fail("gguf.n_dims", nd_at)
            ne = []
            for j in range(nd):
                d_at = st["pos"]
                d = rd("Q", 8)
                if d > INT64_MAX:
                    raise Fail("gguf.shape", d_at)
                ne.append(d)
            full = ne + [1] * (4 - nd)
            if all(full):
                p = full[0]
                for k in (1, 2, 3):
                    if INT64_MAX // full[k] <= p:
                        raise Fail("gguf.overflow", at)
                    p *= full[k]
            numel = full[0] * full[1] * full[2] * full[3]
            t_at = st["pos"]
            ty = rd("I", 4)
            if ty not in TYPES:
                raise Fail("gguf.type", t_at)
            _, blk, bb, _ = TYPES[ty]
            if full[0] % blk:
                raise Fail("gguf.block", t_at)
            if numel // blk * bb >= 1 << 64:
                raise Fail("gguf.overflow", t_at)
            off_at = st["pos"]
            off = rd("Q", 8)
            infos.append((short, ne, ty, numel // blk * bb, off, off_at))
        pos = st["pos"]
        data_at = pos
        if nt:
            data_at = pad(pos, align)
            if data_at > size:
                raise Fail("gguf.data", pos)
            if strict:
                for k in range(pos, data_at):
                    if buf[k]:
                        raise Fail("gguf.strict_padding", k)
        total = 0
        for short, ne, ty, nb, off, off_at in infos:
            if off != total:
                raise Fail("gguf.offset", off_at)
            total += pad(nb, align)
            if total >= 1 << 64:
                raise Fail("gguf.overflow", off_at)
        if total > size - data_at:
            raise Fail("gguf.data", data_at)
        if strict:
            kd = {k: (t, v) for k, t, v in kvs}
            if kd.get(b"general.architecture", (None,))[0] != STR:
                raise Fail("gguf.strict_required", None)
            if any(TYPES[ty][3] == 0 for _, _, ty, _, _, _ in infos) and \
                    kd.get(b"general.quantization_version", (None,))[0] != U32:
                raise Fail("gguf.strict_required", None)
        return None, {"version": v, "be": st["be"], "kvs": kvs, "infos": infos, "data_at": data_at, "align": align}
    except Fail as f:
        return f, None


# ---- canonical values ---------------------------------------------------------------------------------
def canon(t, v):
    if t in (U8, U16, U32, U64):
        return "u%d" % v
    if t in (I8, I16, I32, I64):
        return "i%d" % v
    if t in (F32, F64):
        return "f%.17g" % v
    if t == BOOL:
        return "b%d" % (1 if v else 0)
    if t == STR:
        return "s" + v.hex()
    it, items = v
    return "a%d[%s]" % (it, ",".join(canon(it, x) for x in items))


def verdict_text(f):
    if f is None:
        return "OK"
    return "%s:%s:%s" % (result_of(f.rule), f.rule, "-" if f.offset is None else f.offset)


# ---- the cases ----------------------------------------------------------------------------------------
def T(name, ne, ty, **kw):
    d = {"name": name, "ne": list(ne), "type": ty}
    d.update(kw)
    return d


def base_kvs(quantized=True):
    kvs = [(b"general.architecture", STR, b"llama")]
    if quantized:
        kvs.append((b"general.quantization_version", U32, 2))
    return kvs


def every_kv():
    return [
        (b"t.u8", U8, 200), (b"t.i8", I8, -100), (b"t.u16", U16, 60000), (b"t.i16", I16, -30000),
        (b"t.u32", U32, 4000000000), (b"t.i32", I32, -2000000000), (b"t.f32", F32, struct.unpack("<f", struct.pack(
            "<f", 0.1))[0]), (b"t.bool", BOOL, 1), (b"t.false", BOOL, 0), (b"t.str", STR, "h\u00e9llo \u2603".encode()),
        (b"t.empty_str", STR, b""), (b"t.u64", U64, (1 << 64) - 1), (b"t.i64", I64, -(1 << 63)),
        (b"t.f64", F64, -1.5e300),
        (b"t.arr_u8", ARR, (U8, [0, 1, 255])), (b"t.arr_i8", ARR, (I8, [-128, 127])),
        (b"t.arr_u16", ARR, (U16, [1, 65535])), (b"t.arr_i16", ARR, (I16, [-32768, 5])),
        (b"t.arr_u32", ARR, (U32, [7, 4294967295])), (b"t.arr_i32", ARR, (I32, [-1, 2147483647])),
        (b"t.arr_f32", ARR, (F32, [1.5, -2.25, struct.unpack("<f", struct.pack("<f", 1e-30))[0]])),
        (b"t.arr_bool", ARR, (BOOL, [1, 0, 1])),
        (b"t.arr_str", ARR, (STR, [b"<s>", b"", b"\xc3\xa9t\xc3\xa9", b"a b"])), (b"t.arr_u64", ARR, (U64, [1 << 40])),
        (b"t.arr_i64", ARR, (I64, [-5, 1 << 62])), (b"t.arr_f64", ARR, (F64, [3.25, -0.0])),
        (b"t.arr_empty", ARR, (U32, [])), (b"t.arr_empty_str", ARR, (STR, [])),
    ]


def basic_tensors():
    return [
        T(b"token_embd.weight", [64, 3], 0), T(b"f16", [5, 2, 3], 1), T(b"bf16", [7], 30), T(b"i8", [9], 24),
        T(b"i16", [3, 3], 25), T(b"i32", [4], 26), T(b"i64", [2, 2], 27), T(b"f64", [3], 28),
        T(b"q8_0", [64, 2], 8), T(b"q4_0", [32], 2), T(b"q4_k", [256, 2], 12), T(b"q6_k", [256], 14),
        T(b"empty", [0, 4], 0), T(b"scalar", [], 0), T(b"four_d", [2, 3, 2, 2], 0),
        T(b"blk.0.attn_q.weight", [32, 1, 1], 7),
    ]


def all_types_tensors():
    return [T(("t%d_%s" % (tid, TYPES[tid][0])).encode(), [TYPES[tid][1] * 2, 2], tid) for tid in sorted(TYPES)]


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "build/gguf/corpus"
    os.makedirs(out, exist_ok=True)
    for f in os.listdir(out):
        os.remove(os.path.join(out, f))
    lines = []
    count = {"valid": 0, "invalid": 0}
    rules_seen = set()

    def emit(name, g, default=None, strict=None, hf=None):
        """Writes case `name`; default/strict: the expected verdicts ("OK" or "rule@offset"), or None to
        take the model's. Valid files also get their T and K lines, from what the writer wrote."""
        buf, _, data_at = g.build() if isinstance(g, Gguf) else (g, None, None)
        with open(os.path.join(out, name), "wb") as fh:
            fh.write(buf)
        verdicts = []
        for mode, want in ((False, default), (True, strict)):
            f, info = model(buf, mode)
            got = "OK" if f is None else "%s@%s" % (f.rule, f.offset)
            if want is not None and got != want and got.split("@")[0] != want:
                sys.exit("make_corpus: %s (%s): the model says %s, the case expects %s" %
                         (name, "strict" if mode else "default", got, want))
            if f is not None:
                rules_seen.add(f.rule)
            verdicts.append((f, info))
        (fd, info), (fs, _) = verdicts
        if fd is None:
            count["valid"] += 1
            ok_hf = hf if hf is not None else True
            lines.append("C\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d" % (
                name, verdict_text(fd), verdict_text(fs), info["version"], info["be"], len(info["infos"]),
                len(info["kvs"]), info["data_at"], 1 if ok_hf else 0))
            if isinstance(g, Gguf):
                check_and_expect(name, g, buf, info, lines)
        else:
            count["invalid"] += 1
            lines.append("C\t%s\t%s\t%s\t-\t-\t-\t-\t-\t0" % (name, verdict_text(fd), verdict_text(fs)))
        return buf

    def built(g):
        g.build()
        return g

    def patched(g, at, fmt, v):
        buf = bytearray(g.build()[0])
        struct.pack_into((">" if g.be else "<") + fmt, buf, at, v)
        return bytes(buf)

    # -- valid files: the basic one in both byte orders and both versions, every type, every KV type --
    for be in (False, True):
        for ver in (2, 3):
            tag = "%s_v%d" % ("be" if be else "le", ver)
            strict = "OK" if (not be or ver == 3) else "gguf.strict_big_endian@4"
            emit("valid_basic_%s.gguf" % tag, Gguf(be, ver, kvs=base_kvs() + every_kv(), tensors=basic_tensors()),
                 "OK", strict)
            emit("valid_all_types_%s.gguf" % tag, Gguf(be, ver, kvs=base_kvs(), tensors=all_types_tensors()), "OK",
                 strict)
    for al in (8, 64, 128, 4096):
        emit("valid_align_%d.gguf" % al, Gguf(kvs=base_kvs() + [(b"general.alignment", U32, al)],
                                            tensors=basic_tensors()[:6], align=al), "OK", "OK")
    for be, al in ((False, 1), (True, 4)):
        g = built(Gguf(be, kvs=base_kvs() + [(b"general.alignment", U32, al)], tensors=basic_tensors()[:6], align=al))
        emit("valid_align_%d.gguf" % al, g, "OK", "gguf.strict_alignment@%d" % g.kv_at[2][0])
    emit("valid_no_tensors.gguf", Gguf(kvs=base_kvs(False) + every_kv()[:5]), "OK", "OK")
    emit("valid_no_kvs.gguf", Gguf(tensors=[T(b"w", [4], 0)]), "OK", "gguf.strict_required@None")
    emit("valid_empty.gguf", Gguf(), "OK", "gguf.strict_required@None")
    emit("valid_empty_be.gguf", Gguf(True), "OK", "gguf.strict_required@None")
    g = Gguf(kvs=base_kvs(), tensors=basic_tensors()[:3])
    g.trailing = b"trailing bytes after the data section"
    emit("valid_trailing.gguf", g, "OK", "OK")
    emit("valid_name_63.gguf", Gguf(kvs=base_kvs(), tensors=[T(b"n" * 63, [2], 0)]), "OK", "OK")
    emit("valid_no_quant_version.gguf", Gguf(kvs=base_kvs(False), tensors=[T(b"q", [32], 8)]), "OK",
         "gguf.strict_required@None")
    emit("valid_no_quant_version_plain.gguf", Gguf(kvs=base_kvs(False), tensors=[T(b"w", [3], 0)]), "OK", "OK")
    emit("valid_arch_not_string.gguf", Gguf(kvs=[(b"general.architecture", U32, 1)], tensors=[T(b"w", [3], 0)]),
         "OK", "gguf.strict_required@None")
    emit("valid_quant_version_u64.gguf", Gguf(kvs=[(b"general.architecture", STR, b"x"),
                                                   (b"general.quantization_version", U64, 2)],
                                              tensors=[T(b"q", [32], 2)]), "OK", "gguf.strict_required@None")
    # what gguf.md forbids and ggml accepts: valid by default, refused under strict
    g = built(Gguf(kvs=base_kvs() + [(b"a.flag", BOOL, 2)], tensors=[T(b"w", [2], 0)]))
    emit("valid_bool_2.gguf", g, "OK", "gguf.strict_bool@%d" % g.kv_at[2][2])
    g = built(Gguf(kvs=base_kvs() + [(b"a.flags", ARR, (BOOL, [0, 1, 255]))]))
    emit("valid_bool_array_255.gguf", g, "OK", "gguf.strict_bool@%d" % (g.kv_at[2][2] + 14))
    for nm, key, hf in (("latin1", b"a.caf\xe9", False), ("utf8", "a.caf\u00e9".encode(), True),
                        ("upper", b"general.Name", True), ("empty_segment", b"a..b", True),
                        ("trailing_dot", b"a.b.", True), ("space", b"a b", True), ("long", b"k" * 65536, True),
                        ("nul", b"a.b\x00c", True)):
        g = built(Gguf(kvs=base_kvs() + [(key, U8, 1)]))
        emit("valid_key_%s.gguf" % nm, g, "OK", "gguf.strict_key@%d" % g.kv_at[2][0], hf=hf)
    emit("valid_key_65535.gguf", Gguf(kvs=base_kvs() + [(b"k" * 65535, U8, 1)]), "OK", "OK")
    g = built(Gguf(kvs=base_kvs() + [(b"a.s", STR, b"caf\xe9")]))
    emit("valid_string_latin1.gguf", g, "OK", "gguf.strict_utf8@%d" % g.kv_at[2][2], hf=False)
    g = built(Gguf(kvs=base_kvs() + [(b"a.s", ARR, (STR, [b"ok", b"\xed\xa0\x80"]))]))
    emit("valid_string_surrogate.gguf", g, "OK", "gguf.strict_utf8@%d" % (g.kv_at[2][2] + 12 + 10), hf=False)
    g = built(Gguf(kvs=base_kvs(), tensors=[T(b"w\x00hidden", [2], 0), T(b"v", [2], 0)]))
    emit("valid_name_nul.gguf", g, "OK", "gguf.strict_name@%d" % g.t_at[0]["at"], hf=False)
    g = built(Gguf(kvs=base_kvs(), tensors=[T(b"caf\xe9", [2], 0)]))
    emit("valid_name_latin1.gguf", g, "OK", "gguf.strict_name@%d" % g.t_at[0]["at"], hf=False)
    emit("valid_name_empty.gguf", Gguf(kvs=base_kvs(), tensors=[T(b"", [2], 0)]), "OK", "OK")
    g = Gguf(kvs=base_kvs(), tensors=[T(b"w", [2], 0)])
    g.pad_byte = 0xAA
    built(g)
    emit("valid_padding_nonzero.gguf", g, "OK", "gguf.strict_padding@%d" % g.infos_end)
    emit("valid_be_v2.gguf", Gguf(True, 2, kvs=base_kvs(), tensors=[T(b"w", [2], 0)]), "OK",
         "gguf.strict_big_endian@4")
    g = built(Gguf(kvs=base_kvs() + [(b"general.alignment\x00x", U32, 64)], tensors=[T(b"w", [2], 0)], align=64))
    emit("valid_alignment_after_nul_key.gguf", g, "OK", "gguf.strict_key@%d" % g.kv_at[2][0], hf=False)
    emit("valid_big_dims.gguf", Gguf(kvs=base_kvs(), tensors=[T(b"w", [1 << 40, 0, 1 << 20], 0)]), "OK", "OK",
         hf=False)  # @huggingface/gguf refuses dimensions above 2^32

    # -- invalid files, one or more for every rule --
    emit("bad_magic.gguf", Gguf(magic=b"GGUX"), "gguf.magic@0", "gguf.magic@0")
    emit("bad_magic_fugg.gguf", Gguf(magic=b"FUGG"), "gguf.magic@0", "gguf.magic@0")
    emit("bad_short_3.gguf", b"GGU", "gguf.truncated@0", "gguf.truncated@0")
    emit("bad_short_6.gguf", b"GGUF\x03\x00", "gguf.truncated@4", "gguf.truncated@4")
    for name, raw in (("0", 0), ("1", 1), ("4", 4), ("be1", 0x01000000), ("be256", 0x00010000), ("big", 0xFFFFFFFF)):
        g = Gguf()
        g.raw_version = raw
        emit("bad_version_%s.gguf" % name, g, "gguf.version@4", "gguf.version@4")
    for be in (False, True):
        g = Gguf(be, kvs=base_kvs())
        g.n_tensors = 1 << 63
        emit("bad_count_negative_tensors_%s.gguf" % ("be" if be else "le"), g, "gguf.count@8", "gguf.count@8")
        g = Gguf(be, kvs=base_kvs())
        g.n_kv = (1 << 64) - 1
        emit("bad_count_negative_kvs_%s.gguf" % ("be" if be else "le"), g, "gguf.count@16", "gguf.count@16")
    g = Gguf(kvs=base_kvs())
    g.n_kv = 1000
    emit("bad_count_kvs_too_many.gguf", g, "gguf.count@8", "gguf.count@8")
    g = Gguf(kvs=base_kvs(), tensors=[T(b"w", [2], 0)])
    g.n_tensors = 10
    emit("bad_count_tensors_too_many.gguf", g, "gguf.count@8", "gguf.count@8")
    g = Gguf(kvs=base_kvs() + [(b"a.pad", STR, bytes(100))], tensors=[T(b"w", [2], 0)])
    g.n_tensors = 3
    built(g)
    emit("bad_tensor_infos_run_into_data.gguf", g, "gguf.string", "gguf.string")
    g = built(Gguf(kvs=base_kvs() + [(b"", U8, 1)]))
    emit("bad_key_empty.gguf", g, "gguf.key@%d" % g.kv_at[2][0], "gguf.key@%d" % g.kv_at[2][0])
    g = built(Gguf(kvs=base_kvs() + [(b"general.architecture", STR, b"x")]))
    emit("bad_key_twice.gguf", g, "gguf.duplicate_key@%d" % g.kv_at[2][0], "gguf.duplicate_key")
    g = built(Gguf(kvs=base_kvs() + [(b"a", U8, 1), (b"b", U8, 1), (b"a", U8, 2)]))
    emit("bad_key_twice_later.gguf", g, "gguf.duplicate_key@%d" % g.kv_at[4][0], "gguf.duplicate_key")
    g = built(Gguf(kvs=base_kvs() + [(b"a.s", STR, b"x")]))
    v_at = g.kv_at[2][2]
    emit("bad_string_over_limit.gguf", patched(g, v_at, "Q", (1 << 30) + 1), "gguf.string@%d" % v_at, "gguf.string")
    emit("bad_string_past_end.gguf", patched(g, v_at, "Q", 1000), "gguf.string@%d" % v_at, "gguf.string")
    emit("bad_key_past_end.gguf", patched(g, g.kv_at[2][0], "Q", 1000), "gguf.string@%d" % g.kv_at[2][0],
         "gguf.string")
    g = built(Gguf(kvs=base_kvs(), tensors=[T(b"w", [2], 0)]))
    emit("bad_name_past_end.gguf", patched(g, g.t_at[0]["at"], "Q", 1 << 40), "gguf.string@%d" % g.t_at[0]["at"],
         "gguf.string")
    g = built(Gguf(kvs=base_kvs() + [(b"a.n", U8, 0)]))
    t_at = g.kv_at[2][1]
    emit("bad_value_type_13.gguf", patched(g, t_at, "I", 13), "gguf.value_type@%d" % t_at, "gguf.value_type")
    emit("bad_value_type_negative.gguf", patched(g, t_at, "I", 0xFFFFFFFF), "gguf.value_type@%d" % t_at,
         "gguf.value_type")
    g = built(Gguf(kvs=base_kvs() + [(b"a.arr", ARR, (U8, [1, 2]))]))
    t_at = g.kv_at[2][1]
    emit("bad_nested_array.gguf", patched(g, t_at + 4, "I", ARR), "gguf.value_type@%d" % t_at, "gguf.value_type")
    emit("bad_array_item_type.gguf", patched(g, t_at + 4, "I", 77), "gguf.value_type@%d" % t_at, "gguf.value_type")
    emit("bad_array_over_limit.gguf", patched(g, t_at + 8, "Q", (1 << 30) + 1), "gguf.array@%d" % (t_at + 8),
         "gguf.array")
    emit("bad_array_past_end.gguf", patched(g, t_at + 8, "Q", 100), "gguf.array@%d" % (t_at + 8), "gguf.array")
    g = built(Gguf(kvs=base_kvs() + [(b"a.arr", ARR, (STR, [b"x", b"y"]))]))
    t_at = g.kv_at[2][1]
    emit("bad_array_strings_past_end.gguf", patched(g, t_at + 8, "Q", 4), "gguf.array@%d" % (t_at + 8), "gguf.array")
    emit("bad_array_second_string.gguf", patched(g, t_at + 16 + 9, "Q", 1 << 20), "gguf.string@%d" % (t_at + 25),
         "gguf.string")
    for nm, t, v in (("u64", U64, 32), ("string", STR, b"32"), ("array", ARR, (U32, [32])), ("i32", I32, 32),
                     ("u16", U16, 32)):
        g = built(Gguf(kvs=base_kvs() + [(b"general.alignment", t, v)]))
        emit("bad_alignment_%s.gguf" % nm, g, "gguf.alignment@%d" % g.kv_at[2][0], "gguf.alignment")
    for al in (0, 3, 48, 0x80000001):
        g = built(Gguf(kvs=base_kvs() + [(b"general.alignment", U32, al)]))
        emit("bad_alignment_%d.gguf" % al, g, "gguf.alignment@%d" % g.kv_at[2][0], "gguf.alignment")
    g = built(Gguf(kvs=base_kvs() + [(b"general.alignment\x00", STR, b"64"), (b"general.alignment", U32, 64)]))
    emit("bad_alignment_key_with_nul.gguf", g, "gguf.alignment@%d" % g.kv_at[2][0], "gguf.strict_key")
    g = built(Gguf(kvs=base_kvs(), tensors=[T(b"n" * 64, [2], 0)]))
    emit("bad_name_64.gguf", g, "gguf.name@%d" % g.t_at[0]["at"], "gguf.name")
    g = built(Gguf(kvs=base_kvs(), tensors=[T(b"w", [2], 0), T(b"w", [2], 0)]))
    emit("bad_name_twice.gguf", g, "gguf.duplicate_name@%d" % g.t_at[1]["at"], "gguf.duplicate_name")
    g = built(Gguf(kvs=base_kvs(), tensors=[T(b"w\x00a", [2], 0), T(b"w\x00b", [2], 0)]))
    emit("bad_name_twice_after_nul.gguf", g, "gguf.duplicate_name@%d" % g.t_at[1]["at"], "gguf.strict_name")
    g = built(Gguf(kvs=base_kvs(), tensors=[T(b"w", [1, 1, 1, 1, 2], 0)]))
    emit("bad_n_dims_5.gguf", g, "gguf.n_dims@%d" % g.t_at[0]["nd"], "gguf.n_dims")
    g = built(Gguf(kvs=base_kvs(), tensors=[T(b"w", [2, 1 << 63], 0, data=b"")]))
    emit("bad_dim_negative.gguf", g, "gguf.shape@%d" % g.t_at[0]["dims"][1], "gguf.shape")
    for nm, ne, ty in (("wraps", [1 << 32, 1 << 32], 0), ("wraps_3d", [1 << 21, 1 << 21, 1 << 22], 0),
                       ("ggml_catches", [1 << 62, 4], 0), ("edge", [INT64_MAX, 1, 1, 1], 24),
                       ("edge_2d", [(1 << 62) - 1, 2], 24)):
        g = built(Gguf(kvs=base_kvs(), tensors=[T(b"w", ne, ty, data=b"")]))
        emit("bad_overflow_%s.gguf" % nm, g, "gguf.overflow@%d" % g.t_at[0]["at"], "gguf.overflow")
    g = built(Gguf(kvs=base_kvs(), tensors=[T(b"w", [1 << 62], 28, data=b"")]))
    emit("bad_overflow_bytes.gguf", g, "gguf.overflow@%d" % g.t_at[0]["type"], "gguf.overflow")
    g = built(Gguf(kvs=base_kvs() + [(b"general.alignment", U32, 64)],
                   tensors=[T(b"v", [2], 27), T(b"w", [(1 << 61) - 1], 27, data=b"")], align=64))
    emit("bad_overflow_padded.gguf", g, "gguf.overflow@%d" % g.t_at[1]["off"], "gguf.overflow")
    for tid, nm in ((4, "removed_4"), (31, "removed_31"), (38, "removed_38"), (40, "40"), (0xFFFFFFFF, "negative")):
        g = built(Gguf(kvs=base_kvs(), tensors=[T(b"w", [32], tid, data=b"")]))
        emit("bad_type_%s.gguf" % nm, g, "gguf.type@%d" % g.t_at[0]["type"], "gguf.type")
    g = built(Gguf(kvs=base_kvs(), tensors=[T(b"w", [48], 8, data=bytes(51))]))
    emit("bad_block.gguf", g, "gguf.block@%d" % g.t_at[0]["type"], "gguf.block")
    g = built(Gguf(kvs=base_kvs(), tensors=[T(b"w", [128, 2], 12, data=bytes(144))]))
    emit("bad_block_k.gguf", g, "gguf.block@%d" % g.t_at[0]["type"], "gguf.block")
    for nm, offs in (("gap", (None, 64)), ("unaligned", (None, 8)), ("order", (32, 0)), ("first", (32,))):
        ts = [T(("t%d" % k).encode(), [2], 0, offset=o) for k, o in enumerate(offs)]
        g = built(Gguf(kvs=base_kvs(), tensors=ts))
        bad = 1 if offs[0] is None else 0
        emit("bad_offset_%s.gguf" % nm, g, "gguf.offset@%d" % g.t_at[bad]["off"], "gguf.offset")
    g = built(Gguf(kvs=base_kvs(), tensors=[T(b"a", [2], 0)]))
    buf, _, data_at = g.build()
    emit("bad_data_start_past_end.gguf", buf[:data_at - 1], "gguf.data@%d" % g.infos_end, "gguf.data")
    emit("bad_data_short.gguf", buf[:-1], "gguf.data@%d" % data_at, "gguf.data")
    emit("bad_data_unpadded_last.gguf", buf[:data_at + 8], "gguf.data@%d" % data_at, "gguf.data")
    g = built(Gguf(kvs=base_kvs(), tensors=[T(b"a", [0], 0)]))
    emit("bad_data_empty_tensor_past_end.gguf", g.build()[0][:g.infos_end], "gguf.data@%d" % g.infos_end,
         "gguf.data")
    g = built(Gguf(kvs=base_kvs(), tensors=[T(b"a", [0], 0)]))
    emit("valid_data_empty_tensor.gguf", g, "OK", "OK")
    # -- truncation at every structural boundary (and one byte into each field) of the base files --
    for be in (False, True):
        for ver in (2, 3):
            tag = "%s_v%d" % ("be" if be else "le", ver)
            g = Gguf(be, ver, kvs=base_kvs() + every_kv(), tensors=basic_tensors())
            buf, bounds, data_at = g.build()
            cuts = set()
            for b in bounds:
                if b < data_at:
                    cuts.update((b, b + 1))
            cuts.update((data_at, data_at + 1, len(buf) - 1))
            for L in sorted(c for c in cuts if c < len(buf)):
                emit("cut_%s_%06d.gguf" % (tag, L), buf[:L])

    # -- every rule has a case --
    ids = [l.split('"')[1] for l in open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                                       "safetensors_spark.h")).read().split("\n")
           if l.strip().startswith("X(STS_RULE_GGUF_")]
    missing = [r for r in ids if r not in rules_seen]
    if missing:
        sys.exit("make_corpus: no case breaks " + ", ".join(missing))
    with open(os.path.join(out, "cases.tsv"), "w") as fh:
        fh.write("\n".join(lines) + "\n")
    print("make_corpus: %d valid and %d invalid files in %s; every one of the %d GGUF rules broken" %
          (count["valid"], count["invalid"], out, len(ids)))


def check_and_expect(name, g, buf, info, lines):
    """The model's reading of a valid file must be what the writer wrote; then the T and K lines."""
    assert info["be"] == g.be and info["version"] == g.version, name
    assert len(info["kvs"]) == len(g.kvs), name
    for k, (key, t, v) in enumerate(g.kvs):
        mk, mt, mv = info["kvs"][k]
        assert mk == key and mt == t, name
        vt = v[0] if t == ARR else t
        if vt != BOOL:
            assert canon(t, mv) == canon(t, v), (name, key)
        digest = hashlib.sha256(canon(t, v).encode()).hexdigest()
        lines.append("K\t%s\t%d\t%s\t%d\t%s" % (name, k, key.hex(), t, digest))
    for i, t in enumerate(g.tensors):
        short, ne, ty, nb, off, _ = info["infos"][i]
        assert short == t["name"].split(b"\0")[0] and ne == t["ne"] and ty == t["type"], name
        data = t["data"] if t.get("data") is not None else make_data(t)
        assert nb == len(data), name
        at = info["data_at"] + off
        stored = buf[at:at + nb]
        le = data
        be = to_big(ty, data)
        swappable = TYPES[ty][3] or ty in SWAP_FIELDS
        lines.append("T\t%s\t%d\t%s\t%d\t%d\t%s\t%d\t%d\t%s\t%s\t%s" % (
            name, i, short.hex(), ty, len(ne), ",".join(str(d) for d in ne) or "-", at, nb,
            hashlib.sha256(stored).hexdigest(),
            hashlib.sha256(le).hexdigest() if (swappable or not g.be) else "-",
            hashlib.sha256(be).hexdigest() if (swappable or g.be) else "-"))


if __name__ == "__main__":
    main()
