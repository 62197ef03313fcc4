#!/usr/bin/env bash
# meas.sh MODEL...: cells of a table of bench/paper_tables.sh --train 1 on real iterations (issue #15, criterion 2;
# session forty-seven): the table's profile and network (runs/paper/SCALE-MODE-MODEL-dqn), the leading baselines,
# the relaxation, dqn and dqn+search, --repeats 2 --rounds 5, DRAM 0.2 x peak, ILPs 60 s, the search at
# the product's default limit (5 s since session fifty-one; session forty-seven's runs took 120 s).
# SCALE=paper (default; docs/results/workloads/MODEL_b8_128.ttwl), default (workloads/MODEL.ttwl: batch 2,
# 32 px) or outside (workloads/ts/MODEL.ttwl); MODE=async (default) or sync. Run from the repository
# root; results into $OUT/MODEL (default: docs/results/measured-fig14-paper-async,
# docs/results/measured-fig14-MODE for the default scale, docs/results/measured-outside-zoo-MODE).
# TT: the tensortier binary (default build/cli/tensortier); EXTRA: more policies (e.g. "dqn+polish").
set -uo pipefail
scale=${SCALE:-paper}; mode=${MODE:-async}
policies=(first-touch sentinel autotm-sync heat+ilp relaxation dqn dqn+search)
[ "$mode" = async ] && policies+=(autotm-async)
# shellcheck disable=SC2206
policies+=(${EXTRA:-})
for m in "$@"; do
  if [ "$scale" = outside ]; then
    wl=docs/results/workloads/ts/$m.ttwl; out=${OUT:-docs/results/measured-outside-zoo-$mode}/$m
  elif [ "$scale" = default ]; then
    wl=docs/results/workloads/$m.ttwl; out=${OUT:-docs/results/measured-fig14-$mode}/$m
  else
    wl=docs/results/workloads/${m}_b8_128.ttwl; out=${OUT:-docs/results/measured-fig14-paper-async}/$m
  fi
  mkdir -p "$(dirname "$out")"
  SECONDS=0
  ${TT:-build/cli/tensortier} bench --workload "$wl" --mode "$mode" \
    --checkpoint runs/paper/$scale-$mode-$m-dqn/checkpoints/dqn-fastest.ckpt --policies "${policies[@]}" \
    --dram-fractions 0.2 --ilp-time-limit 60 --repeats 2 --rounds 5 --out "$out" > "$out.log" 2>&1
  echo "== $m rc=$? $SECONDS s $(date +%T)"
  grep -E "^\| " "$out/bench.md" | head -12
  grep "Solver status" "$out/bench.md"
done
