#!/usr/bin/env python3
"""Criterion 3 against the bounds, read from tables bench/paper_tables.sh wrote (issue #15).

For each pipeline (the greedy plan, +polish, +search) and each model of each table: the learned
row, its two ablations of the same run (heat order and the untrained network in the network's
place), the bound the table's `relaxation` row carries (async: every async plan's; sync: the
LP relaxation's, every sync plan's), and the room the bound leaves above the better ablation.
Where that room is under 5 points, no network can be 5 points above both ablations there.

    docs/results/bounds/room.py docs/results/fig14-async docs/results/fig14-paper-async ...

Prints a markdown table per table directory, then the counts. Reads only bench.csv.
"""
import csv
import sys

PIPELINES = [("greedy", ""), ("+polish", "+polish"), ("+search", "+search")]
MARGIN = 5.0  # criterion 3: points of all-DRAM's speed


def read_table(directory):
    cells, bounds = {}, {}
    with open(f"{directory}/bench.csv", newline="") as f:
        for row in csv.DictReader(f):
            cells.setdefault(row["workload"], {})[row["policy"]] = 100 * float(row["predicted_relative"])
            if row["policy"] == "relaxation" and row["solver_bound_relative"]:
                bounds[row["workload"]] = 100 * float(row["solver_bound_relative"])
    return cells, bounds


def main(directories):
    if not directories:
        sys.exit(__doc__)
    for directory in directories:
        cells, bounds = read_table(directory)
        print(f"\n### {directory}\n")
        print("| model | pipeline | learned | heat order | untrained | bound | room above both | learned above both |")
        print("|---|---|---:|---:|---:|---:|---:|---:|")
        counts = {}
        for model, row in cells.items():
            for label, suffix in PIPELINES:
                names = ("dqn" + suffix, "heat" + suffix, "untrained-dqn" + suffix)
                if model not in bounds or any(n not in row for n in names):
                    continue
                learned, heat, untrained = (row[n] for n in names)
                room = bounds[model] - max(heat, untrained)
                above = learned - max(heat, untrained)
                feasible, met = counts.get(label, (0, 0))
                counts[label] = (feasible + (room >= MARGIN), met + (above >= MARGIN))
                print(f"| {model} | {label} | {learned:.2f} | {heat:.2f} | {untrained:.2f} | {bounds[model]:.2f} | "
                      f"{room:+.2f} | {'**' if above >= MARGIN else ''}{above:+.2f}{'**' if above >= MARGIN else ''} |")
        for label, (feasible, met) in counts.items():
            print(f"\n{label}: room for +{MARGIN:g} on {feasible} of {len(cells)}, met on {met}", end="")
        print()


if __name__ == "__main__":
    main(sys.argv[1:])
