"""safetensors_spark.py - read the sharded safetensors datasets of safetensors_spark.h from Python and PyTorch.

A dataset is a folder of safetensors shards with dataset_manifest.json and, when written with
generate_index, _tensor_index.json (format/SPECIFICATION.md, sections 12 and 13). This module needs the
standard library and numpy; torch is imported only by the calls that return torch tensors, so the numpy
parts work where torch is not installed.

    import safetensors_spark as sts
    ds = sts.Dataset("out/")                 # reads and checks the manifest; stats every shard
    ds.list_shards()                         # [Shard(path, samples_count, bytes)], manifest order
    ds.assign_shards(4)                      # [[shard, ...] per worker], the rule of `sts assign`
    ds.schema(); print(ds.describe()); ds.validate()["ok"]
    a = ds.numpy("part-00000-0000-....safetensors/x")   # np.memmap view of the exact byte range
    t = ds.tensor("part-00000-0000-....safetensors/x")  # torch.Tensor over the same mapped bytes

    loader = torch.utils.data.DataLoader(sts.ShardedIterableDataset("out/"), batch_size=64, num_workers=2)

Contents:
  DatasetError                  every problem of a dataset's files: names the file, the rule, the tensor
  read_header(path)             one shard's header, strictly checked
  assign(counts, n, strategy)   the shard assignment rule alone
  Dataset                       manifest, index, schema, describe, validate, key access (numpy and torch)
  validate(path)                Dataset(path).validate(), reporting a dataset that cannot be opened too
  ShardedIterableDataset        torch IterableDataset over batch shards, split across workers and ranks
  bf16_to_float32(bits)         the explicit upcast of BF16 bits for numpy users

Zero copy and writability. numpy arrays are views of a read-only np.memmap of the shard (mode "r",
one per shard, shared): writing to one raises ValueError. torch tensors come from torch.frombuffer over a
copy-on-write np.memmap of exactly the tensor's byte range (mode "c", MAP_PRIVATE), made for that call
(the iterable: for that column of that shard in that pass): nothing is copied, reading shares the page
cache, and since torch has no read-only tensors an in-place operation copies only the pages it touches,
privately: it never reaches the file, another call or a later epoch. (A read-only map would make such a
write kill the process with SIGSEGV, and torch.frombuffer warns about every non-writable buffer.)

BF16 and the 8-bit floats. numpy has no bfloat16: Dataset.numpy returns BF16 as its raw bits (uint16),
which is lossless and copies nothing; bf16_to_float32 upcasts explicitly (a copy, exact). With torch,
Dataset.tensor returns a torch.bfloat16 view of the mapped bytes. F8_* come as uint8 bits in numpy
and as torch's float8 dtypes where the installed torch has them. F4 and F6 are packed bytes: numpy gets
the bytes (uint8, 1-D), torch refuses them. U16, U32 and U64 need torch >= 2.3 for torch tensors.
"""

import collections
import heapq
import json
import mmap
import os
import struct

import numpy as np

# ShardedIterableDataset is left out of __all__: it imports torch, and `import *` must work without it
__all__ = ["DatasetError", "Shard", "read_header", "assign", "Dataset", "validate", "bf16_to_float32", "DTYPE_BITS"]
__version__ = "0.1.0"

MANIFEST = "dataset_manifest.json"
INDEX = "_tensor_index.json"
MAX_HEADER = 100000000  # SPECIFICATION 1: N is at most 100,000,000
U64_MAX = (1 << 64) - 1

# The 22 dtypes: bits per element. BF16 is outside the official header schema's dtype regex
# ([UIF])(8|16|32|64|128|256); safetensors accepts it and so does this reader.
DTYPE_BITS = {"BOOL": 8, "F4": 4, "F6_E2M3": 6, "F6_E3M2": 6, "U8": 8, "I8": 8, "F8_E5M2": 8, "F8_E4M3": 8,
              "F8_E8M0": 8, "F8_E4M3FNUZ": 8, "F8_E5M2FNUZ": 8, "I16": 16, "U16": 16, "F16": 16, "BF16": 16,
              "I32": 32, "U32": 32, "F32": 32, "C64": 64, "F64": 64, "I64": 64, "U64": 64}
# numpy's type for each (little-endian); BF16 and F8_* as their bits, F4/F6 as packed bytes (None)
_NP = {"BOOL": "?", "U8": "u1", "I8": "i1", "F8_E5M2": "u1", "F8_E4M3": "u1", "F8_E8M0": "u1", "F8_E4M3FNUZ": "u1",
       "F8_E5M2FNUZ": "u1", "I16": "<i2", "U16": "<u2", "F16": "<f2", "BF16": "<u2", "I32": "<i4", "U32": "<u4",
       "F32": "<f4", "C64": "<c8", "F64": "<f8", "I64": "<i8", "U64": "<u8", "F4": None, "F6_E2M3": None,
       "F6_E3M2": None}
# torch's name for each, looked up on the installed torch (float8 from 2.1, uint16..uint64 from 2.3)
_TORCH = {"BOOL": "bool", "U8": "uint8", "I8": "int8", "I16": "int16", "U16": "uint16", "F16": "float16",
          "BF16": "bfloat16", "I32": "int32", "U32": "uint32", "F32": "float32", "C64": "complex64",
          "F64": "float64", "I64": "int64", "U64": "uint64", "F8_E5M2": "float8_e5m2", "F8_E4M3": "float8_e4m3fn",
          "F8_E8M0": "float8_e8m0fnu", "F8_E4M3FNUZ": "float8_e4m3fnuz", "F8_E5M2FNUZ": "float8_e5m2fnuz"}


