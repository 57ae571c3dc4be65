// The neighbourhood collectives and their non-blocking forms (ops/coll.hpp). Blocking
// all-to-alls whose peers share this node go through the shared window
// (transport/shared_exchange.hpp).

#include <algorithm>

#include "ops/coll.hpp"
#include "ops/coll_exchange.hpp"

namespace loom::ops {
using namespace loom::ops::coll;  // NOLINT: the shared machinery
namespace {

// Neighbourhood collectives: the host leaves the blocks of MPI_PROC_NULL sources alone.
bool describe_neighbourhood(Exchange& ex, MPI_Comm comm, const void* sendbuf, const UserSide& send,
                            const UserSide& recv, bool types_left_to_host) {
  // MPI_IN_PLACE is not allowed here: the host reports it.
  if (sendbuf == MPI_IN_PLACE) return false;
  if (!describe_sides(ex, &send, &recv)) return leave_to_host(types_left_to_host);
  if (ex.unpack) {
    ex.absent = absent_sources(comm, recv.blocks);
    ex.unpack_select.absent = &ex.absent;
  }
  return true;
}

bool describe_neighbor_alltoall(Exchange& ex, const void* sendbuf, int sendcount,
                                MPI_Datatype sendtype, void* recvbuf, int recvcount,
                                MPI_Datatype recvtype, MPI_Comm comm) {
  int in, out;
  const bool derived = any_left_to_host({sendtype, recvtype});
  if (!neighbourhood(comm, &in, &out, derived)) return false;
  return describe_neighbourhood(ex, comm, sendbuf, uniform(sendbuf, out, sendcount, sendtype),
                                uniform(recvbuf, in, recvcount, recvtype), derived);
}

bool describe_neighbor_alltoallv(Exchange& ex, const void* sendbuf, const int* sendcounts,
                                 const int* sdispls, MPI_Datatype sendtype, void* recvbuf,
                                 const int* recvcounts, const int* rdispls, MPI_Datatype recvtype,
                                 MPI_Comm comm) {
  int in, out;
  const bool derived = any_left_to_host({sendtype, recvtype});
  if (!neighbourhood(comm, &in, &out, derived)) return false;
  return describe_neighbourhood(ex, comm, sendbuf,
                                varying(sendbuf, out, sendcounts, sdispls, sendtype),
                                varying(recvbuf, in, recvcounts, rdispls, recvtype), derived);
}

bool describe_neighbor_alltoallw(Exchange& ex, const void* sendbuf, const int* sendcounts,
                                 const MPI_Aint* sdispls, const MPI_Datatype* sendtypes,
                                 void* recvbuf, const int* recvcounts, const MPI_Aint* rdispls,
                                 const MPI_Datatype* recvtypes, MPI_Comm comm) {
  int in = 0, out = 0;
  if (!neighbour_degrees(comm, &in, &out)) return false;
  return describe_neighbourhood(
      ex, comm, sendbuf, per_type(sendbuf, out, sendcounts, nullptr, sdispls, sendtypes),
      per_type(recvbuf, in, recvcounts, nullptr, rdispls, recvtypes),
      any_left_to_host(sendtypes, out) || any_left_to_host(recvtypes, in));
}

bool describe_neighbor_allgather(Exchange& ex, const void* sendbuf, int sendcount,
                                 MPI_Datatype sendtype, void* recvbuf, int recvcount,
                                 MPI_Datatype recvtype, MPI_Comm comm) {
  int in, out;
  const bool derived = any_left_to_host({sendtype, recvtype});
  if (!neighbourhood(comm, &in, &out, derived)) return false;
  return describe_neighbourhood(ex, comm, sendbuf, uniform(sendbuf, 1, sendcount, sendtype),
                                uniform(recvbuf, in, recvcount, recvtype), derived);
}

bool describe_neighbor_allgatherv(Exchange& ex, const void* sendbuf, int sendcount,
                                  MPI_Datatype sendtype, void* recvbuf, const int* recvcounts,
                                  const int* displs, MPI_Datatype recvtype, MPI_Comm comm) {
  int in, out;
  const bool derived = any_left_to_host({sendtype, recvtype});
  if (!neighbourhood(comm, &in, &out, derived)) return false;
  return describe_neighbourhood(ex, comm, sendbuf, uniform(sendbuf, 1, sendcount, sendtype),
                                varying(recvbuf, in, recvcounts, displs, recvtype), derived);
}

bool names_a_peer_twice(std::vector<int> ranks) {
  std::sort(ranks.begin(), ranks.end());
  for (size_t i = 1; i < ranks.size(); ++i)
    if (ranks[i] != MPI_PROC_NULL && ranks[i] == ranks[i - 1]) return true;
  return false;
}

// Blocking neighbourhood all-to-alls: through the same-node window when the communicator
// has one (shared_exchange.hpp), otherwise as run_blocking. MPICH 4.0 pairs the repeated
// edges of MPI_Neighbor_alltoall the other way round from its v and w forms (and from
// Open MPI), so `uniform` calls on a graph with repeated edges keep the host's exchange.
template <typename Describe, typename OnBytes, typename AsWritten>
int run_neighbourhood(MPI_Comm comm, bool uniform, Describe describe, OnBytes on_bytes,
                      AsWritten as_written) {
  Exchange ex(comm);
  if (!describe(ex)) return as_written();
  {
    if (SharedExchange* shared = transport::neighbourhood_window(comm)) {
      int in = 0, out = 0;
      neighbour_degrees(comm, &in, &out);
      std::vector<int> sources, destinations;
      neighbour_lists(comm, in, out, &sources, &destinations);
      if (uniform && shared->repeated_neighbours < 0) {
        int repeated = names_a_peer_twice(sources) || names_a_peer_twice(destinations);
        PMPI_Allreduce(MPI_IN_PLACE, &repeated, 1, MPI_INT, MPI_MAX, comm);
        shared->repeated_neighbours = repeated;
      }
      if (!uniform || shared->repeated_neighbours == 0) {
        const int rc = ex.run_shared(*shared, sources, destinations);
        if (rc != SharedExchange::kNotExchanged) return rc;
      }
    }
  }
  if (int rc = ex.start(); rc != MPI_SUCCESS) return rc;
  return ex.finish(on_bytes(ex));
}

}  // namespace

// ---- Neighbourhood collectives ------------------------------------------------------------

int neighbor_alltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                      int recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
  return run_neighbourhood(
      comm, true,
      [&](Exchange& ex) {
        return describe_neighbor_alltoall(ex, sendbuf, sendcount, sendtype, recvbuf, recvcount,
                                          recvtype, comm);
      },
      [&](Exchange& ex) {
        return host().Neighbor_alltoall(ex.send.buffer, ex.send.count, MPI_BYTE, ex.recv.buffer,
                                        ex.recv.count, MPI_BYTE, comm);
      },
      [&] {
        return host().Neighbor_alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                                        comm);
      });
}

