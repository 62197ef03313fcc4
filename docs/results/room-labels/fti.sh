#!/usr/bin/env bash
# ft.sh PT NAME [EXTRA...]: fine-tune PT's network on the four unseen modules with no baseline plan
# (session thirty-three's si0_M: self-imitation, 50 episodes, no ILP), sync, DRAM 0.2.
set -uo pipefail
pt=$1; n=$2; shift 2
cd ${S36:-/work/s36}
mkdir -p fti_$n
for m in collstm_like rowgru_like mixer_like convnext_like; do
  /usr/bin/time -v /work/main/build/cli/tensortier train --workload ts/$m.ttwl --init ${S36:-/work/s36}/$pt --demonstrations none \
    --self-imitation-rounds 10 --episodes 50 --cost-model-only --out fti_$n/$m --force "$@" > fti_$n/$m.log 2>&1
  echo "$n $m done $(date +%T)"
done
