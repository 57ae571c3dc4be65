// Experiment (not product code): why unpacks of 64-byte blocks (every other block) reach only
// 75-81% of a device memcpy at 64 MiB on the H200. Each sample from a cold L2, behind a sweep.
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>
#include "pack/device/executor.hpp"
#include "pack/device/program.hpp"
#include "pack/plan.hpp"
#include "types/ir.hpp"
using namespace loom;
#define OK(c)                                              \
  do {                                                     \
    cudaError_t r_ = (c);                                  \
    if (r_ != cudaSuccess) {                               \
      std::printf("%s: %s\n", #c, cudaGetErrorString(r_)); \
      std::exit(1);                                        \
    }                                                      \
  } while (0)
__global__ void sweep(const uint4* __restrict__ s, size_t n, uint4* sink) {
  uint4 a{0, 0, 0, 0};
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n;
       i += size_t{gridDim.x} * blockDim.x) {
    uint4 v = s[i];
    a.x ^= v.x;
  }
  if (sink && a.x == 0x12345u) *sink = a;
}
// Unpack 64-byte blocks at a 128-byte stride: packed word t (16 B) -> user block t/4, word t%4.
template <int kMode>
__global__ void unpack64(const uint4* __restrict__ packed, char* __restrict__ user, size_t words) {
  for (size_t t = blockIdx.x * size_t{blockDim.x} + threadIdx.x; t < words;
       t += size_t{gridDim.x} * blockDim.x) {
    uint4* dst = reinterpret_cast<uint4*>(user + (t / 4) * 128 + (t % 4) * 16);
    if constexpr (kMode == 0) *dst = packed[t];
    if constexpr (kMode == 1) __stcs(dst, packed[t]);           // streaming store
    if constexpr (kMode == 2) __stcs(dst, __ldcs(packed + t));  // streaming load and store
    if constexpr (kMode == 3) __stwt(dst, packed[t]);           // write-through
  }
}
// One thread per block: four 16-byte loads, then four stores.
__global__ void unpack64_block(const uint4* __restrict__ packed, char* __restrict__ user,
                               size_t blocks) {
  for (size_t b = blockIdx.x * size_t{blockDim.x} + threadIdx.x; b < blocks;
       b += size_t{gridDim.x} * blockDim.x) {
    uint4 v0 = packed[4 * b], v1 = packed[4 * b + 1], v2 = packed[4 * b + 2],
          v3 = packed[4 * b + 3];
    uint4* d = reinterpret_cast<uint4*>(user + b * 128);
    d[0] = v0;
    d[1] = v1;
    d[2] = v2;
    d[3] = v3;
  }
}
// Contiguous write of the same bytes (the memcpy's write side as a kernel).
__global__ void copy16(const uint4* __restrict__ s, uint4* __restrict__ d, size_t n) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n;
       i += size_t{gridDim.x} * blockDim.x)
    d[i] = s[i];
}
float median(std::vector<float> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}
int main() {
  auto& gpu = pack::device::cuda_executor();
  if (!gpu.available()) {
    std::printf("no device\n");
    return 1;
  }
  cudaDeviceProp prop;
  OK(cudaGetDeviceProperties(&prop, 0));
  const int sms = prop.multiProcessorCount;
  std::printf("device %s, L2 %d MB\n", prop.name, prop.l2CacheSize >> 20);
  cudaStream_t s;
  OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaEvent_t e0, e1;
  OK(cudaEventCreate(&e0));
  OK(cudaEventCreate(&e1));
  const size_t sweep_words = size_t{2} * prop.l2CacheSize / 16 + (size_t{64} << 20) / 16;
  uint4* sw;
  OK(cudaMalloc(&sw, sweep_words * 16));
  OK(cudaMemset(sw, 1, sweep_words * 16));
  for (int64_t mib : {16, 64, 256}) {
    const int64_t bytes = mib << 20, n = bytes / 64;
    types::Layout l{{0, types::make_repeat(n, 128, types::make_dense(64))}};
    const pack::Plan plan(types::canonicalize(l), 0, pack::Isa::Scalar);
    const auto& prog = plan.device_program();
    char *user, *packed, *packed2;
    OK(cudaMalloc(&user, 2 * bytes));
    OK(cudaMalloc(&packed, bytes));
    OK(cudaMalloc(&packed2, bytes));
    OK(cudaMemset(user, 1, 2 * bytes));
    OK(cudaMemset(packed, 2, bytes));
    const size_t words = bytes / 16;
    auto time = [&](const std::function<void()>& op) {
      std::vector<float> v;
      op();
      OK(cudaStreamSynchronize(s));
      for (int r = 0; r < 25; ++r) {
        sweep<<<sms * 8, 256, 0, s>>>(sw, sweep_words, nullptr);
        OK(cudaEventRecord(e0, s));
        op();
        OK(cudaEventRecord(e1, s));
        OK(cudaEventSynchronize(e1));
        float ms;
        OK(cudaEventElapsedTime(&ms, e0, e1));
        v.push_back(ms);
      }
      return bytes / (median(v) * 1e-3) / 1e9;
    };
    const double memcpy_bw =
        time([&] { cudaMemcpyAsync(packed2, packed, bytes, cudaMemcpyDeviceToDevice, s); });
    auto row = [&](const char* name, const std::function<void()>& op) {
      const double bw = time(op);
      std::printf("%4lld MiB %-34s %7.0f GB/s %5.1f%% of memcpy\n", (long long)mib, name, bw,
                  100 * bw / memcpy_bw);
    };
    std::printf("%4lld MiB %-34s %7.0f GB/s\n", (long long)mib, "memcpy (cudaMemcpyAsync)",
                memcpy_bw);
    const unsigned g = sms * 32;
    row("copy kernel 16 B/thread", [&] {
      copy16<<<g, 256, 0, s>>>(reinterpret_cast<uint4*>(packed), reinterpret_cast<uint4*>(packed2),
                               words);
    });
    row("executor pack", [&] { gpu.pack(prog, user, 1, packed, s); });
    row("executor unpack", [&] { gpu.unpack(prog, packed, 1, user, s); });
    row("unpack 16 B/thread",
        [&] { unpack64<0><<<g, 256, 0, s>>>(reinterpret_cast<uint4*>(packed), user, words); });
    row("unpack 16 B/thread, __stcs",
        [&] { unpack64<1><<<g, 256, 0, s>>>(reinterpret_cast<uint4*>(packed), user, words); });
    row("unpack 16 B/thread, __ldcs+__stcs",
        [&] { unpack64<2><<<g, 256, 0, s>>>(reinterpret_cast<uint4*>(packed), user, words); });
    row("unpack 16 B/thread, __stwt",
        [&] { unpack64<3><<<g, 256, 0, s>>>(reinterpret_cast<uint4*>(packed), user, words); });
    row("unpack 64 B/thread (a block)",
        [&] { unpack64_block<<<g, 256, 0, s>>>(reinterpret_cast<uint4*>(packed), user, n); });
    row("unpack 16 B/thread, grid 8/SM", [&] {
      unpack64<0><<<sms * 8, 256, 0, s>>>(reinterpret_cast<uint4*>(packed), user, words);
    });
    row("unpack 16 B/thread, one pass", [&] {
      unpack64<0><<<(unsigned)((words + 255) / 256), 256, 0, s>>>(reinterpret_cast<uint4*>(packed),
                                                                  user, words);
    });
    OK(cudaGetLastError());
    cudaFree(user);
    cudaFree(packed);
    cudaFree(packed2);
  }
  return 0;
}
