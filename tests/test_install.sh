#!/bin/sh
# make install / make uninstall into a temporary prefix (and a DESTDIR staging run):
#   - install puts include/safetensors_spark.h, bin/sts and lib/pkgconfig/safetensors_spark.pc there;
#   - `pkg-config --cflags safetensors_spark` (PKG_CONFIG_PATH=$prefix/lib/pkgconfig) is enough to
#     build a program that defines STS_IMPLEMENTATION and includes <safetensors_spark.h>; the program
#     writes a .safetensors file and reads it back;
#   - the installed bin/sts runs (--version matches the header's STS_VERSION_STRING);
#   - uninstall removes the three files and nothing else.
# Usage: sh tests/test_install.sh   (from anywhere; CC defaults to cc). Exit 0 on success, 1 on a failure.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CC=${CC:-cc}
MAKE=${MAKE:-make}
T=$(mktemp -d "${TMPDIR:-/tmp}/sts-install.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT INT TERM
fails=0
ok()   { echo "ok   $1"; }
bad()  { echo "FAIL $1"; fails=$((fails + 1)); }
want() { if eval "$2"; then ok "$1"; else bad "$1"; fi; }

VERSION=$(sed -n 's/^#define STS_VERSION_STRING "\(.*\)"/\1/p' "$ROOT/safetensors_spark.h")
P=$T/prefix
FILES="include/safetensors_spark.h bin/sts lib/pkgconfig/safetensors_spark.pc"

# ---- install ---------------------------------------------------------------------------------
if ! "$MAKE" -C "$ROOT" --no-print-directory install PREFIX="$P" > "$T/install.log" 2>&1; then
    cat "$T/install.log"; bad "make install PREFIX=$P"; exit 1
fi
ok "make install PREFIX=<tmp>/prefix"
for f in $FILES; do want "installed $f" "[ -f '$P/$f' ]"; done
want "bin/sts is executable" "[ -x '$P/bin/sts' ]"
want "include/safetensors_spark.h is the repository's header" "cmp -s '$ROOT/safetensors_spark.h' '$P/include/safetensors_spark.h'"
want "the .pc file names the prefix and version $VERSION" \
     "grep -qx 'prefix=$P' '$P/lib/pkgconfig/safetensors_spark.pc' && grep -qx 'Version: $VERSION' '$P/lib/pkgconfig/safetensors_spark.pc'"
want "the .pc file has no @placeholders@ left" "! grep -q '@' '$P/lib/pkgconfig/safetensors_spark.pc'"

# ---- pkg-config and a program built against the installed header ------------------------------
PKG_CONFIG_PATH=$P/lib/pkgconfig
export PKG_CONFIG_PATH
CFLAGS_PC=$(pkg-config --cflags safetensors_spark 2>"$T/pc.err")
rc=$?
CFLAGS_PC=${CFLAGS_PC%" "}   # pkg-config ends the line with a space
want "pkg-config --cflags safetensors_spark (exit 0, -I<prefix>/include)" "[ $rc = 0 ] && [ \"\$CFLAGS_PC\" = '-I$P/include' ]"
[ $rc = 0 ] || cat "$T/pc.err"
want "pkg-config --modversion safetensors_spark is $VERSION" "[ \"\$(pkg-config --modversion safetensors_spark)\" = '$VERSION' ]"
LIBS_PC=$(pkg-config --libs safetensors_spark)

mkdir "$T/app"
cat > "$T/app/app.c" <<'EOF'
/* A user's program: the installed single header, found through pkg-config only. */
#define STS_IMPLEMENTATION
#include <safetensors_spark.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
    float w[6] = {1.5f, -2.0f, 3.25f, 0.0f, 1e-3f, 6.0f};
    int64_t ids[3] = {7, -8, 9};
    uint64_t ws[2] = {2, 3}, is[1] = {3};
    sts_tensor_spec s[2];
    sts_kv meta = {"format", 6, "pt", 2};
    sts_file *f;
    sts_error e;
    const sts_tensor *t;
    if (argc != 2) return 2;
    memset(s, 0, sizeof s);
    s[0].name = "weight"; s[0].name_len = 6; s[0].dtype = STS_DTYPE_F32; s[0].rank = 2; s[0].shape = ws;
    s[0].data = w; s[0].data_size = sizeof w;
    s[1].name = "ids"; s[1].name_len = 3; s[1].dtype = STS_DTYPE_I64; s[1].rank = 1; s[1].shape = is;
    s[1].data = ids; s[1].data_size = sizeof ids;
    if (sts_write_path(argv[1], s, 2, &meta, 1, NULL, &e) != STS_OK) { fprintf(stderr, "write: %s\n", e.message); return 1; }
    if (sts_open(argv[1], NULL, &f, &e) != STS_OK) { fprintf(stderr, "open: %s\n", e.message); return 1; }
    if (sts_count(f) != 2 || !(t = sts_find(f, "weight", 6)) || t->dtype != STS_DTYPE_F32 || t->rank != 2 ||
        memcmp(sts_data(f, t), w, sizeof w) != 0 || !(t = sts_find(f, "ids", 3)) || memcmp(sts_data(f, t), ids, sizeof ids) != 0) {
        fprintf(stderr, "read back wrong\n");
        sts_close(f);
        return 1;
    }
    printf("%s %s: %zu tensors, %llu bytes\n", STS_VERSION_STRING, argv[1], sts_count(f), (unsigned long long)sts_file_size(f));
    sts_close(f);
    return 0;
}
EOF
# shellcheck disable=SC2086 # the flags are words
if (cd "$T/app" && $CC -std=c99 -Wall -Wextra -Wpedantic -Werror $CFLAGS_PC -o app app.c $LIBS_PC) > "$T/cc.log" 2>&1; then
    ok "$CC -std=c99 \$(pkg-config --cflags safetensors_spark) app.c"
    out=$(cd "$T/app" && ./app t.safetensors 2>&1); rc=$?
    want "the program writes and reads t.safetensors ($out)" "[ $rc = 0 ] && printf '%s\\n' \"\$out\" | grep -qx '$VERSION t.safetensors: 2 tensors, [0-9]* bytes'"
    want "the installed sts verifies the program's file" "'$P/bin/sts' verify --strict '$T/app/t.safetensors' > /dev/null"
