#!/usr/bin/env bash
# Regenerates the paper-style comparisons into docs/results/ with one command:
#   - DeepTM Fig. 14: five models, every policy, DRAM = 1/5 of peak, per scale and mode
#     (fig14 = default scale, sync; fig14-async, fig14-paper, fig14-paper-async);
#   - DeepTM Fig. 17: the least DRAM fraction that reaches 90% of all-DRAM (default scale, sync);
#   - ILP solve time against graph size;
#   - with --scale outside (or all): the same table for TorchScript modules from outside the zoo
#     (outside-zoo-sync, outside-zoo-async; issue #15, criterion 1's third part).
# Usage: bench/paper_tables.sh [BUILD_DIR] [--scale default|paper|both|outside|all] [--mode sync|async|both]
#                               [--models "vgg19 ..."] [--outside-models "densenet_like ..."] [--measure]
#                               [--train EPISODES] [--agents "dqn"] [--checkpoint [MODEL=]FILE]...
#                               [--only fig14|fig17|ilp] [--search-seconds S]
#   --scale        default: batch 2, 32 px (minutes here); paper: batch 8, 128 px (hours with
#                  --train); both (the default) runs both; outside: the modules that
#                  bench/make_torchscript_models writes, profiled at batch 2, 32 px; all: the three.
#                  Fig. 17 and the ILP table run with the default scale.
#   --outside-models  which of make_torchscript_models' seven modules (default: densenet_like
#                  unet_like vit_like, the three of the tables since session twenty-five)
#   --mode         sync, async or both (the default)
#   --models       which of the five models (default: all)
#   --measure      also run real iterations of every plan on this host (slow)
#   --train N      train each agent on each model, scale and mode first (cost model, DRAM = 0.2 x
#                  peak, imitation of the baselines then N episodes; runs go to
#                  runs/paper/SCALE-MODE-MODEL-AGENT) and include them as learned policies: the
#                  greedy plan, the plan-time search and the guided ILP (AGENT+ilp), beside the
#                  search's ablations heat, heat+search, untrained-AGENT and untrained-AGENT+search, the
#                  greedy plan polished with no search move (AGENT+polish, heat+polish, untrained-AGENT+polish)
#                  and heat order's search from its plan so polished (heat+polish+search), and
#                  the search from the guided ILP's plan too (AGENT+ilp+search) with its ablation
#                  heat+ilp+search, and from the relaxation's (AGENT+relax+search, heat+relax+search)
#   --agents       which agents --train trains and which AGENT+ilp rows are added (default "dqn")
#   --checkpoint   include the learned agent of a learner checkpoint (repeatable, MODEL= for one
#                  model; it must have been trained in the mode of the table)
#   --search-seconds  every search row's time limit (the product's default, 5 s, when not given);
#                  the Fig. 14 tables then go to DIR-search${S}s (fig14-paper-async-search120s, ...):
#                  the network-free searches catch up with the network's given minutes (learning.md,
#                  sessions fifty and fifty-one)
#   --only         one kind of table: fig14 (the Fig. 14 and outside-zoo tables), fig17 or ilp.
#                  With fig17, the learned rows come from --checkpoint, else from the networks an
#                  earlier --train left in runs/paper/default-sync-MODEL-AGENT (none: no learned rows)
# The relaxation (a baseline row since session forty-five) adds up to the ILP limit per model
# (2.5-57 s at the default scale in sync mode); its two +relax+search rows add up to the ILP
# limit and two searches (2026-12-07: 4-7 min per model for the default-scale async models).
# How long on this project's 2-core machine (2026-11-27, cost model, ILPs limited to 60 s):
# a table's bench takes 1-3 min per model in sync mode and 2-4 min in async mode (the guided
# ILPs take their whole limit there); --train adds 0.5-2.5 min per model, scale and mode for
# imitation with --train 1; at the default scale fig14 took 22 min, fig14-async 33 min and Fig. 17
# with the learned rows more than 16 min. --measure adds a few minutes per model there. At the
# paper scale (2026-11-28, beside other work) fig14-paper took 1,225 s (profiling the five
# models and training included) and fig14-paper-async 1,206 s (training included). With the
# ablation rows (2026-11-28, two tables at a time, load 2): fig14 762 s, fig14-async 1,146 s,
# fig14-paper 823 s, fig14-paper-async 1,274 s (benches only); --train 1 takes up to 2 min per
# model since the longer polish (ResNet-152: 112 s). The two +ilp+search rows add up to 6 min per
# model (2026-11-29, two at a time: sync 610 s and 771 s, async 1,836 s and 1,549 s for the
# tables' baselines with dqn+ilp and both rows).
# With every row of today (2026-12-07, --train 1, training included, profiles already there, two at a
# time): fig14-paper 2,756 s, fig14-paper-async 4,245 s, fig14 3,063 s; --scale outside alone: 247 s
# sync, 1,028 s async. With the networks trained before (--only, --checkpoint; 2026-12-07, two at a
# time): fig14-paper-async 3,562 s, outside-zoo-async 789 s, Fig. 17 (--only fig17) about 32 min.
# With the async best responses in the polish (2026-12-07, --only fig14 --checkpoint, two at a time):
# fig14-paper-async 3,766 s, fig14-async 4,092 s, outside-zoo-async 832 s.
# With --search-seconds 5 (2026-12-07, --only fig14 --checkpoint, two at a time): fig14-paper-async-search5s
# 1,282 s (the ILPs' and the relaxation's 60 s are most of it).
# At the default 5 s search (2026-12-07, --only fig14 --checkpoint, two at a time): fig14 529 s,
# fig14-async 1,597 s, fig14-paper 569 s, fig14-paper-async 1,259 s, outside-zoo-sync 175 s,
# outside-zoo-async 804 s.
# With the +polish and heat+polish+search rows too (2026-12-07, the same way): fig14 657 s, fig14-async
# 1,710 s, fig14-paper 629 s, fig14-paper-async 1,368 s, outside-zoo-sync 225 s, outside-zoo-async 790 s.
set -euo pipefail
build=build
measure=--cost-model-only
checkpoint=()
train_episodes=0
agents="dqn"
only=""
search_seconds=()
scales="default paper"
modes="sync async"
models=(vgg19 resnet152 inception_v3 mobilenet_v2 alexnet)
outside_models=(densenet_like unet_like vit_like)
while [ $# -gt 0 ]; do
  case "$1" in
    --measure) measure=""; shift ;;
    --train) train_episodes=$2; shift 2 ;;
    --agents) agents=$2; shift 2 ;;
    --train-models|--models) read -r -a models <<<"$2"; shift 2 ;;
    --outside-models) read -r -a outside_models <<<"$2"; shift 2 ;;
    --scale) case "$2" in default|paper|outside) scales=$2 ;; both) scales="default paper" ;;
               all) scales="default paper outside" ;;
               *) echo "--scale: default, paper, both, outside or all" >&2; exit 2 ;; esac; shift 2 ;;
    --mode) case "$2" in sync|async) modes=$2 ;; both) modes="sync async" ;;
              *) echo "--mode: sync, async or both" >&2; exit 2 ;; esac; shift 2 ;;
    --checkpoint) checkpoint+=(--checkpoint "$2"); shift 2 ;;
    --search-seconds) search_seconds=(--search-seconds "$2"); shift 2 ;;
    --only) case "$2" in fig14|fig17|ilp) only=$2 ;; *) echo "--only: fig14, fig17 or ilp" >&2; exit 2 ;; esac
            shift 2 ;;
    -h|--help) sed -n "2,/^set -euo/p" "$0" | sed "\$d"; exit 0 ;;
    -*) echo "unknown option $1 (see --help)" >&2; exit 2 ;;
    *) build=$1; shift ;;
  esac
