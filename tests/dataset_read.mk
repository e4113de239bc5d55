# Dataset reader (layer 9): discovery, schema, wide and long scans, pushdown counters, lookups,
# errors, files laid out by Hugging Face's writer (tests/make_hf_files.py, numpy only, run by
# test_dataset_read_hf), and threads. The generic rules in the Makefile build and run each program
# plain, under ASan+UBSan and under valgrind; test-tsan runs the threads test under ThreadSanitizer.
DATASET_READ_SRCS := tests/test_dataset_read.c tests/test_dataset_read_errors.c tests/test_dataset_read_pushdown.c \
                     tests/test_dataset_read_threads.c tests/test_dataset_read_hf.c
UNIT_SRCS += $(DATASET_READ_SRCS)

# Rebuild when the shared helpers or the Hugging Face file maker change.
DATASET_READ_DEPS := tests/test_dataset_read_util.h tests/fs_util.h tests/make_hf_files.py
$(patsubst tests/%.c,$(BUILD)/unit/%,$(DATASET_READ_SRCS)): $(DATASET_READ_DEPS)
$(patsubst tests/%.c,$(BUILD)/asan/%,$(DATASET_READ_SRCS)): $(DATASET_READ_DEPS)
$(patsubst tests/%.c,$(BUILD)/vg/%,$(DATASET_READ_SRCS)): $(DATASET_READ_DEPS)

# ThreadSanitizer: the threads test built with clang -fsanitize=thread (8 threads of lookups with
# data and scans over file ranges on shared datasets, with and without the index).
TSAN_FLAGS := -O1 -g -fsanitize=thread -fno-omit-frame-pointer
$(BUILD)/tsan/test_dataset_read_threads: tests/test_dataset_read_threads.c $(HEADER) $(DATASET_READ_DEPS)
	@mkdir -p $(dir $@)
	$(CLANG) -std=c99 $(TSAN_FLAGS) $(STS_WARN) -o $@ $< $(UNIT_LIBS)
# The writer's I/O thread under ThreadSanitizer too: the KV and batch writers, faults, threads and
# processes (tests/test_dataset_write_io.c, tests/test_dataset_write_kv.c), quick level.
TSAN_WRITE_SRCS := tests/test_dataset_write_io.c tests/test_dataset_write_kv.c
$(BUILD)/tsan/test_dataset_write_%: tests/test_dataset_write_%.c $(HEADER) tests/dataset_util.h tests/fs_util.h
	@mkdir -p $(dir $@)
	$(CLANG) -std=c99 $(TSAN_FLAGS) $(STS_WARN) -o $@ $< $(UNIT_LIBS)
TSAN_WRITE_BINS := $(patsubst tests/%.c,$(BUILD)/tsan/%,$(TSAN_WRITE_SRCS))
.PHONY: test-tsan
test-tsan: $(BUILD)/tsan/test_dataset_read_threads $(TSAN_WRITE_BINS)
	@echo "--- $<"; TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" ./$<
	@set -e; for t in $(TSAN_WRITE_BINS); do echo "--- $$t"; STS_TEST_LEVEL=quick TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" ./$$t; done
TEST_STEPS += test-tsan

# Fuzzing the reader: fuzz/fuzz_dataset.c (an input is a small dataset folder: shards, manifest,
# index) with its seeds in fuzz/corpus/dataset/. This fragment sorts before fuzz/fuzz.mk, so the
# target joins FUZZ_TARGETS here (make fuzz, fuzz-dataset, fuzz-min-dataset, fuzz-cov-dataset and
# the replay in make test).
FUZZ_TARGETS += dataset
$(addprefix $(BUILD)/fuzz/,fuzz_dataset replay_dataset cov_dataset): $(DATASET_READ_DEPS)
