// The harness of the collective tests (collectives_*_test.cpp, one binary per family of
// collectives; collectives_main.cpp holds main() and the parameterised tests each family
// instantiates for its own collectives): topologies, one collective call described once and
// run through Loom and the host, and the fixtures; datatypes and buffers in
// collectives_types.hpp.
//
// libloom is linked before libmpi: MPI_Alltoall & co. reach Loom, PMPI_Alltoall & co. the host.
// Every test runs one collective twice on identical inputs, once through Loom and once through
// the host, and requires byte-identical receive buffers (gaps and margins prefilled with a
// sentinel) and untouched send buffers; the host's receive buffer must have changed wherever
// data was due, so a collective that moves nothing cannot pass.
//
// Ranks and sides may describe the same type signature differently: a derived type on one
// rank, a basic or dense type on another. Loom moves bytes, and must keep such calls
// consistent. Data patterns are deterministic (no seed). Every rank runs every test in the
// same order, and nothing between the collectives of a test may return early.
#pragma once

#include <gtest/gtest.h>
#include <mpi.h>
#if defined(OPEN_MPI) && MPI_VERSION < 4 && __has_include(<mpi-ext.h>)
#include <mpi-ext.h>  // Open MPI's persistent collectives, MPIX_<Name>_init
#endif

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <iterator>
#include <ostream>
#include <string>
#include <tuple>
#include <vector>

#include "loom/loom.h"
#include "tests/mpi/collectives_types.hpp"
#include "tests/mpi/gtest_mpi.hpp"
#include "tests/mpi/host_quirks.hpp"
#include "tests/mpi/loom_env.hpp"

