#!/bin/bash
# A/B: old = d16ef2c's libloom.so, new = this commit's (challengers far behind ruled out, blocking
# sends' rounds concluded at the next post); same loom-bench. python3 compare.py <dir> [x]
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
cd /work/main
for i in 1 2 3; do for v in new old; do
  mpiexec.mpich -n 2 -env LD_LIBRARY_PATH /tmp/ab2/$v-m build/mpich/loom-bench app --variants steady,recreate --json /tmp/ab2/app-m-$v-$i.json > /tmp/ab2/app-m-$v-$i.txt 2>&1
  mpiexec.openmpi -n 2 -x LD_LIBRARY_PATH=/tmp/ab2/$v-o build/openmpi/loom-bench app --variants steady,recreate --json /tmp/ab2/app-o-$v-$i.json > /tmp/ab2/app-o-$v-$i.txt 2>&1
done; done
echo done > /tmp/ab2/finished
