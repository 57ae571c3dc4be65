// One-sided communication through Loom (interpose/rma.cpp, ops/rma.hpp) against the host MPI in
// one process. Every operation (put, get, accumulate, get-accumulate) x synchronisation mode
// (fence, post/start/complete/wait, lock/unlock, lock_all with a flush per operation, lock_all
// batched) x window kind (created, allocated, shared, dynamic) x origin/target types (contiguous,
// vector, indexed_block) runs once through Loom (MPI_*) and once through the host (PMPI_*) on
// windows of the same kind and contents; window memory, origin and result buffers must agree byte
// for byte. Then bad input must give the host's error class, and (under MPI_THREAD_MULTIPLE) four
// threads per rank run 10^4 operations each under lock_all with flushes, with no lost or torn
// update.
#include <gtest/gtest.h>
#include <mpi.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "loom/loom.h"
#include "tests/mpi/gtest_mpi.hpp"
#include "tests/mpi/host_quirks.hpp"
#include "tests/mpi/loom_env.hpp"

namespace {

int g_rank = 0, g_size = 1, g_thread_level = MPI_THREAD_SINGLE;

// The calls one run makes: Loom's entry points or the host's own.
struct Api {
  const char* name;
  decltype(&MPI_Put) put;
  decltype(&MPI_Get) get;
  decltype(&MPI_Accumulate) accumulate;
  decltype(&MPI_Get_accumulate) get_accumulate;
  decltype(&MPI_Win_create) win_create;
  decltype(&MPI_Win_allocate) win_allocate;
  decltype(&MPI_Win_allocate_shared) win_allocate_shared;
  decltype(&MPI_Win_create_dynamic) win_create_dynamic;
  decltype(&MPI_Win_free) win_free;
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
  decltype(&MPI_Win_flush_local) flush_local;
  decltype(&MPI_Win_flush_local_all) flush_local_all;
};
const Api kLoom = {"loom",
                   MPI_Put,
                   MPI_Get,
                   MPI_Accumulate,
                   MPI_Get_accumulate,
                   MPI_Win_create,
                   MPI_Win_allocate,
                   MPI_Win_allocate_shared,
                   MPI_Win_create_dynamic,
                   MPI_Win_free,
                   MPI_Win_fence,
                   MPI_Win_post,
                   MPI_Win_start,
                   MPI_Win_complete,
                   MPI_Win_wait,
                   MPI_Win_lock,
                   MPI_Win_unlock,
                   MPI_Win_lock_all,
                   MPI_Win_unlock_all,
                   MPI_Win_flush,
                   MPI_Win_flush_local,
                   MPI_Win_flush_local_all};
const Api kHost = {"host",
                   PMPI_Put,
                   PMPI_Get,
                   PMPI_Accumulate,
                   PMPI_Get_accumulate,
                   PMPI_Win_create,
                   PMPI_Win_allocate,
                   PMPI_Win_allocate_shared,
                   PMPI_Win_create_dynamic,
                   PMPI_Win_free,
                   PMPI_Win_fence,
                   PMPI_Win_post,
                   PMPI_Win_start,
                   PMPI_Win_complete,
                   PMPI_Win_wait,
                   PMPI_Win_lock,
                   PMPI_Win_unlock,
                   PMPI_Win_lock_all,
                   PMPI_Win_unlock_all,
                   PMPI_Win_flush,
                   PMPI_Win_flush_local,
                   PMPI_Win_flush_local_all};

enum class Kind { Created, Allocated, Shared, Dynamic };
const char* kind_name(Kind k) {
  static const char* const kNames[] = {"created", "allocated", "shared", "dynamic"};
  return kNames[static_cast<int>(k)];
}
constexpr Kind kKinds[] = {Kind::Created, Kind::Allocated, Kind::Shared, Kind::Dynamic};

// Floats per rank's window; operations land at 0 and at kHalf.
constexpr int kWindowFloats = 16384;
constexpr int kHalf = kWindowFloats / 2;
constexpr int kSlackFloats = 1024;  // beyond a created window: room for a host's overrun

// One window of `kind` made through `api`, with every rank's base in its displacement units.
struct TestWindow {
  MPI_Win win = MPI_WIN_NULL;
  float* base = nullptr;
  std::vector<float> storage;         // created and dynamic windows
  std::vector<MPI_Aint> remote_base;  // dynamic: every rank's attached address
  int disp_unit = 4;

