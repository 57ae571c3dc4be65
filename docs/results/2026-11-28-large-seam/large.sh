#!/bin/bash
# Loom's packed path above 1 MiB under Open MPI: contiguous wire (single-copy rendezvous, CMA)
# against copy-in/copy-out (OMPI_MCA_btl_vader_single_copy_mechanism=none), Loom's default (the
# seamed wire, where the library in L applies it), and the host's own
# send of the same vector. pp.c: docs/results/2026-11-28-ompi-seam/pp.c, built as $PP.
# L= the libloom.so to preload. One-way us, best of 5 repetitions.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
L=${L:-build/openmpi/interpose/libloom.so}
PP=${PP:-/tmp/pp-o}
echo "state (host 8 KiB one-way us): $(mpiexec -n 2 $PP 32 32 64 2000 5)"
for kb in 1024 2048 4096 8192 16384 65536; do
  nb=$((kb * 1024 / 256)); nb8=$((kb * 1024 / 8))
  it=$((kb <= 2048 ? 60 : kb <= 16384 ? 20 : 4))
  run() { mpiexec -n 2 "$@"; }
  p=$(run -x LD_PRELOAD=$L -x LOOM_METHOD=pack -x LOOM_SEAMED_WIRE=0 $PP $nb 32 64 $it 5)
  pn=$(run -x LD_PRELOAD=$L -x LOOM_METHOD=pack -x OMPI_MCA_btl_vader_single_copy_mechanism=none $PP $nb 32 64 $it 5)
  ps=$(run -x LD_PRELOAD=$L -x LOOM_METHOD=pack $PP $nb 32 64 $it 5)
  h=$(run $PP $nb 32 64 $it 5)
  p8=$(run -x LD_PRELOAD=$L -x LOOM_METHOD=pack -x LOOM_SEAMED_WIRE=0 $PP $nb8 1 2 $it 5)
  pn8=$(run -x LD_PRELOAD=$L -x LOOM_METHOD=pack -x OMPI_MCA_btl_vader_single_copy_mechanism=none $PP $nb8 1 2 $it 5)
  ps8=$(run -x LD_PRELOAD=$L -x LOOM_METHOD=pack $PP $nb8 1 2 $it 5)
  h8=$(run $PP $nb8 1 2 $it 5)
  echo "${kb}K b256: host $h pack-cma $p pack-nocma $pn pack-seam $ps | b8: host $h8 pack-cma $p8 pack-nocma $pn8 pack-seam $ps8"
done
echo "state (host 8 KiB one-way us): $(mpiexec -n 2 $PP 32 32 64 2000 5)"
