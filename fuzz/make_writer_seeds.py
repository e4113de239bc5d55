#!/usr/bin/env python3
"""Writes the hand-made seeds of the dataset writer's fuzz targets (each file's comment gives the
input's layout): fuzz/corpus/writer/s_*.job for fuzz/fuzz_writer.c, each a job the target runs
and checks against its model, chosen so the seeds together reach both KV layouts, both
duplicate strategies, the I/O thread and its absence, shard rolls at several targets, batch
tails, two tasks, an earlier dataset under overwrite, and each kind of fault; and
fuzz/corpus/options/s_*.opt for fuzz/fuzz_options.c, option maps as a Spark job passes them
(valid ones of both modes, every option, refused values, a failed allocation).
Run from the repository root: python3 fuzz/make_writer_seeds.py"""
import os
import random

# byte 0
KV, BATCH = 0, 3
ARRIVAL, LASTWIN, NO_IO, INDEX, TWO, PREVIOUS = 0x04, 0x08, 0x10, 0x20, 0x40, 0x80
# byte 1 (KV: target index in bits 0-3; batch: batch_size - 1 in bits 0-2, tail in bits 3-4)
DURABLE, SLASH, BF16 = 0x20, 0x40, 0x80
# byte 3
NOMEM, ENOSPC, EIO = 1, 2, 3


def row(key, size, dtype=0, shape=0):
    return bytes([(dtype << 3 | shape << 5) & 0xF8, key, size])


def bad(kind, size=0xC0):
    return bytes([5, kind, size])


SWITCH = bytes([6, 0, 0])
REINDEX = bytes([7, 0, 0])   # after the commit and its checks: sts_dataset_reindex, then check again


def job(b0, b1, b2, fault, ops):
    return bytes([b0, b1, b2, fault]) + b"".join(ops)


