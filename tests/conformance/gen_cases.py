#!/usr/bin/python3
"""Generate our own conformance cases for safetensors_spark.h.

    /usr/bin/python3 tests/conformance/gen_cases.py [OUTDIR]

writes OUTDIR/own/*.safetensors, OUTDIR/own.tsv and OUTDIR/shared_strict.tsv (OUTDIR defaults to
the folder holding this script, i.e. tests/conformance). The output is deterministic: `make
test-conformance-gen` regenerates into a temporary folder and diffs it against the checked-in
files, so the corpus and this script never drift. Regenerate after editing with
`/usr/bin/python3 tests/conformance/gen_cases.py` and commit the result.

Every expected verdict below is written by hand from the rules in shared/reference.md (sections
A-D) and the strict rules of DESIGN.md section 4. As a second, independent derivation, `Model`
re-implements those rules in Python; the script refuses to write anything if a hand-written verdict,
variant, tensor count or strict verdict disagrees with the model, or if the model disagrees with
shared/expected.tsv. The rewrite_identical column is computed by the model's copy of the reference
writer's layout (reference.md D). Nothing here looks at the C implementation's output.

own.tsv columns: file, verdict (OK/ERR), variant (reference variant or -), n_tensors (or -),
rewrite_identical (yes/no/n/a, - for ERR), strict (OK/ERR under sts_options.strict), description.
shared_strict.tsv columns: file, strict, reason.

Plain Python 3, standard library only.
"""
import json
import os
import re
import struct
import sys

U64 = (1 << 64) - 1
MAX_N = 100_000_000
MAX_DEPTH = 127

# reference.md C: (name, bits) in the writer's rank order
DTYPES = [("BOOL", 8), ("F4", 4), ("F6_E2M3", 6), ("F6_E3M2", 6), ("U8", 8), ("I8", 8),
          ("F8_E5M2", 8), ("F8_E4M3", 8), ("F8_E8M0", 8), ("F8_E4M3FNUZ", 8), ("F8_E5M2FNUZ", 8),
          ("I16", 16), ("U16", 16), ("F16", 16), ("BF16", 16), ("I32", 32), ("U32", 32),
          ("F32", 32), ("C64", 64), ("F64", 64), ("I64", 64), ("U64", 64)]
RANK = {n: i for i, (n, _) in enumerate(DTYPES)}
BITS = dict(DTYPES)


# ---------------------------------------------------------------------------------------------
# byte builders
# ---------------------------------------------------------------------------------------------
def le64(n):
    return struct.pack("<Q", n)


def pad8(h):
    return h + b" " * (-len(h) % 8)


def B(x):
    return x.encode("utf-8") if isinstance(x, str) else x


def F(header, data=b"", pad=True, n=None):
    """A file: 8-byte N, the header (space-padded to a multiple of 8 unless pad=False), data."""
    h = B(header)
    if pad:
        h = pad8(h)
    return le64(len(h) if n is None else n) + h + data


def dat(k, seed=0):
    """k deterministic data bytes (not valid UTF-8 in general: data is never checked)."""
    return bytes(((i * 131 + seed * 17 + 7) & 0xFF) for i in range(k))


def ent(dt, shape, b, e):
    """Compact tensor entry JSON text (dt is inserted verbatim between quotes)."""
    return '{"dtype":"%s","shape":[%s],"data_offsets":[%d,%d]}' % (
        dt, ",".join(str(d) for d in shape), b, e)


def obj(*pairs):
    """'{"k1":v1,...}' with keys inserted verbatim between quotes (so escapes can be spelled)."""
    return "{" + ",".join('"%s":%s' % (k, v) for k, v in pairs) + "}"


def nbytes(dt, shape):
    n = 1
    for d in shape:
        n *= d
    bits = n * BITS[dt]
    assert bits % 8 == 0
    return bits // 8


def jstr(s):
    """The reference writer's string escaping (reference.md D.3)."""
    out = ['"']
    for ch in s:
        o = ord(ch)
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch == "\b":
            out.append("\\b")
        elif ch == "\f":
            out.append("\\f")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\t":
            out.append("\\t")
        elif o < 0x20:
            out.append("\\u%04x" % o)
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def canon(tensors, meta=None):
    """The reference writer's exact bytes (reference.md D).
    tensors: list of (name, dtype, shape[, data]); meta: None (no key) or list of (k, v)."""
    full = []
    for i, t in enumerate(tensors):
        name, dt, shape = t[0], t[1], t[2]
        data = t[3] if len(t) > 3 else dat(nbytes(dt, shape), i)
        assert len(data) == nbytes(dt, shape)
        full.append((name, dt, shape, data))
    full.sort(key=lambda t: (-RANK[t[1]], t[0].encode("utf-8")))
    parts = []
    if meta is not None:
        parts.append('"__metadata__":{' + ",".join(jstr(k) + ":" + jstr(v) for k, v in meta) + "}")
    off = 0
    for name, dt, shape, data in full:
        parts.append(jstr(name) + ":" + ent(dt, shape, off, off + len(data)))
        off += len(data)
    h = pad8(("{" + ",".join(parts) + "}").encode("utf-8"))
    return le64(len(h)) + h + b"".join(t[3] for t in full)


# ---------------------------------------------------------------------------------------------
# Model: the reference reader's rules (reference.md A and B) plus strict (DESIGN.md 4)
# ---------------------------------------------------------------------------------------------
class Obj:
    def __init__(self, pairs):
        self.pairs = pairs


class Num:  # a JSON integer literal
    def __init__(self, s):
        self.s = s
        self.v = int(s)
        self.neg = s.startswith("-")


class Flt:  # a JSON number with a fraction or exponent
    def __init__(self, s):
        self.s = s
        self.inf = float(s) in (float("inf"), float("-inf"))


def _f64_overflows(v):
    """serde_json turns numbers that are not 64-bit integers into f64 and rejects infinity."""
    if isinstance(v, Flt):
        return v.inf
    if isinstance(v, Num) and (v.v > U64 or v.v < -(1 << 63)):
        try:
            return float(v.v) in (float("inf"), float("-inf"))
        except OverflowError:
            return True
    return False


def _check_ignored(v):
    """The reference buffers tensor entries through serde's flatten (checked in its source):
    ignored values are parsed as serde Content, so a number overflowing f64 is an error."""
    if _f64_overflows(v):
        raise JErr("number out of range of f64 in an ignored field")
    for x in (v.pairs and [x for _, x in v.pairs] if isinstance(v, Obj) else v if isinstance(v, list) else []):
        _check_ignored(x)


class Unsure(Exception):
    pass


class JErr(Exception):
    pass


def _reject_constant(s):
    raise JErr("NaN/Infinity are not JSON")


DECODER = json.JSONDecoder(object_pairs_hook=Obj, parse_int=Num, parse_float=Flt,
                           parse_constant=_reject_constant, strict=True)


def _depth(v):
    if isinstance(v, Obj):
        return 1 + max([_depth(x) for _, x in v.pairs], default=0)
    if isinstance(v, list):
        return 1 + max([_depth(x) for x in v], default=0)
    return 0


def _strings(v):
    if isinstance(v, str):
        yield v
    elif isinstance(v, Obj):
        for k, x in v.pairs:
            yield k
            yield from _strings(x)
    elif isinstance(v, list):
        for x in v:
            yield from _strings(x)


def _u64(x):
    if not isinstance(x, Num) or x.neg or x.v > U64:
        raise JErr("not a u64")
    return x.v


def _tensor(v, st):
    """Deserialize one tensor entry; returns (dtype, shape, begin, end)."""
    if isinstance(v, list):
        st["positional"] = True
        if len(v) != 3:
            raise JErr("positional entry needs 3 elements")
        dt, shape, offs = v
    elif isinstance(v, Obj):
        seen = {}
        for k, x in v.pairs:
            if k in ("dtype", "shape", "data_offsets"):
                if k in seen:
                    raise JErr("duplicate field")
                seen[k] = x
            else:
                st["unknown"] = True
                _check_ignored(x)
        if len(seen) != 3:
            raise JErr("missing field")
        dt, shape, offs = seen["dtype"], seen["shape"], seen["data_offsets"]
    else:
        raise JErr("entry type")
    if not isinstance(dt, str) or dt not in BITS:
        raise JErr("dtype")
    if not isinstance(shape, list):
        raise JErr("shape type")
    shape = [_u64(d) for d in shape]
    if not isinstance(offs, list) or len(offs) != 2:
        raise JErr("data_offsets")
    b, e = _u64(offs[0]), _u64(offs[1])
    return dt, shape, b, e


def model(b):
    """Returns dict: verdict, variant, n, strict ('OK'/'ERR'), rewrite."""
    def err(variant):
        return {"verdict": "ERR", "variant": variant, "n": "-", "strict": "ERR", "rewrite": "-"}

    if len(b) < 8:
        return err("HeaderTooSmall")
    n = struct.unpack("<Q", b[:8])[0]
    if n > MAX_N:
        return err("HeaderTooLarge")
    if 8 + n > len(b):
        return err("InvalidHeaderLength")
    try:
        s = b[8:8 + n].decode("utf-8")  # Python's strict decoder = Rust's from_utf8
    except UnicodeDecodeError:
        return err("InvalidHeader")
    st = {"positional": False, "unknown": False}
    try:
        m = re.match(r"[ \t\n\r]*", s)
        try:
            top, end = DECODER.raw_decode(s, m.end())
        except ValueError:
            raise JErr("syntax")
        except RecursionError:  # far deeper than 127 containers
            raise JErr("depth")
        rest = s[end:]
        if rest.strip(" \t\n\r") != "":
            raise JErr("trailing characters")
        for x in _strings(top):
            try:
                x.encode("utf-8")
            except UnicodeEncodeError:
                raise JErr("lone surrogate")
        if _depth(top) > MAX_DEPTH:
            raise JErr("depth")
        if not isinstance(top, Obj):
            raise JErr("top is not an object")
        meta_seen = 0
        meta = None
        meta_null = False
        meta_dup = False
        tensors = {}
        name_dup = False
        for k, v in top.pairs:
            if k == "__metadata__":
                meta_seen += 1
                if meta_seen > 1:
                    raise JErr("__metadata__ twice")
                if v is None:
                    meta_null = True
                elif isinstance(v, Obj):
                    meta = {}
                    for mk, mv in v.pairs:
                        if not isinstance(mv, str):
                            raise JErr("metadata value")
                        if mk in meta:
                            meta_dup = True
                        meta[mk] = mv
                else:
                    raise JErr("metadata type")
            else:
                t = _tensor(v, st)  # every copy is deserialized, the last one wins
                if k in tensors:
                    name_dup = True
                    del tensors[k]
                tensors[k] = t
    except JErr:
        return err("InvalidHeaderDeserialization")
    # A.6
    cursor = 0
    for name, (dt, shape, tb, te) in sorted(tensors.items(), key=lambda kv: (kv[1][2], kv[1][3])):
        if tb != cursor or te < tb:
            return err("InvalidOffset")
        numel = 1
        for d in shape:
            numel *= d
            if numel > U64:
                return err("ValidationOverflow")
        bits = numel * BITS[dt]
        if bits > U64:
            return err("ValidationOverflow")
        if bits % 8:
            return err("MisalignedSlice")
        if te - tb != bits // 8:
            return err("TensorInvalidInfo")
        cursor = te
    # A.7
    if 8 + n + cursor != len(b):
        return err("MetadataIncompleteBuffer")
    strict_bad = (not s.startswith("{") or rest.strip(" ") != "" or name_dup or meta_dup
                  or st["positional"] or st["unknown"] or meta_null
                  or any("\0" in k for k in tensors))
    if meta is not None and len(meta) >= 2:
        rewrite = "n/a"
    else:
        data = b[8 + n:]
        again = canon([(k, t[0], t[1], data[t[2]:t[3]]) for k, t in tensors.items()],
                      None if meta is None else list(meta.items()))
        rewrite = "yes" if again == b else "no"
    return {"verdict": "OK", "variant": "-", "n": len(tensors),
            "strict": "ERR" if strict_bad else "OK", "rewrite": rewrite}


