// MPI_Allgather(v), MPI_Gather(v), MPI_Scatter(v), MPI_Bcast and their non-blocking forms
// (ops/coll.hpp).

#include <climits>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "mpi/quirks.hpp"
#include "ops/coll.hpp"
#include "ops/coll_exchange.hpp"

namespace loom::ops {
using namespace loom::ops::coll;  // NOLINT: the shared machinery
namespace {

// ---- Persistent gather, scatter and allgather on a host that misdelivers them --------------
// (mpi::host_persistent_uniform_collectives_misdeliver): the host's v form instead, every
// count `count` and displacement k * count, over arrays that live as long as the request: in
// Loom's Exchange when Loom packs, else beside the host's request.
#ifdef LOOM_PERSISTENT_COLLECTIVES

struct UniformArrays {
  std::vector<int> counts, displs;
};

bool through_v_form(const Later& later, MPI_Comm comm) {
  return later.persistent && !config().disabled && comm != MPI_COMM_NULL &&
         mpi::host_persistent_uniform_collectives_misdeliver();
}

// Null for a negative count (the host's own form reports it) or a displacement beyond an int:
// the host's own form then.
std::shared_ptr<UniformArrays> uniform_arrays(MPI_Comm comm, int count) {
  if (count < 0) return nullptr;
  int blocks = 0, inter = 0;
  PMPI_Comm_test_inter(comm, &inter);
  if (inter)
    PMPI_Comm_remote_size(comm, &blocks);
  else
    PMPI_Comm_size(comm, &blocks);
  if (blocks > 0 && int64_t{blocks - 1} * count > INT_MAX) return nullptr;
  auto arrays = std::make_shared<UniformArrays>();
  for (int k = 0; k < blocks; ++k) {
    arrays->counts.push_back(count);
    arrays->displs.push_back(k * count);
  }
  return arrays;
}

void keep_arrays(Exchange* ex, MPI_Request request, std::shared_ptr<UniformArrays> arrays) {
  if (ex)
    ex->keep(std::move(arrays));
  else
    mpi::keep_until_freed(request, std::move(arrays));
}

// Which side of a uniform call its v form gives as arrays: a gather's receive side, a
// scatter's send side.
enum class ArraysOn : uint8_t { Send, Receive };

// `Own`'s host forms, except that a persistent call goes to `VFormInit` (the host's
// <Name>v_init) where the host would misdeliver it.
template <typename Own, auto VFormInit, ArraysOn arrays_on>
struct ThroughVFormWhereMisdelivered : Own {
  template <typename... Rest>
  static int call_later(const Later& later, Exchange* ex, const void* sendbuf, int sendcount,
                        MPI_Datatype sendtype, void* recvbuf, int recvcount, MPI_Datatype recvtype,
                        Rest... rest) {
    const MPI_Comm comm = communicator_of(rest...);
    const int count = arrays_on == ArraysOn::Receive ? recvcount : sendcount;
    if (through_v_form(later, comm))
      if (auto arrays = uniform_arrays(comm, count)) {
        const int* counts = arrays->counts.data();
        const int* displs = arrays->displs.data();
        int rc = MPI_SUCCESS;
        if constexpr (arrays_on == ArraysOn::Receive)
          rc = (host().*VFormInit)(sendbuf, sendcount, sendtype, recvbuf, counts, displs, recvtype,
                                   rest..., later.info, later.request);
        else
          rc = (host().*VFormInit)(sendbuf, counts, displs, sendtype, recvbuf, recvcount, recvtype,
                                   rest..., later.info, later.request);
        if (rc == MPI_SUCCESS) keep_arrays(ex, *later.request, std::move(arrays));
        return rc;
      }
    return Own::call_later(later, ex, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                           rest...);
  }
};
#define LOOM_UNIFORM_HOST_FORMS(Name, name, arrays_on) \
  ThroughVFormWhereMisdelivered<LOOM_HOST_FORMS(Name, name), &HostMpi::Name##v_init, arrays_on>
#else  // without persistent collectives, nothing to misdeliver
#define LOOM_UNIFORM_HOST_FORMS(Name, name, arrays_on) LOOM_HOST_FORMS(Name, name)
#endif

// Gather family: block `own` of the receive side is this rank's contribution when it
// gathers in place. Allgather sends it from there; Gather's root keeps it where it is.
void gather_in_place(Exchange& ex, int own, bool sent_from_receive_side) {
  ex.send.buffer = MPI_IN_PLACE;
  ex.send.count = 0;
  if (!ex.recv.staged) return;
  ex.pack_recv = sent_from_receive_side;
  ex.pack_recv_select.only = own;
  ex.unpack_select.except = own;
}

bool describe_allgather_family(Exchange& ex, const void* sendbuf, int sendcount,
                               MPI_Datatype sendtype, const UserSide& recv, int rank) {
  const bool in_place = sendbuf == MPI_IN_PLACE;
  const UserSide send = uniform(sendbuf, 1, sendcount, sendtype);
  if (!describe_sides(ex, in_place ? nullptr : &send, &recv))
    return leave_to_host(any_left_to_host({in_place ? MPI_DATATYPE_NULL : sendtype, recv.type}));
  if (in_place) gather_in_place(ex, rank, true);
  return true;
}

bool describe_allgather(Exchange& ex, const void* sendbuf, int sendcount, MPI_Datatype sendtype,
                        void* recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
  int rank, size;
  if (!serves(comm, &rank, &size,
              {sendbuf == MPI_IN_PLACE ? MPI_DATATYPE_NULL : sendtype, recvtype}))
    return false;
  return describe_allgather_family(ex, sendbuf, sendcount, sendtype,
                                   uniform(recvbuf, size, recvcount, recvtype), rank);
}

bool describe_allgatherv(Exchange& ex, const void* sendbuf, int sendcount, MPI_Datatype sendtype,
                         void* recvbuf, const int* recvcounts, const int* displs,
                         MPI_Datatype recvtype, MPI_Comm comm) {
  int rank, size;
  if (!serves(comm, &rank, &size,
              {sendbuf == MPI_IN_PLACE ? MPI_DATATYPE_NULL : sendtype, recvtype}))
    return false;
  return describe_allgather_family(ex, sendbuf, sendcount, sendtype,
                                   varying(recvbuf, size, recvcounts, displs, recvtype), rank);
}

// Only the root's receive (gather) or send (scatter) arguments mean anything; the other
// ranks pass theirs on unread.
bool describe_gather_family(Exchange& ex, const void* sendbuf, int sendcount, MPI_Datatype sendtype,
                            const UserSide& recv, int root, int rank, int size) {
  if (root < 0 || root >= size) return false;
  const bool is_root = rank == root;
  if (sendbuf == MPI_IN_PLACE && !is_root) return false;
  const bool in_place = sendbuf == MPI_IN_PLACE;
  const UserSide send = uniform(sendbuf, 1, sendcount, sendtype);
  if (!describe_sides(ex, in_place ? nullptr : &send, is_root ? &recv : nullptr))
    return leave_to_host(any_left_to_host(
        {in_place ? MPI_DATATYPE_NULL : sendtype, is_root ? recv.type : MPI_DATATYPE_NULL}));
  if (!is_root) ex.recv.buffer = const_cast<void*>(recv.base);
  if (in_place) gather_in_place(ex, root, false);
  return true;
}

bool describe_gather(Exchange& ex, const void* sendbuf, int sendcount, MPI_Datatype sendtype,
                     void* recvbuf, int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm) {
  int rank, size;
  if (!serves(comm, &rank, &size, {sendtype})) return false;
  return describe_gather_family(ex, sendbuf, sendcount, sendtype,
                                uniform(recvbuf, size, recvcount, recvtype), root, rank, size);
}

bool describe_gatherv(Exchange& ex, const void* sendbuf, int sendcount, MPI_Datatype sendtype,
                      void* recvbuf, const int* recvcounts, const int* displs,
                      MPI_Datatype recvtype, int root, MPI_Comm comm) {
  int rank, size;
  if (!serves(comm, &rank, &size, {sendtype})) return false;
  return describe_gather_family(ex, sendbuf, sendcount, sendtype,
                                varying(recvbuf, size, recvcounts, displs, recvtype), root, rank,
                                size);
}

bool describe_scatter_family(Exchange& ex, const UserSide& send, void* recvbuf, int recvcount,
                             MPI_Datatype recvtype, int root, int rank, int size) {
  if (root < 0 || root >= size) return false;
  const bool is_root = rank == root;
  if (recvbuf == MPI_IN_PLACE && !is_root) return false;
  const bool in_place = recvbuf == MPI_IN_PLACE;
  const UserSide recv = uniform(recvbuf, 1, recvcount, recvtype);
  if (!describe_sides(ex, is_root ? &send : nullptr, in_place ? nullptr : &recv))
    return leave_to_host(any_left_to_host(
        {is_root ? send.type : MPI_DATATYPE_NULL, in_place ? MPI_DATATYPE_NULL : recvtype}));
  if (!is_root) ex.send.buffer = const_cast<void*>(send.base);
  if (in_place) {
    ex.recv.buffer = MPI_IN_PLACE;
    ex.pack_send.except = root;  // the root's own block stays in its send buffer
  }
  return true;
}

bool describe_scatter(Exchange& ex, const void* sendbuf, int sendcount, MPI_Datatype sendtype,
                      void* recvbuf, int recvcount, MPI_Datatype recvtype, int root,
                      MPI_Comm comm) {
  int rank, size;
  if (!serves(comm, &rank, &size, {recvtype})) return false;
  return describe_scatter_family(ex, uniform(sendbuf, size, sendcount, sendtype), recvbuf,
                                 recvcount, recvtype, root, rank, size);
}

bool describe_scatterv(Exchange& ex, const void* sendbuf, const int* sendcounts, const int* displs,
                       MPI_Datatype sendtype, void* recvbuf, int recvcount, MPI_Datatype recvtype,
                       int root, MPI_Comm comm) {
  int rank, size;
  if (!serves(comm, &rank, &size, {recvtype})) return false;
  return describe_scatter_family(ex, varying(sendbuf, size, sendcounts, displs, sendtype), recvbuf,
                                 recvcount, recvtype, root, rank, size);
}

// The root sends from its send side, the other ranks receive into their receive side.
bool describe_bcast(Exchange& ex, void* buffer, int count, MPI_Datatype type, int root,
                    MPI_Comm comm) {
  int rank, size;
  if (!serves(comm, &rank, &size, {type})) return false;
  if (root < 0 || root >= size) return false;
  const UserSide side = uniform(buffer, 1, count, type);
  ex.bcast_root = rank == root;
  if (!describe_sides(ex, ex.bcast_root ? &side : nullptr, ex.bcast_root ? nullptr : &side))
    return leave_to_host(any_left_to_host({type}));
  return true;
}

// The family's table: one descriptor per collective (ops/coll_exchange.hpp).
using Allgather = Collective<LOOM_UNIFORM_HOST_FORMS(Allgather, allgather, ArraysOn::Receive),
                             describe_allgather, UniformBytes>;
using Allgatherv =
    Collective<LOOM_HOST_FORMS(Allgatherv, allgatherv), describe_allgatherv, GathervBytes>;
using Gather = Collective<LOOM_UNIFORM_HOST_FORMS(Gather, gather, ArraysOn::Receive),
                          describe_gather, UniformBytes>;
using Gatherv = Collective<LOOM_HOST_FORMS(Gatherv, gatherv), describe_gatherv, GathervBytes>;
using Scatter = Collective<LOOM_UNIFORM_HOST_FORMS(Scatter, scatter, ArraysOn::Send),
                           describe_scatter, UniformBytes>;
using Scatterv = Collective<LOOM_HOST_FORMS(Scatterv, scatterv), describe_scatterv, ScattervBytes>;
using Bcast = Collective<LOOM_HOST_FORMS(Bcast, bcast), describe_bcast, BcastBytes>;

}  // namespace

// ---- Allgather ----------------------------------------------------------------------------

int allgather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
              int recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
  if (int rank, size; intracommunicator(comm, &rank, &size))
    if (SmallCall call; small_call(uniform(sendbuf, 1, sendcount, sendtype),
                                   uniform(recvbuf, size, recvcount, recvtype), &call))
      return run_small<Allgather>(call, comm);
  return run_blocking<Allgather>(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
}

int iallgather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
               int recvcount, MPI_Datatype recvtype, MPI_Comm comm, const Later& later) {
  return run_later<Allgather>(later, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                              comm);
}

int allgatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
               const int recvcounts[], const int displs[], MPI_Datatype recvtype, MPI_Comm comm) {
  return run_blocking<Allgatherv>(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs,
                                  recvtype, comm);
}

int iallgatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                const int recvcounts[], const int displs[], MPI_Datatype recvtype, MPI_Comm comm,
                const Later& later) {
  return run_later<Allgatherv>(later, sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs,
                               recvtype, comm);
}

// ---- Gather and scatter -------------------------------------------------------------------

int gather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
           MPI_Datatype recvtype, int root, MPI_Comm comm) {
  return run_blocking<Gather>(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root,
                              comm);
}

int igather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
            MPI_Datatype recvtype, int root, MPI_Comm comm, const Later& later) {
  return run_later<Gather>(later, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root,
                           comm);
}

int gatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
            const int recvcounts[], const int displs[], MPI_Datatype recvtype, int root,
            MPI_Comm comm) {
  return run_blocking<Gatherv>(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype,
                               root, comm);
}

int igatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
             const int recvcounts[], const int displs[], MPI_Datatype recvtype, int root,
             MPI_Comm comm, const Later& later) {
  return run_later<Gatherv>(later, sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs,
                            recvtype, root, comm);
}

int scatter(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
            MPI_Datatype recvtype, int root, MPI_Comm comm) {
  return run_blocking<Scatter>(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root,
                               comm);
}

int iscatter(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
             int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm, const Later& later) {
  return run_later<Scatter>(later, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root,
                            comm);
}

int scatterv(const void* sendbuf, const int sendcounts[], const int displs[], MPI_Datatype sendtype,
             void* recvbuf, int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm) {
  return run_blocking<Scatterv>(sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype,
                                root, comm);
}

int iscatterv(const void* sendbuf, const int sendcounts[], const int displs[],
              MPI_Datatype sendtype, void* recvbuf, int recvcount, MPI_Datatype recvtype, int root,
              MPI_Comm comm, const Later& later) {
  return run_later<Scatterv>(later, sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount,
                             recvtype, root, comm);
}

// ---- Broadcast ----------------------------------------------------------------------------

int bcast(void* buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm) {
  return run_blocking<Bcast>(buffer, count, datatype, root, comm);
}

int ibcast(void* buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm,
           const Later& later) {
  return run_later<Bcast>(later, buffer, count, datatype, root, comm);
}

}  // namespace loom::ops
