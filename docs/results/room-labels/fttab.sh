#!/usr/bin/env bash
# fttab.sh NAME...: each fine-tuned run's final plan (source) and the greedy policy, vs all-DRAM, per module
for n in "$@"; do
  for m in collstm_like rowgru_like mixer_like convnext_like; do
    f=${S36:-/work/s36}/${DIR:-ft}_$n/$m/comparison.md
    fin=$(grep "(final plan)" $f | head -1 | awk -F'|' '{gsub(/ /,"",$5); print $5" ("$2")"}')
    gr=$(grep "| dqn-self-imitation | greedy policy" $f | awk -F'|' '{gsub(/ /,"",$5); print $5}')
    se=$(grep -F "| sentinel |" $f | awk -F'|' '{gsub(/ /,"",$5); print $5}')
    au=$(grep -F "| autotm-sync" $f | awk -F'|' '{gsub(/ /,"",$5); print $5}')
    t=$(grep "Elapsed" ${S36:-/work/s36}/${DIR:-ft}_$n/$m.log | awk '{print $NF}'); r=$(grep "Maximum res" ${S36:-/work/s36}/${DIR:-ft}_$n/$m.log | awk '{print int($NF/1024)" MB"}')
    echo "$n $m sentinel $se autotm $au greedy $gr final $fin wall $t rss $r"
  done
done
