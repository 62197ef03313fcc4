#!/usr/bin/env bash
# cells.sh: the default-scale sync cells where dqn+search lost to AutoTM-sync (session thirty):
# profile (batch 2, 32 px), train --episodes 1 as paper_tables.sh --train 1 does, then bench
# $POLICIES (cost model, DRAM 0.2, search 120 s) with $EXTRA flags into $W/out_MODEL$TAG.
# Env: MODELS (resnet152 inception_v3), POLICIES, EXTRA, TAG, W (work dir), TT (the CLI).
set -euo pipefail
tt=$(realpath "${TT:-build/cli/tensortier}")  # run from the repository root, or give TT
mkdir -p "${W:-/work/s41}" && cd "${W:-/work/s41}"  # profiles, runs, logs and results
for m in ${MODELS:-resnet152 inception_v3}; do
  f=wl_$m.ttwl
  [ -f $f ] || $tt profile --model $m --batch 2 --image-size 32 --out $f >/dev/null 2>&1
  run=runs/default-sync-$m-dqn
  if [ ! -f $run/checkpoints/dqn-fastest.ckpt ] && [ ! -f $run/checkpoints/dqn-best.ckpt ]; then
    SECONDS=0
    $tt train --workload $f --agent dqn --mode sync --episodes 1 --dram-fraction 0.2 --cost-model-only \
      --ilp-seconds 0 --metrics-address off --out $run | tail -n 3
    echo "== train $m $SECONDS s"
  fi
  ckpt=$run/checkpoints/dqn-fastest.ckpt; [ -f $ckpt ] || ckpt=$run/checkpoints/dqn-best.ckpt
  SECONDS=0
  $tt bench --workload $f --mode sync --policies ${POLICIES:-autotm-sync dqn dqn+search heat+search} --checkpoint $m=$ckpt \
    --dram-fractions 0.2 --ilp-time-limit 60 --cost-model-only ${EXTRA:-} --out out_$m${TAG:-} > log_$m${TAG:-}.txt 2>&1
  echo "== bench $m $SECONDS s"
  grep -E "^\| (autotm-sync|dqn|dqn\+search|heat\+search) " out_$m${TAG:-}/bench.md
  grep -i "plan_search\|window" log_$m${TAG:-}.txt | head -8
done
