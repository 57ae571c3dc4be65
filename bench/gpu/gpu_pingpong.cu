// loom-bench gpu-pingpong: a derived-type ping-pong between buffers in GPU memory on a host MPI
// that is not CUDA-aware, through Loom (MPI_Send/MPI_Recv on the device buffers) against what an
// application must do there without Loom: copy the whole extent to the host, send it with the
// datatype (the host's own engine, PMPI_*), receive likewise and copy the extent back. Two
// ranks, CUDA events are not needed: host clocks around whole round trips.
#include <cuda_runtime.h>
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "bench/gpu/gpu_bench.hpp"
#include "bench/report.hpp"
#include "loom/loom.h"

namespace loom::bench {

namespace {

constexpr const char* kTool = "loom-bench gpu-pingpong";

#define CUDA_OK(call)                                                                     \
  do {                                                                                    \
    const cudaError_t rc_ = (call);                                                       \
    if (rc_ != cudaSuccess) {                                                             \
      std::fprintf(stderr, "%s: %s failed: %s\n", kTool, #call, cudaGetErrorString(rc_)); \
      MPI_Abort(MPI_COMM_WORLD, 1);                                                       \
    }                                                                                     \
  } while (0)

struct Options : SamplingOptions {
  Options() : SamplingOptions(200, 5, 0.3) {}
  std::vector<int64_t> sizes, blocks;
  int rounds = 5;  // Loom's and the application's timings alternated, the time shared among them
  bool rounds_given = false;
};

void usage(FILE* out) {
  std::fprintf(
      out,
      "usage: mpiexec -n 2 loom-bench gpu-pingpong [options]\n"
      "  Vector ping-pong between GPU buffers: Loom vs copy-extent-to-host + host datatype\n"
      "  send (docs/gpu.md). Loom must see the device: CUDA starts before MPI_Init here.\n"
      "  --sizes LIST   packed bytes per message (default 4K,64K,1M,16M; --quick 64K,1M)\n"
      "  --blocks LIST  block bytes, every other block taken (default 4,8,16,64,256;\n"
      "                 0 = contiguous)\n"
      "  --rounds N     alternated rounds of Loom's and the application's trips (default 5,\n"
      "                 --quick 3); the table gives each side's median and the spread of the\n"
      "                 rounds' speed-ups\n"
      "  --quick, --reps N (default 200 per round), --time SECONDS (default 0.3 per case and\n"
      "  side, shared among the rounds), --json FILE\n");
}

// What one rank does per round trip; rank 0 starts.
template <typename Send, typename Recv>
double round_trips(int rank, int reps, Send&& send, Recv&& recv) {
  MPI_Barrier(MPI_COMM_WORLD);
  const double t0 = MPI_Wtime();
  for (int r = 0; r < reps; ++r) {
    if (rank == 0) {
      send();
      recv();
    } else {
      recv();
      send();
    }
  }
  return (MPI_Wtime() - t0) / reps;
}

// Round trips per timing for about `seconds`, at least the rounds' share of `min_reps`, the same
// count on both ranks; after a warm-up trip.
template <typename Trip>
int reps_for(const Options& o, double seconds, Trip& trip) {
  trip(1);
  double estimate = trip(2);  // seconds per round trip
  MPI_Bcast(&estimate, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  const int least = std::max(1, (o.min_reps + o.rounds - 1) / o.rounds);
  return std::clamp(static_cast<int>(seconds / std::max(estimate, 1e-7)), least,
                    std::max(least, o.max_reps));
}

// Loom's and the application's one-way times, round by round, the side that goes first
// alternating: a drift of the machine during a case falls on both sides alike.
struct Rounds {
  std::vector<double> loom, app;
  double loom_median() const { return summarize(loom).median; }
  double app_median() const { return summarize(app).median; }
  Summary speedups() const {
    std::vector<double> r;
    for (size_t i = 0; i < loom.size(); ++i) r.push_back(app[i] / loom[i]);
    return summarize(r);
  }
};

template <typename LoomTrip, typename AppTrip>
Rounds time_rounds(const Options& o, LoomTrip&& loom_trip, AppTrip&& app_trip) {
  const double seconds = o.seconds_per_case / o.rounds;
  const int loom_reps = reps_for(o, seconds, loom_trip);
  const int app_reps = reps_for(o, seconds, app_trip);
  Rounds r;
  for (int round = 0; round < o.rounds; ++round) {
    if (round % 2 == 0) r.loom.push_back(loom_trip(loom_reps) / 2);
    r.app.push_back(app_trip(app_reps) / 2);
    if (round % 2 == 1) r.loom.push_back(loom_trip(loom_reps) / 2);
  }
  return r;
}

// Returns -1 to continue, or an exit code.
int parse_options(int argc, char** argv, Options* o) {
  const int parsed = parse_subcommand_options(
      argc, argv, kTool, o, usage, {"--sizes", "--blocks", "--rounds"},
      [&](const std::string& a, const char* v) {
        if (!v) return OptionParse::NotMine;
        if (a == "--rounds") {
          if (!parse_positive(v, &o->rounds)) {
            bad_option_value(kTool, "--rounds");
            return OptionParse::Bad;
          }
          o->rounds_given = true;
          return OptionParse::Taken;
        }
        if (a == "--sizes")
          return parse_size_list(kTool, "--sizes", v, &o->sizes) ? OptionParse::Taken
                                                                 : OptionParse::Bad;
        for (const std::string& b : split_commas(v)) {
          int block = 0;
          if (b != "0" && !parse_positive(b.c_str(), &block)) {
            bad_option_value(kTool, "--blocks (block bytes, or 0 for contiguous)");
            return OptionParse::Bad;
          }
          o->blocks.push_back(block);
        }
        return OptionParse::Taken;
      });
  if (parsed >= 0) return parsed;
  o->finish(0.1);
  if (o->quick && !o->rounds_given) o->rounds = 3;
  if (o->sizes.empty())
    o->sizes = o->quick ? std::vector<int64_t>{64 << 10, 1 << 20}
                        : std::vector<int64_t>{4 << 10, 64 << 10, 1 << 20, 16 << 20};
  if (o->blocks.empty()) o->blocks = {4, 8, 16, 64, 256, 0};
  return -1;
}

// Rank 0 sends `sent` through Loom from device memory, rank 1 receives into device memory
// holding `background`; only the blocks may change. True (on both ranks) when rank 1 got
// exactly that.
bool verify_case(int rank, MPI_Datatype type, char* device, int64_t block, int64_t n, int64_t size,
                 const std::vector<char>& sent, const std::vector<char>& background) {
  const int peer = 1 - rank;
  const size_t bytes = sent.size();
  CUDA_OK(cudaMemcpy(device, rank == 0 ? sent.data() : background.data(), bytes,
                     cudaMemcpyHostToDevice));
  if (rank == 0)
    MPI_Send(device, 1, type, peer, 1, MPI_COMM_WORLD);
  else
    MPI_Recv(device, 1, type, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  int ok = 1;
  if (rank == 1) {
    std::vector<char> got(bytes);
    CUDA_OK(cudaMemcpy(got.data(), device, bytes, cudaMemcpyDeviceToHost));
    std::vector<char> expect = background;
    for (int64_t b = 0; b < n; ++b)
      std::memcpy(expect.data() + (block > 0 ? 2 * b * block : 0),
                  sent.data() + (block > 0 ? 2 * b * block : 0),
                  static_cast<size_t>(block > 0 ? block : size));
    ok = expect == got;
  }
  MPI_Bcast(&ok, 1, MPI_INT, 1, MPI_COMM_WORLD);
  return ok != 0;
}

}  // namespace

int run_gpu_pingpong(int argc, char** argv) {
  Options o;
  if (const int rc = parse_options(argc, argv, &o); rc >= 0) return rc;

  // CUDA first, so that Loom (LOOM_DEVICE=auto) finds the driver loaded at MPI_Init.
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::fprintf(stderr, "%s: no GPU to measure\n", kTool);
    return 1;
  }
  CUDA_OK(cudaFree(nullptr));
  MPI_Init(&argc, &argv);
  int rank = 0, ranks = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  if (ranks != 2) {
    if (rank == 0) std::fprintf(stderr, "%s: run with 2 ranks\n", kTool);
    MPI_Finalize();
    return 2;
  }
  const int peer = 1 - rank;
  std::vector<Comparison> compared;  // Loom against the copy-to-host path, every case
  CaseStats small;                   // its speed-ups with blocks <= 16 B
  std::vector<std::string> mismatched;
  Table table(
      {"case", "packed", "loom us", "copy+host us", "speed-up", "rounds' range", "verified"});
  JsonWriter j;
  j.begin_object();
  j.field("subcommand", "gpu-pingpong");
  j.field("rounds", o.rounds);
  j.begin_array("cases");
  int failures = 0;
  for (int64_t block : o.blocks)
    for (int64_t size : o.sizes) {
      // Blocks of `block` bytes every 2 x block (MPI_BYTE elements), or contiguous bytes.
      MPI_Datatype type;
      const int64_t n = block > 0 ? size / block : 1;
      if (block > 0)
        MPI_Type_vector(static_cast<int>(n), static_cast<int>(block), static_cast<int>(2 * block),
                        MPI_BYTE, &type);
      else
        MPI_Type_contiguous(static_cast<int>(size), MPI_BYTE, &type);
      MPI_Type_commit(&type);
      const int64_t span = block > 0 ? (2 * n - 1) * block : size;
      const size_t bytes = static_cast<size_t>(span);
      char *device, *host;
      CUDA_OK(cudaMalloc(&device, bytes));
      CUDA_OK(cudaMallocHost(&host, bytes));  // the application's copies at their best
      std::vector<char> sent(bytes), background(bytes);
      fill_pattern(reinterpret_cast<unsigned char*>(sent.data()), span, 17 + block);
      fill_pattern(reinterpret_cast<unsigned char*>(background.data()), span, 99);
      const bool ok = verify_case(rank, type, device, block, n, size, sent, background);
      if (!ok) ++failures;
      const std::string name = block > 0 ? format("vec_b%lld", static_cast<long long>(block))
                                         : std::string("contiguous");
      const std::string label = name + " " + human_bytes(size);
      if (!ok) mismatched.push_back(label);

      auto loom_trip = [&](int reps) {
        return round_trips(
            rank, reps, [&] { MPI_Send(device, 1, type, peer, 2, MPI_COMM_WORLD); },
            [&] { MPI_Recv(device, 1, type, peer, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE); });
      };
      auto app_trip = [&](int reps) {
        return round_trips(
            rank, reps,
            [&] {
              cudaMemcpy(host, device, bytes, cudaMemcpyDeviceToHost);
              PMPI_Send(host, 1, type, peer, 3, MPI_COMM_WORLD);
            },
            [&] {
              PMPI_Recv(host, 1, type, peer, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
              cudaMemcpy(device, host, bytes, cudaMemcpyHostToDevice);
            });
      };
      const Rounds rounds = time_rounds(o, loom_trip, app_trip);
      const double loom = rounds.loom_median(), app = rounds.app_median();
      const Summary spread = rounds.speedups();
      const double speedup = app / loom;
      // Within noise: the rounds' ranges of the two paths overlap.
      const auto [loom_min, loom_max] = std::minmax_element(rounds.loom.begin(), rounds.loom.end());
      const auto [app_min, app_max] = std::minmax_element(rounds.app.begin(), rounds.app.end());
      const bool noise = ranges_overlap(*loom_min, *loom_max, *app_min, *app_max);
      if (block > 0 && block <= 16) small.add(speedup, label);
      compared.push_back({label, speedup, noise, 0});
      table.add_row({name, human_bytes(size), format("%.1f", loom * 1e6), format("%.1f", app * 1e6),
                     format("%.2f", speedup), format("%.2f-%.2f", spread.min, spread.max),
                     ok ? "yes" : "NO"});
      j.begin_object();
      j.field("case", name);
      j.field("block_bytes", block);
      j.field("packed_bytes", size);
      j.field("span_bytes", span);
      j.field("loom_seconds", loom);
      j.field("app_seconds", app);
      j.array("loom_rounds_seconds", rounds.loom);
      j.array("app_rounds_seconds", rounds.app);
      j.field("speedup_rounds", spread);
      j.field("within_noise", noise);
      j.field("verified", ok);
      j.end_object();
      CUDA_OK(cudaFree(device));
      CUDA_OK(cudaFreeHost(host));
      MPI_Type_free(&type);
    }
  j.end_array();
  loom_stats stats;
  loom_get_stats(&stats);
  if (rank == 0) {
    std::printf(
        "%s: one-way time (median of %d alternated rounds), device buffers on both ranks; Loom "
        "active=%d, device staged=%llu\n",
        kTool, o.rounds, loom_is_active(), static_cast<unsigned long long>(stats.device_staged));
    table.print(stdout);
    const ComparisonSummary summary(compared);
    std::printf(
        "\nSummary (speed-up: the copy-to-host path's time / Loom's, > 1: Loom is faster; within\n"
        "noise: the two paths' ranges over rounds overlap)\n");
    print_comparison(summary, {"Loom", "copy-to-host path"}, "  ");
    if (!small.empty())
      std::printf("  blocks <= 16 B: geomean %.2fx, least %.2fx (%s)\n", small.geomean(), small.min,
                  small.min_case.c_str());
    print_verification("the receiver's device buffer, gaps included", mismatched, compared.size());
    j.begin_object("summary");
    write_comparison(j, "comparison", summary);
    write_case_stats(j, "small_blocks", small);
    j.field("verification_failures", failures);
    j.end_object();
    if (!o.json_path.empty()) finish_json_report(j, o.json_path, kTool);
  }
  MPI_Finalize();
  return failures ? 1 : 0;
}

}  // namespace loom::bench
