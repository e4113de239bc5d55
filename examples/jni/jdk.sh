#!/bin/sh
# Makes sure a JDK (javac, java and jni.h) is here for `make test-jni` and `make bench-jni`; on a
# fresh Debian machine installs openjdk-17-jdk-headless through tests/need.sh. Exit 0: ready.
# Exit 3: skipped, with the reason printed. Under CI=true a skip is a failure (exit 1): CI must run
# the JNI tests, never lose them silently.
# usage: jdk.sh STEP   (STEP names the make step in messages: test-jni, bench-jni)
step=${1:-test-jni}
need_tests="the JNI tests"
. "$(dirname "$0")/../../tests/need.sh"
jdk_ok() {  # JAVA_HOME's JDK, or the one javac on PATH belongs to (as jni.mk picks it)
    [ -n "${JAVA_HOME:-}" ] && [ -x "$JAVA_HOME/bin/javac" ] && [ -x "$JAVA_HOME/bin/java" ] &&
        [ -f "$JAVA_HOME/include/jni.h" ] && return 0
    j=$(command -v javac 2>/dev/null) || return 1
    command -v java >/dev/null 2>&1 || return 1
    home=$(dirname "$(dirname "$(readlink -f "$j")")")
    [ -f "$home/include/jni.h" ]
}
jdk_ok && exit 0
# openjdk-17 is Debian 12's JDK; a later Debian may carry only its default JDK (21 or newer)
need_install "no JDK here (javac and jni.h)" openjdk-17-jdk-headless 2>/dev/null ||
    need_install "openjdk-17-jdk-headless is not available" default-jdk-headless ||
    need_skip "apt-get install openjdk-17-jdk-headless (or default-jdk-headless) failed"
jdk_ok || need_skip "a JDK is installed, but javac or jni.h is still missing"
