// loom-bench measure: calibrates the method model (model/model.hpp, docs/model.md) on this
// machine and writes it where libloom looks for it.
//
// Two ranks. For each (spread, block size, message size) of a grid of vector types
// vector(n, block, spread * block) of a fitting basic type it measures Loom's MPI_Pack and
// MPI_Unpack (rank 0 alone), the contiguous send of the packed bytes (PMPI ping-pong of
// MPI_BYTE), the host's own derived-type send (PMPI ping-pong with the vector type, and with
// the same layout built as a vector of vectors) and Loom's
// whole pack path (MPI ping-pong with the vector type through Loom, pinned to pack), each one
// way, half a round trip; and the last three again as exchanges, both ranks sending at once
// with MPI_Isend/MPI_Irecv. The nine are sampled in interleaved rounds after a warm-up round,
// with a fixed probe of the machine's speed (kSpellProbeBytes below); each value is a median,
// and each sample repeats small operations so that it lasts long enough to time.
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "bench/common/p2p_common.hpp"
#include "bench/common/report.hpp"
#include "bench/common/subcommands.hpp"
#include "loom/loom.h"
#include "loom/testing.h"
#include "model/model.hpp"

namespace loom::bench {
namespace {

constexpr const char* kTool = "loom-bench measure";
// A sample repeats an operation on messages smaller than this until it moves this many bytes.
constexpr int64_t kSampleBytes = 256 * kKiB;
constexpr int kTagData = 1, kTagControl = 2;
// Ping-pong samples of shorter messages start with an untimed round trip.
constexpr int64_t kWarmRoundTripBelowBytes = 1 * kMiB;
// A point whose warm-up round takes longer than this (MPICH's own 1-byte blocks at 16 MiB
// take 0.3 s per message) is sampled kLongPointSamples times: such long samples vary little.
constexpr double kLongRoundSeconds = 0.05;
constexpr int kLongPointSamples = 3;
// Every round of every point also times one fixed message, the host's own send of 64 KiB in
// 1 KiB blocks: a probe of the machine's cross-core speed. A point whose probe took this much
// longer than the best probe of the whole calibration was measured while the machine ran
// slow; it is measured again, up to this many more times. (On this VM the probe takes
// 4-6 us in a fast spell and 15-21 us in a slow one, on both MPIs; the contiguous send
// varies only 1.6x on MPICH, less than one calm pass's cache effects.)
constexpr int64_t kSpellProbeBlock = 1 * kKiB, kSpellProbeBytes = 64 * kKiB;
constexpr double kDegradedProbeRatio = 1.75;
constexpr int kRemeasurePasses = 3;
// The probe runs from a buffer of its own and is the fastest of a few samples in a row: after
// a point's large messages its first samples run up to 2.5x slower (MPICH 4.0, 16 MiB at
// spread 8: 10 us against 4 us), which would mark every large point as slow.
constexpr int kProbeSamplesInRow = 3;
// Points measured again first wait until the probe runs within kDegradedProbeRatio of the best
// (slow spells on this VM last tens of seconds, so a point measured again at once is often
// still in one); the waits of one calibration add up to at most this.
constexpr double kFastSpellWaitBudgetSeconds = 60;
constexpr double kFastSpellPollSeconds = 0.02;
// After the grid, a sample of its small points (every kConfirmationStride-th of those of at
// most kConfirmationMaxBytes) is measured once more, to catch a slow spell that lasted the whole
// grid. If the best probe is still kDegradedProbeRatio slower than the previous calibration's
// of the same machine and host MPI, the sample is repeated for up to kSlowSpellWaitSeconds.
constexpr int64_t kConfirmationMaxBytes = 64 * kKiB;
constexpr size_t kConfirmationStride = 5;
constexpr double kSlowSpellWaitSeconds = 20;

struct Options {
  bool quick = false;
  std::string out;
};

// How hard to try per measured point: samples until the time bound, within [min, max].
struct Effort {
  double seconds_per_point;
  int min_samples;
  int max_samples;
};

struct Grid {
  std::vector<int64_t> spreads, blocks, messages;
  Effort effort;
};

// The spreads are the model's: dense vectors (stride twice the block) and sparse ones
// (eight times: a grid face of doubles, one per cache line).
Grid full_grid() {
  return {{static_cast<int64_t>(model::kDenseSpread), static_cast<int64_t>(model::kSparseSpread)},
          {1, 2, 4, 8, 16, 32, 64, 128, 256, 1024, 4096},
          {64, 256, 1 * kKiB, 4 * kKiB, 16 * kKiB, 64 * kKiB, 256 * kKiB, 1 * kMiB, 4 * kMiB,
           16 * kMiB},
          {0.15, 5, 1000}};
}

Grid quick_grid() {
  return {{static_cast<int64_t>(model::kDenseSpread), static_cast<int64_t>(model::kSparseSpread)},
          {1, 16, 256, 4096},
          {1 * kKiB, 16 * kKiB, 256 * kKiB},
          {0.004, 3, 20}};
}

void print_help(FILE* out) {
  std::fprintf(
      out,
      "usage: mpiexec -n 2 loom-bench measure [options]\n"
      "  Calibrates Loom's method model on this machine: times Loom's pack and unpack, the\n"
      "  contiguous send of packed bytes and the host MPI's own derived-type send over a grid\n"
      "  of block and message sizes, and writes the calibration that libloom reads to choose\n"
      "  between packing and the host's datatype engine per message (docs/model.md).\n"
      "  Needs exactly 2 ranks: on one node for same-node numbers; on two nodes the numbers\n"
      "  are the inter-node ones.\n\n"
      "options:\n"
      "  --out FILE   write the calibration here instead of the default\n"
      "               %s\n"
      "               ($LOOM_CACHE_DIR/calibration-<mpi>.json; LOOM_CACHE_DIR defaults to\n"
      "               $XDG_CACHE_HOME/loom, else $HOME/.cache/loom)\n"
      "  --quick      coarse grid and short time bounds (seconds, for CI); it still writes\n"
      "               the default file unless --out is given\n"
      "  --help       this text\n",
      calibration_path().c_str());
}

// Returns -1 to continue, or an exit code.
int parse_options(int argc, char** argv, Options* opt) {
  return parse_subcommand_options(argc, argv, kTool, nullptr, print_help, {"--out"},
                                  [&](const std::string& arg, const char* v) {
                                    if (arg == "--quick") {
                                      opt->quick = true;
                                    } else if (arg == "--out") {
                                      opt->out = v;
                                    } else {
                                      return OptionParse::NotMine;
                                    }
                                    return OptionParse::Taken;
                                  });
}

// Page-aligned and written once, so no page faults land in a timed sample.
Buffer allocate_filled(int64_t bytes) {
  Buffer buffer = allocate(bytes, kTool);
  fill_pattern(buffer.get(), bytes, 7);
  return buffer;
}

// vector(n, block, spread * block) of `bytes` packed bytes, of the widest basic type that
// divides the block (as the applications and loom-bench pingpong declare it), committed
// through Loom so that Loom plans it. A block longer than the message becomes one block of the
// message: the grid stays rectangular, and such a message costs the same whatever the block.
//
// The same layout is also built nested, as hvector(rows, 1, row stride, vector(blocks / rows,
// ...)) with rows a power of two and at least four blocks per row (the shape of a 3-D grid
// face): host engines may send nested types by another path than flat ones.
class VectorType {
 public:
  VectorType(int64_t spread, int64_t block, int64_t bytes) {
    const int64_t length = std::min(block, bytes);
    const int64_t blocks = bytes / length;
    const p2p::Element element = p2p::element_for_block(length);
    const int block_elements = static_cast<int>(length / element.bytes);
    const int stride_elements = static_cast<int>(spread * length / element.bytes);
    MPI_Type_vector(static_cast<int>(blocks), block_elements, stride_elements, element.type,
                    &type_);
    MPI_Type_commit(&type_);
    int64_t rows = 1;
    while (rows * rows * 4 <= blocks && blocks % (rows * 2) == 0) rows *= 2;
    const int64_t row_blocks = blocks / rows;
    MPI_Datatype row;
    MPI_Type_vector(static_cast<int>(row_blocks), block_elements, stride_elements, element.type,
                    &row);
    MPI_Type_create_hvector(static_cast<int>(rows), 1,
                            static_cast<MPI_Aint>(row_blocks * spread * length), row, &nested_);
    MPI_Type_free(&row);
    MPI_Type_commit(&nested_);
  }
  ~VectorType() {
    MPI_Type_free(&type_);
    MPI_Type_free(&nested_);
  }
  VectorType(const VectorType&) = delete;
  VectorType& operator=(const VectorType&) = delete;
  MPI_Datatype type() const { return type_; }
  MPI_Datatype nested() const { return nested_; }

