# safetensors_spark.h build.  make | make test | make demo | make fuzz | make bench | make install PREFIX=...
# Areas add themselves through fragments (examples/*.mk and examples/*/*.mk, tests/*.mk, fuzz/*.mk,
# bench/*.mk); each fragment appends its phony steps to TEST_STEPS, FUZZ_STEPS or BENCH_STEPS.
# The sts tool and the demo are built by examples/examples.mk.

CC       ?= cc
CXX      ?= c++
CLANG    ?= clang
OPT      ?= -O2 -g
STS_WARN := -Wall -Wextra -Wpedantic -Werror
PYTHON   := /usr/bin/python3
BUILD    := build
PREFIX   ?= /usr/local
FUZZ_SECONDS ?= 60
JOBS     ?= $(shell nproc 2>/dev/null || echo 2)
HEADER   := safetensors_spark.h
VERSION  := $(shell sed -n 's/^\#define STS_VERSION_STRING "\(.*\)"/\1/p' safetensors_spark.h)

TEST_STEPS  :=
FUZZ_STEPS  :=
BENCH_STEPS :=

# ---- unit-test programs --------------------------------------------------------------------------
# A fragment lists its C test programs in UNIT_SRCS (tests/test_*.c). Each is a standalone program
# (cmocka or plain) run from the repository root, exiting 0 on success. They run three ways:
#   test-unit      -O2, full strength
#   test-asan      ASan + UBSan (clang, -O0), STS_TEST_LEVEL=quick
#   test-valgrind  valgrind memcheck, zero errors and zero leaks, STS_TEST_LEVEL=quick
# Under STS_TEST_LEVEL=quick, exhaustive loops (2^32 codec sweeps, ...) shrink to samples.
UNIT_SRCS   :=
UNIT_LIBS   := -lcmocka -lm -lpthread
# -O0: every load and store keeps its ASan check and every UBSan check stays (UBSan's object-size
# check needs the optimiser, but each out-of-bounds byte it could see is an ASan report anyway);
# clang builds ASan + UBSan code about five times faster at -O0 than at -O1, the quick runs take
# a few seconds longer. The optimised code runs in test-unit (-O2) and test-valgrind (-O1).
ASAN_FLAGS  := -O0 -g -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
# ThreadSanitizer (test-tsan-read in tests/dataset_read.mk, test-tsan-write in tests/dataset_write.mk)
TSAN_FLAGS  := -O1 -g -fsanitize=thread -fno-omit-frame-pointer
TSAN_ENV    := TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1"

.PHONY: all test demo fuzz bench deps install uninstall clean
all: sts

$(BUILD):
	@mkdir -p $(BUILD)

# Installs what the suite needs on a fresh Debian machine (cmocka, numpy, valgrind, clang, ...).
deps:
	@sh tests/deps.sh