class DatasetError(ValueError):
    """A dataset file breaks a rule. Attributes: rule (the rule id, as the C library names it),
    path (the file), tensor (the tensor or key, or None). str() reads "rule: path: [tensor "x": ]what"."""

    def __init__(self, rule, path=None, what=None, tensor=None):
        if what is None:  # one message (DataLoader re-raises a worker's exception so): "rule: path: ..."
            parts = rule.split(": ", 2)
            self.rule, self.path, self.tensor = parts[0], parts[1] if len(parts) > 1 else None, None
            super().__init__(rule)
            return
        self.rule, self.path, self.tensor = rule, path, tensor
        where = f'tensor "{tensor}": ' if tensor is not None else ""
        super().__init__(f"{rule}: {path}: {where}{what}")


# One shard: its file name, samples_count (None without a manifest) and size in bytes. A namedtuple:
# it pickles (DataLoader workers started by spawn).
Shard = collections.namedtuple("Shard", ["path", "samples_count", "bytes"])


# ---- headers ----------------------------------------------------------------------------------------
def _uint(v):
    return type(v) is int and 0 <= v <= U64_MAX  # bool is an int subclass: refused


def _no_dup_object(pairs):
    d = {}
    for k, v in pairs:
        if k in d:
            raise ValueError(f'duplicate key "{k}"')
        d[k] = v
    return d


def _bad_constant(name):
    raise ValueError(f"{name} is not JSON")


def _json(text, path, rule):
    """Strict JSON: no NaN/Infinity literals, no duplicate keys (the writer never emits them)."""
    try:
        return json.loads(text, object_pairs_hook=_no_dup_object, parse_constant=_bad_constant)
    except (ValueError, RecursionError) as e:
        raise DatasetError(rule, path, f"not valid JSON ({e})") from None


def _read_json(path, rule):
    """A whole JSON document (a manifest, an index): UTF-8, then _json's rules."""
    try:
        with open(path, "rb") as f:
            text = f.read().decode("utf-8")
    except UnicodeDecodeError as e:
        raise DatasetError(rule, path, f"not UTF-8 ({e})") from None
    return _json(text, path, rule)


def _check_tensor_fields(path, name, e, rule):
    """dtype, shape, data_offsets of one header or index entry; returns (dtype, shape, begin, end)."""
    if not isinstance(e, dict):
        raise DatasetError(rule, path, "entry is not an object", name)
    for f in ("dtype", "shape", "data_offsets"):
        if f not in e:
            raise DatasetError(rule, path, f"no {f}", name)
    dt, shape, off = e["dtype"], e["shape"], e["data_offsets"]
    if dt not in DTYPE_BITS:
        raise DatasetError(rule, path, f"unknown dtype {dt!r}", name)
    if not isinstance(shape, list) or not all(_uint(d) for d in shape):
        raise DatasetError(rule, path, f"shape {shape!r} is not a list of integers in [0, 2^64)", name)
    if not isinstance(off, list) or len(off) != 2 or not all(_uint(o) for o in off) or off[1] < off[0]:
        raise DatasetError(rule, path, f"data_offsets {off!r} is not [begin, end] with begin <= end", name)
    return dt, tuple(shape), off[0], off[1]


def _nbytes(path, name, dt, shape, rule):
    numel = 1
    for d in shape:
        numel *= d
    bits = numel * DTYPE_BITS[dt]
    if numel > U64_MAX or bits > U64_MAX:
        raise DatasetError(rule, path, f"shape {list(shape)} overflows 64 bits", name)
    if bits % 8:
        raise DatasetError(rule, path, f"{dt} {list(shape)} is not a whole number of bytes", name)
    return bits // 8


class Header:
    """A shard's parsed header: tensors {name: (dtype, shape, begin, end)} with begin/end relative to
    the data section, data_start (8 + N), size (the file's), metadata (dict or None)."""
    __slots__ = ("path", "tensors", "data_start", "size", "metadata")

    def order(self):
        """Tensor names in data-offset order."""
        return sorted(self.tensors, key=lambda n: (self.tensors[n][2], self.tensors[n][3]))


