#include "halo/plan.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "base/bytes.hpp"
#include "base/env.hpp"
#include "halo/node_window.hpp"
#include "loom/halo.h"
#include "mpi/locality.hpp"
#include "runtime/runtime.hpp"
#include "types/ir.hpp"

namespace loom::halo {
namespace {

constexpr base::EnvVar kHostTypesAbove{
    "LOOM_HALO_HOST_TYPES_ABOVE", "1M",
    "a pair's MPI message of at least this many bytes goes to the host as one derived datatype "
    "instead of being packed by Loom (0: always; a large value: never)"};
constexpr int64_t kDefaultHostTypesAbove = int64_t{1} << 20;

int64_t host_types_above() {
  static const int64_t bytes = [] {
    int64_t value = kDefaultHostTypesAbove;
    const char* text = base::read(kHostTypesAbove);
    if (text && !base::parse_bytes(text, &value)) {
      base::warn_bad_value(kHostTypesAbove, text, "is not a byte count", "using 1M");
      value = kDefaultHostTypesAbove;
    }
    return value;
  }();
  return bytes;
}

constexpr int kTag = 2424;

// The first cell of `box` in `field`.
const char* first_cell(const Field& field, const Box& box) {
  return field.base + box.lo[0] * field.stride[0] + box.lo[1] * field.stride[1] +
         box.lo[2] * field.stride[2];
}

// The plan that packs `segments` in order: each a 3-D box of one field, over absolute addresses.
std::unique_ptr<pack::Plan> plan_of(const std::vector<Segment>& segments,
                                    const std::vector<Field>& fields) {
  types::Layout layout;
  for (const Segment& segment : segments) {
    const Field& field = fields[static_cast<size_t>(segment.field)];
    const Box& box = segment.box;
    const int64_t element = static_cast<int64_t>(field.element);
    // Cells along x are dense unless the field is attached with a wider stride (AoS).
    types::NodeRef row =
        field.stride[0] == element
            ? types::make_dense(box.n[0] * element)
            : types::make_repeat(box.n[0], field.stride[0], types::make_dense(element));
    types::NodeRef plane = types::make_repeat(box.n[1], field.stride[1], row);
    layout.push_back({static_cast<int64_t>(reinterpret_cast<uintptr_t>(first_cell(field, box))),
                      types::make_repeat(box.n[2], field.stride[2], plane)});
  }
  const types::Layout canonical = types::canonicalize(layout);
  const int64_t size = types::packed_size(canonical);
  return std::make_unique<pack::Plan>(canonical, size, runtime::config().isa);
}

// One field's box as an MPI datatype from its first cell: rows (dense bytes, or cells at the
// field's stride), planes of rows, the box of planes.
int box_type(const Field& field, const Box& box, MPI_Datatype* type) {
  const int64_t element = static_cast<int64_t>(field.element);
  MPI_Datatype row = MPI_DATATYPE_NULL, plane = MPI_DATATYPE_NULL;
  int rc = MPI_SUCCESS;
  if (field.stride[0] == element) {
    rc = PMPI_Type_contiguous(static_cast<int>(box.n[0] * element), MPI_BYTE, &row);
  } else {
    MPI_Datatype cell;
    PMPI_Type_contiguous(static_cast<int>(element), MPI_BYTE, &cell);
    rc = PMPI_Type_create_hvector(static_cast<int>(box.n[0]), 1, field.stride[0], cell, &row);
    PMPI_Type_free(&cell);
  }
  if (rc == MPI_SUCCESS)
    rc = PMPI_Type_create_hvector(static_cast<int>(box.n[1]), 1, field.stride[1], row, &plane);
  if (rc == MPI_SUCCESS)
    rc = PMPI_Type_create_hvector(static_cast<int>(box.n[2]), 1, field.stride[2], plane, type);
  if (row != MPI_DATATYPE_NULL) PMPI_Type_free(&row);
  if (plane != MPI_DATATYPE_NULL) PMPI_Type_free(&plane);
  return rc;
}

// The same segments as plan_of, as one committed MPI datatype over absolute addresses
// (MPI_BOTTOM); the typemap order is the plan's packed order.
int host_type_of(const std::vector<Segment>& segments, const std::vector<Field>& fields,
                 MPI_Datatype* out) {
  std::vector<MPI_Datatype> boxes;
  std::vector<MPI_Aint> addresses;
  int rc = MPI_SUCCESS;
  for (const Segment& segment : segments) {
    const Field& field = fields[static_cast<size_t>(segment.field)];
    MPI_Datatype box = MPI_DATATYPE_NULL;
    rc = box_type(field, segment.box, &box);
    if (rc != MPI_SUCCESS) break;
    boxes.push_back(box);
    MPI_Aint address = 0;
    PMPI_Get_address(first_cell(field, segment.box), &address);
    addresses.push_back(address);
  }
  if (rc == MPI_SUCCESS) {
    const std::vector<int> ones(boxes.size(), 1);
    rc = PMPI_Type_create_struct(static_cast<int>(boxes.size()), ones.data(), addresses.data(),
                                 boxes.data(), out);
  }
  if (rc == MPI_SUCCESS) rc = PMPI_Type_commit(out);
  for (MPI_Datatype& box : boxes) PMPI_Type_free(&box);
  return rc;
}

// A ghost box filled by a copy inside this process: from this rank's own field (a periodic wrap
// onto itself) or from a same-node neighbour's field in node-shared memory.
pack::BoxCopy box_copy(const char* from_base, const std::array<int64_t, 3>& from_stride,
                       const Box& from, const Field& to, const Box& to_box) {
  return {from_base, from_stride, from.lo, to.base,
          to.stride, to_box.lo,   from.n,  static_cast<int64_t>(to.element)};
}

// The copies inside this process, gathered from the pattern, then compiled into row passes.
struct InProcessCopies {
  std::vector<pack::BoxCopy> self;                 // the periodic wrap onto this rank
  std::vector<std::vector<pack::BoxCopy>> shared;  // by domain->sources
};

using PeersByRank = std::map<int, Peer>;

int field_count(const Domain& domain) {
  return static_cast<int>(domain.fields.size());
}

// A same-node rank reads `region` of this rank's interior: it becomes one of the readers this
// rank waits for, and with attached fields the region's segments go to its pack area.
void add_reader(Domain* domain, const Region& region) {
  const int reader_rank = region.node_rank;
  if (std::find(domain->readers.begin(), domain->readers.end(), reader_rank) ==
      domain->readers.end())
    domain->readers.push_back(reader_rank);
  if (!domain->staged) return;
  auto reader = std::find_if(
      domain->staged_readers.begin(), domain->staged_readers.end(),
      [reader_rank](const StagedReader& staged) { return staged.node_rank == reader_rank; });
  if (reader == domain->staged_readers.end()) {
    domain->staged_readers.push_back({reader_rank, {}, nullptr, nullptr});
    reader = domain->staged_readers.end() - 1;
  }
  add_segments(&reader->segments, region.box, field_count(*domain));
}

void plan_sends(Domain* domain, PeersByRank* peers) {
  for (const Region& region : send_regions(*domain)) {
    if (region.route == Route::Shared)
      add_reader(domain, region);
    else
      add_segments(&(*peers)[region.rank].send.segments, region.box, field_count(*domain));
  }
}

// The index in domain->sources of same-node source `node_rank`, added at its first region.
size_t source_index(Domain* domain, int node_rank, InProcessCopies* copies) {
  for (size_t i = 0; i < domain->sources.size(); ++i)
    if (domain->sources[i].node_rank == node_rank) return i;
  domain->sources.push_back({node_rank, {}, {}, nullptr, nullptr});
  copies->shared.emplace_back();
  return domain->sources.size() - 1;
}

// Copies that fill `region` from this rank's own interior (a periodic wrap).
void add_self_copies(const Domain& domain, const Region& region, InProcessCopies* copies) {
  const Box from = send_box(region.direction, domain.size, domain.radius);
  for (const Field& field : domain.fields)
    copies->self.push_back(box_copy(field.base, field.stride, from, field, region.box));
}

// Copies that fill `region` from the same-node neighbour's fields in its window segment.
void add_shared_copies(const Domain& domain, const Region& region,
                       std::vector<pack::BoxCopy>* copies) {
  const auto& size = domain.partition.subdomain(region.slot).size;
  const std::array<int64_t, 3> their_size{size[0], size[1], size[2]};
  const Box from = send_box(region.direction, their_size, domain.radius);
  for (int field = 0; field < field_count(domain); ++field) {
    const FieldLayout theirs = neighbour_field(domain, region.node_rank, their_size, field);
    copies->push_back(box_copy(theirs.base, theirs.stride, from,
                               domain.fields[static_cast<size_t>(field)], region.box));
  }
}

void plan_receives(Domain* domain, PeersByRank* peers, InProcessCopies* copies) {
  for (const Region& region : receive_regions(*domain)) {
    switch (region.route) {
      case Route::Self:
        add_self_copies(*domain, region, copies);
        break;
      case Route::Shared: {
        const size_t source = source_index(domain, region.node_rank, copies);
        if (domain->staged)  // in the sender's order, as an MPI message from it would be
          add_segments(&domain->sources[source].segments, region.box, field_count(*domain));
        else
          add_shared_copies(*domain, region, &copies->shared[source]);
        break;
      }
      case Route::Message:
        add_segments(&(*peers)[region.rank].recv.segments, region.box, field_count(*domain));
        break;
    }
  }
}

// The staged transport's plans: each reader's faces packed into its area, each source's area
// unpacked into this rank's ghosts.
void plan_staging(Domain* domain) {
  for (StagedReader& reader : domain->staged_readers)
    reader.pack = plan_of(reader.segments, domain->fields);
  for (SharedSource& source : domain->sources)
    source.unpack = plan_of(source.segments, domain->fields);
}

// The peers in issue order as the seed found best: slow transports first, larger messages first.
void order_peers(Domain* domain, PeersByRank peers) {
  for (auto& [rank, peer] : peers) {
    peer.rank = rank;
    peer.other_node = mpi::locality(domain->comm, rank) == model::Locality::OtherNode;
    peer.send.bytes = packed_bytes(peer.send.segments, domain->fields);
    peer.recv.bytes = packed_bytes(peer.recv.segments, domain->fields);
    domain->peers.push_back(std::move(peer));
  }
  std::stable_sort(domain->peers.begin(), domain->peers.end(), [](const Peer& a, const Peer& b) {
    if (a.other_node != b.other_node) return a.other_node;
    return a.send.bytes > b.send.bytes;
  });
}

// How one direction of a message is moved: as the host's datatype (large messages, not to
// oneself: LOOM_HALO_METHODS without self, where MPICH moves such a message slower as a
// datatype than packed, docs/halo.md), or packed by Loom's plan into its buffer.
int prepare_message(const Domain& domain, int peer, Message* message) {
  const bool by_host = message->bytes > 0 &&
                       static_cast<int64_t>(message->bytes) >= host_types_above() &&
                       peer != domain.rank;
  if (by_host) return host_type_of(message->segments, domain.fields, &message->type);
  if (message->bytes > 0) {
    message->plan = plan_of(message->segments, domain.fields);
    message->buffer = mpi::sim::allocate(message->bytes);
  }
  return MPI_SUCCESS;
}

// The message's persistent request (`init`: PMPI_Send_init or PMPI_Recv_init), over its host
// datatype at MPI_BOTTOM or over its packed buffer; none for an empty message.
template <typename Init>
int init_request(Init init, Message* message, int peer, MPI_Comm comm) {
  if (message->type != MPI_DATATYPE_NULL)
    return init(MPI_BOTTOM, 1, message->type, peer, kTag, comm, &message->request);
  if (message->bytes > 0)
    return init(message->buffer.get(), static_cast<int>(message->bytes), MPI_BYTE, peer, kTag, comm,
                &message->request);
  return MPI_SUCCESS;
}

int prepare_peer(const Domain& domain, Peer* peer) {
  if (peer->send.bytes > static_cast<size_t>(INT32_MAX) ||
      peer->recv.bytes > static_cast<size_t>(INT32_MAX))
    return fail(LOOM_HALO_ERR_ARG, "a merged halo message exceeds INT_MAX bytes");
  int rc = prepare_message(domain, peer->rank, &peer->send);
  if (rc == MPI_SUCCESS) rc = prepare_message(domain, peer->rank, &peer->recv);
  if (rc != MPI_SUCCESS) return mpi_fail(rc, "halo datatype");
  if ((peer->send.plan && !peer->send.buffer) || (peer->recv.plan && !peer->recv.buffer))
    return fail(LOOM_HALO_ERR_NOMEM, "cannot allocate a message buffer");
  rc = init_request(PMPI_Recv_init, &peer->recv, peer->rank, domain.comm);
  if (rc == MPI_SUCCESS) rc = init_request(PMPI_Send_init, &peer->send, peer->rank, domain.comm);
  if (rc != MPI_SUCCESS) return mpi_fail(rc, "persistent request");
  return LOOM_HALO_SUCCESS;
}

}  // namespace

int build_plan(Domain* domain) {
  PeersByRank peers;
  InProcessCopies copies;
  plan_sends(domain, &peers);
  plan_receives(domain, &peers, &copies);
  domain->self_passes = pack::row_passes(copies.self);
  for (size_t i = 0; i < domain->sources.size(); ++i)
    domain->sources[i].passes = pack::row_passes(copies.shared[i]);
  if (domain->staged) {
    const int rc = open_staging(domain);
    if (rc != LOOM_HALO_SUCCESS) return rc;
    plan_staging(domain);
  }
  order_peers(domain, std::move(peers));
  for (Peer& peer : domain->peers)
    if (const int rc = prepare_peer(*domain, &peer); rc != LOOM_HALO_SUCCESS) return rc;
  return LOOM_HALO_SUCCESS;
}

}  // namespace loom::halo
