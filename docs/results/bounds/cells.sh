#!/usr/bin/env bash
# Session forty-six's cells (cost model, DRAM 0.2, 120 s searches, --ilp-time-limit 60 for the
# relaxation and its bound). One `bench` per model.
#   headroom: `relaxation` (its bound: every sync plan, or every async plan in async mode) beside
#             `heat+search` (criterion 3's ablation). WL is a workload file.
#     MODE=sync OUT=/tmp/b docs/results/bounds/cells.sh headroom WL NAME
#   relax-search: the plan-time search from the relaxation's plan, with the network
#             (`dqn+relax+search`) and with heat order in its place (`heat+relax+search`), beside
#             `relaxation`; SRC holds wl_MODEL.ttwl and runs/default-MODE-MODEL-dqn (a network of
#             docs/results/polish-gaps/cells.sh). POLICIES replaces the policy list; WL_SUFFIX
#             and RUN_PREFIX as in ../plan-relaxation/cells.sh (paper scale: _paper, _paper).
#     MODE=async SRC=/work/s44 OUT=/tmp/b docs/results/bounds/cells.sh relax-search alexnet vgg19
set -euo pipefail
tt=$(cd "$(dirname "$0")/../../.." && pwd)/build/cli/tensortier
kind=$1; shift
mode=${MODE:-sync}
mkdir -p "$OUT"
if [ "$kind" = headroom ]; then
  wl=$1 name=$2
  $tt bench --workload "$wl" --mode "$mode" --policies relaxation heat+search --dram-fractions 0.2 \
    --ilp-time-limit 60 --cost-model-only --out "$OUT/hr_$name" > "$OUT/log_hr_$name.txt" 2>&1
  cut -d, -f2,5,7 "$OUT/hr_$name/bench.csv"; grep -o "relaxation at[^;]*" "$OUT/hr_$name/bench.md"
  exit 0
fi
for m in "$@"; do
  name="$m${WL_SUFFIX:-}_$mode"
  # shellcheck disable=SC2086
  $tt bench --workload "$SRC/wl_$m${WL_SUFFIX:-}.ttwl" --mode "$mode" \
    --policies ${POLICIES:-dqn+relax+search heat+relax+search relaxation} \
    --checkpoint "$m=$SRC/runs/${RUN_PREFIX:-default}-$mode-$m-dqn/checkpoints/dqn-fastest.ckpt" \
    --dram-fractions 0.2 --ilp-time-limit 60 --cost-model-only --out "$OUT/$name" > "$OUT/log_$name.txt" 2>&1
  cut -d, -f2,5,7 "$OUT/$name/bench.csv"; grep -o "relaxation at[^;]*" "$OUT/$name/bench.md" || true
done
