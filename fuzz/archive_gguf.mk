# fuzz/archive_gguf.mk - the GGUF fuzz target fuzz/fuzz_gguf.c (the archive's gguf provider, issue 14),
# seeds in fuzz/corpus/gguf/ (small files of tests/gguf/make_corpus.py's corpus). fuzz/fuzz.mk
# (included after this file, which is named to sort before it) supplies the rules: make fuzz-gguf,
# the ASan + UBSan replay over the seeds in make test (test-fuzz-replay), fuzz-min-gguf, fuzz-cov-gguf.
FUZZ_TARGETS += gguf
