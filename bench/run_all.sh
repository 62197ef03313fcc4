#!/usr/bin/env bash
# Runs the benchmarks and leaves tables in bench/results/. Figures are
# ratios measured in the same run: these machines are shared and noisy.
#   [OUT=DIR] bench/run_all.sh [BUILD_DIR]   (docs/results/executor.md has the figures of one run)
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
