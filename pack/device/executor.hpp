// Executors for buffers that are not plain host memory. Each runs a Plan's device Program
// (pack/device/program.hpp) on its own kind of memory, asynchronously on a stream:
//   cuda_executor()      NVIDIA GPUs (built with LOOM_CUDA; a stub that is never available
//                        otherwise),
//   emulated_executor()  host memory standing in for device memory, running the same thread
//                        bodies one after the other, so that the executor tests run on
//                        machines without a GPU.
// The CPU executor is the Plan itself (Plan::pack/unpack).
#pragma once

#include <cstdint>
#include <string>

namespace loom::pack {
class Plan;
}

namespace loom::pack::device {

class Program;

// Where a buffer lives, as far as an executor can tell.
enum class Memory : uint8_t { Host, Device, Managed, HostPinned };
const char* memory_name(Memory m);

using Stream = void*;  // cudaStream_t for CUDA; null: the executor's own stream

struct Status {
  int code = 0;  // 0: success
  std::string message;
  explicit operator bool() const { return code == 0; }
  static Status error(std::string what) { return {1, std::move(what)}; }
};

class Executor {
 public:
  virtual ~Executor() = default;
  virtual const char* name() const = 0;
  // False for a stub, or when no device is present (then every call fails with a message).
  virtual bool available() const = 0;
  virtual std::string device_name() const = 0;
  virtual Memory locate(const void* p) const = 0;

  // Enqueue the pack of `count` elements at `user` into `packed` (count * size bytes), or
  // the reverse, on `stream`; return at once. Both buffers are this executor's memory.
  virtual Status pack(const Program& program, const void* user, int64_t count, void* packed,
                      Stream stream) = 0;
  virtual Status unpack(const Program& program, const void* packed, int64_t count, void* user,
                        Stream stream) = 0;
  virtual Status synchronize(Stream stream) = 0;

  // The executor's memory, for tests and benchmarks (null on failure).
  virtual void* allocate(int64_t bytes) = 0;
  virtual void release(void* p) = 0;
  virtual Status to_device(void* dst, const void* host_src, int64_t bytes) = 0;
  virtual Status to_host(void* host_dst, const void* src, int64_t bytes) = 0;
  // `height` rows of `width` bytes from `src` (rows `src_pitch` apart) to `dst` (rows
  // `dst_pitch` apart), either side in device or host memory, moved by the copy engines
  // rather than a kernel (cudaMemcpy2D); blocks until done. Pitches are at least `width`.
  virtual Status copy_rows(void* dst, int64_t dst_pitch, const void* src, int64_t src_pitch,
                           int64_t width, int64_t height) = 0;

  // Makes host memory directly addressable by this executor's kernels (then locate() says
  // HostPinned), so that a pack writes straight into it ("one-shot") and an unpack reads
  // straight from it; unpin undoes it before the memory is freed.
  virtual Status pin(void* p, int64_t bytes) = 0;
  virtual void unpin(void* p) = 0;
};

Executor& emulated_executor();
Executor& cuda_executor();
bool cuda_built();  // whether this build has the CUDA executor

// Pack and unpack with a Plan's device program, blocking until done.
Status pack_sync(Executor& e, const Plan& plan, const void* user, int64_t count, void* packed);
Status unpack_sync(Executor& e, const Plan& plan, const void* packed, int64_t count, void* user);

}  // namespace loom::pack::device
