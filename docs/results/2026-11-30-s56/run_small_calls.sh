#!/bin/bash
# Small collective calls of tiny derived types, 2 ranks, both MPIs, two runs each:
#   small_calls.txt   Loom's call and the host's in alternate rounds of one job
#                     (../2026-11-30-s55/tiny_derived.c): "<mpi> <run> <call> <ints> <loom us> <host us>"
#   host_floor.txt    the host alone, typed against bytes (host_typed_vs_bytes.c):
#                     "<mpi> <call> <ints> <typed us> <bytes us> <bytes+host pack us>"
# Usage: bash run_small_calls.sh <build prefix> [calls]
set -eu
build=${1:?build dir prefix}
calls=${2:-5000}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
for mpi in openmpi mpich; do
  mpicc.$mpi -O2 -o "$tmp/loom_$mpi" "$here/../2026-11-30-s55/tiny_derived.c"
  mpicc.$mpi -O2 -o "$tmp/floor_$mpi" "$here/host_typed_vs_bytes.c"
done
run() {  # mpi, program, args...
  local mpi=$1 program=$2
  shift 2
  if [ "$mpi" = openmpi ]; then
    mpiexec.openmpi -n 2 -x LD_PRELOAD="$build/openmpi/interpose/libloom.so" "$program" "$@"
  else
    mpiexec.mpich -n 2 -env LD_PRELOAD "$build/mpich/interpose/libloom.so" "$program" "$@"
  fi
}
: > "$here/small_calls.txt"
: > "$here/host_floor.txt"
for run_number in 1 2; do
  for ints in 1 4 16 64 256; do
    for mpi in openmpi mpich; do
      run $mpi "$tmp/loom_$mpi" "$ints" "$calls" | sed "s/^/$mpi $run_number /" >> "$here/small_calls.txt"
    done
  done
done
for ints in 1 4 16 64; do
  mpiexec.openmpi -n 2 "$tmp/floor_openmpi" "$ints" "$calls" | sed "s/^/openmpi /" >> "$here/host_floor.txt"
  mpiexec.mpich -n 2 "$tmp/floor_mpich" "$ints" "$calls" 2>/dev/null | sed "s/^/mpich /" >> "$here/host_floor.txt"
done
rm -rf "$tmp"
