#!/bin/bash
# plain_calls.c on 2 ranks, both MPIs, for each library given (a build prefix holding
# <mpi>/interpose/libloom.so), `runs` times each, alternating the libraries run by run.
# Appends to plain_calls.txt: "<label> <mpi> <run> <call> <ints> <loom us> <host us> <host/loom>".
# Usage: bash run_plain_calls.sh runs ints label=prefix [label=prefix ...]
set -eu
runs=${1:?runs}
ints=${2:?ints}
shift 2
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
mpicc.openmpi -O2 -o "$tmp/t_openmpi" "$here/plain_calls.c"
mpicc.mpich -O2 -o "$tmp/t_mpich" "$here/plain_calls.c"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
for run in $(seq "$runs"); do
  for labelled in "$@"; do
    label=${labelled%%=*}
    build=${labelled#*=}
    mpiexec.openmpi -n 2 -x LD_PRELOAD="$build/openmpi/interpose/libloom.so" "$tmp/t_openmpi" \
      "$ints" 20000 | sed "s/^/$label openmpi $run /" >> "$here/plain_calls.txt"
    mpiexec.mpich -n 2 -env LD_PRELOAD "$build/mpich/interpose/libloom.so" "$tmp/t_mpich" \
      "$ints" 20000 | sed "s/^/$label mpich $run /" >> "$here/plain_calls.txt"
  done
done
rm -rf "$tmp"
