#!/usr/bin/env bash
# Session forty-five's cells: one `bench` per model with the strongest baselines, the relaxation
# and the network's plan-time search (cost model, DRAM 0.2, 120 s search, 60 s ILPs and
# relaxation). SRC holds wl_MODEL.ttwl and runs/default-MODE-MODEL-dqn (a network of
# docs/results/polish-gaps/cells.sh); OUT where the outputs go. Other names: WL_SUFFIX (wl_MODEL$WL_SUFFIX.ttwl)
# and RUN_PREFIX (runs/$RUN_PREFIX-MODE-MODEL-dqn): session forty-three's paper-like scale is
# WL_SUFFIX=_paper RUN_PREFIX=_paper with SRC=/work/s43.
#   SRC=/work/s41 OUT=/tmp/pr docs/results/plan-relaxation/cells.sh sync resnet152 inception_v3
#   SRC=/work/s44 OUT=/tmp/pr docs/results/plan-relaxation/cells.sh async mobilenet_v2 alexnet
set -euo pipefail
tt=$(cd "$(dirname "$0")/../../.." && pwd)/build/cli/tensortier
mode=$1; shift
if [ "$mode" = sync ]; then policies="dqn+search heat+search heat+ilp autotm-sync relaxation"
else policies="dqn+search heat+ilp autotm-async relaxation"; fi
mkdir -p "$OUT"
for m in "$@"; do
  SECONDS=0
  wl="$SRC/wl_$m${WL_SUFFIX:-}.ttwl" name="$m${WL_SUFFIX:-}_$mode"
  $tt bench --workload "$wl" --mode "$mode" --policies $policies \
    --checkpoint "$m=$SRC/runs/${RUN_PREFIX:-default}-$mode-$m-dqn/checkpoints/dqn-fastest.ckpt" \
    --dram-fractions 0.2 --ilp-time-limit 60 --cost-model-only --out "$OUT/$name" > "$OUT/log_$name.txt" 2>&1
  echo "== $name: $SECONDS s"
  cut -d, -f2,5,7 "$OUT/$name/bench.csv"
  grep -o "polish_edits=[^ ]* polish_saved_ns=[^ ]* polish_seconds=[^ ]*" "$OUT/log_$name.txt" | tr '\n' ' '; echo
done
