// A halo domain's state, shared by the files of halo/ (internal; the C API of
// include/loom/halo.h hands it out as an opaque loom_halo_domain). See docs/halo.md.
//   pattern:     which regions a rank sends and fills, and how each neighbour is reached
//   plan:        the persistent plan built from the pattern (messages, copies, staging plans)
//   node_window: the node-shared window (fields or pack areas) and its layout
//   placement:   nodes, and which rank of a node gets which subdomain
//   api, exchange, errors: the C API
#pragma once

#include <mpi.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "halo/pattern.hpp"
#include "mpi/sim_clock.hpp"
#include "pack/box_copy.hpp"
#include "pack/plan.hpp"
#include "place/partition.hpp"

namespace loom::halo {

struct Field {
  size_t element = 0;
  bool attached = false;  // the user's memory (loom_halo_attach_field): base and stride given
  mpi::sim::Memory allocation;
  char* base = nullptr;  // local cell (0, 0, 0)
  std::array<int64_t, 3> stride{};
};

// One direction of a pair's host-MPI message: every segment between the pair, merged.
struct Message {
  std::vector<Segment> segments;
  size_t bytes = 0;
  // Packed by Loom: one plan over absolute addresses (as MPI_BOTTOM) moves every segment
  // between `buffer` and the fields in one exec::pack/unpack call.
  mpi::sim::Memory buffer;
  std::unique_ptr<pack::Plan> plan;
  // Or, for a message of at least LOOM_HALO_HOST_TYPES_ABOVE bytes, the same segments as one MPI
  // datatype over MPI_BOTTOM that the host's engine moves itself: out of cache, packing into a
  // buffer the host then copies again costs more than the pack saves (docs/halo.md). The
  // typemap order is the plan's packed order, so either side may use either.
  MPI_Datatype type = MPI_DATATYPE_NULL;
  MPI_Request request = MPI_REQUEST_NULL;  // persistent
};

// A rank this rank exchanges one host-MPI message with, each way.
struct Peer {
  int rank = 0;
  bool other_node = false;
  Message send, recv;
};

// A same-node rank whose interior fills some of this rank's ghost regions.
struct SharedSource {
  int node_rank = 0;
  std::vector<pack::RowPass> passes;  // fields in node-shared memory: copied directly
  // Attached fields: the source packs `segments` (this rank's ghost boxes, in the source's
  // direction order) into `area`, in its node-shared segment, and this rank unpacks them.
  std::vector<Segment> segments;
  std::unique_ptr<pack::Plan> unpack;
  const char* area = nullptr;
};

// A same-node reader of this rank's attached fields: the faces it needs, packed into `area` in
// this rank's node-shared segment at the start of each exchange.
struct StagedReader {
  int node_rank = 0;
  std::vector<Segment> segments;
  std::unique_ptr<pack::Plan> pack;
  char* area = nullptr;
};

}  // namespace loom::halo

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
  std::vector<loom::halo::Field> fields;
  std::vector<loom::halo::Peer> peers;           // in issue order: other node first, larger first
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
  std::vector<loom::halo::SharedSource> sources;
  std::vector<int> readers;  // node ranks that read from this rank
  // A domain with an attached field (the user's memory, not node-shared): each rank's segment
  // holds its flags and one pack area per same-node reader instead of its fields.
  bool staged = false;
  std::vector<loom::halo::StagedReader> staged_readers;
  int spin_micros = 0;  // flag waits: kSpinMicros, or 0 with more node ranks than cores
  // SMPI (simulated ranks share one address space): this rank's segment in place of the
  // window's, and every node rank's signal, which its flag writers notify.
  loom::mpi::sim::Memory sim_segment;
  std::unique_ptr<loom::mpi::sim::Signal> signal;
  std::vector<loom::mpi::sim::Signal*> signals;  // by node rank; empty with a real MPI
  int64_t step = 0;
};

namespace loom::halo {

using Domain = loom_halo_domain_s;

// Keeps `message` as the calling thread's last error (loom_halo_error_message); returns `code`.
int fail(int code, std::string message);
// The host MPI returned `rc` in `what`: LOOM_HALO_ERR_MPI, with the host's words for it.
int mpi_fail(int rc, const char* what);

}  // namespace loom::halo
