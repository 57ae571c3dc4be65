// Collective operations with derived datatypes: each side's blocks are described once
// (an Exchange), packed by Loom to bytes where it has plans and the model agrees, moved by the
// host's own collective on MPI_BYTE (or, for a neighbourhood whose peers share this node, the
// shared window of transport/shared_exchange.hpp), and unpacked. Anything Loom does not serve
// goes to the host unchanged. Each function has its MPI namesake's arguments and result.
#pragma once

#include <mpi.h>

#include "mpi/communicator.hpp"
#include "mpi/topology.hpp"
#include "ops/plain_buffer.hpp"
#include "runtime/counters.hpp"

namespace loom::ops {

namespace coll {
// Collectives on this rank, by route: Loom packed or unpacked its data; the host ran them with
// the user's derived types through Loom's exchange; the host ran them as written with a committed
// type Loom has not planned yet (lazy planning, docs/commit.md); nothing to pack (every side
// basic, contiguous, in place, or one run the host moves whole as it would contiguous bytes). Then
// Loom's bytes, and blocking neighbourhood all-to-alls (any types) moved through the same-node
// shared-memory window.
inline const runtime::Counter kPacked = runtime::register_counter("collectives", "", "packed");
inline const runtime::Counter kHost = runtime::register_counter("collectives", "", "host");
inline const runtime::Counter kUnplanned =
    runtime::register_counter("collectives", "", "host (not planned yet)");
inline const runtime::Counter kPlain = runtime::register_counter("collectives", "", "plain");
inline const runtime::Counter kBytes = runtime::register_counter("collectives", "", "bytes");
inline const runtime::Counter kShared = runtime::register_counter("collectives", "", "shared");
inline const bool kCollectivesFormat = runtime::format_area("collectives", {40});
}  // namespace coll

// A collective the host may run as written: the pass-through predicates below ask it about each
// side; then run() makes the host's call, counted, and timed where a side's datatype is a
// committed type Loom has not planned yet (its time counts towards that type's plan, shared
// between such sides: mpi::note_host_time). Such a type is served as the host's own call, not
// through Loom's exchange with the host's MPI_Pack.
class HostCall {
 public:
  // Whether the host serves this side as written as fast as Loom would: basic or contiguous in
  // host memory, or a type not planned yet (noted). Device memory never is.
  [[gnu::always_inline]] bool serves(const void* buf, MPI_Datatype type) {
    const mpi::TypeUse use = mpi::use_type(type);
    if (use.plan) return use.plan->plan.dense() && !exec::device_memory(buf);
    return use.unplanned && !exec::device_memory(buf) && note(type, use.unplanned);
  }
  // One side of a uniform collective (`count` elements a block): MPI_IN_PLACE, as serves(), or a
  // block the host moves whole (host_moves_whole).
  [[gnu::always_inline]] bool serves_uniform(const void* buf, int count, MPI_Datatype type) {
    if (buf == MPI_IN_PLACE) return true;
    const mpi::TypeUse use = mpi::use_type(type);
    if (use.plan) {
      if (exec::device_memory(buf)) return false;
      if (use.plan->plan.dense()) return true;
      return host_moves_whole(*use.plan, count);
    }
    return use.unplanned && !exec::device_memory(buf) && note(type, use.unplanned);
  }
  // Whether a side's type waits for its plan (for a caller that must not pass such a side).
  bool noted() const { return !unplanned_.empty(); }
  // The host's call (`call()`), counted on its route and timed where a type was noted.
  template <typename Call>
  [[gnu::always_inline]] int run(Call&& call) {
    runtime::count(noted() ? coll::kUnplanned : coll::kPlain);
    return unplanned_.run(call);
  }

