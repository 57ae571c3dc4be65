// loom-bench match: every matching backend measured side by side in one run.
//   1. queue-depth sweep 0..4096, match at head/middle/tail, random tags and sources or one
//      tag from many sources, 0% or 10% wildcard receives: time per matched pair
//      (one arrival searching the posted queue + one re-post), median and p99;
//   2. growth per doubling of depth; 3. memory per queued entry;
//   4. application-like mixes (halo, sweep, AMR queue-length profiles, seed §5.2);
//   5. two-thread post/arrive match rate: tail queues vs the single-lock baseline;
//   6. hot caching on/off with the cache flushed between operations;
// then a summary of what this run's numbers say about choosing a backend.
// No MPI calls here.
#include <x86intrin.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "bench/report.hpp"
#include "bench/subcommands.hpp"
#include "loom/match.h"

namespace loom::bench {
namespace {

constexpr const char* kTool = "loom-bench match";

struct Options {
  bool quick = false;
  std::string json;
  std::vector<loom_match_backend> backends;
  bool has(loom_match_backend b) const {
    return std::find(backends.begin(), backends.end(), b) != backends.end();
  }
};

void usage(FILE* out) {
  std::fprintf(
      out,
      "usage: loom-bench match [--quick] [--json FILE] [--backend NAME[,NAME...]]\n\n"
      "Measures message-matching backends in one run: depth sweep (0..4096; match at\n"
      "head/middle/tail; random tags or one tag from many sources; 0%%/10%% wildcard\n"
      "receives), growth per doubling, memory per entry, halo/sweep/AMR mixes, two-thread\n"
      "match rate (tail queues vs one lock), hot caching; then a summary of the run.\n\n"
      "  --quick          few depths and samples (a few seconds, for CI smoke tests;\n"
      "                   default off: the full sweep)\n"
      "  --json FILE      also write all results as JSON (plot: tools/plot_bench.py;\n"
      "                   default none)\n"
      "  --backend LIST   comma-separated subset of: list perpeer lla simd fuzzy8 fuzzy16\n"
      "                   fuzzy32 hash adaptive (default all; env LOOM_MATCH_BACKEND)\n"
      "  --help           this text\n"
      "Env: LOOM_MATCH_ISA=scalar|avx2|avx512 forces the simd/fuzzy kernels.\n");
}

bool parse_backends(const char* list, std::vector<loom_match_backend>* out) {
  std::string s(list);
  size_t pos = 0;
  while (pos <= s.size()) {
    const size_t comma = std::min(s.find(',', pos), s.size());
    const std::string name = s.substr(pos, comma - pos);
    const loom_match_backend b = loom_match_backend_from_name(name.c_str());
    if (b == LOOM_MATCH_BACKEND_DEFAULT) {
      std::fprintf(stderr, "loom-bench match: unknown backend '%s'\n", name.c_str());
      return false;
    }
    out->push_back(b);
    pos = comma + 1;
  }
  return true;
}

// Returns -1 to continue, or an exit code.
int parse_options(int argc, char** argv, Options* opt) {
  const char* env_backends = std::getenv("LOOM_MATCH_BACKEND");
  const int parsed = parse_subcommand_options(
      argc, argv, kTool, nullptr, usage, {"--json", "--backend"},
      [&](const std::string& a, const char* v) {
        if (a == "--quick") opt->quick = true;
        if (a == "--json") opt->json = v;
        if (a == "--backend" && !parse_backends(v, &opt->backends)) return OptionParse::Bad;
        return a == "--quick" || a == "--json" || a == "--backend" ? OptionParse::Taken
                                                                   : OptionParse::NotMine;
      });
  if (parsed >= 0) return parsed;
  if (opt->backends.empty() && env_backends && *env_backends &&
      !parse_backends(env_backends, &opt->backends))
    return 2;
  if (opt->backends.empty())
    for (int b = LOOM_MATCH_BACKEND_LIST; b < LOOM_MATCH_BACKEND_COUNT; ++b)
      opt->backends.push_back(static_cast<loom_match_backend>(b));
  return -1;
}

// ------------------------------------------------------------------ timing
// Per-operation times need a cheaper clock than now_seconds(): the TSC, fenced, calibrated
// against now_seconds(), with the empty-interval cost measured and subtracted.
struct Tsc {
  double ns_per_tick = 1;
  double overhead_ticks = 0;

