#!/usr/bin/env bash
# zstab.sh RUN...: portfolio.sh's zero-shot rows (policy, then % of all-DRAM on each of the five models)
S36=${S38:-/work/s38} POLICIES='sentinel autotm-sync ca-lm dqn dqn+search dqn+portfolio dqn+portfolio+search' \
  MODELS='collstm_like rowgru_like mixer_like convnext_like synthetic_transformer_8' \
  exec "$(dirname "$0")/../room-labels/zstab.sh" "$@"
