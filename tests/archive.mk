# Archive (layer 10, SPECIFICATION section 14): tests/test_archive.c (golden inputs of every
# built-in provider, probing, metadata-only reads counted through a callback source, views, window
# reads, cursors, materialising, SHA-256 against sha256sum, every allocation failing, sharded
# errors and counters). The generic rules in the Makefile build and run it plain, under ASan+UBSan
# and under valgrind. (The archive's fuzz target is fuzz/archive.mk.)
ARCHIVE_SRCS := tests/test_archive.c
UNIT_SRCS += $(ARCHIVE_SRCS)
ARCHIVE_DEPS := tests/archive_util.h tests/test_dataset_read_util.h tests/test_util.h tests/fs_util.h
$(patsubst tests/%.c,$(BUILD)/unit/%,$(ARCHIVE_SRCS)): $(ARCHIVE_DEPS)
$(patsubst tests/%.c,$(BUILD)/asan/%,$(ARCHIVE_SRCS)): $(ARCHIVE_DEPS)
$(patsubst tests/%.c,$(BUILD)/vg/%,$(ARCHIVE_SRCS)): $(ARCHIVE_DEPS)
