#!/usr/bin/python3
"""C++ placement env (bench_env) against its plain-Python twin
(placement_env.py): first checks that both implement the same MDP (a fixed
action sequence must give the same steps, returns, observation sums, costs,
spills and migrations per episode), then times random-action reset + step
loops on each workload, interleaved and repeated, and prints steps/s and
the median of the per-round ratios.

usage: compare_env.py BUILD_DIR [--workloads SPEC,...] [--rounds N] [--seconds S]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def lines(cmd):
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return [json.loads(x) for x in out.strip().splitlines()]


def close(a, b, rel):
    return abs(a - b) <= rel * max(1.0, abs(a), abs(b))


def check(cpp, py, spec, args, path):
    episodes = str(args.check_episodes)
    c = lines(cpp + ["--check-episodes", episodes])
    p = lines(py + [path, "--check-episodes", episodes])
    worst = 0.0
    for a, b in zip(c, p):
        for key in ("steps", "spills", "oom", "migrations"):
            if a[key] != b[key]:
                raise SystemExit(f"{spec}: episode {a['episode']} {key} differs: C++ {a[key]} Python {b[key]}")
        # Returns and costs are double arithmetic in the same order; the
        # observation sum adds float32 features, rounded alike on both sides.
        for key in ("return", "normalised_cost", "observation_sum"):
            if not close(a[key], b[key], 1e-9):
                raise SystemExit(f"{spec}: episode {a['episode']} {key} differs: C++ {a[key]!r} Python {b[key]!r}")
            worst = max(worst, abs(a[key] - b[key]) / max(1.0, abs(a[key])))
    if len(c) != len(p):
        raise SystemExit(f"{spec}: episode counts differ")
    return c, worst


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("build_dir")
    ap.add_argument("--workloads", default="synthetic:resnet:4,synthetic:vgg:16,synthetic:resnet:50")
    ap.add_argument("--dram-fraction", default="0.2")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--check-episodes", type=int, default=5)
    ap.add_argument("--json", help="write the rows here too")
    args = ap.parse_args()
    bench = os.path.join(args.build_dir, "bench", "bench_env")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        print(f"{'workload':24} {'tensors':>7} {'steps/ep':>8} {'C++ steps/s':>12} {'Python steps/s':>15} "
              f"{'ratio':>7}  check (5 episodes, worst rel. diff)")
        for spec in args.workloads.split(","):
            path = os.path.join(tmp, spec.replace(":", "_").replace("/", "_") + ".json")
            cpp = [bench, "--workload", spec, "--dram-fraction", args.dram_fraction]
            subprocess.run(cpp + ["--dump-json", path], check=True)
            py = [sys.executable, os.path.join(HERE, "placement_env.py")]
            episodes, worst = check(cpp, py, spec, args, path)
            cpp_rates, py_rates, ratios = [], [], []
            info = None
            for r in range(args.rounds):
                order = [("cpp", cpp + ["--seconds", str(args.seconds)]),
                         ("py", py + [path, "--seconds", str(args.seconds)])]
                if r % 2:
                    order.reverse()
                got = {name: lines(cmd)[-1] for name, cmd in order}
                info = got["cpp"]
                cpp_rates.append(got["cpp"]["steps_per_second"])
                py_rates.append(got["py"]["steps_per_second"])
                ratios.append(cpp_rates[-1] / py_rates[-1])
            row = {"workload": spec, "dram_fraction": float(args.dram_fraction), "kernels": info["kernels"],
                   "tensors": info["tensors"], "steps_per_episode": info["steps"] / info["episodes"],
                   "cpp_steps_per_second": statistics.median(cpp_rates),
                   "python_steps_per_second": statistics.median(py_rates),
                   "ratio": statistics.median(ratios), "round_ratios": ratios,
                   "check_episodes": len(episodes), "check_worst_relative_difference": worst}
            rows.append(row)
            print(f"{spec:24} {row['tensors']:7d} {row['steps_per_episode']:8.0f} "
                  f"{row['cpp_steps_per_second']:12.0f} {row['python_steps_per_second']:15.0f} "
                  f"{row['ratio']:7.1f}  same MDP ({worst:.1e}); rounds " + " ".join(f"{x:.1f}" for x in ratios),
                  flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
