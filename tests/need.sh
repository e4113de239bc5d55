# tests/need.sh - sourced by the scripts that make sure a make step's tool is here before it runs
# (examples/jni/jdk.sh, examples/mpi/openmpi.sh, examples/python/torch.sh): what a skip means, and
# installing Debian packages with apt-get as root or with password-less sudo, as tests/deps.sh does.
# The sourcing script sets step (the make step, for messages) and need_tests (what would be lost,
# e.g. "the MPI tests"). Exit codes of those scripts: 0 ready, 3 skipped (the reason printed), 1 a
# skip under CI=true: CI must run every test step, never lose one silently.

# need_skip REASON: exit 3, or 1 under CI=true.
need_skip() {
    if [ "${CI:-}" = true ]; then echo "$step: FAILED: $1 (CI=true: $need_tests may not be skipped)" >&2; exit 1; fi
    echo "$step: SKIPPED: $1"
    exit 3
}
# need_install WHAT PKG...: WHAT is missing; installs the packages (apt-get update, then install) or
# skips saying why. Returns apt-get's status, so that a caller may try other packages.
need_install() {
    what=$1
    shift
    command -v apt-get >/dev/null 2>&1 || need_skip "$what, and no apt-get to install $*"
    need_sudo=""
    if [ "$(id -u)" != 0 ]; then
        { command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; } ||
            need_skip "$what; installing $* needs root or password-less sudo"
        need_sudo="sudo -n"
    fi
    echo "$step: $what; installing $*"
    # make test runs steps two at a time (tests/run_steps.sh): one apt-get at a time, the lock held
    # until the sourcing script exits
    if command -v flock >/dev/null 2>&1; then
        exec 9> "${TMPDIR:-/tmp}/sts-need.lock" && flock -w 1800 9 || need_skip "$what; waited 30 minutes for another step's apt-get"
    fi
    export DEBIAN_FRONTEND=noninteractive
    [ -n "${need_updated:-}" ] || { $need_sudo apt-get update -qq || return 1; need_updated=1; }
    $need_sudo apt-get install -y -qq "$@" >/dev/null
}
