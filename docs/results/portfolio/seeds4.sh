#!/usr/bin/env bash
# seeds4.sh: PT9's corpus with `pretrain --seeds 4` (seeds 1-4 on the same experts, one portfolio
# of their 8 best rounds each), then the five models of portfolio.sh zero-shot, into $S38/zs_s4.
set -uo pipefail
d=${S38:-/work/s38}
TT=/work/main/build/cli/tensortier
cd "$d"
if [ ! -f "$d/s4/checkpoints/dqn.ckpt" ]; then
  PROFILES=$d SEED=1 EXTRA='--seeds 4' /work/main/docs/results/corpus-memory/ptrun.sh $TT "$d/s4" > "$d/s4.pt.log" 2>&1
fi
mkdir -p "$d/zs_s4"
for m in ts/collstm_like.ttwl ts/rowgru_like.ttwl ts/mixer_like.ttwl ts/convnext_like.ttwl synthetic:transformer:8; do
  b=$(basename "${m%.ttwl}" | tr ':' '_')
  $TT bench --workload "$m" --policies sentinel autotm-sync ca-lm dqn dqn+search dqn+portfolio dqn+portfolio+search \
    --checkpoint "$d/s4/checkpoints/dqn.ckpt" --portfolio "$d/s4/checkpoints/portfolio" --dram-fractions 0.2 \
    --cost-model-only --search-seconds 30 --ilp-time-limit 30 --out "$d/zs_s4/$b" > "$d/zs_s4/$b.log" 2>&1
  echo "s4 $b done $(date +%T)"
done
