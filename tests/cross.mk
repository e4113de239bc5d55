# Other architectures (issue 11): the cmocka suites built with the Debian cross compilers and run
# under qemu-user, STS_TEST_LEVEL=quick:
#   s390x    big-endian: files, tensor cells and tensor views are little-endian bytes while array
#            cells and the host's integers are not, so every byte-order slip shows up here
#   aarch64  little-endian with the NEON codec kernels and the CRC-32C instructions
# test-cross builds every program for both (-O1, $(JOBS) at a time) and runs each one as soon as it
# is built. The programs: tests/test_core_*.c, test_codec, test_checksum, test_conformance,
# tests/test_dataset_*.c, test_sha256, test_lineage and tests/test_archive*.c. Left out, on both: test_core_parse_nosimd and test_core_roundtrip_nosimd
# (STS_NO_SIMD cuts only the SSE2 scanner from what they test, so there they are test_core_parse
# and test_core_roundtrip again). Nothing else is left out: forks, SIGKILL, threads, file locks,
# /proc/self/io and test_dataset_read_hf's python3 child (a host program, run natively by the kernel)
# all work under qemu-user.
# Needs gcc-s390x-linux-gnu, gcc-aarch64-linux-gnu, qemu-user and libcmocka-dev for s390x and arm64
# (tests/deps.sh installs them); without them test-cross says what is missing and skips, except
# under CI=true, where it fails. Programs link dynamically: QEMU_LD_PREFIX=/ points qemu at the
# multiarch loaders and libraries in /lib and /usr/lib/<triple>.
CROSS_ARCHS := s390x aarch64
CROSS_OPT   ?= -O1
CROSS_SKIP  := test_core_parse_nosimd test_core_roundtrip_nosimd
CROSS_NAMES := $(filter-out $(CROSS_SKIP),$(patsubst tests/%.c,%,$(sort $(wildcard tests/test_core_*.c) tests/test_codec.c \
                 tests/test_checksum.c tests/test_conformance.c $(wildcard tests/test_dataset_*.c) \
                 tests/test_sha256.c tests/test_lineage.c $(wildcard tests/test_archive*.c))))
# One stamp per (arch, program): its run passed.
CROSS_RUNS  := $(foreach a,$(CROSS_ARCHS),$(patsubst %,$(BUILD)/cross/$(a)/ok/%,$(CROSS_NAMES)))
# The programs are prerequisites only through a pattern rule: keep them (not intermediate files).
.SECONDARY: $(foreach a,$(CROSS_ARCHS),$(patsubst %,$(BUILD)/cross/$(a)/bin/%,$(CROSS_NAMES)))

define STS_CROSS_RULES
$(BUILD)/cross/$(1)/sts_impl.o: tests/sts_impl.c $(HEADER)
	@mkdir -p $$(dir $$@)
	@$(1)-linux-gnu-gcc -std=c99 $(CROSS_OPT) -pipe $(STS_WARN) -c -o $$@ $$<
$(BUILD)/cross/$(1)/bin/%: tests/%.c $(HEADER) $(wildcard tests/*.h) $(BUILD)/cross/$(1)/sts_impl.o
	@mkdir -p $$(dir $$@)
	@$(1)-linux-gnu-gcc -std=c99 $(CROSS_OPT) -pipe $(STS_WARN) $$(call sts_linked_flag,$$*) -o $$@ $$< $$(call sts_linked_obj,$$*,$(BUILD)/cross/$(1)/sts_impl.o) $(UNIT_LIBS)
$(BUILD)/cross/$(1)/ok/%: $(BUILD)/cross/$(1)/bin/%
	@mkdir -p $$(dir $$@)
	@t0=$$$$(date +%s); if STS_TEST_LEVEL=quick QEMU_LD_PREFIX=/ qemu-$(1) $$< >$$@.log 2>&1; then \
	    echo "--- $(1) $$*: passed ($$$$(($$$$(date +%s) - t0)) s)"; touch $$@; \
	else rc=$$$$?; tail -n 40 $$@.log; echo "--- $(1) $$*: FAILED, exit $$$$rc (log: $$@.log)"; exit 1; fi
endef
$(foreach a,$(CROSS_ARCHS),$(eval $(call STS_CROSS_RULES,$(a))))

.PHONY: test-cross
test-cross:
	@missing=""; for a in $(CROSS_ARCHS); do \
	    command -v $$a-linux-gnu-gcc >/dev/null 2>&1 || missing="$$missing $$a-linux-gnu-gcc"; \
	    command -v qemu-$$a >/dev/null 2>&1 || missing="$$missing qemu-$$a"; \
	    [ -e /usr/lib/$$a-linux-gnu/libcmocka.so ] || missing="$$missing libcmocka-dev:$$(case $$a in aarch64) echo arm64;; *) echo $$a;; esac)"; \
	done; \
	if [ -n "$$missing" ]; then \
	    if [ "$$CI" = true ]; then echo "test-cross: FAILED, missing:$$missing (make deps installs them)"; exit 1; fi; \
	    echo "test-cross: skipped, missing:$$missing (make deps installs them as root or with sudo)"; exit 0; fi; \
	rm -rf $(BUILD)/cross/*/ok; t0=$$(date +%s); \
	$(MAKE) --no-print-directory -k -j$(JOBS) $(CROSS_RUNS) && \
	echo "test-cross: $(words $(CROSS_NAMES)) programs on each of $(CROSS_ARCHS) passed in $$(($$(date +%s) - t0)) s"
TEST_STEPS += test-cross
