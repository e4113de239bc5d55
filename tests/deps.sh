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
[ -f /usr/include/simdjson.h ] || need libsimdjson-dev   # bench_parse's baseline
# make test-gguf-hf installs @huggingface/gguf with npm (it needs node 20 or later)
command -v node >/dev/null 2>&1 || need nodejs
command -v npm >/dev/null 2>&1 || need npm
# libFuzzer and the sanitizer runtimes for clang
if command -v clang >/dev/null 2>&1; then
  d=$(mktemp -d)
  printf '#include <stdint.h>\n#include <stddef.h>\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n){(void)d;(void)n;return 0;}\n' > "$d/f.c"
  clang -fsanitize=fuzzer,address,undefined "$d/f.c" -o "$d/f" >/dev/null 2>&1 || need libclang-rt-dev
  rm -rf "$d"
else
  need libclang-rt-dev
fi
# make test-cross (tests/cross.mk): the cross compilers, qemu-user and cmocka for s390x and arm64
cross=""
for a in s390x:s390x aarch64:arm64; do
  gnu=${a%%:*}; deb=${a#*:}
  command -v "$gnu-linux-gnu-gcc" >/dev/null 2>&1 || cross="$cross gcc-$gnu-linux-gnu"
  [ -e "/usr/lib/$gnu-linux-gnu/libcmocka.so" ] || cross="$cross libcmocka-dev:$deb"
  command -v "qemu-$gnu" >/dev/null 2>&1 || case "$cross" in *qemu-user*) ;; *) cross="$cross qemu-user";; esac
done
[ -z "$missing" ] && [ -z "$cross" ] && exit 0
export DEBIAN_FRONTEND=noninteractive
SUDO=""
[ "$(id -u)" = 0 ] || SUDO="sudo"
if [ -n "$missing" ]; then
  echo "deps: installing$missing"
  $SUDO apt-get update -qq && $SUDO apt-get install -y -qq $missing >/dev/null || {
    echo "deps: apt-get install failed for:$missing" >&2; exit 1; }
fi
[ -z "$cross" ] && exit 0
# The cross part never prompts: root, or sudo without a password. When it cannot install, make
# test-cross skips and says why; under CI=true both fail instead.
cross_fail() {
  echo "deps: $1; make test-cross will skip" >&2
  [ "$CI" = true ] && { echo "deps: CI=true: failing instead" >&2; exit 1; }
  exit 0
}
if [ "$(id -u)" != 0 ]; then
  { command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; } || cross_fail "not installing$cross: needs root or sudo without a password"
  SUDO="sudo -n"
fi
echo "deps: installing$cross (make test-cross)"
added=""
for deb in s390x arm64; do
  [ "$(dpkg --print-architecture)" = "$deb" ] && continue
  dpkg --print-foreign-architectures | grep -qx "$deb" && continue
  $SUDO dpkg --add-architecture "$deb" || cross_fail "dpkg --add-architecture $deb failed"
  added="$added $deb"
done
# A mirror without those architectures fails the update: take back what was added, so that later
# updates keep working.
if ! $SUDO apt-get update -qq; then
  for deb in $added; do $SUDO dpkg --remove-architecture "$deb"; done
  cross_fail "apt-get update failed with the architectures$added added (removed again)"
fi
$SUDO apt-get install -y -qq $cross >/dev/null || cross_fail "apt-get install failed for:$cross"
