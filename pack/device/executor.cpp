#include "pack/device/executor.hpp"

#include <cstdlib>
#include <cstring>
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
class EmulatedExecutor final : public Executor {
 public:
  const char* name() const override { return "emulated"; }
  bool available() const override { return true; }
  std::string device_name() const override { return "host memory as an emulated device"; }
  Memory locate(const void*) const override { return Memory::Device; }

  Status pack(const Program& program, const void* user, int64_t count, void* packed,
              Stream) override {
    run<true>(program, const_cast<char*>(static_cast<const char*>(user)), count,
              static_cast<char*>(packed));
    return {};
  }
  Status unpack(const Program& program, const void* packed, int64_t count, void* user,
                Stream) override {
    run<false>(program, static_cast<char*>(user), count,
               const_cast<char*>(static_cast<const char*>(packed)));
    return {};
  }
  Status synchronize(Stream) override { return {}; }
  void* allocate(int64_t bytes) override {
    return std::malloc(static_cast<size_t>(bytes > 0 ? bytes : 1));
  }
  void release(void* p) override { std::free(p); }
  Status to_device(void* dst, const void* src, int64_t bytes) override {
    std::memcpy(dst, src, static_cast<size_t>(bytes));
    return {};
  }
  Status to_host(void* dst, const void* src, int64_t bytes) override {
    std::memcpy(dst, src, static_cast<size_t>(bytes));
    return {};
  }

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
        const int64_t threads = segment_threads(a);
        for (int64_t t = 0; t < threads; ++t) {
          if (a.index32)
            copy_segment_thread<W, kPack, true>(a, user, packed, t);
          else
            copy_segment_thread<W, kPack, false>(a, user, packed, t);
        }
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
