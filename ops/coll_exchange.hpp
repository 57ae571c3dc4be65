// What every collective shares (internal to ops/): how one side of a call reaches the host as
// bytes (describe_side), the Exchange that packs before and unpacks after the host collective,
// the descriptor that describes each collective once (Collective, at the end), and run_blocking,
// run_later and run_small, which serve every form of a call from its descriptor. Each family
// (coll_alltoall.cpp, coll_gather.cpp, coll_neighbour.cpp) keeps a table of its descriptors.
//
// Data-movement collectives (all-to-all, gather, scatter, broadcast,
// neighbourhood) with any datatypes. All ranks of a collective must describe their data
// consistently, and no rank can learn its peers' datatypes without communicating, so while
// Loom is active every rank hands the host *bytes*: dense buffers pass straight through as
// MPI_BYTE, other types are packed into pooled staging buffers (by Loom's plan, or by the
// host's MPI_Pack when Loom has none) and unpacked after the host collective. Each
// collective's layout is described once (`describe_*`), for its blocking and non-blocking
// forms. Intercommunicators, LOOM_DISABLE=1 and byte counts or displacements beyond an int
// go to the host unchanged, except device memory the host cannot read (refused). See
// docs/collectives.md.
#pragma once

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "base/bytes.hpp"
#include "exec/execute.hpp"
#include "mpi/host.hpp"
#include "mpi/requests.hpp"
#include "mpi/topology.hpp"
#include "mpi/type_decode.hpp"
#include "mpi/type_registry.hpp"
#include "ops/coll.hpp"
#include "runtime/counters.hpp"
#include "transport/seamed_wire.hpp"
#include "transport/select.hpp"
#include "transport/staging.hpp"

namespace loom::ops::coll {
using namespace loom::runtime;    // NOLINT: the layers below
using namespace loom::exec;       // NOLINT: the layers below
using namespace loom::mpi;        // NOLINT: the layers below
using namespace loom::transport;  // NOLINT: the layers below

// The collectives' counters (kPacked, kHost, kBytes, kShared, ...) are in ops/coll.hpp.

// Byte arithmetic on user addresses, which may be relative to MPI_BOTTOM (null).
char* at(const void* base, int64_t offset);

using base::fits_int;

using mpi::is_named;

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

bool route_of(MPI_Datatype type, TypeRoute* route);

// A side in device memory is staged, so that the host reads and writes host memory only, unless
// it is contiguous and the host reads device memory itself; false where staging cannot be (the
// host's MPI_Pack cannot read device memory).
bool route_device_side(TypeRoute* route);

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
  // A uniform send side whose blocks the host sends one per peer as MPI_BYTE (MPI_Alltoall's):
  // under Open MPI, staged blocks packed by Loom's plan into host memory then travel seamed
  // (HostSide::seam_stride).
  bool seamable = false;
};

UserSide uniform(const void* base, int blocks, int count, MPI_Datatype type);

UserSide varying(const void* base, int blocks, const int* counts, const int* displs,
                 MPI_Datatype type);

UserSide per_type(const void* base, int blocks, const int* counts, const int* displs,
                  const MPI_Aint* aint_displs, const MPI_Datatype* types);

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
  // Device memory Loom cannot stage (a type without Loom's plan, or bytes beyond an int): a host
  // that cannot read device memory must not be handed it (run_blocking, run_later).
  bool unstageable_device = false;
  // A staged uniform send side whose blocks travel seamed (UserSide::seamable, and the host's
  // wire allows it: transport::seamed_block_type): block k sits at
  // k * seam_stride with its tail moved past the seam, and the host sends each as one
  // `seamed_type`. 0: blocks back to back, sent as MPI_BYTE.
  int64_t seam_stride = 0;
  MPI_Datatype seamed_type = MPI_DATATYPE_NULL;
};

// Block `k` of a side as the host sees it: its bytes, and where they start relative to
// `buffer` (in a staged side, the sum of the sizes of the blocks before it).
int64_t block_bytes(const HostSide& side, size_t k);

