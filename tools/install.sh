#!/usr/bin/env bash
# The README's install command: builds Loom against each MPI and installs every build into one
# prefix (layout: docs/install.md).
set -euo pipefail

usage() {
  cat <<'EOF_USAGE'
usage: tools/install.sh PREFIX [--mpi LIST] [--help]
  Builds Loom against each MPI in LIST (build/<mpi>; an existing build directory keeps its
  settings, a new one is made without tests) and installs them all into PREFIX:
  bin/loomrun, bin/loom-bench, lib/loom/<mpi>/libloom.so, lib/libloom_match.{so,a},
  include/loom/, CMake and pkg-config files, docs.
options:
  --mpi LIST   comma-separated MPIs to build and install (default: each of openmpi and mpich
               whose compiler wrapper mpicc.<mpi> is installed)
  --help       this text
environment:
  LOOM_JOBS=N  build parallelism (default nproc)
EOF_USAGE
}

prefix=""
mpis=""
while (($#)); do
  case "$1" in
    -h | --help)
      usage
      exit 0
      ;;
    --mpi)
      [[ $# -ge 2 ]] || { echo "install: --mpi needs a list" >&2 && usage >&2 && exit 2; }
      mpis=$2
      shift
      ;;
    -*)
      echo "install: unknown option '$1'" >&2
      usage >&2
      exit 2
      ;;
    *)
      [[ -z "$prefix" ]] || { echo "install: one PREFIX only" >&2 && usage >&2 && exit 2; }
      prefix=$1
      ;;
  esac
  shift
done
[[ -n "$prefix" ]] || { usage >&2 && exit 2; }
root=$(cd "$(dirname "$0")/.." && pwd)
jobs=${LOOM_JOBS:-$(nproc)}
if [[ -z "$mpis" ]]; then
  for mpi in openmpi mpich; do
    command -v "mpicc.$mpi" >/dev/null && mpis+=${mpis:+,}$mpi
  done
  [[ -n "$mpis" ]] || { echo "install: neither Open MPI nor MPICH is installed (tools/install-deps.sh)" >&2 && exit 2; }
fi
IFS=, read -r -a mpi_list <<<"$mpis"
for mpi in "${mpi_list[@]}"; do
  case "$mpi" in
    openmpi | mpich) ;;
    *)
      echo "install: unknown MPI '$mpi' (openmpi, mpich)" >&2
      exit 2
      ;;
  esac
  dir="$root/build/$mpi"
  tests_off=()
  [[ -f "$dir/CMakeCache.txt" ]] || tests_off=(-DLOOM_BUILD_TESTS=OFF)
  echo "== building Loom against $mpi in $dir"
  cmake -S "$root" -B "$dir" -DLOOM_MPI="$mpi" "${tests_off[@]}" >/dev/null
  cmake --build "$dir" -j "$jobs" --target loom loom-bench loom_match loom_match_shared >/dev/null
  echo "== installing the $mpi build into $prefix"
  cmake --install "$dir" --prefix "$prefix" >/dev/null
done
echo "installed: $prefix/bin/loomrun ($(IFS=' ' && echo "${mpi_list[*]}")); see $prefix/share/doc/loom/install.md"
