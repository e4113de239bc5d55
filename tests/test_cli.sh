#!/usr/bin/env bash
# CLI tests of ./sts: every case of tests/cli/cases.txt runs on small fixtures (tests/cli/make_fixtures.py
# writes them: .npy, .safetensors and key files; conf/ is tests/conformance). Each case's stdout,
# stderr and exit code, normalized (run UUIDs, timings, rates, temporary paths), must equal
# tests/cli/expected/NAME.txt. A mismatch prints a diff. Exit 0 if every case matches, 1 if any
# differs (or an expectation file is missing or stale), 2 if the setup itself breaks.
#
#   tests/test_cli.sh [PATTERN]     only the cases whose name matches the extended regex PATTERN
#   UPDATE=1 tests/test_cli.sh      rewrite tests/cli/expected/ from the tool's current output;
#                                   read `git diff tests/cli/expected` by eye before trusting it.
#                                   The cases listed in tests/cli/handwritten.txt keep their
#                                   hand-written expectation (the right output, which the tool
#                                   did not give when the case was added).
#   STS=path/to/sts  PYTHON=python3  (defaults ./sts and /usr/bin/python3; only its stdlib is used)
#
# cases.txt: one case a line, "NAME  COMMAND". COMMAND is bash, run with pipefail (the exit code of
# `sts ... | od` is the tool's) in the C locale with no standard input. "+ COMMAND" is a setup
# step: it must succeed and its output is not compared. '#' starts a comment line. Every setup step
# runs first, in order, in the work folder, and creates what the cases read. The cases run there
# too, one after the other; what a case creates (out, out.safetensors, ...) is removed after it,
# so no case sees another's output and any subset can run alone. A case that changes a setup
# folder (index, pack --overwrite) gets a copy of its own from a setup step. Helpers on PATH:
# fxedit (make_fixtures.py --edit), fxread (make_fixtures.py --read: a tensor's bytes as Python's
# standard library reads them), on_tty (runs a command with its standard output on a
# pseudo-terminal) and readme_tour (compiles and runs README.md's API-tour programs, as C or C++). A case that could block (a FIFO) runs its command under `timeout`, so a hang
# fails the case (exit 124) instead of stopping the suite.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
STS=${STS:-$ROOT/sts}
PYTHON=${PYTHON:-/usr/bin/python3}
CASES=$ROOT/tests/cli/cases.txt
EXPECTED=$ROOT/tests/cli/expected
PATTERN=${1:-}
UPDATE=${UPDATE:-0}

