#!/usr/bin/env bash
# The halo suite on ranks bound two per core, so that placement (docs/halo.md, Placement) moves
# subdomains off the rank order: it must pass, and at least one domain must have been placed
# (LOOM_DEBUG's "placement cost C, rank order R" without "(kept)", C < R).
#   check_placement.sh MPIEXEC-AND-BINDING-FLAGS... -- TEST-PROGRAM [ARGS...]
set -uo pipefail
launcher=()
while [[ $# -gt 0 && $1 != "--" ]]; do
  launcher+=("$1")
  shift
done
shift
output=$(LOOM_DEBUG=1 "${launcher[@]}" "$@" 2>&1)
rc=$?
fail() {
  echo "$output"
  echo "FAIL: $*"
  exit 1
}
[[ $rc -eq 0 ]] || fail "the suite exited with $rc"
placed=$(sed -n 's/.*halo node of rank [0-9]*: placement cost \([0-9]*\), rank order \([0-9]*\)$/\1 \2/p' \
  <<<"$output")
[[ -n "$placed" ]] || fail "no domain was placed off the rank order (ranks not bound two per core?)"
while read -r cost in_order; do
  ((cost < in_order)) || fail "a placement costs $cost, not less than the rank order's $in_order"
done <<<"$placed"
echo "placed off the rank order: $(wc -l <<<"$placed") domains; suite passed"
