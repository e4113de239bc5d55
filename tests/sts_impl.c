/* sts_impl.c - the implementation, compiled once per build kind (plain, ASan+UBSan, valgrind, each
   cross architecture) and linked into the test programs of LINKED_TESTS (Makefile): those that use
   no internals and no configuration macros, and so need nothing of the header but its public API.
   They are compiled with -DSTS_TEST_LINKED, which leaves STS_IMPLEMENTATION undefined in them. The
   other programs compile the implementation themselves, as every user of the header does. */
#define STS_IMPLEMENTATION
#include "../safetensors_spark.h"
