// Where a halo domain's subdomains go (docs/halo.md, Placement): the ranks grouped into nodes
// for the two-level partition, and, within a node, each subdomain onto the rank whose CPUs
// are nearest the neighbours it exchanges most with.
#pragma once

#include <mpi.h>

#include <vector>

#include "halo/domain.hpp"

namespace loom::halo {

// The ranks of a communicator by node (nodes by their lowest rank): slot
// node * ranks_per_node + rank_in_node is the partition's numbering.
struct NodeLayout {
  int nodes = 1;
  int ranks_per_node = 1;
  std::vector<int> rank_of_slot;
  int leader = 0;           // this rank's node's lowest rank
  bool real_nodes = false;  // false: nodes of unequal size, laid out as one node of all ranks
};

// Collective over `comm`; the host's error code, or MPI_SUCCESS.
int node_layout(MPI_Comm comm, NodeLayout* layout);

// LOOM_HALO_PLACEMENT: whether each node's subdomains may go to its ranks out of rank order.
bool placement_wanted();

// Places the node's subdomains onto its ranks where that beats the rank order, and tells every
// rank every slot's rank. Collective over the domain's communicator; changes the domain's
// `slot` and `rank_of_slot`. The host's error code, or MPI_SUCCESS.
int place_on_node(Domain* domain, int ranks_per_node);

}  // namespace loom::halo
