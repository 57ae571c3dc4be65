// One-sided family: the direct copies into shared-memory windows, the packed origins and staged
// gets of other windows, and the synchronisation calls that end what Loom holds (ops/rma.hpp).
#include "ops/rma.hpp"

#include <atomic>
#include <climits>
#include <cstdint>
#include <memory>
#include <vector>

#include "exec/execute.hpp"
#include "mpi/host.hpp"
#include "ops/rma_window.hpp"
#include "runtime/counters.hpp"
#include "transport/staging.hpp"

namespace loom::ops {
using namespace loom::runtime;  // NOLINT: the layers below
using mpi::host;
using mpi::TypePlan;
using rma::Held;
using rma::Window;
using rma::WindowKind;
using transport::StagingBuffer;
namespace {

// One-sided calls with a derived datatype on some side (contiguous ones are not counted): a copy
// by Loom into or out of a shared window (direct), an origin packed or a get staged by Loom with
// the host moving contiguous bytes (packed, unpacked), the host's as written, or the host's as
// written because a side's committed type is not planned yet (lazy planning, docs/commit.md).
const Counter kPutDirect = register_counter("rma", "put", "direct");
const Counter kPutPacked = register_counter("rma", "put", "packed");
const Counter kPutHost = register_counter("rma", "put", "host");
const Counter kPutUnplanned = register_counter("rma", "put", "host (not planned yet)");
const Counter kGetDirect = register_counter("rma", "get", "direct");
const Counter kGetUnpacked = register_counter("rma", "get", "unpacked");
const Counter kGetHost = register_counter("rma", "get", "host");
const Counter kGetUnplanned = register_counter("rma", "get", "host (not planned yet)");
const Counter kAccumulatePacked = register_counter("rma", "accumulate", "packed");
const Counter kAccumulateHost = register_counter("rma", "accumulate", "host");
const Counter kAccumulateUnplanned =
    register_counter("rma", "accumulate", "host (not planned yet)");
const Counter kGetAccumulatePacked = register_counter("rma", "get_accumulate", "packed");
const Counter kGetAccumulateHost = register_counter("rma", "get_accumulate", "host");
const Counter kGetAccumulateUnplanned =
    register_counter("rma", "get_accumulate", "host (not planned yet)");
const Counter kBytes = register_counter("rma", "", "bytes");
const bool kRmaFormat =
    format_area("rma", {45, nullptr, nullptr, [] { return area_total("rma") > 0; }});

enum class Path : uint8_t { Host, Direct, Packed };

// One side of an operation: `count` elements of `type` at `buf`.
struct Side {
  const void* buf;
  int count;
  MPI_Datatype type;
  const TypePlan* plan = nullptr;
  int64_t bytes() const { return static_cast<int64_t>(count) * plan->plan.size(); }
};

bool contiguous(const Side& s) {
  return s.plan && s.plan->plan.dense();
}

// Sets a side's plan, the rule p2p and MPI_Pack follow for a committed type Loom has not planned
// yet: planned now when this call's elements pay for the plan alone (worth_planning_before), else
// left to the host, whose call `timed` times towards the type's plan. The origin and result sides
// pass their buffer: device memory, which Loom's one-sided paths leave to the host, is neither
// planned for nor timed. The target's memory is the target's (`buf` null).
void resolve(Side& s, mpi::UnplannedCall& timed) {
  const mpi::TypeUse use = mpi::use_type(s.type);
  s.plan = use.plan;
  if (!use.unplanned || (s.buf && exec::device_memory(s.buf))) return;
  if (s.count > 0 && mpi::worth_planning_before(*use.unplanned, s.count))
    s.plan = mpi::plan_now(s.type);
  else
    timed.add(s.type, use.unplanned, s.count > 0 ? s.count : 0);
}

// A side Loom can move (resolved first): a type it has a plan for, a positive count, host memory.
bool servable(const Side& s) {
  return s.plan && s.count > 0 && s.buf && !exec::device_memory(s.buf);
}

// Same type signature: one basic type on both sides and as many bytes (the standard's rule for a
// put, get or accumulate; Loom then moves the origin as that many elements of the basic type).
bool signatures_agree(const Side& a, const Side& b) {
  return a.plan->basic_type != MPI_DATATYPE_NULL && a.plan->basic_type == b.plan->basic_type &&
         a.bytes() == b.bytes() && a.bytes() > 0 && a.bytes() <= INT_MAX;
}

// Elements of the basic type in `bytes`.
int basic_elements(const TypePlan& plan, int64_t bytes) {
  int size = 1;
  PMPI_Type_size(plan.basic_type, &size);
  return static_cast<int>(bytes / (size > 0 ? size : 1));
}

// Where a direct copy goes: the target's `count` elements of `plan` at `disp` units into its
// segment, when they lie wholly inside it. Null otherwise (the host judges such a call).
char* target_address(const rma::Segment* segment, MPI_Aint disp, const TypePlan& plan, int count) {
  if (!segment || !segment->base || disp < 0) return nullptr;
  int64_t offset = 0, last = 0;
  if (__builtin_mul_overflow(static_cast<int64_t>(disp), static_cast<int64_t>(segment->disp_unit),
                             &offset) ||
      __builtin_mul_overflow(static_cast<int64_t>(count - 1), plan.plan.extent(), &last))
    return nullptr;
  const int64_t lo = offset + plan.true_bounds.lb + (last < 0 ? last : 0);
  const int64_t hi = offset + plan.true_bounds.lb + plan.true_bounds.extent + (last > 0 ? last : 0);
  if (lo < 0 || hi > segment->size) return nullptr;
  return segment->base + offset;
}

// Where a side's data starts when its type is contiguous: its bytes are one run from there.
const char* first_byte(const Side& s) {
  return static_cast<const char*>(s.buf) + s.plan->true_bounds.lb;
}

// Copies `from`'s data into `to`'s places. At least one side is non-contiguous.
void copy_between(const Side& from, const Side& to) {
  KernelTimer timer(exec::kPackTime);
  char* to_buf = static_cast<char*>(const_cast<void*>(to.buf));
  if (contiguous(to)) {
    exec::pack(from.plan->plan, from.buf, from.count, to_buf + to.plan->true_bounds.lb,
               exec::MemoryKind::Host);
  } else if (contiguous(from)) {
    exec::unpack(to.plan->plan, first_byte(from), to.count, to_buf, exec::MemoryKind::Host);
  } else {
    const int64_t bytes = from.bytes();
    char on_stack[transport::kStackStagingBytes];
    StagingBuffer pooled(bytes > transport::kStackStagingBytes ? static_cast<size_t>(bytes) : 0);
    char* middle = bytes > transport::kStackStagingBytes ? pooled.data() : on_stack;
    exec::pack(from.plan->plan, from.buf, from.count, middle, exec::MemoryKind::Host);
    exec::unpack(to.plan->plan, middle, to.count, to_buf, exec::MemoryKind::Host);
  }
}

// How a put or get travels. `origin` and `target` have their plans set when this returns
// anything but Host; a side not planned yet is in `timed` (the host's call times it).
Path choose(Window* w, Side& origin, Side& target, int target_rank, MPI_Aint target_disp,
            char** direct_at, mpi::UnplannedCall& timed) {
  if (!w || target_rank == MPI_PROC_NULL) return Path::Host;
  resolve(origin, timed);
  resolve(target, timed);
  if (!servable(origin) || !target.plan || target.count <= 0 || !signatures_agree(origin, target))
    return Path::Host;
  if (w->kind() == WindowKind::Shared) {
    *direct_at = target_address(w->segment(target_rank), target_disp, *target.plan, target.count);
    return *direct_at && w->may_access(target_rank) ? Path::Direct : Path::Host;
  }
  return contiguous(origin) ? Path::Host : Path::Packed;
}

// Whether a call involves a derived datatype, and so is counted: some side's type not contiguous
// (or not known to Loom, or not planned yet). Plans nothing.
bool derived(MPI_Datatype type) {
  const TypePlan* plan = mpi::find_plan(type);
  return !plan || !plan->plan.dense();
}

// Counts a call the host serves as written: on `unplanned` when a side waits for its plan (its
// time is in `timed`), else on `host` when some side is derived.
void count_host(const mpi::UnplannedCall& timed, bool derived_side, Counter host,
                Counter unplanned) {
  if (config().disabled) return;
  if (!timed.empty())
    count(unplanned);
  else if (derived_side)
    count(host);
}

StagingBuffer pack_origin(const Side& origin) {
  StagingBuffer packed(static_cast<size_t>(origin.bytes()));
  KernelTimer timer(exec::kPackTime);
  exec::pack(origin.plan->plan, origin.buf, origin.count, packed.data(), exec::MemoryKind::Host);
  return packed;
}

// The window's group ranks of `group`'s members (MPI_Win_start's targets).
std::vector<int> window_ranks(MPI_Group group, MPI_Win win) {
  int n = 0;
  if (PMPI_Group_size(group, &n) != MPI_SUCCESS || n <= 0) return {};
  MPI_Group window_group = MPI_GROUP_NULL;
  if (PMPI_Win_get_group(win, &window_group) != MPI_SUCCESS) return {};
  std::vector<int> ranks(static_cast<size_t>(n)), translated(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) ranks[static_cast<size_t>(i)] = i;
  if (PMPI_Group_translate_ranks(group, n, ranks.data(), window_group, translated.data()) !=
      MPI_SUCCESS)
    translated.clear();
  PMPI_Group_free(&window_group);
  return translated;
}

}  // namespace

int put(const void* origin_buf, int origin_count, MPI_Datatype origin_type, int target_rank,
        MPI_Aint target_disp, int target_count, MPI_Datatype target_type, MPI_Win win) {
  Window* w = rma::find_window(win);
  Side origin{origin_buf, origin_count, origin_type};
  Side target{nullptr, target_count, target_type};
  char* at = nullptr;
  mpi::UnplannedCall timed;
  switch (choose(w, origin, target, target_rank, target_disp, &at, timed)) {
    case Path::Direct: {
      target.buf = at;
      copy_between(origin, target);
      // Loom's stores are the put: ordered before whatever synchronisation follows.
      std::atomic_thread_fence(std::memory_order_release);
      count_call(kPutDirect, kBytes, static_cast<uint64_t>(origin.bytes()));
      return MPI_SUCCESS;
    }
    case Path::Packed: {
      StagingBuffer packed = pack_origin(origin);
      const int rc = host().Put(packed.data(), basic_elements(*origin.plan, origin.bytes()),
                                origin.plan->basic_type, target_rank, target_disp, target_count,
                                target_type, win);
      if (rc != MPI_SUCCESS) return rc;
      count_call(kPutPacked, kBytes, static_cast<uint64_t>(origin.bytes()));
      w->hold({target_rank, std::move(packed), StagingBuffer(), nullptr, nullptr, 0});
      return rc;
    }
    case Path::Host:
      break;
  }
  count_host(timed, derived(origin_type) || derived(target_type), kPutHost, kPutUnplanned);
  return timed.run([&] {
    return host().Put(origin_buf, origin_count, origin_type, target_rank, target_disp, target_count,
                      target_type, win);
  });
}

int get(void* origin_buf, int origin_count, MPI_Datatype origin_type, int target_rank,
        MPI_Aint target_disp, int target_count, MPI_Datatype target_type, MPI_Win win) {
  Window* w = rma::find_window(win);
  Side origin{origin_buf, origin_count, origin_type};
  Side target{nullptr, target_count, target_type};
  char* at = nullptr;
  mpi::UnplannedCall timed;
  switch (choose(w, origin, target, target_rank, target_disp, &at, timed)) {
    case Path::Direct: {
      target.buf = at;
      // Whatever the epoch's opening made visible is what Loom's loads see.
      std::atomic_thread_fence(std::memory_order_acquire);
      copy_between(target, origin);
      count_call(kGetDirect, kBytes, static_cast<uint64_t>(origin.bytes()));
      return MPI_SUCCESS;
    }
    case Path::Packed: {
      std::shared_ptr<const TypePlan> shared = mpi::share_plan(origin_type);
      if (!shared) break;
      StagingBuffer landing(static_cast<size_t>(origin.bytes()));
      const int rc = host().Get(landing.data(), basic_elements(*origin.plan, origin.bytes()),
                                origin.plan->basic_type, target_rank, target_disp, target_count,
                                target_type, win);
      if (rc != MPI_SUCCESS) return rc;
      count_call(kGetUnpacked, kBytes, static_cast<uint64_t>(origin.bytes()));
      w->hold({target_rank, StagingBuffer(), std::move(landing), std::move(shared), origin_buf,
               origin_count});
      return rc;
    }
    case Path::Host:
      break;
  }
  count_host(timed, derived(origin_type) || derived(target_type), kGetHost, kGetUnplanned);
  return timed.run([&] {
    return host().Get(origin_buf, origin_count, origin_type, target_rank, target_disp, target_count,
                      target_type, win);
  });
}

// Accumulates: the host applies the operation (and keeps its element-wise atomicity) on every
// window; Loom packs a non-contiguous origin at the call.
int accumulate(const void* origin_buf, int origin_count, MPI_Datatype origin_type, int target_rank,
               MPI_Aint target_disp, int target_count, MPI_Datatype target_type, MPI_Op op,
               MPI_Win win) {
  Window* w = rma::find_window(win);
  Side origin{origin_buf, origin_count, origin_type};
  Side target{nullptr, target_count, target_type};
  mpi::UnplannedCall timed;
  if (w && target_rank != MPI_PROC_NULL) {
    resolve(origin, timed);
    resolve(target, timed);
    if (servable(origin) && !contiguous(origin) && target.plan && target.count > 0 &&
        signatures_agree(origin, target)) {
      StagingBuffer packed = pack_origin(origin);
      const int rc = host().Accumulate(packed.data(), basic_elements(*origin.plan, origin.bytes()),
                                       origin.plan->basic_type, target_rank, target_disp,
                                       target_count, target_type, op, win);
      if (rc != MPI_SUCCESS) return rc;
      count_call(kAccumulatePacked, kBytes, static_cast<uint64_t>(origin.bytes()));
      w->hold({target_rank, std::move(packed), StagingBuffer(), nullptr, nullptr, 0});
      return rc;
    }
  }
  count_host(timed, derived(origin_type) || derived(target_type), kAccumulateHost,
             kAccumulateUnplanned);
  return timed.run([&] {
    return host().Accumulate(origin_buf, origin_count, origin_type, target_rank, target_disp,
                             target_count, target_type, op, win);
  });
}

// A get-accumulate's origin is packed at the call when it is non-contiguous, and its result lands
// in staging, unpacked at completion, when that is; with MPI_NO_OP the origin is not read.
int get_accumulate(const void* origin_buf, int origin_count, MPI_Datatype origin_type,
                   void* result_buf, int result_count, MPI_Datatype result_type, int target_rank,
                   MPI_Aint target_disp, int target_count, MPI_Datatype target_type, MPI_Op op,
                   MPI_Win win) {
  Window* w = rma::find_window(win);
  Side origin{origin_buf, origin_count, origin_type};
  Side result{result_buf, result_count, result_type};
  Side target{nullptr, target_count, target_type};
  const bool reads_origin = op != MPI_NO_OP;
  mpi::UnplannedCall timed;
  if (w && target_rank != MPI_PROC_NULL) {
    resolve(result, timed);
    if (reads_origin) resolve(origin, timed);
    resolve(target, timed);
  }
  if (w && target_rank != MPI_PROC_NULL && servable(result) &&
      (!reads_origin || servable(origin))) {
    const bool pack = reads_origin && !contiguous(origin);
    const bool land = !contiguous(result);
    std::shared_ptr<const TypePlan> shared = land ? mpi::share_plan(result_type) : nullptr;
    if (target.plan && target.count > 0 && (pack || land) && (!land || shared) &&
        signatures_agree(result, target) && (!reads_origin || signatures_agree(origin, target))) {
      Held held{target_rank, StagingBuffer(), StagingBuffer(), nullptr, nullptr, 0};
      const void* send = origin_buf;
      int send_count = origin_count;
      MPI_Datatype send_type = origin_type;
      if (pack) {
        held.packed = pack_origin(origin);
        send = held.packed.data();
        send_count = basic_elements(*origin.plan, origin.bytes());
        send_type = origin.plan->basic_type;
      }
      void* receive = result_buf;
      int receive_count = result_count;
      MPI_Datatype receive_type = result_type;
      if (land) {
        held.landing = StagingBuffer(static_cast<size_t>(result.bytes()));
        held.landing_type = std::move(shared);
        held.user = result_buf;
        held.count = result_count;
        receive = held.landing.data();
        receive_count = basic_elements(*result.plan, result.bytes());
        receive_type = result.plan->basic_type;
      }
      const int rc =
          host().Get_accumulate(send, send_count, send_type, receive, receive_count, receive_type,
                                target_rank, target_disp, target_count, target_type, op, win);
      if (rc != MPI_SUCCESS) return rc;
      count_call(kGetAccumulatePacked, kBytes, static_cast<uint64_t>(result.bytes()));
      w->hold(std::move(held));
      return rc;
    }
  }
  count_host(timed,
             (reads_origin && derived(origin_type)) || derived(result_type) || derived(target_type),
             kGetAccumulateHost, kGetAccumulateUnplanned);
  return timed.run([&] {
    return host().Get_accumulate(origin_buf, origin_count, origin_type, result_buf, result_count,
                                 result_type, target_rank, target_disp, target_count, target_type,
                                 op, win);
  });
}

int rput(const void* origin, int origin_count, MPI_Datatype origin_type, int target_rank,
         MPI_Aint target_disp, int target_count, MPI_Datatype target_type, MPI_Win win,
         MPI_Request* request) {
  if (!config().disabled && (derived(origin_type) || derived(target_type))) count(kPutHost);
  return host().Rput(origin, origin_count, origin_type, target_rank, target_disp, target_count,
                     target_type, win, request);
}

int rget(void* origin, int origin_count, MPI_Datatype origin_type, int target_rank,
         MPI_Aint target_disp, int target_count, MPI_Datatype target_type, MPI_Win win,
         MPI_Request* request) {
  if (!config().disabled && (derived(origin_type) || derived(target_type))) count(kGetHost);
  return host().Rget(origin, origin_count, origin_type, target_rank, target_disp, target_count,
                     target_type, win, request);
}

int raccumulate(const void* origin, int origin_count, MPI_Datatype origin_type, int target_rank,
                MPI_Aint target_disp, int target_count, MPI_Datatype target_type, MPI_Op op,
                MPI_Win win, MPI_Request* request) {
  if (!config().disabled && (derived(origin_type) || derived(target_type))) count(kAccumulateHost);
  return host().Raccumulate(origin, origin_count, origin_type, target_rank, target_disp,
                            target_count, target_type, op, win, request);
}

int rget_accumulate(const void* origin, int origin_count, MPI_Datatype origin_type, void* result,
                    int result_count, MPI_Datatype result_type, int target_rank,
                    MPI_Aint target_disp, int target_count, MPI_Datatype target_type, MPI_Op op,
                    MPI_Win win, MPI_Request* request) {
  if (!config().disabled &&
      ((op != MPI_NO_OP && derived(origin_type)) || derived(result_type) || derived(target_type)))
    count(kGetAccumulateHost);
  return host().Rget_accumulate(origin, origin_count, origin_type, result, result_count,
                                result_type, target_rank, target_disp, target_count, target_type,
                                op, win, request);
}

int win_create(void* base, MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm,
               MPI_Win* win) {
  const int rc = host().Win_create(base, size, disp_unit, info, comm, win);
  if (rc == MPI_SUCCESS && win) rma::add_window(*win, WindowKind::Created, comm);
  return rc;
}

int win_allocate(MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm, void* baseptr,
                 MPI_Win* win) {
  const int rc = host().Win_allocate(size, disp_unit, info, comm, baseptr, win);
  if (rc == MPI_SUCCESS && win) rma::add_window(*win, WindowKind::Allocated, comm);
  return rc;
}

int win_allocate_shared(MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm, void* baseptr,
                        MPI_Win* win) {
  const int rc = host().Win_allocate_shared(size, disp_unit, info, comm, baseptr, win);
  if (rc == MPI_SUCCESS && win) rma::add_window(*win, WindowKind::Shared, comm);
  return rc;
}

int win_create_dynamic(MPI_Info info, MPI_Comm comm, MPI_Win* win) {
  const int rc = host().Win_create_dynamic(info, comm, win);
  if (rc == MPI_SUCCESS && win) rma::add_window(*win, WindowKind::Dynamic, comm);
  return rc;
}

int win_free(MPI_Win* win) {
  std::unique_ptr<Window> w = win ? rma::remove_window(*win) : nullptr;
  const int rc = host().Win_free(win);
  if (w && rc == MPI_SUCCESS) w->drop_held();
  if (w && rc != MPI_SUCCESS) rma::restore_window(std::move(w));
  return rc;
}

namespace {

// The host's synchronisation call `call`, which completes the window's operations to `target`
// (rma::kAllTargets: to every target): what Loom staged for those operations finishes with it,
// and `then` records the epoch's change once it succeeded. A window Loom does not know is the
// host's alone.
template <typename Call, typename Then>
int complete_with(MPI_Win win, int target, Call&& call, Then&& then) {
  Window* w = rma::find_window(win);
  if (!w) return call();
  const int rc = w->complete(target, call);
  if (rc == MPI_SUCCESS) then(*w);
  return rc;
}

// A call that opens an epoch: recorded once the host's call succeeded.
template <typename Call, typename Then>
int open_with(MPI_Win win, Call&& call, Then&& then) {
  const int rc = call();
  if (Window* w = rma::find_window(win); w && rc == MPI_SUCCESS) then(*w);
  return rc;
}

constexpr auto kNothingMore = [](Window&) {};

}  // namespace

int win_fence(int assert_flags, MPI_Win win) {
  return complete_with(
      win, rma::kAllTargets, [&] { return host().Win_fence(assert_flags, win); },
      [&](Window& w) { w.fenced(assert_flags); });
}

int win_start(MPI_Group group, int assert_flags, MPI_Win win) {
  return open_with(
      win, [&] { return host().Win_start(group, assert_flags, win); },
      [&](Window& w) { w.started(window_ranks(group, win)); });
}

int win_complete(MPI_Win win) {
  return complete_with(
      win, rma::kAllTargets, [&] { return host().Win_complete(win); },
      [](Window& w) { w.completed(); });
}

int win_lock(int lock_type, int rank, int assert_flags, MPI_Win win) {
  return open_with(
      win, [&] { return host().Win_lock(lock_type, rank, assert_flags, win); },
      [&](Window& w) { w.locked(rank); });
}

int win_unlock(int rank, MPI_Win win) {
  return complete_with(
      win, rank, [&] { return host().Win_unlock(rank, win); },
      [&](Window& w) { w.unlocked(rank); });
}

int win_lock_all(int assert_flags, MPI_Win win) {
  return open_with(
      win, [&] { return host().Win_lock_all(assert_flags, win); },
      [](Window& w) { w.locked_all(); });
}

int win_unlock_all(MPI_Win win) {
  return complete_with(
      win, rma::kAllTargets, [&] { return host().Win_unlock_all(win); },
      [](Window& w) { w.unlocked_all(); });
}

int win_flush(int rank, MPI_Win win) {
  return complete_with(
      win, rank, [&] { return host().Win_flush(rank, win); }, kNothingMore);
}

int win_flush_all(MPI_Win win) {
  return complete_with(
      win, rma::kAllTargets, [&] { return host().Win_flush_all(win); }, kNothingMore);
}

int win_flush_local(int rank, MPI_Win win) {
  return complete_with(
      win, rank, [&] { return host().Win_flush_local(rank, win); }, kNothingMore);
}

int win_flush_local_all(MPI_Win win) {
  return complete_with(
      win, rma::kAllTargets, [&] { return host().Win_flush_local_all(win); }, kNothingMore);
}

}  // namespace loom::ops
