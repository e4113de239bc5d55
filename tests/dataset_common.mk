# Dataset common (layer 8a): the one manifest reader shared by sts_dataset_open,
# sts_dataset_reindex and the commit (tests/test_dataset_manifest.c: the mode rule, refused
# fields, no length limits, FIFOs refused or skipped). The generic rules in the Makefile build and
# run it plain, under ASan+UBSan and under valgrind.
DATASET_COMMON_SRCS := tests/test_dataset_manifest.c
UNIT_SRCS += $(DATASET_COMMON_SRCS)
$(patsubst tests/%.c,$(BUILD)/unit/%,$(DATASET_COMMON_SRCS)): tests/test_dataset_read_util.h tests/fs_util.h
$(patsubst tests/%.c,$(BUILD)/asan/%,$(DATASET_COMMON_SRCS)): tests/test_dataset_read_util.h tests/fs_util.h
$(patsubst tests/%.c,$(BUILD)/vg/%,$(DATASET_COMMON_SRCS)): tests/test_dataset_read_util.h tests/fs_util.h
# Nothing lost (issue 11): tests/test_dataset_jobs.c, job locks with real processes and kill -9,
# failed commits that keep everything, check and clean against tampered folders.
UNIT_SRCS += tests/test_dataset_jobs.c
$(BUILD)/unit/test_dataset_jobs $(BUILD)/asan/test_dataset_jobs $(BUILD)/vg/test_dataset_jobs: tests/fs_util.h
# The same through the sts tool, with real processes: two `sts pack --overwrite` racing for one
# folder, and packs killed with SIGKILL then cleaned, `sts check --data` after every round
# (tests/stress_jobs.sh; a longer run: tests/stress_jobs.sh 500).
.PHONY: test-jobs
test-jobs: sts
	@STS=./sts PYTHON=$(PYTHON) bash tests/stress_jobs.sh 6
TEST_STEPS += test-jobs
