// Where a contiguous device message's time goes, two ranks sharing one GPU: one-way us of
//   app      cudaMemcpy into cudaMallocHost memory, PMPI send of the user's contiguous type
//   copies   Loom's copies (cudaMemcpyAsync on a blocking stream of its own, then
//            cudaStreamSynchronize) into cudaHostRegister'd memory, PMPI send as MPI_PACKED
//   lookup   copies, plus one cudaPointerGetAttributes per side (as Loom's route does)
//   loom     MPI_Send/MPI_Recv on the device buffer through libloom (LD_PRELOAD)
// in rounds, the variants' order rotated each round; median over rounds of each round's mean.
//   nvcc -O2 pathcost.cu $(mpicxx --showme:compile) $(mpicxx --showme:link) -o pathcost
//   LD_PRELOAD=libloom.so mpiexec -n 2 ./pathcost
#include <cuda_runtime.h>
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

constexpr int kVariants = 4;
const char* const kNames[kVariants] = {"app", "copies", "lookup", "loom"};

struct Buffers {
  char* device;
  char* malloc_host;
  char* registered;
  cudaStream_t stream;
  MPI_Datatype contiguous;
  int bytes;
};

void send_one(int variant, const Buffers& b, int peer) {
  if (variant == 3) {
    MPI_Send(b.device, 1, b.contiguous, peer, 1, MPI_COMM_WORLD);
    return;
  }
  if (variant == 0) {
    cudaMemcpy(b.malloc_host, b.device, b.bytes, cudaMemcpyDeviceToHost);
    PMPI_Send(b.malloc_host, 1, b.contiguous, peer, 1, MPI_COMM_WORLD);
    return;
  }
  if (variant == 2) {
    cudaPointerAttributes a;
    cudaPointerGetAttributes(&a, b.device);
  }
  cudaMemcpyAsync(b.registered, b.device, b.bytes, cudaMemcpyDeviceToHost, b.stream);
  cudaStreamSynchronize(b.stream);
  PMPI_Send(b.registered, b.bytes, MPI_PACKED, peer, 1, MPI_COMM_WORLD);
}

void receive_one(int variant, const Buffers& b, int peer) {
  if (variant == 3) {
    MPI_Recv(b.device, 1, b.contiguous, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    return;
  }
  if (variant == 0) {
    PMPI_Recv(b.malloc_host, 1, b.contiguous, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    cudaMemcpy(b.device, b.malloc_host, b.bytes, cudaMemcpyHostToDevice);
    return;
  }
  if (variant == 2) {
    cudaPointerAttributes a;
    cudaPointerGetAttributes(&a, b.device);
  }
  PMPI_Recv(b.registered, b.bytes, MPI_PACKED, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  cudaMemcpyAsync(b.device, b.registered, b.bytes, cudaMemcpyHostToDevice, b.stream);
  cudaStreamSynchronize(b.stream);
}

double one_way(int variant, const Buffers& b, int rank, int trips) {
  const int peer = 1 - rank;
  PMPI_Barrier(MPI_COMM_WORLD);
  const double t0 = MPI_Wtime();
  for (int t = 0; t < trips; ++t) {
    if (rank == 0) {
      send_one(variant, b, peer);
      receive_one(variant, b, peer);
    } else {
      receive_one(variant, b, peer);
      send_one(variant, b, peer);
    }
  }
  return (MPI_Wtime() - t0) / trips / 2;
}

}  // namespace

int main(int argc, char** argv) {
  cudaFree(nullptr);
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const int sizes[] = {32 << 10, 64 << 10, 256 << 10};
  const int rounds = 9, trips = 150;
  if (rank == 0)
    std::printf("%-8s %8s %8s %8s %8s  (one-way us, median of %d rounds)\n", "bytes", kNames[0],
                kNames[1], kNames[2], kNames[3], rounds);
  for (int bytes : sizes) {
    Buffers b;
    b.bytes = bytes;
    cudaMalloc(&b.device, bytes);
    cudaMallocHost(&b.malloc_host, bytes);
    b.registered = static_cast<char*>(std::aligned_alloc(64, bytes));
    cudaHostRegister(b.registered, bytes, cudaHostRegisterPortable | cudaHostRegisterMapped);
    cudaStreamCreateWithFlags(&b.stream, cudaStreamDefault);
    MPI_Type_contiguous(bytes, MPI_BYTE, &b.contiguous);
    MPI_Type_commit(&b.contiguous);
    for (int v = 0; v < kVariants; ++v) one_way(v, b, rank, 10);  // warm-up
    std::vector<double> t[kVariants];
    for (int r = 0; r < rounds; ++r)
      for (int i = 0; i < kVariants; ++i) {
        const int v = (i + r) % kVariants;
        t[v].push_back(one_way(v, b, rank, trips));
      }
    if (rank == 0) {
      std::printf("%-8d", bytes);
      for (auto& x : t) {
        std::sort(x.begin(), x.end());
        std::printf(" %8.2f", x[x.size() / 2] * 1e6);
      }
      std::printf("\n");
    }
    MPI_Type_free(&b.contiguous);
    cudaStreamDestroy(b.stream);
    cudaHostUnregister(b.registered);
    std::free(b.registered);
    cudaFreeHost(b.malloc_host);
    cudaFree(b.device);
  }
  MPI_Finalize();
  return 0;
}
