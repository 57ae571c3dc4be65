#!/bin/bash
# A/B: old = 658685c's libloom.so, new = 3e373da's (sends keep following their receives through
# confirmations); same loom-bench. python3 ../trial-cut/compare.py <dir> [x]
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
cd /work/main
for i in 1 2; do for v in new old; do
  mpiexec.mpich -n 2 -env LD_LIBRARY_PATH /tmp/ab4/$v-m build/mpich/loom-bench app --variants steady,recreate --json /tmp/ab4/app-m-$v-$i.json > /tmp/ab4/app-m-$v-$i.txt 2>&1
  mpiexec.openmpi -n 2 -x LD_LIBRARY_PATH=/tmp/ab4/$v-o build/openmpi/loom-bench app --variants steady,recreate --json /tmp/ab4/app-o-$v-$i.json > /tmp/ab4/app-o-$v-$i.txt 2>&1
done; done
echo done > /tmp/ab4/finished
