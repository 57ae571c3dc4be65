#include "exec/device_memory.hpp"

#include "base/bytes.hpp"
#include "base/env.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <cstdint>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "pack/device/executor.hpp"
#include "pack/device/program.hpp"
#include "pack/plan.hpp"
#include "runtime/counters.hpp"

namespace loom::exec {
using namespace loom::runtime;  // NOLINT: the layers below

bool device_buffers_possible = false;
bool device_aware_host = false;

namespace {

using pack::device::Executor;
using pack::device::Memory;

Executor* active = nullptr;

// Buffers in device memory packed, unpacked or copied through the device executor, and their
// bytes; the line appears only where device support is on.
const Counter kStaged = register_counter("device", "", "staged");
const Counter kStagedBytes = register_counter("device", "", "bytes");
// Those of them moved by the copy engines alone (no pack kernel): small messages.
const Counter kByCopies = register_counter("device", "", "copied");
// Sends among those handed to the host as a host copy of their span (host_copy_applies).
const Counter kSpans = register_counter("device", "", "spans");
std::string executor_text() {
  return std::string("executor=") + device_support_name() +
         (device_aware_host ? " host=cuda-aware" : " host=not-cuda-aware");
}
bool device_support_on() {
  return std::strcmp(device_support_name(), "off") != 0;
}
const bool kDeviceFormat = format_area("device", {60, executor_text, nullptr, device_support_on});

// A device message of fewer packed bytes than this, and of at most kCopyBlocks blocks, moves by
// copies instead of pack kernels: there a kernel's launch costs more than the copies, most of
// all when ranks share a GPU, and the copies' cost grows with the blocks (docs/gpu.md, "Small
// messages": the crossovers measured on an H100). 0: always kernels.
int64_t copy_below = 0;
constexpr int64_t kDefaultCopyBelow = 2 << 20;
constexpr int64_t kCopyBlocks = 32768;
// A send copies the span its blocks reach to the host and packs it there only when that span is
// at most this many times the packed bytes.
constexpr int64_t kSpanPerPacked = 4;

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

// Pinned host memory for one thread's span copies, kept and grown (its old contents are not
// kept: each use overwrites what it reads).
class HostScratch {
 public:
  ~HostScratch() { release(); }
  char* get(int64_t bytes) {
    if (bytes > size_) {
      release();
      size_ = std::max<int64_t>(bytes, 2 * size_);
      data_ = std::make_unique_for_overwrite<char[]>(static_cast<size_t>(size_));
      if (active) active->pin(data_.get(), size_);
      pinned_ = active != nullptr;
    }
    return data_.get();
  }

