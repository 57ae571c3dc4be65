// loom-bench alltoall: MPI_Alltoall of float (or double) data, the host's own (PMPI_Alltoall)
// against Loom uncompressed and Loom compressed with each codec mode, in one run
// (docs/compress.md). Every variant runs on its own duplicate of MPI_COMM_WORLD, selected
// through the loom_compress info hint ("none" for Loom uncompressed), so the environment's
// LOOM_COMPRESS does not matter. Data: a smooth 3-D field (sinusoids with 0.1% noise), a
// turbulence-like field (random-phase modes with a k^-5/3 energy spectrum), the smooth field as
// a temperature in kelvin (an offset mean, as most physical fields have) and random bits.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "bench/report.hpp"
#include "bench/subcommands.hpp"
#include "codec/metrics.hpp"
#include "loom/loom.h"

namespace loom::bench {
namespace {

constexpr const char* kTool = "loom-bench alltoall";

struct Options : SamplingOptions {
  Options() : SamplingOptions(50, 3, 1.0) {}
  std::vector<int64_t> sizes{4096, 65536, 1 << 20, 16 << 20};
  std::vector<std::string> modes{
      "blosc",       "blosc:relative=1e-3", "blosc:relative=1e-4", "zfp:rate=8",
      "zfp:rate=16", "zfp:accuracy=1e-3",   "zfp:reversible",      "blosc:zstd:relative=1e-3"};
  std::vector<std::string> data{"smooth", "turbulence", "temperature", "random"};
  bool double_precision = false;
};

void print_help(FILE* out) {
  std::fprintf(
      out,
      "usage: loom-bench alltoall [options]   (any number of ranks; run under loomrun)\n"
      "MPI_Alltoall: the host's own vs Loom uncompressed vs Loom compressed per codec mode.\n"
      "  --sizes LIST       bytes per peer (default 4K,64K,1M,16M; --quick: 64K,1M)\n"
      "  --modes LIST       codec specs (docs/codec.md; default blosc,blosc:relative=1e-3,\n"
      "                     blosc:relative=1e-4,zfp:rate=8,zfp:rate=16,zfp:accuracy=1e-3,\n"
      "                     zfp:reversible,blosc:zstd:relative=1e-3; separate with ';' or ',')\n"
      "  --data LIST        smooth, turbulence, temperature, random (default all)\n"
      "  --double           double data (default float)\n"
      "  --reps N           at most N samples per variant and case (default 50; at least 3)\n"
      "  --time SECONDS     time bound per case, all variants together (default 1.0)\n"
      "  --quick            a smoke run\n"
      "  --json FILE        also write the results as JSON\n"
      "  --help             this text\n"
      "Set LOOM_RANKS_PER_NODE=1 to make Loom treat every rank as its own node (same-node\n"
      "peers are never compressed) and LOOM_LINK_MBPS to the link's rate (default 1000).\n");
}

// Modes: separated by ';', or by ',' where the part after it starts a new codec.
std::vector<std::string> split_modes(const std::string& text) {
  std::vector<std::string> out;
  std::string current;
  auto flush = [&] {
    if (!current.empty()) out.push_back(current);
    current.clear();
  };
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == ';') {
      flush();
    } else if (c == ',') {
      const std::string rest = text.substr(i + 1);
      if (rest.rfind("zfp", 0) == 0 || rest.rfind("blosc", 0) == 0 || rest.rfind("none", 0) == 0)
        flush();
      else
        current += c;
    } else {
      current += c;
    }
  }
  flush();
  return out;
}

int parse_options(int argc, char** argv, Options* opt) {
  bool sizes_given = false;
  const int parsed = parse_subcommand_options(
      argc, argv, kTool, opt, print_help, {"--sizes", "--modes", "--data"},
      [&](const std::string& arg, const char* v) {
        if (arg == "--sizes")
          return size_list_option(kTool, "--sizes", v, &opt->sizes, &sizes_given);
        if (arg == "--modes") opt->modes = split_modes(v);
        if (arg == "--double") opt->double_precision = true;
        if (arg == "--data") {
          opt->data = split_commas(v);
          for (const auto& d : opt->data)
            if (d != "smooth" && d != "turbulence" && d != "temperature" && d != "random") {
              bad_option_value(kTool, "--data (smooth, turbulence, temperature, random)");
              return OptionParse::Bad;
            }
        }
        return arg == "--modes" || arg == "--double" || arg == "--data" ? OptionParse::Taken
                                                                        : OptionParse::NotMine;
      });
  if (parsed >= 0) return parsed;
  if (opt->quick && !sizes_given) opt->sizes = {65536, 1 << 20};
  opt->finish(0.2);
  return -1;
}

