#!/usr/bin/env bash
# shellcheck disable=SC1090,SC2086
# The device calls of 2026-11-28 (H200) that made this folder, as run there from the repository
# root with .gpu-carry/ holding bundle.tar.xz (tools/gpu-bundle.sh of the code under test;
# call 3 also bundle-old.tar.xz of 95507ca) and smallcopy-openmpi / smallcopy-mpich (smallcopy.cu
# built against each MPI; call 6 also old-openmpi/ and old-mpich/ holding libloom.so of 24df679):
#   bash calls.sh 1|2|3|4|5|6
# Calls 2-4 ran earlier copies of smallcopy.cu, identical but for their built-in variant and size
# lists (the arguments below) and 200 trips per run.
set -uo pipefail
n=0
call=${1:?call number}
res=/tmp/res
mkdir -p $res /tmp/new /tmp/old
repo=$PWD
tar -C /tmp/new -xJf .gpu-carry/bundle.tar.xz && cp -r tools .gpu-carry/smallcopy-* /tmp/new/
[[ $call == 3 ]] && tar -C /tmp/old -xJf .gpu-carry/bundle-old.tar.xz
cd /tmp/new || exit 1
quiet() { grep -v -E "pmix|dlopen|Perhaps|^\[loom\] rank 1"; }
smallcopy() {  # mpi output [variants sizes]
  (source gpu-bundle/$1/mpi-runtime/env.sh
   timeout 150 mpiexec -n 2 ./smallcopy-$1 "${@:3}" 2>&1 | quiet | tee $res/$2)
}
checks() { OUT=$res GPU_CHECK_MEMCHECK=0 GPU_CHECK_BENCH=0 GPU_CHECK_PINGPONG="${1:-0}" \
  GPU_PINGPONG_ARGS="${2:-}" tools/gpu-check.sh gpu-bundle/openmpi gpu-bundle/mpich 2>&1 | quiet; }
pingpong() {  # tree mpi label args...
  local tree=$1 m=$2 label=$3; shift 3
  (cd $tree && source gpu-bundle/$m/mpi-runtime/env.sh
   export LD_LIBRARY_PATH=${LIB_FIRST:+$LIB_FIRST:}$PWD/gpu-bundle/$m/interpose:$PWD/gpu-bundle/$m/halo:$LD_LIBRARY_PATH:$PWD/gpu-bundle/$m/lib
   LOOM_STATS=1 timeout 150 mpiexec -n 2 gpu-bundle/$m/loom-bench gpu-pingpong "$@" \
     --json $res/$label.json > $res/$label.txt 2>&1
   quiet < $res/$label.txt)
}
H2D=h2d_1d,h2d_rows4,h2d_rows16,h2d_rows64,h2d_spread4,h2d_spread16,h2d_spread64,h2d_pad,h2d_pad_only
ROWS=h2d_1d,h2d_rows2,h2d_rows16,h2d_dpitch2x_rows2,h2d_dpitch2x_rows4,h2d_dpitch2x_rows8,h2d_dpitch2x_rows16,h2d_dpitch2x_rows64,h2d_rows2_tail3
SIZES=1,3,1001,16382,16385,20480,24576,28672,32767,32768
case $call in
  1) smallcopy openmpi smallcopy-openmpi.txt; smallcopy mpich smallcopy-mpich.txt
     checks 1 "--sizes 1K,4K,16K,64K,256K" ;;
  2) smallcopy openmpi smallcopy2-openmpi.txt $H2D 1024,4096,16384,32768 ;;
  3) checks
     for run in new:openmpi-new1 old:openmpi-old new:openmpi-new2; do
       pingpong /tmp/${run%%:*} openmpi ${run#*:} --sizes 1K,4K,16K,64K,256K
     done
     pingpong /tmp/new mpich mpich-new --sizes 1K,4K,16K,64K,256K
     pingpong /tmp/new openmpi openmpi-odd --blocks 0 --sizes 1001,4094,16382,32767
     smallcopy openmpi smallcopy3-openmpi.txt $ROWS 1024,4096,16384 ;;
  4) checks
     for m in openmpi mpich; do pingpong /tmp/new $m $m-final --sizes 1K,4K,16K,64K,256K,1M,16M; done
     pingpong /tmp/new openmpi openmpi-odd --blocks 0 --sizes 1,3,1001,4094,16382,16385,32767 ;;
  5) smallcopy openmpi smallcopy4-openmpi.txt h2d_1d,h2d_rows2 16384,16386,18432,20480,24576,28672,30720,32000,32766,32768
     checks
     pingpong /tmp/new openmpi openmpi-sizes --blocks 0 --sizes $SIZES
     pingpong /tmp/new openmpi openmpi-b256 --blocks 256 --sizes 1K,2K,4K,16K,32K
     pingpong /tmp/new mpich mpich-sizes --blocks 0 --sizes $SIZES ;;
  6) smallcopy openmpi smallcopy-lookup.txt lookup
     checks
     for run in new old new old; do
       for m in openmpi mpich; do
         if [[ $run == old ]]; then export LIB_FIRST=$repo/.gpu-carry/old-$m; else unset LIB_FIRST; fi
         pingpong /tmp/new $m $m-$run-$((++n)) --sizes 4K,32K,64K,256K
       done
     done ;;
esac
tar -C $res -czf "$OUT/results$call.tgz" .
