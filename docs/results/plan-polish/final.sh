#!/usr/bin/env bash
# Session 42's final measurements, nothing else running.
cd "${WORK:-/work/s42}"
POLICIES="dqn+search heat+search" TAG=_F ./cell.sh resnet152 /work/s41/wl_resnet152.ttwl /work/s41/runs/default-sync-resnet152-dqn sync
grep -o "policy=[^ ]*\|polish_edits=[^ ]* polish_saved_ns=[^ ]*" log_resnet152_F.txt | tr '\n' ' '; echo
grep -E "dqn\+search|heat\+search" out_resnet152_F/bench.csv | cut -d, -f2,5,6,7
POLICIES="dqn+search heat+search" TAG=_F ./cell.sh inception_v3 /work/s41/wl_inception_v3.ttwl /work/s41/runs/default-sync-inception_v3-dqn sync
grep -o "policy=[^ ]*\|polish_edits=[^ ]* polish_saved_ns=[^ ]*" log_inception_v3_F.txt | tr '\n' ' '; echo
grep -E "dqn\+search|heat\+search" out_inception_v3_F/bench.csv | cut -d, -f2,5,6,7
POLICIES="dqn+search" TAG=_paper_async_F ./cell.sh resnet152 /work/s41/wl_resnet152_b8_128.ttwl /work/s41/runs/paper-async-resnet152-dqn async
grep -o "polish_edits=[^ ]* polish_saved_ns=[^ ]*\|copy_schedule_saved_ns=[^ ]*" log_resnet152_paper_async_F.txt | tr '\n' ' '; echo
grep -E "dqn\+search" out_resnet152_paper_async_F/bench.csv | cut -d, -f2,5,6,7
cd /work/main && O=/work/s42/msF D=/work/s39 bash docs/results/portfolio-search/ms.sh s4 8 > /work/s42/msF.out 2>&1; tail -5 /work/s42/msF.out
