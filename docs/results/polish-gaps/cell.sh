#!/usr/bin/env bash
# One cell: dqn+search (120 s) on a session-41 network; EXTRA adds bench flags, TAG names the output.
set -euo pipefail
tt=/work/main/build/cli/tensortier
m=$1 wl=$2 run=$3 mode=$4
cd ${WORK:-/work/s43}
SECONDS=0
$tt bench --workload $wl --mode $mode --policies ${POLICIES:-dqn+search} --checkpoint $m=$run/checkpoints/dqn-fastest.ckpt \
  --dram-fractions 0.2 --ilp-time-limit 60 --cost-model-only ${EXTRA:-} --out out_$m$TAG > log_$m$TAG.txt 2>&1
echo "== $m$TAG $SECONDS s"
grep -E "^\| (autotm-sync|autotm-async|dqn|dqn\+search|heat\+search) " out_$m$TAG/bench.md
grep -o "runtime_ns=[^ ]*\|tensor_replays=[0-9]* tensor_improvements=[0-9]*\|room_replays=[0-9]* room_improvements=[0-9]*\|window_replays=[0-9]* window_improvements=[0-9]* windows_priced_out=[0-9]* tensor_replays_priced_out=[0-9]*\|replays=[0-9]* replay_improvements=[0-9]*" log_$m$TAG.txt | tr '\n' ' '; echo
