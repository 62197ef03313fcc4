#!/usr/bin/env bash
# The top-level folders form layers, lowest first. A folder's sources may
# include only folders below it; hostrt's own files (its top level: the C API
# a production host links) include nothing of the project but hostrt.
# A folder that is not listed fails the check, so a new one gets a place.
# Usage: check_layers.sh SOURCE_DIR
set -euo pipefail
root=${1:?usage: check_layers.sh SOURCE_DIR}
cd "$root"

layers=(common tiers models envs protocol replay agents transport allocator profiler executor policies
        hostrt exporter metrics report evaluation learner worker cli)
declare -A rank
for i in "${!layers[@]}"; do rank[${layers[$i]}]=$i; done
# Not part of the product's layers: they may use any of it.
outside=" tests bench fuzz examples build docs scripts dashboards deploy docker third_party "

status=0
for dir in */; do
  dir=${dir%/}
  [[ $outside == *" $dir "* ]] && continue
  git check-ignore -q "$dir" 2>/dev/null && continue  # a build tree of another name (build-*/ is ignored)
  find "$dir" \( -name '*.h' -o -name '*.cc' \) | grep -q . || continue  # no C++ sources
  if [[ -z ${rank[$dir]+x} ]]; then
    echo "check_layers: folder '$dir' has C++ sources and no layer; add it to tests/structure/check_layers.sh"
    status=1
    continue
  fi
  while IFS=: read -r file _ include; do
    target=$(sed -E 's/.*#include "([a-z_0-9]+)\/.*/\1/' <<<"$include")
    [[ $target == "$dir" ]] && continue
    if [[ -z ${rank[$target]+x} ]]; then continue; fi  # generated or third-party headers
    if (( rank[$target] >= rank[$dir] )); then
      echo "check_layers: $file includes $target/, which is not below $dir/ ($include)"
      status=1
    fi
  done < <(grep -rnE '^#include "[a-z_0-9]+/' "$dir" --include='*.h' --include='*.cc' --include='*.hpp' || true)
done

# hostrt's top level is dependency-free (hostrt/CMakeLists.txt says why).
while IFS=: read -r file _ include; do
  [[ $include == *'"hostrt/'* || $include != *'/'* ]] && continue  # its own headers
  echo "check_layers: $file is hostrt's dependency-free runtime and includes $include"
  status=1
done < <(grep -nE '^#include "' hostrt/*.h hostrt/*.hpp hostrt/*.cc /dev/null 2>/dev/null || true)

if (( status == 0 )); then echo "check_layers: every include points down (${#layers[@]} layers)"; fi
exit $status
