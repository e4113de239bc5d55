#!/usr/bin/python3
"""Tests of examples/python/safetensors_spark.py (issue 15), run by `make test-python`.

Datasets are made by the built `sts pack` (STS=path, default ./sts) from .npy files numpy writes, in a
scratch folder removed afterwards. Checked:
  - a DataLoader with num_workers=2 on each of two simulated DDP ranks reads every sample exactly once
    (balance and round_robin, a padded tail, more workers than shards);
  - values are bit-identical to the source for F32, I64, F16 and BF16 (both roundings: expected bits
    computed here with numpy, BF16 also against torch's own rounding), through numpy, torch and the
    iterable dataset; the tensors share the mapped bytes (no copy);
  - assign_shards equals `sts assign` for several datasets, worker counts and strategies, errors included;
  - validate() reports has_manifest (True with a manifest, False without);
  - corrupted or truncated shards, a corrupted or stale index and a missing index raise DatasetError
    (never wrong data), in the main process and through DataLoader workers;
  - the numpy parts work with torch blocked (a subprocess with sys.modules["torch"] = None).
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import safetensors_spark as sts  # noqa: E402

STS = os.environ.get("STS", os.path.join(ROOT, "sts"))
import torch  # noqa: E402  (the test step installs python3-torch first)
from torch.utils.data import DataLoader  # noqa: E402

TMP = None


def run_sts(*args, check=True):
    p = subprocess.run([STS] + [str(a) for a in args], capture_output=True, text=True)
    if check and p.returncode != 0:
        raise AssertionError(f"sts {' '.join(map(str, args))}: {p.returncode}\n{p.stdout}{p.stderr}")
    return p


def pack(name, columns, *opts):
    """A dataset TMP/name from {column: array}; returns its folder."""
    out = os.path.join(TMP, name)
    cols = []
    for c, a in columns.items():
        f = os.path.join(TMP, f"{name}.{c}.npy")
        np.save(f, a)
        cols += ["--column", f"{c}={f}"]
    run_sts("pack", out, *cols, *opts, "--no-fsync")
    return out


def load_json(path):
    with open(path) as f:
        return json.load(f)


def save_json(path, obj):
    with open(path, "w") as f:
        json.dump(obj, f)


def copy(src, name):
    dst = os.path.join(TMP, name)
    shutil.copytree(src, dst)
    return dst


def source_f32(n, rng):
    """Finite floats over F16's and BF16's ranges, subnormals, overflows and ties, plus signed zeros
    and infinities (NaN is left out: its payload rules are the codec tests' business)."""
    x = (rng.uniform(-1, 1, size=n) * np.exp2(rng.integers(-30, 20, size=n))).astype(np.float32)
    special = np.array([0.0, -0.0, np.inf, -np.inf, 65504, 65519.99, 65520, 70000, -70000, 1e-8, -6e-8,
                        2.0 ** -24, 2.0 ** -25, 1 + 2.0 ** -11, 1 + 3 * 2.0 ** -11, 3.4e38, -3.4e38,
                        1.00390625, 1.01171875, 1e-40], dtype=np.float32)
    x[:len(special)] = special
    return x


def f16_bits(x, rounding):
    """F32 -> F16 bits: numpy's astype rounds to nearest even; truncation steps back toward zero
    where that rounded away (overflow included: 70000 truncates to 65504)."""
    with np.errstate(over="ignore"):
        y = x.astype(np.float16)
    bits = y.view(np.uint16).copy()
    if rounding == "truncate":
        away = np.abs(y.astype(np.float32)) > np.abs(x)
        bits[away] -= 1
    return bits


def bf16_bits(x, rounding):
    b = x.view(np.uint32).astype(np.uint64)
    if rounding == "nearest_even":
        b = b + 0x7FFF + ((b >> 16) & 1)
    return ((b >> 16) & 0xFFFF).astype(np.uint16)


def mapped_file(addr):
    """The file mapped at an address of this process (/proc/self/maps), or None: memory that is a
    mapping of the shard was not copied."""
    with open("/proc/self/maps") as f:
        for line in f:
            parts = line.split(None, 5)
            lo, hi = (int(x, 16) for x in parts[0].split("-"))
            if lo <= addr < hi:
                return parts[5].strip() if len(parts) > 5 else None
    return None


def setUpModule():
    global TMP
    TMP = tempfile.mkdtemp(prefix="sts-py.")


def tearDownModule():
    shutil.rmtree(TMP, ignore_errors=True)


class Values(unittest.TestCase):
    """Bit-identical values: numpy, torch, the iterable dataset."""

    @classmethod
    def setUpClass(cls):
        rng = np.random.default_rng(15)
        cls.n = 203
        cls.x = source_f32(cls.n * 6, rng).reshape(cls.n, 2, 3)
        cls.ids = (np.arange(cls.n, dtype=np.int64) * 0x100000001 - 7) * np.where(np.arange(cls.n) % 2, 1, -1)
        cls.plain = pack("plain", {"x": cls.x, "id": cls.ids}, "--batch-size", 16, "--generate-index")
        cls.conv = {}
        for dt in ("F16", "BF16"):
            for r in ("truncate", "nearest_even"):
                cls.conv[dt, r] = pack(f"{dt}_{r}", {"x": cls.x}, "--batch-size", 50, "--dtype", dt, "--rounding", r,
                                       "--generate-index")

    def rows(self, path):
        """Every row of a batch dataset, in order, through numpy key access."""
        ds = sts.Dataset(path)
        parts = {}
        for s in ds.list_shards():
            for col in ds.schema():
                parts.setdefault(col, []).append(ds.numpy(f"{s.path}/{col}")[:s.samples_count])
        return {c: np.concatenate(p) for c, p in parts.items()}

    def test_f32_i64(self):
        got = self.rows(self.plain)
        self.assertEqual(got["x"].dtype, np.float32)
        np.testing.assert_array_equal(got["x"].view(np.uint32), self.x.view(np.uint32))
        np.testing.assert_array_equal(got["id"], self.ids)

    def test_f16_bf16_both_roundings(self):
        flat = self.x.reshape(self.n, -1)
        for (dt, r), path in self.conv.items():
            with self.subTest(dtype=dt, rounding=r):
                got = self.rows(path)["x"]
                want = (f16_bits if dt == "F16" else bf16_bits)(flat, r).reshape(self.x.shape)
                self.assertEqual(got.dtype, np.float16 if dt == "F16" else np.uint16)
                np.testing.assert_array_equal(got.view(np.uint16), want)
                ds = sts.Dataset(path)
                key = ds.keys()[0]
                t = ds.tensor(key)
                self.assertEqual(t.dtype, torch.float16 if dt == "F16" else torch.bfloat16)
                np.testing.assert_array_equal(t.view(torch.int16).numpy().view(np.uint16), ds.numpy(key).view(np.uint16))
                if dt == "BF16":
                    # torch's own F32 -> BF16 rounding is nearest even; the numpy upcast is exact
                    if r == "nearest_even":
                        tb = torch.from_numpy(flat.copy()).to(torch.bfloat16).view(torch.int16).numpy().view(np.uint16)
                        np.testing.assert_array_equal(tb.reshape(self.x.shape), want)
                    np.testing.assert_array_equal(t.float().numpy().view(np.uint32),
                                                  sts.bf16_to_float32(ds.numpy(key)).view(np.uint32))

    def test_iterable_values(self):
        for path, col, conv in [(self.plain, "x", None)] + [(p, "x", k) for k, p in self.conv.items()]:
            with self.subTest(conv=conv):
                it = sts.ShardedIterableDataset(path, rank=0, world_size=1, strategy="round_robin")
                got = torch.stack([s[col] for s in it])
                if conv is None:
                    want = self.x.view(np.uint32)
                    np.testing.assert_array_equal(got.numpy().view(np.uint32), want)
                else:
                    dt, r = conv
                    want = (f16_bits if dt == "F16" else bf16_bits)(self.x.reshape(self.n, -1), r).reshape(self.x.shape)
                    np.testing.assert_array_equal(got.view(torch.int16).numpy().view(np.uint16), want)

    def test_zero_copy(self):
        ds = sts.Dataset(self.plain)
        s = ds.list_shards()[1]
        key = f"{s.path}/x"
        shard = ds.shard_path(1)
        a, t = ds.numpy(key), ds.tensor(key)
        self.assertEqual(mapped_file(a.ctypes.data), shard)
        self.assertEqual(mapped_file(t.data_ptr()), shard)
        h = ds.header(1)
        self.assertEqual(t.data_ptr() % 4096, (h.data_start + h.tensors["x"][2]) % 4096)
        self.assertFalse(a.flags.writeable)
        with self.assertRaises(ValueError):
            a[0, 0, 0] = 1
        self.assertIsInstance(ds[key], torch.Tensor)  # map-style access: torch where it is importable
        self.assertTrue(torch.equal(ds[ds.keys().index(key)], ds[key]))
        n = sum(b.shape[0] for b in DataLoader(ds, batch_size=None) if b.dtype == torch.float32)
        self.assertEqual(n, self.n)  # a DataLoader walks the keys (whole tensors) through ints
        # a torch in-place write stays in that tensor (copy-on-write): the file, the numpy view and
        # the next tensor() keep the data
        t.zero_()
        want = self.x[16:32].view(np.uint32)
        np.testing.assert_array_equal(a.view(np.uint32), want)
        np.testing.assert_array_equal(ds.tensor(key).numpy().view(np.uint32), want)
        np.testing.assert_array_equal(sts.Dataset(self.plain).numpy(key).view(np.uint32), want)
        # the iterable's samples are views of the shard's mapped bytes
        it = sts.ShardedIterableDataset(self.plain, rank=0, world_size=1, strategy="round_robin")
        samples = iter(it)
        s0, s1 = next(samples), next(samples)
        self.assertEqual(s1["x"].data_ptr() - s0["x"].data_ptr(), 6 * 4)
        self.assertEqual(mapped_file(s0["x"].data_ptr()), ds.shard_path(0))
        self.assertEqual(mapped_file(s0["id"].data_ptr()), ds.shard_path(0))
        # batch=True: an in-place change to a shard's tensor does not reach the next epoch
        whole = sts.ShardedIterableDataset(self.plain, rank=0, world_size=1, strategy="round_robin", batch=True)
        for b in whole:
            b["x"].zero_()
        got = torch.cat([b["x"] for b in whole])
        np.testing.assert_array_equal(got.numpy().view(np.uint32), self.x.view(np.uint32))


class Split(unittest.TestCase):
    """Workers and ranks: every sample exactly once."""

    @classmethod
    def setUpClass(cls):
        rng = np.random.default_rng(7)
        cls.n = 1000
        cls.ids = np.arange(cls.n, dtype=np.int64)
        v = rng.standard_normal((cls.n, 4)).astype(np.float32)
        cls.pad = pack("split_pad", {"id": cls.ids, "v": v}, "--batch-size", 37, "--tail", "pad")
        cls.few = pack("split_few", {"id": cls.ids[:10], "v": v[:10]}, "--batch-size", 4)

    def read_all(self, path, world, workers, strategy=None, batch_size=8):
        seen = []
        for rank in range(world):
            it = sts.ShardedIterableDataset(path, rank=rank, world_size=world, strategy=strategy)
            for b in DataLoader(it, batch_size=batch_size, num_workers=workers):
                seen += b["id"].tolist()
        return seen

    def test_two_ranks_two_workers(self):
        for strategy in ("balance", "round_robin"):
            with self.subTest(strategy=strategy):
                seen = self.read_all(self.pad, 2, 2, strategy)
                self.assertEqual(len(seen), self.n)  # padding rows never yielded
                self.assertEqual(sorted(seen), list(range(self.n)))

    def test_spawned_workers(self):
        it = sts.ShardedIterableDataset(self.few, rank=0, world_size=1)
        it.ds.header(0)  # state that must not travel as mappings
        seen = [int(i) for b in DataLoader(it, batch_size=4, num_workers=2, multiprocessing_context="spawn")
                for i in b["id"]]
        self.assertEqual(sorted(seen), list(range(10)))

    def test_more_workers_than_shards(self):
        seen = self.read_all(self.few, 2, 2)  # 3 shards, 4 workers: one reads nothing
        self.assertEqual(sorted(seen), list(range(10)))

    def test_split_is_the_assign_rule(self):
        it = sts.ShardedIterableDataset(self.pad, strategy="balance")
        names = [s.path for s in it.ds.list_shards()]
        byworker = it.ds.assign_shards(4, "balance")
        for rank in range(2):
            for w in range(2):
                got = [names[i] for i in it.shards_for(rank, 2, w, 2)]
                self.assertEqual(got, byworker[rank * 2 + w])

    def test_len_and_batch_option(self):
        it = sts.ShardedIterableDataset(self.pad, rank=1, world_size=2)
        self.assertEqual(len(it), len(list(it)))
        whole = sts.ShardedIterableDataset(self.pad, rank=0, world_size=1, batch=True)
        rows = [b["id"] for b in DataLoader(whole, batch_size=None, num_workers=2)]
        self.assertEqual(sorted(torch.cat(rows).tolist()), list(range(self.n)))

    def test_shuffle_and_epoch(self):
        it = sts.ShardedIterableDataset(self.pad, rank=0, world_size=1, shuffle=True, seed=3)
        a = [int(s["id"]) for s in it]
        it.set_epoch(1)
        b = [int(s["id"]) for s in it]
        self.assertEqual(sorted(a), list(range(self.n)))
        self.assertEqual(sorted(b), list(range(self.n)))
        self.assertNotEqual(a, b)


class Assign(unittest.TestCase):
    """assign_shards against `sts assign`."""

    def test_equals_cli(self):
        ids = np.arange(500, dtype=np.int64)
        sets = [pack("as1", {"id": ids}, "--batch-size", 64),
                pack("as2", {"id": ids[:7]}, "--batch-size", 3),
                pack("as3", {"id": ids[:1]}, "--batch-size", 8)]
        # unequal shards in one dataset: a KV dataset rolls over at 50 MiB; shards of a batch dataset are
        # equal but the tail, so samples_count is edited in a copy (sts assign reads only the manifest)
        edited = copy(sets[0], "as4")
        mpath = os.path.join(edited, "dataset_manifest.json")
        m = load_json(mpath)
        for i, s in enumerate(m["shards"]):
            s["samples_count"] = [5, 1, 9, 0, 3, 3, 12, 2][i % 8]
        m["total_samples"] = sum(s["samples_count"] for s in m["shards"])
        save_json(mpath, m)
        sets.append(edited)
        nomani = copy(sets[0], "as5")
        os.remove(os.path.join(nomani, "dataset_manifest.json"))
        for path in sets + [nomani]:
            ds = sts.Dataset(path)
            for n in (1, 2, 3, 5, 8, 13):
                for strategy in ("balance", "round_robin"):
                    with self.subTest(ds=os.path.basename(path), workers=n, strategy=strategy):
                        p = run_sts("assign", path, "--workers", n, "--strategy", strategy, check=False)
                        if path == nomani and strategy == "balance":
                            self.assertEqual(p.returncode, 1)
                            with self.assertRaisesRegex(sts.DatasetError, "balance needs every shard's samples_count"):
                                ds.assign_shards(n, strategy)
                            continue
                        self.assertEqual(p.returncode, 0, p.stderr)
                        want = [[] for _ in range(n)]
                        for line in p.stdout.splitlines():
                            w, shard, _ = line.split("\t")
                            want[int(w)].append(shard)
                        self.assertEqual(ds.assign_shards(n, strategy), want)
                        self.assertEqual(ds.assign_shards(n, strategy, worker=n - 1), want[n - 1])

    def test_errors_are_the_cli_words(self):
        ds = sts.Dataset(pack("aserr", {"id": np.arange(5, dtype=np.int64)}, "--batch-size", 2))
        p = run_sts("assign", ds.path, "--workers", 0, check=False)
        with self.assertRaises(ValueError) as e:
            ds.assign_shards(0)
        self.assertIn(str(e.exception), p.stderr)
        p = run_sts("assign", ds.path, "--workers", 2, "--strategy", "x", check=False)
        with self.assertRaises(ValueError) as e:
            ds.assign_shards(2, "x")
        self.assertIn(str(e.exception), p.stderr)
        self.assertEqual(str(e.exception), 'unknown strategy "x" (balance or round_robin)')


class Describe(unittest.TestCase):
    def test_validate_has_manifest(self):
        path = pack("val", {"id": np.arange(9, dtype=np.int64)}, "--batch-size", 4, "--generate-index")
        r = sts.validate(path)
        self.assertTrue(r["ok"], r["problems"])
        self.assertTrue(r["has_manifest"])
        self.assertTrue(r["has_index"])
        self.assertEqual(r["total_samples"], 9)
        bare = copy(path, "val_bare")
        os.remove(os.path.join(bare, "dataset_manifest.json"))
        r = sts.validate(bare)
        self.assertFalse(r["has_manifest"])
        self.assertTrue(r["ok"], r["problems"])
        r = sts.validate(os.path.join(TMP, "no-such-dataset"))
        self.assertFalse(r["ok"])
        self.assertFalse(r["has_manifest"])

    def test_schema_describe_kv_rows(self):
        keys = os.path.join(TMP, "keys.txt")
        with open(keys, "w") as f:
            f.write("alice\nbob\ncarol\n")
        e = np.arange(12, dtype=np.float32).reshape(3, 4)
        path = pack("kv", {"e": e, "n": np.array([1, 2, 3], dtype=np.int64)}, "--keys", keys, "--generate-index")
        ds = sts.Dataset(path)
        self.assertEqual(ds.mode, "kv")
        self.assertEqual(ds.schema(), {"e": {"dtype": "F32", "shape": [4]}, "n": {"dtype": "I64", "shape": []}})
        self.assertIn("kv dataset, 1 shards, 3 samples", ds.describe())
        row = ds.row("bob")
        np.testing.assert_array_equal(row["e"].numpy(), e[1])
        self.assertEqual(int(row["n"]), 2)
        self.assertIn("carol__e", ds)
        with self.assertRaises(KeyError):
            ds.numpy("dave__e")
        with self.assertRaisesRegex(sts.DatasetError, "reads batch shards"):
            sts.ShardedIterableDataset(path)
        self.assertTrue(sts.validate(path)["ok"], sts.validate(path)["problems"])
        # a schema that disagrees with the tensors is reported, naming the tensor
        bad = copy(path, "kv_bad")
        mpath = os.path.join(bad, "dataset_manifest.json")
        m = load_json(mpath)
        m["schema"]["e"]["dtype"] = "F16"
        save_json(mpath, m)
        r = sts.validate(bad)
        self.assertFalse(r["ok"])
        self.assertEqual(len(r["problems"]), 3, r["problems"])
        self.assertIn('tensor "alice__e": F32 [4] does not match column e\'s F16 [4]', "\n".join(r["problems"]))


class Corruption(unittest.TestCase):
    """Clear exceptions, never wrong data."""

    @classmethod
    def setUpClass(cls):
        x = np.arange(40 * 3, dtype=np.float32).reshape(40, 3)
        cls.good = pack("cor", {"x": x, "id": np.arange(40, dtype=np.int64)}, "--batch-size", 10, "--generate-index")
        cls.shard = sts.Dataset(cls.good).list_shards()[1].path

    def damaged(self, name, edit, manifest=True):
        path = copy(self.good, name)
        f = os.path.join(path, self.shard)
        with open(f, "rb") as fh:
            b = bytearray(fh.read())
        b = edit(b)
        with open(f, "wb") as fh:
            fh.write(b)
        if not manifest:
            os.remove(os.path.join(path, "dataset_manifest.json"))
        return path

    def test_truncated_shard(self):
        path = self.damaged("cor_trunc", lambda b: b[:-5])
        with self.assertRaisesRegex(sts.DatasetError, "dataset.manifest: .*manifest says"):
            sts.Dataset(path)
        path = self.damaged("cor_trunc_nm", lambda b: b[:-5], manifest=False)
        with self.assertRaisesRegex(sts.DatasetError, r"file.size: .*truncated"):
            sts.Dataset(path).numpy(f"{self.shard}/x")  # the index's entry, checked against the header
        self.assertFalse(sts.validate(path)["ok"])
        os.remove(os.path.join(path, "_tensor_index.json"))
        with self.assertRaisesRegex(sts.DatasetError, r"file.size: .*truncated"):
            sts.Dataset(path, index="headers").numpy("x")  # keys from the headers
        with self.assertRaisesRegex(sts.DatasetError, r"file.size: .*truncated"):
            list(sts.ShardedIterableDataset(path, rank=0, world_size=1))

    def test_header_bytes_changed(self):
        # same size: a dtype renamed in the header (F32 -> I32: same width, wrong values if trusted)
        path = self.damaged("cor_dtype", lambda b: b.replace(b'"F32"', b'"I32"', 1))
        ds = sts.Dataset(path)
        key = f"{self.shard}/x"
        with self.assertRaisesRegex(sts.DatasetError, r"dataset.index: .*index says F32 \[10, 3\].*header I32"):
            ds.numpy(key)
        with self.assertRaisesRegex(sts.DatasetError, "read.schema"):
            list(sts.ShardedIterableDataset(path, rank=0, world_size=1, strategy="round_robin"))
        # a shape changed so that the size no longer matches
        path = self.damaged("cor_shape", lambda b: b.replace(b'"shape":[10,3]', b'"shape":[10,4]', 1))
        with self.assertRaisesRegex(sts.DatasetError, r"size.mismatch: .*tensor \"x\""):
            sts.Dataset(path).numpy(key)
        # the header's JSON broken
        path = self.damaged("cor_json", lambda b: b[:9] + b"!" + b[10:])
        with self.assertRaisesRegex(sts.DatasetError, "header.json: .*not valid JSON"):
            sts.Dataset(path).tensor(key)
        # the length prefix past the end of the file
        path = self.damaged("cor_len", lambda b: (10 ** 6).to_bytes(8, "little") + b[8:])
        with self.assertRaisesRegex(sts.DatasetError, "header.length: .*truncated"):
            sts.Dataset(path).numpy(key)
        rep = sts.validate(path)
        self.assertFalse(rep["ok"])
        self.assertTrue(any("header.length" in p for p in rep["problems"]))

    def test_through_dataloader_workers(self):
        path = self.damaged("cor_dl", lambda b: b.replace(b'"shape":[10,3]', b'"shape":[10,4]', 1))
        it = sts.ShardedIterableDataset(path, rank=0, world_size=1)
        with self.assertRaisesRegex(sts.DatasetError, "size.mismatch"):
            for _ in DataLoader(it, batch_size=4, num_workers=2):
                pass

    def test_index_wrong_or_stale(self):
        path = copy(self.good, "cor_index")
        ip = os.path.join(path, "_tensor_index.json")
        idx = load_json(ip)
        key = f"{self.shard}/x"
        b, e = idx["tensors"][key]["data_offsets"]
        idx["tensors"][key]["data_offsets"] = [b - 8, e - 8]  # points into the other tensor
        save_json(ip, idx)
        with self.assertRaisesRegex(sts.DatasetError, "dataset.index: .*stale index or a changed shard"):
            sts.Dataset(path).numpy(key)
        self.assertFalse(sts.validate(path)["ok"])
        idx["metadata"]["dataset_id"] = "00000000-0000-4000-8000-000000000000"
        idx["tensors"][key]["data_offsets"] = [b, e]
        save_json(ip, idx)
        with self.assertRaisesRegex(sts.DatasetError, "dataset.index: .*stale"):
            sts.Dataset(path).numpy(key)
        self.assertTrue(sts.validate(path)["index_stale"])
        np.testing.assert_array_equal(sts.Dataset(path, index="headers").numpy(key), np.arange(30, 60).reshape(10, 3))

    def test_missing_index(self):
        path = copy(self.good, "cor_noindex")
        os.remove(os.path.join(path, "_tensor_index.json"))
        ds = sts.Dataset(path)
        key = f"{self.shard}/x"
        with self.assertRaisesRegex(sts.DatasetError, r"dataset.index: .*_tensor_index.json: missing"):
            ds.numpy(key)
        with self.assertRaisesRegex(sts.DatasetError, "missing"):
            ds.keys()
        np.testing.assert_array_equal(sts.Dataset(path, index="headers").numpy(key), np.arange(30, 60).reshape(10, 3))
        # the iterable dataset needs no index
        self.assertEqual(len(list(sts.ShardedIterableDataset(path, rank=0, world_size=1))), 40)

    def test_missing_shard_and_bad_manifest(self):
        path = copy(self.good, "cor_missing")
        os.remove(os.path.join(path, self.shard))
        with self.assertRaisesRegex(sts.DatasetError, "dataset.manifest: .*missing"):
            sts.Dataset(path)
        path = copy(self.good, "cor_manifest")
        with open(os.path.join(path, "dataset_manifest.json"), "a") as f:
            f.write("}")
        with self.assertRaisesRegex(sts.DatasetError, "dataset.manifest: .*not valid JSON"):
            sts.Dataset(path)


def st_file(path, header, data=b"", raw=False):
    """A safetensors file from a header (a dict, or raw text when raw) and data bytes."""
    h = (header if raw else json.dumps(header)).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(len(h).to_bytes(8, "little") + h + data)
    return path


class Headers(unittest.TestCase):
    """read_header's rules, on files made here."""

    def bad(self, header, data=b"", raw=False, rule=None):
        p = st_file(os.path.join(TMP, "h.safetensors"), header, data, raw)
        with self.assertRaises(sts.DatasetError) as e:
            sts.read_header(p)
        if rule:
            self.assertEqual(e.exception.rule, rule, str(e.exception))
        return str(e.exception)

    def test_rules(self):
        ok = {"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
              "b": {"dtype": "BF16", "shape": [], "data_offsets": [8, 10]}}
        h = sts.read_header(st_file(os.path.join(TMP, "ok.safetensors"), ok, bytes(10)))
        self.assertEqual(h.order(), ["a", "b"])
        self.assertEqual(h.tensors["b"], ("BF16", (), 8, 10))
        self.assertIn('tensor "b": the tensors end at byte', self.bad(ok, bytes(9), rule="file.size"))
        self.bad(ok, bytes(11), rule="file.size")
        self.bad({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                  "b": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}}, bytes(8), rule="offsets.contiguous")
        self.bad({"a": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}}, bytes(8), rule="size.mismatch")
        self.bad({"a": {"dtype": "f32", "shape": [2], "data_offsets": [0, 8]}}, bytes(8), rule="tensor.entry")
        self.bad({"a": {"dtype": "F32", "shape": [-2], "data_offsets": [0, 8]}}, bytes(8), rule="tensor.entry")
        self.bad({"a": {"dtype": "F32", "shape": [True], "data_offsets": [0, 4]}}, bytes(4), rule="tensor.entry")
        self.bad({"a": {"dtype": "F32", "shape": [2.0], "data_offsets": [0, 8]}}, bytes(8), rule="tensor.entry")
        self.bad({"a": {"dtype": "F32", "shape": [2]}}, bytes(8), rule="tensor.entry")
        self.bad({"a": {"dtype": "F4", "shape": [3], "data_offsets": [0, 2]}}, bytes(2), rule="size.mismatch")
        self.bad('{"a": {"dtype": "F32", "shape": [NaN], "data_offsets": [0, 4]}}', bytes(4), raw=True, rule="header.json")
        self.bad('{"a": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]}, "a": {"dtype": "U8", "shape": [1], '
                 '"data_offsets": [0, 1]}}', bytes(1), raw=True, rule="header.json")
        self.bad("[]", raw=True, rule="header.object")
        self.bad({"__metadata__": {"k": 1}}, rule="metadata.value")
        p = os.path.join(TMP, "short.safetensors")
        with open(p, "wb") as f:
            f.write(b"\x02\x00\x00")
        with self.assertRaisesRegex(sts.DatasetError, "header.length"):
            sts.read_header(p)
        with open(p, "wb") as f:
            f.write((2).to_bytes(8, "little") + b"\xff\xfe")
        with self.assertRaisesRegex(sts.DatasetError, "header.utf8"):
            sts.read_header(p)

    def test_single_file_and_folder_without_manifest(self):
        path = pack("bare", {"id": np.arange(11, dtype=np.int64)}, "--batch-size", 4)
        os.remove(os.path.join(path, "dataset_manifest.json"))
        names = sorted(n for n in os.listdir(path) if n.endswith(".safetensors"))
        it = sts.ShardedIterableDataset(path, rank=0, world_size=1)  # round_robin: no samples_count to balance
        self.assertEqual(it.strategy, "round_robin")
        seen = [int(i) for b in DataLoader(it, batch_size=3, num_workers=2) for i in b["id"]]
        self.assertEqual(sorted(seen), list(range(11)))
        one = sts.Dataset(os.path.join(path, names[1]))
        self.assertEqual(len(one.list_shards()), 1)
        np.testing.assert_array_equal(one.numpy("id"), np.arange(4, 8))


