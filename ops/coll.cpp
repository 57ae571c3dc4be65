// Collective family: data-movement collectives (all-to-all, gather, scatter, broadcast,
// neighbourhood) with any datatypes. All ranks of a collective must describe their data
// consistently, and no rank can learn its peers' datatypes without communicating, so while
// Loom is active every rank hands the host *bytes*: dense buffers pass straight through as
// MPI_BYTE, other types are packed into pooled staging buffers (by Loom's plan, or by the
// host's MPI_Pack when Loom has none) and unpacked after the host collective. Each
// collective's layout is described once (`describe_*`), for its blocking and non-blocking
// forms. Intercommunicators, LOOM_DISABLE=1 and byte counts or displacements beyond an int
// go to the host unchanged. See docs/collectives.md.
#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <utility>
#include <vector>

#include "exec/execute.hpp"
#include "mpi/host.hpp"
#include "mpi/requests.hpp"
#include "mpi/topology.hpp"
#include "mpi/type_registry.hpp"
#include "ops/coll.hpp"
#include "ops/compressed_alltoall.hpp"
#include "runtime/counters.hpp"
#include "transport/select.hpp"
#include "transport/staging.hpp"

namespace loom::ops {
using namespace loom::runtime;    // NOLINT: the layers below
using namespace loom::exec;       // NOLINT: the layers below
using namespace loom::mpi;        // NOLINT: the layers below
using namespace loom::transport;  // NOLINT: the layers below
namespace {

// Collectives with a derived datatype on this rank: Loom packed or unpacked its data, or the
// host ran them with the user's types; Loom's bytes; and blocking neighbourhood all-to-alls (any
// types) moved through the same-node shared-memory window.
const Counter kPacked = register_counter("collectives", "", "packed");
const Counter kHost = register_counter("collectives", "", "host");
const Counter kBytes = register_counter("collectives", "", "bytes");
const Counter kShared = register_counter("collectives", "", "shared");
const bool kCollectivesFormat = format_area("collectives", {40});

// Byte arithmetic on user addresses, which may be relative to MPI_BOTTOM (null).
char* at(const void* base, int64_t offset) {
  return reinterpret_cast<char*>(reinterpret_cast<uintptr_t>(base) +
                                 static_cast<uintptr_t>(offset));
}

bool fits_int(int64_t value) {
  return value >= INT_MIN && value <= INT_MAX;
}

bool is_named(MPI_Datatype type) {
  int ints, addresses, types, combiner;
  return PMPI_Type_get_envelope(type, &ints, &addresses, &types, &combiner) == MPI_SUCCESS &&
         combiner == MPI_COMBINER_NAMED;
}

// How elements of one datatype become bytes on this rank.
struct TypeRoute {
  enum class Kind : uint8_t {
    Direct,    // contiguous: the user's memory is the bytes
    Plan,      // Loom's plan packs and unpacks
    HostPack,  // no Loom plan: the host's MPI_Pack/MPI_Unpack
  };
  Kind kind = Kind::Direct;
  MPI_Datatype type = MPI_DATATYPE_NULL;
  const TypePlan* plan = nullptr;
  int64_t size = 0, extent = 0;
  int64_t first_byte = 0;  // Direct: where the bytes start, relative to the element's origin
  // Plan: the user's memory kind (exec/execute.hpp), device memory staged through Loom's plan.
  exec::MemoryKind memory = exec::MemoryKind::Host;
};

bool route_of(MPI_Datatype type, TypeRoute* route) {
  if (type == MPI_DATATYPE_NULL) return false;
  route->type = type;
  if (const TypePlan* plan = find_plan(type)) {
    route->plan = plan;
    route->size = plan->plan.size();
    route->extent = plan->plan.extent();
    if (route->size == 0) {
      route->kind = TypeRoute::Kind::Direct;
    } else if (plan->plan.dense()) {
      route->kind = TypeRoute::Kind::Direct;
      route->first_byte = plan->plan.ops()[0].disp;
    } else {
      route->kind = TypeRoute::Kind::Plan;
    }
    return true;
  }
  MPI_Count size = 0, lb = 0, extent = 0;
  if (PMPI_Type_size_x(type, &size) != MPI_SUCCESS ||
      PMPI_Type_get_extent_x(type, &lb, &extent) != MPI_SUCCESS)
    return false;
  route->kind = size == 0 ? TypeRoute::Kind::Direct : TypeRoute::Kind::HostPack;
  route->size = size;
  route->extent = extent;
  return true;
}

// A side in device memory is always staged, so that the host reads and writes host memory
// only; false where that cannot be (the host's MPI_Pack cannot read device memory).
bool route_device_side(TypeRoute* route) {
  if (route->kind == TypeRoute::Kind::HostPack) return false;
  if (route->size > 0) {
    route->kind = TypeRoute::Kind::Plan;
    route->memory = exec::MemoryKind::Device;
  }
  return true;
}

// One side (send or receive) of a collective on this rank, as the user described it:
// `blocks` peer blocks in the buffer at `base`.
struct UserSide {
  enum class Shape : uint8_t {
    Uniform,  // `count` elements of `type` per block, blocks back to back
    Varying,  // `counts[i]` elements of `type` at `displs[i]` extents
    PerType,  // `counts[i]` elements of `types[i]` at `displs[i]` (or `aint_displs[i]`) bytes
  };
  Shape shape = Shape::Uniform;
  const void* base = nullptr;
  int blocks = 0;
  int count = 0;
  MPI_Datatype type = MPI_DATATYPE_NULL;
  const int* counts = nullptr;
  const int* displs = nullptr;
  const MPI_Aint* aint_displs = nullptr;
  const MPI_Datatype* types = nullptr;
};

UserSide uniform(const void* base, int blocks, int count, MPI_Datatype type) {
  UserSide side;
  side.base = base;
  side.blocks = blocks;
  side.count = count;
  side.type = type;
  return side;
}

UserSide varying(const void* base, int blocks, const int* counts, const int* displs,
                 MPI_Datatype type) {
  UserSide side;
  side.shape = UserSide::Shape::Varying;
  side.base = base;
  side.blocks = blocks;
  side.counts = counts;
  side.displs = displs;
  side.type = type;
  return side;
}

UserSide per_type(const void* base, int blocks, const int* counts, const int* displs,
                  const MPI_Aint* aint_displs, const MPI_Datatype* types) {
  UserSide side;
  side.shape = UserSide::Shape::PerType;
  side.base = base;
  side.blocks = blocks;
  side.counts = counts;
  side.displs = displs;
  side.aint_displs = aint_displs;
  side.types = types;
  return side;
}

// Blocks [first, first + blocks) of one side, `count` elements each, staged back to back
// from `offset`; the first block's element origin is `user`.
struct Piece {
  char* user;
  int64_t count;
  int first, blocks;
  size_t offset;
  TypeRoute route;
};

// One side as the host sees it: bytes in `buffer`, which is the user's memory, a staging
// buffer, or MPI_IN_PLACE. The arrays live as long as a non-blocking call needs them.
struct HostSide {
  void* buffer = nullptr;
  int count = 0;  // Uniform: bytes per block
  std::vector<int> counts, displs;
  std::vector<MPI_Aint> aint_displs;
  std::vector<MPI_Datatype> types;  // PerType: MPI_BYTE for every block
  bool staged = false;
  StagingBuffer staging;
  std::vector<Piece> pieces;  // staged only
};

// Block `k` of a side as the host sees it: its bytes, and where they start relative to
// `buffer` (in a staged side, the sum of the sizes of the blocks before it).
int64_t block_bytes(const HostSide& side, size_t k) {
  return side.counts.empty() ? side.count : side.counts[k];
}
int64_t block_offset(const HostSide& side, size_t k) {
  if (side.counts.empty()) return static_cast<int64_t>(k) * side.count;
  return side.aint_displs.empty() ? int64_t{side.displs[k]} : int64_t{side.aint_displs[k]};
}

// Which blocks an operation covers: all, only one, or all but one, never those received
// from MPI_PROC_NULL neighbours (the host leaves them alone, and so must the unpack).
struct Select {
  int only = -1;
  int except = -1;
  const std::vector<uint8_t>* absent = nullptr;
  bool includes(int block) const {
    return (only < 0 || block == only) && block != except &&
           !(absent && (*absent)[static_cast<size_t>(block)]);
  }
};

// Describes how `user` reaches the host as bytes. False when it cannot (invalid arguments,
// or a byte count or displacement beyond an int): the host must run the call as written.
bool describe_side(const UserSide& user, HostSide* side) {
  using Shape = UserSide::Shape;
  using Kind = TypeRoute::Kind;
  if (user.blocks < 0) return false;
  const bool device = device_memory(user.base);
  if (user.shape == Shape::Uniform) {
    TypeRoute route;
    if (user.count < 0 || !route_of(user.type, &route)) return false;
    if (device && !route_device_side(&route)) return false;
    const int64_t bytes = user.count * route.size;
    if (!fits_int(bytes)) return false;
    side->count = static_cast<int>(bytes);
    if (route.kind == Kind::Direct) {
      side->buffer = at(user.base, route.first_byte);
      return true;
    }
    side->staged = true;
    side->staging =
        StagingBuffer(static_cast<size_t>(std::max<int64_t>(bytes * user.blocks, 1)), device);
    side->buffer = side->staging.data();
    if (bytes > 0) side->pieces.push_back({at(user.base, 0), user.count, 0, user.blocks, 0, route});
    return true;
  }
  if (user.blocks > 0 && (!user.counts || (!user.displs && !user.aint_displs) ||
                          (user.shape == Shape::PerType && !user.types)))
    return false;
  const size_t blocks = static_cast<size_t>(user.blocks);
  const bool per_type = user.shape == Shape::PerType;
  std::vector<TypeRoute> routes(per_type ? std::max<size_t>(blocks, 1) : 1);
  if (!per_type && !route_of(user.type, &routes[0])) return false;
  bool direct = per_type || routes[0].kind == Kind::Direct;
  for (size_t i = 0; i < blocks; ++i) {
    if (user.counts[i] < 0) return false;
    if (per_type) {
      if (!route_of(user.types[i], &routes[i])) return false;
      direct = direct && (user.counts[i] == 0 || routes[i].kind == Kind::Direct);
    }
  }
  if (device) {
    for (TypeRoute& route : routes)
      if (route.type != MPI_DATATYPE_NULL && !route_device_side(&route)) return false;
    direct = false;
  }
  // Element origin of block i relative to `base`, in bytes.
  auto origin = [&](size_t i) -> int64_t {
    if (!per_type) return int64_t{user.displs[i]} * routes[0].extent;
    return user.aint_displs ? int64_t{user.aint_displs[i]} : int64_t{user.displs[i]};
  };
  side->counts.resize(blocks);
  if (user.aint_displs)
    side->aint_displs.resize(blocks);
  else
    side->displs.resize(blocks);
  if (per_type) side->types.assign(blocks, MPI_BYTE);
  int64_t offset = 0;
  for (size_t i = 0; i < blocks; ++i) {
    const TypeRoute& route = routes[per_type ? i : 0];
    const int64_t bytes = user.counts[i] * route.size;
    // A direct Varying side hands the host its buffer from the type's first byte on; a
    // direct PerType side hands `base`, each block carrying its own type's first byte.
    const int64_t displ = direct ? origin(i) + (per_type ? route.first_byte : 0) : offset;
    if (!fits_int(bytes) || (!user.aint_displs && !fits_int(displ))) return false;
    side->counts[i] = static_cast<int>(bytes);
    if (user.aint_displs)
      side->aint_displs[i] = static_cast<MPI_Aint>(displ);
    else
      side->displs[i] = static_cast<int>(displ);
    if (!direct && bytes > 0) {
      side->pieces.push_back({at(user.base, origin(i)), user.counts[i], static_cast<int>(i), 1,
                              static_cast<size_t>(offset), route});
      offset += bytes;
    }
  }
  if (direct) {
    side->buffer = at(user.base, per_type ? int64_t{0} : routes[0].first_byte);
    return true;
  }
  side->staged = true;
  side->staging = StagingBuffer(static_cast<size_t>(std::max<int64_t>(offset, 1)), device);
  side->buffer = side->staging.data();
  return true;
}

// Calls `fn(piece, first_block, blocks)` for each run of selected blocks of the side.
template <typename Fn>
int for_each_run(const HostSide& side, const Select& select, Fn fn) {
  for (const Piece& piece : side.pieces) {
    int run_start = -1;
    for (int b = piece.first; b <= piece.first + piece.blocks; ++b) {
      const bool selected = b < piece.first + piece.blocks && select.includes(b);
      if (selected && run_start < 0) run_start = b;
      if (!selected && run_start >= 0) {
        if (int rc = fn(piece, run_start, b - run_start); rc != MPI_SUCCESS) return rc;
        run_start = -1;
      }
    }
  }
  return MPI_SUCCESS;
}

// Packs (or unpacks) `blocks` blocks of `piece` from block `first` on, to (or from) the
// bytes at `packed`.
int move_run(const Piece& piece, int first, int blocks, char* packed, bool pack, MPI_Comm comm) {
  const TypeRoute& route = piece.route;
  char* user = piece.user + (first - piece.first) * piece.count * route.extent;
  const int64_t elements = piece.count * blocks;
  switch (route.kind) {
    case TypeRoute::Kind::Direct: {
      const size_t bytes = static_cast<size_t>(elements * route.size);
      if (pack)
        std::memcpy(packed, user + route.first_byte, bytes);
      else
        std::memcpy(user + route.first_byte, packed, bytes);
      return MPI_SUCCESS;
    }
    case TypeRoute::Kind::Plan:
      if (pack)
        exec::pack(route.plan->plan, user, elements, packed, route.memory);
      else
        exec::unpack(route.plan->plan, packed, elements, user, route.memory);
      return MPI_SUCCESS;
    case TypeRoute::Kind::HostPack:
      break;
  }
  // The host's MPI_Pack takes int counts and sizes: one block (which fits) at a time.
  const int count = static_cast<int>(piece.count);
  const int bytes = static_cast<int>(piece.count * route.size);
  for (int b = 0; b < blocks; ++b) {
    char* element = user + b * piece.count * route.extent;
    char* block_bytes = packed + int64_t{b} * bytes;
    int position = 0;
    const int rc =
        pack ? PMPI_Pack(element, count, route.type, block_bytes, bytes, &position, comm)
             : PMPI_Unpack(block_bytes, bytes, &position, element, count, route.type, comm);
    if (rc != MPI_SUCCESS) return rc;
    if (position != bytes) return MPI_ERR_INTERN;
  }
  return MPI_SUCCESS;
}

// What a pending unpack of `original` keeps alive through the user's MPI_Type_free: Loom's
// plan, or a host duplicate of a type Loom has no plan for.
struct TypeHold {
  TypeHold() = default;
  TypeHold(const TypeHold&) = delete;
  TypeHold& operator=(const TypeHold&) = delete;
  ~TypeHold() {
    if (host_copy != MPI_DATATYPE_NULL) PMPI_Type_free(&host_copy);
  }
  MPI_Datatype original = MPI_DATATYPE_NULL;
  std::shared_ptr<const TypePlan> plan;
  MPI_Datatype host_copy = MPI_DATATYPE_NULL;
};

// One collective call on this rank: how its two sides reach the host, which blocks to pack
// before the host runs and which to unpack after. A non-blocking call hands it to the
// request table, which runs on_complete when the host request completes.
class Exchange final : public PendingOp {
 public:
  explicit Exchange(MPI_Comm comm) : comm_(comm) {}
  Exchange(const Exchange&) = delete;
  Exchange& operator=(const Exchange&) = delete;

