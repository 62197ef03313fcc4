#!/usr/bin/env bash
# attr.sh: where pt_new's greedy plan loses its time (bench_plan_attribution), four cells.
set -uo pipefail
cd /work/s35
b=/work/main/build/bench/bench_plan_attribution
ck=pt_new/checkpoints/dqn.ckpt
$b --workload ts/rowgru_like.ttwl --checkpoint $ck --dram-fraction 0.2 --top 12 > attr/rowgru_like@0.2.md 2>attr/rowgru.log
$b --workload ts/collstm_like.ttwl --checkpoint $ck --dram-fraction 0.2 --top 12 > attr/collstm_like@0.2.md 2>attr/collstm.log
$b --workload zoo/resnet152.ttwl --checkpoint $ck --dram-fraction 0.35 --top 12 > attr/zoo_resnet152@0.35.md 2>attr/r152.log
$b --workload zoo/resnet152.ttwl --checkpoint $ck --dram-fraction 0.2 --top 12 > attr/zoo_resnet152@0.2.md 2>attr/r152b.log
