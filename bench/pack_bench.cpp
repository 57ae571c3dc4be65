// loom-bench pack: host MPI_Pack/MPI_Unpack vs Loom vs memcpy of the same bytes vs a plain loop
// over the type's layout (bench/plain_loop.hpp), in one run.
//
// loom-bench links libloom before libmpi, so MPI_Pack/MPI_Unpack resolve to Loom while
// PMPI_Pack/PMPI_Unpack go straight to the host MPI. Every case is verified first (Loom's packed
// bytes and unpacked buffer must equal the host's), then timed: warm-up, then interleaved
// samples of host, Loom, memcpy and the plain loop so that drift hits all alike. Ratios are
// computed from medians of the same run. Cases whose working set exceeds the last-level cache are
// measured cold: the caches are flushed before every sample.
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bench/plain_loop.hpp"
#include "bench/report.hpp"
#include "bench/subcommands.hpp"
#include "bench/type_corpus.hpp"
#include "loom/loom.h"
#include "ops/method.hpp"

namespace loom::bench {

namespace {

constexpr const char* kTool = "loom-bench pack";

struct Options : SamplingOptions {
  Options() : SamplingOptions(100, 5, 0.25) {}
  std::vector<int64_t> sizes = {1 * kKiB, 16 * kKiB, 256 * kKiB, 4 * kMiB, 32 * kMiB, 64 * kMiB};
  std::vector<std::string> type_filters;
  int64_t max_span = 768 * kMiB;
};

void print_help(FILE* out) {
  std::fprintf(
      out,
      "usage: loom-bench pack [options]\n"
      "  MPI_Pack/MPI_Unpack of the host MPI (PMPI_*) vs Loom (MPI_*) vs memcpy of the\n"
      "  same packed bytes, over a corpus of datatypes (docs/bench-pack.md).\n"
      "  Run as a singleton or with mpiexec -n 1 (only rank 0 measures).\n\n"
      "options:\n"
      "  --quick            CI smoke test: sizes 1K,256K, short time bounds (seconds)\n"
      "  --sizes LIST       packed sizes, e.g. 1K,64K,4M,64M (K/M/G = KiB/MiB/GiB)\n"
      "                     default 1K,16K,256K,4M,32M,64M\n"
      "  --types LIST       only types whose name contains one of these substrings\n"
      "                     (default: every type of the corpus)\n"
      "  --reps N           at most N timed samples per variant (default 100; at\n"
      "                     least min(5,N) are always taken)\n"
      "  --time SECONDS     time bound per case, pack and unpack together (default 0.25)\n"
      "  --max-span SIZE    skip cases whose user buffer exceeds SIZE (default 768M)\n"
      "  --json FILE        also write the results as JSON (tools/plot_bench.py plots it)\n"
      "  --list             list the corpus and exit\n"
      "  --help             this text\n");
}

// Returns -1 to continue, or an exit code.
int parse_options(int argc, char** argv, Options* opt) {
  bool sizes_given = false;
  const int parsed = parse_subcommand_options(
      argc, argv, kTool, opt, print_help, {"--sizes", "--types", "--max-span"},
      [&](const std::string& arg, const char* v) {
        if (arg == "--list") {
          for (const auto& e : pack_corpus())
            std::printf("%-16s %-5s %s\n", e.name, e.family, e.origin);
          return OptionParse::Done;
        }
        if (arg == "--sizes") return size_list_option(kTool, "size", v, &opt->sizes, &sizes_given);
        if (arg == "--types") {
          opt->type_filters = split_commas(v);
          return OptionParse::Taken;
        }
        if (arg != "--max-span") return OptionParse::NotMine;
        if (parse_size(v, &opt->max_span)) return OptionParse::Taken;
        bad_option_value(kTool, "--max-span");
        return OptionParse::Bad;
      });
  if (parsed >= 0) return parsed;
  if (opt->quick && !sizes_given) opt->sizes = {1 * kKiB, 256 * kKiB};
  opt->finish(0.01);
  return -1;
}

// ---------------------------------------------------------------------------------------------
// Memory and caches.

// Evicts the caches by reading a buffer larger than them: clean lines, so no write-backs are
// charged to the next timed operation.
class CacheFlusher {
 public:
  explicit CacheFlusher(int64_t bytes) : bytes_(bytes), buf_(allocate(bytes, kTool)) {
    fill_pattern(buf_.get(), bytes_, 7);
  }
  void flush() {
    uint64_t sum = 0;
    const unsigned char* p = buf_.get();
    for (int64_t i = 0; i < bytes_; i += 64) sum += p[i];
    sink_ = sum;
  }

