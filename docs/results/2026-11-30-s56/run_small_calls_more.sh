#!/bin/bash
# small_calls_more.c, 2 ranks, three runs per MPI: MPI_INT (passed inline) and a vector of 1, 4
# and 16 ints one every two (one int: a one-run element), Loom's call and the host's alternating
# in one job. Output small_calls_more.txt:
# "<mpi> <run> <plain|vector> <call> <ints> <loom us> <host us>".
# Usage: bash run_small_calls_more.sh <build prefix> [calls]
set -eu
build=${1:?build dir prefix}
calls=${2:-20000}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
mpicc.openmpi -O2 -o "$tmp/t_openmpi" "$here/small_calls_more.c"
mpicc.mpich -O2 -o "$tmp/t_mpich" "$here/small_calls_more.c"
: > "$here/small_calls_more.txt"
for run in 1 2 3; do
  for kind_ints in "plain 1" "vector 1" "vector 4" "vector 16"; do
    set -- $kind_ints
    mpiexec.openmpi -n 2 -x LD_PRELOAD="$build/openmpi/interpose/libloom.so" "$tmp/t_openmpi" \
      "$2" "$calls" "$1" | sed "s/^/openmpi $run $1 /" >> "$here/small_calls_more.txt"
    mpiexec.mpich -n 2 -env LD_PRELOAD "$build/mpich/interpose/libloom.so" "$tmp/t_mpich" \
      "$2" "$calls" "$1" | sed "s/^/mpich $run $1 /" >> "$here/small_calls_more.txt"
  done
done
rm -rf "$tmp"
