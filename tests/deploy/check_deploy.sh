#!/usr/bin/env bash
# Checks of docker/ and deploy/ that need no container engine and no cluster:
#   - the Dockerfiles: COPY sources exist, stages referenced exist, a non-root
#     USER, a HEALTHCHECK, and an ENTRYPOINT running docker/tensortier-entrypoint;
#   - the entrypoint's flags exist in `tensortier learner|worker --help` (with
#     the binary), so the images cannot pass a flag the CLI lost;
#   - `docker-compose config -q` on deploy/compose (Debian's docker-compose);
#   - yamllint on deploy/ (deploy/.yamllint);
#   - tests/deploy/check_k8s.py: the kustomize trees, rendered and checked;
#   - promtool on deploy/compose/prometheus.yml, shellcheck on the scripts.
# A tool that is missing is reported and its check skipped; the others run.
#
#   tests/deploy/check_deploy.sh SOURCE_DIR [TENSORTIER_BINARY]
set -uo pipefail

src="$(cd "${1:?usage: check_deploy.sh SOURCE_DIR [TENSORTIER_BINARY]}" && pwd)"
bin="${2:-}"
passed=0 failed=0 skipped=0

ok() { echo "ok:   $*"; passed=$((passed + 1)); }
bad() { echo "FAIL: $*"; failed=$((failed + 1)); }
skip() { echo "skip: $*"; skipped=$((skipped + 1)); }

tmp="$(mktemp -d "${TMPDIR:-/tmp}/tensortier-deploy-check-XXXXXX")"
trap 'rm -rf "$tmp"' EXIT

# ---- Dockerfiles.
check_dockerfile() {
  local df="$1" name errors=0
  name="$(basename "$df")"
  local joined="$tmp/$name.joined"
  sed -e ':a' -e '/\\$/N; s/\\\n//; ta' "$df" >"$joined"
  local stages
  stages="$(sed -n 's/^FROM[[:space:]].*[[:space:]][Aa][Ss][[:space:]]\{1,\}\([^[:space:]]*\).*/\1/p' "$joined")"
  # FROM builder-${TORCH_FLAVOR}: every flavor named in the file must have a stage.
  local ref
  while read -r ref; do
    [ -n "$ref" ] || continue
    local prefix="${ref%%\$\{*}"
    if ! grep -qx "${prefix}[a-z0-9-]*" <<<"$stages"; then
      echo "  $name: FROM $ref matches no stage"; errors=$((errors + 1))
    fi
    local flavor
    while read -r flavor; do
      grep -qx "${prefix}${flavor}" <<<"$stages" || { echo "  $name: no stage ${prefix}${flavor}"; errors=$((errors + 1)); }
    done < <(grep -o 'TORCH_FLAVOR=[a-z]*' "$joined" | cut -d= -f2 | sort -u)
  done < <(sed -n 's/^FROM[[:space:]]\{1,\}\([^[:space:]]*\${[A-Z_]*}\)\([[:space:]].*\)\{0,1\}$/\1/p' "$joined" |
           grep -vF "\${DEBIAN_IMAGE}")
  while read -r ref; do
    grep -qx "$ref" <<<"$stages" || { echo "  $name: COPY --from=$ref names no stage"; errors=$((errors + 1)); }
  done < <(grep -o -- '--from=[^[:space:]]*' "$joined" | cut -d= -f2 | sort -u)
  # COPY sources from the build context (the repository root).
  local line
  while read -r line; do
    local -a words
    read -ra words <<<"$line"
    local n=${#words[@]} i
    for ((i = 1; i < n - 1; i++)); do
      [[ "${words[$i]}" == --* ]] && continue
      [ -e "$src/${words[$i]}" ] || { echo "  $name: COPY source ${words[$i]} does not exist"; errors=$((errors + 1)); }
    done
  done < <(grep -E '^COPY[[:space:]]' "$joined" | grep -v -- '--from=')
  local user
  user="$(sed -n 's/^USER[[:space:]]\{1,\}\([^[:space:]]*\).*/\1/p' "$joined" | tail -1)"
  case "$user" in
    "" | 0 | 0:* | root | root:*) echo "  $name: runs as root (USER '$user')"; errors=$((errors + 1)) ;;
  esac
  grep -qE '^HEALTHCHECK[[:space:]].*CMD' "$joined" || { echo "  $name: no HEALTHCHECK"; errors=$((errors + 1)); }
  local entry
  entry="$(grep -E '^ENTRYPOINT[[:space:]]' "$joined" | tail -1)"
  grep -q '/usr/local/bin/tensortier-entrypoint' <<<"$entry" ||
    { echo "  $name: the ENTRYPOINT does not run tensortier-entrypoint"; errors=$((errors + 1)); }
  grep -qE '^COPY[[:space:]]+docker/tensortier-entrypoint[[:space:]]+/usr/local/bin/tensortier-entrypoint' "$joined" ||
    { echo "  $name: docker/tensortier-entrypoint is not copied to /usr/local/bin"; errors=$((errors + 1)); }
  # The Dockerfile's own .dockerignore must keep what the build reads.
  local ignore="$df.dockerignore"
  if [ -f "$ignore" ]; then
    local needed
    for needed in docker scripts dashboards cli CMakeLists.txt; do
      grep -qx "$needed" "$ignore" && { echo "  $ignore excludes $needed, which the build needs"; errors=$((errors + 1)); }
    done
  fi
  if [ "$errors" -eq 0 ]; then ok "$name: stages, COPY sources, non-root USER $user, HEALTHCHECK, ENTRYPOINT"; else bad "$name"; fi
}
for df in "$src"/docker/Dockerfile.learner "$src"/docker/Dockerfile.worker; do
  [ -f "$df" ] || { bad "$df is missing"; continue; }
  check_dockerfile "$df"
