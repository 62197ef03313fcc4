#!/usr/bin/env bash
# zstab.sh RUN...: the zero-shot table rows (policy: 4 modules) of each run's zs_ folder under $S36;
# POLICIES and MODELS replace the lists (session thirty-eight: ../portfolio/zstab.sh)
for r in "$@"; do
  for p in ${POLICIES:-sentinel autotm-sync ca-lm dqn dqn+search}; do
    row="$r $p"
    for m in ${MODELS:-collstm_like rowgru_like mixer_like convnext_like}; do
      v=$(grep -F "| $p |" ${S36:-/work/s36}/zs_$r/$m.log | head -1 | awk -F'|' '{print $3}' | tr -d ' %')
      row="$row $v"
    done
    echo "$row"
  done
done
