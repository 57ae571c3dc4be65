// Loom halo: the domain, its persistent plan and the C API of include/loom/halo.h.
// See docs/halo.md. Transports: a rank that is its own neighbour (periodic wrap) copies
// interior to ghost directly; a same-node neighbour's interior is copied straight from
// node-shared memory (or, with attached fields, unpacked from the neighbour's node-shared pack
// area); every other pair gets one persistent host-MPI message each way per exchange, every
// direction and field between the pair merged, packed into and unpacked from persistent buffers.
// Those messages are bytes already packed, so their requests go to the host MPI directly
// (PMPI_*): a preloaded libloom.so would only add a layer.
#include "loom/halo.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include "base/bytes.hpp"
#include "base/env.hpp"
#include "exec/execute.hpp"
#include "halo/geometry.hpp"
#include "halo/step_flags.hpp"
#include "mpi/locality.hpp"
#include "mpi/sim_clock.hpp"
#include "mpi/type_decode.hpp"
#include "pack/box_copy.hpp"
#include "pack/plan.hpp"
#include "place/partition.hpp"
#include "place/placement.hpp"
#include "place/topology.hpp"
#include "runtime/runtime.hpp"
#include "types/ir.hpp"

namespace {

using loom::halo::Box;
using loom::halo::kCentre;
using loom::halo::kDirections;

thread_local std::string last_error;

int fail(int code, std::string message) {
  last_error = std::move(message);
  return code;
}

struct Field {
  size_t element = 0;
  bool attached = false;  // the user's memory (loom_halo_attach_field): base and stride given
  char* allocation = nullptr;
  char* base = nullptr;  // local cell (0, 0, 0)
  std::array<int64_t, 3> stride{};
};

struct Segment {
  int field;
  Box box;
};

// Memory from mpi::sim::allocate (an ordinary allocation with a real MPI).
struct ReleaseMemory {
  void operator()(char* memory) const { loom::mpi::sim::release(memory); }
};
char* allocate(size_t bytes, size_t keep = 0) {
  return static_cast<char*>(loom::mpi::sim::allocate(bytes, keep));
}

struct PeerPlan {
  int peer = 0;
  bool other_node = false;
  std::vector<Segment> send, recv;
  size_t send_bytes = 0, recv_bytes = 0;
  int64_t send_rows = 0, recv_rows = 0;  // contiguous runs (SMPI's cost model, mpi/sim_clock)
  std::unique_ptr<char[], ReleaseMemory> send_buffer, recv_buffer;
  // Every segment of one message as one Loom plan over absolute addresses (as MPI_BOTTOM),
  // so one exec::pack/unpack call moves all directions and fields of the pair.
  std::unique_ptr<loom::pack::Plan> send_plan, recv_plan;
  // Or, for a message of at least LOOM_HALO_HOST_TYPES_ABOVE bytes, the same segments as one
  // MPI datatype over MPI_BOTTOM that the host's engine moves itself: out of cache, packing
  // into a buffer the host then copies again costs more than the pack saves. The typemap order
  // is the plan's packed order, so either side may use either.
  MPI_Datatype send_type = MPI_DATATYPE_NULL, recv_type = MPI_DATATYPE_NULL;
  MPI_Request send_request = MPI_REQUEST_NULL, recv_request = MPI_REQUEST_NULL;
};

struct SharedSource {
  int node_rank = 0;
  std::vector<loom::pack::RowPass> passes;  // fields in node-shared memory: copied directly
  // Attached fields: the source packs what this rank needs into `area`, in its node-shared
  // segment, and this rank unpacks it from there.
  std::unique_ptr<loom::pack::Plan> unpack;
  const char* area = nullptr;
};

// A same-node reader of this rank's attached fields: the faces it needs, packed into `area` in
// this rank's node-shared segment at the start of each exchange.
struct StagedReader {
  int node_rank = 0;
  std::vector<Segment> segments;
  std::unique_ptr<loom::pack::Plan> pack;
  char* area = nullptr;
};

constexpr loom::base::EnvVar kHaloMethods{
    "LOOM_HALO_METHODS", "self,shared,mpi",
    "transports the halo library may use, comma-separated: self (a rank's periodic wrap onto "
    "itself copied directly), shared (same-node neighbours read from node-shared memory; "
    "attached fields through node-shared pack areas), mpi "
    "(one packed message per pair: the fallback, always included). Set it alike on every rank"};

constexpr loom::base::EnvVar kHostTypesAbove{
    "LOOM_HALO_HOST_TYPES_ABOVE", "1M",
    "a pair's MPI message of at least this many bytes goes to the host as one derived datatype "
    "instead of being packed by Loom (0: always; a large value: never)"};
constexpr int64_t kDefaultHostTypesAbove = int64_t{1} << 20;

int64_t host_types_above() {
  static const int64_t bytes = [] {
    int64_t v = kDefaultHostTypesAbove;
    const char* text = loom::base::read(kHostTypesAbove);
    if (text && !loom::base::parse_bytes(text, &v)) {
      loom::base::warn_bad_value(kHostTypesAbove, text, "is not a byte count", "using 1M");
      v = kDefaultHostTypesAbove;
    }
    return v;
  }();
  return bytes;
}

// LOOM_HALO_METHODS as a method mask; 0 when it names something else.
unsigned methods_from_env() {
  const char* text = loom::base::read(kHaloMethods);
  if (!text) return LOOM_HALO_METHODS_ALL;
  unsigned methods = LOOM_HALO_METHOD_MPI;
  std::string list(text);
  for (size_t at = 0; at <= list.size();) {
    size_t end = list.find(',', at);
    if (end == std::string::npos) end = list.size();
    const std::string name = list.substr(at, end - at);
    if (name == "self")
      methods |= LOOM_HALO_METHOD_SELF;
    else if (name == "shared")
      methods |= LOOM_HALO_METHOD_SHARED;
    else if (name != "mpi")
      return 0;
    at = end + 1;
  }
  return methods;
}

constexpr loom::base::EnvVar kPlacement{
    "LOOM_HALO_PLACEMENT", "auto",
    "auto: each node's subdomains go to its ranks so that the most halo bytes move between the "
    "nearest CPUs (hwloc: same core, shared cache, NUMA domain, package), where that beats the "
    "rank order; off: subdomains in rank order. Set it alike on every rank"};

bool placement_wanted() {
  static const bool wanted = [] {
    const char* text = loom::base::read(kPlacement);
    if (!text || !std::strcmp(text, "auto")) return true;
    if (!std::strcmp(text, "off")) return false;
    loom::base::warn_bad_value(kPlacement, text, "is not auto or off", "using auto");
    return true;
  }();
  return wanted;
}

constexpr int kTag = 2424;
// Same-node flag waits spin this long before yielding, when the node's ranks have a core each.
constexpr int kSpinMicros = 200;

}  // namespace

