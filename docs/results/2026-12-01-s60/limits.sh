#!/usr/bin/env bash
# Stop 60: the figures that decide whether #23's and #24's targets can be met on this machine,
# taken once more on a quiet machine with no calibration (a user's first runs). From the
# repository root, after building build/openmpi and build/mpich:
#   [run=N] bash docs/results/2026-12-01-s60/limits.sh [halo|app|pack|all|pingpong]
# (run=N numbers the halo and app outputs; `all` is halo, app and pack; pingpong runs three
# times per MPI by itself)
set -euo pipefail
out=$(dirname "$0")
what=${1:-all}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none  # CMA fails inside these containers
for mpi in openmpi mpich; do
  bench=build/$mpi/loom-bench
  if [[ $what == halo || $what == all ]]; then
    for rpn in unset 1; do
      vars=()
      [[ $rpn == 1 ]] && vars=(LOOM_RANKS_PER_NODE=1)
      env "${vars[@]}" "mpiexec.$mpi" -n 2 "$bench" halo --variants library --n 32,64,128 \
        --time 1 --json "$out/halo${run:-1}-$mpi-rpn$rpn.json" >"$out/halo${run:-1}-$mpi-rpn$rpn.txt" 2>&1
    done
  fi
  if [[ $what == app || $what == all ]]; then
    "mpiexec.$mpi" -n 2 "$bench" app --json "$out/app${run:-1}-$mpi.json" >"$out/app${run:-1}-$mpi.txt" 2>&1
  fi
  if [[ $what == pack || $what == all ]]; then
    "$bench" pack --json "$out/pack-$mpi.json" >"$out/pack-$mpi.txt" 2>&1
  fi
done
# Three full ping-pong runs per MPI, alternating (#23: "no case below 0.95x in each of three").
if [[ $what == pingpong ]]; then
  for run in 1 2 3; do
    for mpi in openmpi mpich; do
      "mpiexec.$mpi" -n 2 "build/$mpi/loom-bench" pingpong \
        --json "$out/pingpong$run-$mpi.json" >"$out/pingpong$run-$mpi.txt" 2>&1
    done
  done
fi
