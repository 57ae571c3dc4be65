// Why does a 4 KiB contiguous device message take ~157 us one way through the host MPI (both
// MPIs, H100 and H200) when a 4 KiB packed vector message takes ~20 us and 64 KiB contiguous
// ~37 us? Two ranks share the GPU; each round trip moves `bytes` device -> pinned host -> MPI ->
// pinned host -> device, with one way of crossing between device and host per variant.
// Both directions:
//   copy1d      cudaMemcpyAsync on a stream of our own, then cudaStreamSynchronize (Loom's way)
//   copy1d_nb   the same on a cudaStreamNonBlocking stream
//   legacy      cudaMemcpy on the legacy default stream (what an application writes)
//   copy2d      cudaMemcpy2DAsync, one row
//   d2h1d_h2d2d 1-D device->host, 2-D (one row) host->device
//   d2h2d_h2d1d 2-D (one row) device->host, 1-D host->device
//   kernel      a copy kernel through the mapping of the pinned buffer, both ways
//   host        no device at all: the MPI transfer of the pinned bytes alone
// Host->device only (device->host stays copy1d):
//   h2d_1d             cudaMemcpyAsync
//   h2d_rowsN          cudaMemcpy2DAsync of N rows, both pitches the row's width (contiguous)
//   h2d_spreadN        the bytes spread by the CPU into rows at twice their width in a second
//                      pinned buffer, then cudaMemcpy2DAsync of N rows (host pitch 2x)
//   h2d_dpitch2x_rowsN      N rows to a device pitch of twice the width (a vector's unpack by rows)
//   h2d_rows2_tail3    two rows of (bytes - 3) / 2, then three rows of one byte
//   h2d_pad            a 1-D copy of at least 32 KiB into device scratch, then a device->device
//                      cudaMemcpyAsync of the message's bytes
//   h2d_pad_only       the padded copy alone (not a correct delivery; shows the size effect)
// Build: nvcc -O2 -std=c++17 smallcopy.cu $(mpicxx --showme:compile) $(mpicxx --showme:link)
// Run:   mpiexec -n 2 ./smallcopy [VARIANT,...] [BYTES,...]   (one-way us, three runs each)
//        mpiexec -n 2 ./smallcopy lookup   (the cost of cudaPointerGetAttributes, rank 0)
#include <cuda_runtime.h>
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#define CHECK(x)                                                                              \
  do {                                                                                        \
    cudaError_t e_ = (x);                                                                     \
    if (e_ != cudaSuccess) {                                                                  \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      MPI_Abort(MPI_COMM_WORLD, 1);                                                           \
    }                                                                                         \
  } while (0)

__global__ void copy_kernel(const int4* src, int4* dst, size_t n) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n;
       i += size_t{gridDim.x} * blockDim.x)
    dst[i] = src[i];
}

enum Dir { D2H, H2D };
struct Ctx {
  char *dev, *scratch;
  char *host, *spread;  // aligned_alloc + cudaHostRegister(Portable | Mapped), as Loom's staging
  cudaStream_t stream, stream_nb;
};

char* pinned(size_t bytes) {
  char* p = static_cast<char*>(std::aligned_alloc(4096, bytes));
  std::memset(p, 0, bytes);
  CHECK(cudaHostRegister(p, bytes, cudaHostRegisterPortable | cudaHostRegisterMapped));
  return p;
}

std::vector<std::string> split(const char* text) {
  std::vector<std::string> out;
  std::string item;
  for (const char* p = text;; ++p) {
    if (*p == ',' || *p == 0) {
      if (!item.empty()) out.push_back(item);
      item.clear();
      if (*p == 0) break;
    } else {
      item += *p;
    }
  }
  return out;
}

bool starts(const std::string& how, const char* prefix) {
  return how.rfind(prefix, 0) == 0;
}
size_t suffix(const std::string& how, const char* prefix) {
  return std::stoul(how.substr(std::strlen(prefix)));
}

void sync(cudaStream_t s) {
  CHECK(cudaStreamSynchronize(s));
}