  TestWindow(const Api& api, Kind kind) {
    const MPI_Aint bytes = kWindowFloats * static_cast<MPI_Aint>(sizeof(float));
    remote_base.assign(static_cast<size_t>(g_size), 0);
    int rc = MPI_SUCCESS;
    switch (kind) {
      case Kind::Created:
        storage.assign(kWindowFloats + kSlackFloats, 0.0f);
        base = storage.data();
        rc = api.win_create(base, bytes, 4, MPI_INFO_NULL, MPI_COMM_WORLD, &win);
        break;
      case Kind::Allocated:
        rc = api.win_allocate(bytes, 4, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
        break;
      case Kind::Shared:
        rc = api.win_allocate_shared(bytes, 4, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
        break;
      case Kind::Dynamic: {
        storage.assign(kWindowFloats + kSlackFloats, 0.0f);
        base = storage.data();
        disp_unit = 1;
        rc = api.win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win);
        if (rc == MPI_SUCCESS) rc = MPI_Win_attach(win, base, bytes);
        MPI_Aint mine = 0;
        MPI_Get_address(base, &mine);
        PMPI_Allgather(&mine, 1, MPI_AINT, remote_base.data(), 1, MPI_AINT, MPI_COMM_WORLD);
        break;
      }
    }
    EXPECT_EQ(rc, MPI_SUCCESS) << api.name << " could not create a " << kind_name(kind)
                               << " window";
    if (win != MPI_WIN_NULL) PMPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    dynamic = kind == Kind::Dynamic;
    api_ = &api;
  }
  ~TestWindow() {
    if (win == MPI_WIN_NULL) return;
    if (dynamic) MPI_Win_detach(win, base);
    api_->win_free(&win);
  }
  TestWindow(const TestWindow&) = delete;
  TestWindow& operator=(const TestWindow&) = delete;

  // The displacement of float `index` in `target`'s window.
  MPI_Aint disp(int target, int index) const {
    return dynamic ? remote_base[static_cast<size_t>(target)] +
                         static_cast<MPI_Aint>(index) * static_cast<MPI_Aint>(sizeof(float))
                   : index;
  }

  bool dynamic = false;
  const Api* api_ = nullptr;
};

// The origin and target layouts, all of floats: most cases move kElements (short: the hosts'
// accumulates on created windows take tens of milliseconds for a few hundred floats); the one
// with both sides non-contiguous moves kLargeElements, past Loom's stack staging (2 KiB).
constexpr int kElements = 128;
constexpr int kLargeElements = 600;
struct Types {
  MPI_Datatype contiguous = MPI_DATATYPE_NULL, vector = MPI_DATATYPE_NULL,
               indexed = MPI_DATATYPE_NULL, large_vector = MPI_DATATYPE_NULL,
               large_indexed = MPI_DATATYPE_NULL;
  Types() {
    MPI_Type_contiguous(kElements, MPI_FLOAT, &contiguous);
    MPI_Type_vector(kElements, 1, 2, MPI_FLOAT, &vector);
    MPI_Type_vector(kLargeElements, 1, 2, MPI_FLOAT, &large_vector);
    indexed = irregular(kElements);
    large_indexed = irregular(kLargeElements);
    for (MPI_Datatype* t : all()) MPI_Type_commit(t);
  }
  ~Types() {
    for (MPI_Datatype* t : all()) MPI_Type_free(t);
  }
  std::array<MPI_Datatype*, 5> all() {
    return {&contiguous, &vector, &indexed, &large_vector, &large_indexed};
  }
  // indexed_block of `n` floats with irregular gaps of 0-4 floats.
  static MPI_Datatype irregular(int n) {
    std::vector<int> displs(static_cast<size_t>(n));
    int at = 0;
    for (int i = 0; i < n; ++i) {
      displs[static_cast<size_t>(i)] = at;
      at += 1 + (i * 7 + 3) % 5;
    }
    MPI_Datatype t;
    MPI_Type_create_indexed_block(n, 1, displs.data(), MPI_FLOAT, &t);
    return t;
  }
};
Types* g_types = nullptr;

// Floats an element of `type` spans.
int span_floats(MPI_Datatype type) {
  MPI_Aint lb = 0, extent = 0;
  MPI_Type_get_true_extent(type, &lb, &extent);
  return static_cast<int>((lb + extent) / static_cast<MPI_Aint>(sizeof(float)));
}

enum class Op { Put, Get, Accumulate, GetAccumulate };
const char* op_name(Op op) {
  static const char* const kNames[] = {"put", "get", "accumulate", "get_accumulate"};
  return kNames[static_cast<int>(op)];
}
enum class Sync { Fence, Pscw, Lock, LockAllFlush, LockAllBatched };
const char* sync_name(Sync s) {
  static const char* const kNames[] = {"fence", "pscw", "lock", "lock_all+flush", "lock_all"};
  return kNames[static_cast<int>(s)];
}

struct TypeCase {
  const char* name;
  MPI_Datatype Types::*origin;
  MPI_Datatype Types::*target;
};
// --types NAME,... and --syncs NAME,...: only these type cases and synchronisation modes (a
// quicker run on more ranks, or as a pass-through); default all.
std::string g_type_filter, g_sync_filter;
bool listed(const std::string& list, const char* name) {
  return list.empty() ||
         ("," + list + ",").find(std::string(",") + name + ",") != std::string::npos;
}
const TypeCase kTypeCases[] = {
    {"contiguous->contiguous", &Types::contiguous, &Types::contiguous},
    {"vector->contiguous", &Types::vector, &Types::contiguous},
    {"indexed->contiguous", &Types::indexed, &Types::contiguous},
    {"contiguous->vector", &Types::contiguous, &Types::vector},
    {"vector->indexed", &Types::large_vector, &Types::large_indexed},
};

// What one run leaves: this rank's window, origin and result buffers.
struct Outcome {
  std::vector<float> window, origin, result;
  int rc = MPI_SUCCESS;
};

// Runs `op` twice to the next rank (at floats 0 and kHalf of its window) under `sync`, every call
// through `api`, on a window of `kind` filled with this rank's pattern.
Outcome run_program(const Api& api, TestWindow& w, Op op, Sync sync, const TypeCase& tc) {
  Outcome out;
  if (w.win == MPI_WIN_NULL) {
    out.rc = MPI_ERR_WIN;
    return out;
  }
  const MPI_Datatype origin_type = g_types->*tc.origin, target_type = g_types->*tc.target;
  const int origin_span = span_floats(origin_type);
  for (int i = 0; i < kWindowFloats; ++i) w.base[i] = static_cast<float>(g_rank * 20000 + i);
  out.origin.resize(static_cast<size_t>(2 * origin_span));
  out.result.assign(out.origin.size(), -1.0f);
  for (size_t i = 0; i < out.origin.size(); ++i)
    out.origin[i] = static_cast<float>(1000000 + g_rank * 20000 + static_cast<int>(i));
  PMPI_Barrier(MPI_COMM_WORLD);

  const int target = (g_rank + 1) % g_size, source = (g_rank + g_size - 1) % g_size;
  MPI_Group world_group, target_group, source_group;
  PMPI_Comm_group(MPI_COMM_WORLD, &world_group);
  PMPI_Group_incl(world_group, 1, &target, &target_group);
  PMPI_Group_incl(world_group, 1, &source, &source_group);

  auto check = [&out](int rc) {
    if (out.rc == MPI_SUCCESS) out.rc = rc;
  };
  auto issue = [&](int k) {
    float* origin = out.origin.data() + k * origin_span;
    float* result = out.result.data() + k * origin_span;
    const MPI_Aint disp = w.disp(target, k * kHalf);
    switch (op) {
      case Op::Put:
        check(api.put(origin, 1, origin_type, target, disp, 1, target_type, w.win));
        break;
      case Op::Get:
        check(api.get(origin, 1, origin_type, target, disp, 1, target_type, w.win));
        break;
      case Op::Accumulate:
        check(api.accumulate(origin, 1, origin_type, target, disp, 1, target_type, MPI_SUM, w.win));
        break;
      case Op::GetAccumulate:
        check(api.get_accumulate(origin, 1, origin_type, result, 1, origin_type, target, disp, 1,
                                 target_type, MPI_SUM, w.win));
        break;
    }
  };
  switch (sync) {
    case Sync::Fence:
      check(api.fence(MPI_MODE_NOPRECEDE, w.win));
      issue(0);
      issue(1);
      check(api.fence(MPI_MODE_NOSUCCEED, w.win));
      break;
    case Sync::Pscw:
      check(api.post(source_group, 0, w.win));
      check(api.start(target_group, 0, w.win));
      issue(0);
      issue(1);
      check(api.complete(w.win));
      check(api.wait(w.win));
      break;
    case Sync::Lock:
      check(api.lock(MPI_LOCK_EXCLUSIVE, target, 0, w.win));
      issue(0);
      issue(1);
      check(api.unlock(target, w.win));
      break;
    case Sync::LockAllFlush:
      check(api.lock_all(0, w.win));
      issue(0);
      check(api.flush(target, w.win));
      issue(1);
      check(api.flush_local(target, w.win));
      check(api.unlock_all(w.win));
      break;
    case Sync::LockAllBatched:
      check(api.lock_all(0, w.win));
      issue(0);
      issue(1);
      check(api.flush_local_all(w.win));
      check(api.unlock_all(w.win));
      break;
  }
  PMPI_Barrier(MPI_COMM_WORLD);
  out.window.assign(w.base, w.base + kWindowFloats);
  PMPI_Group_free(&target_group);
  PMPI_Group_free(&source_group);
  PMPI_Group_free(&world_group);
  return out;
}

// The first float where two outcomes' buffers differ, as text ("" when none does).
std::string first_difference(const char* what, const std::vector<float>& loom,
                             const std::vector<float>& host) {
  if (loom.size() != host.size()) return std::string(what) + ": sizes differ";
  for (size_t i = 0; i < loom.size(); ++i)
    if (std::memcmp(&loom[i], &host[i], sizeof(float)) != 0)
      return std::string(what) + "[" + std::to_string(i) + "]: loom " + std::to_string(loom[i]) +
             ", host " + std::to_string(host[i]);
  return "";
}

// Windows live across cases (creating one per case would cost most of the test's time): one per
// kind for each path, freed when the kind is done.
TEST(Rma, EveryOperationSyncAndWindowKindMatchesTheHost) {
  for (Kind kind : kKinds) {
    TestWindow host_window(kHost, kind), loom_window(kLoom, kind);
    for (Op op : {Op::Put, Op::Get, Op::Accumulate, Op::GetAccumulate})
      for (Sync sync :
           {Sync::Fence, Sync::Pscw, Sync::Lock, Sync::LockAllFlush, Sync::LockAllBatched})
        for (const TypeCase& tc : kTypeCases) {
          if (!listed(g_type_filter, tc.name) || !listed(g_sync_filter, sync_name(sync))) continue;
          const std::string name = std::string(kind_name(kind)) + " window, " + op_name(op) + ", " +
                                   sync_name(sync) + ", " + tc.name;
          SCOPED_TRACE(name);
          const Outcome host = run_program(kHost, host_window, op, sync, tc);
          const Outcome loom = run_program(kLoom, loom_window, op, sync, tc);
          ASSERT_EQ(host.rc, MPI_SUCCESS) << "the host's own program failed";
          EXPECT_EQ(loom.rc, MPI_SUCCESS);
          // The reference moved data, so that agreement means something.
          const bool moves_into_window = op != Op::Get;
          bool changed = false;
          for (int i = 0; i < kWindowFloats && moves_into_window && !changed; ++i)
            changed = host.window[static_cast<size_t>(i)] != static_cast<float>(g_rank * 20000 + i);
          if (!moves_into_window) changed = host.origin[0] < 1000000;  // a target value landed
          EXPECT_TRUE(changed) << "the host's program left everything as it was";
          for (const std::string& diff : {first_difference("window", loom.window, host.window),
                                          first_difference("origin", loom.origin, host.origin),
                                          first_difference("result", loom.result, host.result)})
            EXPECT_EQ(diff, "");
        }
  }
}

// Loom served the derived calls above itself: copies into shared windows, packed origins and
// staged gets elsewhere (all zero when Loom is disabled).
TEST(Rma, DerivedCallsTookLoomsRoutes) {
  const char* const kRoutes[] = {"rma.put.direct",        "rma.put.packed",
                                 "rma.get.direct",        "rma.get.unpacked",
                                 "rma.accumulate.packed", "rma.get_accumulate.packed"};
  for (const char* route : kRoutes) {
    uint64_t value = 0;
    ASSERT_EQ(loom_get_counter(route, &value), 1) << route;
    if (loom::test::loom_disabled_by_env())
      EXPECT_EQ(value, 0u) << route;
    else
      EXPECT_GT(value, 0u) << route;
  }
}

// ---------------------------------------------------------------------------------------------
// Lazy planning (docs/commit.md; run without LOOM_PLAN=eager): a committed type Loom has not
// planned yet reaches the host as written, counted on the "host (not planned yet)" routes, and is
// planned once its host time pays for the plan. Rank 0 acts on rank 1's window under passive
// target synchronisation.

uint64_t counter(const std::string& name) {
  uint64_t value = 0;
  EXPECT_EQ(loom_get_counter(name.c_str(), &value), 1) << name;
  return value;
}

// Every route of one operation's counter line.
uint64_t calls_counted(const char* op) {
  uint64_t total = 0;
  for (const char* route : {"direct", "packed", "unpacked", "host", "host_(not_planned_yet)"}) {
    const std::string name = std::string("rma.") + op + "." + route;
    uint64_t value = 0;
    if (loom_get_counter(name.c_str(), &value) == 1) total += value;
  }
  return total;
}

uint64_t types_planned() {
  return counter("types.planning.decoded") + counter("types.planning.reused");
}

// Rank 1's window set to a pattern, seen by rank 0's next epoch.
void fill_window(TestWindow& w) {
  if (g_rank == 1)
    for (int i = 0; i < kWindowFloats; ++i) w.base[i] = static_cast<float>(-1 - i);
  PMPI_Barrier(MPI_COMM_WORLD);
}

// Rank 0: a put, a get, an accumulate and a get-accumulate of `type` on rank 1's window through
// `api`, one lock epoch each. `got` and `result` receive the get's and the get-accumulate's data.
void each_operation(const Api& api, TestWindow& w, MPI_Datatype type, const float* origin,
                    float* got, float* result) {
  if (g_rank != 0) return;
  const auto epoch = [&](auto&& op) {
    ASSERT_EQ(api.lock(MPI_LOCK_EXCLUSIVE, 1, 0, w.win), MPI_SUCCESS);
    EXPECT_EQ(op(), MPI_SUCCESS);
    ASSERT_EQ(api.unlock(1, w.win), MPI_SUCCESS);
  };
  epoch([&] { return api.put(origin, 1, type, 1, w.disp(1, 0), 1, type, w.win); });
  epoch([&] { return api.get(got, 1, type, 1, w.disp(1, 0), 1, type, w.win); });
  epoch([&] { return api.accumulate(origin, 1, type, 1, w.disp(1, 0), 1, type, MPI_SUM, w.win); });
  epoch([&] {
    return api.get_accumulate(origin, 1, type, result, 1, type, 1, w.disp(1, 0), 1, type, MPI_SUM,
                              w.win);
  });
}

// A fresh indexed type of many blocks used once per operation: its description alone makes its
// plan cost more than these calls, so Loom does no work on it, counts every call, and the host's
// results are Loom's.
TEST(RmaLazy, TypeUsedOnceReachesTheHostAsWritten) {
  if (g_size < 2) GTEST_SKIP() << "needs 2 ranks";
  MPI_Datatype type = Types::irregular(4096);
  MPI_Type_commit(&type);
  const int span = span_floats(type);
  ASSERT_LE(span, kWindowFloats);
  std::vector<float> origin(static_cast<size_t>(span));
  for (int i = 0; i < span; ++i) origin[static_cast<size_t>(i)] = static_cast<float>(i) + 0.5f;
  std::vector<float> got_host(origin.size(), 0), result_host(origin.size(), 0),
      got_loom(origin.size(), 0), result_loom(origin.size(), 0);
  TestWindow host_window(kHost, Kind::Allocated), loom_window(kLoom, Kind::Allocated);
  fill_window(host_window);
  fill_window(loom_window);
  const uint64_t planned_before = types_planned();
  uint64_t unplanned_before[4], counted_before[4];
  const char* const kOps[] = {"put", "get", "accumulate", "get_accumulate"};
  for (int i = 0; i < 4; ++i) {
    unplanned_before[i] = counter(std::string("rma.") + kOps[i] + ".host_(not_planned_yet)");
    counted_before[i] = calls_counted(kOps[i]);
  }
  each_operation(kHost, host_window, type, origin.data(), got_host.data(), result_host.data());
  each_operation(kLoom, loom_window, type, origin.data(), got_loom.data(), result_loom.data());
  PMPI_Barrier(MPI_COMM_WORLD);
  EXPECT_EQ(types_planned() - planned_before, 0u) << "Loom planned a type used once";
  const uint64_t calls = g_rank == 0 ? 1 : 0;
  for (int i = 0; i < 4; ++i) {
    SCOPED_TRACE(kOps[i]);
    EXPECT_EQ(
        counter(std::string("rma.") + kOps[i] + ".host_(not_planned_yet)") - unplanned_before[i],
        calls);
    EXPECT_EQ(calls_counted(kOps[i]) - counted_before[i], calls);
  }
  EXPECT_EQ(got_loom, got_host);
  EXPECT_EQ(result_loom, result_host);
  if (g_rank == 1) {
    EXPECT_EQ(std::memcmp(loom_window.base, host_window.base, kWindowFloats * sizeof(float)), 0);
  }
  bool moved = false;
  for (int i = 0; i < span && !moved; ++i) moved = got_host[static_cast<size_t>(i)] != 0;
  if (g_rank == 0) {
    EXPECT_TRUE(moved) << "the host's get moved nothing";
  }
  MPI_Type_free(&type);
}

// A vector type used for long: its puts reach the host, timed, until its plan pays; then Loom
// packs its origin, and the target's memory holds what was put.
TEST(RmaLazy, LongLivedTypeIsPlannedOnceItPays) {
  if (g_size < 2) GTEST_SKIP() << "needs 2 ranks";
  constexpr int kBlocks = 128;
  MPI_Datatype type;
  MPI_Type_vector(kBlocks, 1, 2, MPI_FLOAT, &type);
  MPI_Type_commit(&type);
  std::vector<float> origin(2 * kBlocks);
  for (int i = 0; i < 2 * kBlocks; ++i)
    origin[static_cast<size_t>(i)] = static_cast<float>(i) + 0.5f;
  TestWindow w(kLoom, Kind::Allocated);
  fill_window(w);
  const uint64_t planned_before = types_planned(), counted_before = calls_counted("put"),
                 unplanned_before = counter("rma.put.host_(not_planned_yet)");
  int puts = 0, planned = 0;
  if (g_rank == 0) {
    constexpr int kMostPuts = 20000;
    ASSERT_EQ(MPI_Win_lock_all(0, w.win), MPI_SUCCESS);
    while (!planned && puts < kMostPuts) {
      ASSERT_EQ(MPI_Put(origin.data(), 1, type, 1, w.disp(1, 0), 1, type, w.win), MPI_SUCCESS);
      ASSERT_EQ(MPI_Win_flush(1, w.win), MPI_SUCCESS);
      ++puts;
      planned = types_planned() > planned_before;
    }
    ASSERT_EQ(MPI_Win_unlock_all(w.win), MPI_SUCCESS);
    std::printf("planned after %d puts\n", puts);
    EXPECT_TRUE(planned) << "not planned after " << puts << " puts";
    EXPECT_GE(counter("rma.put.host_(not_planned_yet)") - unplanned_before, 2u)
        << "planned at its first use";
    // Fresh data through the plan, which Loom packs.
    for (int i = 0; i < 2 * kBlocks; ++i) origin[static_cast<size_t>(i)] += 1000;
    const uint64_t packed_before = counter("rma.put.packed");
    ASSERT_EQ(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 1, 0, w.win), MPI_SUCCESS);
    EXPECT_EQ(MPI_Put(origin.data(), 1, type, 1, w.disp(1, 0), 1, type, w.win), MPI_SUCCESS);
    ASSERT_EQ(MPI_Win_unlock(1, w.win), MPI_SUCCESS);
    ++puts;
    EXPECT_EQ(counter("rma.put.packed") - packed_before, 1u);
    EXPECT_EQ(calls_counted("put") - counted_before, static_cast<uint64_t>(puts));
  }
  PMPI_Barrier(MPI_COMM_WORLD);
  if (g_rank == 1) {
    for (int i = 0; i < 2 * kBlocks; ++i)
      ASSERT_EQ(w.base[i],
                i % 2 == 0 ? static_cast<float>(i) + 1000.5f : static_cast<float>(-1 - i))
          << "float " << i;
  }
  MPI_Type_free(&type);
}

// ---------------------------------------------------------------------------------------------
// Bad input: the same erroneous call through Loom and through the host gives one error class.

int error_class(int rc) {
  int cls = rc;
  if (rc != MPI_SUCCESS) MPI_Error_class(rc, &cls);
  return cls;
}

enum class Bad {
  OutsideEpoch,
  BeyondWindow,
  TypeMismatchPut,
  TypeMismatchAccumulate,
  NegativeDisp
};
const char* bad_name(Bad b) {
  static const char* const kNames[] = {"operation outside an epoch", "range beyond the window",
                                       "datatype mismatch (put)", "datatype mismatch (accumulate)",
                                       "negative displacement"};
  return kNames[static_cast<int>(b)];
}

// Whether the host survives the bad call on this kind of window: hosts that write past a shared
// segment or crash are not asked (host_quirks.hpp).
bool host_survives(Bad bad, Kind kind) {
  if (bad == Bad::BeyondWindow && kind == Kind::Shared) return loom::test::kHostChecksSharedRange;
  if (bad == Bad::BeyondWindow && kind == Kind::Allocated)
    return !loom::test::kHostCrashesOnAllocatedOverrun;
  if (bad == Bad::NegativeDisp && kind == Kind::Dynamic)
    return !loom::test::kHostCrashesOnNegativeDynamicDisp;
  return true;
}

int bad_call(const Api& api, Kind kind, Bad bad) {
  TestWindow w(api, kind);
  if (w.win == MPI_WIN_NULL) return -1;
  std::vector<float> origin(static_cast<size_t>(2 * kElements), 1.0f);
  const int target = (g_rank + 1) % g_size;
  int rc = MPI_SUCCESS;
  if (bad != Bad::OutsideEpoch) api.fence(0, w.win);
  switch (bad) {
    case Bad::OutsideEpoch:
      rc = api.put(origin.data(), 1, g_types->vector, target, w.disp(target, 0), 1,
                   g_types->contiguous, w.win);
      break;
    case Bad::BeyondWindow:
      rc = api.put(origin.data(), 1, g_types->vector, target,
                   w.disp(target, kWindowFloats - kElements / 2), 1, g_types->contiguous, w.win);
      break;
    case Bad::TypeMismatchPut:
      rc = api.put(origin.data(), 1, g_types->vector, target, w.disp(target, 0), kElements, MPI_INT,
                   w.win);
      break;
    case Bad::TypeMismatchAccumulate:
      rc = api.accumulate(origin.data(), 1, g_types->vector, target, w.disp(target, 0), kElements,
                          MPI_INT, MPI_SUM, w.win);
      break;
    case Bad::NegativeDisp:
      rc = api.put(origin.data(), 1, g_types->vector, target, -8, 1, g_types->contiguous, w.win);
      break;
  }
  api.fence(0, w.win);
  PMPI_Barrier(MPI_COMM_WORLD);
  return rc;
}

TEST(Rma, BadInputGivesTheHostsErrorClass) {
  for (Kind kind : kKinds)
    for (Bad bad : {Bad::OutsideEpoch, Bad::BeyondWindow, Bad::TypeMismatchPut,
                    Bad::TypeMismatchAccumulate, Bad::NegativeDisp}) {
      if (!host_survives(bad, kind)) continue;
      SCOPED_TRACE(std::string(kind_name(kind)) + " window, " + bad_name(bad));
      const int host = bad_call(kHost, kind, bad);
      const int loom = bad_call(kLoom, kind, bad);
      EXPECT_EQ(error_class(loom), error_class(host));
    }
}

// ---------------------------------------------------------------------------------------------
// Threads: lock_all, every operation flushed, four threads per rank.

constexpr int kThreads = 4;
constexpr int kOpsPerThread = 10000;
constexpr int kBlock = 64;  // floats a thread's put and get move (a vector origin of them)

// Each thread owns a block of the next rank's window: it puts a vector of its sequence number
// there, gets the block back through a vector origin and checks that every float is that number
// (no torn or lost put, no get unpacked late), and accumulates 1 into a counter block every
// thread of every rank adds to. At the end the counters must hold every addition.
void stress(Kind kind) {
  const Api& api = kLoom;
  TestWindow w(api, kind);
  ASSERT_NE(w.win, MPI_WIN_NULL);
  for (int i = 0; i < kWindowFloats; ++i) w.base[i] = 0.0f;
  MPI_Datatype vector;
  MPI_Type_vector(kBlock, 1, 2, MPI_FLOAT, &vector);
  MPI_Type_commit(&vector);
  PMPI_Barrier(MPI_COMM_WORLD);
  const int target = (g_rank + 1) % g_size;
  ASSERT_EQ(api.lock_all(0, w.win), MPI_SUCCESS);
  std::atomic<long> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      std::vector<float> origin(2 * kBlock), back(2 * kBlock), ones(2 * kBlock, 1.0f);
      const MPI_Aint block = w.disp(target, 1024 + t * kBlock);
      const MPI_Aint counters = w.disp(target, 0);
      for (int i = 0; i < kOpsPerThread; ++i) {
        const float value = static_cast<float>(i + 1);
        int rc = MPI_SUCCESS;
        switch (i % 3) {
          case 0:
            for (int k = 0; k < kBlock; ++k) origin[static_cast<size_t>(2 * k)] = value;
            rc = api.put(origin.data(), 1, vector, target, block, kBlock, MPI_FLOAT, w.win);
            if (rc == MPI_SUCCESS) rc = api.flush(target, w.win);
            break;
          case 1: {
            std::fill(back.begin(), back.end(), -1.0f);
            rc = api.get(back.data(), 1, vector, target, block, kBlock, MPI_FLOAT, w.win);
            if (rc == MPI_SUCCESS) rc = api.flush(target, w.win);
            const float expected = static_cast<float>(i);  // the put just before
            for (int k = 0; k < kBlock && rc == MPI_SUCCESS; ++k)
              if (back[static_cast<size_t>(2 * k)] != expected ||
                  back[static_cast<size_t>(2 * k + 1)] != -1.0f) {
                if (failures.fetch_add(1) < 5)
                  std::fprintf(stderr, "[rank %d thread %d] op %d: float %d is %g, not %g\n",
                               g_rank, t, i, k, back[static_cast<size_t>(2 * k)], expected);
                break;
              }
            break;
          }
          default:
            rc = api.accumulate(ones.data(), 1, vector, target, counters, kBlock, MPI_FLOAT,
                                MPI_SUM, w.win);
            if (rc == MPI_SUCCESS) rc = api.flush(target, w.win);
            break;
        }
        if (rc != MPI_SUCCESS && failures.fetch_add(1) < 5)
          std::fprintf(stderr, "[rank %d thread %d] op %d returned %d\n", g_rank, t, i, rc);
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(api.unlock_all(w.win), MPI_SUCCESS);
  PMPI_Barrier(MPI_COMM_WORLD);
  EXPECT_EQ(failures.load(), 0);
  const float additions = static_cast<float>(kThreads * (kOpsPerThread / 3));
  for (int k = 0; k < kBlock; ++k) EXPECT_EQ(w.base[k], additions) << "counter " << k;
  MPI_Type_free(&vector);
}

TEST(RmaThreads, LockAllWithFlushesLosesNoUpdate) {
  if (g_thread_level < MPI_THREAD_MULTIPLE) GTEST_SKIP() << "no MPI_THREAD_MULTIPLE";
  for (Kind kind : {Kind::Shared, Kind::Created}) {
    SCOPED_TRACE(kind_name(kind));
    stress(kind);
  }
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &g_thread_level);
  PMPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  PMPI_Comm_size(MPI_COMM_WORLD, &g_size);
  for (int i = 1; i + 1 < argc; ++i)
    if (std::string(argv[i]) == "--types")
      g_type_filter = argv[i + 1];
    else if (std::string(argv[i]) == "--syncs")
      g_sync_filter = argv[i + 1];
  g_types = new Types();
  if (g_rank != 0) {
    ::testing::TestEventListeners& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  ::testing::InitGoogleTest(&argc, argv);
  const int rc = loom::test::loom_active_unless_disabled() ? RUN_ALL_TESTS() : 1;
  delete g_types;
  MPI_Finalize();
  return rc;
}
