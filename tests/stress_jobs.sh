#!/usr/bin/env bash
# stress_jobs.sh - jobs racing for one dataset folder, and jobs killed with SIGKILL, through the
# sts tool: no committed dataset is ever lost or mixed.
#
#   tests/stress_jobs.sh [ROUNDS]      (default 20; make test runs a short one: make test-jobs)
#
# Each round:
#   1. two `sts pack --overwrite` into the same folder at once: at least one succeeds, a failure is
#      the lock's refusal (exit 1, "held by job"), and `sts check --data` passes afterwards;
#   2. a pack killed with SIGKILL after a random delay: the dataset published before it is still
#      whole (or the new one is, if the kill came after its commit); `sts clean` clears what the
#      killed job left, and then `sts check --data` passes.
# Environment: STS (default ./sts), PYTHON (default /usr/bin/python3, with numpy).
set -u
STS=${STS:-./sts}
PYTHON=${PYTHON:-/usr/bin/python3}
rounds=${1:-20}
STS=$(cd "$(dirname "$STS")" && pwd)/$(basename "$STS")
work=$(mktemp -d "${TMPDIR:-/tmp}/sts-jobs.XXXXXX") || exit 2
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 2
fail() { echo "stress_jobs: FAIL: $*"; exit 1; }

"$PYTHON" - <<'EOF' || fail "numpy could not write the inputs"
import numpy as np
np.save("x.npy", np.arange(20000 * 256, dtype=np.float32).reshape(20000, 256))
np.save("y.npy", (np.arange(20000 * 256, dtype=np.float32) * 2).reshape(20000, 256))
open("keys.txt", "w").write("".join("k%d\n" % i for i in range(20000)))
EOF
pack() {  # pack COLUMN_FILE: the whole dataset from one input, replacing what is there (exec: the
          # background job's pid is the tool's own, so kill -9 reaches it)
    exec "$STS" pack ds --column "x=$1" --keys keys.txt --generate-index --no-fsync --overwrite
}
(pack x.npy) > first.log 2>&1 || fail "the first pack: $(cat first.log)"
wins=0 refused=0 killed=0
for r in $(seq 1 "$rounds"); do
    # 1. two jobs at once
    pack x.npy > a.log 2>&1 & pa=$!
    pack y.npy > b.log 2>&1 & pb=$!
    wait $pa; ra=$?
    wait $pb; rb=$?
    [ $ra = 0 ] || [ $rb = 0 ] || fail "round $r: both jobs failed: $(cat a.log b.log)"
    for x in a b; do
        rc=$([ $x = a ] && echo $ra || echo $rb)
        if [ "$rc" = 0 ]; then wins=$((wins + 1))
        elif grep -q "held by job" $x.log; then refused=$((refused + 1))
        else fail "round $r: job $x failed otherwise: $(cat $x.log)"; fi
    done
    "$STS" check --data ds > check.log 2>&1 || fail "round $r: after the race: $(cat check.log)"
    # 2. a job killed at a random moment
    pack y.npy > k.log 2>&1 & pk=$!
    sleep "0.0$((RANDOM % 10))$((RANDOM % 10))"
    kill -9 $pk 2>/dev/null && killed=$((killed + 1))
    wait $pk 2>/dev/null
    "$STS" clean ds > clean.log 2>&1 || fail "round $r: clean after the kill: $(cat clean.log)"
    "$STS" check --data ds > check.log 2>&1 || fail "round $r: after kill -9 and clean: $(cat check.log) $(cat clean.log)"
    "$STS" get ds k7__x -o k7.bin > /dev/null 2>&1 || fail "round $r: a key of the published dataset is gone"
done
echo "stress_jobs: $rounds rounds: $wins jobs won, $refused refused while another held the folder, $killed killed; every round checked clean"
