#!/bin/bash
# A/B of the MPICH app corpus: old = de56974's libloom.so (copied to /tmp/old-m), new = the
# build; the same loom-bench, the library chosen through LD_LIBRARY_PATH, alternated.
# Usage: run.sh N (pairs); summary: python3 docs/results/2026-11-29/trial-cut/compare.py DIR
D=$(dirname "$0")
for i in $(seq 1 "${1:-3}"); do
  mpiexec.mpich -n 2 -env LD_LIBRARY_PATH /tmp/old-m build/mpich/loom-bench app --variants steady,recreate --json $D/app-m-old-$i.json > $D/app-m-old-$i.txt 2>&1
  mpiexec.mpich -n 2 build/mpich/loom-bench app --variants steady,recreate --json $D/app-m-new-$i.json > $D/app-m-new-$i.txt 2>&1
done
