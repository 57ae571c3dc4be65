// The CUDA executor: one kernel launch per segment of a device Program and one for its block
// table, on Loom's own stream unless the caller names one. Nothing is allocated per call; the
// table is uploaded once per program. Loom's stream is not the user's, but it is ordered after
// the legacy default stream's work: a buffer the application filled with a plain cudaMemcpy
// from pageable memory (which may return before its DMA lands) is complete before Loom reads or
// writes it, as a host MPI would see it.
#include <cuda_runtime.h>

#include <algorithm>
#include <mutex>
#include <vector>

#include "pack/device/copy_body.hpp"
#include "pack/device/executor.hpp"
#include "pack/device/program.hpp"
#include "pack/device/row_copies.hpp"

namespace loom::pack::device {

namespace {

constexpr int kThreadsPerBlock = 256;
constexpr int kTableLanes = 32;  // one warp per block of a table whose lengths differ

template <int W, bool kPack, bool kIndex32, int kDims>
__global__ void __launch_bounds__(kThreadsPerBlock)
    segment_kernel(const SegmentArgs a, char* user, char* packed, int64_t threads) {
  for (int64_t t = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; t < threads;
       t += int64_t{gridDim.x} * blockDim.x)
    copy_segment_thread<W, kPack, kIndex32, kDims>(a, user, packed, t);
}

template <int W, bool kPack>
__global__ void __launch_bounds__(kThreadsPerBlock)
    uniform_table_kernel(const TableArgs t, TableView v, char* user, char* packed,
                         int64_t threads) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < threads;
       i += int64_t{gridDim.x} * blockDim.x)
    copy_uniform_table_thread<W, kPack>(t, v, user, packed, i);
}

template <int W, bool kPack>
__global__ void __launch_bounds__(kThreadsPerBlock)
    table_kernel(const TableArgs t, TableView v, char* user, char* packed, int64_t blocks) {
  const int lane = threadIdx.x % kTableLanes;
  const int64_t warps = int64_t{gridDim.x} * (blockDim.x / kTableLanes);
  for (int64_t b = (blockIdx.x * int64_t{blockDim.x} + threadIdx.x) / kTableLanes; b < blocks;
       b += warps)
    copy_table_block<W, kPack>(t, v, user, packed, b, lane, kTableLanes);
}

Status check(cudaError_t rc, const char* what) {
  if (rc == cudaSuccess) return {};
  return Status::error(std::string(what) + ": " + cudaGetErrorString(rc));
}

class CudaExecutor final : public Executor {
 public:
  const char* name() const override { return "cuda"; }

  bool available() const override { return init(); }

