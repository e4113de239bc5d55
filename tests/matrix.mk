# Compile matrix: C99/C11/C++11/C++17 under gcc and clang at -O0 and -O2, each STS_NO_* cut,
# two STS_STATIC TUs, double inclusion, allocator macros (all or none), both quick starts and the
# examples listed in EXAMPLES_MATRIX (examples/*.mk); every configuration with -Wall -Wextra
# -Wpedantic -Werror. See tests/compile_matrix.sh.
.PHONY: test-matrix print-examples-matrix
# Under make test (tests/run_steps.sh sets STS_IN_SUITE=1) the examples' gcc -O2 builds are left to
# the steps that build them with the same flags (test-build, test-demo, test-mpi).
test-matrix:
	@CLANG=$(CLANG) EXAMPLES_MATRIX="$(EXAMPLES_MATRIX)" $(if $(STS_IN_SUITE),MATRIX_EXAMPLES_GCC_O2=0) \
	    bash tests/compile_matrix.sh
# For tests/compile_matrix.sh run by hand.
print-examples-matrix:
	@echo $(EXAMPLES_MATRIX)
TEST_STEPS += test-matrix
