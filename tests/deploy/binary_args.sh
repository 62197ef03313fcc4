# shellcheck shell=bash
# Sourced with "$@" by the deploy tests that run the tensortier binary: their
# arguments TENSORTIER_BINARY SOURCE_DIR as $bin (absolute: the tests cd
# around) and $src. No binary: exit 77, which CTest reads as skipped. Also
# free_port_base, for the tests that bind ports.
usage="usage: $(basename "$0") TENSORTIER_BINARY SOURCE_DIR"
bin="${1:?$usage}"
# shellcheck disable=SC2034  # read by the scripts that source this one
src="${2:?$usage}"
[ -x "$bin" ] || { echo "SKIP: no tensortier binary at $bin"; exit 77; }
bin="$(readlink -f "$bin")"

# Prints a port P such that P .. P+COUNT-1 have no listener on 127.0.0.1,
# drawn below the kernel's ephemeral range: ports in that range are taken at
# random as the local ends of other processes' outgoing connections (other
# tests running beside this one), and a bind to one of them fails.
free_port_base() {
  local count="${1:-1}" lo base p busy
  read -r lo _ </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || lo=32768
  [ "$lo" -gt $((20000 + count + 1000)) ] || lo=32768
  for _ in $(seq 50); do
    base=$((20000 + RANDOM % (lo - 20000 - count)))
    busy=0
    for ((p = base; p < base + count; p++)); do
      if (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then busy=1; break; fi
    done
    [ "$busy" -eq 0 ] && { echo "$base"; return 0; }
  done
  echo "no $count free ports below $lo" >&2
  return 1
}
