#!/usr/bin/python3
"""Interleaves bench_updates (C++) and bench_updates.py (PyTorch) for DQN and
SAC at batch 32 and 256, repeats each pair, and prints updates/s and their
ratio (the median of the per-round ratios: both sides of a ratio ran back
to back, so load from other processes on a shared machine mostly cancels).

usage: compare_updates.py BUILD_DIR [--rounds N] [--seconds S] [--threads T]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def run(cmd):
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("build_dir")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--threads", type=int, default=0,
                    help="intra-op threads for both sides (0: the C++ side's default, passed to Python)")
    ap.add_argument("--agents", default="dqn,sac")
    ap.add_argument("--batches", default="32,256")
    ap.add_argument("--json", help="write the rows here too")
    args = ap.parse_args()

    cpp = os.path.join(args.build_dir, "bench", "bench_updates")
    py = [sys.executable, os.path.join(HERE, "bench_updates.py")]
    threads = args.threads
    if threads == 0:
        # Python gets exactly the thread count LibTorch picked for C++.
        threads = run([cpp, "--agent", "dqn", "--batch", "32", "--seconds", "0.01",
                       "--warmup-updates", "1"])["threads"]
    rows = []
    print(f"threads per side: {threads}")
    print(f"{'agent':5} {'batch':>5} {'C++ updates/s':>14} {'PyTorch updates/s':>18} {'ratio':>6}  per-round ratios")
    for agent in args.agents.split(","):
        for batch in [int(b) for b in args.batches.split(",")]:
            common = ["--agent", agent, "--batch", str(batch), "--seconds", str(args.seconds),
                      "--threads", str(threads)]
            cpp_rates, py_rates, ratios = [], [], []
            for r in range(args.rounds):
                # Alternate which side goes first, so that a load change
                # during a round does not always favour the same side.
                order = [("cpp", [cpp] + common), ("py", py + common)]
                if r % 2:
                    order.reverse()
                got = {name: run(cmd) for name, cmd in order}
                if got["cpp"]["threads"] != got["py"]["threads"]:
                    raise SystemExit(f"thread counts differ: {got}")
                cpp_rates.append(got["cpp"]["updates_per_second"])
                py_rates.append(got["py"]["updates_per_second"])
                ratios.append(cpp_rates[-1] / py_rates[-1])
            row = {"agent": agent, "batch": batch, "threads": threads,
                   "cpp_updates_per_second": statistics.median(cpp_rates),
                   "python_updates_per_second": statistics.median(py_rates),
                   "ratio": statistics.median(ratios), "round_ratios": ratios}
            rows.append(row)
            print(f"{agent:5} {batch:5d} {row['cpp_updates_per_second']:14.0f} "
                  f"{row['python_updates_per_second']:18.0f} {row['ratio']:6.2f}  "
                  + " ".join(f"{x:.2f}" for x in ratios), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
