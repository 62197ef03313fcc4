#!/usr/bin/env bash
# Session 43: dqn+search (no ILP) against every sync baseline of bench/paper_tables.sh on the three
# paper models not re-measured since session thirty: default scale (batch 2, 32 px; B=8 S=128 SCALE=_paper: paper-like), sync (MODE=async ASYNC_POLICIES=autotm-async: async), DRAM 0.2,
# cost model, 120 s searches, ILPs 60 s. One network each (`train --episodes 1`, as session 41's).
set -uo pipefail
tt=/work/main/build/cli/tensortier
cd "${WORK:-/work/s43}"
mkdir -p runs
for m in ${MODELS:-vgg19 mobilenet_v2 alexnet}; do
  f=wl_$m${SCALE:-}.ttwl
  SECONDS=0
  [ -f $f ] || $tt profile --model $m --batch ${B:-2} --image-size ${S:-32} --out $f >/dev/null 2>&1
  echo "== profile $m $SECONDS s"
  run=runs/${SCALE:-default}-${MODE:-sync}-$m-dqn
  if [ ! -f $run/checkpoints/dqn-fastest.ckpt ] && [ ! -f $run/checkpoints/dqn-best.ckpt ]; then
    SECONDS=0
    $tt train --workload $f --agent dqn --mode ${MODE:-sync} --episodes 1 --dram-fraction 0.2 --cost-model-only \
      --ilp-seconds 0 --metrics-address off --out $run > train_$m${SCALE:-}${MODE:+_$MODE}.log 2>&1
    echo "== train $m $SECONDS s"
  fi
  ckpt=$run/checkpoints/dqn-fastest.ckpt; [ -f $ckpt ] || ckpt=$run/checkpoints/dqn-best.ckpt
  SECONDS=0
  $tt bench --workload $f --mode ${MODE:-sync} --policies all-slow first-touch sentinel autotm-static autotm-sync deeptm-heuristic \
    ca-l ca-lm ca-lmp heat+ilp ${ASYNC_POLICIES:-} dqn dqn+search heat+search --checkpoint $m=$ckpt \
    --dram-fractions 0.2 --ilp-time-limit 60 --cost-model-only --out out_${m}${SCALE:-}${MODE:+_$MODE}_all > log_${m}${SCALE:-}${MODE:+_$MODE}_all.txt 2>&1
  echo "== bench $m $SECONDS s"
  grep -E "^\| " out_${m}${SCALE:-}${MODE:+_$MODE}_all/bench.md | head -20
  grep "Solver status" out_${m}${SCALE:-}${MODE:+_$MODE}_all/bench.md
  grep -o "polish_edits=[^ ]* polish_saved_ns=[^ ]* polish_seconds=[^ ]*" log_${m}${SCALE:-}${MODE:+_$MODE}_all.txt
done
