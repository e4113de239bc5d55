#!/usr/bin/python3
"""DataLoader throughput over batch shards (examples/python/safetensors_spark.py), against the same
data in .npy files read the same way, in the same run (issue 15; `make bench-python`).

A dataset of --gib GiB (a float32 column of --sample-shape per sample and an int64 label) is packed by
`sts pack` into shards of --shard-mib MiB; the same rows are saved as one .npy file per shard and
column. Both are read by a DataLoader (--workers workers, --batch-size samples a batch, default
collation) from an IterableDataset that gives each worker the same shards (the assignment rule) and
yields one {column: tensor} dict per sample:
  ours   ShardedIterableDataset: torch.frombuffer over each shard's mapping, a view per sample;
  .npy   np.load(mmap_mode="r") + torch.from_numpy per file, a view per sample.
Each path runs once to warm the page cache, then --runs times, alternating; the figures are medians:
samples/s, GB/s (10^9 bytes of sample data a second) and the ratio ours / .npy (the goal: >= 0.9).
Twice (--cache): with the page cache as the writers left it (np.save writes each file in one call, and
the kernel keeps such pages in large folios that fault in whole; `sts pack` writes 1 MiB pieces at
unaligned offsets, which leaves small ones), and after both datasets' pages were dropped and read back
through the loaders (ours asks for huge pages with madvise: it then reads them back in 2 MiB folios;
np.load does not). A line before each says what touching every mapped page costs in that state. A third path (unless --no-copy) reads the same shards written again with one
write() call each, with num_workers=0: the same loader over the page-cache state .npy files have, which
tells the loader's own cost from the state the writer left.
usage: bench_loader.py [--gib G] [--shard-mib M] [--sample-shape 3,64,64] [--batch-size B]
                       [--workers 0,2] [--runs R] [--cache as-written|reread|both] [--no-copy]
                       [--dir TMPDIR] [--profile]
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import safetensors_spark as sts  # noqa: E402
import torch  # noqa: E402
from torch.utils.data import DataLoader, IterableDataset, get_worker_info  # noqa: E402

STS = os.environ.get("STS", os.path.join(os.path.dirname(os.path.dirname(HERE)), "sts"))


class NpyShards(IterableDataset):
    """The baseline: per shard, x_NNNN.npy and y_NNNN.npy, split across workers as ours is."""

    def __init__(self, folder, nshards, counts):
        self.folder, self.n, self.counts = folder, nshards, counts

    def __iter__(self):
        info = get_worker_info()
        wid, nw = (info.id, info.num_workers) if info else (0, 1)
        owners = sts.assign(self.counts, nw, "balance")
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="The given NumPy array is not writable")
            for i in range(self.n):
                if owners[i] != wid:
                    continue
                x = torch.from_numpy(np.load(os.path.join(self.folder, f"x_{i:04d}.npy"), mmap_mode="r"))
                y = torch.from_numpy(np.load(os.path.join(self.folder, f"y_{i:04d}.npy"), mmap_mode="r"))
                for r in range(x.shape[0]):
                    yield {"x": x[r], "y": y[r]}


def make(folder, gib, shard_mib, shape):
    sample = int(np.prod(shape)) * 4
    rows = max(1, int(shard_mib * 2 ** 20) // sample)
    n = max(1, int(gib * 2 ** 30) // sample)
    rng = np.random.default_rng(15)
    x = np.lib.format.open_memmap(os.path.join(folder, "x.npy"), mode="w+", dtype=np.float32, shape=(n,) + shape)
    for a in range(0, n, rows):
        x[a:a + rows] = rng.standard_normal((min(rows, n - a),) + shape, dtype=np.float32)
    x.flush()
    y = np.arange(n, dtype=np.int64)
    np.save(os.path.join(folder, "y.npy"), y)
    t0 = time.time()
    subprocess.run([STS, "pack", os.path.join(folder, "ds"), "--column", f"x={folder}/x.npy",
                    "--column", f"y={folder}/y.npy", "--batch-size", str(rows), "--no-fsync"], check=True,
                   stdout=subprocess.DEVNULL)
    pack_s = time.time() - t0
    npy = os.path.join(folder, "npy")
    os.mkdir(npy)
    for i, a in enumerate(range(0, n, rows)):
        np.save(os.path.join(npy, f"x_{i:04d}.npy"), x[a:a + rows])
        np.save(os.path.join(npy, f"y_{i:04d}.npy"), y[a:a + rows])
    del x
    os.remove(os.path.join(folder, "x.npy"))
    os.remove(os.path.join(folder, "y.npy"))
    return n, rows, sample, pack_s


def run(dataset, batch_size, workers):
    t0 = time.perf_counter()
    count = 0
    for b in DataLoader(dataset, batch_size=batch_size, num_workers=workers):
        count += b["y"].shape[0]
    return count, time.perf_counter() - t0


def evict(folders):
    """Writes back and drops every file's pages from the page cache (POSIX_FADV_DONTNEED)."""
    for d in folders:
        for name in os.listdir(d):
            fd = os.open(os.path.join(d, name), os.O_RDONLY)
            try:
                os.fsync(fd)
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)


NAMES = {"ours": ("safetensors_spark.py", "the shards"),
         "npy": (".npy (np.load mmap + from_numpy)", "the .npy files"),
         "copy": ("safetensors_spark.py, shards rewritten", "the rewritten shards")}


