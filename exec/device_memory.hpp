// Buffers in device memory: a GPU's (the CUDA executor) or, for tests, the emulated
// device's (pack/device/executor.hpp). Loom takes the host MPI to be unaware of device
// memory (Debian's Open MPI and MPICH are): it moves every such buffer itself, with its device
// executor, and hands the host MPI only host memory. LOOM_DEVICE chooses (docs/gpu.md):
//   auto (default)  the CUDA executor, when this process has loaded the CUDA driver by
//                   MPI_Init (an application that touches CUDA only later sets cuda)
//   cuda            the CUDA executor whenever a GPU is present
//   emulated        the emulated device (its memory from loom_emulated_device_alloc)
//   off             every buffer is host memory to Loom
#pragma once

#include <cstddef>
#include <cstdint>

namespace loom::pack {
class Plan;
}

namespace loom::exec {

// Set at MPI_Init; false keeps every check below to one load.
extern bool device_buffers_possible;
bool device_memory_lookup(const void* p);
[[gnu::always_inline]] inline bool device_memory(const void* p) {
  return device_buffers_possible && p && device_memory_lookup(p);
}

// At MPI_Init, after the host's; `host_aware`: the host MPI reads device memory itself
// (mpi/quirks.hpp), so contiguous device buffers go to it untouched.
void start_device_support(bool host_aware);
const char* device_support_name();  // "cuda", "emulated" or "off"
// Device support is on and the host MPI reads device memory itself.
extern bool device_aware_host;

// Host memory the device executor reads and writes directly (staging for device buffers):
// pinned while device support is on, a no-op otherwise.
void pin_for_device(void* p, size_t bytes);
void unpin_for_device(void* p);

// Packs `count` elements of `plan` at `user` into `out`, or unpacks the reverse, where either
// buffer may be device or host memory. Blocks until done.
void pack_between(const pack::Plan& plan, const void* user, int64_t count, void* out);
void unpack_between(const pack::Plan& plan, const void* in, int64_t count, void* user);

}  // namespace loom::exec
