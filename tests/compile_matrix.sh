#!/usr/bin/env bash
# Compile matrix for safetensors_spark.h: every configuration the header promises to build in,
# each compiled with -Wall -Wextra -Wpedantic -Werror, linked and, where it is a program, run.
#
# Optimisation levels. Every configuration builds at -O0 (the front ends' warnings, the language
# modes, the cuts, the linkage). -O2 is added where the optimiser matters:
#   - gcc and g++ warn from the optimiser (maybe-uninitialized, array-bounds, stringop-*,
#     alloc-size, null-dereference): -O2 wherever the code compiled differs (the implementation
#     in C and in C++, NDEBUG, the three cuts together, two STS_STATIC TUs, each example; and the
#     CLI with STS_STATIC at -O2 and -O3, the CLI and the demo at -O3, the README quick start with
#     STS_STATIC at -O2 and -O3), not
#     where the same implementation text is compiled again with another caller, linkage or
#     allocator call (C11 / C++17, double inclusion, declarations TU + implementation TU, each
#     single cut, the allocator macros, the two quick starts): the C99 / C++11 implementation
#     and the three cuts at -O2 already see that code with the same flags;
#   - clang's warnings come from its front end and do not change with -O: clang and clang++ build
#     -O2 once each (the implementation TU, C99 and C++11), so the smoke run is also optimised.
#
#   tests/compile_matrix.sh            run everything, one PASS/FAIL line per configuration
#
# Environment: MATRIX_GCC MATRIX_GXX MATRIX_CLANG MATRIX_CLANGXX (compilers; defaults gcc, g++,
# $CLANG or clang, clang++), MATRIX_JOBS (parallel compilations; default: the number of CPUs),
# MATRIX_KEEP=1 (keep the work folder), MATRIX_ONLY=ERE (only configurations whose name matches),
# EXAMPLES_MATRIX (the examples to compile; default: what examples/*.mk list, asked of make),
# MATRIX_EXAMPLES_GCC_O2=0 (leave out the examples' gcc -O2 builds: make test sets it, since its
# steps build every example that way: sts in test-build, build/demo in test-demo, sts_mpi in test-mpi).
# Exit status 1 if any configuration fails; a skipped one (a tool missing) is listed as SKIP.
# Helper sources live in tests/matrix/. Run from anywhere; paths are taken from this script.
set -u

ROOT=$(cd "$(dirname "$0")/.." && pwd)
M="$ROOT/tests/matrix"
GCC=${MATRIX_GCC:-gcc}
GXX=${MATRIX_GXX:-g++}
CLANGC=${MATRIX_CLANG:-${CLANG:-clang}}
CLANGXX=${MATRIX_CLANGXX:-clang++}
JOBS=${MATRIX_JOBS:-$(nproc 2>/dev/null || echo 2)}
WARN="-Wall -Wextra -Wpedantic -Werror"
# The levels for a configuration: opts KIND COMPILER, KIND = all (-O0 and -O2 for every compiler)
# or gnu (-O2 for gcc and g++ only); see above.
# KIND none: -O0 only (the same implementation code as an -O2 configuration, with a different caller).
opts() { case $1:$2 in all:*|gnu:gcc|gnu:g++) echo "-O0 -O2" ;; *) echo "-O0" ;; esac; }

W=$(mktemp -d "${TMPDIR:-/tmp}/sts-matrix.XXXXXX") || exit 1
cleanup() { [ "${MATRIX_KEEP:-0}" = 1 ] && echo "work folder kept: $W" || rm -rf "$W"; }
trap cleanup EXIT
mkdir -p "$W/jobs"
start=$(date +%s)

