#!/usr/bin/env bash
# Builds Loom against both host MPIs and runs every test suite, then the sanitizer
# builds. This is the README's test command and what CI runs.
#   LOOM_TEST_QUICK=1   skip the sanitizer builds (a fast local check)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
jobs=${LOOM_JOBS:-$(nproc)}
# Open MPI refuses root and more ranks than cores unless told.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none  # no CMA inside containers

step() { printf '\n=== %s\n' "$*"; }

build() {  # build DIR [cmake args...]
  local dir=$1
  shift
  cmake -S "$root" -B "$dir" -DLOOM_WERROR=ON "$@" >/dev/null
  cmake --build "$dir" -j "$jobs"
}

step "format check (clang-format)"
mapfile -t sources < <(cd "$root" && git ls-files '*.cpp' '*.hpp' '*.h' '*.c')
(cd "$root" && clang-format --dry-run -Werror "${sources[@]}")

for mpi in openmpi mpich; do
  dir="$root/build/$mpi"
  step "build + test against $mpi"
  build "$dir" -DLOOM_MPI="$mpi"
  ctest --test-dir "$dir" --output-on-failure -j "$jobs"
  step "loom-bench smoke run ($mpi)"
  "$dir/loom-bench" pack --quick
  "$dir/loom-bench" match --quick
done

if [[ "${LOOM_TEST_QUICK:-0}" == 1 ]]; then
  echo "LOOM_TEST_QUICK=1: sanitizer builds skipped"
  exit 0
fi

# Sanitizers. The host MPIs' own allocations at init are not Loom's leaks.
export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
for mpi in openmpi mpich; do
  step "AddressSanitizer ($mpi)"
  build "$root/build/asan-$mpi" -DLOOM_MPI="$mpi" -DLOOM_SANITIZE=address -DCMAKE_BUILD_TYPE=RelWithDebInfo
  ctest --test-dir "$root/build/asan-$mpi" --output-on-failure -j "$jobs"
done

step "UndefinedBehaviorSanitizer (openmpi)"
build "$root/build/ubsan" -DLOOM_MPI=openmpi -DLOOM_SANITIZE=undefined -DCMAKE_BUILD_TYPE=RelWithDebInfo
ctest --test-dir "$root/build/ubsan" --output-on-failure -j "$jobs"

step "ThreadSanitizer (engines and their thread tests)"
build "$root/build/tsan" -DLOOM_MPI=openmpi -DLOOM_SANITIZE=thread -DCMAKE_BUILD_TYPE=RelWithDebInfo
ctest --test-dir "$root/build/tsan" --output-on-failure -L "unit|match"

echo
echo "test-all: every suite passed"
