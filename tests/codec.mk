# Codecs (layer 7, sts_convert).
#   test-unit / test-asan / test-valgrind   tests/test_codec.c through the generic rules: every
#                       instruction-set level against the independent reference tests/codec_ref.h;
#                       all 2^32 F32 patterns into F16/BF16 at full strength, sampled under
#                       STS_TEST_LEVEL=quick (the ASan and valgrind runs)
#   test-codec-nosimd   the same program built with -DSTS_NO_SIMD (scalar code only), full strength
#   test-codec-numpy    tests/check_codec_numpy.py: sts_convert through ctypes against numpy's astype
#   test-cross          (tests/cross.mk) the program again, quick, on big-endian s390x and on
#                       AArch64, where the NEON kernels are used, under qemu-user
UNIT_SRCS += tests/test_codec.c

$(BUILD)/unit/test_codec $(BUILD)/asan/test_codec $(BUILD)/vg/test_codec: tests/codec_ref.h

$(BUILD)/unit/test_codec_nosimd: tests/test_codec.c tests/codec_ref.h $(HEADER)
	@mkdir -p $(dir $@)
	$(CC) -std=c99 $(OPT) $(STS_WARN) -DSTS_NO_SIMD -DSTS_STATIC -o $@ $< -lm -lpthread

$(BUILD)/codec/libsts_codec.so: tests/codec_shlib.c $(HEADER)
	@mkdir -p $(dir $@)
	$(CC) -std=c99 -O2 -fPIC -shared $(STS_WARN) -o $@ $<

.PHONY: test-codec-nosimd test-codec-numpy
test-codec-nosimd: $(BUILD)/unit/test_codec_nosimd
	./$(BUILD)/unit/test_codec_nosimd
test-codec-numpy: $(BUILD)/codec/libsts_codec.so
	$(PYTHON) tests/check_codec_numpy.py $(BUILD)/codec/libsts_codec.so
TEST_STEPS += test-codec-nosimd test-codec-numpy