# ---- job table -----------------------------------------------------------------------------
# Each configuration becomes one small bash script in $W/jobs (numbered, so results print in
# order) that runs in its own folder $W/jobs/NNN.d; a nonzero exit marks it FAIL.
n=0
job() {  # job NAME SCRIPT-TEXT
    if [ -n "${MATRIX_ONLY:-}" ] && ! printf '%s\n' "$1" | grep -Eq -- "$MATRIX_ONLY"; then return 0; fi
    n=$((n + 1))
    local id
    id=$(printf '%03d' "$n")
    printf '%s\n' "$1" > "$W/jobs/$id.name"
    {
        printf 'set -eu\ncd %q\nmkdir -p %q\ncd %q\n' "$W/jobs" "$id.d" "$id.d"
        printf 'ROOT=%q M=%q W=%q\n' "$ROOT" "$M" "$W"
        printf '%s\n' "$2"
    } > "$W/jobs/$id.sh"
}
# skip NAME REASON: a configuration that cannot be built here (a tool is missing); reported, not failed
skip() {
    if [ -n "${MATRIX_ONLY:-}" ] && ! printf '%s\n' "$1" | grep -Eq -- "$MATRIX_ONLY"; then return 0; fi
    n=$((n + 1))
    local id
    id=$(printf '%03d' "$n")
    printf '%s\n' "$1" > "$W/jobs/$id.name"
    printf '%s\n' "$2" > "$W/jobs/$id.skip"
}
q() { printf '%q' "$1"; }

# gcc, clang, g++, clang++: the command, and -x c++ for the C++ compilers (the sources are .c)
cc_cmd() { case $1 in gcc) echo "$GCC" ;; clang) echo "$CLANGC" ;; g++) echo "$GXX" ;; clang++) echo "$CLANGXX" ;; esac; }
lang_flag() { case $1 in g++|clang++) echo "-x c++" ;; *) echo "" ;; esac; }

# A program: compile SOURCES into ./prog with COMPILER STD OPT DEFS, then run it with the job
# folder as its argument (a scratch folder for the path-based calls).
program() {  # program NAME COMPILER STD OPT "DEFS" SOURCES...
    local name=$1 comp=$2 std=$3 opt=$4 defs=$5
    shift 5
    local srcs="" s
    for s in "$@"; do srcs="$srcs $(q "$M/$s")"; done
    job "$name" "$(cc_cmd "$comp") -std=$std $opt $WARN -I$(q "$ROOT") $defs $(lang_flag "$comp") $srcs -o prog
./prog \"\$PWD\""
}

# ---- A1. the implementation TU in every language mode ----------------------------------------
# C11 and C++17 compile the same text as C99 and C++11 (the header has no version-dependent code),
# so they build at -O0 only.
for comp in gcc clang g++ clang++; do
    std=c99 newer=c11; case $comp in g++|clang++) std=c++11 newer=c++17 ;; esac
    for opt in $(opts all $comp); do program "impl $std $comp $opt" $comp $std $opt "" impl_main.c; done
    program "impl $newer $comp -O0" $comp $newer -O0 "" impl_main.c
    # release builds: assert() compiles to nothing, so nothing may exist only for an assertion
    for opt in $(opts gnu $comp); do program "impl -DNDEBUG $std $comp $opt" $comp $std $opt "-DNDEBUG" impl_main.c; done
done

# ---- A2. each cut, and all three together, in C99 and C++11 ----------------------------------
# The three cuts replace disjoint code (mmap, stdio, SIMD kernels), so the three together hold every
# fallback the single cuts hold: the optimiser's warnings look at them once, at -O2 with all three.
for cut in "-DSTS_NO_MMAP" "-DSTS_NO_STDIO" "-DSTS_NO_SIMD" "-DSTS_NO_MMAP -DSTS_NO_STDIO -DSTS_NO_SIMD"; do
    kind=none; case $cut in *MMAP*STDIO*SIMD*) kind=gnu ;; esac
    for comp in gcc clang g++ clang++; do
        std=c99; case $comp in g++|clang++) std=c++11 ;; esac
        for opt in $(opts $kind $comp); do program "cut $cut $std $comp $opt" $comp $std $opt "$cut" impl_main.c; done
    done
