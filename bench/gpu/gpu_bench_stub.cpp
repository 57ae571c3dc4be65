// loom-bench gpu in a build without CUDA.
#include <cstdio>
#include <cstring>

#include "bench/gpu/gpu_bench.hpp"

namespace loom::bench {

int run_gpu(int argc, char** argv) {
  if (argc > 1 && (!std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h"))) {
    std::printf(
        "usage: loom-bench gpu [options]\n  (this Loom was built without CUDA: configure "
        "with -DLOOM_CUDA=ON and nvcc on PATH)\n");
    return 0;
  }
  std::fprintf(stderr, "loom-bench gpu: this Loom was built without CUDA (-DLOOM_CUDA=ON)\n");
  return 1;
}

int run_gpu_pingpong(int argc, char** argv) {
  if (argc > 1 && (!std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h"))) {
    std::printf(
        "usage: mpiexec -n 2 loom-bench gpu-pingpong [options]\n  (this Loom was built "
        "without CUDA: configure with -DLOOM_CUDA=ON and nvcc on PATH)\n");
    return 0;
  }
  std::fprintf(stderr,
               "loom-bench gpu-pingpong: this Loom was built without CUDA (-DLOOM_CUDA=ON)\n");
  return 1;
}

}  // namespace loom::bench
