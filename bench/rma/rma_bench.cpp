// loom-bench rma: RMA-MT's matrix (Dosanjh 2017, chapter 4) for one-sided communication, with
// every transfer verified, and derived datatypes through Loom against the host in one run.
//
// Matrix: operation (put, get, accumulate with MPI_SUM, get_accumulate) x origin/target types
// (contiguous, and the pack corpus' vector vec1d_b4 and indexed specfem3d_oc on either side) x
// synchronisation (fence; post/start/complete/wait; lock/unlock; lock_all with a flush after each
// operation; lock_all batched) x window (MPI_Win_create, MPI_Win_allocate, MPI_Win_allocate_shared,
// dynamic) x threads (MPI_THREAD_MULTIPLE) x measure (latency, bandwidth, message rate, 6-neighbour
// halo message rate) x size.
//
// RMA-MT's protocol: worker threads are started once and wait for the parent's "go"; the parent
// starts the clock, opens the epoch, lets the workers run their transfers (each at its own
// offset), waits for them and closes the epoch; thread start and join are outside the timing.
// Every epoch is verified: before it, origins and targets are filled with patterns that depend on
// the epoch, the rank, the thread and the direction; after it, the target's memory and the
// origin's (a get's landing, a get-accumulate's result) are compared element by element, gaps
// included, with what must be there, computed from the typemap independently of Loom and of the
// host's engines. A wrong element, a hang (the watchdog) or a crash is reported as a finding with
// the case and the command that reproduces it.
//
// loom-bench links libloom before libmpi: MPI_Put & co. are Loom's, PMPI_Put & co. the host's.
// One window serves both (Loom knows it; the host's calls are invisible to Loom). For derived
// types both paths run, alternated sample by sample; contiguous types are the host's own path
// under Loom too, and run once. Derived put and get bandwidth cases also time the same transfer
// as MPI_Isend/MPI_Irecv of the same datatypes through Loom: the bound a user could fall back on.
// Buffers come from mmap (bench/common/report.hpp, MappedBuffer).
#include <mpi.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "bench/common/report.hpp"
#include "bench/common/subcommands.hpp"
#include "bench/common/type_corpus.hpp"
#include "loom/loom.h"

