#!/usr/bin/env bash
# particle_exchange (examples/particle_exchange.c, a plain MPI program) must print the same
# checksum natively and under loomrun, with lazy planning (its rebuilt types stay with the host)
# and with LOOM_PLAN=eager (Loom packs its absolute-address structs), and Loom must count every
# message it sent on some route.
#   check_particle.sh LOOMRUN MPIEXEC PARTICLE_EXCHANGE
set -euo pipefail
loomrun=$1 mpiexec=$2 program=$3
atoms=300 steps=4 trips=5
stats_file=$(mktemp)
trap 'rm -f "$stats_file"' EXIT
fail() {
  echo "FAIL: $*"
  exit 1
}
checksum_of() { sed -n 's/.*checksum \([-+0-9.e]*\)$/\1/p' <<<"$1"; }

native=$("$mpiexec" -n 2 "$program" $atoms $steps $trips)
native_sum=$(checksum_of "$native")
[[ -n "$native_sum" ]] || fail "no checksum in the native output: $native"
for plan in lazy eager; do
  loom=$(LOOM_PLAN=$plan LOOM_STATS=1 "$loomrun" -n 2 "$program" $atoms $steps $trips 2>"$stats_file")
  loom_sum=$(checksum_of "$loom")
  echo "LOOM_PLAN=$plan: native checksum $native_sum, loom checksum ${loom_sum:-none}"
  [[ "$loom_sum" == "$native_sum" ]] || fail "checksums differ (native vs loomrun, LOOM_PLAN=$plan)"
  # Each rank sends one message per round trip: steps x trips, summed over the send routes.
  for rank in 0 1; do
    line=$(grep -E "^\[loom\] rank $rank p2p:" "$stats_file") || fail "no p2p line from rank $rank"
    sent=$(grep -oE 'send packed=[0-9]+ host=[0-9]+ host \(not planned yet\)=[0-9]+ plain=[0-9]+' \
      <<<"$line" | grep -oE '[0-9]+' | awk '{ s += $1 } END { print s + 0 }')
    [[ "$sent" == $((steps * trips)) ]] ||
      fail "rank $rank counted $sent sends on its routes, not $((steps * trips)) (LOOM_PLAN=$plan): $line"
  done
done
echo "PASS: identical checksums natively and under loomrun (lazy and eager planning), every send counted"
