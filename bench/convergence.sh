#!/usr/bin/env bash
# Episodes to convergence of DQN and SAC on three workloads (synthetic
# specs or profiled .ttwl files), on the cost model, to set beside DeepTM's
# 130-300 episodes.
#
# usage: bench/convergence.sh [BUILD_DIR] [OUT_DIR]
#   EPISODES (default 600): the most episodes a run may take
#   WORKLOADS, AGENTS: override the lists below
#   CONVERGE_WINDOW (5), CONVERGE_TOLERANCE (0.01), EVAL_EVERY (10), WORKERS (2)
#   TABULATE_ONLY=1: no training, only the table of the runs already in OUT_DIR
#
# Two figures per run:
#  - "stopping rule": the episode at which `tensortier train --converge-window
#    W --converge-tolerance T` stopped the run (summary.json "convergence"):
#    W greedy evaluations in a row within T * max(1, |best evaluation
#    reward|) of each other, none beating the best before them by more.
#    "-" when the run reached EPISODES first.
#  - "best within 1%": from metrics.csv, the first episode after which the
#    best cost-model runtime found so far (greedy evaluations and episodes
#    alike) stays within 1% of its value at the end of the run. It never
#    needs the stopping rule, so it is also defined for runs that hit EPISODES.
set -euo pipefail
build=${1:-build}
out=${2:-bench/results/convergence}
episodes=${EPISODES:-600}
workloads=${WORKLOADS:-"synthetic:resnet:4 synthetic:vgg:8 synthetic:mobilenet:10"}
agents=${AGENTS:-"dqn sac"}
window=${CONVERGE_WINDOW:-5}
tolerance=${CONVERGE_TOLERANCE:-0.01}
eval_every=${EVAL_EVERY:-10}
workers=${WORKERS:-2}
tt="$build/cli/tensortier"
mkdir -p "$out"

table="$out/convergence.md"
{
  echo "| agent | workload | episodes run | stopping rule: converged at episode | best within 1% from episode | final greedy normalised cost | final plan (greedy or best episode), % of all-DRAM | first-touch, % of all-DRAM | seconds |"
  echo "|---|---|---|---|---|---|---|---|---|"
} > "$table"

for agent in $agents; do
  for workload in $workloads; do
    name=$(basename "$workload" .ttwl)
    run="$out/${agent}-${name//:/_}"
    echo "== $agent $workload" >&2
    [ -n "${TABULATE_ONLY:-}" ] || rm -rf "$run"
    [ -n "${TABULATE_ONLY:-}" ] || "$tt" --log-level warn train --workload "$workload" --cost-model-only --agent "$agent" \
      --episodes "$episodes" --workers "$workers" --eval-every "$eval_every" \
      --converge-window "$window" --converge-tolerance "$tolerance" --out "$run" > "$run.log" 2>&1 ||
      { echo "run failed, see $run.log" >&2; continue; }
    /usr/bin/env python3 - "$run" "$agent" "$workload" >> "$table" <<'EOF'
import csv, json, sys
run, agent, workload = sys.argv[1:4]
summary = json.load(open(f"{run}/summary.json"))
rows = list(csv.DictReader(open(f"{run}/metrics.csv")))
conv = summary.get("convergence", {})
stopped = str(conv["episodes"]) if conv.get("converged") else "-"
best = [(int(r["episode"]), float(r["best_runtime_ns"])) for r in rows if float(r["best_runtime_ns"]) > 0]
within = "-"
if best:
    final = best[-1][1]
    # best_runtime_ns only falls, so the first episode within 1% stays within.
    within = str(next(e for e, b in best if b <= final * 1.01))
greedy = summary.get("greedy", summary.get("greedy_policy", {}))
cost = greedy.get("normalised_cost", "") if isinstance(greedy, dict) else ""
seconds = summary.get("wall_seconds", "")
fmt = lambda x: f"{x:.3f}" if isinstance(x, float) else str(x)
# comparison.json: the run's final plan (the greedy policy's, or the best
# episode's when that was better) and the baselines, on the cost model.
share = {}
try:
    for row in json.load(open(f"{run}/comparison.json")):
        baseline = row["policy"] in ("all-dram (no limit)", "first-touch", "all-slow")
        share[row["policy"] if baseline else "final"] = f"{100 * row['relative_performance']:.1f}%"
except (OSError, ValueError, KeyError):
    pass
print(f"| {agent} | {workload} | {len(rows)} | {stopped} | {within} | {fmt(cost)} | {share.get('final', '')} | "
      f"{share.get('first-touch', '')} | {fmt(seconds)} |")
EOF
  done
done
cat "$table"
