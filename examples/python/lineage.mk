# examples/python/lineage.mk - MLflow lineage from Python (issue 16): examples/python/safetensors_spark_mlflow.py,
# log_dataset with the connector's signature and lineage_record, the record `sts lineage` prints.
#   make test-mlflow-py   a step of `make test`: the Python record equals the tool's bytes on batch,
#                         KV, empty, non-ASCII and not-UTF-8 datasets; the connector's errors; up to the
#                         MLflow call (MLflow is not installable here: not in Debian, no package index)
.PHONY: test-mlflow-py
test-mlflow-py: sts
	@$(PYTHON) examples/python/test_mlflow.py ./sts
TEST_STEPS += test-mlflow-py
