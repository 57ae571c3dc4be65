// commit-cost: what MPI_Type_commit and a datatype's first use cost, the host's own (PMPI_*)
// against Loom's (MPI_*) in the same process, alternating, as loom-bench does (docs/commit.md).
//
//   mpiexec -n 1 commit-cost            the corpus (bench/common/type_corpus.hpp) at several sizes
//                                       and a seeded random type corpus
//   mpiexec -n 2 commit-cost --churn    a ping-pong whose type is freed and created again
//                                       every 20 messages, against one type made once
//   mpiexec -n 2 commit-cost --unplanned
//                                       what Loom adds to a call it leaves to the host because
//                                       the call's type is not planned yet (MPI_Pack, ping-pong)
//   mpiexec -n 1 commit-cost --plan     what planning an irregular indexed type costs Loom
//
// Each commit is timed alone on a fresh copy of the type (MPI_Type_create_resized of a
// committed original: the same typemap, not yet committed), and the median of many is kept.
#include <dlfcn.h>
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "bench/common/type_corpus.hpp"
#include "loom/loom.h"

namespace {

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// The host's entry points or Loom's. The host's are its own MPI_* functions, found in the
// library that defines PMPI_Init: what a program without Loom calls. (Open MPI's PMPI_* copies
// committed the corpus's large types up to 2x faster than its MPI_* ones in this program.)
struct Api {
  int (*commit)(MPI_Datatype*);
  int (*free)(MPI_Datatype*);
  int (*pack)(const void*, int, MPI_Datatype, void*, int, int*, MPI_Comm);
  int (*send)(const void*, int, MPI_Datatype, int, int, MPI_Comm);
  int (*recv)(void*, int, MPI_Datatype, int, int, MPI_Comm, MPI_Status*);
};

template <typename Fn>
Fn host_entry(void* library, const char* name) {
  auto* fn = reinterpret_cast<Fn>(dlsym(library, name));
  if (!fn) {
    std::fprintf(stderr, "commit-cost: the host MPI library has no %s\n", name);
    std::exit(1);
  }
  return fn;
}

const Api& host_api() {
  static const Api api = [] {
    Dl_info info{};
    void* library = nullptr;
    if (dladdr(reinterpret_cast<void*>(&PMPI_Init), &info) && info.dli_fname)
      library = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
    if (!library) {
      std::fprintf(stderr, "commit-cost: cannot find the host MPI library\n");
      std::exit(1);
    }
    return Api{host_entry<decltype(Api::commit)>(library, "MPI_Type_commit"),
               host_entry<decltype(Api::free)>(library, "MPI_Type_free"),
               host_entry<decltype(Api::pack)>(library, "MPI_Pack"),
               host_entry<decltype(Api::send)>(library, "MPI_Send"),
               host_entry<decltype(Api::recv)>(library, "MPI_Recv")};
  }();
  return api;
}

const Api& loom_api() {
  static const Api api = {MPI_Type_commit, MPI_Type_free, MPI_Pack, MPI_Send, MPI_Recv};
  return api;
}

struct Timings {
  double commit = 0;      // MPI_Type_commit alone
  double cycle = 0;       // create_resized + commit + free, in a loop of those alone
  double first_pack = 0;  // the first MPI_Pack of one element after the commit
  double next_pack = 0;   // the second
};

// Times `reps` commits of fresh copies of `original` and their first two packs, through the
// host's entry points and through Loom's, alternating.
void time_commits(MPI_Datatype original, int reps, Timings* host, Timings* loom) {
  MPI_Aint lb = 0, extent = 0, true_lb = 0, true_extent = 0;
  MPI_Type_get_extent(original, &lb, &extent);
  MPI_Type_get_true_extent(original, &true_lb, &true_extent);
  int size = 0;
  MPI_Type_size(original, &size);
  std::vector<unsigned char> user(static_cast<size_t>(std::max<MPI_Aint>(true_extent, 1)), 1);
  std::vector<unsigned char> packed(static_cast<size_t>(std::max(size, 1)));
  const void* origin = user.data() - true_lb;
  std::vector<double> commit[2], cycle[2], first[2], next[2];
  // Host, Loom, Loom, host, ...: each side follows the other as often as itself (a strict
  // alternation showed a 1.4x bias between two identical sides, from the allocator's state).
  const auto side_of = [](int r) { return ((r + 1) / 2) % 2; };
  // A commit and free loop, as an application that rebuilds its types runs it.
  for (int r = 0; r < 2 * reps; ++r) {
    const int side = side_of(r);
    const Api& api = side ? loom_api() : host_api();
    MPI_Datatype copy;
    const double t0 = now();
    MPI_Type_create_resized(original, lb, extent, &copy);
    const double t1 = now();
    api.commit(&copy);
    const double t2 = now();
    api.free(&copy);
    const double t3 = now();
    commit[side].push_back(t2 - t1);
    cycle[side].push_back(t3 - t0);
  }
  // The first use of each copy, where Loom now builds (or finds) the type's plan.
  for (int r = 0; r < 2 * reps; ++r) {
    const int side = side_of(r);
    const Api& api = side ? loom_api() : host_api();
    MPI_Datatype copy;
    MPI_Type_create_resized(original, lb, extent, &copy);
    api.commit(&copy);
    int position = 0;
    const double t0 = now();
    api.pack(origin, 1, copy, packed.data(), size, &position, MPI_COMM_SELF);
    const double t1 = now();
    position = 0;
    api.pack(origin, 1, copy, packed.data(), size, &position, MPI_COMM_SELF);
    const double t2 = now();
    api.free(&copy);
    first[side].push_back(t1 - t0);
    next[side].push_back(t2 - t1);
  }
  *host = {median(commit[0]), median(cycle[0]), median(first[0]), median(next[0])};
  *loom = {median(commit[1]), median(cycle[1]), median(first[1]), median(next[1])};
}

// Loom / host per case, summarised at the end.
struct Ratios {
  std::vector<double> commit, cycle, first_pack;
  void add(const Timings& host, const Timings& loom) {
    commit.push_back(loom.commit / host.commit);
    cycle.push_back(loom.cycle / host.cycle);
    first_pack.push_back(loom.first_pack / host.first_pack);
  }
  void print(const char* what) const {
    auto geo = [](const std::vector<double>& v) {
      double sum = 0;
      for (double x : v) sum += std::log(x);
      return v.empty() ? 0.0 : std::exp(sum / static_cast<double>(v.size()));
    };
    auto worst = [](const std::vector<double>& v) {
      return v.empty() ? 0.0 : *std::max_element(v.begin(), v.end());
    };
    std::printf(
        "%s: loom/host commit geomean %.2f max %.2f | commit+free geomean %.2f max %.2f | "
        "first pack geomean %.2f max %.2f (%zu cases)\n",
        what, geo(commit), worst(commit), geo(cycle), worst(cycle), geo(first_pack),
        worst(first_pack), commit.size());
  }
};

void print_row(const char* name, int64_t span, const Timings& host, const Timings& loom) {
  std::printf("%-26s %8lld %8.3f %8.3f %8.3f %8.3f %9.2f %9.2f %9.2f %9.2f\n", name,
              static_cast<long long>(span), host.commit * 1e6, loom.commit * 1e6, host.cycle * 1e6,
              loom.cycle * 1e6, host.first_pack * 1e6, loom.first_pack * 1e6, host.next_pack * 1e6,
              loom.next_pack * 1e6);
}

void print_header(const char* what) {
  std::printf("%-26s %8s %8s %8s %8s %8s %9s %9s %9s %9s\n", what, "span B", "commit", "", "+free",
              "", "1st pack", "", "2nd pack", "");
  std::printf("%-26s %8s %8s %8s %8s %8s %9s %9s %9s %9s\n", "(us, median)", "", "host", "loom",
              "host", "loom", "host", "loom", "host", "loom");
}

// A random derived type of at most `depth` levels whose extent stays near `budget` bytes.
MPI_Datatype random_type(std::mt19937& rng, int depth, int64_t budget,
                         std::vector<MPI_Datatype>* made) {
  const MPI_Datatype named[] = {MPI_BYTE, MPI_INT, MPI_DOUBLE, MPI_FLOAT, MPI_SHORT};
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  MPI_Datatype child = named[pick(5)];
  if (depth > 0 && budget > 64) child = random_type(rng, depth - 1, budget / 16, made);
  MPI_Aint lb = 0, extent = 0;
  MPI_Type_get_extent(child, &lb, &extent);
  const int64_t room = std::max<int64_t>(budget / std::max<MPI_Aint>(extent, 1), 2);
  const int count =
      static_cast<int>(std::min<int64_t>(1 + pick(64), std::max<int64_t>(room / 2, 1)));
  MPI_Datatype t = MPI_DATATYPE_NULL;
  switch (pick(6)) {
    case 0:
      MPI_Type_contiguous(count, child, &t);
      break;
    case 1:
      MPI_Type_vector(count, 1 + pick(3), 4 + pick(4), child, &t);
      break;
    case 2:
      MPI_Type_create_hvector(count, 1, extent * (1 + pick(3)) + pick(8), child, &t);
      break;
    case 3: {
      std::vector<int> lengths(count), displs(count);
      for (int i = 0, at = 0; i < count; ++i) {
        lengths[i] = 1 + pick(4);
        displs[i] = at + pick(3);
        at = displs[i] + lengths[i];
      }
      MPI_Type_indexed(count, lengths.data(), displs.data(), child, &t);
      break;
    }
    case 4: {
      std::vector<int> displs(count);
      for (int i = 0, at = 0; i < count; ++i) displs[i] = at += 2 + pick(3);
      MPI_Type_create_indexed_block(count, 2, displs.data(), child, &t);
      break;
    }
    default: {
      const int sizes[3] = {4 + pick(8), 4 + pick(8), 4 + pick(8)};
      const int subsizes[3] = {1 + pick(sizes[0]), 1 + pick(sizes[1]), 1 + pick(sizes[2])};
      const int starts[3] = {sizes[0] - subsizes[0], 0, sizes[2] - subsizes[2]};
      MPI_Type_create_subarray(3, sizes, subsizes, starts, MPI_ORDER_C, child, &t);
      break;
    }
  }
  made->push_back(t);
  return t;
}

int run_commits(bool quick) {
  const int reps = quick ? 20 : 200;
  Ratios corpus, random;
  print_header("corpus type @ packed bytes");
  for (const auto& entry : loom::bench::pack_corpus()) {
    for (int64_t target : {int64_t{1} << 10, int64_t{1} << 17, int64_t{1} << 20}) {
      loom::bench::CorpusType ct = entry.build(target);
      MPI_Aint true_lb = 0, true_extent = 0;
      MPI_Type_get_true_extent(ct.type, &true_lb, &true_extent);
      const std::string name = std::string(entry.name) + " @" + std::to_string(target >> 10) + "K";
      Timings host, loom;
      time_commits(ct.type, reps, &host, &loom);
      print_row(name.c_str(), true_extent, host, loom);
      corpus.add(host, loom);
      loom::bench::free_corpus_type(ct);
    }
  }
  print_header("random type (seed 23)");
  std::mt19937 rng(23);
  const int random_types = quick ? 10 : 100;
  for (int i = 0; i < random_types; ++i) {
    std::vector<MPI_Datatype> made;
    const int64_t budget = int64_t{1} << (10 + static_cast<int>(rng() % 11));  // 1 KiB - 1 MiB
    MPI_Datatype t = random_type(rng, 1 + static_cast<int>(rng() % 3), budget, &made);
    MPI_Type_commit(&t);
    MPI_Aint true_lb = 0, true_extent = 0;
    MPI_Type_get_true_extent(t, &true_lb, &true_extent);
    if (true_extent > (MPI_Aint{4} << 20)) {  // keep the buffers small: draw again
      for (MPI_Datatype& m : made) MPI_Type_free(&m);
      --i;
      continue;
    }
    const std::string name = "random " + std::to_string(i);
    Timings host, loom;
    time_commits(t, quick ? 5 : 50, &host, &loom);
    print_row(name.c_str(), true_extent, host, loom);
    random.add(host, loom);
    for (MPI_Datatype& m : made) MPI_Type_free(&m);
  }
  corpus.print("corpus");
  random.print("random");
  return 0;
}

// Two ranks ping-pong `messages` round trips of a vector type; with `churn`, the type is freed
// and made again every 20 messages, as some applications do per exchange.
double pingpong(const Api& api, int rank, int blocks, int block_doubles, int messages, bool churn) {
  const int stride = 2 * block_doubles;
  std::vector<double> buf(static_cast<size_t>(blocks) * stride, 1.0);
  MPI_Datatype t = MPI_DATATYPE_NULL;
  MPI_Barrier(MPI_COMM_WORLD);
  const double start = now();
  for (int m = 0; m < messages; ++m) {
    if (t == MPI_DATATYPE_NULL || (churn && m % 20 == 0)) {
      if (t != MPI_DATATYPE_NULL) api.free(&t);
      MPI_Type_vector(blocks, block_doubles, stride, MPI_DOUBLE, &t);
      api.commit(&t);
    }
    if (rank == 0) {
      api.send(buf.data(), 1, t, 1, 0, MPI_COMM_WORLD);
      api.recv(buf.data(), 1, t, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else if (rank == 1) {
      api.recv(buf.data(), 1, t, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      api.send(buf.data(), 1, t, 0, 0, MPI_COMM_WORLD);
    }
  }
  const double took = now() - start;
  api.free(&t);
  return took / messages;
}

int run_churn(bool quick) {
  int rank = 0, ranks = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  if (ranks < 2) {
    std::fprintf(stderr, "commit-cost --churn needs 2 ranks\n");
    return 2;
  }
  const int messages = quick ? 200 : 1000;
  struct Shape {
    const char* name;
    int blocks, block_doubles;
  };
  const Shape shapes[] = {{"vector 8 B blocks, 8 KiB", 1024, 1},
                          {"vector 8 B blocks, 512 KiB", 65536, 1},
                          {"vector 256 B blocks, 512 KiB", 2048, 32}};
  if (rank == 0)
    std::printf("%-30s %11s %11s %11s %11s %9s %9s\n", "round trip (us)", "host once",
                "host every20", "loom once", "loom every20", "host/loom", "(every20)");
  for (const Shape& s : shapes) {
    // Alternating, best of three each: load on the machine hits all alike.
    double t[4] = {1e30, 1e30, 1e30, 1e30};  // host once, host churn, loom once, loom churn
    for (int round = 0; round < 3; ++round)
      for (int k = 0; k < 4; ++k)
        t[k] = std::min(t[k], pingpong(k < 2 ? host_api() : loom_api(), rank, s.blocks,
                                       s.block_doubles, messages, k % 2 == 1));
    if (rank == 0)
      std::printf("%-30s %11.2f %11.2f %11.2f %11.2f %9.2f %9.2f\n", s.name, t[0] * 1e6, t[1] * 1e6,
                  t[2] * 1e6, t[3] * 1e6, t[0] / t[2], t[1] / t[3]);
  }
  return 0;
}

// Times each of `calls` calls of one element of a type made for them (an indexed-block type of
// `blocks` ints, made and freed around them, outside the time), appending seconds per call to
// `out`: MPI_Pack on each rank alone, or (`pingpong`) a round trip of MPI_Send/MPI_Recv between
// ranks 0 and 1, half of it. Each batch's type has new displacements (`batch` swaps two), as a
// particle code's exchange rebuilt every step: the same outline, other contents.
void unplanned_batch(const Api& api, int rank, int blocks, int calls, bool pingpong, int batch,
                     std::vector<double>* out) {
  std::vector<int> displacements(static_cast<size_t>(blocks));
  for (int i = 0; i < blocks; ++i) displacements[static_cast<size_t>(i)] = 2 * i;
  std::swap(displacements[static_cast<size_t>(batch % blocks)],
            displacements[static_cast<size_t>((batch / blocks + batch + 1) % blocks)]);
  std::vector<int> user(static_cast<size_t>(2 * blocks), 7);
  std::vector<char> packed(static_cast<size_t>(blocks) * sizeof(int));
  MPI_Datatype t;
  MPI_Type_create_indexed_block(blocks, 1, displacements.data(), MPI_INT, &t);
  api.commit(&t);
  MPI_Barrier(MPI_COMM_WORLD);
  for (int c = 0; c < calls; ++c) {
    const double start = now();
    if (!pingpong) {
      int position = 0;
      api.pack(user.data(), 1, t, packed.data(), static_cast<int>(packed.size()), &position,
               MPI_COMM_SELF);
    } else if (rank == 0) {
      api.send(user.data(), 1, t, 1, 0, MPI_COMM_WORLD);
      api.recv(user.data(), 1, t, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else if (rank == 1) {
      api.recv(user.data(), 1, t, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      api.send(user.data(), 1, t, 0, 0, MPI_COMM_WORLD);
    }
    out->push_back((now() - start) / (pingpong ? 2 : 1));
  }
  api.free(&t);
}

// What Loom adds to a call it leaves to the host because the call's type is not planned yet
// (docs/commit.md, "Lazy planning"). Each type lives 100 calls, far below what would pay for its
// plan, so Loom's calls all take the unplanned path; batches alternate host, Loom, Loom, host.
// Each call is timed alone: the minimum is the cost on a warm, undisturbed core (what Loom's own
// instructions add), the median what a loaded machine made of it.
int run_unplanned(bool quick) {
  int rank = 0, ranks = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  const int batches = quick ? 20 : 200, calls = 100;
  uint64_t planned_before = 0, planned_after = 0, reused = 0;
  loom_get_counter("types.planning.decoded", &planned_before);
  loom_get_counter("types.planning.reused", &reused);
  planned_before += reused;
  if (rank == 0)
    std::printf("per call, ns (%d calls each)                      %9s %9s %9s %9s %9s %9s\n",
                batches * calls, "host min", "loom min", "added", "host med", "loom med", "added");
  for (const bool pingpong : {false, true}) {
    if (pingpong && ranks < 2) break;
    for (const int blocks : {16, 256}) {
      std::vector<double> host, loom;
      for (int b = 0; b < batches; ++b)
        for (int k = 0; k < 2; ++k) {
          const bool use_host = (k == 0) == (b % 2 == 0);
          unplanned_batch(use_host ? host_api() : loom_api(), rank, blocks, calls, pingpong, b,
                          use_host ? &host : &loom);
        }
      const double h_min = *std::min_element(host.begin(), host.end());
      const double l_min = *std::min_element(loom.begin(), loom.end());
      const double h = median(host), l = median(loom);
      if (rank == 0) {
        char what[96];
        std::snprintf(what, sizeof what, "%s, indexed_block(%d x 1 int)",
                      pingpong ? "MPI_Send/MPI_Recv one way" : "MPI_Pack", blocks);
        std::printf("%-48s %9.1f %9.1f %9.1f %9.1f %9.1f %9.1f\n", what, h_min * 1e9, l_min * 1e9,
                    (l_min - h_min) * 1e9, h * 1e9, l * 1e9, (l - h) * 1e9);
      }
    }
  }
  loom_get_counter("types.planning.decoded", &planned_after);
  loom_get_counter("types.planning.reused", &reused);
  planned_after += reused;
  if (rank == 0 && planned_after != planned_before)
    std::printf(
        "note: Loom planned %llu of these types (their host time paid for a plan): the "
        "figures mix both paths\n",
        static_cast<unsigned long long>(planned_after - planned_before));
  return 0;
}

// What planning a type costs Loom (docs/commit.md): an indexed-block type of `blocks` floats with
// gaps of 1-4 floats (a mesh's interface points, as SPECFEM3D's), and an indexed type of blocks of
// 1-4 floats with such gaps (an unstructured code's halo), new displacements each time so that no
// plan is found by signature, planned through loom_type_is_accelerated; the median and the
// fastest of `reps` plans, and per block.
int run_plans(bool quick) {
  const int reps = quick ? 10 : 60;
  for (const bool varying : {false, true}) {
    std::printf("%-36s %12s %12s %14s\n",
                varying ? "plan of indexed(n x 1-4 floats)" : "plan of indexed_block(n x 1 float)",
                "median us", "fastest us", "median ns/block");
    for (const int blocks : {256, 4096, 65536}) {
      std::vector<int> displacements(static_cast<size_t>(blocks)), lengths(displacements.size(), 1);
      std::mt19937 random(12345);
      int at = 0;
      for (size_t i = 0; i < displacements.size(); ++i) {
        if (varying) lengths[i] = 1 + static_cast<int>(random() % 4);
        displacements[i] = at += (i ? lengths[i - 1] : 0) + static_cast<int>(random() % 4);
      }
      std::vector<double> took;
      for (int r = 0; r < reps; ++r) {
        displacements[0] = r;  // a new signature: built, not reused
        MPI_Datatype t;
        if (varying)
          MPI_Type_indexed(blocks, lengths.data(), displacements.data(), MPI_FLOAT, &t);
        else
          MPI_Type_create_indexed_block(blocks, 1, displacements.data(), MPI_FLOAT, &t);
        MPI_Type_commit(&t);
        const double start = now();
        const int accelerated = loom_type_is_accelerated(t);
        took.push_back(now() - start);
        MPI_Type_free(&t);
        if (!accelerated) {
          std::fprintf(stderr,
                       "commit-cost: Loom did not plan a type of %d blocks (LOOM_DISABLE?)\n",
                       blocks);
          return 1;
        }
      }
      char what[64];
      std::snprintf(what, sizeof what, "n = %d", blocks);
      const double m = median(took);
      std::printf("%-36s %12.1f %12.1f %14.1f\n", what, m * 1e6,
                  *std::min_element(took.begin(), took.end()) * 1e6, m * 1e9 / blocks);
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = false, churn = false, unplanned = false, plans = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--quick"))
      quick = true;
    else if (!std::strcmp(argv[i], "--churn"))
      churn = true;
    else if (!std::strcmp(argv[i], "--unplanned"))
      unplanned = true;
    else if (!std::strcmp(argv[i], "--plan"))
      plans = true;
    else {
      std::fprintf(stderr, "usage: commit-cost [--quick] [--churn | --unplanned | --plan]\n");
      return 2;
    }
  }
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int rc = 0;
  if (churn)
    rc = run_churn(quick);
  else if (unplanned)
    rc = run_unplanned(quick);
  else if (plans)
    rc = rank == 0 ? run_plans(quick) : 0;
  else if (rank == 0)
    rc = run_commits(quick);
  MPI_Finalize();
  return rc;
}
