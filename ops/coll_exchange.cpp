#include "ops/coll_exchange.hpp"

#include "mpi/communicator.hpp"
#include "mpi/type_decode.hpp"

namespace loom::ops::coll {

char* at(const void* base, int64_t offset) {
  return reinterpret_cast<char*>(reinterpret_cast<uintptr_t>(base) +
                                 static_cast<uintptr_t>(offset));
}

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

bool route_device_side(TypeRoute* route) {
  // A type not planned yet is planned now: only Loom's plan can stage device memory.
  if (route->kind == TypeRoute::Kind::HostPack && plan_now(route->type) &&
      !route_of(route->type, route))
    return false;
  if (route->kind == TypeRoute::Kind::Direct && exec::device_aware_host) return true;
  if (route->kind == TypeRoute::Kind::HostPack) return false;
  if (route->size > 0) {
    route->kind = TypeRoute::Kind::Plan;
    route->memory = exec::MemoryKind::Device;
  }
  return true;
}

UserSide uniform(const void* base, int blocks, int count, MPI_Datatype type) {
  return {.shape = UserSide::Shape::Uniform,
          .base = base,
          .blocks = blocks,
          .count = count,
          .type = type};
}

UserSide varying(const void* base, int blocks, const int* counts, const int* displs,
                 MPI_Datatype type) {
  return {.shape = UserSide::Shape::Varying,
          .base = base,
          .blocks = blocks,
          .type = type,
          .counts = counts,
          .displs = displs};
}

UserSide per_type(const void* base, int blocks, const int* counts, const int* displs,
                  const MPI_Aint* aint_displs, const MPI_Datatype* types) {
  return {.shape = UserSide::Shape::PerType,
          .base = base,
          .blocks = blocks,
          .counts = counts,
          .displs = displs,
          .aint_displs = aint_displs,
          .types = types};
}

int64_t block_bytes(const HostSide& side, size_t k) {
  return side.counts.empty() ? side.count : side.counts[k];
}

int64_t block_offset(const HostSide& side, size_t k) {
  if (side.counts.empty()) return static_cast<int64_t>(k) * side.count;
  return side.aint_displs.empty() ? int64_t{side.displs[k]} : int64_t{side.aint_displs[k]};
}

namespace {

using Shape = UserSide::Shape;
using Kind = TypeRoute::Kind;

// A uniform side: one route for every block, blocks back to back (seamed where UserSide::seamable
// and the host's wire allows).
bool describe_uniform_side(const UserSide& user, bool device, HostSide* side) {
  TypeRoute route;
  if (user.count < 0 || !route_of(user.type, &route)) return false;
  if (device && !route_device_side(&route)) {
    side->unstageable_device = !device_aware_host;
    return false;
  }
  const int64_t bytes = user.count * route.size;
  if (!fits_int(bytes)) {
    side->unstageable_device = device && !device_aware_host;
    return false;
  }
  side->count = static_cast<int>(bytes);
  if (route.kind == Kind::Direct) {
    side->buffer = at(user.base, route.first_byte);
    return true;
  }
  side->staged = true;
  int64_t stride = bytes;
  // The seam keeps the host's single-copy rendezvous off each block; the byte stream is
  // unchanged, so each rank decides alone.
  if (user.seamable && route.kind == Kind::Plan && route.memory == exec::MemoryKind::Host &&
      bytes > 0 && user.blocks > 0) {
    side->seamed_type = seamed_block_type(bytes);
    if (side->seamed_type != MPI_DATATYPE_NULL) side->seam_stride = stride = bytes + kSeamGap;
  }
  side->staging =
      StagingBuffer(static_cast<size_t>(std::max<int64_t>(stride * user.blocks, 1)), device);
  side->buffer = side->staging.data();
  if (bytes > 0) side->pieces.push_back({at(user.base, 0), user.count, 0, user.blocks, 0, route});
  return true;
}

// The routes of a varying or per-type side (one for a varying side, one a block for a per-type
// side), and whether the host reads the user's memory directly (`*direct`); false where the
// side is invalid or in device memory Loom cannot stage.
bool block_routes(const UserSide& user, bool device, HostSide* side, std::vector<TypeRoute>* routes,
                  bool* direct) {
  if (user.blocks > 0 && (!user.counts || (!user.displs && !user.aint_displs) ||
                          (user.shape == Shape::PerType && !user.types)))
    return false;
  const size_t blocks = static_cast<size_t>(user.blocks);
  const bool per_type = user.shape == Shape::PerType;
  routes->resize(per_type ? std::max<size_t>(blocks, 1) : 1);
  if (!per_type && !route_of(user.type, &(*routes)[0])) return false;
  *direct = per_type || (*routes)[0].kind == Kind::Direct;
  for (size_t i = 0; i < blocks; ++i) {
    if (user.counts[i] < 0) return false;
    if (per_type) {
      if (!route_of(user.types[i], &(*routes)[i])) return false;
      *direct = *direct && (user.counts[i] == 0 || (*routes)[i].kind == Kind::Direct);
    }
  }
  if (device) {
    for (TypeRoute& route : *routes)
      if (route.type != MPI_DATATYPE_NULL && !route_device_side(&route)) {
        side->unstageable_device = !device_aware_host;
        return false;
      }
    *direct = false;
  }
  return true;
}

// A varying or per-type side: each block's count and displacement in bytes, and where the side
// is staged, its pieces back to back in staging.
bool describe_blocks_side(const UserSide& user, bool device, HostSide* side) {
  std::vector<TypeRoute> routes;
  bool direct = false;
  if (!block_routes(user, device, side, &routes, &direct)) return false;
  const size_t blocks = static_cast<size_t>(user.blocks);
  const bool per_type = user.shape == Shape::PerType;
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
    if (!fits_int(bytes) || (!user.aint_displs && !fits_int(displ))) {
      side->unstageable_device = device && !device_aware_host;
      return false;
    }
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

}  // namespace

bool describe_side(const UserSide& user, HostSide* side) {
  if (user.blocks < 0) return false;
  const bool device = device_memory(user.base);
  if (user.shape == Shape::Uniform) return describe_uniform_side(user, device, side);
  return describe_blocks_side(user, device, side);
}

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

int unpack_prefix(const Piece& piece, int block, const char* packed, int64_t bytes, MPI_Comm comm) {
  const TypeRoute& route = piece.route;
  char* user = piece.user + (block - piece.first) * piece.count * route.extent;
  switch (route.kind) {
    case TypeRoute::Kind::Direct:
      std::memcpy(user + route.first_byte, packed, static_cast<size_t>(bytes));
      return MPI_SUCCESS;
    case TypeRoute::Kind::Plan:
      exec::unpack_prefix(route.plan->plan, packed, bytes, piece.count, user, route.memory);
      return MPI_SUCCESS;
    case TypeRoute::Kind::HostPack:
      break;
  }
  std::vector<char> merged(static_cast<size_t>(piece.count * route.size));
  int rc = move_run(piece, block, 1, merged.data(), true, comm);
  std::memcpy(merged.data(), packed, static_cast<size_t>(bytes));
  if (rc == MPI_SUCCESS) rc = move_run(piece, block, 1, merged.data(), false, comm);
  return rc;
}

namespace {

bool small_side(const UserSide& user, const std::vector<uint8_t>* skip, SmallSide* side) {
  if (user.base == MPI_IN_PLACE || user.count < 0 || user.blocks < 0 ||
      !route_of(user.type, &side->route) || side->route.kind == TypeRoute::Kind::HostPack ||
      device_memory(user.base))
    return false;
  const int64_t bytes = user.count * side->route.size;
  if (!fits_int(bytes) || (side->staged() && bytes * user.blocks > kStackStagingBytes))
    return false;
  side->user = at(user.base, 0);
  side->blocks = user.blocks;
  side->count = user.count;
  side->bytes = static_cast<int>(bytes);
  side->skip = skip;
  side->as_written =
      side->route.kind == TypeRoute::Kind::Plan && host_moves_whole(*side->route.plan, user.count);
  return true;
}

// The bytes Loom packs or unpacks on a side.
uint64_t small_bytes(const SmallSide& side) {
  if (!side.staged()) return 0;
  int blocks = side.blocks;
  if (side.skip)
    for (uint8_t skipped : *side.skip) blocks -= skipped;
  return static_cast<uint64_t>(int64_t{blocks} * side.bytes);
}

}  // namespace

bool small_call(const UserSide& send, const UserSide& recv, SmallCall* call,
                const std::vector<uint8_t>* send_skip, const std::vector<uint8_t>* recv_skip) {
  if (!small_side(send, send_skip, &call->send) || !small_side(recv, recv_skip, &call->recv))
    return false;
  if (const uint64_t bytes = small_bytes(call->send) + small_bytes(call->recv);
      call->send.staged() || call->recv.staged())
    count_call(kPacked, kBytes, bytes);
  return true;
}

void move_small(const SmallSide& side, char* staging, bool pack) {
  KernelTimer timer(pack ? kPackTime : kUnpackTime);
  const pack::Plan& plan = side.route.plan->plan;
  // Small sides are host memory on both sides (small_side refuses device buffers).
  constexpr exec::MemoryKind kHostMemory = exec::MemoryKind::Host;
  if (!side.skip) {
    const int64_t elements = side.count * side.blocks;
    if (pack)
      exec::pack(plan, side.user, elements, staging, kHostMemory);
    else
      exec::unpack(plan, staging, elements, side.user, kHostMemory);
    return;
  }
  const int64_t stride = side.count * side.route.extent;
  for (int b = 0; b < side.blocks; ++b) {
    if ((*side.skip)[static_cast<size_t>(b)]) continue;
    char* user = at(side.user, b * stride);
    char* bytes = staging + int64_t{b} * side.bytes;
    if (pack)
      exec::pack(plan, user, side.count, bytes, kHostMemory);
    else
      exec::unpack(plan, bytes, side.count, user, kHostMemory);
  }
}

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

bool leave_to_host(bool types_left_to_host) {
  if (types_left_to_host) count(kHost);
  return false;
}

bool intracommunicator(MPI_Comm comm, int* rank, int* size) {
  mpi::CommShape shape;
  if (config().disabled || !mpi::comm_shape(comm, &shape) || shape.inter) return false;
  *rank = shape.rank;
  *size = shape.size;
  return true;
}

bool serves(MPI_Comm comm, int* rank, int* size, std::initializer_list<MPI_Datatype> types) {
  if (intracommunicator(comm, rank, size)) return true;
  if (!config().disabled && comm != MPI_COMM_NULL) leave_to_host(any_left_to_host(types));
  return false;
}

bool neighbour_degrees(MPI_Comm comm, int* in, int* out) {
  int rank, size;
  return intracommunicator(comm, &rank, &size) && topology_degrees(comm, in, out);
}

bool neighbourhood(MPI_Comm comm, int* in, int* out, bool types_left_to_host) {
  if (neighbour_degrees(comm, in, out)) return true;
  if (!config().disabled && comm != MPI_COMM_NULL) leave_to_host(types_left_to_host);
  return false;
}

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

bool refused_on_device(const Exchange& ex) {
  return ex.send.unstageable_device || ex.recv.unstageable_device;
}

int refuse_device_call(MPI_Comm comm) {
  PMPI_Comm_call_errhandler(comm, MPI_ERR_UNSUPPORTED_OPERATION);
  return MPI_ERR_UNSUPPORTED_OPERATION;
}

bool describe_sides(Exchange& ex, const UserSide* send, const UserSide* recv) {
  if (send && !describe_side(*send, &ex.send)) return false;
  if (recv && !describe_side(*recv, &ex.recv)) return false;
  ex.unpack = ex.recv.staged;
  return true;
}

}  // namespace loom::ops::coll
