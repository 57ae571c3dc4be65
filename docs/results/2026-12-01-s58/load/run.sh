#!/bin/bash
# loom-bench app (steady, recreate) with and without one busy-loop process beside the 2 ranks,
# on the 2-core machine: run N of each, the loaded one first. Usage: run.sh o|m N [OUTDIR]
# (from the repository root, after building build/openmpi and build/mpich).
# Summary: python3 docs/results/2026-12-01-s58/load/summarise.py OUTDIR
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none
D=${3:-$(dirname "$0")}
i=$2
for load in 1 0; do
  if [ $load = 1 ]; then (while :; do :; done) & HOG=$!; fi
  if [ "$1" = o ]; then
    mpiexec.openmpi -n 2 build/openmpi/loom-bench app --variants steady,recreate --json $D/app-o-load$load-$i.json > $D/app-o-load$load-$i.txt 2>&1
  else
    mpiexec.mpich -n 2 build/mpich/loom-bench app --variants steady,recreate --json $D/app-m-load$load-$i.json > $D/app-m-load$load-$i.txt 2>&1
  fi
  if [ $load = 1 ]; then kill $HOG; wait $HOG 2>/dev/null; fi
done