 private:
  int64_t bytes_;
  Buffer buf_;
  volatile uint64_t sink_ = 0;
};

// ---------------------------------------------------------------------------------------------
// Timing.

// One timed variant: runs its operation `calls` times back to back.
struct Variant {
  Variant(const char* n, std::function<void(int calls)> f) : name(n), run(std::move(f)) {}
  const char* name;
  std::function<void(int calls)> run;
  int calls_per_sample = 1;
  std::vector<double> samples;  // seconds per call
};

// Warm-up, calibration of calls per sample (warm cases only: cold cases time single calls,
// each after a flush), then interleaved samples until the time bound and min/max reps allow.
void measure(std::vector<Variant>& variants, bool cold, CacheFlusher& flusher, double budget,
             int min_reps, int max_reps) {
  constexpr double kSampleSeconds = 50e-6;  // >> timer resolution and overhead (~30 ns)
  for (auto& v : variants) {
    v.samples.clear();
    v.calls_per_sample = 1;
    const double t0 = now_seconds();
    int warm_calls = 0;
    do {
      v.run(1);
      ++warm_calls;
    } while (warm_calls < 3 && (!cold || warm_calls < 1) && now_seconds() - t0 < 0.05);
    if (!cold) {
      const double t1 = now_seconds();
      v.run(1);
      const double one = std::max(now_seconds() - t1, 1e-9);
      v.calls_per_sample = static_cast<int>(std::clamp(kSampleSeconds / one, 1.0, 1e6));
      v.run(v.calls_per_sample);  // warm at the calibrated batch size too
    }
  }
  const double start = now_seconds();
  for (int rep = 0; rep < max_reps; ++rep) {
    if (rep >= min_reps && now_seconds() - start > budget) break;
    for (size_t j = 0; j < variants.size(); ++j) {
      Variant& v = variants[(rep + j) % variants.size()];  // rotate the order each rep
      if (cold) flusher.flush();
      const double t0 = now_seconds();
      v.run(v.calls_per_sample);
      const double t1 = now_seconds();
      v.samples.push_back((t1 - t0) / v.calls_per_sample);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Results.

// Ratios are medians of per-rep ratios: samples of one rep are adjacent in time, so background
// load on a shared machine hits both sides of a ratio alike and cancels.
struct Direction {  // pack or unpack of one case
  Summary host, loom, memcpy, loop;
  Summary loom_over_host, loom_over_memcpy, host_over_memcpy;  // speed ratios, per rep
  // Loom against the faster of memcpy and the plain loop in each rep; only with a loop.
  Summary loom_over_floor;
  bool has_loop = false;
  int calls_host = 1, calls_loom = 1, calls_memcpy = 1, calls_loop = 1;
  double speedup() const { return loom_over_host.median; }
  double loom_vs_memcpy() const { return loom_over_memcpy.median; }
  double host_vs_memcpy() const { return host_over_memcpy.median; }
  double loom_vs_floor() const { return loom_over_floor.median; }
};

// Speed ratio fast/slow per rep: time_of_reference / time_of_subject.
Summary paired_speed_ratio(const std::vector<double>& reference,
                           const std::vector<double>& subject) {
  std::vector<double> ratios;
  for (size_t i = 0; i < reference.size() && i < subject.size(); ++i)
    if (subject[i] > 0) ratios.push_back(reference[i] / subject[i]);
  return summarize(std::move(ratios));
}

struct CaseResult {
  const CorpusEntry* entry;
  int64_t target_bytes = 0;
  CorpusType shape;  // type already freed; sizes kept
  bool cold = false;
  bool accelerated = false;
  std::string route_pack, route_unpack, plan;
  bool verified = false;
  std::string verify_error;
  Direction pack, unpack;
  std::string loop_error;  // the plain loop's bytes differ from the host's (a bench bug)
};

// "12.3±4%": throughput at the median, with the p10-p90 spread of the time as +-half-width.
std::string gbps_cell(int64_t bytes, const Summary& s) {
  const double spread = s.median > 0 ? (s.p90 - s.p10) / (2 * s.median) * 100 : 0;
  const double v = gbps(bytes, s.median);
  return format(v < 10 ? "%.2f±%.0f%%" : "%.1f±%.0f%%", v, spread);
}

std::string route_of(const loom_stats& before, const loom_stats& after, bool pack) {
  const uint64_t by_loom = pack ? after.pack_calls_loom - before.pack_calls_loom
                                : after.unpack_calls_loom - before.unpack_calls_loom;
  const uint64_t by_host = pack ? after.pack_calls_host - before.pack_calls_host
                                : after.unpack_calls_host - before.unpack_calls_host;
  if (by_loom > 0 && by_host == 0) return "loom";
  if (by_host > 0 && by_loom == 0) return "host";
  if (by_loom == 0 && by_host == 0) return "uncounted";
  return "mixed";
}

std::string first_difference(const unsigned char* a, const unsigned char* b, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    if (a[i] != b[i])
      return format("first difference at byte %lld: host 0x%02x, loom 0x%02x",
                    static_cast<long long>(i), a[i], b[i]);
  return "";
}

// ---------------------------------------------------------------------------------------------
// The variants of one direction: the host's call, Loom's and memcpy of the same bytes.

using PackFunction = decltype(&MPI_Pack);
using UnpackFunction = decltype(&MPI_Unpack);

// A variant that runs `op` `calls` times back to back.
template <class Op>
Variant repeated(const char* name, Op op) {
  return Variant(name, [op](int calls) {
    for (int i = 0; i < calls; ++i) op();
  });
}

Variant memcpy_variant(unsigned char* to, const unsigned char* from, size_t bytes) {
  return repeated("memcpy", [=] {
    std::memcpy(to, from, bytes);
    do_not_optimize(to);
  });
}

// Packs `count` `type` at `in`: the host into `host_out`, Loom into `loom_out` (outsize bytes
// each); memcpy copies the `bytes` of `contig` into `loom_out`; `loop`, if given, packs into
// `loom_out` too.
std::vector<Variant> pack_variants(const unsigned char* in, int count, MPI_Datatype type,
                                   unsigned char* host_out, unsigned char* loom_out, int outsize,
                                   const unsigned char* contig, size_t bytes,
                                   const PlainLoop* loop = nullptr) {
  auto with = [=](const char* name, PackFunction pack, unsigned char* out) {
    return repeated(name, [=] {
      int pos = 0;
      pack(in, count, type, out, outsize, &pos, MPI_COMM_WORLD);
      do_not_optimize(out);
    });
  };
  std::vector<Variant> v = {with("host", &PMPI_Pack, host_out), with("loom", &MPI_Pack, loom_out),
                            memcpy_variant(loom_out, contig, bytes)};
  if (loop)
    v.push_back(repeated("loop", [=] {
      loop->pack(in, loom_out);
      do_not_optimize(loom_out);
    }));
  return v;
}

// Unpacks `packed` (outsize bytes) into `count` `type` at `out`, host, Loom and `loop` (if
// given) alike; memcpy copies its first `bytes` into `contig`.
std::vector<Variant> unpack_variants(const unsigned char* packed, int outsize, unsigned char* out,
                                     int count, MPI_Datatype type, unsigned char* contig,
                                     size_t bytes, const PlainLoop* loop) {
  auto with = [=](const char* name, UnpackFunction unpack) {
    return repeated(name, [=] {
      int pos = 0;
      unpack(packed, outsize, &pos, out, count, type, MPI_COMM_WORLD);
      do_not_optimize(out);
    });
  };
  std::vector<Variant> v = {with("host", &PMPI_Unpack), with("loom", &MPI_Unpack),
                            memcpy_variant(contig, packed, bytes)};
  if (loop)
    v.push_back(repeated("loop", [=] {
      loop->unpack(packed, out);
      do_not_optimize(out);
    }));
  return v;
}

// ---------------------------------------------------------------------------------------------
// One case: build, verify, time.

// The buffers of one case: the user buffer and its unpack target, both sides' packed bytes
// and the contiguous bytes memcpy copies.
struct CaseBuffers {
  CaseBuffers(const CorpusType& ct, int outsize)
      : src(allocate(ct.span_bytes, kTool)),
        dst(allocate(ct.span_bytes, kTool)),
        packed_host(allocate(outsize, kTool)),
        packed_loom(allocate(outsize, kTool)),
        contig(allocate(ct.packed_bytes, kTool)) {}
  Buffer src, dst, packed_host, packed_loom, contig;
};

// Packs with both, compares every byte of `outsize`, then unpacks the host's bytes with both
// into identically pre-filled buffers and compares those; records the routes and what differs.
void verify_case(const CorpusType& ct, int outsize, CaseBuffers& b, CaseResult* r) {
  MPI_Comm comm = MPI_COMM_WORLD;
  unsigned char* in = b.src.get() + ct.base_offset;
  unsigned char* out = b.dst.get() + ct.base_offset;
  std::vector<std::string> errors;
  loom_stats s0, s1, s2;
  int pos_host = 0, pos_loom = 0;
  const int rc_host =
      PMPI_Pack(in, ct.count, ct.type, b.packed_host.get(), outsize, &pos_host, comm);
  loom_get_stats(&s0);
  const int rc_loom =
      MPI_Pack(in, ct.count, ct.type, b.packed_loom.get(), outsize, &pos_loom, comm);
  loom_get_stats(&s1);
  r->route_pack = route_of(s0, s1, true);
  if (rc_host != MPI_SUCCESS || rc_loom != MPI_SUCCESS)
    errors.push_back(format("MPI_Pack rc: host %d, loom %d", rc_host, rc_loom));
  if (pos_host != pos_loom || pos_host != ct.packed_bytes)
    errors.push_back(format("pack position: host %d, loom %d, expected %lld", pos_host, pos_loom,
                            static_cast<long long>(ct.packed_bytes)));
  if (std::memcmp(b.packed_host.get(), b.packed_loom.get(), static_cast<size_t>(outsize)) != 0)
    errors.push_back("packed bytes differ: " +
                     first_difference(b.packed_host.get(), b.packed_loom.get(), outsize));
  // src is free now (its contents no longer matter for timing), so it takes Loom's result.
  std::memset(b.src.get(), 0x5a, static_cast<size_t>(ct.span_bytes));
  std::memset(b.dst.get(), 0x5a, static_cast<size_t>(ct.span_bytes));
  pos_host = pos_loom = 0;
  const int urc_host =
      PMPI_Unpack(b.packed_host.get(), outsize, &pos_host, out, ct.count, ct.type, comm);
  loom_get_stats(&s1);
  const int urc_loom =
      MPI_Unpack(b.packed_host.get(), outsize, &pos_loom, in, ct.count, ct.type, comm);
  loom_get_stats(&s2);
  r->route_unpack = route_of(s1, s2, false);
  if (urc_host != MPI_SUCCESS || urc_loom != MPI_SUCCESS)
    errors.push_back(format("MPI_Unpack rc: host %d, loom %d", urc_host, urc_loom));
  if (pos_host != pos_loom)
    errors.push_back(format("unpack position: host %d, loom %d", pos_host, pos_loom));
  if (std::memcmp(b.dst.get(), b.src.get(), static_cast<size_t>(ct.span_bytes)) != 0)
    errors.push_back("unpacked buffers differ: " +
                     first_difference(b.dst.get(), b.src.get(), ct.span_bytes));
  for (const auto& e : errors) append_error(&r->verify_error, e);
}

// The plain loop must move the host's bytes: it packs Loom's unpacked buffer (after verify_case,
// `src` holds the typemap's bytes) and unpacks the host's packed bytes over a sentinel.
void verify_loop(const CorpusType& ct, int outsize, const PlainLoop& loop, CaseBuffers& b,
                 CaseResult* r) {
  std::vector<unsigned char> packed(static_cast<size_t>(outsize), 0xcd);
  loop.pack(b.src.get() + ct.base_offset, packed.data());
  if (std::memcmp(packed.data(), b.packed_host.get(), static_cast<size_t>(ct.packed_bytes)) != 0)
    append_error(&r->loop_error,
                 "plain loop packs other bytes: " +
                     first_difference(b.packed_host.get(), packed.data(), ct.packed_bytes));
  std::memset(b.dst.get(), 0x5a, static_cast<size_t>(ct.span_bytes));
  loop.unpack(b.packed_host.get(), b.dst.get() + ct.base_offset);
  if (std::memcmp(b.dst.get(), b.src.get(), static_cast<size_t>(ct.span_bytes)) != 0)
    append_error(&r->loop_error, "plain loop unpacks other bytes: " +
                                     first_difference(b.src.get(), b.dst.get(), ct.span_bytes));
}

// Per rep, the faster of memcpy and the loop: the reference item 6 holds Loom to.
std::vector<double> faster_of(const std::vector<double>& a, const std::vector<double>& b) {
  std::vector<double> out(std::min(a.size(), b.size()));
  for (size_t i = 0; i < out.size(); ++i) out[i] = std::min(a[i], b[i]);
  return out;
}

void collect(const std::vector<Variant>& v, Direction* d) {
  d->host = summarize(v[0].samples);
  d->loom = summarize(v[1].samples);
  d->memcpy = summarize(v[2].samples);
  d->loom_over_host = paired_speed_ratio(v[0].samples, v[1].samples);
  d->loom_over_memcpy = paired_speed_ratio(v[2].samples, v[1].samples);
  d->host_over_memcpy = paired_speed_ratio(v[2].samples, v[0].samples);
  d->calls_host = v[0].calls_per_sample;
  d->calls_loom = v[1].calls_per_sample;
  d->calls_memcpy = v[2].calls_per_sample;
  d->has_loop = v.size() > 3;
  if (!d->has_loop) return;
  d->loop = summarize(v[3].samples);
  d->loom_over_floor = paired_speed_ratio(faster_of(v[2].samples, v[3].samples), v[1].samples);
  d->calls_loop = v[3].calls_per_sample;
}

CaseResult run_case(const CorpusEntry& entry, int64_t target, const Options& opt, int64_t l3_bytes,
                    CacheFlusher& flusher) {
  CaseResult r;
  r.entry = &entry;
  r.target_bytes = target;
  CorpusType ct = entry.build(target);
  r.shape = ct;

  int host_size = 0, loom_size = 0;
  PMPI_Pack_size(ct.count, ct.type, MPI_COMM_WORLD, &host_size);
  MPI_Pack_size(ct.count, ct.type, MPI_COMM_WORLD, &loom_size);
  const int outsize = std::max(host_size, loom_size);
  r.accelerated = loom_type_is_accelerated(ct.type) != 0;
  {
    char plan[512];
    loom_type_describe(ct.type, plan, sizeof plan);
    r.plan = plan;
  }

  CaseBuffers b(ct, outsize);
  fill_pattern(b.src.get(), ct.span_bytes, 1);
  fill_pattern(b.contig.get(), ct.packed_bytes, 2);
  std::memset(b.packed_host.get(), 0xcd, static_cast<size_t>(outsize));
  std::memset(b.packed_loom.get(), 0xcd, static_cast<size_t>(outsize));

  // Verification: same input, same sentinel-filled outputs.
  if (host_size != loom_size)
    r.verify_error = format("MPI_Pack_size: host %d, loom %d", host_size, loom_size);
  verify_case(ct, outsize, b, &r);
  r.verified = r.verify_error.empty();
  const std::optional<PlainLoop> loop = PlainLoop::of(ct.type, ct.count);
  if (loop) verify_loop(ct, outsize, *loop, b, &r);
  const PlainLoop* timed_loop = loop && r.loop_error.empty() ? &*loop : nullptr;

  // Everything a sample touches: user buffer, packed buffer and the memcpy buffer.
  r.cold = ct.span_bytes + 2 * ct.packed_bytes > l3_bytes;
  const double budget = opt.seconds_per_case / 2;
  const auto bytes = static_cast<size_t>(ct.packed_bytes);
  std::vector<Variant> pack =
      pack_variants(b.src.get() + ct.base_offset, ct.count, ct.type, b.packed_host.get(),
                    b.packed_loom.get(), outsize, b.contig.get(), bytes, timed_loop);
  measure(pack, r.cold, flusher, budget, opt.min_reps, opt.max_reps);
  std::vector<Variant> unpack =
      unpack_variants(b.packed_host.get(), outsize, b.dst.get() + ct.base_offset, ct.count, ct.type,
                      b.contig.get(), bytes, timed_loop);
  measure(unpack, r.cold, flusher, budget, opt.min_reps, opt.max_reps);
  collect(pack, &r.pack);
  collect(unpack, &r.unpack);
  free_corpus_type(ct);
  r.shape.type = MPI_DATATYPE_NULL;
  return r;
}

// ---------------------------------------------------------------------------------------------
// Per-call overhead: a 1 KiB pack, many calls per sample, ns per call.

struct Overhead {
  std::string what;
  Summary host_ns, loom_ns, memcpy_ns;
};

Overhead measure_overhead(const char* what, MPI_Datatype type, int count, int64_t base_offset,
                          int64_t span, int64_t bytes, const Options& opt, CacheFlusher& flusher) {
  Buffer src = allocate(span, kTool), packed = allocate(bytes, kTool),
         contig = allocate(bytes, kTool);
  fill_pattern(src.get(), span, 3);
  fill_pattern(contig.get(), bytes, 4);
  std::vector<Variant> v =
      pack_variants(src.get() + base_offset, count, type, packed.get(), packed.get(),
                    static_cast<int>(bytes), contig.get(), static_cast<size_t>(bytes));
  const int reps = opt.quick ? 11 : 51;
  measure(v, false, flusher, opt.quick ? 0.01 : 0.3, reps, reps);
  auto to_ns = [](std::vector<double> s) {
    for (double& x : s) x *= 1e9;
    return summarize(std::move(s));
  };
  return {what, to_ns(v[0].samples), to_ns(v[1].samples), to_ns(v[2].samples)};
}

// ---------------------------------------------------------------------------------------------
// The cases.

std::string case_label(const CaseResult& c, const char* dir) {
  return format("%s %s %s", c.entry->name, human_bytes(c.target_bytes).c_str(), dir);
}

// The corpus entries --types keeps.
std::vector<const CorpusEntry*> select_entries(const Options& opt) {
  std::vector<const CorpusEntry*> entries;
  for (const auto& e : pack_corpus()) {
    bool keep = opt.type_filters.empty();
    for (const auto& f : opt.type_filters) keep |= std::string(e.name).find(f) != std::string::npos;
    if (keep) entries.push_back(&e);
  }
  return entries;
}

struct Run {
  std::vector<CaseResult> results;
  std::vector<std::string> skipped;
  std::vector<Overhead> overheads;
};

// Every entry at every size whose buffer --max-span allows; progress on stderr.
void run_cases(const std::vector<const CorpusEntry*>& entries, const Options& opt, int64_t l3,
               CacheFlusher& flusher, Run* run) {
  const size_t total = entries.size() * opt.sizes.size();
  size_t done = 0;
  for (const CorpusEntry* e : entries) {
    for (int64_t size : opt.sizes) {
      ++done;
      {  // span check before allocating anything big
        CorpusType probe = e->build(size);
        const int64_t span = probe.span_bytes;
        free_corpus_type(probe);
        if (span > opt.max_span) {
          run->skipped.push_back(format("%s %s (buffer %s > --max-span)", e->name,
                                        human_bytes(size).c_str(), human_bytes(span).c_str()));
          continue;
        }
      }
      const double case_start = now_seconds();
      run->results.push_back(run_case(*e, size, opt, l3, flusher));
      std::fprintf(stderr, "[%3zu/%zu] %-16s %-8s %5.2f s\n", done, total, e->name,
                   human_bytes(size).c_str(), now_seconds() - case_start);
      const CaseResult& r = run->results.back();
      if (!r.verified)
        std::fprintf(stderr, "data mismatch in %s %s: %s\n", e->name, human_bytes(size).c_str(),
                     r.verify_error.c_str());
    }
  }
}

// Per-call overhead on 1 KiB packs.
void measure_overheads(const Options& opt, CacheFlusher& flusher, Run* run) {
  CorpusType contig = finish_corpus_type(
      [] {
        MPI_Datatype t;
        MPI_Type_contiguous(1024, MPI_BYTE, &t);
        return t;
      }(),
      1, 1024, "contiguous 1 KiB");
  run->overheads.push_back(measure_overhead("contiguous(1024, MPI_BYTE)", contig.type, 1,
                                            contig.base_offset, contig.span_bytes, 1024, opt,
                                            flusher));
  free_corpus_type(contig);
  if (const CorpusEntry* vec = find_corpus_entry("vec1d_b8")) {
    CorpusType v = vec->build(1024);
    run->overheads.push_back(measure_overhead("vec1d_b8 (128 x 8 B, stride 16 B)", v.type, v.count,
                                              v.base_offset, v.span_bytes, v.packed_bytes, opt,
                                              flusher));
    free_corpus_type(v);
  }
}

// ---------------------------------------------------------------------------------------------
// Report.

void print_table(const MpiRun& mpi, const Run& run) {
  Table table({"type",      "size",   "packed", "blk", "mem",    "loom",   "pack host GB/s",
               "loom GB/s", "memcpy", "loop",   "L/H", "L/mcpy", "L/best", "unpack host",
               "loom GB/s", "memcpy", "loop",   "L/H", "L/mcpy", "L/best"});
  auto loop_cell = [](int64_t b, const Direction& d) {
    return d.has_loop ? format("%.2f", gbps(b, d.loop.median)) : std::string("-");
  };
  auto best_cell = [](const Direction& d) {
    return d.has_loop ? format("%.0f%%", 100 * d.loom_vs_floor()) : std::string("-");
  };
  for (const auto& r : run.results) {
    const int64_t b = r.shape.packed_bytes;
    std::string loom_state = !r.verified              ? "MISMATCH"
                             : !r.accelerated         ? "host"
                             : r.route_pack == "loom" ? "accel"
                                                      : "accel?" + r.route_pack;
    table.add_row(
        {r.entry->name,
         human_bytes(r.target_bytes),
         format("%.3g%s", b >= kMiB ? b / double(kMiB) : b / double(kKiB), b >= kMiB ? "M" : "K"),
         format("%lld", static_cast<long long>(r.shape.min_block_bytes)),
         r.cold ? "DRAM" : "cache",
         loom_state,
         gbps_cell(b, r.pack.host),
         gbps_cell(b, r.pack.loom),
         format("%.2f", gbps(b, r.pack.memcpy.median)),
         loop_cell(b, r.pack),
         format("%.2fx", r.pack.speedup()),
         format("%.0f%%", 100 * r.pack.loom_vs_memcpy()),
         best_cell(r.pack),
         gbps_cell(b, r.unpack.host),
         gbps_cell(b, r.unpack.loom),
         format("%.2f", gbps(b, r.unpack.memcpy.median)),
         loop_cell(b, r.unpack),
         format("%.2fx", r.unpack.speedup()),
         format("%.0f%%", 100 * r.unpack.loom_vs_memcpy()),
         best_cell(r.unpack)});
  }
  std::printf(
      "\nhost MPI: %s   (GB/s of packed bytes at the median, ±: p10-p90 half-spread;\n"
      "L/H = Loom/host speed-up; L/mcpy = Loom as %% of memcpy of the same bytes;\n"
      "loop = a plain loop over the type's layout; L/best = Loom as %% of the faster of memcpy\n"
      "and the loop;\n"
      "mem = DRAM: working set > L3, caches flushed before every sample)\n\n",
      mpi.host_mpi.c_str());
  table.print(stdout);
  for (const auto& s : run.skipped) std::printf("skipped: %s\n", s.c_str());
}

// This run's summary: Loom against the host over both directions of every case, the bound
// (host / the faster of memcpy of the packed bytes and the plain loop) and what the run saw.
struct RunSummary {
  ComparisonSummary comparison;
  CaseStats pack, unpack;  // host/Loom speed-ups per direction
  int not_accelerated = 0, mismatches = 0, loop_errors = 0;
  std::vector<std::string> host_routed, mismatched;
};

RunSummary summarize_run(const std::vector<CaseResult>& results) {
  RunSummary t;
  std::vector<Comparison> cases;
  for (const auto& r : results) {
    if (!r.verified) {
      ++t.mismatches;
      t.mismatched.push_back(format("%s %s", r.entry->name, human_bytes(r.target_bytes).c_str()));
    }
    if (!r.loop_error.empty()) ++t.loop_errors;
    if (!r.accelerated || r.route_pack != "loom" || r.route_unpack != "loom") {
      ++t.not_accelerated;
      t.host_routed.push_back(format("%s@%s", r.entry->name, human_bytes(r.target_bytes).c_str()));
    }
    const Direction* dirs[2] = {&r.pack, &r.unpack};
    const char* names[2] = {"pack", "unpack"};
    for (int d = 0; d < 2; ++d) {
      const Direction& x = *dirs[d];
      const double sp = x.speedup();
      (d == 0 ? t.pack : t.unpack).add(sp, case_label(r, names[d]));
      // Loom's speed as a share of the faster of memcpy and the loop (memcpy alone without a
      // loop): the bound is the speed-up that share leaves, so that both come from the same
      // per-rep ratios as the table's L/best.
      const double share = x.has_loop ? x.loom_vs_floor() : x.loom_vs_memcpy();
      cases.push_back(
          {case_label(r, names[d]), sp, within_noise(x.host, x.loom), share > 0 ? sp / share : 0});
    }
  }
  t.comparison = ComparisonSummary(cases);
  return t;
}

void print_summary(const MpiRun& mpi, const Run& run, const RunSummary& t) {
  std::printf(
      "\nSummary (host %s, Loom %s; ratios are Loom/host speed-ups, > 1: Loom is\n"
      "faster, pack and unpack counted separately; within noise: the two p10-p90 ranges\n"
      "overlap; floor: the faster of memcpy of the packed bytes and the plain loop)\n",
      mpi.host_mpi.c_str(), mpi.loom_state());
  print_comparison(t.comparison, {}, "  ");
  if (!t.pack.empty())
    std::printf("  geomean per direction: pack %.2fx, unpack %.2fx\n", t.pack.geomean(),
                t.unpack.geomean());
  const size_t cases = run.results.size();
  print_verification("Loom's bytes against the host's, pack and unpack", t.mismatched, cases);
  std::printf("  served by Loom's engine (loom_type_is_accelerated and stats): %zu of %zu cases",
              cases - static_cast<size_t>(t.not_accelerated), cases);
  if (!t.host_routed.empty()) {
    std::printf("; fell back to host:");
    for (size_t i = 0; i < t.host_routed.size() && i < 12; ++i)
      std::printf(" %s", t.host_routed[i].c_str());
    if (t.host_routed.size() > 12) std::printf(" ... (+%zu)", t.host_routed.size() - 12);
  }
  std::printf("\n");
  if (t.loop_errors > 0)
    std::printf("  plain loop: other bytes than the host's in %d cases (not timed there)\n",
                t.loop_errors);
  for (const auto& o : run.overheads)
    std::printf(
        "  per-call overhead, 1 KiB pack, %s: host %.0f ns, Loom %.0f ns (memcpy %.0f ns)"
        " [p10-p90 host %.0f-%.0f, Loom %.0f-%.0f]\n",
        o.what.c_str(), o.host_ns.median, o.loom_ns.median, o.memcpy_ns.median, o.host_ns.p10,
        o.host_ns.p90, o.loom_ns.p10, o.loom_ns.p90);
  std::fflush(stdout);
}

void write_direction(JsonWriter& j, const char* name, const Direction& x, int64_t b) {
  j.begin_object(name);
  j.field("host_seconds", x.host);
  j.field("loom_seconds", x.loom);
  j.field("memcpy_seconds", x.memcpy);
  j.field("host_gbps", gbps(b, x.host.median));
  j.field("loom_gbps", gbps(b, x.loom.median));
  j.field("memcpy_gbps", gbps(b, x.memcpy.median));
  j.field("host_gbps_p10", gbps(b, x.host.p90));  // slow samples give the low throughput
  j.field("host_gbps_p90", gbps(b, x.host.p10));
  j.field("loom_gbps_p10", gbps(b, x.loom.p90));
  j.field("loom_gbps_p90", gbps(b, x.loom.p10));
  j.field("speedup", x.speedup());
  j.field("speedup_spread", x.loom_over_host);
  j.field("speedup_of_medians", x.loom.median > 0 ? x.host.median / x.loom.median : 0.0);
  j.field("within_noise", within_noise(x.host, x.loom));  // p10-p90 ranges overlap
  j.field("loom_vs_memcpy", x.loom_vs_memcpy());
  j.field("host_vs_memcpy", x.host_vs_memcpy());
  j.field("calls_per_sample_host", x.calls_host);
  j.field("calls_per_sample_loom", x.calls_loom);
  j.field("calls_per_sample_memcpy", x.calls_memcpy);
  if (x.has_loop) {
    j.field("loop_seconds", x.loop);
    j.field("loop_gbps", gbps(b, x.loop.median));
    j.field("loom_vs_faster_of_loop_and_memcpy", x.loom_vs_floor());
    j.field("calls_per_sample_loop", x.calls_loop);
  }
  j.end_object();
}

void write_case(JsonWriter& j, const CaseResult& r) {
  j.begin_object();
  j.field("type", r.entry->name);
  j.field("family", r.entry->family);
  j.field("regular", r.entry->regular);
  j.field("origin", r.entry->origin);
  j.field("shape", r.shape.shape);
  j.field("target_bytes", r.target_bytes);
  j.field("packed_bytes", r.shape.packed_bytes);
  j.field("span_bytes", r.shape.span_bytes);
  j.field("count", r.shape.count);
  j.field("min_block_bytes", r.shape.min_block_bytes);
  j.field("cache", r.cold ? "dram" : "cache");
  j.field("accelerated", r.accelerated);
  j.field("route_pack", r.route_pack);
  j.field("route_unpack", r.route_unpack);
  j.field("plan", r.plan);
  write_verification(j, r.verify_error);
  if (!r.loop_error.empty()) j.field("plain_loop_error", r.loop_error);
  write_direction(j, "pack", r.pack, r.shape.packed_bytes);
  write_direction(j, "unpack", r.unpack, r.shape.packed_bytes);
  j.end_object();
}

bool write_json(const Options& opt, int64_t l3, int64_t l2, const Run& run, const RunSummary& t) {
  JsonWriter j = begin_json_report(
      {.subcommand = "pack", .machine = {{"l3_bytes", l3}, {"l2_bytes", l2}}}, opt);
  opt.write_json(j);
  j.field("max_span", opt.max_span);
  j.array("sizes", opt.sizes);
  j.end_object();
  j.begin_array("cases");
  for (const auto& r : run.results) write_case(j, r);
  j.end_array();
  j.array("skipped", run.skipped);
  j.begin_object("summary");
  j.field("geomean_speedup_pack", t.pack.geomean());
  j.field("geomean_speedup_unpack", t.unpack.geomean());
  j.field("geomean_speedup", t.comparison.ratio.geomean());
  write_comparison(j, "comparison", t.comparison);  // floor: faster of memcpy and the loop
  j.field("plain_loop_errors", t.loop_errors);
  j.field("verify_failures", t.mismatches);
  j.field("not_accelerated", t.not_accelerated);
  j.begin_array("overhead_1k");
  for (const auto& o : run.overheads) {
    j.begin_object();
    j.field("what", o.what);
    j.field("host_ns", o.host_ns);
    j.field("loom_ns", o.loom_ns);
    j.field("memcpy_ns", o.memcpy_ns);
    j.end_object();
  }
  j.end_array();
  j.end_object();
  return finish_json_report(j, opt.json_path, kTool);
}

int measure_packs(const Options& opt, const MpiRun& mpi) {
  if (mpi.rank != 0) return 0;  // only rank 0 measures; others must not disturb it

  const int64_t l3 = cpu_cache_bytes("index3", _SC_LEVEL3_CACHE_SIZE, 32 * kMiB);
  const int64_t l2 = cpu_cache_bytes("index2", _SC_LEVEL2_CACHE_SIZE, 1 * kMiB);
  CacheFlusher flusher(2 * l3 + 4 * l2);

  std::printf("loom-bench pack   host MPI: %s\n", mpi.host_mpi.c_str());
  std::printf("Loom: %s   L3 %s, L2 %s   time bound %.2f s/case, reps %d..%d\n", mpi.loom_state(),
              human_bytes(l3).c_str(), human_bytes(l2).c_str(), opt.seconds_per_case, opt.min_reps,
              opt.max_reps);
  note_if_loom_inactive(
      mpi,
      "MPI_Pack is the\n"
      "      host's own, so every Loom/host ratio below measures noise and should be ~1.\n");
  std::fflush(stdout);

  const std::vector<const CorpusEntry*> entries = select_entries(opt);
  if (entries.empty()) return mpi.refuse(2, format("%s: no corpus type matches --types\n", kTool));
  Run run;
  run_cases(entries, opt, l3, flusher, &run);
  measure_overheads(opt, flusher, &run);
  print_table(mpi, run);
  const RunSummary summary = summarize_run(run.results);
  print_summary(mpi, run, summary);
  if (!opt.json_path.empty() && !write_json(opt, l3, l2, run, summary)) return 1;
  return summary.mismatches == 0 && summary.loop_errors == 0 ? 0 : 1;
}

}  // namespace

int run_pack(int argc, char** argv) {
  return run_mpi_subcommand(argc, argv, true, parse_options, measure_packs);
}

}  // namespace loom::bench
