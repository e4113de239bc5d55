#!/usr/bin/env bash
# bench/device.sh - issue 17's benchmarks on the lent 16-core machine, as one short prepared run.
#
# The lent machine has no package registry and no jsmn or simdjson, so the programs are built here
# and travel in .dev/ (ignored by git through .git/info/exclude):
#
#   here:   bash bench/device.sh prepare      builds the five programs into .dev/bin, simdjson's
#                                             library into .dev/lib (about 4 MB in all)
#   there:  device run, carry [".dev"], timeout_s 590:   bash bench/device.sh run
#
# `run` writes each program's output under $OUT (./device-out without it; at most 8 files come
# back) and prints the summary tables. Every step has its own time limit (570 s in all), so one
# that hangs costs its limit and not the lease; the whole run took 4 minutes on the 2-vCPU VM.
#   machine.txt       CPU, memory, the scratch folder's file system
#   write-kv.txt      bench_dataset_write --only kv: 1M KV rows of 1 KiB against raw write() (and +
#                     fsync), the dataset commit of 1M keys, peak RSS
#   write-batch.txt   bench_dataset_write --only batch, 2 GiB: batch F32 and F32 -> BF16
#   tasks.txt/.svg    bench_tasks: N = 1..16 task writers at once, threads and processes, batch
#                     and KV, against N raw writers; the plot
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
PROGS="bench_dataset_write bench_dataset_read bench_tasks"  # and the sts tool, for the loader's packing

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
    step 120 write-kv.txt "$DEV/bin/bench_dataset_write" --only kv --runs 5
    step 120 tasks.txt "$DEV/bin/bench_tasks" --svg "$out/tasks.svg"
    step 60 parse.txt "$DEV/bin/$parse"
    step 60 read.txt "$DEV/bin/bench_dataset_read"
    step 90 write-batch.txt "$DEV/bin/bench_dataset_write" --only batch --runs 3 --mib 2048
    PYTHONUNBUFFERED=1 STS="$PWD/$DEV/bin/sts" step 120 loader.txt python3 examples/python/bench_loader.py --dir "$BENCH_DIR"
    echo "device.sh: done; files in $out"
}

case "${1:-}" in
    prepare) prepare ;;
    run) run ;;
    *) echo "usage: bash bench/device.sh prepare|run" >&2; exit 2 ;;
esac