namespace loom::bench {
namespace {

constexpr const char* kTool = "loom-bench rma";

// ---------------------------------------------------------------------------------------------
// The matrix's axes.

enum class Measure { Latency, Bandwidth, Rate, Halo };
enum class Op { Put, Get, Accumulate, GetAccumulate };
enum class Sync { Fence, Pscw, Lock, LockAllFlush, LockAll };
enum class Kind { Create, Allocate, Shared, Dynamic };
enum class Layout { Contiguous, Vector, Indexed };
struct TypeCase {
  Layout origin, target;
};

const char* const kMeasureNames[] = {"latency", "bandwidth", "rate", "halo"};
const char* const kOpNames[] = {"put", "get", "accumulate", "get_accumulate"};
const char* const kSyncNames[] = {"fence", "pscw", "lock", "lockall-flush", "lockall"};
const char* const kKindNames[] = {"create", "allocate", "shared", "dynamic"};
const TypeCase kTypeCases[] = {{Layout::Contiguous, Layout::Contiguous},
                               {Layout::Vector, Layout::Contiguous},
                               {Layout::Indexed, Layout::Contiguous},
                               {Layout::Contiguous, Layout::Vector},
                               {Layout::Contiguous, Layout::Indexed}};
const char* const kTypeCaseNames[] = {"contig", "vector-to-contig", "indexed-to-contig",
                                      "contig-to-vector", "contig-to-indexed"};
// The pack corpus' entries behind the derived layouts (4-byte float blocks).
const char* const kCorpusNames[] = {nullptr, "vec1d_b4", "specfem3d_oc"};

template <class E>
const char* name_of(const char* const* names, E value) {
  return names[static_cast<int>(value)];
}
bool derived(const TypeCase& tc) {
  return tc.origin != Layout::Contiguous || tc.target != Layout::Contiguous;
}

constexpr int kDirections = 6;  // halo: -x +x -y +y -z +z

struct Options : SamplingOptions {
  Options() : SamplingOptions(10, 1, 0.02) {}
  std::vector<Measure> measures = {Measure::Latency, Measure::Bandwidth, Measure::Rate,
                                   Measure::Halo};
  std::vector<Op> ops = {Op::Put, Op::Get, Op::Accumulate, Op::GetAccumulate};
  std::vector<int> type_cases = {0, 1, 2, 3, 4};
  std::vector<Sync> syncs = {Sync::Fence, Sync::Pscw, Sync::Lock, Sync::LockAllFlush,
                             Sync::LockAll};
  std::vector<Kind> kinds = {Kind::Create, Kind::Allocate, Kind::Shared, Kind::Dynamic};
  std::vector<int> threads = {1, 2, 4, 8};
  std::vector<int64_t> sizes;
  double watchdog_seconds = 300;
  bool p2p = true;
  bool full_table = false;
  int64_t epoch_bytes = kMiB;  // bandwidth, rate and halo: operations per epoch move about this
  double epoch_cap = 0.5;      // a path slower than this per epoch skips the case's larger sizes
};

std::vector<int64_t> default_sizes() {
  std::vector<int64_t> sizes = {1, 2, 3, 4, 5, 8, 12};
  for (int64_t s = 16; s <= kMiB; s *= 2) sizes.push_back(s);
  return sizes;
}

void print_help(FILE* out) {
  std::fprintf(
      out,
      "usage: mpiexec -n 2 loom-bench rma [options]\n"
      "  One-sided communication, RMA-MT's matrix (docs/rma.md): operations x types x\n"
      "  synchronisation x windows x threads x measures x sizes, every transfer verified.\n"
      "  Derived types run through the host (PMPI_*) and through Loom (MPI_*) alternately;\n"
      "  derived put/get bandwidth also through MPI_Isend/MPI_Irecv with Loom.\n"
      "  Needs an even number of ranks for the pairwise measures (2 is typical) and\n"
      "  MPI_THREAD_MULTIPLE for more than one thread.\n\n"
      "options (lists are comma-separated):\n"
      "  --quick             smoke run: bandwidth and halo, 4 KiB, 2 threads, one\n"
      "                      verified round per case\n"
      "  --measures LIST     latency,bandwidth,rate,halo (default all)\n"
      "  --ops LIST          put,get,accumulate,get_accumulate (default all)\n"
      "  --types LIST        contig,vector-to-contig,indexed-to-contig,contig-to-vector,\n"
      "                      contig-to-indexed (default all; vector = corpus vec1d_b4,\n"
      "                      indexed = corpus specfem3d_oc, both 4 B float blocks)\n"
      "  --sync LIST         fence,pscw,lock,lockall-flush,lockall (default all)\n"
      "  --windows LIST      create,allocate,shared,dynamic (default all)\n"
      "  --threads LIST      threads per rank (default 1,2,4,8)\n"
      "  --sizes LIST        bytes per operation (default 1,2,3,4,5,8,12,16,...,1M;\n"
      "                      derived types take the multiples of 4)\n"
      "  --epoch-bytes SIZE  bandwidth/rate/halo: operations per epoch move about this\n"
      "                      much per thread, 1 to 64 operations (default 1M)\n"
      "  --epoch-cap SECONDS a path whose epoch takes longer is not run at the case's\n"
      "                      larger sizes, and says so (default 0.5)\n"
      "  --no-p2p            skip the MPI_Isend/MPI_Irecv comparison\n"
      "  --watchdog SECONDS  a case that makes no progress this long is reported as a\n"
      "                      hang and the run stops (default 300)\n"
      "  --table full        print every case, not only the summary\n"
      "  --reps N            at most N verified rounds per case (default 10; as many as\n"
      "                      fit --time, at least one)\n"
      "  --time SECONDS      time bound per case, all paths together (default 0.02)\n"
      "  --json FILE         also write every case as JSON (tools/plot_bench.py plots it)\n"
      "  --help              this text\n");
}

template <class E, size_t N>
OptionParse enum_list(const char* what, const char* v, const char* const (&names)[N],
                      std::vector<E>* out) {
  out->clear();
  for (const std::string& item : split_commas(v)) {
    size_t i = 0;
    while (i < N && item != names[i]) ++i;
    if (i == N) {
      std::fprintf(stderr, "%s: unknown %s '%s'\n", kTool, what, item.c_str());
      return OptionParse::Bad;
    }
    out->push_back(static_cast<E>(i));
  }
  return out->empty() ? OptionParse::Bad : OptionParse::Taken;
}

int parse_options(int argc, char** argv, Options* opt) {
  bool sizes_given = false, threads_given = false, measures_given = false,
       epoch_bytes_given = false;
  const int parsed = parse_subcommand_options(
      argc, argv, kTool, opt, print_help,
      {"--measures", "--ops", "--types", "--sync", "--windows", "--threads", "--sizes",
       "--watchdog", "--table", "--epoch-bytes", "--epoch-cap"},
      [&](const std::string& arg, const char* v) {
        if (arg == "--measures") {
          measures_given = true;
          return enum_list("measure", v, kMeasureNames, &opt->measures);
        }
        if (arg == "--ops") return enum_list("operation", v, kOpNames, &opt->ops);
        if (arg == "--types") return enum_list("type case", v, kTypeCaseNames, &opt->type_cases);
        if (arg == "--sync") return enum_list("synchronisation", v, kSyncNames, &opt->syncs);
        if (arg == "--windows") return enum_list("window kind", v, kKindNames, &opt->kinds);
        if (arg == "--sizes") return size_list_option(kTool, "size", v, &opt->sizes, &sizes_given);
        if (arg == "--epoch-bytes") {
          epoch_bytes_given = true;
          return parse_size(v, &opt->epoch_bytes) ? OptionParse::Taken : OptionParse::Bad;
        }
        if (arg == "--threads") {
          opt->threads.clear();
          for (const std::string& item : split_commas(v)) {
            int t = 0;
            if (!parse_positive(item.c_str(), &t) || t > 64) return OptionParse::Bad;
            opt->threads.push_back(t);
          }
          threads_given = true;
          return opt->threads.empty() ? OptionParse::Bad : OptionParse::Taken;
        }
        if (arg == "--epoch-cap") {
          opt->epoch_cap = std::atof(v);
          return opt->epoch_cap > 0 ? OptionParse::Taken : OptionParse::Bad;
        }
        if (arg == "--watchdog") {
          opt->watchdog_seconds = std::atof(v);
          return opt->watchdog_seconds > 0 ? OptionParse::Taken : OptionParse::Bad;
        }
        if (arg == "--table") {
          if (std::string(v) != "full") return OptionParse::Bad;
          opt->full_table = true;
          return OptionParse::Taken;
        }
        if (arg == "--no-p2p") {
          opt->p2p = false;
          return OptionParse::Taken;
        }
        return OptionParse::NotMine;
      });
  if (parsed >= 0) return parsed;
  if (!sizes_given) opt->sizes = opt->quick ? std::vector<int64_t>{4 * kKiB} : default_sizes();
  if (opt->quick && !threads_given) opt->threads = {2};
  if (opt->quick && !measures_given) opt->measures = {Measure::Bandwidth, Measure::Halo};
  if (opt->quick && !epoch_bytes_given) opt->epoch_bytes = 4 * kKiB;  // one operation a stream
  std::sort(opt->sizes.begin(), opt->sizes.end());
  opt->finish(0.005);
  if (opt->quick && !opt->reps_given) opt->min_reps = 1;  // a smoke run: one verified round
  return -1;
}

// ---------------------------------------------------------------------------------------------
// The calls one path makes: Loom's entry points or the host's own.

struct Api {
  decltype(&MPI_Put) put;
  decltype(&MPI_Get) get;
  decltype(&MPI_Accumulate) accumulate;
  decltype(&MPI_Get_accumulate) get_accumulate;
  decltype(&MPI_Win_fence) fence;
  decltype(&MPI_Win_post) post;
  decltype(&MPI_Win_start) start;
  decltype(&MPI_Win_complete) complete;
  decltype(&MPI_Win_wait) wait;
  decltype(&MPI_Win_lock) lock;
  decltype(&MPI_Win_unlock) unlock;
  decltype(&MPI_Win_lock_all) lock_all;
  decltype(&MPI_Win_unlock_all) unlock_all;
  decltype(&MPI_Win_flush) flush;
};
const Api kLoomApi = {
    MPI_Put,        MPI_Get,          MPI_Accumulate,     MPI_Get_accumulate, MPI_Win_fence,
    MPI_Win_post,   MPI_Win_start,    MPI_Win_complete,   MPI_Win_wait,       MPI_Win_lock,
    MPI_Win_unlock, MPI_Win_lock_all, MPI_Win_unlock_all, MPI_Win_flush};
const Api kHostApi = {
    PMPI_Put,        PMPI_Get,          PMPI_Accumulate,     PMPI_Get_accumulate, PMPI_Win_fence,
    PMPI_Win_post,   PMPI_Win_start,    PMPI_Win_complete,   PMPI_Win_wait,       PMPI_Win_lock,
    PMPI_Win_unlock, PMPI_Win_lock_all, PMPI_Win_unlock_all, PMPI_Win_flush};

enum class Path { Host, Loom, P2p };
const char* const kPathNames[] = {"host", "loom", "p2p"};

// ---------------------------------------------------------------------------------------------
// Findings: what a case did wrong, and where the run stood when it hung or crashed.

char g_case_text[1024] = "(starting)";  // the case running now, with its command line
std::atomic<int64_t> g_progress{0};     // bumped after every verified round

void note_case(const std::string& text) {
  std::snprintf(g_case_text, sizeof g_case_text, "%s", text.c_str());
  g_progress.fetch_add(1, std::memory_order_relaxed);
}

extern "C" void on_fatal_signal(int sig) {
  char line[1200];
  const int n =
      std::snprintf(line, sizeof line, "finding: crash (signal %d) in %s\n", sig, g_case_text);
  if (n > 0) (void)!write(2, line, static_cast<size_t>(std::min<int>(n, sizeof line - 1)));
  signal(sig, SIG_DFL);
  raise(sig);
}

// Aborts the job when no round finishes for `seconds` (a host hang, or Loom's): the case and its
// command line go to stderr first.
void start_watchdog(double seconds) {
  std::thread([seconds] {
    int64_t seen = -1;
    auto since = std::chrono::steady_clock::now();
    for (;;) {
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
      const int64_t now = g_progress.load(std::memory_order_relaxed);
      if (now != seen) {
        seen = now;
        since = std::chrono::steady_clock::now();
        continue;
      }
      if (std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count() < seconds)
        continue;
      std::fprintf(stderr, "finding: hang (no progress for %.0f s) in %s\n", seconds, g_case_text);
      std::fflush(stderr);
      MPI_Abort(MPI_COMM_WORLD, 3);
    }
  }).detach();
}

// ---------------------------------------------------------------------------------------------
// Worker threads: started once, each waiting for the parent's "go".

class Workers {
 public:
  explicit Workers(int count) {
    for (int t = 0; t < count; ++t) threads_.emplace_back([this, t] { loop(t); });
  }
  ~Workers() {
    stop_ = true;
    go_.fetch_add(1, std::memory_order_release);
    go_.notify_all();
    for (auto& th : threads_) th.join();
  }
  // Runs job(t) on workers 0..active-1 and returns when all are done.
  void run(int active, const std::function<void(int)>& job) {
    job_.store(&job, std::memory_order_relaxed);
    active_.store(active, std::memory_order_relaxed);
    done_.store(0, std::memory_order_relaxed);
    go_.fetch_add(1, std::memory_order_release);
    go_.notify_all();
    int done = 0;
    while ((done = done_.load(std::memory_order_acquire)) < active) done_.wait(done);
  }

