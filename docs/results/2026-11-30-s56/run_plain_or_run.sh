#!/bin/bash
# One int a peer, 2 ranks, three runs per MPI: MPI_INT (passed inline) against one int in an
# 8-byte extent (plain_or_run.c), Loom's call and the host's alternating in one job.
# Output plain_or_run.txt: "<mpi> <run> <plain|run> <call> 1 <loom us> <host us>".
# Usage: bash run_plain_or_run.sh <build prefix> [calls]
set -eu
build=${1:?build dir prefix}
calls=${2:-20000}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
mpicc.openmpi -O2 -o "$tmp/t_openmpi" "$here/plain_or_run.c"
mpicc.mpich -O2 -o "$tmp/t_mpich" "$here/plain_or_run.c"
: > "$here/plain_or_run.txt"
for run in 1 2 3; do
  for element in plain run; do
    mpiexec.openmpi -n 2 -x LD_PRELOAD="$build/openmpi/interpose/libloom.so" "$tmp/t_openmpi" \
      1 "$calls" "$element" | sed "s/^/openmpi $run $element /" >> "$here/plain_or_run.txt"
    mpiexec.mpich -n 2 -env LD_PRELOAD "$build/mpich/interpose/libloom.so" "$tmp/t_mpich" \
      1 "$calls" "$element" | sed "s/^/mpich $run $element /" >> "$here/plain_or_run.txt"
  done
done
rm -rf "$tmp"
