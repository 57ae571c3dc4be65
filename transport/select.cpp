#include "transport/select.hpp"

#include <algorithm>
#include <vector>

#include "exec/device_memory.hpp"
#include "mpi/locality.hpp"
#include "mpi/quirks.hpp"

namespace loom::transport {
using namespace loom::exec;  // NOLINT: the layers below
using namespace loom::mpi;   // NOLINT: the layers below
namespace {

// Whether the same-node window may carry a neighbourhood all-to-all on `comm`. Every rank
// must decide alike. On a distributed graph the m-th block a rank sends to a peer is the
// m-th that peer receives from it, as the hosts match them. A Cartesian dimension of size
// 1 or 2 that is periodic names one neighbour twice, and which of the two blocks then
// pairs with which is the host's own convention: those, and general graphs (whose
// repeated edges are a rank's own business), keep the host's exchange.
bool window_fits_topology(MPI_Comm comm) {
  int topology = MPI_UNDEFINED;
  PMPI_Topo_test(comm, &topology);
  if (topology == MPI_DIST_GRAPH) return true;
  if (topology != MPI_CART) return false;
  int ndims = 0;
  PMPI_Cartdim_get(comm, &ndims);
  std::vector<int> dims(static_cast<size_t>(std::max(ndims, 1))), periods(dims.size()),
      coords(dims.size());
  PMPI_Cart_get(comm, ndims, dims.data(), periods.data(), coords.data());
  for (int d = 0; d < ndims; ++d)
    if (periods[static_cast<size_t>(d)] && dims[static_cast<size_t>(d)] <= 2) return false;
  return true;
}

}  // namespace

SelfChannel* detail::self_unless_device(SelfChannel* self, const void* buf) {
  if (!exec::device_memory(buf)) return self;
  self->demote();
  return nullptr;
}

SharedExchange* neighbourhood_window(MPI_Comm comm) {
  return shared_exchange(comm, window_fits_topology);
}

bool window_pays(int64_t moved_bytes, bool packs) {
  if (packs) return moved_bytes >= kWindowPaysFromPackedBytes;
  return mpi::host_copies_contiguous_through_its_queue() &&
         moved_bytes >= kWindowPaysFromContiguousBytes;
}

}  // namespace loom::transport