struct loom_halo_domain_s {
  MPI_Comm comm = MPI_COMM_NULL;
  int rank = 0;
  int slot = 0;  // this rank's subdomain in the partition's numbering
  std::vector<int> rank_of_slot;
  loom::place::Partition partition{{1, 1, 1}, {1, 1, 1}, {1, 1, 1}};
  loom::place::Radius radius;
  loom::place::Periodic periodic{};
  uint32_t mask = 0;     // ghost regions to fill (receive directions)
  unsigned methods = 0;  // loom_halo_method bits; 0: not set, LOOM_HALO_METHODS at realize
  std::array<int64_t, 3> size{};
  bool realized = false;
  bool in_flight = false;
  std::vector<Field> fields;
  std::vector<PeerPlan> peers;                   // in issue order: other node first, larger first
  std::vector<loom::pack::RowPass> self_passes;  // the periodic wrap onto this rank
  std::vector<MPI_Request> recv_requests, send_requests;
  int node_leader = 0;  // lowest rank of this rank's node (virtual nodes included)
  // Same-node transport: fields in MPI_Win_allocate_shared memory over the node's ranks.
  bool shared = false;
  MPI_Comm node_comm = MPI_COMM_NULL;
  int node_rank = 0;
  std::vector<int> node_rank_of;  // by rank of comm; -1 off this node
  // One window over the node, one segment per rank: its flags, then its fields (each 64-byte
  // aligned within the segment), laid out from the rank's subdomain size alone, so every rank
  // finds its neighbours' fields without asking.
  MPI_Win window = MPI_WIN_NULL;
  std::vector<char*> segments;  // by node rank
  // Flags at the start of each segment: [0] the last step whose interior is final (set at
  // start), [1 + q] the last step node rank q finished reading this rank's interior.
  std::vector<int64_t*> flags;  // by node rank
  std::vector<SharedSource> sources;
  std::vector<int> readers;  // node ranks that read from this rank
  // A domain with an attached field (the user's memory, not node-shared): each rank's segment
  // holds its flags and one pack area per same-node reader instead of its fields.
  bool staged = false;
  std::vector<StagedReader> staged_readers;
  int spin_micros = 0;          // flag waits: kSpinMicros, or 0 with more node ranks than cores
  char* sim_segment = nullptr;  // SMPI: this rank's segment, in place of the window's
  int64_t step = 0;
};

