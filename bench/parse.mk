# bench/parse.mk - header-parse throughput (beside strict jsmn and memcpy) and open time vs file size.
#   make bench-parse        sts_parse_header on ~10k / ~100k-tensor headers, jsmn and memcpy in the same run
#   make bench-open         sts_open + sts_find + sts_data on sparse 16 MB / 1 GB / 8 GB files
#   make bench-parse-profile   callgrind of the 100k case (not part of `make bench`)
# Built by bench/bench.mk's rule (plain $(OPT), no -march). BENCH_PARSE_ARGS / BENCH_OPEN_ARGS pass
# options (e.g. --iters 100).
# jsmn comes from /usr/include/jsmn.h (Debian libjsmn-dev, installed by `make deps`), simdjson from
# Debian's libsimdjson-dev (also `make deps`). Without simdjson, bench_parse links a stub and says so.

SIMDJSON_H    := $(wildcard /usr/include/simdjson.h)
SIMDJSON_LIBS := $(if $(SIMDJSON_H),-lsimdjson)

# The simdjson walker is C++17 with -march=native: On-Demand picks its kernel at compile time, and
# without -march it would be simdjson's scalar fallback. It is rebuilt when simdjson appears.
$(BUILD)/bench/bench_parse_simdjson.o: bench/bench_parse_simdjson.cpp $(SIMDJSON_H)
	@mkdir -p $(dir $@)
	$(CXX) -std=c++17 $(OPT) -march=native -Wall -Wextra -c -o $@ $<
$(BUILD)/bench/bench_parse: bench/bench_parse.c $(BUILD)/bench/bench_parse_simdjson.o bench/bench_util.h \
                            tests/test_util.h $(HEADER)
	@mkdir -p $(dir $@)
	$(CC) $(BENCH_FLAGS) $(STS_WARN) -DBENCH_CC='"$(CC)"' -DBENCH_FLAGS='"$(BENCH_FLAGS)"' -c -o $@.o $<
	$(CXX) -o $@ $@.o $(BUILD)/bench/bench_parse_simdjson.o $(SIMDJSON_LIBS) $(BENCH_LIBS)

BENCH_PARSE_ARGS  ?=
BENCH_OPEN_ARGS   ?=

.PHONY: bench-parse bench-open bench-parse-profile
bench-parse: $(BUILD)/bench/bench_parse
	@echo "bench-parse: built with $(CC) $(BENCH_FLAGS)"
	./$(BUILD)/bench/bench_parse $(BENCH_PARSE_ARGS)

bench-open: $(BUILD)/bench/bench_open
	@echo "bench-open: built with $(CC) $(BENCH_FLAGS)"
	./$(BUILD)/bench/bench_open $(BENCH_OPEN_ARGS)

# Counts instructions inside sts_parse_header only (generation, checks and jsmn excluded); with
# --iters 3 that is 4 parses: the untimed correctness parse and 3 timed ones.
bench-parse-profile: $(BUILD)/bench/bench_parse
	valgrind --tool=callgrind --callgrind-out-file=$(BUILD)/bench/callgrind.parse.out --toggle-collect=sts_parse_header \
	    ./$(BUILD)/bench/bench_parse --case 100k --only sts --iters 3 --warmup 0
	callgrind_annotate $(BUILD)/bench/callgrind.parse.out | sed -n '/file:function/,/Auto-annotated/p' | head -30
	callgrind_annotate --auto=yes $(BUILD)/bench/callgrind.parse.out > $(BUILD)/bench/callgrind.parse.txt 2>/dev/null || true
	@echo "per-line annotation: $(BUILD)/bench/callgrind.parse.txt"

BENCH_STEPS += bench-parse bench-open