  std::string device_name() const override {
    if (!init()) return "none (" + init_error_ + ")";
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, device_) != cudaSuccess) return "unknown";
    return prop.name;
  }

  Memory locate(const void* p) const override {
    if (!init()) return Memory::Host;
    cudaPointerAttributes attr{};
    if (cudaPointerGetAttributes(&attr, p) != cudaSuccess) {
      cudaGetLastError();  // unregistered host memory is not an error worth keeping
      return Memory::Host;
    }
    switch (attr.type) {
      case cudaMemoryTypeDevice:
        return Memory::Device;
      case cudaMemoryTypeManaged:
        return Memory::Managed;
      case cudaMemoryTypeHost:
        return Memory::HostPinned;
      default:
        return Memory::Host;
    }
  }

  Status pack(const Program& program, const void* user, int64_t count, void* packed,
              Stream stream) override {
    return run<true>(program, const_cast<char*>(static_cast<const char*>(user)), count,
                     static_cast<char*>(packed), stream);
  }
  Status unpack(const Program& program, const void* packed, int64_t count, void* user,
                Stream stream) override {
    return run<false>(program, static_cast<char*>(user), count,
                      const_cast<char*>(static_cast<const char*>(packed)), stream);
  }
  Status synchronize(Stream stream) override {
    if (!init()) return unavailable();
    return check(cudaStreamSynchronize(pick(stream)), "cudaStreamSynchronize");
  }

  void* allocate(int64_t bytes) override {
    if (!init()) return nullptr;
    void* p = nullptr;
    if (cudaMalloc(&p, static_cast<size_t>(std::max<int64_t>(bytes, 1))) != cudaSuccess)
      return nullptr;
    return p;
  }
  void release(void* p) override {
    if (p && init()) cudaFree(p);
  }
  Status to_device(void* dst, const void* src, int64_t bytes) override {
    if (!init()) return unavailable();
    RowCopy rows[2];
    const int parts = bytes < kRowCopyBelow ? contiguous_as_rows(bytes, rows) : 0;
    if (parts == 0) return copy(dst, src, bytes, cudaMemcpyHostToDevice);
    for (int i = 0; i < parts; ++i) {
      const RowCopy& r = rows[i];
      const auto w = static_cast<size_t>(r.width);
      Status s =
          check(cudaMemcpy2DAsync(static_cast<char*>(dst) + r.offset, w,
                                  static_cast<const char*>(src) + r.offset, w, w,
                                  static_cast<size_t>(r.height), cudaMemcpyHostToDevice, stream_),
                "cudaMemcpy2DAsync");
      if (!s) return s;
    }
    return check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
  }
  Status to_host(void* dst, const void* src, int64_t bytes) override {
    if (!init()) return unavailable();
    return copy(dst, src, bytes, cudaMemcpyDeviceToHost);
  }
  Status copy_rows(void* dst, int64_t dst_pitch, const void* src, int64_t src_pitch, int64_t width,
                   int64_t height) override {
    if (!init()) return unavailable();
    Status s = check(cudaMemcpy2DAsync(dst, static_cast<size_t>(dst_pitch), src,
                                       static_cast<size_t>(src_pitch), static_cast<size_t>(width),
                                       static_cast<size_t>(height), cudaMemcpyDefault, stream_),
                     "cudaMemcpy2DAsync");
    return s ? check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize") : s;
  }
  // Portable and mapped: every device's kernels reach it at the same address (UVA).
  Status pin(void* p, int64_t bytes) override {
    if (!init()) return unavailable();
    return check(cudaHostRegister(p, static_cast<size_t>(bytes),
                                  cudaHostRegisterPortable | cudaHostRegisterMapped),
                 "cudaHostRegister");
  }
  void unpin(void* p) override {
    if (init()) cudaHostUnregister(p);
  }

 private:
  bool init() const {
    std::call_once(once_, [this] {
      int devices = 0;
      cudaError_t rc = cudaGetDeviceCount(&devices);
      if (rc != cudaSuccess || devices == 0) {
        init_error_ = rc != cudaSuccess ? cudaGetErrorString(rc) : "no CUDA device";
        cudaGetLastError();
        return;
      }
      cudaGetDevice(&device_);
      if (cudaStreamCreateWithFlags(&stream_, cudaStreamDefault) != cudaSuccess) {
        init_error_ = "cannot create a stream";
        return;
      }
      ready_ = true;
    });
    return ready_;
  }

  Status unavailable() const { return Status::error("CUDA executor: " + init_error_); }

  // On Loom's stream (ordered after the legacy default stream, like every Loom operation),
  // then waited for.
  Status copy(void* dst, const void* src, int64_t bytes, cudaMemcpyKind kind) {
    Status s = check(cudaMemcpyAsync(dst, src, static_cast<size_t>(bytes), kind, stream_),
                     "cudaMemcpyAsync");
    return s ? check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize") : s;
  }
  cudaStream_t pick(Stream s) const { return s ? static_cast<cudaStream_t>(s) : stream_; }

  unsigned grid_for(int64_t threads) const {
    const int64_t blocks = (threads + kThreadsPerBlock - 1) / kThreadsPerBlock;
    // One pass, a thread per unit of work: a capped grid with looping threads unpacked slower
    // (docs/gpu.md, "The executor"). Threads loop only beyond the grid's limit.
    return static_cast<unsigned>(std::clamp<int64_t>(blocks, 1, int64_t{INT32_MAX}));
  }

  template <bool kPack>
  Status run(const Program& program, char* user, int64_t count, char* packed, Stream stream) {
    if (!init()) return unavailable();
    if (count <= 0 || program.size() == 0) return {};
    const cudaStream_t s = pick(stream);
    if (program.dense()) {
      char* u = user + program.dense_disp();
      const size_t bytes = static_cast<size_t>(count * program.size());
      return check(kPack ? cudaMemcpyAsync(packed, u, bytes, cudaMemcpyDefault, s)
                         : cudaMemcpyAsync(u, packed, bytes, cudaMemcpyDefault, s),
                   "cudaMemcpyAsync");
    }
    thread_local std::vector<SegmentArgs> args;
    program.segment_args(user, count, packed, &args);
    for (const SegmentArgs& a : args) {
      const int64_t threads = segment_threads(a);
      with_word(a.word, [&]<int W>() {
        with_dims(a, [&]<int D>() {
          const unsigned grid = grid_for(threads);
          if (a.index32)
            segment_kernel<W, kPack, true, D>
                <<<grid, kThreadsPerBlock, 0, s>>>(a, user, packed, threads);
          else
            segment_kernel<W, kPack, false, D>
                <<<grid, kThreadsPerBlock, 0, s>>>(a, user, packed, threads);
        });
      });
    }
    if (!program.table().empty()) {
      const void* table = program.executor_table([](const BlockTable& t) {
        const size_t n = t.len.size();
        void* d = nullptr;
        if (cudaMalloc(&d, 3 * n * sizeof(int64_t)) != cudaSuccess)
          return std::shared_ptr<const void>();
        auto* p = static_cast<int64_t*>(d);
        cudaMemcpy(p, t.user_disp.data(), n * sizeof(int64_t), cudaMemcpyHostToDevice);
        cudaMemcpy(p + n, t.len.data(), n * sizeof(int64_t), cudaMemcpyHostToDevice);
        cudaMemcpy(p + 2 * n, t.packed_disp.data(), n * sizeof(int64_t), cudaMemcpyHostToDevice);
        return std::shared_ptr<const void>(d,
                                           [](const void* q) { cudaFree(const_cast<void*>(q)); });
      });
      if (!table) return Status::error("CUDA executor: cannot upload the block table");
      const auto* base = static_cast<const int64_t*>(table);
      const int64_t n = static_cast<int64_t>(program.table().len.size());
      const TableView view{base, base + n, base + 2 * n};
      const TableArgs t = program.table_args(user, count, packed);
      with_word(t.word, [&]<int W>() {
        if (t.uniform_len > 0) {
          const int64_t threads = uniform_table_threads(t);
          uniform_table_kernel<W, kPack>
              <<<grid_for(threads), kThreadsPerBlock, 0, s>>>(t, view, user, packed, threads);
        } else {
          const int64_t blocks = t.entries * t.count;
          table_kernel<W, kPack><<<grid_for(blocks * kTableLanes), kThreadsPerBlock, 0, s>>>(
              t, view, user, packed, blocks);
        }
      });
    }
    return check(cudaGetLastError(), "pack kernel launch");
  }

  mutable std::once_flag once_;
  mutable bool ready_ = false;
  mutable std::string init_error_;
  mutable int device_ = 0;
  mutable cudaStream_t stream_ = nullptr;
};

}  // namespace

Executor& cuda_executor() {
  static CudaExecutor executor;
  return executor;
}

bool cuda_built() {
  return true;
}

}  // namespace loom::pack::device
