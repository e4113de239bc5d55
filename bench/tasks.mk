# bench/tasks.mk - many task writers at once (issue 17): N = 1, 2, 4, 8, 16 task writers of one job in
# one folder, as threads and as processes, batch and KV mode, against N raw writers of the same file
# sizes in the same run (bench/bench_tasks.c). Goal: >= 0.8x the parallel raw figure at every N.
#   make bench-tasks   64 MiB per task by default (BENCH_TASKS_ARGS: --n, --mib, --runs, --only,
#                      --kind, --durable, --quick); scratch files under BENCH_DIR (default /tmp),
#                      about 2 GiB at N = 16; the scaling curves as a plot in $(BUILD)/bench/tasks.svg
BENCH_TASKS_ARGS ?=

$(BUILD)/bench/bench_tasks: bench/bench_dataset_util.h tests/fs_util.h

.PHONY: bench-tasks
bench-tasks: $(BUILD)/bench/bench_tasks
	$(if $(BENCH_DIR),BENCH_DIR=$(BENCH_DIR)) ./$(BUILD)/bench/bench_tasks --svg $(BUILD)/bench/tasks.svg $(BENCH_TASKS_ARGS)

BENCH_STEPS += bench-tasks
$(BUILD)/bench/bench_tasks: BENCH_LIBS += -pthread
