# examples/jni/jni.mk - the JNI binding (issue 13): build/jni/libsts_jni.so (examples/jni/sts_jni.c) and
# the Java package io.safetensors.spark.jni (examples/jni/src), tested on a real JVM under -Xcheck:jni.
#   make jni         the library and the classes (needs a JDK: javac on PATH, or JAVA_HOME)
#   make test-jni    a step of `make test`: installs openjdk-17-jdk-headless when javac is missing
#                    (examples/jni/jdk.sh; prints SKIPPED and why when it cannot, fails under CI=true),
#                    then runs the Spark-shaped harness (examples/jni/test) and the numpy cross-check
#   make bench-jni   a step of `make bench`: KV writing through JNI against the same rows from C,
#                    get(key) latency, heap before and after 1 GiB (BENCH_JNI_ARGS=--quick: smaller)
JNI_SRC    := examples/jni
JNI_OUT    := $(BUILD)/jni
# the JDK: JAVA_HOME when it holds include/jni.h, else the JDK that javac on PATH belongs to
# (lazy: test-jni may install it first)
JDK_HOME    = $(or $(patsubst %/include/jni.h,%,$(wildcard $(JAVA_HOME)/include/jni.h)),\
                   $(patsubst %/bin/javac,%,$(realpath $(shell command -v javac 2>/dev/null))))
JAVAC       = $(JDK_HOME)/bin/javac
JAVA        = $(JDK_HOME)/bin/java
JNI_CFLAGS  = -std=c99 $(OPT) $(STS_WARN) -fPIC -shared -fvisibility=hidden -pthread \
              -I$(JDK_HOME)/include -I$(JDK_HOME)/include/linux
JNI_JAVA   := $(wildcard $(JNI_SRC)/src/io/safetensors/spark/jni/*.java)
JNI_TESTS  := $(wildcard $(JNI_SRC)/test/io/safetensors/spark/jni/*.java)
JNI_BENCH  := $(wildcard $(JNI_SRC)/bench/io/safetensors/spark/jni/bench/*.java)
JNI_JVM     = $(JAVA) -Djava.library.path=$(JNI_OUT) -cp $(JNI_OUT)/classes:$(JNI_OUT)/test-classes
BENCH_JNI_ARGS ?=

$(JNI_OUT)/libsts_jni.so: $(JNI_SRC)/sts_jni.c $(HEADER)
	@mkdir -p $(dir $@)
	$(CC) $(JNI_CFLAGS) -o $@ $(JNI_SRC)/sts_jni.c

$(JNI_OUT)/libsts_jni_bench.so: $(JNI_SRC)/bench/bench_jni.c $(HEADER)
	@mkdir -p $(dir $@)
	$(CC) $(JNI_CFLAGS) -o $@ $(JNI_SRC)/bench/bench_jni.c

$(JNI_OUT)/classes.stamp: $(JNI_JAVA)
	@rm -rf $(JNI_OUT)/classes && mkdir -p $(JNI_OUT)/classes
	$(JAVAC) -Xlint:all -Werror -d $(JNI_OUT)/classes $(JNI_JAVA)
	@touch $@

$(JNI_OUT)/test-classes.stamp: $(JNI_TESTS) $(JNI_BENCH) $(JNI_OUT)/classes.stamp
	@rm -rf $(JNI_OUT)/test-classes && mkdir -p $(JNI_OUT)/test-classes
	$(JAVAC) -Xlint:all -Werror -cp $(JNI_OUT)/classes -d $(JNI_OUT)/test-classes $(JNI_TESTS) $(JNI_BENCH)
	@touch $@

.PHONY: jni test-jni jni-check bench-jni jni-bench-run
jni: $(JNI_OUT)/libsts_jni.so $(JNI_OUT)/classes.stamp

# The harness leaves its datasets and what it expects of them in a scratch folder for the numpy
# check, removed afterwards; then README.md's Java example is compiled and run. -Xcheck:jni makes the JVM check every JNI call; its complaints
# ("WARNING in native method: ...", "Warning: Calling other JNI functions in the scope of ...
# Critical", "FATAL ERROR in native method") fail the step even when the tests pass. Child JVMs
# (tasks in other processes) run with the same flag and are checked alike.
jni-check: jni $(JNI_OUT)/test-classes.stamp
	@set -e; d=$$(mktemp -d /tmp/sts-jni.XXXXXX); trap 'rm -rf "$$d"' EXIT INT TERM; \
	$(JNI_JVM) -Xcheck:jni io.safetensors.spark.jni.JniTests "$$d" > "$$d/log" 2>&1 || { cat "$$d/log"; exit 1; }; \
	cat "$$d/log"; \
	if grep -n -i -E 'warning|fatal error' "$$d/log"; then \
	    echo "test-jni: -Xcheck:jni reported JNI misuse (above)"; exit 1; fi; \
	$(PYTHON) $(JNI_SRC)/check_jni.py "$$d"; \
	sh $(JNI_SRC)/readme_example.sh README.md "$$d" $(JAVAC) $(JAVA) $(abspath $(JNI_OUT)/classes) $(abspath $(JNI_OUT))

test-jni:
	@sh $(JNI_SRC)/jdk.sh test-jni; rc=$$?; [ $$rc = 3 ] && exit 0; [ $$rc = 0 ] || exit $$rc; \
	$(MAKE) --no-print-directory jni-check

jni-bench-run: jni $(JNI_OUT)/test-classes.stamp $(JNI_OUT)/libsts_jni_bench.so
	$(JAVA) -Xmx2g -Djava.library.path=$(JNI_OUT) -cp $(JNI_OUT)/classes:$(JNI_OUT)/test-classes \
	    io.safetensors.spark.jni.bench.Bench $(if $(BENCH_DIR),--dir $(BENCH_DIR)) $(BENCH_JNI_ARGS)

bench-jni:
	@sh $(JNI_SRC)/jdk.sh bench-jni; rc=$$?; [ $$rc = 3 ] && exit 0; [ $$rc = 0 ] || exit $$rc; \
	$(MAKE) --no-print-directory jni-bench-run

TEST_STEPS  += test-jni
BENCH_STEPS += bench-jni
