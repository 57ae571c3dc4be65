#!/usr/bin/env bash
# The device checks, in one go, on a machine with an NVIDIA GPU, writing everything under $OUT:
# per build, `ctest -L gpu` (verbose, so that each test's own output shows what ran: the CUDA
# executor's tests and the device-buffer MPI test on GPU memory), the device-buffer MPI test on
# the emulated device and `loom-bench gpu-pingpong`;
# then, with the first build, a compute-sanitizer pass over part of the executor's tests and
# `loom-bench gpu` (as the MPI-free loom-gpu-bench).
#   tools/gpu-check.sh [BUILD_DIR...]   (default build/openmpi, configured with LOOM_CUDA=ON)
# A BUILD_DIR may be a build tree or a bundle of tools/gpu-bundle.sh (for the lent GPU machine,
# which has no MPI): a BUILD_DIR/mpi-runtime/env.sh is sourced for that build's MPI steps,
# which are skipped where no mpiexec is found. Files are named after the BUILD_DIR's last part.
# GPU_CHECK_MEMCHECK=0 skips compute-sanitizer, GPU_CHECK_BENCH=0 loom-gpu-bench
# (GPU_BENCH_ARGS adds options to it), GPU_CHECK_PINGPONG=0 gpu-pingpong. GPU_PINGPONG_COPY_BELOW lists LOOM_DEVICE_COPY_BELOW
# values to run gpu-pingpong with ("default": unset; default "default"; a value may repeat,
# files carry the run's number), GPU_PINGPONG_ARGS adds options to gpu-pingpong.
set -uo pipefail
builds=("$@")
[[ ${#builds[@]} -gt 0 ]] || builds=(build/openmpi)
out=${OUT:-gpu-out}
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv |
  tee "$out/device.txt"

mpi_checks() {  # run in a subshell: sources the build's MPI runtime
  local build=$1 name=$2
  if [[ -f "$build/mpi-runtime/env.sh" ]]; then
    # shellcheck disable=SC1091
    source "$build/mpi-runtime/env.sh"
  fi
  # Loom's libraries, and those the bundle carries where the machine lacks them
  export LD_LIBRARY_PATH="$PWD/$build/interpose:$PWD/$build/halo:${LD_LIBRARY_PATH:-}:$PWD/$build/lib"
  if [[ -f "$build/CTestTestfile.cmake.in" ]]; then
    sed "s|@BUNDLE@|$(cd "$build" && pwd)|g" "$build/CTestTestfile.cmake.in" >"$build/CTestTestfile.cmake"
  fi
  echo "=== $name: ctest -L gpu"
  ctest --test-dir "$build" -L gpu --output-on-failure -V >"$out/$name-ctest-gpu.txt" 2>&1
  echo "exit $?"
  grep -E "tests passed|Not Run|Failed|\*\*\*" "$out/$name-ctest-gpu.txt" | tail -12
  command -v mpiexec >/dev/null || { echo "$name: no mpiexec, MPI steps skipped"; return; }
  echo "=== $name: device buffers through the interposer on the emulated device"
  LOOM_DEVICE=emulated timeout 60 mpiexec -n 2 "$build/tests/mpi/loom_mpi_device_buffers" \
    >"$out/$name-device-buffers-emulated.txt" 2>&1
  echo "exit $?"
  tail -2 "$out/$name-device-buffers-emulated.txt"
  [[ "${GPU_CHECK_PINGPONG:-1}" == 1 ]] || return 0
  local run=0 below
  for below in ${GPU_PINGPONG_COPY_BELOW:-default}; do
    run=$((run + 1))
    if [[ "$below" == default ]]; then unset LOOM_DEVICE_COPY_BELOW; else export LOOM_DEVICE_COPY_BELOW=$below; fi
    echo "=== $name: loom-bench gpu-pingpong, run $run, LOOM_DEVICE_COPY_BELOW=$below"
    # shellcheck disable=SC2086
    LOOM_STATS=1 timeout "${GPU_PINGPONG_TIMEOUT:-240}" mpiexec -n 2 "$build/loom-bench" \
      gpu-pingpong ${GPU_PINGPONG_ARGS:-} --json "$out/$name-gpu-pingpong-$run-$below.json" \
      >"$out/$name-gpu-pingpong-$run-$below.txt" 2>&1
    echo "exit $?"
    cat "$out/$name-gpu-pingpong-$run-$below.txt"
  done
}

for build in "${builds[@]}"; do
  (mpi_checks "$build" "$(basename "$build")")
done

first=${builds[0]}
if [[ "${GPU_CHECK_MEMCHECK:-1}" == 1 ]] && command -v compute-sanitizer >/dev/null; then
  echo "=== compute-sanitizer memcheck (vectors, unaligned buffers, tables)"
  timeout 120 compute-sanitizer --tool memcheck --error-exitcode 3 \
    "$first/tests/device/cuda_executor_tests" \
    --gtest_filter='*Vectors*:*Unaligned*:*Indexed*:*Table*:*Nesting*' >"$out/memcheck.txt" 2>&1
  echo "memcheck exit $?"
  tail -2 "$out/memcheck.txt"
fi

[[ "${GPU_CHECK_BENCH:-1}" == 1 ]] || exit 0
echo "=== loom-bench gpu"
# shellcheck disable=SC2086
LD_LIBRARY_PATH="${LD_LIBRARY_PATH:-}:$PWD/$first/lib" timeout "${GPU_BENCH_TIMEOUT:-420}" \
  "$first/loom-gpu-bench" --time 0.15 --json "$out/gpu.json" ${GPU_BENCH_ARGS:-} >"$out/gpu.txt" 2>&1
echo "exit $?"
sed -n '/^Device packs/,$p' "$out/gpu.txt" | tail -8
