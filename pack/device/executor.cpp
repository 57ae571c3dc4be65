#include "pack/device/executor.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <iterator>
#include <map>
#include <mutex>
#include <vector>

#include "pack/device/copy_body.hpp"
#include "pack/device/program.hpp"
#include "pack/plan.hpp"

namespace loom::pack::device {

const char* memory_name(Memory m) {
  switch (m) {
    case Memory::Host:
      return "host";
    case Memory::Device:
      return "device";
    case Memory::Managed:
      return "managed";
    case Memory::HostPinned:
      return "host-pinned";
  }
  return "?";
}

Status pack_sync(Executor& e, const Plan& plan, const void* user, int64_t count, void* packed) {
  Status s = e.pack(plan.device_program(), user, count, packed, nullptr);
  return s ? e.synchronize(nullptr) : s;
}

Status unpack_sync(Executor& e, const Plan& plan, const void* packed, int64_t count, void* user) {
  Status s = e.unpack(plan.device_program(), packed, count, user, nullptr);
  return s ? e.synchronize(nullptr) : s;
}

namespace {

// The threads of a kernel launch, one after another. Lanes of the per-block table kernel
// run in reverse order so that a body relying on lane order would fail here first.
//
// Its memory is as out of reach of the CPU as a GPU's: pages without access rights, opened
// only while one of its own operations runs. A host MPI (or a CPU copy in Loom) that touches
// an emulated device buffer faults, so the interposer's device paths are checked on machines
// without a GPU. Operations are serialised.
class EmulatedExecutor final : public Executor {
 public:
  const char* name() const override { return "emulated"; }
  bool available() const override { return true; }
  std::string device_name() const override { return "host memory as an emulated device"; }
  Memory locate(const void* p) const override {
    std::lock_guard<std::mutex> lock(mutex_);
    if (find(p)) return Memory::Device;
    const auto at = reinterpret_cast<uintptr_t>(p);
    auto it = pinned_.upper_bound(at);
    if (it != pinned_.begin() && at < std::prev(it)->first + std::prev(it)->second)
      return Memory::HostPinned;
    return Memory::Host;
  }

