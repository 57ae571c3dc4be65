// MPI's topology constructors asked to reorder (reorder != 0): Loom maps the communication graph
// onto the nodes (place/graph_map.hpp) and, where fewer bytes then cross nodes than under the
// host's numbering, builds the communicator under the new numbering: MPI_Comm_split with the new
// rank as key, then the host's own constructor with reorder=0, so that every query and
// neighbourhood collective answers as the host's would on a communicator numbered that way.
// Otherwise the host's own result stands. Each call first hands the user's arguments to the host
// unchanged: the host validates them (its error class, through the communicator's error
// handler) and its communicator is the one kept when Loom does not renumber. See docs/reorder.md.
#pragma once

#include <mpi.h>

namespace loom::ops {

// LOOM_REORDER is not 0: the interposer sends constructors with reorder != 0 here.
bool reorder_enabled();

// Each with the MPI function's arguments (reorder taken as 1); collective over `comm`.
int cart_create_reordered(MPI_Comm comm, int ndims, const int dims[], const int periods[],
                          MPI_Comm* comm_cart);
int graph_create_reordered(MPI_Comm comm, int nnodes, const int index[], const int edges[],
                           MPI_Comm* comm_graph);
int dist_graph_create_adjacent_reordered(MPI_Comm comm, int indegree, const int sources[],
                                         const int sourceweights[], int outdegree,
                                         const int destinations[], const int destweights[],
                                         MPI_Info info, MPI_Comm* comm_dist_graph);
int dist_graph_create_reordered(MPI_Comm comm, int n, const int sources[], const int degrees[],
                                const int destinations[], const int weights[], MPI_Info info,
                                MPI_Comm* comm_dist_graph);

}  // namespace loom::ops
