// loom-bench gpu (gpu_bench.cu): CUDA transfers and device packs, no MPI.
#pragma once

namespace loom::bench {
// argv[0] is the subcommand name. Returns 1 where no GPU can be measured.
int run_gpu(int argc, char** argv);
// loom-bench gpu-pingpong (gpu_pingpong.cu, MPI and CUDA): device-buffer ping-pong, 2 ranks.
int run_gpu_pingpong(int argc, char** argv);
}  // namespace loom::bench
