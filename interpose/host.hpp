// The host MPI's entry points, reached with dlsym(RTLD_NEXT) so that PMPI-based tools
// loaded after Loom still see every call Loom forwards.
#pragma once

#include <mpi.h>

namespace loom::interpose {

struct HostMpi {
  decltype(&::MPI_Type_commit) Type_commit;
  decltype(&::MPI_Type_free) Type_free;
  decltype(&::MPI_Type_dup) Type_dup;
  decltype(&::MPI_Pack) Pack;
  decltype(&::MPI_Unpack) Unpack;
  decltype(&::MPI_Pack_size) Pack_size;
  decltype(&::MPI_Finalize) Finalize;
};

// Resolved on first use; thread-safe.
const HostMpi& host();

}  // namespace loom::interpose
