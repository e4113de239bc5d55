/* dequant_shlib.c - the library built as a shared object for tests/check_dequant_numpy.py, which
   calls sts_dequantize through ctypes (tests/dequant.mk: build/dequant/libsts_dequant.so). Two
   test entry points reach every instruction-set level: sts_test_dequantize_at runs the decoders
   of level isa (0 = scalar) and sts_test_dequant_isa says the best level here. */
#define STS_IMPLEMENTATION
#include "../safetensors_spark.h"

int sts_test_dequantize_at(float *dst, const void *src, const char *type_name, size_t count, int isa);
int sts_test_dequant_isa(void);
int sts_test_dequantize_at(float *dst, const void *src, const char *type_name, size_t count, int isa) {
    return (int)sts__dequantize_at(dst, src, type_name, count, isa);
}
int sts_test_dequant_isa(void) { return sts__isa(); }
