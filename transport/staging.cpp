#include "transport/staging.hpp"

#include "exec/execute.hpp"
#include "mpi/quirks.hpp"
#include "mpi/type_registry.hpp"
#include "runtime/counters.hpp"

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <utility>
#include <vector>

namespace loom::transport {
using namespace loom::runtime;  // NOLINT: the layers below
using namespace loom::exec;     // NOLINT: the layers below
using namespace loom::mpi;      // NOLINT: the layers below
namespace {

constexpr int kMinClass = 12;  // 4 KiB
constexpr int kMaxClass = 30;  // 1 GiB; larger buffers are not kept
constexpr size_t kMaxCachedBytes = size_t{512} << 20;

// Buffers by size class. The device pool's buffers stay pinned while cached.
class Pool {
 public:
  explicit Pool(bool device_visible) : device_visible_(device_visible) {}

  char* take(int size_class) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto& list = free_[size_class - kMinClass];
      if (!list.empty()) {
        char* p = list.back();
        list.pop_back();
        cached_bytes_ -= size_t{1} << size_class;
        return p;
      }
    }
    void* p = std::aligned_alloc(64, size_t{1} << size_class);
    if (!p) throw std::bad_alloc();
    if (device_visible_) pin_for_device(p, size_t{1} << size_class);
    return static_cast<char*>(p);
  }

  void give(char* p, int size_class) {
    const size_t bytes = size_t{1} << size_class;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (cached_bytes_ + bytes <= kMaxCachedBytes) {
        free_[size_class - kMinClass].push_back(p);
        cached_bytes_ += bytes;
        return;
      }
    }
    discard(p);
  }

  void clear() {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& list : free_) {
      for (char* p : list) discard(p);
      list.clear();
    }
    cached_bytes_ = 0;
  }

 private:
  void discard(char* p) {
    if (device_visible_) unpin_for_device(p);
    std::free(p);
  }

  const bool device_visible_;
  std::mutex mutex_;
  std::vector<char*> free_[kMaxClass - kMinClass + 1];
  size_t cached_bytes_ = 0;
};

// Both outlive user static destructors that may still send.
Pool& pool() {
  static auto* p = new Pool(false);
  return *p;
}

// Each thread keeps a few host buffers of the small classes for itself, without the pool's
// lock: a small message would pay four lock round trips (a take and a give on each side), a
// visible share of its one-way time (docs/p2p.md, "The pack-then-send path"). Buffers go back
// to the pool when the thread ends.
constexpr int kMaxLocalClass = 16;  // 64 KiB
constexpr size_t kLocalPerClass = 4;
class LocalBuffers {
 public:
  ~LocalBuffers() { clear(); }
  void clear() {
    for (int c = kMinClass; c <= kMaxLocalClass; ++c) {
      for (char* p : free_[c - kMinClass]) pool().give(p, c);
      free_[c - kMinClass].clear();
    }
  }
  char* take(int size_class) {
    auto& list = free_[size_class - kMinClass];
    if (list.empty()) return pool().take(size_class);
    char* p = list.back();
    list.pop_back();
    return p;
  }
  void give(char* p, int size_class) {
    auto& list = free_[size_class - kMinClass];
    if (list.size() < kLocalPerClass)
      list.push_back(p);
    else
      pool().give(p, size_class);
  }

 private:
  std::vector<char*> free_[kMaxLocalClass - kMinClass + 1];
};

LocalBuffers& local_buffers() {
  static thread_local LocalBuffers buffers;
  return buffers;
}
Pool& device_pool() {
  static auto* p = new Pool(true);
  return *p;
}

}  // namespace

StagingBuffer::StagingBuffer(size_t bytes, bool device_visible)
    : size_(bytes), device_visible_(device_visible) {
  if (bytes == 0) return;
  const int size_class = std::max(kMinClass, static_cast<int>(std::bit_width(bytes - 1)));
  if (size_class > kMaxClass) {
    data_ = static_cast<char*>(std::malloc(bytes));
    if (!data_) throw std::bad_alloc();
    if (device_visible_) pin_for_device(data_, bytes);
    return;
  }
  size_class_ = size_class;
  if (device_visible_)
    data_ = device_pool().take(size_class);
  else if (size_class <= kMaxLocalClass)
    data_ = local_buffers().take(size_class);
  else
    data_ = pool().take(size_class);
}

StagingBuffer::~StagingBuffer() {
  release();
}

