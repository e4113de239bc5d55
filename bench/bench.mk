# bench/bench.mk - how every bench program is built (the other bench/*.mk fragments add the steps).
#   $(BUILD)/bench/NAME   from bench/NAME.c, with plain $(OPT) and no -march: the library picks CPU
#                         features (SIMD kernels) at run time, and users build it this way by
#                         default. Each program prints the compiler and flags it was built with.
# A program with helpers of its own lists them as extra prerequisites of $(BUILD)/bench/NAME.
BENCH_FLAGS := -std=c99 $(OPT)
BENCH_LIBS  := -lm

$(BUILD)/bench/%: bench/%.c bench/bench_util.h tests/test_util.h $(HEADER)
	@mkdir -p $(dir $@)
	$(CC) $(BENCH_FLAGS) $(STS_WARN) -DBENCH_CC='"$(CC)"' -DBENCH_FLAGS='"$(BENCH_FLAGS)"' -o $@ $< $(BENCH_LIBS)
