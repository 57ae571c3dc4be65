#!/usr/bin/env bash
# halo3d with its reorder option (examples/halo3d.c -o graph|cart) must print the native checksum
# under loomrun on virtual nodes (LOOM_RANKS_PER_NODE), whether Loom renumbers the ranks or keeps
# their numbers, and LOOM_STATS must report the inside-node share of each reordered communicator.
# On 8 ranks in 2x2x2 the host's numbering is already optimal (kept); on 12 ranks in 3x2x2 on
# nodes of 3 Loom's is better (renumbered).
#   check_halo_reorder.sh LOOMRUN MPIEXEC HALO3D
set -euo pipefail
loomrun=$1 mpiexec=$2 program=$3
problem=(-n 24 -i 2)  # small: up to 12 ranks share 2 cores in CI
stats_file=$(mktemp)
trap 'rm -f "$stats_file"' EXIT
fail() {
  echo "FAIL: $*"
  exit 1
}
checksum_of() { sed -n 's/^checksum \([0-9a-f]\{16\}\)$/\1/p' <<<"$1"; }

# The checksum does not depend on the rank count: one native run is the reference for all.
native=$("$mpiexec" -n 8 "$program" "${problem[@]}")
native_sum=$(checksum_of "$native")
[[ -n "$native_sum" ]] || fail "no checksum in the native output: $native"
# ranks per_node reorder mode expected-word
for run in "8 2 graph isend kept" "8 4 cart alltoallw kept" "12 3 graph isend renumbered"; do
  read -r ranks per_node reorder mode expected <<<"$run"
  loom=$(LOOM_STATS=1 LOOM_RANKS_PER_NODE=$per_node "$loomrun" -n "$ranks" "$program" \
    "${problem[@]}" -o "$reorder" -m "$mode" 2>"$stats_file")
  loom_sum=$(checksum_of "$loom")
  line=$(grep -E '^\[loom\] rank 0 reorder:' "$stats_file" || true)
  echo "$ranks ranks on nodes of $per_node, -o $reorder -m $mode: native (8 ranks) $native_sum, loom ${loom_sum:-none}"
  echo "  $line"
  [[ "$native_sum" == "$loom_sum" ]] || fail "checksums differ (native vs loomrun)"
  [[ "$line" == *" $expected"* ]] || fail "expected the communicator $expected: $line"
done
echo "PASS: halo3d reordered under loomrun gives the native checksum (8 and 12 ranks, graph and cart)"