  HostSide send, recv;
  Select pack_send;        // blocks of the send side to pack
  bool pack_recv = false;  // MPI_IN_PLACE: the data to send sits in the receive side
  Select pack_recv_select;
  bool unpack = false;  // the receive side is staged and has data for the user
  Select unpack_select;
  std::vector<uint8_t> absent;  // neighbourhood collectives: MPI_PROC_NULL sources
  bool bcast_root = false;      // MPI_Bcast: this rank sends (its send side is the buffer)

  // Counts the call and packs what the host will send.
  int start() {
    tally();
    if (!send.staged && !pack_recv) return MPI_SUCCESS;
    KernelTimer timer(kPackTime);
    int rc = MPI_SUCCESS;
    if (send.staged) rc = move(send, pack_send, true);
    if (rc == MPI_SUCCESS && pack_recv) rc = move(recv, pack_recv_select, true);
    return rc;
  }

  // The host collective returned `rc`: unpack what it received.
  int finish(int rc) {
    if (rc != MPI_SUCCESS || !unpack) return rc;
    KernelTimer timer(kUnpackTime);
    return move(recv, unpack_select, false);
  }

  // A neighbourhood all-to-all through the same-node window (shared_exchange.hpp): the
  // send side is written straight into this rank's segment, in the staged layout (blocks
  // back to back), and each receive block is read straight from its sender's segment.
  // Returns SharedExchange::kNotExchanged when the host must run the call instead.
  int run_shared(SharedExchange& shared, const std::vector<int>& sources,
                 const std::vector<int>& destinations) {
    std::vector<int64_t> bytes(destinations.size());
    for (size_t k = 0; k < bytes.size(); ++k) bytes[k] = block_bytes(send, k);
    auto fill = [&](char* data) {
      KernelTimer timer(kPackTime);
      if (send.staged) return move(send, pack_send, true, data);
      for (size_t k = 0; k < bytes.size(); ++k) {
        std::memcpy(data, at(send.buffer, block_offset(send, k)), static_cast<size_t>(bytes[k]));
        data += bytes[k];
      }
      return MPI_SUCCESS;
    };
    std::vector<const Piece*> piece_of(recv.staged ? sources.size() : 0, nullptr);
    for (const Piece& piece : recv.pieces)
      for (int b = piece.first; b < piece.first + piece.blocks; ++b)
        piece_of[static_cast<size_t>(b)] = &piece;
    bool truncated = false;
    auto drain = [&](int block, const char* data, int64_t length) {
      const int64_t expected = block_bytes(recv, static_cast<size_t>(block));
      truncated = truncated || length > expected;
      const int64_t delivered = std::min(length, expected);
      if (delivered <= 0) return MPI_SUCCESS;
      KernelTimer timer(kUnpackTime);
      if (!recv.staged) {
        std::memcpy(at(recv.buffer, block_offset(recv, static_cast<size_t>(block))), data,
                    static_cast<size_t>(delivered));
        return MPI_SUCCESS;
      }
      const Piece& piece = *piece_of[static_cast<size_t>(block)];
      if (delivered == expected)
        return move_run(piece, block, 1, const_cast<char*>(data), false, comm_);
      // A shorter block (an erroneous type signature): its bytes are written, the rest of
      // the receive block keeps what it held.
      std::vector<char> merged(static_cast<size_t>(expected));
      int rc = move_run(piece, block, 1, merged.data(), true, comm_);
      std::memcpy(merged.data(), data, static_cast<size_t>(delivered));
      if (rc == MPI_SUCCESS) rc = move_run(piece, block, 1, merged.data(), false, comm_);
      return rc;
    };
    const int rc = shared.exchange(destinations, bytes, fill, sources, drain);
    if (rc == SharedExchange::kNotExchanged) return rc;
    tally();
    count(kShared);
    if (rc == MPI_SUCCESS && truncated) {
      PMPI_Comm_call_errhandler(comm_, MPI_ERR_TRUNCATE);
      return MPI_ERR_TRUNCATE;
    }
    return rc;
  }