def seeds():
    rnd = random.Random(17)
    s = {}
    usual = [row(0x80, 0xC0) for _ in range(40)]                       # ascending new keys, usual sizes
    s["kv_sorted_small"] = job(KV | INDEX, 3, 0, 0, usual)
    s["kv_arrival_small"] = job(KV | INDEX | ARRIVAL, 3, 0, 0, usual)
    big = [row(0x80, 0x80 | rnd.randrange(64)) for _ in range(60)]     # up to 8k elements: chunk edges
    s["kv_arrival_rolls"] = job(KV | ARRIVAL | INDEX, 9, 0x05, 0, big)  # 200 kB target, an array column
    s["kv_sorted_rolls"] = job(KV | INDEX, 9, 0x05, 0, big)
    desc = [row(0xC0, rnd.randrange(256)) for _ in range(50)]          # descending keys: the index path
    s["kv_descending"] = job(KV | INDEX, 6, 0x02, 0, desc)
    pool = [row(rnd.randrange(8), 0xC0 | rnd.randrange(64), shape=rnd.randrange(4)) for _ in range(80)]
    s["kv_lastwin_arrival"] = job(KV | ARRIVAL | LASTWIN | INDEX, 8, 0x01, 0, pool)
    s["kv_lastwin_sorted"] = job(KV | LASTWIN | INDEX, 8, 0x01, 0, pool)
    s["kv_fail_dups"] = job(KV | INDEX, 7, 0x00, 0, pool)
    inplace = [row(0x40 | rnd.randrange(10), 0x80 | 20) for _ in range(120)]  # same size: replaced in place
    s["kv_lastwin_inplace"] = job(KV | ARRIVAL | LASTWIN, 10, 0x00, 0, inplace)
    odd = [row(0x08 | k, 0x10) for k in range(8)] + [row(0x80, 0x10)] * 4
    s["kv_escaped_keys"] = job(KV | INDEX, 5, 0x02, 0, odd)
    s["kv_escaped_keys_slash"] = job(KV | ARRIVAL, 5 | SLASH, 0x02, 0, odd)
    s["kv_metadata_name"] = job(KV | ARRIVAL | INDEX, 5, 0x42, 0, odd)  # "__meta" + "data__": key "" refused
    s["kv_separator_in_column"] = job(KV | PREVIOUS, 5, 0x82, 0, odd)   # prepare refuses the job
    broken = [bad(k) for k in range(5)] + usual[:10] + [row(0x80, 0xC0, dtype=1)] + [bad(k) for k in range(5)]
    s["kv_refused_rows"] = job(KV | INDEX, 4, 0x0A, 0, broken)
    s["kv_no_io_thread"] = job(KV | ARRIVAL | NO_IO | INDEX, 7, 0x01, 0, big[:30])
    s["kv_durable_bf16"] = job(KV | ARRIVAL | INDEX, 8 | DURABLE | BF16, 0x1E, 0, big[:30])
    two = []
    for i in range(40):
        two.append(row(0x80, 0x40 | rnd.randrange(64)))
        if i % 3 == 0:
            two.append(SWITCH)
    s["kv_two_tasks"] = job(KV | ARRIVAL | INDEX | TWO, 6, 0x01, 0, two)
    s["kv_previous_overwrite"] = job(KV | INDEX | PREVIOUS, 7, 0x00, 0, usual[:12])
    s["kv_tiny_target"] = job(KV | ARRIVAL | LASTWIN, 13, 0x00, 0, pool[:30])
    s["kv_large_target"] = job(KV | ARRIVAL | INDEX, 12, 0x04, 0, big)
    # faults: the k-th allocation, the k-th write-side call
    for name, f in (("nomem", NOMEM), ("enospc", ENOSPC), ("eio", EIO)):
        for k in (1, 9, 40):
            s["kv_%s_%d" % (name, k)] = job(KV | ARRIVAL | INDEX | (PREVIOUS if k == 9 else 0), 8, 0x01, f | k << 2, big[:40])
        s["kv_sorted_%s" % name] = job(KV | INDEX | LASTWIN, 8, 0x00, f | 20 << 2, pool)
        s["batch_%s" % name] = job(BATCH | INDEX, 3 | 2 << 3, 0x06, f | 12 << 2, [row(0, 0xC0)] * 20)
    # batch: tails, shapes
    for tail in range(3):
        s["batch_tail%d" % tail] = job(BATCH | INDEX, 3 | tail << 3, 0x06, 0, [row(0, 0xC0)] * 11 + [row(0, 0x3F)])
    s["batch_two_tasks"] = job(BATCH | TWO, 1 | 2 << 3, 0x05, 0, ([row(0, 0xC0)] * 3 + [SWITCH]) * 5)
    s["batch_large_cells"] = job(BATCH | INDEX, 1 | 1 << 3, 0x04, 0, [row(0, 0x3E)] * 3 + [row(0, 0xC0)])
    s["batch_previous"] = job(BATCH | PREVIOUS | INDEX, 2, 0x02, 0, [row(0, 0xC0)] * 7)
    for k, what in ((1, "twice"), (2, "stale"), (3, "cut")):  # a wrong dataset commit first
        s["kv_commit_%s" % what] = job(KV | ARRIVAL | INDEX | TWO | PREVIOUS, 6, 0x01, 0, two + [bytes([7, k, 0])])
        s["kv_lastwin_commit_%s" % what] = job(KV | LASTWIN | INDEX | PREVIOUS, 8, 0x01, 0, pool + [bytes([7, k, 0])])
        s["batch_commit_%s" % what] = job(BATCH | INDEX | TWO | PREVIOUS, 1 | 2 << 3, 0x05, 0,
                                          ([row(0, 0xC0)] * 3 + [SWITCH]) * 5 + [bytes([7, k, 0])])
    for k, name in enumerate(("kv_two_tasks", "batch_two_tasks", "kv_previous_overwrite", "kv_lastwin_sorted")):
        # after the commit: discard and abort with the job's messages, the (3k)-th allocation failing
        s[name + "_late_abort"] = s[name] + bytes([7, 4, 3 * k])
    for name in ("kv_lastwin_arrival", "kv_lastwin_sorted", "batch_tail2", "kv_two_tasks", "kv_previous_overwrite"):
        s[name + "_reindex"] = s[name] + REINDEX
    for b in (1, 7, 20, 4, 10):  # reindex with an allocation (odd b) or a write-side call (even b) failing
        s["kv_reindex_fault_%d" % b] = s["kv_lastwin_arrival"] + bytes([7, 0, b])
        s["batch_reindex_fault_%d" % b] = s["batch_tail2"] + bytes([7, 0, b])
    # durable, the last write-side call failing: the folder's fsync after the commit's publication
    # (io.durable: published all the same), then after a reindex's
    s["kv_durable_dirsync"] = job(KV | INDEX, 8 | DURABLE, 0x01, ENOSPC | 17 << 2, usual[:6])
    s["kv_durable_reindex_dirsync"] = job(KV | INDEX, 8 | DURABLE, 0x01, 0, usual[:6]) + bytes([7, 0, 18])
    return s


