#!/usr/bin/env bash
# Criterion 2 again at the default scale, sync, with the polish (session forty-four): every
# baseline that led a measured table, heat+ilp, dqn and dqn+search on real iterations
# (emulated slow tier), --repeats 2 --rounds 5, DRAM 0.2 x peak, ILPs 60 s, search 120 s.
set -uo pipefail
tt=/work/main/build/cli/tensortier
cd $OUT
for spec in "$@"; do
  m=${spec%%:*}; src=${spec#*:}
  SECONDS=0
  $tt bench --workload $src/wl_$m.ttwl --mode sync --checkpoint $m=$src/runs/default-sync-$m-dqn/checkpoints/dqn-fastest.ckpt \
    --policies first-touch sentinel ca-lm autotm-static autotm-sync heat+ilp dqn dqn+search \
    --dram-fractions 0.2 --ilp-time-limit 60 --repeats 2 --rounds 5 --out meas_$m > meas_$m.log 2>&1
  echo "== $m rc=$? $SECONDS s $(date +%T)"
  grep -E "^\| " meas_$m/bench.md | head -12
done
