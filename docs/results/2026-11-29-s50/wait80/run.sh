#!/bin/bash
# A/B of the app corpus: old = 8dc6efc's libloom.so (copied to /tmp/fa-o, /tmp/fa-m), new = 8dc6efc with
# kNoPredictionWait 80 (not kept: docs/app-mode.md); the same loom-bench, the library chosen through LD_LIBRARY_PATH, alternated.
# Usage: run.sh o|m N (pairs); summary: python3 docs/results/2026-11-29-s50/compare.py DIR -v
D=$(dirname "$0")
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none
for i in $(seq 1 "${2:-3}"); do
  if [ "$1" = o ]; then
    mpiexec.openmpi -n 2 -x LD_LIBRARY_PATH=/tmp/fa-o build/openmpi/loom-bench app --variants steady,recreate --json $D/app-o-old-$i.json > $D/app-o-old-$i.txt 2>&1
    mpiexec.openmpi -n 2 build/openmpi/loom-bench app --variants steady,recreate --json $D/app-o-new-$i.json > $D/app-o-new-$i.txt 2>&1
  else
    mpiexec.mpich -n 2 -env LD_LIBRARY_PATH /tmp/fa-m build/mpich/loom-bench app --variants steady,recreate --json $D/app-m-old-$i.json > $D/app-m-old-$i.txt 2>&1
    mpiexec.mpich -n 2 build/mpich/loom-bench app --variants steady,recreate --json $D/app-m-new-$i.json > $D/app-m-new-$i.txt 2>&1
  fi
done