  int on_complete(MPI_Status*) override { return finish(MPI_SUCCESS); }

  // A non-blocking call: the user may free the receive types, and the communicator,
  // before completion; errors of the late unpack go to MPI_COMM_SELF's handler.
  void hold_receive_types() {
    comm_ = MPI_COMM_SELF;
    if (!unpack) return;
    for (Piece& piece : recv.pieces) {
      TypeRoute& route = piece.route;
      if (route.kind == TypeRoute::Kind::Direct || is_named(route.type)) continue;
      TypeHold* hold = nullptr;
      for (auto& held : holds_)
        if (held->original == route.type) hold = held.get();
      if (!hold) {
        holds_.push_back(std::make_unique<TypeHold>());
        hold = holds_.back().get();
        hold->original = route.type;
        if (route.kind == TypeRoute::Kind::Plan)
          hold->plan = share_plan(route.type);
        else
          PMPI_Type_dup(route.type, &hold->host_copy);
      }
      if (hold->plan)
        route.plan = hold->plan.get();
      else if (hold->host_copy != MPI_DATATYPE_NULL)
        route.type = hold->host_copy;
    }
  }

  // Whether a non-blocking call must keep this alive until the host request completes.
  bool owns_anything() const {
    return send.staged || recv.staged || !send.counts.empty() || !recv.counts.empty();
  }

