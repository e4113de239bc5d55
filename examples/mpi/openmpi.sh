#!/bin/sh
# Makes sure MPI (mpicc and mpirun) is here for `make test-mpi` and `make bench-mpi`; on a fresh
# Debian machine installs Debian's OpenMPI (openmpi-bin libopenmpi-dev) through tests/need.sh.
# Exit 0: ready. Exit 3: skipped, with the reason printed. Under CI=true a skip is a failure (exit 1).
# usage: openmpi.sh STEP   (STEP names the make step in messages: test-mpi, bench-mpi)
step=${1:-test-mpi}
need_tests="the MPI tests"
. "$(dirname "$0")/../../tests/need.sh"
mpi_ok() { command -v mpicc >/dev/null 2>&1 && command -v mpirun >/dev/null 2>&1; }
mpi_ok && exit 0
need_install "no MPI (mpicc, mpirun)" openmpi-bin libopenmpi-dev ||
    need_skip "apt-get install openmpi-bin libopenmpi-dev failed"
mpi_ok || need_skip "openmpi-bin and libopenmpi-dev are installed, but mpicc or mpirun is still missing"
