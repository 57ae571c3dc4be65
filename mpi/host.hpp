// The host MPI's entry points, reached with dlsym(RTLD_NEXT) so that PMPI-based tools
// loaded after Loom still see every call Loom forwards. Every function Loom interposes
// is listed here; Loom's own internal MPI calls (not seen by the user) use PMPI_*.
#pragma once

#include <mpi.h>

// clang-format off
#define LOOM_HOST_FUNCTIONS(X)                                                              \
  X(Init) X(Init_thread) X(Finalize) X(Comm_free) X(Comm_disconnect) X(Comm_set_info)       \
  X(Type_commit) X(Type_free) X(Type_dup) X(Pack) X(Unpack) X(Pack_size)                    \
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
  X(Ineighbor_allgather) X(Ineighbor_allgatherv) LOOM_HOST_FUNCTIONS_MPI4(X)
#if MPI_VERSION >= 4
#define LOOM_HOST_FUNCTIONS_MPI4(X) X(Isendrecv) X(Isendrecv_replace)
#else
#define LOOM_HOST_FUNCTIONS_MPI4(X)
#endif
// clang-format on

namespace loom::mpi {

struct HostMpi {
#define LOOM_HOST_SLOT(name) decltype(&::MPI_##name) name;
  LOOM_HOST_FUNCTIONS(LOOM_HOST_SLOT)
#undef LOOM_HOST_SLOT
};

// Resolved as libloom loads (the host MPI is mapped by then: it is libloom's dependency,
// or the application's when preloaded). A plain global: forwarding costs one load.
extern const HostMpi host_mpi;
inline const HostMpi& host() {
  return host_mpi;
}

}  // namespace loom::mpi