 private:
  // Counts the call: whether Loom's engine or the host's packs this rank's data.
  void tally() {
    uint64_t loom_bytes = 0;
    bool loom_moves = false, host_moves = false;
    auto add = [&](const HostSide& side, const Select& select) {
      for_each_run(side, select, [&](const Piece& piece, int, int blocks) {
        if (piece.route.kind == TypeRoute::Kind::HostPack) {
          host_moves = true;
        } else {
          loom_moves = true;
          loom_bytes += static_cast<uint64_t>(piece.count * blocks * piece.route.size);
        }
        return MPI_SUCCESS;
      });
    };
    if (send.staged) add(send, pack_send);
    if (pack_recv) add(recv, pack_recv_select);
    if (unpack) add(recv, unpack_select);
    if (loom_moves) count_call(kPacked, kBytes, loom_bytes);
    if (host_moves) count(kHost);
  }

  // Moves the selected blocks between the user's memory and the staged layout at `staged`
  // (the side's staging buffer, or a shared segment laid out the same way).
  int move(const HostSide& side, const Select& select, bool pack, char* staged) {
    return for_each_run(side, select, [&](const Piece& piece, int first, int blocks) {
      const int64_t skipped = first - piece.first;
      char* packed = staged + piece.offset + skipped * piece.count * piece.route.size;
      return move_run(piece, first, blocks, packed, pack, comm_);
    });
  }
  int move(const HostSide& side, const Select& select, bool pack) {
    return move(side, select, pack, side.staging.data());
  }

