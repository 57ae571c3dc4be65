#!/bin/bash
# The method model's advantage requirement, 1.2 against 1.05, with one calibration per MPI.
# Run with model/model.cpp reading a temporary override (not committed):
#   static const double adv = std::getenv("LOOM_X_ADV") ? std::atof(std::getenv("LOOM_X_ADV"))
#                                                      : kPackAdvantageRequired;
set -e
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
cal=/tmp/cal
mpiexec -n 2 -x LOOM_CACHE_DIR=$cal build/openmpi/loom-bench measure
mpiexec.mpich -n 2 -env LOOM_CACHE_DIR $cal build/mpich/loom-bench measure
for i in 1 2 3 4 5 6; do for a in 1.2 1.05; do
  mpiexec -n 2 -x LOOM_CACHE_DIR=$cal -x LOOM_X_ADV=$a build/openmpi/loom-bench pingpong > o-$a-$i.txt
done; done
for i in 1 2 3; do for a in 1.05 1.2; do
  mpiexec.mpich -n 2 -env LOOM_CACHE_DIR $cal -env LOOM_X_ADV $a build/mpich/loom-bench pingpong > m-$a-$i.txt
done; done
for i in 1 2; do for a in 1.05 1.2; do
  mpiexec -n 2 -x LOOM_CACHE_DIR=$cal -x LOOM_X_ADV=$a build/openmpi/loom-bench app --variants steady,recreate > app-o-$a-$i.txt
  mpiexec.mpich -n 2 -env LOOM_CACHE_DIR $cal -env LOOM_X_ADV $a build/mpich/loom-bench app --variants steady,recreate > app-m-$a-$i.txt
done; done
