#!/usr/bin/env bash
# The programs of README.md's API tour, compiled and run (tests/test_cli.sh: `readme_tour c|c++`).
#
#   bash tests/cli/readme_tour.sh README.md c|c++
#
# Every ```c block between "## API tour" and the next "## " heading is a complete program. Each is
# compiled as C99 ($CC, default cc) or C++11 ($CXX -x c++, default c++) with -Wall -Wextra
# -Wpedantic -Werror against the header beside README.md, then run, in README order, in one
# folder (tour_c/ or tour_c++/ under the current folder) so that a later program reads what an
# earlier one wrote (they compile side by side first, one a CPU). Prints each program's output; exit 1
# at the first that does not build or run.
set -u
lang=$2
root=$(cd "$(dirname "$1")" && pwd) || exit 2
readme=$root/$(basename "$1")
case $lang in
    c) compile=("${CC:-cc}" -std=c99) ;;
    c++) compile=("${CXX:-c++}" -x c++ -std=c++11) ;;
    *) echo "readme_tour: c or c++, not $lang" >&2; exit 2 ;;
esac
dir=tour_$lang
mkdir -p "$dir" && cd "$dir" || exit 2
awk '/^## API tour/ { sec = 1; next }
     /^## / { sec = 0 }
     sec && /^```c *$/ { on = 1; n++; f = sprintf("prog%d.c", n); printf "" > f; next }
     on && /^```/ { on = 0; next }
     on { print > f }' "$readme"
progs=(prog*.c)
[ -e "${progs[0]}" ] || { echo "readme_tour: no \`\`\`c block under ## API tour in $readme"; exit 1; }
# The programs compile side by side (each compiles the whole implementation), then run in order.
jobs=$(nproc 2>/dev/null || echo 2)
for i in $(seq 1 ${#progs[@]}); do
    while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n; done
    { "${compile[@]}" -O0 -Wall -Wextra -Wpedantic -Werror -pthread -I"$root" "prog$i.c" -o "prog$i" > "build$i.log" 2>&1
      echo $? > "build$i.rc"; } &
done
wait
for i in $(seq 1 ${#progs[@]}); do
    echo "--- program $i of ${#progs[@]} ($lang)"
    cat "build$i.log"
    if [ "$(cat "build$i.rc")" != 0 ]; then echo "readme_tour: program $i does not build as $lang"; exit 1; fi
    ./"prog$i" 2>&1 || { echo "readme_tour: program $i exited with $?"; exit 1; }
done
