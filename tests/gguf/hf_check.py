#!/usr/bin/python3
"""hf_check.py - make test-gguf-hf: our GGUF reader against @huggingface/gguf, an independent parser.

1. @huggingface/gguf (pinned below) is installed with npm into build/node when it is missing.
   Without node or npm, or when the install fails, the step is skipped saying so; under CI=true
   that is a failure instead.
2. Every valid file of the corpus that the package reads as ggml does (cases.tsv's hf column)
   is read by both: tests/gguf/gguf_dump.c (the archive API) and tests/gguf/hf_dump.cjs print the
   version, every KV (typed, the value exactly: floats as their IEEE bits), the byte order, the data
   offset, and every tensor's name, ggml dims, type and offset; the two must be equal (KVs compared
   as a set: JavaScript objects put integer-like keys first).
3. The package's serializer writes files we did not write (tests/gguf/hf_make.cjs): typed headers in
   both byte orders and versions 2 and 3, and corpus files whose header it rebuilt around their
   tensor infos and data. We must open each (strict mode too, except a big-endian version 2), read
   what the package reads, and find every tensor's bytes unchanged.
4. Files our GGUF writer wrote (sts_gguf_write through `sts convert X.gguf Y.gguf`, block types
   decoded to F32): every valid corpus file the package reads, in both byte orders, converted. The
   package must read each as we do, strict mode must accept it (but for the caller's keys and
   general.architecture, where it refuses the source for them too), and its KVs must be the source's
   (a scalar UINT8 comes back as UINT64, as SPECIFICATION 15.8 says). A source may only fail to
   convert for a block type we do not decode or a string that is not UTF-8.
Usage: hf_check.py CORPUS_DIR GGUF_DUMP OUT_DIR STS
"""
import os
import shutil
import subprocess
import sys

PACKAGE = "@huggingface/gguf@0.4.6"
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NODE_DIR = os.path.join(ROOT, "build", "node")
PKG = os.path.join(NODE_DIR, "node_modules", "@huggingface", "gguf")


def skip(why):
    print("test-gguf-hf: skipped: " + why)
    if os.environ.get("CI") == "true":
        print("test-gguf-hf: CI=true: failing instead", file=sys.stderr)
        sys.exit(1)
    sys.exit(0)


