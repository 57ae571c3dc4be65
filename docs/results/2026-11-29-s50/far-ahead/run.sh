#!/bin/bash
# A/B of the app corpus: old = 5a870d2's libloom.so (copied to /tmp/old-o, /tmp/old-m), new =
# the build; the same loom-bench, the library chosen through LD_LIBRARY_PATH, alternated.
# Usage: run.sh o|m N (pairs); summary: python3 docs/results/2026-11-29-s50/compare.py DIR -v
D=${OUT:-$(dirname "$0")}
OLD_O=${OLD_O:-/tmp/old-o} OLD_M=${OLD_M:-/tmp/old-m}  # the old libraries (wait80/run.sh sets them)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none
for i in $(seq 1 "${2:-3}"); do
  if [ "$1" = o ]; then
    mpiexec.openmpi -n 2 -x LD_LIBRARY_PATH=$OLD_O build/openmpi/loom-bench app --variants steady,recreate --json $D/app-o-old-$i.json > $D/app-o-old-$i.txt 2>&1
    mpiexec.openmpi -n 2 build/openmpi/loom-bench app --variants steady,recreate --json $D/app-o-new-$i.json > $D/app-o-new-$i.txt 2>&1
  else
    mpiexec.mpich -n 2 -env LD_LIBRARY_PATH $OLD_M build/mpich/loom-bench app --variants steady,recreate --json $D/app-m-old-$i.json > $D/app-m-old-$i.txt 2>&1
    mpiexec.mpich -n 2 build/mpich/loom-bench app --variants steady,recreate --json $D/app-m-new-$i.json > $D/app-m-new-$i.txt 2>&1
  fi
done