 private:
  void loop(int t) {
    // Each wake-up runs the latest generation at most once: a worker that slept through one
    // (it had nothing to do in it) joins the next.
    uint64_t seen = 0;
    for (;;) {
      go_.wait(seen, std::memory_order_acquire);
      const uint64_t now = go_.load(std::memory_order_acquire);
      if (now == seen) continue;
      seen = now;
      if (stop_) return;
      if (t < active_.load(std::memory_order_relaxed)) {
        (*job_.load(std::memory_order_relaxed))(t);
        done_.fetch_add(1, std::memory_order_release);
        done_.notify_all();
      }
    }
  }
  std::vector<std::thread> threads_;
  std::atomic<uint64_t> go_{0};
  std::atomic<int> done_{0};
  std::atomic<const std::function<void(int)>*> job_{nullptr};
  std::atomic<int> active_{0};
  std::atomic<bool> stop_{false};
};

// ---------------------------------------------------------------------------------------------
// Types: one side of an operation, and where its elements lie.

struct SideType {
  MPI_Datatype type = MPI_DATATYPE_NULL;
  int count = 0;
  MPI_Datatype basic = MPI_FLOAT;
  int elem = 4;                  // bytes per basic element
  int64_t span = 0;              // basic elements one side's buffer spans
  std::vector<int32_t> offsets;  // basic-element index of each element, in typemap order
  CorpusType corpus;             // derived layouts: the corpus type (freed with the side)
};

// Builds `layout` for `bytes` packed bytes of `basic` elements. Derived layouts come from the
// pack corpus; their element offsets are read back through the host's own MPI_Pack of an
// index-numbered buffer (independent of Loom's engine).
SideType build_side(Layout layout, int64_t bytes, MPI_Datatype basic, int elem) {
  SideType s;
  s.basic = basic;
  s.elem = elem;
  if (layout == Layout::Contiguous) {
    s.type = basic;
    s.count = static_cast<int>(bytes / elem);
    s.span = s.count;
    s.offsets.resize(static_cast<size_t>(s.count));
    for (int i = 0; i < s.count; ++i) s.offsets[static_cast<size_t>(i)] = i;
    return s;
  }
  s.corpus = find_corpus_entry(kCorpusNames[static_cast<int>(layout)])->build(bytes);
  s.type = s.corpus.type;
  s.count = s.corpus.count;
  // Buffers start at the element's origin: the data ends base_offset bytes past span_bytes when
  // the true lower bound is above 0 (corpus types never go below it).
  s.span = (s.corpus.span_bytes - std::min<int64_t>(s.corpus.base_offset, 0) + elem - 1) / elem;
  std::vector<float> numbered(static_cast<size_t>(s.span));
  for (int64_t i = 0; i < s.span; ++i) numbered[static_cast<size_t>(i)] = static_cast<float>(i);
  std::vector<float> packed(static_cast<size_t>(s.corpus.packed_bytes / elem));
  int position = 0;
  PMPI_Pack(numbered.data(), s.count, s.type, packed.data(),
            static_cast<int>(s.corpus.packed_bytes), &position, MPI_COMM_SELF);
  s.offsets.resize(packed.size());
  for (size_t k = 0; k < packed.size(); ++k) s.offsets[k] = static_cast<int32_t>(packed[k]);
  loom_type_is_accelerated(s.type);  // Loom's plan is built now, not inside a timed epoch
  return s;
}

void free_side(SideType& s) {
  if (s.corpus.type != MPI_DATATYPE_NULL) free_corpus_type(s.corpus);
}

// ---------------------------------------------------------------------------------------------
// Patterns. Values are small integers, exact in float and computed the same way (wrapping) in
// unsigned char, so expected sums are exact.

uint32_t origin_value(int64_t epoch, int rank, int thread, int direction, int64_t k) {
  return 1 +
         static_cast<uint32_t>((3 * (epoch & 1) + 5 * rank + 11 * thread + 13 * direction + k) % 7);
}
uint32_t target_value(int64_t epoch, int rank, int64_t position) {
  return static_cast<uint32_t>((17 * (epoch & 1) + 31 * rank + position) % 1000);
}
constexpr uint32_t kOriginGap = 250;

template <class E>
E as(uint32_t v) {
  return static_cast<E>(v);
}

// ---------------------------------------------------------------------------------------------
// Windows: one per kind, large enough for the current size, from mmap where Loom's caller owns
// the memory (created and dynamic windows).

struct BenchWindow {
  Kind kind = Kind::Create;
  MPI_Win win = MPI_WIN_NULL;
  unsigned char* base = nullptr;
  int64_t bytes = 0;
  MappedBuffer memory;
  std::vector<MPI_Aint> remote;  // dynamic: every rank's attached address

  bool open(Kind k, int64_t want, int ranks) {
    kind = k;
    bytes = want;
    remote.assign(static_cast<size_t>(ranks), 0);
    int rc = MPI_SUCCESS;
    switch (k) {
      case Kind::Create:
        memory = MappedBuffer(bytes, kTool);
        base = memory.data();
        rc = MPI_Win_create(base, bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win);
        break;
      case Kind::Allocate:
        rc = MPI_Win_allocate(bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
        break;
      case Kind::Shared:
        rc = MPI_Win_allocate_shared(bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
        break;
      case Kind::Dynamic: {
        memory = MappedBuffer(bytes, kTool);
        base = memory.data();
        rc = MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win);
        if (rc == MPI_SUCCESS) rc = MPI_Win_attach(win, base, bytes);
        MPI_Aint mine = 0;
        MPI_Get_address(base, &mine);
        PMPI_Allgather(&mine, 1, MPI_AINT, remote.data(), 1, MPI_AINT, MPI_COMM_WORLD);
        break;
      }
    }
    int ok = rc == MPI_SUCCESS, all_ok = 0;
    PMPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (win != MPI_WIN_NULL) PMPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    if (!all_ok) close();
    return all_ok != 0;
  }
  void close() {
    if (win == MPI_WIN_NULL) return;
    if (kind == Kind::Dynamic) MPI_Win_detach(win, base);
    MPI_Win_free(&win);
    win = MPI_WIN_NULL;
    memory = MappedBuffer();
    base = nullptr;
  }
  MPI_Aint disp(int target, int64_t offset) const {
    return kind == Kind::Dynamic ? remote[static_cast<size_t>(target)] + offset : offset;
  }
};

// ---------------------------------------------------------------------------------------------
// One case, and its epochs.

struct Case {
  Measure measure;
  Op op;
  int type_case;
  Sync sync;
  Kind kind;
  int threads;
  int64_t size;
  std::string label() const {
    return format("%s %s %s %s %s threads=%d size=%s", name_of(kMeasureNames, measure),
                  name_of(kOpNames, op), kTypeCaseNames[type_case], name_of(kSyncNames, sync),
                  name_of(kKindNames, kind), threads, human_bytes(size).c_str());
  }
  std::string command(int ranks) const {
    return format(
        "mpiexec -n %d loom-bench rma --measures %s --ops %s --types %s --sync %s --windows %s "
        "--threads %d --sizes %lld",
        ranks, name_of(kMeasureNames, measure), name_of(kOpNames, op), kTypeCaseNames[type_case],
        name_of(kSyncNames, sync), name_of(kKindNames, kind), threads,
        static_cast<long long>(size));
  }
};

struct PathResult {
  std::vector<double> seconds;
  int64_t wrong = 0;  // wrong elements seen (all ranks)
  std::string first_wrong;
};

struct CaseResult {
  Case c;
  int operations = 0;       // per thread and epoch (and direction, for halo)
  int64_t moved_bytes = 0;  // per epoch, this rank's origin side
  PathResult paths[3];
  bool ran[3] = {false, false, false};
  std::string skipped[3];   // why a path did not run
  int error = MPI_SUCCESS;  // an MPI call failed
  std::string error_text;
  // Loom path's calls Loom served (copied, packed, staged) and left to the host, all ranks.
  int64_t loom_served = 0, loom_left = 0;
  const char* route() const {
    return loom_served && loom_left ? "mixed" : loom_served ? "loom" : loom_left ? "host" : "";
  }
};

// The calls Loom's one-sided path served itself and those it left to the host so far in this
// process (LOOM_STATS's rma counters, docs/rma.md).
std::pair<int64_t, int64_t> rma_routes() {
  static const char* const kServed[] = {"rma.put.direct",        "rma.put.packed",
                                        "rma.get.direct",        "rma.get.unpacked",
                                        "rma.accumulate.packed", "rma.get_accumulate.packed"};
  static const char* const kLeft[] = {"rma.put.host", "rma.get.host", "rma.accumulate.host",
                                      "rma.get_accumulate.host"};
  int64_t served = 0, left = 0;
  uint64_t v = 0;
  for (const char* name : kServed)
    if (loom_get_counter(name, &v)) served += static_cast<int64_t>(v);
  for (const char* name : kLeft)
    if (loom_get_counter(name, &v)) left += static_cast<int64_t>(v);
  return {served, left};
}

// Everything a case's epochs use, built at its start.
class CaseRunner {
 public:
  CaseRunner(const Case& c, const MpiRun& run, BenchWindow& window, Workers& workers,
             const SideType& origin, const SideType& target, int64_t region_bytes, int operations)
      : c_(c),
        run_(run),
        window_(window),
        workers_(workers),
        origin_(origin),
        target_(target),
        region_bytes_(region_bytes),
        operations_(operations) {
    const int directions = c.measure == Measure::Halo ? kDirections : 1;
    streams_ = c.threads * directions;
    const int64_t origin_bytes = origin.span * origin.elem;
    origin_stride_ = (origin_bytes + 63) / 64 * 64;
    origin_buf_ = MappedBuffer(origin_stride_ * streams_, kTool);
    if (c.op == Op::GetAccumulate) result_buf_ = MappedBuffer(origin_stride_ * streams_, kTool);
    plan_peers();
  }

