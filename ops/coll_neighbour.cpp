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

// The neighbour lists of `comm` in block order and which entries are MPI_PROC_NULL (1), kept
// with its window state where it has one (a topology never changes), asked of the host on every
// call otherwise. `absent_*`: null where none is.
struct Neighbours {
  const std::vector<int>* sources = nullptr;
  const std::vector<int>* destinations = nullptr;
  const std::vector<uint8_t>* absent_sources = nullptr;
  const std::vector<uint8_t>* absent_destinations = nullptr;
  // Without window state.
  std::vector<int> own_sources, own_destinations;
  std::vector<uint8_t> own_absent_sources, own_absent_destinations;
};

const std::vector<uint8_t>* any_absent(const std::vector<uint8_t>& absent) {
  return std::find(absent.begin(), absent.end(), uint8_t{1}) != absent.end() ? &absent : nullptr;
}

void mark_absent(const std::vector<int>& ranks, std::vector<uint8_t>* absent) {
  absent->resize(ranks.size());
  for (size_t i = 0; i < ranks.size(); ++i) (*absent)[i] = ranks[i] == MPI_PROC_NULL;
}

void find_neighbours(MPI_Comm comm, SharedExchange* shared, Neighbours* n) {
  std::vector<int>* sources = shared ? &shared->neighbour_sources : &n->own_sources;
  std::vector<int>* destinations = shared ? &shared->neighbour_destinations : &n->own_destinations;
  std::vector<uint8_t>* absent_sources = shared ? &shared->absent_sources : &n->own_absent_sources;
  std::vector<uint8_t>* absent_destinations =
      shared ? &shared->absent_destinations : &n->own_absent_destinations;
  if (!shared || !shared->lists_known) {
    int in = 0, out = 0;
    neighbour_degrees(comm, &in, &out);
    neighbour_lists(comm, in, out, sources, destinations);
    mark_absent(*sources, absent_sources);
    mark_absent(*destinations, absent_destinations);
    if (shared) shared->lists_known = true;
  }
  n->sources = sources;
  n->destinations = destinations;
  n->absent_sources = any_absent(*absent_sources);
  n->absent_destinations = any_absent(*absent_destinations);
}

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
    Neighbours n;
    find_neighbours(comm, transport::neighbourhood_window(comm), &n);
    if (ex.unpack && n.absent_sources) {
      ex.absent = *n.absent_sources;
      ex.unpack_select.absent = &ex.absent;
    }
    if (skip_sends && n.absent_destinations) {
      ex.nowhere = *n.absent_destinations;
      ex.pack_send.absent = &ex.nowhere;
    }
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

// The family's table: one descriptor per collective (ops/coll_exchange.hpp).
using NeighborAlltoall = Collective<LOOM_HOST_FORMS(Neighbor_alltoall, neighbor_alltoall),
                                    describe_neighbor_alltoall, UniformBytes>;
using NeighborAlltoallv = Collective<LOOM_HOST_FORMS(Neighbor_alltoallv, neighbor_alltoallv),
                                     describe_neighbor_alltoallv, VaryingBytes>;
using NeighborAlltoallw = Collective<LOOM_HOST_FORMS(Neighbor_alltoallw, neighbor_alltoallw),
                                     describe_neighbor_alltoallw, PerTypeBytes>;
using NeighborAllgather = Collective<LOOM_HOST_FORMS(Neighbor_allgather, neighbor_allgather),
                                     describe_neighbor_allgather, UniformBytes>;
using NeighborAllgatherv = Collective<LOOM_HOST_FORMS(Neighbor_allgatherv, neighbor_allgatherv),
                                      describe_neighbor_allgatherv, GathervBytes>;

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
  bool plain = true;  // every side basic, contiguous or moved whole by the host, in host memory
  // `elements` in blocks of at most `most_a_block` elements.
  void add(const void* buf, int64_t elements, int64_t most_a_block, MPI_Datatype type) {
    TypeRoute route;
    if (!route_of(type, &route)) {
      plain = false;  // the full path, where the host reports it
      return;
    }
    moved += elements * route.size;
    plain =
        plain &&
        (route.kind == TypeRoute::Kind::Direct ||
         (route.kind == TypeRoute::Kind::Plan && host_moves_whole(*route.plan, most_a_block))) &&
        !exec::device_memory(buf);
  }
};

int64_t sum(const int* counts, int n) {
  int64_t total = 0;
  for (int i = 0; counts && i < n; ++i) total += counts[i];
  return total;
}

int64_t most(const int* counts, int n) {
  int64_t largest = 0;
  for (int i = 0; counts && i < n; ++i) largest = std::max<int64_t>(largest, counts[i]);
  return largest;
}