  static uint64_t read() {
    _mm_lfence();
    const uint64_t t = __rdtsc();
    _mm_lfence();
    return t;
  }
  void calibrate() {
    const double t0 = now_seconds();
    const uint64_t c0 = read();
    while (now_seconds() - t0 < 0.05) {
    }
    const double t1 = now_seconds();
    const uint64_t c1 = read();
    ns_per_tick = (t1 - t0) * 1e9 / static_cast<double>(c1 - c0);
    std::vector<double> empty(2000);
    for (double& e : empty) {
      const uint64_t a = read();
      e = static_cast<double>(read() - a);
    }
    overhead_ticks = summarize(empty).median;
  }
  double ns(uint64_t ticks) const {
    return std::max(0.0, (static_cast<double>(ticks) - overhead_ticks) * ns_per_tick);
  }
};

loom_match_engine* make_engine(loom_match_backend b,
                               loom_match_threading t = LOOM_MATCH_THREAD_NONE, int hot = 0) {
  loom_match_config cfg;
  loom_match_config_init(&cfg);
  cfg.backend = b;
  cfg.threading = t;
  cfg.hot_cache = hot;
  loom_match_engine* e = loom_match_create(&cfg);
  if (!e) {
    std::fprintf(stderr, "loom-bench match: cannot create engine\n");
    std::exit(1);
  }
  return e;
}

void* as_user(uint64_t v) {
  return reinterpret_cast<void*>(static_cast<uintptr_t>(v));
}

[[noreturn]] void broken(const char* what) {
  std::fprintf(stderr, "loom-bench match: wrong match (%s) - benchmark or engine bug\n", what);
  std::abort();
}

// ------------------------------------------------------------------ depth sweep
enum class Traffic { kRandom, kOneTag };
enum class Position { kHead, kMiddle, kTail };
const char* traffic_name(Traffic t) {
  return t == Traffic::kRandom ? "random" : "one-tag";
}
const char* position_name(Position p) {
  return p == Position::kHead ? "head" : p == Position::kMiddle ? "middle" : "tail";
}

// A posted receive and the message that matches it and no other queued receive: random
// traffic gives every receive a unique tag (wildcards are ANY_SOURCE), one-tag traffic gives
// every receive a unique source (wildcards are ANY_TAG).
struct Pattern {
  int32_t recv_src, recv_tag, msg_src, msg_tag;
  uint64_t id;
};

class PatternSource {
 public:
  PatternSource(Traffic t, int wildcard_pct, uint64_t seed)
      : traffic_(t), wild_pct_(wildcard_pct), rng_(seed) {}
  Pattern next() {
    const uint64_t k = ++count_;
    const bool wild = static_cast<int>(rng_() % 100) < wild_pct_;
    Pattern p{};
    p.id = k;
    if (traffic_ == Traffic::kRandom) {
      // Unique tag: k scrambled by an odd multiplier (a bijection on 30 bits).
      p.msg_tag = static_cast<int32_t>((k * 0x9E3779B1u) & 0x3fffffff);
      p.msg_src = static_cast<int32_t>(rng_() % 64);
      p.recv_tag = p.msg_tag;
      p.recv_src = wild ? LOOM_MATCH_ANY_SOURCE : p.msg_src;
    } else {
      p.msg_tag = 7;
      p.msg_src = static_cast<int32_t>(k % (1u << 20));
      p.recv_src = p.msg_src;
      p.recv_tag = wild ? LOOM_MATCH_ANY_TAG : 7;
    }
    return p;
  }

