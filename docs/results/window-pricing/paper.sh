#!/usr/bin/env bash
# Paper-scale ResNet-152 async (the +5 cell): turns + priced windows vs turns off.
set -uo pipefail
tt=$(realpath "${TT:-build/cli/tensortier}")  # run from the repository root, or give TT
mkdir -p "${W:-/work/s41}" && cd "${W:-/work/s41}"  # profiles, runs, logs and results
m=resnet152; f=wl_${m}_b8_128.ttwl
SECONDS=0
[ -f $f ] || $tt profile --model $m --batch 8 --image-size 128 --out $f >/dev/null 2>&1
echo "== profile $SECONDS s"
run=runs/paper-async-$m-dqn
SECONDS=0
[ -f $run/checkpoints/dqn-fastest.ckpt ] || $tt train --workload $f --agent dqn --mode async --episodes 1 --dram-fraction 0.2 --cost-model-only \
      --ilp-seconds 0 --metrics-address off --out $run | tail -n 2
echo "== train $SECONDS s"
ckpt=$run/checkpoints/dqn-fastest.ckpt; [ -f $ckpt ] || ckpt=$run/checkpoints/dqn-best.ckpt
for share in 0.25 0; do
  SECONDS=0
  $tt bench --workload $f --mode async --policies autotm-sync autotm-async sentinel dqn dqn+search --checkpoint $m=$ckpt \
    --dram-fractions 0.2 --ilp-time-limit 60 --cost-model-only --search-move-turn-share $share --out out_paper_async_$share > log_paper_async_$share.txt 2>&1
  echo "== bench share $share $SECONDS s"
  grep -E "^\| (autotm|sentinel|dqn)" out_paper_async_$share/bench.md
  grep -o "replays=[0-9]* replay_improvements=[0-9]*\|tensor_replays=[0-9]* tensor_improvements=[0-9]*\|room_replays=[0-9]* room_improvements=[0-9]*\|window_replays=.*windows_priced_out=[0-9]*" log_paper_async_$share.txt | tr '\n' ' '; echo
done
