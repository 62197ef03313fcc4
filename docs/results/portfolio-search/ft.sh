#!/usr/bin/env bash
# ft.sh NAME STARTS [EXTRA...]: fine-tune $D/s4's portfolio (pretrain --seeds 4) on the four unseen
# modules with no baseline plan (train --init, 10 self-imitation rounds, 50 episodes, cost model,
# sync, DRAM 0.2 x peak) with --init-search-starts STARTS; profiles under $S38, into $O/ft_NAME
# ($O: $D unless given; $MODELS: the modules, all four unless given).
set -uo pipefail
p=${S38:-/work/s38}; d=${D:-/work/s39}; n=$1; k=$2; shift 2
o=${O:-$d}; mkdir -p $o/ft_$n
for m in ${MODELS:-collstm_like rowgru_like mixer_like convnext_like}; do
  /usr/bin/time -f "wall %e s rss %M KB" /work/main/build/cli/tensortier train --workload $p/ts/$m.ttwl --init $d/s4 \
    --demonstrations none --self-imitation-rounds 10 --init-search-starts $k --episodes 50 --cost-model-only \
    --out $o/ft_$n/$m --force "$@" > $o/ft_$n/$m.log 2>&1
  echo "$n $m $(awk -F'|' '/sentinel|autotm-sync|greedy policy|final plan/ {gsub(/ +$/,"",$2); gsub(/ +$/,"",$3); printf "[%s /%s:%s]", $2, $3, $5}' $o/ft_$n/$m/comparison.md) $(tail -1 $o/ft_$n/$m.log)"
done
