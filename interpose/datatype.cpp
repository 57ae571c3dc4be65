// MPI_Type_* family: Loom notes a type's description size as it is constructed, records the type
// at commit, forgets it at free and shares its plan at dup (mpi/type_registry.hpp: the type is
// planned once its host time pays for it); the host does the rest.
#include <string>

#include "interpose/text_out.hpp"
#include "loom/loom.h"
#include "mpi/host.hpp"
#include "mpi/type_decode.hpp"
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

// The constructors record the size of the type they make (mpi/type_decode.hpp), so that Loom
// estimates what planning a type would cost without reading its contents back from the host.
namespace {
int constructed(int rc, MPI_Datatype* made, const MPI_Datatype* from, int count) {
  if (rc == MPI_SUCCESS && !config().disabled) loom::mpi::note_constructed(*made, from, count);
  return rc;
}
}  // namespace

extern "C" int MPI_Type_contiguous(int count, MPI_Datatype oldtype, MPI_Datatype* newtype) {
  return constructed(host().Type_contiguous(count, oldtype, newtype), newtype, &oldtype, 1);
}

extern "C" int MPI_Type_vector(int count, int blocklength, int stride, MPI_Datatype oldtype,
                               MPI_Datatype* newtype) {
  return constructed(host().Type_vector(count, blocklength, stride, oldtype, newtype), newtype,
                     &oldtype, 1);
}

extern "C" int MPI_Type_create_hvector(int count, int blocklength, MPI_Aint stride,
                                       MPI_Datatype oldtype, MPI_Datatype* newtype) {
  return constructed(host().Type_create_hvector(count, blocklength, stride, oldtype, newtype),
                     newtype, &oldtype, 1);
}

extern "C" int MPI_Type_indexed(int count, const int blocklengths[], const int displacements[],
                                MPI_Datatype oldtype, MPI_Datatype* newtype) {
  return constructed(host().Type_indexed(count, blocklengths, displacements, oldtype, newtype),
                     newtype, &oldtype, 1);
}

extern "C" int MPI_Type_create_hindexed(int count, const int blocklengths[],
                                        const MPI_Aint displacements[], MPI_Datatype oldtype,
                                        MPI_Datatype* newtype) {
  return constructed(
      host().Type_create_hindexed(count, blocklengths, displacements, oldtype, newtype), newtype,
      &oldtype, 1);
}

extern "C" int MPI_Type_create_indexed_block(int count, int blocklength, const int displacements[],
                                             MPI_Datatype oldtype, MPI_Datatype* newtype) {
  return constructed(
      host().Type_create_indexed_block(count, blocklength, displacements, oldtype, newtype),
      newtype, &oldtype, 1);
}

extern "C" int MPI_Type_create_hindexed_block(int count, int blocklength,
                                              const MPI_Aint displacements[], MPI_Datatype oldtype,
                                              MPI_Datatype* newtype) {
  return constructed(
      host().Type_create_hindexed_block(count, blocklength, displacements, oldtype, newtype),
      newtype, &oldtype, 1);
}

extern "C" int MPI_Type_create_struct(int count, const int blocklengths[],
                                      const MPI_Aint displacements[], const MPI_Datatype types[],
                                      MPI_Datatype* newtype) {
  const int rc = host().Type_create_struct(count, blocklengths, displacements, types, newtype);
  return constructed(rc, newtype, types, count);
}

extern "C" int MPI_Type_create_subarray(int ndims, const int sizes[], const int subsizes[],
                                        const int starts[], int order, MPI_Datatype oldtype,
                                        MPI_Datatype* newtype) {
  return constructed(
      host().Type_create_subarray(ndims, sizes, subsizes, starts, order, oldtype, newtype), newtype,
      &oldtype, 1);
}

extern "C" int MPI_Type_create_darray(int size, int rank, int ndims, const int gsizes[],
                                      const int distribs[], const int dargs[], const int psizes[],
                                      int order, MPI_Datatype oldtype, MPI_Datatype* newtype) {
  return constructed(host().Type_create_darray(size, rank, ndims, gsizes, distribs, dargs, psizes,
                                               order, oldtype, newtype),
                     newtype, &oldtype, 1);
}

extern "C" int MPI_Type_create_resized(MPI_Datatype oldtype, MPI_Aint lb, MPI_Aint extent,
                                       MPI_Datatype* newtype) {
  return constructed(host().Type_create_resized(oldtype, lb, extent, newtype), newtype, &oldtype,
                     1);
}

// A duplicate of a committed type is committed without MPI_Type_commit: share the plan.
extern "C" int MPI_Type_dup(MPI_Datatype oldtype, MPI_Datatype* newtype) {
  const int rc = constructed(host().Type_dup(oldtype, newtype), newtype, &oldtype, 1);
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
