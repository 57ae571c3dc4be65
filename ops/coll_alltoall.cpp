// MPI_Alltoall, MPI_Alltoallv, MPI_Alltoallw and their non-blocking forms (ops/coll.hpp). Float
// data for other nodes may go through the compressed exchange (ops/compressed_alltoall.hpp).

#include "ops/coll.hpp"
#include "ops/coll_exchange.hpp"
#include "ops/compressed_alltoall.hpp"

namespace loom::ops {
using namespace loom::ops::coll;  // NOLINT: the shared machinery
namespace {

// All-to-all family: MPI_IN_PLACE takes the data to send from the receive side.
bool describe_all_to_all(Exchange& ex, bool in_place, const UserSide& send, const UserSide& recv) {
  if (!describe_sides(ex, in_place ? nullptr : &send, &recv)) return false;
  if (in_place) {
    ex.pack_recv = ex.recv.staged;
    ex.send.buffer = MPI_IN_PLACE;
    ex.send.count = ex.recv.count;
  }
  return true;
}

bool describe_alltoall(Exchange& ex, const void* sendbuf, int sendcount, MPI_Datatype sendtype,
                       void* recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
  int rank, size;
  const bool in_place = sendbuf == MPI_IN_PLACE;
  const MPI_Datatype sent = in_place ? MPI_DATATYPE_NULL : sendtype;
  if (!serves(comm, &rank, &size, {sent, recvtype})) return false;
  UserSide send = uniform(sendbuf, size, sendcount, sendtype);
  send.seamable = true;
  if (!describe_all_to_all(ex, in_place, send, uniform(recvbuf, size, recvcount, recvtype)))
    return leave_to_host(any_left_to_host({sent, recvtype}));
  return true;
}

bool describe_alltoallv(Exchange& ex, const void* sendbuf, const int* sendcounts,
                        const int* sdispls, MPI_Datatype sendtype, void* recvbuf,
                        const int* recvcounts, const int* rdispls, MPI_Datatype recvtype,
                        MPI_Comm comm) {
  int rank, size;
  const bool in_place = sendbuf == MPI_IN_PLACE;
  const MPI_Datatype sent = in_place ? MPI_DATATYPE_NULL : sendtype;
  if (!serves(comm, &rank, &size, {sent, recvtype})) return false;
  if (!describe_all_to_all(ex, in_place, varying(sendbuf, size, sendcounts, sdispls, sendtype),
                           varying(recvbuf, size, recvcounts, rdispls, recvtype)))
    return leave_to_host(any_left_to_host({sent, recvtype}));
  return true;
}

bool describe_alltoallw(Exchange& ex, const void* sendbuf, const int* sendcounts,
                        const int* sdispls, const MPI_Datatype* sendtypes, void* recvbuf,
                        const int* recvcounts, const int* rdispls, const MPI_Datatype* recvtypes,
                        MPI_Comm comm) {
  int rank, size;
  const bool in_place = sendbuf == MPI_IN_PLACE;
  if (!intracommunicator(comm, &rank, &size)) {
    if (!config().disabled && comm != MPI_COMM_NULL) {
      int peers = 0;
      PMPI_Comm_remote_size(comm, &peers);
      leave_to_host((!in_place && any_left_to_host(sendtypes, peers)) ||
                    any_left_to_host(recvtypes, peers));
    }
    return false;
  }
  if (!describe_all_to_all(ex, in_place,
                           per_type(sendbuf, size, sendcounts, sdispls, nullptr, sendtypes),
                           per_type(recvbuf, size, recvcounts, rdispls, nullptr, recvtypes)))
    return leave_to_host((!in_place && any_left_to_host(sendtypes, size)) ||
                         any_left_to_host(recvtypes, size));
  return true;
}

// The family's table: one descriptor per collective (ops/coll_exchange.hpp).
using Alltoall = Collective<LOOM_HOST_FORMS(Alltoall, alltoall), describe_alltoall, UniformBytes>;
using Alltoallv =
    Collective<LOOM_HOST_FORMS(Alltoallv, alltoallv), describe_alltoallv, VaryingBytes>;
using Alltoallw =
    Collective<LOOM_HOST_FORMS(Alltoallw, alltoallw), describe_alltoallw, PerTypeBytes>;

}  // namespace

// ---- All-to-all -------------------------------------------------------------------------

int alltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
             int recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
  if (int rc; compressed_alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm,
                                  nullptr, &rc))
    return rc;
  if (HostCall call;
      uniform_passes_through(call, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype))
    return call.run([&] {
      return Alltoall::Host::call_now(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                                      comm);
    });
  if (int rank, size; intracommunicator(comm, &rank, &size))
    if (SmallCall call; small_call(uniform(sendbuf, size, sendcount, sendtype),
                                   uniform(recvbuf, size, recvcount, recvtype), &call))
      return run_small<Alltoall>(call, comm);
  return run_blocking<Alltoall>(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
}

int ialltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
              int recvcount, MPI_Datatype recvtype, MPI_Comm comm, const Later& later) {
  if (int rc; !later.persistent && later.request &&
              compressed_alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm,
                                  later.request, &rc))
    return rc;
  if (HostCall call;
      uniform_passes_through(call, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype))
    return call.run([&] {
      return Alltoall::Host::call_later(later, nullptr, sendbuf, sendcount, sendtype, recvbuf,
                                        recvcount, recvtype, comm);
    });
  return run_later<Alltoall>(later, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                             comm);
}

int alltoallv(const void* sendbuf, const int sendcounts[], const int sdispls[],
              MPI_Datatype sendtype, void* recvbuf, const int recvcounts[], const int rdispls[],
              MPI_Datatype recvtype, MPI_Comm comm) {
  if (int rc; compressed_alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts,
                                   rdispls, recvtype, comm, nullptr, &rc))
    return rc;
  if (HostCall call; collective_passes_through(call, sendbuf, sendtype, recvbuf, recvtype))
    return call.run([&] {
      return Alltoallv::Host::call_now(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts,
                                       rdispls, recvtype, comm);
    });
  return run_blocking<Alltoallv>(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts,
                                 rdispls, recvtype, comm);
}

int ialltoallv(const void* sendbuf, const int sendcounts[], const int sdispls[],
               MPI_Datatype sendtype, void* recvbuf, const int recvcounts[], const int rdispls[],
               MPI_Datatype recvtype, MPI_Comm comm, const Later& later) {
  if (int rc; !later.persistent && later.request &&
              compressed_alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts,
                                   rdispls, recvtype, comm, later.request, &rc))
    return rc;
  if (HostCall call; collective_passes_through(call, sendbuf, sendtype, recvbuf, recvtype))
    return call.run([&] {
      return Alltoallv::Host::call_later(later, nullptr, sendbuf, sendcounts, sdispls, sendtype,
                                         recvbuf, recvcounts, rdispls, recvtype, comm);
    });
  return run_later<Alltoallv>(later, sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts,
                              rdispls, recvtype, comm);
}

int alltoallw(const void* sendbuf, const int sendcounts[], const int sdispls[],
              const MPI_Datatype sendtypes[], void* recvbuf, const int recvcounts[],
              const int rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm) {
  return run_blocking<Alltoallw>(sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts,
                                 rdispls, recvtypes, comm);
}

int ialltoallw(const void* sendbuf, const int sendcounts[], const int sdispls[],
               const MPI_Datatype sendtypes[], void* recvbuf, const int recvcounts[],
               const int rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm,
               const Later& later) {
  return run_later<Alltoallw>(later, sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts,
                              rdispls, recvtypes, comm);
}

}  // namespace loom::ops