# ---------------------------------------------------------------------------------------------
# the cases
# ---------------------------------------------------------------------------------------------
CASES = []
IHD = "InvalidHeaderDeserialization"


def ok(name, b, n, desc, strict="OK", canonical=False):
    CASES.append({"file": "v_" + name + ".safetensors", "bytes": b, "verdict": "OK", "variant": "-",
                  "n": n, "strict": strict, "desc": desc, "canonical": canonical})


def bad(name, b, variant, desc):
    CASES.append({"file": "e_" + name + ".safetensors", "bytes": b, "verdict": "ERR",
                  "variant": variant, "n": "-", "strict": "ERR", "desc": desc, "canonical": False})


def okc(name, tensors, meta, desc, n=None):
    b = canon(tensors, meta)
    ok(name, b, len(tensors) if n is None else n, desc, canonical=True)


U8_1 = ent("U8", [1], 0, 1)  # a one-byte tensor entry, used with data b"\x01"


def one(name_json, data=b"\x01"):
    """A file with a single U8[1] tensor whose key is the given JSON text (bytes or str)."""
    return F(b'{"' + B(name_json) + b'":' + B(U8_1) + b"}", data)


def build():
    # ---- A.1 file shorter than 8 bytes ----------------------------------------------------------
    good = canon([("a", "U8", [1])])
    bad("size_0", b"", "HeaderTooSmall", "empty file (0 bytes)")
    for k in range(1, 8):
        bad("size_%d" % k, good[:k], "HeaderTooSmall", "file of %d bytes: a prefix of a valid file" % k)
    bad("size_7_ff", b"\xff" * 7, "HeaderTooSmall",
        "7 bytes 0xff: too small wins over any header length (A.1 before A.2)")
    bad("size_8_n1", le64(1), "InvalidHeaderLength",
        "exactly 8 bytes, N=1: passes A.1, header runs past the end")
    ok("size_10_min", le64(2) + b"{}", 0, "smallest valid file: N=2 '{}' without padding, 10 bytes")

    # ---- A.2 N over 100,000,000 (checked before the file size) ----------------------------------
    bad("n_100000001_short", le64(100000001) + b"{}", "HeaderTooLarge",
        "N=100,000,001 with a 10-byte file: the cap is checked before the file size")
    bad("n_100000000_short", le64(100000000) + b"{}", "InvalidHeaderLength",
        "N=100,000,000 exactly (allowed) with a 10-byte file: passes the cap, fails the length check")
    bad("n_100000000_no_header", le64(100000000), "InvalidHeaderLength",
        "N=100,000,000 and no header byte at all")
    bad("n_2pow63", le64(1 << 63) + b"{}", "HeaderTooLarge", "N=2^63")
    bad("n_100000001_bad_utf8", le64(100000001) + b"\xff\xfe", "HeaderTooLarge",
        "N=100,000,001 followed by invalid UTF-8: A.2 before A.4")
    ok("n_big_padding", F(obj(("w", ent("I16", [2], 0, 4))) + " " * 4000, dat(4)), 1,
       "header padded with ~4000 spaces (N=4064): N well under the cap")

    # ---- A.3 8 + N past the end ----------------------------------------------------------------
    bad("n_one_past_end", le64(3) + b"{}", "InvalidHeaderLength", "N=3 but only 2 header bytes")
    bad("n_past_end_bad_utf8", le64(10) + b"\xff\xfe", "InvalidHeaderLength",
        "N past the end and the bytes present are invalid UTF-8: A.3 before A.4")
    g = canon([("w", "F32", [2])])
    bad("n_past_end_by_one_with_data", le64(len(g) - 8 + 1) + g[8:], "InvalidHeaderLength",
        "N = (file size - 8) + 1: one byte past the end, data bytes included")
    ok("n_reaches_end_exactly", F(b'{"__metadata__":{"k":"v"}}', b"", pad=False), 0,
       "8 + N equals the file size exactly: unpadded metadata-only header, no data")

    # ---- A.4 UTF-8 (all N bytes, padding included) ----------------------------------------------
    valid_chars = [
        ("2byte_min", "\u0080", "U+0080 (C2 80), smallest 2-byte form"),
        ("2byte_max", "\u07ff", "U+07FF (DF BF), largest 2-byte form"),
        ("3byte_min", "\u0800", "U+0800 (E0 A0 80), smallest 3-byte form"),
        ("3byte_below_surrogates", "\ud7ff", "U+D7FF (ED 9F BF), just below the surrogates"),
        ("3byte_above_surrogates", "\ue000", "U+E000 (EE 80 80), just above the surrogates"),
        ("3byte_max", "\uffff", "U+FFFF (EF BF BF), largest 3-byte form (a noncharacter, still UTF-8)"),
        ("4byte_min", "\U00010000", "U+10000 (F0 90 80 80), smallest 4-byte form"),
        ("4byte_emoji", "\U0001f600", "U+1F600 (F0 9F 98 80)"),
        ("4byte_max", "\U0010ffff", "U+10FFFF (F4 8F BF BF), the largest code point"),
    ]
    for tag, ch, what in valid_chars:
        okc("utf8_" + tag, [("n" + ch, "U8", [1])], None, "tensor name with raw " + what)
    ok("utf8_metadata_mixed", canon([("w", "U8", [1])], [("k\u00e9\u20ac", "v\U0001f600\u0800")]), 1,
       "2/3/4-byte characters in a metadata key and value", canonical=True)
    ok("utf8_valid_in_unknown_field", F(b'{"w":{"dtype":"U8","note":"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80","shape":[1],"data_offsets":[0,1]}}', b"\x01"),
       1, "valid multi-byte UTF-8 inside an ignored unknown field", strict="ERR")
    ok("utf8_invalid_in_data", F(obj(("w", ent("U8", [4], 0, 4))), b"\xff\xc0\xed\xa0"), 1,
       "data bytes FF C0 ED A0 are not UTF-8: only the N header bytes are checked")

    bad_utf8 = [
        ("overlong2_c0", b"\xc0\x80", "overlong 2-byte C0 80 (NUL)"),
        ("overlong2_c1", b"\xc1\xbf", "overlong 2-byte C1 BF"),
        ("overlong3_min", b"\xe0\x80\x80", "overlong 3-byte E0 80 80"),
        ("overlong3_max", b"\xe0\x9f\xbf", "overlong 3-byte E0 9F BF (U+07FF)"),
        ("overlong4_min", b"\xf0\x80\x80\x80", "overlong 4-byte F0 80 80 80"),
        ("overlong4_max", b"\xf0\x8f\xbf\xbf", "overlong 4-byte F0 8F BF BF (U+FFFF)"),
        ("surrogate_d800", b"\xed\xa0\x80", "encoded surrogate ED A0 80 (U+D800)"),
        ("surrogate_dfff", b"\xed\xbf\xbf", "encoded surrogate ED BF BF (U+DFFF)"),
        ("surrogate_pair_cesu8", b"\xed\xa0\xbd\xed\xb8\x80", "CESU-8 surrogate pair ED A0 BD ED B8 80"),
        ("above_max_f490", b"\xf4\x90\x80\x80", "F4 90 80 80 = U+110000, above U+10FFFF"),
        ("above_max_f4bf", b"\xf4\xbf\xbf\xbf", "F4 BF BF BF, above U+10FFFF"),
        ("lead_f5", b"\xf5\x80\x80\x80", "lead byte F5"),
        ("lead_f7", b"\xf7\xbf\xbf\xbf", "lead byte F7 (old 4-byte form up to U+1FFFFF)"),
        ("lead_f8", b"\xf8\x88\x80\x80\x80", "lead byte F8 (old 5-byte form)"),
        ("lead_fc", b"\xfc\x84\x80\x80\x80\x80", "lead byte FC (old 6-byte form)"),
        ("lead_fe", b"\xfe", "byte FE"),
        ("lead_ff", b"\xff", "byte FF inside a name"),
        ("trunc2", b"\xc3", "2-byte sequence cut short by the closing quote"),
        ("trunc3", b"\xe2\x82", "3-byte sequence cut short by the closing quote"),
        ("trunc4", b"\xf0\x9f\x98", "4-byte sequence cut short by the closing quote"),
        ("stray_cont_80", b"\x80", "stray continuation byte 80"),
        ("stray_cont_bf", b"a\xbfb", "stray continuation byte BF between ASCII"),
        ("cont_after_complete", b"\xc3\xa9\xa9", "an extra continuation after a complete 2-byte char"),
        ("lead_then_ascii", b"\xe2a\x82", "3-byte lead followed by ASCII"),
    ]
    for tag, seq, what in bad_utf8:
        bad("utf8_" + tag, one(b"n" + seq), "InvalidHeader", "tensor name holds " + what)
    bad("utf8_trunc3_end_of_header", F(b'{"w":' + B(U8_1) + b"}     \xe2\x82", b"\xac\x01", pad=False),
        "InvalidHeader", "header ends with E2 82; the next (data) byte AC would complete it but is outside N")
    bad("utf8_trunc4_end_of_header", F(b'{"w":' + B(U8_1) + b"} \xf0\x9f\x98", b"\x01", pad=False),
        "InvalidHeader", "header ends with a truncated 4-byte sequence F0 9F 98")
    bad("utf8_stray_cont_in_padding", F(b'{"w":' + B(U8_1) + b"}  \xbf", b"\x01", pad=False),
        "InvalidHeader", "continuation byte BF in the padding")
    bad("utf8_leading_ff", F(b'\xff{"w":' + B(U8_1) + b"}", b"\x01"), "InvalidHeader",
        "byte FF before the '{'")
    bad("utf8_in_metadata_value", F(b'{"__metadata__":{"k":"\xc0\xaf"},"w":' + B(U8_1) + b"}", b"\x01"),
        "InvalidHeader", "overlong C0 AF in a metadata value")
    bad("utf8_in_unknown_field", F(b'{"w":{"dtype":"U8","x":"\xed\xa0\x80","shape":[1],"data_offsets":[0,1]}}', b"\x01"),
        "InvalidHeader", "encoded surrogate in an ignored unknown field: all N bytes are checked")
    bad("utf8_in_dtype", F(b'{"w":{"dtype":"U\xf8","shape":[1],"data_offsets":[0,1]}}', b"\x01"),
        "InvalidHeader", "invalid UTF-8 inside the dtype string: A.4 before the dtype check")
    bad("utf8_before_offset_error", F(b'{"w":' + B(ent("U8", [1], 4, 5)) + b"}\xff", b"\x01" * 5),
        "InvalidHeader", "bad offsets and an FF in the padding: A.4 comes first")
    bad("utf8_nbsp_padding", F(b'{"w":' + B(U8_1) + b"}\xc2\xa0", b"\x01"), IHD,
        "valid UTF-8 NBSP (C2 A0) in the padding: not JSON whitespace")
    bad("utf8_e_acute_padding", F(b'{"w":' + B(U8_1) + b"}\xc3\xa9", b"\x01"), IHD,
        "valid UTF-8 letter in the padding: JSON error, not a UTF-8 error")
    bad("utf8_bom_padding", F(b'{"w":' + B(U8_1) + b"}\xef\xbb\xbf", b"\x01"), IHD,
        "U+FEFF (EF BB BF) after the object")
    bad("utf8_u2028_padding", F(b'{"w":' + B(U8_1) + b"}\xe2\x80\xa8", b"\x01"), IHD,
        "U+2028 line separator after the object")

    # ---- B whitespace -----------------------------------------------------------------------------
    body = b'{"w":' + B(ent("I16", [2], 0, 4)) + b"}"
    for tag, ws in (("space", b" "), ("tab", b"\t"), ("lf", b"\n"), ("cr", b"\r")):
        ok("ws_lead_" + tag, F(ws + body, dat(4)), 1,
           "one %s before '{' (JSON whitespace is accepted; strict rejects it)" % tag, strict="ERR")
    ok("ws_lead_all_four", F(b" \t\r\n" + body, dat(4)), 1, "space TAB CR LF before '{'", strict="ERR")
    for tag, ws in (("tab", b"\t"), ("lf", b"\n"), ("cr", b"\r")):
        ok("ws_trail_" + tag, F(body + ws, dat(4), pad=False), 1,
           "a single %s after the object as the only padding (strict: padding must be 0x20)" % tag,
           strict="ERR")
    ok("ws_trail_space_then_lf", F(body + b"   \n", dat(4), pad=False), 1,
       "spaces then LF as padding", strict="ERR")
    ok("ws_trail_spaces_extra", F(body + b" " * 11, dat(4), pad=False), 1,
       "11 spaces of padding (more than needed for a multiple of 8)")
    ok("ws_inside_all", F(b'{\t"w"\r:\n{ "dtype"\t:\r"I16" ,\n"shape":[\t2\r]\n,"data_offsets":\r\n[0\t,\t4]\n}\r}', dat(4)), 1,
       "TAB CR LF space between tokens inside the object (strict only looks before '{' and after '}')")
    for tag, ws in (("ff", b"\x0c"), ("vt", b"\x0b"), ("nul", b"\x00"), ("nbsp", b"\xc2\xa0"),
                    ("bom", b"\xef\xbb\xbf"), ("u3000", b"\xe3\x80\x80")):
        bad("ws_lead_" + tag, F(ws + body, dat(4)), IHD, "%s before '{' is not JSON whitespace" % tag)
    for tag, ws in (("ff", b"\x0c"), ("vt", b"\x0b"), ("nul", b"\x00")):
        bad("ws_trail_" + tag, F(body + b"  " + ws, dat(4), pad=False), IHD,
            "%s in the padding after spaces" % tag)
    for tag, ws in (("ff", b"\x0c"), ("vt", b"\x0b"), ("nbsp", b"\xc2\xa0"), ("nul", b"\x00")):
        bad("ws_inside_" + tag, F(b'{"w":' + ws + B(ent("I16", [2], 0, 4)) + b"}", dat(4)), IHD,
            "%s between a key's colon and its value" % tag)

    # ---- B top level ------------------------------------------------------------------------------
    for tag, h in (("number", b"1"), ("true", b"true"), ("false", b"false"), ("empty_array", b"[]"),
                   ("array_of_entry", b"[" + B(U8_1) + b"]"), ("empty_string", b'""'),
                   ("two_objects", b"{}{}"), ("object_comma", b"{},"), ("unclosed", b"{"),
                   ("close_only", b"}"), ("key_no_value", b'{"a"}'),
                   ("missing_colon", b'{"w"' + B(U8_1) + b"}"),
                   ("missing_comma", b'{"w":' + B(U8_1) + b'"x":' + B(ent("U8", [0], 1, 1)) + b"}"),
                   ("trailing_comma", b'{"w":' + B(U8_1) + b",}"),
                   ("leading_comma", b'{,"w":' + B(U8_1) + b"}"),
                   ("double_colon", b'{"w"::' + B(U8_1) + b"}"),
                   ("unquoted_key", b"{w:" + B(U8_1) + b"}"),
                   ("unterminated_key", b'{"w'),
                   ("object_then_array", b"{}[]")):
        bad("top_" + tag, F(h, b"\x01" if b"U8" in h else b""), IHD, "header JSON: " + tag.replace("_", " "))
    okc("top_empty_object_canonical", [], None, "'{}' + 6 spaces: the reference writer's empty file")
    bad("top_metadata_typo_is_tensor", F(obj(("__metadata", '{"k":"v"}'), ("w", U8_1)), b"\x01"), IHD,
        "key __metadata (no trailing underscores) is a tensor entry, which lacks dtype")
    bad("top_metadata_upper_is_tensor", F(obj(("__METADATA__", '{"k":"v"}'), ("w", U8_1)), b"\x01"), IHD,
        "key __METADATA__ is a tensor, not metadata (exact, case-sensitive)")
    bad("top_metadata_space_is_tensor", F(obj(("__metadata__ ", '{"k":"v"}'), ("w", U8_1)), b"\x01"), IHD,
        "key '__metadata__ ' (trailing space) is a tensor")
    okc("top_tensor_named_metadata_prefix", [("__metadata_", "U8", [1]), ("__metadata__x", "U8", [2])],
        None, "tensors named __metadata_ and __metadata__x are ordinary tensors")

    # ---- B duplicates -------------------------------------------------------------------------------
    bad("dup_tensor_hole", F(obj(("a", ent("U8", [4], 0, 4)), ("b", ent("U8", [4], 4, 8)),
                                  ("a", ent("U8", [4], 8, 12))), dat(12)), "InvalidOffset",
        "a[0,4] b[4,8] a[8,12]: the later a wins, the earlier vanishes and leaves a hole at [0,4)")
    bad("dup_tensor_hole_middle", F(obj(("a", ent("U8", [4], 0, 4)), ("b", ent("U8", [4], 4, 8)),
                                         ("c", ent("U8", [4], 8, 12)), ("b", ent("U8", [0], 4, 4))), dat(12)),
        "InvalidOffset", "b redefined as empty at [4,4]: its old bytes [4,8) become a hole before c")
    ok("dup_tensor_earlier_overflows", F(obj(("a", ent("U8", [U64], 0, U64)), ("a", ent("U8", [4], 0, 4))), dat(4)),
       1, "earlier copy of a has an overflowing shape; only the last copy is validated against offsets", strict="ERR")
    bad("dup_tensor_earlier_bad_dtype", F(obj(("a", ent("XX", [4], 0, 4)), ("a", ent("U8", [4], 0, 4))), dat(4)),
        IHD, "earlier copy of a has an unknown dtype: every entry is deserialized, so the file is rejected")
    bad("dup_tensor_earlier_missing_field", F(obj(("a", '{"dtype":"U8"}'), ("a", ent("U8", [4], 0, 4))), dat(4)),
        IHD, "earlier copy of a lacks shape and data_offsets: rejected although the later copy is fine")
    ok("dup_tensor_three_times", F(obj(("a", ent("U8", [1], 0, 1)), ("a", ent("U8", [2], 0, 2)),
                                        ("a", ent("U8", [3], 0, 3))), dat(3)), 1,
       "a three times; the third copy (3 bytes) wins", strict="ERR")
    ok("dup_tensor_escaped_twice", F(obj(("ab", ent("U8", [1], 0, 1)), ("\\u0061b", ent("U8", [1], 0, 1)),
                                         ("a\\u0062", ent("U8", [2], 0, 2))), dat(2)), 1,
       "'ab', '\\u0061b', 'a\\u0062' are one name after unescaping; the last wins", strict="ERR")
    ok("dup_tensor_with_other", F(obj(("a", ent("U8", [4], 4, 8)), ("b", ent("U8", [4], 0, 4)),
                                       ("a", ent("U8", [4], 4, 8))), dat(8)), 2,
       "a twice with identical entries next to b: 2 tensors", strict="ERR")
    ok("dup_tensor_raw_vs_escaped_utf8", F(obj(("\u00e9", ent("U8", [1], 0, 1)), ("\\u00e9", ent("U8", [2], 0, 2))), dat(2)),
       1, "raw UTF-8 C3 A9 and the escape \\u00e9 are one name", strict="ERR")
    ok("dup_tensor_raw_vs_surrogate_pair", F(obj(("\U0001f600", ent("U8", [1], 0, 1)), ("\\ud83d\\ude00", ent("U8", [2], 0, 2))), dat(2)),
       1, "raw F0 9F 98 80 and the escaped pair \\ud83d\\ude00 are one name", strict="ERR")
    # 600 entries for 6 names, each redefined 100 times; the last copies are contiguous
    pairs = []
    for r in range(100):
        for k in range(6):
            if r < 99:
                pairs.append(("n%d" % k, ent("U8", [1 + r], 1000 * r, 1000 * r + 1 + r)))
            else:
                pairs.append(("n%d" % k, ent("U8", [2], 2 * k, 2 * k + 2)))
    ok("dup_tensor_many_redefinitions", F(obj(*pairs), dat(12)), 6,
       "6 names each redefined 100 times with scattered offsets; only the last copies (contiguous) count",
       strict="ERR")
    ok("dup_meta_key_last_wins", F(obj(("__metadata__", '{"k":"1","k":"2"}'), ("w", U8_1)), b"\x01"), 1,
       "duplicate key inside __metadata__ is accepted, the last wins", strict="ERR")
    ok("dup_meta_key_escaped", F(obj(("__metadata__", '{"k":"1","\\u006b":"2"}'), ("w", U8_1)), b"\x01"), 1,
       "metadata keys 'k' and '\\u006b' are the same key", strict="ERR")
    ok("dup_meta_key_three", F(obj(("__metadata__", '{"a":"1","b":"2","a":"3"}'), ("w", U8_1)), b"\x01"), 1,
       "metadata a,b,a: two distinct keys after dedup", strict="ERR")
    bad("meta_twice_objects", F(obj(("__metadata__", '{"a":"1"}'), ("__metadata__", '{"b":"2"}'), ("w", U8_1)), b"\x01"),
        IHD, "__metadata__ twice, both objects")
    bad("meta_twice_null_then_object", F(obj(("__metadata__", "null"), ("__metadata__", '{"b":"2"}'), ("w", U8_1)), b"\x01"),
        IHD, "__metadata__ null then an object: still twice")
    bad("meta_twice_object_then_null", F(obj(("__metadata__", '{"b":"2"}'), ("__metadata__", "null"), ("w", U8_1)), b"\x01"),
        IHD, "__metadata__ an object then null")
    bad("meta_twice_null_null", F(obj(("__metadata__", "null"), ("__metadata__", "null")), b""), IHD,
        "__metadata__ null twice")
    bad("meta_twice_empty", F(obj(("__metadata__", "{}"), ("__metadata__", "{}")), b""), IHD,
        "__metadata__ {} twice, no tensors")
    bad("meta_twice_escaped", F(obj(("__metadata__", '{"a":"1"}'), ("w", U8_1), ("\\u005f_metadata__", '{"a":"1"}')), b"\x01"),
        IHD, "__metadata__ and \\u005f_metadata__ are the same key after unescaping")
    ok("meta_key_escaped", F(obj(("\\u005f_metadata__", '{"a":"1"}'), ("w", U8_1)), b"\x01"), 1,
       "\\u005f_metadata__ is the metadata key (a tensor with that value would be rejected)")
    bad("field_twice_dtype", F('{"w":{"dtype":"U8","dtype":"U8","shape":[1],"data_offsets":[0,1]}}', b"\x01"), IHD,
        "dtype twice in one entry, same value")
    bad("field_twice_dtype_differs", F('{"w":{"dtype":"I8","shape":[1],"data_offsets":[0,1],"dtype":"U8"}}', b"\x01"), IHD,
        "dtype twice in one entry, different values")
    bad("field_twice_shape", F('{"w":{"dtype":"U8","shape":[1],"shape":[1],"data_offsets":[0,1]}}', b"\x01"), IHD,
        "shape twice in one entry")
    bad("field_twice_offsets", F('{"w":{"dtype":"U8","shape":[1],"data_offsets":[0,1],"data_offsets":[0,1]}}', b"\x01"), IHD,
        "data_offsets twice in one entry")
    bad("field_twice_escaped", F('{"w":{"dtype":"U8","\\u0064type":"U8","shape":[1],"data_offsets":[0,1]}}', b"\x01"), IHD,
        "dtype and \\u0064type: the same field after unescaping")
    ok("field_escaped_dtype", F('{"w":{"\\u0064type":"U8","shape":[1],"data_offsets":[0,1]}}', b"\x01"), 1,
       "field name \\u0064type is dtype")
    ok("field_escaped_all", F('{"w":{"d\\u0074ype":"U8","\\u0073hape":[1],"data\\u005foffsets":[0,1]}}', b"\x01"), 1,
       "all three field names spelled with escapes")
    ok("field_order_any", F('{"w":{"data_offsets":[0,2],"shape":[2],"dtype":"U8"}}', dat(2)), 1,
       "fields in reverse order")

    # ---- B unknown fields (ignored whatever their value; strict rejects them) ----------------------
    unknown_values = [
        ("string", '"hello"'), ("empty_string", '""'), ("int", "7"), ("zero", "0"), ("negative", "-1"),
        ("neg_zero", "-0"), ("float", "1.5"), ("neg_float_exp", "-2.5e-3"), ("exp_upper", "1E+2"),
        ("big_int", "18446744073709551616"), ("huge_int", "123456789012345678901234567890"),
        ("true", "true"), ("false", "false"), ("null", "null"), ("empty_array", "[]"),
        ("empty_object", "{}"), ("nested", '[{"a":[1,{"b":null}],"c":"d"},[],-3.25]'),
        ("string_escapes", r'"\"\\\/\b\f\n\r\t\u0000\u00e9\ud83d\ude00"'),
        ("object_with_dup_keys", '{"a":1,"a":2}'),
    ]
    for tag, v in unknown_values:
        ok("unknown_" + tag, F('{"w":{"dtype":"U8","shape":[1],"x":%s,"data_offsets":[0,1]}}' % v, b"\x01"), 1,
           "unknown field with value %s is ignored" % tag.replace("_", " "), strict="ERR")
    ok("unknown_named_metadata", F('{"w":{"__metadata__":{"a":1},"dtype":"U8","shape":[1],"data_offsets":[0,1]}}', b"\x01"), 1,
       "a field named __metadata__ inside a tensor entry is just an unknown field", strict="ERR")
    ok("unknown_case_variant", F('{"w":{"Dtype":"nonsense","dtype":"U8","shape":[1],"data_offsets":[0,1]}}', b"\x01"), 1,
       "field Dtype (case differs) is unknown and ignored next to dtype", strict="ERR")
    ok("unknown_empty_name", F('{"w":{"":1,"dtype":"U8","shape":[1],"data_offsets":[0,1]}}', b"\x01"), 1,
       "unknown field with an empty name", strict="ERR")
    ok("unknown_dtype_nul_suffix", F('{"w":{"dtype\\u0000":"X","dtype":"U8","shape":[1],"data_offsets":[0,1]}}', b"\x01"), 1,
       "field 'dtype\\u0000' is not dtype: unknown, ignored", strict="ERR")
    ok("unknown_many", F('{"w":{"a":1,"dtype":"U8","b":[2],"shape":[1],"c":{},"data_offsets":[0,1],"d":null}}', b"\x01"), 1,
       "unknown fields before, between and after the known ones", strict="ERR")
    for tag, v in (("f64_max", "1.7976931348623157e308"), ("f64_below_midpoint", "1.7976931348623158e308"),
                   ("zero_huge_exponent", "0e999999999999"), ("tiny", "1e-400"), ("neg_tiny", "-1e-99999999999"),
                   ("int_300_digits", "9" * 300), ("neg_int_300_digits", "-" + "9" * 300)):
        ok("unknown_range_" + tag, F('{"w":{"dtype":"U8","shape":[1],"x":%s,"data_offsets":[0,1]}}' % v, b"\x01"), 1,
           "unknown field with %s: finite as an f64, ignored" % tag.replace("_", " "), strict="ERR")
    for tag, v in (("1e309", "1e309"), ("neg_1e400", "-1e400"), ("above_midpoint", "1.7976931348623159e308"),
                   ("huge_exponent", "1e99999999999"), ("int_310_digits", "9" * 310), ("nested", "[1,[2,{\"y\":1e999}]]")):
        bad("unknown_range_" + tag, F('{"w":{"dtype":"U8","shape":[1],"x":%s,"data_offsets":[0,1]}}' % v, b"\x01"), IHD,
            "unknown field holding %s: the reference parses it as an f64, which overflows" % tag.replace("_", " "))
    for tag, v in (("leading_zero", "01"), ("lone_surrogate", r'"\ud800"'), ("raw_control", '"a\x01"'),
                   ("trailing_comma", "[1,]"), ("nan", "NaN"), ("infinity", "Infinity"),
                   ("single_quotes", "'a'"), ("bare_word", "abc"), ("plus", "+1"),
                   ("bad_escape", r'"\x41"')):
        bad("unknown_bad_" + tag, F('{"w":{"dtype":"U8","shape":[1],"x":%s,"data_offsets":[0,1]}}' % v, b"\x01"), IHD,
            "unknown field holding invalid JSON (%s): still rejected" % tag.replace("_", " "))

    # ---- B positional entries -------------------------------------------------------------------------
    ok("pos_entry", F('{"a":["U8",[1],[0,1]]}', b"\x01"), 1, "positional entry [dtype, shape, data_offsets]",
       strict="ERR")
    ok("pos_mixed", F('{"a":["F32",[2],[0,8]],"b":' + ent("U8", [1], 8, 9) + "}", dat(9)), 2,
       "a positional entry next to an object entry", strict="ERR")
    ok("pos_empty_tensor", F('{"e":["F32",[0],[0,0]]}'), 1, "positional empty tensor", strict="ERR")
    ok("pos_escaped_dtype", F('{"a":["\\u0055\\u0038",[1],[0,1]]}', b"\x01"), 1,
       "positional entry with an escaped dtype", strict="ERR")
    ok("pos_whitespace", F('{"a":[ "U8" , [ 1 ] , [ 0 , 1 ] ]}', b"\x01"), 1,
       "positional entry with spaces", strict="ERR")
    for tag, v in (("shape_first", '[[1],"U8",[0,1]]'), ("offsets_first", '[[0,1],[1],"U8"]'),
                   ("dtype_last", '[[1],[0,1],"U8"]'), ("two", '["U8",[1]]'), ("one", '["U8"]'),
                   ("empty", "[]"), ("four_null", '["U8",[1],[0,1],null]'),
                   ("four_string", '["U8",[1],[0,1],"x"]'), ("nested", '[["U8",[1],[0,1]]]'),
                   ("bad_dtype", '["X8",[1],[0,1]]'), ("shape_number", '["U8",1,[0,1]]'),
                   ("offsets_three", '["U8",[1],[0,1,1]]')):
        bad("pos_" + tag, F('{"a":%s}' % v, b"\x01"), IHD, "positional entry " + v)

    # ---- B __metadata__ -----------------------------------------------------------------------------
    for tag, v in (("value_number", '{"k":1}'), ("value_true", '{"k":true}'), ("value_array", '{"k":["v"]}'),
                   ("value_object", '{"k":{}}'), ("value_null_second", '{"a":"b","k":null}'),
                   ("array", "[]"), ("array_of_pairs", '[["k","v"]]'), ("number", "1"), ("true", "true"),
                   ("empty_string", '""'), ("positional_entry", '["U8",[1],[0,1]]')):
        bad("meta_" + tag, F(obj(("__metadata__", v), ("w", U8_1)), b"\x01"), IHD,
            "__metadata__ = " + v)
    bad("meta_looks_like_tensor", F(obj(("__metadata__", ent("U8", [1], 0, 1)))), IHD,
        "__metadata__ holding a tensor entry: its shape and data_offsets values are not strings")
    ok("meta_string_fields", F(obj(("__metadata__", '{"dtype":"U8","shape":"[1]"}'))), 0,
       "__metadata__ whose keys look like tensor fields but whose values are strings: plain metadata")
    ok("meta_key_named_metadata", F(obj(("__metadata__", '{"__metadata__":"x"}'), ("w", U8_1)), b"\x01"), 1,
       "a metadata key named __metadata__ is an ordinary key")
    ok("meta_fully_escaped_key", F(obj(("\\u005f\\u005f\\u006detadata\\u005f\\u005f", '{"a":"1"}'), ("w", U8_1)), b"\x01"), 1,
       "__metadata__ spelled with escapes throughout")
    okc("meta_key_escapes", [("w", "U8", [1])], [('a"b\\c\n\x00', "x")],
        "metadata key with a quote, a backslash, LF and NUL (escaped by the writer)")
    ok("meta_null_no_tensors", F('{"__metadata__":null}'), 0, "__metadata__ null means absent; no tensors",
       strict="ERR")
    ok("meta_null_last", F(obj(("w", U8_1), ("__metadata__", "null")), b"\x01"), 1,
       "__metadata__ null after the tensor", strict="ERR")
    okc("meta_empty_key_value", [("w", "U8", [2])], [("", "")], "metadata with an empty key and an empty value")
    okc("meta_empty_no_tensors", [], [], "__metadata__ {} and no tensors (19 bytes + 5 spaces)")
    okc("meta_control_escapes",
        [("w", "U8", [1])], [("ctl", "\x00\x01\b\t\n\x0b\f\r\x1f\"\\/\x7f")],
        "metadata value with every escape class: \\u0000 \\u0001 \\b \\t \\n \\u000b \\f \\r \\u001f \\\" \\\\ and raw / and DEL")
    ok("meta_nul_key", F(obj(("__metadata__", '{"a\\u0000b":"c\\u0000"}'), ("w", U8_1)), b"\x01"), 1,
       "NUL in a metadata key and value: legal, and strict only forbids NUL in tensor names")
    ok("meta_many", F(obj(("__metadata__", '{"a":"1","b":"2","c":"3"}'), ("w", U8_1)), b"\x01"), 1,
       "three metadata entries (the reference writer's order is then random)")
    ok("meta_between_tensors", F(obj(("a", ent("U8", [1], 0, 1)), ("__metadata__", '{"k":"v"}'),
                                      ("b", ent("U8", [1], 1, 2))), dat(2)), 2, "__metadata__ between two tensors")
    okc("meta_long_value", [("w", "U8", [1])], [("long", "x" * 5000 + "\u00e9")], "a 5001-character metadata value")
    okc("meta_only_canonical", [], [("format", "pt")], "metadata only, canonical")

    # ---- B numbers ------------------------------------------------------------------------------------
    num_bad = [
        ("shape_leading_zero", '"shape":[01],"data_offsets":[0,1]', "shape [01]"),
        ("shape_double_zero", '"shape":[00],"data_offsets":[0,0]', "shape [00]"),
        ("offsets_leading_zero", '"shape":[1],"data_offsets":[00,1]', "data_offsets [00,1]"),
        ("offsets_neg_zero", '"shape":[1],"data_offsets":[-0,1]', "data_offsets [-0,1]"),
        ("offsets_negative", '"shape":[1],"data_offsets":[0,-1]', "data_offsets [0,-1]"),
        ("shape_float", '"shape":[1.0],"data_offsets":[0,1]', "shape [1.0]"),
        ("shape_float_zero", '"shape":[0.0],"data_offsets":[0,0]', "shape [0.0]"),
        ("shape_exp", '"shape":[1e0],"data_offsets":[0,1]', "shape [1e0]"),
        ("shape_exp_upper", '"shape":[1E0],"data_offsets":[0,1]', "shape [1E0]"),
        ("shape_exp_plus", '"shape":[1e+0],"data_offsets":[0,1]', "shape [1e+0]"),
        ("offsets_exp", '"shape":[1],"data_offsets":[0,1e0]', "data_offsets [0,1e0]"),
        ("offsets_1e2", '"shape":[100],"data_offsets":[0,1e2]', "data_offsets [0,1e2]"),
        ("offsets_1E2", '"shape":[100],"data_offsets":[0,1E2]', "data_offsets [0,1E2]"),
        ("offsets_float", '"shape":[1],"data_offsets":[0.0,1]', "data_offsets [0.0,1]"),
        ("shape_plus", '"shape":[+1],"data_offsets":[0,1]', "shape [+1]"),
        ("shape_dot5", '"shape":[.5],"data_offsets":[0,1]', "shape [.5]"),
        ("shape_trailing_dot", '"shape":[1.],"data_offsets":[0,1]', "shape [1.]"),
        ("shape_hex", '"shape":[0x1],"data_offsets":[0,1]', "shape [0x1]"),
        ("shape_nan", '"shape":[NaN],"data_offsets":[0,1]', "shape [NaN]"),
        ("shape_infinity", '"shape":[Infinity],"data_offsets":[0,1]', "shape [Infinity]"),
        ("shape_minus_only", '"shape":[-],"data_offsets":[0,1]', "shape [-]"),
        ("shape_true", '"shape":[true],"data_offsets":[0,1]', "shape [true] (a bool where a number is expected)"),
        ("shape_false", '"shape":[false],"data_offsets":[0,0]', "shape [false]"),
        ("offsets_true", '"shape":[1],"data_offsets":[0,true]', "data_offsets [0,true]"),
        ("offsets_false", '"shape":[0],"data_offsets":[false,false]', "data_offsets [false,false]"),
        ("shape_null_elem", '"shape":[null],"data_offsets":[0,1]', "shape [null]"),
        ("shape_string_elem", '"shape":["1"],"data_offsets":[0,1]', 'shape ["1"]'),
        ("shape_nested", '"shape":[[1]],"data_offsets":[0,1]', "shape [[1]]"),
        ("shape_string", '"shape":"[1]","data_offsets":[0,1]', 'shape "[1]"'),
        ("shape_object", '"shape":{},"data_offsets":[0,1]', "shape {}"),
        ("shape_true_bare", '"shape":true,"data_offsets":[0,1]', "shape true"),
        ("offsets_strings", '"shape":[1],"data_offsets":["0","1"]', 'data_offsets ["0","1"]'),
        ("offsets_object", '"shape":[1],"data_offsets":{"begin":0,"end":1}', "data_offsets as an object"),
        ("offsets_null", '"shape":[1],"data_offsets":null', "data_offsets null"),
        ("offsets_empty", '"shape":[0],"data_offsets":[]', "data_offsets []"),
        ("offsets_nested", '"shape":[1],"data_offsets":[[0,1]]', "data_offsets [[0,1]]"),
        ("offsets_begin_2pow64", '"shape":[0],"data_offsets":[18446744073709551616,0]', "data_offsets begin 2^64"),
        ("shape_2pow64_plus_zero", '"shape":[18446744073709551616,0],"data_offsets":[0,0]', "shape [2^64,0]"),
        ("shape_21_digits", '"shape":[184467440737095516150],"data_offsets":[0,0]', "shape entry with 21 digits"),
        ("shape_neg_big", '"shape":[-18446744073709551615],"data_offsets":[0,0]', "shape [-(2^64-1)]"),
        ("shape_digit_letter", '"shape":[1a],"data_offsets":[0,1]', "shape [1a]"),
        ("shape_two_numbers", '"shape":[1 2],"data_offsets":[0,2]', "shape [1 2] (missing comma)"),
        ("shape_trailing_comma", '"shape":[1,],"data_offsets":[0,1]', "shape [1,]"),
        ("shape_leading_comma", '"shape":[,1],"data_offsets":[0,1]', "shape [,1]"),
        ("offsets_trailing_comma", '"shape":[1],"data_offsets":[0,1,]', "data_offsets [0,1,]"),
        ("entry_trailing_comma", '"shape":[1],"data_offsets":[0,1],', "trailing comma inside the entry"),
    ]
    for tag, fields, what in num_bad:
        bad("num_" + tag, F('{"w":{"dtype":"U8",%s}}' % fields, b"\x01"), IHD, what)
    ok("num_zero_everywhere", F('{"w":{"dtype":"U8","shape":[0,0],"data_offsets":[0,0]}}'), 1,
       "0 as shape entries and offsets")
    bad("num_u64max_shape", F('{"w":{"dtype":"U8","shape":[18446744073709551615],"data_offsets":[0,0]}}'),
        "ValidationOverflow", "shape [2^64-1] parses (it fits u64); the bit count overflows")
    bad("num_u64max_end", F('{"w":{"dtype":"U8","shape":[0],"data_offsets":[0,18446744073709551615]}}'),
        "TensorInvalidInfo", "data_offsets end 2^64-1 parses; size 0 != 2^64-1")
    bad("num_u64max_begin", F('{"w":{"dtype":"U8","shape":[0],"data_offsets":[18446744073709551615,18446744073709551615]}}'),
        "InvalidOffset", "data_offsets [2^64-1,2^64-1] parse; the first tensor does not start at 0")
    ok("num_u64max_times_zero", F('{"w":{"dtype":"U8","shape":[0,18446744073709551615,18446744073709551615],"data_offsets":[0,0]}}'),
       1, "shape [0,2^64-1,2^64-1]: the running product is 0 from the start, no overflow")

    # ---- B strings --------------------------------------------------------------------------------------
    for tag, nm, what in (("lone_low", r"\udc00", "lone low surrogate \\udc00"),
                          ("lone_high_then_ascii", r"\ud800a", "high surrogate followed by 'a'"),
                          ("high_then_non_low", r"\ud800\u0041", "high surrogate followed by \\u0041"),
                          ("high_high", r"\ud800\ud800", "two high surrogates"),
                          ("reversed_pair", r"\ude00\ud83d", "low then high surrogate"),
                          ("high_at_end", r"a\udbff", "high surrogate at the end of the string"),
                          ("bad_escape_x", r"\x41", "escape \\x"),
                          ("bad_escape_upper_u", r"\U0041", "escape \\U"),
                          ("bad_escape_a", r"\a", "escape \\a"),
                          ("bad_escape_short", r"\u12", "\\u with 2 hex digits"),
                          ("bad_escape_nonhex", r"\u00g0", "\\u with a non-hex digit"),
                          ("bad_escape_quote", r"\'", "escape \\'"),
                          ("raw_tab", "a\tb", "raw TAB"),
                          ("raw_lf", "a\nb", "raw LF"),
                          ("raw_cr", "a\rb", "raw CR"),
                          ("raw_nul", "a\x00b", "raw NUL byte"),
                          ("raw_1f", "a\x1fb", "raw 0x1F")):
        bad("str_" + tag, one(nm), IHD, "tensor name with " + what)
    bad("str_unterminated", F(b'{"w', b""), IHD, "unterminated key string")
    bad("str_backslash_at_end", F(b'{"w\\"', b""), IHD, "key ends in a backslash that escapes the quote")
    bad("str_lone_in_meta_value", F(obj(("__metadata__", '{"k":"\\ud800"}'), ("w", U8_1)), b"\x01"), IHD,
        "lone surrogate escape in a metadata value")
    bad("str_lone_in_meta_key", F(obj(("__metadata__", '{"\\udfff":"v"}'), ("w", U8_1)), b"\x01"), IHD,
        "lone surrogate escape in a metadata key")
    ok("str_pair_max", one(r"\udbff\udfff"), 1, "surrogate pair \\udbff\\udfff = U+10FFFF")
    ok("str_pair_upper_hex", one(r"\uD83D\uDE00\u00E9"), 1, "escapes with upper-case hex digits")
    ok("str_escaped_solidus", one(r"a\/b"), 1, "escaped solidus \\/ (the writer would not escape it)")
    ok("str_all_escapes", one(r"\"\\\/\b\f\n\r\t\u0001"), 1, "name using every JSON escape")
    okc("str_raw_del", [("a\x7fb", "U8", [1])], None, "raw DEL (0x7F) in a name: not a JSON control character")
    okc("str_raw_c1", [("a\u0085b", "U8", [1])], None, "raw U+0085 (C2 85) in a name: legal in JSON")
    ok("name_nul_escaped", one(r"a\u0000b"), 1, "escaped NUL inside a name (legal; strict rejects it)", strict="ERR")
    ok("name_only_nul", one(r"\u0000"), 1, "name that is a single escaped NUL", strict="ERR")
    ok("name_nul_distinct", F(obj(("a\\u0000b", ent("U8", [1], 0, 1)), ("a\\u0000c", ent("U8", [1], 1, 2))), dat(2)),
       2, "names a\\0b and a\\0c are distinct: names are (pointer, length), not C strings", strict="ERR")
    ok("name_nul_vs_prefix", F(obj(("a", ent("U8", [1], 0, 1)), ("a\\u0000", ent("U8", [1], 1, 2))), dat(2)),
       2, "names 'a' and 'a\\0' are distinct", strict="ERR")
    okc("name_empty_canonical", [("", "U8", [3])], None, "empty tensor name, canonical layout")
    okc("name_empty_and_other", [("", "F32", [1]), ("a", "F32", [1])], None, "empty name sorts before 'a'")
    okc("name_quote_backslash", [('a"b\\c', "U8", [1]), ("q/s", "U8", [1])], None,
        "names with a quote and a backslash (escaped by the writer) and a slash (not escaped)")
    okc("name_control_chars", [("\t", "U8", [1]), ("\n", "U8", [1]), ("\x01", "U8", [1]), ("\x1f", "U8", [1]),
                               ("\r", "U8", [1]), ("\b\f", "U8", [1])], None,
        "names made of control characters: \\t \\n \\u0001 \\u001f \\r \\b\\f, sorted by byte")
    okc("name_long", [("n" * 3000, "U8", [1]), ("m" * 2999 + "\u00e9", "U8", [1])], None, "3000-byte names")
    okc("name_byte_order", [(x, "U8", [1]) for x in ("z", "Z", "a", "ab", "a.b", "a0", "\u00e9", "\u20ac",
                                                     "\uff5e", "\U0001f600", "\ue000")], None,
        "same dtype: sorted by UTF-8 bytes (U+FF5E before U+1F600, unlike UTF-16 order)")

    # ---- B dtypes ------------------------------------------------------------------------------------------
    for i, (dt, bits) in enumerate(DTYPES):
        okc("dt_%02d_%s" % (i, dt), [("t", dt, [4, 2])], None,
            "dtype %s shape [4,2] (%d bytes)%s" % (dt, 8 * bits // 8,
                                                   "; BF16 is outside the official schema's dtype regex" if dt == "BF16" else ""))
    okc("dtype_all_22", [("t%02d" % i, dt, [4]) for i, (dt, _) in enumerate(DTYPES)], None,
        "all 22 dtypes in one file, laid out by descending rank")
    okc("dtype_rank_beats_name", [("a", "F16", [1]), ("b", "BF16", [1]), ("c", "F8_E4M3", [1]),
                                  ("d", "F8_E5M2", [1]), ("e", "C64", [1]), ("f", "F64", [1]),
                                  ("g", "I64", [1]), ("h", "U64", [1]), ("i", "BOOL", [1]), ("j", "F4", [2])],
        None, "names in the opposite order of rank: rank decides first (BF16 before F16, U64 first)")
    ok("dtype_bf16_escaped", F('{"w":{"dtype":"\\u0042F16","shape":[1],"data_offsets":[0,2]}}', dat(2)), 1, "dtype \\u0042F16 is BF16")
    for tag, v in (("bf16_lower", '"bf16"'), ("empty", '""'), ("f8_e4m3fn", '"F8_E4M3FN"'), ("f6", '"F6"'),
                   ("f8", '"F8"'), ("c128", '"C128"'), ("u4", '"U4"'), ("i4", '"I4"'), ("float32", '"FLOAT32"'),
                   ("bool_lower", '"bool"'), ("leading_space", '" F32"'), ("nul_suffix", '"U8\\u0000"'),
                   ("nul_suffix_3", '"F32\\u0000"'),
                   ("f8_lower_suffix", '"F8_e4m3"'), ("null", "null"), ("array", '["U8"]'), ("object", '{"U8":1}'),
                   ("true", "true"), ("f16_bf16", '"F16BF16"')):
        bad("dtype_bad_" + tag, F('{"w":{"dtype":%s,"shape":[1],"data_offsets":[0,1]}}' % v, b"\x01"), IHD,
            "dtype " + v)
    bad("entry_missing_dtype", F('{"w":{"shape":[1],"data_offsets":[0,1]}}', b"\x01"), IHD, "entry without dtype")
    bad("entry_missing_shape", F('{"w":{"dtype":"U8","data_offsets":[0,1]}}', b"\x01"), IHD, "entry without shape")
    bad("entry_missing_offsets", F('{"w":{"dtype":"U8","shape":[1]}}', b"\x01"), IHD, "entry without data_offsets")
    bad("entry_empty_object", F('{"w":{}}'), IHD, "entry {}")
    bad("entry_string", F('{"w":"U8"}'), IHD, "entry is a string")
    bad("entry_true", F('{"w":true}'), IHD, "entry is true")
    bad("entry_missing_in_second", F(obj(("a", ent("U8", [1], 0, 1)), ("b", '{"dtype":"U8","shape":[1]}')), dat(2)),
        IHD, "the second entry lacks data_offsets")

    # ---- B depth ---------------------------------------------------------------------------------------------
    def deep(kind, k):
        if kind == "arrays":
            return "[" * k + "]" * k
        if kind == "objects":
            return '{"x":' * (k - 1) + "{}" + "}" * (k - 1)
        s = ""  # alternating array / object, innermost an empty array
        for i in range(k - 1):
            s += "[" if i % 2 == 0 else '{"x":'
        s += "[]"
        for i in reversed(range(k - 1)):
            s += "]" if i % 2 == 0 else "}"
        return s
    for kind in ("arrays", "objects", "mixed"):
        ok("depth_127_" + kind, F('{"w":{"dtype":"U8","x":%s,"shape":[1],"data_offsets":[0,1]}}' % deep(kind, 125), b"\x01"),
           1, "unknown field with 125 nested %s: 127 containers with the top object and the entry" % kind, strict="ERR")
        bad("depth_128_" + kind, F('{"w":{"dtype":"U8","x":%s,"shape":[1],"data_offsets":[0,1]}}' % deep(kind, 126), b"\x01"),
            IHD, "unknown field with 126 nested %s: 128 containers, one over the limit" % kind)
    ok("depth_127_with_value", F('{"w":{"dtype":"U8","x":%s,"shape":[1],"data_offsets":[0,1]}}' % ("[" * 125 + "1" + "]" * 125), b"\x01"),
       1, "125 nested arrays around a number: the scalar does not count", strict="ERR")
    bad("depth_128_in_second_tensor", F(obj(("a", ent("U8", [1], 0, 1)),
                                             ("b", '{"dtype":"U8","x":%s,"shape":[1],"data_offsets":[1,2]}' % deep("arrays", 126))), dat(2)),
        IHD, "depth 128 inside the second tensor's unknown field")
    bad("depth_top_arrays", F("[" * 200 + "]" * 200), IHD, "200 nested arrays at the top level")
    bad("depth_unclosed_bomb", F('{"w":{"x":' + "[" * 5000), IHD, "5000 unclosed '[': must fail without deep recursion")

    # ---- A.6 offsets ------------------------------------------------------------------------------------------
    ok("off_shuffled", F(obj(("c", ent("U8", [2], 6, 8)), ("a", ent("U8", [2], 0, 2)), ("d", ent("U8", [0], 8, 8)),
                              ("b", ent("F32", [1], 2, 6))), dat(8)), 4, "header order c a d b; offsets contiguous once sorted")
    bad("off_first_not_zero", F(obj(("w", ent("U8", [4], 4, 8))), dat(8)), "InvalidOffset",
        "the only tensor starts at 4")
    bad("off_first_empty_not_zero", F(obj(("w", ent("U8", [0], 2, 2))), dat(2)), "InvalidOffset",
        "an empty tensor at [2,2] is the first one: it must begin at 0")
    ok("off_empty_then_full_same_begin", F(obj(("b", ent("U8", [4], 0, 4)), ("a", ent("U8", [0], 0, 0))), dat(4)), 2,
       "empty [0,0] and full [0,4]: sorted (0,0),(0,4) is contiguous")
    ok("off_empty_at_end", F(obj(("a", ent("U8", [4], 0, 4)), ("z", ent("F64", [0, 9], 4, 4))), dat(4)), 2,
       "empty tensor at [4,4] after the last byte")
    ok("off_empty_interleaved", F(obj(("e", ent("U8", [4], 4, 8)), ("d", ent("U8", [0], 4, 4)), ("c", ent("I32", [0], 4, 4)),
                                       ("b", ent("U8", [4], 0, 4)), ("a", ent("U8", [0], 0, 0))), dat(8)), 5,
       "empty tensors at [0,0], [4,4], [4,4] between [0,4] and [4,8]")
    bad("off_empty_inside_range", F(obj(("a", ent("U8", [4], 0, 4)), ("e", ent("U8", [0], 2, 2)), ("b", ent("U8", [4], 4, 8))), dat(8)),
        "InvalidOffset", "empty tensor at [2,2] inside [0,4): it sorts second and 2 != cursor 4")
    bad("off_overlap_sorted_by_end", F(obj(("a", ent("U8", [8], 0, 8)), ("b", ent("U8", [4], 0, 4))), dat(8)),
        "InvalidOffset", "[0,8] and [0,4]: sorted (0,4) first, then (0,8) begins at 0 != 4")
    bad("off_overlap_one_byte", F(obj(("a", ent("U8", [4], 0, 4)), ("b", ent("U8", [4], 3, 7))), dat(7)),
        "InvalidOffset", "[0,4] and [3,7] overlap by one byte")
    bad("off_hole_one_byte", F(obj(("a", ent("U8", [4], 0, 4)), ("b", ent("U8", [4], 5, 9))), dat(9)),
        "InvalidOffset", "one-byte hole between [0,4] and [5,9]")
    bad("off_begin_gt_end_at_cursor", F(obj(("a", ent("U8", [4], 0, 4)), ("b", ent("U8", [0], 4, 3))), dat(4)),
        "InvalidOffset", "second tensor [4,3]: begins at the cursor, ends before it begins")
    bad("off_begin_gt_end_first", F(obj(("a", ent("U8", [0], 1, 0))), dat(1)), "InvalidOffset",
        "single tensor [1,0]: sorted first, begins at 1 != 0")
    bad("off_alias_three", F(obj(("a", ent("U8", [4], 0, 4)), ("b", ent("U8", [4], 0, 4)), ("c", ent("U8", [4], 0, 4))), dat(4)),
        "InvalidOffset", "three tensors alias [0,4]")
    bad("off_gap_before_empty", F(obj(("a", ent("U8", [4], 0, 4)), ("e", ent("U8", [0], 6, 6))), dat(6)),
        "InvalidOffset", "empty tensor at [6,6] after [0,4]: a 2-byte hole")

    # ---- A.6 check order -----------------------------------------------------------------------------------------
    bad("order_offset_before_overflow", F(obj(("w", ent("U8", [1 << 62, 4], 4, 8))), dat(8)), "InvalidOffset",
        "begin != 0 and an overflowing shape: the offset check comes first")
    bad("order_numel_overflow_before_size", F(obj(("w", ent("U8", [1 << 62, 4], 0, 4))), dat(4)), "ValidationOverflow",
        "shape [2^62,4] with offsets [0,4]: overflow before the size comparison")
    bad("order_bits_overflow_before_size", F(obj(("w", ent("U8", [1 << 61], 0, 4))), dat(4)), "ValidationOverflow",
        "U8 [2^61]: numel fits, bits = 2^64 overflow; reported before the size comparison")
    bad("order_misaligned_before_size", F(obj(("w", ent("F4", [3], 0, 5))), dat(5)), "MisalignedSlice",
        "F4 [3] with 5 bytes: misaligned is reported, not the size mismatch")
    bad("order_size_before_filesize", F(obj(("w", ent("F32", [2], 0, 4))), dat(100)), "TensorInvalidInfo",
        "F32 [2] with offsets [0,4] and 100 data bytes: size mismatch before the file-size check")
    bad("order_offset_before_filesize", F(obj(("a", ent("U8", [4], 0, 4)), ("b", ent("U8", [4], 8, 12))), dat(2)),
        "InvalidOffset", "a hole and a truncated file: the offset check comes first")
    bad("order_first_sorted_tensor_wins", F(obj(("b", ent("U8", [1], 9, 10)), ("a", ent("F32", [1], 0, 8))), dat(10)),
        "TensorInvalidInfo", "a (sorted first) has a size mismatch, b (listed first) has a hole: a's error")
    bad("order_sorted_not_header_order", F(obj(("b", ent("U8", [2], 4, 5)), ("a", ent("F4", [3], 0, 4))), dat(5)),
        "MisalignedSlice", "b listed first has a size mismatch; a sorts first and is misaligned: MisalignedSlice")
    bad("order_json_before_offsets", F(obj(("a", ent("U8", [4], 4, 8)), ("b", ent("X8", [4], 0, 4))), dat(8)),
        IHD, "a hole and an unknown dtype: JSON/type problems come before offsets")

    # ---- A.6 overflow ------------------------------------------------------------------------------------------------
    bad("overflow_numel_then_zero_3d", F(obj(("w", ent("U8", [1 << 32, 1 << 32, 0], 0, 0)))), "ValidationOverflow",
        "shape [2^32,2^32,0]: the running product overflows before the 0")
    ok("overflow_zero_first", F(obj(("w", ent("U8", [0, 1 << 62, 4], 0, 0)))), 1,
       "shape [0,2^62,4]: the product is 0 from the start, no overflow")
    bad("overflow_mid_zero", F(obj(("w", ent("U8", [4, 1 << 62, 0], 0, 0)))), "ValidationOverflow",
        "shape [4,2^62,0]: overflows at the second factor")
    bad("overflow_65_twos", F(obj(("w", ent("U8", [2] * 65, 0, 0)))), "ValidationOverflow",
        "65 dimensions of 2: numel reaches 2^65")
    bad("overflow_bits_numel_max", F(obj(("w", ent("U8", [(1 << 32) + 1, (1 << 32) - 1], 0, 0)))), "ValidationOverflow",
        "shape [2^32+1,2^32-1]: numel = 2^64-1 fits, bits overflow")
    bad("overflow_bits_f4_2pow62", F(obj(("w", ent("F4", [1 << 62], 0, 1 << 61)))), "ValidationOverflow",
        "F4 [2^62]: 2^64 bits overflow")
    bad("overflow_fits_f4_2pow62m2", F(obj(("w", ent("F4", [(1 << 62) - 2], 0, (1 << 61) - 1)))), "MetadataIncompleteBuffer",
        "F4 [2^62-2]: 2^64-8 bits fit, consistent offsets, data missing")
    bad("overflow_fits_f4_odd", F(obj(("w", ent("F4", [(1 << 62) - 1], 0, 0)))), "MisalignedSlice",
        "F4 [2^62-1]: 2^64-4 bits fit but are not whole bytes")
    bad("overflow_bits_f64_2pow58", F(obj(("w", ent("F64", [1 << 58], 0, 1 << 61)))), "ValidationOverflow",
        "F64 [2^58]: 2^64 bits overflow")
    bad("overflow_fits_f64_2pow58m1", F(obj(("w", ent("F64", [(1 << 58) - 1], 0, (1 << 61) - 8)))), "MetadataIncompleteBuffer",
        "F64 [2^58-1]: bits fit, offsets consistent, data missing")
    bad("overflow_bits_f6", F(obj(("w", ent("F6_E2M3", [3074457345618258603], 0, 0)))), "ValidationOverflow",
        "F6 [3074457345618258603]: 6 x count = 2^64+2 overflows")
    bad("overflow_fits_f6_misaligned", F(obj(("w", ent("F6_E3M2", [3074457345618258602], 0, 0)))), "MisalignedSlice",
        "F6 [3074457345618258602]: 6 x count = 2^64-4 fits but is not whole bytes")
    bad("overflow_u64_shape_second_tensor", F(obj(("a", ent("U8", [2], 0, 2)), ("b", ent("I32", [1 << 62], 2, 2)))), "ValidationOverflow",
        "second tensor I32 [2^62]: bits overflow")
    sz = (1 << 61) - 1
    bad("end_sum_near_u64max", F(obj(*[("t%d" % k, ent("U8", [sz], k * sz, (k + 1) * sz)) for k in range(8)])),
        "MetadataIncompleteBuffer", "8 tensors of 2^61-1 bytes: last end = 2^64-8, so 8 + N + end overflows u64")

    # ---- A.6 sub-byte dtypes -------------------------------------------------------------------------------------------
    for dt, shape, res, what in (
            ("F4", [3], "MisalignedSlice", "F4 odd count 3"),
            ("F4", [1], "MisalignedSlice", "F4 count 1"),
            ("F4", [], "MisalignedSlice", "F4 scalar (count 1)"),
            ("F4", [1, 1], "MisalignedSlice", "F4 [1,1]"),
            ("F4", [3, 5], "MisalignedSlice", "F4 [3,5] = 15"),
            ("F6_E2M3", [1], "MisalignedSlice", "F6_E2M3 count 1"),
            ("F6_E3M2", [2], "MisalignedSlice", "F6_E3M2 count 2"),
            ("F6_E2M3", [3], "MisalignedSlice", "F6_E2M3 count 3"),
            ("F6_E3M2", [5], "MisalignedSlice", "F6_E3M2 count 5"),
            ("F6_E2M3", [6], "MisalignedSlice", "F6_E2M3 count 6"),
            ("F6_E3M2", [], "MisalignedSlice", "F6_E3M2 scalar"),
            ("F6_E2M3", [2, 3], "MisalignedSlice", "F6_E2M3 [2,3] = 6")):
        bad("subbyte_%s_%s" % (dt.lower(), "x".join(map(str, shape)) or "scalar"),
            F(obj(("q", ent(dt, shape, 0, 1))), b"\x01"), res, what + " with 1 byte of data: not whole bytes")
    okc("subbyte_f4_2x3", [("q", "F4", [2, 3])], None, "F4 [2,3] = 6 elements = 3 bytes")
    okc("subbyte_f4_zero", [("q", "F4", [0])], None, "F4 [0]: 0 bits")
    okc("subbyte_f4_scalar_pair", [("q", "F4", [2, 1, 1])], None, "F4 [2,1,1]: 1 byte")
    okc("subbyte_f6_8", [("q", "F6_E2M3", [8])], None, "F6_E2M3 [8] = 6 bytes")
    okc("subbyte_f6_2x2", [("q", "F6_E3M2", [2, 2])], None, "F6_E3M2 [2,2] = 3 bytes")
    okc("subbyte_f6_4x3", [("q", "F6_E2M3", [4, 3])], None, "F6_E2M3 [4,3] = 12 elements = 9 bytes")
    okc("subbyte_f6_zero", [("q", "F6_E3M2", [5, 0])], None, "F6_E3M2 [5,0]: 0 bits")
    bad("subbyte_f4_wrong_size", F(obj(("q", ent("F4", [4], 0, 4))), dat(4)), "TensorInvalidInfo",
        "F4 [4] needs 2 bytes, offsets give 4 (4 bits per element, not 8)")
    bad("subbyte_f6_wrong_size", F(obj(("q", ent("F6_E2M3", [4], 0, 4))), dat(4)), "TensorInvalidInfo",
        "F6 [4] needs 3 bytes, offsets give 4")

    # ---- A.6 sizes -------------------------------------------------------------------------------------------------------
    bad("size_one_short", F(obj(("w", ent("F32", [2], 0, 7))), dat(7)), "TensorInvalidInfo", "F32 [2] with 7 bytes")
    bad("size_one_long", F(obj(("w", ent("F32", [2], 0, 9))), dat(9)), "TensorInvalidInfo", "F32 [2] with 9 bytes")
    bad("size_scalar_f64_4", F(obj(("w", ent("F64", [], 0, 4))), dat(4)), "TensorInvalidInfo", "F64 scalar with 4 bytes")
    bad("size_bool_as_bits", F(obj(("w", ent("BOOL", [8], 0, 1))), dat(1)), "TensorInvalidInfo",
        "BOOL [8] with 1 byte: BOOL is 8 bits per element")
    bad("size_c64_16", F(obj(("w", ent("C64", [1], 0, 16))), dat(16)), "TensorInvalidInfo",
        "C64 [1] with 16 bytes: C64 is 64 bits")
    bad("size_bf16_4", F(obj(("w", ent("BF16", [1], 0, 4))), dat(4)), "TensorInvalidInfo", "BF16 [1] with 4 bytes")
    bad("size_second_tensor", F(obj(("a", ent("U8", [2], 0, 2)), ("b", ent("I16", [2], 2, 5))), dat(5)),
        "TensorInvalidInfo", "second tensor I16 [2] with 3 bytes")

    # ---- A.7 file size -----------------------------------------------------------------------------------------------
    g = canon([("a", "F32", [2]), ("b", "U8", [3])])
    bad("fsize_trailing_one_byte", g + b"\x00", "MetadataIncompleteBuffer", "canonical file plus one trailing byte")
    bad("fsize_truncated_one_byte", g[:-1], "MetadataIncompleteBuffer", "canonical file missing its last byte")
    bad("fsize_truncated_all_data", g[:len(g) - 11], "MetadataIncompleteBuffer", "canonical file with no data section")
    bad("fsize_empty_tensors_plus_byte", F(obj(("a", ent("U8", [0], 0, 0)), ("b", ent("F32", [0], 0, 0))), b"\x00"),
        "MetadataIncompleteBuffer", "only empty tensors, and one data byte")
    bad("fsize_metadata_only_plus_byte", F(obj(("__metadata__", '{"k":"v"}')), b"\x00"), "MetadataIncompleteBuffer",
        "metadata only, and one data byte")
    bad("fsize_last_empty_short", F(obj(("a", ent("U8", [4], 0, 4)), ("b", ent("U8", [0], 4, 4))), dat(3)),
        "MetadataIncompleteBuffer", "[0,4] and empty [4,4] with 3 data bytes")
    bad("fsize_trailing_page", g + b"\x00" * 4096, "MetadataIncompleteBuffer", "4096 trailing bytes")

    # ---- D canonical layouts (rewrite_identical = yes) ----------------------------------------------------------------
    for k in range(8):
        # choose a name length so that the compact JSON needs exactly k spaces of padding
        base = len(obj(("", ent("U8", [1], 0, 1))))
        L = 8 + ((-(base + 8) - k) % 8)
        name = "p" * L
        assert (-(base + L)) % 8 == k
        okc("canon_pad_%d" % k, [(name, "U8", [1])], None, "canonical header needing exactly %d spaces of padding" % k)
    okc("canon_mixed_ranks", [("embed", "BF16", [3, 2]), ("norm", "F32", [4]), ("mask", "BOOL", [5]),
                              ("q4", "F4", [6]), ("idx", "I64", [2]), ("scale", "F8_E8M0", [3]),
                              ("zz", "U16", [1]), ("aa", "U16", [2])], [("format", "pt")],
        "mixed dtypes and one metadata entry, canonical")
    okc("canon_empty_tensors", [("a", "F32", [2]), ("b", "F32", [0]), ("c", "F16", [0, 5]), ("d", "U8", [1]),
                                ("e", "U8", [0])], None, "empty tensors laid out at shared offsets")
    okc("canon_scalars", [("s1", "F64", []), ("s2", "I8", []), ("s3", "BOOL", [])], None, "rank-0 tensors")
    okc("canon_zero_then_u64max", [("z", "U8", [0, U64])], None, "shape [0,2^64-1]: numel 0, written as is")
    okc("canon_2pow61_then_zero", [("z", "I32", [1 << 61, 0])], None, "shape [2^61,0]: numel 0")
    okc("canon_rank_100", [("r", "U8", [1] * 99 + [2])], None, "rank 100")
    okc("canon_big_dims", [("b", "U8", [1, 70000])], None, "a 70000-byte tensor")
    rng = 12345

    def rnd(m):
        nonlocal rng
        rng = (rng * 1103515245 + 12345) & 0x7FFFFFFF
        return rng % m
    many = []
    for i in range(300):
        dt = DTYPES[rnd(22)][0]
        shape = [rnd(3) + 1 for _ in range(rnd(3))]
        if dt in ("F4", "F6_E2M3", "F6_E3M2"):
            shape = shape + [4]
        many.append(("layers.%d.%s" % (rnd(50), "wqkvo"[rnd(5)] + str(i)), dt, shape))
    okc("canon_300_tensors", many, [("total", "300")], "300 tensors, random dtypes and shapes, canonical")


