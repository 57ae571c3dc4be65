#!/usr/bin/env bash
# Packs what tools/gpu-check.sh needs on the lent GPU machine, which has CUDA but no MPI and
# none of Loom's dependencies, into one archive: per MPI, the binaries of the gpu-labelled
# tests with a CTest file of those tests (so that `ctest -L gpu` runs there), loom-bench and
# loom-gpu-bench, Loom's libraries, the shared libraries they load beyond glibc, and the MPI's
# runtime (tools/pack-mpi-runtime.sh).
#   tools/gpu-bundle.sh ARCHIVE.tar.xz [MPI...]   (default: openmpi mpich; build/MPI configured
#                                                  with LOOM_CUDA=ON and built)
# On the GPU machine:  tar -xJf ARCHIVE.tar.xz && tools/gpu-check.sh gpu-bundle/openmpi ...
set -euo pipefail
archive=${1:?usage: tools/gpu-bundle.sh ARCHIVE.tar.xz [openmpi] [mpich]}
shift
mpis=("$@")
[[ ${#mpis[@]} -gt 0 ]] || mpis=(openmpi mpich)
root=$(cd "$(dirname "$0")/.." && pwd)
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
files=(loom-bench loom-gpu-bench interpose/libloom.so halo/libloom_halo.so
  tests/device/cuda_executor_tests tests/mpi/loom_mpi_device_buffers
  tests/mpi/loom_mpi_device_buffers_cuda)
for mpi in "${mpis[@]}"; do
  build="$root/build/$mpi"
  dest="$stage/gpu-bundle/$mpi"
  for f in "${files[@]}"; do
    [[ -e "$build/$f" ]] || { echo "gpu-bundle: $build/$f missing (build with LOOM_CUDA=ON)" >&2; exit 1; }
    mkdir -p "$dest/$(dirname "$f")"
    cp -L "$build/$f" "$dest/$f"
  done
  "$root/tools/pack-mpi-runtime.sh" "$mpi" "$dest/mpi-runtime" >/dev/null
  mkdir -p "$dest/lib"
  for f in "${files[@]}"; do ldd "$build/$f" | awk '/=>/ {print $3}'; done | sort -u |
    grep -v -E '/(libc|libm|libdl|libpthread|librt|ld-linux-x86-64|libstdc\+\+|libgcc_s|libresolv|libutil)\.so' |
    grep -v "^$build/" | while read -r so; do
      [[ -e "$dest/mpi-runtime/lib/$(basename "$so")" ]] || cp -L "$so" "$dest/lib/"
    done
  # The gpu-labelled tests, the bundle's path left as @BUNDLE@ (tools/gpu-check.sh fills it in)
  # and the launcher found on PATH (the runtime's env.sh puts it there).
  ctest --test-dir "$build" --show-only=json-v1 -L gpu 2>/dev/null |
    python3 -c '
import json, os, sys
build = sys.argv[1]
def quote(text):
    text = str(text).replace("\\", "\\\\").replace("\"", "\\\"").replace("$", "\\$")
    return "\"" + text.replace(build, "@BUNDLE@") + "\""
for test in json.load(sys.stdin)["tests"]:
    command = test["command"]
    if os.path.basename(command[0]).startswith("mpiexec"):
        command[0] = os.path.basename(command[0])
    print("add_test(" + " ".join(quote(a) for a in [test["name"]] + command) + ")")
    props = []
    for p in test.get("properties", []):
        value = p["value"]
        value = ";".join(str(v) for v in value) if isinstance(value, list) else value
        props += [p["name"], quote(value)]
    if props:
        print("set_tests_properties(" + quote(test["name"]) + " PROPERTIES " + " ".join(props) + ")")
' "$build" >"$dest/CTestTestfile.cmake.in"
done
tar -C "$stage" -cJf "$archive" gpu-bundle
du -h "$archive"
