#!/bin/sh
# Makes sure Debian's python3 has numpy and torch for `make test-python` and `make bench-python`;
# installs python3-torch (and python3-numpy) through tests/need.sh when `import torch` fails.
# Exit 0: ready. Exit 3: skipped, with the reason printed. Under CI=true a skip is a failure (exit 1).
# usage: torch.sh STEP PYTHON   (STEP names the make step in messages)
step=${1:-test-python}
py=${2:-/usr/bin/python3}
need_tests="the PyTorch tests"
. "$(dirname "$0")/../../tests/need.sh"
ready() { "$py" -c 'import numpy, torch' >/dev/null 2>&1; }
[ -x "$py" ] || need_skip "no $py"
ready && exit 0
need_install "$py cannot import torch" python3-torch python3-numpy || need_skip "apt-get install python3-torch failed"
ready || need_skip "python3-torch is installed, but $py still cannot import torch"