def ensure_package():
    if not shutil.which("node"):
        skip("node is not installed (tests/deps.sh installs nodejs and npm)")
    major = subprocess.run(["node", "-p", "process.versions.node.split('.')[0]"], stdout=subprocess.PIPE,
                           universal_newlines=True).stdout.strip()
    if not major.isdigit() or int(major) < 20:
        skip("node %s is older than 20 (the package needs resizable ArrayBuffers)" % major)
    if os.path.exists(os.path.join(PKG, "package.json")):
        return
    if not shutil.which("npm"):
        skip("npm is not installed (tests/deps.sh installs nodejs and npm)")
    os.makedirs(NODE_DIR, exist_ok=True)
    print("test-gguf-hf: installing %s into %s" % (PACKAGE, NODE_DIR))
    r = subprocess.run(["npm", "install", "--prefix", NODE_DIR, "--no-audit", "--no-fund", "--no-save", PACKAGE],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
    if r.returncode != 0 or not os.path.exists(os.path.join(PKG, "package.json")):
        skip("npm install %s failed:\n%s" % (PACKAGE, r.stdout[-2000:]))


def dumps(cmd, files):
    """{file name: (status, kv lines as a sorted list, other lines in order)} from a dumper's output."""
    r = subprocess.run(cmd + files, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
                       env=dict(os.environ, HF_GGUF=PKG))
    out, cur = {}, None
    for line in r.stdout.splitlines():
        if line.startswith("file "):
            cur = out.setdefault(line[5:], {"error": None, "kv": [], "rest": []})
        elif line.startswith("error "):
            cur["error"] = line[6:]
        elif line.startswith("kv "):
            cur["kv"].append(line)
        else:
            cur["rest"].append(line)
    if r.returncode not in (0, 1):
        sys.exit("hf_check: %s failed (%d): %s" % (cmd[0], r.returncode, r.stderr[-2000:]))
    return out


def compare(ours, theirs, names, problems):
    for n in names:
        a, b = ours.get(n), theirs.get(n)
        if a is None or b is None:
            problems.append("%s: missing from a dump" % n)
        elif a["error"] or b["error"]:
            problems.append("%s: ours: %s; @huggingface/gguf: %s" % (n, a["error"] or "ok", b["error"] or "ok"))
        elif sorted(a["kv"]) != sorted(b["kv"]):
            diff = sorted(set(a["kv"]) ^ set(b["kv"]))
            problems.append("%s: the KVs differ, e.g. %s" % (n, diff[0][:300]))
        elif [l for l in a["rest"] if not l.startswith("sha ")] != b["rest"]:
            problems.append("%s: version, byte order, data offset or tensors differ:\n    ours %s\n    hf   %s" %
                            (n, a["rest"][:6], b["rest"][:6]))


def main():
    corpus, dumper, out, sts = sys.argv[1:5]
    ensure_package()
    valid = []
    with open(os.path.join(corpus, "cases.tsv")) as fh:
        for line in fh:
            f = line.rstrip("\n").split("\t")
            if f[0] == "C" and f[2] == "OK" and f[9] == "1":
                valid.append(f[1])
    problems = []
    paths = [os.path.join(corpus, n) for n in valid]
    ours = dumps([os.path.abspath(dumper)], paths)
    theirs = dumps(["node", os.path.join(ROOT, "tests", "gguf", "hf_dump.cjs")], paths)
    compare(ours, theirs, valid, problems)

    shutil.rmtree(out, ignore_errors=True)
    r = subprocess.run(["node", os.path.join(ROOT, "tests", "gguf", "hf_make.cjs"), corpus, out],
                       env=dict(os.environ, HF_GGUF=PKG), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       universal_newlines=True)
    if r.returncode != 0:
        sys.exit("hf_check: hf_make.cjs failed:\n" + r.stdout[-3000:])
    made = sorted(os.listdir(out))
    mpaths = [os.path.join(out, n) for n in made]
    ours = dumps([os.path.abspath(dumper), "--sha"], mpaths)
    strict = dumps([os.path.abspath(dumper), "--strict"], [p for p in mpaths if "be_v2" not in p])
    theirs = dumps(["node", os.path.join(ROOT, "tests", "gguf", "hf_dump.cjs")], mpaths)
    compare(ours, theirs, made, problems)
    for n, d in strict.items():
        if d["error"]:
            problems.append("%s: strict mode refuses it: %s" % (n, d["error"]))
    for n in made:  # the rebuilt files keep every tensor's bytes
        if n.startswith("hf_rebuilt_"):
            src = dumps([os.path.abspath(dumper), "--sha"], [os.path.join(corpus, n[len("hf_rebuilt_"):])])
            want = [l for l in list(src.values())[0]["rest"] if l.startswith("sha ")]
            got = [l for l in ours[n]["rest"] if l.startswith("sha ")]
            if not want or want != got:
                problems.append("%s: the tensors' bytes differ from the file it was rebuilt from" % n)
    # 4. our writer's files
    wdir = out + "_written"
    shutil.rmtree(wdir, ignore_errors=True)
    os.makedirs(wdir)
    written, refused = [], 0
    for n in valid:
        dst = os.path.join(wdir, "w_" + n)
        r = subprocess.run([os.path.abspath(sts), "convert", os.path.join(corpus, n), dst], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, universal_newlines=True)
        if r.returncode == 0:
            written.append(n)
        elif "does not decode" in r.stderr or "UTF-8" in r.stderr or "general.alignment" in r.stderr:
            refused += 1
        else:
            problems.append("%s: sts convert to GGUF failed: %s" % (n, r.stderr.strip()[:300]))
    wnames = ["w_" + n for n in written]
    wpaths = [os.path.join(wdir, n) for n in wnames]
    ours = dumps([os.path.abspath(dumper)], wpaths)
    theirs = dumps(["node", os.path.join(ROOT, "tests", "gguf", "hf_dump.cjs")], wpaths)
    compare(ours, theirs, wnames, problems)
    src_strict = dumps([os.path.abspath(dumper), "--strict"], [os.path.join(corpus, n) for n in written])
    for n, d in dumps([os.path.abspath(dumper), "--strict"], wpaths).items():
        rule = (d["error"] or "").split(":")[0]
        # keys and general.architecture are the caller's: strict may refuse those where it refuses the source
        if d["error"] and not (rule in ("gguf.strict_key", "gguf.strict_required") and
                               (src_strict[n[2:]]["error"] or "").startswith(rule + ":")):
            problems.append("%s: strict mode refuses our writer's file: %s" % (n, d["error"]))
    src = dumps([os.path.abspath(dumper)], [os.path.join(corpus, n) for n in written])
    for n in written:
        want = sorted(l.replace(" 0 u", " 10 u", 1) if " 0 u" in l else l for l in src[n]["kv"])
        got = sorted(ours["w_" + n]["kv"])
        if want != got:
            diff = sorted(set(want) ^ set(got))
            problems.append("w_%s: the KVs are not the source's, e.g. %s" % (n, diff[0][:300]))
    if len(written) < len(valid) // 2:
        problems.append("only %d of %d valid files converted" % (len(written), len(valid)))
    for p in problems:
        print("FAIL " + p)
    if problems:
        sys.exit("test-gguf-hf: %d problem(s)" % len(problems))
    print("test-gguf-hf: @huggingface/gguf %s reads the %d valid corpus files as we do; its serializer's %d files "
          "open here (strict too), read the same, tensors unchanged; %d files our writer made from them read the same "
          "there, pass strict and keep their KVs (%d sources refused: types not decoded, strings not UTF-8, an alignment not a multiple of 8)"
          % (PACKAGE.split("@")[-1], len(valid), len(made), len(written), refused))


if __name__ == "__main__":
    main()
