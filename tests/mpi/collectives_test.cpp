// Collectives through Loom, checked against the host MPI in the same job.
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
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ostream>
#include <string>
#include <tuple>
#include <vector>

#include "loom/loom.h"
#include "tests/mpi/gtest_mpi.hpp"
#include "tests/mpi/loom_env.hpp"

namespace {

int g_rank = 0;
int g_size = 1;

// MPICH 4.0's own in-place MPI_Alltoallw fails with MPI_ERR_TRUNCATE on many layouts (it
// receives a peer's bytes as that peer's types), so there the reference for Loom's in-place
// call is the same exchange sent from a copy of the receive buffer.
#ifdef MPICH_VERSION
constexpr bool kHostInPlaceAlltoallwFails = true;
#else
constexpr bool kHostInPlaceAlltoallwFails = false;
#endif

constexpr unsigned char kSentinel = 0xA5;
constexpr int64_t kMargin = 48;  // sentinel bytes around every buffer

// ---------------------------------------------------------------------------------------------
// Datatypes

struct TestType {
  MPI_Datatype type = MPI_DATATYPE_NULL;
  int units = 1;  // signature units (ints, bytes or struct records) in one element
  int64_t extent = 0, true_lb = 0, true_extent = 0;
};

TestType test_type(MPI_Datatype type, int units) {
  MPI_Aint lb = 0, extent = 0, true_lb = 0, true_extent = 0;
  PMPI_Type_get_extent(type, &lb, &extent);
  PMPI_Type_get_true_extent(type, &true_lb, &true_extent);
  TestType t;
  t.type = type;
  t.units = units;
  t.extent = extent;
  t.true_lb = true_lb;
  t.true_extent = true_extent;
  return t;
}

MPI_Datatype committed(MPI_Datatype type) {
  MPI_Type_commit(&type);  // through Loom, which builds its plan here
  return type;
}

MPI_Datatype resized(MPI_Datatype type, MPI_Aint lb, MPI_Aint extent) {
  MPI_Datatype out;
  MPI_Type_create_resized(type, lb, extent, &out);
  MPI_Type_free(&type);
  return committed(out);
}

// A derived type and a partner with the same signature per unit (a basic type, or a dense
// struct), so that ranks and sides may mix them within one collective.
struct Family {
  const char* name;
  TestType derived, partner;
  int max_amount = 2;  // derived elements per block at most
};

constexpr const char* kFamilyNames[] = {"contiguous",         "vector",      "subarray",
                                        "indexed_block",      "struct_gaps", "resized_vector",
                                        "resized_contiguous", "offset_dense"};
constexpr int kFamilies = static_cast<int>(std::size(kFamilyNames));

const std::vector<Family>& families() {
  static const std::vector<Family> all = [] {
    const TestType one_int = test_type(MPI_INT, 1);
    std::vector<Family> f;
    MPI_Datatype t;
    MPI_Type_contiguous(4, MPI_INT, &t);  // dense: passes as bytes without a copy
    f.push_back({kFamilyNames[0], test_type(committed(t), 4), one_int});
    MPI_Type_vector(3, 2, 5, MPI_INT, &t);
    f.push_back({kFamilyNames[1], test_type(committed(t), 6), one_int});
    const int sizes[2] = {4, 5}, subsizes[2] = {2, 3}, starts[2] = {1, 1};
    MPI_Type_create_subarray(2, sizes, subsizes, starts, MPI_ORDER_C, MPI_INT, &t);
    f.push_back({kFamilyNames[2], test_type(committed(t), 6), one_int});
    const int displacements[3] = {7, 0, 4};  // out of order: the typemap order counts
    MPI_Type_create_indexed_block(3, 2, displacements, MPI_INT, &t);
    f.push_back({kFamilyNames[3], test_type(committed(t), 6), one_int});
    {
      // {int, int, double, int} with holes, against the same record packed without holes.
      const int lengths[3] = {2, 1, 1};
      const MPI_Datatype members[3] = {MPI_INT, MPI_DOUBLE, MPI_INT};
      const MPI_Aint holes[3] = {0, 16, 28}, packed[3] = {0, 8, 16};
      MPI_Type_create_struct(3, lengths, holes, members, &t);
      const TestType with_gaps = test_type(resized(t, 0, 40), 1);
      MPI_Type_create_struct(3, lengths, packed, members, &t);
      f.push_back({kFamilyNames[4], with_gaps, test_type(resized(t, 0, 20), 1)});
    }
    MPI_Type_vector(2, 1, 3, MPI_INT, &t);  // negative lower bound, extent beyond the data
    f.push_back({kFamilyNames[5], test_type(resized(t, -8, 40), 2), one_int});
    MPI_Type_contiguous(3, MPI_INT, &t);  // one dense run per element, gaps between elements
    f.push_back({kFamilyNames[6], test_type(resized(t, 0, 16), 3), one_int});
    {
      const int length = 3;
      const MPI_Aint offset = 8;  // dense, but its bytes start 8 bytes after its origin
      MPI_Type_create_hindexed(1, &length, &offset, MPI_INT, &t);
      f.push_back({kFamilyNames[7], test_type(committed(t), 3), one_int});
    }
    return f;
  }();
  return all;
}

// Types Loom leaves to the host (no plan), where this host has such a type.
std::vector<Family> no_plan_families() {
  std::vector<Family> found;
  MPI_Datatype t;
  // Open MPI 4.1 packs a descending run of bytes in ascending order; Loom leaves it alone.
  MPI_Type_create_hvector(4, 1, -1, MPI_BYTE, &t);
  found.push_back(
      {"hvector_descending_bytes", test_type(committed(t), 4), test_type(MPI_BYTE, 1), 2});
#ifdef MPICH_VERSION
  // Loom has no decoder for the F90 combiners. (Open MPI's is skipped: its decoding of an F90
  // member currently aborts the job.)
  MPI_Datatype real = MPI_DATATYPE_NULL;
  MPI_Type_create_f90_real(15, MPI_UNDEFINED, &real);
  int real_size = 0;
  MPI_Type_size(real, &real_size);
  if (real_size == static_cast<int>(sizeof(double))) {
    MPI_Type_vector(2, 1, 2, real, &t);
    found.push_back(
        {"vector_of_f90_real", test_type(committed(t), 2), test_type(MPI_DOUBLE, 1), 2});
  }
#endif
  std::vector<Family> without_plan;
  for (Family& family : found) {
    if (!loom_type_is_accelerated(family.derived.type))
      without_plan.push_back(family);
    else
      MPI_Type_free(&family.derived.type);
  }
  return without_plan;
}

// Which side uses the family's derived type, and which its partner.
enum class Mode { Derived, SendDerived, RecvDerived, MixedRanks, FirstRankDerived };

const char* mode_name(Mode mode) {
  switch (mode) {
    case Mode::Derived:
      return "derived";
    case Mode::SendDerived:
      return "send_derived_recv_basic";
    case Mode::RecvDerived:
      return "send_basic_recv_derived";
    case Mode::MixedRanks:
      return "mixed_ranks";
    case Mode::FirstRankDerived:
      return "first_rank_derived";
  }
  return "?";
}

void PrintTo(Mode mode, std::ostream* out) {
  *out << mode_name(mode);
}

// ---------------------------------------------------------------------------------------------
// Buffers

// `count` elements of `type` whose first element's origin is `origin` bytes from the base.
struct Block {
  int64_t origin;
  int count;
  const TestType* type;
};

class Region {
 public:
  Region() = default;
  // Room for `blocks` plus margins; filled with a rank-specific pattern (input) or the sentinel.
  Region(const std::vector<Block>& blocks, bool pattern, unsigned salt) {
    int64_t lo = 0, hi = 0;
    for (const Block& b : blocks) {
      if (b.count == 0) continue;
      lo = std::min(lo, b.origin + b.type->true_lb);
      hi = std::max(
          hi, b.origin + (b.count - 1) * b.type->extent + b.type->true_lb + b.type->true_extent);
    }
    origin_ = static_cast<size_t>(kMargin - lo);
    bytes_.assign(static_cast<size_t>(kMargin - lo + hi + kMargin), kSentinel);
    // Every input differs from all earlier ones, so stale bytes (say, in a reused staging
    // buffer) cannot pass for the right ones.
    static unsigned generation = 0;
    ++generation;
    if (pattern)
      for (size_t i = 0; i < bytes_.size(); ++i)
        bytes_[i] = static_cast<unsigned char>(i * 7 + salt * 31 + g_rank * 101 + generation * 13 +
                                               (i >> 8) * generation + 1);
  }
  void* base() { return bytes_.empty() ? nullptr : bytes_.data() + origin_; }
  const std::vector<unsigned char>& bytes() const { return bytes_; }
  size_t origin() const { return origin_; }

