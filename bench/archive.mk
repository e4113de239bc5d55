# bench/archive.mk - the archive (layer 10, issue 12) against the direct calls it stands on, in the
# same run. See bench/RESULTS.md, "Archive (issue 12)".
#   make bench-archive   1. sts_archive_open vs sts_open, 10k and 100k tensors (+ the first
#                           sts_archive_at, and open + every descriptor vs sts_open + sts_at)
#                        2. a 100-shard Hugging Face checkpoint: open reads the index only
#                           (sts_archive_get_stats after open, one find, every tensor) vs reading
#                           the index file; first access vs sts_open of the shard
#                        3. sts_archive_materialize BF16/F16 -> F32 and a plain copy, 256 MiB,
#                           vs memcpy of the output bytes and vs sts_convert of the mapped bytes
# Parts 1 and 2 run twice: malloc as it comes, then in a child whose heap keeps freed memory (no
# page faults after the warm-up). Scratch files go to a fresh folder under BENCH_DIR (default
# $TMPDIR or /tmp), removed at the end. About 1.5 minutes on the 2-vCPU VM, ~600 MiB of disk and
# 2.5 GiB of memory. BENCH_ARCHIVE_ARGS passes options (--quick, --part open,shards,materialize,
# --reps N, --shards N, --per-shard N, --mib N, --rounds N, --fresh-rounds N, --keep).
BENCH_ARCHIVE_ARGS ?=

$(BUILD)/bench/bench_archive: tests/fs_util.h

.PHONY: bench-archive
bench-archive: $(BUILD)/bench/bench_archive
	$(if $(BENCH_DIR),BENCH_DIR=$(BENCH_DIR)) ./$(BUILD)/bench/bench_archive $(BENCH_ARCHIVE_ARGS)

BENCH_STEPS += bench-archive
