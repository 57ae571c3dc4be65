#!/bin/bash
# Blocking MPI_Alltoall(v) of one strided element a peer (sparse_alltoall.c: n doubles `stride`
# apart), 64 KiB to 4 MiB packed a peer, strides 2-16, 2 ranks, both MPIs, Loom's call and the
# host's alternating in one job. Output sparse_alltoall.txt:
# "<mpi> <KiB a peer> <call> <n> <stride> <loom us> <host us> <same|DIFFERENT>".
# Usage: bash run_sparse_alltoall.sh <build prefix>
set -eu
build=${1:?build dir prefix}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
mpicc.openmpi -O2 -o "$tmp/t_openmpi" "$here/sparse_alltoall.c"
mpicc.mpich -O2 -o "$tmp/t_mpich" "$here/sparse_alltoall.c"
: > "$here/sparse_alltoall.txt"
for stride in 2 4 8 16; do
  for kib in 64 256 1024 4096; do
    n=$((kib * 1024 / 8))
    calls=$((kib >= 1024 ? 5 : 20))
    mpiexec.openmpi -n 2 -x LD_PRELOAD="$build/openmpi/interpose/libloom.so" "$tmp/t_openmpi" \
      "$n" "$stride" "$calls" | sed "s/^/openmpi $kib /" >> "$here/sparse_alltoall.txt"
    mpiexec.mpich -n 2 -env LD_PRELOAD "$build/mpich/interpose/libloom.so" "$tmp/t_mpich" \
      "$n" "$stride" "$calls" | sed "s/^/mpich $kib /" >> "$here/sparse_alltoall.txt"
  done
done
rm -rf "$tmp"
