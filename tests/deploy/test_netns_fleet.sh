#!/usr/bin/env bash
# A learner and two workers on three "hosts": separate network namespaces
# joined by veth pairs (10.231.0.0/30 and 10.231.0.4/30, addresses that exist
# only inside those namespaces), each process started with exactly the command
# line of the images: the ENTRYPOINT of docker/Dockerfile.learner and
# docker/Dockerfile.worker is read here, and the entrypoint script it names is
# run with the container defaults (bind tcp://0.0.0.0:5555, metrics on
# 0.0.0.0:9464 in every "host"). The images' HEALTHCHECK command is run in
# each namespace too. Without CAP_NET_ADMIN (no `ip netns add`) it falls back
# to loopback with distinct ports and says so.
#
#   tests/deploy/test_netns_fleet.sh TENSORTIER_BINARY SOURCE_DIR
#   TT_TEST_FORCE_LOOPBACK=1 ...   # try the fallback on a host that has netns
#
# Exit: 0 passed, 1 failed, 77 skipped (no binary).
set -uo pipefail

# shellcheck source-path=SCRIPTDIR source=binary_args.sh
source "$(dirname "$0")/binary_args.sh" "$@"

tag="$$"
dir="$(mktemp -d "${TMPDIR:-/tmp}/tensortier-netns-XXXXXX")"
namespaces=()
pids=()
failures=0

# shellcheck disable=SC2317  # called by the EXIT trap
cleanup() {
  local p
  for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
  local ns
  for ns in "${namespaces[@]}"; do ip netns del "$ns" 2>/dev/null; done
  if [ "$failures" -eq 0 ]; then rm -rf "$dir"; else echo "logs kept in $dir"; fi
}
trap cleanup EXIT
trap 'exit 1' INT TERM

fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

# ---- The command lines of the images, from the Dockerfiles.
# Prints one element per line of the JSON array of INSTRUCTION (ENTRYPOINT,
# or HEALTHCHECK ... CMD) in DOCKERFILE, joining continuation lines.
dockerfile_array() {
  local dockerfile="$1" instruction="$2"
  sed -e ':a' -e '/\\$/N; s/\\\n//; ta' "$dockerfile" |
    grep -E "^${instruction}[[:space:]]" | tail -1 |
    sed -e 's/^[^[]*\[//' -e 's/\][[:space:]]*$//' |
    tr ',' '\n' | sed -e 's/^[[:space:]]*"//' -e 's/"[[:space:]]*$//'
}

# Sets `entry` (the script in the source tree) and `entry_args` (what the
# image passes it) from the ENTRYPOINT of a Dockerfile. The init in front of
# the script (tini --) only reaps children and forwards signals.
read_entrypoint() {
  local dockerfile="$1"
  local -a arr
  mapfile -t arr < <(dockerfile_array "$dockerfile" ENTRYPOINT)
  local i script=""
  entry_args=()
  for i in "${!arr[@]}"; do
    if [ -z "$script" ] && [[ "${arr[$i]}" == */tensortier-entrypoint ]]; then
      script="${arr[$i]}"
    elif [ -n "$script" ]; then
      entry_args+=("${arr[$i]}")
    fi
  done
  [ -n "$script" ] || { echo "no tensortier-entrypoint in the ENTRYPOINT of $dockerfile"; return 1; }
  # The file the image installs there: COPY SOURCE DEST.
  local source
  source="$(grep -E "^COPY[[:space:]]+[^[:space:]]+[[:space:]]+${script}[[:space:]]*$" "$dockerfile" |
            awk '{print $2}' | tail -1)"
  if [ -z "$source" ] || [ ! -f "$src/$source" ]; then
    echo "$dockerfile: no COPY of $script from the source tree"
    return 1
  fi
  entry="$src/$source"
}

# The ENV TT_*=VALUE lines of a Dockerfile, as NAME=VALUE words.
dockerfile_env() {
  sed -n 's/^ENV[[:space:]]\{1,\}\(TT_[A-Z_]*=[^[:space:]]*\)[[:space:]]*$/\1/p' "$1"
}

read_entrypoint "$src/docker/Dockerfile.learner" || exit 1
learner_entry="$entry"; learner_args=("${entry_args[@]}")
read_entrypoint "$src/docker/Dockerfile.worker" || exit 1
worker_entry="$entry"; worker_args=("${entry_args[@]}")
mapfile -t learner_env < <(dockerfile_env "$src/docker/Dockerfile.learner")
mapfile -t worker_env < <(dockerfile_env "$src/docker/Dockerfile.worker")
mapfile -t health_cmd < <(dockerfile_array "$src/docker/Dockerfile.worker" "HEALTHCHECK.*CMD")
[ "${health_cmd[0]:-}" = /usr/local/bin/tensortier-entrypoint ] || { echo "unexpected HEALTHCHECK: ${health_cmd[*]}"; exit 1; }
health_args=("${health_cmd[@]:1}")
[ "${learner_args[0]:-}" = learner ] || { echo "learner ENTRYPOINT role: ${learner_args[*]}"; exit 1; }
[ "${worker_args[0]:-}" = worker ] || { echo "worker ENTRYPOINT role: ${worker_args[*]}"; exit 1; }

