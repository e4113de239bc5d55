# The header's structure (tests/check_layers.py): every section's banner says what it may call and
# the code keeps to it (layers call earlier layers only; dataset read calls nothing in dataset
# write), no system call after the io layer, and the table of contents lists every anchor in file
# order. --self-test first plants one fault of each kind in a copy and fails unless each is found.
.PHONY: test-layers
test-layers:
	@$(PYTHON) tests/check_layers.py --self-test $(HEADER)
TEST_STEPS += test-layers
