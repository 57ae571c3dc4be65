#!/bin/bash
# Final measurements at e397c26: loom-bench app and pingpong, three runs per MPI, alternating MPIs, no calibration
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
cd /work/main
for i in 1 2 3; do
  mpiexec.mpich -n 2 build/mpich/loom-bench app --json /tmp/fin/app-m-$i.json > /tmp/fin/app-m-$i.txt 2>&1
  mpiexec.openmpi -n 2 build/openmpi/loom-bench app --json /tmp/fin/app-o-$i.json > /tmp/fin/app-o-$i.txt 2>&1
done
for i in 1 2 3; do
  mpiexec.mpich -n 2 build/mpich/loom-bench pingpong > /tmp/fin/pp-m-$i.txt 2>&1
  mpiexec.openmpi -n 2 build/openmpi/loom-bench pingpong > /tmp/fin/pp-o-$i.txt 2>&1
done
echo done > /tmp/fin/finished