 private:
  MPI_Datatype type_ = MPI_DATATYPE_NULL, nested_ = MPI_DATATYPE_NULL;
};

int repeats_per_sample(int64_t bytes) {
  return static_cast<int>(std::max<int64_t>(1, kSampleBytes / bytes));
}

// Who sends in a ping-pong: the host alone (PMPI, Loom's point-to-point layer stays out), or
// Loom's point-to-point layer with every message packed (the pack path, end to end).
enum class Sender { Host, LoomPacked };

// Seconds per call of `communicate`, one message pattern between ranks 0 and 1, over one
// sample of `repeats` calls, with Loom's methods pinned to pack for Sender::LoomPacked.
// The first message after a message of another kind costs extra (MPICH 4.0: 20-40 us at
// 16 KiB, switching between typed and contiguous); one untimed call keeps that out of the
// steady-state time where it would show (a long message hides it).
double timed_sample(Sender sender, int64_t count_bytes, int repeats,
                    const std::function<void()>& communicate) {
  const bool pinned = sender == Sender::LoomPacked;
  if (pinned) loom_testing_pin_method(LOOM_METHOD_PACK);
  if (count_bytes < kWarmRoundTripBelowBytes) communicate();
  const double start = now_seconds();
  for (int i = 0; i < repeats; ++i) communicate();
  const double seconds = (now_seconds() - start) / repeats;
  if (pinned) loom_testing_pin_method(-1);
  return seconds;
}

// One-way seconds of `count` elements of `type` between ranks 0 and 1 (half a round trip)
// over one sample of repeated round trips.
double pingpong_sample(Sender sender, MPI_Comm comm, int rank, void* buffer, int count,
                       MPI_Datatype type, int64_t count_bytes, int repeats) {
  using SendFunction = int (*)(const void*, int, MPI_Datatype, int, int, MPI_Comm);
  using RecvFunction = int (*)(void*, int, MPI_Datatype, int, int, MPI_Comm, MPI_Status*);
  const bool host = sender == Sender::Host;
  const SendFunction send = host ? PMPI_Send : MPI_Send;
  const RecvFunction recv = host ? PMPI_Recv : MPI_Recv;
  const double round_trip = timed_sample(sender, count_bytes, repeats, [&] {
    if (rank == 0) {
      send(buffer, count, type, 1, kTagData, comm);
      recv(buffer, count, type, 1, kTagData, comm, MPI_STATUS_IGNORE);
    } else {
      recv(buffer, count, type, 0, kTagData, comm, MPI_STATUS_IGNORE);
      send(buffer, count, type, 0, kTagData, comm);
    }
  });
  return round_trip / 2;
}

// Seconds of one exchange of `type` between ranks 0 and 1 (each starts a receive into
// `incoming` and a send from `outgoing`, then waits for both) over one sample of repeated
// exchanges: the model's Exchange traffic.
double exchange_sample(Sender sender, MPI_Comm comm, int rank, const void* outgoing, void* incoming,
                       MPI_Datatype type, int64_t count_bytes, int repeats) {
  using IsendFunction = int (*)(const void*, int, MPI_Datatype, int, int, MPI_Comm, MPI_Request*);
  using IrecvFunction = int (*)(void*, int, MPI_Datatype, int, int, MPI_Comm, MPI_Request*);
  using WaitallFunction = int (*)(int, MPI_Request*, MPI_Status*);
  const bool host = sender == Sender::Host;
  const IsendFunction isend = host ? PMPI_Isend : MPI_Isend;
  const IrecvFunction irecv = host ? PMPI_Irecv : MPI_Irecv;
  const WaitallFunction waitall = host ? PMPI_Waitall : MPI_Waitall;
  const int peer = 1 - rank;
  return timed_sample(sender, count_bytes, repeats, [&] {
    MPI_Request requests[2];
    MPI_Status statuses[2];
    irecv(incoming, 1, type, peer, kTagData, comm, &requests[0]);
    isend(outgoing, 1, type, peer, kTagData, comm, &requests[1]);
    waitall(2, requests, statuses);
  });
}

struct PointSamples {
  std::vector<double> pack, unpack, contiguous, host_typed, host_typed_nested, loom_packed;
  std::vector<double> host_typed_exchange, host_typed_nested_exchange, loom_packed_exchange;
  std::vector<double> spell_probe;  // kSpellProbeBytes in kSpellProbeBlock blocks, host send
};

// The machine's cross-core speed: the host's own send of kSpellProbeBytes in kSpellProbeBlock
// blocks, one way, from a buffer no grid point touches.
class SpeedProbe {
 public:
  SpeedProbe()
      : type_(static_cast<int64_t>(model::kDenseSpread), kSpellProbeBlock, kSpellProbeBytes),
        buffer_(allocate_filled(static_cast<int64_t>(model::kDenseSpread) * kSpellProbeBytes)) {}
  double seconds(MPI_Comm comm, int rank) const {
    double fastest = 0.0;
    for (int i = 0; i < kProbeSamplesInRow; ++i) {
      const double sample =
          pingpong_sample(Sender::Host, comm, rank, buffer_.get(), 1, type_.type(),
                          kSpellProbeBytes, repeats_per_sample(kSpellProbeBytes));
      if (i == 0 || sample < fastest) fastest = sample;
    }
    return fastest;
  }

