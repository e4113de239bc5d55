#!/usr/bin/env bash
# bench/device.sh - issue 17's benchmarks on the lent 16-core machine, as one short prepared run.
#
# The lent machine has no package registry and no jsmn or simdjson, so the programs are built here
# and travel in .dev/ (ignored by git through .git/info/exclude):
#
#   here:   bash bench/device.sh prepare      builds the programs into .dev/bin, simdjson's
#                                             library into .dev/lib, and perf with the libraries
#                                             it needs into .dev/perf (47 MB in all)
#   there:  device run, carry [".dev"], timeout_s 590:   bash bench/device.sh run
#   also:   bash bench/device.sh profile      (there) perf of the KV writer and of 16 batch tasks,
#                                             by thread and function; about 40 s
#           bash bench/device.sh base REV     (here, after prepare) REV's writer benchmarks into
#                                             .dev/base; then `ab` there runs both builds in turn
#
# `run` writes each program's output under $OUT (./device-out without it; at most 8 files come
# back) and prints the summary tables. Every step has its own time limit (570 s in all), so one
# that hangs costs its limit and not the lease; the whole run took 4 minutes on the 2-vCPU VM and
# 2.5 on the 16-core machine (2026-11-28).
#   machine.txt       CPU, memory, the scratch folder's file system
#   write-kv.txt      bench_dataset_write --only kv: 1M KV rows of 1 KiB against raw write() (and +
#                     fsync), in both shard layouts (kv_layout sorted and arrival), the dataset
#                     commit of 1M keys, peak RSS
#   write-batch.txt   bench_dataset_write --only batch, 2 GiB: batch F32 and F32 -> BF16
#   tasks.txt/.svg    bench_tasks: N = 1..16 task writers at once, threads and processes, batch
#                     and KV, against N raw writers; the plot; then KV tasks of 64 MiB in the
#                     arrival layout and of 512 MiB in both (N = 1, 4, 16 threads); batch
#                     processes at N = 8 and 16 with io_thread false
#   parse.txt         bench_parse: 10k and 100k tensors against jsmn and simdjson On-Demand
#   read.txt          bench_dataset_read: index load, lookups, the wide scan against open + pread
#   loader.txt        examples/python/bench_loader.py: the PyTorch DataLoader over batch shards
#                     packed by the sts tool against the same samples in .npy files (issue 15)
#
# The C programs are built as `make bench` builds them (-O2 -g, no -march). The simdjson walker is
# built twice, for x86-64-v3 (AVX2) and for Ice Lake server (AVX-512, simdjson's fastest kernel),
# and `run` picks by the CPU's flags: -march=native here would describe this machine, not that one.
set -euo pipefail
cd "$(dirname "$0")/.."
DEV=.dev
PROGS="bench_dataset_write bench_dataset_read bench_tasks bench_crc32c"  # and the sts tool, for the loader's packing

prepare() {
    grep -qx '/.dev/' .git/info/exclude 2>/dev/null || echo '/.dev/' >> .git/info/exclude
    rm -rf "$DEV" && mkdir -p "$DEV/bin" "$DEV/lib" "$DEV/obj"
    local targets=() p
    for p in $PROGS; do targets+=("build/bench/$p"); done
    make -s "${targets[@]}" build/bench/bench_parse sts
    for p in $PROGS; do cp build/bench/$p "$DEV/bin/"; done
    cp sts "$DEV/bin/"
    local simd=/usr/include/simdjson.h lib
    [ -f "$simd" ] || { echo "device.sh: no $simd here (make deps installs libsimdjson-dev)" >&2; exit 1; }
    for v in x86-64-v3 icelake-server; do
        ${CXX:-g++} -std=c++17 -O2 -g -march=$v -Wall -Wextra -c -o "$DEV/obj/simd-$v.o" bench/bench_parse_simdjson.cpp
        ${CXX:-g++} -o "$DEV/bin/bench_parse-$v" build/bench/bench_parse.o "$DEV/obj/simd-$v.o" -lsimdjson -lm
    done
    lib=$(ldd "$DEV/bin/bench_parse-x86-64-v3" | awk '/libsimdjson/ {print $3}')
    cp "$lib" "$DEV/lib/"
    rm -rf "$DEV/obj"
    # perf and the libraries it needs beside the C library's own (the lent machine may have no
    # perf): for `profile`
    if command -v perf >/dev/null; then
        mkdir -p "$DEV/perf/lib"
        cp "$(command -v perf)" "$DEV/perf/"
        ldd "$(command -v perf)" | awk '$3 ~ /^\// {print $3}' \
            | grep -Ev '/(libc|libm|libpthread|libdl|librt|ld-linux[^/]*)\.so' \
            | while read -r lib; do cp -L "$lib" "$DEV/perf/lib/"; done
    fi
    du -sh "$DEV"
    echo "device.sh: ready; on the device: bash bench/device.sh run (carry .dev)"
}

