#!/bin/bash
# A/B of loom-bench pingpong (vec_b16 and subarray_face, all sizes): old = 5a870d2's libloom.so
# (/tmp/old-o, /tmp/old-m), new = 8dc6efc's (/tmp/fa-o, /tmp/fa-m), alternated; run from the
# repository root. Usage: run.sh N (pairs per MPI)
D=$(dirname "$0")
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none
for i in $(seq 1 "${1:-3}"); do
  for v in old fa; do
    mpiexec.openmpi -n 2 -x LD_LIBRARY_PATH=/tmp/$v-o build/openmpi/loom-bench pingpong --shapes vec_b16,subarray --json $D/pp-o-$v-$i.json > $D/pp-o-$v-$i.txt 2>&1
    mpiexec.mpich -n 2 -env LD_LIBRARY_PATH /tmp/$v-m build/mpich/loom-bench pingpong --shapes vec_b16,subarray --json $D/pp-m-$v-$i.json > $D/pp-m-$v-$i.txt 2>&1
  done
done