 private:
  VectorType type_;
  Buffer buffer_;
};

// All nine quantities of one grid point, sampled in rounds of one sample each, so that
// any drift of the machine (other processes, frequency) hits them alike. Rank 0 measures
// pack and unpack alone, then both ranks ping-pong; rank 0 decides the number of rounds
// after a warm-up round and tells rank 1. The samples are meaningful on rank 0 only.
PointSamples measure_point(MPI_Comm comm, int rank, const VectorType& vector, int64_t bytes,
                           const SpeedProbe& probe, unsigned char* user, unsigned char* incoming,
                           unsigned char* packed, const Effort& effort) {
  const int repeats = repeats_per_sample(bytes);
  const int size = static_cast<int>(bytes);
  auto pack = [&] {
    int position = 0;
    MPI_Pack(user, 1, vector.type(), packed, size, &position, comm);
  };
  auto unpack = [&] {
    int position = 0;
    MPI_Unpack(packed, size, &position, user, 1, vector.type(), comm);
  };
  PointSamples samples;
  auto round = [&] {
    if (rank == 0) {
      samples.pack.push_back(seconds_per_call(pack, repeats));
      samples.unpack.push_back(seconds_per_call(unpack, repeats));
      do_not_optimize(user);
    }
    samples.contiguous.push_back(
        pingpong_sample(Sender::Host, comm, rank, packed, size, MPI_BYTE, bytes, repeats));
    samples.host_typed.push_back(
        pingpong_sample(Sender::Host, comm, rank, user, 1, vector.type(), bytes, repeats));
    samples.host_typed_nested.push_back(
        pingpong_sample(Sender::Host, comm, rank, user, 1, vector.nested(), bytes, repeats));
    samples.loom_packed.push_back(
        pingpong_sample(Sender::LoomPacked, comm, rank, user, 1, vector.type(), bytes, repeats));
    samples.host_typed_exchange.push_back(
        exchange_sample(Sender::Host, comm, rank, user, incoming, vector.type(), bytes, repeats));
    samples.host_typed_nested_exchange.push_back(
        exchange_sample(Sender::Host, comm, rank, user, incoming, vector.nested(), bytes, repeats));
    samples.loom_packed_exchange.push_back(exchange_sample(
        Sender::LoomPacked, comm, rank, user, incoming, vector.type(), bytes, repeats));
    samples.spell_probe.push_back(probe.seconds(comm, rank));
  };
  const double warmup_start = now_seconds();
  round();
  int rounds = 0;
  if (rank == 0) {
    const double round_seconds = now_seconds() - warmup_start;
    const int fewest = round_seconds > kLongRoundSeconds
                           ? std::min(kLongPointSamples, effort.min_samples)
                           : effort.min_samples;
    rounds = static_cast<int>(
        std::clamp<double>(effort.seconds_per_point / round_seconds, fewest, effort.max_samples));
    PMPI_Send(&rounds, 1, MPI_INT, 1, kTagControl, comm);
  } else {
    PMPI_Recv(&rounds, 1, MPI_INT, 0, kTagControl, comm, MPI_STATUS_IGNORE);
  }
  samples = {};
  for (int i = 0; i < rounds; ++i) round();
  return samples;
}

// Other runnable processes than this job's two ranks make every ping-pong wait for a core.
void warn_if_busy() {
  double load = 0;
  if (FILE* f = std::fopen("/proc/loadavg", "r")) {
    if (std::fscanf(f, "%lf", &load) != 1) load = 0;
    std::fclose(f);
  }
  const long cores = sysconf(_SC_NPROCESSORS_ONLN);
  if (cores > 0 && load > static_cast<double>(cores) + 0.5)
    std::printf(
        "WARNING: load average %.1f on %ld cores: other processes compete with the\n"
        "         measurement and the calibration will be noisy; measure on a quiet "
        "machine\n",
        load, cores);
}

std::string machine_description() {
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  std::string cpu = "unknown CPU";
  if (FILE* f = std::fopen("/proc/cpuinfo", "r")) {
    char line[512];
    while (std::fgets(line, sizeof line, f))
      if (!std::strncmp(line, "model name", 10)) {
        const char* colon = std::strchr(line, ':');
        if (colon) {
          cpu = colon + 1;
          cpu.erase(0, cpu.find_first_not_of(" \t"));
          cpu.erase(cpu.find_last_not_of(" \t\n") + 1);
        }
        break;
      }
    std::fclose(f);
  }
  return format("%s, %s, %ld cores", host, cpu.c_str(), sysconf(_SC_NPROCESSORS_ONLN));
}

std::string short_bytes(double bytes) {
  return human_bytes(static_cast<int64_t>(bytes));
}

std::string micros(double seconds) {
  return seconds < 1e-4 ? format("%.2f", seconds * 1e6) : format("%.0f", seconds * 1e6);
}

void print_summary(const model::Calibration& c, model::Locality where) {
  const int w = static_cast<int>(where);
  const model::Model model(c);
  std::printf("\ncontiguous one-way send (us):");
  for (size_t m = 0; m < c.contiguous[w].message_bytes.size(); ++m)
    std::printf(" %s=%s", short_bytes(c.contiguous[w].message_bytes[m]).c_str(),
                micros(c.contiguous[w].seconds[m]).c_str());
  std::printf("\n");
  for (const model::Traffic traffic : {model::Traffic::OneWay, model::Traffic::Exchange})
    for (const bool nested : {false, true})
      for (const model::Grid& grid : c.pack.by_spread) {
        std::printf(
            "\n%s types, spread %g: host-native time / Loom pack-path time, %s;\nabove "
            "%.2f the model packs (marked *):\n",
            nested ? "nested" : "flat", grid.spread,
            traffic == model::Traffic::OneWay ? "one way (blocking calls)"
                                              : "exchange (non-blocking calls)",
            model::kPackAdvantageRequired);
        std::vector<std::string> header = {"block \\ bytes"};
        for (double m : grid.message_bytes) header.push_back(short_bytes(m));
        Table table(header);
        for (double block : grid.block_bytes) {
          const model::TypeShape type{block, grid.spread, nested};
          std::vector<std::string> row = {short_bytes(block)};
          for (double bytes : grid.message_bytes) {
            const double ratio = model.host_seconds(where, type, bytes, traffic) /
                                 model.pack_seconds(where, type, bytes, traffic);
            const bool pack = model.choose(where, type, bytes, traffic) == model::Method::Pack;
            row.push_back(format("%.2f%s", ratio, pack ? "*" : " "));
          }
          table.add_row(row);
        }
        table.print(stdout);
      }
}

// The speed probe of the calibration that `path` holds now, if it was measured on this
// machine with this host MPI and its transport settings; 0 otherwise.
double previous_speed_probe(const std::string& path, const model::Calibration& current) {
  std::string why;
  const auto previous = model::load_file(path, &why);
  if (!previous || previous->machine != current.machine || previous->host_mpi != current.host_mpi ||
      previous->host_settings != current.host_settings)
    return 0.0;
  return previous->speed_probe_seconds;
}

// ---------------------------------------------------------------------------------------------
// The calibration's passes over the grid.

// The grid's points by index: spread-major, then block size, then message size.
struct PointIndex {
  explicit PointIndex(const Grid& g) : grid(g) {}
  const Grid& grid;
  size_t count() const { return grid.spreads.size() * grid.blocks.size() * grid.messages.size(); }
  size_t spread(size_t p) const { return p / (grid.blocks.size() * grid.messages.size()); }
  size_t block(size_t p) const { return p / grid.messages.size() % grid.blocks.size(); }
  size_t message(size_t p) const { return p % grid.messages.size(); }
};

// Measures points of the grid on both ranks and keeps, per point (rank 0), the samples of its
// least degraded measurement: the one whose speed probe ran fastest.
class PointMeasurer {
 public:
  PointMeasurer(MPI_Comm comm, int rank, const Grid& grid)
      : comm_(comm),
        rank_(rank),
        grid_(grid),
        index_(grid),
        packed_(allocate_filled(grid.messages.back())),
        user_(allocate_filled(widest() * grid.messages.back())),
        incoming_(allocate_filled(widest() * grid.messages.back())),  // exchanges receive here
        kept_(index_.count()),
        kept_probe_(index_.count(), 0.0) {
    probe_.emplace();
  }

