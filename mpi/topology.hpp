// What a communicator's virtual topology says about its neighbourhood collectives.
#pragma once

#include <mpi.h>

namespace loom::mpi {

// In- and out-degree of a Cartesian, graph or distributed-graph communicator: how many
// receive and send blocks its neighbourhood collectives take. False without a topology.
inline bool topology_degrees(MPI_Comm comm, int* in, int* out) {
  int topology = MPI_UNDEFINED;
  if (comm == MPI_COMM_NULL || PMPI_Topo_test(comm, &topology) != MPI_SUCCESS) return false;
  if (topology == MPI_CART) {
    int dims = 0;
    PMPI_Cartdim_get(comm, &dims);
    *in = *out = 2 * dims;
    return true;
  }
  if (topology == MPI_GRAPH) {
    int rank = 0;
    PMPI_Comm_rank(comm, &rank);
    PMPI_Graph_neighbors_count(comm, rank, in);
    *out = *in;
    return true;
  }
  if (topology == MPI_DIST_GRAPH) {
    int weighted = 0;
    return PMPI_Dist_graph_neighbors_count(comm, in, out, &weighted) == MPI_SUCCESS;
  }
  return false;
}

}  // namespace loom::mpi
