# shellcheck shell=bash
# Sourced with "$@" by the deploy tests that run the tensortier binary: their
# arguments TENSORTIER_BINARY SOURCE_DIR as $bin (absolute: the tests cd
# around) and $src. No binary: exit 77, which CTest reads as skipped.
usage="usage: $(basename "$0") TENSORTIER_BINARY SOURCE_DIR"
bin="${1:?$usage}"
# shellcheck disable=SC2034  # read by the scripts that source this one
src="${2:?$usage}"
[ -x "$bin" ] || { echo "SKIP: no tensortier binary at $bin"; exit 77; }
bin="$(readlink -f "$bin")"
