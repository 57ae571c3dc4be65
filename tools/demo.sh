#!/usr/bin/env bash
# The README's demo: build Loom against one host MPI and compare MPI_Pack/MPI_Unpack of
# the host with Loom's on the default type corpus, as a table (plus JSON and plots).
#   LOOM_MPI=openmpi|mpich   host MPI to use (default openmpi)
#   extra arguments go to `loom-bench pack` (e.g. --quick, --types vector)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
mpi=${LOOM_MPI:-openmpi}
dir="$root/build/$mpi"
out="$root/bench-out"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
cmake -S "$root" -B "$dir" -DLOOM_MPI="$mpi" -DLOOM_BUILD_TESTS=OFF >/dev/null
cmake --build "$dir" -j "$(nproc)" --target loom-bench loom >/dev/null
mkdir -p "$out"
"$dir/loom-bench" pack --json "$out/pack-$mpi.json" "$@"
python3 "$root/tools/plot_bench.py" "$out/pack-$mpi.json" --out "$out" ||
  echo "demo: plotting skipped (matplotlib missing? run tools/install-deps.sh)"
