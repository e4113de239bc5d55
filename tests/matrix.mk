# Compile matrix: C99/C11/C++11/C++17 under gcc and clang at -O0 and -O2, each STS_NO_* cut,
# two STS_STATIC TUs, double inclusion, allocator macros (all or none), both quick starts and
# examples/*.c; every configuration with -Wall -Wextra -Wpedantic -Werror. See tests/compile_matrix.sh.
.PHONY: test-matrix
test-matrix:
	@CLANG=$(CLANG) bash tests/compile_matrix.sh
TEST_STEPS += test-matrix
