# bench/dataset.mk - dataset writer and reader benchmarks (issues 4 and 5). See bench/RESULTS-dataset.md.
#   make bench-dataset-write   batch mode (4 GiB, F32 and BF16) and KV mode (1M rows, peak RSS), each
#                              beside raw write() (+ fsync when durable) in the same folder and run;
#                              dataset commit of 1M keys with the index
#   make bench-dataset-read    1M keys in 100 shards: index load, lookup latency p50/p99/p99.9, the same
#                              key without the index; wide scan of 1,000 files (bytes read, time per file)
#   make bench-dataset-profile callgrind of --quick runs (not part of `make bench`)
# Files go to a fresh folder under BENCH_DIR (default /tmp), removed at the end, on failure and on
# Ctrl-C. The write bench needs about 5.3 GiB free there. BENCH_DATASET_ARGS passes options to both
# (--quick: sizes / 16; --runs N: repetitions, default 3). Full runs on the 2-vCPU VM: write about
# 2.5 min, read about 35 s.
BENCH_DATASET_ARGS  ?=

$(BUILD)/bench/bench_dataset_write $(BUILD)/bench/bench_dataset_read: bench/bench_dataset_util.h tests/fs_util.h

.PHONY: bench-dataset-write bench-dataset-read bench-dataset-profile
bench-dataset-write: $(BUILD)/bench/bench_dataset_write
	$(if $(BENCH_DIR),BENCH_DIR=$(BENCH_DIR)) ./$(BUILD)/bench/bench_dataset_write $(BENCH_DATASET_ARGS)

bench-dataset-read: $(BUILD)/bench/bench_dataset_read
	$(if $(BENCH_DIR),BENCH_DIR=$(BENCH_DIR)) ./$(BUILD)/bench/bench_dataset_read $(BENCH_DATASET_ARGS)

# Instruction profiles (callgrind; children included, one file per process): the KV writer
# (sts_task_write + sts_task_commit, 300,000 rows: one shard roll at the 300 MiB target) and the
# reader (sts_dataset_open + sts_dataset_get, --quick sizes). Files: $(BUILD)/bench/callgrind.dataset-*.
bench-dataset-profile: $(BUILD)/bench/bench_dataset_write $(BUILD)/bench/bench_dataset_read
	rm -f $(BUILD)/bench/callgrind.dataset-*
	valgrind --tool=callgrind --trace-children=yes --toggle-collect=sts_task_write --toggle-collect=sts_task_commit \
	    --callgrind-out-file=$(BUILD)/bench/callgrind.dataset-write.%p \
	    ./$(BUILD)/bench/bench_dataset_write --only kv --runs 1 --kv-rows 300000
	valgrind --tool=callgrind --trace-children=yes --toggle-collect=sts_dataset_open --toggle-collect=sts_dataset_get \
	    --callgrind-out-file=$(BUILD)/bench/callgrind.dataset-read.%p \
	    ./$(BUILD)/bench/bench_dataset_read --quick --runs 1 --lookups 20000 --only index
	@for f in $(BUILD)/bench/callgrind.dataset-*; do if grep -qx 'totals: 0' $$f; then rm -f $$f; fi; done
	@ls -la $(BUILD)/bench/callgrind.dataset-*; echo "read with: callgrind_annotate <file> | head -40"

BENCH_STEPS += bench-dataset-write bench-dataset-read