// The host->device-only variants.
void h2d_only(const std::string& how, Ctx& c, size_t bytes) {
  const auto h2d = cudaMemcpyHostToDevice;
  if (how == "h2d_1d") {
    CHECK(cudaMemcpyAsync(c.dev, c.host, bytes, h2d, c.stream));
  } else if (starts(how, "h2d_rows2_tail3")) {
    const size_t head = (bytes - 3) / 2;
    CHECK(cudaMemcpy2DAsync(c.dev, head, c.host, head, head, 2, h2d, c.stream));
    CHECK(cudaMemcpy2DAsync(c.dev + 2 * head, 1, c.host + 2 * head, 1, 1, 3, h2d, c.stream));
  } else if (starts(how, "h2d_rows")) {
    const size_t rows = suffix(how, "h2d_rows"), width = bytes / rows;
    CHECK(cudaMemcpy2DAsync(c.dev, width, c.host, width, width, rows, h2d, c.stream));
  } else if (starts(how, "h2d_spread")) {
    const size_t rows = suffix(how, "h2d_spread"), width = bytes / rows;
    for (size_t r = 0; r < rows; ++r)
      std::memcpy(c.spread + 2 * r * width, c.host + r * width, width);
    CHECK(cudaMemcpy2DAsync(c.dev, width, c.spread, 2 * width, width, rows, h2d, c.stream));
  } else if (starts(how, "h2d_dpitch2x_rows")) {
    const size_t rows = suffix(how, "h2d_dpitch2x_rows"), width = bytes / rows;
    CHECK(cudaMemcpy2DAsync(c.scratch, 2 * width, c.host, width, width, rows, h2d, c.stream));
  } else if (starts(how, "h2d_pad")) {
    CHECK(cudaMemcpyAsync(c.scratch, c.host, std::max<size_t>(bytes, 32768), h2d, c.stream));
    if (how == "h2d_pad")
      CHECK(cudaMemcpyAsync(c.dev, c.scratch, bytes, cudaMemcpyDeviceToDevice, c.stream));
  } else {
    std::fprintf(stderr, "unknown variant %s\n", how.c_str());
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  sync(c.stream);
}

void cross(const std::string& how, Dir dir, Ctx& c, size_t bytes) {
  if (how == "host") return;
  if (starts(how, "h2d_")) {
    if (dir == H2D) return h2d_only(how, c, bytes);
    return cross("copy1d", dir, c, bytes);
  }
  char* dst = dir == D2H ? c.host : c.dev;
  const char* src = dir == D2H ? c.dev : c.host;
  const cudaMemcpyKind kind = dir == D2H ? cudaMemcpyDeviceToHost : cudaMemcpyHostToDevice;
  const bool two_d = how == "copy2d" || (how == "d2h1d_h2d2d" && dir == H2D) ||
                     (how == "d2h2d_h2d1d" && dir == D2H);
  if (how == "legacy") {
    CHECK(cudaMemcpy(dst, src, bytes, kind));
  } else if (how == "kernel") {
    const size_t n = bytes / 16;
    const unsigned grid = static_cast<unsigned>(std::max<size_t>(1, (n + 255) / 256));
    copy_kernel<<<grid, 256, 0, c.stream>>>(reinterpret_cast<const int4*>(src),
                                            reinterpret_cast<int4*>(dst), n);
    sync(c.stream);
  } else if (two_d) {
    CHECK(cudaMemcpy2DAsync(dst, bytes, src, bytes, bytes, 1, kind, c.stream));
    sync(c.stream);
  } else {
    cudaStream_t s = how == "copy1d_nb" ? c.stream_nb : c.stream;
    CHECK(cudaMemcpyAsync(dst, src, bytes, kind, s));
    sync(s);
  }
}

double trips(const std::string& how, Ctx& c, size_t bytes, int rank, int reps) {
  const int peer = 1 - rank;
  MPI_Barrier(MPI_COMM_WORLD);
  const double t0 = MPI_Wtime();
  for (int i = 0; i < reps; ++i) {
    if (rank == 0) {
      cross(how, D2H, c, bytes);
      MPI_Send(c.host, static_cast<int>(bytes), MPI_BYTE, peer, 1, MPI_COMM_WORLD);
      MPI_Recv(c.host, static_cast<int>(bytes), MPI_BYTE, peer, 1, MPI_COMM_WORLD,
               MPI_STATUS_IGNORE);
      cross(how, H2D, c, bytes);
    } else {
      MPI_Recv(c.host, static_cast<int>(bytes), MPI_BYTE, peer, 1, MPI_COMM_WORLD,
               MPI_STATUS_IGNORE);
      cross(how, H2D, c, bytes);
      cross(how, D2H, c, bytes);
      MPI_Send(c.host, static_cast<int>(bytes), MPI_BYTE, peer, 1, MPI_COMM_WORLD);
    }
  }
  return (MPI_Wtime() - t0) / reps / 2 * 1e6;  // one way, us
}

int main(int argc, char** argv) {
  CHECK(cudaFree(nullptr));
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const size_t max_bytes = size_t{1} << 20;
  Ctx c{};
  CHECK(cudaMalloc(&c.dev, max_bytes));
  CHECK(cudaMalloc(&c.scratch, 2 * max_bytes));
  CHECK(cudaMemset(c.dev, rank + 1, max_bytes));
  c.host = pinned(max_bytes);
  c.spread = pinned(2 * max_bytes);
  CHECK(cudaStreamCreateWithFlags(&c.stream, cudaStreamDefault));
  CHECK(cudaStreamCreateWithFlags(&c.stream_nb, cudaStreamNonBlocking));
  if (argc > 1 && std::strcmp(argv[1], "lookup") == 0) {  // cost of one pointer lookup
    std::vector<char> pageable(4096);
    const std::pair<const char*, const void*> pointers[] = {
        {"device", c.dev}, {"pinned", c.host}, {"pageable", pageable.data()}};
    for (const auto& [name, p] : pointers) {
      cudaPointerAttributes attr{};
      const int reps = 100000;
      const double t0 = MPI_Wtime();
      for (int i = 0; i < reps; ++i) cudaPointerGetAttributes(&attr, p);
      if (rank == 0)
        std::printf("cudaPointerGetAttributes %-8s %.3f us\n", name,
                    (MPI_Wtime() - t0) / reps * 1e6);
    }
    MPI_Finalize();
    return 0;
  }
  const std::vector<std::string> variants = split(
      argc > 1 ? argv[1] : "host,copy1d,copy1d_nb,legacy,copy2d,d2h1d_h2d2d,d2h2d_h2d1d,kernel");
  std::vector<size_t> sizes;
  for (const std::string& b :
       split(argc > 2 ? argv[2] : "1024,4096,8192,16384,32768,65536,262144,1048576"))
    sizes.push_back(std::stoul(b));
  if (rank == 0)
    std::printf("%-12s %8s %10s %10s %10s\n", "variant", "bytes", "us_run1", "us_run2", "us_run3");
  for (size_t bytes : sizes)
    for (const std::string& how : variants) {
      trips(how, c, bytes, rank, 20);  // warm-up
      double us[3];
      for (double& u : us) u = trips(how, c, bytes, rank, bytes <= 65536 ? 300 : 100);
      if (rank == 0)
        std::printf("%-12s %8zu %10.1f %10.1f %10.1f\n", how.c_str(), bytes, us[0], us[1], us[2]);
      std::fflush(stdout);
    }
  MPI_Finalize();
  return 0;
}