// ---- Data -----------------------------------------------------------------------------------

constexpr double kTwoPi = 6.283185307179586;

uint64_t next_random(uint64_t* state) {
  *state = *state * 6364136223846793005ull + 1442695040888963407ull;
  return *state;
}

// One rank's send buffer of `values` values; each rank holds a different slab.
template <typename T>
void fill(std::vector<T>* out, const std::string& kind, int rank) {
  uint64_t state = 0x1234567ull + static_cast<uint64_t>(rank) * 0x9e3779b97f4a7c15ull;
  const size_t n = out->size();
  if (kind == "random") {
    for (size_t i = 0; i < n; ++i) {
      // The high halves of two draws: an LCG's low bits repeat with short periods.
      const uint64_t bits = (next_random(&state) >> 32) | (next_random(&state) >> 32 << 32);
      std::memcpy(&(*out)[i], &bits, sizeof(T));
    }
    return;
  }
  if (kind == "smooth" || kind == "temperature") {
    // The 128x128xZ field of docs/codec.md, this rank's z-slab; as a temperature, 288 K +- 17.5 K
    // with the same 0.1% noise of its range.
    const bool kelvin = kind == "temperature";
    const size_t z0 = static_cast<size_t>(rank) * (n / 16384 + 1);
    for (size_t i = 0; i < n; ++i) {
      const double x = static_cast<double>(i % 128), y = static_cast<double>((i / 128) % 128),
                   z = static_cast<double>(i / 16384 + z0);
      const double noise =
          0.0035 * (static_cast<double>(next_random(&state) >> 11) / 9007199254740992.0 * 2 - 1);
      const double f = std::sin(kTwoPi * x / 61) * std::cos(kTwoPi * y / 47) +
                       0.5 * std::sin(kTwoPi * (x + 2 * y + 3 * z) / 173) +
                       0.25 * std::cos(kTwoPi * z / 29 + 0.3) + noise;
      (*out)[i] = static_cast<T>(kelvin ? 288 + 10 * f : f);
    }
    return;
  }
  // Turbulence-like: 1-D modes k = 1..1024 (log-spaced), energy spectrum E(k) ~ k^-5/3, so an
  // amplitude ~ k^-1/3 per logarithmic band; one period of 2^16 values, tabulated, read along
  // the buffer with a per-rank offset.
  constexpr size_t kPeriod = 1 << 16;
  std::vector<double> table(kPeriod, 0.0);
  for (int m = 0; m < 60; ++m) {
    const double k = std::pow(2.0, m / 6.0);
    const double amplitude = std::pow(k, -1.0 / 3.0);
    const double phase =
        kTwoPi * static_cast<double>(next_random(&state) >> 11) / 9007199254740992.0;
    const double kk = std::round(k);
    for (size_t i = 0; i < kPeriod; ++i)
      table[i] += amplitude * std::sin(kTwoPi * kk * static_cast<double>(i) / kPeriod + phase);
  }
  const size_t offset = static_cast<size_t>(rank) * 7919;
  for (size_t i = 0; i < n; ++i) (*out)[i] = static_cast<T>(table[(i + offset) % kPeriod]);
}

// ---- Measurement ----------------------------------------------------------------------------

struct Variant {
  std::string name;  // "native", "loom", or a codec spec
  MPI_Comm comm = MPI_COMM_NULL;
};

struct Row {
  std::string data, variant, path;
  int64_t bytes_per_peer = 0;
  Summary time;
  double speedup = 0;  // native median / this median
  double ratio = 1;    // raw / wire bytes over every rank
  double max_abs = 0, max_rel = 0, psnr = std::numeric_limits<double>::infinity();
  std::string verify_error;
};