# ---- Three hosts.
# Creates the namespaces and wires them; returns 1 (message in netns.err) when
# this host does not let us.
setup_netns() {
  ip netns add "ttl-$tag" 2>"$dir/netns.err" || { ip netns del "ttl-$tag" 2>/dev/null; return 1; }
  namespaces+=("ttl-$tag")
  local w
  for w in 1 2; do
    ip netns add "ttw$w-$tag" 2>>"$dir/netns.err" || return 1
    namespaces+=("ttw$w-$tag")
    # learner side 10.231.0.(4w-3), worker side 10.231.0.(4w-2), one /30 each
    ip link add "tl$w-$tag" type veth peer name "tw$w-$tag" 2>>"$dir/netns.err" || return 1
    ip link set "tl$w-$tag" netns "ttl-$tag" 2>>"$dir/netns.err" || return 1
    ip link set "tw$w-$tag" netns "ttw$w-$tag" 2>>"$dir/netns.err" || return 1
    ip -n "ttl-$tag" addr add "10.231.0.$((4 * w - 3))/30" dev "tl$w-$tag" 2>>"$dir/netns.err" || return 1
    ip -n "ttw$w-$tag" addr add "10.231.0.$((4 * w - 2))/30" dev "tw$w-$tag" 2>>"$dir/netns.err" || return 1
    ip -n "ttl-$tag" link set "tl$w-$tag" up 2>>"$dir/netns.err" || return 1
    ip -n "ttw$w-$tag" link set "tw$w-$tag" up 2>>"$dir/netns.err" || return 1
    ip -n "ttw$w-$tag" link set lo up 2>>"$dir/netns.err" || return 1
  done
  ip -n "ttl-$tag" link set lo up 2>>"$dir/netns.err" || return 1
}

mode=netns
if [ "${TT_TEST_FORCE_LOOPBACK:-0}" = 1 ]; then
  mode=loopback
  echo "NOTE: TT_TEST_FORCE_LOOPBACK=1: loopback with distinct ports instead of network namespaces"
elif ! command -v ip >/dev/null; then
  mode=loopback
  echo "NOTE: no ip command (iproute2): falling back to loopback with distinct ports"
elif ! setup_netns; then
  mode=loopback
  echo "NOTE: cannot create network namespaces and veth pairs ($(tr '\n' ' ' <"$dir/netns.err")- CAP_NET_ADMIN" \
       "and CAP_SYS_ADMIN are needed): falling back to loopback with distinct ports"
  for ns in "${namespaces[@]}"; do ip netns del "$ns" 2>/dev/null; done
  namespaces=()
fi

