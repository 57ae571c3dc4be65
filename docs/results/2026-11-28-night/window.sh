#!/bin/bash
# The window variant with trials on (default) and off (LOOM_ONLINE=0), alternated three times
# per MPI, at e7c06a9 (2026-11-28 night). Run from this folder.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
B=/work/main/build
for i in 1 2 3; do
  for online in 1 0; do
    echo "== Open MPI run $i LOOM_ONLINE=$online"
    mpiexec -n 2 -x LOOM_ONLINE=$online $B/openmpi/loom-bench app --variants window | grep -E "^window +vec"
    echo "== MPICH run $i LOOM_ONLINE=$online"
    mpiexec.mpich -n 2 -env LOOM_ONLINE $online $B/mpich/loom-bench app --variants window | grep -E "^window +vec"
  done
done
