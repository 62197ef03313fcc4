#!/usr/bin/env bash
# scripts/bootstrap against stand-ins for dpkg-query, apt-get, systemctl and
# id (root, so no sudo): which packages each purpose installs, and that
# Debian's prometheus service is kept from starting and disabled when the
# script installs it (issue 18). Nothing is installed. The Makefile: `make
# run` bootstraps for run, `make test` for test.
#   test_bootstrap.sh SOURCE_DIR
set -euo pipefail
src="${1:?usage: test_bootstrap.sh SOURCE_DIR}"
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
failures=0
ok() { echo "ok: $*"; }
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

mkdir -p "$dir/bin"
# dpkg-query -W -f=... PKG: installed when PKG is a line of $dir/installed.
cat >"$dir/bin/dpkg-query" <<'SH'
#!/usr/bin/env bash
pkg="${!#}"
grep -qx "$pkg" "$STATE/installed" && printf 'install ok installed' && exit 0
exit 1
SH
# apt-get install ... PKGS: recorded, with whether the policy-rc.d that keeps
# services from starting was there; the packages become installed.
cat >"$dir/bin/apt-get" <<'SH'
#!/usr/bin/env bash
[ "$1" = update ] && exit 0
echo "apt-get $*" >>"$STATE/calls"
if [ -x "$TT_BOOTSTRAP_POLICY_RC_D" ]; then
  "$TT_BOOTSTRAP_POLICY_RC_D" prometheus start; echo "policy-rc.d prometheus start: $?" >>"$STATE/calls"
fi
for a in "$@"; do case "$a" in -*|install) ;; *) echo "$a" >>"$STATE/installed" ;; esac; done
SH
cat >"$dir/bin/systemctl" <<'SH'
#!/usr/bin/env bash
echo "systemctl $*" >>"$STATE/calls"
[ "$1" = is-active ] && exit 3
exit 0
SH
printf '#!/bin/sh\necho 0\n' >"$dir/bin/id"
chmod +x "$dir/bin/"*

base="$(sed -n '/^packages=(/,/^)/p' "$src/scripts/bootstrap" | sed 's/#.*//' | tr -s ' ()' '\n' | grep -v '^packages=$' | grep -v '^$')"
run_bootstrap() {  # PURPOSE-ARGS...: output in $dir/out, status in $status
  : >"$dir/calls"
  set +e
  env PATH="$dir/bin:$PATH" STATE="$dir" TT_BOOTSTRAP_POLICY_RC_D="$dir/policy-rc.d" \
    TT_BOOTSTRAP_SYSTEMD_RUN="$dir/systemd-running" bash "$src/scripts/bootstrap" "$@" >"$dir/out" 2>&1
  status=$?
  set -e
}

# `run` with everything it needs: nothing installed, no test package asked for.
echo "$base" >"$dir/installed"
run_bootstrap
if [ "$status" = 0 ] && grep -q "all $(wc -l <<<"$base") packages present (for run)" "$dir/out" && [ ! -s "$dir/calls" ]; then
  ok "bootstrap (run): nothing to install when the build packages are there"
else
  fail "bootstrap (run) with its packages present: status $status, $(cat "$dir/out" "$dir/calls")"
fi

# `run` with one missing: that one, and no test package.
grep -vx cmake <<<"$base" >"$dir/installed"
run_bootstrap --for run
if [ "$status" = 0 ] && grep -q "^apt-get install .* cmake$" "$dir/calls" &&
   ! grep -Eq "prometheus( |$)|docker-compose|yamllint" "$dir/calls"; then
  ok "bootstrap --for run installs cmake only"
else
  fail "bootstrap --for run: status $status, $(cat "$dir/out" "$dir/calls")"
fi

# `test`: the test packages; prometheus's service neither starts nor stays enabled.
echo "$base" >"$dir/installed"
mkdir -p "$dir/systemd-running"
run_bootstrap --for test
install_line="$(grep '^apt-get install' "$dir/calls" || true)"
if [ "$status" = 0 ] && [[ "$install_line" == *" prometheus docker-compose yamllint" ]]; then
  ok "bootstrap --for test installs prometheus docker-compose yamllint"
else
  fail "bootstrap --for test: status $status, $(cat "$dir/out" "$dir/calls")"
fi
if grep -q "^policy-rc.d prometheus start: 101$" "$dir/calls" && [ ! -e "$dir/policy-rc.d" ]; then
  ok "no service starts while prometheus installs (policy-rc.d 101, removed after)"
else
  fail "policy-rc.d during the install: $(cat "$dir/calls"); left behind: $(ls "$dir/policy-rc.d" 2>&1)"
fi
if grep -q "^systemctl disable prometheus.service$" "$dir/calls" && grep -q "^systemctl stop prometheus.service$" "$dir/calls"; then
  ok "Debian's prometheus service is disabled and stopped"
else
  fail "prometheus service not disabled: $(cat "$dir/calls")"
fi

# A machine's own policy-rc.d is left alone.
printf '#!/bin/sh\nexit 0\n' >"$dir/policy-rc.d"
chmod +x "$dir/policy-rc.d"
echo "$base" >"$dir/installed"
run_bootstrap --for test
if [ "$status" = 0 ] && grep -q "^exit 0$" "$dir/policy-rc.d"; then
  ok "an existing policy-rc.d is kept"
else
  fail "existing policy-rc.d: status $status, $(cat "$dir/policy-rc.d" 2>&1)"
fi
rm -f "$dir/policy-rc.d"

# Everything there for test: no install, and no service touched.
run_bootstrap --for test
if [ "$status" = 0 ] && grep -q "packages present (for test)" "$dir/out" && ! grep -q "apt-get\|systemctl disable" "$dir/calls"; then
  ok "bootstrap --for test with everything present changes nothing"
else
  fail "bootstrap --for test, all present: status $status, $(cat "$dir/out" "$dir/calls")"
fi

run_bootstrap --for deploy
if [ "$status" = 2 ] && grep -q "usage: scripts/bootstrap \[--for run|test|bench\]" "$dir/out"; then
  ok "an unknown purpose is a usage error"
else
  fail "bootstrap --for deploy: status $status, $(cat "$dir/out")"
fi

# The Makefile asks for the right purpose (make -n runs nothing).
if command -v make >/dev/null; then
  run_cmds="$(make -n -C "$src" run BUILD_DIR="$dir/build" 2>&1)"
  test_cmds="$(make -n -C "$src" test BUILD_DIR="$dir/build" 2>&1)"
  if grep -q "scripts/bootstrap --for run" <<<"$run_cmds" && ! grep -q "bootstrap --for test" <<<"$run_cmds" &&
     grep -q "scripts/bootstrap --for test" <<<"$test_cmds"; then
    ok "make run bootstraps for run, make test for test"
  else
    fail "Makefile: make -n run: $run_cmds; make -n test: $test_cmds"
  fi
  if grep -qx "make test" "$src/.ci/run"; then ok ".ci/run runs make test"; else fail ".ci/run: $(cat "$src/.ci/run")"; fi
fi

[ "$failures" -eq 0 ] || { echo "$failures failure(s)"; exit 1; }