done
tt="$build/cli/tensortier"
out=docs/results
mkdir -p "$out/workloads"
default_sync_ckpts=()

profile() {  # MODEL SCALE -> the workload file, profiled once
  local m=$1 scale=$2 f
  if [ "$scale" = outside ]; then
    f="$out/workloads/ts/$m.ttwl"
    [ -f "$out/workloads/ts/$m.pt" ] || "$build/bench/make_torchscript_models" --out "$out/workloads/ts" >&2
    [ -f "$f" ] || "$tt" profile --torchscript "$out/workloads/ts/$m.pt" --batch 2 --image-size 32 --out "$f" >&2
  elif [ "$scale" = paper ]; then
    f="$out/workloads/${m}_b8_128.ttwl"
    [ -f "$f" ] || "$tt" profile --model "$m" --batch 8 --image-size 128 --out "$f" >&2
  else
    f="$out/workloads/$m.ttwl"
    [ -f "$f" ] || "$tt" profile --model "$m" --batch 2 --image-size 32 --out "$f" >&2
  fi
  echo "$f"
}

# A trained run's network: the fastest evaluated policy (what export takes), else the best greedy
# evaluation, else the last.
run_checkpoint() {  # RUN_DIR AGENT
  local c
  for c in "$1/checkpoints/$2-fastest.ckpt" "$1/checkpoints/$2-best.ckpt" "$1/checkpoints/$2.ckpt"; do
    [ -f "$c" ] && { echo "$c"; return; }
  done
}

