// The transport seam: the one place that decides how a message or an exchange reaches its peers,
// in MPICH ch4's order: oneself (the self channel: a copy in this process), the same node (the
// shared window, for neighbourhood collectives), else the host MPI (Loom hands it packed bytes
// or the user's own arguments). Point-to-point and collectives both ask here; a new transport
// (a Loom-owned same-node channel, a device-to-device path) is added here and nowhere else.
#pragma once

#include <mpi.h>

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
// The same-node window that carries a neighbourhood collective on `comm`, or null when the host
// MPI does (peers on other nodes, a topology whose block pairing is the host's own convention,
// or LOOM_SHARED_COLLECTIVES=0). Collective: every rank of `comm` asks alike.
SharedExchange* neighbourhood_window(MPI_Comm comm);

}  // namespace loom::transport
