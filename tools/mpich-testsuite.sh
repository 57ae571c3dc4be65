#!/bin/bash
# MPICH's own test suite (test/mpi of MPICH 4.0.2, from Debian's source package), run natively and
# under Loom with the same launcher, and the two sets of verdicts compared test by test.
# Loom must change no verdict and print nothing. Not part of CI (15-40 minutes on 2 cores);
# docs/testing.md, "MPICH's test suite, natively and under Loom".
#
# usage: tools/mpich-testsuite.sh <openmpi|mpich> <libloom.so> [workdir] [dirs]
#   dirs: the suite's directories to run (default "datatype pt2pt coll"), each with its
#   testlist and, where it has one, testlist.dtp (the DTPools datatype tests)
# environment: MPITEST_TIMEOUT (seconds per test, default 120), MAXNP (most ranks, default 4;
#   tests that ask for more run on MAXNP, and some of them then fail alike in both runs)
set -euo pipefail

mpi=${1:?usage: $0 <openmpi|mpich> <libloom.so> [workdir] [dirs]}
lib=$(readlink -f "${2:?usage: $0 <openmpi|mpich> <libloom.so> [workdir] [dirs]}")
work=$(mkdir -p "${3:-/tmp/loom-mpich-testsuite}" && cd "${3:-/tmp/loom-mpich-testsuite}" && pwd)
dirs=${4:-datatype pt2pt coll}
[[ -f $lib ]] || { echo "no library at $lib" >&2; exit 2; }

tarball=mpich_4.0.2.orig.tar.xz
md5=8854168c129fbe94a742d74d042a663e  # from Debian's mpich_4.0.2-3.dsc
suite=$work/$mpi/mpich-4.0.2/test/mpi
cd "$work"
if [[ ! -f $tarball ]]; then
  curl -fsSL -o $tarball.part "http://deb.debian.org/debian/pool/main/m/mpich/$tarball"
  mv $tarball.part $tarball
fi
echo "$md5  $tarball" | md5sum -c --quiet

if [[ ! -f $suite/.built ]]; then
  rm -rf "${work:?}/$mpi" && mkdir -p "$work/$mpi"
  tar -C "$work/$mpi" -xJf $tarball mpich-4.0.2/test/mpi mpich-4.0.2/confdb mpich-4.0.2/maint
  cd "$suite"
  # The suite links CUDA where it finds the toolkit and then asserts that a GPU answers; on a
  # machine without one, count none and test host memory only.
  python3 - <<'EOF'
p = 'util/mtest_common.c'
s = open(p).read()
old = "        cudaGetDeviceCount(&ndevices);\n        assert(ndevices != -1);"
assert old in s, 'mtest_common.c changed'
open(p, 'w').write(s.replace(old, "        if (cudaGetDeviceCount(&ndevices) != cudaSuccess)\n            ndevices = 0;"))
EOF
  cflags="-g -O2"
  # DTPools calls MPI-1 constructors that Open MPI's mpi.h turns into compile errors; its
  # library still has them.
  [[ $mpi == openmpi ]] && cflags+=" -DOMPI_OMIT_MPI1_COMPAT_DECLS=0"
  ./configure --with-mpi=/usr CC="mpicc.$mpi" CXX="mpicxx.$mpi" MPICC="mpicc.$mpi" MPICXX="mpicxx.$mpi" \
    --disable-fortran --disable-cxx --disable-spawn --disable-ft-tests CFLAGS="$cflags" \
    > "$work/$mpi/configure.log" 2>&1
  make -C util -j2 > "$work/$mpi/make.log" 2>&1
  make -C dtpools -j2 >> "$work/$mpi/make.log" 2>&1
  # shellcheck disable=SC2086
  # -k: Open MPI 4.1 lacks MPI-4's functions, and the tests that call them fail alike in both runs
  for d in $dirs; do make -k -C "$d" -j2 >> "$work/$mpi/make.log" 2>&1 || true; done
  touch .built
fi

cd "$suite"
# shellcheck disable=SC2086 # the list of directories splits on purpose
printf '%s\n' $dirs > testlist
launcher() {  # $1: native|loom
  local f=$work/$mpi/mpiexec-$1
  {
    echo '#!/bin/bash'
    echo 'export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1'
    echo 'export OMPI_MCA_rmaps_base_oversubscribe=1'
    if [[ $1 == native ]]; then
      echo "exec mpiexec.$mpi \"\$@\""
    elif [[ $mpi == openmpi ]]; then
      echo "exec mpiexec.openmpi -x LD_PRELOAD=$lib \"\$@\""
    else
      echo "exec mpiexec.mpich -genv LD_PRELOAD $lib \"\$@\""
    fi
  } > "$f"
  chmod +x "$f"
  echo "$f"
}
for run in native loom; do
  echo "running the suite ($run, $dirs) ..."
  MPITEST_TIMEOUT=${MPITEST_TIMEOUT:-120} ./runtests -srcdir=. -tests=testlist,testlist.dtp \
    -mpiexec="$(launcher $run)" -maxnp="${MAXNP:-4}" -tapfile="$work/$mpi/$run.tap" \
    > "$work/$mpi/$run.log" 2>&1 || true
  tail -2 "$work/$mpi/$run.log" | head -1
done

verdicts() { grep -E '^(not )?ok ' "$1" | sed 's/ *#.*//'; }
status=0
if ! diff <(verdicts "$work/$mpi/native.tap") <(verdicts "$work/$mpi/loom.tap") > "$work/$mpi/verdicts.diff"; then
  echo "verdicts differ (native <, Loom >):"
  cat "$work/$mpi/verdicts.diff"
  status=1
fi
if grep -E 'Unexpected output in [^:]+: (\[loom\]|loom:)' "$work/$mpi/loom.log"; then
  echo "Loom wrote to the tests' output"
  status=1
fi
echo "$(verdicts "$work/$mpi/loom.tap" | grep -c '^ok') passed, $(verdicts "$work/$mpi/loom.tap" | grep -c '^not ok') failed under Loom; natively $(verdicts "$work/$mpi/native.tap" | grep -c '^ok') and $(verdicts "$work/$mpi/native.tap" | grep -c '^not ok')"
[[ $status == 0 ]] && echo "same verdicts natively and under Loom"
exit $status
