#!/usr/bin/env bash
# Regenerates the paper-style comparisons into docs/results/ with one command:
#   - DeepTM Fig. 14: five models, every policy, DRAM = 1/5 of peak;
#   - DeepTM Fig. 17: the least DRAM fraction that reaches 90% of all-DRAM;
#   - ILP solve time against graph size.
# Usage: bench/paper_tables.sh [BUILD_DIR] [--measure] [--train EPISODES] [--agents "dqn sac"]
#                               [--checkpoint [MODEL=]FILE]...
#   --measure      also run real iterations of every plan on this host (slow)
#   --train N      train each agent on each model first (cost model, DRAM = 0.2 x peak, N episodes;
#                  runs go to runs/paper/MODEL-AGENT) and include them as learned policies
#   --agents       which agents --train trains (default "dqn sac")
#   --train-models which models --train trains on (default: all five; ResNet-152 and Inception
#                  episodes are long: hundreds of thousands of decisions)
#   --checkpoint   include the learned agent of a learner checkpoint (repeatable, MODEL= for one model)
set -euo pipefail
build=build
measure=--cost-model-only
checkpoint=()
train_episodes=0
agents="dqn sac"
train_models=""
while [ $# -gt 0 ]; do
  case "$1" in
    --measure) measure=""; shift ;;
    --train) train_episodes=$2; shift 2 ;;
    --agents) agents=$2; shift 2 ;;
    --train-models) train_models=$2; shift 2 ;;
    --checkpoint) checkpoint+=(--checkpoint "$2"); shift 2 ;;
    -h|--help) sed -n 2,15p "$0"; exit 0 ;;
    *) build=$1; shift ;;
  esac
done
tt="$build/cli/tensortier"
out=docs/results
mkdir -p "$out/workloads"

# Small sizes so that a 2-core machine profiles and measures them in minutes.
models=(vgg19 resnet152 inception_v3 mobilenet_v2 alexnet)
specs=()
for m in "${models[@]}"; do
  f="$out/workloads/$m.ttwl"
  [ -f "$f" ] || "$tt" profile --model "$m" --batch 2 --image-size 32 --out "$f"
  specs+=(--workload "$f")
done
if [ "$train_episodes" -gt 0 ]; then
  for m in ${train_models:-${models[*]}}; do
    for a in $agents; do
      run=runs/paper/$m-$a
      echo "== training $a on $m ($train_episodes episodes, cost model, DRAM 0.2)"
      "$tt" train --workload "$out/workloads/$m.ttwl" --agent "$a" --episodes "$train_episodes" \
        --epsilon-decay-episodes $((train_episodes / 2)) --dram-fraction 0.2 --cost-model-only \
        --metrics-address off --out "$run" | tail -n 3
      # The best greedy evaluation's weights when the learner kept them.
      ckpt=$run/checkpoints/$a-best.ckpt
      [ -f "$ckpt" ] || ckpt=$run/checkpoints/$a.ckpt
      checkpoint+=(--checkpoint "$m=$ckpt")
    done
  done
fi
policies=(all-slow first-touch sentinel autotm-static autotm-sync deeptm-heuristic ca-l ca-lm ca-lmp)
[ ${#checkpoint[@]} -gt 0 ] && policies+=(learned)

echo "== Fig. 14: every policy at DRAM = 0.2 x peak"
"$tt" bench "${specs[@]}" --policies "${policies[@]}" "${checkpoint[@]}" --dram-fractions 0.2 \
  --ilp-time-limit 30 $measure --out "$out/fig14"

echo "== Fig. 17: relative performance against DRAM fraction"
fig17=(first-touch sentinel autotm-static ca-lm)
[ ${#checkpoint[@]} -gt 0 ] && fig17+=(learned)
"$tt" bench "${specs[@]}" --policies "${fig17[@]}" "${checkpoint[@]}" --dram-fractions 1.0 0.8 0.6 0.5 0.4 0.3 0.2 0.11 \
  --ilp-time-limit 20 --cost-model-only --out "$out/fig17"

echo "== ILP solve time against graph size"
ilp_specs=()
for n in 10 20 40 80 160; do ilp_specs+=(--workload "synthetic:resnet:$n"); done
"$tt" bench "${ilp_specs[@]}" --policies autotm-static autotm-sync --dram-fractions 0.2 --ilp-time-limit 120 \
  --cost-model-only --out "$out/ilp"
echo "tables: $out/fig14/bench.md $out/fig17/bench.md $out/ilp/bench.csv"
