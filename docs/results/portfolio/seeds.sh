#!/usr/bin/env bash
# seeds.sh SEED...: PT9's corpus pretrained once per seed (../corpus-memory/ptrun.sh), then each
# network on the four unseen modules zero-shot (../plan-attribution/zs.sh). Profiles and outputs
# under $S38 (default /work/s38; ../room-labels/profiles.sh with S36=$S38 made the profiles).
set -uo pipefail
d=${S38:-/work/s38}
cd "$d"
for seed in "$@"; do
  PROFILES=$d SEED=$seed /work/main/docs/results/corpus-memory/ptrun.sh /work/main/build/cli/tensortier "$d/p$seed" \
    > "$d/p$seed.pt.log" 2>&1
  mkdir -p "$d/zs_p$seed"
  PROFILES=$d /work/main/docs/results/plan-attribution/zs.sh "$d/p$seed/checkpoints/dqn.ckpt" "$d/zs_p$seed"
  echo "p$seed finished $(date +%T)"
done
