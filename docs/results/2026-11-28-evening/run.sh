#!/bin/bash
# Final runs at the evening's head (2026-11-28): loom-bench pingpong three times on Open MPI,
# loom-bench app twice on Open MPI and once on MPICH. Run from this folder.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
B=/work/main/build
for i in 1 2 3; do
  mpiexec -n 2 $B/openmpi/loom-bench pingpong --json pp-o-$i.json > pp-o-$i.txt 2>&1
done
for i in 1 2; do
  mpiexec -n 2 $B/openmpi/loom-bench app --json app-o-$i.json > app-o-$i.txt 2>&1
done
mpiexec.mpich -n 2 $B/mpich/loom-bench app --json app-m-1.json > app-m-1.txt 2>&1
echo done > DONE
