# fuzz/dataset_write.mk - the dataset writer's fuzz target fuzz/fuzz_writer.c (an input is a job: options,
# rows good and bad, a fault; the folder is read back and checked against a model), seeds in
# fuzz/corpus/writer/. fuzz/fuzz.mk (included after this file) supplies the rules: make fuzz-writer,
# the ASan + UBSan replay over the seeds in make test (test-fuzz-replay), fuzz-min-writer,
# fuzz-cov-writer.
FUZZ_TARGETS += writer
