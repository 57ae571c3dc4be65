#!/bin/bash
# Loom's and the host's per-call times (one job, alternate rounds) of MPI_Alltoall,
# MPI_Allgather and MPI_Neighbor_alltoall of one tiny vector element per peer, 1 to 256 ints,
# 2 ranks, both MPIs, two runs. Usage: bash run_tiny_derived.sh <build prefix> [calls]
set -eu
build=${1:?build dir prefix}
calls=${2:-5000}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
mpicc.openmpi -O2 -o "$tmp/t_ompi" "$here/tiny_derived.c"
mpicc.mpich -O2 -o "$tmp/t_mpich" "$here/tiny_derived.c"
for run in 1 2; do
  for ints in 1 4 16 64 256; do
    mpiexec.openmpi -n 2 -x LD_PRELOAD="$build/openmpi/interpose/libloom.so" "$tmp/t_ompi" \
      "$ints" "$calls" | sed "s/^/openmpi $run /"
    mpiexec.mpich -n 2 -env LD_PRELOAD "$build/mpich/interpose/libloom.so" "$tmp/t_mpich" \
      "$ints" "$calls" | sed "s/^/mpich $run /"
  done
done
rm -rf "$tmp"