 private:
  bool note(MPI_Datatype type, mpi::UnplannedType* record) {
    unplanned_.add(type, record, -1);  // a collective's duration, all of it
    return true;
  }
  mpi::UnplannedCall unplanned_;
};

// The common case, decided inline before anything else: both sides basic or contiguous (nothing
// to pack) in host memory, or not planned yet, so the host's own call as written (`call`). Only
// for collectives whose buffers and types are significant on every rank (a root-only argument may
// be garbage elsewhere). Loom's full path would cost a small call more than the host's own
// (docs/collectives.md, "What goes to the host unchanged").
[[gnu::always_inline]] inline bool collective_passes_through(HostCall& call, const void* sendbuf,
                                                             MPI_Datatype sendtype,
                                                             const void* recvbuf,
                                                             MPI_Datatype recvtype) {
  return (sendbuf == MPI_IN_PLACE || call.serves(sendbuf, sendtype)) &&
         (recvbuf == MPI_IN_PLACE || call.serves(recvbuf, recvtype));
}

// The same for collectives whose sides are uniform (MPI_Alltoall, MPI_Allgather), where a block of
// one element the host moves whole (host_moves_whole) passes too: packing cannot gain there, and
// Loom's path would cost the call more (docs/collectives.md, "Small calls").
[[gnu::always_inline]] inline bool uniform_passes_through(HostCall& call, const void* sendbuf,
                                                          int sendcount, MPI_Datatype sendtype,
                                                          const void* recvbuf, int recvcount,
                                                          MPI_Datatype recvtype) {
  return call.serves_uniform(sendbuf, sendcount, sendtype) &&
         call.serves_uniform(recvbuf, recvcount, recvtype);
}

// The rooted collectives' common case, decided inline on each rank of an intra-communicator
// from the arguments significant there: the root's two sides (in place counts as plain), another
// rank's one side (a gather's send side, a scatter's receive side), basic or contiguous in host
// memory; then the host's own call as written. The full description would cost a gather of one
// int more than the host's own call (docs/collectives.md, "What goes to the host unchanged").
// Inter-communicators take the full path, which leaves them to the host.
[[gnu::always_inline]] inline bool rooted_passes_through(HostCall& call, MPI_Comm comm, int root,
                                                         bool gather, const void* sendbuf,
                                                         MPI_Datatype sendtype, const void* recvbuf,
                                                         MPI_Datatype recvtype) {
  mpi::CommShape shape;
  if (!mpi::comm_shape(comm, &shape) || shape.inter) return false;
  const bool at_root = shape.rank == root;
  return (!(gather || at_root) || sendbuf == MPI_IN_PLACE || call.serves(sendbuf, sendtype)) &&
         (!(!gather || at_root) || recvbuf == MPI_IN_PLACE || call.serves(recvbuf, recvtype));
}

// One side of a w-form collective: each of its `blocks` types basic or contiguous in host memory.
// MPI_IN_PLACE does not pass: MPICH 4.0's own in-place all-to-all w fails on layouts Loom's
// exchange of bytes serves (docs/collectives.md), and the neighbourhood forms do not allow it.
[[gnu::always_inline]] inline bool per_type_side_passes_through(HostCall& call, const void* buf,
                                                                const MPI_Datatype types[],
                                                                int blocks) {
  if (buf == MPI_IN_PLACE || !types || exec::device_memory(buf)) return false;
  for (int i = 0; i < blocks; ++i)
    if (!call.serves(buf, types[i])) return false;
  return true;
}

// MPI_Alltoallw's and MPI_Ialltoallw's common case on an intra-communicator, every type plain
// (per_type_side_passes_through): the host's own call as written. The full description would
// cost a small call more than the host's own (docs/collectives.md, "What goes to the host
// unchanged").
[[gnu::always_inline]] inline bool alltoallw_passes_through(HostCall& call, MPI_Comm comm,
                                                            const void* sendbuf,
                                                            const MPI_Datatype sendtypes[],
                                                            const void* recvbuf,
                                                            const MPI_Datatype recvtypes[]) {
  mpi::CommShape shape;
  return mpi::comm_shape(comm, &shape) && !shape.inter &&
         per_type_side_passes_through(call, sendbuf, sendtypes, shape.size) &&
         per_type_side_passes_through(call, recvbuf, recvtypes, shape.size);
}

// The same for the neighbourhood all-to-all's w-forms, over the communicator's in- and
// out-degree (false without a topology: the full path lets the host report it).
[[gnu::always_inline]] inline bool neighbor_alltoallw_passes_through(
    HostCall& call, MPI_Comm comm, const void* sendbuf, const MPI_Datatype sendtypes[],
    const void* recvbuf, const MPI_Datatype recvtypes[]) {
  int in = 0, out = 0;
  return mpi::topology_degrees(comm, &in, &out) &&
         per_type_side_passes_through(call, sendbuf, sendtypes, out) &&
         per_type_side_passes_through(call, recvbuf, recvtypes, in);
}

// How the host completes a collective started now: MPI_I<name> hands the user an active request
// (`request`); a persistent MPI_<Name>_init (MPI-4, Open MPI's MPIX_ before it) an inactive one,
// each MPI_Start of which runs the call again on the buffers' contents at that start, and
// MPI_Request_free ends. The i<name> functions below serve both.
struct Later {
  MPI_Request* request = nullptr;
  bool persistent = false;
  MPI_Info info = MPI_INFO_NULL;  // persistent only: the init's hints, passed to the host
};

int alltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
             int recvcount, MPI_Datatype recvtype, MPI_Comm comm);
int ialltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
              int recvcount, MPI_Datatype recvtype, MPI_Comm comm, const Later& later);
int alltoallv(const void* sendbuf, const int sendcounts[], const int sdispls[],
              MPI_Datatype sendtype, void* recvbuf, const int recvcounts[], const int rdispls[],
              MPI_Datatype recvtype, MPI_Comm comm);
int ialltoallv(const void* sendbuf, const int sendcounts[], const int sdispls[],
               MPI_Datatype sendtype, void* recvbuf, const int recvcounts[], const int rdispls[],
               MPI_Datatype recvtype, MPI_Comm comm, const Later& later);
int alltoallw(const void* sendbuf, const int sendcounts[], const int sdispls[],
              const MPI_Datatype sendtypes[], void* recvbuf, const int recvcounts[],
              const int rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm);
int ialltoallw(const void* sendbuf, const int sendcounts[], const int sdispls[],
               const MPI_Datatype sendtypes[], void* recvbuf, const int recvcounts[],
               const int rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm,
               const Later& later);
int allgather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
              int recvcount, MPI_Datatype recvtype, MPI_Comm comm);
int iallgather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
               int recvcount, MPI_Datatype recvtype, MPI_Comm comm, const Later& later);
int allgatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
               const int recvcounts[], const int displs[], MPI_Datatype recvtype, MPI_Comm comm);
int iallgatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                const int recvcounts[], const int displs[], MPI_Datatype recvtype, MPI_Comm comm,
                const Later& later);
int gather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
           MPI_Datatype recvtype, int root, MPI_Comm comm);
int igather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
            MPI_Datatype recvtype, int root, MPI_Comm comm, const Later& later);
int gatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
            const int recvcounts[], const int displs[], MPI_Datatype recvtype, int root,
            MPI_Comm comm);
int igatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
             const int recvcounts[], const int displs[], MPI_Datatype recvtype, int root,
             MPI_Comm comm, const Later& later);
int scatter(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
            MPI_Datatype recvtype, int root, MPI_Comm comm);
int iscatter(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
             int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm, const Later& later);
int scatterv(const void* sendbuf, const int sendcounts[], const int displs[], MPI_Datatype sendtype,
             void* recvbuf, int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm);
int iscatterv(const void* sendbuf, const int sendcounts[], const int displs[],
              MPI_Datatype sendtype, void* recvbuf, int recvcount, MPI_Datatype recvtype, int root,
              MPI_Comm comm, const Later& later);
int bcast(void* buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm);
int ibcast(void* buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm,
           const Later& later);
int neighbor_alltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                      int recvcount, MPI_Datatype recvtype, MPI_Comm comm);
int ineighbor_alltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                       int recvcount, MPI_Datatype recvtype, MPI_Comm comm, const Later& later);
int neighbor_alltoallv(const void* sendbuf, const int sendcounts[], const int sdispls[],
                       MPI_Datatype sendtype, void* recvbuf, const int recvcounts[],
                       const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm);
int ineighbor_alltoallv(const void* sendbuf, const int sendcounts[], const int sdispls[],
                        MPI_Datatype sendtype, void* recvbuf, const int recvcounts[],
                        const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm,
                        const Later& later);
int neighbor_alltoallw(const void* sendbuf, const int sendcounts[], const MPI_Aint sdispls[],
                       const MPI_Datatype sendtypes[], void* recvbuf, const int recvcounts[],
                       const MPI_Aint rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm);
int ineighbor_alltoallw(const void* sendbuf, const int sendcounts[], const MPI_Aint sdispls[],
                        const MPI_Datatype sendtypes[], void* recvbuf, const int recvcounts[],
                        const MPI_Aint rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm,
                        const Later& later);
int neighbor_allgather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                       int recvcount, MPI_Datatype recvtype, MPI_Comm comm);
int ineighbor_allgather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                        int recvcount, MPI_Datatype recvtype, MPI_Comm comm, const Later& later);
int neighbor_allgatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                        const int recvcounts[], const int displs[], MPI_Datatype recvtype,
                        MPI_Comm comm);
int ineighbor_allgatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                         const int recvcounts[], const int displs[], MPI_Datatype recvtype,
                         MPI_Comm comm, const Later& later);

}  // namespace loom::ops
