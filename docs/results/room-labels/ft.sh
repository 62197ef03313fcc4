#!/usr/bin/env bash
# ft.sh PT NAME [EXTRA...]: fine-tune PT's network on the four unseen modules with no baseline plan
# (session thirty-three's si_M: self-imitation, 50 episodes), sync, DRAM 0.2; into ${S36}/${DIR:-ft}_NAME.
# This session: ft.sh base1 plain --ilp-seconds 0; ft.sh base1 room --ilp-seconds 0 --room-labels true;
# DIR=fti ft.sh base1 ilp (the guided ILP, the default).
set -uo pipefail
pt=$1; n=$2; shift 2
cd ${S36:-/work/s36}
mkdir -p ${DIR:-ft}_$n
for m in collstm_like rowgru_like mixer_like convnext_like; do
  /usr/bin/time -v /work/main/build/cli/tensortier train --workload ts/$m.ttwl --init ${S36:-/work/s36}/$pt --demonstrations none \
    --self-imitation-rounds 10 --episodes 50 --cost-model-only --out ${DIR:-ft}_$n/$m --force "$@" > ${DIR:-ft}_$n/$m.log 2>&1
  echo "$n $m done $(date +%T)"
done