else
    cat "$T/cc.log"; bad "$CC -std=c99 \$(pkg-config --cflags safetensors_spark) app.c"
fi
want "without pkg-config's flags the header is not found (the test proves something)" \
     "! (cd '$T/app' && $CC -std=c99 -c -o /dev/null app.c) >/dev/null 2>&1"
v=$("$P/bin/sts" --version 2>&1); rc=$?
want "installed bin/sts --version prints 'sts $VERSION' ($v)" "[ $rc = 0 ] && [ \"\$v\" = 'sts $VERSION' ]"

# ---- uninstall ---------------------------------------------------------------------------------
echo keep > "$P/bin/other-tool"
if "$MAKE" -C "$ROOT" --no-print-directory uninstall PREFIX="$P" > "$T/uninstall.log" 2>&1; then
    ok "make uninstall PREFIX=<tmp>/prefix"
else
    cat "$T/uninstall.log"; bad "make uninstall PREFIX=$P"
fi
for f in $FILES; do want "uninstall removed $f" "[ ! -e '$P/$f' ]"; done
want "uninstall left other files alone" "[ -f '$P/bin/other-tool' ]"
want "pkg-config no longer finds safetensors_spark" "! pkg-config --exists safetensors_spark"

# ---- DESTDIR staging: files under DESTDIR, the .pc file names the final prefix ------------------
S=$T/stage
if "$MAKE" -C "$ROOT" --no-print-directory install DESTDIR="$S" PREFIX=/opt/sts > "$T/stage.log" 2>&1; then
    for f in $FILES; do want "DESTDIR install staged /opt/sts/$f" "[ -f '$S/opt/sts/$f' ]"; done
    want "the staged .pc file says prefix=/opt/sts" "grep -qx 'prefix=/opt/sts' '$S/opt/sts/lib/pkgconfig/safetensors_spark.pc'"
    "$MAKE" -C "$ROOT" --no-print-directory uninstall DESTDIR="$S" PREFIX=/opt/sts > /dev/null 2>&1
    for f in $FILES; do want "DESTDIR uninstall removed /opt/sts/$f" "[ ! -e '$S/opt/sts/$f' ]"; done
else
    cat "$T/stage.log"; bad "make install DESTDIR=<tmp>/stage PREFIX=/opt/sts"
fi

if [ "$fails" = 0 ]; then echo "test_install: all checks passed"; exit 0; fi
echo "test_install: $fails checks failed"
exit 1