template <typename T>
std::vector<Row> run_case(const Options& opt, const MpiRun& mpi, std::vector<Variant>& variants,
                          const std::string& kind, int64_t bytes_per_peer) {
  const MPI_Datatype type = sizeof(T) == 4 ? MPI_FLOAT : MPI_DOUBLE;
  const int count = static_cast<int>(bytes_per_peer / static_cast<int64_t>(sizeof(T)));
  const size_t total = static_cast<size_t>(count) * static_cast<size_t>(mpi.ranks);
  std::vector<T> send(total), expected(total), got(total);
  fill(&send, kind, mpi.rank);
  PMPI_Alltoall(send.data(), count, type, expected.data(), count, type, MPI_COMM_WORLD);
  const size_t nv = variants.size();
  std::vector<std::vector<double>> samples(nv);
  std::vector<Row> rows(nv);
  std::vector<uint64_t> raw(nv, 0), wire(nv, 0), compressed(nv, 0), calls(nv, 0);
  auto one = [&](size_t v, bool timed) {
    loom_stats before{}, after{};
    loom_get_stats(&before);
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = now_seconds();
    if (variants[v].name == "native")
      PMPI_Alltoall(send.data(), count, type, got.data(), count, type, variants[v].comm);
    else
      MPI_Alltoall(send.data(), count, type, got.data(), count, type, variants[v].comm);
    double t = now_seconds() - t0;
    loom_get_stats(&after);
    MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (!timed) return;
    samples[v].push_back(t);
    raw[v] += after.compress_raw_bytes - before.compress_raw_bytes;
    wire[v] += after.compress_wire_bytes - before.compress_wire_bytes;
    compressed[v] += after.compress_calls - before.compress_calls;
    ++calls[v];
  };
  // Warm-up (and the error check on the first result of each variant).
  for (size_t v = 0; v < nv; ++v) {
    one(v, false);
    const codec::ErrorStats e =
        codec::compare(expected.data(), got.data(), total,
                       sizeof(T) == 4 ? codec::Element::Float32 : codec::Element::Float64);
    double local[3] = {e.max_abs_error, e.max_rel_error, -e.psnr_db};
    MPI_Allreduce(MPI_IN_PLACE, local, 3, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    rows[v].max_abs = local[0];
    rows[v].max_rel = local[1];
    rows[v].psnr = -local[2];
    int mismatches = static_cast<int>(e.nonfinite_mismatches);
    MPI_Allreduce(MPI_IN_PLACE, &mismatches, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (mismatches) rows[v].verify_error = format("%d non-finite values changed", mismatches);
    if ((variants[v].name == "native" || variants[v].name == "loom") && local[0] != 0)
      rows[v].verify_error = "uncompressed result differs from the host's";
  }
  // Each round runs the variants in a new order (the same on every rank: a fixed seed), so that
  // none always follows the same one: on a shaped link a variant that sends less leaves the
  // token bucket's burst to the next (docs/compress.md).
  std::vector<size_t> order(nv);
  for (size_t v = 0; v < nv; ++v) order[v] = v;
  std::mt19937 rng(26);
  const double start = now_seconds();
  for (int rep = 0; rep < opt.max_reps; ++rep) {
    std::shuffle(order.begin(), order.end(), rng);
    for (size_t v : order) one(v, true);
    int stop = rep + 1 >= std::min(opt.min_reps, opt.max_reps) &&
               now_seconds() - start > opt.seconds_per_case;
    MPI_Bcast(&stop, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (stop) break;
  }
  for (size_t v = 0; v < nv; ++v) {
    Row& r = rows[v];
    r.data = kind;
    r.variant = variants[v].name;
    r.bytes_per_peer = bytes_per_peer;
    r.time = summarize(samples[v]);
    uint64_t sums[3] = {raw[v], wire[v], compressed[v]};
    MPI_Allreduce(MPI_IN_PLACE, sums, 3, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    r.ratio = sums[1] ? static_cast<double>(sums[0]) / static_cast<double>(sums[1]) : 1.0;
    r.path = r.variant == "native" ? "host"
             : sums[2] == 0        ? "host"
             : sums[0] == sums[1]  ? "loom raw"
                                   : "compressed";
  }
  for (Row& r : rows) r.speedup = r.time.median > 0 ? rows[0].time.median / r.time.median : 0;
  return rows;
}

std::string error_text(double v) {
  return v == 0 ? "0" : format("%.3g", v);
}

int measure(const Options& opt, const MpiRun& mpi) {
  if (mpi.ranks < 2) return mpi.refuse(2, "loom-bench alltoall needs at least 2 ranks");
  std::vector<Variant> variants{{"native", MPI_COMM_NULL}, {"loom", MPI_COMM_NULL}};
  for (const auto& m : opt.modes) variants.push_back({m, MPI_COMM_NULL});
  for (auto& v : variants) {
    MPI_Comm_dup(MPI_COMM_WORLD, &v.comm);
    MPI_Comm_set_errhandler(v.comm, MPI_ERRORS_RETURN);
    if (v.name == "native") continue;
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "loom_compress", v.name == "loom" ? "none" : v.name.c_str());
    if (MPI_Comm_set_info(v.comm, info) != MPI_SUCCESS && mpi.rank == 0)
      std::fprintf(stderr, "%s: '%s' is not a codec spec: runs uncompressed\n", kTool,
                   v.name.c_str());
    MPI_Info_free(&info);
  }
  if (mpi.rank == 0) {
    const char* rpn = std::getenv("LOOM_RANKS_PER_NODE");
    const char* link = std::getenv("LOOM_LINK_MBPS");
    std::printf("loom-bench alltoall   host MPI: %s   %d ranks   Loom: %s   %s data\n",
                mpi.host_mpi.c_str(), mpi.ranks, mpi.loom_state(),
                opt.double_precision ? "double" : "float");
    std::printf("LOOM_RANKS_PER_NODE=%s LOOM_LINK_MBPS=%s; time: slowest rank, median [p10-p90]\n",
                rpn ? rpn : "(unset)", link ? link : "(unset: 1000)");
    note_if_loom_inactive(mpi, "every variant is the host's own MPI_Alltoall.\n");
    std::fflush(stdout);
  }
  std::vector<Row> all;
  for (const auto& kind : opt.data)
    for (int64_t size : opt.sizes) {
      std::vector<Row> rows = opt.double_precision
                                  ? run_case<double>(opt, mpi, variants, kind, size)
                                  : run_case<float>(opt, mpi, variants, kind, size);
      if (mpi.rank == 0) {
        Table t({"data", "per peer", "variant", "path", "ms median [p10-p90]", "speed-up", "ratio",
                 "max abs", "max rel", "PSNR dB"});
        for (const Row& r : rows)
          t.add_row(
              {r.data, human_bytes(r.bytes_per_peer), r.variant, r.path,
               format("%.3f [%.3f-%.3f]", r.time.median * 1e3, r.time.p10 * 1e3, r.time.p90 * 1e3),
               format("%.2fx", r.speedup), format("%.2f", r.ratio), error_text(r.max_abs),
               error_text(r.max_rel), std::isinf(r.psnr) ? "inf" : format("%.1f", r.psnr)});
        t.print(stdout);
        for (const Row& r : rows)
          if (!r.verify_error.empty())
            std::printf("data mismatch in %s %s %s: %s\n", r.data.c_str(),
                        human_bytes(r.bytes_per_peer).c_str(), r.variant.c_str(),
                        r.verify_error.c_str());
        std::fflush(stdout);
      }
      all.insert(all.end(), rows.begin(), rows.end());
    }
  int failures = 0;
  for (const Row& r : all) failures += r.verify_error.empty() ? 0 : 1;
  if (mpi.rank == 0 && !opt.json_path.empty()) {
    JsonWriter j = begin_json_report({.subcommand = "alltoall", .ranks = mpi.ranks}, opt);
    j.field("element", opt.double_precision ? "double" : "float");
    j.array("modes", opt.modes);
    opt.write_json(j);
    j.end_object();
    j.objects("cases", all, [&](const Row& r) {
      j.field("data", r.data);
      j.field("bytes_per_peer", r.bytes_per_peer);
      j.field("variant", r.variant);
      j.field("path", r.path);
      j.field("seconds", r.time);
      j.field("speedup", r.speedup);
      j.field("ratio", r.ratio);
      j.field("max_abs_error", r.max_abs);
      j.field("max_rel_error", r.max_rel);
      j.field("psnr_db", std::isinf(r.psnr) ? 999.0 : r.psnr);
      write_verification(j, r.verify_error);
    });
    finish_json_report(j, opt.json_path, kTool);
  }
  for (auto& v : variants) MPI_Comm_free(&v.comm);
  return failures ? 1 : 0;
}

}  // namespace

int run_alltoall(int argc, char** argv) {
  return run_mpi_subcommand(argc, argv, false, parse_options, measure);
}

}  // namespace loom::bench