step() {  # step LIMIT FILE PROGRAM ARGS...: one program, its output to $out/FILE, its tables to stdout
    local limit=$1 file=$2 rc=0
    shift 2
    echo "== $file: $* (limit ${limit}s)"
    local t0=$SECONDS
    timeout "$limit" "$@" > "$out/$file" 2>&1 || rc=$?
    echo "   exit $rc after $((SECONDS - t0)) s"
    grep -E '^\||RATIO|ratio|goal|costs' "$out/$file" | head -60 || true
}

run() {
    out=${OUT:-./device-out}
    mkdir -p "$out"
    [ -x "$DEV/bin/bench_tasks" ] || { echo "device.sh: no $DEV/bin: run 'bash bench/device.sh prepare' first, carry .dev" >&2; exit 1; }
    export LD_LIBRARY_PATH="$PWD/$DEV/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    export BENCH_DIR=${BENCH_DIR:-/tmp}
    {
        date -u; uname -a; nproc
        lscpu 2>/dev/null || grep -m1 'model name' /proc/cpuinfo
        free -g 2>/dev/null || head -3 /proc/meminfo
        df -h "$BENCH_DIR"; (findmnt -T "$BENCH_DIR" 2>/dev/null || grep " / " /proc/mounts)
    } > "$out/machine.txt" 2>&1 || true
    head -20 "$out/machine.txt"
    local parse=bench_parse-x86-64-v3
    grep -qw avx512_vbmi2 /proc/cpuinfo && parse=bench_parse-icelake-server
    step 150 write-kv.txt "$DEV/bin/bench_dataset_write" --only kv --runs 5
    # the default curves, KV tasks of 64 MiB (one shard each) in the arrival layout, then KV tasks
    # of 512 MiB (a shard and more each) in both layouts, then batch processes at N = 8 and 16
    # without an I/O thread each (0.73x at 16 with one)
    step 150 tasks.txt bash -c '"$0" --svg "$1" && "$0" --only kv --kind threads --n 1,4,16 --runs 3 --kv-layout arrival &&
        for l in sorted arrival; do "$0" --only kv --kind threads --n 1,4,16 --mib 512 --runs 3 --kv-layout $l; done &&
        "$0" --only batch --kind processes --n 8,16 --runs 3 --no-io-thread' \
        "$DEV/bin/bench_tasks" "$out/tasks.svg"
    step 50 parse.txt "$DEV/bin/$parse"
    step 50 read.txt "$DEV/bin/bench_dataset_read"
    step 80 write-batch.txt "$DEV/bin/bench_dataset_write" --only batch --runs 3 --mib 2048
    PYTHONUNBUFFERED=1 STS="$PWD/$DEV/bin/sts" step 90 loader.txt python3 examples/python/bench_loader.py --dir "$BENCH_DIR"
    echo "device.sh: done; files in $out"
}

# base REV (here): the KV benchmarks of commit REV into .dev/base, for `ab`
base() {
    local rev=${1:?usage: bash bench/device.sh base REV} wt
    wt=$(mktemp -d)
    git worktree add -f --detach "$wt" "$rev" >/dev/null
    make -s -C "$wt" build/bench/bench_dataset_write build/bench/bench_tasks
    mkdir -p "$DEV/base"
    cp "$wt/build/bench/bench_dataset_write" "$wt/build/bench/bench_tasks" "$DEV/base/"
    git rev-parse --short "$rev" > "$DEV/base/REV"
    git worktree remove --force "$wt"
    echo "device.sh: .dev/base holds $(cat "$DEV/base/REV")'s KV benchmarks"
}