StagingBuffer::StagingBuffer(StagingBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      size_class_(std::exchange(other.size_class_, -1)),
      device_visible_(std::exchange(other.device_visible_, false)) {}

StagingBuffer& StagingBuffer::operator=(StagingBuffer&& other) noexcept {
  if (this != &other) {
    release();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    size_class_ = std::exchange(other.size_class_, -1);
    device_visible_ = std::exchange(other.device_visible_, false);
  }
  return *this;
}

void StagingBuffer::release() {
  if (!data_) return;
  if (size_class_ >= 0) {
    if (device_visible_)
      device_pool().give(data_, size_class_);
    else if (size_class_ <= kMaxLocalClass)
      local_buffers().give(data_, size_class_);
    else
      pool().give(data_, size_class_);
  } else {
    if (device_visible_) unpin_for_device(data_);
    std::free(data_);
  }
  data_ = nullptr;
}

void release_staging_pool() {
  local_buffers().clear();  // this thread's; other threads' return theirs when they end
  pool().clear();
  device_pool().clear();
}

void PackedWire::build(int64_t bytes) {
  // Chunks of 1 GiB, then the rest: a struct of both, so any size up to 2^61 fits.
  constexpr int kChunk = 1 << 30;
  const int64_t chunks = bytes / kChunk;
  const int rest = static_cast<int>(bytes % kChunk);
  MPI_Datatype chunk = MPI_DATATYPE_NULL, body = MPI_DATATYPE_NULL;
  PMPI_Type_contiguous(kChunk, MPI_PACKED, &chunk);
  PMPI_Type_contiguous(static_cast<int>(chunks), chunk, &body);
  const int lengths[2] = {1, rest};
  const MPI_Aint displacements[2] = {0, static_cast<MPI_Aint>(chunks) * kChunk};
  const MPI_Datatype types[2] = {body, MPI_PACKED};
  PMPI_Type_create_struct(rest > 0 ? 2 : 1, lengths, displacements, types, &type_);
  PMPI_Type_commit(&type_);
  PMPI_Type_free(&body);
  PMPI_Type_free(&chunk);
  count_ = 1;
  owned_ = true;
}

PackedWire::PackedWire(PackedWire&& other) noexcept
    : count_(std::exchange(other.count_, 0)),
      type_(std::exchange(other.type_, MPI_PACKED)),
      owned_(std::exchange(other.owned_, false)) {}

PackedWire& PackedWire::operator=(PackedWire&& other) noexcept {
  if (this != &other) {
    release();
    count_ = std::exchange(other.count_, 0);
    type_ = std::exchange(other.type_, MPI_PACKED);
    owned_ = std::exchange(other.owned_, false);
  }
  return *this;
}

void PackedWire::free_type() {
  PMPI_Type_free(&type_);
  type_ = MPI_PACKED;
  owned_ = false;
}

void unpack_received(const TypePlan& type, const char* staged, int64_t received, void* buf,
                     int count, bool as_receive, std::optional<bool> user_on_device) {
  const int64_t size = type.plan.size();
  if (size <= 0 || received <= 0) return;
  // Staging is host memory: a device buffer's side is all there is to know.
  const bool device = user_on_device ? *user_on_device : exec::device_memory(buf);
  const exec::MemoryKind kind = device ? exec::MemoryKind::UserDevice : exec::MemoryKind::Host;
  KernelTimer timer(exec::kUnpackTime);
  exec::unpack_prefix(type.plan, staged, received, count, buf, kind);
  if (as_receive) count_call(kRecvUnpacked, kRecvBytes, static_cast<uint64_t>(received));
}

int64_t received_bytes(const MPI_Status& status, int error) {
  if (error != MPI_SUCCESS) {
    int error_class = MPI_ERR_OTHER;
    PMPI_Error_class(error, &error_class);
    if (error_class != MPI_ERR_TRUNCATE || !mpi::host_delivers_truncated_bytes()) return 0;
  }
  int cancelled = 0;
  PMPI_Test_cancelled(&status, &cancelled);
  if (cancelled) return 0;
  MPI_Count bytes = 0;
  // Not const in every MPI's prototype (SimGrid's SMPI).
  PMPI_Get_elements_x(const_cast<MPI_Status*>(&status), MPI_BYTE, &bytes);
  return bytes == MPI_UNDEFINED ? 0 : static_cast<int64_t>(bytes);
}

}  // namespace loom::transport