if [ "$mode" = netns ]; then
  echo "network namespaces: learner ttl-$tag (10.231.0.1, 10.231.0.5), workers ttw1-$tag (10.231.0.2)," \
       "ttw2-$tag (10.231.0.6)"
  # Each worker reaches the learner only through its own veth pair: worker 1
  # has no route to worker 2's link.
  if ip netns exec "ttw1-$tag" ip route get 10.231.0.5 >/dev/null 2>&1; then
    echo "FAIL: worker 1 has a route to the learner's address on worker 2's link"; failures=1; exit 1
  fi
  on_learner=(ip netns exec "ttl-$tag")
  on_w1=(ip netns exec "ttw1-$tag")
  on_w2=(ip netns exec "ttw2-$tag")
  # The container defaults, untouched: bind tcp://0.0.0.0:5555, metrics 0.0.0.0:9464.
  net_learner=()
  net_w1=(TT_CONNECT=tcp://10.231.0.1:5555)
  net_w2=(TT_CONNECT=tcp://10.231.0.5:5555)
else
  base=$(free_port_base 4) || exit 1
  on_learner=(); on_w1=(); on_w2=()
  net_learner=(TT_BIND="tcp://127.0.0.1:$base" TT_METRICS_ADDRESS="127.0.0.1:$((base + 1))")
  net_w1=(TT_CONNECT="tcp://127.0.0.1:$base" TT_METRICS_ADDRESS="127.0.0.1:$((base + 2))")
  net_w2=(TT_CONNECT="tcp://127.0.0.1:$base" TT_METRICS_ADDRESS="127.0.0.1:$((base + 3))")
fi

# ---- The run: a tiny synthetic workload, 40 episodes.
"$bin" generate --shape resnet --layers 4 --base-bytes 1048576 --out "$dir/tiny.ttwl" >"$dir/generate.log" 2>&1 ||
  { fail "generate: $(cat "$dir/generate.log")"; exit 1; }

# The fleet's CURVE keys, laid out as the images read them (TT_KEYS_DIR).
"$bin" keys --dir "$dir/keys" learner worker >"$dir/keys.log" 2>&1 || { fail "keys: $(cat "$dir/keys.log")"; exit 1; }
cp "$dir/keys/worker.pub" "$dir/keys/authorized-workers"
common=(TENSORTIER_BIN="$bin" TT_KEYS_DIR="$dir/keys")
learner_vars=("${common[@]}" "${learner_env[@]}" "${net_learner[@]}"
              TT_WORKLOAD="$dir/tiny.ttwl" TT_EPISODES=40 TT_MIN_WORKERS=2 TT_OUT="$dir/run")
w1_vars=("${common[@]}" "${worker_env[@]}" "${net_w1[@]}" TT_NAME=w1)
w2_vars=("${common[@]}" "${worker_env[@]}" "${net_w2[@]}" TT_NAME=w2)

start() {  # start LOG WRAPPER... -- VARS... -- COMMAND...
  local log="$1"; shift
  local -a wrap=() vars=()
  while [ "$1" != -- ]; do wrap+=("$1"); shift; done; shift
  while [ "$1" != -- ]; do vars+=("$1"); shift; done; shift
  "${wrap[@]}" env "${vars[@]}" bash "$@" >"$log" 2>&1 &
  pids+=($!)
  started=$!
}

# Polls the images' health check in a host until it passes (0) or PID exits (1).
healthy() {  # healthy NAME PID ENTRY WRAPPER... -- VARS...
  local name="$1" pid="$2" script="$3"; shift 3
  local -a wrap=() vars=()
  while [ "$1" != -- ]; do wrap+=("$1"); shift; done; shift
  vars=("$@")
  local i
  for i in $(seq 1 600); do
    if "${wrap[@]}" env "${vars[@]}" bash "$script" "${health_args[@]}" >"$dir/health-$name.log" 2>&1; then
      echo "health check passed: $name"
      return 0
    fi
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  fail "health check of $name never passed: $(cat "$dir/health-$name.log")"
  return 1
}

echo "learner: $(env "${learner_vars[@]}" bash "$learner_entry" print "${learner_args[@]}")"
start "$dir/learner.log" "${on_learner[@]}" -- "${learner_vars[@]}" -- "$learner_entry" "${learner_args[@]}"
learner_pid=$started
# The learner waits for two workers, so it is up while its health is polled.
healthy learner "$learner_pid" "$learner_entry" "${on_learner[@]}" -- "${learner_vars[@]}"

echo "worker 1: $(env "${w1_vars[@]}" bash "$worker_entry" print "${worker_args[@]}")"
start "$dir/w1.log" "${on_w1[@]}" -- "${w1_vars[@]}" -- "$worker_entry" "${worker_args[@]}"
w1_pid=$started
healthy w1 "$w1_pid" "$worker_entry" "${on_w1[@]}" -- "${w1_vars[@]}"

# The second worker completes the fleet, and 40 episodes take about a second:
# hold the learner (SIGSTOP) until the worker's health check has passed, so
# that the check runs against a worker that is still there. The worker's
# connection waits in the learner's listen backlog meanwhile.
kill -STOP "$learner_pid"
echo "worker 2: $(env "${w2_vars[@]}" bash "$worker_entry" print "${worker_args[@]}")"
start "$dir/w2.log" "${on_w2[@]}" -- "${w2_vars[@]}" -- "$worker_entry" "${worker_args[@]}"
w2_pid=$started
healthy w2 "$w2_pid" "$worker_entry" "${on_w2[@]}" -- "${w2_vars[@]}"
kill -CONT "$learner_pid"

# Returns the exit status of PID, or 124 after TIMEOUT seconds.
wait_for() {
  local pid="$1" timeout="$2" i
  for i in $(seq 1 $((timeout * 10))); do
    kill -0 "$pid" 2>/dev/null || { wait "$pid"; return $?; }
    sleep 0.1
  done
  return 124
}

wait_for "$learner_pid" 300; rc=$?
[ "$rc" -eq 0 ] || { fail "learner exited with $rc"; tail -30 "$dir/learner.log"; }
for w in 1 2; do
  pid_var="w${w}_pid"
  wait_for "${!pid_var}" 30; rc=$?
  [ "$rc" -eq 0 ] || { fail "worker $w exited with $rc (the learner's Shutdown should end it)"; tail -20 "$dir/w$w.log"; }
done

# ---- Episodes came from both workers.
csv="$dir/run/metrics.csv"
if [ -f "$csv" ]; then
  col="$(head -1 "$csv" | tr ',' '\n' | grep -n -x worker_id | cut -d: -f1)"
  rows=$(($(wc -l <"$csv") - 1))
  workers="$(tail -n +2 "$csv" | cut -d, -f"${col:-2}" | sort -u | tr '\n' ' ')"
  echo "metrics.csv: $rows episodes, from workers: $workers"
  [ "$rows" -eq 40 ] || fail "metrics.csv has $rows episodes, expected 40"
  [ "$(wc -w <<<"$workers")" -eq 2 ] || fail "episodes came from workers '$workers', expected two"
else
  fail "no $csv"
fi
grep -q "name=w1" "$dir/learner.log" && grep -q "name=w2" "$dir/learner.log" ||
  echo "note: the learner's log names no worker w1/w2"

if [ "$failures" -eq 0 ]; then
  echo "PASS: learner and two workers ($mode) trained 40 episodes with the images' command lines"
  exit 0
fi
echo "FAILED: $failures check(s)"
exit 1
