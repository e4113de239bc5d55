# Core unit tests (layers 1-6 of safetensors_spark.h): parse and validation, writer, io,
# allocation-failure injection, round-trip properties, and the parse and round-trip suites again
# under STS_NO_SIMD. The generic rules in the Makefile build and run each one plain (-O2), under
# ASan+UBSan and under valgrind (the last two with STS_TEST_LEVEL=quick).
UNIT_SRCS += tests/test_core_parse.c tests/test_core_writer.c tests/test_core_io.c tests/test_core_alloc.c \
             tests/test_core_roundtrip.c tests/test_core_parse_nosimd.c tests/test_core_roundtrip_nosimd.c