  // Measures the listed points (both ranks, in the same order); false if Loom cannot plan one.
  // With a best probe (measuring again), each point first waits for a fast spell.
  bool measure(const std::vector<size_t>& points, double best) {
    double row_start = now_seconds();
    for (size_t i = 0; i < points.size(); ++i) {
      const size_t p = points[i];
      if (best > 0.0) wait_for_fast_spell(best);
      if (!measure_one(p)) return false;
      const bool row_done =
          i + 1 == points.size() || index_.message(points[i + 1]) == 0 || points[i + 1] != p + 1;
      if (rank_ == 0 && row_done) {
        std::fprintf(stderr, "  spread %lld block %-6s %5.1f s\n",
                     static_cast<long long>(grid_.spreads[index_.spread(p)]),
                     short_bytes(grid_.blocks[index_.block(p)]).c_str(), now_seconds() - row_start);
        row_start = now_seconds();
      }
    }
    return true;
  }

  const std::vector<PointSamples>& kept() const { return kept_; }
  const std::vector<double>& kept_probe() const { return kept_probe_; }
  double waited_seconds() const { return waited_seconds_; }
  // Frees the probe's type: before MPI_Finalize, on every way out.
  void release_probe() { probe_.reset(); }

 private:
  int64_t widest() const { return *std::max_element(grid_.spreads.begin(), grid_.spreads.end()); }

