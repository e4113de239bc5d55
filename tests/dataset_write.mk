# Dataset writer (layer 8): options, batch and KV modes, duplicates, the shard roller, the commit
# protocol, fault injection, threads and processes, and crash safety. The generic rules in the
# Makefile build and run each program plain, under ASan+UBSan and under valgrind.
DATASET_WRITE_SRCS := tests/test_dataset_write_options.c tests/test_dataset_write_batch.c tests/test_dataset_write_limits.c \
                      tests/test_dataset_write_kv.c tests/test_dataset_write_io.c tests/test_dataset_write_crash.c \
                      tests/test_dataset_write_commit.c tests/test_kv_fast.c
UNIT_SRCS += $(DATASET_WRITE_SRCS)

# The writer's I/O thread under ThreadSanitizer: the KV and batch writers, faults, threads and
# processes, the commit's index threads (tests/test_dataset_write_{io,kv,commit}.c), quick level. The
# reader's side is test-tsan-read (tests/dataset_read.mk); make test-tsan runs both.
TSAN_WRITE_SRCS := tests/test_dataset_write_io.c tests/test_dataset_write_kv.c tests/test_dataset_write_commit.c
TSAN_WRITE_BINS := $(patsubst tests/%.c,$(BUILD)/tsan/%,$(TSAN_WRITE_SRCS))
$(BUILD)/tsan/test_dataset_write_%: tests/test_dataset_write_%.c $(HEADER) tests/dataset_write_util.h tests/test_util.h tests/fs_util.h $(BUILD)/tsan/sts_impl.o
	@mkdir -p $(dir $@)
	$(CLANG) -std=c99 $(TSAN_FLAGS) $(STS_WARN) $(call sts_linked_flag,$(notdir $@)) -o $@ $< \
	    $(call sts_linked_obj,$(notdir $@),$(BUILD)/tsan/sts_impl.o) $(UNIT_LIBS)
.PHONY: test-tsan-write
test-tsan-write: $(TSAN_WRITE_BINS)
	@set -e; for t in $^; do echo "--- $$t"; STS_TEST_LEVEL=quick $(TSAN_ENV) ./$$t; done
TEST_STEPS += test-tsan-write

# Python cross-check: tests/dataset_gen.c writes datasets of every mode, tail strategy, dtype and
# rounding (plus the source rows) into a temporary folder; the crash driver keeps what survived
# its kills; tests/check_dataset.py validates every manifest and index against format/*.schema.json
# (jsonschema, draft 2020-12) and reads every shard with numpy alone, comparing values with the
# source rows. The crash driver's own verdict belongs to test-unit/asan/valgrind; here it only
# supplies the post-crash documents (the checker fails when there are none).
.PHONY: test-dataset-py
test-dataset-py: $(BUILD)/unit/dataset_gen $(BUILD)/unit/test_dataset_write_crash
	@set -e; d=$$(mktemp -d /tmp/dsw-py.XXXXXX); trap 'rm -rf "$$d"' EXIT INT TERM; \
	./$(BUILD)/unit/dataset_gen "$$d/gen"; \
	STS_TEST_LEVEL=quick STS_CRASH_KEEP="$$d/crash" ./$(BUILD)/unit/test_dataset_write_crash >/dev/null 2>&1 || true; \
	$(PYTHON) tests/check_dataset.py "$$d/gen" "$$d/crash"
TEST_STEPS += test-dataset-py
