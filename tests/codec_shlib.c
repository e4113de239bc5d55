/* codec_shlib.c - the library with the codecs, built as a shared object for tests/check_codec_numpy.py,
   which calls sts_convert through ctypes (tests/codec.mk: build/codec/libsts_codec.so). */
#define STS_IMPLEMENTATION
#include "../safetensors_spark.h"
