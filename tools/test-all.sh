#!/usr/bin/env bash
# Builds Loom against both host MPIs and runs every test suite, then the sanitizer
# builds. This is the README's test command and what CI runs.
#   LOOM_TEST_QUICK=1   skip the sanitizer builds (a fast local check)
#   LOOM_JOBS=N         build parallelism (default nproc)
set -euo pipefail
case "${1:-}" in
  "") ;;
  -h | --help)
    sed -n '2,6s/^# \{0,1\}//p' "$0"
    echo "usage: tools/test-all.sh   (no options; settings through the variables above)"
    exit 0
    ;;
  *)
    echo "test-all: unknown argument '$1'" >&2
    echo "usage: tools/test-all.sh   (no options; tools/test-all.sh --help)" >&2
    exit 2
    ;;
esac
root=$(cd "$(dirname "$0")/.." && pwd)
jobs=${LOOM_JOBS:-$(nproc)}
# Open MPI refuses root and more ranks than cores unless told.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none  # no CMA inside containers

step() { printf '\n=== %s\n' "$*"; }

# The CUDA executor is built (and its host-side tests run) wherever nvcc is; the sanitizer
# builds leave it out (they check host code, and nvcc takes no -fsanitize).
if ! command -v nvcc >/dev/null && [[ -x /usr/local/cuda/bin/nvcc ]]; then
  export PATH="$PATH:/usr/local/cuda/bin"
fi
if command -v nvcc >/dev/null; then
  cuda=ON
else
  cuda=OFF
  echo "test-all: nvcc not found: building without the CUDA executor"
fi

build() {  # build DIR "TARGETS" [cmake args...]   (TARGETS empty: everything)
  local dir=$1 targets=$2
  shift 2
  cmake -S "$root" -B "$dir" -DLOOM_WERROR=ON -DLOOM_BUILD_TESTS=ON "$@" >/dev/null
  if [[ -n "$targets" ]]; then
    # shellcheck disable=SC2086
    cmake --build "$dir" -j "$jobs" --target $targets
  else
    cmake --build "$dir" -j "$jobs"
  fi
}

step "format check (clang-format)"
mapfile -t sources < <(cd "$root" && git ls-files '*.cpp' '*.hpp' '*.h' '*.c' '*.cu')
(cd "$root" && clang-format --dry-run -Werror "${sources[@]}")

for mpi in openmpi mpich; do
  dir="$root/build/$mpi"
  step "build + test against $mpi"
  build "$dir" "" -DLOOM_MPI="$mpi" -DLOOM_CUDA="$cuda"
  ctest --test-dir "$dir" --output-on-failure -j "$jobs"
  step "loom-bench smoke run ($mpi)"
  "$dir/loom-bench" pack --quick
  "$dir/loom-bench" match --quick
  # measure writes a calibration: into a scratch file, never the user's cache.
  "mpiexec.$mpi" -n 2 "$dir/loom-bench" measure --quick --out "$(mktemp -d)/calibration.json"
done

# Installed Loom (docs/install.md): both MPIs' builds into one fresh prefix, then programs built
# and run against it as a user would (CMake, pkg-config, loomrun, mpi4py).
step "install both builds into a fresh prefix and use it"
install_root=$(mktemp -d)
trap 'rm -rf "$install_root"' EXIT
for mpi in openmpi mpich; do
  cmake --install "$root/build/$mpi" --prefix "$install_root/loom" >/dev/null
done
"$root/tools/python-mpi4py.sh" openmpi mpich  # built once per machine and python3, cached
"$root/tests/install/check_install.sh" "$install_root/loom"

# Spack's ~interposer: the MPI-free libraries alone, without any MPI in the build, and without
# the other engines' libraries (hidden from CMake): the matching library needs a C/C++ compiler
# and CMake only.
step "MPI-free build and install (-DLOOM_BUILD_INTERPOSER=OFF)"
build "$root/build/no-mpi" "loom_match loom_match_shared" -DLOOM_BUILD_INTERPOSER=OFF -DLOOM_CUDA=OFF \
  -DLOOM_BUILD_TESTS=OFF -DCMAKE_DISABLE_FIND_PACKAGE_nlohmann_json=ON \
  -DCMAKE_DISABLE_FIND_PACKAGE_zfp=ON -DCMAKE_DISABLE_FIND_PACKAGE_PkgConfig=ON
cmake --install "$root/build/no-mpi" --prefix "$install_root/no-mpi" >/dev/null
[[ -f "$install_root/no-mpi/lib/libloom_match.so" && ! -e "$install_root/no-mpi/lib/loom" &&
  ! -e "$install_root/no-mpi/bin" ]] || {
  echo "test-all: the MPI-free install holds the wrong files"
  exit 1
}
echo "MPI-free install: libloom_match only, as it should be"

if [[ "${LOOM_TEST_QUICK:-0}" == 1 ]]; then
  echo "LOOM_TEST_QUICK=1: sanitizer builds skipped"
  exit 0
fi

# Sanitizers. The host MPIs' own allocations at init are not Loom's leaks.
export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
for mpi in openmpi mpich; do
  step "AddressSanitizer ($mpi)"
  build "$root/build/asan-$mpi" "" -DLOOM_MPI="$mpi" -DLOOM_SANITIZE=address \
    -DLOOM_CUDA=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo
  ctest --test-dir "$root/build/asan-$mpi" --output-on-failure -j "$jobs"
done

step "UndefinedBehaviorSanitizer (openmpi)"
build "$root/build/ubsan" "" -DLOOM_MPI=openmpi -DLOOM_SANITIZE=undefined \
  -DLOOM_CUDA=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo
ctest --test-dir "$root/build/ubsan" --output-on-failure -j "$jobs"

# The MPI suites run under ASan above (thread stress included); TSan covers the engines,
# whose own thread tests are the ones TSan can judge without the host MPI's internals, and the
# halo library's same-node flag protocol with threads as ranks (TSan cannot see across the
# processes of the real transport).
step "ThreadSanitizer (engines and their thread tests)"
build "$root/build/tsan" \
  "unit_tests executor_tests place_tests codec_tests runtime_tests halo_flags_tests test_match_basic test_match_reference test_match_threads" \
  -DLOOM_MPI=openmpi -DLOOM_SANITIZE=thread -DLOOM_CUDA=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo
ctest --test-dir "$root/build/tsan" --output-on-failure -L "unit|match"

step "libFuzzer: matching engine against the reference model (bounded)"
CC=clang CXX=clang++ build "$root/build/fuzz" "fuzz_match" -DLOOM_MPI=openmpi -DLOOM_FUZZ=ON \
  -DLOOM_CUDA=OFF \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo
ctest --test-dir "$root/build/fuzz" --output-on-failure -L fuzz

echo
echo "test-all: every suite passed"
