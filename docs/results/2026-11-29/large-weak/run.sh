#!/bin/bash
# loom-bench app, before (old: 93bf884, /tmp/libold-*) and after (new: rule's packing of >=128 KiB messages on weak ground), alternated
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
cd /work/main
for i in 1 2; do
  for v in old new; do
    mpiexec.mpich -n 2 -env LD_LIBRARY_PATH /tmp/lib$v-m build/mpich/loom-bench app --variants steady,recreate > /tmp/large-weak/m-$v-$i.txt 2>&1
    mpiexec.openmpi -n 2 -x LD_LIBRARY_PATH=/tmp/lib$v-o build/openmpi/loom-bench app --variants steady,recreate > /tmp/large-weak/o-$v-$i.txt 2>&1
  done
done
echo done > /tmp/large-weak/finished
