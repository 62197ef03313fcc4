#!/usr/bin/env bash
# Runs every fuzz target of fuzz/ under libFuzzer (clang, ASan + UBSan) for a
# set time each, starting from the committed corpora, and keeps what it finds.
#
#   bench/fuzz_long.sh [--seconds N] [--build-dir DIR] [--out DIR] [--jobs J] [TARGET...]
#
#   --seconds N     per target (default 300)
#   --build-dir     clang build tree (default build-fuzz; configured when missing)
#   --out DIR       corpora grown, crashes and logs (default build-fuzz/fuzz-runs/<time>)
#   --jobs J        libFuzzer workers per target (-jobs/-workers; default 1)
#   TARGET          protocol workload plan lookup config (default: all)
#
# A crash leaves OUT/crashes/TARGET/crash-* (also leak-*, timeout-*, oom-*);
# reproduce with `build-fuzz/fuzz/fuzz_TARGET FILE`, fix, and copy the file
# into fuzz/corpus/TARGET/ as regression-<what>, which `ctest -L fuzz` runs.
# Exit: 0 when no target crashed, 1 otherwise.
set -uo pipefail

src="$(cd "$(dirname "$0")/.." && pwd)"
seconds=300 build="$src/build-fuzz" out="" jobs=1
targets=()
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds="$2"; shift 2 ;;
    --build-dir) build="$(readlink -f "$2")"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --jobs) jobs="$2"; shift 2 ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    -*) echo "unknown option $1" >&2; exit 2 ;;
    *) targets+=("$1"); shift ;;
  esac
done
[ ${#targets[@]} -gt 0 ] || targets=(protocol workload plan lookup config)
[ -n "$out" ] || out="$build/fuzz-runs/$(date +%Y%m%d-%H%M%S)"
mkdir -p "$out"

command -v clang++ >/dev/null || { echo "fuzz_long.sh needs clang++ (and libclang-rt-dev for libFuzzer)" >&2; exit 2; }
if [ ! -f "$build/build.ninja" ]; then
  CC=clang CXX=clang++ cmake -S "$src" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTENSORTIER_FUZZ=ON \
    > "$out/configure.log" || { cat "$out/configure.log"; exit 2; }
fi
cmake --build "$build" -j "$(nproc)" --target "${targets[@]/#/fuzz_}" > "$out/build.log" 2>&1 ||
  { tail -40 "$out/build.log"; exit 2; }

# -timeout=5: an input that takes seconds is a finding (a frame must not cost the
# learner seconds); -rss_limit_mb=2048 likewise for memory.
parallel=()
[ "$jobs" -gt 1 ] && parallel=(-jobs="$jobs" -workers="$jobs")
failed=0
printf '%-10s %8s %12s %10s %8s %s\n' target seconds executions exec/s corpus result | tee "$out/summary.txt"
for t in "${targets[@]}"; do
  corpus="$out/corpus/$t" crashes="$out/crashes/$t/"
  mkdir -p "$corpus" "$crashes"
  # New inputs go to the first directory; the committed seeds are read only.
  ( cd "$out" && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
      "$build/fuzz/fuzz_$t" -max_total_time="$seconds" -timeout=5 -rss_limit_mb=2048 -max_len=1048576 \
      -print_final_stats=1 -artifact_prefix="$crashes" "${parallel[@]}" \
      "$corpus" "$src/fuzz/corpus/$t" ) > "$out/$t.log" 2>&1
  rc=$?
  # With -jobs the stats are in fuzz-N.log files.
  stats="$(cat "$out/$t.log" "$out"/fuzz-*.log 2>/dev/null)"
  execs="$(grep -o 'stat::number_of_executed_units: *[0-9]*' <<<"$stats" | awk '{s+=$2} END {print s+0}')"
  rate="$(grep -o 'stat::average_exec_per_sec: *[0-9]*' <<<"$stats" | awk '{s+=$2} END {print s+0}')"
  rm -f "$out"/fuzz-*.log
  found="$(find "$crashes" -type f | wc -l)"
  result=ok
  if [ "$rc" -ne 0 ] || [ "$found" -gt 0 ]; then
    result="FOUND $found (rc $rc, see $t.log)"
    failed=1
  fi
  printf '%-10s %8s %12s %10s %8s %s\n' "$t" "$seconds" "$execs" "$rate" "$(find "$corpus" -type f | wc -l)" "$result" |
    tee -a "$out/summary.txt"
done
echo "logs, grown corpora and crashes in $out"
exit $failed
