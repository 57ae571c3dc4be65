#!/usr/bin/env bash
# Copies this machine's Open MPI runtime (Debian's packages: mpiexec, libmpi, its MCA and PMIx
# components, help files and the shared libraries they need beyond glibc and libstdc++) into
# DEST, relocatable, for a machine that has no MPI (the lent GPU machine). There:
#   source DEST/env.sh && mpiexec -n 2 ./app
set -euo pipefail
dest=${1:?usage: tools/pack-openmpi-runtime.sh DEST}
lib=/usr/lib/x86_64-linux-gnu
rm -rf "$dest"
mkdir -p "$dest/bin" "$dest/lib" "$dest/usr/lib/x86_64-linux-gnu" "$dest/usr/share"
cp -aL /usr/bin/orterun "$dest/bin/mpiexec"
cp -aL /usr/bin/orted "$dest/bin/orted"
cp -a "$lib/openmpi" "$lib/pmix2" "$dest/usr/lib/x86_64-linux-gnu/"
cp -a /usr/share/openmpi "$dest/usr/share/"
objects=("$dest/bin/mpiexec" "$dest/bin/orted" "$lib/libmpi.so.40" "$lib"/openmpi/lib/openmpi3/*.so
  "$lib"/pmix2/lib/pmix/*.so)
for f in "${objects[@]}"; do ldd "$f" 2>/dev/null | awk '/=>/ {print $3}'; done | sort -u |
  grep -v -E '/(libc|libm|libdl|libpthread|librt|ld-linux-x86-64|libstdc\+\+|libgcc_s|libresolv|libutil)\.so' |
  while read -r so; do cp -L "$so" "$dest/lib/"; done
cat >"$dest/env.sh" <<'ENV'
# Source me: the relocated Open MPI of tools/pack-openmpi-runtime.sh.
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export OPAL_PREFIX="$here/usr"
export PATH="$here/bin:$PATH"
export LD_LIBRARY_PATH="$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PMIX_MCA_mca_base_component_path="$here/usr/lib/x86_64-linux-gnu/pmix2/lib/pmix"
export PMIX_MCA_pcompress_base_silence_warning=1
export OMPI_MCA_btl=self,vader OMPI_MCA_pml=ob1 OMPI_MCA_btl_vader_single_copy_mechanism=none
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
ENV
du -sh "$dest"
