#!/usr/bin/env bash
# Installs everything Loom needs to build, test, benchmark and plot on Debian/Ubuntu.
set -euo pipefail
sudo=""
[[ $(id -u) -eq 0 ]] || sudo="sudo"
packages=(
  cmake g++ make clang clang-format libclang-rt-14-dev   # toolchain, formatter, fuzzer runtime
  openmpi-bin libopenmpi-dev mpich libmpich-dev          # both host MPIs, side by side
  gfortran                                               # Fortran application tests
  libgtest-dev googletest                                # unit tests
  nlohmann-json3-dev                                     # the method model's calibration files
  python3 python3-pip                                    # plots from loom-bench JSON
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
# matplotlib for whichever python3 is first on PATH (it may not be Debian's).
if ! python3 -c 'import matplotlib' 2>/dev/null; then
  echo "install-deps: installing matplotlib for $(command -v python3)"
  python3 -m pip install -q matplotlib 2>/dev/null ||
    python3 -m pip install -q --break-system-packages matplotlib
fi
echo "install-deps: all dependencies present"
