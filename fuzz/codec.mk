# fuzz/codec.mk - the codec fuzz target fuzz/fuzz_codec.c (sts_convert), seeds in fuzz/corpus/codec/.
# fuzz/fuzz.mk (included after this file) supplies the rules: make fuzz-codec, the ASan + UBSan
# replay over the seeds in make test (test-fuzz-replay), fuzz-min-codec, fuzz-cov-codec.
FUZZ_TARGETS += codec

