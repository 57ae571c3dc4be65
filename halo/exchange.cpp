// One exchange of a realized domain: its plan (halo/plan.hpp) replayed. Start publishes this
// rank's interior to same-node readers, starts the host messages and copies the periodic wrap;
// finish unpacks each message as it arrives, then reads the same-node neighbours' interiors.
#include <vector>

#include "exec/execute.hpp"
#include "halo/domain.hpp"
#include "halo/step_flags.hpp"
#include "loom/halo.h"
#include "mpi/sim_clock.hpp"

namespace loom::halo {
namespace {

// SMPI's clock (mpi/sim_clock.hpp; nothing with a real MPI): the CPU time of the copies each
// step makes, charged to the simulated rank. A message packed by Loom costs Loom's copies, one
// the host moves as its datatype the host's engine.
void charge_segments(const std::vector<Segment>& segments, const std::vector<Field>& fields,
                     bool by_host = false) {
#ifdef LOOM_SMPI
  int64_t rows = 0, bytes = 0;
  for (const Segment& segment : segments) {
    rows += segment.box.n[1] * segment.box.n[2];
    bytes += segment.box.cells() *
             static_cast<int64_t>(fields[static_cast<size_t>(segment.field)].element);
  }
  if (by_host)
    mpi::sim::charge_host_pack(rows, bytes);
  else
    mpi::sim::charge_copy(rows, bytes);
#else
  (void)segments, (void)fields, (void)by_host;
#endif
}

void charge_passes(const std::vector<pack::RowPass>& passes) {
#ifdef LOOM_SMPI
  for (const pack::RowPass& pass : passes) {
    int64_t cells = 0;
    for (const auto& segment : pass.segments) cells += segment.cells;
    const int64_t runs = pass.rows * pass.planes * static_cast<int64_t>(pass.segments.size());
    mpi::sim::charge_copy(runs, pass.rows * pass.planes * cells * pass.element);
  }
#else
  (void)passes;
#endif
}

// The signal of node rank `node_rank`'s flags: null with a real MPI.
mpi::sim::Signal* signal_of(const Domain& domain, int node_rank) {
  return domain.signals.empty() ? nullptr : domain.signals[static_cast<size_t>(node_rank)];
}

int start_messages(Domain* domain) {
  if (!domain->recv_requests.empty()) {
    const int rc =
        PMPI_Startall(static_cast<int>(domain->recv_requests.size()), domain->recv_requests.data());
    if (rc != MPI_SUCCESS) return mpi_fail(rc, "MPI_Startall (receives)");
  }
  for (Peer& peer : domain->peers) {
    Message& send = peer.send;
    if (send.request == MPI_REQUEST_NULL) continue;
    if (send.plan) exec::pack(*send.plan, nullptr, 1, send.buffer.get(), exec::MemoryKind::Host);
    charge_segments(send.segments, domain->fields, !send.plan);
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
    if (recv.plan) exec::unpack(*recv.plan, recv.buffer.get(), 1, nullptr, exec::MemoryKind::Host);
    charge_segments(recv.segments, domain->fields, !recv.plan);
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
    mpi::sim::Signal* signal = signal_of(*domain, source.node_rank);
    wait_published(theirs, domain->step, domain->spin_micros, signal);
    if (source.unpack) {
      exec::unpack(*source.unpack, source.area, 1, nullptr, exec::MemoryKind::Host);
      charge_segments(source.segments, domain->fields);
    }
    for (const pack::RowPass& pass : source.passes) pack::run_pass(pass);
    charge_passes(source.passes);
    mark_read(theirs, domain->node_rank, domain->step, signal);
  }
  wait_read(domain->flags[static_cast<size_t>(domain->node_rank)], domain->readers, domain->step,
            domain->spin_micros, signal_of(*domain, domain->node_rank));
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
  for (const loom::halo::StagedReader& reader : d->staged_readers) {
    loom::exec::pack(*reader.pack, nullptr, 1, reader.area, loom::exec::MemoryKind::Host);
    loom::halo::charge_segments(reader.segments, d->fields);
  }
  if (d->shared)
    loom::halo::publish(d->flags[static_cast<size_t>(d->node_rank)], d->step,
                        loom::halo::signal_of(*d, d->node_rank));
  if (const int rc = loom::halo::start_messages(d); rc != LOOM_HALO_SUCCESS) return rc;
  for (const loom::pack::RowPass& pass : d->self_passes) loom::pack::run_pass(pass);
  loom::halo::charge_passes(d->self_passes);
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
