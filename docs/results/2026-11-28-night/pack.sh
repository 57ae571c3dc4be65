#!/bin/bash
# loom-bench pack once per MPI at e7c06a9 (2026-11-28 night). Run from this folder.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
B=/work/main/build
mpiexec -n 1 $B/openmpi/loom-bench pack --json pack-o.json > pack-o.txt 2>&1
mpiexec.mpich -n 1 $B/mpich/loom-bench pack --json pack-m.json > pack-m.txt 2>&1
echo done > PACKDONE