int64_t block_offset(const HostSide& side, size_t k);

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
// or a byte count or displacement beyond an int): the host must run the call as written, unless
// the side is device memory the host cannot read (HostSide::unstageable_device).
bool describe_side(const UserSide& user, HostSide* side);

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
int move_run(const Piece& piece, int first, int blocks, char* packed, bool pack, MPI_Comm comm);
// Unpacks the first `bytes` packed bytes of block `block` of `piece` (shorter than the block):
// the rest of the receive block is left as it was, and unread where Loom's plan or a contiguous
// type describes it (the host's MPI_Unpack takes whole elements: the block is read and rewritten).
int unpack_prefix(const Piece& piece, int block, const char* packed, int64_t bytes, MPI_Comm comm);

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
  std::vector<uint8_t> absent;   // neighbourhood collectives: MPI_PROC_NULL sources
  std::vector<uint8_t> nowhere;  // and destinations of all-to-alls (blocks left unpacked)
  bool bcast_root = false;       // MPI_Bcast: this rank sends (its send side is the buffer)

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
  // Returns SharedExchange::kNotExchanged when the host must run the call instead. `pays_next`:
  // SharedExchange::exchange's.
  int run_shared(SharedExchange& shared, const std::vector<int>& sources,
                 const std::vector<int>& destinations, bool pays_next) {
    std::vector<int64_t> bytes(destinations.size());
    for (size_t k = 0; k < bytes.size(); ++k) bytes[k] = block_bytes(send, k);
    // Blocks addressed to MPI_PROC_NULL keep their place in the layout, unwritten (a staged
    // side's pack_send leaves them out).
    auto fill = [&](char* data) {
      KernelTimer timer(kPackTime);
      if (send.staged) return move(send, pack_send, true, data);
      for (size_t k = 0; k < bytes.size(); ++k) {
        if (destinations[k] != MPI_PROC_NULL)
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
      // A shorter block (an erroneous type signature): only its bytes' places are written.
      return unpack_prefix(piece, block, data, delivered, comm_);
    };
    const int rc = shared.exchange(destinations, bytes, fill, sources, drain, pays_next);
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
  // A persistent call packs at each MPI_Start (and unpacks at each completion).
  int on_start() override { return start(); }
  bool persistent() const override { return persistent_; }

  // A call completed later (ops/coll.hpp, Later): the user may free the types, and the
  // communicator, before completion (a persistent call: before any start); errors of the late
  // pack and unpack go to MPI_COMM_SELF's handler. Holds the receive types, and for a persistent
  // call the types it packs at each start too.
  void hold_types(bool persistent) {
    comm_ = MPI_COMM_SELF;
    persistent_ = persistent;
    if (unpack || (persistent && pack_recv)) hold(&recv.pieces);
    if (persistent && send.staged) hold(&send.pieces);
  }

  // Keeps `payload` as long as this call: arrays handed to the host's persistent collective.
  void keep(std::shared_ptr<const void> payload) { kept_.push_back(std::move(payload)); }

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
    if (side.seam_stride > 0)  // packing only (UserSide::seamable): one piece, from block 0
      return for_each_run(side, select, [&](const Piece& piece, int first, int blocks) {
        for (int b = first; b < first + blocks; ++b) {
          char* block = staged + b * side.seam_stride;
          if (int rc = move_run(piece, b, 1, block, true, comm_); rc != MPI_SUCCESS) return rc;
          open_seam(block, side.count);
        }
        return MPI_SUCCESS;
      });
    return for_each_run(side, select, [&](const Piece& piece, int first, int blocks) {
      const int64_t skipped = first - piece.first;
      char* packed = staged + piece.offset + skipped * piece.count * piece.route.size;
      return move_run(piece, first, blocks, packed, pack, comm_);
    });
  }
  int move(const HostSide& side, const Select& select, bool pack) {
    return move(side, select, pack, side.staging.data());
  }

  // Points the pieces' routes at held copies of their types (one hold per type).
  void hold(std::vector<Piece>* pieces) {
    for (Piece& piece : *pieces) {
      TypeRoute& route = piece.route;
      if (route.kind == TypeRoute::Kind::Direct || is_named(route.type)) continue;
      TypeHold* held = nullptr;
      for (auto& existing : holds_)
        if (existing->original == route.type) held = existing.get();
      if (!held) {
        holds_.push_back(std::make_unique<TypeHold>());
        held = holds_.back().get();
        held->original = route.type;
        if (route.kind == TypeRoute::Kind::Plan)
          held->plan = share_plan(route.type);
        else
          PMPI_Type_dup(route.type, &held->host_copy);
      }
      if (held->plan)
        route.plan = held->plan.get();
      else if (held->host_copy != MPI_DATATYPE_NULL)
        route.type = held->host_copy;
    }
  }

  MPI_Comm comm_;
  bool persistent_ = false;
  std::vector<std::unique_ptr<TypeHold>> holds_;
  std::vector<std::shared_ptr<const void>> kept_;
};

// ---- When Loom serves a call ------------------------------------------------------------

