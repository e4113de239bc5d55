# The sts tool, the .npy bridge, the demo and the install (issue 6).
#   test-cli      tests/test_cli.sh: every command of ./sts on small fixtures (tests/cli/make_fixtures.py),
#                 success and error paths; normalized stdout, stderr and exit code against the
#                 checked-in tests/cli/expected/*.txt (UPDATE=1 tests/test_cli.sh rewrites them)
#   test-npy      tests/test_npy.py: numpy writes .npy files (versions 1-3, every dtype), sts pack /
#                 get --npy / convert move them through datasets, numpy reads them back exactly;
#                 Fortran-order, big-endian, object and structured arrays are refused
#   test-demo     make demo: both datasets written and re-read, and the key lookups match
#   test-install  tests/test_install.sh: make install PREFIX=<tmp>, a program built with
#                 pkg-config --cflags safetensors_spark, the installed sts, make uninstall
.PHONY: test-cli test-npy test-demo test-install

test-cli: sts
	@STS=./sts PYTHON=$(PYTHON) bash tests/test_cli.sh

test-npy: sts
	@$(PYTHON) tests/test_npy.py ./sts

# The demo exits nonzero when a lookup reads back wrong; on top, its report must show both datasets
# with 60000 rows, four lookups whose printed values equal the expected ones, and the BF16 batch file.
test-demo: sts $(BUILD)/demo
	@set -e; log=$(BUILD)/demo.log; \
	if ! $(MAKE) --no-print-directory demo > $$log 2>&1; then cat $$log; echo "test-demo: make demo failed"; exit 1; fi; \
	cat $$log; \
	awk '/^batch +[0-9]+ +60000 / { b = 1 } \
	     /^kv\+index +[0-9]+ +60000 / { k = 1 } \
	     /^  sample-[0-9]+: label / { n++; \
	         if (match($$0, /label -?[0-9]+ \(expected -?[0-9]+\)/)) { split(substr($$0, RSTART, RLENGTH), a, /[ ()]+/); if (a[2] != a[4]) bad++ } else bad++; \
	         if (match($$0, /embedding\[0\] -?[0-9.]+ \(expected -?[0-9.]+\)/)) { split(substr($$0, RSTART, RLENGTH), a, /[ ()]+/); if (a[2] != a[4]) bad++ } else bad++ } \
	     /^batch file .*: embedding BF16 \[1000,128\]/ { bf = 1 } \
	     END { if (!b || !k || n != 4 || bad || !bf) { \
	             printf "test-demo: FAIL (batch row %d, kv+index row %d, lookups %d of 4, mismatches %d, BF16 batch file %d)\n", b, k, n, bad, bf; exit 1 } \
	           print "test-demo: both datasets written and re-read, 4 of 4 key lookups matched" }' $$log

test-install: sts
	@MAKE="$(MAKE)" CC="$(CC)" sh tests/test_install.sh

TEST_STEPS += test-cli test-npy test-demo test-install
