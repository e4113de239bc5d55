#!/bin/sh
# Makes sure MPI (mpicc and mpirun) is here for `make test-mpi` and `make bench-mpi`; on a fresh
# Debian machine installs Debian's OpenMPI (openmpi-bin libopenmpi-dev: apt-get, with sudo when not
# root, as tests/deps.sh does). Exit 0: ready. Exit 3: skipped, with the reason printed. Under
# CI=true a skip is a failure (exit 1): CI must run the MPI tests, never lose them silently.
# usage: openmpi.sh STEP   (STEP names the make step in messages: test-mpi, bench-mpi)
step=${1:-test-mpi}
mpi_ok() { command -v mpicc >/dev/null 2>&1 && command -v mpirun >/dev/null 2>&1; }
skip() {
    if [ "${CI:-}" = true ]; then echo "$step: FAILED: $1 (CI=true: the MPI tests may not be skipped)" >&2; exit 1; fi
    echo "$step: SKIPPED: $1"
    exit 3
}
mpi_ok && exit 0
command -v apt-get >/dev/null 2>&1 ||
    skip "no MPI (mpicc, mpirun), and no apt-get to install openmpi-bin libopenmpi-dev"
SUDO=""
if [ "$(id -u)" != 0 ]; then
    command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null ||
        skip "no MPI (mpicc, mpirun); installing openmpi-bin libopenmpi-dev needs root or password-less sudo"
    SUDO="sudo -n"
fi
echo "$step: no MPI here; installing openmpi-bin libopenmpi-dev"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq && $SUDO apt-get install -y -qq openmpi-bin libopenmpi-dev >/dev/null ||
    skip "apt-get install openmpi-bin libopenmpi-dev failed"
mpi_ok || skip "openmpi-bin and libopenmpi-dev are installed, but mpicc or mpirun is still missing"