int ineighbor_alltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                       int recvcount, MPI_Datatype recvtype, MPI_Comm comm, const Later& later) {
  return run_later(
      comm, later,
      [&](Exchange& ex) {
        return describe_neighbor_alltoall(ex, sendbuf, sendcount, sendtype, recvbuf, recvcount,
                                          recvtype, comm);
      },
      [&](Exchange& ex) {
        return LOOM_HOST_LATER(later, Neighbor_alltoall, neighbor_alltoall, ex.send.buffer,
                               ex.send.count, MPI_BYTE, ex.recv.buffer, ex.recv.count, MPI_BYTE,
                               comm);
      },
      [&] {
        return LOOM_HOST_LATER(later, Neighbor_alltoall, neighbor_alltoall, sendbuf, sendcount,
                               sendtype, recvbuf, recvcount, recvtype, comm);
      });
}

int neighbor_alltoallv(const void* sendbuf, const int sendcounts[], const int sdispls[],
                       MPI_Datatype sendtype, void* recvbuf, const int recvcounts[],
                       const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm) {
  return run_neighbourhood(
      comm, false,
      [&](Exchange& ex) {
        return describe_neighbor_alltoallv(ex, sendbuf, sendcounts, sdispls, sendtype, recvbuf,
                                           recvcounts, rdispls, recvtype, comm);
      },
      [&](Exchange& ex) {
        return host().Neighbor_alltoallv(
            ex.send.buffer, ex.send.counts.data(), ex.send.displs.data(), MPI_BYTE, ex.recv.buffer,
            ex.recv.counts.data(), ex.recv.displs.data(), MPI_BYTE, comm);
      },
      [&] {
        return host().Neighbor_alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf,
                                         recvcounts, rdispls, recvtype, comm);
      });
}

int ineighbor_alltoallv(const void* sendbuf, const int sendcounts[], const int sdispls[],
                        MPI_Datatype sendtype, void* recvbuf, const int recvcounts[],
                        const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm,
                        const Later& later) {
  return run_later(
      comm, later,
      [&](Exchange& ex) {
        return describe_neighbor_alltoallv(ex, sendbuf, sendcounts, sdispls, sendtype, recvbuf,
                                           recvcounts, rdispls, recvtype, comm);
      },
      [&](Exchange& ex) {
        return LOOM_HOST_LATER(later, Neighbor_alltoallv, neighbor_alltoallv, ex.send.buffer,
                               ex.send.counts.data(), ex.send.displs.data(), MPI_BYTE,
                               ex.recv.buffer, ex.recv.counts.data(), ex.recv.displs.data(),
                               MPI_BYTE, comm);
      },
      [&] {
        return LOOM_HOST_LATER(later, Neighbor_alltoallv, neighbor_alltoallv, sendbuf, sendcounts,
                               sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm);
      });
}

