# bench/gguf.mk - GGUF header parse + validation (issue 14): GB/s of header bytes of a
# Llama-3.1-8B-shaped file (292 tensors, 29 KVs, 128k tokens, 280k merges; the data a hole of a sparse
# file), ours from memory, mapped and through a callback, beside @huggingface/gguf on the same file in
# the same run (node; make test-gguf-hf installs the package). Figures in bench/RESULTS.md ("GGUF (issue 14)").
#   make bench-gguf             BENCH_GGUF_ARGS passes options (--runs N); BENCH_DIR moves the file
BENCH_GGUF_ARGS ?=

.PHONY: bench-gguf
bench-gguf: $(BUILD)/bench/bench_gguf
	$(if $(BENCH_DIR),BENCH_DIR=$(BENCH_DIR)) ./$(BUILD)/bench/bench_gguf $(BENCH_GGUF_ARGS)

BENCH_STEPS += bench-gguf
