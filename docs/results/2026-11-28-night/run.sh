#!/bin/bash
# Night runs at e7c06a9 (2026-11-28): loom-bench app twice more on MPICH (the third run is
# ../2026-11-28-evening/app-m-1.txt) and once on Open MPI. Run from this folder.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
B=/work/main/build
for i in 2 3; do
  mpiexec.mpich -n 2 $B/mpich/loom-bench app --json app-m-$i.json > app-m-$i.txt 2>&1
done
mpiexec -n 2 $B/openmpi/loom-bench app --json app-o-3.json > app-o-3.txt 2>&1
echo done > DONE
# then (pack.sh): loom-bench pack once per MPI
