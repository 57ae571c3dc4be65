// Staging buffers for pack-then-send. Large allocations are mmap-backed and page-faulted
// on first touch, which would cost more than the pack itself; buffers are therefore
// kept in a process-wide pool by power-of-two size class and reused.
#pragma once

#include <climits>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <utility>

#include "mpi/requests.hpp"
#include "runtime/counters.hpp"

namespace loom::mpi {
struct TypePlan;
}

namespace loom::transport {

// Every point-to-point send and receive, by route: packed by Loom and sent as MPI_PACKED, or
// staged and unpacked by Loom; a derived datatype left to the host's datatype engine (the model's
// choice, or no plan possible); a committed type Loom has not planned yet, which the host serves
// as written while its host time adds up towards its plan (lazy planning, docs/commit.md);
// nothing to pack (a basic or contiguous datatype, an empty message, MPI_PROC_NULL). Then Loom's
// bytes. Messages to oneself that the self channel delivers count in its own group.
inline const runtime::Counter kSendPacked = runtime::register_counter("p2p", "send", "packed");
inline const runtime::Counter kSendHost = runtime::register_counter("p2p", "send", "host");
inline const runtime::Counter kSendUnplanned =
    runtime::register_counter("p2p", "send", "host (not planned yet)");
inline const runtime::Counter kSendPlain = runtime::register_counter("p2p", "send", "plain");
inline const runtime::Counter kSendBytes = runtime::register_counter("p2p", "send", "bytes");
inline const runtime::Counter kRecvUnpacked = runtime::register_counter("p2p", "recv", "unpacked");
inline const runtime::Counter kRecvHost = runtime::register_counter("p2p", "recv", "host");
inline const runtime::Counter kRecvUnplanned =
    runtime::register_counter("p2p", "recv", "host (not planned yet)");
inline const runtime::Counter kRecvPlain = runtime::register_counter("p2p", "recv", "plain");
inline const runtime::Counter kRecvBytes = runtime::register_counter("p2p", "recv", "bytes");
inline const bool kP2pFormat = runtime::format_area("p2p", {30});

// Blocking messages and small collectives of host memory up to this size are staged on the stack:
// on small messages a pooled buffer's take and give are a large part of Loom's work (docs/p2p.md,
// "Small messages").
constexpr int64_t kStackStagingBytes = 2048;

class StagingBuffer {
 public:
  StagingBuffer() = default;
  // `device_visible`: staging for a device buffer, pinned so that the device executor packs
  // straight into it and unpacks straight from it (exec/device_memory.hpp).
  explicit StagingBuffer(size_t bytes, bool device_visible = false);
  ~StagingBuffer();
  StagingBuffer(StagingBuffer&& other) noexcept;
  StagingBuffer& operator=(StagingBuffer&& other) noexcept;
  StagingBuffer(const StagingBuffer&) = delete;
  StagingBuffer& operator=(const StagingBuffer&) = delete;

  char* data() const { return data_; }
  size_t size() const { return size_; }  // what was asked for

 private:
  void release();
  char* data_ = nullptr;
  size_t size_ = 0;
  int size_class_ = -1;
  bool device_visible_ = false;
};

void release_staging_pool();  // at MPI_Finalize

// How `bytes` packed bytes travel through the host: as `bytes` MPI_PACKED, or, beyond what an
// int count holds (a device buffer's message, which the host cannot be handed), as one element
// of a derived type of MPI_PACKED with the same type signature. That type is freed with this
// object: the host keeps what a request posted with it needs (MPI_Type_free's semantics).
class PackedWire {
 public:
  PackedWire() = default;
  explicit PackedWire(int64_t bytes) {
    if (bytes <= INT_MAX)
      count_ = static_cast<int>(bytes);
    else
      build(bytes);
  }
  ~PackedWire() { release(); }
  PackedWire(PackedWire&& other) noexcept;
  PackedWire& operator=(PackedWire&& other) noexcept;
  PackedWire(const PackedWire&) = delete;
  PackedWire& operator=(const PackedWire&) = delete;

  int count() const { return count_; }
  MPI_Datatype type() const { return type_; }

 private:
  void build(int64_t bytes);
  void release() {
    if (owned_) free_type();
  }
  void free_type();
  int count_ = 0;
  MPI_Datatype type_ = MPI_PACKED;
  bool owned_ = false;
};

// A request's staging buffer, which must live until the host is done with it.
class HeldStaging final : public mpi::PendingOp {
 public:
  explicit HeldStaging(StagingBuffer staging) : staging_(std::move(staging)) {}
  int on_complete(MPI_Status*) override { return MPI_SUCCESS; }

 private:
  StagingBuffer staging_;
};

// Unpacks the `received` bytes of a staged message into `count` elements at `buf`. A
// message may end inside an element (a shorter send of another type, or a truncated
// one): the partial element's received bytes are written and its other bytes kept.
// `as_receive`: counted in LOOM_STATS as a receive Loom unpacked (a message to oneself that
// Loom delivers is counted as such instead). `user_on_device`: what the caller knows of `buf`
// (nothing: it is looked up).
void unpack_received(const mpi::TypePlan& type, const char* staged, int64_t received, void* buf,
                     int count, bool as_receive = true,
                     std::optional<bool> user_on_device = std::nullopt);
// The bytes a completed receive delivered into staging, given its error code. After
// MPI_ERR_TRUNCATE Open MPI delivers the bytes that fit (the status says how many), so
// Loom unpacks them as the host would have; MPICH 4.0 delivers nothing to a derived
// receive and its status count is then undefined, so Loom unpacks nothing either.
int64_t received_bytes(const MPI_Status& status, int error);

}  // namespace loom::transport