  // Runs one epoch on `path`; returns seconds (this rank's parent thread), or < 0 on an MPI error.
  // A fence, post/start/complete/wait and point-to-point order the targets' filling before and
  // their checking after the transfers by themselves (a target fills before it fences, posts or
  // receives, and checks once its epoch or receives ended); passive-target epochs need a
  // barrier on each side.
  double epoch(Path path, CaseResult* result) {
    const int64_t e = epochs_++;  // patterns alternate from one epoch to the next
    const bool passive = path != Path::P2p && c_.sync != Sync::Fence && c_.sync != Sync::Pscw;
    prepare(e);
    if (passive) PMPI_Barrier(MPI_COMM_WORLD);
    const double seconds = path == Path::P2p
                               ? p2p_epoch()
                               : rma_epoch(path == Path::Host ? kHostApi : kLoomApi, result);
    if (passive) PMPI_Barrier(MPI_COMM_WORLD);
    verify(e, &result->paths[static_cast<int>(path)]);
    return seconds;
  }

  bool is_origin() const { return !targets_.empty(); }
  void set_operations(int operations) { operations_ = operations; }

 private:
  // Who this rank puts to and accepts from: pairs (even to odd) for latency, bandwidth and rate;
  // the six neighbours of a periodic 3-D grid of ranks for halo.
  void plan_peers() {
    const int n = run_.ranks, r = run_.rank;
    if (c_.measure != Measure::Halo) {
      if (r % 2 == 0 && r + 1 < n) targets_ = {r + 1};
      if (r % 2 == 1) sources_ = {r - 1};
      direction_targets_ = targets_;
      return;
    }
    int dims[3] = {0, 0, 0};
    MPI_Dims_create(n, 3, dims);
    const int x = r % dims[0], y = (r / dims[0]) % dims[1], z = r / (dims[0] * dims[1]);
    auto rank_at = [&](int xi, int yi, int zi) {
      xi = (xi + dims[0]) % dims[0], yi = (yi + dims[1]) % dims[1], zi = (zi + dims[2]) % dims[2];
      return xi + dims[0] * (yi + dims[1] * zi);
    };
    direction_targets_ = {rank_at(x - 1, y, z), rank_at(x + 1, y, z), rank_at(x, y - 1, z),
                          rank_at(x, y + 1, z), rank_at(x, y, z - 1), rank_at(x, y, z + 1)};
    // Who sends to me in direction d: the neighbour on the opposite side.
    direction_sources_ = {rank_at(x + 1, y, z), rank_at(x - 1, y, z), rank_at(x, y + 1, z),
                          rank_at(x, y - 1, z), rank_at(x, y, z + 1), rank_at(x, y, z - 1)};
    for (int t : direction_targets_)
      if (std::find(targets_.begin(), targets_.end(), t) == targets_.end()) targets_.push_back(t);
    sources_ = targets_;  // the grid is symmetric
  }

  int target_of(int stream) const {
    return c_.measure == Measure::Halo
               ? direction_targets_[static_cast<size_t>(stream % kDirections)]
               : targets_[0];
  }
  int direction_of(int stream) const {
    return c_.measure == Measure::Halo ? stream % kDirections : 0;
  }
  int thread_of(int stream) const {
    return c_.measure == Measure::Halo ? stream / kDirections : stream;
  }
  // The region a stream lands in at its target (the same index at every target).
  int64_t region_offset(int stream) const { return region_bytes_ * stream; }
  unsigned char* origin_of(int stream) const {
    return origin_buf_.data() + origin_stride_ * stream;
  }
  unsigned char* result_of(int stream) const {
    return result_buf_.data() + origin_stride_ * stream;
  }

  template <class E>
  void prepare_as(int64_t e) {
    const int streams = is_origin() ? streams_ : 0;
    const bool origin_carries = c_.op != Op::Get;
    for (int s = 0; s < streams; ++s) {
      E* o = reinterpret_cast<E*>(origin_of(s));
      for (int64_t i = 0; i < origin_.span; ++i) o[i] = as<E>(kOriginGap);
      if (origin_carries)
        for (size_t k = 0; k < origin_.offsets.size(); ++k)
          o[origin_.offsets[k]] = as<E>(
              origin_value(e, run_.rank, thread_of(s), direction_of(s), static_cast<int64_t>(k)));
      if (c_.op == Op::GetAccumulate) {
        E* res = reinterpret_cast<E*>(result_of(s));
        for (int64_t i = 0; i < origin_.span; ++i) res[i] = as<E>(kOriginGap);
      }
    }
    // Every region this rank exposes holds its background.
    if (!sources_.empty() || c_.measure == Measure::Halo)
      for (int s = 0; s < streams_; ++s) {
        E* w = reinterpret_cast<E*>(window_.base + region_offset(s));
        for (int64_t i = 0; i < target_.span; ++i) w[i] = as<E>(target_value(e, run_.rank, i));
      }
  }
  void prepare(int64_t e) {
    if (origin_.elem == 4)
      prepare_as<float>(e);
    else
      prepare_as<unsigned char>(e);
  }