NO_TORCH = r"""
import sys
sys.modules["torch"] = None  # import torch now raises ImportError
sys.path.insert(0, sys.argv[1])
import numpy as np
import safetensors_spark as sts
ds = sts.Dataset(sys.argv[2])
key = ds.keys()[0]
a = ds[key]
assert isinstance(a, np.ndarray), type(a)
assert ds.validate()["ok"] and ds.validate()["has_manifest"]
assert sum(len(w) for w in ds.assign_shards(3)) == len(ds.list_shards())
assert ds.schema() and ds.describe()
try:
    ds.tensor(key)
    raise SystemExit("tensor() without torch did not raise")
except ImportError:
    pass
try:
    sts.ShardedIterableDataset
    raise SystemExit("ShardedIterableDataset without torch did not raise")
except ImportError:
    pass
assert "torch" not in sys.modules or sys.modules["torch"] is None
print("numpy-only ok")
"""


class WithoutTorch(unittest.TestCase):
    def test_numpy_parts(self):
        path = pack("notorch", {"x": np.ones((5, 2), np.float32)}, "--batch-size", 2, "--generate-index",
                    "--dtype", "BF16")
        p = subprocess.run([sys.executable, "-c", NO_TORCH, HERE, path], capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("numpy-only ok", p.stdout)


if __name__ == "__main__":
    unittest.main(verbosity=2)
