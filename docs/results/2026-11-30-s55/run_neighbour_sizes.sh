#!/bin/bash
# Per-call times of neighbourhood all-to-alls, 4 B to 4 MiB a peer, 2 ranks, both MPIs: each job
# times Loom's call (MPI_) and the host's (PMPI_) in alternate rounds, under Loom's default
# (LOOM_SHARED_COLLECTIVES unset: the window where the ranks agree it pays), with the window for
# every call (=1) and without it (=0); `native` runs without Loom, both columns the host.
# Usage: bash run_neighbour_sizes.sh <build prefix> [line|graph] [alltoall|alltoallv|alltoallw]
#        [runs] [bytes|vector]
set -eu
build=${1:?build dir prefix}
topo=${2:-line}
call=${3:-alltoall}
runs=${4:-2}
shape=${5:-bytes}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
mpicc.openmpi -O2 -o "$tmp/t_ompi" "$here/neighbour_sizes.c"
mpicc.mpich -O2 -o "$tmp/t_mpich" "$here/neighbour_sizes.c"
for run in $(seq "$runs"); do
  for mode in native auto 1 0; do
    if [[ $mode == native ]]; then
      mpiexec.openmpi -n 2 "$tmp/t_ompi" "$topo" "$call" "$shape" | sed "s/^/openmpi $mode $run /"
      mpiexec.mpich -n 2 "$tmp/t_mpich" "$topo" "$call" "$shape" | sed "s/^/mpich $mode $run /"
      continue
    fi
    mpiexec.openmpi -n 2 -x LOOM_SHARED_COLLECTIVES=$mode \
      -x LD_PRELOAD="$build/openmpi/interpose/libloom.so" "$tmp/t_ompi" "$topo" "$call" "$shape" |
      sed "s/^/openmpi $mode $run /"
    mpiexec.mpich -n 2 -env LOOM_SHARED_COLLECTIVES $mode \
      -env LD_PRELOAD "$build/mpich/interpose/libloom.so" "$tmp/t_mpich" "$topo" "$call" \
      "$shape" | sed "s/^/mpich $mode $run /"
  done
done
rm -rf "$tmp"
