# Format documentation checks: the rules block of format/SPECIFICATION.md equals `./sts rules`,
# conformance headers validate against format/safetensors-header.schema.json, and the dtype lists agree.
.PHONY: test-spec
test-spec: sts
	$(PYTHON) tests/check_spec.py
TEST_STEPS += test-spec
