# bench/sha256.mk - SHA-256 of a whole file warm in the page cache (issue 12): ours (SHA-NI where the
# CPU has it; read() into 1 MiB) against `openssl dgst -sha256` on the same file, alternately, each
# 5 times; then our portable path and the hash from memory. See bench/RESULTS.md.
#   make bench-sha256       a 1 GiB file under BENCH_DIR (default /tmp), removed at the end;
#                           BENCH_SHA256_ARGS passes options (--mib N, --runs N)
BENCH_SHA256_ARGS ?=

.PHONY: bench-sha256
bench-sha256: $(BUILD)/bench/bench_sha256
	$(if $(BENCH_DIR),BENCH_DIR=$(BENCH_DIR)) ./$(BUILD)/bench/bench_sha256 $(BENCH_SHA256_ARGS)

BENCH_STEPS += bench-sha256
