// Loom's per-datatype plans: recorded at MPI_Type_commit, built once the type has earned its
// plan (lazy planning, docs/commit.md) or on its first use (LOOM_PLAN=eager), shared by types of
// the same signature, released at MPI_Type_free.
#pragma once

#include <mpi.h>

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "model/model.hpp"
#include "model/trial.hpp"
#include "pack/plan.hpp"

namespace loom::mpi {

// Where one element's data lies: [true_lb, true_lb + true_extent) from its origin, as the host's
// MPI_Type_get_true_extent says.
struct TrueBounds {
  int64_t lb = 0;
  int64_t extent = 0;
};

struct TypePlan {
  TypePlan(pack::Plan p, std::string text, model::TypeShape type_shape, bool mixed,
           MPI_Datatype basic = MPI_DATATYPE_NULL, TrueBounds bounds = {})
      : plan(std::move(p)),
        describe(std::move(text)),
        shape(type_shape),
        mixed_basic_types(mixed),
        basic_type(basic),
        true_bounds(bounds) {}
  pack::Plan plan;
  std::string describe;
  model::TypeShape shape;  // what the method model keys on
  // More than one basic type in the typemap. MPICH 4.0 cannot receive a contiguous
  // message of over ~8 KiB into such a type, so Loom does not send these packed there.
  bool mixed_basic_types;
  // The typemap's one basic type (MPI_DATATYPE_NULL: none, several, or a pair type): one-sided
  // calls serve an origin and a target only when theirs agree (ops/rma.hpp).
  MPI_Datatype basic_type;
  TrueBounds true_bounds;
  // Cached method decisions per traffic, locality and log2(message bytes): 0 = not decided
  // yet, otherwise 1 + model::Method.
  mutable std::atomic<uint8_t> decisions[model::kTraffics][model::kLocalities][64] = {};
  // Online trials (ops/method.hpp) per traffic, locality, side (send, receive) and
  // log2(message bytes): settled[...] is 0 while a kind's first trial runs; once settled, 1 +
  // model::Method in its low byte and, above it, the kind's messages left before its next
  // re-check (MethodTrial::recheck_point), counted down in the word the settled path reads
  // anyway; none left while a re-check or confirmation of that verdict runs. The trials
  // themselves live under trial_mutex.
  mutable std::atomic<uint32_t> settled[model::kTraffics][model::kLocalities][2][64] = {};
  // Messages left in each kind's wait before its trial starts (MethodTrial::wait_for), counted
  // down without trial_mutex; its top bit (ops::kWarmupStopped) set once the host's warm-up
  // stopped early (MethodTrial::gauge_warmup).
  mutable std::atomic<uint32_t> wait_left[model::kTraffics][model::kLocalities][2][64] = {};
  mutable std::mutex trial_mutex;
  mutable std::map<int, model::MethodTrial> trials;
  // Point-to-point messages routed with this plan (count_planned_message), whichever handle
  // carries it: how long a type lived once planned, which lazy planning's expected life learns
  // from (docs/commit.md). Its own cache line: the per-message reads above stay shared.
  alignas(64) mutable std::atomic<uint64_t> messages{0};
};

// A message of a planned type (ops/p2p.cpp). Relaxed, not a read-modify-write: a lost update under
// MPI_THREAD_MULTIPLE shortens a recorded life, which only delays later plans.
[[gnu::always_inline]] inline void count_planned_message(const TypePlan& plan) {
  plan.messages.store(plan.messages.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}

// A committed derived type Loom has not planned yet: the host serves its messages as written,
// and the time their host calls took adds up here until it pays for the plan (lazy planning,
// docs/commit.md). Lock-free: plain loads and stores below MPI_THREAD_MULTIPLE, a heuristic
// above it (a lost update delays the plan, never changes a result).
struct UnplannedType {
  static constexpr uintptr_t kEmpty = 0, kFreed = 1;
  std::atomic<uintptr_t> key{kEmpty};        // the handle this record counts for (handle_key)
  std::atomic<uint64_t> host_ticks{0};       // host time of its calls so far (host_clock ticks)
  std::atomic<uint64_t> budget_ticks{0};     // host time that pays its plan; 0: not estimated yet
  std::atomic<uint64_t> element_bytes{0};    // MPI_Type_size, read with the budget
  std::atomic<uint64_t> element_entries{0};  // its description's entries, read with the budget
  std::atomic<uint64_t> predicted_ns{0};     // the cost model's base prediction of its plan
  std::atomic<uint64_t> predicted_reuse{0};  // 1: predicted to reuse a plan made before
  std::atomic<uint64_t> outline{0};          // its outline's hash (mpi/type_registry.cpp)
  std::atomic<uint64_t> carried_ticks{0};  // of host_ticks, what earlier types of its outline left
  std::atomic<uint64_t> uses{0};
};

inline uintptr_t handle_key(MPI_Datatype type) {
  static_assert(sizeof(MPI_Datatype) <= sizeof(uintptr_t));
  uintptr_t k = 0;
  std::memcpy(&k, &type, sizeof type);
  return k;
}

// The clock that times the host's calls of unplanned types: the CPU's time-stamp counter where
// there is one (one instruction, where steady_clock is a library call: this clock is read twice
// on every such call, docs/commit.md), else steady_clock in ns. Ticks convert to ns at
// clock_ticks_per_ns().
[[gnu::always_inline]] inline uint64_t host_clock() {
#if defined(__x86_64__) || defined(__i386__)
  return __rdtsc();
#else
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
#endif
}
namespace detail {
extern std::atomic<double> clock_rate;  // ticks per ns once measured, else 0
double measure_clock_rate();
}  // namespace detail
inline double clock_ticks_per_ns() {
  const double rate = detail::clock_rate.load(std::memory_order_relaxed);
  return rate > 0 ? rate : detail::measure_clock_rate();
}

// What Loom knows of a datatype as a call uses it: its plan; or, for a committed type not planned
// yet, its record (the host serves it, timed); or neither (the host serves it: named types Loom
// leaves to the host, undecodable types, uncommitted ones, Loom disabled).
struct TypeUse {
  const TypePlan* plan = nullptr;
  UnplannedType* unplanned = nullptr;
};

namespace detail {
// Every change to the registry bumps the epoch, which lets each thread keep its recent lookups
// without taking the registry's lock. A thread's lookups of an unplanned type stay valid while
// its record still names the handle.
extern std::atomic<uint64_t> registry_epoch;
struct LastLookup {
  MPI_Datatype type;
  uint64_t epoch;
  TypeUse use;
};
constexpr int kLookupSlots = 4;  // a call's types (send, receive, a few alternating), one each
[[gnu::tls_model("initial-exec")]] inline thread_local LastLookup last_lookups[kLookupSlots] = {
    {MPI_DATATYPE_NULL, ~uint64_t{0}, {}},
    {MPI_DATATYPE_NULL, ~uint64_t{0}, {}},
    {MPI_DATATYPE_NULL, ~uint64_t{0}, {}},
    {MPI_DATATYPE_NULL, ~uint64_t{0}, {}}};
inline LastLookup& lookup_slot(MPI_Datatype type) {
  return last_lookups[(handle_key(type) * 0x9E3779B97F4A7C15ull) >> 62];
}
TypeUse use_slow(MPI_Datatype type);
}  // namespace detail

// How a call serves `type` now. Never plans a committed derived type under lazy planning (the
// default): its calls go to the host, timed (note_host_time), until planning pays; under
// LOOM_PLAN=eager every type is planned at its first use. Named types are planned at their
// first use in both. Inline: every interposed call with a datatype asks.
[[gnu::always_inline]] inline TypeUse use_type(MPI_Datatype type) {
  const detail::LastLookup& last = detail::lookup_slot(type);
  if (last.type == type) {
    if (last.use.unplanned) {
      if (last.use.unplanned->key.load(std::memory_order_relaxed) == handle_key(type))
        return last.use;
    } else if (last.epoch == detail::registry_epoch.load(std::memory_order_acquire)) {
      return last.use;
    }
  }
  return detail::use_slow(type);
}

// The plan for `type` if Loom has one now, else null (the host serves it). Never plans a
// committed type under lazy planning: see use_type.
[[gnu::always_inline]] inline const TypePlan* find_plan(MPI_Datatype type) {
  return use_type(type).plan;
}

// The plan for `type`, planning it now if it was waiting: for calls the host cannot serve as
// written (device memory, a host bug Loom works around, messages to oneself) and Loom's own
// queries (loom_type_is_accelerated, loom_type_describe, loom_method_for).
const TypePlan* plan_now(MPI_Datatype type);

// Adds a host call's duration (host_clock ticks) to an unplanned type's record (`type` is the
// call's handle); plans the type once its host time reaches its budget. `took` may be a share of
// a call's time. A call of `elements` elements (>= 0) counts at most what the host could spend on
// them (a call's overhead, kHostNsPerByteAtMost a byte and kHostNsPerEntryAtMost an entry of the
// type's description, a proxy for its blocks): a blocking call's wait for its peer is not time
// Loom could save. Collectives (elements < 0) count their duration. Returns the ticks it counted.
uint64_t note_host_time(MPI_Datatype type, UnplannedType& record, uint64_t took, int64_t elements);

// Non-blocking messages of types not planned yet. The host may do a message's work after its
// MPI_Isend or MPI_Irecv returned, inside the completion call (MPICH and Open MPI pack and
// unpack rendezvous messages in MPI_Wait*), so timing the posting call alone would never pay
// for their plan. The request of such a message is noted in a small table of the posting
// thread, and the completion call on that thread that completes it credits the message its
// share of the call's duration, within what the host could spend on the message (the cap of
// note_host_time, less what its posting call counted). Fixed size, no allocation per message:
// a request whose slot another takes, or that another thread completes, is not credited (the
// plan comes later, never sooner).
namespace detail {
[[gnu::tls_model("initial-exec")]] inline thread_local int pending_host_messages = 0;
void note_pending_host_message(MPI_Request request, MPI_Datatype type, UnplannedType& record,
                               int64_t elements, uint64_t counted);
}  // namespace detail
inline bool host_messages_pending() {
  return detail::pending_host_messages != 0;
}
// A completion call of `took` ticks completed `completed` requests: those at `indices` (the first
// `completed` when `indices` is null) of `handles`, its `n` request handles as they were before
// it. Each of them noted above is credited an equal share of `took`, within its room.
void credit_completed(const MPI_Request* handles, int n, const int* indices, int completed,
                      uint64_t took);

// The user freed `request` (MPI_Request_free): it is no longer noted, and credits nothing.
void forget_pending_host_message(MPI_Request request);

// A non-blocking call of an unplanned type that returns a request: timed like UnplannedCall,
// and its request noted for the completion call.
template <typename Call>
int run_unplanned_nonblocking(MPI_Datatype type, UnplannedType& record, int64_t elements,
                              MPI_Request* request, Call&& call) {
  const uint64_t start = host_clock();
  const int rc = call();
  const uint64_t end = host_clock();
  const uint64_t counted = note_host_time(type, record, end > start ? end - start : 0, elements);
  if (rc == MPI_SUCCESS && request && *request != MPI_REQUEST_NULL)
    detail::note_pending_host_message(*request, type, record, elements, counted);
  return rc;
}

// The host's call for datatypes Loom has not planned yet (added with add()): run() times it and
// shares its duration between them (note_host_time); with none added, run() is the call alone.
class UnplannedCall {
 public:
  static constexpr int kMaxTypes = 4;  // a call of more such types credits the first four
  // `elements`: of `type` in this call (note_host_time), or -1 when the call does not say.
  void add(MPI_Datatype type, UnplannedType* record, int64_t elements) {
    if (added_ < kMaxTypes) types_[added_] = {type, record, elements};
    ++added_;
  }
  bool empty() const { return added_ == 0; }
  template <typename Call>
  [[gnu::always_inline]] int run(Call&& call) {
    if (empty()) return call();
    const uint64_t start = host_clock();
    const int rc = call();
    const uint64_t end = host_clock();
    credit(end > start ? end - start : 0);
    return rc;
  }

 private:
  void credit(uint64_t took) const {
    const int n = added_ < kMaxTypes ? added_ : kMaxTypes;
    for (int i = 0; i < n; ++i)
      note_host_time(types_[i].type, *types_[i].record, took / static_cast<uint64_t>(n),
                     types_[i].elements);
  }
  struct Added {
    MPI_Datatype type;
    UnplannedType* record;
    int64_t elements;
  };
  Added types_[kMaxTypes];
  int added_ = 0;
};

// Whether a call of `elements` elements of an unplanned type should plan it first: the host will
// spend at least kHostNsPerByteAtLeast a byte of this message on it, which with its time so far
// reaches the budget (a message large enough to pay for the plan alone).
constexpr double kHostNsPerByteAtLeast = 0.05;  // its bytes read and written once at memory speed
inline bool worth_planning_before(const UnplannedType& record, int64_t elements) {
  const double bytes = static_cast<double>(elements) *
                       static_cast<double>(record.element_bytes.load(std::memory_order_relaxed));
  const uint64_t budget = record.budget_ticks.load(std::memory_order_relaxed);
  return budget > 0 && static_cast<double>(record.host_ticks.load(std::memory_order_relaxed)) +
                               bytes * kHostNsPerByteAtLeast * clock_ticks_per_ns() >=
                           static_cast<double>(budget);
}

// LOOM_PLAN=eager, LOOM_METHOD=pack and loom-bench measure's pinned packing: every committed type
// planned at its first use, as before lazy planning. Any thread, any time.
void plan_at_first_use(bool on);
bool plans_at_first_use();

// MPI_Type_commit, MPI_Type_free and MPI_Type_dup of a type the host accepted.
void record_commit(MPI_Datatype type);
void forget_type(MPI_Datatype type);
void record_duplicate(MPI_Datatype oldtype, MPI_Datatype newtype);

// The plan of `type` (planned now if it was waiting: plan_now), kept alive for an operation that
// may outlive the user's MPI_Type_free (a pending or persistent request, a message to oneself).
std::shared_ptr<const TypePlan> share_plan(MPI_Datatype type);

}  // namespace loom::mpi
