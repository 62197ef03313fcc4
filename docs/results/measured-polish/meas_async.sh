#!/usr/bin/env bash
# Criterion 2 at the paper-like scale (batch 8, 128 px), async, with the polish (session forty-four):
# the leading baselines, heat+ilp, dqn and dqn+search on real iterations (emulated slow tier),
# --repeats 2 --rounds 5, DRAM 0.2 x peak, ILPs 60 s, search 120 s; session 43's profiles and networks.
set -uo pipefail
tt=/work/main/build/cli/tensortier
src=${SRC:-/work/s43}
cd ${OUT:-.}
for m in "$@"; do
  SECONDS=0
  $tt bench --workload $src/wl_${m}_paper.ttwl --mode async --checkpoint $m=$src/runs/_paper-async-$m-dqn/checkpoints/dqn-fastest.ckpt \
    --policies first-touch sentinel autotm-sync autotm-async heat+ilp dqn dqn+search \
    --dram-fractions 0.2 --ilp-time-limit 60 --repeats 2 --rounds 5 --out meas_paper_async_$m > meas_paper_async_$m.log 2>&1
  echo "== $m rc=$? $SECONDS s $(date +%T)"
  grep -E "^\| " meas_paper_async_$m/bench.md | head -12
  grep "Solver status" meas_paper_async_$m/bench.md
done
