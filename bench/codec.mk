# bench/codec.mk - sts_convert throughput on the hot pairs, beside memcpy in the same run, then
# numpy's astype on the same sizes for comparison. See bench/RESULTS-codec.md.
#   make bench-codec          BENCH_CODEC_ARGS passes options (--rounds N, --mib N, --isa all|best)
# Built with plain $(OPT), no -march: the SIMD kernels are chosen at run time.
BENCH_CODEC_FLAGS := -std=c99 $(OPT)
BENCH_CODEC_ARGS  ?=

$(BUILD)/bench/bench_codec: bench/bench_codec.c bench/bench_util.h $(HEADER)
	@mkdir -p $(dir $@)
	$(CC) $(BENCH_CODEC_FLAGS) $(STS_WARN) -DBENCH_CC='"$(CC)"' -DBENCH_FLAGS='"$(BENCH_CODEC_FLAGS)"' -o $@ bench/bench_codec.c -lm

.PHONY: bench-codec
bench-codec: $(BUILD)/bench/bench_codec
	./$(BUILD)/bench/bench_codec $(BENCH_CODEC_ARGS)
	$(PYTHON) bench/codec_numpy.py

BENCH_STEPS += bench-codec
