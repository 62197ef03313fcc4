#!/usr/bin/env bash
# scripts/fleet-workers against a learner on loopback (standing in for a
# remote host): start two workers before the learner exists, see them in
# `status`, let the learner train with them and end them, then start two more
# and `stop` them.
#
#   tests/deploy/test_fleet_workers.sh TENSORTIER_BINARY SOURCE_DIR
# Exit: 0 passed, 1 failed, 77 skipped (no binary).
set -uo pipefail

# shellcheck source-path=SCRIPTDIR source=binary_args.sh
source "$(dirname "$0")/binary_args.sh" "$@"
fleet="$src/scripts/fleet-workers"

dir="$(mktemp -d "${TMPDIR:-/tmp}/tensortier-fleet-workers-XXXXXX")"
failures=0
learner_pid=""
# shellcheck disable=SC2317  # called by the EXIT trap
cleanup() {
  "$fleet" stop --dir "$dir/state" --timeout 5 >/dev/null 2>&1
  [ -n "$learner_pid" ] && kill -KILL "$learner_pid" 2>/dev/null && wait "$learner_pid" 2>/dev/null
  if [ "$failures" -eq 0 ]; then rm -rf "$dir"; else echo "logs kept in $dir"; fi
}
trap cleanup EXIT
trap 'exit 1' INT TERM
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

port=$(free_port_base 4) || exit 1
mport=$((port + 1))
endpoint="tcp://127.0.0.1:$port"

"$fleet" --help | grep -q "fleet-workers start" || fail "--help does not describe start"

# ---- Two workers wait for a learner that is not there yet.
"$fleet" start --connect "$endpoint" -n 2 --dir "$dir/state" --binary "$bin" --name-prefix host \
  --metrics-port "$mport" --give-up-seconds 120 >"$dir/start.log" 2>&1 || fail "start: $(cat "$dir/start.log")"
cat "$dir/start.log"
"$fleet" status --dir "$dir/state" >"$dir/status.log"; rc=$?
cat "$dir/status.log"
[ "$rc" -eq 0 ] || fail "status exited $rc with both workers running"
grep -c " running  pid " "$dir/status.log" | grep -qx 2 || fail "status does not list two running workers"
[ -f "$dir/state/logs/host-1.log" ] && [ -f "$dir/state/pids/host-2.pid" ] || fail "no logs/pid files"
targets="$(cat "$dir/state/prometheus/"workers-*.json 2>/dev/null)"
grep -q ":$mport\"" <<<"$targets" && grep -q ":$((mport + 1))\"" <<<"$targets" ||
  fail "Prometheus target file: $targets"

# The first worker's metrics endpoint answers.
metrics=""
for _ in $(seq 1 50); do
  if exec 3<>"/dev/tcp/127.0.0.1/$mport" 2>/dev/null; then
    printf 'GET /metrics HTTP/1.0\r\n\r\n' >&3
    metrics="$(timeout 5 cat <&3)"
    exec 3<&-
    break
  fi
  sleep 0.1
done
grep -q '^tensortier_' <<<"$metrics" || fail "no tensortier_ metrics on 127.0.0.1:$mport"

# ---- The learner trains with them, then sends them home.
"$bin" learner --bind "$endpoint" --workload synthetic:tiny:3:65536 --episodes 30 --min-workers 2 \
  --heartbeat-ms 200 --metrics-address off --out "$dir/run" >"$dir/learner.log" 2>&1 &
learner_pid=$!
for _ in $(seq 1 1200); do kill -0 "$learner_pid" 2>/dev/null || break; sleep 0.1; done
wait "$learner_pid"; rc=$?
learner_pid=""
[ "$rc" -eq 0 ] || { fail "learner exited with $rc"; tail -20 "$dir/learner.log"; }
for _ in $(seq 1 200); do
  "$fleet" status --dir "$dir/state" >/dev/null; rc=$?
  [ "$rc" -eq 3 ] && break
  sleep 0.1
done
[ "$rc" -eq 3 ] || fail "workers still running after the learner ended (status $rc)"
grep -q "worker_finished" "$dir/state/logs/host-1.log" || fail "host-1 did not finish cleanly"
if [ -f "$dir/run/metrics.csv" ]; then
  n="$(tail -n +2 "$dir/run/metrics.csv" | cut -d, -f2 | sort -u | wc -l)"
  [ "$n" -eq 2 ] || fail "episodes from $n workers, expected 2"
else
  fail "no metrics.csv"
fi

# ---- stop ends workers that are still waiting.
"$fleet" start --connect "$endpoint" -n 2 --dir "$dir/state" --binary "$bin" --metrics-port off \
  >"$dir/start2.log" 2>&1 || fail "second start: $(cat "$dir/start2.log")"
pids="$(cat "$dir/state/pids/"*.pid | tr '\n' ' ')"
"$fleet" stop --dir "$dir/state" --timeout 10 || fail "stop failed"
for p in $pids; do
  kill -0 "$p" 2>/dev/null && fail "worker $p still alive after stop"
done
"$fleet" status --dir "$dir/state" >/dev/null; rc=$?
[ "$rc" -eq 3 ] || fail "status after stop exited $rc, expected 3"

if [ "$failures" -eq 0 ]; then
  echo "PASS: scripts/fleet-workers start/status/stop with a learner on $endpoint"
  exit 0
fi
echo "FAILED: $failures check(s)"
exit 1
