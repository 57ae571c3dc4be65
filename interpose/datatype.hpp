// Loom's per-datatype plans, built at MPI_Type_commit and released at MPI_Type_free.
#pragma once

#include <mpi.h>

#include <memory>

#include "pack/plan.hpp"

namespace loom::interpose {

struct TypePlan {
  pack::Plan plan;
  std::string describe;
};

// The plan for `type`, or null when the host MPI must handle it (not committed, not
// decodable, or Loom disabled). Named types get a plan on first use. The pointer stays
// valid until the type is freed.
const TypePlan* find_plan(MPI_Datatype type);

}  // namespace loom::interpose