def read_header(path, expect_size=None):
    """Reads and checks one safetensors file's header (SPECIFICATION 4): the length, UTF-8, JSON,
    every entry, offsets that tile the data section exactly to the end of the file. Reads 8 + N bytes.
    expect_size: the size the manifest promises (checked first). Raises DatasetError."""
    try:
        f = open(path, "rb")
    except FileNotFoundError:
        raise DatasetError("dataset.manifest", path, "the shard does not exist") from None
    with f:
        size = os.fstat(f.fileno()).st_size
        if expect_size is not None and size != expect_size:
            raise DatasetError("dataset.manifest", path,
                               f"the shard has {size} bytes, the manifest says {expect_size} (changed or truncated)")
        head = f.read(8)
        if len(head) < 8:
            raise DatasetError("header.length", path, f"{size} bytes: shorter than the 8-byte length")
        n = struct.unpack("<Q", head)[0]
        if n > MAX_HEADER:
            raise DatasetError("header.length", path, f"header length {n} is over {MAX_HEADER}")
        if 8 + n > size:
            raise DatasetError("header.length", path, f"header length {n} passes the end of the file ({size} bytes): truncated")
        raw = f.read(n)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise DatasetError("header.utf8", path, f"header is not UTF-8 ({e})") from None
    obj = _json(text, path, "header.json")
    if not isinstance(obj, dict):
        raise DatasetError("header.object", path, "header is not a JSON object")
    h = Header()
    h.path, h.size, h.data_start = path, size, 8 + n
    h.metadata = obj.pop("__metadata__", None)
    if h.metadata is not None and (not isinstance(h.metadata, dict) or
                                   not all(isinstance(v, str) for v in h.metadata.values())):
        raise DatasetError("metadata.value", path, "__metadata__ is not a map of strings")
    tensors = {}
    for name, e in obj.items():
        tensors[name] = _check_tensor_fields(path, name, e, "tensor.entry")
    cursor, last = 0, None
    for name in sorted(tensors, key=lambda k: (tensors[k][2], tensors[k][3])):
        dt, shape, b, e = tensors[name]
        if b != cursor:
            raise DatasetError("offsets.contiguous", path,
                               f"data_offsets [{b}, {e}] do not begin where the previous tensor ends ({cursor})", name)
        if e - b != _nbytes(path, name, dt, shape, "size.mismatch"):
            raise DatasetError("size.mismatch", path,
                               f"{dt} {list(shape)} needs {_nbytes(path, name, dt, shape, 'size.mismatch')} bytes, "
                               f"data_offsets [{b}, {e}] hold {e - b}", name)
        cursor, last = e, name
    if h.data_start + cursor != size:
        raise DatasetError("file.size", path, f"the tensors end at byte {h.data_start + cursor}, the file has {size}"
                           + (" (truncated)" if h.data_start + cursor > size else " (trailing bytes)"), last)
    h.tensors = tensors
    return h


# ---- shard assignment ---------------------------------------------------------------------------------
def assign(counts, num_workers, strategy="balance"):
    """The worker of each shard (SPECIFICATION 13.7, `sts assign`): round_robin gives shard i to
    i mod n; balance gives each shard in turn to the worker with the fewest samples so far, a tie to the
    lower id (sums saturate at 2^64 - 1, as the C library's). counts: samples per shard, in order."""
    if not isinstance(num_workers, int) or num_workers <= 0:
        raise ValueError("num_workers must be > 0")
    if strategy == "round_robin":
        return [i % num_workers for i in range(len(counts))]
    if strategy != "balance":
        raise ValueError(f'unknown strategy "{strategy}" (balance or round_robin)')
    heap = [(0, w) for w in range(num_workers)]  # (samples so far, worker): the least, then the lowest id
    out = []
    for c in counts:
        if c is None:
            raise ValueError("balance needs every shard's samples_count, which dataset_manifest.json gives")
        load, w = heapq.heappop(heap)
        out.append(w)
        heapq.heappush(heap, (min(load + c, U64_MAX), w))
    return out


# ---- the dataset ----------------------------------------------------------------------------------------
def _shard_name_ok(s):
    return (isinstance(s, str) and s not in ("", ".", "..") and "/" not in s and "\0" not in s)


