#!/usr/bin/env bash
# run_tests.sh JOBS PROGRAM... - runs test programs JOBS at a time (the test steps' programs are
# independent: each works in its own temporary folders), each with its output in a log; then prints
# every log in the order given, with the program's time and status, and exits 1 if any failed.
# A wrapper, such as valgrind and its options, goes in $STS_RUN_WRAP; the environment is passed on.
set -u
jobs=$1
shift
dir=$(mktemp -d "${TMPDIR:-/tmp}/sts-run.XXXXXX") || exit 2
trap 'rm -rf "$dir"' EXIT
i=0
for t in "$@"; do i=$((i + 1)); printf '%s\t%s\n' "$i" "$t"; done |
    xargs -P "$jobs" -L 1 bash -c '
        n=$0 t=$1 d='"$(printf %q "$dir")"'
        s=$(date +%s)
        ${STS_RUN_WRAP:-} "./$t" > "$d/$n.log" 2>&1
        echo "$? $(( $(date +%s) - s ))" > "$d/$n.rc"'
failed=""
i=0
for t in "$@"; do
    i=$((i + 1))
    read -r rc secs < "$dir/$i.rc" || { rc=255; secs=0; }
    echo "--- $t ($secs s)"
    cat "$dir/$i.log"
    if [ "$rc" != 0 ]; then echo "--- $t: FAILED, exit $rc"; failed="$failed $t"; fi
done
if [ -n "$failed" ]; then echo "run_tests: failed:$failed"; exit 1; fi
