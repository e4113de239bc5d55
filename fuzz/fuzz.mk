# Fuzzing. One target per entry point: fuzz/fuzz_<name>.c defines LLVMFuzzerTestOneInput and
# fuzz/corpus/<name>/ holds its checked-in seeds. To add a target, append its name here:
FUZZ_TARGETS += parse roundtrip
# (a fragment that sorts before fuzz.mk, e.g. fuzz/codec.mk, may instead do FUZZ_TARGETS += codec).
#
#   make fuzz [FUZZ_SECONDS=60]   each target under libFuzzer (ASan + UBSan) with fuzz/sts.dict;
#                                 new inputs go to build/fuzz/corpus-<name>/, the checked-in corpus
#                                 is only read; a crash is saved as build/fuzz/<name>-crash-*
#   make fuzz-<name>              one target
#   make test-fuzz-replay         (part of make test) each target, built with clang ASan + UBSan but
#                                 without libFuzzer, replayed over its checked-in corpus
#   make fuzz-min-<name>          minimise the corpus gathered in build/fuzz/corpus-<name>/ into
#                                 build/fuzz/min-<name>/ (review, then copy into fuzz/corpus/<name>/)
#   make fuzz-cov-<name>          source coverage of the header by the checked-in corpus plus
#                                 what fuzz-<name> gathered (llvm-cov report, per function with V=1)
#   python3 fuzz/make_seeds.py    rewrite the hand-made seeds fuzz/corpus/*/h_*.safetensors
#
# To reproduce a crash: build/fuzz/fuzz_<name> CRASH_FILE, or build/fuzz/replay_<name> CRASH_FILE.

FUZZ_DIR      := $(BUILD)/fuzz
FUZZ_COMMON   := fuzz/fuzz_common.h tests/test_util.h tests/fs_util.h
FUZZ_FLAGS    := -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -DFUZZ_WITH_LIBFUZZER
FUZZ_MAX_LEN  ?= 8192
FUZZ_RUN_ENV  := ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

LLVM_PROFDATA ?= llvm-profdata
LLVM_COV      ?= llvm-cov

FUZZ_STEPS += $(addprefix fuzz-,$(FUZZ_TARGETS))
TEST_STEPS += test-fuzz-replay

.PHONY: test-fuzz-replay $(foreach p,fuzz- fuzz-min- fuzz-cov-,$(addprefix $(p),$(FUZZ_TARGETS)))

# libFuzzer build: the target alone, libFuzzer supplies main. It and the replay build compile the
# implementation with STS_STATIC: only what the target reaches is built (and instrumented).
$(FUZZ_DIR)/fuzz_%: fuzz/fuzz_%.c $(FUZZ_COMMON) $(HEADER)
	@mkdir -p $(dir $@)
	$(CLANG) -std=c99 $(FUZZ_FLAGS) $(STS_WARN) -DSTS_STATIC -o $@ $<

# replay build: the target + fuzz/replay.c, no libFuzzer needed at run time
$(FUZZ_DIR)/replay_%: fuzz/fuzz_%.c fuzz/replay.c $(FUZZ_COMMON) $(HEADER)
	@mkdir -p $(dir $@)
	$(CLANG) -std=c99 $(ASAN_FLAGS) $(STS_WARN) -DSTS_STATIC -o $@ fuzz/replay.c $<

# coverage build: replay + target with clang's source-based coverage (every function built, so
# the report lists what the target never reaches)
$(FUZZ_DIR)/cov_%: fuzz/fuzz_%.c fuzz/replay.c $(FUZZ_COMMON) $(HEADER)
	@mkdir -p $(dir $@)
	$(CLANG) -std=c99 -O0 -g -fprofile-instr-generate -fcoverage-mapping $(STS_WARN) -o $@ fuzz/replay.c $<

# per target: fuzz-<name> runs libFuzzer, fuzz-min-<name> minimises what it gathered,
# fuzz-cov-<name> reports the header's coverage
define FUZZ_TARGET_RULES
fuzz-$(1): $$(FUZZ_DIR)/fuzz_$(1)
	@mkdir -p $$(FUZZ_DIR)/corpus-$(1)
	$$(FUZZ_RUN_ENV) ./$$(FUZZ_DIR)/fuzz_$(1) -max_total_time=$$(FUZZ_SECONDS) -max_len=$$(FUZZ_MAX_LEN) \
	    -dict=fuzz/sts.dict -artifact_prefix=$$(FUZZ_DIR)/$(1)- -print_final_stats=1 \
	    $$(FUZZ_DIR)/corpus-$(1) fuzz/corpus/$(1)
fuzz-min-$(1): $$(FUZZ_DIR)/fuzz_$(1)
	@rm -rf $$(FUZZ_DIR)/min-$(1) && mkdir -p $$(FUZZ_DIR)/min-$(1) $$(FUZZ_DIR)/corpus-$(1)
	$$(FUZZ_RUN_ENV) ./$$(FUZZ_DIR)/fuzz_$(1) -merge=1 -max_len=$$(FUZZ_MAX_LEN) $$(FUZZ_DIR)/min-$(1) \
	    fuzz/corpus/$(1) $$(FUZZ_DIR)/corpus-$(1)
fuzz-cov-$(1): $$(FUZZ_DIR)/cov_$(1)
	@mkdir -p $$(FUZZ_DIR)/corpus-$(1)
	@LLVM_PROFILE_FILE=$$(FUZZ_DIR)/cov_$(1).profraw ./$$(FUZZ_DIR)/cov_$(1) fuzz/corpus/$(1) $$(FUZZ_DIR)/corpus-$(1)
	@$$(LLVM_PROFDATA) merge -sparse $$(FUZZ_DIR)/cov_$(1).profraw -o $$(FUZZ_DIR)/cov_$(1).profdata
	@$$(LLVM_COV) report $$(if $$(V),-show-functions) ./$$(FUZZ_DIR)/cov_$(1) -instr-profile=$$(FUZZ_DIR)/cov_$(1).profdata $$(HEADER)
endef
$(foreach t,$(FUZZ_TARGETS),$(eval $(call FUZZ_TARGET_RULES,$(t))))

# the replay programs build $(JOBS) at a time (each compiles what its target reaches), then run in turn
test-fuzz-replay:
	@$(MAKE) --no-print-directory -j$(JOBS) $(addprefix $(FUZZ_DIR)/replay_,$(FUZZ_TARGETS))
	@set -e; for t in $(FUZZ_TARGETS); do \
	    printf -- '--- replay %s: ' "$$t"; \
	    ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	        ./$(FUZZ_DIR)/replay_$$t fuzz/corpus/$$t; \
	done
