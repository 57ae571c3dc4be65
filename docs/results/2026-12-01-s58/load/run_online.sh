#!/bin/bash
# Under one busy loop beside the 2 ranks (LOAD=0: without it): loom-bench app (steady, up to
# 64 KiB) with trials (default) and with LOOM_ONLINE=0 (the model's rule, no trials), alternated.
# Usage (repository root): [LOAD=0] run_online.sh o|m N [OUTDIR]
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none
D=${3:-$(dirname "$0")}
if [ "${LOAD:-1}" = 1 ]; then (while :; do :; done) & HOG=$!; fi
for i in $(seq 1 "$2"); do
  for online in 1 0; do
    if [ "$1" = o ]; then
      mpiexec.openmpi -n 2 -x LOOM_ONLINE=$online build/openmpi/loom-bench app --variants steady --max-size 64K --json $D/online-o-online$online-$i.json > $D/online-o-online$online-$i.txt 2>&1
    else
      mpiexec.mpich -n 2 -env LOOM_ONLINE $online build/mpich/loom-bench app --variants steady --max-size 64K --json $D/online-m-online$online-$i.json > $D/online-m-online$online-$i.txt 2>&1
    fi
  done
done
if [ -n "${HOG:-}" ]; then kill $HOG; wait $HOG 2>/dev/null; fi
true
