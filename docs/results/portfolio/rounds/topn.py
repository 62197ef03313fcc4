#!/usr/bin/env python3
"""topn.py RUN.rounds.tsv...: the best greedy plan among the N rounds with the best validation score, per module.
Sentinel's figures are this session's (cost model, sync, DRAM 0.2): collstm, rowgru, mixer, convnext."""
import sys
SENTINEL = [61.5, 60.3, 60.0, 66.7]
for path in sys.argv[1:]:
    rows = [l.rstrip('\n').split('\t') for l in open(path)][1:]
    rows = [(int(r[0]), float(r[1]), [float(x) for x in r[2:]]) for r in rows]
    ranked = sorted(rows, key=lambda r: (-r[1], r[0]))  # validation printed to 0.1: ties resolved by round
    for n in (1, 2, 4, 8, 16, len(rows)):
        best = [max(r[2][m] for r in ranked[:n]) for m in range(4)]
        print(f"{path} top-{n}: {best} mean {sum(best) / 4:.2f}, >= Sentinel on {sum(b >= s for b, s in zip(best, SENTINEL))} of 4")
