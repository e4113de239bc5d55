#!/bin/sh
# Makes sure Debian's python3 has numpy and torch for `make test-python` and `make bench-python`;
# installs python3-torch (and python3-numpy) with apt-get when `import torch` fails, as root or
# with password-less sudo, as examples/jni/jdk.sh does for the JDK. Exit 0: ready. Exit 3:
# skipped, with the reason printed. Under CI=true a skip is a failure (exit 1).
# usage: torch.sh STEP PYTHON   (STEP names the make step in messages)
step=${1:-test-python}
py=${2:-/usr/bin/python3}
skip() {
    if [ "${CI:-}" = true ]; then echo "$step: FAILED: $1 (CI=true: the PyTorch tests may not be skipped)" >&2; exit 1; fi
    echo "$step: SKIPPED: $1"
    exit 3
}
ready() { "$py" -c 'import numpy, torch' >/dev/null 2>&1; }
[ -x "$py" ] || skip "no $py"
ready && exit 0
command -v apt-get >/dev/null 2>&1 || skip "$py cannot import torch, and there is no apt-get to install python3-torch"
SUDO=""
if [ "$(id -u)" != 0 ]; then
    command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null ||
        skip "$py cannot import torch; installing python3-torch needs root or password-less sudo"
    SUDO="sudo -n"
fi
echo "$step: $py cannot import torch; installing python3-torch"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq && $SUDO apt-get install -y -qq python3-torch python3-numpy >/dev/null ||
    skip "apt-get install python3-torch failed"
ready || skip "python3-torch is installed, but $py still cannot import torch"