bool is_left_to_host(MPI_Datatype type);

bool any_left_to_host(std::initializer_list<MPI_Datatype> types);

bool any_left_to_host(const MPI_Datatype* types, int n);

// The host runs the call as the user wrote it: counted when a type Loom would have packed
// is involved. Returns false, the answer of the `describe_*` functions.
bool leave_to_host(bool types_left_to_host);

// Loom serves intracommunicator collectives while it is active.
bool intracommunicator(MPI_Comm comm, int* rank, int* size);

// Whether Loom serves a call on `comm`; counts an intercommunicator call with `types`.
bool serves(MPI_Comm comm, int* rank, int* size, std::initializer_list<MPI_Datatype> types);

// In- and out-degree of an intracommunicator with a topology.
bool neighbour_degrees(MPI_Comm comm, int* in, int* out);

bool neighbourhood(MPI_Comm comm, int* in, int* out, bool types_left_to_host);

// The ranks a neighbourhood collective receives from and sends to, in block order.
void neighbour_lists(MPI_Comm comm, int in, int out, std::vector<int>* sources,
                     std::vector<int>* destinations);

// ---- Describing a call ----------------------------------------------------------------------
// Each collective's `describe_*` function fills `ex` and returns true, or returns false when the
// host must run the call as the user wrote it; describe_sides is what they share.

bool describe_sides(Exchange& ex, const UserSide* send, const UserSide* recv);

// A call the host cannot run as written: a side in device memory that Loom cannot stage, on a
// host that does not read device memory. MPI_ERR_UNSUPPORTED_OPERATION through the
// communicator's error handler, before anything moves, instead of a host that faults.
bool refused_on_device(const Exchange& ex);
int refuse_device_call(MPI_Comm comm);

// ---- Small uniform calls ----------------------------------------------------------------
// A blocking call whose two sides are uniform (one count and type for every block, blocks back
// to back) in host memory, with types Loom has plans for, staging at most kStackStagingBytes a
// side: packed on the stack and run without an Exchange, whose description would cost such a
// call more than its packing (docs/collectives.md, "Small calls").

// One side of a small call.
struct SmallSide {
  TypeRoute route;
  char* user = nullptr;  // the first block's element origin
  int blocks = 0;
  int64_t count = 0;  // elements a block
  int bytes = 0;      // bytes a block
  // Blocks the host leaves alone (neighbourhood peers that are MPI_PROC_NULL), or null.
  const std::vector<uint8_t>* skip = nullptr;
  // A type Loom packs that the host moves as fast as its bytes (host_moves_whole): the host gets
  // the side as the user wrote it.
  bool as_written = false;
  bool staged() const { return route.kind == TypeRoute::Kind::Plan && !as_written; }
  // The side as the host gets it: the side's stack staging, the user's own bytes, or the user's
  // elements.
  void* host_buffer(char* staging) const {
    if (as_written) return user;
    return staged() ? staging : at(user, route.first_byte);
  }
  int host_count() const { return as_written ? static_cast<int>(count) : bytes; }
  MPI_Datatype host_type() const { return as_written ? route.type : MPI_BYTE; }
};
struct SmallCall {
  SmallSide send, recv;
};

// Describes `send` and `recv` as a small call, and counts it; false where the full path must
// serve it (MPI_IN_PLACE, a type without Loom's plan, device memory, invalid arguments, more than
// kStackStagingBytes to stage). `*_skip`: SmallSide::skip.
bool small_call(const UserSide& send, const UserSide& recv, SmallCall* call,
                const std::vector<uint8_t>* send_skip = nullptr,
                const std::vector<uint8_t>* recv_skip = nullptr);

// Packs the side's blocks into `staging`, or unpacks them from it (all but the skipped).
void move_small(const SmallSide& side, char* staging, bool pack);

// ---- One descriptor per collective ----------------------------------------------------------
// Each collective is one row of its family's table (coll_alltoall.cpp, coll_gather.cpp,
// coll_neighbour.cpp): Collective<its host forms, its describe_* function, the shape of its
// arguments on bytes>. run_blocking, run_later and run_small serve the call's blocking,
// non-blocking and persistent forms from that row and the user's own arguments, the
// communicator last as in MPI: the host's form with those arguments (as written), or
// describe_* fills an Exchange and the host's form gets the Exchange's bytes.

