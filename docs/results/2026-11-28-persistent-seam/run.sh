#!/bin/bash
# Persistent ping-pong (ppp.c), Open MPI: native, Loom before (contiguous wire) and after
# (seamed wire), alternated; one-way us, best of 5 repetitions.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
P=${PPP:-/tmp/ppp}
for round in 1 2 3; do
  for shape in "512 1 2 2000" "16 32 64 2000" "8192 1 2 400" "256 32 64 400" "131072 1 2 40" "4096 32 64 40"; do
    set -- $shape
    line="round $round blocks $1 x $(( $2 * 8 )) B, $(( $1 * $2 * 8 )) B:"
    for v in native old new; do
      if [ $v = native ]; then t=$(mpiexec -n 2 $P $1 $2 $3 $4 5)
      else t=$(mpiexec -n 2 -x LD_PRELOAD=/tmp/ab/$v/libloom.so $P $1 $2 $3 $4 5); fi
      line="$line $v $t"
    done
    echo "$line"
  done
done