def opts(flags, pairs):
    """fuzz_options: a flags byte (bits 0-5 the failing allocation, 0x40 F64 cells, 0x80 an earlier
    dataset), then NUL-separated key, value pairs."""
    return bytes([flags]) + b"".join(k.encode() + b"\0" + v.encode() + b"\0" for k, v in pairs)


def option_seeds():
    kv = [("name_col", "id"), ("columns", "t,a,b"), ("dtype", "F32")]
    batch = [("batch_size", "2"), ("columns", "t,a,b"), ("dtype", "F32")]
    return {
        "kv": opts(0, kv),
        "kv_every_option": opts(0x80, [("name_col", "id"), ("columns", "t,a,b"), ("kv_separator", "::"),
                                       ("duplicatesStrategy", "lastWin"), ("generate_index", "true"),
                                       ("target_shard_size_mb", "50"), ("dtype", "BF16"), ("rounding", "nearest_even"),
                                       ("mode", "overwrite"), ("durable", "false"), ("io_thread", "false"),
                                       ("commit_threads", "4"), ("kv_layout", "arrival"), ("path", "/x")]),
        "kv_shapes_f64": opts(0x40, [("name_col", "id"), ("columns", "a,b"), ("shapes", '{"a":[2,3],"b":[4]}'),
                                     ("dtype", "F16")]),
        "kv_string_column": opts(0, [("name_col", "id"), ("dtype", "F32")]),
        "kv_separator_in_column": opts(0, kv + [("kv_separator", "a")]),
        "kv_shapes_refused": opts(0, kv + [("shapes", '{"a":[2,-1],"zz":[1]}')]),
        "kv_columns_twice": opts(0, [("name_col", "id"), ("columns", " t , a ,,b,t"), ("dtype", "F32")]),
        "kv_earlier_dataset": opts(0x80, kv),
        "kv_earlier_overwrite": opts(0x80, kv + [("mode", "overwrite"), ("generate_index", "true")]),
        "batch_pad": opts(0, batch + [("tail_strategy", "pad")]),
        "batch_shapes_drop": opts(0, [("batch_size", "3"), ("columns", "t,a"), ("shapes", '{"a": [2, 2]}'),
                                      ("tail_strategy", "drop"), ("generate_index", "true"), ("dtype", "U8")]),
        "batch_i8_f64": opts(0x40, [("batch_size", "1"), ("columns", "a,b"), ("dtype", "I8")]),
        "both_modes": opts(0, [("batch_size", "2"), ("name_col", "id"), ("dtype", "F32")]),
        "values_refused": opts(0, [("batch_size", "0"), ("target_shard_size_mb", "49"), ("dtype", "F8_E4M3"),
                                   ("tail_strategy", "x"), ("mode", "append"), ("kv_separator", ""),
                                   ("commit_threads", "65"), ("unknown", "1")] + kv),
        # a padded tail of 2^40 rows: a sparse file of 53 TB whose CRC of zeros was once O(n)
        "batch_huge_pad": opts(0, [("batch_size", "1099511627776"), ("columns", "t,a,b"), ("dtype", "F32"),
                                   ("tail_strategy", "pad")]),
        "nomem_3": opts(3, kv),
        "nomem_40": opts(40, batch + [("generate_index", "true")]),
        "nomem_60": opts(60, kv + [("kv_layout", "arrival")]),
    }


def write(out, ext, seeds_of):
    os.makedirs(out, exist_ok=True)
    for old in os.listdir(out):  # the hand-made seeds only: r_* are inputs the fuzzer found
        if old.startswith("s_"):
            os.remove(os.path.join(out, old))
    for name, data in sorted(seeds_of.items()):
        with open(os.path.join(out, "s_%s.%s" % (name, ext)), "wb") as f:
            f.write(data)
    print("wrote %d seeds to %s" % (len(seeds_of), out))


def main():
    write(os.path.join("fuzz", "corpus", "writer"), "job", seeds())
    write(os.path.join("fuzz", "corpus", "options"), "opt", option_seeds())


if __name__ == "__main__":
    main()
