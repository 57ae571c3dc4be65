#!/bin/bash
# The runs at 8dc6efc, alternated: loom-bench pingpong and halo (2 ranks, defaults) and
# tools/demo.sh from no calibration (an empty LOOM_CACHE_DIR each), three per MPI.
D=$(dirname "$0")  # run from the repository root (iteration 3 was stopped: see docs/app-mode.md)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none
for i in 1 2 3; do
  for m in openmpi mpich; do
    s=${m:0:1}
    "mpiexec.$m" -n 2 build/$m/loom-bench pingpong --json $D/pingpong-$s-$i.json > $D/pingpong-$s-$i.txt 2>&1
    "mpiexec.$m" -n 2 build/$m/loom-bench halo --json $D/halo-$s-$i.json > $D/halo-$s-$i.txt 2>&1
    rm -rf /tmp/demo-cache-$m-$i && mkdir -p /tmp/demo-cache-$m-$i
    LOOM_CACHE_DIR=/tmp/demo-cache-$m-$i LOOM_MPI=$m tools/demo.sh > $D/demo-$m-$i.txt 2>&1
  done
done