// The host's forms of one collective (mpi/host.hpp): MPI_<Name>, MPI_I<name> and, where the
// host has persistent collectives, <Name>_init.
template <auto Blocking, auto NonBlocking, auto Persistent>
struct HostForms {
  template <typename... Args>
  static int call_now(Args... args) {
    return (host().*Blocking)(args...);
  }
  // MPI_I<name>(ARGS..., later.request), or for a persistent call <Name>_init(ARGS...,
  // later.info, later.request). `ex`: the Exchange whose bytes ARGS describe, or null.
  template <typename... Args>
  static int call_later(const Later& later, Exchange* /*ex*/, Args... args) {
    if constexpr (Persistent != nullptr)
      if (later.persistent) return (host().*Persistent)(args..., later.info, later.request);
    return (host().*NonBlocking)(args..., later.request);
  }
};
#ifdef LOOM_PERSISTENT_COLLECTIVES
#define LOOM_HOST_FORMS(Name, name) \
  HostForms<&HostMpi::Name, &HostMpi::I##name, &HostMpi::Name##_init>
#else
#define LOOM_HOST_FORMS(Name, name) HostForms<&HostMpi::Name, &HostMpi::I##name, nullptr>
#endif

// A uniform side's blocks as the host moves them: bytes, or one seamed type each
// (HostSide::seam_stride).
inline int block_count(const HostSide& side) {
  return side.seamed_type != MPI_DATATYPE_NULL ? 1 : side.count;
}
inline MPI_Datatype block_type(const HostSide& side) {
  return side.seamed_type != MPI_DATATYPE_NULL ? side.seamed_type : MPI_BYTE;
}

// The arrays the host reads for the send side: an in-place all-to-all's are ignored, and the
// receive side's stand in.
inline const HostSide& send_arrays(const Exchange& ex) {
  return ex.send.buffer == MPI_IN_PLACE ? ex.recv : ex.send;
}

// The shapes of the host's arguments on an Exchange's bytes. `call(host, ex, ARGS...)`, ARGS a
// collective's arguments, passes `host` the byte form of those that describe data, then the rest
// (a root, the communicator) as the user gave them.

// Uniform sides: MPI_Alltoall's sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype.
struct UniformBytes {
  template <typename Host, typename... Rest>
  static int call(Host host, const Exchange& ex, const void*, int, MPI_Datatype, void*, int,
                  MPI_Datatype, Rest... rest) {
    return host(ex.send.buffer, block_count(ex.send), block_type(ex.send), ex.recv.buffer,
                block_count(ex.recv), block_type(ex.recv), rest...);
  }
};

// Varying sides: MPI_Alltoallv's counts and displacements on both sides.
struct VaryingBytes {
  template <typename Host, typename... Rest>
  static int call(Host host, const Exchange& ex, const void*, const int*, const int*, MPI_Datatype,
                  void*, const int*, const int*, MPI_Datatype, Rest... rest) {
    const HostSide& sent = send_arrays(ex);
    return host(ex.send.buffer, sent.counts.data(), sent.displs.data(), MPI_BYTE, ex.recv.buffer,
                ex.recv.counts.data(), ex.recv.displs.data(), MPI_BYTE, rest...);
  }
};

// A type per block: MPI_Alltoallw's (int displacements) and MPI_Neighbor_alltoallw's
// (MPI_Aint displacements).
struct PerTypeBytes {
  template <typename Host, typename Displacement, typename... Rest>
  static int call(Host host, const Exchange& ex, const void*, const int*, const Displacement*,
                  const MPI_Datatype*, void*, const int*, const Displacement*, const MPI_Datatype*,
                  Rest... rest) {
    const HostSide& sent = send_arrays(ex);
    return host(ex.send.buffer, sent.counts.data(), displacements<Displacement>(sent),
                sent.types.data(), ex.recv.buffer, ex.recv.counts.data(),
                displacements<Displacement>(ex.recv), ex.recv.types.data(), rest...);
  }
  template <typename Displacement>
  static const Displacement* displacements(const HostSide& side) {
    if constexpr (std::is_same_v<Displacement, MPI_Aint>)
      return side.aint_displs.data();
    else
      return side.displs.data();
  }
};

// A uniform send side and a varying receive side: MPI_Allgatherv's and MPI_Gatherv's.
struct GathervBytes {
  template <typename Host, typename... Rest>
  static int call(Host host, const Exchange& ex, const void*, int, MPI_Datatype, void*, const int*,
                  const int*, MPI_Datatype, Rest... rest) {
    return host(ex.send.buffer, block_count(ex.send), block_type(ex.send), ex.recv.buffer,
                ex.recv.counts.data(), ex.recv.displs.data(), MPI_BYTE, rest...);
  }
};

