// MPI_Type_* family: Loom records a type at commit, forgets it at free and shares its plan at dup
// (mpi/type_registry.hpp: the type is planned once its host time pays for it); the host does the
// rest.
#include <string>

#include "interpose/text_out.hpp"
#include "loom/loom.h"
#include "mpi/host.hpp"
#include "mpi/type_registry.hpp"
#include "runtime/runtime.hpp"

using loom::mpi::host;
using loom::runtime::config;

extern "C" int MPI_Type_commit(MPI_Datatype* type) {
  const int rc = host().Type_commit(type);
  if (rc != MPI_SUCCESS || config().disabled) return rc;
  loom::mpi::record_commit(*type);
  return rc;
}

extern "C" int MPI_Type_free(MPI_Datatype* type) {
  if (type && !config().disabled) loom::mpi::forget_type(*type);
  return host().Type_free(type);
}

// A duplicate of a committed type is committed without MPI_Type_commit: share the plan.
extern "C" int MPI_Type_dup(MPI_Datatype oldtype, MPI_Datatype* newtype) {
  const int rc = host().Type_dup(oldtype, newtype);
  if (rc != MPI_SUCCESS || config().disabled) return rc;
  loom::mpi::record_duplicate(oldtype, *newtype);
  return rc;
}

// Loom's queries plan a type that waits for its plan: their answer is the plan's.
extern "C" int loom_type_is_accelerated(MPI_Datatype type) {
  return loom::mpi::plan_now(type) ? 1 : 0;
}

extern "C" int loom_type_describe(MPI_Datatype type, char* buf, int buflen) {
  const auto* plan = loom::mpi::plan_now(type);
  return loom::interpose::text_out(plan ? plan->describe : std::string("host (no Loom plan)"), buf,
                                   buflen);
}