done

# ---- A3. linkage: two STS_STATIC TUs, double include, declarations-only TU -------------------
# STS_STATIC changes linkage, and so what gcc may inline: -O2 for gcc and g++. The other cases
# compile the implementation text of A1 again and ask a linkage question: -O0.
for comp in gcc clang g++ clang++; do
    std=c99; case $comp in g++|clang++) std=c++11 ;; esac
    for opt in $(opts gnu $comp); do program "two STS_STATIC TUs $std $comp $opt" $comp $std $opt "" static_a.c static_b.c static_main.c; done
    program "include twice with STS_IMPLEMENTATION $std $comp -O0" $comp $std -O0 "" twice.c
    program "include plain, then with STS_IMPLEMENTATION $std $comp -O0" $comp $std -O0 "" decl_then_impl.c
    case $comp in gcc|clang) program "declarations TU + implementation TU c99 $comp -O0" $comp c99 -O0 "" user.c lib.c ;; esac
done
# STS_STATIC lets gcc inline public functions into their callers, and -O3 inlines more, so the
# optimiser's warnings (maybe-uninitialized) follow each caller's paths: the CLI, which calls
# nearly every public function, with STS_STATIC at -O2 and -O3 and plain at -O3, and the demo
# plain at -O3 (release builds of programs that embed the header; compiled only: other steps run
# them built as usual).
for v in "examples/sts.c:-DSTS_STATIC:-O2" "examples/sts.c:-DSTS_STATIC:-O3" "examples/sts.c::-O3" \
         "examples/demo.c::-O3"; do
    src=${v%%:*} rest=${v#*:}
    def=${rest%%:*} opt=${rest#*:}
    job "${def:+STS_STATIC }${src#examples/} c99 gcc $opt" \
        "$GCC -std=c99 $opt $WARN $def -pthread -I$(q "$ROOT") $(q "$ROOT/$src") -o prog"
done
# C++ user of a C-compiled implementation: the declarations' extern "C" block must match.
job "C++ declarations TU + C implementation TU g++/gcc -O0" \
    "$GCC -std=c99 -O0 $WARN -I$(q "$ROOT") -c $(q "$M/lib.c") -o lib.o
$GXX -std=c++11 -O0 $WARN -I$(q "$ROOT") -x c++ -c $(q "$M/user.c") -o user.o
$GXX user.o lib.o -o prog
./prog \"\$PWD\""

# ---- A4. allocator macros: all three work; any proper subset is an #error -------------------
for comp in gcc clang g++ clang++; do
    std=c99; case $comp in g++|clang++) std=c++11 ;; esac
    for opt in $(opts none $comp); do program "STS_MALLOC+STS_REALLOC+STS_FREE $std $comp $opt" $comp $std $opt "" alloc_all.c; done
done
for subset in "-DWANT_MALLOC" "-DWANT_REALLOC" "-DWANT_FREE" "-DWANT_MALLOC -DWANT_REALLOC" "-DWANT_REALLOC -DWANT_FREE"; do
    for comp in gcc g++; do
        std=c99; [ $comp = g++ ] && std=c++11
        job "only $subset must fail to compile ($comp)" \
            "if $(cc_cmd $comp) -std=$std $WARN -I$(q "$ROOT") $subset $(lang_flag $comp) -c $(q "$M/alloc_partial.c") -o x.o 2>err.txt; then
  echo 'compiled, but the header must refuse a partial set of allocator macros'; exit 1
fi
grep -q 'define all of STS_MALLOC, STS_REALLOC and STS_FREE' err.txt || { echo 'failed, but not with the #error:'; cat err.txt; exit 1; }"
    done
done

# ---- A5. the header's quick start, extracted verbatim ----------------------------------------
# The lines between a line ">>quickstart" and a line "<<quickstart" (anchors alone on their line,
# so a table of contents may mention them), minus their 6-space indentation.
QS="$W/quickstart.c"
awk '/^[ \t]*>>quickstart[ \t]*$/ { on = 1; next } /^[ \t]*<<quickstart[ \t]*$/ { on = 0 } on' "$ROOT/safetensors_spark.h" > "$W/qs.raw"
qs_ok=1
if [ ! -s "$W/qs.raw" ] || grep -qv '^      \|^ *$' "$W/qs.raw"; then qs_ok=0; fi
sed 's/^      //' "$W/qs.raw" > "$QS"
for comp in gcc clang g++ clang++; do
    for opt in $(opts none $comp); do
        std=c99; case $comp in g++|clang++) std=c++11 ;; esac
        if [ $qs_ok = 1 ]; then
            job "header quick start $std $comp $opt" \
                "$(cc_cmd $comp) -std=$std $opt $WARN -I$(q "$ROOT") $(lang_flag $comp) $(q "$QS") -o prog
