#!/usr/bin/env bash
# wm.sh NAME SEED [EXTRA_WORKLOADS]: PT9's corpus (plus EXTRA_WORKLOADS) pretrained with
# --weight-mean-from-round 10, then the four unseen modules zero-shot from both networks it
# writes: the best round's (zs_NAME) and the weights' mean (zs_NAME-mean).
set -uo pipefail
n=$1; seed=$2; extra=${3:-}
d=${S37:-/work/s36}
cd "$d"
PROFILES=$d SEED=$seed EXTRA='--weight-mean-from-round 10' EXTRA_WORKLOADS="$extra" \
  /work/main/docs/results/corpus-memory/ptrun.sh /work/main/build/cli/tensortier "$d/$n" > "$d/$n.pt.log" 2>&1
mkdir -p "$d/zs_$n" "$d/zs_$n-mean"
PROFILES=$d /work/main/docs/results/plan-attribution/zs.sh "$d/$n/checkpoints/dqn.ckpt" "$d/zs_$n"
PROFILES=$d /work/main/docs/results/plan-attribution/zs.sh "$d/$n/checkpoints/dqn-weight-mean.ckpt" "$d/zs_$n-mean"
echo "$n finished $(date +%T)"
