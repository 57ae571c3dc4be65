#!/usr/bin/env bash
# mpi4py built against one host MPI, for the python3 first on PATH (it may not be Debian's,
# whose python3-mpi4py knows Open MPI only). Built once from source with pip and cached:
#   tools/python-mpi4py.sh MPI...          build what is missing (openmpi, mpich)
#   tools/python-mpi4py.sh --path MPI      print the directory to put on PYTHONPATH
# Cache: ${XDG_CACHE_HOME:-~/.cache}/loom/mpi4py/<python tag>-<mpi>-<mpi4py major>/.
set -euo pipefail
usage() {
  echo "usage: tools/python-mpi4py.sh [--path] openmpi|mpich...   (--help: see the file's header)"
}
path_only=0
mpis=()
for arg in "$@"; do
  case "$arg" in
    -h | --help)
      sed -n '2,6s/^# \{0,1\}//p' "$0"
      exit 0
      ;;
    --path) path_only=1 ;;
    openmpi | mpich) mpis+=("$arg") ;;
    *)
      echo "python-mpi4py: unknown argument '$arg'" >&2
      usage >&2
      exit 2
      ;;
  esac
done
((${#mpis[@]})) || {
  usage >&2
  exit 2
}
python_tag=$(python3 -c 'import sys, sysconfig; print(sys.implementation.cache_tag + "-" + sysconfig.get_platform())')
cache="${XDG_CACHE_HOME:-$HOME/.cache}/loom/mpi4py"
for mpi in "${mpis[@]}"; do
  # mpi4py 4 on both: on MPICH 4 it calls MPI-4's large-count functions (MPI_Send_c,
  # MPI_Type_vector_c, ...), which Loom serves as it serves the classic ones.
  major=4
  target="$cache/$python_tag-$mpi-$major"
  if ((path_only)); then
    echo "$target"
    continue
  fi
  [[ -f "$target/.complete" ]] && continue
  echo "python-mpi4py: building mpi4py against $mpi for $(command -v python3) (a few minutes, once)"
  rm -rf "$target" "$target.partial"
  # From source: a binary wheel would bring its own MPI or another ABI. Into a temporary
  # directory first, so an interrupted build never looks complete.
  # No pip cache: its wheel built against one MPI would be reused for the other.
  pip_install=(python3 -m pip install -q --root-user-action=ignore --no-cache-dir
    --no-binary=mpi4py --no-deps --target "$target.partial")
  version="mpi4py>=$major.0,<$((major + 1))"
  MPICC="mpicc.$mpi" "${pip_install[@]}" "$version" ||
    MPICC="mpicc.$mpi" "${pip_install[@]}" --break-system-packages "$version"
  mv "$target.partial" "$target"
  touch "$target/.complete"
done
