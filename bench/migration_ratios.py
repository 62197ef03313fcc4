#!/usr/bin/env python3
"""Migration copy throughput as a fraction of plain memcpy, per size, from
bench_migration's JSON (median of the repetitions; bytes per CPU second, the
thread's own work, which keeps the ratio meaningful on a shared machine)."""
import json
import sys
from collections import defaultdict


def main(path):
    with open(path) as f:
        data = json.load(f)
    rate = defaultdict(dict)  # size -> benchmark -> bytes/s
    for b in data["benchmarks"]:
        if b.get("run_type") == "aggregate" and b.get("aggregate_name") != "median":
            continue
        name, size = b["run_name"].split("/")[:2] if "run_name" in b else b["name"].split("/")[:2]
        rate[int(size)][name] = b["bytes_per_second"]
    names = sorted({n for r in rate.values() for n in r if n != "BM_Memcpy"})
    print("%-10s %12s " % ("bytes", "memcpy_GB/s") + " ".join("%26s" % n for n in names))
    for size in sorted(rate):
        base = rate[size].get("BM_Memcpy")
        if not base:
            continue
        cells = []
        for n in names:
            v = rate[size].get(n)
            cells.append("%26s" % ("-" if v is None else "%.1f GB/s %4.0f%%" % (v / 1e9, 100 * v / base)))
        print("%-10d %12.1f " % (size, base / 1e9) + " ".join(cells))


if __name__ == "__main__":
    main(sys.argv[1])
