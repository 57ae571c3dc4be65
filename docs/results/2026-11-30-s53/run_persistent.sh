#!/bin/bash
# Native vs Loom, persistent MPI_Alltoallv of a strided vector type (persistent_alltoallv.c),
# 2 ranks, both MPIs, three alternated rounds per case. Usage: run_persistent.sh LOOM_BUILD_ROOT
set -e
root=${1:-build}
here=$(dirname "$0")
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none
mpicc.mpich -O2 "$here/persistent_alltoallv.c" -o /tmp/persistent_alltoallv.mpich
mpicc.openmpi -O2 "$here/persistent_alltoallv.c" -o /tmp/persistent_alltoallv.openmpi
for mpi in openmpi mpich; do
  lib=$(realpath "$root/$mpi/interpose/libloom.so")
  for args in "64 4 20 5" "1024 2 20 5" "16384 2 20 5" "131072 2 10 5" "131072 8 10 5" "1024 2 3 5"; do
    for round in 1 2 3; do
      if [ $mpi = mpich ]; then
        native=$(mpiexec.mpich -n 2 /tmp/persistent_alltoallv.mpich $args)
        loom=$(mpiexec.mpich -n 2 -env LD_PRELOAD "$lib" /tmp/persistent_alltoallv.mpich $args)
      else
        native=$(mpiexec.openmpi -n 2 /tmp/persistent_alltoallv.openmpi $args)
        loom=$(mpiexec.openmpi -n 2 -x LD_PRELOAD="$lib" /tmp/persistent_alltoallv.openmpi $args)
      fi
      echo "$mpi round=$round native: $native"
      echo "$mpi round=$round loom:   $loom"
    done
  done
done
