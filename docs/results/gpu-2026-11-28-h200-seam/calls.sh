#!/usr/bin/env bash
# shellcheck disable=SC1090,SC2086
# The device calls of 2026-11-28 (H200, evening) that made this folder, run on the lent machine
# from the repository root with .gpu-carry/bundle.tar.xz (tools/gpu-bundle.sh of the code under
# test) and $OUT the folder that comes back:
#   bash docs/results/gpu-2026-11-28-h200-seam/calls.sh 1|2|3|4
# Each: `ctest -L gpu` on both MPIs, then the device ping-pong through Open MPI with the seamed
# wire on (default) and off (LOOM_SEAMED_WIRE=0, the path before: packed device messages sent as
# one contiguous MPI_PACKED block) alternated, and once through MPICH (no seam there). Call 1 wrote
# straight to $OUT, of which only 8 files came back (call1/); call 2 ran gpu-pingpong with
# alternated rounds (--rounds) and returns one archive. Call 3 is the whole device check of
# tools/gpu-check.sh at the session's head, both MPIs (full/). Call 4 runs pathcost.cu (built
# here against each MPI: .gpu-carry/pathcost-openmpi, pathcost-mpich) twice per MPI, Loom
# preloaded from the bundle (pathcost.txt).
set -uo pipefail
call=${1:-1}
res=${OUT:-/tmp/res}
[[ $call != 1 ]] && res=/tmp/res
if [[ $call == 4 ]]; then
  mkdir -p /tmp/new && tar -C /tmp/new -xJf .gpu-carry/bundle.tar.xz && cp .gpu-carry/pathcost-* /tmp/new/
  cd /tmp/new || exit 1
  for run in 1 2; do
    for m in openmpi mpich; do
      (source gpu-bundle/$m/mpi-runtime/env.sh
       export LD_LIBRARY_PATH=$PWD/gpu-bundle/$m/interpose:$LD_LIBRARY_PATH:$PWD/gpu-bundle/$m/lib
       echo "== $m run $run"
       timeout 100 mpiexec -n 2 env LD_PRELOAD=$PWD/gpu-bundle/$m/interpose/libloom.so \
         ./pathcost-$m 2>&1 | grep -v -E "pmix|dlopen|Perhaps")
    done
  done | tee "$OUT/pathcost.txt"
  exit 0
fi
if [[ $call == 3 ]]; then
  out=$OUT
  mkdir -p /tmp/new $res && tar -C /tmp/new -xJf .gpu-carry/bundle.tar.xz && cp -r tools /tmp/new/
  cd /tmp/new || exit 1
  OUT=$res GPU_PINGPONG_ARGS="--sizes 4K,64K,256K,1M,4M,16M" GPU_BENCH_TIMEOUT=170 \
    GPU_BENCH_ARGS="--quick --sizes 16M,64M" tools/gpu-check.sh gpu-bundle/openmpi gpu-bundle/mpich \
    2>&1 | grep -v -E "pmix|dlopen|Perhaps|^\[loom\] rank 1" | tee $res/log.txt
  tar -C $res -czf "$out/call3.tar.gz" .
  exit 0
fi
mkdir -p "$res" /tmp/new
tar -C /tmp/new -xJf .gpu-carry/bundle.tar.xz && cp -r tools /tmp/new/
cd /tmp/new || exit 1
quiet() { grep -v -E "pmix|dlopen|Perhaps|^\[loom\] rank 1"; }
pingpong() {  # mpi label args...
  local m=$1 label=$2; shift 2
  (source gpu-bundle/$m/mpi-runtime/env.sh
   export LD_LIBRARY_PATH=$PWD/gpu-bundle/$m/interpose:$PWD/gpu-bundle/$m/halo:$LD_LIBRARY_PATH:$PWD/gpu-bundle/$m/lib
   LOOM_STATS=1 timeout 120 mpiexec -n 2 gpu-bundle/$m/loom-bench gpu-pingpong "$@" \
     --json $res/$label.json > $res/$label.txt 2>&1
   echo "$label exit $?"; quiet < $res/$label.txt | grep -E -v "^loom-bench|^#" | head -60)
}
start=$(date +%s)
OUT=$res GPU_CHECK_MEMCHECK=0 GPU_CHECK_BENCH=0 GPU_CHECK_PINGPONG=0 \
  tools/gpu-check.sh gpu-bundle/openmpi gpu-bundle/mpich 2>&1 | quiet
echo "checks done after $(($(date +%s) - start)) s"
SIZES=4K,16K,32K,64K,256K,1M,4M,16M
[[ $call == 2 ]] && SIZES=16K,32K,64K,256K,1M,4M,16M
for run in 1 2; do
  pingpong openmpi openmpi-seam-$run --sizes $SIZES
  LOOM_SEAMED_WIRE=0 pingpong openmpi openmpi-noseam-$run --sizes $SIZES
  echo "run $run done after $(($(date +%s) - start)) s"
done
pingpong mpich mpich-$run --sizes $SIZES
echo "all done after $(($(date +%s) - start)) s"
[[ $call == 2 ]] && tar -C $res -czf "$OUT/call2.tar.gz" .