class Dataset:
    """A dataset folder (with or without dataset_manifest.json), or one safetensors file.

    Opening reads and checks the manifest (SPECIFICATION 12.4.1 and 13.1: shard names, exact sizes,
    no shard twice) and stats every shard; it reads no data. The index is read on the first key access.
    index: "require" (default) - key access needs a _tensor_index.json of this dataset and raises
    DatasetError when it is missing or belongs to another dataset_id; "headers" - without one (or with
    a stale one), keys come from the shards' headers (SPECIFICATION 13.5). A path to one file is a
    dataset of that shard, whose keys are its tensor names (no index applies)."""

    def __init__(self, path, index="require"):
        if index not in ("require", "headers"):
            raise ValueError(f'index must be "require" or "headers", not {index!r}')
        self.path = os.fspath(path)
        self._index_policy = index
        self._headers, self._maps, self._keys = {}, {}, None
        self.index_stale = False
        self.manifest = None
        self._single = os.path.isfile(self.path)  # one file: its header gives the keys, no index applies
        if self._single:
            self.dir = os.path.dirname(self.path) or "."
            names = [os.path.basename(self.path)]
            self._shards = [Shard(names[0], None, os.path.getsize(self.path))]
        elif os.path.isdir(self.path):
            self.dir = self.path
            mpath = os.path.join(self.dir, MANIFEST)
            if os.path.isfile(mpath):
                self._read_manifest(mpath)
            else:
                names = sorted((n for n in os.listdir(self.dir) if n.endswith(".safetensors") and
                                len(n) > len(".safetensors") and not n.startswith(".") and
                                os.path.isfile(os.path.join(self.dir, n))), key=os.fsencode)
                if not names:
                    raise DatasetError("not_found", self.path, "no dataset_manifest.json and no .safetensors file")
                self._shards = [Shard(n, None, os.path.getsize(os.path.join(self.dir, n))) for n in names]
        else:
            raise FileNotFoundError(f"io: {self.path}: no such file or folder")
        self._by_name = {s.path: i for i, s in enumerate(self._shards)}
        self.mode = self._decide_mode()

    # -- the manifest
    def _read_manifest(self, mpath):
        rule = "dataset.manifest"
        m = _read_json(mpath, rule)
        if not isinstance(m, dict) or not isinstance(m.get("shards"), list):
            raise DatasetError(rule, mpath, "not an object with a shards array")
        for f, ok in (("mode", lambda v: v in ("batch", "kv")), ("duplicates", lambda v: v in ("fail", "lastWin")),
                      ("kv_separator", lambda v: isinstance(v, str) and v != ""),
                      ("dataset_id", lambda v: isinstance(v, str)), ("total_samples", _uint),
                      ("total_bytes", _uint), ("batch_size", _uint), ("schema", lambda v: isinstance(v, dict))):
            if f in m and not ok(m[f]):
                raise DatasetError(rule, mpath, f"field {f} has an invalid value {m[f]!r}")
        for col, c in m.get("schema", {}).items():
            if (not isinstance(c, dict) or c.get("dtype") not in DTYPE_BITS or not isinstance(c.get("shape"), list)
                    or not all(type(d) is int and d >= -1 for d in c["shape"])):
                raise DatasetError(rule, mpath, f"schema column {col!r} is not {{dtype, shape}}")
        shards, seen = [], set()
        for i, s in enumerate(m["shards"]):
            if not isinstance(s, dict) or "shard_path" not in s or "bytes" not in s:
                raise DatasetError(rule, mpath, f"shards[{i}] is not an object with shard_path and bytes")
            name, nbytes, cnt = s["shard_path"], s["bytes"], s.get("samples_count")
            if not _shard_name_ok(name):
                raise DatasetError(rule, mpath, f"shards[{i}].shard_path {name!r} is not a file name of the folder")
            if not _uint(nbytes) or (cnt is not None and not _uint(cnt)):
                raise DatasetError(rule, mpath, f"shard {name}: bytes or samples_count is not an integer")
            if name in seen:
                raise DatasetError(rule, mpath, f"shard {name} is listed twice")
            seen.add(name)
            full = os.path.join(self.dir, name)
            if not os.path.isfile(full):
                raise DatasetError(rule, full, "the manifest lists this shard but it is missing")
            size = os.path.getsize(full)
            if size != nbytes:
                raise DatasetError(rule, full, f"the shard has {size} bytes, the manifest says {nbytes}")
            shards.append(Shard(name, cnt, nbytes))
        self.manifest, self._shards = m, shards

    def _decide_mode(self):
        m = self.manifest
        if m is None:
            return "files"  # no manifest: a folder of safetensors files; keys are tensor names
        if "mode" in m:
            return m["mode"]
        if "batch_size" in m:
            return "batch" if m["batch_size"] > 0 else "kv"
        if not self._shards:
            return "batch"
        h = self.header(0)
        return "batch" if set(h.tensors) == set(m.get("schema", {})) else "kv"

    @property
    def has_manifest(self):
        return self.manifest is not None

    @property
    def has_index(self):
        return not self._single and os.path.isfile(os.path.join(self.dir, INDEX))

    @property
    def batch_size(self):
        return (self.manifest or {}).get("batch_size")

    @property
    def total_samples(self):
        """The manifest's total_samples (the sum of samples_count), or None without a manifest."""
        if self.manifest is None:
            return None
        return self.manifest.get("total_samples", sum(s.samples_count or 0 for s in self._shards))

    # -- shards
    def list_shards(self):
        """Every shard, in the manifest's order (name order without a manifest)."""
        return list(self._shards)

    def shard_path(self, shard):
        """The full path of a shard, given by its index or its name."""
        s = self._shards[shard] if isinstance(shard, int) else self._shards[self._shard_index(shard)]
        return os.path.join(self.dir, s.path)

    def _shard_index(self, name):
        try:
            return self._by_name[name]
        except KeyError:
            raise DatasetError("dataset.index", self.path, f"{name!r} is not a shard of the dataset") from None

    def header(self, shard):
        """The checked header of a shard (index or name), read once."""
        i = shard if isinstance(shard, int) else self._shard_index(shard)
        h = self._headers.get(i)
        if h is None:
            s = self._shards[i]
            h = read_header(os.path.join(self.dir, s.path), s.bytes)
            self._headers[i] = h
        return h

    def assign_shards(self, num_workers, strategy="balance", worker=None):
        """Which shards each of num_workers workers reads: a list of shard-name lists, one per worker
        (worker=K: worker K's list only). The rule and the errors of `sts assign` (SPECIFICATION 13.7)."""
        counts = [s.samples_count for s in self._shards]
        if strategy == "balance" and isinstance(num_workers, int) and num_workers > 0:
            for s in self._shards:
                if s.samples_count is None:
                    raise DatasetError("unsupported", self.path, "balance needs every shard's samples_count, which "
                                       f'dataset_manifest.json gives (shard "{s.path}" has none)')
        owners = assign(counts, num_workers, strategy)
        out = [[] for _ in range(num_workers)]
        for s, w in zip(self._shards, owners):
            out[w].append(s.path)
        if worker is not None:
            if not 0 <= worker < num_workers:
                raise ValueError(f"worker must be in [0, {num_workers})")
            return out[worker]
        return out

    def schema(self):
        """{column: {"dtype": D, "shape": [...]}}: the manifest's schema (batch mode: [batch_size] + the
        sample shape; KV: -1 where rows differ), else the first shard's tensors in data-offset order."""
        if self.manifest is not None and "schema" in self.manifest:
            return {k: {"dtype": v["dtype"], "shape": list(v["shape"])} for k, v in self.manifest["schema"].items()}
        if not self._shards:
            return {}
        h = self.header(0)
        return {n: {"dtype": h.tensors[n][0], "shape": list(h.tensors[n][1])} for n in h.order()}

    def describe(self):
        """A few lines for people: mode, shards, samples, bytes, index, schema."""
        total = sum(s.bytes for s in self._shards)
        lines = [f"{self.path}: {self.mode} dataset, {len(self._shards)} shards, "
                 + (f"{self.total_samples} samples, " if self.total_samples is not None else "samples unknown, ")
                 + f"{total} bytes"]
        lines.append(f"  manifest: {'yes' if self.has_manifest else 'no'}"
                     + (f", dataset_id {self.manifest['dataset_id']}" if self.manifest and "dataset_id" in self.manifest else "")
                     + (f", batch_size {self.batch_size}" if self.batch_size else "")
                     + f"; index: {'yes' if self.has_index else 'no'}")
        for col, c in self.schema().items():
            lines.append(f"  {col}: {c['dtype']} {c['shape']}")
        return "\n".join(lines)

    # -- the index and key access
    def _load_keys(self):
        if self._keys is not None:
            return self._keys
        ipath = os.path.join(self.dir, INDEX)
        keys = None
        if self.has_index:
            keys, stale = self._read_index(ipath)
            if stale:
                self.index_stale = True
                if self._index_policy == "require":
                    raise DatasetError("dataset.index", ipath, "stale: its dataset_id is not the manifest's "
                                       f"({self.manifest['dataset_id']}); run `sts index DIR`, or open with index=\"headers\"")
        elif self._index_policy == "require" and not self._single:
            raise DatasetError("dataset.index", ipath, "missing: key access needs the index (write the dataset with "
                               "generate_index, or run `sts index DIR`; or open with index=\"headers\")")
        if keys is None:  # no index, or a stale one, under index="headers": every header
            keys = {}
            for i, s in enumerate(self._shards):
                h = self.header(i)
                for name in h.order():
                    key = f"{s.path}/{name}" if self.mode == "batch" else name
                    keys[key] = (i, name)  # a later shard wins (lastWin), as the index says
        self._keys = keys
        return keys

    def _read_index(self, ipath):
        """(keys, stale): the index's entries, checked; stale when it is of another dataset_id (keys None)."""
        rule = "dataset.index"
        idx = _read_json(ipath, rule)
        if not isinstance(idx, dict) or not isinstance(idx.get("tensors"), dict):
            raise DatasetError(rule, ipath, "no tensors object")
        meta = idx.get("metadata")
        mid = (self.manifest or {}).get("dataset_id")
        if mid is not None and (not isinstance(meta, dict) or meta.get("dataset_id") != mid):
            return None, True
        keys = {}
        for key, e in idx["tensors"].items():
            dt, shape, b, end = _check_tensor_fields(ipath, key, e, rule)
            if "file" not in e:
                raise DatasetError(rule, ipath, "no file", key)
            name = e.get("tensor", key)
            if not isinstance(name, str):
                raise DatasetError(rule, ipath, "tensor is not a string", key)
            if e["file"] not in self._by_name:
                raise DatasetError(rule, ipath, f"file {e['file']!r} is not a shard of the dataset (a stale index)", key)
            keys[key] = (self._by_name[e["file"]], name, dt, shape, b, end)
        return keys, False

    def keys(self):
        """Every key: index keys (batch: "<shard>/<column>"; KV: tensor names), in the index's order."""
        return list(self._load_keys())

    def __contains__(self, key):
        return key in self._load_keys()

    def __len__(self):
        return len(self._load_keys())

    def _locate(self, key):
        """(shard index, name in file, dtype, shape, absolute begin, absolute end), the index entry checked
        against the shard's header first (SPECIFICATION 13.5): never the bytes of another tensor."""
        keys = self._load_keys()
        try:
            ent = keys[key]
        except KeyError:
            raise KeyError(f"not_found: {self.path}: no tensor {key!r}") from None
        i, name = ent[0], ent[1]
        h = self.header(i)
        got = h.tensors.get(name)
        if got is None:
            raise DatasetError("dataset.index", h.path, f"the index names tensor {name!r}, the shard does not hold it", key)
        if len(ent) > 2 and tuple(ent[2:]) != got:
            raise DatasetError("dataset.index", h.path,
                               f"the index says {ent[2]} {list(ent[3])} at [{ent[4]}, {ent[5]}], the shard's header "
                               f"{got[0]} {list(got[1])} at [{got[2]}, {got[3]}] (a stale index or a changed shard)", key)
        dt, shape, b, e = got
        return i, name, dt, shape, h.data_start + b, h.data_start + e

    def _map(self, i):
        """The read-only map of shard i's whole file, made once (read-only views may share it)."""
        m = self._maps.get(i)
        if m is None:
            h = self.header(i)
            _same_size(h)
            m = _hugepage(np.memmap(h.path, dtype=np.uint8, mode="r"))
            self._maps[i] = m
        return m

    def info(self, key):
        """(dtype, shape, nbytes) of a key, from the checked index entry; no data is mapped."""
        i, name, dt, shape, b, e = self._locate(key)
        return dt, shape, e - b

    def numpy(self, key):
        """The key's tensor as a read-only numpy view of its mapped bytes (np.memmap, mode "r"), no copy.
        BF16 comes as uint16 bits, F8_* as uint8 bits, F4/F6 as their packed bytes (module docstring)."""
        i, name, dt, shape, b, e = self._locate(key)
        return _np_view(self._map(i), dt, shape, b, e)

    def tensor(self, key):
        """The key's tensor as a torch.Tensor over its mapped bytes, no copy: torch.frombuffer on a
        copy-on-write np.memmap of exactly the index's byte range, made for this call, so an in-place
        change stays in this tensor (never in the file, nor in later calls). BF16 is torch.bfloat16.
        Needs torch."""
        i, name, dt, shape, b, e = self._locate(key)
        return _torch_view(self.header(i), dt, shape, b, e, key)

    def __getitem__(self, key):
        """Map-style access: tensor(key) where torch is importable, else numpy(key). An int i is
        keys()[i], so a DataLoader's sampler can walk the keys (one whole tensor an item)."""
        if isinstance(key, int):
            key = self.keys()[key]
        return self.tensor(key) if _torch(required=False) is not None else self.numpy(key)

    def row(self, key, columns=None):
        """KV mode: {column: tensor} of one row, the tensors named key + kv_separator + column."""
        sep = (self.manifest or {}).get("kv_separator", "__")
        cols = columns if columns is not None else list(self.schema())
        return {c: self[key + sep + c] for c in cols}

    # -- validation
    def validate(self):
        """Checks the whole dataset and reports, never raises for the dataset's content:
        {"ok", "has_manifest", "has_index", "index_stale", "mode", "shards", "total_samples", "problems"}.
        Checked: every header strictly; the manifest's totals and sorted shard paths; batch shards against
        the schema (exactly its columns, its dtypes and sample shapes, samples_count <= rows <= batch_size);
        KV tensors against it (key + kv_separator + a column, that column's dtype and shape);
        every index entry against its shard's header, and every batch tensor being indexed.
        Not checked: the shards' crc32c (`sts check --data DIR` does)."""
        problems = []
        m = self.manifest
        if m is not None:
            names = [s.path for s in self._shards]
            if names != sorted(names, key=lambda n: n.encode("utf-8")):
                problems.append(f"dataset.manifest: {MANIFEST}: shards are not sorted by shard_path")
            if "total_bytes" in m and m["total_bytes"] != sum(s.bytes for s in self._shards):
                problems.append(f"dataset.manifest: {MANIFEST}: total_bytes {m['total_bytes']} is not the sum of bytes")
            if "total_samples" in m and m["total_samples"] != sum(s.samples_count or 0 for s in self._shards):
                problems.append(f"dataset.manifest: {MANIFEST}: total_samples {m['total_samples']} is not the sum of samples_count")
        schema = (m or {}).get("schema")
        for i, s in enumerate(self._shards):
            try:
                h = self.header(i)
            except DatasetError as e:
                problems.append(str(e))
                continue
            if self.mode == "batch" and schema is not None:
                try:
                    _batch_columns(h, schema, list(schema), s.samples_count, self.batch_size)
                except DatasetError as e:
                    problems.append(str(e))
            elif self.mode == "kv" and schema is not None:
                problems += _kv_problems(h, schema, m.get("kv_separator", "__"))
        stale = False
        if self.has_index:
            try:
                keys, stale = self._read_index(os.path.join(self.dir, INDEX))
            except DatasetError as e:
                problems.append(str(e))
                keys = None
            if stale:
                problems.append(f"dataset.index: {INDEX}: stale (another dataset_id than the manifest's)")
            elif keys is not None:
                seen = set()
                for key, ent in keys.items():
                    h = self._headers.get(ent[0])
                    if h is None:
                        continue  # its header was reported above
                    got = h.tensors.get(ent[1])
                    if got != tuple(ent[2:]):
                        problems.append(f"dataset.index: {h.path}: tensor \"{key}\": the index does not match the header")
                    seen.add((ent[0], ent[1]))
                if self.mode == "batch":
                    for i, h in self._headers.items():
                        for name in h.tensors:
                            if (i, name) not in seen:
                                problems.append(f"dataset.index: {h.path}: tensor \"{name}\" is not in the index")
        return {"ok": not problems, "has_manifest": self.has_manifest, "has_index": self.has_index,
                "index_stale": stale, "mode": self.mode, "shards": len(self._shards),
                "total_samples": self.total_samples, "problems": problems}

    def __getstate__(self):  # DataLoader workers started by spawn: mappings are reopened, never pickled
        d = dict(self.__dict__)
        d["_maps"] = {}
        return d


