// loom-bench: one measurement tool comparing Loom with the host MPI in the same run.
#include <cstdio>
#include <cstring>

#include "bench/gpu/gpu_bench.hpp"
#include "bench/subcommands.hpp"

namespace {

using loom::bench::run_alltoall, loom::bench::run_app, loom::bench::run_gpu,
    loom::bench::run_gpu_pingpong, loom::bench::run_halo, loom::bench::run_match,
    loom::bench::run_measure, loom::bench::run_pack, loom::bench::run_pingpong,
    loom::bench::run_reorder, loom::bench::run_rma;

struct Subcommand {
  const char* name;
  const char* summary;
  int (*run)(int argc, char** argv);
};

const Subcommand kSubcommands[] = {
    {"pack", "MPI_Pack/Unpack: host vs Loom vs memcpy over a type corpus", run_pack},
    {"match", "message-matching backends: depth sweeps, app mixes, threads", run_match},
    {"measure", "calibrate the method model on this machine (writes LOOM_CACHE_DIR)", run_measure},
    {"pingpong", "derived-type ping-pong latency/bandwidth: host-native vs Loom (2 ranks)",
     run_pingpong},
    {"app", "application types at their sizes, MPI_Send/Recv ping-pong: host-native vs Loom",
     run_app},
    {"halo", "3-D 26-neighbour halo exchange with subarray types: host-native vs Loom", run_halo},
    {"alltoall", "MPI_Alltoall of float data: host vs Loom vs Loom compressed per codec mode",
     run_alltoall},
    {"rma", "one-sided put/get/accumulate, RMA-MT's matrix with threads, verified: host vs Loom",
     run_rma},
    {"reorder", "(no MPI) ranks renumbered onto nodes: inside-node traffic per partitioner",
     run_reorder},
    {"gpu", "CUDA transfers and device packs vs cudaMemcpy2D and per-block copies (no MPI)",
     run_gpu},
    {"gpu-pingpong",
     "(2 ranks) vector ping-pong of GPU buffers: Loom vs copying the extent to the host",
     run_gpu_pingpong},
};

void usage(FILE* out) {
  std::fprintf(out,
               "usage: loom-bench <subcommand> [options]   (loom-bench <subcommand> --help)\n\n");
  for (const auto& s : kSubcommands) std::fprintf(out, "  %-12s %s\n", s.name, s.summary);
  std::fprintf(out,
               "\noptions:\n"
               "  -h, --help  this text\n"
               "Every subcommand takes --help (its options and their defaults) and --quick.\n");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) {
    usage(argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  for (const auto& s : kSubcommands)
    if (!std::strcmp(argv[1], s.name)) return s.run(argc - 1, argv + 1);
  std::fprintf(stderr, "loom-bench: unknown subcommand '%s'\n", argv[1]);
  usage(stderr);
  return 2;
}
