#!/bin/bash
# MPICH, loom-bench app steady: forced host, forced pack (LOOM_ONLINE=0) and the default, twice
# each; best_of.py takes each case's median per setting and the better of host and pack.
mkdir -p /tmp/orc && cd /work/main
for i in 1 2; do for m in host pack auto; do
  if [ $m = auto ]; then e=""; else e="-env LOOM_ONLINE 0 -env LOOM_METHOD $m"; fi
  mpiexec.mpich -n 2 $e build/mpich/loom-bench app --variants steady --json /tmp/orc/m-$m-$i.json > /tmp/orc/m-$m-$i.txt 2>&1
done; done
