#!/bin/sh
# Installs what `make test` needs when it is missing (fresh Debian). Quiet when all is present.
missing=""
need() { missing="$missing $1"; }
[ -f /usr/include/cmocka.h ] || need libcmocka-dev
/usr/bin/python3 -c 'import numpy' 2>/dev/null || need python3-numpy
/usr/bin/python3 -c 'import jsonschema' 2>/dev/null || need python3-jsonschema
command -v valgrind >/dev/null 2>&1 || need valgrind
command -v clang >/dev/null 2>&1 || need clang
command -v clang++ >/dev/null 2>&1 || need clang
command -v pkg-config >/dev/null 2>&1 || need pkg-config
[ -f /usr/include/jsmn.h ] || need libjsmn-dev
# libFuzzer and the sanitizer runtimes for clang
if command -v clang >/dev/null 2>&1; then
  d=$(mktemp -d)
  printf '#include <stdint.h>\n#include <stddef.h>\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n){(void)d;(void)n;return 0;}\n' > "$d/f.c"
  clang -fsanitize=fuzzer,address,undefined "$d/f.c" -o "$d/f" >/dev/null 2>&1 || need libclang-rt-dev
  rm -rf "$d"
else
  need libclang-rt-dev
fi
[ -z "$missing" ] && exit 0
echo "deps: installing$missing"
SUDO=""
[ "$(id -u)" = 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq && $SUDO apt-get install -y -qq $missing >/dev/null || {
  echo "deps: apt-get install failed for:$missing" >&2; exit 1; }
