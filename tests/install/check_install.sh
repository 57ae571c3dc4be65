#!/usr/bin/env bash
# Checks an installed Loom prefix holding both MPIs' builds (docs/install.md):
#   tests/install/check_install.sh PREFIX
# - the layout, and that installed binaries resolve every library without LD_LIBRARY_PATH;
# - an out-of-tree CMake project (find_package(Loom)) and a Makefile project (pkg-config)
#   build C programs against the matching engine, shared and static, and run them;
# - per MPI: a C program built with pkg-config against the halo library (loom-halo-<mpi>) and
#   run on 2 ranks;
# - per MPI: an unmodified MPI program linked with Loom::interpose_<mpi> (CMake) and under the
#   installed loomrun (same output as native, Loom packing on every rank), bin/loom-bench
#   under that MPI's launcher, and tests/install/mpi4py_vector.py under the installed
#   loomrun with that MPI's mpi4py (tools/python-mpi4py.sh).
# Open MPI as root needs OMPI_ALLOW_RUN_AS_ROOT* and oversubscription set (tools/test-all.sh).
set -euo pipefail
[[ $# -eq 1 && -d "$1" ]] || {
  echo "usage: tests/install/check_install.sh PREFIX" >&2
  exit 2
}
prefix=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The installed tree must find its own libraries.
unset LD_LIBRARY_PATH LD_PRELOAD LOOM_LIBRARY LOOM_MPIEXEC LOOM_MPI
export LOOM_CACHE_DIR="$work/cache"  # the built-in method rule, never the user's calibration
# The programs below use each type a few times, which Loom leaves to the host until a type's
# host time pays for its plan (docs/commit.md); the checks count Loom's packing, so plan at once.
export LOOM_PLAN=eager

step() { printf '\n--- install check: %s\n' "$*"; }
fail() {
  echo "check_install: FAIL: $*" >&2
  exit 1
}

step "layout of $prefix"
expected=(bin/loomrun bin/loom-bench bin/loom-plot include/loom/match.h include/loom/loom.h
  lib/libloom_match.so lib/libloom_match.a lib/cmake/Loom/LoomConfig.cmake
  lib/cmake/Loom/LoomConfigVersion.cmake lib/cmake/Loom/LoomTargets_match.cmake
  lib/pkgconfig/loom-match.pc lib/pkgconfig/loom-match-static.pc share/loom/plot_bench.py
  share/loom/plots/common.py share/doc/loom/README.md share/doc/loom/install.md)
for mpi in openmpi mpich; do
  expected+=("lib/loom/$mpi/libloom.so" "libexec/loom/$mpi/loom-bench"
    "lib/cmake/Loom/LoomTargets_interpose_$mpi.cmake" "lib/pkgconfig/loom-$mpi.pc"
    "lib/loom/$mpi/libloom_halo.so" "lib/cmake/Loom/LoomTargets_halo_$mpi.cmake"
    "lib/pkgconfig/loom-halo-$mpi.pc" include/loom/halo.h)
done
for file in "${expected[@]}"; do
  [[ -e "$prefix/$file" ]] || fail "$prefix/$file missing"
done
[[ ! -e "$prefix/include/loom/testing.h" ]] || fail "the test-only include/loom/testing.h is installed"
for binary in "$prefix"/lib/libloom_match.so "$prefix"/lib/loom/*/libloom.so \
  "$prefix"/lib/loom/*/libloom_halo.so \
  "$prefix"/libexec/loom/*/loom-bench; do
  if ldd "$binary" | grep 'not found' >/dev/null; then
    ldd "$binary"
    fail "$binary: unresolved libraries"
  fi
done
for mpi in openmpi mpich; do
  found=$(ldd "$prefix/libexec/loom/$mpi/loom-bench" | awk '$1 == "libloom.so" {print $3}')
  [[ -n "$found" && $(readlink -f "$found") == "$prefix/lib/loom/$mpi/libloom.so" ]] ||
    fail "libexec/loom/$mpi/loom-bench finds libloom.so at '$found', not in lib/loom/$mpi/"
done
echo "all ${#expected[@]} files present; installed binaries resolve their libraries"

step "every installed command answers --help"
"$prefix/bin/loomrun" --help | grep 'LOOM_MPIEXEC' >/dev/null || fail "loomrun --help"
for mpi in openmpi mpich; do
  LOOM_MPI=$mpi "$prefix/bin/loom-bench" --help | grep 'pingpong' >/dev/null || fail "loom-bench ($mpi)"
  for subcommand in pack match measure pingpong halo; do
    LOOM_MPI=$mpi "$prefix/bin/loom-bench" "$subcommand" --help | grep -- '--help' >/dev/null ||
      fail "loom-bench $subcommand --help ($mpi)"
  done
done
"$prefix/bin/loom-plot" --help | grep -- '--out' >/dev/null || fail "loom-plot --help"
if "$prefix/bin/loomrun" --loom-bogus true 2>"$work/err"; then fail "loomrun accepted --loom-bogus"; fi
grep -q usage "$work/err" || fail "loomrun --loom-bogus printed no usage line"
echo "loomrun, loom-bench (both MPIs, every subcommand) and loom-plot: OK"

cp -r "$here/match_consumer.c" "$here/cmake_consumer" "$here/make_consumer" \
  "$root/examples/pack_example.c" "$work/"

step "CMake consumer: find_package(Loom) from C"
cmake -S "$work/cmake_consumer" -B "$work/cmake_build" -DCMAKE_PREFIX_PATH="$prefix" \
  -DLOOM_EXTRA_COMPONENTS="interpose_openmpi;interpose_mpich" >"$work/cmake.log" ||
  { cat "$work/cmake.log"; fail "configuring the CMake consumer"; }
grep 'Loom .* components' "$work/cmake.log"
cmake --build "$work/cmake_build" >"$work/build.log" || { cat "$work/build.log"; fail "building it"; }
"$work/cmake_build/match_shared"
"$work/cmake_build/match_static"
# The version file refuses what this Loom is not.
if cmake -S "$work/cmake_consumer" -B "$work/cmake_build_v9" -DCMAKE_PREFIX_PATH="$prefix" \
  -DLOOM_REQUIRED_VERSION=9.0 >/dev/null 2>&1; then
  fail "find_package(Loom 9.0) succeeded"
fi
echo "find_package(Loom 9.0): refused, as it should be"

for mpi in openmpi mpich; do
  step "CMake consumer: an MPI program linked with Loom::interpose_$mpi before the MPI"
  cmake -S "$work/cmake_consumer" -B "$work/cmake_build_$mpi" -DCMAKE_PREFIX_PATH="$prefix" \
    -DLOOM_EXTRA_COMPONENTS="interpose_$mpi" -DLOOM_CONSUMER_MPI=$mpi >"$work/cmake.log" ||
    { cat "$work/cmake.log"; fail "configuring the CMake consumer for $mpi"; }
  cmake --build "$work/cmake_build_$mpi" --target pack_linked >"$work/build.log" ||
    { cat "$work/build.log"; fail "building pack_linked against $mpi"; }
  linked=$(LOOM_STATS=1 "mpiexec.$mpi" -n 2 "$work/cmake_build_$mpi/pack_linked" 2>&1) ||
    { echo "$linked"; fail "pack_linked ($mpi)"; }
  grep '^pack_example' <<<"$linked"
  [[ $(grep -c 'MPI_Pack loom=[1-9]' <<<"$linked") == 2 ]] ||
    { echo "$linked"; fail "pack_linked ($mpi): Loom did not pack on both ranks"; }
  echo "Loom packed on both ranks without preloading"
done

step "Makefile consumer: pkg-config"
PKG_CONFIG_PATH="$prefix/lib/pkgconfig" make -s -C "$work/make_consumer" ||
  fail "building the Makefile consumer"
"$work/make_consumer/match_shared"
"$work/make_consumer/match_static"
for mpi in openmpi mpich; do
  libs=$(PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --libs "loom-$mpi")
  echo "pkg-config --libs loom-$mpi: $libs"
  [[ "$libs" == *"/lib/loom/$mpi -lloom "*"-lmpi"* ]] ||
    fail "loom-$mpi.pc must link libloom before the MPI"
done

for mpi in openmpi mpich; do
  step "$mpi: the halo library through pkg-config loom-halo-$mpi"
  halo_pc() { PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config "$@" "loom-halo-$mpi"; }
  "mpicc.$mpi" -O2 -Wall -Werror $(halo_pc --cflags) -o "$work/halo_consumer_$mpi" \
    "$here/halo_consumer.c" $(halo_pc --libs) -Wl,-rpath,"$(halo_pc --variable=libdir)" ||
    fail "building halo_consumer.c against loom-halo-$mpi"
  halo=$("mpiexec.$mpi" -n 2 "$work/halo_consumer_$mpi" 2>&1) || {
    echo "$halo"
    fail "halo_consumer ($mpi)"
  }
  echo "$halo"
  [[ "$halo" == *"halo_consumer: ok"* ]] || fail "halo_consumer ($mpi) printed no ok"
done

for mpi in openmpi mpich; do
  step "$mpi: an unmodified MPI program under the installed loomrun"
  which=$(LOOM_MPIEXEC="mpiexec.$mpi" "$prefix/bin/loomrun" --loom-which)
  echo "$which"
  [[ "$which" == *"library $prefix/lib/loom/$mpi/libloom.so"* ]] ||
    fail "loomrun picked the wrong library for mpiexec.$mpi"
  "mpicc.$mpi" -O2 -o "$work/pack_example_$mpi" "$root/examples/pack_example.c"
  LOOM_MPIEXEC="mpiexec.$mpi" "$root/tests/loomrun/check_loomrun.sh" "$prefix/bin/loomrun" \
    "mpiexec.$mpi" "$work/pack_example_$mpi" 2

  step "$mpi: bin/loom-bench under mpiexec.$mpi runs that MPI's build"
  expected_library=MPICH
  [[ $mpi == openmpi ]] && expected_library="Open MPI"
  bench=$("mpiexec.$mpi" -n 2 "$prefix/bin/loom-bench" halo --quick --n 8 --reps 3 2>&1) || {
    echo "$bench"
    fail "loom-bench halo under mpiexec.$mpi"
  }
  head -n 1 <<<"$bench"
  [[ "$bench" == *"host MPI: $expected_library"*"2 ranks"* ]] ||
    fail "bin/loom-bench under mpiexec.$mpi ran another MPI's build"

  step "$mpi: mpi4py program under the installed loomrun"
  mpi4py_path=$("$root/tools/python-mpi4py.sh" --path "$mpi")
  if [[ ! -d "$mpi4py_path/mpi4py" ]]; then
    fail "no mpi4py built against $mpi at $mpi4py_path: run tools/install-deps.sh" \
      "(or tools/python-mpi4py.sh $mpi)"
  fi
  stats="$work/mpi4py_$mpi.stats"
  output=$(PYTHONPATH="$mpi4py_path${PYTHONPATH:+:$PYTHONPATH}" LOOM_STATS=1 \
    LOOM_MPIEXEC="mpiexec.$mpi" "$prefix/bin/loomrun" -n 2 python3 "$here/mpi4py_vector.py" \
    2>"$stats") || {
    cat "$stats"
    fail "mpi4py_vector.py under loomrun ($mpi)"
  }
  echo "$output"
  cat "$stats"
  [[ "$output" == *"mpi4py_vector: OK"* ]] || fail "mpi4py_vector.py reported errors ($mpi)"
  [[ "$output" == *"$expected_library"* ]] || fail "mpi4py ran on another MPI than $mpi"
  for pattern in "accelerated=[1-9]" "send packed=[1-9]" "recv unpacked=[1-9]" \
    "collectives: packed=[1-9]"; do
    ranks_seen=$(grep -c "$pattern" "$stats" || true)
    [[ $ranks_seen -ge 1 ]] || fail "LOOM_STATS shows no '$pattern' ($mpi)"
  done
  echo "mpi4py ($mpi): views sent and all-to-all'd through Create_vector types arrived intact;" \
    "Loom packed them"
done

echo
echo "check_install: PASS ($prefix)"