// Blocking neighbourhood all-to-alls: through the same-node window when the communicator has
// one and its ranks agree that it pays (SharedExchange::take_window), otherwise as run_blocking,
// or the host's call as written when this rank's types are plain. MPICH 4.0 pairs the repeated
// edges of MPI_Neighbor_alltoall the other way round from its v and w forms (and from
// Open MPI), so `uniform` calls on a graph with repeated edges keep the host's exchange.
// `Call`: the collective's descriptor; `args`: its arguments. `part_of(in, out)` tells this
// rank's Part. A call the window does not carry runs as a small call where
// `small(in, out, shared, &rc)` does (true, `rc` its result). `plain_of(shared)`: whether both
// sides are plain (ops/coll.hpp); then a call no agreement or topology can send through the
// window goes to the host without computing the Part, which would cost a call of a few bytes a
// neighbour more than the host takes for it (docs/collectives.md).
template <typename Call, typename PlainOf, typename PartOf, typename Small, typename... Args>
int run_neighbourhood(bool uniform, PlainOf plain_of, PartOf part_of, Small small, Args... args) {
  const MPI_Comm comm = communicator_of(args...);
  const auto as_written = [&] { return Call::Host::call_now(args...); };
  int in = 0, out = 0;
  SharedExchange* shared = transport::neighbourhood_window(comm);
  if (plain_of(shared)) {
    // Each rank counts the call as the host's (host_call_agreed) only where take_window would
    // have, so the ranks' agreements stay in step whichever of them pass here.
    if (!shared) return as_written();
    if (uniform && shared->repeated_neighbours > 0) return as_written();
    if ((!uniform || shared->repeated_neighbours == 0) && shared->host_call_agreed())
      return as_written();
  }
  if (shared) {
    in = shared->in_degree;
    out = shared->out_degree;
  }
  const bool topology = shared || neighbour_degrees(comm, &in, &out);
  const Part part = topology ? part_of(in, out) : Part{0, false};
  if (shared && uniform && shared->repeated_neighbours < 0) {
    Neighbours n;
    find_neighbours(comm, shared, &n);
    int repeated = names_a_peer_twice(*n.sources) || names_a_peer_twice(*n.destinations);
    PMPI_Allreduce(MPI_IN_PLACE, &repeated, 1, MPI_INT, MPI_MAX, comm);
    shared->repeated_neighbours = repeated;
  }
  const bool window_fits = shared && (!uniform || shared->repeated_neighbours == 0);
  const bool pays = window_fits && transport::window_pays(part.moved, !part.plain);
  const bool window = window_fits && shared->take_window(pays);
  if (!window && part.plain) return as_written();
  if (int rc = MPI_SUCCESS; !window && topology && small(in, out, shared, &rc)) return rc;
  Exchange ex(comm);
  if (!Call::describe(ex, args...)) return as_written();
  if (window) {
    Neighbours n;
    find_neighbours(comm, shared, &n);
    const int rc = ex.run_shared(*shared, *n.sources, *n.destinations, pays);
    if (rc != SharedExchange::kNotExchanged) return rc;
  }
  if (int rc = ex.start(); rc != MPI_SUCCESS) return rc;
  const auto on_host = [](auto... bytes) { return Call::Host::call_now(bytes...); };
  return ex.finish(Call::Bytes::call(on_host, ex, args...));
}

}  // namespace

// ---- Neighbourhood collectives ------------------------------------------------------------

int neighbor_alltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                      int recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
  return run_neighbourhood<NeighborAlltoall>(
      true,
      [&](SharedExchange*) {
        HostCall call;  // a type not planned yet takes the full path here (Part)
        return uniform_passes_through(call, sendbuf, sendcount, sendtype, recvbuf, recvcount,
                                      recvtype) &&
               !call.noted();
      },
      [&](int in, int out) {
        Part part;
        part.add(sendbuf, int64_t{out} * sendcount, sendcount, sendtype);
        part.add(recvbuf, int64_t{in} * recvcount, recvcount, recvtype);
        return part;
      },
      [&](int in, int out, SharedExchange* shared, int* rc) {
        if (sendbuf == MPI_IN_PLACE) return false;  // erroneous: the host reports it
        Neighbours n;
        find_neighbours(comm, shared, &n);
        SmallCall call;
        if (!small_call(uniform(sendbuf, out, sendcount, sendtype),
                        uniform(recvbuf, in, recvcount, recvtype), &call, n.absent_destinations,
                        n.absent_sources))
          return false;
        *rc = run_small<NeighborAlltoall>(call, comm);
        return true;
      },
      sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
}

