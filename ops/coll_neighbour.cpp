// The neighbourhood collectives and their non-blocking forms (ops/coll.hpp). Blocking
// all-to-alls whose peers share this node go through the shared window
// (transport/shared_exchange.hpp) where it pays.

#include <algorithm>
#include <cstdint>

#include "exec/device_memory.hpp"

#include "ops/coll.hpp"
#include "ops/coll_exchange.hpp"

namespace loom::ops {
using namespace loom::ops::coll;  // NOLINT: the shared machinery
namespace {

// Neighbourhood collectives: the host leaves the blocks of MPI_PROC_NULL sources alone, and an
// all-to-all's blocks for MPI_PROC_NULL destinations (`per_destination`) go nowhere.
bool describe_neighbourhood(Exchange& ex, MPI_Comm comm, const void* sendbuf, const UserSide& send,
                            const UserSide& recv, bool types_left_to_host,
                            bool per_destination = true) {
  // MPI_IN_PLACE is not allowed here: the host reports it.
  if (sendbuf == MPI_IN_PLACE) return false;
  if (!describe_sides(ex, &send, &recv)) return leave_to_host(types_left_to_host);
  const bool skip_sends = per_destination && ex.send.staged;
  if (ex.unpack || skip_sends) {
    absent_neighbours(comm, &ex.absent, &ex.nowhere);
    if (ex.unpack) ex.unpack_select.absent = &ex.absent;
    if (skip_sends) ex.pack_send.absent = &ex.nowhere;
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
                                uniform(recvbuf, in, recvcount, recvtype), derived, false);
}

bool describe_neighbor_allgatherv(Exchange& ex, const void* sendbuf, int sendcount,
                                  MPI_Datatype sendtype, void* recvbuf, const int* recvcounts,
                                  const int* displs, MPI_Datatype recvtype, MPI_Comm comm) {
  int in, out;
  const bool derived = any_left_to_host({sendtype, recvtype});
  if (!neighbourhood(comm, &in, &out, derived)) return false;
  return describe_neighbourhood(ex, comm, sendbuf, uniform(sendbuf, 1, sendcount, sendtype),
                                varying(recvbuf, in, recvcounts, displs, recvtype), derived, false);
}

bool names_a_peer_twice(std::vector<int> ranks) {
  std::sort(ranks.begin(), ranks.end());
  for (size_t i = 1; i < ranks.size(); ++i)
    if (ranks[i] != MPI_PROC_NULL && ranks[i] == ranks[i - 1]) return true;
  return false;
}

// This rank's part of a blocking neighbourhood all-to-all: what decides whether the same-node
// window pays (transport::window_pays), and whether the host may run the call as written.
struct Part {
  int64_t moved = 0;  // bytes sent plus bytes received
  bool plain = true;  // every side basic or contiguous, in host memory
  void add(const void* buf, int64_t elements, MPI_Datatype type) {
    TypeRoute route;
    if (!route_of(type, &route)) {
      plain = false;  // the full path, where the host reports it
      return;
    }
    moved += elements * route.size;
    plain = plain && route.kind == TypeRoute::Kind::Direct && !exec::device_memory(buf);
  }
};

int64_t sum(const int* counts, int n) {
  int64_t total = 0;
  for (int i = 0; counts && i < n; ++i) total += counts[i];
  return total;
}

// Blocking neighbourhood all-to-alls: through the same-node window when the communicator has
// one and its ranks agree that it pays (SharedExchange::take_window), otherwise as run_blocking,
// or the host's call as written when this rank's types are plain. MPICH 4.0 pairs the repeated
// edges of MPI_Neighbor_alltoall the other way round from its v and w forms (and from
// Open MPI), so `uniform` calls on a graph with repeated edges keep the host's exchange.
// `part(in, out)` tells this rank's Part.
template <typename PartOf, typename Describe, typename OnBytes, typename AsWritten>
int run_neighbourhood(MPI_Comm comm, bool uniform, PartOf part_of, Describe describe,
                      OnBytes on_bytes, AsWritten as_written) {
  int in = 0, out = 0;
  SharedExchange* shared = transport::neighbourhood_window(comm);
  if (shared) {
    in = shared->in_degree;
    out = shared->out_degree;
  }
  const bool topology = shared || neighbour_degrees(comm, &in, &out);
  const Part part = topology ? part_of(in, out) : Part{0, false};
  if (shared && uniform && shared->repeated_neighbours < 0) {
    std::vector<int> sources, destinations;
    neighbour_lists(comm, in, out, &sources, &destinations);
    int repeated = names_a_peer_twice(sources) || names_a_peer_twice(destinations);
    PMPI_Allreduce(MPI_IN_PLACE, &repeated, 1, MPI_INT, MPI_MAX, comm);
    shared->repeated_neighbours = repeated;
  }
  const bool window_fits = shared && (!uniform || shared->repeated_neighbours == 0);
  const bool pays = window_fits && transport::window_pays(part.moved, !part.plain);
  const bool window = window_fits && shared->take_window(pays);
  if (!window && part.plain) return as_written();
  Exchange ex(comm);
  if (!describe(ex)) return as_written();
  if (window) {
    std::vector<int> sources, destinations;
    neighbour_lists(comm, in, out, &sources, &destinations);
    const int rc = ex.run_shared(*shared, sources, destinations, pays);
    if (rc != SharedExchange::kNotExchanged) return rc;
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
      [&](int in, int out) {
        Part part;
        part.add(sendbuf, int64_t{out} * sendcount, sendtype);
        part.add(recvbuf, int64_t{in} * recvcount, recvtype);
        return part;
      },
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
      [&](int in, int out) {
        Part part;
        part.add(sendbuf, sum(sendcounts, out), sendtype);
        part.add(recvbuf, sum(recvcounts, in), recvtype);
        return part;
      },
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
      [&](int in, int out) {
        Part part;
        for (int i = 0; sendcounts && sendtypes && i < out; ++i)
          part.add(sendbuf, sendcounts[i], sendtypes[i]);
        for (int i = 0; recvcounts && recvtypes && i < in; ++i)
          part.add(recvbuf, recvcounts[i], recvtypes[i]);
        return part;
      },
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
