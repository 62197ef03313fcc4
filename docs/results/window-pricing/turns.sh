#!/usr/bin/env bash
# turns.sh: dqn+search on each model's default-scale sync cell with turns of 0.25 (the default), none
# and 0.125 of the 120 s limit (cells.sh does the profiling, training and bench; results in $W).
export TT=$(realpath "${TT:-build/cli/tensortier}")  # run from the repository root, or give TT
here=$(dirname "$(realpath "$0")")
for m in ${MODELS:-resnet152 inception_v3}; do
MODELS=$m POLICIES="dqn+search" TAG=_t25 EXTRA="" "$here/cells.sh"
MODELS=$m POLICIES="dqn+search" TAG=_t0 EXTRA="--search-move-turn-share 0" "$here/cells.sh"
MODELS=$m POLICIES="dqn+search" TAG=_t125 EXTRA="--search-move-turn-share 0.125" "$here/cells.sh"
done