 private:
  void release() {
    if (pinned_ && active) active->unpin(data_.get());
    pinned_ = false;
  }
  std::unique_ptr<char[]> data_;
  int64_t size_ = 0;
  bool pinned_ = false;
};

HostScratch& host_scratch() {
  static thread_local HostScratch s;
  return s;
}

bool by_copies(const pack::device::Program& program, int64_t count, int64_t bytes) {
  return bytes < copy_below && count * program.blocks_per_element() <= kCopyBlocks;
}

// The span a message's blocks reach, where it is small enough to copy whole to the host.
bool span_to_copy(const pack::device::Program& program, int64_t count, int64_t bytes,
                  pack::device::Span* span) {
  *span = program.user_span(count);
  return span->bytes() <= kSpanPerPacked * bytes;
}

// Rows a copy engine can take: cudaMemcpy2D limits pitches to what an int holds.
bool copyable_rows(const pack::device::Program& program, int64_t count, pack::device::Rows* rows) {
  return program.as_rows(count, rows) && rows->pitch <= INT32_MAX;
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

void start_device_support(bool host_aware) {
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
  device_aware_host = device_buffers_possible && host_aware;

  static constexpr base::EnvVar kCopyBelow{
      "LOOM_DEVICE_COPY_BELOW", "2M",
      "device messages of fewer packed bytes (and at most 32768 blocks) move by copies, not pack "
      "kernels (0: never)"};
  copy_below = kDefaultCopyBelow;
  if (const char* text = base::read(kCopyBelow); text && !base::parse_bytes(text, &copy_below)) {
    base::warn_bad_value(kCopyBelow, text, "is not a byte count", "using 2M");
    copy_below = kDefaultCopyBelow;
  }
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

namespace {

// A small message from device memory into host memory without a kernel: the span its blocks
// reach copied to the host and packed there by the CPU, when that span is not much larger than
// the message; else its rows, where it has the form of one 2-D copy. False: neither applies.
bool pack_by_copies(const pack::Plan& plan, const pack::device::Program& program, const void* user,
                    int64_t count, void* out) {
  const int64_t bytes = count * plan.size();
  pack::device::Span span;
  if (span_to_copy(program, count, bytes, &span)) {
    char* copy = host_scratch().get(span.bytes());
    must(active->to_host(copy, static_cast<const char*>(user) + span.lo, span.bytes()), "copy");
    plan.pack(copy - span.lo, count, out);
    return true;
  }
  pack::device::Rows rows;
  if (!copyable_rows(program, count, &rows)) return false;
  must(active->copy_rows(out, rows.width, static_cast<const char*>(user) + rows.user_disp,
                         rows.pitch, rows.width, rows.height),
       "copy");
  return true;
}

}  // namespace

bool host_copy_applies(const pack::Plan& plan, int64_t count, int64_t* span_lo,
                       int64_t* span_bytes) {
  const int64_t bytes = count * plan.size();
  if (bytes <= 0 || plan.dense()) return false;
  const pack::device::Program& program = plan.device_program();
  if (!by_copies(program, count, bytes)) return false;
  pack::device::Span span;
  if (!span_to_copy(program, count, bytes, &span)) return false;
  *span_lo = span.lo;
  *span_bytes = span.bytes();
  return true;
}

void copy_span_to_host(const void* device, int64_t bytes, void* host) {
  must(active->to_host(host, device, bytes), "copy");
  count_call(kStaged, kStagedBytes, static_cast<uint64_t>(bytes));
  runtime::count(kByCopies);
  runtime::count(kSpans);
}

namespace {

// Where the caller knows both sides (from_device: `user` is device memory; to_device: `out`).
void pack_sides(const pack::Plan& plan, const void* user, int64_t count, void* out,
                bool from_device, bool to_device) {
  const int64_t bytes = count * plan.size();
  if (bytes <= 0) return;
  const pack::device::Program& program = plan.device_program();
  if (program.dense() && from_device != to_device) {  // one copy across, nothing to pack
    const char* at = static_cast<const char*>(user) + program.dense_disp();
    must(from_device ? active->to_host(out, at, bytes) : active->to_device(out, at, bytes), "copy");
  } else if (!from_device) {  // host data into device memory: packed by the CPU, then copied
    std::vector<char> packed(static_cast<size_t>(bytes));
    plan.pack(user, count, packed.data());
    must(active->to_device(out, packed.data(), bytes), "copy");
  } else if (!to_device && by_copies(program, count, bytes) &&
             pack_by_copies(plan, program, user, count, out)) {
    runtime::count(kByCopies);
  } else if (to_device || active->locate(out) == Memory::HostPinned) {  // straight in
    must(pack::device::pack_sync(*active, plan, user, count, out), "pack");
  } else {
    char* staged = scratch().get(bytes);
    must(pack::device::pack_sync(*active, plan, user, count, staged), "pack");
    must(active->to_host(out, staged, bytes), "copy");
  }
  count_call(kStaged, kStagedBytes, static_cast<uint64_t>(bytes));
}

void unpack_sides(const pack::Plan& plan, const void* in, int64_t count, void* user,
                  bool from_device, bool to_device) {
  const int64_t bytes = count * plan.size();
  if (bytes <= 0) return;
  const pack::device::Program& program = plan.device_program();
  pack::device::Rows rows;
  if (program.dense() && from_device != to_device) {
    char* at = static_cast<char*>(user) + program.dense_disp();
    must(to_device ? active->to_device(at, in, bytes) : active->to_host(at, in, bytes), "copy");
  } else if (!to_device) {  // device bytes into host data: copied, then unpacked by the CPU
    std::vector<char> packed(static_cast<size_t>(bytes));
    must(active->to_host(packed.data(), in, bytes), "copy");
    plan.unpack(packed.data(), count, user);
  } else if (!from_device && by_copies(program, count, bytes) &&
             copyable_rows(program, count, &rows)) {
    must(active->copy_rows(static_cast<char*>(user) + rows.user_disp, rows.pitch, in, rows.width,
                           rows.width, rows.height),
         "copy");
    runtime::count(kByCopies);
  } else if (from_device || active->locate(in) == Memory::HostPinned) {  // straight from
    must(pack::device::unpack_sync(*active, plan, in, count, user), "unpack");
  } else {
    char* staged = scratch().get(bytes);
    must(active->to_device(staged, in, bytes), "copy");
    must(pack::device::unpack_sync(*active, plan, staged, count, user), "unpack");
  }
  count_call(kStaged, kStagedBytes, static_cast<uint64_t>(bytes));
}

}  // namespace

void pack_between(const pack::Plan& plan, const void* user, int64_t count, void* out) {
  pack_sides(plan, user, count, out, device_memory(user), device_memory(out));
}
void unpack_between(const pack::Plan& plan, const void* in, int64_t count, void* user) {
  unpack_sides(plan, in, count, user, device_memory(in), device_memory(user));
}
void pack_from_device(const pack::Plan& plan, const void* user, int64_t count, void* host_out) {
  pack_sides(plan, user, count, host_out, true, false);
}
void unpack_to_device(const pack::Plan& plan, const void* host_in, int64_t count, void* user) {
  unpack_sides(plan, host_in, count, user, false, true);
}

void* emulated_device_allocate(int64_t bytes) {
  return pack::device::emulated_executor().allocate(bytes);
}
void emulated_device_release(void* p) {
  pack::device::emulated_executor().release(p);
}
bool emulated_device_copy(void* dst, const void* src, int64_t bytes) {
  // The executor opens whichever side is its memory; host-to-host is a plain copy too.
  return static_cast<bool>(pack::device::emulated_executor().to_host(dst, src, bytes));
}

}  // namespace loom::exec