namespace {

// The plan that packs `segments` in order: each a 3-D box of one field, rows along x dense.
std::unique_ptr<loom::pack::Plan> plan_of(const std::vector<Segment>& segments,
                                          const std::vector<Field>& fields) {
  namespace types = loom::types;
  types::Layout layout;
  for (const Segment& s : segments) {
    const Field& f = fields[static_cast<size_t>(s.field)];
    const char* first =
        f.base + s.box.lo[0] * f.stride[0] + s.box.lo[1] * f.stride[1] + s.box.lo[2] * f.stride[2];
    const int64_t e = static_cast<int64_t>(f.element);
    // Cells along x are dense unless the field is attached with a wider stride (AoS).
    types::NodeRef row = f.stride[0] == e
                             ? types::make_dense(s.box.n[0] * e)
                             : types::make_repeat(s.box.n[0], f.stride[0], types::make_dense(e));
    types::NodeRef plane = types::make_repeat(s.box.n[1], f.stride[1], row);
    layout.push_back({static_cast<int64_t>(reinterpret_cast<uintptr_t>(first)),
                      types::make_repeat(s.box.n[2], f.stride[2], plane)});
  }
  const types::Layout canonical = types::canonicalize(layout);
  const int64_t size = types::packed_size(canonical);
  return std::make_unique<loom::pack::Plan>(canonical, size, loom::runtime::config().isa);
}

// The same segments as plan_of, as one MPI datatype over absolute addresses (MPI_BOTTOM),
// committed; the typemap order is the plan's packed order.
int host_type_of(const std::vector<Segment>& segments, const std::vector<Field>& fields,
                 MPI_Datatype* out) {
  std::vector<MPI_Datatype> boxes;
  std::vector<MPI_Aint> at;
  int rc = MPI_SUCCESS;
  for (const Segment& s : segments) {
    const Field& f = fields[static_cast<size_t>(s.field)];
    const char* first =
        f.base + s.box.lo[0] * f.stride[0] + s.box.lo[1] * f.stride[1] + s.box.lo[2] * f.stride[2];
    const int64_t e = static_cast<int64_t>(f.element);
    MPI_Datatype row, plane, box;
    if (f.stride[0] == e) {
      rc = PMPI_Type_contiguous(static_cast<int>(s.box.n[0] * e), MPI_BYTE, &row);
    } else {
      MPI_Datatype cell;
      PMPI_Type_contiguous(static_cast<int>(e), MPI_BYTE, &cell);
      rc = PMPI_Type_create_hvector(static_cast<int>(s.box.n[0]), 1, f.stride[0], cell, &row);
      PMPI_Type_free(&cell);
    }
    if (rc == MPI_SUCCESS)
      rc = PMPI_Type_create_hvector(static_cast<int>(s.box.n[1]), 1, f.stride[1], row, &plane);
    if (rc == MPI_SUCCESS)
      rc = PMPI_Type_create_hvector(static_cast<int>(s.box.n[2]), 1, f.stride[2], plane, &box);
    PMPI_Type_free(&row);
    if (rc != MPI_SUCCESS) break;
    PMPI_Type_free(&plane);
    boxes.push_back(box);
    MPI_Aint address = 0;
    PMPI_Get_address(first, &address);
    at.push_back(address);
  }
  if (rc == MPI_SUCCESS) {
    const std::vector<int> ones(boxes.size(), 1);
    rc = PMPI_Type_create_struct(static_cast<int>(boxes.size()), ones.data(), at.data(),
                                 boxes.data(), out);
  }
  if (rc == MPI_SUCCESS) rc = PMPI_Type_commit(out);
  for (MPI_Datatype& b : boxes) PMPI_Type_free(&b);
  return rc;
}

// A ghost box filled by a copy inside this process: from this rank's own field (a periodic wrap
// onto itself) or from a same-node neighbour's field in node-shared memory.
loom::pack::BoxCopy box_copy(const char* from_base, const std::array<int64_t, 3>& from_stride,
                             const Box& from, const Field& to, const Box& to_box) {
  return {from_base, from_stride, from.lo, to.base,
          to.stride, to_box.lo,   from.n,  static_cast<int64_t>(to.element)};
}

// SMPI's clock (mpi/sim_clock.hpp; nothing with a real MPI): a pass of box copies, and the
// packing of segments.
void charge_pass(const loom::pack::RowPass& p) {
#ifdef LOOM_SMPI
  int64_t cells = 0;
  for (const auto& s : p.segments) cells += s.cells;
  loom::mpi::sim::charge_copy(p.rows * p.planes * static_cast<int64_t>(p.segments.size()),
                              p.rows * p.planes * cells * p.element);
#else
  (void)p;
#endif
}
void charge_segments(const std::vector<Segment>& segments, const std::vector<Field>& fields) {
#ifdef LOOM_SMPI
  int64_t rows = 0, bytes = 0;
  for (const Segment& s : segments) {
    rows += s.box.n[1] * s.box.n[2];
    bytes += s.box.cells() * static_cast<int64_t>(fields[static_cast<size_t>(s.field)].element);
  }
  loom::mpi::sim::charge_copy(rows, bytes);
#else
  (void)segments, (void)fields;
#endif
}

int mpi_fail(int rc, const char* what) {
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  MPI_Error_string(rc, text, &length);
  return fail(LOOM_HALO_ERR_MPI, std::string(what) + ": " + text);
}

// Every rank passes `values`; true when they are equal on all ranks.
bool same_on_all_ranks(MPI_Comm comm, const std::vector<int64_t>& values, int* rc) {
  std::vector<int64_t> both(values.size() * 2);
  for (size_t i = 0; i < values.size(); ++i) {
    both[i] = values[i];
    both[values.size() + i] = -values[i];
  }
  *rc = MPI_Allreduce(MPI_IN_PLACE, both.data(), static_cast<int>(both.size()), MPI_INT64_T,
                      MPI_MIN, comm);
  if (*rc != MPI_SUCCESS) return false;
  for (size_t i = 0; i < values.size(); ++i)
    if (both[i] != -both[values.size() + i]) return false;
  return true;
}

// Orders the ranks of `comm` by node (nodes by their lowest rank), so that slot
// node * ranks_per_node + rank_in_node is the partition's numbering. Nodes of unequal size
// make one node of all ranks (a flat partition).
int node_layout(MPI_Comm comm, int* nodes, int* ranks_per_node, std::vector<int>* rank_of_slot,
                int* my_leader, bool* real_nodes) {
  int size = 1, rank = 0;
  MPI_Comm_size(comm, &size);
  MPI_Comm_rank(comm, &rank);
  int leader = rank;
  for (int r = 0; r < size; ++r)
    if (loom::mpi::locality(comm, r) == loom::model::Locality::SameNode) {
      leader = r;
      break;
    }
  *my_leader = leader;
  std::vector<int> leaders(static_cast<size_t>(size));
  const int rc = MPI_Allgather(&leader, 1, MPI_INT, leaders.data(), 1, MPI_INT, comm);
  if (rc != MPI_SUCCESS) return rc;
  std::map<int, std::vector<int>> members;
  for (int r = 0; r < size; ++r) members[leaders[static_cast<size_t>(r)]].push_back(r);
  bool even = true;
  for (const auto& [node, ranks] : members)
    even = even && ranks.size() == members.begin()->second.size();
  rank_of_slot->clear();
  *real_nodes = even;
  if (!even) {
    *nodes = 1;
    *ranks_per_node = size;
    for (int r = 0; r < size; ++r) rank_of_slot->push_back(r);
    return MPI_SUCCESS;
  }
  *nodes = static_cast<int>(members.size());
  *ranks_per_node = size / *nodes;
  for (const auto& [node, ranks] : members)
    rank_of_slot->insert(rank_of_slot->end(), ranks.begin(), ranks.end());
  return MPI_SUCCESS;
}

uint32_t stencil_mask(int stencil, uint32_t explicit_mask) {
  if (stencil == LOOM_HALO_BOX) return ((1u << kDirections) - 1) & ~(1u << kCentre);
  if (stencil == LOOM_HALO_STAR) {
    uint32_t m = 0;
    for (int d = 0; d < 3; ++d)
      for (int s : {-1, 1}) {
        std::array<int, 3> o{0, 0, 0};
        o[static_cast<size_t>(d)] = s;
        m |= 1u << LOOM_HALO_DIRECTION(o[0], o[1], o[2]);
      }
    return m;
  }
  return explicit_mask & ~(1u << kCentre);
}

// Bytes of a field of `element`-byte cells over a subdomain of `size` cells, ghosts included,
// rounded up to 64.
size_t field_bytes(const loom_halo_domain_s* d, const std::array<int64_t, 3>& size,
                   size_t element) {
  size_t cells = 1;
  for (size_t i = 0; i < 3; ++i)
    cells *= static_cast<size_t>(size[i] + d->radius.minus[i] + d->radius.plus[i]);
  return (cells * element + 63) / 64 * 64;
}

size_t flags_bytes(const loom_halo_domain_s* d) {
  int node_size = 1;
  MPI_Comm_size(d->node_comm, &node_size);
  return (sizeof(int64_t) * static_cast<size_t>(1 + node_size) + 63) / 64 * 64;
}

// Where field `f` starts in the segment of a rank whose subdomain has `size` cells.
size_t field_offset(const loom_halo_domain_s* d, const std::array<int64_t, 3>& size, int f) {
  size_t offset = flags_bytes(d);
  for (int g = 0; g < f; ++g)
    offset += field_bytes(d, size, d->fields[static_cast<size_t>(g)].element);
  return offset;
}

int open_window(loom_halo_domain d, size_t bytes);
int open_staging(loom_halo_domain d, const std::vector<std::vector<Segment>>& receives);

int build_plan(loom_halo_domain d) {
  using loom::halo::recv_box;
  using loom::halo::send_box;
  std::map<int, PeerPlan> plans;
  const int nfields = static_cast<int>(d->fields.size());
  std::vector<loom::pack::BoxCopy> self_copies;
  std::vector<std::vector<loom::pack::BoxCopy>> shared_copies;  // by d->sources
  std::vector<std::vector<Segment>> staged_receives;            // by d->sources (staged)
  // Sends, ordered by the sender's direction; the receiver orders its segments from a peer by
  // the same (the sender's) direction, so both sides agree on the merged message's layout.
  for (int s = 0; s < kDirections; ++s) {
    if (s == kCentre || !(d->mask & (1u << loom::halo::opposite(s)))) continue;
    const int slot = d->partition.neighbour(d->slot, loom::halo::offset(s), d->periodic);
    const bool self = slot == d->slot && (d->methods & LOOM_HALO_METHOD_SELF);
    if (slot == loom::place::kNoNeighbour || self) continue;
    const Box box = send_box(s, d->size, d->radius);
    if (box.empty()) continue;
    const int peer = d->rank_of_slot[static_cast<size_t>(slot)];
    if (d->shared && d->node_rank_of[static_cast<size_t>(peer)] >= 0) {
      const int q = d->node_rank_of[static_cast<size_t>(peer)];
      if (std::find(d->readers.begin(), d->readers.end(), q) == d->readers.end())
        d->readers.push_back(q);
      if (d->staged) {
        auto reader = std::find_if(d->staged_readers.begin(), d->staged_readers.end(),
                                   [q](const StagedReader& x) { return x.node_rank == q; });
        if (reader == d->staged_readers.end()) {
          d->staged_readers.push_back({q, {}, nullptr, nullptr});
          reader = d->staged_readers.end() - 1;
        }
        for (int f = 0; f < nfields; ++f) reader->segments.push_back({f, box});
      }
      continue;
    }
    PeerPlan& plan = plans[peer];
    for (int f = 0; f < nfields; ++f) {
      plan.send.push_back({f, box});
      plan.send_bytes +=
          static_cast<size_t>(box.cells()) * d->fields[static_cast<size_t>(f)].element;
      plan.send_rows += box.n[1] * box.n[2];
    }
  }
  for (int s = 0; s < kDirections; ++s) {
    const int r = loom::halo::opposite(s);  // our ghost region, filled by the peer's direction s
    if (s == kCentre || !(d->mask & (1u << r))) continue;
    const int slot = d->partition.neighbour(d->slot, loom::halo::offset(r), d->periodic);
    if (slot == loom::place::kNoNeighbour) continue;
    const Box to = recv_box(r, d->size, d->radius);
    if (to.empty()) continue;
    if (slot == d->slot && (d->methods & LOOM_HALO_METHOD_SELF)) {
      const Box from = send_box(s, d->size, d->radius);
      for (const Field& f : d->fields)
        self_copies.push_back(box_copy(f.base, f.stride, from, f, to));
      continue;
    }
    const int peer = d->rank_of_slot[static_cast<size_t>(slot)];
    if (d->shared && d->node_rank_of[static_cast<size_t>(peer)] >= 0) {
      const int q = d->node_rank_of[static_cast<size_t>(peer)];
      auto source = std::find_if(d->sources.begin(), d->sources.end(),
                                 [q](const SharedSource& x) { return x.node_rank == q; });
      if (source == d->sources.end()) {
        d->sources.push_back({q, {}, nullptr, nullptr});
        shared_copies.emplace_back();
        staged_receives.emplace_back();
        source = d->sources.end() - 1;
      }
      if (d->staged) {  // in the sender's order, as an MPI message from it would be
        for (int f = 0; f < nfields; ++f)
          staged_receives[static_cast<size_t>(source - d->sources.begin())].push_back({f, to});
        continue;
      }
      std::vector<loom::pack::BoxCopy>& copies =
          shared_copies[static_cast<size_t>(source - d->sources.begin())];
      const auto& their = d->partition.subdomain(slot).size;
      const std::array<int64_t, 3> their_size{their[0], their[1], their[2]};
      const Box from = send_box(s, their_size, d->radius);
      for (int f = 0; f < nfields; ++f) {
        const Field& mine = d->fields[static_cast<size_t>(f)];
        char* allocation = d->segments[static_cast<size_t>(q)] + field_offset(d, their_size, f);
        const int64_t e = static_cast<int64_t>(mine.element);
        const std::array<int64_t, 3> stride{
            e, e * (their_size[0] + d->radius.minus[0] + d->radius.plus[0]),
            e * (their_size[0] + d->radius.minus[0] + d->radius.plus[0]) *
                (their_size[1] + d->radius.minus[1] + d->radius.plus[1])};
        const char* base = allocation + d->radius.minus[0] * stride[0] +
                           d->radius.minus[1] * stride[1] + d->radius.minus[2] * stride[2];
        copies.push_back(box_copy(base, stride, from, mine, to));
      }
      continue;
    }
    PeerPlan& plan = plans[peer];
    for (int f = 0; f < nfields; ++f) {
      plan.recv.push_back({f, to});
      plan.recv_bytes +=
          static_cast<size_t>(to.cells()) * d->fields[static_cast<size_t>(f)].element;
      plan.recv_rows += to.n[1] * to.n[2];
    }
  }
  d->self_passes = loom::pack::row_passes(self_copies);
  for (size_t i = 0; i < d->sources.size(); ++i)
    d->sources[i].passes = loom::pack::row_passes(shared_copies[i]);
  if (d->staged) {
    const int rc = open_staging(d, staged_receives);
    if (rc != LOOM_HALO_SUCCESS) return rc;
  }
  for (auto& [peer, plan] : plans) {
    plan.peer = peer;
    plan.other_node = loom::mpi::locality(d->comm, peer) == loom::model::Locality::OtherNode;
    d->peers.push_back(std::move(plan));
  }
  // Issue order as the seed found best: slow transports first, larger messages first.
  std::stable_sort(d->peers.begin(), d->peers.end(), [](const PeerPlan& a, const PeerPlan& b) {
    if (a.other_node != b.other_node) return a.other_node;
    return a.send_bytes > b.send_bytes;
  });
  for (PeerPlan& p : d->peers) {
    if (p.send_bytes > static_cast<size_t>(INT32_MAX) ||
        p.recv_bytes > static_cast<size_t>(INT32_MAX))
      return fail(LOOM_HALO_ERR_ARG, "a merged halo message exceeds INT_MAX bytes");
    // Not to oneself (LOOM_HALO_METHODS without self): MPICH moved such a message 3x slower
    // as a datatype than packed (docs/halo.md).
    const auto by_host = [&](size_t bytes) {
      return bytes > 0 && static_cast<int64_t>(bytes) >= host_types_above() && p.peer != d->rank;
    };
    int rc = MPI_SUCCESS;
    if (by_host(p.send_bytes))
      rc = host_type_of(p.send, d->fields, &p.send_type);
    else if (p.send_bytes > 0)
      p.send_plan = plan_of(p.send, d->fields), p.send_buffer.reset(allocate(p.send_bytes));
    if (rc == MPI_SUCCESS && by_host(p.recv_bytes))
      rc = host_type_of(p.recv, d->fields, &p.recv_type);
    else if (p.recv_bytes > 0)
      p.recv_plan = plan_of(p.recv, d->fields), p.recv_buffer.reset(allocate(p.recv_bytes));
    if (rc != MPI_SUCCESS) return mpi_fail(rc, "halo datatype");
    if ((p.send_plan && !p.send_buffer) || (p.recv_plan && !p.recv_buffer))
      return fail(LOOM_HALO_ERR_NOMEM, "cannot allocate a message buffer");
    if (p.recv_type != MPI_DATATYPE_NULL)
      rc = PMPI_Recv_init(MPI_BOTTOM, 1, p.recv_type, p.peer, kTag, d->comm, &p.recv_request);
    else if (p.recv_bytes > 0)
      rc = PMPI_Recv_init(p.recv_buffer.get(), static_cast<int>(p.recv_bytes), MPI_BYTE, p.peer,
                          kTag, d->comm, &p.recv_request);
    if (rc == MPI_SUCCESS && p.send_type != MPI_DATATYPE_NULL)
      rc = PMPI_Send_init(MPI_BOTTOM, 1, p.send_type, p.peer, kTag, d->comm, &p.send_request);
    else if (rc == MPI_SUCCESS && p.send_bytes > 0)
      rc = PMPI_Send_init(p.send_buffer.get(), static_cast<int>(p.send_bytes), MPI_BYTE, p.peer,
                          kTag, d->comm, &p.send_request);
    if (rc != MPI_SUCCESS) return mpi_fail(rc, "persistent request");
  }
  return LOOM_HALO_SUCCESS;
}

void release(loom_halo_domain d) {
  for (PeerPlan& p : d->peers) {
    if (p.send_request != MPI_REQUEST_NULL) PMPI_Request_free(&p.send_request);
    if (p.recv_request != MPI_REQUEST_NULL) PMPI_Request_free(&p.recv_request);
    if (p.send_type != MPI_DATATYPE_NULL) PMPI_Type_free(&p.send_type);
    if (p.recv_type != MPI_DATATYPE_NULL) PMPI_Type_free(&p.recv_type);
  }
  for (Field& f : d->fields) loom::mpi::sim::release(f.allocation);
  loom::mpi::sim::release(d->sim_segment);
  if (d->window != MPI_WIN_NULL) MPI_Win_free(&d->window);
  if (d->node_comm != MPI_COMM_NULL) MPI_Comm_free(&d->node_comm);
  if (d->comm != MPI_COMM_NULL) {
    loom::mpi::forget_communicator(d->comm);
    MPI_Comm_free(&d->comm);
  }
  delete d;
}

int add_field(loom_halo_domain d, size_t element, int* field) {
  if (!d || !field) return fail(LOOM_HALO_ERR_ARG, "null domain or field pointer");
  if (d->realized) return fail(LOOM_HALO_ERR_STATE, "a field added after loom_halo_realize");
  if (element == 0) return fail(LOOM_HALO_ERR_ARG, "element size 0");
  Field f;
  f.element = element;
  d->fields.push_back(f);
  *field = static_cast<int>(d->fields.size()) - 1;
  return LOOM_HALO_SUCCESS;
}

// The ranks of this rank's node (as mpi/locality.hpp sees nodes) that really share memory
// with it: node_comm, node_rank_of. A node whose ranks cannot share memory (virtual nodes
// spanning machines) keeps the MPI transport; every rank of a node decides alike.
int open_node(loom_halo_domain d) {
  int rc = MPI_Comm_split(d->comm, d->node_leader, d->rank, &d->node_comm);
  if (rc != MPI_SUCCESS) return mpi_fail(rc, "MPI_Comm_split (node)");
  int node_size = 1;
  MPI_Comm_size(d->node_comm, &node_size);
  MPI_Comm_rank(d->node_comm, &d->node_rank);
  MPI_Comm physical = MPI_COMM_NULL;
  rc = MPI_Comm_split_type(d->node_comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &physical);
  if (rc != MPI_SUCCESS) return mpi_fail(rc, "MPI_Comm_split_type");
  int physical_size = 0;
  MPI_Comm_size(physical, &physical_size);
  MPI_Comm_free(&physical);
  int all_share = physical_size == node_size;
  MPI_Allreduce(MPI_IN_PLACE, &all_share, 1, MPI_INT, MPI_MIN, d->node_comm);
  if (!all_share || node_size == 1) {
    MPI_Comm_free(&d->node_comm);
    return LOOM_HALO_SUCCESS;
  }
  int size = 1;
  MPI_Comm_size(d->comm, &size);
  d->node_rank_of.assign(static_cast<size_t>(size), -1);
  std::vector<int> mine(static_cast<size_t>(node_size)), theirs(static_cast<size_t>(node_size));
  for (int q = 0; q < node_size; ++q) mine[static_cast<size_t>(q)] = q;
  MPI_Group node_group, group;
  MPI_Comm_group(d->node_comm, &node_group);
  MPI_Comm_group(d->comm, &group);
  MPI_Group_translate_ranks(node_group, node_size, mine.data(), group, theirs.data());
  MPI_Group_free(&node_group);
  MPI_Group_free(&group);
  for (int q = 0; q < node_size; ++q)
    d->node_rank_of[static_cast<size_t>(theirs[static_cast<size_t>(q)])] = q;
  d->shared = true;
  // The machine's cores, not this rank's affinity: launchers bind each rank to one core.
  const long cores = sysconf(_SC_NPROCESSORS_ONLN);
  d->spin_micros = node_size <= cores ? kSpinMicros : 0;
  return LOOM_HALO_SUCCESS;
}

// Allocates this rank's segment of the node window, `bytes` zeroed (flags, then the fields, or
// with attached fields the readers' pack areas), and maps every node rank's.
int open_window(loom_halo_domain d, size_t bytes) {
  int node_size = 1;
  MPI_Comm_size(d->node_comm, &node_size);
  char* mine = nullptr;
#ifdef LOOM_SMPI
  // Simulated ranks share one address space: a node's segments are ordinary memory (folded
  // past the flags in projections), whose starts every rank gathers. SMPI 3.32's
  // MPI_Win_shared_query answers one block's start for every rank.
  mine = d->sim_segment = allocate(bytes, flags_bytes(d));
  if (!mine) return fail(LOOM_HALO_ERR_NOMEM, "cannot allocate the node segment");
  d->segments.assign(static_cast<size_t>(node_size), nullptr);
  d->flags.assign(static_cast<size_t>(node_size), nullptr);
  std::vector<uint64_t> starts(static_cast<size_t>(node_size));
  const uint64_t my_start = reinterpret_cast<uintptr_t>(mine);
  int rc = MPI_Allgather(&my_start, 1, MPI_UINT64_T, starts.data(), 1, MPI_UINT64_T, d->node_comm);
  if (rc != MPI_SUCCESS) return mpi_fail(rc, "MPI_Allgather (node segments)");
  for (int q = 0; q < node_size; ++q)
    d->segments[static_cast<size_t>(q)] =
        reinterpret_cast<char*>(static_cast<uintptr_t>(starts[static_cast<size_t>(q)]));
#else
  int rc = MPI_Win_allocate_shared(static_cast<MPI_Aint>(bytes), 1, MPI_INFO_NULL, d->node_comm,
                                   &mine, &d->window);
  if (rc != MPI_SUCCESS) return mpi_fail(rc, "MPI_Win_allocate_shared");
  std::memset(mine, 0, bytes);
  d->segments.assign(static_cast<size_t>(node_size), nullptr);
  d->flags.assign(static_cast<size_t>(node_size), nullptr);
  for (int q = 0; q < node_size; ++q) {
    MPI_Aint size = 0;
    int unit = 0;
    MPI_Win_shared_query(d->window, q, &size, &unit, &d->segments[static_cast<size_t>(q)]);
  }
#endif
  for (int q = 0; q < node_size; ++q)
    d->flags[static_cast<size_t>(q)] =
        reinterpret_cast<int64_t*>(d->segments[static_cast<size_t>(q)]);
  // Every rank's flags and fields are zeroed before any rank reads them.
  rc = MPI_Barrier(d->node_comm);
  return rc == MPI_SUCCESS ? LOOM_HALO_SUCCESS : mpi_fail(rc, "MPI_Barrier (node)");
}

// The staged same-node transport (attached fields): this rank's segment is its flags, then one
// pack area per reader in node-rank order; every rank learns where its area lies in each
// source's segment; then the plans that pack into and unpack from those areas.
int open_staging(loom_halo_domain d, const std::vector<std::vector<Segment>>& receives) {
  int node_size = 1;
  MPI_Comm_size(d->node_comm, &node_size);
  std::sort(d->staged_readers.begin(), d->staged_readers.end(),
            [](const StagedReader& a, const StagedReader& b) { return a.node_rank < b.node_rank; });
  // offsets[q]: where reader q's area starts in this rank's segment (0: q reads nothing).
  std::vector<int64_t> offsets(static_cast<size_t>(node_size), 0);
  size_t bytes = flags_bytes(d);
  for (StagedReader& r : d->staged_readers) {
    offsets[static_cast<size_t>(r.node_rank)] = static_cast<int64_t>(bytes);
    size_t area = 0;
    for (const Segment& g : r.segments)
      area += static_cast<size_t>(g.box.cells()) * d->fields[static_cast<size_t>(g.field)].element;
    bytes += (area + 63) / 64 * 64;
  }
  int rc = open_window(d, bytes);
  if (rc != LOOM_HALO_SUCCESS) return rc;
  std::vector<int64_t> table(static_cast<size_t>(node_size) * static_cast<size_t>(node_size));
  const int mpi_rc = MPI_Allgather(offsets.data(), node_size, MPI_INT64_T, table.data(), node_size,
                                   MPI_INT64_T, d->node_comm);
  if (mpi_rc != MPI_SUCCESS) return mpi_fail(mpi_rc, "MPI_Allgather (node pack areas)");
  char* mine = d->segments[static_cast<size_t>(d->node_rank)];
  for (StagedReader& r : d->staged_readers) {
    r.area = mine + offsets[static_cast<size_t>(r.node_rank)];
    r.pack = plan_of(r.segments, d->fields);
  }
  for (size_t i = 0; i < d->sources.size(); ++i) {
    SharedSource& source = d->sources[i];
    const size_t q = static_cast<size_t>(source.node_rank);
    source.area = d->segments[q] +
                  table[q * static_cast<size_t>(node_size) + static_cast<size_t>(d->node_rank)];
    source.unpack = plan_of(receives[i], d->fields);
  }
  return LOOM_HALO_SUCCESS;
}

// This machine's topology, loaded once per process (hwloc reads it from the system: milliseconds
// on a large node); null when hwloc cannot, and then every node keeps the rank order.
const loom::place::Topology* machine_topology() {
#ifdef LOOM_SMPI
  // Simulated nodes are not this machine: their cores are alike (sim/make_platform.py).
  return nullptr;
#endif
  static const std::unique_ptr<loom::place::Topology> topology =
      []() -> std::unique_ptr<loom::place::Topology> {
    try {
      return std::make_unique<loom::place::Topology>();
    } catch (const std::exception&) {
      return nullptr;
    }
  }();
  return topology.get();
}

// The node's subdomains onto its ranks (docs/halo.md, Placement): every rank's CPUs gathered
// over the node, distances from hwloc, place::place against the node's halo bytes, computed by
// the node's first rank and taken only where it beats the rank order (an unbound job, whose
// ranks may run anywhere, keeps it). Then every rank of `comm` learns every slot's rank.
// Collective over d->comm; changes d->slot and d->rank_of_slot.
int place_on_node(loom_halo_domain_s* d, int per_node) {
  const int node_index = d->slot / per_node, local = d->slot % per_node;
  MPI_Comm node = MPI_COMM_NULL;
  int rc = MPI_Comm_split(d->comm, d->node_leader, d->rank, &node);
  if (rc != MPI_SUCCESS) return rc;
  const loom::place::Topology* topology = machine_topology();
  const std::string cpus = topology ? topology->bound_cpus() : std::string();
  const int length = static_cast<int>(cpus.size());
  std::vector<int> lengths(static_cast<size_t>(per_node)), starts(lengths.size());
  rc = MPI_Gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, 0, node);
  for (size_t i = 1; i < starts.size(); ++i) starts[i] = starts[i - 1] + lengths[i - 1];
  std::string all(local == 0 ? static_cast<size_t>(starts.back() + lengths.back()) : 0, '\0');
  if (rc == MPI_SUCCESS)
    rc = MPI_Gatherv(cpus.data(), length, MPI_CHAR, all.data(), lengths.data(), starts.data(),
                     MPI_CHAR, 0, node);
  std::vector<int> rank_of(static_cast<size_t>(per_node));
  for (int i = 0; i < per_node; ++i) rank_of[static_cast<size_t>(i)] = i;
  if (rc == MPI_SUCCESS && local == 0 && topology) {
    std::vector<std::string> cpus_of;
    for (size_t i = 0; i < lengths.size(); ++i)
      cpus_of.push_back(
          all.substr(static_cast<size_t>(starts[i]), static_cast<size_t>(lengths[i])));
    const loom::place::SquareMatrix distance = topology->distances(cpus_of);
    // Ranks bound nowhere, or all equally far apart: every placement costs the same, so the
    // solver (seconds for a hundred ranks) is not asked.
    bool uniform = true;
    for (int a = 0; a < per_node; ++a)
      for (int b = 0; b < per_node; ++b)
        uniform = uniform && (a == b || distance(a, b) == distance(0, per_node > 1));
    if (!uniform) {
      const loom::place::SquareMatrix w =
          loom::place::halo_bytes(d->partition, d->radius, d->periodic, 1, node_index);
      const double in_order = loom::place::placement_cost(w, distance, rank_of);
      double cost = in_order;
      try {
        const loom::place::Placement best = loom::place::place(w, distance);
        if (best.cost < in_order * (1 - 1e-9)) rank_of = best.rank_of, cost = best.cost;
      } catch (const std::exception&) {  // a malformed matrix: keep the rank order
      }
      if (loom::runtime::config().debug)
        std::fprintf(stderr,
                     "[loom] halo node of rank %d: placement cost %.0f, rank order %.0f%s\n",
                     d->rank, cost, in_order, cost < in_order ? "" : " (kept)");
    }
  }
  if (rc == MPI_SUCCESS) rc = MPI_Bcast(rank_of.data(), per_node, MPI_INT, 0, node);
  MPI_Comm_free(&node);
  if (rc != MPI_SUCCESS) return rc;
  for (int i = 0; i < per_node; ++i)
    if (rank_of[static_cast<size_t>(i)] == local) d->slot = node_index * per_node + i;
  std::vector<int> slot_of_rank(d->rank_of_slot.size());
  rc = MPI_Allgather(&d->slot, 1, MPI_INT, slot_of_rank.data(), 1, MPI_INT, d->comm);
  if (rc != MPI_SUCCESS) return rc;
  for (size_t r = 0; r < slot_of_rank.size(); ++r)
    d->rank_of_slot[static_cast<size_t>(slot_of_rank[r])] = static_cast<int>(r);
  return MPI_SUCCESS;
}

}  // namespace