def validate(path, index="require"):
    """Dataset(path).validate(), and a report (ok False) for a dataset that cannot even be opened."""
    try:
        return Dataset(path, index=index).validate()
    except (DatasetError, OSError) as e:
        p = os.fspath(path)
        return {"ok": False, "has_manifest": os.path.isfile(os.path.join(p, MANIFEST)),
                "has_index": os.path.isfile(os.path.join(p, INDEX)), "index_stale": False, "mode": None,
                "shards": 0, "total_samples": None, "problems": [str(e)]}


def _kv_problems(h, schema, sep):
    """A KV shard against the manifest's schema: every tensor is key + sep + a column, with that column's
    dtype and shape (-1: any size)."""
    out = []
    for name, (dt, shape, b, e) in h.tensors.items():
        col = next((c for c in schema if name.endswith(sep + c) and len(name) > len(sep + c)), None)
        if col is None:
            out.append(str(DatasetError("read.schema", h.path, f"the name is not key{sep}column of a schema column", name)))
            continue
        want = schema[col]
        if dt != want["dtype"] or len(shape) != len(want["shape"]) or \
                any(w != -1 and w != d for w, d in zip(want["shape"], shape)):
            out.append(str(DatasetError("read.schema", h.path, f"{dt} {list(shape)} does not match column {col}'s "
                                        f"{want['dtype']} {want['shape']}", name)))
    return out


