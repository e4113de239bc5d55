#!/usr/bin/env python3
"""Writes the hand-made fuzz seeds (h_*.safetensors) into fuzz/corpus/parse/ and
fuzz/corpus/roundtrip/. The conformance files (v_*, e_*) beside them are copies of the shared
conformance cases, checked in so that a fresh clone has them. Each seed sits on an edge of the format: valid for the
default parser but not for strict mode, one step below or above a limit, or spelled with
escapes the parser has to undo. Run from the repository root: python3 fuzz/make_seeds.py"""
import os
import struct

DTYPES = [("BOOL", 8), ("F4", 4), ("F6_E2M3", 6), ("F6_E3M2", 6), ("U8", 8), ("I8", 8),
          ("F8_E5M2", 8), ("F8_E4M3", 8), ("F8_E8M0", 8), ("F8_E4M3FNUZ", 8), ("F8_E5M2FNUZ", 8),
          ("I16", 16), ("U16", 16), ("F16", 16), ("BF16", 16), ("I32", 32), ("U32", 32),
          ("F32", 32), ("C64", 64), ("F64", 64), ("I64", 64), ("U64", 64)]


def file_of(header: bytes, data: bytes = b"", pad: bytes = b" ") -> bytes:
    """8-byte little-endian N, the header padded with pad bytes to a multiple of 8, the data."""
    while len(header) % 8:
        header += pad
    return struct.pack("<Q", len(header)) + header + data


def seeds():
    s = {}
    # all 22 dtypes in the reference writer's layout, with metadata
    entries, data, off = [], b"", 0
    order = sorted(range(len(DTYPES)), key=lambda i: -i)
    for i in order:
        name, bits = DTYPES[i]
        count = {4: 2, 6: 4}.get(bits, 1)
        size = count * bits // 8
        entries.append('"t_%s":{"dtype":"%s","shape":[%d],"data_offsets":[%d,%d]}' % (name.lower(), name, count, off, off + size))
        data += bytes((7 * off + j) & 0xFF for j in range(size))
        off += size
    s["h_all_dtypes"] = file_of(('{"__metadata__":{"format":"pt"},' + ",".join(entries) + "}").encode(), data)
    # an escaped NUL inside a name: the reference accepts it, strict mode and our writer do not
    s["h_nul_name"] = file_of(b'{"a\\u0000b":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},'
                              b'"x":{"dtype":"U8","shape":[2],"data_offsets":[1,3]}}', b"\x01\x02\x03")
    # positional entry
    s["h_positional"] = file_of(b'{"p":["F32",[1],[0,4]],"q":{"dtype":"U8","shape":[],"data_offsets":[4,5]}}',
                                b"\x00\x00\x80\x3f\x07")
    # a surrogate pair, raw UTF-8 and escaped BMP characters in names and metadata
    s["h_surrogates"] = file_of('{"__metadata__":{"\\ud83d\\ude00":"caf\\u00e9 \u00e9 \U0001F600"},'
                                '"\\ud83d\\ude00\u00e9":{"dtype":"I16","shape":[1],"data_offsets":[0,2]}}'.encode(), b"\xff\x7f")
    # nesting: an ignored field reaching exactly 127 containers, and one more
    def deep(levels):
        return ('{"t":{"dtype":"U8","shape":[1],"data_offsets":[0,1],"x":' + "[" * levels + "]" * levels + "}}").encode()
    s["h_depth_127"] = file_of(deep(125), b"\x00")
    s["h_depth_128"] = file_of(deep(126), b"\x00")
    # a huge dimension multiplied by zero, then a tensor right after it
    s["h_zero_dim_huge"] = file_of(b'{"z":{"dtype":"U8","shape":[18446744073709551615,0],"data_offsets":[0,0]},'
                                   b'"y":{"dtype":"U16","shape":[1],"data_offsets":[0,2]}}', b"\x01\x00")
    # duplicate metadata keys (last one wins; one spelled with an escape) and an empty value
    s["h_meta_dups"] = file_of(b'{"__metadata__":{"k":"1","k":"2","\\u006b":"3","z":""},'
                               b'"t":{"dtype":"BOOL","shape":[2],"data_offsets":[0,2]}}', b"\x00\x01")
    # every JSON escape in metadata, a NUL in a metadata key (allowed everywhere)
    s["h_meta_escapes"] = file_of(b'{"__metadata__":{"e\\u0000k":"\\"\\\\\\/\\b\\f\\n\\r\\t\\u001f\\u007f\\u0080"}}')
    # out of order, with empty tensors sharing an offset
    s["h_out_of_order"] = file_of(b'{"c":{"dtype":"U8","shape":[2],"data_offsets":[2,4]},'
                                  b'"e1":{"dtype":"F32","shape":[0],"data_offsets":[2,2]},'
                                  b'"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},'
                                  b'"e0":{"dtype":"F64","shape":[0,3],"data_offsets":[0,0]},'
                                  b'"e2":{"dtype":"I8","shape":[0],"data_offsets":[4,4]}}', b"abcd")
    # JSON whitespace before and after the object (default OK, strict rejects)
    s["h_ws_around"] = file_of(b'\t\n {"t" : { "dtype" : "I8" , "shape" : [ 1 ] , "data_offsets" : [ 0 , 1 ] } }\r\n',
                               b"\x80", pad=b"\t")
    # __metadata__ spelled with an escape is still the metadata key
    s["h_escaped_metadata_key"] = file_of(b'{"\\u005f_metadata__":{"a":"b"},"t":{"dtype":"U8","shape":[],"data_offsets":[0,1]}}',
                                          b"\x2a")
    # unknown fields of every JSON type (default ignores them, strict rejects)
    s["h_unknown_fields"] = file_of(b'{"t":{"u":null,"v":true,"f":false,"w":1.5e-3,"n":-0.0,"x":{"a":[1,"s",{}]},'
                                    b'"dtype":"U8","shape":[1],"data_offsets":[0,1]}}', b"\x00")
    # field names and dtype spelled with escapes
    s["h_escaped_fields"] = file_of(b'{"t":{"d\\u0074ype":"F\\u00316","\\u0073hape":[1],"data_\\u006fffsets":[0,2]}}',
                                    b"\x00\x3c")
    # the header-length limit: exactly 100,000,000 (allowed, but past the end) and one more
    s["h_len_limit"] = struct.pack("<Q", 100000000) + b'{}      '
    s["h_len_limit_plus1"] = struct.pack("<Q", 100000001) + b'{}      '
    # offsets at the top of the u64 range
    s["h_offsets_u64max"] = file_of(b'{"t":{"dtype":"U8","shape":[0],"data_offsets":[18446744073709551615,18446744073709551615]}}')
    # __metadata__ null followed by a second __metadata__
    s["h_meta_null_twice"] = file_of(b'{"__metadata__":null,"__metadata__":{},"t":{"dtype":"U8","shape":[0],"data_offsets":[0,0]}}')
    # sub-byte dtypes back to back
    s["h_subbyte"] = file_of(b'{"a":{"dtype":"F4","shape":[3,2],"data_offsets":[0,3]},'
                             b'"b":{"dtype":"F6_E3M2","shape":[2,2],"data_offsets":[3,6]},'
                             b'"c":{"dtype":"F6_E2M3","shape":[8],"data_offsets":[6,12]}}', bytes(range(12)))
    return s


def main():
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")
    for target in ("parse", "roundtrip"):
        d = os.path.join(root, target)
        os.makedirs(d, exist_ok=True)
        for name, data in seeds().items():
            with open(os.path.join(d, name + ".safetensors"), "wb") as f:
                f.write(data)


if __name__ == "__main__":
    main()