// A varying send side and a uniform receive side: MPI_Scatterv's.
struct ScattervBytes {
  template <typename Host, typename... Rest>
  static int call(Host host, const Exchange& ex, const void*, const int*, const int*, MPI_Datatype,
                  void*, int, MPI_Datatype, Rest... rest) {
    return host(ex.send.buffer, ex.send.counts.data(), ex.send.displs.data(), MPI_BYTE,
                ex.recv.buffer, block_count(ex.recv), block_type(ex.recv), rest...);
  }
};

// One buffer, sent by the root (its send side) and received by the others (their receive side):
// MPI_Bcast's.
struct BcastBytes {
  template <typename Host, typename... Rest>
  static int call(Host host, const Exchange& ex, void*, int, MPI_Datatype, Rest... rest) {
    const HostSide& side = ex.bcast_root ? ex.send : ex.recv;
    return host(side.buffer, block_count(side), block_type(side), rest...);
  }
};

// One collective: `HostFormsOf` its host forms, `DescribeFn` its describe_* function (an
// Exchange from the user's arguments), `BytesOf` the shape of its arguments on bytes.
template <typename HostFormsOf, auto DescribeFn, typename BytesOf>
struct Collective {
  using Host = HostFormsOf;
  using Bytes = BytesOf;
  static constexpr auto describe = DescribeFn;
};

// A collective's communicator: its last argument.
template <typename... Args>
MPI_Comm communicator_of(const Args&... args) {
  return std::get<sizeof...(Args) - 1>(std::forward_as_tuple(args...));
}

// Blocking: pack, run the host collective on bytes, unpack. A call with nothing to stage (both
// sides contiguous) goes to the host as written: the same bytes, without the change of type.
template <typename Call, typename... Args>
int run_blocking(Args... args) {
  const MPI_Comm comm = communicator_of(args...);
  Exchange ex(comm);
  if (!Call::describe(ex, args...))
    return refused_on_device(ex) ? refuse_device_call(comm) : Call::Host::call_now(args...);
  if (!ex.owns_anything()) return Call::Host::call_now(args...);
  if (int rc = ex.start(); rc != MPI_SUCCESS) return rc;
  const auto on_host = [](auto... bytes) { return Call::Host::call_now(bytes...); };
  return ex.finish(Call::Bytes::call(on_host, ex, args...));
}

// Completed later (ops/coll.hpp, Later). Non-blocking: pack, start the host collective on bytes,
// and leave the unpack (and the staging buffers and byte arrays the host may still read) to the
// request's completion. Persistent: the host's persistent collective on bytes, over staging that
// lives as long as the request; each MPI_Start packs, each completion unpacks.
template <typename Call, typename... Args>
int run_later(const Later& later, Args... args) {
  const MPI_Comm comm = communicator_of(args...);
  auto ex = std::make_unique<Exchange>(comm);
  if (!later.request) return Call::Host::call_later(later, nullptr, args...);
  if (!Call::describe(*ex, args...))
    return refused_on_device(*ex) ? refuse_device_call(comm)
                                  : Call::Host::call_later(later, nullptr, args...);
  if (!ex->owns_anything()) return Call::Host::call_later(later, nullptr, args...);
  if (!later.persistent)
    if (int rc = ex->start(); rc != MPI_SUCCESS) return rc;
  ex->hold_types(later.persistent);
  Exchange* held = ex.get();
  const auto on_host = [&later, held](auto... bytes) {
    return Call::Host::call_later(later, held, bytes...);
  };
  const int rc = Call::Bytes::call(on_host, *held, args...);
  if (rc == MPI_SUCCESS) track_request(*later.request, std::move(ex));
  return rc;
}

// Runs a small call of a collective whose arguments are its two uniform sides and the
// communicator. Not inlined: its staging would enlarge the frame of the callers' pass-through
// paths.
template <typename Call>
[[gnu::noinline]] int run_small(const SmallCall& call, MPI_Comm comm) {
  alignas(64) char send_staging[kStackStagingBytes];
  alignas(64) char recv_staging[kStackStagingBytes];
  if (call.send.staged()) move_small(call.send, send_staging, true);
  const int rc = Call::Host::call_now(call.send.host_buffer(send_staging), call.send.host_count(),
                                      call.send.host_type(), call.recv.host_buffer(recv_staging),
                                      call.recv.host_count(), call.recv.host_type(), comm);
  if (rc == MPI_SUCCESS && call.recv.staged()) move_small(call.recv, recv_staging, false);
  return rc;
}

}  // namespace loom::ops::coll
