#!/usr/bin/env bash
# portfolio.sh NAME SEED: PT9's corpus pretrained (../corpus-memory/ptrun.sh; pretrain keeps its 8 best
# rounds in checkpoints/portfolio/), then the four unseen modules and a synthetic transformer (no
# network saw one) zero-shot: the kept round's greedy plan and search, the portfolio's choice and
# the search from it, beside Sentinel, AutoTM-sync and CA-LM (cost model, sync, DRAM 0.2 x peak).
set -uo pipefail
d=${S38:-/work/s38}
n=$1; seed=$2
TT=/work/main/build/cli/tensortier
cd "$d"
if [ ! -f "$d/$n/checkpoints/dqn.ckpt" ]; then
  PROFILES=$d SEED=$seed /work/main/docs/results/corpus-memory/ptrun.sh $TT "$d/$n" > "$d/$n.pt.log" 2>&1
fi
mkdir -p "$d/zs_$n"
for m in ts/collstm_like.ttwl ts/rowgru_like.ttwl ts/mixer_like.ttwl ts/convnext_like.ttwl synthetic:transformer:8; do
  b=$(basename "${m%.ttwl}" | tr ':' '_')
  $TT bench --workload "$m" --policies sentinel autotm-sync ca-lm dqn dqn+search dqn+portfolio dqn+portfolio+search \
    --checkpoint "$d/$n/checkpoints/dqn.ckpt" --portfolio "$d/$n/checkpoints/portfolio" --dram-fractions 0.2 \
    --cost-model-only --search-seconds 30 --ilp-time-limit 30 --out "$d/zs_$n/$b" > "$d/zs_$n/$b.log" 2>&1
  echo "$n $b done $(date +%T)"
done
