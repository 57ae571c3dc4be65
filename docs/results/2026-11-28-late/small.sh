#!/bin/bash
# Open MPI's small messages forced to either route (LOOM_ONLINE=0), three alternations:
#   bash small.sh OUTDIR [TAG]
set -e
out=$1 tag=${2:-}
mkdir -p "$out"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
for i in 1 2 3; do
  for m in host pack; do
    mpiexec -n 2 -x LOOM_ONLINE=0 -x LOOM_METHOD=$m build/openmpi/loom-bench pingpong \
      --sizes 16,64,128,256 --blocks 4,8,16,32,64 --time 0.3 > "$out/o-$m-$i$tag.txt" 2>&1
  done
done
