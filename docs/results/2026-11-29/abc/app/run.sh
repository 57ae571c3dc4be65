#!/bin/bash
# loom-bench app, before (A: confirm 0.8/20us + part-check fix) and after (C: + MPICH host warm-up in the wait + trimmed trial test), alternated
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
cd /work/main
for i in 1 2; do
  for v in A C; do
    mpiexec.mpich -n 2 -env LD_LIBRARY_PATH /tmp/lib2$v-m build/mpich/loom-bench app > /tmp/abc/app/m2-$v-$i.txt 2>&1
    mpiexec -n 2 -x LD_LIBRARY_PATH=/tmp/lib2$v-o build/openmpi/loom-bench app > /tmp/abc/app/o2-$v-$i.txt 2>&1
  done
done
echo done > /tmp/abc/app/finished
