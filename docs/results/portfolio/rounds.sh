#!/usr/bin/env bash
# rounds.sh NAME SEED: PT9's corpus pretrained keeping every round's network (--portfolio-size 1000:
# checkpoints/portfolio/rank-NN-round-RRR.ckpt), then each round's greedy plan on the four unseen
# modules (bench --policies dqn, cost model, DRAM 0.2). Writes $S38/NAME.rounds.tsv: round,
# validation % (its round line), and the four modules' greedy %. (Session thirty-eight ran this with
# a scratch hook that saved every round before --portfolio-size existed; the networks are the same.)
set -uo pipefail
d=${S38:-/work/s38}
n=$1; seed=$2
cd "$d"
PROFILES=$d SEED=$seed EXTRA='--portfolio-size 1000' \
  /work/main/docs/results/corpus-memory/ptrun.sh /work/main/build/cli/tensortier "$d/$n" > "$d/$n.pt.log" 2>&1
out="$d/$n.rounds.tsv"
echo -e "round\tvalidation\tcollstm_like\trowgru_like\tmixer_like\tconvnext_like" > "$out"
grep -E '(round|chunk) [0-9]+: mean greedy plan' "$d/$n.pt.log" | sed -E 's/.*(round|chunk) ([0-9]+): .*validation ([0-9.]+)%.*/\2 \3/' |
while read -r r v; do
  row="$r\t$v"
  ckpt=$(ls "$d/$n/checkpoints/portfolio/"*"-round-$(printf %03d "$r").ckpt")
  for m in collstm_like rowgru_like mixer_like convnext_like; do
    g=$(/work/main/build/cli/tensortier bench --workload ts/$m.ttwl --policies dqn --checkpoint "$ckpt" \
        --dram-fractions 0.2 --cost-model-only --out "$d/$n-rounds/bench-$r-$m" 2>/dev/null | grep -F '| dqn |' | head -1 |
        awk -F'|' '{print $3}' | tr -d ' %')
    row="$row\t$g"
  done
  echo -e "$row" >> "$out"
done
echo "$n finished $(date +%T)"