for scale in $scales; do
  [ -n "$only" ] && [ "$only" != fig14 ] && break
  for mode in $modes; do
    SECONDS=0
    specs=()
    ckpts=("${checkpoint[@]}")
    scale_models=("${models[@]}")
    [ "$scale" = outside ] && scale_models=("${outside_models[@]}")
    for m in "${scale_models[@]}"; do
      f=$(profile "$m" "$scale")
      specs+=(--workload "$f")
      if [ "$train_episodes" -gt 0 ]; then
        for a in $agents; do
          run=runs/paper/$scale-$mode-$m-$a
          echo "== training $a on $m ($scale scale, $mode, $train_episodes episodes, cost model, DRAM 0.2)"
          "$tt" train --workload "$f" --agent "$a" --mode "$mode" --episodes "$train_episodes" \
            --dram-fraction 0.2 --cost-model-only --ilp-seconds 0 --metrics-address off --out "$run" | tail -n 3
          ckpts+=(--checkpoint "$m=$(run_checkpoint "$run" "$a")")
        done
      fi
    done
    policies=(all-slow first-touch sentinel autotm-static autotm-sync deeptm-heuristic ca-l ca-lm ca-lmp heat+ilp relaxation)
    [ "$mode" = async ] && policies+=(autotm-async)
    if [ ${#ckpts[@]} -gt 0 ]; then
      # The learned rows and, in the same run, the search pipeline's ablations (issue #15,
      # criterion 3): heat order in the network's place, and the network before training.
      # heat: the greedy pipeline with the constant DRAM action (heat order) in the network's place.
      policies+=(learned heat heat+search)
      for a in $agents; do policies+=("$a+ilp" "untrained-$a" "untrained-$a+search"); done
      # The greedy plan with no search move, only the polish, and its two ablations (session 51).
      for a in $agents; do policies+=("$a+polish" "untrained-$a+polish"); done
      policies+=(heat+polish heat+polish+search)
      # The search from the guided ILP's plan too, and that pipeline with no network: the
      # network-free pipeline closest to the learned one (learning.md, session thirty).
      for a in $agents; do policies+=("$a+ilp+search" "$a+relax+search"); done
      # And from the relaxation's plan (session forty-six), with heat order in its place.
      policies+=(heat+ilp+search heat+relax+search)
    fi
    dir=fig14
    [ "$scale" = paper ] && dir+=-paper
    [ "$mode" = async ] && dir+=-async
    [ "$scale" = outside ] && dir=outside-zoo-$mode
    [ ${#search_seconds[@]} -gt 0 ] && dir+=-search${search_seconds[1]}s
    echo "== $dir ($scale scale, $mode): every policy at DRAM = 0.2 x peak"
    "$tt" bench "${specs[@]}" --mode "$mode" --policies "${policies[@]}" "${ckpts[@]}" --dram-fractions 0.2 \
      --ilp-time-limit 60 "${search_seconds[@]}" $measure --out "$out/$dir"
    echo "== $dir took $SECONDS s"
    [ "$scale" = default ] && [ "$mode" = sync ] && default_sync_ckpts=("${ckpts[@]}")
  done
done

if [ "$only" = fig17 ] && [ ${#default_sync_ckpts[@]} -eq 0 ]; then
  default_sync_ckpts=("${checkpoint[@]}")
  if [ ${#default_sync_ckpts[@]} -eq 0 ]; then
    for m in "${models[@]}"; do
      for a in $agents; do
        c=$(run_checkpoint "runs/paper/default-sync-$m-$a" "$a")
        [ -n "$c" ] && default_sync_ckpts+=(--checkpoint "$m=$c")
      done
    done
  fi
fi
if [[ ( -z "$only" || "$only" = fig17 ) && " $scales " == *" default "* && " $modes " == *" sync "* ]]; then
  specs=()
  for m in "${models[@]}"; do specs+=(--workload "$(profile "$m" default)"); done
  fig17=(first-touch sentinel autotm-static ca-lm)
  if [ ${#default_sync_ckpts[@]} -gt 0 ]; then
    fig17+=(learned)
    for a in $agents; do fig17+=("$a+ilp"); done
  fi
  echo "== Fig. 17: relative performance against DRAM fraction (default scale, sync)"
  "$tt" bench "${specs[@]}" --policies "${fig17[@]}" "${default_sync_ckpts[@]}" \
    --dram-fractions 1.0 0.8 0.6 0.5 0.4 0.3 0.2 0.11 --ilp-time-limit 20 --cost-model-only --out "$out/fig17"
fi

if [[ ( -z "$only" || "$only" = ilp ) && " $scales " == *" default "* ]]; then
  echo "== ILP solve time against graph size"
  ilp_specs=()
  for n in 10 20 40 80 160; do ilp_specs+=(--workload "synthetic:resnet:$n"); done
  "$tt" bench "${ilp_specs[@]}" --policies autotm-static autotm-sync --dram-fractions 0.2 --ilp-time-limit 120 \
    --cost-model-only --out "$out/ilp"
fi
echo "tables: $out/fig14*/bench.md $out/outside-zoo-*/bench.md $out/fig17/bench.md $out/ilp/bench.csv"
