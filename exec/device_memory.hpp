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

// A device send that may travel as a host copy of the span its blocks reach, in the user's
// layout, for the host's own engine to send with the user's datatype: it moves by copies
// (LOOM_DEVICE_COPY_BELOW) and its span is at most 4 times its packed bytes. Sets the span's
// start relative to the buffer and its length.
bool host_copy_applies(const pack::Plan& plan, int64_t count, int64_t* span_lo,
                       int64_t* span_bytes);
// Copies `bytes` of device memory at `device` to host memory at `host` (pinned staging) for
// such a send; blocks until done.
void copy_span_to_host(const void* device, int64_t bytes, void* host);

// Packs `count` elements of `plan` at `user` into `out`, or unpacks the reverse, where either
// buffer may be device or host memory. Blocks until done.
void pack_between(const pack::Plan& plan, const void* user, int64_t count, void* out);
void unpack_between(const pack::Plan& plan, const void* in, int64_t count, void* user);
// The same where the caller knows that `user` is device memory and the other buffer host memory
// (staging): nothing is looked up again (each lookup is a driver call).
void pack_from_device(const pack::Plan& plan, const void* user, int64_t count, void* host_out);
void unpack_to_device(const pack::Plan& plan, const void* host_in, int64_t count, void* user);

// The emulated device's memory, whichever executor LOOM_DEVICE chose (loom.h's
// loom_emulated_device_alloc, _free and _copy). The copy goes either way between its memory
// and host memory, host to host too; false when the executor fails.
void* emulated_device_allocate(int64_t bytes);
void emulated_device_release(void* p);
bool emulated_device_copy(void* dst, const void* src, int64_t bytes);

}  // namespace loom::exec
