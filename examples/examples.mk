# examples/examples.mk - the programs that embed the header: the sts tool and the demo.
#   make / make sts   ./sts (examples/sts.c, with examples/npy.h)
#   make demo         builds $(BUILD)/demo and runs it in $(BUILD) (test-demo in tests/cli.mk checks it)
# An example in a folder of its own (examples/NAME/) brings its own examples/NAME/*.mk.
#
# EXAMPLES_MATRIX lists what tests/compile_matrix.sh compiles (gcc and clang, -std=c99, -O0 and
# -O2, -Wall -Wextra -Wpedantic -Werror); an example that is not listed is not compiled there.
# One entry per example: SOURCE[:NEEDS[:FLAGS]]
#   NEEDS   commands that must be on PATH, comma-separated (e.g. mpicc, javac); where one is
#           missing the matrix prints "SKIP  example ...: needs ..." instead of failing
#   FLAGS   extra compile flags, commas for spaces (e.g. -pthread or -shared,-fPIC)
EXAMPLES_MATRIX := examples/sts.c::-pthread examples/demo.c::-pthread

sts: examples/sts.c examples/npy.h $(HEADER)
	$(CC) -std=c99 $(OPT) $(STS_WARN) -pthread -o $@ examples/sts.c

$(BUILD)/demo: examples/demo.c $(HEADER) | $(BUILD)
	$(CC) -std=c99 $(OPT) $(STS_WARN) -pthread -o $@ examples/demo.c

demo: $(BUILD)/demo
	@cd $(BUILD) && ./demo
