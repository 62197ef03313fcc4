#!/usr/bin/env bash
# exp.sh NAME SEED [EXTRA...]: PT9's corpus pretrained, then the four unseen modules zero-shot.
set -uo pipefail
n=$1; seed=$2; shift 2
cd ${S36:-/work/s36}
PROFILES=${S36:-/work/s36} SEED=$seed EXTRA="$*" /work/main/docs/results/corpus-memory/ptrun.sh /work/main/build/cli/tensortier ${S36:-/work/s36}/$n > ${S36:-/work/s36}/$n.pt.log 2>&1
mkdir -p ${S36:-/work/s36}/zs_$n
PROFILES=${S36:-/work/s36} /work/main/docs/results/plan-attribution/zs.sh ${S36:-/work/s36}/$n/checkpoints/dqn.ckpt ${S36:-/work/s36}/zs_$n
echo "$n finished $(date +%T)"
