// loom-bench pingpong: OSU-style ping-pong of derived datatypes between two ranks, the host
// MPI's point-to-point (PMPI_Send/PMPI_Recv) against Loom's (MPI_Send/MPI_Recv), in one run.
//
// loom-bench links libloom before libmpi, so MPI_Send/MPI_Recv resolve to Loom (which packs with
// its own kernels and moves MPI_PACKED bytes) while PMPI_Send/PMPI_Recv are the host's own. Both
// ranks send and receive with the derived type. Every case is verified on both paths before and
// after timing: each receiver compares its whole receive buffer, gaps included, with the peer's
// pattern unpacked by the host's engine. Timed samples alternate host and Loom so that drift and
// noise hit both; a sample is a batch of round trips timed on rank 0, reported as one-way time.
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "bench/p2p_common.hpp"
#include "bench/p2p_pingpong.hpp"
#include "bench/report.hpp"
#include "bench/subcommands.hpp"
#include "loom/loom.h"
#include "model/trial.hpp"
#include "ops/method.hpp"

namespace loom::bench {

namespace {

using p2p::Exchange, p2p::Floor, p2p::Path, p2p::host_path, p2p::loom_path, p2p::measure_floor,
    p2p::ping_pong, p2p::verify;

constexpr const char* kTool = "loom-bench pingpong";
constexpr double kSampleSeconds = 200e-6;  // batch round trips so a sample >> timer overhead

struct Options : SamplingOptions {
  Options() : SamplingOptions(200, 7, 0.2) {}
  std::vector<int64_t> sizes;
  std::vector<int64_t> blocks = {1, 2, 4, 8, 16, 32, 64, 256, 1024};
  std::vector<std::string> shape_filters;  // vector, subarray, indexed (substrings of names)
};

std::vector<int64_t> default_sizes() {  // 1 B .. 16 MiB in x4 steps
  std::vector<int64_t> sizes;
  for (int64_t s = 1; s <= 16 * kMiB; s *= 4) sizes.push_back(s);
  return sizes;
}

void print_help(FILE* out) {
  std::fprintf(
      out,
      "usage: mpiexec -n 2 loom-bench pingpong [options]\n"
      "  Ping-pong of derived datatypes between two ranks: host MPI (PMPI_Send/PMPI_Recv)\n"
      "  vs Loom (MPI_Send/MPI_Recv), alternating in one run (docs/bench-p2p.md).\n"
      "  Shapes: vector with block sizes 1..1024 B (stride 2x block), a face of a 3-D\n"
      "  double grid (subarray) and an irregular indexed_block of 16 B blocks.\n\n"
      "options:\n"
      "  --quick            CI smoke test: sizes 64,4K,256K,1M, blocks 1,8,64,1024, short\n"
      "                     time bounds (seconds)\n"
      "  --sizes LIST       packed message sizes, e.g. 1K,64K,16M (K/M = KiB/MiB)\n"
      "                     default 1,4,16,...,16M (x4 steps)\n"
      "  --blocks LIST      vector block sizes in bytes (default 1,2,4,8,16,32,64,256,1024)\n"
      "  --shapes LIST      only shapes whose name contains one of these (vec, subarray,\n"
      "                     indexed; e.g. vec_b8; default: every shape)\n"
      "  --reps N           at most N timed samples per path and case (default 200; at\n"
      "                     least min(7,N))\n"
      "  --time SECONDS     time bound per case, both paths together (default 0.2)\n"
      "  --json FILE        also write the results as JSON (tools/plot_bench.py plots it)\n"
      "  --help             this text\n");
}

// Returns -1 to continue, or an exit code.
int parse_options(int argc, char** argv, Options* opt) {
  bool sizes_given = false, blocks_given = false;
  const int parsed = parse_subcommand_options(
      argc, argv, kTool, opt, print_help, {"--sizes", "--blocks", "--shapes"},
      [&](const std::string& arg, const char* v) {
        if (arg == "--sizes") return size_list_option(kTool, "size", v, &opt->sizes, &sizes_given);
        if (arg == "--blocks")
          return size_list_option(kTool, "block size", v, &opt->blocks, &blocks_given);
        if (arg != "--shapes") return OptionParse::NotMine;
        opt->shape_filters = split_commas(v);
        return OptionParse::Taken;
      });
  if (parsed >= 0) return parsed;
  if (!sizes_given)
    opt->sizes =
        opt->quick ? std::vector<int64_t>{64, 4 * kKiB, 256 * kKiB, 1 * kMiB} : default_sizes();
  if (opt->quick && !blocks_given) opt->blocks = {1, 8, 64, 1024};
  opt->finish(0.02);
  return -1;
}

// ---------------------------------------------------------------------------------------------
// Shapes.

enum class Family { Vector, Subarray, Indexed };

struct Shape {
  std::string name;
  Family family;
  int64_t block_bytes;  // length of every contiguous run of the typemap
};

const char* family_name(Family f) {
  static const char* const kNames[] = {"vector", "subarray", "indexed_block"};  // by Family
  return kNames[static_cast<int>(f)];
}

std::vector<Shape> select_shapes(const Options& opt) {
  std::vector<Shape> all;
  for (int64_t b : opt.blocks)
    all.push_back({format("vec_b%lld", (long long)b), Family::Vector, b});
  all.push_back({"subarray_face", Family::Subarray, 8});
  all.push_back({"indexed_b16", Family::Indexed, 16});
  if (opt.shape_filters.empty()) return all;
  std::vector<Shape> kept;
  for (const auto& s : all)
    for (const auto& f : opt.shape_filters)
      if (s.name.find(f) != std::string::npos) {
        kept.push_back(s);
        break;
      }
  return kept;
}

struct BuiltType {
  MPI_Datatype type = MPI_DATATYPE_NULL;  // committed; one element is the whole message
  int64_t packed_bytes = 0;
  int64_t span_bytes = 0;  // user-buffer bytes from offset 0 to the true upper bound
  std::string geometry;
};

// Deterministic gaps (splitmix64), so both ranks build the same typemap.
std::vector<int> gapped_block_starts(int64_t blocks, int block_elems, int max_gap) {
  std::vector<int> starts(static_cast<size_t>(blocks));
  uint64_t state = 0x1234567ull;
  int64_t cur = 0;
  for (auto& s : starts) {
    state += 0x9e3779b97f4a7c15ull;
    uint64_t z = state;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    s = static_cast<int>(cur);
    cur += block_elems + static_cast<int64_t>(z % static_cast<uint64_t>(max_gap + 1));
  }
  return starts;
}

// Builds the shape scaled to `bytes` packed bytes; empty string, or why the size does not fit.
std::string build_type(const Shape& shape, int64_t bytes, BuiltType* out) {
  MPI_Datatype t = MPI_DATATYPE_NULL;
  switch (shape.family) {
    case Family::Vector: {
      const int64_t b = shape.block_bytes;
      if (bytes < b || bytes % b) return "size is not a multiple of the block";
      const p2p::Element elem = p2p::element_for_block(b);
      const int64_t count = bytes / b;
      MPI_Type_vector(static_cast<int>(count), static_cast<int>(b / elem.bytes),
                      static_cast<int>(2 * b / elem.bytes), elem.type, &t);
      out->geometry = format("%lld x %lld B, stride %lld B", (long long)count, (long long)b,
                             (long long)(2 * b));
      break;
    }
    case Family::Subarray: {
      // The x = 1 face of a C-order [nz][ny][8] double grid: one double per 64 B cache line,
      // which is what any grid at least 8 cells deep in x looks like to the caches, while
      // keeping the grid (8x the message) affordable at 16 MiB.
      if (bytes < 8 || bytes % 8) return "size is not a multiple of 8 B";
      const int64_t cells = bytes / 8;
      int64_t nz = 1;
      while (nz * nz * 4 <= cells && cells % (nz * 2) == 0) nz *= 2;
      const int sizes[3] = {static_cast<int>(nz), static_cast<int>(cells / nz), 8};
      const int subsizes[3] = {sizes[0], sizes[1], 1};
      const int starts[3] = {0, 0, 1};
      MPI_Type_create_subarray(3, sizes, subsizes, starts, MPI_ORDER_C, MPI_DOUBLE, &t);
      out->geometry = format("x=1 face of a %dx%dx8 double grid", sizes[0], sizes[1]);
      break;
    }
    case Family::Indexed: {
      // Pairs of doubles at irregular, ascending offsets (gaps of 0-6 doubles): a gather list
      // of two-component values over an unstructured mesh.
      constexpr int kBlockElems = 2;
      if (bytes < 16 || bytes % 16) return "size is not a multiple of 16 B";
      const int64_t blocks = bytes / 16;
      const std::vector<int> starts = gapped_block_starts(blocks, kBlockElems, 6);
      MPI_Type_create_indexed_block(static_cast<int>(blocks), kBlockElems, starts.data(),
                                    MPI_DOUBLE, &t);
      out->geometry = format("%lld x 16 B at gaps of 0-48 B", (long long)blocks);
      break;
    }
  }
  MPI_Type_commit(&t);
  MPI_Count size = 0, true_lb = 0, true_extent = 0;
  MPI_Type_size_x(t, &size);
  MPI_Type_get_true_extent_x(t, &true_lb, &true_extent);
  out->type = t;
  out->packed_bytes = size;
  out->span_bytes = true_lb + true_extent;
  return "";
}

// ---------------------------------------------------------------------------------------------
// One case.

struct CaseResult : p2p::PathTimes {  // one-way seconds (rank 0's view)
  Shape shape;
  int64_t packed_bytes = 0, span_bytes = 0;
  std::string geometry;
  bool dram = false;
  std::string route;  // which engine served Loom's sends and receives on rank 0
  Floor floor;        // rank 0's
  int iterations_per_sample = 0, warmup = 0;
  std::string verify_error;
  bool verified() const { return verify_error.empty(); }
  // The best host/loom ratio any transport could reach here (Floor).
  double ratio_bound() const { return floor.seconds() > 0 ? host.median / floor.seconds() : 0; }
  std::string label() const { return shape.name + " " + human_bytes(packed_bytes); }
};

CaseResult run_case(const Shape& shape, const BuiltType& bt, int rank, const Options& opt,
                    int64_t llc_bytes) {
  CaseResult r;
  r.shape = shape;
  r.packed_bytes = bt.packed_bytes;
  r.span_bytes = bt.span_bytes;
  r.geometry = bt.geometry;
  // Both ranks' send and receive buffers stream through the one shared last-level cache.
  r.dram = 4 * bt.span_bytes > llc_bytes;
  Exchange x = p2p::make_exchange(bt.type, 1, bt.packed_bytes, bt.span_bytes, 0, kTool);
  const Path& host = host_path();
  const Path& loom = loom_path();

  // Verify both paths.
  std::string errors = verify(host, rank, x, 1);
  const std::string loom_error = verify(loom, rank, x, 2);
  if (!loom_error.empty()) append_error(&errors, loom_error);

  // Loom's first messages of a kind try both methods (docs/model.md, "Online trials"): let
  // them pass before anything is timed.
  ping_pong(loom, rank, x, loom::model::MethodTrial::kSettledBy);

  // Warm-up and calibration, decided on rank 0 and broadcast so both ranks run the same loops.
  const Path* paths[2] = {&host, &loom};
  double one_trip[2] = {0, 0};
  for (int k = 0; k < 2; ++k) {
    const double t0 = now_seconds();
    ping_pong(*paths[k], rank, x, 1);
    one_trip[k] = now_seconds() - t0;
  }
  int plan[3] = {0, 0, 0};  // warm-up round trips, round trips per sample, samples per path
  if (rank == 0)
    plan[0] = static_cast<int>(
        std::clamp(0.01 / std::max(one_trip[0], one_trip[1]), 1.0, opt.quick ? 20.0 : 200.0));
  PMPI_Bcast(plan, 1, MPI_INT, 0, MPI_COMM_WORLD);
  double per_trip[2] = {0, 0};
  for (int k = 0; k < 2; ++k) {
    const double t0 = now_seconds();
    ping_pong(*paths[k], rank, x, plan[0]);
    per_trip[k] = std::max((now_seconds() - t0) / plan[0], 1e-9);
  }
  if (rank == 0) {
    const double slowest = std::max(per_trip[0], per_trip[1]);
    plan[1] = static_cast<int>(std::clamp(kSampleSeconds / slowest, 1.0, 10000.0));
    const double rep_seconds = plan[1] * (per_trip[0] + per_trip[1]);
    plan[2] = static_cast<int>(std::clamp(opt.seconds_per_case / rep_seconds,
                                          static_cast<double>(opt.min_reps),
                                          static_cast<double>(opt.max_reps)));
  }
  PMPI_Bcast(plan, 3, MPI_INT, 0, MPI_COMM_WORLD);
  r.warmup = plan[0];
  r.iterations_per_sample = plan[1];

  std::vector<double> samples[2];
  for (int rep = 0; rep < plan[2]; ++rep) {
    for (int j = 0; j < 2; ++j) {
      const int k = (rep + j) % 2;  // alternate which path goes first
      const double t0 = now_seconds();
      ping_pong(*paths[k], rank, x, plan[1]);
      samples[k].push_back((now_seconds() - t0) / (2.0 * plan[1]));
    }
  }
  r.summarize_samples(samples);

  // Again after timing, with new patterns: a path that stops delivering after its first use
  // would otherwise go unnoticed.
  // Loom's counters over its exchange here tell its route: by now the first messages, which
  // try both methods (docs/model.md, "Online trials"), are behind it.
  for (int k = 0; k < 2; ++k) {
    const auto before = p2p::RouteCounters::now();
    const std::string e = verify(*paths[k], rank, x, 3 + static_cast<uint64_t>(k));
    if (paths[k] == &loom) {
      const auto used = p2p::RouteCounters::now().since(before);
      r.route = p2p::route_of(used.p2p_loom, used.p2p_host);
    }
    if (!e.empty()) append_error(&errors, e + " (after timing)");
  }
  r.verify_error = errors;
  r.floor = measure_floor(x, opt.quick);
  return r;
}

// ---------------------------------------------------------------------------------------------
// Cases.

struct Run {
  std::vector<CaseResult> results;
  std::vector<std::string> skipped;
  std::string skipped_line;  // compact: "vec_b8 1 B, 4 B; vec_b16 ..."
  int failures = 0;
};

// Every shape at every size that fits it, both ranks; progress on rank 0's stderr.
Run run_cases(const std::vector<Shape>& shapes, int rank, const Options& opt, int64_t llc) {
  Run run;
  const size_t total = shapes.size() * opt.sizes.size();
  size_t done = 0;
  for (const Shape& shape : shapes) {
    bool shape_skipped = false;
    for (int64_t size : opt.sizes) {
      ++done;
      BuiltType bt;
      const std::string why_not = build_type(shape, size, &bt);
      if (!why_not.empty()) {
        run.skipped.push_back(
            format("%s %s (%s)", shape.name.c_str(), human_bytes(size).c_str(), why_not.c_str()));
        run.skipped_line += (shape_skipped              ? ", "
                             : run.skipped_line.empty() ? ""
                                                        : "; ") +
                            (shape_skipped ? "" : shape.name + " ") + human_bytes(size);
        shape_skipped = true;
        continue;
      }
      const double start = now_seconds();
      run.results.push_back(run_case(shape, bt, rank, opt, llc));
      MPI_Type_free(&bt.type);
      if (rank != 0) continue;
      std::fprintf(stderr, "[%3zu/%zu] %-14s %-8s %5.2f s\n", done, total, shape.name.c_str(),
                   human_bytes(size).c_str(), now_seconds() - start);
      if (!run.results.back().verified())
        std::fprintf(stderr, "data mismatch in %s %s: %s\n", shape.name.c_str(),
                     human_bytes(size).c_str(), run.results.back().verify_error.c_str());
    }
  }
  for (const auto& r : run.results) run.failures += r.verified() ? 0 : 1;
  return run;
}

// ---------------------------------------------------------------------------------------------
// Report.

double mbps(int64_t bytes, double seconds) {
  return seconds > 0 ? static_cast<double>(bytes) / seconds / 1e6 : 0;
}

std::string usec(double seconds) {
  return seconds * 1e6 < 100 ? format("%.2f", seconds * 1e6) : format("%.0f", seconds * 1e6);
}

std::string usec_cell(const Summary& s) {
  return usec(s.median) + " [" + usec(s.p10) + "-" + usec(s.p90) + "]";
}

void print_table(const MpiRun& mpi, const Run& run) {
  Table table({"shape", "blk", "size", "mem", "route", "host us [p10-p90]", "loom us [p10-p90]",
               "host MB/s", "loom MB/s", "host/loom", "floor us", "bound", "data"});
  for (const auto& r : run.results)
    table.add_row({r.shape.name, format("%lld", (long long)r.shape.block_bytes),
                   human_bytes(r.packed_bytes), r.dram ? "DRAM" : "cache", r.route,
                   usec_cell(r.host), usec_cell(r.loom),
                   format("%.0f", mbps(r.packed_bytes, r.host.median)),
                   format("%.0f", mbps(r.packed_bytes, r.loom.median)), format("%.2fx", r.ratio()),
                   usec(r.floor.seconds()), format("%.2fx", r.ratio_bound()),
                   r.verified() ? "ok" : "MISMATCH"});
  std::printf(
      "\nhost MPI: %s   (one-way time per message = round trip / 2, median over samples;\n"
      "MB/s = packed bytes / one-way median; host/loom > 1: Loom is faster; route: which\n"
      "engine served Loom's MPI_Send/MPI_Recv (loom = packed by Loom, host = left to the\n"
      "host, - = no derived-type call counted: a contiguous typemap such as one block, or\n"
      "Loom not interposing); mem = DRAM: both ranks' buffers exceed the LLC; floor = (fastest\n"
      "pack + fastest unpack of the message) / 2, both ranks packing at once: the least time\n"
      "any same-node transport needs to read the sender's lines and write the receiver's;\n"
      "bound = host / floor, the best host/loom ratio any transport can reach here)\n\n",
      mpi.host_mpi.c_str());
  table.print(stdout);
  if (!run.skipped_line.empty())
    std::printf("skipped (message not a whole number of the shape's blocks): %s\n",
                run.skipped_line.c_str());
}

ComparisonSummary summarize_run(const Run& run) {
  std::vector<Comparison> cases;
  for (const auto& r : run.results)
    cases.push_back({r.label(), r.ratio(), within_noise(r.host, r.loom), r.ratio_bound()});
  return ComparisonSummary(cases);
}

void print_summary(const MpiRun& mpi, const Run& run, const ComparisonSummary& s) {
  std::printf(
      "\nSummary (host %s, Loom %s; ratios are host time / Loom time, > 1: Loom is faster;\n"
      "within noise: the two paths' p10-p90 ranges overlap)\n",
      mpi.host_mpi.c_str(), mpi.loom_state());
  print_comparison(s, {}, "  ");
  int routed[3] = {0, 0, 0};
  std::vector<std::string> mismatched;
  for (const auto& r : run.results) {
    ++routed[r.route == "loom" ? 0 : r.route == "host" ? 1 : 2];
    if (!r.verified()) mismatched.push_back(r.label());
  }
  std::printf("  route of Loom's path: packed by Loom in %d of %zu cases, host %d, other %d\n",
              routed[0], run.results.size(), routed[1], routed[2]);
  print_verification("both paths, both directions, before and after timing", mismatched,
                     run.results.size());
  std::fflush(stdout);
}

void write_json(const Options& opt, int64_t llc, const Run& run, const ComparisonSummary& s) {
  JsonWriter j = begin_json_report(
      {.subcommand = "pingpong", .ranks = 2, .machine = {{"llc_bytes", llc}}}, opt);
  opt.write_json(j);
  j.array("sizes", opt.sizes);
  j.array("blocks", opt.blocks);
  j.end_object();
  j.begin_array("cases");
  for (const auto& r : run.results) {
    j.begin_object();
    j.field("shape", r.shape.name);
    j.field("family", family_name(r.shape.family));
    j.field("block_bytes", r.shape.block_bytes);
    j.field("geometry", r.geometry);
    j.field("packed_bytes", r.packed_bytes);
    j.field("span_bytes", r.span_bytes);
    j.field("cache", r.dram ? "dram" : "cache");
    j.field("route", r.route);
    j.field("host_seconds", r.host);  // one-way time per message
    j.field("loom_seconds", r.loom);
    j.field("host_mbps", mbps(r.packed_bytes, r.host.median));
    j.field("loom_mbps", mbps(r.packed_bytes, r.loom.median));
    j.field("ratio", r.ratio());  // host median / Loom median: > 1 means Loom is faster
    j.field("ratio_paired", r.paired_ratio);
    j.field("within_noise", within_noise(r.host, r.loom));  // p10-p90 ranges overlap
    j.field("floor_pack_seconds", r.floor.pack);            // fastest engine, both ranks busy
    j.field("floor_unpack_seconds", r.floor.unpack);
    j.field("floor_seconds", r.floor.seconds());  // (pack + unpack) / 2
    j.field("ratio_bound", r.ratio_bound());      // host / floor
    j.field("iterations_per_sample", r.iterations_per_sample);
    j.field("warmup_round_trips", r.warmup);
    write_verification(j, r.verify_error);
    j.end_object();
  }
  j.end_array();
  j.array("skipped", run.skipped);
  j.begin_object("summary");
  write_comparison(j, "comparison", s);
  j.field("verify_failures", run.failures);
  j.end_object();
  finish_json_report(j, opt.json_path, kTool);  // a warning is enough: the table is printed
}

int measure_pingpongs(const Options& opt, const MpiRun& mpi) {
  if (mpi.ranks != 2)
    return mpi.refuse(2, format("%s: needs exactly 2 ranks, got %d; run it as\n"
                                "  mpiexec -n 2 loom-bench pingpong [options]\n",
                                kTool, mpi.ranks));
  const std::vector<Shape> shapes = select_shapes(opt);
  if (shapes.empty()) return mpi.refuse(2, format("%s: no shape matches --shapes\n", kTool));

  const int64_t llc = cpu_cache_bytes("index3", _SC_LEVEL3_CACHE_SIZE, 32 * kMiB);
  if (mpi.rank == 0) {
    std::printf("loom-bench pingpong   host MPI: %s   2 ranks\n", mpi.host_mpi.c_str());
    std::printf("Loom: %s   LLC %s   time bound %.2f s/case, samples %d..%d per path\n",
                mpi.loom_state(), human_bytes(llc).c_str(), opt.seconds_per_case, opt.min_reps,
                opt.max_reps);
    note_if_loom_inactive(
        mpi,
        "MPI_Send is\n"
        "      the host's own, so every ratio below measures noise and should be ~1.\n");
    std::fflush(stdout);
  }

  const Run run = run_cases(shapes, mpi.rank, opt, llc);
  if (mpi.rank == 0) print_table(mpi, run);
  if (mpi.rank == 0) {
    const ComparisonSummary summary = summarize_run(run);
    print_summary(mpi, run, summary);
    if (!opt.json_path.empty()) write_json(opt, llc, run, summary);
  }
  return run.failures ? 1 : 0;
}

}  // namespace

int run_pingpong(int argc, char** argv) {
  return run_mpi_subcommand(argc, argv, false, parse_options, measure_pingpongs);
}

}  // namespace loom::bench
