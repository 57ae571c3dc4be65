// The host MPI's entry points, reached with dlsym(RTLD_NEXT) so that PMPI-based tools
// loaded after Loom still see every call Loom forwards. Every function Loom interposes
// is listed here; Loom's own internal MPI calls (not seen by the user) use PMPI_*.
#pragma once

#include <mpi.h>
#if !defined(MPI_VERSION) || MPI_VERSION < 4
#if defined(OPEN_MPI) && __has_include(<mpi-ext.h>)
#include <mpi-ext.h>
#endif
#endif

// Persistent collectives (MPI_Alltoallv_init, ...): MPI-4's, or before MPI-4 Open MPI's extension
// of the same functions named MPIX_. LOOM_PERSISTENT(Alltoallv_init) names the host's function.
#if MPI_VERSION >= 4
#define LOOM_PERSISTENT_COLLECTIVES 1
#define LOOM_PERSISTENT(name) MPI_##name
#define LOOM_PERSISTENT_PROFILING(name) PMPI_##name
#define LOOM_PERSISTENT_PREFIX "MPI_"
#elif defined(OMPI_HAVE_MPI_EXT_PCOLLREQ) && OMPI_HAVE_MPI_EXT_PCOLLREQ
#define LOOM_PERSISTENT_COLLECTIVES 1
#define LOOM_PERSISTENT(name) MPIX_##name
#define LOOM_PERSISTENT_PROFILING(name) PMPIX_##name
#define LOOM_PERSISTENT_PREFIX "MPIX_"
#endif

// clang-format off
#define LOOM_HOST_FUNCTIONS(X)                                                              \
  X(Init) X(Init_thread) X(Finalize) X(Comm_free) X(Comm_disconnect) X(Comm_set_info)       \
  X(Cart_create) X(Graph_create) X(Dist_graph_create) X(Dist_graph_create_adjacent)        \
  X(Type_commit) X(Type_free) X(Type_dup) X(Pack) X(Unpack) X(Pack_size)                    \
  X(Type_contiguous) X(Type_vector) X(Type_create_hvector) X(Type_indexed)                  \
  X(Type_create_hindexed) X(Type_create_indexed_block) X(Type_create_hindexed_block)        \
  X(Type_create_struct) X(Type_create_subarray) X(Type_create_darray)                       \
  X(Type_create_resized)                                                                    \
  X(Send) X(Ssend) X(Rsend) X(Bsend) X(Isend) X(Issend) X(Irsend) X(Ibsend)                 \
  X(Recv) X(Irecv) X(Sendrecv) X(Sendrecv_replace)                                          \
  X(Send_init) X(Ssend_init) X(Rsend_init) X(Bsend_init) X(Recv_init) X(Start) X(Startall)  \
  X(Probe) X(Iprobe) X(Mprobe) X(Improbe) X(Mrecv) X(Imrecv)                                \
  X(Wait) X(Waitall) X(Waitany) X(Waitsome) X(Test) X(Testall) X(Testany) X(Testsome)       \
  X(Request_free) X(Request_get_status) X(Cancel)                                           \
  X(Alltoall) X(Alltoallv) X(Alltoallw) X(Allgather) X(Allgatherv) X(Gather) X(Gatherv)     \
  X(Scatter) X(Scatterv) X(Bcast)                                                           \
  X(Neighbor_alltoall) X(Neighbor_alltoallv) X(Neighbor_alltoallw)                          \
  X(Neighbor_allgather) X(Neighbor_allgatherv)                                              \
  X(Ialltoall) X(Ialltoallv) X(Ialltoallw) X(Iallgather) X(Iallgatherv)                     \
  X(Igather) X(Igatherv) X(Iscatter) X(Iscatterv) X(Ibcast)                                 \
  X(Ineighbor_alltoall) X(Ineighbor_alltoallv) X(Ineighbor_alltoallw)                       \
  X(Ineighbor_allgather) X(Ineighbor_allgatherv) LOOM_HOST_RMA_FUNCTIONS(X)                 \
  LOOM_HOST_FUNCTIONS_MPI4(X)
// One-sided communication: window life cycle, synchronisation and the data-moving calls.
#define LOOM_HOST_RMA_FUNCTIONS(X)                                                          \
  X(Win_create) X(Win_allocate) X(Win_allocate_shared) X(Win_create_dynamic) X(Win_free)    \
  X(Win_fence) X(Win_start) X(Win_complete) X(Win_lock) X(Win_unlock) X(Win_lock_all)       \
  X(Win_unlock_all) X(Win_flush) X(Win_flush_all) X(Win_flush_local) X(Win_flush_local_all) \
  X(Put) X(Get) X(Accumulate) X(Get_accumulate) X(Rput) X(Rget) X(Raccumulate)              \
  X(Rget_accumulate)
#if MPI_VERSION >= 4
#define LOOM_HOST_FUNCTIONS_MPI4(X) X(Isendrecv) X(Isendrecv_replace)
#else
#define LOOM_HOST_FUNCTIONS_MPI4(X)
#endif
#define LOOM_HOST_PERSISTENT_FUNCTIONS(X)                                                   \
  X(Alltoall_init) X(Alltoallv_init) X(Alltoallw_init) X(Allgather_init) X(Allgatherv_init) \
  X(Gather_init) X(Gatherv_init) X(Scatter_init) X(Scatterv_init) X(Bcast_init)             \
  X(Neighbor_alltoall_init) X(Neighbor_alltoallv_init) X(Neighbor_alltoallw_init)           \
  X(Neighbor_allgather_init) X(Neighbor_allgatherv_init)
// clang-format on

namespace loom::mpi {

struct HostMpi {
#define LOOM_HOST_SLOT(name) decltype(&::MPI_##name) name;
  LOOM_HOST_FUNCTIONS(LOOM_HOST_SLOT)
#undef LOOM_HOST_SLOT
#ifdef LOOM_PERSISTENT_COLLECTIVES
#define LOOM_HOST_PERSISTENT_SLOT(name) decltype(&::LOOM_PERSISTENT(name)) name;
  LOOM_HOST_PERSISTENT_FUNCTIONS(LOOM_HOST_PERSISTENT_SLOT)
#undef LOOM_HOST_PERSISTENT_SLOT
#endif
};

// Resolved as libloom loads (the host MPI is mapped by then: it is libloom's dependency,
// or the application's when preloaded). A plain global: forwarding costs one load.
extern const HostMpi host_mpi;
inline const HostMpi& host() {
  return host_mpi;
}

}  // namespace loom::mpi
