// One exchange of a realized domain: its plan (halo/plan.hpp) replayed. Start publishes this
// rank's interior to same-node readers, starts the host messages and copies the periodic wrap;
// finish unpacks each message as it arrives, then reads the same-node neighbours' interiors.
#include <vector>

#include "exec/execute.hpp"
#include "halo/domain.hpp"
#include "halo/step_flags.hpp"
#include "loom/halo.h"

namespace loom::halo {
namespace {

int start_messages(Domain* domain) {
  if (!domain->recv_requests.empty()) {
    const int rc =
        PMPI_Startall(static_cast<int>(domain->recv_requests.size()), domain->recv_requests.data());
    if (rc != MPI_SUCCESS) return mpi_fail(rc, "MPI_Startall (receives)");
  }
  for (Peer& peer : domain->peers) {
    Message& send = peer.send;
    if (send.request == MPI_REQUEST_NULL) continue;
    if (send.plan) exec::pack(*send.plan, nullptr, 1, send.buffer.data(), exec::MemoryKind::Host);
    const int rc = PMPI_Start(&send.request);
    if (rc != MPI_SUCCESS) return mpi_fail(rc, "MPI_Start (send)");
  }
  return LOOM_HALO_SUCCESS;
}

// Unpacks each peer's message as it arrives, then completes the sends.
int finish_messages(Domain* domain) {
  std::vector<MPI_Request> pending;
  std::vector<const Peer*> sender;
  for (const Peer& peer : domain->peers)
    if (peer.recv.request != MPI_REQUEST_NULL) {
      pending.push_back(peer.recv.request);
      sender.push_back(&peer);
    }
  for (size_t done = 0; done < pending.size(); ++done) {
    int index = MPI_UNDEFINED;
    const int rc =
        PMPI_Waitany(static_cast<int>(pending.size()), pending.data(), &index, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) return mpi_fail(rc, "MPI_Waitany (receives)");
    if (index == MPI_UNDEFINED) break;
    const Message& recv = sender[static_cast<size_t>(index)]->recv;
    if (recv.plan) exec::unpack(*recv.plan, recv.buffer.data(), 1, nullptr, exec::MemoryKind::Host);
  }
  if (!domain->send_requests.empty()) {
    const int rc = PMPI_Waitall(static_cast<int>(domain->send_requests.size()),
                                domain->send_requests.data(), MPI_STATUSES_IGNORE);
    if (rc != MPI_SUCCESS) return mpi_fail(rc, "MPI_Waitall (sends)");
  }
  return LOOM_HALO_SUCCESS;
}

// Copies each same-node source's interior once it is published for this step, then waits until
// every reader of this rank's interior has copied it, after which it may change.
void read_same_node(Domain* domain) {
  for (const SharedSource& source : domain->sources) {
    int64_t* theirs = domain->flags[static_cast<size_t>(source.node_rank)];
    wait_published(theirs, domain->step, domain->spin_micros);
    if (source.unpack)
      exec::unpack(*source.unpack, source.area, 1, nullptr, exec::MemoryKind::Host);
    for (const pack::RowPass& pass : source.passes) pack::run_pass(pass);
    mark_read(theirs, domain->node_rank, domain->step);
  }
  wait_read(domain->flags[static_cast<size_t>(domain->node_rank)], domain->readers, domain->step,
            domain->spin_micros);
}

}  // namespace
}  // namespace loom::halo

extern "C" {

using loom::halo::fail;

int loom_halo_start(loom_halo_domain d) {
  if (!d) return fail(LOOM_HALO_ERR_ARG, "null domain");
  if (!d->realized) return fail(LOOM_HALO_ERR_STATE, "exchange before loom_halo_realize");
  if (d->in_flight) return fail(LOOM_HALO_ERR_STATE, "loom_halo_start with an exchange in flight");
  ++d->step;
  // Our interior is final for this step (staged: packed for each same-node reader): same-node
  // neighbours may read it. The areas are free: every reader finished the last step's.
  for (const loom::halo::StagedReader& reader : d->staged_readers)
    loom::exec::pack(*reader.pack, nullptr, 1, reader.area, loom::exec::MemoryKind::Host);
  if (d->shared) loom::halo::publish(d->flags[static_cast<size_t>(d->node_rank)], d->step);
  if (const int rc = loom::halo::start_messages(d); rc != LOOM_HALO_SUCCESS) return rc;
  for (const loom::pack::RowPass& pass : d->self_passes) loom::pack::run_pass(pass);
  d->in_flight = true;
  return LOOM_HALO_SUCCESS;
}

int loom_halo_finish(loom_halo_domain d) {
  if (!d) return fail(LOOM_HALO_ERR_ARG, "null domain");
  if (!d->in_flight) return fail(LOOM_HALO_ERR_STATE, "loom_halo_finish without loom_halo_start");
  d->in_flight = false;
  if (const int rc = loom::halo::finish_messages(d); rc != LOOM_HALO_SUCCESS) return rc;
  // Same-node neighbours after the MPI messages, so that no rank spins here while a peer on
  // another node waits for it to progress a send.
  if (d->shared) loom::halo::read_same_node(d);
  return LOOM_HALO_SUCCESS;
}

int loom_halo_exchange(loom_halo_domain d) {
  const int rc = loom_halo_start(d);
  return rc != LOOM_HALO_SUCCESS ? rc : loom_halo_finish(d);
}

}  // extern "C"
