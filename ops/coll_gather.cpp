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
// Loom's Exchange when Loom packs (`ex`), else beside the host's request.

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

// `v_form(counts, displs)` makes the host's v form where `own` (the host's MPI_I<name> or
// <Name>_init, LOOM_HOST_LATER) would misdeliver.
template <typename VForm, typename Own>
int v_form_or_own(const Later& later, Exchange* ex, MPI_Comm comm, int count, VForm v_form,
                  Own own) {
  if (through_v_form(later, comm))
    if (auto arrays = uniform_arrays(comm, count)) {
      const int rc = v_form(arrays->counts.data(), arrays->displs.data());
      if (rc == MPI_SUCCESS) keep_arrays(ex, *later.request, std::move(arrays));
      return rc;
    }
  return own();
}

#ifdef LOOM_PERSISTENT_COLLECTIVES
#define LOOM_HOST_V_FORM(Name, ...) host().Name##_init(__VA_ARGS__, later.info, later.request)
#else  // never called: through_v_form needs a persistent call
#define LOOM_HOST_V_FORM(Name, ...) MPI_ERR_INTERN
#endif

int host_allgather_later(const Later& later, Exchange* ex, const void* sendbuf, int sendcount,
                         MPI_Datatype sendtype, void* recvbuf, int recvcount, MPI_Datatype recvtype,
                         MPI_Comm comm) {
  return v_form_or_own(
      later, ex, comm, recvcount,
      [&](const int* counts, const int* displs) {
        return LOOM_HOST_V_FORM(Allgatherv, sendbuf, sendcount, sendtype, recvbuf, counts, displs,
                                recvtype, comm);
      },
      [&] {
        return LOOM_HOST_LATER(later, Allgather, allgather, sendbuf, sendcount, sendtype, recvbuf,
                               recvcount, recvtype, comm);
      });
}

int host_gather_later(const Later& later, Exchange* ex, const void* sendbuf, int sendcount,
                      MPI_Datatype sendtype, void* recvbuf, int recvcount, MPI_Datatype recvtype,
                      int root, MPI_Comm comm) {
  return v_form_or_own(
      later, ex, comm, recvcount,
      [&](const int* counts, const int* displs) {
        return LOOM_HOST_V_FORM(Gatherv, sendbuf, sendcount, sendtype, recvbuf, counts, displs,
                                recvtype, root, comm);
      },
      [&] {
        return LOOM_HOST_LATER(later, Gather, gather, sendbuf, sendcount, sendtype, recvbuf,
                               recvcount, recvtype, root, comm);
      });
}

int host_scatter_later(const Later& later, Exchange* ex, const void* sendbuf, int sendcount,
                       MPI_Datatype sendtype, void* recvbuf, int recvcount, MPI_Datatype recvtype,
                       int root, MPI_Comm comm) {
  return v_form_or_own(
      later, ex, comm, sendcount,
      [&](const int* counts, const int* displs) {
        return LOOM_HOST_V_FORM(Scatterv, sendbuf, counts, displs, sendtype, recvbuf, recvcount,
                                recvtype, root, comm);
      },
      [&] {
        return LOOM_HOST_LATER(later, Scatter, scatter, sendbuf, sendcount, sendtype, recvbuf,
                               recvcount, recvtype, root, comm);
      });
}

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

void* bcast_buffer(const Exchange& ex) {
  return ex.bcast_root ? ex.send.buffer : ex.recv.buffer;
}

int bcast_count(const Exchange& ex) {
  return ex.bcast_root ? ex.send.count : ex.recv.count;
}

}  // namespace

// ---- Allgather ----------------------------------------------------------------------------

int allgather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
              int recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
  if (int rank, size; intracommunicator(comm, &rank, &size))
    if (SmallCall call; small_call(uniform(sendbuf, 1, sendcount, sendtype),
                                   uniform(recvbuf, size, recvcount, recvtype), &call))
      return run_small(call, [&](const void* send, int sent, MPI_Datatype send_type, void* recv,
                                 int received, MPI_Datatype recv_type) {
        return host().Allgather(send, sent, send_type, recv, received, recv_type, comm);
      });
  return run_blocking(
      comm,
      [&](Exchange& ex) {
        return describe_allgather(ex, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                                  comm);
      },
      [&](Exchange& ex) {
        return host().Allgather(ex.send.buffer, ex.send.count, MPI_BYTE, ex.recv.buffer,
                                ex.recv.count, MPI_BYTE, comm);
      },
      [&] {
        return host().Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
      });
}

