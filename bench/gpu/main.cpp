// loom-gpu-bench: `loom-bench gpu` for machines without an MPI (the measurements need none).
#include "bench/gpu/gpu_bench.hpp"

int main(int argc, char** argv) {
  return loom::bench::run_gpu(argc, argv);
}
