#!/bin/bash
# Native and Loom outcomes of null array arguments (docs/collectives.md), 2 ranks, both MPIs.
# Usage: bash run_null_arrays.sh <build dir prefix, e.g. /path/to/build>
set -u
build=${1:?build dir prefix}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
mpicc.openmpi -o "$tmp/p_ompi" "$here/null_arrays_probe.c"
mpicc.mpich -o "$tmp/p_mpich" "$here/null_arrays_probe.c"
run() {  # mpi call index type native|loom
  local out pre=()
  if [ "$1" = ompi ]; then
    [ "$5" = loom ] && pre=(-x LD_PRELOAD="$build/openmpi/interpose/libloom.so")
    out=$(timeout 20 mpiexec.openmpi -n 2 "${pre[@]}" "$tmp/p_ompi" "$2" "$3" "$4" 2>&1)
  else
    [ "$5" = loom ] && pre=(-env LD_PRELOAD "$build/mpich/interpose/libloom.so")
    out=$(timeout 20 mpiexec.mpich -n 2 "${pre[@]}" "$tmp/p_mpich" "$2" "$3" "$4" 2>&1)
  fi
  if echo "$out" | grep -q "^rank 0"; then
    echo "$out" | grep "^rank 0" | sed 's/rank 0 //'
  elif echo "$out" | grep -q "Segmentation"; then echo SEGV; else echo "no result"; fi
}
for call in alltoallv ialltoallv alltoallw allgatherv gatherv scatterv neighbor_alltoallv \
  neighbor_allgatherv; do
  case $call in
    alltoallv | ialltoallv | neighbor_alltoallv) idx="0 1 2 3" ;;
    alltoallw) idx="0 1 2 3 4 5" ;;
    allgatherv | gatherv | neighbor_allgatherv) idx="2 3" ;;
    scatterv) idx="0 1" ;;
  esac
  for i in $idx; do
    echo "$call null#$i | ompi native $(run ompi $call $i vec native), loom $(run ompi $call $i vec loom)" \
      "| mpich native $(run mpich $call $i vec native), loom $(run mpich $call $i vec loom)"
  done
done
rm -rf "$tmp"
