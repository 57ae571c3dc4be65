// Topology constructors: with reorder != 0 (and LOOM_REORDER not 0) Loom may renumber the ranks so
// that heavy partners share a node (ops/topology_reorder.hpp, docs/reorder.md); otherwise the
// host's constructor as called.
#include "mpi/host.hpp"
#include "ops/topology_reorder.hpp"
#include "runtime/runtime.hpp"

namespace {

bool loom_reorders(int reorder) {
  return reorder != 0 && !loom::runtime::config().disabled && loom::ops::reorder_enabled();
}

}  // namespace

extern "C" int MPI_Cart_create(MPI_Comm comm, int ndims, const int dims[], const int periods[],
                               int reorder, MPI_Comm* comm_cart) {
  if (!loom_reorders(reorder))
    return loom::mpi::host().Cart_create(comm, ndims, dims, periods, reorder, comm_cart);
  return loom::ops::cart_create_reordered(comm, ndims, dims, periods, comm_cart);
}

extern "C" int MPI_Graph_create(MPI_Comm comm, int nnodes, const int index[], const int edges[],
                                int reorder, MPI_Comm* comm_graph) {
  if (!loom_reorders(reorder))
    return loom::mpi::host().Graph_create(comm, nnodes, index, edges, reorder, comm_graph);
  return loom::ops::graph_create_reordered(comm, nnodes, index, edges, comm_graph);
}

extern "C" int MPI_Dist_graph_create_adjacent(MPI_Comm comm, int indegree, const int sources[],
                                              const int sourceweights[], int outdegree,
                                              const int destinations[], const int destweights[],
                                              MPI_Info info, int reorder,
                                              MPI_Comm* comm_dist_graph) {
  if (!loom_reorders(reorder))
    return loom::mpi::host().Dist_graph_create_adjacent(comm, indegree, sources, sourceweights,
                                                        outdegree, destinations, destweights, info,
                                                        reorder, comm_dist_graph);
  return loom::ops::dist_graph_create_adjacent_reordered(comm, indegree, sources, sourceweights,
                                                         outdegree, destinations, destweights, info,
                                                         comm_dist_graph);
}

extern "C" int MPI_Dist_graph_create(MPI_Comm comm, int n, const int sources[], const int degrees[],
                                     const int destinations[], const int weights[], MPI_Info info,
                                     int reorder, MPI_Comm* comm_dist_graph) {
  if (!loom_reorders(reorder))
    return loom::mpi::host().Dist_graph_create(comm, n, sources, degrees, destinations, weights,
                                               info, reorder, comm_dist_graph);
  return loom::ops::dist_graph_create_reordered(comm, n, sources, degrees, destinations, weights,
                                                info, comm_dist_graph);
}