include $(sort $(wildcard examples/*.mk)) $(sort $(wildcard examples/*/*.mk))
include $(sort $(wildcard tests/*.mk))
include $(sort $(wildcard fuzz/*.mk))
include $(sort $(wildcard bench/*.mk))

UNIT_BINS  = $(patsubst tests/%.c,$(BUILD)/unit/%,$(UNIT_SRCS))
ASAN_BINS  = $(patsubst tests/%.c,$(BUILD)/asan/%,$(UNIT_SRCS))
VG_BINS    = $(patsubst tests/%.c,$(BUILD)/vg/%,$(UNIT_SRCS))

# The test programs that link the implementation compiled once per build kind (tests/sts_impl.c,
# $(BUILD)/<kind>/sts_impl.o) rather than compiling all of it again: those that use no internals
# (sts__*) and define no configuration macro. Compiling the implementation is nearly all of a test
# program's build time, so this halves the suite's. The others compile it in, as users do, with
# STS_STATIC (below).
LINKED_TESTS := test_archive test_archive_threads test_conformance test_core_alloc test_core_io \
                test_core_roundtrip test_dataset_assign test_dataset_jobs test_dataset_read \
                test_dataset_read_errors test_dataset_read_hf test_dataset_read_pushdown \
                test_dataset_read_threads test_dataset_write_batch test_dataset_write_commit \
                test_dataset_write_crash test_dataset_write_io test_dataset_write_kv dataset_gen \
                test_gguf test_gguf_write test_lineage
# STS_STATIC (a configuration the header supports) makes every public function static, so the
# compiler builds only what the program reaches: a white-box test of one layer no longer compiles
# all of them (gcc -O2 -g: 12.5 s -> 2-11 s a program), and gcc's optimiser warnings (-Werror) are
# checked under STS_STATIC along the paths these programs take (two in the header were found that
# way). The whole implementation is still compiled, with external linkage, into sts_impl.o.
# $(call sts_linked_flag,NAME): -DSTS_TEST_LINKED for a linked program, else -DSTS_STATIC.
# $(call sts_linked_obj,NAME,OBJECT): the object for a linked program, else nothing.
sts_linked_flag = $(if $(filter $(1),$(LINKED_TESTS)),-DSTS_TEST_LINKED,-DSTS_STATIC)
sts_linked_obj = $(if $(filter $(1),$(LINKED_TESTS)),$(2))

$(BUILD)/unit/sts_impl.o: tests/sts_impl.c $(HEADER)
	@mkdir -p $(dir $@)
	$(CC) -std=c99 $(OPT) $(STS_WARN) -c -o $@ $<
$(BUILD)/asan/sts_impl.o: tests/sts_impl.c $(HEADER)
	@mkdir -p $(dir $@)
	$(CLANG) -std=c99 $(ASAN_FLAGS) $(STS_WARN) -c -o $@ $<
$(BUILD)/tsan/sts_impl.o: tests/sts_impl.c $(HEADER)
	@mkdir -p $(dir $@)
	$(CLANG) -std=c99 $(TSAN_FLAGS) $(STS_WARN) -c -o $@ $<
$(BUILD)/vg/sts_impl.o: tests/sts_impl.c $(HEADER)
	@mkdir -p $(dir $@)
	$(CC) -std=c99 -O1 -g $(STS_WARN) -c -o $@ $<
$(BUILD)/unit/%: tests/%.c $(HEADER) $(wildcard tests/*.h) $(BUILD)/unit/sts_impl.o
	@mkdir -p $(dir $@)
	$(CC) -std=c99 $(OPT) $(STS_WARN) $(call sts_linked_flag,$*) -o $@ $< $(call sts_linked_obj,$*,$(BUILD)/unit/sts_impl.o) $(UNIT_LIBS)
$(BUILD)/asan/%: tests/%.c $(HEADER) $(wildcard tests/*.h) $(BUILD)/asan/sts_impl.o
	@mkdir -p $(dir $@)
	$(CLANG) -std=c99 $(ASAN_FLAGS) $(STS_WARN) $(call sts_linked_flag,$*) -o $@ $< $(call sts_linked_obj,$*,$(BUILD)/asan/sts_impl.o) $(UNIT_LIBS)
$(BUILD)/vg/%: tests/%.c $(HEADER) $(wildcard tests/*.h) $(BUILD)/vg/sts_impl.o
	@mkdir -p $(dir $@)
	$(CC) -std=c99 -O1 -g $(STS_WARN) $(call sts_linked_flag,$*) -o $@ $< $(call sts_linked_obj,$*,$(BUILD)/vg/sts_impl.o) $(UNIT_LIBS)

.PHONY: test-unit test-asan test-valgrind
# Each step builds its programs in parallel first, then runs them.
test-unit: sts
	@$(MAKE) --no-print-directory -j$(JOBS) $(UNIT_BINS)
	@bash tests/run_tests.sh $(JOBS) $(UNIT_BINS)
test-asan: sts
	@$(MAKE) --no-print-directory -j$(JOBS) $(ASAN_BINS)
	@STS_TEST_LEVEL=quick ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 bash tests/run_tests.sh $(JOBS) $(ASAN_BINS)
# valgrind runs the plain programs (-O2 -g, as users build): a third build of every program cost more
# than a minute of the suite. $(BUILD)/vg/ (-O1 -g) remains for runs by hand.
test-valgrind: sts
	@$(MAKE) --no-print-directory -j$(JOBS) $(UNIT_BINS)
	@STS_TEST_LEVEL=quick STS_RUN_WRAP="valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=all --show-leak-kinds=all" \
	    bash tests/run_tests.sh $(JOBS) $(UNIT_BINS)
TEST_STEPS := test-unit $(TEST_STEPS) test-asan test-valgrind

# make test (tests/run_steps.sh): TEST_FIRST first (test-build: the sts tool, the unit programs that
# test-unit, test-valgrind and test-dataset-py run, the objects several steps link), then every
# step, $(JOBS) at a time, the long ones first. What two steps both build must be built by
# test-build: two makes must never write one file at once.
TEST_FIRST := test-build
TEST_LONG  := test-cross test-matrix test-asan test-valgrind test-unit
.PHONY: test-build
test-build: sts
	@$(MAKE) --no-print-directory -j$(JOBS) $(UNIT_BINS) $(BUILD)/tsan/sts_impl.o
test: deps
	@MAKE="$(MAKE)" bash tests/run_steps.sh $(JOBS) "$(TEST_FIRST)" -- $(foreach s,$(TEST_LONG),$(filter $(s),$(TEST_STEPS))) \
	    $(filter-out $(TEST_FIRST) $(TEST_LONG),$(TEST_STEPS))

fuzz: deps
	@set -e; for s in $(FUZZ_STEPS); do echo "=== $$s"; $(MAKE) --no-print-directory $$s; done

bench: deps
	@set -e; for s in $(BENCH_STEPS); do echo "=== $$s"; $(MAKE) --no-print-directory $$s; done

# make install PREFIX=/opt/sts (DESTDIR= for staging): the header, the sts tool and a pkg-config file.
install: sts
	install -d $(DESTDIR)$(PREFIX)/include $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib/pkgconfig
	install -m 644 $(HEADER) $(DESTDIR)$(PREFIX)/include/$(HEADER)
	install -m 755 sts $(DESTDIR)$(PREFIX)/bin/sts
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(VERSION)|' safetensors_spark.pc.in > $(DESTDIR)$(PREFIX)/lib/pkgconfig/safetensors_spark.pc
	@echo "installed into $(DESTDIR)$(PREFIX): include/$(HEADER), bin/sts, lib/pkgconfig/safetensors_spark.pc"

uninstall:
	rm -f $(DESTDIR)$(PREFIX)/include/$(HEADER) $(DESTDIR)$(PREFIX)/bin/sts $(DESTDIR)$(PREFIX)/lib/pkgconfig/safetensors_spark.pc

clean:
	rm -rf $(BUILD) sts
