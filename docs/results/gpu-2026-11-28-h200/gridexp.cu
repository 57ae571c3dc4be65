// Experiment (not product code): why Loom's device packs of small blocks lose 15-25% at 16 MiB
// against 64 MiB. Same thread body as the executor (copy_body.hpp), launch geometry varied.
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>
#include "pack/device/copy_body.hpp"
#include "pack/device/program.hpp"
#include "pack/plan.hpp"
#include "types/ir.hpp"
using namespace loom;
using namespace loom::pack::device;
#define OK(c)                                              \
  do {                                                     \
    cudaError_t r_ = (c);                                  \
    if (r_ != cudaSuccess) {                               \
      std::printf("%s: %s\n", #c, cudaGetErrorString(r_)); \
      std::exit(1);                                        \
    }                                                      \
  } while (0)
constexpr int kT = 256;
template <int W, bool kI32, int D>
__global__ void __launch_bounds__(kT)
    seg(const SegmentArgs a, char* user, char* packed, int64_t threads) {
  for (int64_t t = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; t < threads;
       t += int64_t{gridDim.x} * blockDim.x)
    copy_segment_thread<W, true, kI32, D>(a, user, packed, t);
}
template <int W, int D>
void launch(const SegmentArgs& a, char* u, char* p, int64_t th, unsigned g, cudaStream_t s) {
  if (a.index32)
    seg<W, true, D><<<g, kT, 0, s>>>(a, u, p, th);
  else
    seg<W, false, D><<<g, kT, 0, s>>>(a, u, p, th);
}
void run(const SegmentArgs& a, char* u, char* p, int64_t cap, cudaStream_t s) {
  const int64_t th = segment_threads(a);
  const int64_t blocks = (th + kT - 1) / kT;
  const unsigned g = (unsigned)std::clamp<int64_t>(blocks, 1, cap);
  with_word(a.word,
            [&]<int W>() { with_dims(a, [&]<int D>() { launch<W, D>(a, u, p, th, g, s); }); });
}
float median(std::vector<float> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}
int main() {
  cudaDeviceProp prop;
  OK(cudaGetDeviceProperties(&prop, 0));
  const int sm = prop.multiProcessorCount;
  int occ = 0;
  OK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, seg<16, true, 2>, kT, 0));
  std::printf("device %s sm %d l2 %d MB resident blocks/SM %d\n", prop.name, sm,
              prop.l2CacheSize >> 20, occ);
  cudaStream_t s;
  OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaEvent_t e0, e1;
  OK(cudaEventCreate(&e0));
  OK(cudaEventCreate(&e1));
  const size_t flush_bytes = size_t{512} << 20;
  char* flush;
  OK(cudaMalloc(&flush, flush_bytes));
  const int64_t caps[] = {int64_t{sm} * occ, int64_t{sm} * occ * 2, int64_t{sm} * 32,
                          int64_t{1} << 30};
  const char* cap_names[] = {"1wave", "2wave", "sm32(now)", "unbounded"};
  const int64_t blocks_b[] = {8, 16, 64, 128};
  const int64_t sizes_mib[] = {4, 8, 12, 16, 24, 32, 48, 64, 128};
  std::printf("%-6s %5s %-5s %8s", "block", "MiB", "flush", "memcpy");
  for (auto n : cap_names) std::printf(" %10s", n);
  std::printf("   (GB/s of packed bytes; median of 30)\n");
  for (int64_t b : blocks_b)
    for (int64_t mib : sizes_mib) {
      const int64_t packed_bytes = mib << 20, n = packed_bytes / b;
      types::Layout l{{0, types::make_repeat(n, 2 * b, types::make_dense(b))}};
      const types::Layout c = types::canonicalize(l);
      const pack::Plan plan(c, 0, pack::Isa::Scalar);
      const Program& prog = plan.device_program();
      char *user, *packed, *packed2;
      OK(cudaMalloc(&user, 2 * n * b));
      OK(cudaMalloc(&packed, packed_bytes));
      OK(cudaMalloc(&packed2, packed_bytes));
      OK(cudaMemset(user, 1, 2 * n * b));
      std::vector<SegmentArgs> args;
      prog.segment_args(user, 1, packed, &args);
      if (args.size() != 1 || !prog.table().empty()) {
        std::printf("unexpected program\n");
        return 1;
      }
      for (int f = 0; f < 2; ++f) {
        auto time = [&](auto&& op) {
          std::vector<float> v;
          op();
          OK(cudaStreamSynchronize(s));
          for (int r = 0; r < 30; ++r) {
            if (f) OK(cudaMemsetAsync(flush, r, flush_bytes, s));
            OK(cudaEventRecord(e0, s));
            op();
            OK(cudaEventRecord(e1, s));
            OK(cudaEventSynchronize(e1));
            float ms;
            OK(cudaEventElapsedTime(&ms, e0, e1));
            v.push_back(ms);
          }
          return packed_bytes / (median(v) * 1e-3) / 1e9;
        };
        std::printf("%-6lld %5lld %-5s %8.0f", (long long)b, (long long)mib, f ? "yes" : "no",
                    time([&] {
                      cudaMemcpyAsync(packed2, packed, packed_bytes, cudaMemcpyDeviceToDevice, s);
                    }));
        for (int64_t cap : caps)
          std::printf(" %10.0f", time([&] { run(args[0], user, packed, cap, s); }));
        std::printf("\n");
        std::fflush(stdout);
      }
      OK(cudaGetLastError());
      cudaFree(user);
      cudaFree(packed);
      cudaFree(packed2);
    }
  return 0;
}