./prog > out.txt
cat out.txt
# names are (pointer, length), not C strings: printing one with %s shows the header's JSON
if grep -q 'dtype.:' out.txt; then echo 'the output shows raw header JSON: a name printed with %s (not NUL-terminated)'; exit 1; fi"
        else
            job "header quick start $std $comp $opt" "echo 'no >>quickstart block, or a line not indented by 6 spaces'; exit 1"
        fi
    done
done

# ---- A6. the README quick start: the first \`\`\`c block after "## Quick start" -------------------
RQ="$W/readme_quickstart.c"
awk '/^## Quick start/ { sec = 1; next }
     sec && !done && /^```c *$/ { on = 1; next }
     on && /^```/ { on = 0; done = 1 }
     on' "$ROOT/README.md" > "$RQ"
# A valid model holding lm_head.weight (the tensor the README looks up), written by the library.
if [ -s "$RQ" ] && "$GCC" -std=c99 -O0 $WARN -I"$ROOT" "$M/mkmodel.c" -o "$W/mkmodel" 2> "$W/mkmodel.log" &&
   "$W/mkmodel" "$W/model.safetensors" >> "$W/mkmodel.log" 2>&1; then
    for comp in gcc clang g++ clang++; do
        for opt in $(opts none $comp); do
            std=c99; case $comp in g++|clang++) std=c++11 ;; esac
            job "README quick start $std $comp $opt" \
                "$(cc_cmd $comp) -std=$std $opt $WARN -I$(q "$ROOT") $(lang_flag $comp) $(q "$RQ") -o prog
./prog $(q "$W/model.safetensors") > out.txt
cat out.txt
grep -q 'lm_head.weight' out.txt || { echo 'lm_head.weight is not listed'; exit 1; }
grep -q 'model.embed_tokens.weight' out.txt || { echo 'model.embed_tokens.weight is not listed'; exit 1; }
if grep -q 'dtype.:' out.txt; then echo 'the output shows raw header JSON: a name printed with %s'; exit 1; fi
# and its error path: a missing file is reported with a nonzero exit
if ./prog \"\$PWD/missing.safetensors\" 2>err.txt; then echo 'a missing file was not reported'; exit 1; fi
test -s err.txt"
        done
    done
    # what a user's release build asks of it: gcc -O2 and -O3 with STS_STATIC (the optimiser's
    # warnings follow the quick start's own paths through sts_open; compiled only)
    for opt in -O2 -O3; do
        job "README quick start STS_STATIC c99 gcc $opt" "$GCC -std=c99 $opt $WARN -DSTS_STATIC -I$(q "$ROOT") $(q "$RQ") -o prog"
    done
else
    job "README quick start" "echo 'no \`\`\`c block after ## Quick start in README.md, or mkmodel failed:'; cat $(q "$W/mkmodel.log"); exit 1"
fi

