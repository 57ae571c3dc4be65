// Experiment (not product code): how much of a device pack's time at 4-128 MiB is the host's
// enqueue (inside the event window when the stream is idle) and how much the device's work.
#include <cuda_runtime.h>
#include <algorithm>
#include <chrono>
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
__global__ void spin(long long cycles) {
  const long long t0 = clock64();
  while (clock64() - t0 < cycles) {
  }
}
double median(std::vector<double> v) {
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
  std::printf("device %s\n", prop.name);
  cudaStream_t s;
  OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaEvent_t e0, e1;
  OK(cudaEventCreate(&e0));
  OK(cudaEventCreate(&e1));
  const long long spin_cycles = 200000;  // ~100 us at ~2 GHz: covers any enqueue
  std::printf(
      "%-6s %5s %-7s %9s %9s %9s   (GB/s of packed bytes: events around an idle stream | events "
      "behind a spin kernel; host us = enqueue call)\n",
      "block", "MiB", "op", "idle", "blocked", "host_us");
  for (int64_t b : {8, 64, 128})
    for (int64_t mib : {4, 8, 16, 32, 64, 128}) {
      const int64_t packed_bytes = mib << 20, n = packed_bytes / b;
      types::Layout l{{0, types::make_repeat(n, 2 * b, types::make_dense(b))}};
      const pack::Plan plan(types::canonicalize(l), 0, pack::Isa::Scalar);
      const auto& prog = plan.device_program();
      char *user, *packed, *packed2;
      OK(cudaMalloc(&user, 2 * n * b));
      OK(cudaMalloc(&packed, packed_bytes));
      OK(cudaMalloc(&packed2, packed_bytes));
      OK(cudaMemset(user, 1, 2 * n * b));
      OK(cudaMemset(packed, 1, packed_bytes));
      struct Op {
        const char* name;
        std::function<void()> f;
      };
      std::vector<Op> ops = {
          {"memcpy",
           [&] { cudaMemcpyAsync(packed2, packed, packed_bytes, cudaMemcpyDeviceToDevice, s); }},
          {"pack", [&] { gpu.pack(prog, user, 1, packed, s); }},
          {"unpack", [&] { gpu.unpack(prog, packed, 1, user, s); }}};
      for (auto& op : ops) {
        op.f();
        OK(cudaStreamSynchronize(s));
        std::vector<double> idle, blocked, host;
        for (int r = 0; r < 30; ++r) {
          float ms;
          OK(cudaEventRecord(e0, s));
          op.f();
          OK(cudaEventRecord(e1, s));
          OK(cudaEventSynchronize(e1));
          OK(cudaEventElapsedTime(&ms, e0, e1));
          idle.push_back(ms * 1e-3);
          spin<<<1, 1, 0, s>>>(spin_cycles);
          OK(cudaEventRecord(e0, s));
          auto t0 = std::chrono::steady_clock::now();
          op.f();
          host.push_back(
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
          OK(cudaEventRecord(e1, s));
          OK(cudaEventSynchronize(e1));
          OK(cudaEventElapsedTime(&ms, e0, e1));
          blocked.push_back(ms * 1e-3);
        }
        std::printf("%-6lld %5lld %-7s %9.0f %9.0f %9.2f\n", (long long)b, (long long)mib, op.name,
                    packed_bytes / median(idle) / 1e9, packed_bytes / median(blocked) / 1e9,
                    median(host) * 1e6);
        std::fflush(stdout);
      }
      OK(cudaGetLastError());
      cudaFree(user);
      cudaFree(packed);
      cudaFree(packed2);
    }
  return 0;
}