def _batch_columns(h, schema, columns, samples, batch_size):
    """A batch shard against the manifest's schema: [(column, dtype, shape, begin, end)] of the columns
    asked for; the rows every column has (>= samples_count, <= batch_size) checked."""
    extra = set(h.tensors) - set(schema)
    if extra:
        raise DatasetError("read.schema", h.path, f"tensors {sorted(extra)} are not columns of the schema")
    rows = None
    out = []
    for col in schema:
        if col not in h.tensors:
            raise DatasetError("read.schema", h.path, "the schema's column is missing from the shard", col)
        dt, shape, b, e = h.tensors[col]
        want = schema[col]
        if dt != want["dtype"] or len(shape) != len(want["shape"]) or len(shape) == 0 or \
                any(w != -1 and w != d for w, d in zip(want["shape"][1:], shape[1:])):
            raise DatasetError("read.schema", h.path, f"{dt} {list(shape)} does not match the schema's "
                               f"{want['dtype']} {want['shape']}", col)
        if rows is None:
            rows = shape[0]
        elif shape[0] != rows:
            raise DatasetError("read.schema", h.path, f"{shape[0]} rows, other columns have {rows}", col)
        if col in columns:
            out.append((col, dt, shape, h.data_start + b, h.data_start + e))
    if rows is not None:
        if samples is not None and samples > rows:
            raise DatasetError("dataset.manifest", h.path, f"samples_count {samples} is more than the shard's {rows} rows")
        if batch_size and rows > batch_size:
            raise DatasetError("read.schema", h.path, f"{rows} rows is more than batch_size {batch_size}")
    return out, rows


