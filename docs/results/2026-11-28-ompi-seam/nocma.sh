#!/bin/bash
# Packed path with and without Open MPI's single-copy rendezvous (docs/p2p.md, "Packed messages under
# Open MPI"). Build first: mpicc.openmpi -O2 pp.c -o pp-o. L= the libloom.so to preload.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
L=${L:-build/openmpi/interpose/libloom.so}
echo "state: $(mpiexec -n 2 ./pp-o 32 32 64 2000 5)"
for kb in 4 8 16 32 64 256 1024; do
 nb=$((kb*1024/256)); nb8=$((kb*1024/8)); it=$((kb<=64?2000:300))
 p=$(mpiexec -n 2 -x LD_PRELOAD=$L -x LOOM_METHOD=pack ./pp-o $nb 32 64 $it 5)
 pn=$(mpiexec -n 2 -x LD_PRELOAD=$L -x LOOM_METHOD=pack -x OMPI_MCA_btl_vader_single_copy_mechanism=none ./pp-o $nb 32 64 $it 5)
 h=$(mpiexec -n 2 ./pp-o $nb 32 64 $it 5)
 p8=$(mpiexec -n 2 -x LD_PRELOAD=$L -x LOOM_METHOD=pack ./pp-o $nb8 1 2 $it 5)
 pn8=$(mpiexec -n 2 -x LD_PRELOAD=$L -x LOOM_METHOD=pack -x OMPI_MCA_btl_vader_single_copy_mechanism=none ./pp-o $nb8 1 2 $it 5)
 h8=$(mpiexec -n 2 ./pp-o $nb8 1 2 $it 5)
 echo "${kb}K b256: host $h pack-cma $p pack-nocma $pn | b8: host $h8 pack-cma $p8 pack-nocma $pn8"
done
echo "state: $(mpiexec -n 2 ./pp-o 32 32 64 2000 5)"