namespace loom::test::coll {

// ---------------------------------------------------------------------------------------------
// Calling a collective through Loom (MPI_*) or through the host (PMPI_*)

// Blocking MPI_<Name>, non-blocking MPI_I<name> and a wait, or persistent MPI_<Name>_init with
// two starts, each with its wait, and MPI_Request_free.
enum class Form { Blocking, Nonblocking, Persistent };

struct Api {
  bool loom;
  Form form;
  bool large_count = false;  // MPI-4's _c form
};

inline int complete(const Api& api, int rc, MPI_Request* request) {
  if (rc != MPI_SUCCESS) return rc;
  return api.loom ? MPI_Wait(request, MPI_STATUS_IGNORE) : PMPI_Wait(request, MPI_STATUS_IGNORE);
}

// The host's persistent collectives: MPI-4's, or Open MPI's MPIX_ extension before it.
// PERSISTENT_INIT(loom, Alltoallv_init, args...) calls Loom's or the host's.
#if MPI_VERSION >= 4
constexpr bool kPersistentCollectives = true;
#define PERSISTENT_INIT(loom, Name, ...) \
  ((loom) ? MPI_##Name(__VA_ARGS__) : PMPI_##Name(__VA_ARGS__))
#elif defined(OMPI_HAVE_MPI_EXT_PCOLLREQ) && OMPI_HAVE_MPI_EXT_PCOLLREQ
constexpr bool kPersistentCollectives = true;
#define PERSISTENT_INIT(loom, Name, ...) \
  ((loom) ? MPIX_##Name(__VA_ARGS__) : PMPIX_##Name(__VA_ARGS__))
#else
constexpr bool kPersistentCollectives = false;
#define PERSISTENT_INIT(loom, Name, ...) MPI_ERR_UNSUPPORTED_OPERATION
#endif

// A persistent collective made by `init(&request)`, started twice: the second start runs the
// call again on what the buffers hold then (in place, what the first start received).
template <typename Init>
int run_persistent(const Api& api, Init init) {
  MPI_Request request = MPI_REQUEST_NULL;
  int rc = init(&request);
  for (int start = 0; start < 2 && rc == MPI_SUCCESS; ++start) {
    rc = api.loom ? MPI_Start(&request) : PMPI_Start(&request);
    rc = complete(api, rc, &request);
  }
  if (request != MPI_REQUEST_NULL) {
    const int freed = api.loom ? MPI_Request_free(&request) : PMPI_Request_free(&request);
    if (rc == MPI_SUCCESS) rc = freed;
  }
  return rc;
}

// Whether the host's own persistent form of the collective `name` (a blocking name, with or
// without _c) is a reference for Loom's: not where the host misdelivers it.
inline bool host_persistent_form_is_reference(const std::string& name) {
  const std::string base = name.size() > 2 && name.compare(name.size() - 2, 2, "_c") == 0
                               ? name.substr(0, name.size() - 2)
                               : name;
  return !(kHostPersistentUniformCollectivesMisdeliver &&
           (base == "Gather" || base == "Scatter" || base == "Allgather"));
}

// MPI_<Blocking>(args), MPI_<Nonblocking>(args, &request) and a wait, or MPI_<Persistent>(args,
// MPI_INFO_NULL, &request) and its starts, through Loom or the host as `api` says; where the
// host's persistent form is no reference, the host's non-blocking form as often as the starts
// (and so Loom's too when LOOM_DISABLE=1 leaves it the host's broken one).
#define CALL_COLLECTIVE_FORMS(api, BlockingName, NonblockingName, PersistentName, ...) \
  ((api).form == Form::Persistent &&                                                        \
           (((api).loom && !loom::test::loom_disabled_by_env()) ||                          \
            host_persistent_form_is_reference(#BlockingName))                               \
       ? run_persistent((api),                                                              \
                        [&](MPI_Request* request_) {                                        \
                          return PERSISTENT_INIT((api).loom, PersistentName, __VA_ARGS__,   \
                                                 MPI_INFO_NULL, request_);                  \
                        })                                                                  \
   : (api).form != Form::Blocking                                                           \
       ? [&] {                                                                              \
           int rc_ = MPI_SUCCESS;                                                           \
           const int rounds_ = (api).form == Form::Persistent ? 2 : 1;                      \
           for (int round_ = 0; round_ < rounds_ && rc_ == MPI_SUCCESS; ++round_) {         \
             MPI_Request request_ = MPI_REQUEST_NULL;                                       \
             rc_ = complete((api),                                                          \
                            (api).loom ? MPI_##NonblockingName(__VA_ARGS__, &request_)      \
                                       : PMPI_##NonblockingName(__VA_ARGS__, &request_),    \
                            &request_);                                                     \
           }                                                                                \
           return rc_;                                                                      \
         }()                                                                                \
       : ((api).loom ? MPI_##BlockingName(__VA_ARGS__) : PMPI_##BlockingName(__VA_ARGS__)))
#define CALL_COLLECTIVE(api, Blocking, Nonblocking, ...) \
  CALL_COLLECTIVE_FORMS(api, Blocking, Nonblocking, Blocking##_init, __VA_ARGS__)

// The same for a collective whose counts are scalars, in its large-count form MPI_<Blocking>_c
// when `api` asks for it (MPI-4 hosts).
#if MPI_VERSION >= 4
#define CALL_SCALAR_COLLECTIVE(api, Blocking, Nonblocking, ...)                                    \
  ((api).large_count                                                                               \
       ? CALL_COLLECTIVE_FORMS(api, Blocking##_c, Nonblocking##_c, Blocking##_init_c, __VA_ARGS__) \
       : CALL_COLLECTIVE(api, Blocking, Nonblocking, __VA_ARGS__))
#else
#define CALL_SCALAR_COLLECTIVE(api, Blocking, Nonblocking, ...) \
  CALL_COLLECTIVE(api, Blocking, Nonblocking, __VA_ARGS__)
#endif

// The same for a v or w collective, whose large-count form takes its arrays as MPI_Count and
// MPI_Aint (`widened`): CLASSIC and LARGE are the two forms' parenthesised argument lists.
#define COLL_UNPAREN(...) __VA_ARGS__
#if MPI_VERSION >= 4
#define CALL_ARRAY_COLLECTIVE(api, Blocking, Nonblocking, CLASSIC, LARGE)           \
  ((api).large_count ? CALL_COLLECTIVE_FORMS(api, Blocking##_c, Nonblocking##_c,    \
                                             Blocking##_init_c, COLL_UNPAREN LARGE) \
                     : CALL_COLLECTIVE(api, Blocking, Nonblocking, COLL_UNPAREN CLASSIC))
#else
#define CALL_ARRAY_COLLECTIVE(api, Blocking, Nonblocking, CLASSIC, LARGE) \
  CALL_COLLECTIVE(api, Blocking, Nonblocking, COLL_UNPAREN CLASSIC)
#endif

template <typename Wide, typename Narrow>
std::vector<Wide> widened(const std::vector<Narrow>& values) {
  return std::vector<Wide>(values.begin(), values.end());
}

// ---------------------------------------------------------------------------------------------
// Topologies for the neighbourhood collectives

enum class Topology { None, Cart, DistGraph, Line, RepeatedEdges };

// The topologies are built once; their errors come back as codes.
inline MPI_Comm cartesian(std::vector<int> dims, std::vector<int> periods) {
  MPI_Comm c;
  MPI_Cart_create(MPI_COMM_WORLD, static_cast<int>(dims.size()), dims.data(), periods.data(), 0,
                  &c);
  MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
  return c;
}
inline MPI_Comm distributed_graph(const std::vector<int>& sources,
                                  const std::vector<int>& destinations) {
  MPI_Comm c;
  MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, static_cast<int>(sources.size()), sources.data(),
                                 MPI_UNWEIGHTED, static_cast<int>(destinations.size()),
                                 destinations.data(), MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &c);
  MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
  return c;
}

// A 2-D torus periodic in one dimension only, so border ranks have MPI_PROC_NULL neighbours.
inline MPI_Comm cart_comm() {
  static MPI_Comm comm = [] {
    int dims[2] = {0, 0};
    MPI_Dims_create(g_size, 2, dims);
    return cartesian({dims[0], dims[1]}, {1, 0});
  }();
  return comm;
}

// Each rank receives from r-1 and r+2 and sends to r+1 and r-2 (self edges when 2 ranks).
inline MPI_Comm dist_graph_comm() {
  const int p = g_size, r = g_rank;
  static MPI_Comm comm =
      distributed_graph({(r + p - 1) % p, (r + 2) % p}, {(r + 1) % p, (r + 2 * p - 2) % p});
  return comm;
}

// A non-periodic chain of all ranks: a Cartesian topology that names no neighbour twice,
// which Loom's same-node window carries (periodic dimensions of 1 or 2 ranks it leaves to
// the host).
inline MPI_Comm line_comm() {
  static MPI_Comm comm = cartesian({g_size}, {0});
  return comm;
}

// Two edges from each rank to the next and a self edge between them: the m-th block a rank
// sends to a peer must land in the m-th block that peer receives from it, as on the host.
inline MPI_Comm repeated_edges_comm() {
  const int p = g_size, r = g_rank;
  static MPI_Comm comm =
      distributed_graph({(r + p - 1) % p, r, (r + p - 1) % p}, {(r + 1) % p, (r + 1) % p, r});
  return comm;
}

inline MPI_Comm topology_comm(Topology topology) {
  switch (topology) {
    case Topology::Cart:
      return cart_comm();
    case Topology::Line:
      return line_comm();
    case Topology::RepeatedEdges:
      return repeated_edges_comm();
    default:
      return dist_graph_comm();
  }
}

struct Neighbours {
  std::vector<int> sources, destinations;
};

inline Neighbours neighbours(MPI_Comm comm) {
  Neighbours n;
  int topology = MPI_UNDEFINED;
  MPI_Topo_test(comm, &topology);
  if (topology == MPI_CART) {
    int dims = 0;
    MPI_Cartdim_get(comm, &dims);
    for (int d = 0; d < dims; ++d) {  // per dimension the -1 neighbour, then the +1 one
      int minus, plus;
      MPI_Cart_shift(comm, d, 1, &minus, &plus);
      n.sources.push_back(minus);
      n.sources.push_back(plus);
    }
    n.destinations = n.sources;
  } else {
    int in = 0, out = 0, weighted = 0;
    MPI_Dist_graph_neighbors_count(comm, &in, &out, &weighted);
    n.sources.resize(static_cast<size_t>(in));
    n.destinations.resize(static_cast<size_t>(out));
    std::vector<int> in_weights(n.sources.size() + 1), out_weights(n.destinations.size() + 1);
    MPI_Dist_graph_neighbors(comm, in, n.sources.data(), in_weights.data(), out,
                             n.destinations.data(), out_weights.data());
  }
  return n;
}

// ---------------------------------------------------------------------------------------------
// One collective call, described once and run through Loom and the host

enum class Coll {
  Alltoall,
  Alltoallv,
  Alltoallw,
  Allgather,
  Allgatherv,
  Gather,
  Gatherv,
  Scatter,
  Scatterv,
  Bcast,
  NeighborAlltoall,
  NeighborAlltoallv,
  NeighborAlltoallw,
  NeighborAllgather,
  NeighborAllgatherv,
};

struct CollectiveKind {
  Coll coll;
  Topology topology;
  const char* name;
};

constexpr CollectiveKind kCollectives[] = {
    {Coll::Alltoall, Topology::None, "Alltoall"},
    {Coll::Alltoallv, Topology::None, "Alltoallv"},
    {Coll::Alltoallw, Topology::None, "Alltoallw"},
    {Coll::Allgather, Topology::None, "Allgather"},
    {Coll::Allgatherv, Topology::None, "Allgatherv"},
    {Coll::Gather, Topology::None, "Gather"},
    {Coll::Gatherv, Topology::None, "Gatherv"},
    {Coll::Scatter, Topology::None, "Scatter"},
    {Coll::Scatterv, Topology::None, "Scatterv"},
    {Coll::Bcast, Topology::None, "Bcast"},
    {Coll::NeighborAlltoall, Topology::Cart, "Neighbor_alltoall_cart"},
    {Coll::NeighborAlltoallv, Topology::Cart, "Neighbor_alltoallv_cart"},
    {Coll::NeighborAlltoallw, Topology::Cart, "Neighbor_alltoallw_cart"},
    {Coll::NeighborAllgather, Topology::Cart, "Neighbor_allgather_cart"},
    {Coll::NeighborAllgatherv, Topology::Cart, "Neighbor_allgatherv_cart"},
    {Coll::NeighborAlltoall, Topology::DistGraph, "Neighbor_alltoall_dist_graph"},
    {Coll::NeighborAlltoallv, Topology::DistGraph, "Neighbor_alltoallv_dist_graph"},
    {Coll::NeighborAlltoallw, Topology::DistGraph, "Neighbor_alltoallw_dist_graph"},
    {Coll::NeighborAllgather, Topology::DistGraph, "Neighbor_allgather_dist_graph"},
    {Coll::NeighborAllgatherv, Topology::DistGraph, "Neighbor_allgatherv_dist_graph"},
    {Coll::NeighborAlltoall, Topology::Line, "Neighbor_alltoall_line"},
    {Coll::NeighborAlltoallv, Topology::Line, "Neighbor_alltoallv_line"},
    {Coll::NeighborAlltoallw, Topology::Line, "Neighbor_alltoallw_line"},
    {Coll::NeighborAlltoall, Topology::RepeatedEdges, "Neighbor_alltoall_repeated_edges"},
    {Coll::NeighborAlltoallv, Topology::RepeatedEdges, "Neighbor_alltoallv_repeated_edges"},
    {Coll::NeighborAlltoallw, Topology::RepeatedEdges, "Neighbor_alltoallw_repeated_edges"},
};
constexpr int kCollectiveKinds = static_cast<int>(std::size(kCollectives));

// The collectives that accept MPI_IN_PLACE.
constexpr Coll kInPlace[] = {Coll::Alltoall,  Coll::Alltoallv,  Coll::Alltoallw,
                             Coll::Allgather, Coll::Allgatherv, Coll::Gather,
                             Coll::Gatherv,   Coll::Scatter,    Coll::Scatterv};
constexpr const char* kInPlaceNames[] = {"Alltoall",  "Alltoallv",  "Alltoallw",
                                         "Allgather", "Allgatherv", "Gather",
                                         "Gatherv",   "Scatter",    "Scatterv"};

struct Case {
  const Family* family = nullptr;
  Mode mode = Mode::Derived;
  Form form = Form::Blocking;
  bool in_place = false;
  bool zero = false;         // every count zero
  bool large_count = false;  // the _c forms, where the counts are scalars (Api::large_count)

  bool derived(bool send_side, int block = -1) const {
    switch (mode) {
      case Mode::Derived:
        return true;
      case Mode::SendDerived:
        return send_side;
      case Mode::RecvDerived:
        return !send_side;
      case Mode::MixedRanks:  // per-block types also mix within one side
        return (g_rank + std::max(block, 0)) % 2 == 0;
      case Mode::FirstRankDerived:
        return g_rank == 0;
    }
    return true;
  }
  const TestType& type(bool send_side, int block = -1) const {
    return derived(send_side, block) ? family->derived : family->partner;
  }
  // Elements of `t` carrying the signature of `amount` derived elements.
  int count(const TestType& t, int amount) const {
    return amount * family->derived.units / t.units;
  }
  int amount() const { return zero ? 0 : family->max_amount; }
  // Derived elements from `src` to `dst` in v and w collectives: some pairs send nothing.
  // In place, a rank's block for a peer is sent and received, so both directions agree.
  int amount(int src, int dst) const {
    if (zero) return 0;
    if (src == MPI_PROC_NULL || dst == MPI_PROC_NULL) return 1;
    const int mix = in_place ? src + dst : src + 2 * dst;
    return (mix + 1) % (family->max_amount + 1);
  }
  // One rank's contribution to a gather(v)/scatter(v).
  int contribution(int rank) const {
    if (zero) return 0;
    if (rank == MPI_PROC_NULL) return 1;
    return (rank + 1) % (family->max_amount + 1);
  }
};

// Runs `call(api, send, recv)` through Loom and through the host on identical copies of the
// buffers; the receive buffers must come out identical, the send buffers untouched, and the
// host's receive buffer changed when `data_due`.
template <typename Call>
inline void expect_same(const Case& c, const Region& send, const Region& recv, bool data_due,
                        Call call) {
  Region send_loom = send, recv_loom = recv, send_host = send, recv_host = recv;
  const int rc_loom = call(Api{true, c.form, c.large_count}, send_loom.base(), recv_loom.base());
  const int rc_host = call(Api{false, c.form, c.large_count}, send_host.base(), recv_host.base());
  EXPECT_EQ(rc_loom, MPI_SUCCESS);
  EXPECT_EQ(rc_host, MPI_SUCCESS);
  expect_identical(recv_loom, recv_host, "receive buffer");
  expect_identical(send_loom, send, "send buffer");
  // Two starts in place may restore what the buffer held (an all-to-all transposes it back); the
  // other forms check that the host moves the data of the same case.
  if (data_due && !(c.form == Form::Persistent && c.in_place)) {
    EXPECT_NE(recv_host.bytes(), recv.bytes())
        << "the host received nothing on rank " << g_rank << ": the comparison proves nothing";
  }
}

inline void* or_in_place(bool in_place, void* buffer) {
  return in_place ? MPI_IN_PLACE : buffer;
}

inline void run_all_to_all(Coll coll, const Case& c) {
  const int p = g_size, me = g_rank;
  const MPI_Comm comm = MPI_COMM_WORLD;
  const TestType &st = c.type(true), &rt = c.type(false);
  if (coll == Coll::Alltoall) {
    const int send_count = c.count(st, c.amount()), recv_count = c.count(rt, c.amount());
    const Region send = c.in_place ? Region() : Region(uniform_blocks(st, p, send_count), true, 1);
    const Region recv(uniform_blocks(rt, p, recv_count), c.in_place, 2);
    expect_same(c, send, recv, recv_count > 0 && p > 1, [&](const Api& api, void* s, void* r) {
      return CALL_SCALAR_COLLECTIVE(api, Alltoall, Ialltoall, or_in_place(c.in_place, s),
                                    send_count, st.type, r, recv_count, rt.type, comm);
    });
    return;
  }
  std::vector<int> send_counts(p), recv_counts(p);
  std::vector<const TestType*> send_types(p), recv_types(p);
  bool data_due = false;
  for (int j = 0; j < p; ++j) {
    const bool per_block = coll == Coll::Alltoallw;
    send_types[j] = &c.type(true, per_block ? j : -1);
    recv_types[j] = &c.type(false, per_block ? j : -1);
    send_counts[j] = c.count(*send_types[j], c.amount(me, j));
    recv_counts[j] = c.count(*recv_types[j], c.amount(j, me));
    data_due = data_due || (recv_counts[j] > 0 && (!c.in_place || j != me));
  }
  if (coll == Coll::Alltoallv) {
    const std::vector<int> sdispls = spread(send_counts), rdispls = spread(recv_counts);
    const Region send =
        c.in_place ? Region() : Region(varying_blocks(st, send_counts, sdispls), true, 1);
    const Region recv(varying_blocks(rt, recv_counts, rdispls), c.in_place, 2);
    expect_same(c, send, recv, data_due, [&](const Api& api, void* s, void* r) {
      return CALL_ARRAY_COLLECTIVE(
          api, Alltoallv, Ialltoallv,
          (or_in_place(c.in_place, s), send_counts.data(), sdispls.data(), st.type, r,
           recv_counts.data(), rdispls.data(), rt.type, comm),
          (or_in_place(c.in_place, s), widened<MPI_Count>(send_counts).data(),
           widened<MPI_Aint>(sdispls).data(), st.type, r, widened<MPI_Count>(recv_counts).data(),
           widened<MPI_Aint>(rdispls).data(), rt.type, comm));
    });
    return;
  }
  const std::vector<MPI_Aint> sdispls = spread_bytes(send_counts, send_types),
                              rdispls = spread_bytes(recv_counts, recv_types);
  const std::vector<int> sdispls_int = as_int(sdispls), rdispls_int = as_int(rdispls);
  const std::vector<MPI_Datatype> send_handles = handles(send_types),
                                  recv_handles = handles(recv_types);
  const Region send =
      c.in_place ? Region() : Region(typed_blocks(send_counts, sdispls, send_types), true, 1);
  const Region recv(typed_blocks(recv_counts, rdispls, recv_types), c.in_place, 2);
  expect_same(c, send, recv, data_due, [&](const Api& api, void* s, void* r) {
    if (c.in_place && !api.loom && kHostInPlaceAlltoallwFails) {
      // The same exchange, sent from a copy of the receive buffer, once per start.
      const Api once{api.loom, api.form == Form::Blocking ? Form::Blocking : Form::Nonblocking};
      int rc = MPI_SUCCESS;
      for (int start = 0; start < (api.form == Form::Persistent ? 2 : 1); ++start) {
        Region input = recv;
        std::memcpy(static_cast<unsigned char*>(input.base()) - input.origin(),
                    static_cast<unsigned char*>(r) - recv.origin(), recv.bytes().size());
        if (rc == MPI_SUCCESS)
          rc = CALL_COLLECTIVE(once, Alltoallw, Ialltoallw, input.base(), recv_counts.data(),
                               rdispls_int.data(), recv_handles.data(), r, recv_counts.data(),
                               rdispls_int.data(), recv_handles.data(), comm);
      }
      return rc;
    }
    return CALL_ARRAY_COLLECTIVE(
        api, Alltoallw, Ialltoallw,
        (or_in_place(c.in_place, s), send_counts.data(), sdispls_int.data(), send_handles.data(), r,
         recv_counts.data(), rdispls_int.data(), recv_handles.data(), comm),
        (or_in_place(c.in_place, s), widened<MPI_Count>(send_counts).data(), sdispls.data(),
         send_handles.data(), r, widened<MPI_Count>(recv_counts).data(), rdispls.data(),
         recv_handles.data(), comm));
  });
}

inline void run_allgather(Coll coll, const Case& c) {
  const int p = g_size;
  const MPI_Comm comm = MPI_COMM_WORLD;
  const TestType &st = c.type(true), &rt = c.type(false);
  if (coll == Coll::Allgather) {
    const int send_count = c.count(st, c.amount()), recv_count = c.count(rt, c.amount());
    const Region send = c.in_place ? Region() : Region(uniform_blocks(st, 1, send_count), true, 1);
    const Region recv(uniform_blocks(rt, p, recv_count), c.in_place, 2);
    expect_same(c, send, recv, recv_count > 0 && p > 1, [&](const Api& api, void* s, void* r) {
      return CALL_SCALAR_COLLECTIVE(api, Allgather, Iallgather, or_in_place(c.in_place, s),
                                    send_count, st.type, r, recv_count, rt.type, comm);
    });
    return;
  }
  std::vector<int> recv_counts(p);
  bool data_due = false;
  for (int j = 0; j < p; ++j) {
    recv_counts[j] = c.count(rt, c.contribution(j));
    data_due = data_due || (recv_counts[j] > 0 && (!c.in_place || j != g_rank));
  }
  const std::vector<int> displs = spread(recv_counts);
  const int send_count = c.count(st, c.contribution(g_rank));
  const Region send = c.in_place ? Region() : Region(uniform_blocks(st, 1, send_count), true, 1);
  const Region recv(varying_blocks(rt, recv_counts, displs), c.in_place, 2);
  expect_same(c, send, recv, data_due, [&](const Api& api, void* s, void* r) {
    return CALL_ARRAY_COLLECTIVE(
        api, Allgatherv, Iallgatherv,
        (or_in_place(c.in_place, s), send_count, st.type, r, recv_counts.data(), displs.data(),
         rt.type, comm),
        (or_in_place(c.in_place, s), send_count, st.type, r, widened<MPI_Count>(recv_counts).data(),
         widened<MPI_Aint>(displs).data(), rt.type, comm));
  });
}

inline void run_gather(Coll coll, const Case& c) {
  const int p = g_size, root = p - 1;
  const bool is_root = g_rank == root, in_place = c.in_place && is_root;
  const MPI_Comm comm = MPI_COMM_WORLD;
  const TestType &st = c.type(true), &rt = c.type(false);
  if (coll == Coll::Gather) {
    const int send_count = c.count(st, c.amount()), recv_count = c.count(rt, c.amount());
    const Region send = in_place ? Region() : Region(uniform_blocks(st, 1, send_count), true, 1);
    const Region recv = is_root ? Region(uniform_blocks(rt, p, recv_count), in_place, 2) : Region();
    expect_same(c, send, recv, is_root && recv_count > 0, [&](const Api& api, void* s, void* r) {
      return CALL_SCALAR_COLLECTIVE(api, Gather, Igather, or_in_place(in_place, s), send_count,
                                    st.type, r, recv_count, rt.type, root, comm);
    });
    return;
  }
  std::vector<int> recv_counts(p);
  bool data_due = false;
  for (int j = 0; j < p; ++j) {
    recv_counts[j] = c.count(rt, c.contribution(j));
    data_due = data_due || (is_root && recv_counts[j] > 0 && (!in_place || j != root));
  }
  const std::vector<int> displs = spread(recv_counts);
  const int send_count = c.count(st, c.contribution(g_rank));
  const Region send = in_place ? Region() : Region(uniform_blocks(st, 1, send_count), true, 1);
  const Region recv =
      is_root ? Region(varying_blocks(rt, recv_counts, displs), in_place, 2) : Region();
  expect_same(c, send, recv, data_due, [&](const Api& api, void* s, void* r) {
    return CALL_ARRAY_COLLECTIVE(
        api, Gatherv, Igatherv,
        (or_in_place(in_place, s), send_count, st.type, r, recv_counts.data(), displs.data(),
         rt.type, root, comm),
        (or_in_place(in_place, s), send_count, st.type, r, widened<MPI_Count>(recv_counts).data(),
         widened<MPI_Aint>(displs).data(), rt.type, root, comm));
  });
}

inline void run_scatter(Coll coll, const Case& c) {
  const int p = g_size, root = 1 % p;
  const bool is_root = g_rank == root, in_place = c.in_place && is_root;
  const MPI_Comm comm = MPI_COMM_WORLD;
  const TestType &st = c.type(true), &rt = c.type(false);
  if (coll == Coll::Scatter) {
    const int send_count = c.count(st, c.amount()), recv_count = c.count(rt, c.amount());
    const Region send = is_root ? Region(uniform_blocks(st, p, send_count), true, 1) : Region();
    const Region recv = in_place ? Region() : Region(uniform_blocks(rt, 1, recv_count), false, 2);
    expect_same(c, send, recv, !in_place && recv_count > 0, [&](const Api& api, void* s, void* r) {
      return CALL_SCALAR_COLLECTIVE(api, Scatter, Iscatter, s, send_count, st.type,
                                    or_in_place(in_place, r), recv_count, rt.type, root, comm);
    });
    return;
  }
  std::vector<int> send_counts(p);
  for (int j = 0; j < p; ++j) send_counts[j] = c.count(st, c.contribution(j));
  const std::vector<int> displs = spread(send_counts);
  const int recv_count = c.count(rt, c.contribution(g_rank));
  const Region send = is_root ? Region(varying_blocks(st, send_counts, displs), true, 1) : Region();
  const Region recv = in_place ? Region() : Region(uniform_blocks(rt, 1, recv_count), false, 2);
  expect_same(c, send, recv, !in_place && recv_count > 0, [&](const Api& api, void* s, void* r) {
    return CALL_ARRAY_COLLECTIVE(
        api, Scatterv, Iscatterv,
        (s, send_counts.data(), displs.data(), st.type, or_in_place(in_place, r), recv_count,
         rt.type, root, comm),
        (s, widened<MPI_Count>(send_counts).data(), widened<MPI_Aint>(displs).data(), st.type,
         or_in_place(in_place, r), recv_count, rt.type, root, comm));
  });
}

inline void run_bcast(const Case& c) {
  const int root = g_size - 1;
  const bool is_root = g_rank == root;
  const TestType& t = c.type(is_root);
  const int count = c.count(t, 2 * c.amount());
  // The root's buffer is the input; the others' is where the data lands.
  const Region buffer(uniform_blocks(t, 1, count), is_root, 3);
  expect_same(c, Region(), buffer, !is_root && count > 0, [&](const Api& api, void*, void* b) {
    return CALL_SCALAR_COLLECTIVE(api, Bcast, Ibcast, b, count, t.type, root, MPI_COMM_WORLD);
  });
}

inline void run_neighbourhood(Coll coll, Topology topology, const Case& c) {
  const MPI_Comm comm = topology_comm(topology);
  const Neighbours n = neighbours(comm);
  const int in = static_cast<int>(n.sources.size()), out = static_cast<int>(n.destinations.size());
  const TestType &st = c.type(true), &rt = c.type(false);
  bool real_source = false;
  for (int source : n.sources) real_source = real_source || source != MPI_PROC_NULL;
  if (coll == Coll::NeighborAlltoall || coll == Coll::NeighborAllgather) {
    const bool all_to_all = coll == Coll::NeighborAlltoall;
    const int send_count = c.count(st, c.amount()), recv_count = c.count(rt, c.amount());
    const Region send(uniform_blocks(st, all_to_all ? out : 1, send_count), true, 1);
    const Region recv(uniform_blocks(rt, in, recv_count), false, 2);
    expect_same(
        c, send, recv, real_source && recv_count > 0, [&](const Api& api, void* s, void* r) {
          if (all_to_all)
            return CALL_SCALAR_COLLECTIVE(api, Neighbor_alltoall, Ineighbor_alltoall, s, send_count,
                                          st.type, r, recv_count, rt.type, comm);
          return CALL_SCALAR_COLLECTIVE(api, Neighbor_allgather, Ineighbor_allgather, s, send_count,
                                        st.type, r, recv_count, rt.type, comm);
        });
    return;
  }
  std::vector<int> recv_counts(in);
  std::vector<const TestType*> recv_types(in);
  bool data_due = false;
  for (int k = 0; k < in; ++k) {
    recv_types[k] = &c.type(false, coll == Coll::NeighborAlltoallw ? k : -1);
    const int amount = coll == Coll::NeighborAllgatherv ? c.contribution(n.sources[k])
                                                        : c.amount(n.sources[k], g_rank);
    recv_counts[k] = c.count(*recv_types[k], amount);
    data_due = data_due || (recv_counts[k] > 0 && n.sources[k] != MPI_PROC_NULL);
  }
  if (coll == Coll::NeighborAllgatherv) {
    const std::vector<int> displs = spread(recv_counts);
    const int send_count = c.count(st, c.contribution(g_rank));
    const Region send(uniform_blocks(st, 1, send_count), true, 1);
    const Region recv(varying_blocks(rt, recv_counts, displs), false, 2);
    expect_same(c, send, recv, data_due, [&](const Api& api, void* s, void* r) {
      return CALL_ARRAY_COLLECTIVE(
          api, Neighbor_allgatherv, Ineighbor_allgatherv,
          (s, send_count, st.type, r, recv_counts.data(), displs.data(), rt.type, comm),
          (s, send_count, st.type, r, widened<MPI_Count>(recv_counts).data(),
           widened<MPI_Aint>(displs).data(), rt.type, comm));
    });
    return;
  }
  std::vector<int> send_counts(out);
  std::vector<const TestType*> send_types(out);
  for (int k = 0; k < out; ++k) {
    send_types[k] = &c.type(true, coll == Coll::NeighborAlltoallw ? k : -1);
    send_counts[k] = c.count(*send_types[k], c.amount(g_rank, n.destinations[k]));
  }
  if (coll == Coll::NeighborAlltoallv) {
    const std::vector<int> sdispls = spread(send_counts), rdispls = spread(recv_counts);
    const Region send(varying_blocks(st, send_counts, sdispls), true, 1);
    const Region recv(varying_blocks(rt, recv_counts, rdispls), false, 2);
    expect_same(c, send, recv, data_due, [&](const Api& api, void* s, void* r) {
      return CALL_ARRAY_COLLECTIVE(
          api, Neighbor_alltoallv, Ineighbor_alltoallv,
          (s, send_counts.data(), sdispls.data(), st.type, r, recv_counts.data(), rdispls.data(),
           rt.type, comm),
          (s, widened<MPI_Count>(send_counts).data(), widened<MPI_Aint>(sdispls).data(), st.type, r,
           widened<MPI_Count>(recv_counts).data(), widened<MPI_Aint>(rdispls).data(), rt.type,
           comm));
    });
    return;
  }
  const std::vector<MPI_Aint> sdispls = spread_bytes(send_counts, send_types),
                              rdispls = spread_bytes(recv_counts, recv_types);
  const std::vector<MPI_Datatype> send_handles = handles(send_types),
                                  recv_handles = handles(recv_types);
  const Region send(typed_blocks(send_counts, sdispls, send_types), true, 1);
  const Region recv(typed_blocks(recv_counts, rdispls, recv_types), false, 2);
  expect_same(c, send, recv, data_due, [&](const Api& api, void* s, void* r) {
    return CALL_ARRAY_COLLECTIVE(
        api, Neighbor_alltoallw, Ineighbor_alltoallw,
        (s, send_counts.data(), sdispls.data(), send_handles.data(), r, recv_counts.data(),
         rdispls.data(), recv_handles.data(), comm),
        (s, widened<MPI_Count>(send_counts).data(), sdispls.data(), send_handles.data(), r,
         widened<MPI_Count>(recv_counts).data(), rdispls.data(), recv_handles.data(), comm));
  });
}

inline void run(Coll coll, Topology topology, const Case& c) {
  switch (coll) {
    case Coll::Alltoall:
    case Coll::Alltoallv:
    case Coll::Alltoallw:
      return run_all_to_all(coll, c);
    case Coll::Allgather:
    case Coll::Allgatherv:
      return run_allgather(coll, c);
    case Coll::Gather:
    case Coll::Gatherv:
      return run_gather(coll, c);
    case Coll::Scatter:
    case Coll::Scatterv:
      return run_scatter(coll, c);
    case Coll::Bcast:
      return run_bcast(c);
    default:
      return run_neighbourhood(coll, topology, c);
  }
}

inline std::string form_name(Form form) {
  switch (form) {
    case Form::Nonblocking:
      return "nonblocking";
    case Form::Persistent:
      return "persistent";
    default:
      return "blocking";
  }
}

// The forms every collective is tested in: persistent where the host has it.
inline std::vector<Form> forms() {
  if (kPersistentCollectives) return {Form::Blocking, Form::Nonblocking, Form::Persistent};
  return {Form::Blocking, Form::Nonblocking};
}

// Every rank reports a test as failed when any rank saw it fail (each prints its own details).
template <typename Base>
class AllRanks : public Base {
 protected:
  void TearDown() override {
    int failed_here = ::testing::Test::HasFailure() ? 1 : 0, failed_anywhere = 0;
    PMPI_Allreduce(&failed_here, &failed_anywhere, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (failed_anywhere && !failed_here) ADD_FAILURE() << "failed on another rank";
  }
};
using CollectiveTest = AllRanks<::testing::Test>;

// ---------------------------------------------------------------------------------------------
// The parameterised tests (collectives_main.cpp). A family's file instantiates them for its own
// collectives, by index into kCollectives and kInPlace: kinds_of() and in_place_kinds_of().

// ---------------------------------------------------------------------------------------------
// Every collective x every family x every way of mixing types, blocking and non-blocking

using TypesParam = std::tuple<int, int, Mode, Form>;
inline std::string types_name(const ::testing::TestParamInfo<TypesParam>& param_info) {
  const auto [kind, family, mode, form] = param_info.param;
  return std::string(kCollectives[kind].name) + "_" + kFamilyNames[family] + "_" + mode_name(mode) +
         "_" + form_name(form);
}

class Collectives : public AllRanks<::testing::TestWithParam<TypesParam>> {};

using InPlaceParam = std::tuple<int, int, Mode, Form>;
inline std::string in_place_name(const ::testing::TestParamInfo<InPlaceParam>& param_info) {
  const auto [kind, family, mode, form] = param_info.param;
  return std::string(kInPlaceNames[kind]) + "_" + kFamilyNames[family] + "_" + mode_name(mode) +
         "_" + form_name(form);
}

class InPlace : public AllRanks<::testing::TestWithParam<InPlaceParam>> {};

using KindParam = std::tuple<int, Form>;
inline std::string kind_name(const ::testing::TestParamInfo<KindParam>& param_info) {
  return std::string(kCollectives[std::get<0>(param_info.param)].name) + "_" +
         form_name(std::get<1>(param_info.param));
}

class ZeroCounts : public AllRanks<::testing::TestWithParam<KindParam>> {};

// Every collective in MPI-4's large-count form (MPI_Alltoall_c, MPI_Alltoallv_c, ...).
class LargeCountForms : public AllRanks<::testing::TestWithParam<KindParam>> {};

// Rank 0 uses a type Loom has no plan for (the host packs it), the others a basic type.
class NoPlanOnOneRank : public AllRanks<::testing::TestWithParam<KindParam>> {};

inline const std::vector<Family>& no_plan() {
  static const std::vector<Family> found = no_plan_families();
  return found;
}

inline std::vector<int> kinds_of(std::initializer_list<Coll> colls) {
  std::vector<int> kinds;
  for (int kind = 0; kind < kCollectiveKinds; ++kind)
    if (std::find(colls.begin(), colls.end(), kCollectives[kind].coll) != colls.end())
      kinds.push_back(kind);
  return kinds;
}

inline std::vector<int> in_place_kinds_of(std::initializer_list<Coll> colls) {
  std::vector<int> kinds;
  for (int kind = 0; kind < static_cast<int>(std::size(kInPlace)); ++kind)
    if (std::find(colls.begin(), colls.end(), kInPlace[kind]) != colls.end()) kinds.push_back(kind);
  return kinds;
}

// Every family x every way of mixing types, blocking and non-blocking (suite Collectives).
inline auto types_cases(const std::vector<int>& kinds) {
  return ::testing::Combine(
      ::testing::ValuesIn(kinds), ::testing::Range(0, kFamilies),
      ::testing::Values(Mode::Derived, Mode::SendDerived, Mode::RecvDerived, Mode::MixedRanks),
      ::testing::ValuesIn(forms()));
}

// In place, every family, derived or mixed across ranks (suite InPlace).
inline auto in_place_cases(const std::vector<int>& in_place_kinds) {
  return ::testing::Combine(::testing::ValuesIn(in_place_kinds), ::testing::Range(0, kFamilies),
                            ::testing::Values(Mode::Derived, Mode::MixedRanks),
                            ::testing::ValuesIn(forms()));
}

// Every form (suites ZeroCounts, NoPlanOnOneRank, LargeCountForms).
inline auto kind_cases(const std::vector<int>& kinds) {
  return ::testing::Combine(::testing::ValuesIn(kinds), ::testing::ValuesIn(forms()));
}

// ---------------------------------------------------------------------------------------------
// Statistics, request completion, type lifetimes, intercommunicators

inline loom_stats stats_now() {
  loom_stats s;
  loom_get_stats(&s);
  return s;
}

}  // namespace loom::test::coll
