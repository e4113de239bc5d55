# examples/mpi/mpi.mk - the MPI example (issue 15): build/mpi/sts_mpi (examples/mpi/sts_mpi.c), one
# task writer per rank committed at rank 0, and a read by every rank through the balance assignment.
#   make mpi         the program (needs mpicc: Debian's openmpi-bin + libopenmpi-dev)
#   make test-mpi    a step of `make test`: installs openmpi-bin libopenmpi-dev when mpicc is missing
#                    (examples/mpi/openmpi.sh; prints SKIPPED and why when it cannot, fails under
#                    CI=true), then examples/mpi/test_mpi.sh with 4 ranks: a good write and read, the
#                    read check's negatives, a rank whose writer dies, a rank whose writes fail
#   make bench-mpi   a step of `make bench`: write and read MB/s with 1, 2 and 4 ranks beside a
#                    baseline of the same bytes through write()/read() in one process
#                    (BENCH_MPI_ARGS: sts_mpi's options, default --rows 262144 --dim 256 --batch 8192 --repeat 5)
MPI_SRC  := examples/mpi
MPI_OUT  := $(BUILD)/mpi
MPICC    ?= mpicc
# as root, OpenMPI's mpirun refuses to start without --allow-run-as-root. Debian's OpenMPI 4.1 needs
# nothing else in a container here; where it does, e.g. MPIRUN="mpirun --oversubscribe --mca btl self,vader"
MPIRUN   ?= mpirun --oversubscribe $(if $(filter 0,$(shell id -u)),--allow-run-as-root)
BENCH_MPI_ARGS ?= --rows 262144 --dim 256 --batch 8192 --repeat 5

EXAMPLES_MATRIX += $(MPI_SRC)/sts_mpi.c:mpicc:-pthread

$(MPI_OUT)/sts_mpi: $(MPI_SRC)/sts_mpi.c $(HEADER)
	@mkdir -p $(dir $@)
	$(MPICC) -std=c99 $(OPT) $(STS_WARN) -pthread -o $@ $(MPI_SRC)/sts_mpi.c

.PHONY: mpi test-mpi bench-mpi mpi-check mpi-bench-run
mpi: $(MPI_OUT)/sts_mpi

mpi-check: $(MPI_OUT)/sts_mpi
	@MPIRUN="$(MPIRUN) -np 4" bash $(MPI_SRC)/test_mpi.sh $(MPI_OUT)/sts_mpi

test-mpi:
	@sh $(MPI_SRC)/openmpi.sh test-mpi; rc=$$?; [ $$rc = 3 ] && exit 0; [ $$rc = 0 ] || exit $$rc; \
	$(MAKE) --no-print-directory mpi-check

# A scratch folder for the datasets (each run's removed by the program), removed after; the baseline
# runs in the 1-rank run.
mpi-bench-run: $(MPI_OUT)/sts_mpi
	@set -e; d=$$(mktemp -d $(or $(BENCH_DIR),$${TMPDIR:-/tmp})/sts-mpi-bench.XXXXXX); trap 'rm -rf "$$d"' EXIT INT TERM; \
	echo "bench-mpi: $$(nproc) CPUs; more ranks than CPUs are oversubscribed"; \
	for np in 1 2 4; do \
	    $(MPIRUN) -np $$np $(MPI_OUT)/sts_mpi bench "$$d" $(BENCH_MPI_ARGS) $$([ $$np = 1 ] && echo --baseline) \
	        > "$$d/log" 2>&1 || { cat "$$d/log"; echo "bench-mpi: the run with $$np ranks failed"; exit 1; }; \
	    grep -E '^(bench|baseline)' "$$d/log"; \
	done

bench-mpi:
	@sh $(MPI_SRC)/openmpi.sh bench-mpi; rc=$$?; [ $$rc = 3 ] && exit 0; [ $$rc = 0 ] || exit $$rc; \
	$(MAKE) --no-print-directory mpi-bench-run

TEST_STEPS  += test-mpi
BENCH_STEPS += bench-mpi