extern "C" {

int loom_halo_create(MPI_Comm comm, const int64_t extent[3], const int radius[6],
                     const int periodic[3], int stencil, uint32_t mask, loom_halo_domain* domain) {
  if (!domain || !extent || !radius || !periodic || comm == MPI_COMM_NULL)
    return fail(LOOM_HALO_ERR_ARG, "null argument to loom_halo_create");
  *domain = nullptr;
  int inter = 0;
  if (MPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS || inter)
    return fail(LOOM_HALO_ERR_ARG, "loom_halo_create needs an intracommunicator");
  // The same arguments on every rank, checked before anything can make ranks part ways.
  std::vector<int64_t> args{extent[0], extent[1], extent[2], stencil,
                            stencil == LOOM_HALO_EXPLICIT ? static_cast<int64_t>(mask) : 0};
  for (int i = 0; i < 6; ++i) args.push_back(radius[i]);
  for (int i = 0; i < 3; ++i) args.push_back(periodic[i] != 0);
  int rc = MPI_SUCCESS;
  if (!same_on_all_ranks(comm, args, &rc))
    return rc != MPI_SUCCESS
               ? mpi_fail(rc, "loom_halo_create")
               : fail(LOOM_HALO_ERR_MISMATCH, "loom_halo_create: ranks passed different arguments");
  if (stencil != LOOM_HALO_BOX && stencil != LOOM_HALO_STAR && stencil != LOOM_HALO_EXPLICIT)
    return fail(LOOM_HALO_ERR_ARG, "unknown stencil " + std::to_string(stencil));
  if (stencil == LOOM_HALO_EXPLICIT && (mask >> kDirections) != 0)
    return fail(LOOM_HALO_ERR_ARG, "explicit mask has bits above direction 26");
  for (int i = 0; i < 3; ++i)
    if (extent[i] < 1)
      return fail(LOOM_HALO_ERR_EXTENT, "global extent " + std::to_string(extent[i]) +
                                            " along dimension " + std::to_string(i) +
                                            " (must be at least 1)");
  for (int i = 0; i < 6; ++i)
    if (radius[i] < 0)
      return fail(LOOM_HALO_ERR_RADIUS, "negative radius " + std::to_string(radius[i]));

  // Collective over `comm` alone: ranks outside it need not call the library.
  rc = loom::mpi::learn_locality(comm);
  if (rc != MPI_SUCCESS) return mpi_fail(rc, "loom_halo_create (nodes)");
  auto* d = new (std::nothrow) loom_halo_domain_s;
  if (!d) return fail(LOOM_HALO_ERR_NOMEM, "out of memory");
  rc = MPI_Comm_dup(comm, &d->comm);
  if (rc != MPI_SUCCESS) {
    delete d;
    return mpi_fail(rc, "MPI_Comm_dup");
  }
  MPI_Comm_set_errhandler(d->comm, MPI_ERRORS_RETURN);
  MPI_Comm_rank(d->comm, &d->rank);
  int nodes = 1, per_node = 1;
  bool real_nodes = false;
  rc = node_layout(d->comm, &nodes, &per_node, &d->rank_of_slot, &d->node_leader, &real_nodes);
  if (rc != MPI_SUCCESS) {
    release(d);
    return mpi_fail(rc, "node layout");
  }
  for (size_t s = 0; s < d->rank_of_slot.size(); ++s)
    if (d->rank_of_slot[s] == d->rank) d->slot = static_cast<int>(s);
  for (int i = 0; i < 3; ++i) {
    d->radius.minus[static_cast<size_t>(i)] = radius[2 * i];
    d->radius.plus[static_cast<size_t>(i)] = radius[2 * i + 1];
    d->periodic[static_cast<size_t>(i)] = periodic[i] != 0;
  }
  d->mask = stencil_mask(stencil, mask);
  try {
    d->partition =
        loom::place::partition({extent[0], extent[1], extent[2]}, d->radius, nodes, per_node);
  } catch (const std::exception& e) {
    release(d);
    return fail(LOOM_HALO_ERR_EXTENT, std::string("partition: ") + e.what());
  }
  // Every rank computes the same partition, so these errors are the same on every rank.
  const auto grid = d->partition.grid();
  int code = LOOM_HALO_SUCCESS;
  std::string why;
  for (const auto& sub : d->partition.subdomains())
    for (size_t i = 0; i < 3 && code == LOOM_HALO_SUCCESS; ++i) {
      const bool has_neighbour = grid[i] > 1 || d->periodic[i];
      const int widest = std::max(d->radius.minus[i], d->radius.plus[i]);
      if (sub.size[i] < 1) {
        code = LOOM_HALO_ERR_EXTENT;
        why = "more ranks than cells: a subdomain would be empty";
      } else if (has_neighbour && widest > sub.size[i]) {
        code = LOOM_HALO_ERR_RADIUS;
        why = "radius " + std::to_string(widest) + " larger than a subdomain of " +
              std::to_string(sub.size[i]) + " cells along dimension " + std::to_string(i);
      }
    }
  if (code != LOOM_HALO_SUCCESS) {
    release(d);
    return fail(code, why);
  }
  if (real_nodes && per_node > 1 && placement_wanted()) {
    rc = place_on_node(d, per_node);
    if (rc != MPI_SUCCESS) {
      release(d);
      return mpi_fail(rc, "placement");
    }
  }
  const auto& mine = d->partition.subdomain(d->slot);
  for (size_t i = 0; i < 3; ++i) d->size[i] = mine.size[i];
  *domain = d;
  return LOOM_HALO_SUCCESS;
}

int loom_halo_add_field(loom_halo_domain domain, size_t element_size, int* field) {
  return add_field(domain, element_size, field);
}

int loom_halo_add_field_type(loom_halo_domain domain, MPI_Datatype named_type, int* field) {
  if (named_type == MPI_DATATYPE_NULL) return fail(LOOM_HALO_ERR_ARG, "MPI_DATATYPE_NULL");
  if (loom::mpi::type_combiner(named_type) != MPI_COMBINER_NAMED)
    return fail(LOOM_HALO_ERR_ARG, "field type is not a named MPI type");
  int size = 0;
  MPI_Type_size(named_type, &size);
  if (size <= 0) return fail(LOOM_HALO_ERR_ARG, "field type has no size");
  return add_field(domain, static_cast<size_t>(size), field);
}

int loom_halo_attach_field(loom_halo_domain d, size_t element_size, void* base,
                           const int64_t strides[3], int* field) {
  if (!d || !base || !strides) return fail(LOOM_HALO_ERR_ARG, "null domain, base or strides");
  // Row-major without overlap, ghosts included: each stride spans the one below it.
  int64_t span = static_cast<int64_t>(element_size);
  for (size_t i = 0; i < 3; ++i) {
    if (strides[i] < span)
      return fail(LOOM_HALO_ERR_ARG, "attached field: stride " + std::to_string(i) + " is " +
                                         std::to_string(strides[i]) + ", less than " +
                                         std::to_string(span) + " bytes");
    span = strides[i] * (d->size[i] + d->radius.minus[i] + d->radius.plus[i]);
  }
  const int rc = add_field(d, element_size, field);
  if (rc != LOOM_HALO_SUCCESS) return rc;
  Field& f = d->fields.back();
  f.attached = true;
  f.base = static_cast<char*>(base);
  for (size_t i = 0; i < 3; ++i) f.stride[i] = strides[i];
  return LOOM_HALO_SUCCESS;
}

int loom_halo_set_methods(loom_halo_domain d, unsigned methods) {
  if (!d) return fail(LOOM_HALO_ERR_ARG, "null domain");
  if (d->realized) return fail(LOOM_HALO_ERR_STATE, "methods set after loom_halo_realize");
  if ((methods & ~static_cast<unsigned>(LOOM_HALO_METHODS_ALL)) ||
      !(methods & LOOM_HALO_METHOD_MPI))
    return fail(LOOM_HALO_ERR_ARG, "methods must be loom_halo_method bits including MPI");
  d->methods = methods;
  return LOOM_HALO_SUCCESS;
}

int loom_halo_realize(loom_halo_domain d) {
  if (!d) return fail(LOOM_HALO_ERR_ARG, "null domain");
  // A bad LOOM_HALO_METHODS leaves methods 0, compared like the rest so that ranks agree.
  if (!d->methods && !d->realized) d->methods = methods_from_env();
  // Neighbours cannot read the user's memory: with an attached field the same-node transport
  // stages the faces through node-shared pack areas instead (open_staging).
  bool any_attached = false;
  for (const Field& f : d->fields) any_attached = any_attached || f.attached;
  const bool shared = (d->methods & LOOM_HALO_METHOD_SHARED) != 0;
  std::vector<int64_t> shape{static_cast<int64_t>(d->realized),
                             static_cast<int64_t>(d->fields.size()), d->methods};
  for (const Field& f : d->fields)
    shape.push_back(static_cast<int64_t>(f.element) * 2 + (f.attached ? 1 : 0));
  int rc = MPI_SUCCESS;
  // Same field count first (so the vectors below have one length on every rank).
  std::vector<int64_t> head(shape.begin(), shape.begin() + 3);
  if (!same_on_all_ranks(d->comm, head, &rc) ||
      (rc == MPI_SUCCESS && !same_on_all_ranks(d->comm, shape, &rc)))
    return rc != MPI_SUCCESS ? mpi_fail(rc, "loom_halo_realize")
                             : fail(LOOM_HALO_ERR_MISMATCH,
                                    "loom_halo_realize: ranks have different fields or states");
  if (d->realized) return fail(LOOM_HALO_ERR_STATE, "loom_halo_realize called twice");
  if (!d->methods)
    return fail(LOOM_HALO_ERR_ARG, std::string("LOOM_HALO_METHODS=") +
                                       loom::base::read(kHaloMethods) +
                                       ": not a list of self, shared, mpi");
  if (shared) {
    rc = open_node(d);
    d->staged = d->shared && any_attached;
    if (rc == LOOM_HALO_SUCCESS && d->shared && !d->staged)
      rc = open_window(d, field_offset(d, d->size, static_cast<int>(d->fields.size())));
    if (rc != LOOM_HALO_SUCCESS) return rc;
  }
  std::array<int64_t, 3> total{};
  for (size_t i = 0; i < 3; ++i) total[i] = d->size[i] + d->radius.minus[i] + d->radius.plus[i];
  for (Field& f : d->fields) {
    if (f.attached) continue;
    const size_t e = f.element;
    f.stride = {static_cast<int64_t>(e), static_cast<int64_t>(e) * total[0],
                static_cast<int64_t>(e) * total[0] * total[1]};
    const size_t bytes = field_bytes(d, d->size, e);
    char* memory = nullptr;
    if (d->shared && !d->staged) {
      memory = d->segments[static_cast<size_t>(d->node_rank)] +
               field_offset(d, d->size, static_cast<int>(&f - d->fields.data()));
    } else {
      f.allocation = allocate(bytes);
      memory = f.allocation;
      if (!memory) return fail(LOOM_HALO_ERR_NOMEM, "cannot allocate a field");
    }
    f.base = memory + d->radius.minus[0] * f.stride[0] + d->radius.minus[1] * f.stride[1] +
             d->radius.minus[2] * f.stride[2];
  }
  d->realized = true;
  rc = build_plan(d);
  if (rc != LOOM_HALO_SUCCESS) return rc;
  for (PeerPlan& p : d->peers) {
    if (p.recv_request != MPI_REQUEST_NULL) d->recv_requests.push_back(p.recv_request);
    if (p.send_request != MPI_REQUEST_NULL) d->send_requests.push_back(p.send_request);
  }
  return LOOM_HALO_SUCCESS;
}

int loom_halo_origin(loom_halo_domain d, int64_t origin[3]) {
  if (!d || !origin) return fail(LOOM_HALO_ERR_ARG, "null argument");
  const auto& sub = d->partition.subdomain(d->slot);
  for (size_t i = 0; i < 3; ++i) origin[i] = sub.origin[i];
  return LOOM_HALO_SUCCESS;
}

int loom_halo_extent(loom_halo_domain d, int64_t extent[3]) {
  if (!d || !extent) return fail(LOOM_HALO_ERR_ARG, "null argument");
  for (size_t i = 0; i < 3; ++i) extent[i] = d->size[i];
  return LOOM_HALO_SUCCESS;
}

int loom_halo_field(loom_halo_domain d, int field, void** base, int64_t strides[3]) {
  if (!d || !base || !strides) return fail(LOOM_HALO_ERR_ARG, "null argument");
  if (!d->realized) return fail(LOOM_HALO_ERR_STATE, "fields exist after loom_halo_realize");
  if (field < 0 || field >= static_cast<int>(d->fields.size()))
    return fail(LOOM_HALO_ERR_ARG, "no field " + std::to_string(field));
  const Field& f = d->fields[static_cast<size_t>(field)];
  *base = f.base;
  for (size_t i = 0; i < 3; ++i) strides[i] = f.stride[i];
  return LOOM_HALO_SUCCESS;
}

int loom_halo_peers(loom_halo_domain d, int* mpi_peers, int* shared_peers, int* self_copies) {
  if (!d || !mpi_peers || !shared_peers || !self_copies)
    return fail(LOOM_HALO_ERR_ARG, "null argument");
  if (!d->realized) return fail(LOOM_HALO_ERR_STATE, "the plan exists after loom_halo_realize");
  *mpi_peers = static_cast<int>(d->peers.size());
  *shared_peers = static_cast<int>(d->sources.size());
  *self_copies = d->self_passes.empty() ? 0 : 1;
  return LOOM_HALO_SUCCESS;
}

int loom_halo_start(loom_halo_domain d) {
  if (!d) return fail(LOOM_HALO_ERR_ARG, "null domain");
  if (!d->realized) return fail(LOOM_HALO_ERR_STATE, "exchange before loom_halo_realize");
  if (d->in_flight) return fail(LOOM_HALO_ERR_STATE, "loom_halo_start with an exchange in flight");
  ++d->step;
  // Our interior is final for this step (staged: packed for each same-node reader): same-node
  // neighbours may read it. The areas are free: every reader finished the last step's.
  for (const StagedReader& r : d->staged_readers) {
    loom::exec::pack(*r.pack, nullptr, 1, r.area, loom::exec::MemoryKind::Host);
    charge_segments(r.segments, d->fields);
  }
  if (d->shared) loom::halo::publish(d->flags[static_cast<size_t>(d->node_rank)], d->step);
  int rc = MPI_SUCCESS;
  if (!d->recv_requests.empty()) {
    rc = PMPI_Startall(static_cast<int>(d->recv_requests.size()), d->recv_requests.data());
    if (rc != MPI_SUCCESS) return mpi_fail(rc, "MPI_Startall (receives)");
  }
  for (PeerPlan& p : d->peers) {
    if (p.send_request == MPI_REQUEST_NULL) continue;
    if (p.send_plan) {
      loom::exec::pack(*p.send_plan, nullptr, 1, p.send_buffer.get(), loom::exec::MemoryKind::Host);
      loom::mpi::sim::charge_copy(p.send_rows, static_cast<int64_t>(p.send_bytes));
    } else {
      loom::mpi::sim::charge_host_pack(p.send_rows, static_cast<int64_t>(p.send_bytes));
    }
    rc = PMPI_Start(&p.send_request);
    if (rc != MPI_SUCCESS) return mpi_fail(rc, "MPI_Start (send)");
  }
  for (const loom::pack::RowPass& p : d->self_passes) {
    loom::pack::run_pass(p);
    charge_pass(p);
  }
  d->in_flight = true;
  return LOOM_HALO_SUCCESS;
}

int loom_halo_finish(loom_halo_domain d) {
  if (!d) return fail(LOOM_HALO_ERR_ARG, "null domain");
  if (!d->in_flight) return fail(LOOM_HALO_ERR_STATE, "loom_halo_finish without loom_halo_start");
  d->in_flight = false;
  // Unpack each peer's message as it arrives.
  std::vector<MPI_Request> pending;
  std::vector<PeerPlan*> owner;
  for (PeerPlan& p : d->peers)
    if (p.recv_request != MPI_REQUEST_NULL) {
      pending.push_back(p.recv_request);
      owner.push_back(&p);
    }
  for (size_t done = 0; done < pending.size(); ++done) {
    int index = MPI_UNDEFINED;
    const int rc =
        PMPI_Waitany(static_cast<int>(pending.size()), pending.data(), &index, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) return mpi_fail(rc, "MPI_Waitany (receives)");
    if (index == MPI_UNDEFINED) break;
    const PeerPlan& p = *owner[static_cast<size_t>(index)];
    if (p.recv_plan) {
      loom::exec::unpack(*p.recv_plan, p.recv_buffer.get(), 1, nullptr,
                         loom::exec::MemoryKind::Host);
      loom::mpi::sim::charge_copy(p.recv_rows, static_cast<int64_t>(p.recv_bytes));
    } else {
      loom::mpi::sim::charge_host_pack(p.recv_rows, static_cast<int64_t>(p.recv_bytes));
    }
  }
  if (!d->send_requests.empty()) {
    const int rc = PMPI_Waitall(static_cast<int>(d->send_requests.size()), d->send_requests.data(),
                                MPI_STATUSES_IGNORE);
    if (rc != MPI_SUCCESS) return mpi_fail(rc, "MPI_Waitall (sends)");
  }
  // Same-node neighbours after the MPI messages, so that no rank spins here while a peer on
  // another node waits for it to progress a send.
  if (d->shared) {
    for (const SharedSource& source : d->sources) {
      int64_t* theirs = d->flags[static_cast<size_t>(source.node_rank)];
      loom::halo::wait_published(theirs, d->step, d->spin_micros);
      if (source.unpack)
        loom::exec::unpack(*source.unpack, source.area, 1, nullptr, loom::exec::MemoryKind::Host);
      for (const loom::pack::RowPass& p : source.passes) {
        loom::pack::run_pass(p);
        charge_pass(p);
      }
      loom::halo::mark_read(theirs, d->node_rank, d->step);
    }
    // Our interior may change once every reader has copied it.
    loom::halo::wait_read(d->flags[static_cast<size_t>(d->node_rank)], d->readers, d->step,
                          d->spin_micros);
  }
  return LOOM_HALO_SUCCESS;
}

int loom_halo_exchange(loom_halo_domain d) {
  const int rc = loom_halo_start(d);
  return rc != LOOM_HALO_SUCCESS ? rc : loom_halo_finish(d);
}

int loom_halo_destroy(loom_halo_domain* domain) {
  if (!domain || !*domain) return fail(LOOM_HALO_ERR_ARG, "null domain");
  if ((*domain)->in_flight) loom_halo_finish(*domain);
  release(*domain);
  *domain = nullptr;
  return LOOM_HALO_SUCCESS;
}

const char* loom_halo_error_string(int code) {
  switch (code) {
    case LOOM_HALO_SUCCESS:
      return "LOOM_HALO_SUCCESS";
    case LOOM_HALO_ERR_ARG:
      return "LOOM_HALO_ERR_ARG";
    case LOOM_HALO_ERR_EXTENT:
      return "LOOM_HALO_ERR_EXTENT";
    case LOOM_HALO_ERR_RADIUS:
      return "LOOM_HALO_ERR_RADIUS";
    case LOOM_HALO_ERR_STATE:
      return "LOOM_HALO_ERR_STATE";
    case LOOM_HALO_ERR_MISMATCH:
      return "LOOM_HALO_ERR_MISMATCH";
    case LOOM_HALO_ERR_MPI:
      return "LOOM_HALO_ERR_MPI";
    case LOOM_HALO_ERR_NOMEM:
      return "LOOM_HALO_ERR_NOMEM";
    default:
      return "unknown loom_halo error";
  }
}

const char* loom_halo_error_message(void) {
  return last_error.c_str();
}

}  // extern "C"
