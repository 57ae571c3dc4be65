#include "exec/device_memory.hpp"

#include "base/env.hpp"

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "pack/device/executor.hpp"
#include "pack/device/program.hpp"
#include "pack/plan.hpp"
#include "runtime/counters.hpp"

namespace loom::exec {
using namespace loom::runtime;  // NOLINT: the layers below

bool device_buffers_possible = false;

namespace {

using pack::device::Executor;
using pack::device::Memory;

Executor* active = nullptr;

// Buffers in device memory packed, unpacked or copied through the device executor, and their
// bytes; the line appears only where device support is on.
const Counter kStaged = register_counter("device", "", "staged");
const Counter kStagedBytes = register_counter("device", "", "bytes");
std::string executor_text() {
  return std::string("executor=") + device_support_name();
}
bool device_support_on() {
  return std::strcmp(device_support_name(), "off") != 0;
}
const bool kDeviceFormat = format_area("device", {60, executor_text, nullptr, device_support_on});

bool is_device(Memory m) {
  return m == Memory::Device || m == Memory::Managed;
}

// Device scratch for one thread's transfers, kept and grown: device allocations are slow.
class Scratch {
 public:
  ~Scratch() {
    if (data_ && active) active->release(data_);
  }
  char* get(int64_t bytes) {
    if (bytes > size_) {
      if (data_) active->release(data_);
      size_ = std::max<int64_t>(bytes, 2 * size_);
      data_ = static_cast<char*>(active->allocate(size_));
      if (!data_) {
        std::fprintf(stderr, "loom: cannot allocate %lld bytes of %s device memory\n",
                     static_cast<long long>(size_), active->name());
        std::abort();
      }
    }
    return data_;
  }

 private:
  char* data_ = nullptr;
  int64_t size_ = 0;
};

Scratch& scratch() {
  static thread_local Scratch s;
  return s;
}

void must(const pack::device::Status& s, const char* what) {
  if (s) return;
  std::fprintf(stderr, "loom: device %s failed: %s\n", what, s.message.c_str());
  std::abort();
}

}  // namespace

bool device_memory_lookup(const void* p) {
  return is_device(active->locate(p));
}

void start_device_support() {
  static constexpr base::EnvVar kDevice{"LOOM_DEVICE", "auto",
                                        "device buffers: auto, cuda, emulated or off"};
  const char* mode = base::read(kDevice);
  if (!mode) mode = "auto";
  Executor* chosen = nullptr;
  if (!std::strcmp(mode, "emulated")) {
    chosen = &pack::device::emulated_executor();
  } else if (!std::strcmp(mode, "cuda")) {
    chosen = &pack::device::cuda_executor();
  } else if (!std::strcmp(mode, "auto")) {
    // Only a process that already runs CUDA can hand Loom device memory; asking the driver
    // in any other would start it (time and memory on every rank of a CPU job).
    if (pack::device::cuda_built()) {
      if (void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD)) {
        dlclose(driver);
        chosen = &pack::device::cuda_executor();
      }
    }
  } else if (std::strcmp(mode, "off") != 0) {
    base::warn_bad_value(kDevice, mode, "is not one of auto, cuda, emulated, off", "using off");
  }
  if (chosen && !chosen->available()) chosen = nullptr;
  active = chosen;
  device_buffers_possible = chosen != nullptr;
}

void pin_for_device(void* p, size_t bytes) {
  if (active) active->pin(p, static_cast<int64_t>(bytes));  // unpinned still works, slower
}

void unpin_for_device(void* p) {
  if (active) active->unpin(p);
}

const char* device_support_name() {
  return active ? active->name() : "off";
}

void pack_between(const pack::Plan& plan, const void* user, int64_t count, void* out) {
  const int64_t bytes = count * plan.size();
  if (bytes <= 0) return;
  const bool from_device = device_memory(user), to_device = device_memory(out);
  const pack::device::Program& program = plan.device_program();
  if (program.dense() && from_device != to_device) {  // one copy across, nothing to pack
    const char* at = static_cast<const char*>(user) + program.dense_disp();
    must(from_device ? active->to_host(out, at, bytes) : active->to_device(out, at, bytes), "copy");
  } else if (!from_device) {  // host data into device memory: packed by the CPU, then copied
    std::vector<char> packed(static_cast<size_t>(bytes));
    plan.pack(user, count, packed.data());
    must(active->to_device(out, packed.data(), bytes), "copy");
  } else if (to_device || active->locate(out) == Memory::HostPinned) {  // straight in
    must(pack::device::pack_sync(*active, plan, user, count, out), "pack");
  } else {
    char* staged = scratch().get(bytes);
    must(pack::device::pack_sync(*active, plan, user, count, staged), "pack");
    must(active->to_host(out, staged, bytes), "copy");
  }
  count_call(kStaged, kStagedBytes, static_cast<uint64_t>(bytes));
}

void unpack_between(const pack::Plan& plan, const void* in, int64_t count, void* user) {
  const int64_t bytes = count * plan.size();
  if (bytes <= 0) return;
  const bool from_device = device_memory(in), to_device = device_memory(user);
  const pack::device::Program& program = plan.device_program();
  if (program.dense() && from_device != to_device) {
    char* at = static_cast<char*>(user) + program.dense_disp();
    must(to_device ? active->to_device(at, in, bytes) : active->to_host(at, in, bytes), "copy");
  } else if (!to_device) {  // device bytes into host data: copied, then unpacked by the CPU
    std::vector<char> packed(static_cast<size_t>(bytes));
    must(active->to_host(packed.data(), in, bytes), "copy");
    plan.unpack(packed.data(), count, user);
  } else if (from_device || active->locate(in) == Memory::HostPinned) {  // straight from
    must(pack::device::unpack_sync(*active, plan, in, count, user), "unpack");
  } else {
    char* staged = scratch().get(bytes);
    must(active->to_device(staged, in, bytes), "copy");
    must(pack::device::unpack_sync(*active, plan, staged, count, user), "unpack");
  }
  count_call(kStaged, kStagedBytes, static_cast<uint64_t>(bytes));
}

}  // namespace loom::exec
