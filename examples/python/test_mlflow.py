#!/usr/bin/python3
"""Tests of safetensors_spark_mlflow (issue 16), everything up to the MLflow call: MLflow cannot be
installed on these machines (not in Debian, no package index), and nothing stands in for it.

- lineage_record's record, serialised with json.dumps, is byte for byte the line `sts lineage`
  prints (the C implementation), for batch, KV, empty, non-ASCII and not-UTF-8 datasets, with
  names, URIs and contexts;
- log_dataset has the connector's signature (path, run_id=None, name="safetensors_dataset") plus
  context=None;
- a missing manifest raises FileNotFoundError("dataset_manifest.json not found at: <path>"),
  before anything else; an invalid one raises ValueError;
- without mlflow importable, log_dataset raises ImportError naming mlflow (after the manifest check).

usage: test_mlflow.py STS     (unittest; exit 0 when every test passes)
"""
import importlib.util
import inspect
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import safetensors_spark_mlflow as M  # noqa: E402

STS = None


def pack(out, cols, extra):
    args = [STS, "pack", out]
    for name, path in cols:
        args += [b"--column", name.encode() + b"=" + path]
    subprocess.run(args + extra, check=True, capture_output=True)


class Lineage(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.root = tempfile.mkdtemp(prefix="sts-mlflow.").encode()
        j = lambda *p: os.path.join(cls.root, *p)
        np.save(os.fsdecode(j(b"f.npy")), np.arange(24, dtype=np.float32).reshape(6, 2, 2))
        np.save(os.fsdecode(j(b"e.npy")), np.zeros((0, 3), dtype=np.float32))
        with open(j(b"keys"), "w") as f:
            f.write("".join(f"k{i}\n" for i in range(6)))
        cls.dirs = {}
        for label, out, cols, extra in [
            ("batch", b"batch", [("x", j(b"f.npy")), ("émb", j(b"f.npy"))], [b"--batch-size", b"4"]),
            ("kv", b"kv", [("x", j(b"f.npy"))], [b"--keys", j(b"keys"), b"--dtype", b"BF16"]),
            ("empty", b"empty", [("x", j(b"e.npy"))], [b"--batch-size", b"2"]),
            ("unicode", "données ✓".encode(), [("x", j(b"f.npy"))], [b"--batch-size", b"5"]),
            ("not UTF-8", b"raw\xff", [("x", j(b"f.npy"))], [b"--batch-size", b"3"]),
        ]:
            pack(j(out), cols, extra)
            cls.dirs[label] = j(out)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.root)

    def tool(self, path, *args):
        p = subprocess.run([STS, "lineage", path] + list(args), capture_output=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        return p.stdout

    def test_same_bytes_as_sts_lineage(self):
        cases = [({}, []), ({"name": "zwölf \"q\" \\ \x7f 😀"}, [b"--name", "zwölf \"q\" \\ \x7f 😀".encode()]),
                 ({"uri": "s3://b/p"}, [b"--uri", b"s3://b/p"]), ({"uri": "file:///d"}, [b"--uri", b"file:///d"]),
                 ({"context": "training"}, [b"--context", b"training"])]
        n = 0
        for label, d in self.dirs.items():
            for kw, args in cases:
                with self.subTest(dataset=label, options=kw):
                    line = self.tool(d, *args)
                    rec = M.lineage_record(d, **kw)
                    self.assertEqual((json.dumps(rec) + "\n").encode(), line)
                    n += 1
        self.assertEqual(n, 25)

    def test_relative_path(self):
        cwd = os.getcwd()
        try:
            os.chdir(self.root)
            os.makedirs("x", exist_ok=True)
            self.assertEqual((json.dumps(M.lineage_record("./x/../kv/")) + "\n").encode(),
                             self.tool(os.path.join(self.root, b"kv")))
        finally:
            os.chdir(cwd)

    def test_signature(self):
        sig = inspect.signature(M.log_dataset)
        self.assertEqual(list(sig.parameters), ["path", "run_id", "name", "context"])
        self.assertEqual([p.default for p in sig.parameters.values()][1:], [None, "safetensors_dataset", None])

    def test_missing_manifest(self):
        d = tempfile.mkdtemp(prefix="sts-mlflow-none.")
        try:
            for f in (M.log_dataset, M.lineage_record):
                with self.assertRaises(FileNotFoundError) as cm:
                    f(d)
                self.assertEqual(str(cm.exception), f"dataset_manifest.json not found at: {d}")
        finally:
            os.rmdir(d)

    def test_invalid_manifest(self):
        d = tempfile.mkdtemp(prefix="sts-mlflow-bad.")
        try:
            with open(os.path.join(d, "dataset_manifest.json"), "w") as f:
                f.write('{"shards": [')
            with self.assertRaises(ValueError):
                M.lineage_record(d)
            p = subprocess.run([STS, "lineage", d], capture_output=True)
            self.assertEqual(p.returncode, 1)
            self.assertIn(b"dataset.manifest", p.stderr)
        finally:
            shutil.rmtree(d)

    @unittest.skipIf(importlib.util.find_spec("mlflow") is not None, "mlflow is installed: the ImportError path is moot")
    def test_without_mlflow(self):
        with self.assertRaises(ImportError) as cm:
            M.log_dataset(os.fsdecode(self.dirs["batch"]))
        self.assertIn("mlflow", str(cm.exception))


if __name__ == "__main__":
    STS = os.path.abspath(sys.argv.pop(1)).encode()
    unittest.main(verbosity=1)
