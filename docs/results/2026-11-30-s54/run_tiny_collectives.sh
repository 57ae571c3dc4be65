#!/bin/bash
# Native and Loom per-call times of collectives of one MPI_INT per peer, 2 ranks, both MPIs,
# three alternated runs each. Usage: bash run_tiny_collectives.sh <build prefix> [calls]
set -eu
build=${1:?build dir prefix}
calls=${2:-20000}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
mpicc.openmpi -O2 -o "$tmp/t_ompi" "$here/tiny_collectives.c"
mpicc.mpich -O2 -o "$tmp/t_mpich" "$here/tiny_collectives.c"
for run in 1 2 3; do
  mpiexec.openmpi -n 2 "$tmp/t_ompi" "$calls" | sed "s/^/openmpi native $run /"
  mpiexec.openmpi -n 2 -x LD_PRELOAD="$build/openmpi/interpose/libloom.so" "$tmp/t_ompi" \
    "$calls" | sed "s/^/openmpi loom $run /"
  mpiexec.mpich -n 2 "$tmp/t_mpich" "$calls" | sed "s/^/mpich native $run /"
  mpiexec.mpich -n 2 -env LD_PRELOAD "$build/mpich/interpose/libloom.so" "$tmp/t_mpich" \
    "$calls" | sed "s/^/mpich loom $run /"
done
rm -rf "$tmp"
