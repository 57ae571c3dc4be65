#!/bin/bash
# loom-bench app (MPICH): before (new: f694f7a) and after (w: MPICH's weak ground from 4 KiB), alternated
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
cd /work/main
for i in 1 2 3; do
  for v in new w; do
    mpiexec.mpich -n 2 -env LD_LIBRARY_PATH /tmp/lib$v-m -env LOOM_STATS 1 build/mpich/loom-bench app --variants steady,recreate > /tmp/ab4/m-$v-$i.txt 2>&1
  done
done
echo done > /tmp/ab4/finished
