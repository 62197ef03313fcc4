#!/usr/bin/env bash
# heat+search with the session-43 polish (criterion 3's ablation), nothing else running.
cd "${WORK:-/work/s43}"
while pgrep -f final.sh > /dev/null; do sleep 5; done
for m in resnet152 inception_v3; do
  POLICIES=heat+search TAG=_H ./cell.sh $m /work/s41/wl_$m.ttwl /work/s41/runs/default-sync-$m-dqn sync
  grep -o "polish_edits=[^ ]* polish_saved_ns=[^ ]*" log_${m}_H.txt
  grep -E "heat\+search" out_${m}_H/bench.csv | cut -d, -f1,2,5,6,7
done
