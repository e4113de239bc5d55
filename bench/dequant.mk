# bench/dequant.mk - sts_dequantize throughput on the ten ggml block types (GB/s of F32 output on
# one core, scalar and the best SIMD level), beside memcpy of the same output size in the same run.
# Figures in bench/RESULTS.md ("Dequantisation (issue 14)").
#   make bench-dequant          BENCH_DEQUANT_ARGS passes options (--rounds N, --mib N, --hot-kib N)
BENCH_DEQUANT_ARGS ?=

.PHONY: bench-dequant
bench-dequant: $(BUILD)/bench/bench_dequant
	./$(BUILD)/bench/bench_dequant $(BENCH_DEQUANT_ARGS)

BENCH_STEPS += bench-dequant
