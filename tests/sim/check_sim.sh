#!/usr/bin/env bash
# The SMPI variant against the host MPIs (docs/projection.md, "Tests"): 16 simulated ranks (4
# nodes of 4 on a generated fat tree) run a halo exchange with Loom's halo library and a
# compressed all-to-all; the same programs built against each host MPI run on 16 real ranks in
# 4 virtual nodes (LOOM_RANKS_PER_NODE=4); every rank's resulting bytes must be identical, file
# for file. halo3d's checksum is compared too.
#   tests/sim/check_sim.sh SMPI_BUILD HOST_BUILD...      prints 'N passed, N failed'
set -euo pipefail
(($# >= 2)) || {
  echo "usage: tests/sim/check_sim.sh SMPI_BUILD HOST_BUILD..." >&2
  exit 2
}
root=$(cd "$(dirname "$0")/../.." && pwd)
smpi=$(cd "$1" && pwd)
shift
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 "$root/sim/make_platform.py" --nodes 4 --ranks-per-node 4 --topology fattree --gbps 100 \
  --out "$tmp/platform"
cfg=(--cfg=smpi/simulate-computation:no --cfg=smpi/cpu-threshold:0 --cfg=smpi/host-speed:1Gf
  --log=root.thres:critical)
halo=(--n 6 --radius 2 --fields 2 --iterations 2 --warmup 0 --variant library)
a2a=(--count 4096 --iterations 1 --warmup 0 --variant compressed)
# Compression forced (a link of 1 Mbit/s), a codec with a bounded error: the decoded bytes are
# the same wherever the same codec decodes the same chunks.
export LOOM_COMPRESS=zfp:rate=16 LOOM_LINK_MBPS=1
passed=0 failed=0
check() {  # check NAME COMMAND...: counts the command's success
  if "${@:2}"; then
    echo "ok   $1"
    passed=$((passed + 1))
  else
    echo "FAIL $1"
    failed=$((failed + 1))
  fi
}
same_files() {  # same_files DIR1 DIR2: 16 files, byte for byte
  [[ $(find "$1" -type f | wc -l) == 16 ]] && diff -r "$1" "$2" >/dev/null
}
same_checksum() {
  [[ -n $(grep checksum "$1") && $(grep checksum "$1") == $(grep checksum "$2") ]]
}
simulate() {  # simulate PROGRAM ARGS... (output on stdout)
  (cd "$tmp" && smpirun -np 16 -platform platform.xml -hostfile platform.hosts "$smpi/$1" "${cfg[@]}" \
    "${@:2}")
}
mkdir -p "$tmp/sim-halo" "$tmp/sim-a2a"
simulate loom-sim-halo "${halo[@]}" --dump "$tmp/sim-halo" >"$tmp/sim-halo.txt"
simulate loom-sim-alltoall "${a2a[@]}" --dump "$tmp/sim-a2a" >"$tmp/sim-a2a.txt"
simulate halo3d -n 24 -r 2 -f 2 -i 3 >"$tmp/sim-halo3d.txt"
check "simulated halo exchange fills every ghost cell" grep -q "wrong_cells=0" "$tmp/sim-halo.txt"
check "simulated all-to-all runs the compressed exchange" grep -q "path=compressed" "$tmp/sim-a2a.txt"
for build in "$@"; do
  build=$(cd "$build" && pwd)
  mpi=$(sed -n 's/^LOOM_MPI:STRING=//p' "$build/CMakeCache.txt")
  mkdir -p "$tmp/$mpi-halo" "$tmp/$mpi-a2a"
  LOOM_RANKS_PER_NODE=4 "mpiexec.$mpi" -n 16 "$build/loom-sim-halo" "${halo[@]}" \
    --dump "$tmp/$mpi-halo" >/dev/null
  check "halo exchange: SMPI bytes == $mpi bytes (16 ranks)" same_files "$tmp/sim-halo" "$tmp/$mpi-halo"
  LOOM_RANKS_PER_NODE=4 "mpiexec.$mpi" -n 16 "$build/loom-sim-alltoall" "${a2a[@]}" \
    --dump "$tmp/$mpi-a2a" >/dev/null
  check "compressed all-to-all: SMPI bytes == $mpi bytes (16 ranks)" same_files "$tmp/sim-a2a" "$tmp/$mpi-a2a"
  "mpiexec.$mpi" -n 16 "$build/halo3d" -n 24 -r 2 -f 2 -i 3 >"$tmp/$mpi-halo3d.txt"
  check "halo3d: SMPI checksum == $mpi checksum" same_checksum "$tmp/sim-halo3d.txt" "$tmp/$mpi-halo3d.txt"
done
echo "$passed passed, $failed failed"
((failed == 0))
