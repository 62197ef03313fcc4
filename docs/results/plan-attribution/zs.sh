#!/usr/bin/env bash
# zeroshot.sh CKPT OUTDIR: the four unseen modules, zero-shot (session thirty-four's command).
set -uo pipefail
cd "${PROFILES:-/work/s35}"
for m in collstm_like rowgru_like mixer_like convnext_like; do
  ${TT:-/work/main/build/cli/tensortier} bench --workload ts/$m.ttwl --policies sentinel autotm-sync ca-lm dqn dqn+search \
    --checkpoint "$1" --dram-fractions 0.2 --cost-model-only --search-seconds 30 --ilp-time-limit 30 --out "$2/$m" > "$2/$m.log" 2>&1
  echo "$m done $(date +%T)"
done