 private:
  std::vector<unsigned char> bytes_;
  size_t origin_ = 0;
};

void expect_identical(const Region& loom, const Region& host, const std::string& what) {
  ASSERT_EQ(loom.bytes().size(), host.bytes().size());
  size_t differing = 0, first = 0;
  for (size_t i = 0; i < loom.bytes().size(); ++i) {
    if (loom.bytes()[i] == host.bytes()[i]) continue;
    if (differing++ == 0) first = i;
  }
  EXPECT_EQ(differing, 0u) << what << " on rank " << g_rank << ": " << differing
                           << " bytes differ from the host's, the first at offset "
                           << static_cast<int64_t>(first) - static_cast<int64_t>(loom.origin())
                           << " (Loom " << int{loom.bytes()[first]} << ", host "
                           << int{host.bytes()[first]} << ")";
}

std::vector<Block> uniform_blocks(const TestType& t, int blocks, int count) {
  std::vector<Block> out;
  for (int i = 0; i < blocks; ++i) out.push_back({int64_t{i} * count * t.extent, count, &t});
  return out;
}

// Displacements in extents laying blocks out in reverse order, one extent apart.
std::vector<int> spread(const std::vector<int>& counts) {
  std::vector<int> displs(counts.size());
  int next = 1;
  for (size_t i = counts.size(); i-- > 0;) {
    displs[i] = next;
    next += counts[i] + 1;
  }
  return displs;
}

std::vector<Block> varying_blocks(const TestType& t, const std::vector<int>& counts,
                                  const std::vector<int>& displs) {
  std::vector<Block> out;
  for (size_t i = 0; i < counts.size(); ++i)
    out.push_back({int64_t{displs[i]} * t.extent, counts[i], &t});
  return out;
}

// Byte displacements for blocks of their own types, in reverse order with gaps.
std::vector<MPI_Aint> spread_bytes(const std::vector<int>& counts,
                                   const std::vector<const TestType*>& types) {
  std::vector<MPI_Aint> displs(counts.size());
  int64_t next = 8;
  for (size_t i = counts.size(); i-- > 0;) {
    const TestType& t = *types[i];
    const int64_t start = (next - t.true_lb + 7) / 8 * 8;
    displs[i] = start;
    next = start + t.true_lb + std::max(counts[i], 1) * t.extent + 8;
  }
  return displs;
}

std::vector<Block> typed_blocks(const std::vector<int>& counts, const std::vector<MPI_Aint>& displs,
                                const std::vector<const TestType*>& types) {
  std::vector<Block> out;
  for (size_t i = 0; i < counts.size(); ++i) out.push_back({displs[i], counts[i], types[i]});
  return out;
}

std::vector<int> as_int(const std::vector<MPI_Aint>& values) {
  return std::vector<int>(values.begin(), values.end());
}

std::vector<MPI_Datatype> handles(const std::vector<const TestType*>& types) {
  std::vector<MPI_Datatype> out;
  for (const TestType* t : types) out.push_back(t->type);
  return out;
}

// ---------------------------------------------------------------------------------------------
// Calling a collective through Loom (MPI_*) or through the host (PMPI_*)

struct Api {
  bool loom;
  bool nonblocking;
};

int complete(const Api& api, int rc, MPI_Request* request) {
  if (rc != MPI_SUCCESS) return rc;
  return api.loom ? MPI_Wait(request, MPI_STATUS_IGNORE) : PMPI_Wait(request, MPI_STATUS_IGNORE);
}

// MPI_<Blocking>(args) or MPI_<Nonblocking>(args, &request) and a wait, through Loom or the
// host as `api` says.
#define CALL_COLLECTIVE(api, Blocking, Nonblocking, ...) \
  ((api).nonblocking ? [&] {                                                                \
    MPI_Request request_ = MPI_REQUEST_NULL;                                                \
    return complete((api),                                                                  \
                    (api).loom ? MPI_##Nonblocking(__VA_ARGS__, &request_)                  \
                               : PMPI_##Nonblocking(__VA_ARGS__, &request_),                \
                    &request_);                                                             \
  }()                                                                                       \
                     : ((api).loom ? MPI_##Blocking(__VA_ARGS__) : PMPI_##Blocking(__VA_ARGS__)))

// ---------------------------------------------------------------------------------------------
// Topologies for the neighbourhood collectives

enum class Topology { None, Cart, DistGraph, Line, RepeatedEdges };

// The topologies are built once; their errors come back as codes.
MPI_Comm cartesian(std::vector<int> dims, std::vector<int> periods) {
  MPI_Comm c;
  MPI_Cart_create(MPI_COMM_WORLD, static_cast<int>(dims.size()), dims.data(), periods.data(), 0,
                  &c);
  MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
  return c;
}
MPI_Comm distributed_graph(const std::vector<int>& sources, const std::vector<int>& destinations) {
  MPI_Comm c;
  MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, static_cast<int>(sources.size()), sources.data(),
                                 MPI_UNWEIGHTED, static_cast<int>(destinations.size()),
                                 destinations.data(), MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &c);
  MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
  return c;
}

// A 2-D torus periodic in one dimension only, so border ranks have MPI_PROC_NULL neighbours.
MPI_Comm cart_comm() {
  static MPI_Comm comm = [] {
    int dims[2] = {0, 0};
    MPI_Dims_create(g_size, 2, dims);
    return cartesian({dims[0], dims[1]}, {1, 0});
  }();
  return comm;
}

// Each rank receives from r-1 and r+2 and sends to r+1 and r-2 (self edges when 2 ranks).
MPI_Comm dist_graph_comm() {
  const int p = g_size, r = g_rank;
  static MPI_Comm comm =
      distributed_graph({(r + p - 1) % p, (r + 2) % p}, {(r + 1) % p, (r + 2 * p - 2) % p});
  return comm;
}

// A non-periodic chain of all ranks: a Cartesian topology that names no neighbour twice,
// which Loom's same-node window carries (periodic dimensions of 1 or 2 ranks it leaves to
// the host).
MPI_Comm line_comm() {
  static MPI_Comm comm = cartesian({g_size}, {0});
  return comm;
}

// Two edges from each rank to the next and a self edge between them: the m-th block a rank
// sends to a peer must land in the m-th block that peer receives from it, as on the host.
MPI_Comm repeated_edges_comm() {
  const int p = g_size, r = g_rank;
  static MPI_Comm comm =
      distributed_graph({(r + p - 1) % p, r, (r + p - 1) % p}, {(r + 1) % p, (r + 1) % p, r});
  return comm;
}

MPI_Comm topology_comm(Topology topology) {
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

Neighbours neighbours(MPI_Comm comm) {
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
  bool nonblocking = false;
  bool in_place = false;
  bool zero = false;  // every count zero

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
void expect_same(const Case& c, const Region& send, const Region& recv, bool data_due, Call call) {
  Region send_loom = send, recv_loom = recv, send_host = send, recv_host = recv;
  const int rc_loom = call(Api{true, c.nonblocking}, send_loom.base(), recv_loom.base());
  const int rc_host = call(Api{false, c.nonblocking}, send_host.base(), recv_host.base());
  EXPECT_EQ(rc_loom, MPI_SUCCESS);
  EXPECT_EQ(rc_host, MPI_SUCCESS);
  expect_identical(recv_loom, recv_host, "receive buffer");
  expect_identical(send_loom, send, "send buffer");
  if (data_due) {
    EXPECT_NE(recv_host.bytes(), recv.bytes())
        << "the host received nothing on rank " << g_rank << ": the comparison proves nothing";
  }
}

void* or_in_place(bool in_place, void* buffer) {
  return in_place ? MPI_IN_PLACE : buffer;
}

void run_all_to_all(Coll coll, const Case& c) {
  const int p = g_size, me = g_rank;
  const MPI_Comm comm = MPI_COMM_WORLD;
  const TestType &st = c.type(true), &rt = c.type(false);
  if (coll == Coll::Alltoall) {
    const int send_count = c.count(st, c.amount()), recv_count = c.count(rt, c.amount());
    const Region send = c.in_place ? Region() : Region(uniform_blocks(st, p, send_count), true, 1);
    const Region recv(uniform_blocks(rt, p, recv_count), c.in_place, 2);
    expect_same(c, send, recv, recv_count > 0 && p > 1, [&](const Api& api, void* s, void* r) {
      return CALL_COLLECTIVE(api, Alltoall, Ialltoall, or_in_place(c.in_place, s), send_count,
                             st.type, r, recv_count, rt.type, comm);
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
      return CALL_COLLECTIVE(api, Alltoallv, Ialltoallv, or_in_place(c.in_place, s),
                             send_counts.data(), sdispls.data(), st.type, r, recv_counts.data(),
                             rdispls.data(), rt.type, comm);
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
      Region input = recv;  // the same exchange, sent from a copy of the receive buffer
      return CALL_COLLECTIVE(api, Alltoallw, Ialltoallw, input.base(), recv_counts.data(),
                             rdispls_int.data(), recv_handles.data(), r, recv_counts.data(),
                             rdispls_int.data(), recv_handles.data(), comm);
    }
    return CALL_COLLECTIVE(api, Alltoallw, Ialltoallw, or_in_place(c.in_place, s),
                           send_counts.data(), sdispls_int.data(), send_handles.data(), r,
                           recv_counts.data(), rdispls_int.data(), recv_handles.data(), comm);
  });
}

void run_allgather(Coll coll, const Case& c) {
  const int p = g_size;
  const MPI_Comm comm = MPI_COMM_WORLD;
  const TestType &st = c.type(true), &rt = c.type(false);
  if (coll == Coll::Allgather) {
    const int send_count = c.count(st, c.amount()), recv_count = c.count(rt, c.amount());
    const Region send = c.in_place ? Region() : Region(uniform_blocks(st, 1, send_count), true, 1);
    const Region recv(uniform_blocks(rt, p, recv_count), c.in_place, 2);
    expect_same(c, send, recv, recv_count > 0 && p > 1, [&](const Api& api, void* s, void* r) {
      return CALL_COLLECTIVE(api, Allgather, Iallgather, or_in_place(c.in_place, s), send_count,
                             st.type, r, recv_count, rt.type, comm);
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
    return CALL_COLLECTIVE(api, Allgatherv, Iallgatherv, or_in_place(c.in_place, s), send_count,
                           st.type, r, recv_counts.data(), displs.data(), rt.type, comm);
  });
}

void run_gather(Coll coll, const Case& c) {
  const int p = g_size, root = p - 1;
  const bool is_root = g_rank == root, in_place = c.in_place && is_root;
  const MPI_Comm comm = MPI_COMM_WORLD;
  const TestType &st = c.type(true), &rt = c.type(false);
  if (coll == Coll::Gather) {
    const int send_count = c.count(st, c.amount()), recv_count = c.count(rt, c.amount());
    const Region send = in_place ? Region() : Region(uniform_blocks(st, 1, send_count), true, 1);
    const Region recv = is_root ? Region(uniform_blocks(rt, p, recv_count), in_place, 2) : Region();
    expect_same(c, send, recv, is_root && recv_count > 0, [&](const Api& api, void* s, void* r) {
      return CALL_COLLECTIVE(api, Gather, Igather, or_in_place(in_place, s), send_count, st.type, r,
                             recv_count, rt.type, root, comm);
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
    return CALL_COLLECTIVE(api, Gatherv, Igatherv, or_in_place(in_place, s), send_count, st.type, r,
                           recv_counts.data(), displs.data(), rt.type, root, comm);
  });
}

void run_scatter(Coll coll, const Case& c) {
  const int p = g_size, root = 1 % p;
  const bool is_root = g_rank == root, in_place = c.in_place && is_root;
  const MPI_Comm comm = MPI_COMM_WORLD;
  const TestType &st = c.type(true), &rt = c.type(false);
  if (coll == Coll::Scatter) {
    const int send_count = c.count(st, c.amount()), recv_count = c.count(rt, c.amount());
    const Region send = is_root ? Region(uniform_blocks(st, p, send_count), true, 1) : Region();
    const Region recv = in_place ? Region() : Region(uniform_blocks(rt, 1, recv_count), false, 2);
    expect_same(c, send, recv, !in_place && recv_count > 0, [&](const Api& api, void* s, void* r) {
      return CALL_COLLECTIVE(api, Scatter, Iscatter, s, send_count, st.type,
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
    return CALL_COLLECTIVE(api, Scatterv, Iscatterv, s, send_counts.data(), displs.data(), st.type,
                           or_in_place(in_place, r), recv_count, rt.type, root, comm);
  });
}

void run_bcast(const Case& c) {
  const int root = g_size - 1;
  const bool is_root = g_rank == root;
  const TestType& t = c.type(is_root);
  const int count = c.count(t, 2 * c.amount());
  // The root's buffer is the input; the others' is where the data lands.
  const Region buffer(uniform_blocks(t, 1, count), is_root, 3);
  expect_same(c, Region(), buffer, !is_root && count > 0, [&](const Api& api, void*, void* b) {
    return CALL_COLLECTIVE(api, Bcast, Ibcast, b, count, t.type, root, MPI_COMM_WORLD);
  });
}

void run_neighbourhood(Coll coll, Topology topology, const Case& c) {
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
    expect_same(c, send, recv, real_source && recv_count > 0,
                [&](const Api& api, void* s, void* r) {
                  if (all_to_all)
                    return CALL_COLLECTIVE(api, Neighbor_alltoall, Ineighbor_alltoall, s,
                                           send_count, st.type, r, recv_count, rt.type, comm);
                  return CALL_COLLECTIVE(api, Neighbor_allgather, Ineighbor_allgather, s,
                                         send_count, st.type, r, recv_count, rt.type, comm);
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
      return CALL_COLLECTIVE(api, Neighbor_allgatherv, Ineighbor_allgatherv, s, send_count, st.type,
                             r, recv_counts.data(), displs.data(), rt.type, comm);
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
      return CALL_COLLECTIVE(api, Neighbor_alltoallv, Ineighbor_alltoallv, s, send_counts.data(),
                             sdispls.data(), st.type, r, recv_counts.data(), rdispls.data(),
                             rt.type, comm);
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
    return CALL_COLLECTIVE(api, Neighbor_alltoallw, Ineighbor_alltoallw, s, send_counts.data(),
                           sdispls.data(), send_handles.data(), r, recv_counts.data(),
                           rdispls.data(), recv_handles.data(), comm);
  });
}

void run(Coll coll, Topology topology, const Case& c) {
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

std::string form(bool nonblocking) {
  return nonblocking ? "nonblocking" : "blocking";
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
// Every collective x every family x every way of mixing types, blocking and non-blocking

using TypesParam = std::tuple<int, int, Mode, bool>;
std::string types_name(const ::testing::TestParamInfo<TypesParam>& param_info) {
  const auto [kind, family, mode, nonblocking] = param_info.param;
  return std::string(kCollectives[kind].name) + "_" + kFamilyNames[family] + "_" + mode_name(mode) +
         "_" + form(nonblocking);
}

class Collectives : public AllRanks<::testing::TestWithParam<TypesParam>> {};

TEST_P(Collectives, SameBytesAsHost) {
  const auto [kind, family, mode, nonblocking] = GetParam();
  Case c;
  c.family = &families()[static_cast<size_t>(family)];
  c.mode = mode;
  c.nonblocking = nonblocking;
  run(kCollectives[kind].coll, kCollectives[kind].topology, c);
}

INSTANTIATE_TEST_SUITE_P(Types, Collectives,
                         ::testing::Combine(::testing::Range(0, kCollectiveKinds),
                                            ::testing::Range(0, kFamilies),
                                            ::testing::Values(Mode::Derived, Mode::SendDerived,
                                                              Mode::RecvDerived, Mode::MixedRanks),
                                            ::testing::Bool()),
                         types_name);

using InPlaceParam = std::tuple<int, int, Mode, bool>;
std::string in_place_name(const ::testing::TestParamInfo<InPlaceParam>& param_info) {
  const auto [kind, family, mode, nonblocking] = param_info.param;
  return std::string(kInPlaceNames[kind]) + "_" + kFamilyNames[family] + "_" + mode_name(mode) +
         "_" + form(nonblocking);
}

class InPlace : public AllRanks<::testing::TestWithParam<InPlaceParam>> {};

TEST_P(InPlace, SameBytesAsHost) {
  const auto [kind, family, mode, nonblocking] = GetParam();
  Case c;
  c.family = &families()[static_cast<size_t>(family)];
  c.mode = mode;
  c.nonblocking = nonblocking;
  c.in_place = true;
  if (kInPlace[kind] == Coll::Alltoallw && kHostInPlaceAlltoallwFails &&
      loom::test::loom_disabled_by_env())
    GTEST_SKIP() << "Loom is disabled: this would only run the host's failing in-place Alltoallw";
  run(kInPlace[kind], Topology::None, c);
}

INSTANTIATE_TEST_SUITE_P(
    Types, InPlace,
    ::testing::Combine(::testing::Range(0, static_cast<int>(std::size(kInPlace))),
                       ::testing::Range(0, kFamilies),
                       ::testing::Values(Mode::Derived, Mode::MixedRanks), ::testing::Bool()),
    in_place_name);

using KindParam = std::tuple<int, bool>;
std::string kind_name(const ::testing::TestParamInfo<KindParam>& param_info) {
  return std::string(kCollectives[std::get<0>(param_info.param)].name) + "_" +
         form(std::get<1>(param_info.param));
}

class ZeroCounts : public AllRanks<::testing::TestWithParam<KindParam>> {};

TEST_P(ZeroCounts, SameBytesAsHost) {
  const auto [kind, nonblocking] = GetParam();
  for (Mode mode : {Mode::Derived, Mode::MixedRanks}) {
    Case c;
    c.family = &families()[1];  // vector
    c.mode = mode;
    c.nonblocking = nonblocking;
    c.zero = true;
    run(kCollectives[kind].coll, kCollectives[kind].topology, c);
  }
}

INSTANTIATE_TEST_SUITE_P(All, ZeroCounts,
                         ::testing::Combine(::testing::Range(0, kCollectiveKinds),
                                            ::testing::Bool()),
                         kind_name);

// Rank 0 uses a type Loom has no plan for (the host packs it), the others a basic type.
class NoPlanOnOneRank : public AllRanks<::testing::TestWithParam<KindParam>> {};

const std::vector<Family>& no_plan() {
  static const std::vector<Family> found = no_plan_families();
  return found;
}

TEST_P(NoPlanOnOneRank, SameBytesAsHost) {
  ASSERT_FALSE(no_plan().empty()) << "no candidate type lacks a Loom plan: pick a new one";
  const auto [kind, nonblocking] = GetParam();
  for (const Family& family : no_plan()) {
    SCOPED_TRACE(family.name);
    Case c;
    c.family = &family;
    c.mode = Mode::FirstRankDerived;
    c.nonblocking = nonblocking;
    run(kCollectives[kind].coll, kCollectives[kind].topology, c);
  }
}

INSTANTIATE_TEST_SUITE_P(All, NoPlanOnOneRank,
                         ::testing::Combine(::testing::Range(0, kCollectiveKinds),
                                            ::testing::Bool()),
                         kind_name);

// ---------------------------------------------------------------------------------------------
// Statistics, request completion, type lifetimes, intercommunicators

class CollectiveStats : public CollectiveTest {};
class CollectiveLifetimes : public CollectiveTest {};
class CollectiveRequests : public CollectiveTest {};
class Intercommunicator : public CollectiveTest {};

loom_stats stats_now() {
  loom_stats s;
  loom_get_stats(&s);
  return s;
}

TEST_F(CollectiveStats, CountsCallsLoomPacked) {
  const Family& vector = families()[1];
  Case c;
  c.family = &vector;
  const loom_stats before = stats_now();
  run(Coll::Alltoall, Topology::None, c);  // through Loom once, through the host once
  const loom_stats after = stats_now();
  const uint64_t block_bytes = 2 * 6 * sizeof(int);  // two vector elements of six ints
  if (loom::test::loom_disabled_by_env()) {
    EXPECT_EQ(after.collective_packed, before.collective_packed);
    EXPECT_EQ(after.collective_packed_bytes, before.collective_packed_bytes);
  } else {
    EXPECT_EQ(after.collective_packed, before.collective_packed + 1);
    // Packed for all peers, and unpacked from all of them.
    EXPECT_EQ(after.collective_packed_bytes,
              before.collective_packed_bytes + 2 * block_bytes * static_cast<uint64_t>(g_size));
  }
  // A basic or dense type travels as it is: nothing packed.
  const loom_stats before_dense = stats_now();
  c.family = &families()[0];
  run(Coll::Allgather, Topology::None, c);
  EXPECT_EQ(stats_now().collective_packed, before_dense.collective_packed);
}

// LOOM_SHARED_COLLECTIVES=0, or ranks on more than one node (LOOM_RANKS_PER_NODE), keep
// neighbourhood all-to-alls on the host's exchange.
bool shared_window_expected() {
  if (loom::test::loom_disabled_by_env()) return false;
  const char* shared = std::getenv("LOOM_SHARED_COLLECTIVES");
  if (shared && std::strcmp(shared, "0") == 0) return false;
  const char* per_node = std::getenv("LOOM_RANKS_PER_NODE");
  return !per_node || std::atoi(per_node) <= 0 || std::atoi(per_node) >= g_size;
}

TEST_F(CollectiveStats, NeighbourhoodAllToAllsUseTheSharedWindowOnOneNode) {
  Case c;
  c.family = &families()[1];
  const loom_stats before = stats_now();
  run(Coll::NeighborAlltoallw, Topology::RepeatedEdges, c);  // Loom once, the host once
  run(Coll::NeighborAlltoall, Topology::Line, c);
  const loom_stats shared = stats_now();
  EXPECT_EQ(shared.collective_shared,
            before.collective_shared + (shared_window_expected() ? 2 : 0));
  // A periodic dimension of two ranks names one neighbour twice, and MPICH pairs the
  // repeated edges of MPI_Neighbor_alltoall its own way: both keep the host's exchange.
  run(Coll::NeighborAlltoall, Topology::Cart, c);
  run(Coll::NeighborAlltoall, Topology::RepeatedEdges, c);
  EXPECT_EQ(stats_now().collective_shared, shared.collective_shared);
}

TEST_F(CollectiveStats, CountsTypesLeftToTheHost) {
  ASSERT_FALSE(no_plan().empty());
  Case c;
  c.family = &no_plan()[0];
  const loom_stats before = stats_now();
  run(Coll::Allgather, Topology::None, c);
  const loom_stats after = stats_now();
  if (loom::test::loom_disabled_by_env()) {
    EXPECT_EQ(after.collective_host, before.collective_host);
  } else {
    EXPECT_GT(after.collective_host, before.collective_host);
  }
}

// The user may free a receive type while a non-blocking collective is pending; the unpack
// at completion must still use it, even after its handle has been reused.
TEST_F(CollectiveLifetimes, ReceiveTypeFreedBeforeCompletion) {
  std::vector<const Family*> subjects = {&families()[1], &families()[5]};
  for (const Family& family : no_plan()) subjects.push_back(&family);
  for (const Family* family : subjects) {
    SCOPED_TRACE(family->name);
    const int count = family->max_amount;
    const TestType& t = family->derived;
    const Region send(uniform_blocks(t, g_size, count), true, 1);
    const Region recv(uniform_blocks(t, g_size, count), false, 2);
    Region send_loom = send, recv_loom = recv, send_host = send, recv_host = recv;
    MPI_Datatype doomed;
    MPI_Type_dup(t.type, &doomed);
    MPI_Type_commit(&doomed);
    MPI_Request request = MPI_REQUEST_NULL;
    EXPECT_EQ(MPI_Ialltoall(send_loom.base(), count, t.type, recv_loom.base(), count, doomed,
                            MPI_COMM_WORLD, &request),
              MPI_SUCCESS);
    MPI_Type_free(&doomed);
    MPI_Datatype reuse;  // likely to get the freed handle back
    MPI_Type_contiguous(3, MPI_SHORT, &reuse);
    MPI_Type_commit(&reuse);
    EXPECT_EQ(MPI_Wait(&request, MPI_STATUS_IGNORE), MPI_SUCCESS);
    MPI_Type_free(&reuse);
    EXPECT_EQ(PMPI_Alltoall(send_host.base(), count, t.type, recv_host.base(), count, t.type,
                            MPI_COMM_WORLD),
              MPI_SUCCESS);
    expect_identical(recv_loom, recv_host, "receive buffer");
    EXPECT_NE(recv_host.bytes(), recv.bytes());
  }
}

// Several collectives in flight at once, completed by MPI_Waitall and by polling MPI_Test.
TEST_F(CollectiveRequests, SeveralInFlight) {
  const Family& family = families()[2];  // subarray
  const TestType& t = family.derived;
  const int count = 2;
  const Region gather_send(uniform_blocks(t, 1, count), true, 1);
  const Region gather_recv(uniform_blocks(t, g_size, count), false, 2);
  const Region all_send(uniform_blocks(t, g_size, count), true, 3);
  const Region all_recv(uniform_blocks(t, g_size, count), false, 4);
  const Region bcast_buffer(uniform_blocks(t, 1, count), g_rank == 0, 5);
  Region gs = gather_send, gr = gather_recv, as = all_send, ar = all_recv, bb = bcast_buffer;
  MPI_Request requests[4] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL, MPI_REQUEST_NULL,
                             MPI_REQUEST_NULL};
  EXPECT_EQ(MPI_Iallgather(gs.base(), count, t.type, gr.base(), count, t.type, MPI_COMM_WORLD,
                           &requests[0]),
            MPI_SUCCESS);
  EXPECT_EQ(MPI_Ialltoall(as.base(), count, t.type, ar.base(), count, t.type, MPI_COMM_WORLD,
                          &requests[2]),
            MPI_SUCCESS);
  EXPECT_EQ(MPI_Waitall(4, requests, MPI_STATUSES_IGNORE), MPI_SUCCESS);
  EXPECT_EQ(MPI_Ibcast(bb.base(), count, t.type, 0, MPI_COMM_WORLD, &requests[3]), MPI_SUCCESS);
  for (int done = 0, rc = MPI_SUCCESS; !done && rc == MPI_SUCCESS;) {
    rc = MPI_Test(&requests[3], &done, MPI_STATUS_IGNORE);
    EXPECT_EQ(rc, MPI_SUCCESS);
  }
  EXPECT_EQ(requests[3], MPI_REQUEST_NULL);

  Region hs = gather_send, hr = gather_recv, has = all_send, har = all_recv, hb = bcast_buffer;
  PMPI_Allgather(hs.base(), count, t.type, hr.base(), count, t.type, MPI_COMM_WORLD);
  PMPI_Alltoall(has.base(), count, t.type, har.base(), count, t.type, MPI_COMM_WORLD);
  PMPI_Bcast(hb.base(), count, t.type, 0, MPI_COMM_WORLD);
  expect_identical(gr, hr, "Iallgather receive buffer");
  expect_identical(ar, har, "Ialltoall receive buffer");
  expect_identical(bb, hb, "Ibcast buffer");
}

// Loom leaves intercommunicator collectives to the host, counted when a derived type is
// involved.
TEST_F(Intercommunicator, LeftToTheHost) {
  MPI_Comm local, inter;
  MPI_Comm_split(MPI_COMM_WORLD, g_rank % 2, g_rank, &local);
  MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, g_rank % 2 == 0 ? 1 : 0, 7, &inter);
  MPI_Comm_set_errhandler(inter, MPI_ERRORS_RETURN);
  int remote = 0;
  MPI_Comm_remote_size(inter, &remote);
  const TestType& t = families()[1].derived;
  const int count = 2;
  const Region send(uniform_blocks(t, remote, count), true, 1);
  const Region recv(uniform_blocks(t, remote, count), false, 2);
  Case c;
  c.family = &families()[1];
  const loom_stats before = stats_now();
  expect_same(c, send, recv, true, [&](const Api& api, void* s, void* r) {
    return CALL_COLLECTIVE(api, Alltoall, Ialltoall, s, count, t.type, r, count, t.type, inter);
  });
  const loom_stats after = stats_now();
  EXPECT_EQ(after.collective_packed, before.collective_packed);
  if (!loom::test::loom_disabled_by_env()) {
    EXPECT_EQ(after.collective_host, before.collective_host + 1);
  }
  MPI_Comm_free(&inter);
  MPI_Comm_free(&local);
}

class FailurePrinter : public ::testing::EmptyTestEventListener {
  void OnTestPartResult(const ::testing::TestPartResult& result) override {
    if (result.failed())
      std::fprintf(stderr, "[rank %d] %s:%d: %s\n", g_rank,
                   result.file_name() ? result.file_name() : "?", result.line_number(),
                   result.summary());
  }
};

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  if (g_size < 2 || g_size % 2 != 0) {
    if (g_rank == 0) std::fprintf(stderr, "run with an even number of ranks (2, 4, ...)\n");
    MPI_Finalize();
    return 1;
  }
  // Rank 0 prints GoogleTest's progress; the other ranks print only their failures.
  if (g_rank != 0) {
    ::testing::TestEventListeners& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new FailurePrinter);
  }
  return loom::test::run_tests_and_finalize(&argc, argv);
}
