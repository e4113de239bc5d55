# fuzz/dataset_write.mk - the dataset writer's fuzz targets: fuzz/fuzz_writer.c (an input is a job:
# options, rows good and bad, a fault; the folder is read back and checked against a model), seeds in
# fuzz/corpus/writer/ (python3 fuzz/make_writer_seeds.py writes the hand-made ones), and
# fuzz/fuzz_options.c (the options as strings, as a Spark job passes them, then a small job), seeds
# in fuzz/corpus/options/. fuzz/fuzz.mk (included after this file) supplies the rules: make
# fuzz-writer and fuzz-options, the ASan + UBSan replay over the seeds in make test
# (test-fuzz-replay), fuzz-min-*, fuzz-cov-*.
FUZZ_TARGETS += writer options
