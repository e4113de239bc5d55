#!/usr/bin/env bash
# run_steps.sh JOBS FIRST -- POOL... : the test steps of `make test`, each a make target.
#
# The FIRST steps (space-separated, one argument) run one after the other with their output shown
# as it comes: they build what later steps share (the sts tool, the unit programs that test-valgrind
# and test-dataset-py run, objects several steps link). Then the POOL steps run JOBS at a time, in
# the order given (the long ones first), each with its output in a log printed whole when it ends,
# so the output of two steps never interleaves. Most steps are one process (a compile, python, a
# shell script); the ones that compile many programs use $(JOBS) themselves: two at a time keeps
# the CPUs busy either way. A FIRST step that fails stops the run (the others would build what it
# left unbuilt, two at once); every POOL step runs even after one fails. The failed ones are
# listed at the end and the exit status is 1. $MAKE is the make to call (default make).
set -u
jobs=$1 first=$2
shift 2
[ "${1:-}" = "--" ] && shift
make_cmd=${MAKE:-make}
export STS_IN_SUITE=1  # steps may leave out what another step of the suite already does (test-matrix)
t0=$(date +%s)
failed=""
for s in $first; do
    echo "=== $s"
    t=$(date +%s)
    if ! $make_cmd --no-print-directory "$s"; then echo "=== FAILED: $s ($(($(date +%s) - t0)) s)"; exit 1; fi
    echo "=== $s: $(($(date +%s) - t)) s"
done
dir=$(mktemp -d "${TMPDIR:-/tmp}/sts-steps.XXXXXX") || exit 2
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$dir"' EXIT
trap 'exit 130' INT TERM
declare -A name_of=()
# Waits for a running step to end, then prints its log and its verdict.
reap() {
    local pid s rc secs
    wait -n -p pid
    s=${name_of[$pid]}
    unset "name_of[$pid]"
    read -r rc secs < "$dir/$s.rc" || { rc=255; secs=0; }
    echo "=== $s"
    cat "$dir/$s.log"
    if [ "$rc" = 0 ]; then echo "=== $s: $secs s"; else echo "=== $s: FAILED, exit $rc ($secs s)"; failed="$failed $s"; fi
}
for s in "$@"; do
    while [ "${#name_of[@]}" -ge "$jobs" ]; do reap; done
    ( t=$(date +%s); $make_cmd --no-print-directory "$s" > "$dir/$s.log" 2>&1 < /dev/null
      echo "$? $(($(date +%s) - t))" > "$dir/$s.rc" ) &
    name_of[$!]=$s
done
while [ "${#name_of[@]}" -gt 0 ]; do reap; done
if [ -n "$failed" ]; then echo "=== FAILED:$failed ($(($(date +%s) - t0)) s)"; exit 1; fi
echo "=== all test steps passed in $(($(date +%s) - t0)) s: $first $*"
