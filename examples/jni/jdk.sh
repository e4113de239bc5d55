#!/bin/sh
# Makes sure a JDK (javac, java and jni.h) is here for `make test-jni` and `make bench-jni`; on a
# fresh Debian machine installs openjdk-17-jdk-headless (apt-get, with sudo when not root, as
# tests/deps.sh does). Exit 0: ready. Exit 3: skipped, with the reason printed. Under CI=true a
# skip is a failure (exit 1): CI must run the JNI tests, never lose them silently.
# usage: jdk.sh STEP   (STEP names the make step in messages: test-jni, bench-jni)
step=${1:-test-jni}
jdk_ok() {  # JAVA_HOME's JDK, or the one javac on PATH belongs to (as jni.mk picks it)
    [ -n "${JAVA_HOME:-}" ] && [ -x "$JAVA_HOME/bin/javac" ] && [ -x "$JAVA_HOME/bin/java" ] &&
        [ -f "$JAVA_HOME/include/jni.h" ] && return 0
    j=$(command -v javac 2>/dev/null) || return 1
    command -v java >/dev/null 2>&1 || return 1
    home=$(dirname "$(dirname "$(readlink -f "$j")")")
    [ -f "$home/include/jni.h" ]
}
skip() {
    if [ "${CI:-}" = true ]; then echo "$step: FAILED: $1 (CI=true: the JNI tests may not be skipped)" >&2; exit 1; fi
    echo "$step: SKIPPED: $1"
    exit 3
}
jdk_ok && exit 0
command -v apt-get >/dev/null 2>&1 || skip "no JDK (javac and jni.h), and no apt-get to install openjdk-17-jdk-headless"
SUDO=""
if [ "$(id -u)" != 0 ]; then
    command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null ||
        skip "no JDK (javac and jni.h); installing openjdk-17-jdk-headless needs root or password-less sudo"
    SUDO="sudo -n"
fi
echo "$step: no JDK here; installing openjdk-17-jdk-headless"
export DEBIAN_FRONTEND=noninteractive
# openjdk-17 is Debian 12's JDK; a later Debian may carry only its default JDK (21 or newer)
$SUDO apt-get update -qq && { $SUDO apt-get install -y -qq openjdk-17-jdk-headless >/dev/null 2>&1 ||
    $SUDO apt-get install -y -qq default-jdk-headless >/dev/null; } ||
    skip "apt-get install openjdk-17-jdk-headless (or default-jdk-headless) failed"
jdk_ok || skip "openjdk-17-jdk-headless is installed, but javac or jni.h is still missing"
