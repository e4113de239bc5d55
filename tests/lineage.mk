# Lineage (layer 11, issue 16): the dataset record MLflow stores. tests/test_lineage.c runs in
# test-unit, test-asan and test-valgrind (records against json.dumps/hashlib output, abspath,
# dtype names, errors, every allocation refused); test-lineage runs tests/check_lineage.py, the
# cross-check of `sts lineage` on datasets written by `sts pack` against MLflow's rules written in
# Python (MLflow itself is not installable here: not in Debian, no package index).
UNIT_SRCS += tests/test_lineage.c
.PHONY: test-lineage
test-lineage: sts
	@$(PYTHON) tests/check_lineage.py ./sts
TEST_STEPS += test-lineage
