#!/usr/bin/env bash
# Installs what Loom needs on Debian/Ubuntu (README, "Dependencies"), in two sets:
#   tools/install-deps.sh           the demo's: compiler, CMake, Open MPI, the codec, placement and
#                                   partitioning libraries, matplotlib for the plots
#   tools/install-deps.sh --tests   also the test command's: MPICH, GoogleTest, clang (formatter,
#                                   fuzzer), gfortran, ccache, numpy and mpi4py
# Only what is missing is installed; a second run does nothing.
set -euo pipefail
tests=0
case "${1:-}" in
  "") ;;
  --tests) tests=1 ;;
  -h | --help)
    sed -n '2,7s/^# \{0,1\}//p' "$0"
    exit 0
    ;;
  *)
    echo "install-deps: unknown argument '$1'" >&2
    echo "usage: tools/install-deps.sh [--tests]   (--help: what each set holds)" >&2
    exit 2
    ;;
esac
sudo=""
[[ $(id -u) -eq 0 ]] || sudo="sudo"
packages=(
  cmake g++ make pkg-config                    # toolchain
  openmpi-bin libopenmpi-dev                   # the demo's host MPI
  nlohmann-json3-dev                           # the method model's calibration files
  libzfp-dev libblosc-dev                      # the codec engine (ZFP, Blosc)
  libhwloc-dev                                 # the halo library's placement (hwloc)
  libmetis-dev libscotch-dev                   # rank reordering's partitioners (METIS, Scotch)
  python3 python3-pip                          # plots; the KaHIP wheel
)
if ((tests)); then
  packages+=(
    mpich libmpich-dev                         # the second host MPI
    libgtest-dev googletest                    # unit and MPI test suites
    clang clang-format libclang-rt-14-dev      # formatter, sanitizers' and fuzzer's runtime
    gfortran                                   # Fortran application tests
    ccache                                     # the test command's builds share their objects
    python3-dev patchelf                       # mpi4py (patchelf: its MPICH module onto Debian's libmpich)
    iproute2 util-linux                        # tools/slow-link.sh: ip, tc; flock, unshare
    libsimgrid-dev                             # the SMPI variant and its tests (SimGrid 3.32)
  )
fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "install-deps: installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null
fi
# Python modules for whichever python3 is first on PATH (it may not be Debian's): matplotlib
# for the plots; kahip, rank reordering's KaHIP partitioner (CMake finds its header and static
# library inside the wheel); numpy and mpi4py for the mpi4py test.
modules=(matplotlib kahip)
((tests)) && modules+=(numpy)
for module in "${modules[@]}"; do
  if ! python3 -c "import $module" 2>/dev/null; then
    echo "install-deps: installing $module for $(command -v python3)"
    python3 -m pip install -q --root-user-action=ignore "$module" 2>/dev/null ||
      python3 -m pip install -q --root-user-action=ignore --break-system-packages "$module"
  fi
done
if ((tests)); then
  "$(dirname "$0")/python-mpi4py.sh" openmpi mpich
fi
if ((tests)); then
  echo "install-deps: the demo's and the test command's dependencies are present"
else
  echo "install-deps: the demo's dependencies are present (--tests adds the test command's)"
fi
