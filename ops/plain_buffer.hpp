// The test both the point-to-point and the collective pass-through start from: a buffer whose
// datatype is basic or contiguous (nothing to pack) in host memory, which the host's own call
// serves as written.
#pragma once

#include <mpi.h>

#include "exec/device_memory.hpp"
#include "mpi/type_registry.hpp"

namespace loom::ops {

// Device memory never is (one load decides that where no device is possible).
[[gnu::always_inline]] inline bool plain_host_buffer(const void* buf, MPI_Datatype type) {
  const mpi::TypePlan* plan = mpi::find_plan(type);
  return plan && plan->plan.dense() && !exec::device_memory(buf);
}

}  // namespace loom::ops