def touch_ms_per_gib(folder, nbytes):
    """Maps every file of a folder and reads one byte a page: the page-fault cost of its page-cache state
    (on Linux, files written with large aligned writes sit in large folios that fault in whole)."""
    t0 = time.perf_counter()
    for name in sorted(os.listdir(folder)):
        p = os.path.join(folder, name)
        if os.path.getsize(p):
            m = np.memmap(p, dtype=np.uint8, mode="r")
            int(m[::4096].sum())
            del m
    return (time.perf_counter() - t0) * 1e3 / (nbytes / 2 ** 30)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gib", type=float, default=0.5, help="total sample data in GiB (default 0.5)")
    ap.add_argument("--shard-mib", type=float, default=64, help="shard size in MiB (default 64)")
    ap.add_argument("--sample-shape", default="3,64,64", help="float32 sample shape (default 3,64,64: 48 KiB)")
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--workers", default="0,2", help="DataLoader num_workers values to run (default 0,2)")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--no-copy", action="store_true", help="skip the third path (the shards rewritten in one write())")
    ap.add_argument("--copy-all", action="store_true", help="run the third path with workers too")
    ap.add_argument("--cache", choices=("both", "as-written", "reread"), default="both",
                    help="as-written: the page cache as the writers left it; reread: both datasets' pages "
                         "dropped, then read back once through the loaders (default both)")
    ap.add_argument("--dir", default=os.environ.get("BENCH_DIR", tempfile.gettempdir()))
    ap.add_argument("--profile", action="store_true", help="cProfile one pass of ours with num_workers=0")
    a = ap.parse_args()
    shape = tuple(int(d) for d in a.sample_shape.split(","))
    workers = [int(w) for w in a.workers.split(",")]
    folder = tempfile.mkdtemp(prefix="sts-bench-py.", dir=a.dir)
    try:
        n, rows, sample, pack_s = make(folder, a.gib, a.shard_mib, shape)
        dsdir, npydir = os.path.join(folder, "ds"), os.path.join(folder, "npy")
        counts = [s.samples_count for s in sts.Dataset(dsdir).list_shards()]
        # a fresh dataset object a pass, as the .npy files are loaded afresh: no mapping outlives a pass
        paths = {"ours": lambda: sts.ShardedIterableDataset(dsdir, rank=0, world_size=1),
                 "npy": lambda: NpyShards(npydir, len(counts), counts)}
        dirs = [dsdir, npydir]
        if not a.no_copy:  # the same shards, each written again with one write() call, as np.save writes
            cpdir = os.path.join(folder, "copy")
            os.mkdir(cpdir)
            for name in os.listdir(dsdir):
                with open(os.path.join(dsdir, name), "rb") as f:
                    data = f.read()
                with open(os.path.join(cpdir, name), "wb") as f:
                    f.write(data)
                del data
            paths["copy"] = lambda: sts.ShardedIterableDataset(cpdir, rank=0, world_size=1)
            dirs.append(cpdir)
        nbytes = n * (sample + 8)
        print(f"bench-python: {n} samples of float32 {list(shape)} + int64 ({nbytes / 1e9:.2f} GB) in {len(counts)} "
              f"shards of {rows} rows (packed in {pack_s:.1f} s); DataLoader batch_size={a.batch_size}; "
              f"torch {torch.__version__}, numpy {np.__version__}; median of {a.runs}, the two paths alternating")
        if a.profile:
            import cProfile
            import pstats
            pr = cProfile.Profile()
            pr.enable()
            run(paths["ours"](), a.batch_size, 0)
            pr.disable()
            pstats.Stats(pr).sort_stats("tottime").print_stats(12)
        worst = None
        for cache in (("as-written", "reread") if a.cache == "both" else (a.cache,)):
            if cache == "reread":
                evict(dirs)
            for label in paths:  # warm-up: brings the pages in (reread: through each loader's own mapping)
                c, _ = run(paths[label](), a.batch_size, 0)
                assert c == n, f"{label} read {c} samples of {n}"
            print(f"  page cache {cache}: mapping and touching every page costs "
                  + ", ".join(f"{touch_ms_per_gib(d, nbytes):.0f} ms/GiB for {NAMES[k][1]}" for k, d in zip(paths, dirs)))
            for w in workers:
                # the rewritten copy tells the loader's cost from the page cache's: once, without workers
                times = {k: [] for k in paths if k != "copy" or w == 0 or a.copy_all}
                for _ in range(a.runs):
                    for label in times:
                        c, t = run(paths[label](), a.batch_size, w)
                        assert c == n, f"{label} read {c} samples of {n}"
                        times[label].append(t)
                med = {k: statistics.median(v) for k, v in times.items()}
                ratio = med["npy"] / med["ours"]
                worst = ratio if worst is None else min(worst, ratio)
                print(f"  page cache {cache}, num_workers={w}:")
                for label in times:
                    print(f"    {NAMES[label][0]:44s} {n / med[label]:9.0f} samples/s {nbytes / med[label] / 1e9:6.2f} GB/s"
                          f"  (runs {', '.join(f'{t:.3f}' for t in times[label])} s)")
                print(f"    ratio ours / .npy: {ratio:.3f}{'' if ratio >= 0.9 else '  (below the 0.9 goal)'}"
                      + (f"; over the rewritten shards: {med['npy'] / med['copy']:.3f}" if "copy" in med else ""))
        print(f"bench-python: lowest ratio {worst:.3f} (goal >= 0.9)")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
