// The test the point-to-point pass-through starts from (the collectives' HostCall asks the same of
// each side, ops/coll.hpp): a buffer whose datatype is basic or contiguous (nothing to pack) in
// host memory, which the host's own call serves as written.
#pragma once

#include <mpi.h>

#include "exec/device_memory.hpp"
#include "mpi/quirks.hpp"
#include "mpi/type_registry.hpp"

namespace loom::ops {

// Device memory never is (one load decides that where no device is possible).
[[gnu::always_inline]] inline bool plain_host_buffer(const void* buf, MPI_Datatype type) {
  const mpi::TypePlan* plan = mpi::find_plan(type);
  return plan && plan->plan.dense() && !exec::device_memory(buf);
}

// A collective's block of `count` elements of `plan` that the host moves as fast as the same
// bytes, so that Loom need not pack it: one element whose data is one contiguous run, on a host
// whose collectives move such an element whole (mpi::host_moves_one_run_elements_as_bytes).
[[gnu::always_inline]] inline bool host_moves_whole(const mpi::TypePlan& plan, int64_t count) {
  return count == 1 && plan.plan.one_run() && mpi::host_moves_one_run_elements_as_bytes();
}

}  // namespace loom::ops