int iallgather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
               int recvcount, MPI_Datatype recvtype, MPI_Comm comm, const Later& later) {
  return run_later(
      comm, later,
      [&](Exchange& ex) {
        return describe_allgather(ex, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                                  comm);
      },
      [&](Exchange& ex) {
        return host_allgather_later(later, &ex, ex.send.buffer, ex.send.count, MPI_BYTE,
                                    ex.recv.buffer, ex.recv.count, MPI_BYTE, comm);
      },
      [&] {
        return host_allgather_later(later, nullptr, sendbuf, sendcount, sendtype, recvbuf,
                                    recvcount, recvtype, comm);
      });
}

int allgatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
               const int recvcounts[], const int displs[], MPI_Datatype recvtype, MPI_Comm comm) {
  return run_blocking(
      comm,
      [&](Exchange& ex) {
        return describe_allgatherv(ex, sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs,
                                   recvtype, comm);
      },
      [&](Exchange& ex) {
        return host().Allgatherv(ex.send.buffer, ex.send.count, MPI_BYTE, ex.recv.buffer,
                                 ex.recv.counts.data(), ex.recv.displs.data(), MPI_BYTE, comm);
      },
      [&] {
        return host().Allgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs,
                                 recvtype, comm);
      });
}

int iallgatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                const int recvcounts[], const int displs[], MPI_Datatype recvtype, MPI_Comm comm,
                const Later& later) {
  return run_later(
      comm, later,
      [&](Exchange& ex) {
        return describe_allgatherv(ex, sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs,
                                   recvtype, comm);
      },
      [&](Exchange& ex) {
        return LOOM_HOST_LATER(later, Allgatherv, allgatherv, ex.send.buffer, ex.send.count,
                               MPI_BYTE, ex.recv.buffer, ex.recv.counts.data(),
                               ex.recv.displs.data(), MPI_BYTE, comm);
      },
      [&] {
        return LOOM_HOST_LATER(later, Allgatherv, allgatherv, sendbuf, sendcount, sendtype, recvbuf,
                               recvcounts, displs, recvtype, comm);
      });
}

// ---- Gather and scatter -------------------------------------------------------------------

int gather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
           MPI_Datatype recvtype, int root, MPI_Comm comm) {
  return run_blocking(
      comm,
      [&](Exchange& ex) {
        return describe_gather(ex, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root,
                               comm);
      },
      [&](Exchange& ex) {
        return host().Gather(ex.send.buffer, ex.send.count, MPI_BYTE, ex.recv.buffer, ex.recv.count,
                             MPI_BYTE, root, comm);
      },
      [&] {
        return host().Gather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root,
                             comm);
      });
}

int igather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
            MPI_Datatype recvtype, int root, MPI_Comm comm, const Later& later) {
  return run_later(
      comm, later,
      [&](Exchange& ex) {
        return describe_gather(ex, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root,
                               comm);
      },
      [&](Exchange& ex) {
        return host_gather_later(later, &ex, ex.send.buffer, ex.send.count, MPI_BYTE,
                                 ex.recv.buffer, ex.recv.count, MPI_BYTE, root, comm);
      },
      [&] {
        return host_gather_later(later, nullptr, sendbuf, sendcount, sendtype, recvbuf, recvcount,
                                 recvtype, root, comm);
      });
}

int gatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
            const int recvcounts[], const int displs[], MPI_Datatype recvtype, int root,
            MPI_Comm comm) {
  return run_blocking(
      comm,
      [&](Exchange& ex) {
        return describe_gatherv(ex, sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs,
                                recvtype, root, comm);
      },
      [&](Exchange& ex) {
        return host().Gatherv(ex.send.buffer, ex.send.count, MPI_BYTE, ex.recv.buffer,
                              ex.recv.counts.data(), ex.recv.displs.data(), MPI_BYTE, root, comm);
      },
      [&] {
        return host().Gatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype,
                              root, comm);
      });
}

int igatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
             const int recvcounts[], const int displs[], MPI_Datatype recvtype, int root,
             MPI_Comm comm, const Later& later) {
  return run_later(
      comm, later,
      [&](Exchange& ex) {
        return describe_gatherv(ex, sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs,
                                recvtype, root, comm);
      },
      [&](Exchange& ex) {
        return LOOM_HOST_LATER(later, Gatherv, gatherv, ex.send.buffer, ex.send.count, MPI_BYTE,
                               ex.recv.buffer, ex.recv.counts.data(), ex.recv.displs.data(),
                               MPI_BYTE, root, comm);
      },
      [&] {
        return LOOM_HOST_LATER(later, Gatherv, gatherv, sendbuf, sendcount, sendtype, recvbuf,
                               recvcounts, displs, recvtype, root, comm);
      });
}

int scatter(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
            MPI_Datatype recvtype, int root, MPI_Comm comm) {
  return run_blocking(
      comm,
      [&](Exchange& ex) {
        return describe_scatter(ex, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                                root, comm);
      },
      [&](Exchange& ex) {
        return host().Scatter(ex.send.buffer, ex.send.count, MPI_BYTE, ex.recv.buffer,
                              ex.recv.count, MPI_BYTE, root, comm);
      },
      [&] {
        return host().Scatter(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root,
                              comm);
      });
}

int iscatter(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
             int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm, const Later& later) {
  return run_later(
      comm, later,
      [&](Exchange& ex) {
        return describe_scatter(ex, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                                root, comm);
      },
      [&](Exchange& ex) {
        return host_scatter_later(later, &ex, ex.send.buffer, ex.send.count, MPI_BYTE,
                                  ex.recv.buffer, ex.recv.count, MPI_BYTE, root, comm);
      },
      [&] {
        return host_scatter_later(later, nullptr, sendbuf, sendcount, sendtype, recvbuf, recvcount,
                                  recvtype, root, comm);
      });
}

int scatterv(const void* sendbuf, const int sendcounts[], const int displs[], MPI_Datatype sendtype,
             void* recvbuf, int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm) {
  return run_blocking(
      comm,
      [&](Exchange& ex) {
        return describe_scatterv(ex, sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount,
                                 recvtype, root, comm);
      },
      [&](Exchange& ex) {
        return host().Scatterv(ex.send.buffer, ex.send.counts.data(), ex.send.displs.data(),
                               MPI_BYTE, ex.recv.buffer, ex.recv.count, MPI_BYTE, root, comm);
      },
      [&] {
        return host().Scatterv(sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype,
                               root, comm);
      });
}

int iscatterv(const void* sendbuf, const int sendcounts[], const int displs[],
              MPI_Datatype sendtype, void* recvbuf, int recvcount, MPI_Datatype recvtype, int root,
              MPI_Comm comm, const Later& later) {
  return run_later(
      comm, later,
      [&](Exchange& ex) {
        return describe_scatterv(ex, sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount,
                                 recvtype, root, comm);
      },
      [&](Exchange& ex) {
        return LOOM_HOST_LATER(later, Scatterv, scatterv, ex.send.buffer, ex.send.counts.data(),
                               ex.send.displs.data(), MPI_BYTE, ex.recv.buffer, ex.recv.count,
                               MPI_BYTE, root, comm);
      },
      [&] {
        return LOOM_HOST_LATER(later, Scatterv, scatterv, sendbuf, sendcounts, displs, sendtype,
                               recvbuf, recvcount, recvtype, root, comm);
      });
}

// ---- Broadcast ----------------------------------------------------------------------------

int bcast(void* buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm) {
  return run_blocking(
      comm, [&](Exchange& ex) { return describe_bcast(ex, buffer, count, datatype, root, comm); },
      [&](Exchange& ex) {
        return host().Bcast(bcast_buffer(ex), bcast_count(ex), MPI_BYTE, root, comm);
      },
      [&] { return host().Bcast(buffer, count, datatype, root, comm); });
}

int ibcast(void* buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm,
           const Later& later) {
  return run_later(
      comm, later,
      [&](Exchange& ex) { return describe_bcast(ex, buffer, count, datatype, root, comm); },
      [&](Exchange& ex) {
        return LOOM_HOST_LATER(later, Bcast, bcast, bcast_buffer(ex), bcast_count(ex), MPI_BYTE,
                               root, comm);
      },
      [&] { return LOOM_HOST_LATER(later, Bcast, bcast, buffer, count, datatype, root, comm); });
}

}  // namespace loom::ops
