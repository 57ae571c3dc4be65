// What a contiguous device message's copies cost by API and host memory, one process, no MPI:
// the application's cudaMemcpy into cudaMallocHost memory against Loom's executor's way
// (cudaMemcpyAsync on its own stream, then cudaStreamSynchronize) into memory pinned with
// cudaHostRegister (Loom's staging pool) or cudaMallocHost, both directions, and the cost of one
// cudaPointerGetAttributes. Variants interleaved per repetition; median microseconds.
//   nvcc -O2 -o copycost copycost.cu && ./copycost
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

static double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

int main() {
  const size_t sizes[] = {32 << 10, 64 << 10, 256 << 10, 1 << 20};
  const int reps = 400;
  cudaFree(nullptr);
  cudaStream_t stream;
  cudaStreamCreateWithFlags(&stream, cudaStreamDefault);
  cudaStream_t nonblocking;
  cudaStreamCreateWithFlags(&nonblocking, cudaStreamNonBlocking);
  const char* names[] = {"memcpy/mallochost",        "async+sync/mallochost",
                         "async+sync/registered",    "memcpy/registered",
                         "async+sync-nb/mallochost", "async+sync-nb/registered"};
  const int variants = 6;
  std::printf("%-8s %-26s %10s %10s\n", "bytes", "variant", "d2h us", "h2d us");
  for (size_t bytes : sizes) {
    char* dev;
    cudaMalloc(&dev, bytes);
    char* mh;
    cudaMallocHost(&mh, bytes);
    char* reg = static_cast<char*>(std::aligned_alloc(64, (bytes + 63) / 64 * 64));
    cudaHostRegister(reg, bytes, cudaHostRegisterDefault);
    std::vector<double> t[6][2];
    for (int r = 0; r < reps; ++r)
      for (int v = 0; v < variants; ++v)
        for (int dir = 0; dir < 2; ++dir) {
          char* host = (v == 0 || v == 1 || v == 4) ? mh : reg;
          const bool sync_copy = v == 0 || v == 3;
          cudaStream_t s = v >= 4 ? nonblocking : stream;
          const double t0 = now();
          if (sync_copy) {
            dir == 0 ? cudaMemcpy(host, dev, bytes, cudaMemcpyDeviceToHost)
                     : cudaMemcpy(dev, host, bytes, cudaMemcpyHostToDevice);
          } else {
            dir == 0 ? cudaMemcpyAsync(host, dev, bytes, cudaMemcpyDeviceToHost, s)
                     : cudaMemcpyAsync(dev, host, bytes, cudaMemcpyHostToDevice, s);
            cudaStreamSynchronize(s);
          }
          t[v][dir].push_back(now() - t0);
        }
    for (int v = 0; v < variants; ++v) {
      double med[2];
      for (int dir = 0; dir < 2; ++dir) {
        auto& x = t[v][dir];
        std::nth_element(x.begin(), x.begin() + x.size() / 2, x.end());
        med[dir] = x[x.size() / 2] * 1e6;
      }
      std::printf("%-8zu %-26s %10.2f %10.2f\n", bytes, names[v], med[0], med[1]);
    }
    cudaHostUnregister(reg);
    std::free(reg);
    cudaFreeHost(mh);
    cudaFree(dev);
  }
  char* dev;
  cudaMalloc(&dev, 1 << 20);
  std::vector<double> look;
  for (int r = 0; r < 2000; ++r) {
    cudaPointerAttributes a;
    const double t0 = now();
    cudaPointerGetAttributes(&a, dev + r);
    look.push_back(now() - t0);
  }
  std::nth_element(look.begin(), look.begin() + look.size() / 2, look.end());
  std::printf("cudaPointerGetAttributes (device) median %.3f us\n", look[look.size() / 2] * 1e6);
  return 0;
}
