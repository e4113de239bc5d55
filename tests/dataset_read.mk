# Dataset reader (layer 9): discovery, schema, wide and long scans, pushdown counters, lookups,
# the scans' header reader (guessed reads, the cached header; again without _GNU_SOURCE and mmap),
# errors, files laid out by Hugging Face's writer (tests/make_hf_files.py, numpy only, run by
# test_dataset_read_hf), and threads. The generic rules in the Makefile build and run each program
# plain, under ASan+UBSan and under valgrind; test-tsan-read runs the threads test under ThreadSanitizer.
# (The reader's fuzz target is fuzz/dataset.mk.)
DATASET_READ_SRCS := tests/test_dataset_read.c tests/test_dataset_read_errors.c tests/test_dataset_read_pushdown.c \
                     tests/test_dataset_read_scan.c tests/test_dataset_read_scan_plain.c \
                     tests/test_dataset_read_threads.c tests/test_dataset_read_hf.c tests/test_dataset_assign.c
UNIT_SRCS += $(DATASET_READ_SRCS)

# Rebuild when the shared helpers or the Hugging Face file maker change.
DATASET_READ_DEPS := tests/test_dataset_read_util.h tests/test_util.h tests/fs_util.h tests/make_hf_files.py
$(patsubst tests/%.c,$(BUILD)/unit/%,$(DATASET_READ_SRCS)): $(DATASET_READ_DEPS)
$(patsubst tests/%.c,$(BUILD)/asan/%,$(DATASET_READ_SRCS)): $(DATASET_READ_DEPS)
$(patsubst tests/%.c,$(BUILD)/vg/%,$(DATASET_READ_SRCS)): $(DATASET_READ_DEPS)
# The plain build of the scan-reader suite includes the suite's source.
$(addsuffix /test_dataset_read_scan_plain,$(BUILD)/unit $(BUILD)/asan $(BUILD)/vg): tests/test_dataset_read_scan.c

# ThreadSanitizer: the threads test built with clang -fsanitize=thread (8 threads of lookups with
# data and scans over file ranges on shared datasets, with and without the index), full level.
# The writer's side is test-tsan-write (tests/dataset_write.mk); make test-tsan runs both.
$(BUILD)/tsan/test_dataset_read_threads: tests/test_dataset_read_threads.c $(HEADER) $(DATASET_READ_DEPS) $(BUILD)/tsan/sts_impl.o
	@mkdir -p $(dir $@)
	$(CLANG) -std=c99 $(TSAN_FLAGS) $(STS_WARN) $(call sts_linked_flag,$(notdir $@)) -o $@ $< \
	    $(call sts_linked_obj,$(notdir $@),$(BUILD)/tsan/sts_impl.o) $(UNIT_LIBS)
.PHONY: test-tsan test-tsan-read
test-tsan-read: $(BUILD)/tsan/test_dataset_read_threads
	@echo "--- $<"; $(TSAN_ENV) ./$<
test-tsan: test-tsan-read test-tsan-write
TEST_STEPS += test-tsan-read
