#!/bin/bash
# MPI_Alltoall of a vector of 8 B blocks (a2a.c, built as $A2A), 2 ranks, Open MPI: native, Loom
# before the rotated wire (library in $BEFORE) and after (library in $AFTER), alternated; us per
# call, best of 5 repetitions.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
A2A=${A2A:-/tmp/a2a}
for round in 1 2 3; do
  for kb in 4 16 64 256 1024 4096; do
    nb=$((kb * 1024 / 8)); it=$((kb <= 256 ? 200 : 20))
    h=$(mpiexec -n 2 $A2A $nb 1 $it)
    b=$(mpiexec -n 2 -x LD_PRELOAD=$BEFORE/libloom.so $A2A $nb 1 $it)
    a=$(mpiexec -n 2 -x LD_PRELOAD=$AFTER/libloom.so $A2A $nb 1 $it)
    echo "round $round ${kb} KiB per peer: native $h before $b after $a"
  done
done
