#!/usr/bin/python3
"""Keeps format/SPECIFICATION.md and format/safetensors-header.schema.json honest.

(a) The rules block of SPECIFICATION.md equals `./sts rules` byte for byte.
(b) The header JSON of every conformance file that the reference accepts and that our strict mode
    also accepts validates against the schema. The reference-accepted files that strict mode
    rejects for a reason visible in parsed JSON (unknown field, positional entry, null metadata)
    fail the schema too. A few hand-made headers are checked both ways.
(c) Every dtype of STS_DTYPE_LIST appears in the spec's dtype table (same rank and bits) and in
    the schema's enum, and nothing else does.

Run from anywhere: python3 tests/check_spec.py (needs ./sts built; `make test-spec` does it).
Exit 0 when every check passes, 1 otherwise.
"""
import decimal
import difflib
import json
import os
import re
import struct
import subprocess
import sys

import jsonschema

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SPEC = os.path.join(ROOT, "format", "SPECIFICATION.md")
SCHEMA = os.path.join(ROOT, "format", "safetensors-header.schema.json")
HEADER = os.path.join(ROOT, "safetensors_spark.h")
STS = os.path.join(ROOT, "sts")
CASE_DIRS = [os.path.join(ROOT, "tests", "conformance", "shared"),
             os.path.join(os.path.dirname(ROOT), "shared", "conformance"),
             "/work/shared/conformance"]
BEGIN, END = "<!-- rules:begin -->", "<!-- rules:end -->"
# Strict rules whose breach survives JSON parsing, so the schema must reject it too.
SCHEMA_VISIBLE = {"strict.unknown_field", "strict.positional_entry", "strict.metadata_null", "strict.name_nul"}

failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL: " + msg)


def read(path, mode="r"):
    with open(path, mode) as fh:
        return fh.read()


# ---- (a) rules block ------------------------------------------------------------------------
def check_rules_block():
    rules = subprocess.run([STS, "rules"], cwd=ROOT, stdout=subprocess.PIPE, check=True).stdout.decode("utf-8")
    lines = read(SPEC).split("\n")
    if lines.count(BEGIN) != 1 or lines.count(END) != 1:
        fail("SPECIFICATION.md needs exactly one %r line and one %r line" % (BEGIN, END))
        return
    b, e = lines.index(BEGIN), lines.index(END)
    if e <= b:
        fail("rules:end comes before rules:begin")
        return
    block = "".join(line + "\n" for line in lines[b + 1:e])
    if block != rules:
        diff = difflib.unified_diff(block.splitlines(True), rules.splitlines(True), "SPECIFICATION.md", "./sts rules")
        fail("the rules block differs from `./sts rules`:\n" + "".join(diff))
    else:
        print("ok: rules block equals `./sts rules` (%d lines)" % rules.count("\n"))


# ---- (b) schema against files --------------------------------------------------------------
def no_fraction(text):
    raise ValueError("number %s is not an integer" % text)


def no_constant(text):
    raise ValueError("%s is not JSON" % text)


def header_json(data):
    """The parsed header of a file's bytes; Decimal for fractions so they fail "integer"."""
    (n,) = struct.unpack_from("<Q", data, 0)
    text = data[8:8 + n].decode("utf-8")
    dups = []

    def pairs(items):
        keys = [k for k, _ in items]
        if len(set(keys)) != len(keys):
            dups.append(keys)
        return dict(items)

    obj = json.loads(text, object_pairs_hook=pairs, parse_float=decimal.Decimal, parse_constant=no_constant)
    return obj, dups


def find_cases():
    for d in CASE_DIRS:
        cases = os.path.join(d, "cases")
        if os.path.isdir(cases):
            return d, cases
    return None, None


def accepted_files(base, cases):
    """Files the reference accepts: expected.tsv's OK rows, else the v_ prefix."""
    tsv = os.path.join(base, "expected.tsv")
    if os.path.exists(tsv):
        rows = [line.split("\t") for line in read(tsv).splitlines()[1:] if line.strip()]
        names = [r[0] for r in rows if len(r) > 1 and r[1] == "OK"]
    else:
        names = [f for f in os.listdir(cases) if f.startswith("v_")]
    missing = [n for n in names if not os.path.exists(os.path.join(cases, n))]
    for n in missing:
        fail("expected.tsv lists %s but %s has no such file" % (n, cases))
    return sorted(os.path.join(cases, n) for n in names if n not in missing)


def strict_verdicts(paths):
    out = subprocess.run([STS, "verify", "--strict"] + paths, cwd=ROOT, stdout=subprocess.PIPE).stdout.decode("utf-8")
    verdicts = {}
    for line in out.splitlines():
        f = line.split("\t")
        verdicts[f[0]] = ("OK", None) if f[1] == "OK" else ("ERR", f[3].split(":", 1)[0])
    return verdicts


def check_schema_files(validator):
    base, cases = find_cases()
    if not cases:
        print("skip: no conformance cases found (looked in %s)" % ", ".join(CASE_DIRS))
        return
    paths = accepted_files(base, cases)
    if not paths:
        fail("no accepted conformance files in %s" % cases)
        return
    verdicts = strict_verdicts(paths)
    valid = visible = 0
    before = len(failures)
    for p in paths:
        name = os.path.basename(p)
        verdict, rule = verdicts.get(p, ("?", None))
        if verdict == "?":
            fail("%s: no verdict from ./sts verify --strict" % name)
            continue
        obj, dups = header_json(read(p, "rb"))
        errors = sorted(validator.iter_errors(obj), key=lambda e: list(e.path))
        if verdict == "OK":
            valid += 1
            if dups:
                fail("%s: strict mode accepts duplicate keys %s" % (name, dups))
            if errors:
                fail("%s: strict mode accepts it, the schema rejects it: %s at %s"
                     % (name, errors[0].message, list(errors[0].path)))
        elif rule in SCHEMA_VISIBLE:
            visible += 1
            if not errors:
                fail("%s: strict mode rejects it (%s), the schema accepts it" % (name, rule))
    if len(failures) == before:
        print("ok: schema accepts the %d strict-valid headers of %s; rejects the %d with schema-visible strict breaches"
              % (valid, cases, visible))


