"""MLflow lineage for datasets written by safetensors_spark.h (issue 16).

    from safetensors_spark_mlflow import log_dataset, lineage_record
    with mlflow.start_run():
        log_dataset("data/", context="training")      # the connector's signature, plus context

lineage_record(path, ...) builds, in plain Python, the record `sts lineage` prints: what MLflow
stores for MetaDataset(source, name, schema) logged with mlflow.log_input (format/SPECIFICATION.md
section 16). The two implementations give the same bytes; examples/python/test_mlflow.py checks it.

log_dataset(path, run_id=None, name="safetensors_dataset", context=None) has the connector's
signature and errors (FileNotFoundError without a manifest, RuntimeError without an active run or
a run_id). Unlike the connector, it logs MLflow's own source object (resolve_dataset_source of the
path, {"uri": ...}), so mlflow.data.get_source() resolves what it stored. It needs mlflow (and
ml_dtypes for a BF16 or F8 column); neither is importable on the machines that test this project,
so the MLflow calls themselves are untested here (see the README).
"""
import hashlib
import json
import os

__all__ = ["lineage_record", "log_dataset", "NUMPY_DTYPE_NAMES"]

# The numpy name of each dtype; ml_dtypes' where numpy has none (SPECIFICATION 16.1).
NUMPY_DTYPE_NAMES = {
    "BOOL": "bool", "U8": "uint8", "I8": "int8", "U16": "uint16", "I16": "int16", "U32": "uint32",
    "I32": "int32", "U64": "uint64", "I64": "int64", "F16": "float16", "F32": "float32",
    "F64": "float64", "C64": "complex64", "BF16": "bfloat16", "F8_E4M3": "float8_e4m3fn",
    "F8_E5M2": "float8_e5m2", "F8_E8M0": "float8_e8m0fnu", "F8_E4M3FNUZ": "float8_e4m3fnuz",
    "F8_E5M2FNUZ": "float8_e5m2fnuz", "F4": "float4_e2m1fn", "F6_E2M3": "float6_e2m3fn",
    "F6_E3M2": "float6_e3m2fn",
}
MANIFEST = "dataset_manifest.json"


def _manifest(path):
    p = os.path.join(path, MANIFEST)
    if not os.path.isfile(p):
        raise FileNotFoundError(f"{MANIFEST} not found at: {os.fsdecode(path)}")
    with open(p, "rb") as f:
        try:
            man = json.load(f)
        except ValueError as e:
            raise ValueError(f"{os.fsdecode(p)}: not valid JSON ({e})") from None
    if not isinstance(man, dict) or not isinstance(man.get("shards"), list):
        raise ValueError(f"{os.fsdecode(p)}: no shards array")
    return man


def _specs(man):
    """The manifest's columns as MLflow TensorSpec dicts (Schema.to_dict()); batch: leading -1."""
    batch = man.get("mode", "batch" if man.get("batch_size", 1) else "kv") == "batch"
    out = []
    for col, c in man.get("schema", {}).items():
        if c.get("dtype") not in NUMPY_DTYPE_NAMES:
            raise ValueError(f"{MANIFEST}: column {col!r} has an unknown dtype {c.get('dtype')!r}")
        shape = [int(d) for d in c["shape"]]
        if batch and shape:
            shape[0] = -1
        out.append({"name": col, "type": "tensor",
                    "tensor-spec": {"dtype": NUMPY_DTYPE_NAMES[c["dtype"]], "shape": shape}})
    return out, batch


def _source(path, uri):
    if uri is None:
        return os.path.abspath(os.fsdecode(path)), "local"
    if uri == "":
        raise ValueError("the uri is empty")
    scheme, sep, _ = uri.partition(":")
    ok = sep and scheme[:1].isascii() and scheme[:1].isalpha() and all(
        ch.isascii() and (ch.isalnum() or ch in "+-.") for ch in scheme)
    scheme = scheme.lower() if ok else ""
    return uri, ("local" if scheme in ("", "file") else scheme)


def lineage_record(path, name="safetensors_dataset", uri=None, context=None):
    """The record `sts lineage` prints for the dataset at path, as a dict of strings (json.dumps
    of it is the tool's line). uri: the source's URI instead of the absolute path. path may be
    bytes (a name that is not UTF-8 is read as Python reads file names: surrogateescape)."""
    path = os.fsdecode(path)
    man = _manifest(path)
    specs, batch = _specs(man)
    source_uri, source_type = _source(path, uri)
    source = json.dumps({"uri": source_uri})
    config = {"name": name, "source": source, "source_type": source_type, "schema": specs if specs else ""}
    rec = {"name": name, "digest": hashlib.sha256(json.dumps(config).encode("utf-8")).hexdigest()[:8],
           "source": source, "source_type": source_type}
    if specs:
        rec["schema"] = json.dumps({"mlflow_colspec": specs})
    shards = man["shards"]
    if all("samples_count" in s for s in shards):
        rows = sum(s["samples_count"] for s in shards)
    else:
        rows = man.get("total_samples", 0)
    rec["profile"] = json.dumps({"num_rows": rows, "num_shards": len(shards),
                                 "total_bytes": sum(s["bytes"] for s in shards), "format": "safetensors",
                                 "mode": "batch" if batch else "kv"})
    if context is not None:
        rec["context"] = context
    return rec


def log_dataset(path, run_id=None, name="safetensors_dataset", context=None):
    """Logs the dataset at path as an input of the active run (or of run_id): MLflow's MetaDataset
    with its filesystem source and a tensor schema, as `sts lineage` describes it. Raises
    FileNotFoundError without a manifest, RuntimeError without an active run and run_id, and
    ImportError when mlflow is not installed."""
    rec = lineage_record(path, name=name, context=context)   # FileNotFoundError first, as the connector
    try:
        import mlflow
        import numpy as np
        from mlflow.data.dataset_source_registry import resolve_dataset_source
        from mlflow.data.meta_dataset import MetaDataset
        from mlflow.types import Schema, TensorSpec
    except ImportError as e:
        raise ImportError(f"log_dataset needs mlflow (pip install mlflow): {e}") from e
    if run_id is None and mlflow.active_run() is None:
        raise RuntimeError("log_dataset: no active MLflow run and no run_id given")
    cols = json.loads(rec["schema"])["mlflow_colspec"] if "schema" in rec else []
    if any(not hasattr(np, c["tensor-spec"]["dtype"]) for c in cols):
        import ml_dtypes  # noqa: F401  registers bfloat16 and the float8 types with numpy
    specs = [TensorSpec(np.dtype(c["tensor-spec"]["dtype"]), tuple(c["tensor-spec"]["shape"]), name=c["name"])
             for c in cols]
    source = resolve_dataset_source(json.loads(rec["source"])["uri"])
    ds = MetaDataset(source, name=name, schema=Schema(specs) if specs else None)
    if run_id is None:
        mlflow.log_input(ds, context=context)
        return
    from mlflow.entities import DatasetInput, InputTag
    from mlflow.utils.mlflow_tags import MLFLOW_DATASET_CONTEXT
    tags = [InputTag(key=MLFLOW_DATASET_CONTEXT, value=context)] if context else []
    mlflow.MlflowClient().log_inputs(run_id, [DatasetInput(dataset=ds._to_mlflow_entity(), tags=tags)])
