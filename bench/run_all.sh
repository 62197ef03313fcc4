#!/usr/bin/env bash
# Runs the benchmarks and leaves tables in bench/results/. Figures are
# ratios measured in the same run: these machines are shared and noisy.
set -euo pipefail
build=${1:-build}
out=bench/results
mkdir -p "$out"
echo "== migration copy throughput vs memcpy"
"$build/bench/bench_migration" --benchmark_counters_tabular=true --benchmark_min_time=0.2 \
  --benchmark_out="$out/migration.json" --benchmark_out_format=json | tee "$out/migration.txt"
echo "== zoo: size, all-DRAM vs all-slow, profiler overhead"
"$build/bench/bench_zoo" --csv "$out/zoo.csv" | tee "$out/zoo.txt"
