# safetensors_spark.h build.  make | make test | make demo | make fuzz | make bench | make install PREFIX=...
# Areas add themselves through fragments (tests/*.mk, fuzz/*.mk, bench/*.mk); each fragment
# appends its phony steps to TEST_STEPS, FUZZ_STEPS or BENCH_STEPS.

CC       ?= cc
CXX      ?= c++
CLANG    ?= clang
OPT      ?= -O2 -g
STS_WARN := -Wall -Wextra -Wpedantic -Werror
PYTHON   := /usr/bin/python3
BUILD    := build
PREFIX   ?= /usr/local
FUZZ_SECONDS ?= 60
HEADER   := safetensors_spark.h

TEST_STEPS  :=
FUZZ_STEPS  :=
BENCH_STEPS :=

.PHONY: all test demo fuzz bench deps install uninstall clean
all: sts

sts: examples/sts.c $(HEADER)
	$(CC) -std=c99 $(OPT) $(STS_WARN) -o $@ examples/sts.c

$(BUILD):
	@mkdir -p $(BUILD)

$(BUILD)/demo: examples/demo.c $(HEADER) | $(BUILD)
	$(CC) -std=c99 $(OPT) $(STS_WARN) -o $@ examples/demo.c

demo: $(BUILD)/demo
	@cd $(BUILD) && ./demo

# Installs what the suite needs on a fresh Debian machine (cmocka, numpy, valgrind, clang, ...).
deps:
	@sh tests/deps.sh

include $(sort $(wildcard tests/*.mk))
include $(sort $(wildcard fuzz/*.mk))
include $(sort $(wildcard bench/*.mk))

test: deps
	@set -e; for s in $(TEST_STEPS); do echo "=== $$s"; $(MAKE) --no-print-directory $$s; done; echo "=== all test steps passed: $(TEST_STEPS)"

fuzz: deps
	@set -e; for s in $(FUZZ_STEPS); do echo "=== $$s"; $(MAKE) --no-print-directory $$s; done

bench: deps
	@set -e; for s in $(BENCH_STEPS); do echo "=== $$s"; $(MAKE) --no-print-directory $$s; done

clean:
	rm -rf $(BUILD) sts