int ineighbor_alltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                       int recvcount, MPI_Datatype recvtype, MPI_Comm comm, const Later& later) {
  return run_later<NeighborAlltoall>(later, sendbuf, sendcount, sendtype, recvbuf, recvcount,
                                     recvtype, comm);
}

int neighbor_alltoallv(const void* sendbuf, const int sendcounts[], const int sdispls[],
                       MPI_Datatype sendtype, void* recvbuf, const int recvcounts[],
                       const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm) {
  return run_neighbourhood<NeighborAlltoallv>(
      false,
      [&](SharedExchange*) {
        HostCall call;
        return collective_passes_through(call, sendbuf, sendtype, recvbuf, recvtype) &&
               !call.noted();
      },
      [&](int in, int out) {
        Part part;
        part.add(sendbuf, sum(sendcounts, out), most(sendcounts, out), sendtype);
        part.add(recvbuf, sum(recvcounts, in), most(recvcounts, in), recvtype);
        return part;
      },
      [](int, int, SharedExchange*, int*) { return false; },  // not uniform
      sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm);
}

int ineighbor_alltoallv(const void* sendbuf, const int sendcounts[], const int sdispls[],
                        MPI_Datatype sendtype, void* recvbuf, const int recvcounts[],
                        const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm,
                        const Later& later) {
  return run_later<NeighborAlltoallv>(later, sendbuf, sendcounts, sdispls, sendtype, recvbuf,
                                      recvcounts, rdispls, recvtype, comm);
}

int neighbor_alltoallw(const void* sendbuf, const int sendcounts[], const MPI_Aint sdispls[],
                       const MPI_Datatype sendtypes[], void* recvbuf, const int recvcounts[],
                       const MPI_Aint rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm) {
  return run_neighbourhood<NeighborAlltoallw>(
      false,
      [&](SharedExchange* shared) {
        HostCall call;
        if (!shared)
          return neighbor_alltoallw_passes_through(call, comm, sendbuf, sendtypes, recvbuf,
                                                   recvtypes) &&
                 !call.noted();
        return per_type_side_passes_through(call, sendbuf, sendtypes, shared->out_degree) &&
               per_type_side_passes_through(call, recvbuf, recvtypes, shared->in_degree) &&
               !call.noted();
      },
      [&](int in, int out) {
        Part part;
        for (int i = 0; sendcounts && sendtypes && i < out; ++i)
          part.add(sendbuf, sendcounts[i], sendcounts[i], sendtypes[i]);
        for (int i = 0; recvcounts && recvtypes && i < in; ++i)
          part.add(recvbuf, recvcounts[i], recvcounts[i], recvtypes[i]);
        return part;
      },
      [](int, int, SharedExchange*, int*) { return false; },  // not uniform
      sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls, recvtypes, comm);
}

int ineighbor_alltoallw(const void* sendbuf, const int sendcounts[], const MPI_Aint sdispls[],
                        const MPI_Datatype sendtypes[], void* recvbuf, const int recvcounts[],
                        const MPI_Aint rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm,
                        const Later& later) {
  return run_later<NeighborAlltoallw>(later, sendbuf, sendcounts, sdispls, sendtypes, recvbuf,
                                      recvcounts, rdispls, recvtypes, comm);
}

int neighbor_allgather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                       int recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
  if (int in = 0, out = 0; neighbour_degrees(comm, &in, &out)) {
    Neighbours n;
    find_neighbours(comm, transport::neighbourhood_window(comm), &n);
    if (SmallCall call;
        small_call(uniform(sendbuf, 1, sendcount, sendtype),
                   uniform(recvbuf, in, recvcount, recvtype), &call, nullptr, n.absent_sources))
      return run_small<NeighborAllgather>(call, comm);
  }
  return run_blocking<NeighborAllgather>(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                                         comm);
}

int ineighbor_allgather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                        int recvcount, MPI_Datatype recvtype, MPI_Comm comm, const Later& later) {
  return run_later<NeighborAllgather>(later, sendbuf, sendcount, sendtype, recvbuf, recvcount,
                                      recvtype, comm);
}

int neighbor_allgatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                        const int recvcounts[], const int displs[], MPI_Datatype recvtype,
                        MPI_Comm comm) {
  return run_blocking<NeighborAllgatherv>(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs,
                                          recvtype, comm);
}

int ineighbor_allgatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                         const int recvcounts[], const int displs[], MPI_Datatype recvtype,
                         MPI_Comm comm, const Later& later) {
  return run_later<NeighborAllgatherv>(later, sendbuf, sendcount, sendtype, recvbuf, recvcounts,
                                       displs, recvtype, comm);
}

}  // namespace loom::ops