# ---- views --------------------------------------------------------------------------------------------
def _np_view(mm, dt, shape, b, e):
    raw = mm[b:e]
    if _NP[dt] is None:  # F4/F6: packed bytes
        return raw.view(np.ndarray)
    return raw.view(np.ndarray).view(np.dtype(_NP[dt])).reshape(shape)


_torch_mod = False  # not yet looked up


def _torch(required=True):
    global _torch_mod
    if _torch_mod is False:
        try:
            import torch
            _torch_mod = torch
        except ImportError:
            _torch_mod = None
    if _torch_mod is None and required:
        raise ImportError("torch is not installed: this call returns torch tensors (numpy() needs only numpy)")
    return _torch_mod


def _torch_dtype(dt, path, key):
    torch = _torch()
    name = _TORCH.get(dt)
    td = getattr(torch, name, None) if name else None
    if td is None:
        raise DatasetError("unsupported", path, f"torch {torch.__version__} has no dtype for {dt} (numpy() gives its bits)", key)
    return td


def _hugepage(mm):
    """madvise(MADV_HUGEPAGE) on a map: where the kernel keeps files in large folios (Linux 6.x on ext4,
    xfs, ...), the pages this map reads from disk then come in 2 MiB folios that later maps fault in
    whole (about 10x fewer faults than 4 KiB pages, measured by bench_loader.py). Pages already cached
    keep their folios. Without THP, or on other systems, nothing changes."""
    m = getattr(mm, "_mmap", None)
    advice = getattr(mmap, "MADV_HUGEPAGE", None)
    if m is not None and advice is not None:
        try:
            m.madvise(advice)
        except (OSError, ValueError):
            pass
    return mm


def _same_size(h):
    """A shard must still have the size its checked header was read at (a map past the end of a file
    that shrank would fault when read)."""
    try:
        size = os.path.getsize(h.path)
    except OSError as e:
        raise DatasetError("dataset.manifest", h.path, f"the shard cannot be read any more ({e.strerror})") from None
    if size != h.size:
        raise DatasetError("dataset.manifest", h.path, f"the shard changed size since it was opened ({h.size} -> {size})")


def _torch_view(h, dt, shape, b, e, key):
    """A tensor over the bytes [b, e) of h's file (absolute offsets): a copy-on-write np.memmap of that
    range (writable, so torch.frombuffer does not warn; writes stay private) and torch.frombuffer."""
    torch = _torch()
    td = _torch_dtype(dt, h.path, key)
    if e == b:
        return torch.empty(shape, dtype=td)
    _same_size(h)
    mm = _hugepage(np.memmap(h.path, dtype=np.uint8, mode="c", offset=b, shape=(e - b,)))
    return torch.frombuffer(mm, dtype=td, count=(e - b) * 8 // DTYPE_BITS[dt]).reshape(shape)


def bf16_to_float32(bits):
    """BF16 bits (uint16, as Dataset.numpy returns them) to float32: exact, a new array."""
    return (np.asarray(bits, dtype="<u2").astype(np.uint32) << 16).view(np.float32)


# ---- the iterable dataset (torch) ----------------------------------------------------------------------
def _rank_world():
    """(rank, world_size): torch.distributed's when initialised, else RANK and WORLD_SIZE, else (0, 1)."""
    torch = _torch()
    dist = getattr(torch, "distributed", None)
    if dist is not None and dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1))