# ---- A7. the examples listed by examples/*.mk (EXAMPLES_MATRIX), as the Makefile builds them ----
# Entries SOURCE[:NEEDS[:FLAGS]] (see examples/examples.mk): NEEDS are commands that must be on PATH
# (comma-separated; where one is missing the example is skipped, and said so), FLAGS extra compile
# flags with commas for spaces. Run by hand, the list is asked of make. An example that needs mpicc is
# compiled by gcc and clang like the others, given the MPI wrapper's flags (OpenMPI's --showme:compile
# and --showme:link; another wrapper's -show, its compiler's name dropped).
if [ -z "${EXAMPLES_MATRIX+set}" ]; then
    EXAMPLES_MATRIX=$(make -s --no-print-directory -C "$ROOT" print-examples-matrix) ||
        { echo "matrix: could not get EXAMPLES_MATRIX from make print-examples-matrix"; exit 1; }
fi
for entry in $EXAMPLES_MATRIX; do
    src=${entry%%:*}
    rest=${entry#"$src"}; rest=${rest#:}
    needs=${rest%%:*}
    flags=${rest#"$needs"}; flags=${flags#:}; flags=${flags//,/ }
    missing=""
    for tool in ${needs//,/ }; do command -v "$tool" > /dev/null 2>&1 || missing="$missing $tool"; done
    if [ -n "$missing" ]; then skip "example ${src#examples/}" "needs$missing (not on PATH)"; continue; fi
    libs=""
    case ",$needs," in *,mpicc,*)
        if mc=$(mpicc --showme:compile 2>/dev/null) && ml=$(mpicc --showme:link 2>/dev/null); then
            flags="$flags $mc"; libs=$ml
        else ms=$(mpicc -show 2>/dev/null); libs=${ms#* }; fi ;;
    esac
    for comp in gcc clang; do
        for opt in $(opts gnu $comp); do
            # under make test the steps build each example with gcc -O2 and these flags themselves
            if [ "${MATRIX_EXAMPLES_GCC_O2:-1}" = 0 ] && [ "$comp:$opt" = gcc:-O2 ]; then continue; fi
            job "example ${src#examples/} c99 $comp $opt" \
                "$(cc_cmd "$comp") -std=c99 $opt -g $WARN -I$(q "$ROOT") $flags $(q "$ROOT/$src") $libs -o prog"
        done
    done
done

# ---- run ------------------------------------------------------------------------------------
for c in "$GCC" "$GXX" "$CLANGC" "$CLANGXX"; do
    command -v "$c" > /dev/null 2>&1 || echo "matrix: compiler $c not found (its configurations will fail)"
done
[ "$n" -gt 0 ] || { echo "matrix: no configuration selected"; exit 1; }
# The -O2 and -O3 builds (about five times an -O0 build) start first, so that no CPU idles at the end.
for f in $(grep -l -e '-O[23]' "$W"/jobs/*.name) $(grep -L -e '-O[23]' "$W"/jobs/*.name); do
    [ -e "${f%.name}.sh" ] && echo "${f%.name}.sh"
done | xargs -r -P "$JOBS" -n 1 bash -c 'bash "$0" > "${0%.sh}.log" 2>&1; echo $? > "${0%.sh}.rc"'

pass=0 fail=0 skipped=0
for s in "$W"/jobs/*.name; do
    b=${s%.name}
    name=$(cat "$b.name")
    if [ -e "$b.skip" ]; then
        skipped=$((skipped + 1)); printf 'SKIP  %s: %s\n' "$name" "$(cat "$b.skip")"
    elif [ "$(cat "$b.rc" 2>/dev/null)" = 0 ]; then
        pass=$((pass + 1)); printf 'PASS  %s\n' "$name"
    else
        fail=$((fail + 1)); printf 'FAIL  %s\n' "$name"
        sed 's/^/      | /' "$b.log" | head -n 40
    fi
done
printf 'matrix: %d passed, %d failed, %d skipped, %d configurations in %ds (%s jobs)\n' \
    "$pass" "$fail" "$skipped" "$n" "$(( $(date +%s) - start ))" "$JOBS"
[ "$fail" = 0 ]