  MPI_Comm comm_;
  std::vector<std::unique_ptr<TypeHold>> holds_;
};

// ---- When Loom serves a call ------------------------------------------------------------

bool is_left_to_host(MPI_Datatype type) {
  TypeRoute route;
  return type != MPI_DATATYPE_NULL && route_of(type, &route) &&
         route.kind != TypeRoute::Kind::Direct;
}

bool any_left_to_host(std::initializer_list<MPI_Datatype> types) {
  for (MPI_Datatype type : types)
    if (is_left_to_host(type)) return true;
  return false;
}

bool any_left_to_host(const MPI_Datatype* types, int n) {
  for (int i = 0; types && i < n; ++i)
    if (is_left_to_host(types[i])) return true;
  return false;
}

// The host runs the call as the user wrote it: counted when a type Loom would have packed
// is involved. Returns false, the answer of the `describe_*` functions.
bool leave_to_host(bool types_left_to_host) {
  if (types_left_to_host) count(kHost);
  return false;
}

// Loom serves intracommunicator collectives while it is active.
bool intracommunicator(MPI_Comm comm, int* rank, int* size) {
  if (config().disabled || comm == MPI_COMM_NULL) return false;
  int inter = 0;
  if (PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS || inter) return false;
  return PMPI_Comm_rank(comm, rank) == MPI_SUCCESS && PMPI_Comm_size(comm, size) == MPI_SUCCESS;
}

// Whether Loom serves a call on `comm`; counts an intercommunicator call with `types`.
bool serves(MPI_Comm comm, int* rank, int* size, std::initializer_list<MPI_Datatype> types) {
  if (intracommunicator(comm, rank, size)) return true;
  if (!config().disabled && comm != MPI_COMM_NULL) leave_to_host(any_left_to_host(types));
  return false;
}

// In- and out-degree of an intracommunicator with a topology.
bool neighbour_degrees(MPI_Comm comm, int* in, int* out) {
  int rank, size;
  return intracommunicator(comm, &rank, &size) && topology_degrees(comm, in, out);
}

bool neighbourhood(MPI_Comm comm, int* in, int* out, bool types_left_to_host) {
  if (neighbour_degrees(comm, in, out)) return true;
  if (!config().disabled && comm != MPI_COMM_NULL) leave_to_host(types_left_to_host);
  return false;
}

// The ranks a neighbourhood collective receives from and sends to, in block order.
void neighbour_lists(MPI_Comm comm, int in, int out, std::vector<int>* sources,
                     std::vector<int>* destinations) {
  sources->assign(static_cast<size_t>(std::max(in, 1)), MPI_PROC_NULL);
  destinations->assign(static_cast<size_t>(std::max(out, 1)), MPI_PROC_NULL);
  int topology = MPI_UNDEFINED;
  PMPI_Topo_test(comm, &topology);
  if (topology == MPI_CART) {
    // Per dimension: the neighbour at -1 first, then the one at +1; both ways alike.
    for (int d = 0; 2 * d + 1 < in; ++d)
      PMPI_Cart_shift(comm, d, 1, &(*sources)[static_cast<size_t>(2 * d)],
                      &(*sources)[static_cast<size_t>(2 * d + 1)]);
    *destinations = *sources;
  } else if (topology == MPI_GRAPH) {
    int rank = 0;
    PMPI_Comm_rank(comm, &rank);
    PMPI_Graph_neighbors(comm, rank, in, sources->data());
    *destinations = *sources;
  } else if (topology == MPI_DIST_GRAPH) {
    std::vector<int> source_weights(sources->size()), destination_weights(destinations->size());
    PMPI_Dist_graph_neighbors(comm, in, sources->data(), source_weights.data(), out,
                              destinations->data(), destination_weights.data());
  }
  sources->resize(static_cast<size_t>(in));
  destinations->resize(static_cast<size_t>(out));
}

// Which receive blocks come from MPI_PROC_NULL (a non-periodic Cartesian border).
std::vector<uint8_t> absent_sources(MPI_Comm comm, int in) {
  int in_degree = 0, out_degree = 0;
  neighbour_degrees(comm, &in_degree, &out_degree);
  std::vector<int> sources, destinations;
  neighbour_lists(comm, in, out_degree, &sources, &destinations);
  std::vector<uint8_t> absent(static_cast<size_t>(in));
  for (size_t i = 0; i < absent.size(); ++i) absent[i] = sources[i] == MPI_PROC_NULL;
  return absent;
}

// ---- One description per collective ---------------------------------------------------
// Each fills `ex` and returns true, or returns false when the host must run the call as
// the user wrote it.

bool describe_sides(Exchange& ex, const UserSide* send, const UserSide* recv) {
  if (send && !describe_side(*send, &ex.send)) return false;
  if (recv && !describe_side(*recv, &ex.recv)) return false;
  ex.unpack = ex.recv.staged;
  return true;
}

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
  if (!describe_all_to_all(ex, in_place, uniform(sendbuf, size, sendcount, sendtype),
                           uniform(recvbuf, size, recvcount, recvtype)))
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

// The send arrays of an in-place all-to-all are ignored; the receive side's stand in.
const int* send_counts(const Exchange& ex) {
  return ex.send.buffer == MPI_IN_PLACE ? ex.recv.counts.data() : ex.send.counts.data();
}
const int* send_displs(const Exchange& ex) {
  return ex.send.buffer == MPI_IN_PLACE ? ex.recv.displs.data() : ex.send.displs.data();
}
const MPI_Datatype* send_types(const Exchange& ex) {
  return ex.send.buffer == MPI_IN_PLACE ? ex.recv.types.data() : ex.send.types.data();
}

// ---- Running a description ------------------------------------------------------------

// Blocking: pack, run the host collective on bytes, unpack.
template <typename Describe, typename OnBytes, typename AsWritten>
int run_blocking(MPI_Comm comm, Describe describe, OnBytes on_bytes, AsWritten as_written) {
  Exchange ex(comm);
  if (!describe(ex)) return as_written();
  if (int rc = ex.start(); rc != MPI_SUCCESS) return rc;
  return ex.finish(on_bytes(ex));
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

// Non-blocking: pack, start the host collective on bytes, and leave the unpack (and the
// staging buffers and byte arrays the host may still read) to the request's completion.
template <typename Describe, typename OnBytes, typename AsWritten>
int run_nonblocking(MPI_Comm comm, MPI_Request* request, Describe describe, OnBytes on_bytes,
                    AsWritten as_written) {
  auto ex = std::make_unique<Exchange>(comm);
  if (!request || !describe(*ex)) return as_written();
  if (int rc = ex->start(); rc != MPI_SUCCESS) return rc;
  ex->hold_receive_types();
  const int rc = on_bytes(*ex);
  if (rc == MPI_SUCCESS && ex->owns_anything()) track_request(*request, std::move(ex));
  return rc;
}

}  // namespace

// ---- All-to-all -------------------------------------------------------------------------

int alltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
             int recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
  if (int rc; compressed_alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm,
                                  nullptr, &rc))
    return rc;
  return run_blocking(
      comm,
      [&](Exchange& ex) {
        return describe_alltoall(ex, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                                 comm);
      },
      [&](Exchange& ex) {
        return host().Alltoall(ex.send.buffer, ex.send.count, MPI_BYTE, ex.recv.buffer,
                               ex.recv.count, MPI_BYTE, comm);
      },
      [&] {
        return host().Alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
      });
}

int ialltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
              int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Request* request) {
  if (int rc; request && compressed_alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount,
                                             recvtype, comm, request, &rc))
    return rc;
  return run_nonblocking(
      comm, request,
      [&](Exchange& ex) {
        return describe_alltoall(ex, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                                 comm);
      },
      [&](Exchange& ex) {
        return host().Ialltoall(ex.send.buffer, ex.send.count, MPI_BYTE, ex.recv.buffer,
                                ex.recv.count, MPI_BYTE, comm, request);
      },
      [&] {
        return host().Ialltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm,
                                request);
      });
}

int alltoallv(const void* sendbuf, const int sendcounts[], const int sdispls[],
              MPI_Datatype sendtype, void* recvbuf, const int recvcounts[], const int rdispls[],
              MPI_Datatype recvtype, MPI_Comm comm) {
  if (int rc; compressed_alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts,
                                   rdispls, recvtype, comm, nullptr, &rc))
    return rc;
  return run_blocking(
      comm,
      [&](Exchange& ex) {
        return describe_alltoallv(ex, sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts,
                                  rdispls, recvtype, comm);
      },
      [&](Exchange& ex) {
        return host().Alltoallv(ex.send.buffer, send_counts(ex), send_displs(ex), MPI_BYTE,
                                ex.recv.buffer, ex.recv.counts.data(), ex.recv.displs.data(),
                                MPI_BYTE, comm);
      },
      [&] {
        return host().Alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts,
                                rdispls, recvtype, comm);
      });
}