def header_file(header, data_len=0):
    h = json.dumps(header, separators=(",", ":")).encode("utf-8")
    h += b" " * (-len(h) % 8)
    return struct.pack("<Q", len(h)) + h + b"\0" * data_len


def check_schema_samples(validator, dtypes):
    # Valid: one tensor per dtype (BF16 among them), metadata, empty header, empty name.
    before = len(failures)
    good = [{}, {"__metadata__": {}}, {"__metadata__": {"format": "pt", "k\u0000": "\u00e9"}}]
    for name, bits in dtypes:
        good.append({"t": {"dtype": name, "shape": [2, 4], "data_offsets": [0, bits]}})  # 8 elements
    good.append({"": {"dtype": "BF16", "shape": [], "data_offsets": [0, 2]},
                 "big": {"dtype": "U8", "shape": [18446744073709551615, 0], "data_offsets": [2, 2]}})
    for h in good:
        errs = list(validator.iter_errors(h))
        if errs:
            fail("schema rejects a valid header %s: %s" % (json.dumps(h), errs[0].message))

    t = {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}
    bad = {
        "unknown dtype": {"a": dict(t, dtype="F8")},
        "lowercase dtype": {"a": dict(t, dtype="bf16")},
        "extra field": {"a": dict(t, x=1)},
        "negative shape": {"a": dict(t, shape=[-1])},
        "3 offsets": {"a": dict(t, data_offsets=[0, 8, 8])},
        "1 offset": {"a": dict(t, data_offsets=[0])},
        "offset >= 2^64": {"a": dict(t, data_offsets=[0, 18446744073709551616])},
        "fractional shape": {"a": dict(t, shape=[decimal.Decimal("2.5")])},
        "string shape": {"a": dict(t, shape=["2"])},
        "missing dtype": {"a": {"shape": [2], "data_offsets": [0, 8]}},
        "positional entry": {"a": ["F32", [2], [0, 8]]},
        "metadata null": {"__metadata__": None},
        "metadata number": {"__metadata__": {"n": 1}},
        "NUL in name": {"a\u0000": t},
        "top-level array": [t],
    }
    for what, h in bad.items():
        if validator.is_valid(h):
            fail("schema accepts an invalid header (%s): %r" % (what, h))
    # The fractional case as text, through the same parser used for files.
    obj, _ = header_json(header_file({"a": dict(t, shape=[2])}).replace(b"[2]", b"[2.0]", 1))
    if validator.is_valid(obj):
        fail("schema accepts shape [2.0] when parsed as the format reads numbers")
    if len(failures) == before:
        print("ok: schema accepts %d valid sample headers and rejects %d invalid ones" % (len(good), len(bad) + 1))


# ---- (c) dtypes ------------------------------------------------------------------------------
def header_dtypes():
    m = re.search(r"#define STS_DTYPE_LIST\(X\)((?:[^\n]*\\\n)*[^\n]*)\n", read(HEADER))
    if not m:
        fail("STS_DTYPE_LIST not found in safetensors_spark.h")
        return []
    return [(n, int(b)) for n, b in re.findall(r"X\(\s*(\w+)\s*,\s*(\d+)\s*\)", m.group(1))]


def check_dtypes(dtypes, schema):
    before = len(failures)
    if len(dtypes) != 22:
        fail("STS_DTYPE_LIST has %d dtypes, expected 22" % len(dtypes))
    rows = re.findall(r"^\|\s*(\d+)\s*\|\s*`([A-Z0-9_]+)`\s*\|\s*(\d+)\s*\|", read(SPEC), re.M)
    table = [(int(r), n, int(b)) for r, n, b in rows]
    want = [(i, n, b) for i, (n, b) in enumerate(dtypes)]
    if table != want:
        fail("the spec's dtype table %s differs from STS_DTYPE_LIST %s" % (table, want))
    enum = schema["$defs"]["dtype"]["enum"]
    names = [n for n, _ in dtypes]
    if sorted(enum) != sorted(names) or len(enum) != len(set(enum)):
        fail("the schema's dtype enum %s differs from STS_DTYPE_LIST %s" % (enum, names))
    if "BF16" not in enum:
        fail("the schema's dtype enum lacks BF16")
    if len(failures) == before:
        print("ok: all %d dtypes appear in the spec table (rank, bits) and the schema enum" % len(dtypes))


def main():
    if not os.path.exists(STS):
        print("FAIL: %s not built (run make sts)" % STS)
        return 1
    schema = json.loads(read(SCHEMA))
    cls = jsonschema.validators.validator_for(schema)
    if cls is not jsonschema.Draft202012Validator:
        fail("schema should declare draft 2020-12, got %s" % cls.__name__)
    cls.check_schema(schema)
    validator = cls(schema)
    dtypes = header_dtypes()
    check_rules_block()
    check_dtypes(dtypes, schema)
    check_schema_samples(validator, dtypes)
    check_schema_files(validator)
    if failures:
        print("check_spec: %d failure(s)" % len(failures))
        return 1
    print("check_spec: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