  bool measure_one(size_t p) {
    const int64_t bytes = grid_.messages[index_.message(p)];
    const VectorType vector(grid_.spreads[index_.spread(p)], grid_.blocks[index_.block(p)], bytes);
    if (!loom_type_is_accelerated(vector.type())) {
      if (rank_ == 0)
        std::fprintf(stderr,
                     "%s: Loom has no plan for vector(block %lld, stride "
                     "%lld x block), so there is nothing to calibrate\n",
                     kTool, static_cast<long long>(grid_.blocks[index_.block(p)]),
                     static_cast<long long>(grid_.spreads[index_.spread(p)]));
      return false;
    }
    PointSamples point = measure_point(comm_, rank_, vector, bytes, *probe_, user_.get(),
                                       incoming_.get(), packed_.get(), grid_.effort);
    if (rank_ == 0) {
      const double probe_median = summarize(point.spell_probe).median;
      if (kept_[p].spell_probe.empty() || probe_median < kept_probe_[p]) {
        kept_[p] = std::move(point);
        kept_probe_[p] = probe_median;
      }
    }
    return true;
  }

  // Until the probe runs within kDegradedProbeRatio of `best`, or the calibration's waiting
  // budget is spent (both ranks; rank 0 decides).
  void wait_for_fast_spell(double best) {
    const double wait_start = now_seconds();
    for (;;) {
      const double probe_seconds = probe_->seconds(comm_, rank_);
      int fast = 1;
      if (rank_ == 0)
        fast = probe_seconds <= kDegradedProbeRatio * best ||
               waited_seconds_ + (now_seconds() - wait_start) >= kFastSpellWaitBudgetSeconds;
      PMPI_Bcast(&fast, 1, MPI_INT, 0, comm_);
      if (fast) break;
      std::this_thread::sleep_for(std::chrono::duration<double>(kFastSpellPollSeconds));
    }
    waited_seconds_ += now_seconds() - wait_start;
  }