int neighbor_alltoallw(const void* sendbuf, const int sendcounts[], const MPI_Aint sdispls[],
                       const MPI_Datatype sendtypes[], void* recvbuf, const int recvcounts[],
                       const MPI_Aint rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm) {
  return run_neighbourhood(
      comm, false,
      [&](Exchange& ex) {
        return describe_neighbor_alltoallw(ex, sendbuf, sendcounts, sdispls, sendtypes, recvbuf,
                                           recvcounts, rdispls, recvtypes, comm);
      },
      [&](Exchange& ex) {
        return host().Neighbor_alltoallw(ex.send.buffer, ex.send.counts.data(),
                                         ex.send.aint_displs.data(), ex.send.types.data(),
                                         ex.recv.buffer, ex.recv.counts.data(),
                                         ex.recv.aint_displs.data(), ex.recv.types.data(), comm);
      },
      [&] {
        return host().Neighbor_alltoallw(sendbuf, sendcounts, sdispls, sendtypes, recvbuf,
                                         recvcounts, rdispls, recvtypes, comm);
      });
}

int ineighbor_alltoallw(const void* sendbuf, const int sendcounts[], const MPI_Aint sdispls[],
                        const MPI_Datatype sendtypes[], void* recvbuf, const int recvcounts[],
                        const MPI_Aint rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm,
                        const Later& later) {
  return run_later(
      comm, later,
      [&](Exchange& ex) {
        return describe_neighbor_alltoallw(ex, sendbuf, sendcounts, sdispls, sendtypes, recvbuf,
                                           recvcounts, rdispls, recvtypes, comm);
      },
      [&](Exchange& ex) {
        return LOOM_HOST_LATER(later, Neighbor_alltoallw, neighbor_alltoallw, ex.send.buffer,
                               ex.send.counts.data(), ex.send.aint_displs.data(),
                               ex.send.types.data(), ex.recv.buffer, ex.recv.counts.data(),
                               ex.recv.aint_displs.data(), ex.recv.types.data(), comm);
      },
      [&] {
        return LOOM_HOST_LATER(later, Neighbor_alltoallw, neighbor_alltoallw, sendbuf, sendcounts,
                               sdispls, sendtypes, recvbuf, recvcounts, rdispls, recvtypes, comm);
      });
}

int neighbor_allgather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                       int recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
  return run_blocking(
      comm,
      [&](Exchange& ex) {
        return describe_neighbor_allgather(ex, sendbuf, sendcount, sendtype, recvbuf, recvcount,
                                           recvtype, comm);
      },
      [&](Exchange& ex) {
        return host().Neighbor_allgather(ex.send.buffer, ex.send.count, MPI_BYTE, ex.recv.buffer,
                                         ex.recv.count, MPI_BYTE, comm);
      },
      [&] {
        return host().Neighbor_allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                                         comm);
      });
}

int ineighbor_allgather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                        int recvcount, MPI_Datatype recvtype, MPI_Comm comm, const Later& later) {
  return run_later(
      comm, later,
      [&](Exchange& ex) {
        return describe_neighbor_allgather(ex, sendbuf, sendcount, sendtype, recvbuf, recvcount,
                                           recvtype, comm);
      },
      [&](Exchange& ex) {
        return LOOM_HOST_LATER(later, Neighbor_allgather, neighbor_allgather, ex.send.buffer,
                               ex.send.count, MPI_BYTE, ex.recv.buffer, ex.recv.count, MPI_BYTE,
                               comm);
      },
      [&] {
        return LOOM_HOST_LATER(later, Neighbor_allgather, neighbor_allgather, sendbuf, sendcount,
                               sendtype, recvbuf, recvcount, recvtype, comm);
      });
}

int neighbor_allgatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                        const int recvcounts[], const int displs[], MPI_Datatype recvtype,
                        MPI_Comm comm) {
  return run_blocking(
      comm,
      [&](Exchange& ex) {
        return describe_neighbor_allgatherv(ex, sendbuf, sendcount, sendtype, recvbuf, recvcounts,
                                            displs, recvtype, comm);
      },
      [&](Exchange& ex) {
        return host().Neighbor_allgatherv(ex.send.buffer, ex.send.count, MPI_BYTE, ex.recv.buffer,
                                          ex.recv.counts.data(), ex.recv.displs.data(), MPI_BYTE,
                                          comm);
      },
      [&] {
        return host().Neighbor_allgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs,
                                          recvtype, comm);
      });
}

int ineighbor_allgatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                         const int recvcounts[], const int displs[], MPI_Datatype recvtype,
                         MPI_Comm comm, const Later& later) {
  return run_later(
      comm, later,
      [&](Exchange& ex) {
        return describe_neighbor_allgatherv(ex, sendbuf, sendcount, sendtype, recvbuf, recvcounts,
                                            displs, recvtype, comm);
      },
      [&](Exchange& ex) {
        return LOOM_HOST_LATER(later, Neighbor_allgatherv, neighbor_allgatherv, ex.send.buffer,
                               ex.send.count, MPI_BYTE, ex.recv.buffer, ex.recv.counts.data(),
                               ex.recv.displs.data(), MPI_BYTE, comm);
      },
      [&] {
        return LOOM_HOST_LATER(later, Neighbor_allgatherv, neighbor_allgatherv, sendbuf, sendcount,
                               sendtype, recvbuf, recvcounts, displs, recvtype, comm);
      });
}

}  // namespace loom::ops
