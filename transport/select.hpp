// The transport seam: the one place that decides how a message or an exchange reaches its peers,
// in MPICH ch4's order: oneself (the self channel: a copy in this process), the same node (the
// shared window, for neighbourhood collectives), else the host MPI (Loom hands it packed bytes
// or the user's own arguments). Point-to-point and collectives both ask here; a new transport
// (a Loom-owned same-node channel, a device-to-device path) is added here and nowhere else.
#pragma once

#include <mpi.h>

#include <cstdint>

#include "model/model.hpp"
#include "mpi/locality.hpp"
#include "transport/self_channel.hpp"
#include "transport/shared_exchange.hpp"

namespace loom::transport {

namespace detail {
SelfChannel* self_unless_device(SelfChannel* self, const void* buf);
}  // namespace detail

// The self channel that carries a message this process sends to `dest` of `comm`, or null when
// the host MPI does. `buf` in device memory is never copied by the CPU: the communicator's
// messages to oneself then go back to the host for good. Inline, as the two below: every
// message Loom routes asks, and nearly always to another process.
inline SelfChannel* self_for_send(MPI_Comm comm, int dest, const void* buf) {
  SelfChannel* self = self_channel(comm, dest);
  return self ? detail::self_unless_device(self, buf) : nullptr;
}
// The same for a receive or probe from `source`. A wildcard source demotes the channel: its
// match could be a message the channel holds or one the host holds.
inline SelfChannel* self_for_receive(MPI_Comm comm, int source, const void* buf = nullptr) {
  if (source == MPI_ANY_SOURCE) {
    demote_self_channel(comm);
    return nullptr;
  }
  return self_for_send(comm, source, buf);
}
// Where the host MPI carries a message to `peer` (MPI_ANY_SOURCE: the worst case): what the
// method model decides with.
inline model::Locality host_locality(MPI_Comm comm, int peer) {
  return mpi::locality(comm, peer);
}
// The same-node window that may carry a neighbourhood collective on `comm`, or null when the
// host MPI does (peers on other nodes, a topology whose block pairing is the host's own
// convention, or LOOM_SHARED_COLLECTIVES=0). Every rank of `comm` gets the same answer; which
// calls it carries, SharedExchange::take_window decides.
SharedExchange* neighbourhood_window(MPI_Comm comm);

// Whether this rank's part of a neighbourhood all-to-all, `moved_bytes` sent plus received, would
// go faster through the same-node window than through the host's exchange. Measured with 2 ranks
// (docs/collectives.md, "Same-node transport"): with a type Loom packs (`packs`), the window
// beats packing plus the host's exchange from 4 KiB a block and loses below 1 KiB on both hosts;
// with contiguous types, where the host's exchange is Loom's only other cost, it wins only over a
// host that copies through its own queue (mpi::host_copies_contiguous_through_its_queue), from
// 4 KiB a block, and loses at 1 KiB and below.
constexpr int64_t kWindowPaysFromPackedBytes = 4096;
constexpr int64_t kWindowPaysFromContiguousBytes = 8192;
bool window_pays(int64_t moved_bytes, bool packs);

}  // namespace loom::transport