def _make_iterable_class():
    torch = _torch()

    class ShardedIterableDataset(torch.utils.data.IterableDataset):
        """The samples of a batch-mode dataset, as {column: torch.Tensor} dicts.

        Shards are split across DDP ranks and DataLoader workers by the rule of `sts assign`: worker w
        of rank r is global worker r * num_workers + w of world_size * num_workers, and reads the shards
        the strategy gives it (balance by default; round_robin without a manifest). Every sample is read
        by exactly one worker of one rank; padding rows (tail_strategy=pad) are never yielded.

        Each shard's header is checked, against the manifest's schema too, before any of its bytes are
        used; each column is one torch.frombuffer over a copy-on-write map of the shard, and a sample is
        a view of its row: nothing is copied before the DataLoader's collation.

        columns: the columns to yield (default all); rank, world_size: default from torch.distributed,
        else RANK / WORLD_SIZE, else 0 and 1; strategy: "balance" or "round_robin"; batch: yield each
        shard's real rows as one dict of [rows, ...] tensors instead of samples (use batch_size=None);
        shuffle, seed: shuffle the shard order and the rows of each shard, per epoch (set_epoch)."""

        def __init__(self, path, columns=None, rank=None, world_size=None, strategy=None, batch=False,
                     shuffle=False, seed=0, index="require"):
            super().__init__()
            self.ds = path if isinstance(path, Dataset) else Dataset(path, index=index)
            if self.ds.mode not in ("batch", "files"):  # files: no manifest, each file [rows, ...] per column
                raise DatasetError("unsupported", self.ds.path,
                                   f"a {self.ds.mode} dataset: the iterable dataset reads batch shards (KV: Dataset.row)")
            self.schema = self.ds.schema()
            self.columns = list(self.schema) if columns is None else list(columns)
            for c in self.columns:
                if c not in self.schema:
                    raise DatasetError("read.schema", self.ds.path, "not a column of the schema", c)
            self.strategy = strategy or ("balance" if self.ds.has_manifest else "round_robin")
            assign([], 1, self.strategy)  # the strategy's name, checked now
            self.rank, self.world_size = rank, world_size
            self.batch, self.shuffle, self.seed, self.epoch = batch, shuffle, seed, 0

        def set_epoch(self, epoch):
            self.epoch = epoch

        def shards_for(self, rank=0, world_size=1, worker_id=0, num_workers=1):
            """The shards one DataLoader worker of one rank reads (shard indices, manifest order)."""
            owners = assign([s.samples_count for s in self.ds.list_shards()] if self.strategy == "balance"
                            else [None] * len(self.ds.list_shards()), world_size * num_workers, self.strategy)
            me = rank * num_workers + worker_id
            return [i for i, w in enumerate(owners) if w == me]

        def _split(self):
            info = torch.utils.data.get_worker_info()
            wid, nw = (info.id, info.num_workers) if info is not None else (0, 1)
            rank, world = self.rank, self.world_size
            if rank is None or world is None:
                r, w = _rank_world()
                rank = r if rank is None else rank
                world = w if world is None else world
            if not 0 <= rank < world:
                raise ValueError(f"rank {rank} is not in [0, world_size {world})")
            return self.shards_for(rank, world, wid, nw)

        def _shard_columns(self, i):
            """[(column, tensor [rows, ...])] of shard i, sliced to its real rows."""
            ds = self.ds
            h = ds.header(i)
            shard = ds.list_shards()[i]
            cols, rows = _batch_columns(h, ds.manifest["schema"], self.columns, shard.samples_count, ds.batch_size) \
                if ds.has_manifest and "schema" in ds.manifest else _columns_nomanifest(h, self.columns)
            n = rows if shard.samples_count is None else shard.samples_count
            # a map of each column's bytes for this pass only: an in-place change to a sample (or, with
            # batch=True, to a shard's tensor) never shows in a later epoch
            return [(c, _torch_view(h, dt, shape, b, e, c)[:n]) for c, dt, shape, b, e in cols], n

        def __iter__(self):
            mine = self._split()
            g = None
            if self.shuffle:
                g = torch.Generator()
                g.manual_seed(self.seed * 1000003 + self.epoch)
                mine = [mine[j] for j in torch.randperm(len(mine), generator=g).tolist()]
            for i in mine:
                cols, n = self._shard_columns(i)
                if self.batch:
                    yield dict(cols)
                    continue
                order = torch.randperm(n, generator=g).tolist() if g is not None else range(n)
                for r in order:
                    yield {c: t[r] for c, t in cols}

        def __len__(self):
            """Samples this worker will yield (or shards, with batch=True)."""
            mine = self._split()
            if self.batch:
                return len(mine)
            return sum(self._count(i) for i in mine)

        def _count(self, i):
            s = self.ds.list_shards()[i]
            return s.samples_count if s.samples_count is not None else self._shard_columns(i)[1]

    # a module-level name, so that pickle (DataLoader workers started by spawn) finds the class
    ShardedIterableDataset.__qualname__ = "ShardedIterableDataset"
    ShardedIterableDataset.__module__ = __name__
    return ShardedIterableDataset


def _columns_nomanifest(h, columns):
    out, rows = [], None
    for c in columns:
        if c not in h.tensors:
            raise DatasetError("read.schema", h.path, "the column is missing from the shard", c)
        dt, shape, b, e = h.tensors[c]
        if not shape or (rows is not None and shape[0] != rows):
            raise DatasetError("read.schema", h.path, f"{dt} {list(shape)}: not [rows, ...] like the other columns", c)
        rows = shape[0]
        out.append((c, dt, shape, h.data_start + b, h.data_start + e))
    return out, rows or 0


def __getattr__(name):  # PEP 562: the torch class is made on first use, so importing needs no torch
    if name == "ShardedIterableDataset":
        cls = _make_iterable_class()
        globals()[name] = cls
        return cls
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