  MPI_Comm comm_;
  int rank_;
  const Grid& grid_;
  PointIndex index_;
  Buffer packed_, user_, incoming_;
  std::optional<SpeedProbe> probe_;
  std::vector<PointSamples> kept_;
  std::vector<double> kept_probe_;
  double waited_seconds_ = 0.0;
};

// Which points a pass measures again, decided on rank 0 from the probes kept so far.
//
// The probe sampled with every point follows the machine's cross-core speed, which drifts on
// virtual machines as the hypervisor moves virtual CPUs (this machine: the host's own vector
// sends 3.4-4x slower for seconds at a time, contiguous sends 1.6-2.5x). Points whose probe ran
// well below the best are measured again, and each point keeps its fastest-probe measurement,
// so the calibration describes the machine at its best, where the host is hardest to beat.
class RemeasurePlan {
 public:
  RemeasurePlan(const PointIndex& index, double previous_probe)
      : index_(index), previous_probe_(previous_probe) {
    // Small points are cheap to measure again, and their probes run in caches like those of
    // the other points' rounds. The stride is prime to the grid's row lengths, so the sample
    // spans message sizes as well as block sizes.
    for (size_t p = 0, small = 0; p < index.count(); ++p)
      if (index.grid.messages[index.message(p)] <= kConfirmationMaxBytes &&
          small++ % kConfirmationStride == 0)
        confirmation_.push_back(p);
  }

  // The best probe a measurement again waits for (0: none, the first pass).
  double gate() const { return remeasures_left_ < kRemeasurePasses || confirming_ ? best_ : 0.0; }
  double best() const { return best_; }
  double previous_probe() const { return previous_probe_; }

  // After a pass (rank 0): the points to measure next; none when the calibration is done.
  std::vector<size_t> next(const std::vector<double>& kept_probe) {
    const double best_before = best_;
    best_ = 0.0;
    for (size_t p = 0; p < index_.count(); ++p)
      if (best_ == 0.0 || kept_probe[p] < best_) best_ = kept_probe[p];
    // A slow spell can last the whole grid, and then no point looks slow next to the
    // others. Measuring a sample once more, later, shows whether the machine can do
    // better; if it can, the grid's points are measured again against the new best.
    if (confirming_ && best_ * kDegradedProbeRatio < best_before) {
      std::fprintf(stderr,
                   "  the machine now runs the probe %.1fx faster than during the grid: it "
                   "was slow throughout\n",
                   best_before / best_);
      remeasures_left_ = kRemeasurePasses;
    }
    const bool slower_than_previous =
        previous_probe_ > 0 && best_ > kDegradedProbeRatio * previous_probe_;
    std::vector<size_t> next;
    for (size_t p = 0; remeasures_left_ > 0 && p < index_.count(); ++p)
      if (kept_probe[p] > kDegradedProbeRatio * best_) next.push_back(p);
    if (!next.empty()) {
      --remeasures_left_;
      confirming_ = false;
      std::fprintf(stderr,
                   "  measuring %zu point%s again: their probe (the host's send of 64 KiB in "
                   "1 KiB blocks) ran over %.2gx slower than the best (the machine's "
                   "cross-core speed varied)\n",
                   next.size(), next.size() == 1 ? "" : "s", kDegradedProbeRatio);
    } else if (!confirmed_ ||
               (confirming_ && slower_than_previous && now_seconds() < confirm_until_)) {
      if (!confirmed_) {
        confirm_until_ = now_seconds() + kSlowSpellWaitSeconds;
        std::fprintf(stderr, "  measuring %zu small points again, to check the machine's speed%s\n",
                     confirmation_.size(),
                     slower_than_previous ? format(" (the probe is %.1fx slower than in the "
                                                   "previous calibration)",
                                                   best_ / previous_probe_)
                                                .c_str()
                                          : "");
      }
      next = confirmation_;
      confirming_ = confirmed_ = true;
    }
    return next;
  }