int ialltoallv(const void* sendbuf, const int sendcounts[], const int sdispls[],
               MPI_Datatype sendtype, void* recvbuf, const int recvcounts[], const int rdispls[],
               MPI_Datatype recvtype, MPI_Comm comm, MPI_Request* request) {
  if (int rc; request && compressed_alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf,
                                              recvcounts, rdispls, recvtype, comm, request, &rc))
    return rc;
  return run_nonblocking(
      comm, request,
      [&](Exchange& ex) {
        return describe_alltoallv(ex, sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts,
                                  rdispls, recvtype, comm);
      },
      [&](Exchange& ex) {
        return host().Ialltoallv(ex.send.buffer, send_counts(ex), send_displs(ex), MPI_BYTE,
                                 ex.recv.buffer, ex.recv.counts.data(), ex.recv.displs.data(),
                                 MPI_BYTE, comm, request);
      },
      [&] {
        return host().Ialltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts,
                                 rdispls, recvtype, comm, request);
      });
}

int alltoallw(const void* sendbuf, const int sendcounts[], const int sdispls[],
              const MPI_Datatype sendtypes[], void* recvbuf, const int recvcounts[],
              const int rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm) {
  return run_blocking(
      comm,
      [&](Exchange& ex) {
        return describe_alltoallw(ex, sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts,
                                  rdispls, recvtypes, comm);
      },
      [&](Exchange& ex) {
        return host().Alltoallw(ex.send.buffer, send_counts(ex), send_displs(ex), send_types(ex),
                                ex.recv.buffer, ex.recv.counts.data(), ex.recv.displs.data(),
                                ex.recv.types.data(), comm);
      },
      [&] {
        return host().Alltoallw(sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts,
                                rdispls, recvtypes, comm);
      });
}

int ialltoallw(const void* sendbuf, const int sendcounts[], const int sdispls[],
               const MPI_Datatype sendtypes[], void* recvbuf, const int recvcounts[],
               const int rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm,
               MPI_Request* request) {
  return run_nonblocking(
      comm, request,
      [&](Exchange& ex) {
        return describe_alltoallw(ex, sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts,
                                  rdispls, recvtypes, comm);
      },
      [&](Exchange& ex) {
        return host().Ialltoallw(ex.send.buffer, send_counts(ex), send_displs(ex), send_types(ex),
                                 ex.recv.buffer, ex.recv.counts.data(), ex.recv.displs.data(),
                                 ex.recv.types.data(), comm, request);
      },
      [&] {
        return host().Ialltoallw(sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts,
                                 rdispls, recvtypes, comm, request);
      });
}

// ---- Allgather ----------------------------------------------------------------------------

