#!/usr/bin/env bash
# The device checks, in one go, on a machine with an NVIDIA GPU (no MPI needed there): the
# CUDA executor's tests (the gpu-labelled suite), a compute-sanitizer pass over part of them,
# and `loom-bench gpu` (as the MPI-free loom-gpu-bench), writing everything under $OUT.
#   tools/gpu-check.sh [BUILD_DIR]      (default build/openmpi, configured with LOOM_CUDA=ON)
set -uo pipefail
build=${1:-build/openmpi}
out=${OUT:-gpu-out}
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv |
  tee "$out/device.txt"

echo "=== CUDA executor tests"
"$build/tests/device/cuda_executor_tests" 2>&1 | tee "$out/gpu-tests.txt" | tail -4

echo "=== compute-sanitizer memcheck (vectors, unaligned buffers, tables)"
if command -v compute-sanitizer >/dev/null; then
  timeout 120 compute-sanitizer --tool memcheck --error-exitcode 3 \
    "$build/tests/device/cuda_executor_tests" \
    --gtest_filter='*Vectors*:*Unaligned*:*Indexed*:*Table*:*Nesting*' >"$out/memcheck.txt" 2>&1
  echo "memcheck exit $? ($(grep -c 'ERROR SUMMARY: 0 errors' "$out/memcheck.txt") clean summary)"
  tail -2 "$out/memcheck.txt"
fi

echo "=== loom-bench gpu smoke"
"$build/loom-gpu-bench" --quick --max-transfer 64K --sizes 64K --types vec1d_b8 | tail -3

echo "=== loom-bench gpu"
timeout ${GPU_BENCH_TIMEOUT:-420} "$build/loom-gpu-bench" --time 0.15 --json "$out/gpu.json" ${GPU_BENCH_ARGS:-} >"$out/gpu.txt" 2>&1
echo "exit $?"
sed -n '/^Device packs/,$p' "$out/gpu.txt"
grep -E '^(pinned->device|device->pinned|device->device|pinned<->device) .* 1\.00 GiB' "$out/gpu.txt"