done

# The builder's package list comes from scripts/bootstrap.
pk_debian="$(bash "$src/docker/build-packages" "$src/scripts/bootstrap" debian 2>&1)"
pk_external="$(bash "$src/docker/build-packages" "$src/scripts/bootstrap" external 2>&1)"
if grep -qx libtorch-dev <<<"$pk_debian" && ! grep -qx libtorch-dev <<<"$pk_external" &&
   grep -qx cmake <<<"$pk_debian" && grep -qx ninja-build <<<"$pk_debian"; then
  ok "docker/build-packages: $(wc -l <<<"$pk_debian") build packages from scripts/bootstrap"
else
  bad "docker/build-packages: $pk_debian"
fi

# ---- The entrypoint's flags exist in the CLI.
if [ -n "$bin" ] && [ -x "$bin" ]; then
  errors=0
  for role in learner worker; do
    help="$("$bin" "$role" --help 2>&1)"
    line="$(env TENSORTIER_BIN="$bin" TT_CONFIG=/dev/null TT_LOG_LEVEL=info TT_WORKLOAD=x.ttwl TT_EPISODES=1 \
            TT_MIN_WORKERS=1 TT_DRAM_FRACTION=0.2 TT_DEVICE=cpu TT_OUT=o TT_NAME=n TT_SLOW_TIER=auto \
            TT_MEASURE_EVERY=1 bash "$src/docker/tensortier-entrypoint" print "$role")"
    while read -r flag; do
      case "$flag" in
        --config | --log-level) "$bin" --help 2>&1 | grep -q -- "$flag" || { echo "  tensortier --help lacks $flag"; errors=$((errors + 1)); } ;;
        *) grep -q -- "$flag\b" <<<"$help" || { echo "  tensortier $role --help lacks $flag"; errors=$((errors + 1)); } ;;
      esac
    done < <(grep -o -- ' --[a-z-]*' <<<"$line" | sed 's/^ //' | sort -u)
  done
  if [ "$errors" -eq 0 ]; then ok "entrypoint flags exist in tensortier learner/worker --help"; else bad "entrypoint flags"; fi
