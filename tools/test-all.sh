#!/usr/bin/env bash
# The README's test command and what CI runs: installs what only the tests need, builds Loom
# against both host MPIs and runs every test suite, then the sanitizer builds; prints each
# stage's time at the end.
#   LOOM_TEST_QUICK=1   skip the sanitizer builds (a fast local check)
#   LOOM_JOBS=N         build and test parallelism (default nproc)
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

# Each stage's wall time, printed when the script ends (also when a stage fails).
started=$SECONDS
stage_name=""
stage_times=()
end_stage() {
  [[ -n "$stage_name" ]] && stage_times+=("$(printf '%5d s  %s' $((SECONDS - stage_start)) "$stage_name")")
  stage_name=""
}
step() {
  end_stage
  stage_name=$*
  stage_start=$SECONDS
  printf '\n=== %s\n' "$*"
}
install_root=""
finish() {
  local status=$?
  end_stage
  [[ -n "$install_root" ]] && rm -rf "$install_root"
  echo
  echo "test-all: time per stage"
  printf '  %s\n' "${stage_times[@]}"
  printf '  %5d s  total\n' $((SECONDS - started))
  exit $status
}
trap finish EXIT

step "install what the tests need (tools/install-deps.sh --tests)"
"$root/tools/install-deps.sh" --tests

# Open MPI refuses root and more ranks than cores unless told.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none  # no CMA inside containers

# The builds share compiled objects through ccache: the engines and their tests compile the same
# for both MPIs, and a sanitizer build of one MPI shares them with the other's.
launcher=()
if command -v ccache >/dev/null; then
  export CCACHE_BASEDIR="$root" CCACHE_NOHASHDIR=1
  launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache
    -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
  ccache --zero-stats >/dev/null
fi

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
  cmake -S "$root" -B "$dir" -DLOOM_WERROR=ON -DLOOM_BUILD_TESTS=ON "${launcher[@]}" "$@" >/dev/null
  if [[ -n "$targets" ]]; then
    # shellcheck disable=SC2086
    cmake --build "$dir" -j "$jobs" --target $targets
  else
    cmake --build "$dir" -j "$jobs"
  fi
}
run_tests() {  # run_tests DIR [ctest args...]
  local dir=$1
  shift
  ctest --test-dir "$dir" --output-on-failure -j "$jobs" "$@"
}

step "format check (clang-format)"
mapfile -t sources < <(cd "$root" && git ls-files '*.cpp' '*.hpp' '*.h' '*.c' '*.cu')
(cd "$root" && clang-format --dry-run -Werror "${sources[@]}")

for mpi in openmpi mpich; do
  dir="$root/build/$mpi"
  step "build against $mpi"
  build "$dir" "" -DLOOM_MPI="$mpi" -DLOOM_CUDA="$cuda"
  step "test against $mpi"
  # The engines (labels unit and match) compile to the same code for either MPI: their suites
  # run once, in Open MPI's build; every suite that reaches an MPI runs against both.
  if [[ $mpi == openmpi ]]; then
    run_tests "$dir"
  else
    run_tests "$dir" -LE 'unit|match'
  fi
  step "loom-bench smoke run ($mpi)"
  "$dir/loom-bench" pack --quick
  "$dir/loom-bench" match --quick
  # measure writes a calibration: into a scratch file, never the user's cache.
  "mpiexec.$mpi" -n 2 "$dir/loom-bench" measure --quick --out "$(mktemp -d)/calibration.json"
done

# The SMPI variant (docs/projection.md): only its programs, then 16 simulated ranks against the
# host builds' results byte for byte, and the platform generator.
step "SMPI variant: simulated halo exchange and compressed all-to-all against both MPIs"
build "$root/build/smpi" "loom-sim-halo loom-sim-alltoall halo3d" -DLOOM_SMPI=ON
"$root/tests/sim/check_sim.sh" "$root/build/smpi" "$root/build/openmpi" "$root/build/mpich"
python3 "$root/tests/sim/check_platform.py" --smpi-build "$root/build/smpi"

# Installed Loom (docs/install.md): both MPIs' builds into one fresh prefix, then programs built
# and run against it as a user would (CMake, pkg-config, loomrun, mpi4py).
step "install both builds into a fresh prefix and use it"
install_root=$(mktemp -d)
for mpi in openmpi mpich; do
  cmake --install "$root/build/$mpi" --prefix "$install_root/loom" >/dev/null
done
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

# Sanitizers: AddressSanitizer and UndefinedBehaviorSanitizer in one build per MPI. The engines
# (labels unit and match) compile to the same code for either MPI, so their tests run under the
# sanitizers once, with Open MPI's build; every suite that reaches an MPI runs under both. The
# host MPIs' own allocations at init are not Loom's leaks.
# Every sanitizer build compiles with Clang at -O1, the level AddressSanitizer's authors advise:
# reports stay exact, the code runs fast enough for the MPI suites, and it compiles in a
# fraction of -O2's time; Clang compiles faster than g++, and its -fsanitize=undefined checks
# more (pointer overflow, float-to-int casts) (docs/testing.md).
sanitized=(-DLOOM_CUDA=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1 -DNDEBUG"
  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -DNDEBUG")
export CC=clang CXX=clang++
export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# The matching engine's reference tests replay 200,000 random operations per backend under the
# sanitizers instead of the million of the plain builds: still some 170 phases that fill, drain
# and churn the queues, reaching every line of match/ the million reaches (docs/testing.md).
export LOOM_MATCH_OPS=200000
for mpi in openmpi mpich; do
  dir="$root/build/asan-ubsan-$mpi"
  step "AddressSanitizer + UndefinedBehaviorSanitizer: build ($mpi)"
  build "$dir" "" -DLOOM_MPI="$mpi" -DLOOM_SANITIZE=address,undefined "${sanitized[@]}"
  step "AddressSanitizer + UndefinedBehaviorSanitizer: tests ($mpi)"
  if [[ $mpi == openmpi ]]; then
    run_tests "$dir"
  else
    run_tests "$dir" -LE 'unit|match'
  fi
done

# The MPI suites run under ASan above (thread stress included); TSan covers the engines,
# whose own thread tests are the ones TSan can judge without the host MPI's internals, and the
# halo library's same-node flag protocol with threads as ranks (TSan cannot see across the
# processes of the real transport).
step "ThreadSanitizer (engines and their thread tests)"
build "$root/build/tsan" \
  "unit_tests executor_tests place_tests codec_tests runtime_tests halo_flags_tests test_match_basic test_match_reference test_match_threads" \
  -DLOOM_MPI=openmpi -DLOOM_SANITIZE=thread "${sanitized[@]}"
run_tests "$root/build/tsan" -L "unit|match"

step "libFuzzer: matching engine against the reference model (bounded)"
build "$root/build/fuzz" "fuzz_match" -DLOOM_MPI=openmpi -DLOOM_FUZZ=ON \
  "${sanitized[@]}"
run_tests "$root/build/fuzz" -L fuzz

end_stage
if command -v ccache >/dev/null; then
  echo
  ccache --show-stats | grep -E '^ *(Hits|Misses):' | sed 's/^ */ccache /' || true
fi
echo
echo "test-all: every suite passed"
