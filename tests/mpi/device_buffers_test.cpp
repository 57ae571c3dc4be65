// Buffers in device memory through the interposer, on the emulated device (LOOM_DEVICE=emulated,
// exec/device_memory.hpp): memory that faults on any access but the device executor's, as
// a GPU pointer would in a host MPI that is not CUDA-aware. Every call must deliver what the
// host MPI delivers for the same data in host memory, and never hand the host a device pointer
// (that would crash the test). Two ranks; LOOM_DEVICE_TEST_SEED or a random seed, printed.
// Built a second time with LOOM_TEST_CUDA_DEVICE for GPU memory (LOOM_DEVICE=cuda; exits 77,
// skipped, where there is no GPU).
#include <gtest/gtest.h>
#include <mpi.h>

#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "loom/loom.h"
#include "tests/mpi/gtest_mpi.hpp"

#if defined(LOOM_TEST_CUDA_DEVICE)
#include <cuda_runtime.h>
#endif

namespace {

int rank = 0, ranks = 1;
uint64_t seed = 0;

// Device memory (the emulated device's, or a GPU's) with host-side helpers.
#if defined(LOOM_TEST_CUDA_DEVICE)
void* device_alloc(size_t bytes) {
  void* p = nullptr;
  return cudaMalloc(&p, bytes) == cudaSuccess ? p : nullptr;
}
void device_free(void* p) {
  cudaFree(p);
}
void device_copy(void* dst, const void* src, size_t bytes) {
  cudaMemcpy(dst, src, bytes, cudaMemcpyDefault);
}
#else
void* device_alloc(size_t bytes) {
  return loom_emulated_device_alloc(bytes);
}
void device_free(void* p) {
  loom_emulated_device_free(p);
}
void device_copy(void* dst, const void* src, size_t bytes) {
  loom_emulated_device_copy(dst, src, bytes);
}
#endif

class DeviceBuffer {
 public:
  explicit DeviceBuffer(size_t bytes) : bytes_(bytes), p_(device_alloc(bytes)) {}
  ~DeviceBuffer() { device_free(p_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void* get() const { return p_; }
  void upload(const std::vector<char>& host) const { device_copy(p_, host.data(), bytes_); }
  std::vector<char> download() const {
    std::vector<char> host(bytes_);
    device_copy(host.data(), p_, bytes_);
    return host;
  }

 private:
  size_t bytes_;
  void* p_;
};

std::vector<char> pattern(size_t bytes, int salt) {
  std::vector<char> v(bytes);
  std::mt19937_64 rng(seed + static_cast<uint64_t>(salt));
  for (char& c : v) c = static_cast<char>(rng());
  return v;
}

// A vector of 3-double blocks, stride 5 doubles: the usual non-contiguous face.
struct Vector {
  MPI_Datatype type;
  Vector() {
    MPI_Type_vector(40, 3, 5, MPI_DOUBLE, &type);
    MPI_Type_commit(&type);
  }
  ~Vector() { MPI_Type_free(&type); }
  static constexpr size_t kExtent = (39 * 5 + 3) * sizeof(double);
  static constexpr int kSize = 40 * 3 * sizeof(double);
};

TEST(DeviceBuffers, PackAndUnpackMatchTheHost) {
  Vector v;
  const int count = 3;
  const size_t span = count * Vector::kExtent;
  const auto host_data = pattern(span, 1);
  DeviceBuffer device(span);
  device.upload(host_data);

  std::vector<char> expect(count * Vector::kSize), got(expect.size());
  int pos = 0;
  ASSERT_EQ(MPI_SUCCESS, PMPI_Pack(host_data.data(), count, v.type, expect.data(),
                                   static_cast<int>(expect.size()), &pos, MPI_COMM_WORLD));
  pos = 0;
  ASSERT_EQ(MPI_SUCCESS, MPI_Pack(device.get(), count, v.type, got.data(),
                                  static_cast<int>(got.size()), &pos, MPI_COMM_WORLD));
  EXPECT_EQ(pos, static_cast<int>(got.size()));
  EXPECT_EQ(expect, got) << "device -> host pack";

  DeviceBuffer packed_on_device(expect.size());
  pos = 0;
  ASSERT_EQ(MPI_SUCCESS, MPI_Pack(device.get(), count, v.type, packed_on_device.get(),
                                  static_cast<int>(expect.size()), &pos, MPI_COMM_WORLD));
  EXPECT_EQ(expect, packed_on_device.download()) << "device -> device pack";

  // Unpack into device memory whose gaps hold other bytes: they must stay.
  const auto background = pattern(span, 2);
  std::vector<char> expect_user = background;
  pos = 0;
  ASSERT_EQ(MPI_SUCCESS, PMPI_Unpack(expect.data(), static_cast<int>(expect.size()), &pos,
                                     expect_user.data(), count, v.type, MPI_COMM_WORLD));
  for (bool from_device : {false, true}) {
    device.upload(background);
    pos = 0;
    ASSERT_EQ(MPI_SUCCESS, MPI_Unpack(from_device ? packed_on_device.get() : expect.data(),
                                      static_cast<int>(expect.size()), &pos, device.get(), count,
                                      v.type, MPI_COMM_WORLD));
    EXPECT_EQ(expect_user, device.download()) << (from_device ? "device" : "host") << " -> device";
  }

  // A contiguous type too: the host's own MPI_Pack would read device memory.
  DeviceBuffer doubles(800);
  const auto values = pattern(800, 3);
  doubles.upload(values);
  std::vector<char> out(800);
  pos = 0;
  ASSERT_EQ(MPI_SUCCESS,
            MPI_Pack(doubles.get(), 100, MPI_DOUBLE, out.data(), 800, &pos, MPI_COMM_WORLD));
  EXPECT_EQ(values, out);
}

// Rank 0 sends, rank 1 receives, each side's buffer in device or host memory.
TEST(DeviceBuffers, SendAndReceiveEveryPlacement) {
  Vector v;
  const int count = 2;
  const size_t span = count * Vector::kExtent;
  const int peer = 1 - rank;
  for (int placement = 0; placement < 4; ++placement) {
    const bool send_device = placement & 1, recv_device = placement & 2;
    const auto sent = pattern(span, 10 + placement);
    const auto background = pattern(span, 20 + placement);
    // What the host delivers between host buffers is the reference.
    std::vector<char> expect = background;
    if (rank == 0) {
      ASSERT_EQ(MPI_SUCCESS, PMPI_Send(sent.data(), count, v.type, peer, 1, MPI_COMM_WORLD));
    } else {
      ASSERT_EQ(MPI_SUCCESS, PMPI_Recv(expect.data(), count, v.type, peer, 1, MPI_COMM_WORLD,
                                       MPI_STATUS_IGNORE));
    }
    DeviceBuffer device(span);
    if (rank == 0) {
      device.upload(sent);
      ASSERT_EQ(MPI_SUCCESS, MPI_Send(send_device ? device.get() : sent.data(), count, v.type, peer,
                                      2, MPI_COMM_WORLD));
    } else {
      device.upload(background);
      std::vector<char> host = background;
      MPI_Status status;
      ASSERT_EQ(MPI_SUCCESS, MPI_Recv(recv_device ? device.get() : host.data(), count, v.type, peer,
                                      2, MPI_COMM_WORLD, &status));
      int received = 0;
      MPI_Get_count(&status, v.type, &received);
      EXPECT_EQ(count, received);
      EXPECT_EQ(expect, recv_device ? device.download() : host) << "placement " << placement;
    }
  }
}

// Device-to-device messages of every shape the small-message copies and the kernels tell
// apart (exec/device_memory.cpp): a vector whose span is close to its packed bytes (sent as a
// span copy packed by the CPU), a sparse vector (its rows), vectors whose elements join into
// one 2-D copy (received as rows), a 3-D subarray, an indexed type and a struct (kernels),
// each at a count of 1 and 3, against what the host delivers between host buffers. Run with
// LOOM_DEVICE_COPY_BELOW unset, 0 (kernels only) and 1G (copies wherever they apply).
TEST(DeviceBuffers, EveryShapeByCopiesAndKernels) {
  std::vector<std::pair<const char*, MPI_Datatype>> types;
  MPI_Datatype t, inner;
  MPI_Type_vector(40, 3, 5, MPI_DOUBLE, &t);
  types.push_back({"dense vector", t});
  MPI_Type_vector(64, 1, 8, MPI_INT, &t);
  types.push_back({"sparse vector", t});
  MPI_Type_vector(16, 2, 4, MPI_FLOAT, &inner);
  MPI_Type_create_resized(inner, 0, 16 * 4 * sizeof(float), &t);
  MPI_Type_free(&inner);
  types.push_back({"joined vector", t});
  const int sizes[3] = {6, 7, 8}, sub[3] = {3, 4, 5}, starts[3] = {1, 2, 3};
  MPI_Type_create_subarray(3, sizes, sub, starts, MPI_ORDER_C, MPI_SHORT, &t);
  types.push_back({"3-D subarray", t});
  const int lengths[4] = {3, 1, 4, 2}, displs[4] = {0, 7, 11, 20};
  MPI_Type_indexed(4, lengths, displs, MPI_INT, &t);
  types.push_back({"indexed", t});
  const int blocklens[3] = {1, 2, 1};
  const MPI_Aint at[3] = {0, 8, 24};
  const MPI_Datatype members[3] = {MPI_INT, MPI_DOUBLE, MPI_CHAR};
  MPI_Type_create_struct(3, blocklens, at, members, &t);
  types.push_back({"struct", t});
  MPI_Type_vector(8, 64, 80, MPI_DOUBLE, &t);
  types.push_back({"wide vector", t});
  const int peer = 1 - rank;
  int salt = 100;
  for (auto& [name, type] : types) {
    MPI_Type_commit(&type);
    MPI_Aint lb = 0, extent = 0;
    MPI_Type_get_extent(type, &lb, &extent);
    for (int count : {1, 3}) {
      const size_t span = static_cast<size_t>(count * extent);
      const auto sent = pattern(span, ++salt);
      const auto background = pattern(span, ++salt);
      std::vector<char> expect = background;
      if (rank == 0)
        ASSERT_EQ(MPI_SUCCESS, PMPI_Send(sent.data(), count, type, peer, 3, MPI_COMM_WORLD));
      else
        ASSERT_EQ(MPI_SUCCESS, PMPI_Recv(expect.data(), count, type, peer, 3, MPI_COMM_WORLD,
                                         MPI_STATUS_IGNORE));
      DeviceBuffer device(span);
      device.upload(rank == 0 ? sent : background);
      if (rank == 0) {
        ASSERT_EQ(MPI_SUCCESS, MPI_Send(device.get(), count, type, peer, 4, MPI_COMM_WORLD));
      } else {
        ASSERT_EQ(MPI_SUCCESS,
                  MPI_Recv(device.get(), count, type, peer, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        EXPECT_EQ(expect, device.download()) << name << ", count " << count;
      }
    }
    MPI_Type_free(&type);
  }
  uint64_t by_copies = 0, spans = 0;
  ASSERT_EQ(1, loom_get_counter("device.copied", &by_copies));
  ASSERT_EQ(1, loom_get_counter("device.spans", &spans));
  const char* below = std::getenv("LOOM_DEVICE_COPY_BELOW");
  const char* method = std::getenv("LOOM_METHOD");
  if (below && !std::strcmp(below, "0")) {
    EXPECT_EQ(0u, by_copies) << "LOOM_DEVICE_COPY_BELOW=0 must keep every message on kernels";
    EXPECT_EQ(0u, spans);
  } else {
    EXPECT_GT(by_copies, 0u) << "small messages must move by copies";
  }
  // Sends the model leaves to the host travel as host copies of their span (rank 0 sends).
  if (method && !std::strcmp(method, "host") && !(below && !std::strcmp(below, "0")) && rank == 0) {
    EXPECT_GT(spans, 0u) << "LOOM_METHOD=host: small device sends must go to the host as copies";
  }
  if (method && !std::strcmp(method, "pack")) {
    EXPECT_EQ(0u, spans);
  }
}

// Non-blocking both ways at once, persistent requests, and Sendrecv, all on device memory.
TEST(DeviceBuffers, NonblockingPersistentAndSendrecv) {
  Vector v;
  const int peer = 1 - rank;
  const size_t span = Vector::kExtent;
  const auto mine = pattern(span, 100 + rank), theirs = pattern(span, 100 + peer);
  const auto background = pattern(span, 200);
  std::vector<char> expect = background;
  {  // the reference: the host between host buffers
    std::vector<char> scratch = background;
    ASSERT_EQ(MPI_SUCCESS, PMPI_Sendrecv(mine.data(), 1, v.type, peer, 3, expect.data(), 1, v.type,
                                         peer, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
  }
  DeviceBuffer send(span), recv(span);
  send.upload(mine);

  recv.upload(background);
  MPI_Request requests[2];
  ASSERT_EQ(MPI_SUCCESS, MPI_Irecv(recv.get(), 1, v.type, peer, 4, MPI_COMM_WORLD, &requests[0]));
  ASSERT_EQ(MPI_SUCCESS, MPI_Isend(send.get(), 1, v.type, peer, 4, MPI_COMM_WORLD, &requests[1]));
  ASSERT_EQ(MPI_SUCCESS, MPI_Waitall(2, requests, MPI_STATUSES_IGNORE));
  EXPECT_EQ(expect, recv.download()) << "Isend/Irecv";

  recv.upload(background);
  ASSERT_EQ(MPI_SUCCESS, MPI_Sendrecv(send.get(), 1, v.type, peer, 5, recv.get(), 1, v.type, peer,
                                      5, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
  EXPECT_EQ(expect, recv.download()) << "Sendrecv";

  ASSERT_EQ(MPI_SUCCESS,
            MPI_Recv_init(recv.get(), 1, v.type, peer, 6, MPI_COMM_WORLD, &requests[0]));
  ASSERT_EQ(MPI_SUCCESS,
            MPI_Send_init(send.get(), 1, v.type, peer, 6, MPI_COMM_WORLD, &requests[1]));
  for (int round = 0; round < 3; ++round) {
    // Each start sends the buffer as it is now.
    const auto now_mine = pattern(span, 300 + 10 * round + rank);
    const auto now_theirs = pattern(span, 300 + 10 * round + peer);
    std::vector<char> now_expect = background;
    ASSERT_EQ(MPI_SUCCESS, PMPI_Sendrecv(now_mine.data(), 1, v.type, peer, 7, now_expect.data(), 1,
                                         v.type, peer, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    send.upload(now_mine);
    recv.upload(background);
    ASSERT_EQ(MPI_SUCCESS, MPI_Startall(2, requests));
    ASSERT_EQ(MPI_SUCCESS, MPI_Waitall(2, requests, MPI_STATUSES_IGNORE));
    EXPECT_EQ(now_expect, recv.download()) << "persistent round " << round;
  }
  MPI_Request_free(&requests[0]);
  MPI_Request_free(&requests[1]);
  (void)theirs;
}

// Messages to oneself with device buffers go through the host (the self channel copies with
// the CPU), and a message that ends inside an element fills only what it carries.
TEST(DeviceBuffers, ToOneselfAndPartialElements) {
  Vector v;
  const size_t span = 2 * Vector::kExtent;
  const auto sent = pattern(span, 400), background = pattern(span, 401);
  DeviceBuffer send(span), recv(span);
  send.upload(sent);
  recv.upload(background);
  MPI_Request request;
  ASSERT_EQ(MPI_SUCCESS, MPI_Isend(send.get(), 2, v.type, rank, 8, MPI_COMM_WORLD, &request));
  ASSERT_EQ(MPI_SUCCESS,
            MPI_Recv(recv.get(), 2, v.type, rank, 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
  ASSERT_EQ(MPI_SUCCESS, MPI_Wait(&request, MPI_STATUS_IGNORE));
  std::vector<char> expect = background;
  ASSERT_EQ(MPI_SUCCESS, PMPI_Sendrecv(sent.data(), 2, v.type, rank, 9, expect.data(), 2, v.type,
                                       rank, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
  EXPECT_EQ(expect, recv.download()) << "to oneself";

  // 7 doubles into 2 vector elements of 120 doubles: the first 7 of element 0 change.
  const auto doubles = pattern(7 * sizeof(double), 402);
  recv.upload(background);
  expect = background;
  ASSERT_EQ(MPI_SUCCESS, PMPI_Sendrecv(doubles.data(), 7, MPI_DOUBLE, rank, 10, expect.data(), 2,
                                       v.type, rank, 10, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
  MPI_Status status;
  ASSERT_EQ(MPI_SUCCESS, MPI_Sendrecv(doubles.data(), 7, MPI_DOUBLE, rank, 11, recv.get(), 2,
                                      v.type, rank, 11, MPI_COMM_WORLD, &status));
  int elements = 0;
  MPI_Get_elements(&status, MPI_DOUBLE, &elements);
  EXPECT_EQ(7, elements);
  EXPECT_EQ(expect, recv.download()) << "partial element";
}

// Collectives with device buffers on either side: every rank hands the host bytes it staged.
TEST(DeviceBuffers, Collectives) {
  Vector v;
  const size_t block = Vector::kExtent;  // one vector element per peer block
  const size_t span = ranks * block;
  const auto send_host = pattern(span, 500 + rank), background = pattern(span, 600);
  DeviceBuffer send(span), recv(span);
  send.upload(send_host);
  auto reference = [&](auto&& host_call) {
    std::vector<char> out = background;
    host_call(out.data());
    return out;
  };

  std::vector<char> expect = reference([&](char* out) {
    PMPI_Alltoall(send_host.data(), 1, v.type, out, 1, v.type, MPI_COMM_WORLD);
  });
  recv.upload(background);
  ASSERT_EQ(MPI_SUCCESS,
            MPI_Alltoall(send.get(), 1, v.type, recv.get(), 1, v.type, MPI_COMM_WORLD));
  EXPECT_EQ(expect, recv.download()) << "Alltoall, vector";

  recv.upload(background);
  MPI_Request request;
  ASSERT_EQ(MPI_SUCCESS,
            MPI_Ialltoall(send.get(), 1, v.type, recv.get(), 1, v.type, MPI_COMM_WORLD, &request));
  ASSERT_EQ(MPI_SUCCESS, MPI_Wait(&request, MPI_STATUS_IGNORE));
  EXPECT_EQ(expect, recv.download()) << "Ialltoall, vector";

  // Contiguous doubles, device send side and host receive side, then in place on the device.
  const int doubles = static_cast<int>(block / sizeof(double));
  expect = reference([&](char* out) {
    PMPI_Allgather(send_host.data(), doubles, MPI_DOUBLE, out, doubles, MPI_DOUBLE, MPI_COMM_WORLD);
  });
  std::vector<char> host_out = background;
  ASSERT_EQ(MPI_SUCCESS, MPI_Allgather(send.get(), doubles, MPI_DOUBLE, host_out.data(), doubles,
                                       MPI_DOUBLE, MPI_COMM_WORLD));
  EXPECT_EQ(expect, host_out) << "Allgather, device to host";
  std::vector<char> in_place = background;
  std::memcpy(in_place.data() + rank * block, send_host.data(), block);
  recv.upload(in_place);
  ASSERT_EQ(MPI_SUCCESS, MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, recv.get(), doubles,
                                       MPI_DOUBLE, MPI_COMM_WORLD));
  std::vector<char> expect_in_place = in_place;
  PMPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, expect_in_place.data(), doubles, MPI_DOUBLE,
                 MPI_COMM_WORLD);
  EXPECT_EQ(expect_in_place, recv.download()) << "Allgather in place";

  // Broadcast of a vector from rank 0's device memory into the others'.
  expect = rank == 0 ? send_host : background;
  PMPI_Bcast(expect.data(), 1, v.type, 0, MPI_COMM_WORLD);
  recv.upload(rank == 0 ? send_host : background);
  ASSERT_EQ(MPI_SUCCESS, MPI_Bcast(recv.get(), 1, v.type, 0, MPI_COMM_WORLD));
  EXPECT_EQ(expect, recv.download()) << "Bcast, vector";

  // Alltoallw with a vector to each peer.
  std::vector<int> counts(ranks, 1), displs(ranks);
  std::vector<MPI_Datatype> types(ranks, v.type);
  for (int i = 0; i < ranks; ++i) displs[i] = static_cast<int>(i * block);
  expect = reference([&](char* out) {
    PMPI_Alltoallw(send_host.data(), counts.data(), displs.data(), types.data(), out, counts.data(),
                   displs.data(), types.data(), MPI_COMM_WORLD);
  });
  recv.upload(background);
  ASSERT_EQ(MPI_SUCCESS,
            MPI_Alltoallw(send.get(), counts.data(), displs.data(), types.data(), recv.get(),
                          counts.data(), displs.data(), types.data(), MPI_COMM_WORLD));
  EXPECT_EQ(expect, recv.download()) << "Alltoallw, vector";
}

// A device message of more than INT_MAX packed bytes cannot travel as an int count of
// MPI_PACKED (PackedWire in transport/staging.hpp), and the host must never see the device
// pointer: 513 elements of 4 MiB packed each (blocks of 4 KiB, 64-byte gaps), 2^31 + 4 MiB in
// all, sent with MPI_Send and received with MPI_Irecv. Patterns fill three elements on each side
// (the rest stays zero, so that neither side holds more than the staging and the receiver's
// buffer in memory); the receiver's gaps keep their background. Once per job: the variants
// that set LOOM_DEVICE_COPY_BELOW take the same path here.
TEST(DeviceBuffers, MessagesBeyondAnIntCount) {
  if (std::getenv("LOOM_DEVICE_COPY_BELOW")) GTEST_SKIP() << "run by the default variant";
  constexpr int kBlocks = 1024, kBlock = 4096, kStride = kBlock + 64, kCount = 513;
  constexpr size_t kExtent = static_cast<size_t>(kBlocks - 1) * kStride + kBlock;
  MPI_Datatype type;
  ASSERT_EQ(MPI_SUCCESS, MPI_Type_create_hvector(kBlocks, kBlock, kStride, MPI_BYTE, &type));
  MPI_Datatype resized;
  ASSERT_EQ(MPI_SUCCESS, MPI_Type_create_resized(type, 0, kBlocks * kStride, &resized));
  MPI_Type_free(&type);
  ASSERT_EQ(MPI_SUCCESS, MPI_Type_commit(&resized));
  const size_t element = static_cast<size_t>(kBlocks) * kStride;
  const size_t span = (kCount - 1) * element + kExtent;
  ASSERT_GT(static_cast<int64_t>(kCount) * kBlocks * kBlock, int64_t{INT_MAX});
  DeviceBuffer device(span);
  ASSERT_NE(nullptr, device.get());
  char* base = static_cast<char*>(device.get());
  const int patterned[3] = {0, kCount / 2, kCount - 1};
  if (rank == 0) {
    for (int e : patterned) {
      const auto sent = pattern(element, 100 + e);
      device_copy(base + e * element, sent.data(), e == kCount - 1 ? kExtent : element);
    }
    EXPECT_EQ(MPI_SUCCESS, MPI_Send(base, kCount, resized, 1, 7, MPI_COMM_WORLD));
  } else {
    for (int e : patterned) {
      const auto background = pattern(element, 200 + e);
      device_copy(base + e * element, background.data(), e == kCount - 1 ? kExtent : element);
    }
    MPI_Request request;
    ASSERT_EQ(MPI_SUCCESS, MPI_Irecv(base, kCount, resized, 0, 7, MPI_COMM_WORLD, &request));
    MPI_Status status;
    ASSERT_EQ(MPI_SUCCESS, MPI_Wait(&request, &status));
    int received = 0;
    MPI_Get_count(&status, resized, &received);
    EXPECT_EQ(kCount, received);
    for (int e : patterned) {
      const auto sent = pattern(element, 100 + e);
      auto expect = pattern(element, 200 + e);
      for (int b = 0; b < kBlocks; ++b)
        std::memcpy(expect.data() + b * kStride, sent.data() + b * kStride, kBlock);
      const size_t bytes = e == kCount - 1 ? kExtent : element;
      std::vector<char> got(bytes);
      device_copy(got.data(), base + e * element, bytes);
      expect.resize(bytes);
      EXPECT_TRUE(expect == got) << "element " << e;
    }
    // An unpatterned element between them: its blocks arrive as the sender's zeros.
    std::vector<char> got(kBlock, 1);
    device_copy(got.data(), base + (kCount / 4) * element, kBlock);
    EXPECT_EQ(std::vector<char>(kBlock, 0), got);
  }
  MPI_Type_free(&resized);
}

// A collective whose device side Loom cannot stage (here 4 GiB per block, beyond an int count
// of bytes) is refused with MPI_ERR_UNSUPPORTED_OPERATION through the communicator's error
// handler on every rank, before anything moves: a host that cannot read device memory must not
// be handed it. The buffers are smaller than the call describes, since nothing may touch them.
TEST(DeviceBuffers, CollectivesLoomCannotStageAreRefused) {
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  DeviceBuffer send(1 << 20), recv(1 << 20);
  const int rc = MPI_Alltoall(send.get(), 1 << 30, MPI_INT, recv.get(), 1 << 30, MPI_INT, comm);
  int error_class = MPI_SUCCESS;
  MPI_Error_class(rc, &error_class);
  EXPECT_EQ(MPI_ERR_UNSUPPORTED_OPERATION, error_class);
  MPI_Comm_free(&comm);
}

// Device messages of the sizes around the seamed wire's range (transport/seamed_wire.hpp: under
// Open MPI a packed message of more than 2 KiB travels with its tail moved past a gap in the
// staging): contiguous bytes and a vector of 8-byte blocks, each by MPI_Send, MPI_Isend and a
// persistent send started twice with new data, against what the host delivers between host
// buffers.
TEST(DeviceBuffers, MessagesAroundTheSeamedWireSizes) {
  const int peer = 1 - rank;
  for (const int bytes : {2048, 2056, 4104, 65536, 300008}) {
    for (const bool contiguous : {true, false}) {
      MPI_Datatype type;
      if (contiguous)
        MPI_Type_contiguous(bytes, MPI_BYTE, &type);
      else
        MPI_Type_vector(bytes / 8, 1, 2, MPI_DOUBLE, &type);
      MPI_Type_commit(&type);
      MPI_Aint lb = 0, extent = 0;
      MPI_Type_get_extent(type, &lb, &extent);
      const size_t span = static_cast<size_t>(extent);
      const auto background = pattern(span, 500 + bytes);
      DeviceBuffer device(span);
      MPI_Request persistent = MPI_REQUEST_NULL;  // rank 0's, from mode 2
      for (int mode = 0; mode < 4; ++mode) {      // Send, Isend, persistent started twice
        const auto sent = pattern(span, 600 + bytes + 10 * mode);
        std::vector<char> expect = background;
        if (rank == 0)
          ASSERT_EQ(MPI_SUCCESS, PMPI_Send(sent.data(), 1, type, peer, 20, MPI_COMM_WORLD));
        else
          ASSERT_EQ(MPI_SUCCESS,
                    PMPI_Recv(expect.data(), 1, type, peer, 20, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        device.upload(rank == 0 ? sent : background);
        MPI_Request request = MPI_REQUEST_NULL;
        if (rank == 1) {
          ASSERT_EQ(MPI_SUCCESS,
                    MPI_Recv(device.get(), 1, type, peer, 21, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
          EXPECT_EQ(expect, device.download())
              << bytes << " bytes, contiguous " << contiguous << ", mode " << mode;
        } else if (mode == 0) {
          ASSERT_EQ(MPI_SUCCESS, MPI_Send(device.get(), 1, type, peer, 21, MPI_COMM_WORLD));
        } else if (mode == 1) {
          ASSERT_EQ(MPI_SUCCESS,
                    MPI_Isend(device.get(), 1, type, peer, 21, MPI_COMM_WORLD, &request));
          ASSERT_EQ(MPI_SUCCESS, MPI_Wait(&request, MPI_STATUS_IGNORE));
        } else if (mode == 2) {
          ASSERT_EQ(MPI_SUCCESS,
                    MPI_Send_init(device.get(), 1, type, peer, 21, MPI_COMM_WORLD, &request));
          ASSERT_EQ(MPI_SUCCESS, MPI_Start(&request));
          ASSERT_EQ(MPI_SUCCESS, MPI_Wait(&request, MPI_STATUS_IGNORE));
        } else {  // the request of mode 2 started again: it must send the buffer as it is now
          ASSERT_EQ(MPI_SUCCESS, MPI_Start(&persistent));
          ASSERT_EQ(MPI_SUCCESS, MPI_Wait(&persistent, MPI_STATUS_IGNORE));
          ASSERT_EQ(MPI_SUCCESS, MPI_Request_free(&persistent));
        }
        if (mode == 2 && rank == 0) persistent = request;
      }
      MPI_Type_free(&type);
    }
  }
}

TEST(DeviceBuffers, StatsCountDeviceStaging) {
  loom_stats s;
  loom_get_stats(&s);
  EXPECT_GT(s.device_staged, 0u);
  EXPECT_GT(s.device_staged_bytes, 0u);
}

}  // namespace

int main(int argc, char** argv) {
#if defined(LOOM_TEST_CUDA_DEVICE)
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("no CUDA device: the GPU variant of the device-buffer test is skipped\n");
    return 77;
  }
#endif
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  if (const char* s = std::getenv("LOOM_DEVICE_TEST_SEED"))
    seed = std::strtoull(s, nullptr, 10);
  else
    seed = std::random_device{}();
  MPI_Bcast(&seed, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
  if (rank == 0)
    std::printf("device buffers test seed %llu\n", static_cast<unsigned long long>(seed));
  if (ranks != 2) {
    if (rank == 0) std::fprintf(stderr, "run with 2 ranks\n");
    MPI_Finalize();
    return 1;
  }
  return loom::test::run_tests_and_finalize(&argc, argv);
}
