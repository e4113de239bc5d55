# bench/crc32c.mk - CRC-32C, the shards' checksum (issue 17): each path (AVX-512 VPCLMULQDQ folds,
# three crc32 lanes, the portable loop) on a KV cell, a batch column buffer and 256 MiB, beside
# memcpy of the same bytes. See bench/RESULTS.md.
#   make bench-crc32c       BENCH_CRC32C_ARGS passes options (--runs N)
BENCH_CRC32C_ARGS ?=

.PHONY: bench-crc32c
bench-crc32c: $(BUILD)/bench/bench_crc32c
	./$(BUILD)/bench/bench_crc32c $(BENCH_CRC32C_ARGS)

BENCH_STEPS += bench-crc32c
