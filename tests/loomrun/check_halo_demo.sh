#!/usr/bin/env bash
# halo3d (examples/halo3d.c, a plain MPI program) must print the same checksum natively and
# under loomrun, with Loom loaded in every rank. Its checksum does not depend on how the grid
# is split, so every rank count and both exchange variants must agree too.
#   check_halo_demo.sh LOOMRUN MPIEXEC HALO3D RANKS...      e.g. ... build/openmpi/halo3d 2 4
set -euo pipefail
loomrun=$1 mpiexec=$2 program=$3
shift 3
rank_counts=("${@:-2}")
problem=(-n 36 -i 3)  # small: 4 ranks share 2 cores in CI
stats_file=$(mktemp)
trap 'rm -f "$stats_file"' EXIT
reference=""
fail() {
  echo "FAIL: $*"
  exit 1
}
checksum_of() { sed -n 's/^checksum \([0-9a-f]\{16\}\)$/\1/p' <<<"$1"; }

for mode in isend alltoallw; do
  for ranks in "${rank_counts[@]}"; do
    native=$("$mpiexec" -n "$ranks" "$program" "${problem[@]}" -m "$mode")
    loom=$(LOOM_STATS=1 "$loomrun" -n "$ranks" "$program" "${problem[@]}" -m "$mode" \
      2>"$stats_file")
    native_sum=$(checksum_of "$native")
    loom_sum=$(checksum_of "$loom")
    echo "$mode, $ranks ranks: native checksum ${native_sum:-none}, loom checksum ${loom_sum:-none}"
    grep -E '^\[loom\] rank [0-9]+ (p2p|collectives)' "$stats_file" || true
    [[ -n "$native_sum" ]] || fail "no checksum in the native output: $native"
    [[ -n "$loom_sum" ]] || fail "no checksum under loomrun: $loom"
    [[ "$native_sum" == "$loom_sum" ]] || fail "checksums differ (native vs loomrun)"
    loaded=$(grep -oE '^\[loom\] rank [0-9]+' "$stats_file" | sort -u | wc -l)
    [[ "$loaded" == "$ranks" ]] || fail "Loom reported from $loaded of $ranks ranks"
    reference=${reference:-$native_sum}
    [[ "$native_sum" == "$reference" ]] || fail "checksum $native_sum != $reference of the first run"
  done
done
echo "PASS: identical checksums natively and under loomrun (ranks ${rank_counts[*]}, isend and alltoallw)"
