#!/usr/bin/env bash
# Runs the benchmarks and leaves tables in bench/results/. Figures are
# ratios measured in the same run: these machines are shared and noisy.
#   [OUT=DIR] [CONVERGENCE=1] [HEAT=1] bench/run_all.sh [BUILD_DIR]
# (docs/results/executor.md and learner-benchmarks.md have the figures of runs)
set -euo pipefail
build=${1:-build}
out=${OUT:-bench/results}
mkdir -p "$out"
echo "== migration copy throughput vs memcpy"
"$build/bench/bench_migration" --benchmark_counters_tabular=true --benchmark_min_time=0.2 \
  --benchmark_repetitions=3 --benchmark_report_aggregates_only=true \
  --benchmark_out="$out/migration.json" --benchmark_out_format=json | tee "$out/migration.txt"
if command -v python3 >/dev/null; then
  python3 bench/migration_ratios.py "$out/migration.json" | tee "$out/migration_ratios.txt"
fi
echo "== zoo: size, all-DRAM vs all-slow, profiler overhead"
"$build/bench/bench_zoo" --csv "$out/zoo.csv" | tee "$out/zoo.txt"
echo "== aggregation ablation (resnet18, prefetch-evict plan)"
for mode in sync async; do
  "$build/bench/bench_aggregation" --mode "$mode" --rounds 5 --csv "$out/aggregation_$mode.csv" \
    | tee "$out/aggregation_$mode.txt"
done
# Learner benchmarks (docs/results/learner-benchmarks.md). The comparisons
# with Python need Debian's python3-torch and numpy; skipped without them.
echo "== learner: transitions ingested per second from 1-64 worker processes"
"$build/bench/bench_ingest" --ingest-worker "$build/bench/ingest_worker" --workers 1,4,16,64 --modes ingest \
  --seconds 2 | tee "$out/ingest.txt"
if /usr/bin/python3 -c 'import torch, numpy' 2>/dev/null; then
  echo "== learner: gradient updates per second, C++ against PyTorch"
  /usr/bin/python3 bench/python/compare_updates.py "$build" --rounds 3 --seconds 2 | tee "$out/updates.txt"
  echo "== learner: environment steps per second, C++ against Python"
  /usr/bin/python3 bench/python/compare_env.py "$build" --rounds 3 --seconds 2 | tee "$out/env.txt"
else
  echo "(python3-torch or numpy missing: the C++/Python comparisons are skipped)"
fi
# Minutes each: opt in.
if [ -n "${CONVERGENCE:-}" ]; then
  echo "== learner: episodes to convergence"
  bench/convergence.sh "$build" "$out/convergence"
fi
if [ -n "${HEAT:-}" ]; then
  echo "== learned heat weights (continuous SAC) against Algorithm 1"
  "$build/bench/bench_heat_weights" --csv "$out/heat_weights.csv" | tee "$out/heat_weights.md"
fi