case $STS in /*) ;; *) STS=$PWD/$STS ;; esac
[ -x "$STS" ] || { echo "test_cli: $STS is not built (make sts)" >&2; exit 2; }

W=$(mktemp -d "${TMPDIR:-/tmp}/sts-cli.XXXXXX") || exit 2
trap 'rm -rf "$W"' EXIT INT TERM
mkdir -p "$W/bin" "$W/run" "$W/raw"
ln -s "$STS" "$W/bin/sts"
printf '#!/bin/sh\nexec "%s" "%s" --edit "$@"\n' "$PYTHON" "$ROOT/tests/cli/make_fixtures.py" > "$W/bin/fxedit"
chmod +x "$W/bin/fxedit"
printf '#!/bin/sh\nexec "%s" "%s" --read "$@"\n' "$PYTHON" "$ROOT/tests/cli/make_fixtures.py" > "$W/bin/fxread"
chmod +x "$W/bin/fxread"
printf '#!/bin/sh\nexec "%s" "%s" "$@"\n' "$PYTHON" "$ROOT/tests/cli/on_tty.py" > "$W/bin/on_tty"
chmod +x "$W/bin/on_tty"
printf '#!/bin/sh\nexec bash "%s" "%s" "$@"\n' "$ROOT/tests/cli/readme_tour.sh" "$ROOT/README.md" > "$W/bin/readme_tour"
chmod +x "$W/bin/readme_tour"
"$PYTHON" "$ROOT/tests/cli/make_fixtures.py" "$W/run/fx" || { echo "test_cli: fixtures failed" >&2; exit 2; }
ln -s "$ROOT/tests/conformance" "$W/run/conf"
export PATH="$W/bin:$PATH" LC_ALL=C PYTHON

# ---- parse cases.txt (bash builtins only) ------------------------------------------------------
line_no=0
setups=() names=() cmds=()
declare -A seen=()
while IFS= read -r line || [ -n "$line" ]; do
    line_no=$((line_no + 1))
    case $line in ''|'#'*) continue ;; esac
    if [ "${line:0:2}" = "+ " ]; then setups+=("${line:2}"); continue; fi
    name=${line%%[[:space:]]*}
    cmd=${line#"$name"}
    cmd=${cmd#"${cmd%%[![:space:]]*}"}
    if [ -z "$cmd" ] || ! [[ $name =~ ^[a-z0-9_]+$ ]]; then
        echo "test_cli: cases.txt line $line_no: want 'NAME COMMAND' with NAME in [a-z0-9_]" >&2; exit 2
    fi
    if [ -n "${seen[$name]:-}" ]; then echo "test_cli: case $name appears twice in cases.txt" >&2; exit 2; fi
    seen[$name]=1
    if [ -n "$PATTERN" ] && ! [[ $name =~ $PATTERN ]]; then continue; fi
    names+=("$name") cmds+=("$cmd")
done < "$CASES"
printf '%s\n' "${!seen[@]}" > "$W/raw/all_names"
printf '%s\n' "${names[@]}" > "$W/raw/names"

# ---- setup steps, in order, in $W/run -----------------------------------------------------------
for step in "${setups[@]}"; do
    if ! (cd "$W/run" && set -o pipefail && eval "$step") > "$W/setup.out" 2>&1 </dev/null; then
        echo "test_cli: setup step failed: $step" >&2
        cat "$W/setup.out" >&2
        exit 2
    fi
done

# ---- cases: each in a subshell in $W/run; whatever a case creates there is removed after it -------
shopt -s nullglob dotglob
before=("$W/run"/*)
declare -A shared=()
for e in "${before[@]}"; do shared[$e]=1; done
for i in "${!names[@]}"; do
    name=${names[$i]} cmd=${cmds[$i]}
    (cd "$W/run" && set -o pipefail && eval "$cmd") > "$W/raw/$name.out" 2> "$W/raw/$name.err" </dev/null
    printf '%d\n' $? > "$W/raw/$name.rc"
    printf '%s\n' "$cmd" > "$W/raw/$name.cmd"
    new=()
    for e in "$W/run"/*; do [ -n "${shared[$e]:-}" ] || new+=("$e"); done
    [ "${#new[@]}" = 0 ] || rm -rf -- "${new[@]}"
done
shopt -u nullglob dotglob

# ---- compare (or update): normalize, then diff against tests/cli/expected ----------------------
"$PYTHON" - "$W" "$ROOT" "$EXPECTED" "$UPDATE" "$PATTERN" <<'EOF'
import difflib, os, re, sys
work, root, expected, update, pattern = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4] == "1", sys.argv[5]
raw = os.path.join(work, "raw")

RULES = [  # what varies between runs or machines
    (re.compile(re.escape(work)), "<W>"),
    (re.compile(re.escape(root)), "<ROOT>"),
    (re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"), "<UUID>"),
    (re.compile(r" in [0-9]+(\.[0-9]+)?s\b"), " in <T>s"),
    (re.compile(r"[0-9]+(\.[0-9]+)? (MB|GB)/s"), r"<N> \2/s"),
]

def section(title, path):
    with open(path, "rb") as f:
        data = f.read()
    text = data.decode("utf-8", errors="backslashreplace")
    for rx, rep in RULES:
        text = rx.sub(rep, text)
    if text and not text.endswith("\n"):
        text += "\n(no newline at end)\n"
    return "--- %s\n%s" % (title, text)

def actual(name):
    p = lambda ext: os.path.join(raw, name + ext)
    with open(p(".cmd")) as f:
        cmd = f.read()
    with open(p(".rc")) as f:
        rc = int(f.read())
    return "$ " + cmd + section("stdout", p(".out")) + section("stderr", p(".err")) + "--- exit %d\n" % rc, rc

with open(os.path.join(raw, "names")) as f:
    names = f.read().split()
handwritten = {}  # NAME -> what the tool did instead (tests/cli/handwritten.txt)
hw_path = os.path.join(os.path.dirname(expected), "handwritten.txt")
if os.path.exists(hw_path):
    for hw_line in open(hw_path):
        if hw_line.strip() and not hw_line.startswith("#"):
            hw_name, _, why = hw_line.strip().partition(" ")
            handwritten[hw_name] = why.strip()
passed, failed, rewritten = 0, [], 0
for name in names:
    got, rc = actual(name)
    path = os.path.join(expected, name + ".txt")
    want = open(path).read() if os.path.exists(path) else None
    if update:
        if want != got and name in handwritten and want is not None:
            print("kept hand-written %s (the tool still %s)" % (name, handwritten[name]))
        elif want != got:
            with open(path, "w") as f:
                f.write(got)
            rewritten += 1
            print("updated %s (exit %d)" % (name, rc))
        continue
    if want == got:
        passed += 1
        continue
    failed.append(name)
    if want is None:
        print("FAIL %s: no tests/cli/expected/%s.txt (UPDATE=1 writes it: review it)" % (name, name))
        continue
    m = re.search(r"^--- exit (\d+)$", want, re.M)
    print("FAIL %s: %s" % (name, got.splitlines()[0]))
    if name in handwritten:
        print("     hand-written expectation; the tool %s" % handwritten[name])
    if m and int(m.group(1)) != rc:
        print("     exit code %d, expected %s" % (rc, m.group(1)))
    sys.stdout.writelines(difflib.unified_diff(want.splitlines(True), got.splitlines(True), "expected/%s.txt" % name, "actual"))

stale = []
if not pattern:
    with open(os.path.join(raw, "all_names")) as f:
        known = set(f.read().split())
    for fn in sorted(os.listdir(expected)):
        if fn.endswith(".txt") and fn[:-4] not in known:
            if update:
                os.remove(os.path.join(expected, fn))
                print("removed stale expectation %s" % fn)
            else:
                stale.append(fn)
                print("FAIL stale expectation tests/cli/expected/%s (no such case)" % fn)
if update:
    print("test_cli: %d cases run, %d expectations rewritten: review git diff tests/cli/expected" % (len(names), rewritten))
    sys.exit(0)
print("test_cli: %d passed, %d failed%s" % (passed, len(failed), ", %d stale expectation files" % len(stale) if stale else ""))
if failed:
    print("failed: " + " ".join(failed))
sys.exit(1 if failed or stale else 0)
EOF