# ---------------------------------------------------------------------------------------------
# shared cases: which of them the strict option also rejects (hand-written, checked by the model)
# ---------------------------------------------------------------------------------------------
SHARED_STRICT = {
    "v_dup_tensor_escaped_form.safetensors": "duplicate tensor name after unescaping",
    "v_dup_tensor_identical.safetensors": "duplicate tensor name",
    "v_dup_tensor_last_wins.safetensors": "duplicate tensor name",
    "v_extra_field_duplicated.safetensors": "unknown field in a tensor entry",
    "v_json_spaces_everywhere.safetensors": "whitespace before '{'",
    "v_leading_whitespace.safetensors": "whitespace before '{'",
    "v_metadata_null.safetensors": "__metadata__ is null",
    "v_trailing_ws_mixed.safetensors": "padding other than 0x20",
}


def read_tsv(path):
    with open(path, encoding="utf-8") as fh:
        lines = fh.read().split("\n")
    head = lines[0].split("\t")
    return [dict(zip(head, ln.split("\t"))) for ln in lines[1:] if ln]


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    out = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else here
    problems = []

    # the model against the shared expectations (checks the model itself)
    shared_dir = os.path.join(here, "shared")
    shared_rows = read_tsv(os.path.join(shared_dir, "expected.tsv"))
    strict_rows = []
    for r in shared_rows:
        with open(os.path.join(shared_dir, r["file"]), "rb") as fh:
            m = model(fh.read())
        want = (r["verdict"], r["variant"], r["n_tensors"], r["rewrite_identical"])
        got = (m["verdict"], m["variant"], str(m["n"]), m["rewrite"])
        if want != got:
            problems.append("model vs shared/expected.tsv %s: expected %s, model %s" % (r["file"], want, got))
        if r["verdict"] == "ERR":
            strict, why = "ERR", "rejected by default"
        elif r["file"] in SHARED_STRICT:
            strict, why = "ERR", SHARED_STRICT[r["file"]]
        else:
            strict, why = "OK", "nothing strict forbids"
        if strict != m["strict"]:
            problems.append("model vs SHARED_STRICT %s: hand %s, model %s" % (r["file"], strict, m["strict"]))
        strict_rows.append((r["file"], strict, why))

    build()
    names = set()
    shared_names = {r["file"] for r in shared_rows}
    for c in CASES:
        if c["file"] in names or c["file"] in shared_names:
            problems.append("duplicate case name " + c["file"])
        names.add(c["file"])
        if "\t" in c["desc"] or "\n" in c["desc"]:
            problems.append("TAB/LF in description of " + c["file"])
        try:
            m = model(c["bytes"])
        except Unsure as e:
            problems.append("%s: %s" % (c["file"], e))
            continue
        hand = (c["verdict"], c["variant"], str(c["n"]), c["strict"])
        got = (m["verdict"], m["variant"], str(m["n"]), m["strict"])
        if hand != got:
            problems.append("%s: hand-written %s, model %s" % (c["file"], hand, got))
        if c["canonical"] and m["rewrite"] != "yes":
            problems.append("%s: built by the canonical writer but the model says rewrite=%s" % (c["file"], m["rewrite"]))
        c["rewrite"] = m["rewrite"]
    if problems:
        sys.stderr.write("gen_cases.py: refusing to write:\n  " + "\n  ".join(problems) + "\n")
        return 1

    own = os.path.join(out, "own")
    os.makedirs(own, exist_ok=True)
    for f in os.listdir(own):
        if f.endswith(".safetensors") and f not in names:
            os.remove(os.path.join(own, f))
    for c in CASES:
        with open(os.path.join(own, c["file"]), "wb") as fh:
            fh.write(c["bytes"])
    with open(os.path.join(out, "own.tsv"), "w", encoding="utf-8", newline="\n") as fh:
        fh.write("file\tverdict\tvariant\tn_tensors\trewrite_identical\tstrict\tdescription\n")
        for c in CASES:
            fh.write("\t".join([c["file"], c["verdict"], c["variant"], str(c["n"]), c["rewrite"], c["strict"],
                                c["desc"]]) + "\n")
    with open(os.path.join(out, "shared_strict.tsv"), "w", encoding="utf-8", newline="\n") as fh:
        fh.write("file\tstrict\treason\n")
        for row in strict_rows:
            fh.write("\t".join(row) + "\n")
    n_ok = sum(1 for c in CASES if c["verdict"] == "OK")
    print("gen_cases.py: %d own cases (%d OK, %d ERR, %d rewrite-identical), %d shared strict verdicts -> %s"
          % (len(CASES), n_ok, len(CASES) - n_ok, sum(1 for c in CASES if c["rewrite"] == "yes"),
             len(strict_rows), out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