 private:
  Traffic traffic_;
  int wild_pct_;
  std::mt19937_64 rng_;
  uint64_t count_ = 0;
};

struct SweepPoint {
  loom_match_backend backend;
  Traffic traffic;
  int wildcard_pct;
  Position position;
  int depth;
  Summary ns;  // per pair; median/p99 over samples, each the mean of `batch` pairs
  int batch;
};

// Time per matched pair at a fixed queue depth: the arrival matches the receive at the
// requested position, then a new receive is posted (to the tail), keeping depth constant.
// Depth 0: the arrival finds nothing and is queued, the post then takes it.
// The TSC here ticks in ~10 ns steps, so each sample times a batch of `batch` pairs (enough
// for ~1 us) and reports the batch mean; deep, slow cases use batch 1 (true per-op p99).
struct DepthResult {
  Summary ns;
  int batch;
};

DepthResult measure_depth(loom_match_backend b, Traffic t, int wild, Position pos, int depth,
                          int samples, const Tsc& tsc) {
  loom_match_engine* e = make_engine(b);
  PatternSource gen(t, wild, 0x5eed + static_cast<uint64_t>(depth));
  std::vector<Pattern> order;  // mirror of the posted queue, oldest first
  loom_match_envelope m;
  for (int i = 0; i < depth; ++i) {
    order.push_back(gen.next());
    loom_match_post(e, order.back().recv_src, order.back().recv_tag, 0, as_user(order.back().id),
                    &m);
  }
  constexpr int kMaxBatch = 64;
  Pattern targets[kMaxBatch], fresh[kMaxBatch];
  int arrive_rc[kMaxBatch], post_rc[kMaxBatch];
  uintptr_t got[kMaxBatch];
  // Runs one batch of n pairs; returns ticks. The mirror is advanced before timing.
  auto run_batch = [&](int n) {
    for (int k = 0; k < n; ++k) {
      fresh[k] = gen.next();
      if (depth == 0) {
        targets[k] = fresh[k];
        continue;
      }
      const size_t idx = pos == Position::kHead     ? 0
                         : pos == Position::kMiddle ? order.size() / 2
                                                    : order.size() - 1;
      targets[k] = order[idx];
      order.erase(order.begin() + static_cast<long>(idx));
      order.push_back(fresh[k]);
    }
    const uint64_t t0 = Tsc::read();
    for (int k = 0; k < n; ++k) {
      arrive_rc[k] = loom_match_arrive(e, targets[k].msg_src, targets[k].msg_tag, 0, nullptr, &m);
      got[k] = reinterpret_cast<uintptr_t>(m.user);
      post_rc[k] =
          loom_match_post(e, fresh[k].recv_src, fresh[k].recv_tag, 0, as_user(fresh[k].id), &m);
    }
    const uint64_t ticks = Tsc::read() - t0;
    for (int k = 0; k < n; ++k) {
      const bool ok = depth == 0
                          ? arrive_rc[k] == LOOM_MATCH_QUEUED && post_rc[k] == LOOM_MATCH_MATCHED
                          : arrive_rc[k] == LOOM_MATCH_MATCHED && got[k] == targets[k].id &&
                                post_rc[k] == LOOM_MATCH_QUEUED;
      if (!ok) broken("depth sweep");
    }
    return ticks;
  };
  // Pilot: pick the batch size from the cost of a few pairs (also warms up).
  double pilot = 0;
  for (int i = 0; i < 8; ++i) pilot = tsc.ns(run_batch(16)) / 16;
  const int batch = std::clamp(static_cast<int>(1000 / std::max(pilot, 1.0)), 1, kMaxBatch);
  std::vector<double> ns;
  ns.reserve(static_cast<size_t>(samples));
  for (int s = 0; s < samples; ++s) ns.push_back(tsc.ns(run_batch(batch)) / batch);
  loom_match_destroy(e);
  return DepthResult{summarize(ns), batch};
}

// ------------------------------------------------------------------ memory per entry
struct MemoryPoint {
  loom_match_backend backend;
  double posted_per_entry, unexpected_per_entry;
};

MemoryPoint measure_memory(loom_match_backend b, int depth) {
  MemoryPoint mp{b, 0, 0};
  loom_match_stats st;
  for (int side = 0; side < 2; ++side) {
    loom_match_engine* e = make_engine(b);
    loom_match_get_stats(e, &st);
    const double empty = static_cast<double>(st.memory_bytes);
    PatternSource gen(Traffic::kRandom, 0, 11);
    loom_match_envelope m;
    for (int i = 0; i < depth; ++i) {
      const Pattern p = gen.next();
      if (side == 0)
        loom_match_post(e, p.recv_src, p.recv_tag, 0, as_user(p.id), &m);
      else
        loom_match_arrive(e, p.msg_src, p.msg_tag, 0, as_user(p.id), &m);
    }
    loom_match_get_stats(e, &st);
    (side == 0 ? mp.posted_per_entry : mp.unexpected_per_entry) =
        (static_cast<double>(st.memory_bytes) - empty) / depth;
    loom_match_destroy(e);
  }
  return mp;
}

// ------------------------------------------------------------------ application mixes
// Queue-length profiles from the seed's SST traces (§5.2): halo3d never exceeds 27 entries,
// sweep3d stays in the low hundreds, AMR sits in the mid hundreds with tails to ~450.
struct Mix {
  const char* name;
  int wildcard_pct;   // ANY_SOURCE receives (each with its own tag)
  int early_pct;      // messages that arrive before their receive (unexpected)
  int sources, tags;  // sender set and tag range
};
const Mix kMixes[] = {
    {"halo", 0, 20, 26, 27},
    {"sweep", 0, 20, 3, 512},
    {"amr", 5, 30, 128, 4096},
};

int mix_length(const Mix& mix, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(0, 1);
  if (!std::strcmp(mix.name, "halo")) return 1 + static_cast<int>(rng() % 27);
  if (!std::strcmp(mix.name, "sweep")) return 32 + static_cast<int>(rng() % 224);
  // AMR: most phases around the mid hundreds, a tail out to ~450.
  if (u(rng) < 0.8) {
    const double l = std::normal_distribution<double>(150, 60)(rng);
    return std::clamp(static_cast<int>(l), 1, 300);
  }
  return 300 + static_cast<int>(rng() % 151);
}

struct MixPoint {
  const char* mix;
  loom_match_backend backend;
  Summary ns;  // per operation (posts + arrivals)
};

Summary measure_mix(loom_match_backend b, const Mix& mix, int phases, const Tsc& tsc) {
  loom_match_engine* e = make_engine(b);
  std::mt19937_64 rng(0xa1ce);
  std::vector<double> ns;
  struct Msg {
    int32_t src, tag, recv_src;
    bool early;
  };
  std::vector<Msg> msgs;
  std::vector<size_t> late;
  loom_match_envelope m;
  loom_match_stats st;
  for (int ph = 0; ph < phases + 4; ++ph) {
    const int len = mix_length(mix, rng);
    msgs.clear();
    late.clear();
    for (int i = 0; i < len; ++i) {
      const bool wild = static_cast<int>(rng() % 100) < mix.wildcard_pct;
      Msg g{static_cast<int32_t>(rng() % static_cast<uint64_t>(mix.sources)),
            static_cast<int32_t>(rng() % static_cast<uint64_t>(mix.tags)), 0,
            static_cast<int>(rng() % 100) < mix.early_pct};
      if (wild) g.tag = mix.tags + i;  // a tag no exact receive uses: no stolen messages
      g.recv_src = wild ? LOOM_MATCH_ANY_SOURCE : g.src;
      msgs.push_back(g);
      if (!g.early) late.push_back(static_cast<size_t>(i));
    }
    std::shuffle(late.begin(), late.end(), rng);
    const uint64_t t0 = Tsc::read();
    for (const Msg& g : msgs)
      if (g.early) loom_match_arrive(e, g.src, g.tag, 0, nullptr, &m);
    for (const Msg& g : msgs) loom_match_post(e, g.recv_src, g.tag, 0, nullptr, &m);
    for (size_t i : late) loom_match_arrive(e, msgs[i].src, msgs[i].tag, 0, nullptr, &m);
    const uint64_t ticks = Tsc::read() - t0;
    loom_match_get_stats(e, &st);
    if (st.posted_length || st.unexpected_length) broken("mix phase left entries");
    if (ph >= 4) ns.push_back(tsc.ns(ticks) / (2.0 * len));
  }
  loom_match_destroy(e);
  return summarize(ns);
}

// ------------------------------------------------------------------ two threads
struct ThreadPoint {
  loom_match_backend backend;
  int prefill;
  const char* mode;  // "serial" (one thread), "global-lock", "tail-queues"
  double matches_per_s;
};

// The seed's tail-queue driver (§6.4.1): both queues prefilled with `prefill` entries that
// never match, then one thread posts receives while the other delivers the matching
// messages. A window keeps either thread from running more than 64 operations ahead.
double match_rate(loom_match_backend b, loom_match_threading mode, bool two_threads, int prefill,
                  int pairs) {
  loom_match_engine* e = make_engine(b, mode);
  loom_match_envelope m;
  for (int i = 0; i < prefill; ++i) {
    loom_match_post(e, 1, -1000 - i, 0, nullptr, &m);      // internal tags nobody sends
    loom_match_arrive(e, 2, 1000000 + i, 0, nullptr, &m);  // tags nobody receives
  }
  std::atomic<int> posted{0}, arrived{0};
  std::atomic<int> ready{0};
  constexpr int kWindow = 64;
  // One side's thread: `op` (post or arrive) `pairs` times, never more than kWindow ahead of
  // the other side's count.
  auto side = [&](auto op, std::atomic<int>& done, const std::atomic<int>& other) {
    ready.fetch_add(1);
    while (ready.load() < 2) {
    }
    loom_match_envelope env;
    for (int i = 0; i < pairs; ++i) {
      while (i - other.load(std::memory_order_acquire) > kWindow) std::this_thread::yield();
      op(e, 0, i & 0xffff, 0, nullptr, &env);
      done.store(i + 1, std::memory_order_release);
    }
  };
  // Lambdas, not function pointers: each side calls its function directly.
  auto poster = [&] { side([](auto... a) { return loom_match_post(a...); }, posted, arrived); };
  auto arriver = [&] { side([](auto... a) { return loom_match_arrive(a...); }, arrived, posted); };
  const double t0 = now_seconds();
  if (two_threads) {
    std::thread a(poster), c(arriver);
    a.join();
    c.join();
  } else {
    for (int i = 0; i < pairs; ++i) {
      loom_match_post(e, 0, i & 0xffff, 0, nullptr, &m);
      loom_match_arrive(e, 0, i & 0xffff, 0, nullptr, &m);
    }
  }
  const double dt = now_seconds() - t0;
  loom_match_stats st;
  loom_match_get_stats(e, &st);
  if (st.posted_length != static_cast<uint64_t>(prefill) ||
      st.unexpected_length != static_cast<uint64_t>(prefill))
    broken("thread test lost or duplicated a match");
  loom_match_destroy(e);
  return pairs / dt;
}

// ------------------------------------------------------------------ hot caching
struct HotPoint {
  loom_match_backend backend;
  bool heater;
  Summary ns;
};

// Match at the tail of a 1024-deep queue after streaming a buffer larger than the L2
// (emulating an application compute phase), with the heater thread off or on.
Summary measure_hot(loom_match_backend b, bool heater, int samples, const Tsc& tsc) {
  // Same locking in both cases (the heater requires it), so only the heater differs.
  loom_match_engine* e = make_engine(b, LOOM_MATCH_THREAD_GLOBAL_LOCK, heater ? 1 : 0);
  PatternSource gen(Traffic::kRandom, 0, 3);
  std::vector<Pattern> order;
  loom_match_envelope m;
  for (int i = 0; i < 1024; ++i) {
    order.push_back(gen.next());
    loom_match_post(e, order.back().recv_src, order.back().recv_tag, 0, as_user(order.back().id),
                    &m);
  }
  std::vector<uint64_t> scratch(4 << 20 >> 3, 1);  // 4 MiB
  std::vector<double> ns;
  uint64_t sink = 0;
  for (int s = 0; s < samples; ++s) {
    for (size_t i = 0; i < scratch.size(); i += 8) sink += scratch[i]++;
    std::this_thread::sleep_for(std::chrono::microseconds(50));  // give the heater a pass
    const Pattern target = order.back();
    const Pattern fresh = gen.next();
    const uint64_t t0 = Tsc::read();
    const int a = loom_match_arrive(e, target.msg_src, target.msg_tag, 0, nullptr, &m);
    const uintptr_t got = reinterpret_cast<uintptr_t>(m.user);
    loom_match_post(e, fresh.recv_src, fresh.recv_tag, 0, as_user(fresh.id), &m);
    ns.push_back(tsc.ns(Tsc::read() - t0));
    if (a != LOOM_MATCH_MATCHED || got != target.id) broken("hot cache");
    order.back() = fresh;
  }
  do_not_optimize(&sink);
  loom_match_destroy(e);
  return summarize(ns);
}

// ------------------------------------------------------------------ driver
std::string ns_text(double v) {
  return v < 100 ? format("%.1f", v) : format("%.0f", v);
}

const SweepPoint* find_point(const std::vector<SweepPoint>& pts, loom_match_backend b, Traffic t,
                             int wild, Position p, int depth) {
  for (const SweepPoint& s : pts)
    if (s.backend == b && s.traffic == t && s.wildcard_pct == wild && s.position == p &&
        s.depth == depth)
      return &s;
  return nullptr;
}

// Geometric-mean growth of median time per doubling of depth over [from, to].
double growth(const std::vector<SweepPoint>& pts, loom_match_backend b, Traffic t, int wild,
              Position p, int from, int to) {
  const SweepPoint* lo = find_point(pts, b, t, wild, p, from);
  const SweepPoint* hi = find_point(pts, b, t, wild, p, to);
  if (!lo || !hi || lo->ns.median <= 0) return NAN;
  return std::pow(hi->ns.median / lo->ns.median, 1.0 / std::log2(static_cast<double>(to) / from));
}

// The sweep's axes.
constexpr Traffic kTraffics[] = {Traffic::kRandom, Traffic::kOneTag};
constexpr int kWilds[] = {0, 10};
constexpr Position kPositions[] = {Position::kHead, Position::kMiddle, Position::kTail};

struct Sweep {
  std::vector<int> depths;
  std::vector<SweepPoint> points;
  const SweepPoint* find(loom_match_backend b, Traffic t, int wild, Position p, int depth) const {
    return find_point(points, b, t, wild, p, depth);
  }
  double growth_of(loom_match_backend b, Traffic t, int wild, int from, int to) const {
    return growth(points, b, t, wild, Position::kTail, from, to);
  }
};

// 1. Depth sweep.
Sweep run_sweep(const Options& opt, const Tsc& tsc) {
  Sweep sweep;
  sweep.depths = opt.quick
                     ? std::vector<int>{0, 1, 2, 4, 8, 64, 1024, 4096}
                     : std::vector<int>{0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096};
  const int samples = opt.quick ? 100 : 600;
  for (loom_match_backend b : opt.backends)
    for (Traffic t : kTraffics)
      for (int w : kWilds)
        for (Position p : kPositions)
          for (int d : sweep.depths) {
            // Positions coincide at depth <= 1; in quick mode only the tail is swept.
            if (opt.quick && p != Position::kTail) continue;
            const int n =
                d >= 2048 && (b == LOOM_MATCH_BACKEND_LIST || b == LOOM_MATCH_BACKEND_PERPEER ||
                              b == LOOM_MATCH_BACKEND_LLA)
                    ? samples / 3
                    : samples;
            const DepthResult r = measure_depth(b, t, w, p, d, n, tsc);
            sweep.points.push_back({b, t, w, p, d, r.ns, r.batch});
          }
  return sweep;
}

// A table with one row per selected backend: its name, then `cells(b)`.
template <class Cells>
void print_backend_table(const Options& opt, std::vector<std::string> header, Cells cells) {
  Table table(std::move(header));
  for (loom_match_backend b : opt.backends) {
    std::vector<std::string> row{loom_match_backend_name(b)};
    for (std::string& cell : cells(b)) row.push_back(std::move(cell));
    table.add_row(row);
  }
  table.print(stdout);
  std::printf("\n");
}

void print_sweep(const Options& opt, const Sweep& sweep) {
  for (Traffic t : kTraffics)
    for (int w : kWilds) {
      std::printf(
          "Depth sweep: ns per matched pair (median), match at tail, %s traffic, %d%% "
          "wildcard receives\n",
          traffic_name(t), w);
      std::vector<std::string> header{"backend"};
      for (int d : sweep.depths) header.push_back(format("%d", d));
      header.push_back("p99@1024");
      header.push_back("growth/2x");
      print_backend_table(opt, header, [&](loom_match_backend b) {
        std::vector<std::string> cells;
        for (int d : sweep.depths)
          cells.push_back(ns_text(sweep.find(b, t, w, Position::kTail, d)->ns.median));
        cells.push_back(ns_text(sweep.find(b, t, w, Position::kTail, 1024)->ns.p99));
        cells.push_back(format("%.2f", sweep.growth_of(b, t, w, 1, 4096)));
        return cells;
      });
    }
  if (opt.quick) return;
  std::printf("Depth 1024, random traffic, 10%% wildcards: median ns per pair by match position\n");
  print_backend_table(opt, {"backend", "head", "middle", "tail"}, [&](loom_match_backend b) {
    std::vector<std::string> cells;
    for (Position p : kPositions)
      cells.push_back(ns_text(sweep.find(b, Traffic::kRandom, 10, p, 1024)->ns.median));
    return cells;
  });
}

// 2. Memory per entry.
std::vector<MemoryPoint> run_memory(const Options& opt) {
  std::vector<MemoryPoint> memory;
  for (loom_match_backend b : opt.backends) memory.push_back(measure_memory(b, 4096));
  std::printf("Memory per queued entry at depth 4096 (bytes, includes bins/tables/node slack)\n");
  Table table({"backend", "posted", "unexpected"});
  for (const MemoryPoint& mp : memory)
    table.add_row({loom_match_backend_name(mp.backend), format("%.1f", mp.posted_per_entry),
                   format("%.1f", mp.unexpected_per_entry)});
  table.print(stdout);
  std::printf("\n");
  return memory;
}

// 3. Application mixes.
std::vector<MixPoint> run_mixes(const Options& opt, const Tsc& tsc) {
  std::vector<MixPoint> mixes;
  const int phases = opt.quick ? 40 : 400;
  for (const Mix& mix : kMixes)
    for (loom_match_backend b : opt.backends)
      mixes.push_back({mix.name, b, measure_mix(b, mix, phases, tsc)});
  std::printf(
      "Application-like mixes: ns per operation (post or arrival), median / p99 over "
      "phases\n");
  std::vector<std::string> header{"backend"};
  for (const Mix& mix : kMixes) {
    header.push_back(format("%s med", mix.name));
    header.push_back(format("%s p99", mix.name));
  }
  print_backend_table(opt, header, [&](loom_match_backend b) {
    std::vector<std::string> cells;
    for (const MixPoint& mp : mixes)
      if (mp.backend == b) {
        cells.push_back(ns_text(mp.ns.median));
        cells.push_back(ns_text(mp.ns.p99));
      }
    return cells;
  });
  return mixes;
}

// 4. Two threads: per backend and prefill, the serial, global-lock and tail-queues rates in a
// row of three.
std::vector<ThreadPoint> run_threads(const Options& opt) {
  std::vector<ThreadPoint> threads;
  const std::vector<int> prefills =
      opt.quick ? std::vector<int>{128} : std::vector<int>{1, 32, 128, 512};
  const int pairs = opt.quick ? 20000 : 100000;
  const int repeats = opt.quick ? 3 : 5;
  struct Mode {
    const char* name;
    loom_match_threading t;
    bool two;
  };
  const Mode modes[] = {{"serial", LOOM_MATCH_THREAD_NONE, false},
                        {"global-lock", LOOM_MATCH_THREAD_GLOBAL_LOCK, true},
                        {"tail-queues", LOOM_MATCH_THREAD_TAIL_QUEUES, true}};
  for (loom_match_backend b : opt.backends) {
    if (b != LOOM_MATCH_BACKEND_LIST && b != LOOM_MATCH_BACKEND_ADAPTIVE &&
        b != LOOM_MATCH_BACKEND_SIMD && b != LOOM_MATCH_BACKEND_HASH)
      continue;
    for (int n : prefills)
      for (const Mode& md : modes) {
        std::vector<double> rates;
        for (int r = 0; r < repeats; ++r) rates.push_back(match_rate(b, md.t, md.two, n, pairs));
        threads.push_back({b, n, md.name, summarize(rates).median});
      }
  }
  if (threads.empty()) return threads;
  std::printf(
      "Two-thread match rate (Mmatches/s, median of %d): one posting + one arriving "
      "thread; both queues prefilled with N non-matching entries\n",
      repeats);
  Table table({"backend", "N", "serial (1 thread)", "global-lock", "tail-queues", "tq/global"});
  for (size_t i = 0; i + 2 < threads.size(); i += 3)
    table.add_row({loom_match_backend_name(threads[i].backend), format("%d", threads[i].prefill),
                   format("%.2f", threads[i].matches_per_s / 1e6),
                   format("%.2f", threads[i + 1].matches_per_s / 1e6),
                   format("%.2f", threads[i + 2].matches_per_s / 1e6),
                   format("%.2f", threads[i + 2].matches_per_s / threads[i + 1].matches_per_s)});
  table.print(stdout);
  std::printf("\n");
  return threads;
}

// 5. Hot caching.
std::vector<HotPoint> run_hot(const Options& opt, const Tsc& tsc) {
  std::vector<HotPoint> hot;
  for (loom_match_backend b : {LOOM_MATCH_BACKEND_LIST, LOOM_MATCH_BACKEND_SIMD})
    if (opt.has(b))
      for (bool on : {false, true})
        hot.push_back({b, on, measure_hot(b, on, opt.quick ? 50 : 300, tsc)});
  if (hot.empty()) return hot;
  std::printf(
      "Hot caching: depth 1024, match at tail, 4 MiB streamed between operations "
      "(ns per pair)\n");
  Table table({"backend", "heater", "median", "p99"});
  for (const HotPoint& h : hot)
    table.add_row({loom_match_backend_name(h.backend), h.heater ? "on" : "off",
                   ns_text(h.ns.median), ns_text(h.ns.p99)});
  table.print(stdout);
  std::printf("\n");
  return hot;
}

// ------------------------------------------------------------------ summary
// One line of the run's summary: a figure that tells backends apart, from this run's numbers;
// `key` names it in the JSON.
struct Finding {
  Finding(const char* json_key, const char* what, const char* value_unit)
      : key(json_key), name(what), unit(value_unit) {}
  std::string key, name, detail;
  const char* unit;
  double value = NAN;
  bool measured = false;
};

Finding best_vs_list(const Options& opt, const Sweep& sweep) {
  Finding v("best_over_list_1024",
            "fastest backend's speed-up over list at depth 1024, 10% wildcards", "x");
  const SweepPoint* list =
      sweep.find(LOOM_MATCH_BACKEND_LIST, Traffic::kRandom, 10, Position::kTail, 1024);
  if (!list) return v;
  double best = INFINITY;
  loom_match_backend best_b = LOOM_MATCH_BACKEND_LIST;
  for (loom_match_backend b : opt.backends) {
    if (b == LOOM_MATCH_BACKEND_LIST) continue;
    const SweepPoint* p = sweep.find(b, Traffic::kRandom, 10, Position::kTail, 1024);
    if (p && p->ns.median < best) {
      best = p->ns.median;
      best_b = b;
    }
  }
  if (std::isfinite(best)) {
    v.measured = true;
    v.value = list->ns.median / best;
    v.detail = format("list %s ns vs %s %s ns (random traffic, match at tail)",
                      ns_text(list->ns.median).c_str(), loom_match_backend_name(best_b),
                      ns_text(best).c_str());
  }
  return v;
}

Finding growth_per_doubling(const Options& opt, const Sweep& sweep) {
  Finding v("growth_per_doubling",
            "time growth per doubling of depth 1..4096, no wildcards, the flatter of hash and "
            "adaptive (1.00: flat)",
            "");
  for (loom_match_backend b : {LOOM_MATCH_BACKEND_HASH, LOOM_MATCH_BACKEND_ADAPTIVE}) {
    if (!opt.has(b)) continue;
    const double g = sweep.growth_of(b, Traffic::kRandom, 0, 1, 4096);
    v.detail += format("%s%s %.3f", v.detail.empty() ? "" : ", ", loom_match_backend_name(b), g);
    if (!v.measured || g < v.value) v.value = g;
    v.measured = true;
  }
  v.detail += " (geomean of t(2d)/t(d), d = 1..4096, random tags, match at tail)";
  return v;
}

Finding adaptive_vs_list_shallow(const Options& opt, const Sweep& sweep) {
  Finding v("adaptive_over_list_shallow",
            "adaptive's time over list's at depth <= 8, the worst depth (1.00: the same)", "x");
  if (!opt.has(LOOM_MATCH_BACKEND_ADAPTIVE) || !opt.has(LOOM_MATCH_BACKEND_LIST)) return v;
  double worst = 0;
  for (int d : sweep.depths) {
    if (d > 8) continue;
    std::vector<double> ratios;
    for (Traffic t : kTraffics)
      for (int w : kWilds)
        for (Position p : kPositions) {
          const SweepPoint* a = sweep.find(LOOM_MATCH_BACKEND_ADAPTIVE, t, w, p, d);
          const SweepPoint* l = sweep.find(LOOM_MATCH_BACKEND_LIST, t, w, p, d);
          if (a && l) ratios.push_back(a->ns.median / l->ns.median);
        }
    const double g = geomean(ratios);
    v.detail += format("%sd=%d %.2f", v.detail.empty() ? "" : ", ", d, g);
    if (g > worst) worst = g;
  }
  v.measured = true;
  v.value = worst;
  v.detail =
      "adaptive/list median ratio, geomean over traffic x wildcards x positions: " + v.detail;
  return v;
}

Finding tail_queues_vs_lock(const std::vector<ThreadPoint>& threads) {
  Finding v("tail_queues_over_lock",
            "two-thread match rate of tail queues over the single-lock baseline", "x");
  for (size_t i = 0; i + 2 < threads.size(); i += 3) {
    const double ratio = threads[i + 2].matches_per_s / threads[i + 1].matches_per_s;
    if (threads[i].backend == LOOM_MATCH_BACKEND_LIST && threads[i].prefill == 128) {
      v.measured = true;
      v.value = ratio;
      v.detail = format("list backend, N=128: tail-queues %.2f vs global-lock %.2f Mmatches/s",
                        threads[i + 2].matches_per_s / 1e6, threads[i + 1].matches_per_s / 1e6);
    }
  }
  return v;
}

void print_findings(const std::vector<Finding>& findings) {
  std::printf("Summary (this run):\n");
  for (const Finding& v : findings) {
    if (!v.measured)
      std::printf("  %s: not measured (backend not selected)\n", v.name.c_str());
    else
      std::printf("  %s: %.2f%s\n    %s\n", v.name.c_str(), v.value, v.unit, v.detail.c_str());
  }
}

// ------------------------------------------------------------------ JSON
struct Results {
  const char* isa;
  Sweep sweep;
  std::vector<MemoryPoint> memory;
  std::vector<MixPoint> mixes;
  std::vector<ThreadPoint> threads;
  std::vector<HotPoint> hot;
  std::vector<Finding> findings;
};

std::vector<std::string> backend_names(const std::vector<loom_match_backend>& backends) {
  std::vector<std::string> names;
  for (loom_match_backend b : backends) names.push_back(loom_match_backend_name(b));
  return names;
}

void write_growth(JsonWriter& j, const Options& opt, const Sweep& sweep) {
  j.begin_array("growth");
  for (loom_match_backend b : opt.backends)
    for (Traffic t : kTraffics)
      for (int w : kWilds) {
        j.begin_object();
        j.field("backend", loom_match_backend_name(b));
        j.field("traffic", traffic_name(t));
        j.field("wildcard_pct", w);
        j.field("per_doubling", sweep.growth_of(b, t, w, 1, 4096));
        j.field("per_doubling_1024_4096", sweep.growth_of(b, t, w, 1024, 4096));
        j.end_object();
      }
  j.end_array();
}

bool write_json(const Options& opt, const Tsc& tsc, const Results& r) {
  JsonWriter j;
  j.begin_object();
  j.field("subcommand", "match");
  j.field("quick", opt.quick ? 1 : 0);
  j.field("isa", r.isa);
  j.field("timer_overhead_ns", tsc.overhead_ticks * tsc.ns_per_tick);
  j.array("backends", backend_names(opt.backends));
  j.objects("sweep", r.sweep.points, [&](const SweepPoint& s) {
    j.field("backend", loom_match_backend_name(s.backend));
    j.field("traffic", traffic_name(s.traffic));
    j.field("wildcard_pct", s.wildcard_pct);
    j.field("position", position_name(s.position));
    j.field("depth", s.depth);
    j.field("ns", s.ns);
    j.field("batch", s.batch);
  });
  write_growth(j, opt, r.sweep);
  j.objects("memory", r.memory, [&](const MemoryPoint& mp) {
    j.field("backend", loom_match_backend_name(mp.backend));
    j.field("posted_bytes_per_entry", mp.posted_per_entry);
    j.field("unexpected_bytes_per_entry", mp.unexpected_per_entry);
  });
  j.objects("mixes", r.mixes, [&](const MixPoint& mp) {
    j.field("mix", mp.mix);
    j.field("backend", loom_match_backend_name(mp.backend));
    j.field("ns", mp.ns);
  });
  j.objects("threads", r.threads, [&](const ThreadPoint& t) {
    j.field("backend", loom_match_backend_name(t.backend));
    j.field("prefill", t.prefill);
    j.field("mode", t.mode);
    j.field("matches_per_s", t.matches_per_s);
  });
  j.objects("hot_cache", r.hot, [&](const HotPoint& h) {
    j.field("backend", loom_match_backend_name(h.backend));
    j.field("heater", h.heater ? 1 : 0);
    j.field("ns", h.ns);
  });
  j.objects("summary", r.findings, [&](const Finding& v) {
    j.field("key", v.key);
    j.field("name", v.name);
    j.field("measured", v.measured ? 1 : 0);
    j.field("value", v.value);
    j.field("detail", v.detail);
  });
  j.end_object();
  if (!j.write_file(opt.json)) {
    std::fprintf(stderr, "%s: cannot write %s\n", kTool, opt.json.c_str());
    return false;
  }
  std::printf("\nJSON written to %s\n", opt.json.c_str());
  return true;
}

}  // namespace

int run_match(int argc, char** argv) {
  Options opt;
  if (const int rc = parse_options(argc, argv, &opt); rc >= 0) return rc;

  Tsc tsc;
  tsc.calibrate();
  Results r;
  loom_match_engine* probe_engine = make_engine(LOOM_MATCH_BACKEND_SIMD);
  r.isa = loom_match_isa_name(loom_match_engine_isa(probe_engine));
  loom_match_destroy(probe_engine);
  std::printf(
      "loom-bench match: %zu backends, SIMD ISA %s, %s mode; timer overhead %.1f ns "
      "subtracted\n\n",
      opt.backends.size(), r.isa, opt.quick ? "quick" : "full",
      tsc.overhead_ticks * tsc.ns_per_tick);

  r.sweep = run_sweep(opt, tsc);
  print_sweep(opt, r.sweep);
  r.memory = run_memory(opt);
  r.mixes = run_mixes(opt, tsc);
  r.threads = run_threads(opt);
  r.hot = run_hot(opt, tsc);
  r.findings = {best_vs_list(opt, r.sweep), growth_per_doubling(opt, r.sweep),
                adaptive_vs_list_shallow(opt, r.sweep), tail_queues_vs_lock(r.threads)};
  print_findings(r.findings);
  if (!opt.json.empty() && !write_json(opt, tsc, r)) return 1;
  return 0;
}

}  // namespace loom::bench
