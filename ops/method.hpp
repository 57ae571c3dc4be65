// Per-message method choice for derived-type communication: host-native or
// pack-then-send. Decisions are cached in the type's plan per traffic, locality and
// message-size bucket, so after the first message of a kind a decision is one relaxed load.
#pragma once

#include <atomic>
#include <bit>
#include <cstdint>
#include <optional>
#include <string>

#include "model/model.hpp"
#include "mpi/host_identity.hpp"
#include "mpi/type_registry.hpp"
#include "runtime/runtime.hpp"

namespace loom::ops {

// LOOM_METHOD=host|pack forces a method; auto (the default) asks the model, which is
// loaded from calibration_path() on first use. In auto mode an empty message goes to the
// host (there is nothing to pack). The model decides each bucket of message sizes
// (bytes of the same bit width) once, at the bucket's smallest size (a power of two), so
// the decision does not depend on which size of the bucket came first.
model::Method choose_method(const mpi::TypePlan& type, int64_t message_bytes, model::Locality where,
                            model::Traffic traffic);

// Messages are also timed: blocking sends (MPI_Send, MPI_Ssend) from call to return,
// blocking receives (MPI_Recv) and exchange messages (MPI_Isend, MPI_Issend, MPI_Irecv) by
// the interval from their post to the kind's next post (MethodTrial::next_at). With the model in
// charge (LOOM_METHOD=auto, nothing pinned) and LOOM_ONLINE not 0, the first messages of each kind
// (datatype, traffic, side, locality, size bucket) try both methods (model/trial.hpp) and
// the kind then settles on the faster, which is the model's choice unless the other method
// was consistently faster. Outside their own schedule, sends of a kind the process also
// receives follow the receives' decision. `trial_slot` >= 0: this blocking send's
// duration must go to report_trial (messages timed by interval are timed here). An untimed call
// (`timed` false: a buffered or ready send, a matched receive, a persistent or send-receive
// call) takes the settled method, or the model's while the kind is still being tried.
enum class Side : uint8_t { Send, Receive };
struct OnlineChoice {
  model::Method method;
  int trial_slot;  // >= 0: this message's place in the kind's trial, to report
};
namespace detail {
// A settled slot (mpi::TypePlan::settled): 1 + the method in the low byte, the kind's messages
// left before its next re-check above it.
constexpr uint32_t kMethodBits = 0xff, kOneMessage = 0x100;
extern std::atomic<int> pinned_method;  // -1: not pinned, else a model::Method
OnlineChoice choose_online_slow(const mpi::TypePlan& type, int64_t message_bytes,
                                model::Locality where, model::Traffic traffic, Side side,
                                bool timed);
}  // namespace detail
// Inline for settled kinds between re-checks, which is nearly every message: two loads and a
// store, no call.
[[gnu::always_inline]] inline OnlineChoice choose_online(const mpi::TypePlan& type,
                                                         int64_t message_bytes,
                                                         model::Locality where,
                                                         model::Traffic traffic, Side side,
                                                         bool timed) {
  if (runtime::config().online && message_bytes > 0 &&
      detail::pinned_method.load(std::memory_order_relaxed) < 0) {
    const int bucket = std::bit_width(static_cast<uint64_t>(message_bytes));
    auto& settled = type.settled[static_cast<int>(traffic)][static_cast<int>(where)];
    auto& mine_slot = settled[static_cast<int>(side)][bucket];
    const uint32_t mine = mine_slot.load(std::memory_order_relaxed);
    if (mine >= detail::kOneMessage) {
      // As in the slow path: a send follows its receives' verdict (method.cpp).
      const uint32_t received =
          side == Side::Send
              ? settled[static_cast<int>(Side::Receive)][bucket].load(std::memory_order_relaxed) &
                    detail::kMethodBits
              : 0;
      mine_slot.store(mine - detail::kOneMessage, std::memory_order_relaxed);
      return {static_cast<model::Method>((received ? received : mine & detail::kMethodBits) - 1),
              -1};
    }
  }
  return detail::choose_online_slow(type, message_bytes, where, traffic, side, timed);
}
void report_trial(const mpi::TypePlan& type, int64_t message_bytes, model::Locality where,
                  model::Traffic traffic, Side side, model::MethodTrial::Ticket ticket,
                  double seconds);

// Pins every choice of this process to `method` (nullopt: back to LOOM_METHOD and the
// model). `loom-bench measure` times Loom's own pack path with it; it takes precedence
// over LOOM_METHOD.
void pin_method(std::optional<model::Method> method);

// The model in use: calibrated from calibration_path(), or the built-in rule when that
// file is missing or invalid (said once per job under LOOM_VERBOSE). Loaded on first call;
// thread-safe.
const model::Model& method_model();
// Loads the model now when the choice is left to it. MPI_Init calls this, so that reading
// the calibration (parsing and validating a file of about 100 KB) is not paid inside the first
// message; and under LOOM_METHOD=pack it has every type planned at its first use
// (mpi::plan_at_first_use).
void preload_method_model();

// loom_method_for (loom.h): the method a blocking send of `count` elements of `type` would take.
int method_for(MPI_Datatype type, int count, int peer_same_node);

// $LOOM_CACHE_DIR/calibration-<family>.json; the directory defaults to
// $XDG_CACHE_HOME/loom, else $HOME/.cache/loom. Empty when none of them is set.
std::string calibration_path();

}  // namespace loom::ops
