# examples/python/python.mk - the PyTorch loader (issue 15): examples/python/safetensors_spark.py, a
# module of the standard library and numpy (torch optional) that reads this library's datasets.
#   make test-python    a step of `make test`: installs python3-torch when Debian's python3 cannot
#                       import it (examples/python/torch.sh; SKIPPED and why when it cannot, fails under
#                       CI=true), then runs examples/python/test_loader.py against datasets `sts pack` makes
#   make bench-python   a step of `make bench`: DataLoader throughput over batch shards against the same
#                       data in .npy files, in the same run (BENCH_PYTHON_ARGS="--gib 4": larger)
PY_SRC := examples/python
BENCH_PYTHON_ARGS ?=

.PHONY: test-python bench-python
test-python: sts
	@sh $(PY_SRC)/torch.sh test-python $(PYTHON); rc=$$?; [ $$rc = 3 ] && exit 0; [ $$rc = 0 ] || exit $$rc; \
	STS=$(abspath sts) $(PYTHON) $(PY_SRC)/test_loader.py

bench-python: sts
	@sh $(PY_SRC)/torch.sh bench-python $(PYTHON); rc=$$?; [ $$rc = 3 ] && exit 0; [ $$rc = 0 ] || exit $$rc; \
	STS=$(abspath sts) $(PYTHON) $(PY_SRC)/bench_loader.py $(if $(BENCH_DIR),--dir $(BENCH_DIR)) $(BENCH_PYTHON_ARGS)

TEST_STEPS  += test-python
BENCH_STEPS += bench-python
