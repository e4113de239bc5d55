# Dequantisation of ggml block types (layer 7, >>dequant: sts_dequantize).
#   test-unit / test-asan / test-valgrind   tests/test_dequant.c: geometry and arguments, blocks
#                       packed here from chosen quants against their exact values, and every
#                       SIMD level against the scalar decoders on random blocks (quick level under
#                       the sanitizers)
#   test-dequant-numpy  tests/check_dequant_numpy.py: each decoder, on every level, against a
#                       reference written in numpy from the block layouts, bit for bit
UNIT_SRCS += tests/test_dequant.c

$(BUILD)/dequant/libsts_dequant.so: tests/dequant_shlib.c $(HEADER)
	@mkdir -p $(dir $@)
	$(CC) -std=c99 -O2 -fPIC -shared $(STS_WARN) -o $@ $<

.PHONY: test-dequant-numpy
test-dequant-numpy: $(BUILD)/dequant/libsts_dequant.so
	$(PYTHON) tests/check_dequant_numpy.py $(BUILD)/dequant/libsts_dequant.so
TEST_STEPS += test-dequant-numpy

# test-cross (tests/cross.mk) runs tests/test_dequant.c too: on big-endian s390x the blocks'
# little-endian fields meet a host of the other order. Added here, after cross.mk's lists are set
# (the fragments are included in name order; test-cross's recipe expands them when it runs).
CROSS_NAMES += test_dequant
CROSS_RUNS  += $(foreach a,$(CROSS_ARCHS),$(BUILD)/cross/$(a)/ok/test_dequant)
.SECONDARY: $(foreach a,$(CROSS_ARCHS),$(BUILD)/cross/$(a)/bin/test_dequant)
