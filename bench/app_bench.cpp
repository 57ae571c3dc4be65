// loom-bench app: the corpus's application datatypes (bench/type_corpus: WRF, MILC, NAS LU/MG,
// LAMMPS, SPECFEM3D, FFT2) at their applications' message sizes, sent the way applications and
// their benchmarks send them: a fixed, modest number of MPI_Send/MPI_Recv round trips per type,
// Loom's online trials and every first-use cost inside the time. The host's path
// (PMPI_Send/PMPI_Recv, PMPI_Type_commit/PMPI_Type_free) and Loom's (MPI_*) alternate in one run
// (bench/p2p_pingpong.hpp); each round builds a fresh type, as a new run of the application
// would. Two variants: `steady` builds the type outside the time and sends `--messages` round
// trips with it; `recreate` builds, commits and frees a type every `--life` round trips, inside
// the time (an application that declares its halo types per step). Every round is verified on
// both paths after its timed loop. docs/app-mode.md.
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "bench/p2p_common.hpp"
#include "bench/p2p_pingpong.hpp"
#include "bench/report.hpp"
#include "bench/subcommands.hpp"
#include "bench/type_corpus.hpp"
#include "loom/loom.h"
#include "mpi/host_identity.hpp"

namespace loom::bench {

namespace {

using p2p::Exchange, p2p::Path;

constexpr const char* kTool = "loom-bench app";

// The application's message sizes (packed bytes) of each application type: halo faces of
// the problem classes the literature runs (DDTBench's configurations, NAS classes A-C), from
// 0.5 KiB to 4.5 MiB.
struct AppType {
  const char* corpus_name;
  std::vector<int64_t> sizes;
};
const std::vector<AppType>& app_types() {
  static const std::vector<AppType> types = {
      {"wrf_x_sa", {10 * kKiB, 42 * kKiB, 170 * kKiB}},
      {"wrf_y_sa", {10 * kKiB, 42 * kKiB, 170 * kKiB}},
      {"milc_su3_zd", {6 * kKiB, 48 * kKiB, 384 * kKiB}},
      {"nas_lu_x", {kKiB, 4 * kKiB, 20 * kKiB}},
      {"nas_lu_y", {kKiB, 4 * kKiB, 20 * kKiB}},
      {"nas_mg_x", {kKiB / 2, 8 * kKiB, 128 * kKiB, 512 * kKiB}},
      {"nas_mg_y", {kKiB / 2, 8 * kKiB, 128 * kKiB, 512 * kKiB}},
      {"lammps_x", {8 * kKiB, 64 * kKiB, 512 * kKiB}},
      {"lammps_full", {8 * kKiB, 64 * kKiB, 512 * kKiB}},
      {"specfem3d_oc", {16 * kKiB, 174 * kKiB, kMiB}},
      {"specfem3d_cm", {16 * kKiB, 174 * kKiB, kMiB}},
      {"fft2d_transpose", {64 * kKiB, kMiB, 4 * kMiB + kMiB / 2}},
  };
  return types;
}

// steady and recreate: ping-pongs of every application type; window: a window of kWindow
// MPI_Isend (MPI_Irecv on the peer) and one MPI_Waitall, of a vector of 4-byte blocks at
// 64 KiB, where a host that packs inside the wait makes its posts look cheap.
enum class Variant { Steady, Recreate, Window };
const char* variant_name(Variant v) {
  static const char* const kNames[] = {"steady", "recreate", "window"};  // by Variant
  return kNames[static_cast<int>(v)];
}
constexpr int kWindow = 64;
const AppType kWindowType = {"vec1d_b4", {64 * kKiB}};

struct Options : SamplingOptions {
  Options() : SamplingOptions(5, 5, 0) {}
  int messages = 100;    // round trips per round (and per type in `steady`)
  int life = 20;         // round trips per type in `recreate`
  int64_t max_size = 0;  // > 0: skip the sizes above it
  std::vector<std::string> type_filters;
  std::vector<Variant> variants = {Variant::Steady, Variant::Recreate, Variant::Window};
};

void print_help(FILE* out) {
  std::fprintf(
      out,
      "usage: mpiexec -n 2 loom-bench app [options]\n"
      "  The corpus's application types at their applications' sizes, MPI_Send/MPI_Recv\n"
      "  ping-pong for a fixed number of round trips (trials and first use included):\n"
      "  host MPI (PMPI_*) vs Loom (MPI_*), alternating rounds in one run (docs/app-mode.md).\n\n"
      "options:\n"
      "  --quick            CI smoke test: smallest size of each type, 3 rounds, 40 messages\n"
      "  --messages N       round trips per round (default 100)\n"
      "  --life N           round trips per type in the recreate variant (default 20)\n"
      "  --variants LIST    steady, recreate, window (default all)\n"
      "  --types LIST       only types whose name contains one of these (e.g. wrf,nas_mg)\n"
      "  --max-size SIZE    skip application sizes above SIZE (K/M = KiB/MiB; default: none)\n"
      "  --reps N           alternated rounds per path and case (default 5)\n"
      "  --json FILE        also write the results as JSON\n"
      "  --help             this text\n");
}

int parse_options(int argc, char** argv, Options* opt) {
  bool messages_given = false;
  const int parsed = parse_subcommand_options(
      argc, argv, kTool, opt, print_help,
      {"--messages", "--life", "--max-size", "--types", "--variants"},
      [&](const std::string& arg, const char* v) {
        if (arg == "--messages" || arg == "--life") {
          if (!parse_positive(v, arg == "--life" ? &opt->life : &opt->messages)) {
            bad_option_value(kTool, arg.c_str());
            return OptionParse::Bad;
          }
          messages_given |= arg == "--messages";
          return OptionParse::Taken;
        }
        if (arg == "--max-size") {
          if (parse_size(v, &opt->max_size) && opt->max_size > 0) return OptionParse::Taken;
          bad_option_value(kTool, "--max-size");
          return OptionParse::Bad;
        }
        if (arg == "--types") {
          opt->type_filters = split_commas(v);
          return OptionParse::Taken;
        }
        if (arg != "--variants") return OptionParse::NotMine;
        opt->variants.clear();
        for (const auto& name : split_commas(v)) {
          int k = 0;
          while (k < 3 && name != variant_name(static_cast<Variant>(k))) ++k;
          if (k == 3) {
            bad_option_value(kTool, "--variants");
            return OptionParse::Bad;
          }
          opt->variants.push_back(static_cast<Variant>(k));
        }
        return OptionParse::Taken;
      });
  if (parsed >= 0) return parsed;
  if (opt->quick && !messages_given) opt->messages = 40;
  if (opt->quick && !opt->reps_given) opt->max_reps = 3;
  opt->min_reps = opt->max_reps;
  return -1;
}

// ---------------------------------------------------------------------------------------------
// One case: a type at one size, both paths, one variant.

struct CaseResult : p2p::PathTimes {  // seconds per one-way message (rank 0's view)
  std::string type_name, shape, route;
  Variant variant = Variant::Steady;
  int64_t packed_bytes = 0;
  p2p::Floor floor;
  uint64_t trials_settled = 0;  // Loom's trial verdicts over the case (rank 0)
  std::string verify_error;
  bool verified() const { return verify_error.empty(); }
  // One-way seconds per message over the whole run as an application lives it: the first
  // round (the type's first use) and every round up to Loom's last one in which a trial began,
  // decided or confirmed (a kind's trial can start after its first round: the plan, and with it
  // the kind's age, is cached by signature) in full, on both paths alike, so that a spike in
  // those rounds counts the same on either; the other rounds at their median, which keeps one
  // descheduled round on this shared machine from counting 5 times its share.
  double host_life = 0, loom_life = 0;
  int loom_rounds_in_full = 1;    // rounds counted in full: the first, and Loom's trials'
  std::vector<double> rounds[2];  // seconds per message of each round: host, Loom
  double life_ratio() const { return loom_life > 0 ? host_life / loom_life : 0; }
  double cold_ratio() const { return cold[1] > 0 ? cold[0] / cold[1] : 0; }
  double cold[2] = {0, 0};  // the first round's seconds per message: host, Loom
  double ratio_bound() const { return floor.seconds() > 0 ? host_life / floor.seconds() : 0; }
};

// `windows` windows on `path`'s calls: rank 0 posts kWindow MPI_Isend of one message and waits
// for all, rank 1 posts kWindow MPI_Irecv into the consecutive slots of `slots` and waits for
// all; a zero-byte reply closes each window.
void run_windows(bool host, const Path& path, int rank, const Exchange& x, unsigned char* slots,
                 int windows) {
  const auto isend = host ? &PMPI_Isend : &MPI_Isend;
  const auto irecv = host ? &PMPI_Irecv : &MPI_Irecv;
  const auto waitall = host ? &PMPI_Waitall : &MPI_Waitall;
  MPI_Request requests[kWindow];
  for (int w = 0; w < windows; ++w) {
    for (int i = 0; i < kWindow; ++i)
      if (rank == 0)
        isend(x.at(x.send), x.count, x.type, 1, path.tag, MPI_COMM_WORLD, &requests[i]);
      else
        irecv(slots + i * x.span_bytes + x.base, x.count, x.type, 0, path.tag, MPI_COMM_WORLD,
              &requests[i]);
    waitall(kWindow, requests, MPI_STATUSES_IGNORE);
    if (rank == 0)
      path.recv(nullptr, 0, MPI_BYTE, 1, path.tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    else
      path.send(nullptr, 0, MPI_BYTE, 0, path.tag, MPI_COMM_WORLD);
  }
}

// One window with fresh patterns; rank 1 checks every slot against the host's unpacking of
// rank 0's pattern. "" on success, else (on rank 0) what was wrong.
std::string verify_window(bool host, const Path& path, int rank, Exchange& x, unsigned char* slots,
                          uint64_t seed) {
  fill_pattern(x.send.get(), x.span_bytes, seed);
  if (rank == 1)
    for (int i = 0; i < kWindow; ++i)
      fill_pattern(slots + i * x.span_bytes, x.span_bytes, seed + 1);
  run_windows(host, path, rank, x, slots, 1);
  std::string message;
  if (rank == 1) {
    fill_pattern(x.scratch.get(), x.span_bytes, seed);
    int pos = 0;
    PMPI_Pack(x.at(x.scratch), x.count, x.type, x.packed.get(), static_cast<int>(x.packed_bytes),
              &pos, MPI_COMM_WORLD);
    fill_pattern(x.scratch.get(), x.span_bytes, seed + 1);
    pos = 0;
    PMPI_Unpack(x.packed.get(), static_cast<int>(x.packed_bytes), &pos, x.at(x.scratch), x.count,
                x.type, MPI_COMM_WORLD);
    for (int i = 0; i < kWindow && message.empty(); ++i)
      if (std::memcmp(slots + i * x.span_bytes, x.scratch.get(),
                      static_cast<size_t>(x.span_bytes)) != 0)
        message =
            format("rank 1, %s path: window message %d of %d arrived wrong", path.name, i, kWindow);
  }
  return p2p::gather_rank_messages(message, rank, 2);
}

// The counters of Loom's online trials on this process: a change over a round means the round
// held trial messages (a kind began its trial, reached a verdict or confirmed one).
uint64_t trial_events() {
  uint64_t sum = 0;
  for (const char* name :
       {"p2p.online_trials.started", "p2p.online_trials.kept", "p2p.online_trials.switched",
        "p2p.online_trials.confirmed", "p2p.online_trials.rechecked"}) {
    uint64_t value = 0;
    if (loom_get_counter(name, &value)) sum += value;
  }
  return sum;
}

// One round of `path`: `messages` round trips, in types of `life` round trips (the whole round
// in `steady`, whose builds stay outside the time). Returns seconds per one-way message; the
// last type is verified before it is freed.
double run_round(const Path& path, bool host, const CorpusEntry& entry, int64_t size,
                 Variant variant, const Options& opt, int rank, Exchange& x, unsigned char* slots,
                 uint64_t seed, std::string* errors) {
  const int life = variant == Variant::Steady ? opt.messages : std::min(opt.life, opt.messages);
  const MPI_Datatype shared = x.type;
  auto build = [&] {
    use_host_type_calls(host);
    CorpusType t = entry.build(size);
    use_host_type_calls(false);
    return t;
  };
  auto release = [&](CorpusType& t) {
    use_host_type_calls(host);
    free_corpus_type(t);
    use_host_type_calls(false);
  };
  CorpusType t;
  if (variant != Variant::Recreate) t = build();
  if (variant == Variant::Window) {
    // 640 messages at the default --messages: enough for a kind's wait and its trial.
    const int windows = std::max(1, opt.messages / 10);
    x.type = t.type;
    PMPI_Barrier(MPI_COMM_WORLD);
    const double t0 = now_seconds();
    run_windows(host, path, rank, x, slots, windows);
    const double seconds = (now_seconds() - t0) / (windows * kWindow);
    const std::string e = verify_window(host, path, rank, x, slots, seed);
    if (!e.empty()) append_error(errors, e + " (after round, window)");
    release(t);
    x.type = shared;
    return seconds;
  }
  PMPI_Barrier(MPI_COMM_WORLD);
  const double t0 = now_seconds();
  for (int done = 0; done < opt.messages; done += life) {
    if (variant == Variant::Recreate) {
      if (done) release(t);
      t = build();
    }
    x.type = t.type;
    p2p::ping_pong(path, rank, x, std::min(life, opt.messages - done));
  }
  const double seconds = (now_seconds() - t0) / (2.0 * opt.messages);
  const std::string e = p2p::verify(path, rank, x, seed);
  if (!e.empty()) append_error(errors, e + format(" (after round, %s)", variant_name(variant)));
  release(t);
  x.type = shared;
  return seconds;
}

CaseResult run_case(const CorpusEntry& entry, int64_t size, Variant variant, const Options& opt,
                    int rank) {
  CaseResult r;
  r.type_name = entry.name;
  r.variant = variant;
  CorpusType probe = entry.build(size);  // Loom's: for the buffers, the checks and the floor
  r.packed_bytes = probe.packed_bytes;
  r.shape = probe.shape;
  Exchange x = p2p::make_exchange(probe.type, probe.count, probe.packed_bytes, probe.span_bytes,
                                  probe.base_offset, kTool);
  const Path* paths[2] = {&p2p::host_path(), &p2p::loom_path()};
  const Buffer slots =
      allocate(variant == Variant::Window && rank == 1 ? kWindow * probe.span_bytes : 1, kTool);
  std::string errors;
  for (int k = 0; k < 2; ++k) {
    const std::string e = p2p::verify(*paths[k], rank, x, 1 + static_cast<uint64_t>(k));
    if (!e.empty()) append_error(&errors, e);
  }
  loom_stats before, after;
  loom_get_stats(&before);
  const auto routes_before = p2p::RouteCounters::now();
  std::vector<double> samples[2];
  int last_trial_round = 0;  // Loom's last round with trial events, on either rank
  for (int round = 0; round < opt.max_reps; ++round)
    for (int j = 0; j < 2; ++j) {
      const int k = (round + j) % 2;  // alternate which path goes first
      const uint64_t events = trial_events();
      samples[k].push_back(run_round(*paths[k], k == 0, entry, size, variant, opt, rank, x,
                                     slots.get(), 10 + static_cast<uint64_t>(2 * round + k),
                                     &errors));
      if (k == 1 && trial_events() != events) last_trial_round = round;
    }
  PMPI_Allreduce(MPI_IN_PLACE, &last_trial_round, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  loom_get_stats(&after);
  const auto routes = p2p::RouteCounters::now().since(routes_before);
  r.route = p2p::route_of(routes.p2p_loom, routes.p2p_host);
  r.trials_settled =
      (after.trials_kept - before.trials_kept) + (after.trials_switched - before.trials_switched);
  r.summarize_samples(samples);
  double* life[2] = {&r.host_life, &r.loom_life};
  r.loom_rounds_in_full = last_trial_round + 1;
  for (int k = 0; k < 2; ++k) {
    const auto& v = samples[k];
    r.rounds[k] = v;
    r.cold[k] = v[0];
    const size_t in_full = static_cast<size_t>(r.loom_rounds_in_full);
    double sum = 0;
    for (size_t i = 0; i < in_full; ++i) sum += v[i];
    if (in_full < v.size())
      sum += summarize({v.begin() + static_cast<std::ptrdiff_t>(in_full), v.end()}).median *
             static_cast<double>(v.size() - in_full);
    *life[k] = sum / static_cast<double>(v.size());
  }
  r.floor = p2p::measure_floor(x, opt.quick);
  r.verify_error = errors;
  free_corpus_type(probe);
  return r;
}

struct Run {
  std::vector<CaseResult> results;
  int failures = 0;
};

bool selected(const Options& opt, const std::string& name) {
  if (opt.type_filters.empty()) return true;
  return std::any_of(opt.type_filters.begin(), opt.type_filters.end(),
                     [&](const std::string& f) { return name.find(f) != std::string::npos; });
}

Run run_cases(const Options& opt, int rank) {
  Run run;
  for (Variant variant : opt.variants)
    for (const AppType& app :
         variant == Variant::Window ? std::vector<AppType>{kWindowType} : app_types()) {
      const CorpusEntry* entry = find_corpus_entry(app.corpus_name);
      if (!entry || (variant != Variant::Window && !selected(opt, entry->name))) continue;
      for (int64_t size : app.sizes) {
        if (opt.max_size > 0 && size > opt.max_size) continue;
        const double start = now_seconds();
        run.results.push_back(run_case(*entry, size, variant, opt, rank));
        if (rank == 0) {
          std::fprintf(stderr, "%-9s %-16s %-8s %5.2f s\n", variant_name(variant), entry->name,
                       human_bytes(size).c_str(), now_seconds() - start);
          if (!run.results.back().verified())
            std::fprintf(stderr, "data mismatch in %s %s: %s\n", entry->name,
                         human_bytes(size).c_str(), run.results.back().verify_error.c_str());
        }
        if (opt.quick) break;
      }
    }
  for (const auto& r : run.results) run.failures += r.verified() ? 0 : 1;
  return run;
}

// ---------------------------------------------------------------------------------------------
// Report.

std::string usec(double seconds) {
  return seconds * 1e6 < 100 ? format("%.2f", seconds * 1e6) : format("%.0f", seconds * 1e6);
}

std::string label(const CaseResult& r) {
  return r.type_name + " " + human_bytes(r.packed_bytes);
}

void print_table(const MpiRun& mpi, const Options& opt, const Run& run) {
  std::printf(
      "\nhost MPI: %s   (one-way time per message over a round of %d round trips; %d\n"
      "alternated rounds per path: the first pays the type's first use, and Loom's trials may\n"
      "run on into later rounds (the plan Loom caches by signature keeps a kind's age, as an\n"
      "application's would), so time = (the rounds up to Loom's last round with a trial event\n"
      "in full, on both paths, + the other rounds at their median) / rounds, [min-max] over\n"
      "rounds; recreate: a type is built, committed and freed every %d round trips, inside\n"
      "the time; window: %d MPI_Isend then MPI_Waitall (MPI_Irecv on the peer) per window, %d\n"
      "windows a round, time per message; host/loom > 1: Loom is faster; 1st round: host/loom of "
      "the first rounds alone;\n"
      "route: which engine served Loom's sends and receives; trials: verdicts of Loom's trials\n"
      "over the case, r: rounds in full; floor = (fastest pack + fastest unpack) / 2,\n"
      "bound = host / floor: the best host/loom ratio any transport can reach)\n",
      mpi.host_mpi.c_str(), opt.messages, opt.max_reps, opt.life, kWindow,
      std::max(1, opt.messages / 10));
  for (Variant variant : opt.variants) {
    Table table({"variant", "type", "size", "route", "trials", "host us [min-max]",
                 "loom us [min-max]", "host/loom", "1st round", "floor us", "bound", "data"});
    for (const auto& r : run.results) {
      if (r.variant != variant) continue;
      table.add_row(
          {variant_name(variant), r.type_name, human_bytes(r.packed_bytes), r.route,
           format("%llu r%d", (unsigned long long)r.trials_settled, r.loom_rounds_in_full),
           usec(r.host_life) + " [" + usec(r.host.min) + "-" + usec(r.host.max) + "]",
           usec(r.loom_life) + " [" + usec(r.loom.min) + "-" + usec(r.loom.max) + "]",
           format("%.2fx", r.life_ratio()), format("%.2fx", r.cold_ratio()),
           usec(r.floor.seconds()), format("%.2fx", r.ratio_bound()),
           r.verified() ? "ok" : "MISMATCH"});
    }
    std::printf("\n");
    table.print(stdout);
  }
}

// Per variant: host/loom over the case's life, within noise where the paths' p10-p90 ranges over
// rounds overlap, and the bound.
std::vector<ComparisonSummary> summarize_variants(const Options& opt, const Run& run) {
  std::vector<ComparisonSummary> summaries;
  for (Variant variant : opt.variants) {
    std::vector<Comparison> cases;
    for (const auto& r : run.results)
      if (r.variant == variant)
        cases.push_back({label(r), r.life_ratio(), within_noise(r.host, r.loom), r.ratio_bound()});
    summaries.emplace_back(cases);
  }
  return summaries;
}

void print_summary(const MpiRun& mpi, const Options& opt, const Run& run,
                   const std::vector<ComparisonSummary>& summaries) {
  std::printf(
      "\nSummary (host %s, Loom %s; ratios are host time / Loom time over the case's life,\n"
      "> 1: Loom is faster; within noise: the two paths' p10-p90 ranges over rounds overlap)\n",
      mpi.host_mpi.c_str(), mpi.loom_state());
  for (size_t v = 0; v < opt.variants.size(); ++v) {
    if (summaries[v].ratio.empty()) continue;
    std::printf("  %s:\n", variant_name(opt.variants[v]));
    print_comparison(summaries[v], {}, "    ");
  }
  std::vector<std::string> mismatched;
  for (const auto& r : run.results)
    if (!r.verified())
      mismatched.push_back(format("%s %s", variant_name(r.variant), label(r).c_str()));
  print_verification("both paths, every round", mismatched, run.results.size());
  std::fflush(stdout);
}

void write_json(const Options& opt, const Run& run,
                const std::vector<ComparisonSummary>& summaries) {
  JsonWriter j = begin_json_report({.subcommand = "app", .ranks = 2}, opt);
  opt.write_json(j);
  j.field("messages", opt.messages);
  j.field("life", opt.life);
  j.field("max_size", opt.max_size);
  j.end_object();
  j.begin_array("cases");
  for (const auto& r : run.results) {
    j.begin_object();
    j.field("variant", variant_name(r.variant));
    j.field("type", r.type_name);
    j.field("geometry", r.shape);
    j.field("packed_bytes", r.packed_bytes);
    j.field("route", r.route);
    j.field("trials_settled", static_cast<int64_t>(r.trials_settled));
    j.field("host_seconds", r.host);  // one-way time per message
    j.field("loom_seconds", r.loom);
    j.field("host_life_seconds", r.host_life);  // rounds in full + later rounds' median
    j.field("loom_life_seconds", r.loom_life);
    j.array("host_rounds_seconds", r.rounds[0]);  // in the order run
    j.array("loom_rounds_seconds", r.rounds[1]);
    j.field("ratio", r.life_ratio());
    j.field("ratio_first_round", r.cold_ratio());
    j.field("loom_rounds_in_full", r.loom_rounds_in_full);
    j.field("ratio_paired", r.paired_ratio);
    j.field("within_noise", within_noise(r.host, r.loom));  // p10-p90 over rounds overlap
    j.field("floor_seconds", r.floor.seconds());
    j.field("ratio_bound", r.ratio_bound());
    write_verification(j, r.verify_error);
    j.end_object();
  }
  j.end_array();
  j.begin_object("summary");
  for (size_t v = 0; v < opt.variants.size(); ++v)
    write_comparison(j, variant_name(opt.variants[v]), summaries[v]);
  j.field("verify_failures", run.failures);
  j.end_object();
  finish_json_report(j, opt.json_path, kTool);
}

int measure_apps(const Options& opt, const MpiRun& mpi) {
  if (mpi.ranks != 2)
    return mpi.refuse(2, format("%s: needs exactly 2 ranks, got %d; run it as\n"
                                "  mpiexec -n 2 loom-bench app [options]\n",
                                kTool, mpi.ranks));
  if (mpi.rank == 0) {
    std::printf("loom-bench app   host MPI: %s   2 ranks   Loom: %s\n", mpi.host_mpi.c_str(),
                mpi.loom_state());
    std::printf("%d round trips per round, %d rounds per path, recreate every %d\n", opt.messages,
                opt.max_reps, opt.life);
    note_if_loom_inactive(mpi,
                          "MPI_Send is\n"
                          "      the host's own, so every ratio below measures noise.\n");
    std::fflush(stdout);
  }
  const Run run = run_cases(opt, mpi.rank);
  if (mpi.rank == 0) {
    print_table(mpi, opt, run);
    const std::vector<ComparisonSummary> summaries = summarize_variants(opt, run);
    print_summary(mpi, opt, run, summaries);
    if (!opt.json_path.empty()) write_json(opt, run, summaries);
  }
  return run.failures ? 1 : 0;
}

}  // namespace

int run_app(int argc, char** argv) {
  return run_mpi_subcommand(argc, argv, false, parse_options, measure_apps);
}

}  // namespace loom::bench
