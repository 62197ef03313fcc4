#!/usr/bin/env bash
# exp.sh NAME SEED: PT9's corpus plus two synthetic transformers (8 and 16 blocks) pretrained,
# then the four unseen modules zero-shot (../plan-attribution/zs.sh). Profiles and outputs under
# $S37 (default /work/s36: ../room-labels/profiles.sh made them).
set -uo pipefail
n=$1; seed=$2
d=${S37:-/work/s36}
cd "$d"
PROFILES=$d SEED=$seed EXTRA_WORKLOADS='synthetic:transformer:8 synthetic:transformer:16' \
  /work/main/docs/results/corpus-memory/ptrun.sh /work/main/build/cli/tensortier "$d/$n" > "$d/$n.pt.log" 2>&1
mkdir -p "$d/zs_$n"
PROFILES=$d /work/main/docs/results/plan-attribution/zs.sh "$d/$n/checkpoints/dqn.ckpt" "$d/zs_$n"
echo "$n finished $(date +%T)"
