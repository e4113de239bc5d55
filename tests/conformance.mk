# Conformance: tests/test_conformance.c runs every case of tests/conformance/shared/expected.tsv and
# tests/conformance/own.tsv through every read path (plain, ASan+UBSan and valgrind via UNIT_SRCS).
# test-conformance-gen regenerates the own corpus into a temporary folder and diffs it against the
# checked-in files, so tests/conformance/gen_cases.py and the corpus never drift.
UNIT_SRCS += tests/test_conformance.c

.PHONY: test-conformance-gen
test-conformance-gen:
	@set -e; d=$$(mktemp -d); trap 'rm -rf "$$d"' EXIT INT TERM; \
	$(PYTHON) tests/conformance/gen_cases.py "$$d" >/dev/null; \
	diff -r tests/conformance/own "$$d/own"; \
	diff tests/conformance/own.tsv "$$d/own.tsv"; \
	diff tests/conformance/shared_strict.tsv "$$d/shared_strict.tsv"; \
	echo "conformance corpus matches tests/conformance/gen_cases.py"
TEST_STEPS += test-conformance-gen
