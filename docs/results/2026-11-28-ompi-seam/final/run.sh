#!/bin/bash
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
B=/work/main/build
for i in 1 2 3; do
  mpiexec -n 2 $B/openmpi/loom-bench pingpong --json final/pp-o-$i.json > final/pp-o-$i.txt 2>&1
  mpiexec.mpich -n 2 $B/mpich/loom-bench pingpong --json final/pp-m-$i.json > final/pp-m-$i.txt 2>&1
done
for i in 1 2; do for v in wait seam; do
  mpiexec -n 2 -x LD_LIBRARY_PATH=<library dir: before (f794757) or after> $B/openmpi/loom-bench halo --variants isend,alltoallw --json final/halo-$v-$i.json > final/halo-$v-$i.txt 2>&1
done; done
for i in 1 2; do
  mpiexec.mpich -n 2 $B/mpich/loom-bench app --json final/app-m-$i.json > final/app-m-$i.txt 2>&1
done
echo done > final/DONE
