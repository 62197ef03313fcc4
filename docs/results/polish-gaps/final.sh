#!/usr/bin/env bash
# Session 43's measurements of the polish's gap edits and room chains, nothing else running.
cd "${WORK:-/work/s43}"
for m in resnet152 inception_v3; do
  TAG=_G ./cell.sh $m /work/s41/wl_$m.ttwl /work/s41/runs/default-sync-$m-dqn sync
  grep -o "polish_edits=[^ ]* polish_saved_ns=[^ ]*" log_${m}_G.txt
  grep -E "dqn\+search" out_${m}_G/bench.csv | cut -d, -f1,2,5,6,7
done
POLICIES="dqn+search" TAG=_paper_async_G ./cell.sh resnet152 /work/s41/wl_resnet152_b8_128.ttwl /work/s41/runs/paper-async-resnet152-dqn async
grep -o "polish_edits=[^ ]* polish_saved_ns=[^ ]*\|copy_schedule_saved_ns=[^ ]*" log_resnet152_paper_async_G.txt | tr '\n' ' '; echo
grep -E "dqn\+search" out_resnet152_paper_async_G/bench.csv | cut -d, -f1,2,5,6,7
cd /work/main && O=/work/s43/msG D=/work/s39 bash docs/results/portfolio-search/ms.sh s4 8
