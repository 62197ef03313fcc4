#!/usr/bin/env bash
cd "${WORK:-/work/s42}"
POLICIES="autotm-sync dqn+search heat+search" TAG=_final ./cell.sh inception_v3 /work/s41/wl_inception_v3.ttwl /work/s41/runs/default-sync-inception_v3-dqn sync
grep -o "policy=[^ ]*\|polish_edits=[^ ]* polish_saved_ns=[^ ]*" log_inception_v3_final.txt | tr '\n' ' '; echo
grep -E "autotm-sync|dqn\+search|heat\+search" out_inception_v3_final/bench.csv | cut -d, -f2,5,6,7
POLICIES="autotm-sync autotm-async sentinel dqn dqn+search" TAG=_paper_async ./cell.sh resnet152 /work/s41/wl_resnet152_b8_128.ttwl /work/s41/runs/paper-async-resnet152-dqn async
grep -o "policy=[^ ]*\|polish_edits=[^ ]* polish_saved_ns=[^ ]*" log_resnet152_paper_async.txt | tr '\n' ' '; echo
grep -E "autotm|sentinel|dqn" out_resnet152_paper_async/bench.csv | cut -d, -f2,5,6,7
