// Which peers share this rank's node, learnt from MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)
// over MPI_COMM_WORLD at MPI_Init, or over a library's own communicator; LOOM_RANKS_PER_NODE=N
// overrides it (world ranks [kN, (k+1)N) form node k) so one machine can exercise inter-node paths.
#pragma once

#include <mpi.h>

#include "model/model.hpp"

namespace loom::mpi {

// Collective over MPI_COMM_WORLD, once per process (later calls return at once): the interposer
// calls it in MPI_Init. Until it runs, every peer is taken to share this node.
void init_locality();
// Collective over the intracommunicator `comm` (every call, so that the ranks of `comm` agree
// whatever each has learnt before): learns which of its ranks share a node. For a library
// linked without the interposer (loom_mpi is an object library any target can link), in its
// own collective setup: ranks outside `comm` need not call anything. Ranks whose node is not
// known yet count as another node's. With LOOM_RANKS_PER_NODE nothing is collective.
// Returns the host's error code.
int learn_locality(MPI_Comm comm);
namespace detail {
// True while every rank learnt of shares this node: until the first learn_locality, and for
// good on one node. Written by init_locality (in MPI_Init) and learn_locality only.
inline bool one_node = true;
model::Locality locality_across_nodes(MPI_Comm comm, int peer);
}  // namespace detail

// Locality of `peer` (a rank of `comm`; MPI_ANY_SOURCE allowed: the worst case). Inline: every
// message Loom routes asks, and on one node the answer needs no lookup.
inline model::Locality locality(MPI_Comm comm, int peer) {
  if (detail::one_node) return model::Locality::SameNode;
  return detail::locality_across_nodes(comm, peer);
}
// Whether every process of `comm` (an intracommunicator) has its node labelled already: after
// init_locality, those of MPI_COMM_WORLD (always, under LOOM_RANKS_PER_NODE). Local; the same
// answer on every rank of `comm`, so it may decide whether to call learn_locality.
bool knows_nodes_of(MPI_Comm comm);

// This process's node, as the lowest world rank on it (LOOM_RANKS_PER_NODE: its block's first):
// equal on two processes of one world exactly when they share a node, as far as
// init_locality/learn_locality have learnt (before either runs, 0).
int node_label();

// At MPI_Comm_free / MPI_Comm_disconnect (the interposer's; a library without it calls this
// for the communicators it asked about before freeing them).
void forget_communicator(MPI_Comm comm);

}  // namespace loom::mpi
