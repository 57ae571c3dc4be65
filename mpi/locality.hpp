// Which peers share this rank's node. Computed once at MPI_Init from
// MPI_Comm_split_type(MPI_COMM_TYPE_SHARED); LOOM_RANKS_PER_NODE=N overrides it
// (world ranks [kN, (k+1)N) form node k) so one machine can exercise inter-node paths.
#pragma once

#include <mpi.h>

#include "model/model.hpp"

namespace loom::mpi {

void init_locality();  // collective over MPI_COMM_WORLD; called from MPI_Init*
// Locality of `peer` (a rank of `comm`; MPI_ANY_SOURCE allowed: the worst case).
model::Locality locality(MPI_Comm comm, int peer);
void forget_communicator(MPI_Comm comm);  // at MPI_Comm_free / MPI_Comm_disconnect

}  // namespace loom::mpi
