#!/usr/bin/env bash
# seeds4b.sh: ../portfolio/seeds4.sh again with session thirty-nine's binary (LibTorch's threads pinned;
# dqn+portfolio+search from 8 members), profiles from /work/s38, into /work/s39/s4 and /work/s39/zs_s4
set -uo pipefail
p=/work/s38; d=/work/s39
TT=/work/main/build/cli/tensortier
if [ ! -f "$d/s4/checkpoints/dqn.ckpt" ]; then
  PROFILES=$p SEED=1 EXTRA='--seeds 4' /work/main/docs/results/corpus-memory/ptrun.sh $TT "$d/s4" > "$d/s4.pt.log" 2>&1
fi
mkdir -p "$d/zs_s4"
for m in ts/collstm_like.ttwl ts/rowgru_like.ttwl ts/mixer_like.ttwl ts/convnext_like.ttwl synthetic:transformer:8; do
  b=$(basename "${m%.ttwl}" | tr ':' '_')
  mm=$m; [[ $m == ts/* ]] && mm=$p/$m
  $TT bench --workload "$mm" --policies sentinel autotm-sync ca-lm dqn dqn+search dqn+portfolio dqn+portfolio+search \
    --checkpoint "$d/s4/checkpoints/dqn.ckpt" --portfolio "$d/s4/checkpoints/portfolio" --dram-fractions 0.2 \
    --cost-model-only --search-seconds 30 --ilp-time-limit 30 --out "$d/zs_s4/$b" > "$d/zs_s4/$b.log" 2>&1
  echo "s4 $b done $(date +%T)"
done
