#!/usr/bin/env bash
# Installs everything Loom needs to build, test, benchmark and plot on Debian/Ubuntu, and
# mpi4py built against each MPI for the python3 first on PATH (README, "Dependencies").
set -euo pipefail
case "${1:-}" in
  "") ;;
  -h | --help)
    echo "usage: tools/install-deps.sh   (no options; installs what is missing, see README)"
    exit 0
    ;;
  *)
    echo "install-deps: unknown argument '$1'" >&2
    echo "usage: tools/install-deps.sh   (no options)" >&2
    exit 2
    ;;
esac
sudo=""
[[ $(id -u) -eq 0 ]] || sudo="sudo"
packages=(
  cmake g++ make clang clang-format libclang-rt-14-dev   # toolchain, formatter, fuzzer runtime
  pkg-config                                             # the installed-Loom consumer test
  openmpi-bin libopenmpi-dev mpich libmpich-dev          # both host MPIs, side by side
  gfortran                                               # Fortran application tests
  libgtest-dev googletest                                # unit tests
  nlohmann-json3-dev                                     # the method model's calibration files
  libzfp-dev libblosc-dev                                # the codec engine (ZFP, Blosc)
  libhwloc-dev                                           # the halo library's placement (hwloc)
  python3 python3-pip python3-dev                        # plots; building mpi4py
  iproute2 util-linux                                    # tools/slow-link.sh: ip, tc; flock, unshare, taskset
  libsimgrid-dev                                         # the SMPI variant, tools/project.sh
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "install-deps: installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi
# matplotlib (plots) and numpy (the mpi4py test) for whichever python3 is first on PATH (it
# may not be Debian's).
for module in matplotlib numpy; do
  if ! python3 -c "import $module" 2>/dev/null; then
    echo "install-deps: installing $module for $(command -v python3)"
    python3 -m pip install -q "$module" 2>/dev/null ||
      python3 -m pip install -q --break-system-packages "$module"
  fi
done
# mpi4py against each MPI, built once and cached (Debian's python3-mpi4py is Open MPI's only,
# and for Debian's python3 only).
"$(dirname "$0")/python-mpi4py.sh" openmpi mpich
echo "install-deps: all dependencies present"
