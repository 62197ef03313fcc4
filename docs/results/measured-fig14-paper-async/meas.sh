#!/usr/bin/env bash
# meas.sh MODEL...: cells of fig14-paper-async on real iterations (issue #15, criterion 2; session forty-seven):
# the table's profile (docs/results/workloads/MODEL_b8_128.ttwl) and network (runs/paper/paper-async-MODEL-dqn,
# as bench/paper_tables.sh --scale paper --mode async --train 1 leaves them), the leading baselines, the
# relaxation, dqn and dqn+search, --repeats 2 --rounds 5, DRAM 0.2 x peak, ILPs 60 s, search 120 s.
# Run from the repository root; results into $OUT/MODEL (default: this folder).
set -uo pipefail
for m in "$@"; do
  out=${OUT:-docs/results/measured-fig14-paper-async}/$m
  SECONDS=0
  build/cli/tensortier bench --workload docs/results/workloads/${m}_b8_128.ttwl --mode async \
    --checkpoint runs/paper/paper-async-$m-dqn/checkpoints/dqn-fastest.ckpt \
    --policies first-touch sentinel autotm-sync autotm-async heat+ilp relaxation dqn dqn+search \
    --dram-fractions 0.2 --ilp-time-limit 60 --repeats 2 --rounds 5 --out "$out" > "$out.log" 2>&1
  echo "== $m rc=$? $SECONDS s $(date +%T)"
  grep -E "^\| " "$out/bench.md" | head -12
  grep "Solver status" "$out/bench.md"
done
