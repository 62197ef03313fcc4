#!/usr/bin/env bash
# zoo_win.sh: dqn+portfolio+search from $D/s4's portfolio on zoo models (session thirty-eight's
# profiles, default scale), with and without window replays (--search-window-replays 0), 30 s.
set -uo pipefail
p=${S38:-/work/s38}; d=${D:-/work/s39}; o=${O:-/work/s40}
for m in inception_v3 mobilenet_v2 resnet50 vgg19; do
  for wr in 20000 0; do
    /usr/bin/time -f "%e s" /work/main/build/cli/tensortier bench --workload $p/zoo/$m.ttwl --policies autotm-sync dqn+portfolio+search \
      --portfolio $d/s4/checkpoints/portfolio --dram-fractions 0.2 --cost-model-only --search-seconds 30 --ilp-time-limit 30 \
      --search-window-replays $wr --out $o/zoo_w$wr/$m > $o/zoo_w$wr/$m.log 2>&1 || true
    echo "$m windows=$wr $(grep -E '^\| (autotm-sync|dqn\+portfolio\+search) \|' $o/zoo_w$wr/$m.log | awk -F'|' '{printf "%s:%s ", $2, $3}') $(grep -o 'window_replays=[0-9]* window_improvements=[0-9]*' $o/zoo_w$wr/$m.log | tail -1) $(tail -1 $o/zoo_w$wr/$m.log)"
  done
done
