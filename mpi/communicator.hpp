// What Loom asks of a communicator on nearly every collective call: this rank, the size, and
// whether it is an intercommunicator. Kept for the last communicator asked, per thread, until any
// communicator is freed (a handle may be reused), so that the calls the host serves as written
// need not ask the host each time (two or three queries a call, which a one-int collective
// notices; docs/collectives.md).
#pragma once

#include <mpi.h>

#include <atomic>
#include <cstdint>

namespace loom::mpi {

struct CommShape {
  int rank = -1;
  int size = 0;
  bool inter = false;
};

namespace detail {
inline std::atomic<uint64_t> comm_generation{0};
struct LastComm {
  MPI_Comm comm;
  uint64_t generation;
  CommShape shape;
};
inline thread_local LastComm last_comm{MPI_COMM_NULL, ~uint64_t{0}, {}};
bool comm_shape_slow(MPI_Comm comm, CommShape* shape);
}  // namespace detail

// `comm`'s shape; false (nothing kept) where the host refuses a query: MPI_COMM_NULL, an
// invalid handle. The size is the local group's.
inline bool comm_shape(MPI_Comm comm, CommShape* shape) {
  const detail::LastComm& last = detail::last_comm;
  if (last.comm == comm && comm != MPI_COMM_NULL &&
      last.generation == detail::comm_generation.load(std::memory_order_acquire)) {
    *shape = last.shape;
    return true;
  }
  return detail::comm_shape_slow(comm, shape);
}

// At MPI_Comm_free and MPI_Comm_disconnect, before the host frees: every thread asks again.
// (A tool layered above Loom that frees through PMPI_Comm_free itself bypasses this.)
inline void forget_comm_shapes() {
  detail::comm_generation.fetch_add(1, std::memory_order_release);
}

}  // namespace loom::mpi
