#include "mpi/communicator.hpp"

namespace loom::mpi::detail {

bool comm_shape_slow(MPI_Comm comm, CommShape* shape) {
  if (comm == MPI_COMM_NULL) return false;
  // Read before the queries: a free racing with them leaves the entry stale at once.
  const uint64_t generation = comm_generation.load(std::memory_order_acquire);
  int inter = 0;
  CommShape found;
  if (PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS ||
      PMPI_Comm_rank(comm, &found.rank) != MPI_SUCCESS ||
      PMPI_Comm_size(comm, &found.size) != MPI_SUCCESS)
    return false;
  found.inter = inter != 0;
  last_comm = {comm, generation, found};
  *shape = found;
  return true;
}

}  // namespace loom::mpi::detail