 private:
  const PointIndex& index_;
  double previous_probe_;
  std::vector<size_t> confirmation_;
  int remeasures_left_ = kRemeasurePasses;
  bool confirming_ = false, confirmed_ = false;
  double confirm_until_ = 0.0, best_ = 0.0;
};

// Rank 0's `next` on both ranks.
std::vector<size_t> broadcast_points(std::vector<size_t> next, MPI_Comm comm) {
  static_assert(sizeof(size_t) == sizeof(uint64_t), "point indices travel as MPI_UINT64_T");
  uint64_t n = next.size();
  PMPI_Bcast(&n, 1, MPI_UINT64_T, 0, comm);
  next.resize(n);
  if (n > 0) PMPI_Bcast(next.data(), static_cast<int>(n), MPI_UINT64_T, 0, comm);
  return next;
}

// ---------------------------------------------------------------------------------------------
// The calibration.

// A calibration of this machine, its surfaces sized to `grid` and not yet measured.
model::Calibration new_calibration(const Grid& grid, model::Locality measured) {
  model::Calibration c;
  c.host_mpi = host_mpi_name();
  c.host_settings = host_mpi_settings();
  c.machine = machine_description();
  c.other_node_measured = measured == model::Locality::OtherNode;
  c.exchange_measured = true;
  const int m = static_cast<int>(measured);
  for (model::Surface* surface :
       {&c.pack, &c.unpack, &c.host_typed[m], &c.host_typed_nested[m], &c.loom_packed[m],
        &c.host_typed_exchange[m], &c.host_typed_nested_exchange[m], &c.loom_packed_exchange[m]})
    for (int64_t spread : grid.spreads) {
      model::Grid g;
      g.spread = static_cast<double>(spread);
      g.block_bytes.assign(grid.blocks.begin(), grid.blocks.end());
      g.message_bytes.assign(grid.messages.begin(), grid.messages.end());
      g.seconds.assign(grid.blocks.size(), std::vector<double>(grid.messages.size(), 0.0));
      surface->by_spread.push_back(std::move(g));
    }
  c.contiguous[m].message_bytes.assign(grid.messages.begin(), grid.messages.end());
  return c;
}

// Rank 0: every point's medians into the calibration's surfaces.
void store_medians(const PointIndex& index, const std::vector<PointSamples>& kept,
                   model::Locality measured, model::Calibration* c) {
  const int m = static_cast<int>(measured);
  // Contiguous sends are sampled at every grid point; each size's samples pool over blocks.
  std::vector<std::vector<double>> contiguous_samples(index.grid.messages.size());
  for (size_t p = 0; p < index.count(); ++p) {
    const size_t s = index.spread(p), b = index.block(p), k = index.message(p);
    const PointSamples& point = kept[p];
    auto store = [&](model::Surface& surface, const std::vector<double>& samples) {
      surface.by_spread[s].seconds[b][k] = summarize(samples).median;
    };
    store(c->pack, point.pack);
    store(c->unpack, point.unpack);
    store(c->host_typed[m], point.host_typed);
    store(c->host_typed_nested[m], point.host_typed_nested);
    store(c->loom_packed[m], point.loom_packed);
    store(c->host_typed_exchange[m], point.host_typed_exchange);
    store(c->host_typed_nested_exchange[m], point.host_typed_nested_exchange);
    store(c->loom_packed_exchange[m], point.loom_packed_exchange);
    contiguous_samples[k].insert(contiguous_samples[k].end(), point.contiguous.begin(),
                                 point.contiguous.end());
  }
  for (const auto& samples : contiguous_samples)
    c->contiguous[m].seconds.push_back(summarize(samples).median);
}

// Rank 0, after the passes: how long it waited for speed, and whether the machine stayed slower
// than in the previous calibration.
void report_speed(const RemeasurePlan& plan, double waited_seconds) {
  if (waited_seconds >= 0.1)
    std::fprintf(
        stderr, "  waited %.1f s in all for the probe to run fast before points%s\n",
        waited_seconds,
        waited_seconds >= kFastSpellWaitBudgetSeconds ? " (the budget: it stayed slow)" : "");
  const double best = plan.best(), previous = plan.previous_probe();
  if (previous > 0 && best > kDegradedProbeRatio * previous)
    std::printf(
        "WARNING: the machine ran %.1fx slower than during the previous calibration of this\n"
        "         machine and host MPI (speed probe %s us now, %s us then), and did not speed up\n"
        "         within %.0f s. If that was a slow spell, the model will hand the host messages\n"
        "         that Loom would send faster: run loom-bench measure again later.\n",
        best / previous, micros(best).c_str(), micros(previous).c_str(), kSlowSpellWaitSeconds);
}

// Rank 0: the measured locality's numbers stand for the other one too (one node: the
// inter-node entries repeat the same-node numbers, recorded in the file), the summary, and the
// file. Returns the exit code.
int save_calibration(model::Calibration& c, model::Locality measured, const std::string& path,
                     double start) {
  const int from = static_cast<int>(measured), to = 1 - from;
  c.contiguous[to] = c.contiguous[from];
  c.host_typed[to] = c.host_typed[from];
  c.host_typed_nested[to] = c.host_typed_nested[from];
  c.loom_packed[to] = c.loom_packed[from];
  c.host_typed_exchange[to] = c.host_typed_exchange[from];
  c.host_typed_nested_exchange[to] = c.host_typed_nested_exchange[from];
  c.loom_packed_exchange[to] = c.loom_packed_exchange[from];
  print_summary(c, measured);
  std::string why;
  if (!model::save_file(c, path, &why)) {
    std::fprintf(stderr, "%s: cannot write %s: %s\n", kTool, path.c_str(), why.c_str());
    return 1;
  }
  std::printf("\nmeasured in %.1f s; wrote %s\n", now_seconds() - start, path.c_str());
  return 0;
}

// Whether the two ranks share a node.
bool ranks_share_node() {
  MPI_Comm node;
  PMPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  int node_size = 0;
  PMPI_Comm_size(node, &node_size);
  PMPI_Comm_free(&node);
  return node_size == 2;
}

// Both ranks: measures the grid and (rank 0) writes the calibration to `path`. Returns the exit
// code.
int calibrate(const Options& opt, int rank, const std::string& path) {
  MPI_Comm comm;
  PMPI_Comm_dup(MPI_COMM_WORLD, &comm);
  const bool same_node = ranks_share_node();
  const model::Locality measured =
      same_node ? model::Locality::SameNode : model::Locality::OtherNode;

  const Grid grid = opt.quick ? quick_grid() : full_grid();
  model::Calibration c = new_calibration(grid, measured);
  if (rank == 0) {
    std::printf("loom-bench measure   host MPI: %s   ranks on %s\n", c.host_mpi.c_str(),
                same_node ? "one node" : "two nodes");
    std::printf("machine: %s\n", c.machine.c_str());
    std::printf("grid: %zu spreads x %zu block sizes x %zu message sizes%s\n", grid.spreads.size(),
                grid.blocks.size(), grid.messages.size(), opt.quick ? " (--quick)" : "");
    warn_if_busy();
    std::fflush(stdout);
  }
  const double start = now_seconds();

  const PointIndex index(grid);
  PointMeasurer measurer(comm, rank, grid);
  // --quick's coarse grid is no match for a full calibration: it does not wait for speed.
  RemeasurePlan plan(index, rank == 0 && !opt.quick ? previous_speed_probe(path, c) : 0.0);
  std::vector<size_t> points(index.count());
  for (size_t p = 0; p < points.size(); ++p) points[p] = p;
  while (!points.empty()) {
    double best_for_gate = plan.gate();
    PMPI_Bcast(&best_for_gate, 1, MPI_DOUBLE, 0, comm);
    if (!measurer.measure(points, best_for_gate)) {
      measurer.release_probe();
      PMPI_Comm_free(&comm);
      return 1;
    }
    points = broadcast_points(rank == 0 ? plan.next(measurer.kept_probe()) : std::vector<size_t>{},
                              comm);
  }
  c.speed_probe_seconds = plan.best();
  if (rank == 0) report_speed(plan, measurer.waited_seconds());
  measurer.release_probe();
  if (rank == 0) store_medians(index, measurer.kept(), measured, &c);
  PMPI_Comm_free(&comm);
  return rank == 0 ? save_calibration(c, measured, path, start) : 0;
}

int measure_calibration(const Options& opt, const MpiRun& mpi) {
  if (mpi.ranks != 2)
    return mpi.refuse(2, format("%s: needs exactly 2 ranks, not %d: mpiexec -n 2 loom-bench "
                                "measure\n",
                                kTool, mpi.ranks));
  const std::string path = opt.out.empty() ? calibration_path() : opt.out;
  // Both ranks see the same Loom and the same environment, so they agree on these exits.
  if (!mpi.loom_active)
    return mpi.refuse(1, format("%s: Loom is not active (LOOM_DISABLE=1?): MPI_Pack would be the "
                                "host's and the calibration meaningless\n",
                                kTool));
  if (path.empty())
    return mpi.refuse(2, format("%s: no LOOM_CACHE_DIR, XDG_CACHE_HOME or HOME to write to; use "
                                "--out FILE\n",
                                kTool));
  return calibrate(opt, mpi.rank, path);
}

}  // namespace

int run_measure(int argc, char** argv) {
  return run_mpi_subcommand(argc, argv, true, parse_options, measure_calibration);
}

}  // namespace loom::bench