  // The timed part: the parent opens the epoch, the workers transfer, the parent closes it.
  double rma_epoch(const Api& api, CaseResult* result) {
    MPI_Win win = window_.win;
    const bool origin = is_origin(), exposes = !sources_.empty();
    std::atomic<int> first_error{MPI_SUCCESS};
    auto check = [&](int rc) {
      int expected = MPI_SUCCESS;
      if (rc != MPI_SUCCESS) first_error.compare_exchange_strong(expected, rc);
    };
    MPI_Group world = MPI_GROUP_NULL, target_group = MPI_GROUP_NULL, source_group = MPI_GROUP_NULL;
    if (c_.sync == Sync::Pscw) {
      PMPI_Comm_group(MPI_COMM_WORLD, &world);
      PMPI_Group_incl(world, static_cast<int>(targets_.size()), targets_.data(), &target_group);
      PMPI_Group_incl(world, static_cast<int>(sources_.size()), sources_.data(), &source_group);
      if (exposes) check(api.post(source_group, 0, win));
    }
    const std::function<void(int)> job = [&](int t) {
      for (int d = 0; d < (c_.measure == Measure::Halo ? kDirections : 1); ++d) {
        const int s = c_.measure == Measure::Halo ? t * kDirections + d : t;
        const int target = target_of(s);
        const MPI_Aint disp = window_.disp(target, region_offset(s));
        for (int i = 0; i < operations_; ++i) {
          int rc = MPI_SUCCESS;
          switch (c_.op) {
            case Op::Put:
              rc = api.put(origin_of(s), origin_.count, origin_.type, target, disp, target_.count,
                           target_.type, win);
              break;
            case Op::Get:
              rc = api.get(origin_of(s), origin_.count, origin_.type, target, disp, target_.count,
                           target_.type, win);
              break;
            case Op::Accumulate:
              rc = api.accumulate(origin_of(s), origin_.count, origin_.type, target, disp,
                                  target_.count, target_.type, MPI_SUM, win);
              break;
            case Op::GetAccumulate:
              rc = api.get_accumulate(origin_of(s), origin_.count, origin_.type, result_of(s),
                                      origin_.count, origin_.type, target, disp, target_.count,
                                      target_.type, MPI_SUM, win);
              break;
          }
          check(rc);
          if (c_.sync == Sync::LockAllFlush && rc == MPI_SUCCESS) check(api.flush(target, win));
        }
      }
    };
    const double start = now_seconds();
    switch (c_.sync) {
      case Sync::Fence:
        check(api.fence(MPI_MODE_NOPRECEDE, win));
        if (origin) workers_.run(c_.threads, job);
        check(api.fence(MPI_MODE_NOSUCCEED, win));
        break;
      case Sync::Pscw:
        if (origin) {
          check(api.start(target_group, 0, win));
          workers_.run(c_.threads, job);
          check(api.complete(win));
        }
        if (exposes) check(api.wait(win));
        break;
      case Sync::Lock:
        if (origin) {
          for (int t : targets_) check(api.lock(MPI_LOCK_SHARED, t, 0, win));
          workers_.run(c_.threads, job);
          for (int t : targets_) check(api.unlock(t, win));
        }
        break;
      case Sync::LockAllFlush:
      case Sync::LockAll:
        if (origin) {
          check(api.lock_all(0, win));
          workers_.run(c_.threads, job);
          check(api.unlock_all(win));
        }
        break;
    }
    const double seconds = now_seconds() - start;
    if (c_.sync == Sync::Pscw) {
      PMPI_Group_free(&target_group);
      PMPI_Group_free(&source_group);
      PMPI_Group_free(&world);
    }
    if (first_error.load() != MPI_SUCCESS && result->error == MPI_SUCCESS) {
      result->error = first_error.load();
      char text[MPI_MAX_ERROR_STRING] = {};
      int length = 0;
      PMPI_Error_string(result->error, text, &length);
      result->error_text = text;
    }
    return seconds;
  }

