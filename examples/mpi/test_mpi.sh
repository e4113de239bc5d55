#!/usr/bin/env bash
# make test-mpi: examples/mpi/sts_mpi under mpirun with 4 ranks (oversubscribed on small machines).
#   good        a write by 4 task writers committed at rank 0, then read back by 4 ranks through the
#               balance assignment: every sample exactly once, checksums as generated; the folder
#               holds the manifest and the shards, no lock and no temporary
#   negatives   the read check must fail when a shard is skipped, read twice, or holds a changed byte
#   die         rank 1's writer dies (SIGKILL) after 700 rows: every rank learns it, rank 0 aborts
#               with the other messages, which removes the dead writer's temporaries; the folder,
#               absent before, is absent after
#   write-fail  rank 2's writes fail (EFBIG): the library's message at rank 0, the job aborted, the
#               folder, empty before, empty after
# usage: test_mpi.sh PROGRAM   (MPIRUN overrides the launcher: default mpirun --oversubscribe -np 4,
#                               with --allow-run-as-root as root)
set -u
prog=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
np=4
if [ -z "${MPIRUN:-}" ]; then
    MPIRUN="mpirun --oversubscribe -np $np"
    [ "$(id -u)" = 0 ] && MPIRUN="$MPIRUN --allow-run-as-root"
fi
to=""; command -v timeout >/dev/null 2>&1 && to="timeout 120"
d=$(mktemp -d "${TMPDIR:-/tmp}/sts-mpi.XXXXXX") || exit 1
trap 'rm -rf "$d"' EXIT INT TERM
cd "$d" || exit 1
fails=0 passes=0
run() {  # run LOG ARGS...: sts_mpi under mpirun, its output in LOG, its status returned
    local log=$1; shift
    $to $MPIRUN "$prog" "$@" > "$log" 2>&1
}
bad() { echo "test-mpi: FAIL $1: $2"; sed 's/^/      | /' "$3"; fails=$((fails + 1)); }
good() { echo "test-mpi: PASS $1"; passes=$((passes + 1)); }
lines() { grep -c -- "$1" "$2"; }

# good: write, the folder's listing, read
if ! run w.log write good --rows 10000 --batch 500; then bad good-write "exit status $?" w.log
elif [ "$(lines 'the dataset was committed: 20 shards, 10000 samples' w.log)" != $np ]; then
    bad good-write "not every rank printed the commit" w.log
else
    ls -A good > ls.txt
    if [ "$(grep -c '^part-.*\.safetensors$' ls.txt)" != 20 ] ||
       [ "$(grep -vc '^part-.*\.safetensors$' ls.txt)" != 1 ] ||
       ! grep -qx dataset_manifest.json ls.txt; then
        bad good-write "the folder holds more than the manifest and 20 shards (or less)" ls.txt
    else good "good write: 4 tasks committed at rank 0, 20 shards + the manifest, no lock, no temporary"; fi
fi
if ! run r.log read good --rows 10000; then bad good-read "exit status $?" r.log
elif ! grep -q '^read: PASS' r.log || [ "$(lines ' read 5 shards, 2500 samples (balance)' r.log)" != $np ]; then
    bad good-read "no PASS verdict, or not 5 shards a rank" r.log
else good "good read: 4 ranks x 5 shards (balance), 10000 samples exactly once, checksums match"; fi

# negatives: the check must see a missing, a duplicated and a changed sample
if run n1.log read good --rows 10000 --skip-shard 3; then bad skip-shard "the read check passed" n1.log
elif ! grep -q '^read: 500 samples never read' n1.log || ! grep -q '^read: FAIL' n1.log; then
    bad skip-shard "no FAIL naming 500 unread samples" n1.log
else good "negative: a skipped shard fails the check (500 samples never read)"; fi
if run n2.log read good --rows 10000 --extra-shard 7; then bad extra-shard "the read check passed" n2.log
elif ! grep -q '^read: 500 samples read more than once' n2.log || ! grep -q '^read: FAIL' n2.log; then
    bad extra-shard "no FAIL naming 500 samples read twice" n2.log
else good "negative: a shard read by two ranks fails the check (500 samples read twice)"; fi
cp -r good changed
f=$(ls changed/part-00002-0001-*.safetensors)
size=$(wc -c < "$f")
printf '\177' | dd of="$f" bs=1 seek=$((size - 1)) conv=notrunc 2>/dev/null  # x's last float, top byte
if run n3.log read changed --rows 10000; then bad changed-byte "the read check passed" n3.log
elif ! grep -q 'checksums differ' n3.log || ! grep -q '^read: FAIL' n3.log; then
    bad changed-byte "no FAIL saying the checksums differ" n3.log
else good "negative: one changed byte fails the check (checksums differ)"; fi

# die: rank 1's writer killed after 700 rows; the folder did not exist before
if run die.log write dead --rows 10000 --batch 500 --fail-after 700 --fail-rank 1; then
    bad die "the job succeeded" die.log
elif ! grep -q '^rank 0: task 1 failed: rank 1: its writer process died (signal 9 after 700 rows)' die.log ||
     [ "$(lines 'the job was aborted (a task failed): nothing published' die.log)" != $np ] ||
     ! grep -q '^rank 0: aborting the job with the 3 commit messages it has' die.log; then
    bad die "rank 0 did not name the death, or not every rank learnt the abort" die.log
elif [ "$(grep -c '^rank 0: left by a writer: \.part-00001-.*\.tmp-' die.log)" -lt 1 ]; then
    bad die "the dead writer left no temporary (no death in the middle of its work?)" die.log
elif [ -e dead ]; then
    ls -lA dead > ls.txt; bad die "the folder is left (it did not exist before)" ls.txt
else
    good "die after 700 rows: every rank learnt it, rank 0 aborted with 3 messages, which removed the dead \
writer's $(grep -c '^rank 0: left by a writer' die.log) temporaries; no folder left"
fi

# write-fail: rank 2's writes fail with EFBIG; the folder existed, empty, before
mkdir empty
if run wf.log write empty --rows 10000 --batch 500 --fail-write 2; then
    bad write-fail "the job succeeded" wf.log
elif ! grep -q '^rank 0: task 2 failed: rank 2: IO after [0-9]* rows: .*EFBIG' wf.log ||
     [ "$(lines 'the job was aborted (a task failed): nothing published' wf.log)" != $np ]; then
    bad write-fail "rank 0 did not print the library's EFBIG message, or not every rank learnt the abort" wf.log
elif [ -n "$(ls -A empty)" ]; then
    ls -lA empty > ls.txt; bad write-fail "the folder is not empty as it was" ls.txt
else
    good "write fails (EFBIG) on rank 2: the library's message at rank 0, every rank learnt it, the folder \
empty as before"
fi

# nothing else was left in the scratch folder (a stray temporary, a baseline file)
ls -A | grep -v -x -e good -e changed -e empty -e '.*\.log' -e ls.txt -e stray.txt > stray.txt
if [ -s stray.txt ]; then bad stray "files left beside the datasets" stray.txt; fi
echo "test-mpi: $passes passed, $fails failed ($np ranks: $MPIRUN)"
[ "$fails" = 0 ]