# ab (there): the writers of .dev/base against this tree's (and .dev/alt's, a variant built by
# hand, when there is one), in turn: 3 rounds of bench_dataset_write --only kv --runs 1, and 2 of
# bench_tasks (batch and KV, N = 1 and 16, threads and processes); then this tree's bench_crc32c.
# Full output under $OUT, a summary on stdout.
ab() {
    out=${OUT:-./device-out}
    mkdir -p "$out"
    export BENCH_DIR=${BENCH_DIR:-/tmp}
    local i b builds="base bin"
    [ -x "$DEV/base/bench_tasks" ] || { echo "device.sh: no $DEV/base: bash bench/device.sh base REV first" >&2; exit 1; }
    [ -x "$DEV/alt/bench_tasks" ] && builds="base alt bin"
    echo "ab: base is $(cat "$DEV/base/REV"), bin this tree"
    for i in 1 2 3; do
        for b in $builds; do
            echo "== $b round $i"
            timeout 60 "$DEV/$b/bench_dataset_write" --only kv --runs 1 2>&1 | grep -E 'run 0 ' | cut -c1-330
        done
    done > "$out/ab-kv.txt" 2>&1
    sed -E 's/\(([0-9.]+) GB\/s payload; CPU user ([0-9.]+) \+ sys ([0-9.]+) s(, ([0-9.]+) s of it the caller.s thread; last row taken at ([0-9.]+) s)?.*raw ([0-9.]+) s.*/cpu \2+\3 caller \5 last \6 raw \7/' "$out/ab-kv.txt"
    for i in 1 2; do
        for b in $builds; do
            echo "== $b round $i"
            timeout 90 "$DEV/$b/bench_tasks" --n 1,16 --runs 5 2>&1 | grep -E '^(kv|batch) '
        done
    done > "$out/ab-tasks.txt" 2>&1
    cut -c1-62 "$out/ab-tasks.txt"
    [ -x "$DEV/bin/bench_crc32c" ] && timeout 60 "$DEV/bin/bench_crc32c" --runs 5 2>&1 | tee "$out/crc32c.txt" | grep -E '^\||paths'
}

# profile: where the KV writer's and the 16-task batch writers' time goes, by thread and function
# (perf record of cpu-clock; the report runs there, against that kernel's symbols), and the KV
# writer's timeline without perf. About 2 minutes.
profile() {
    out=${OUT:-./device-out}
    mkdir -p "$out"
    export BENCH_DIR=${BENCH_DIR:-/tmp}
    local perf="$DEV/perf/perf" rep
    export LD_LIBRARY_PATH="$PWD/$DEV/lib:$PWD/$DEV/perf/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    command -v perf >/dev/null && perf=perf
    "$perf" --version || { echo "device.sh: no perf" >&2; exit 1; }
    step 90 kv-timeline.txt "$DEV/bin/bench_dataset_write" --only kv --runs 3
    rep() {  # rep NAME: $BENCH_DIR/NAME.data by thread, then the busiest threads' functions
        local tid all="$BENCH_DIR/$1.txt"
        "$perf" report -i "$BENCH_DIR/$1.data" --no-children -g none --sort pid,sym --stdio > "$all" 2>&1 || true
        "$perf" report -i "$BENCH_DIR/$1.data" --no-children -g none --sort pid --stdio 2>&1 | grep -Ev '^#|^$' | head -24
        for tid in $("$perf" report -i "$BENCH_DIR/$1.data" --no-children -g none --sort pid --stdio 2>/dev/null \
                     | grep -Ev '^#|^$' | head -10 | awk '{split($2, a, ":"); print a[1]}'); do
            echo "-- thread $tid"
            grep -E "^ +[0-9.]+% +$tid:" "$all" | head -16
        done
    }
    timeout 90 "$perf" record -e cpu-clock -F 2000 -o "$BENCH_DIR/kv.data" -- "$DEV/bin/bench_dataset_write" --only kv --runs 1 > "$out/kv-perf-run.txt" 2>&1 || true
    rep kv > "$out/kv-profile.txt" 2>&1 || true
    head -60 "$out/kv-profile.txt"
    timeout 90 "$perf" record -e cpu-clock -F 1000 -o "$BENCH_DIR/tasks.data" -- "$DEV/bin/bench_tasks" --only batch --n 16 --kind threads --runs 3 > "$out/tasks-perf-run.txt" 2>&1 || true
    rep tasks > "$out/tasks-profile.txt" 2>&1 || true
    head -40 "$out/tasks-profile.txt"
    timeout 60 "$perf" record -e cpu-clock -F 4000 -o "$BENCH_DIR/kvtask.data" -- "$DEV/bin/bench_tasks" --only kv --n 1 --kind threads --runs 5 > "$out/kvtask-perf-run.txt" 2>&1 || true
    rep kvtask > "$out/kvtask-profile.txt" 2>&1 || true
    head -30 "$out/kvtask-profile.txt"
    echo "device.sh: done; files in $out"
}

case "${1:-}" in
    prepare) prepare ;;
    run) run ;;
    profile) profile ;;
    base) base "${2:-}" ;;
    ab) ab ;;
    *) echo "usage: bash bench/device.sh prepare|run|profile|base REV|ab" >&2; exit 2 ;;
esac
