#!/usr/bin/env bash
# The device checks, in one go, on a machine with an NVIDIA GPU, writing everything under $OUT:
# the CUDA executor's tests (the gpu-labelled suite), a compute-sanitizer pass over part of
# them, `loom-bench gpu` (as the MPI-free loom-gpu-bench) and, where an Open MPI runtime is
# at MPI_RUNTIME (tools/pack-openmpi-runtime.sh; the lent GPU machine has no MPI), the
# device-buffer MPI test on the emulated device and `loom-bench gpu-pingpong` on the GPU.
#   tools/gpu-check.sh [BUILD_DIR]      (default build/openmpi, configured with LOOM_CUDA=ON)
# GPU_BENCH_ARGS adds options to loom-gpu-bench; GPU_CHECK_MEMCHECK=0 skips compute-sanitizer,
# GPU_CHECK_BENCH=0 loom-gpu-bench. GPU_PINGPONG_COPY_BELOW lists LOOM_DEVICE_COPY_BELOW values
# to run the device-buffer test and gpu-pingpong with ("default": unset; default "default"),
# GPU_PINGPONG_ARGS adds options to gpu-pingpong. A value may repeat; files carry the run's
# number.
set -uo pipefail
build=${1:-build/openmpi}
out=${OUT:-gpu-out}
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv |
  tee "$out/device.txt"

echo "=== CUDA executor tests"
"$build/tests/device/cuda_executor_tests" 2>&1 | tee "$out/gpu-tests.txt" | tail -4

if [[ "${GPU_CHECK_MEMCHECK:-1}" == 1 ]] && command -v compute-sanitizer >/dev/null; then
  echo "=== compute-sanitizer memcheck (vectors, unaligned buffers, tables)"
  timeout 120 compute-sanitizer --tool memcheck --error-exitcode 3 \
    "$build/tests/device/cuda_executor_tests" \
    --gtest_filter='*Vectors*:*Unaligned*:*Indexed*:*Table*:*Nesting*' >"$out/memcheck.txt" 2>&1
  echo "memcheck exit $?"
  tail -2 "$out/memcheck.txt"
fi

runtime=${MPI_RUNTIME:-.mpi}
if [[ -f "$runtime/env.sh" ]]; then
  # shellcheck disable=SC1091
  source "$runtime/env.sh"
  # $build/lib: libraries Loom links beyond the MPI runtime, where the machine lacks them
  export LD_LIBRARY_PATH="$PWD/$build/interpose:$PWD/$build/halo:$LD_LIBRARY_PATH:$PWD/$build/lib"
  echo "=== device buffers through the interposer (emulated device, relocated Open MPI)"
  LOOM_DEVICE=emulated timeout 60 mpiexec -n 2 "$build/tests/mpi/loom_mpi_device_buffers" \
    >"$out/device-buffers.txt" 2>&1
  echo "exit $?"
  tail -2 "$out/device-buffers.txt"
  run=0
  for below in ${GPU_PINGPONG_COPY_BELOW:-default}; do
    run=$((run + 1))
    if [[ "$below" == default ]]; then unset LOOM_DEVICE_COPY_BELOW; else export LOOM_DEVICE_COPY_BELOW=$below; fi
    echo "=== device buffers on the GPU, LOOM_DEVICE_COPY_BELOW=$below"
    LOOM_DEVICE=cuda timeout 60 mpiexec -n 2 "$build/tests/mpi/loom_mpi_device_buffers_cuda" \
      >"$out/device-buffers-cuda-$run-$below.txt" 2>&1
    echo "exit $?"
    tail -2 "$out/device-buffers-cuda-$run-$below.txt"
    echo "=== loom-bench gpu-pingpong, LOOM_DEVICE_COPY_BELOW=$below"
    # shellcheck disable=SC2086
    LOOM_STATS=1 timeout 240 mpiexec -n 2 "$build/loom-bench" gpu-pingpong ${GPU_PINGPONG_ARGS:-} \
      --json "$out/gpu-pingpong-$run-$below.json" >"$out/gpu-pingpong-$run-$below.txt" 2>&1
    echo "exit $?"
    cat "$out/gpu-pingpong-$run-$below.txt"
  done
  unset LOOM_DEVICE_COPY_BELOW
fi

[[ "${GPU_CHECK_BENCH:-1}" == 1 ]] || exit 0
echo "=== loom-bench gpu"
timeout "${GPU_BENCH_TIMEOUT:-420}" "$build/loom-gpu-bench" --time 0.15 --json "$out/gpu.json" \
  ${GPU_BENCH_ARGS:-} >"$out/gpu.txt" 2>&1
echo "exit $?"
sed -n '/^Device packs/,$p' "$out/gpu.txt" | tail -8
