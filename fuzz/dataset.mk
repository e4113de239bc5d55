# fuzz/dataset.mk - the dataset reader's fuzz target fuzz/fuzz_dataset.c (an input is a small dataset
# folder: shards, manifest, index), seeds in fuzz/corpus/dataset/. fuzz/fuzz.mk (included after this
# file) supplies the rules: make fuzz-dataset, the ASan + UBSan replay over the seeds in make test
# (test-fuzz-replay), fuzz-min-dataset, fuzz-cov-dataset.
FUZZ_TARGETS += dataset