int allgather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
              int recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
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
               int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Request* request) {
  return run_nonblocking(
      comm, request,
      [&](Exchange& ex) {
        return describe_allgather(ex, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                                  comm);
      },
      [&](Exchange& ex) {
        return host().Iallgather(ex.send.buffer, ex.send.count, MPI_BYTE, ex.recv.buffer,
                                 ex.recv.count, MPI_BYTE, comm, request);
      },
      [&] {
        return host().Iallgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm,
                                 request);
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
                MPI_Request* request) {
  return run_nonblocking(
      comm, request,
      [&](Exchange& ex) {
        return describe_allgatherv(ex, sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs,
                                   recvtype, comm);
      },
      [&](Exchange& ex) {
        return host().Iallgatherv(ex.send.buffer, ex.send.count, MPI_BYTE, ex.recv.buffer,
                                  ex.recv.counts.data(), ex.recv.displs.data(), MPI_BYTE, comm,
                                  request);
      },
      [&] {
        return host().Iallgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs,
                                  recvtype, comm, request);
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
            MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request* request) {
  return run_nonblocking(
      comm, request,
      [&](Exchange& ex) {
        return describe_gather(ex, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root,
                               comm);
      },
      [&](Exchange& ex) {
        return host().Igather(ex.send.buffer, ex.send.count, MPI_BYTE, ex.recv.buffer,
                              ex.recv.count, MPI_BYTE, root, comm, request);
      },
      [&] {
        return host().Igather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root,
                              comm, request);
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
             MPI_Comm comm, MPI_Request* request) {
  return run_nonblocking(
      comm, request,
      [&](Exchange& ex) {
        return describe_gatherv(ex, sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs,
                                recvtype, root, comm);
      },
      [&](Exchange& ex) {
        return host().Igatherv(ex.send.buffer, ex.send.count, MPI_BYTE, ex.recv.buffer,
                               ex.recv.counts.data(), ex.recv.displs.data(), MPI_BYTE, root, comm,
                               request);
      },
      [&] {
        return host().Igatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype,
                               root, comm, request);
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
             int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request* request) {
  return run_nonblocking(
      comm, request,
      [&](Exchange& ex) {
        return describe_scatter(ex, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                                root, comm);
      },
      [&](Exchange& ex) {
        return host().Iscatter(ex.send.buffer, ex.send.count, MPI_BYTE, ex.recv.buffer,
                               ex.recv.count, MPI_BYTE, root, comm, request);
      },
      [&] {
        return host().Iscatter(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root,
                               comm, request);
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
              MPI_Comm comm, MPI_Request* request) {
  return run_nonblocking(
      comm, request,
      [&](Exchange& ex) {
        return describe_scatterv(ex, sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount,
                                 recvtype, root, comm);
      },
      [&](Exchange& ex) {
        return host().Iscatterv(ex.send.buffer, ex.send.counts.data(), ex.send.displs.data(),
                                MPI_BYTE, ex.recv.buffer, ex.recv.count, MPI_BYTE, root, comm,
                                request);
      },
      [&] {
        return host().Iscatterv(sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype,
                                root, comm, request);
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
           MPI_Request* request) {
  return run_nonblocking(
      comm, request,
      [&](Exchange& ex) { return describe_bcast(ex, buffer, count, datatype, root, comm); },
      [&](Exchange& ex) {
        return host().Ibcast(bcast_buffer(ex), bcast_count(ex), MPI_BYTE, root, comm, request);
      },
      [&] { return host().Ibcast(buffer, count, datatype, root, comm, request); });
}

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
                       int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Request* request) {
  return run_nonblocking(
      comm, request,
      [&](Exchange& ex) {
        return describe_neighbor_alltoall(ex, sendbuf, sendcount, sendtype, recvbuf, recvcount,
                                          recvtype, comm);
      },
      [&](Exchange& ex) {
        return host().Ineighbor_alltoall(ex.send.buffer, ex.send.count, MPI_BYTE, ex.recv.buffer,
                                         ex.recv.count, MPI_BYTE, comm, request);
      },
      [&] {
        return host().Ineighbor_alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                                         comm, request);
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
                        MPI_Request* request) {
  return run_nonblocking(
      comm, request,
      [&](Exchange& ex) {
        return describe_neighbor_alltoallv(ex, sendbuf, sendcounts, sdispls, sendtype, recvbuf,
                                           recvcounts, rdispls, recvtype, comm);
      },
      [&](Exchange& ex) {
        return host().Ineighbor_alltoallv(
            ex.send.buffer, ex.send.counts.data(), ex.send.displs.data(), MPI_BYTE, ex.recv.buffer,
            ex.recv.counts.data(), ex.recv.displs.data(), MPI_BYTE, comm, request);
      },
      [&] {
        return host().Ineighbor_alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf,
                                          recvcounts, rdispls, recvtype, comm, request);
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
                        MPI_Request* request) {
  return run_nonblocking(
      comm, request,
      [&](Exchange& ex) {
        return describe_neighbor_alltoallw(ex, sendbuf, sendcounts, sdispls, sendtypes, recvbuf,
                                           recvcounts, rdispls, recvtypes, comm);
      },
      [&](Exchange& ex) {
        return host().Ineighbor_alltoallw(
            ex.send.buffer, ex.send.counts.data(), ex.send.aint_displs.data(), ex.send.types.data(),
            ex.recv.buffer, ex.recv.counts.data(), ex.recv.aint_displs.data(), ex.recv.types.data(),
            comm, request);
      },
      [&] {
        return host().Ineighbor_alltoallw(sendbuf, sendcounts, sdispls, sendtypes, recvbuf,
                                          recvcounts, rdispls, recvtypes, comm, request);
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
                        int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Request* request) {
  return run_nonblocking(
      comm, request,
      [&](Exchange& ex) {
        return describe_neighbor_allgather(ex, sendbuf, sendcount, sendtype, recvbuf, recvcount,
                                           recvtype, comm);
      },
      [&](Exchange& ex) {
        return host().Ineighbor_allgather(ex.send.buffer, ex.send.count, MPI_BYTE, ex.recv.buffer,
                                          ex.recv.count, MPI_BYTE, comm, request);
      },
      [&] {
        return host().Ineighbor_allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount,
                                          recvtype, comm, request);
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
                         MPI_Comm comm, MPI_Request* request) {
  return run_nonblocking(
      comm, request,
      [&](Exchange& ex) {
        return describe_neighbor_allgatherv(ex, sendbuf, sendcount, sendtype, recvbuf, recvcounts,
                                            displs, recvtype, comm);
      },
      [&](Exchange& ex) {
        return host().Ineighbor_allgatherv(ex.send.buffer, ex.send.count, MPI_BYTE, ex.recv.buffer,
                                           ex.recv.counts.data(), ex.recv.displs.data(), MPI_BYTE,
                                           comm, request);
      },
      [&] {
        return host().Ineighbor_allgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts,
                                           displs, recvtype, comm, request);
      });
}

}  // namespace loom::ops
