// The executor seam: every pack and unpack in Loom goes through pack() and unpack() here, with
// the memory kind of the buffers involved. Host memory runs the plan's CPU kernels (pack/, the
// ISA chosen by LOOM_ISA); device memory runs the plan's device program (pack/device/) on the
// device executor LOOM_DEVICE chose (exec/device_memory.hpp): CUDA, or the emulated device in
// tests. A new executor (another GPU vendor, a DMA engine) is one more MemoryKind and one more
// branch here; its program is compiled from the same Plan.
#pragma once

#include <algorithm>
#include <cstdint>

#include "exec/device_memory.hpp"
#include "pack/plan.hpp"
#include "runtime/counters.hpp"

namespace loom::exec {

enum class MemoryKind : uint8_t {
  Host,        // both buffers host memory: the CPU executor
  Device,      // either may be device memory: each buffer is looked up
  UserDevice,  // the user's buffer is device memory and the packed one host memory (staging)
};

// Time inside the pack and unpack kernels, wherever they run (LOOM_STATS=1 only).
inline const runtime::Counter kPackTime =
    runtime::register_counter("pack", "kernel time", "pack", runtime::Unit::Nanoseconds);
inline const runtime::Counter kUnpackTime =
    runtime::register_counter("pack", "kernel time", "unpack", runtime::Unit::Nanoseconds);
inline const bool kPackFormat = runtime::format_area("pack", {20});

// Device when either buffer is device memory (one load decides where no device is possible).
[[gnu::always_inline]] inline MemoryKind memory_kind(const void* a, const void* b = nullptr) {
  return device_memory(a) || device_memory(b) ? MemoryKind::Device : MemoryKind::Host;
}

// Packs `count` elements of `plan` at `user` into `out`, or unpacks the reverse. Blocking.
[[gnu::always_inline]] inline void pack(const pack::Plan& plan, const void* user, int64_t count,
                                        void* out, MemoryKind kind) {
  if (kind == MemoryKind::Host)
    plan.pack(user, count, out);
  else if (kind == MemoryKind::UserDevice)
    pack_from_device(plan, user, count, out);
  else
    pack_between(plan, user, count, out);
}
[[gnu::always_inline]] inline void unpack(const pack::Plan& plan, const void* in, int64_t count,
                                          void* user, MemoryKind kind) {
  if (kind == MemoryKind::Host)
    plan.unpack(in, count, user);
  else if (kind == MemoryKind::UserDevice)
    unpack_to_device(plan, in, count, user);
  else
    unpack_between(plan, in, count, user);
}

// Unpacks the first `bytes` packed bytes of elements of `plan` at `in` into at most `count`
// elements at `user`. Where the bytes end inside an element, only the places of that element's
// bytes are written: the rest of it is neither read nor written (MPI changes only the received
// entries of a receive buffer, and the buffer may end there).
inline void unpack_prefix(const pack::Plan& plan, const void* in, int64_t bytes, int64_t count,
                          void* user, MemoryKind kind) {
  const int64_t size = plan.size();
  if (size <= 0 || bytes <= 0 || count <= 0) return;
  const int64_t whole = std::min(bytes / size, count);
  unpack(plan, in, whole, user, kind);
  const int64_t rest = bytes - whole * size;
  if (whole == count || rest <= 0) return;
  // `user` may be MPI_BOTTOM (null): its address arithmetic goes through uintptr_t.
  void* partial = reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(user) +
                                          static_cast<uintptr_t>(whole * plan.extent()));
  unpack(plan.prefix(rest), static_cast<const char*>(in) + whole * size, 1, partial, kind);
}

}  // namespace loom::exec
