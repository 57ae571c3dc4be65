#!/bin/bash
# A/B: old = 258aa56's libloom.so, new = this commit's (the host's warm-up stops where its first
# four messages find the host 3x behind); same loom-bench. python3 ../trial-cut/compare.py <dir> [x]
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
cd /work/main
for i in 1 2 3; do for v in new old; do
  mpiexec.mpich -n 2 -env LD_LIBRARY_PATH /tmp/ab5/$v-m build/mpich/loom-bench app --variants steady,recreate --json /tmp/ab5/app-m-$v-$i.json > /tmp/ab5/app-m-$v-$i.txt 2>&1
  mpiexec.openmpi -n 2 -x LD_LIBRARY_PATH=/tmp/ab5/$v-o build/openmpi/loom-bench app --variants steady,recreate --json /tmp/ab5/app-o-$v-$i.json > /tmp/ab5/app-o-$v-$i.txt 2>&1
done; done
echo done > /tmp/ab5/finished
