#!/bin/bash
# A/B/C of online-trial changes, pingpong, no calibration. A: 80b... (confirm 0.8/20us), B: A + MPICH host warm-up in the wait, C: B + trimmed test.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
cd /work/main
for i in 1 2; do
  for v in A B C; do
    mpiexec.mpich -n 2 -env LD_LIBRARY_PATH /tmp/lib$v -env LOOM_STATS 1 build/mpich/loom-bench pingpong > /tmp/abc/m-$v-$i.txt 2>&1
  done
  for v in OA OC; do
    mpiexec -n 2 -x LD_LIBRARY_PATH=/tmp/lib$v -x LOOM_STATS=1 build/openmpi/loom-bench pingpong > /tmp/abc/o-$v-$i.txt 2>&1
  done
done
echo done > /tmp/abc/finished