  // The same transfers as MPI_Isend/MPI_Irecv of the same datatypes through Loom: a put's data
  // from the origin's buffer into the target's region, a get's the other way; the origin's clock
  // stops once the target acknowledges (a put) or its receives complete (a get).
  double p2p_epoch() {
    const bool origin = is_origin(), exposes = !sources_.empty();
    const bool put = c_.op == Op::Put;
    const int tag_ack = 30000;
    const double start = now_seconds();
    if (origin) {
      const std::function<void(int)> job = [&](int t) {
        std::vector<MPI_Request> requests(static_cast<size_t>(operations_));
        for (int i = 0; i < operations_; ++i) {
          if (put)
            MPI_Isend(origin_of(t), origin_.count, origin_.type, targets_[0], t, MPI_COMM_WORLD,
                      &requests[static_cast<size_t>(i)]);
          else
            MPI_Irecv(origin_of(t), origin_.count, origin_.type, targets_[0], t, MPI_COMM_WORLD,
                      &requests[static_cast<size_t>(i)]);
        }
        MPI_Waitall(operations_, requests.data(), MPI_STATUSES_IGNORE);
      };
      workers_.run(c_.threads, job);
      if (put)
        MPI_Recv(nullptr, 0, MPI_BYTE, targets_[0], tag_ack, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    const double seconds = now_seconds() - start;
    if (exposes) {
      std::vector<MPI_Request> requests;
      for (int t = 0; t < c_.threads; ++t)
        for (int i = 0; i < operations_; ++i) {
          requests.emplace_back();
          unsigned char* region = window_.base + region_offset(t);
          if (put)
            MPI_Irecv(region, target_.count, target_.type, sources_[0], t, MPI_COMM_WORLD,
                      &requests.back());
          else
            MPI_Isend(region, target_.count, target_.type, sources_[0], t, MPI_COMM_WORLD,
                      &requests.back());
        }
      MPI_Waitall(static_cast<int>(requests.size()), requests.data(), MPI_STATUSES_IGNORE);
      if (put) MPI_Send(nullptr, 0, MPI_BYTE, sources_[0], tag_ack, MPI_COMM_WORLD);
    }
    return seconds;
  }

  template <class E>
  void verify_as(int64_t e, PathResult* out) {
    const int64_t n = static_cast<int64_t>(origin_.offsets.size());
    const int repeats = operations_;
    auto wrong = [&](const std::string& where, int64_t index, double got, double want) {
      if (out->wrong++ == 0)
        out->first_wrong = format("rank %d %s element %lld: %g, expected %g", run_.rank,
                                  where.c_str(), static_cast<long long>(index), got, want);
    };
    // Origin side: a get's landing, a get-accumulate's result.
    if (is_origin() && (c_.op == Op::Get || c_.op == Op::GetAccumulate)) {
      std::vector<uint8_t> in_map(static_cast<size_t>(origin_.span), 0);
      for (int32_t off : origin_.offsets) in_map[static_cast<size_t>(off)] = 1;
      for (int s = 0; s < streams_; ++s) {
        const int target = target_of(s);
        const E* got = reinterpret_cast<const E*>(c_.op == Op::Get ? origin_of(s) : result_of(s));
        for (int64_t k = 0; k < n; ++k) {
          const int64_t at = target_.offsets[static_cast<size_t>(k)];
          E want = as<E>(target_value(e, target, at));
          if (c_.op == Op::GetAccumulate)
            for (int i = 0; i < repeats - 1; ++i)
              want = static_cast<E>(
                  want + as<E>(origin_value(e, run_.rank, thread_of(s), direction_of(s), k)));
          const E value = got[origin_.offsets[static_cast<size_t>(k)]];
          if (value != want) wrong(format("origin stream %d", s), k, value, want);
        }
        for (int64_t i = 0; i < origin_.span; ++i)
          if (!in_map[static_cast<size_t>(i)] && got[i] != as<E>(kOriginGap))
            wrong(format("origin stream %d gap", s), i, got[i], kOriginGap);
      }
    }
    // Target side: every region this rank exposes.
    if (sources_.empty() && c_.measure != Measure::Halo) return;
    std::vector<uint8_t> in_map(static_cast<size_t>(target_.span), 0);
    for (int32_t off : target_.offsets) in_map[static_cast<size_t>(off)] = 1;
    for (int s = 0; s < streams_; ++s) {
      const int source = c_.measure == Measure::Halo
                             ? direction_sources_[static_cast<size_t>(direction_of(s))]
                             : sources_[0];
      const E* w = reinterpret_cast<const E*>(window_.base + region_offset(s));
      for (int64_t k = 0; k < n; ++k) {
        const int64_t at = target_.offsets[static_cast<size_t>(k)];
        E want = as<E>(target_value(e, run_.rank, at));
        const E add = as<E>(origin_value(e, source, thread_of(s), direction_of(s), k));
        if (c_.op == Op::Put) want = add;
        if (c_.op == Op::Accumulate || c_.op == Op::GetAccumulate)
          for (int i = 0; i < repeats; ++i) want = static_cast<E>(want + add);
        if (w[at] != want) wrong(format("target region %d", s), k, w[at], want);
      }
      for (int64_t i = 0; i < target_.span; ++i)
        if (!in_map[static_cast<size_t>(i)] && w[i] != as<E>(target_value(e, run_.rank, i)))
          wrong(format("target region %d gap", s), i, w[i], target_value(e, run_.rank, i));
    }
  }
  void verify(int64_t e, PathResult* out) {
    if (origin_.elem == 4)
      verify_as<float>(e, out);
    else
      verify_as<unsigned char>(e, out);
  }

  const Case& c_;
  const MpiRun& run_;
  BenchWindow& window_;
  Workers& workers_;
  const SideType& origin_;
  const SideType& target_;
  const int64_t region_bytes_;
  int operations_;
  int streams_ = 1;
  int64_t epochs_ = 0;
  int64_t origin_stride_ = 0;
  MappedBuffer origin_buf_, result_buf_;
  std::vector<int> targets_, sources_;  // distinct peers this rank accesses / exposes to
  std::vector<int> direction_targets_, direction_sources_;
};

// ---------------------------------------------------------------------------------------------
// The matrix.

// Operations per epoch and thread (and direction): 1 for latency, else enough to move about
// `epoch_bytes`, between 1 and 64.
int operations_for(const Case& c, const Options& opt) {
  if (c.measure == Measure::Latency) return 1;
  return static_cast<int>(
      std::clamp<int64_t>(opt.epoch_bytes / std::max<int64_t>(c.size, 1), 1, 64));
}

// A case's paths and how each went: a path whose epoch took longer than --epoch-cap is not run
// at the larger sizes of the same case (the matrix would otherwise take days on a host whose
// derived transfers cost a system call per block).
struct Skips {
  std::map<std::string, std::pair<double, int64_t>> slow;  // key -> (seconds, size) per path
  static std::string key(const Case& c, Path p) {
    return format("%d %d %d %d %d %d %d", static_cast<int>(c.measure), static_cast<int>(c.op),
                  c.type_case, static_cast<int>(c.sync), static_cast<int>(c.kind), c.threads,
                  static_cast<int>(p));
  }
};

// Runs one case: a probe epoch of one operation per stream on every path (verified), then
// alternating verified rounds of --epoch-bytes worth of operations (fewer where one operation
// takes long enough that the epoch would exceed a quarter second), until the time bound (rank 0
// decides every step, so all ranks take the same ones).
CaseResult run_case(const Case& c, const Options& opt, const MpiRun& run, BenchWindow& window,
                    Workers& workers, const SideType& origin, const SideType& target,
                    int64_t region_bytes, Skips& skips) {
  CaseResult result;
  result.c = c;
  note_case(c.label() + "; reproduce: " + c.command(run.ranks));
  std::vector<Path> paths;
  auto consider = [&](Path p) {
    const auto it = skips.slow.find(Skips::key(c, p));
    if (it == skips.slow.end()) {
      paths.push_back(p);
      return;
    }
    result.skipped[static_cast<int>(p)] = format("one epoch took %.1f s at %s", it->second.first,
                                                 human_bytes(it->second.second).c_str());
  };
  consider(Path::Host);
  if (derived(kTypeCases[c.type_case])) consider(Path::Loom);
  if (opt.p2p && derived(kTypeCases[c.type_case]) && c.measure == Measure::Bandwidth &&
      (c.op == Op::Put || c.op == Op::Get) && c.kind == Kind::Create)
    consider(Path::P2p);
  for (Path p : paths) result.ran[static_cast<int>(p)] = true;
  if (paths.empty()) return result;
  CaseRunner runner(c, run, window, workers, origin, target, region_bytes, 1);
  const int streams = c.threads * (c.measure == Measure::Halo ? kDirections : 1);
  int operations = operations_for(c, opt);
  double probe = 0;
  if (operations > 1) {
    // Only a path slow per operation shortens the epochs: a probe that lost the CPU (tens of
    // milliseconds on a loaded machine) must not, so a long probe is repeated (up to three
    // times) and the shortest counts.
    constexpr double kEpochSeconds = 0.25;
    double longest = 1e300;
    for (int attempt = 0; attempt < 3 && longest > kEpochSeconds / 4; ++attempt) {
      probe = 0;
      for (Path p : paths) probe = std::max(probe, runner.epoch(p, &result));
      double slowest_rank = 0;
      PMPI_Allreduce(&probe, &slowest_rank, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      longest = std::min(longest, slowest_rank);
    }
    if (longest > kEpochSeconds / 4)
      operations =
          static_cast<int>(std::clamp<double>(std::floor(kEpochSeconds / longest), 1, operations));
    runner.set_operations(operations);
  }
  result.operations = operations;
  result.moved_bytes = runner.is_origin() ? c.size * streams * operations : 0;
  const auto [served_before, left_before] = rma_routes();
  // Rounds: the first tells how long one takes (the slowest rank's, so every rank decides the
  // same); as many follow as fit the time bound, between --reps' bounds, none after a round
  // that took over ten times the bound.
  int rounds = 1;
  for (int round = 0; round < rounds; ++round) {
    const double start = now_seconds();
    for (Path p : paths) {
      const double seconds = runner.epoch(p, &result);
      result.paths[static_cast<int>(p)].seconds.push_back(seconds);
    }
    g_progress.fetch_add(1, std::memory_order_relaxed);
    if (round > 0) continue;
    double took = now_seconds() - start, longest = 0;
    PMPI_Allreduce(&took, &longest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    const int fit = longest > 0 ? static_cast<int>(opt.seconds_per_case / longest) : opt.max_reps;
    rounds = longest > 10 * opt.seconds_per_case
                 ? 1
                 : std::clamp(fit, std::min(opt.min_reps, opt.max_reps), opt.max_reps);
  }
  // Everything the ranks saw, in two reductions: per path its wrong elements (summed), and its
  // times round by round (the slowest rank's: an epoch ends for all when it ends for the last),
  // an error code and the bytes moved.
  std::vector<int64_t> sums, all_sums;
  std::vector<double> maxima, all_maxima;
  for (Path p : paths) {
    sums.push_back(result.paths[static_cast<int>(p)].wrong);
    for (double t : result.paths[static_cast<int>(p)].seconds) maxima.push_back(t);
  }
  sums.push_back(result.moved_bytes);
  const auto [served_after, left_after] = rma_routes();
  sums.push_back(served_after - served_before);
  sums.push_back(left_after - left_before);
  maxima.push_back(static_cast<double>(result.error));
  all_sums.resize(sums.size());
  all_maxima.resize(maxima.size());
  PMPI_Allreduce(sums.data(), all_sums.data(), static_cast<int>(sums.size()), MPI_INT64_T, MPI_SUM,
                 MPI_COMM_WORLD);
  PMPI_Allreduce(maxima.data(), all_maxima.data(), static_cast<int>(maxima.size()), MPI_DOUBLE,
                 MPI_MAX, MPI_COMM_WORLD);
  size_t at = 0;
  for (size_t i = 0; i < paths.size(); ++i) {
    PathResult& pr = result.paths[static_cast<int>(paths[i])];
    for (double& t : pr.seconds) t = all_maxima[at++];
    const bool here = pr.wrong > 0;
    pr.wrong = all_sums[i];
    if (pr.wrong == 0) continue;
    // The first wrong element's description, from the lowest rank that saw one.
    int first = here ? run.rank : run.ranks, lowest = 0;
    PMPI_Allreduce(&first, &lowest, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    char text[512] = {};
    if (run.rank == lowest) std::snprintf(text, sizeof text, "%s", pr.first_wrong.c_str());
    PMPI_Bcast(text, sizeof text, MPI_CHAR, lowest, MPI_COMM_WORLD);
    pr.first_wrong = text;
  }
  result.moved_bytes = all_sums[paths.size()];
  result.loom_served = all_sums[paths.size() + 1];
  result.loom_left = all_sums[paths.size() + 2];
  const int any_error = static_cast<int>(all_maxima[at]);
  if (any_error != MPI_SUCCESS && result.error == MPI_SUCCESS) {
    result.error = any_error;
    result.error_text = "on another rank";
  }
  for (Path p : paths) {
    const std::vector<double>& s = result.paths[static_cast<int>(p)].seconds;
    const double fastest = s.empty() ? 0 : *std::min_element(s.begin(), s.end());
    if (fastest > opt.epoch_cap) skips.slow[Skips::key(c, p)] = {fastest, c.size};
  }
  return result;
}

// ---------------------------------------------------------------------------------------------
// Reporting.

double median_of(const PathResult& p) {
  return summarize(p.seconds).median;
}
// The fastest sample: on a shared machine, a sample that lost the CPU measures the scheduler.
double fastest_of(const PathResult& p) {
  return summarize(p.seconds).min;
}

// The figure a measure reports for `seconds` per epoch: latency in us; bandwidth in MB/s (all
// origins together); rates in millions of operations per second.
double figure(const CaseResult& r, double seconds) {
  if (seconds <= 0) return 0;
  const int origins_streams =
      static_cast<int>(r.moved_bytes / std::max<int64_t>(r.c.size * r.operations, 1));
  switch (r.c.measure) {
    case Measure::Latency:
      return seconds * 1e6;
    case Measure::Bandwidth:
      return static_cast<double>(r.moved_bytes) / seconds / 1e6;
    case Measure::Rate:
    case Measure::Halo:
      return static_cast<double>(origins_streams) * r.operations / seconds / 1e6;
  }
  return 0;
}
const char* figure_unit(Measure m) {
  switch (m) {
    case Measure::Latency:
      return "us";
    case Measure::Bandwidth:
      return "MB/s";
    default:
      return "Mops/s";
  }
}

struct Findings {
  std::vector<std::string> lines;
  bool loom_wrong = false;
};

void write_case_json(JsonWriter& j, const CaseResult& r) {
  j.field("measure", name_of(kMeasureNames, r.c.measure));
  j.field("op", name_of(kOpNames, r.c.op));
  j.field("types", kTypeCaseNames[r.c.type_case]);
  j.field("sync", name_of(kSyncNames, r.c.sync));
  j.field("window", name_of(kKindNames, r.c.kind));
  j.field("threads", r.c.threads);
  j.field("bytes", r.c.size);
  j.field("operations_per_epoch", r.operations);
  j.field("moved_bytes_per_epoch", r.moved_bytes);
  for (int p = 0; p < 3; ++p) {
    if (!r.skipped[p].empty())
      j.field((std::string(kPathNames[p]) + "_skipped").c_str(), r.skipped[p]);
    if (!r.ran[p]) continue;
    j.begin_object(kPathNames[p]);
    j.field("seconds", summarize(r.paths[p].seconds));
    j.field("figure", figure(r, median_of(r.paths[p])));
    j.field("wrong_elements", r.paths[p].wrong);
    if (r.paths[p].wrong) j.field("first_wrong", r.paths[p].first_wrong);
    j.end_object();
  }
  j.field("unit", figure_unit(r.c.measure));
  if (r.ran[1] && *r.route()) j.field("loom_route", r.route());
  if (r.ran[0] && r.ran[1]) {
    j.field("speedup", median_of(r.paths[0]) / median_of(r.paths[1]));
    j.field("speedup_fastest", fastest_of(r.paths[0]) / fastest_of(r.paths[1]));
  }
  if (r.ran[2]) j.field("vs_p2p", median_of(r.paths[2]) / median_of(r.paths[1]));
  if (r.error != MPI_SUCCESS) j.field("error", r.error_text);
}

// The summary, built from every case: Loom against the host on the derived cases by operation,
// window and who served Loom's calls; derived put and get into a contiguous target at 64 KiB and
// more by window (the figure users ask most of); the same transfers through point-to-point.
// Ratios are host time / Loom time of the medians (> 1: Loom faster), within noise where the two
// paths' 10th-90th percentiles overlap (report.hpp); beside them the geomean of the fastest
// samples' ratios, which a lost time slice on a loaded machine does not move.
struct RmaSummary {
  struct Group {
    std::string name;
    std::vector<Comparison> cases;
    std::vector<double> fastest;
  };
  std::vector<Group> by_operation, headline, vs_p2p;
  int64_t skipped = 0;
  std::string skipped_example;

  static Group& group(std::vector<Group>& groups, const std::string& name) {
    for (Group& g : groups)
      if (g.name == name) return g;
    groups.push_back({name, {}, {}});
    return groups.back();
  }
  static void add(Group& g, const CaseResult& r, const PathResult& slow, const PathResult& fast) {
    const Summary a = summarize(slow.seconds), b = summarize(fast.seconds);
    g.cases.push_back({r.c.label(), a.median / b.median, within_noise(a, b), 0});
    g.fastest.push_back(a.min / b.min);
  }

  explicit RmaSummary(const std::vector<CaseResult>& results) {
    for (const CaseResult& r : results) {
      for (int p = 0; p < 3; ++p)
        if (!r.skipped[p].empty() && skipped++ == 0)
          skipped_example =
              format("%s path of %s: %s", kPathNames[p], r.c.label().c_str(), r.skipped[p].c_str());
      if (!r.ran[0] || !r.ran[1] || r.paths[0].seconds.empty() || r.paths[1].seconds.empty())
        continue;
      const char* served = !std::strcmp(r.route(), "loom")   ? "Loom's engine"
                           : !std::strcmp(r.route(), "host") ? "left to the host"
                                                             : "both";
      add(group(by_operation, format("%s, %s window (%s)", name_of(kOpNames, r.c.op),
                                     name_of(kKindNames, r.c.kind), served)),
          r, r.paths[0], r.paths[1]);
      if ((r.c.op == Op::Put || r.c.op == Op::Get) && r.c.size >= 64 * kKiB &&
          (r.c.kind == Kind::Shared || r.c.kind == Kind::Create) &&
          kTypeCases[r.c.type_case].target == Layout::Contiguous)
        add(group(headline, format("%s window", name_of(kKindNames, r.c.kind))), r, r.paths[0],
            r.paths[1]);
      if (r.ran[2] && !r.paths[2].seconds.empty())
        add(group(vs_p2p, name_of(kSyncNames, r.c.sync)), r, r.paths[2], r.paths[1]);
    }
  }

  static void print_group(const Group& g, const ComparisonNames& names) {
    std::printf("  %s:\n", g.name.c_str());
    print_comparison(ComparisonSummary(g.cases), names, "    ");
    std::printf("    fastest samples: geomean %.2fx\n", geomean(g.fastest));
  }
  void print(const MpiRun& run) const {
    if (skipped)
      std::printf(
          "\n%lld case paths not run: at a smaller size of the same case their epoch took "
          "longer than --epoch-cap (e.g. the %s)\n",
          static_cast<long long>(skipped), skipped_example.c_str());
    if (by_operation.empty()) return;
    std::printf(
        "\nLoom vs %s on derived types, by operation and window (host time / Loom time,\n"
        "medians; in brackets who served Loom's calls):\n",
        run.host_mpi.c_str());
    for (const Group& g : by_operation) print_group(g, {});
    if (!headline.empty()) {
      std::printf(
          "\nDerived put and get into a contiguous target, >= 64 KiB per operation (corpus "
          "vector and\nindexed types, 4 B blocks):\n");
      for (const Group& g : headline) print_group(g, {});
    }
    if (!vs_p2p.empty()) {
      std::printf(
          "\nThe bound a user could fall back on: the same transfers as MPI_Isend/MPI_Irecv of "
          "the same\ntypes through Loom (derived put and get bandwidth, created windows; "
          "point-to-point time /\none-sided time, > 1: one-sided faster), by synchronisation; "
          "fence and post/start/complete/wait\nepochs include a barrier or handshake the "
          "point-to-point transfer does not need:\n");
      for (const Group& g : vs_p2p) print_group(g, {"one-sided", "point-to-point"});
    }
  }
  void write_json(JsonWriter& j) const {
    j.begin_object("summary");
    for (const auto& [key, groups] :
         {std::pair<const char*, const std::vector<Group>*>{"by_operation", &by_operation},
          {"put_get_64k_contiguous_target", &headline},
          {"vs_p2p", &vs_p2p}}) {
      j.begin_object(key);
      for (const Group& g : *groups) {
        write_comparison(j, g.name.c_str(), ComparisonSummary(g.cases));
      }
      j.end_object();
    }
    j.field("skipped_paths", skipped);
    j.end_object();
  }
};

void print_case_table(const std::vector<CaseResult>& results) {
  Table t({"measure", "op", "types", "sync", "window", "thr", "size", "host", "loom", "speedup",
           "p2p", "unit"});
  for (const CaseResult& r : results) {
    auto cell = [&](int p) {
      return r.ran[p] && !r.paths[p].seconds.empty()
                 ? format("%.3g", figure(r, median_of(r.paths[p])))
                 : std::string("-");
    };
    t.add_row({name_of(kMeasureNames, r.c.measure), name_of(kOpNames, r.c.op),
               kTypeCaseNames[r.c.type_case], name_of(kSyncNames, r.c.sync),
               name_of(kKindNames, r.c.kind), std::to_string(r.c.threads), human_bytes(r.c.size),
               cell(0), cell(1),
               r.ran[1] ? format("%.2fx", median_of(r.paths[0]) / median_of(r.paths[1])) : "-",
               cell(2), figure_unit(r.c.measure)});
  }
  t.print(stdout);
}

int64_t count_cases(const Options& opt) {
  int64_t per_size = 0, floats_only = 0;
  for (int tc : opt.type_cases) (derived(kTypeCases[tc]) ? floats_only : per_size) += 1;
  int64_t cases = 0;
  for (int64_t size : opt.sizes) cases += per_size + (size % 4 == 0 ? floats_only : 0);
  return cases * static_cast<int64_t>(opt.kinds.size() * opt.measures.size() * opt.threads.size() *
                                      opt.syncs.size() * opt.ops.size());
}

// Every 30 seconds, rank 0 says on stderr how far the run is.
void report_progress(int64_t done, int64_t total, size_t findings, const MpiRun& run) {
  static double last = now_seconds();
  if (run.rank != 0 || now_seconds() - last < 30) return;
  last = now_seconds();
  std::fprintf(stderr, "loom-bench rma: %lld of %lld cases done, %zu findings so far\n",
               static_cast<long long>(done), static_cast<long long>(total), findings);
}

int measure_rma(const Options& opt, const MpiRun& run) {
  const int max_threads = *std::max_element(opt.threads.begin(), opt.threads.end());
  if (max_threads > 1 && run.thread_level < MPI_THREAD_MULTIPLE)
    return run.refuse(2, format("%s: the host provides no MPI_THREAD_MULTIPLE; run with "
                                "--threads 1\n",
                                kTool));
  if (run.ranks < 2) return run.refuse(2, format("%s: run with at least 2 ranks\n", kTool));
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) signal(sig, on_fatal_signal);
  start_watchdog(opt.watchdog_seconds);
  if (run.rank == 0) {
    std::printf("loom-bench rma: %d ranks, host %s, Loom %s, up to %d threads per rank\n",
                run.ranks, run.host_mpi.c_str(), run.loom_state(), max_threads);
    note_if_loom_inactive(run, "the Loom column then measures the host again.\n");
    std::fflush(stdout);
  }
  Workers workers(max_threads);
  std::vector<CaseResult> results;
  Findings findings;
  int64_t verified = 0;
  const bool any_halo =
      std::find(opt.measures.begin(), opt.measures.end(), Measure::Halo) != opt.measures.end();
  int64_t done = 0;
  const int64_t total = count_cases(opt);
  for (Kind kind : opt.kinds) {
    BenchWindow window;
    Skips skips;
    for (int64_t size : opt.sizes) {
      // The types of every case at this size, and the window's regions sized for the largest.
      const bool floats = size % 4 == 0;
      const MPI_Datatype basic = floats ? MPI_FLOAT : MPI_UNSIGNED_CHAR;
      const int elem = floats ? 4 : 1;
      SideType sides[3];
      bool have[3] = {false, false, false};
      int64_t region = 64;
      for (int tc : opt.type_cases) {
        if (derived(kTypeCases[tc]) && !floats) continue;
        for (Layout l : {kTypeCases[tc].origin, kTypeCases[tc].target}) {
          const int li = static_cast<int>(l);
          if (have[li]) continue;
          sides[li] = build_side(l, size, basic, elem);
          have[li] = true;
          region = std::max(region, (sides[li].span * elem + 63) / 64 * 64);
        }
      }
      const int64_t want = region * max_threads * (any_halo ? kDirections : 1);
      if (window.win == MPI_WIN_NULL || window.bytes < want) {
        window.close();
        if (!window.open(kind, want, run.ranks)) {
          if (run.rank == 0)
            findings.lines.push_back(format("finding: the host could not create a %s window of %s",
                                            name_of(kKindNames, kind), human_bytes(want).c_str()));
          break;
        }
      }
      for (Measure measure : opt.measures)
        for (int threads : opt.threads)
          for (Sync sync : opt.syncs)
            for (Op op : opt.ops)
              for (int tc : opt.type_cases) {
                if (derived(kTypeCases[tc]) && !floats) continue;
                const Case c{measure, op, tc, sync, kind, threads, size};
                CaseResult r = run_case(
                    c, opt, run, window, workers, sides[static_cast<int>(kTypeCases[tc].origin)],
                    sides[static_cast<int>(kTypeCases[tc].target)], region, skips);
                report_progress(++done, total, findings.lines.size(), run);
                for (int p = 0; p < 3; ++p) {
                  if (!r.ran[p]) continue;
                  verified += static_cast<int64_t>(r.paths[p].seconds.size());
                  if (!r.paths[p].wrong) continue;
                  const std::string line = format(
                      "%s: wrong data (%lld elements) on the %s path in %s: %s; reproduce: %s",
                      p == 0 ? "finding" : "error", static_cast<long long>(r.paths[p].wrong),
                      kPathNames[p], c.label().c_str(), r.paths[p].first_wrong.c_str(),
                      c.command(run.ranks).c_str());
                  findings.lines.push_back(line);
                  if (p != 0) findings.loom_wrong = true;
                  if (run.rank == 0) std::fprintf(stderr, "%s\n", line.c_str());
                }
                if (r.error != MPI_SUCCESS) {
                  const std::string line =
                      format("finding: an MPI call failed (%s) in %s; reproduce: %s",
                             r.error_text.c_str(), c.label().c_str(), c.command(run.ranks).c_str());
                  findings.lines.push_back(line);
                  if (run.rank == 0) std::fprintf(stderr, "%s\n", line.c_str());
                }
                results.push_back(std::move(r));
              }
      for (SideType& s : sides) free_side(s);
    }
    window.close();
  }
  if (run.rank == 0) {
    if (opt.full_table) print_case_table(results);
    std::printf("\n%lld epochs verified element by element, gaps included.\n",
                static_cast<long long>(verified));
    if (opt.quick)
      std::printf("--quick: one round per case, a smoke run; its times are single samples.\n");
    const RmaSummary summary(results);
    summary.print(run);
    if (findings.lines.empty())
      std::printf("\nNo findings: every transfer delivered the expected data.\n");
    else {
      std::printf("\nFindings (%zu):\n", findings.lines.size());
      for (const std::string& line : findings.lines) std::printf("  %s\n", line.c_str());
    }
    if (!opt.json_path.empty()) {
      JsonRunHeader header;
      header.subcommand = "rma";
      header.ranks = run.ranks;
      JsonWriter j = begin_json_report(header, opt);
      opt.write_json(j);
      j.field("epoch_bytes", opt.epoch_bytes);
      j.end_object();
      j.field("verified_epochs", verified);
      summary.write_json(j);
      j.begin_array("findings");
      for (const std::string& line : findings.lines) j.field(nullptr, line);
      j.end_array();
      j.objects("cases", results, [&](const CaseResult& r) { write_case_json(j, r); });
      finish_json_report(j, opt.json_path, kTool);
    }
  }
  return findings.loom_wrong ? 1 : 0;
}

}  // namespace

int run_rma(int argc, char** argv) {
  return run_mpi_subcommand(argc, argv, ThreadLevel::Multiple, parse_options, measure_rma);
}

}  // namespace loom::bench