else
  skip "entrypoint flags against the CLI (no tensortier binary given)"
fi

# ---- docker-compose config.
if command -v docker-compose >/dev/null; then
  errors=0
  for extra in "" docker-compose.pmem.yml docker-compose.kmem.yml; do
    files=(-f docker-compose.yml)
    [ -n "$extra" ] && files+=(-f "$extra")
    if ! out="$(cd "$src/deploy/compose" && docker-compose "${files[@]}" config -q 2>&1)"; then
      echo "  docker-compose ${files[*]} config: $out"; errors=$((errors + 1))
    fi
  done
  services="$(cd "$src/deploy/compose" && docker-compose config --services 2>/dev/null | sort | tr '\n' ' ')"
  [ "$services" = "grafana learner prometheus worker " ] || { echo "  services: $services"; errors=$((errors + 1)); }
  replicas="$(cd "$src/deploy/compose" && TT_WORKERS=5 docker-compose config 2>/dev/null | grep -A1 'deploy:' |
              sed -n 's/.*replicas: *//p')"
  [ "$replicas" = 5 ] || { echo "  TT_WORKERS=5 gives worker replicas '$replicas'"; errors=$((errors + 1)); }
  if [ "$errors" -eq 0 ]; then
    ok "docker-compose config -q (deploy/compose, +pmem, +kmem; $(docker-compose version --short 2>/dev/null))"
  else
    bad "docker-compose config"
  fi
else
  skip "docker-compose config (no docker-compose: apt-get install docker-compose)"
fi

# ---- yamllint.
if command -v yamllint >/dev/null; then
  if out="$(yamllint -c "$src/deploy/.yamllint" -f parsable "$src/deploy" 2>&1)"; then
    ok "yamllint deploy/ ($(find "$src/deploy" -name '*.y*ml' | wc -l) files)"
  else
    echo "$out"; bad "yamllint deploy/"
  fi
else
  skip "yamllint (not installed: apt-get install yamllint)"
fi

# ---- Kubernetes manifests.
py=""
for candidate in /usr/bin/python3 python3; do
  if command -v "$candidate" >/dev/null && "$candidate" -c 'import yaml' 2>/dev/null; then py="$candidate"; break; fi
done
if [ -n "$py" ]; then
  if out="$("$py" "$src/tests/deploy/check_k8s.py" "$src" 2>&1)"; then
    printf '  %s\n' "${out//$'\n'/$'\n'  }"; ok "tests/deploy/check_k8s.py"
  else
    echo "$out"; bad "tests/deploy/check_k8s.py"
  fi
else
  skip "Kubernetes manifest checks (no python3 with PyYAML: apt-get install python3-yaml)"
fi

# ---- promtool on the compose Prometheus configuration (Debian's promtool has
# no kubernetes_sd, so deploy/k8s/monitoring/prometheus.yml is not checked here).
if command -v promtool >/dev/null; then
  cp "$src/deploy/compose/prometheus.yml" "$tmp/prometheus.yml"
  cp "$src/dashboards/prometheus/alerts.yml" "$tmp/alerts.yml"
  if out="$(promtool check config "$tmp/prometheus.yml" 2>&1)"; then
    ok "promtool check config deploy/compose/prometheus.yml"
  else
    echo "$out"; bad "promtool check config deploy/compose/prometheus.yml"
  fi
else
  skip "promtool (not installed)"
fi

# ---- shellcheck.
if command -v shellcheck >/dev/null; then
  scripts=("$src/docker/tensortier-entrypoint" "$src/docker/build-packages" "$src/docker/runtime-packages"
           "$src/scripts/fleet-workers" "$src"/tests/deploy/*.sh)
  # -x: the tests that source tests/deploy/binary_args.sh are checked with it.
  if out="$(shellcheck -x -S warning "${scripts[@]}" 2>&1)"; then
    ok "shellcheck (${#scripts[@]} scripts)"
  else
    echo "$out"; bad "shellcheck"
  fi
else
  skip "shellcheck (not installed)"
fi

echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
