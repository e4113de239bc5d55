# Archive (layer 10, SPECIFICATION section 14): tests/test_archive.c (golden inputs of every
# built-in provider, probing, metadata-only reads counted through a callback source, views, window
# reads, cursors, materialising, SHA-256 against sha256sum, every allocation failing, sharded
# errors and counters) and tests/test_archive_threads.c (threads sharing an archive). The generic
# rules in the Makefile build and run each plain, under ASan+UBSan and under valgrind; test-tsan-archive
# runs the threads test under ThreadSanitizer. (The archive's fuzz target is fuzz/archive.mk.)
ARCHIVE_SRCS := tests/test_archive.c tests/test_archive_threads.c
UNIT_SRCS += $(ARCHIVE_SRCS)
ARCHIVE_DEPS := tests/archive_util.h tests/test_dataset_read_util.h tests/test_util.h tests/fs_util.h
$(patsubst tests/%.c,$(BUILD)/unit/%,$(ARCHIVE_SRCS)): $(ARCHIVE_DEPS)
$(patsubst tests/%.c,$(BUILD)/asan/%,$(ARCHIVE_SRCS)): $(ARCHIVE_DEPS)
$(patsubst tests/%.c,$(BUILD)/vg/%,$(ARCHIVE_SRCS)): $(ARCHIVE_DEPS)

# ThreadSanitizer: 8 threads finding, viewing, reading, materialising and hashing tensors of one
# archive at once (a sharded checkpoint whose lazy shards race, a single file four ways), full level.
$(BUILD)/tsan/test_archive_threads: tests/test_archive_threads.c $(HEADER) $(ARCHIVE_DEPS) $(BUILD)/tsan/sts_impl.o
	@mkdir -p $(dir $@)
	$(CLANG) -std=c99 $(TSAN_FLAGS) $(STS_WARN) $(call sts_linked_flag,$(notdir $@)) -o $@ $< \
	    $(call sts_linked_obj,$(notdir $@),$(BUILD)/tsan/sts_impl.o) $(UNIT_LIBS)
.PHONY: test-tsan-archive
test-tsan-archive: $(BUILD)/tsan/test_archive_threads
	@echo "--- $<"; $(TSAN_ENV) ./$<
test-tsan: test-tsan-archive
TEST_STEPS += test-tsan-archive
