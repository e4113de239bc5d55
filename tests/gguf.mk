# GGUF (issue 14): the provider of the archive that reads GGUF v2/v3 files in both byte orders.
# tests/gguf/make_corpus.py writes the corpus (valid and invalid files, every rule broken, every
# structural boundary cut, each with its verdict in both modes) into build/gguf/corpus before the
# test programs are built; tests/test_gguf.c checks every file opened four ways (plain, ASan+UBSan
# and valgrind through the generic rules).
GGUF_CORPUS := $(BUILD)/gguf/corpus
$(GGUF_CORPUS)/cases.tsv: tests/gguf/make_corpus.py $(HEADER)
	@$(PYTHON) tests/gguf/make_corpus.py $(GGUF_CORPUS)
UNIT_SRCS += tests/test_gguf.c
# The GGUF writer (sts_gguf_write): exact bytes, a strict round trip, every refusal, failures.
UNIT_SRCS += tests/test_gguf_write.c
$(BUILD)/unit/test_gguf $(BUILD)/asan/test_gguf $(BUILD)/vg/test_gguf: $(GGUF_CORPUS)/cases.tsv

# The cross-check with @huggingface/gguf (npm, installed into build/node when missing; skipped with
# the reason without node or npm, a failure under CI=true): tests/gguf/hf_check.py.
$(BUILD)/gguf/gguf_dump: tests/gguf/gguf_dump.c $(HEADER)
	@mkdir -p $(dir $@)
	$(CC) -std=c99 $(OPT) $(STS_WARN) -o $@ $<
.PHONY: test-gguf-hf
test-gguf-hf: $(GGUF_CORPUS)/cases.tsv $(BUILD)/gguf/gguf_dump sts
	@$(PYTHON) tests/gguf/hf_check.py $(GGUF_CORPUS) $(BUILD)/gguf/gguf_dump $(BUILD)/gguf/hf ./sts
TEST_STEPS += test-gguf-hf

# test-cross (tests/cross.mk): test_gguf on s390x (big-endian: every byte-order path of the reader,
# the swaps of materialize) and aarch64, under qemu-user, after the corpus is made.
CROSS_NAMES += test_gguf test_gguf_write
CROSS_RUNS  += $(foreach a,$(CROSS_ARCHS),$(BUILD)/cross/$(a)/ok/test_gguf $(BUILD)/cross/$(a)/ok/test_gguf_write)
.SECONDARY: $(foreach a,$(CROSS_ARCHS),$(BUILD)/cross/$(a)/bin/test_gguf)
$(foreach a,$(CROSS_ARCHS),$(BUILD)/cross/$(a)/bin/test_gguf): $(GGUF_CORPUS)/cases.tsv
