/* test_dataset_read_scan_plain.c - the scan-reader suite again without _GNU_SOURCE (no preadv2 with
   RWF_NOWAIT: plain reads, one in 16 timed to tell uncached files) and with STS_NO_MMAP (files read
   whole for their data). */
#define STS_TEST_SCAN_PLAIN
#define STS_NO_MMAP
#include "test_dataset_read_scan.c"
