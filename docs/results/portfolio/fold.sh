#!/usr/bin/env bash
# fold.sh NAME SEED...: the seeds' networks (seeds.sh) folded into their Q-mean, then zero-shot.
set -uo pipefail
d=${S38:-/work/s38}
n=$1; shift
ckpts=(); for s in "$@"; do ckpts+=("$d/p$s/checkpoints/dqn.ckpt"); done
/work/main/build/bench/ensemble_checkpoints --checkpoints "${ckpts[@]}" --out "$d/$n.ckpt"
mkdir -p "$d/zs_$n"
PROFILES=$d /work/main/docs/results/plan-attribution/zs.sh "$d/$n.ckpt" "$d/zs_$n"
echo "$n finished $(date +%T)"
