// Which peers share this rank's node. Computed once at MPI_Init from
// MPI_Comm_split_type(MPI_COMM_TYPE_SHARED); LOOM_RANKS_PER_NODE=N overrides it
// (world ranks [kN, (k+1)N) form node k) so one machine can exercise inter-node paths.
#pragma once

#include <mpi.h>

#include "model/model.hpp"

namespace loom::mpi {

// Collective over MPI_COMM_WORLD, once per process (later calls return at once). The interposer
// calls it in MPI_Init; a library linked without the interposer (loom_mpi is an object library
// any target can link) calls it in its own collective setup. Until it runs, every peer is
// taken to share this node.
void init_locality();
namespace detail {
// True until init_locality finds a peer on another node (and for good on one node). Written once,
// in MPI_Init, before any call that asks.
inline bool one_node = true;
model::Locality locality_across_nodes(MPI_Comm comm, int peer);
}  // namespace detail

// Locality of `peer` (a rank of `comm`; MPI_ANY_SOURCE allowed: the worst case). Inline: every
// message Loom routes asks, and on one node the answer needs no lookup.
inline model::Locality locality(MPI_Comm comm, int peer) {
  if (detail::one_node) return model::Locality::SameNode;
  return detail::locality_across_nodes(comm, peer);
}
// At MPI_Comm_free / MPI_Comm_disconnect (the interposer's; a library without it calls this
// for the communicators it asked about before freeing them).
void forget_communicator(MPI_Comm comm);

}  // namespace loom::mpi
