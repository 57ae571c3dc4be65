#!/usr/bin/env bash
# Copies this machine's runtime of a host MPI (Debian's packages: the launcher, the MPI library,
# its components and the shared libraries they need beyond glibc and libstdc++) into DEST,
# relocatable, for a machine that has no MPI (the lent GPU machine). There:
#   source DEST/env.sh && mpiexec -n 2 ./app
#   tools/pack-mpi-runtime.sh openmpi|mpich DEST
set -euo pipefail
mpi=${1:-}
dest=${2:-}
if [[ "$mpi" != openmpi && "$mpi" != mpich ]] || [[ -z "$dest" ]]; then
  echo "usage: tools/pack-mpi-runtime.sh openmpi|mpich DEST" >&2
  exit 2
fi
lib=/usr/lib/x86_64-linux-gnu
rm -rf "$dest"
mkdir -p "$dest/bin" "$dest/lib"

if [[ "$mpi" == openmpi ]]; then
  mkdir -p "$dest/usr/lib/x86_64-linux-gnu" "$dest/usr/share"
  cp -aL /usr/bin/orterun "$dest/bin/mpiexec"
  ln -s mpiexec "$dest/bin/mpiexec.openmpi"
  cp -aL /usr/bin/orted "$dest/bin/orted"
  cp -a "$lib/openmpi" "$lib/pmix2" "$dest/usr/lib/x86_64-linux-gnu/"
  cp -a /usr/share/openmpi "$dest/usr/share/"
  objects=("$dest/bin/mpiexec" "$dest/bin/orted" "$lib/libmpi.so.40"
    "$lib"/openmpi/lib/openmpi3/*.so "$lib"/pmix2/lib/pmix/*.so)
  cat >"$dest/env.sh" <<'ENV'
# Source me: the relocated Open MPI of tools/pack-mpi-runtime.sh.
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export OPAL_PREFIX="$here/usr"
export PATH="$here/bin:$PATH"
export LD_LIBRARY_PATH="$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PMIX_MCA_mca_base_component_path="$here/usr/lib/x86_64-linux-gnu/pmix2/lib/pmix"
export PMIX_MCA_pcompress_base_silence_warning=1
export OMPI_MCA_btl=self,vader OMPI_MCA_pml=ob1 OMPI_MCA_btl_vader_single_copy_mechanism=none
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
ENV
else
  # MPICH 4 (ch4 over UCX) and its Hydra launcher; UCX loads its transports from UCX_MODULE_DIR.
  cp -aL /usr/bin/mpiexec.hydra "$dest/bin/mpiexec"
  ln -s mpiexec "$dest/bin/mpiexec.mpich"
  cp -aL /usr/bin/hydra_pmi_proxy "$dest/bin/"
  cp -L "$lib/libmpich.so.12" "$dest/lib/"
  mkdir -p "$dest/lib/ucx"
  cp -L "$lib"/ucx/libuct_cma.so.0 "$dest/lib/ucx/"
  objects=("$dest/bin/mpiexec" "$dest/bin/hydra_pmi_proxy" "$lib/libmpich.so.12"
    "$lib"/ucx/libuct_cma.so.0)
  cat >"$dest/env.sh" <<'ENV'
# Source me: the relocated MPICH of tools/pack-mpi-runtime.sh.
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export PATH="$here/bin:$PATH"
export LD_LIBRARY_PATH="$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export UCX_MODULE_DIR="$here/lib/ucx"
export HYDRA_LAUNCHER=fork
ENV
fi

for f in "${objects[@]}"; do ldd "$f" 2>/dev/null | awk '/=>/ {print $3}'; done | sort -u |
  grep -v -E '/(libc|libm|libdl|libpthread|librt|ld-linux-x86-64|libstdc\+\+|libgcc_s|libresolv|libutil)\.so' |
  while read -r so; do [[ -e "$dest/lib/$(basename "$so")" ]] || cp -L "$so" "$dest/lib/"; done
du -sh "$dest"
