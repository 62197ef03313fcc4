#!/usr/bin/env bash
# One cell: dqn+search (120 s) on a session-41/43 network, cost model; EXTRA adds bench flags, TAG names the output.
set -euo pipefail
tt=/work/main/build/cli/tensortier
m=$1 src=$2 mode=${3:-sync}
cd ${OUT:-.}
SECONDS=0
$tt bench --workload $src/wl_$m.ttwl --mode $mode --policies ${POLICIES:-dqn+search} --checkpoint $m=$src/runs/default-$mode-$m-dqn/checkpoints/dqn-fastest.ckpt \
  --dram-fractions 0.2 --ilp-time-limit 60 --cost-model-only ${EXTRA:-} --out out_$m$TAG > log_$m$TAG.txt 2>&1
echo "== $m$TAG $SECONDS s"
grep -E "^\| (autotm-sync|heat\+ilp|dqn|dqn\+search|heat\+search) " out_$m$TAG/bench.md
grep -E "dqn\+search" out_$m$TAG/bench.csv | cut -d, -f1-7 | head -2
grep -o "polish_edits=[^ ]* polish_saved_ns=[^ ]* polish_seconds=[^ ]*" log_$m$TAG.txt | tr '\n' ' '; echo
