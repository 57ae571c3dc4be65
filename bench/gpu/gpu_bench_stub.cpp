// loom-bench gpu in a build without CUDA.
#include <cstdio>
#include <cstring>

#include "bench/gpu/gpu_bench.hpp"

namespace loom::bench {

namespace {

// --help: the usage line `command` [options] and why there is nothing more (exit 0); anything
// else: `tool` says this build has no CUDA (exit 1).
int without_cuda(int argc, char** argv, const char* tool, const char* command) {
  if (argc > 1 && (!std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h"))) {
    std::printf(
        "usage: %s [options]\n  (this Loom was built without CUDA: configure with "
        "-DLOOM_CUDA=ON and nvcc on PATH)\n",
        command);
    return 0;
  }
  std::fprintf(stderr, "%s: this Loom was built without CUDA (-DLOOM_CUDA=ON)\n", tool);
  return 1;
}

}  // namespace

int run_gpu(int argc, char** argv) {
  return without_cuda(argc, argv, "loom-bench gpu", "loom-bench gpu");
}

int run_gpu_pingpong(int argc, char** argv) {
  return without_cuda(argc, argv, "loom-bench gpu-pingpong",
                      "mpiexec -n 2 loom-bench gpu-pingpong");
}

}  // namespace loom::bench
