# fuzz/archive.mk - the archive's fuzz target fuzz/fuzz_archive.c (layer 10: every built-in provider
# and a caller's one, inputs as bytes, a callback source, files and folders), seeds in
# fuzz/corpus/archive/. fuzz/fuzz.mk (included after this file) supplies the rules: make fuzz-archive,
# the ASan + UBSan replay over the seeds in make test (test-fuzz-replay), fuzz-min-archive,
# fuzz-cov-archive.
FUZZ_TARGETS += archive
# (fuzz.mk sets FUZZ_COMMON after this file: the target's own helper is a prerequisite here)
$(BUILD)/fuzz/fuzz_archive $(BUILD)/fuzz/replay_archive $(BUILD)/fuzz/cov_archive: tests/archive_util.h
