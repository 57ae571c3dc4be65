// Loom's per-datatype plans: recorded at MPI_Type_commit, built on the type's first use (and
// shared by types of the same signature), released at MPI_Type_free.
#pragma once

#include <mpi.h>

#include <atomic>
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
};

namespace detail {
// Every change to the registry bumps the epoch, which lets each thread keep its last
// lookup without taking the registry's lock.
extern std::atomic<uint64_t> registry_epoch;
struct LastLookup {
  MPI_Datatype type;
  uint64_t epoch;
  const TypePlan* plan;
};
inline thread_local LastLookup last_lookup{MPI_DATATYPE_NULL, ~uint64_t{0}, nullptr};
const TypePlan* find_plan_slow(MPI_Datatype type);
}  // namespace detail

// The plan for `type`, or null when the host MPI must handle it (not committed, not
// decodable, or Loom disabled). Every type gets its plan on first use. The pointer stays
// valid until the type is freed. Inline: every interposed call with a datatype asks.
inline const TypePlan* find_plan(MPI_Datatype type) {
  const detail::LastLookup& last = detail::last_lookup;
  if (last.type == type && last.epoch == detail::registry_epoch.load(std::memory_order_acquire))
    return last.plan;
  return detail::find_plan_slow(type);
}
// MPI_Type_commit, MPI_Type_free and MPI_Type_dup of a type the host accepted.
void record_commit(MPI_Datatype type);
void forget_type(MPI_Datatype type);
void record_duplicate(MPI_Datatype oldtype, MPI_Datatype newtype);

// The same plan, kept alive for an operation that may outlive the user's MPI_Type_free
// (a pending or persistent request).
std::shared_ptr<const TypePlan> share_plan(MPI_Datatype type);

}  // namespace loom::mpi
