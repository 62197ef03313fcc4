#!/usr/bin/env bash
# ms.sh RUN STARTS...: bench dqn+portfolio and dqn+portfolio+search with --portfolio-search-starts K for
# each K given, zero-shot on the four unseen modules and synthetic:transformer:8 (cost model, sync,
# DRAM 0.2 x peak, --search-seconds 30), from $D/RUN/checkpoints/portfolio; profiles under $S38
# (../room-labels/profiles.sh), results into $O/ms_RUN/kK ($O: $D unless given). Prints one line per model: the searched
# plan's % of all-DRAM speed, the bench's wall time and peak memory.
set -uo pipefail
p=${S38:-/work/s38}; d=${D:-/work/s39}; o=${O:-$d}; n=$1; shift
TT=/work/main/build/cli/tensortier
for k in "$@"; do
  mkdir -p $o/ms_$n/k$k
  for m in ts/collstm_like.ttwl ts/rowgru_like.ttwl ts/mixer_like.ttwl ts/convnext_like.ttwl synthetic:transformer:8; do
    b=$(basename "${m%.ttwl}" | tr ':' '_')
    mm=$m; [[ $m == ts/* ]] && mm=$p/$m
    /usr/bin/time -f "%e s %M KB" $TT bench --workload "$mm" --policies dqn+portfolio dqn+portfolio+search \
      --portfolio "$d/$n/checkpoints/portfolio" --portfolio-search-starts $k --dram-fractions 0.2 \
      --cost-model-only --search-seconds 30 --ilp-time-limit 30 --out $o/ms_$n/k$k/$b > $o/ms_$n/k$k/$b.log 2>&1
    echo "$n k$k $b $(grep -F '| dqn+portfolio+search |' $o/ms_$n/k$k/$b.log | head -1 | awk -F'|' '{print $3}') $(tail -1 $o/ms_$n/k$k/$b.log) $(date +%T)"
  done
done
