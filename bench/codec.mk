# bench/codec.mk - sts_convert throughput on the hot pairs, beside memcpy in the same run, then
# numpy's astype on the same sizes for comparison. See bench/RESULTS-codec.md.
#   make bench-codec          BENCH_CODEC_ARGS passes options (--rounds N, --mib N, --isa all|best)
BENCH_CODEC_ARGS  ?=

.PHONY: bench-codec
bench-codec: $(BUILD)/bench/bench_codec
	./$(BUILD)/bench/bench_codec $(BENCH_CODEC_ARGS)
	$(PYTHON) bench/bench_codec_numpy.py

BENCH_STEPS += bench-codec