  Status pack(const Program& program, const void* user, int64_t count, void* packed,
              Stream) override {
    Opened open(*this, {user, packed});
    run<true>(program, const_cast<char*>(static_cast<const char*>(user)), count,
              static_cast<char*>(packed));
    return {};
  }
  Status unpack(const Program& program, const void* packed, int64_t count, void* user,
                Stream) override {
    Opened open(*this, {user, packed});
    run<false>(program, static_cast<char*>(user), count,
               const_cast<char*>(static_cast<const char*>(packed)));
    return {};
  }
  Status synchronize(Stream) override { return {}; }
  void* allocate(int64_t bytes) override {
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    const size_t length = (static_cast<size_t>(bytes > 0 ? bytes : 1) + page - 1) / page * page;
    void* p = mmap(nullptr, length, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return nullptr;
    std::lock_guard<std::mutex> lock(mutex_);
    allocations_[reinterpret_cast<uintptr_t>(p)] = length;
    return p;
  }
  void release(void* p) override {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = allocations_.find(reinterpret_cast<uintptr_t>(p));
    if (it == allocations_.end()) return;
    munmap(p, it->second);
    allocations_.erase(it);
  }
  Status to_device(void* dst, const void* src, int64_t bytes) override {
    Opened open(*this, {dst, src});
    std::memcpy(dst, src, static_cast<size_t>(bytes));
    return {};
  }
  Status to_host(void* dst, const void* src, int64_t bytes) override {
    Opened open(*this, {dst, src});
    std::memcpy(dst, src, static_cast<size_t>(bytes));
    return {};
  }
  Status copy_rows(void* dst, int64_t dst_pitch, const void* src, int64_t src_pitch, int64_t width,
                   int64_t height) override {
    Opened open(*this, {dst, src});
    for (int64_t r = 0; r < height; ++r)
      std::memcpy(static_cast<char*>(dst) + r * dst_pitch,
                  static_cast<const char*>(src) + r * src_pitch, static_cast<size_t>(width));
    return {};
  }
  // Pinned host memory stays open to everyone, as on a GPU.
  Status pin(void* p, int64_t bytes) override {
    std::lock_guard<std::mutex> lock(mutex_);
    pinned_[reinterpret_cast<uintptr_t>(p)] = static_cast<size_t>(bytes);
    return {};
  }
  void unpin(void* p) override {
    std::lock_guard<std::mutex> lock(mutex_);
    pinned_.erase(reinterpret_cast<uintptr_t>(p));
  }

 private:
  // The allocation holding `p`, as (start, length), or null.
  const std::pair<const uintptr_t, size_t>* find(const void* p) const {
    const auto at = reinterpret_cast<uintptr_t>(p);
    auto it = allocations_.upper_bound(at);
    if (it == allocations_.begin()) return nullptr;
    --it;
    return at < it->first + it->second ? &*it : nullptr;
  }

  // Opens the allocations behind `pointers` for one operation, under the executor's lock.
  class Opened {
   public:
    Opened(const EmulatedExecutor& e, std::initializer_list<const void*> pointers)
        : lock_(e.mutex_) {
      for (const void* p : pointers)
        if (const auto* a = e.find(p)) {
          mprotect(reinterpret_cast<void*>(a->first), a->second, PROT_READ | PROT_WRITE);
          open_.push_back(a);
        }
    }
    ~Opened() {
      for (const auto* a : open_) mprotect(reinterpret_cast<void*>(a->first), a->second, PROT_NONE);
    }
    Opened(const Opened&) = delete;
    Opened& operator=(const Opened&) = delete;

   private:
    std::lock_guard<std::mutex> lock_;
    std::vector<const std::pair<const uintptr_t, size_t>*> open_;
  };

  mutable std::mutex mutex_;
  std::map<uintptr_t, size_t> allocations_, pinned_;

 private:
  template <bool kPack>
  static void run(const Program& program, char* user, int64_t count, char* packed) {
    if (count <= 0 || program.size() == 0) return;
    const int64_t bytes = count * program.size();
    if (program.dense()) {
      char* u = user + program.dense_disp();
      kPack ? std::memcpy(packed, u, static_cast<size_t>(bytes))
            : std::memcpy(u, packed, static_cast<size_t>(bytes));
      return;
    }
    std::vector<SegmentArgs> args;
    program.segment_args(user, count, packed, &args);
    for (const SegmentArgs& a : args) {
      with_word(a.word, [&]<int W>() {
        with_dims(a, [&]<int D>() {
          const int64_t threads = segment_threads(a);
          for (int64_t t = 0; t < threads; ++t) {
            if (a.index32)
              copy_segment_thread<W, kPack, true, D>(a, user, packed, t);
            else
              copy_segment_thread<W, kPack, false, D>(a, user, packed, t);
          }
        });
      });
    }
    if (program.table().empty()) return;
    const TableArgs t = program.table_args(user, count, packed);
    const BlockTable& table = program.table();
    const TableView view{table.user_disp.data(), table.len.data(), table.packed_disp.data()};
    with_word(t.word, [&]<int W>() {
      if (t.uniform_len > 0) {
        const int64_t threads = uniform_table_threads(t);
        for (int64_t i = 0; i < threads; ++i)
          copy_uniform_table_thread<W, kPack>(t, view, user, packed, i);
      } else {
        constexpr int kLanes = 32;
        for (int64_t b = 0; b < t.entries * t.count; ++b)
          for (int lane = kLanes - 1; lane >= 0; --lane)
            copy_table_block<W, kPack>(t, view, user, packed, b, lane, kLanes);
      }
    });
  }
};

}  // namespace

Executor& emulated_executor() {
  static EmulatedExecutor executor;
  return executor;
}

}  // namespace loom::pack::device
