// loom-bench gpu: Comm|Scope's transfer measurements (Pearson 2021, ch. 3) and Loom's CUDA pack
// kernels against what a CUDA program can do without them, timed with CUDA events. No MPI:
// the same code runs as `loom-bench gpu` and as the MPI-free `loom-gpu-bench`.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <string>
#include <vector>

#include "bench/gpu/gpu_bench.hpp"
#include "bench/report.hpp"
#include "pack/device/executor.hpp"
#include "pack/device/program.hpp"
#include "pack/plan.hpp"
#include "types/ir.hpp"

namespace loom::bench {

namespace {

constexpr const char* kTool = "loom-bench gpu";
// The unit in which device memory reads and writes, as the pack measurements on an H100 show
// (docs/gpu.md): blocks of 32 B at a 64 B stride pack no faster than blocks of 8 B.
constexpr int64_t kDramBytes = 64;

#define CUDA_OK(call)                                                                     \
  do {                                                                                    \
    const cudaError_t rc_ = (call);                                                       \
    if (rc_ != cudaSuccess) {                                                             \
      std::fprintf(stderr, "%s: %s failed: %s\n", kTool, #call, cudaGetErrorString(rc_)); \
      std::exit(1);                                                                       \
    }                                                                                     \
  } while (0)

struct Options : SamplingOptions {
  Options() : SamplingOptions(50, 5, 0.4) {}
  bool transfers = true, packs = true;
  int64_t max_transfer = int64_t{1} << 30;
  std::vector<int64_t> pack_sizes;
  std::string types_filter;
  int loop_blocks = 4096;  // blocks the cudaMemcpyAsync-per-block baseline is timed on
};

void usage(FILE* out) {
  std::fprintf(
      out,
      "usage: loom-bench gpu [options]\n"
      "  CUDA transfers (Comm|Scope's method) and Loom's device pack kernels, timed with CUDA\n"
      "  events (docs/gpu.md).\n"
      "  --quick              fewer sizes and samples (transfers up to 256 MiB)\n"
      "  --transfers-only     skip the pack comparison\n"
      "  --packs-only         skip the transfer sweep\n"
      "  --max-transfer SIZE  largest transfer (default 1G; --quick 256M)\n"
      "  --sizes LIST         packed bytes per pack case (default 64K,1M,16M,64M; --quick "
      "1M,16M)\n"
      "  --types SUBSTR       pack cases whose name contains SUBSTR\n"
      "  --loop-blocks N      blocks the per-block cudaMemcpyAsync baseline is timed on, the\n"
      "                       rest extrapolated (default 4096)\n"
      "  --reps N             most samples per measurement (default 50)\n"
      "  --time SECONDS       time per measurement (default 0.4)\n"
      "  --json FILE          write the results as JSON\n");
}

// ---------------------------------------------------------------------------------------------
// Timing with CUDA events: the median over samples of one enqueued operation, after a warm-up.

struct Events {
  cudaEvent_t start, stop;
  Events() {
    CUDA_OK(cudaEventCreate(&start));
    CUDA_OK(cudaEventCreate(&stop));
  }
  ~Events() {
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
  }
};

// `before`, when given, is enqueued ahead of each sample's start event, untimed.
Summary time_op(const Options& o, cudaStream_t s, const std::function<void()>& op,
                const std::function<void()>& before = {}) {
  Events ev;
  op();  // warm-up: first-touch, module load, page migration
  CUDA_OK(cudaStreamSynchronize(s));
  std::vector<double> samples;
  const auto begin = std::chrono::steady_clock::now();
  while (static_cast<int>(samples.size()) < o.max_reps) {
    if (before) before();
    CUDA_OK(cudaEventRecord(ev.start, s));
    op();
    CUDA_OK(cudaEventRecord(ev.stop, s));
    CUDA_OK(cudaEventSynchronize(ev.stop));
    float ms = 0;
    CUDA_OK(cudaEventElapsedTime(&ms, ev.start, ev.stop));
    samples.push_back(ms * 1e-3);
    const double spent =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
    if (static_cast<int>(samples.size()) >= o.min_reps && spent > o.seconds_per_case) break;
  }
  return summarize(samples);
}

// ---------------------------------------------------------------------------------------------
// Kernels of the transfer sweep.

__global__ void copy_kernel(const uint4* __restrict__ src, uint4* __restrict__ dst, size_t n) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n;
       i += size_t{gridDim.x} * blockDim.x)
    dst[i] = src[i];
}

// Reads every byte and writes one word only if a flag says so: a read the compiler keeps
// (Comm|Scope's gpu_read).
__global__ void read_kernel(const uint4* __restrict__ src, size_t n, uint4* flag) {
  uint4 acc{0, 0, 0, 0};
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n;
       i += size_t{gridDim.x} * blockDim.x) {
    const uint4 v = src[i];
    acc.x ^= v.x, acc.y ^= v.y, acc.z ^= v.z, acc.w ^= v.w;
  }
  if (flag && acc.x == 0x12345678u) *flag = acc;
}

__global__ void write_kernel(uint4* dst, size_t n) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n;
       i += size_t{gridDim.x} * blockDim.x)
    dst[i] = make_uint4(static_cast<unsigned>(i), 1, 2, 3);
}

// Holds a stream until `cycles` have passed, so that both directions of a bidirectional
// transfer are enqueued before either starts (Comm|Scope §3.1.2).
__global__ void spin_kernel(long long cycles) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
}

int grid_blocks() {
  int device = 0, sms = 1;
  cudaGetDevice(&device);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  return sms * 8;
}

// Starts each pack-case sample from a cold cache with the device already busy: a kernel reads
// a buffer twice the L2's size, which evicts the last sample's lines (clean ones, so nothing is
// written back inside the timing) and holds the stream while the host enqueues the operation.
// The events then time the device's work on data that is not in L2, as an application's fields
// are not, rather than the host's enqueue or a warm cache that favours the smaller working set
// (a memcpy of the packed bytes over a pack that reads a span twice as large).
class ColdStart {
 public:
  ColdStart() {
    int device = 0, l2 = 0;
    cudaGetDevice(&device);
    cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device);
    words_ =
        std::max<size_t>(size_t{2} * static_cast<size_t>(l2), size_t{64} << 20) / sizeof(uint4);
    CUDA_OK(cudaMalloc(&sweep_, words_ * sizeof(uint4)));
    CUDA_OK(cudaMemset(sweep_, 1, words_ * sizeof(uint4)));
  }
  ~ColdStart() { cudaFree(sweep_); }
  ColdStart(const ColdStart&) = delete;
  ColdStart& operator=(const ColdStart&) = delete;
  std::function<void()> on(cudaStream_t s) const {
    return [this, s] { read_kernel<<<blocks_, 256, 0, s>>>(sweep_, words_, nullptr); };
  }

 private:
  uint4* sweep_ = nullptr;
  size_t words_ = 0;
  int blocks_ = grid_blocks();
};

// ---------------------------------------------------------------------------------------------
// Transfers.

struct TransferRow {
  std::string kind;
  int64_t bytes;
  Summary seconds;
  bool bidirectional;
};

std::vector<int64_t> transfer_sizes(const Options& o) {
  std::vector<int64_t> sizes;
  const int step = o.quick ? 4 : 2;  // powers of 16 or of 4
  for (int64_t b = 1; b <= o.max_transfer; b <<= step) sizes.push_back(b);
  if (sizes.back() != o.max_transfer) sizes.push_back(o.max_transfer);
  return sizes;
}

// Times the two directions of a copy at once: a spin kernel holds stream a while both are
// enqueued; the time is from the spin's end to the later of the two finishes. The spin is
// lengthened until it outlasts the enqueueing.
double bidirectional_seconds(cudaStream_t a, cudaStream_t b, const std::function<void()>& enqueue_a,
                             const std::function<void()>& enqueue_b) {
  Events ev;
  cudaEvent_t done_b;
  CUDA_OK(cudaEventCreate(&done_b));
  long long cycles = 200000;
  double seconds = 0;
  for (int tries = 0; tries < 12; ++tries) {
    spin_kernel<<<1, 1, 0, a>>>(cycles);
    CUDA_OK(cudaEventRecord(ev.start, a));
    CUDA_OK(cudaStreamWaitEvent(b, ev.start, 0));
    enqueue_a();
    enqueue_b();
    CUDA_OK(cudaEventRecord(done_b, b));
    CUDA_OK(cudaStreamWaitEvent(a, done_b, 0));
    CUDA_OK(cudaEventRecord(ev.stop, a));
    const bool started_late = cudaEventQuery(ev.start) == cudaErrorNotReady;
    CUDA_OK(cudaEventSynchronize(ev.stop));
    float ms = 0;
    CUDA_OK(cudaEventElapsedTime(&ms, ev.start, ev.stop));
    seconds = ms * 1e-3;
    if (started_late) break;
    cycles *= 4;
  }
  cudaEventDestroy(done_b);
  return seconds;
}

std::vector<TransferRow> run_transfers(const Options& o) {
  std::vector<TransferRow> rows;
  const int64_t max = o.max_transfer;
  cudaStream_t s, s2;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CUDA_OK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  void *d1, *d2, *pinned1, *pinned2, *mapped, *managed;
  const size_t bytes = static_cast<size_t>(max);
  CUDA_OK(cudaMalloc(&d1, 2 * bytes));  // 2x: the 2-D copy's source pitch
  CUDA_OK(cudaMalloc(&d2, 2 * bytes));
  CUDA_OK(cudaHostAlloc(&pinned1, bytes, cudaHostAllocDefault));
  CUDA_OK(cudaHostAlloc(&pinned2, bytes, cudaHostAllocDefault));
  CUDA_OK(cudaHostAlloc(&mapped, bytes, cudaHostAllocMapped));
  CUDA_OK(cudaMallocManaged(&managed, bytes));
  std::vector<unsigned char> pageable1(bytes), pageable2(bytes);
  std::memset(pageable1.data(), 1, bytes);
  std::memset(pageable2.data(), 2, bytes);
  std::memset(pinned1, 3, bytes);
  std::memset(pinned2, 4, bytes);
  std::memset(mapped, 5, bytes);
  CUDA_OK(cudaMemset(d1, 6, 2 * bytes));
  CUDA_OK(cudaMemset(d2, 7, 2 * bytes));
  int device = 0;
  CUDA_OK(cudaGetDevice(&device));
  cudaMemLocation device_location{}, host_location{};
  device_location.type = cudaMemLocationTypeDevice;
  device_location.id = device;
  host_location.type = cudaMemLocationTypeHost;
  const int blocks = grid_blocks();
  void* mapped_dev = nullptr;
  CUDA_OK(cudaHostGetDevicePointer(&mapped_dev, mapped, 0));

  for (int64_t n : transfer_sizes(o)) {
    const size_t z = static_cast<size_t>(n);
    const size_t words = std::max<size_t>(z / 16, 1);
    auto add = [&](const char* kind, const std::function<void()>& op) {
      rows.push_back({kind, n, time_op(o, s, op), false});
    };
    add("pageable->device",
        [&] { cudaMemcpyAsync(d1, pageable1.data(), z, cudaMemcpyHostToDevice, s); });
    add("device->pageable",
        [&] { cudaMemcpyAsync(pageable2.data(), d1, z, cudaMemcpyDeviceToHost, s); });
    add("pinned->device", [&] { cudaMemcpyAsync(d1, pinned1, z, cudaMemcpyHostToDevice, s); });
    add("device->pinned", [&] { cudaMemcpyAsync(pinned2, d1, z, cudaMemcpyDeviceToHost, s); });
    add("device->device", [&] { cudaMemcpyAsync(d2, d1, z, cudaMemcpyDeviceToDevice, s); });
    add("device->device kernel", [&] {
      copy_kernel<<<blocks, 256, 0, s>>>(static_cast<const uint4*>(d1), static_cast<uint4*>(d2),
                                         words);
    });
    add("mapped->kernel (zero-copy read)", [&] {
      read_kernel<<<blocks, 256, 0, s>>>(static_cast<const uint4*>(mapped_dev), words, nullptr);
    });
    add("kernel->mapped (zero-copy write)",
        [&] { write_kernel<<<blocks, 256, 0, s>>>(static_cast<uint4*>(mapped_dev), words); });
    // cudaMemcpy2DAsync with rows of half the pitch: a strided copy by the copy engines.
    const size_t width = std::max<size_t>(z / 64, 1), height = std::max<size_t>(z / width, 1);
    add("2D device->device (pitch 2x)", [&] {
      cudaMemcpy2DAsync(d2, width, d1, 2 * width, width, height, cudaMemcpyDeviceToDevice, s);
    });
    add("2D device->pinned (pitch 2x)", [&] {
      cudaMemcpy2DAsync(pinned2, width, d1, 2 * width, width, height, cudaMemcpyDeviceToHost, s);
    });
    // Managed memory: demand migration (host touches, then a kernel reads) and prefetch.
    {
      std::vector<double> demand, prefetch;
      Events ev;
      for (int r = 0; r < std::max(3, o.min_reps); ++r) {
        std::memset(managed, r, z);  // pages now on the host
        CUDA_OK(cudaEventRecord(ev.start, s));
        read_kernel<<<blocks, 256, 0, s>>>(static_cast<const uint4*>(managed), words, nullptr);
        CUDA_OK(cudaEventRecord(ev.stop, s));
        CUDA_OK(cudaEventSynchronize(ev.stop));
        float ms = 0;
        CUDA_OK(cudaEventElapsedTime(&ms, ev.start, ev.stop));
        demand.push_back(ms * 1e-3);
        std::memset(managed, r + 1, z);
        CUDA_OK(cudaEventRecord(ev.start, s));
        CUDA_OK(cudaMemPrefetchAsync(managed, z, device_location, 0, s));
        CUDA_OK(cudaEventRecord(ev.stop, s));
        CUDA_OK(cudaEventSynchronize(ev.stop));
        CUDA_OK(cudaEventElapsedTime(&ms, ev.start, ev.stop));
        prefetch.push_back(ms * 1e-3);
      }
      rows.push_back({"managed host->device (demand)", n, summarize(demand), false});
      rows.push_back({"managed host->device (prefetch)", n, summarize(prefetch), false});
      CUDA_OK(cudaMemPrefetchAsync(managed, z, host_location, 0, s));
      CUDA_OK(cudaStreamSynchronize(s));
    }
    // Bidirectional pinned <-> device on two streams.
    {
      std::vector<double> both;
      for (int r = 0; r < std::max(3, o.min_reps); ++r)
        both.push_back(bidirectional_seconds(
            s, s2, [&] { cudaMemcpyAsync(d1, pinned1, z, cudaMemcpyHostToDevice, s); },
            [&] { cudaMemcpyAsync(pinned2, d2, z, cudaMemcpyDeviceToHost, s2); }));
      rows.push_back({"pinned<->device (bidirectional)", n, summarize(both), true});
    }
    CUDA_OK(cudaGetLastError());
  }
  cudaFree(d1);
  cudaFree(d2);
  cudaFreeHost(pinned1);
  cudaFreeHost(pinned2);
  cudaFreeHost(mapped);
  cudaFree(managed);
  cudaStreamDestroy(s);
  cudaStreamDestroy(s2);
  return rows;
}

// ---------------------------------------------------------------------------------------------
// Pack cases: the shapes of loom-bench pack's corpus, built from Loom's IR (no MPI here).

struct PackCase {
  std::string name;
  int64_t block;  // bytes per contiguous block
  types::Layout layout;
  int64_t packed, span;
};

using types::make_dense;
using types::make_repeat;

PackCase vec1d(int64_t block, int64_t target) {
  const int64_t n = std::max<int64_t>(1, target / block);
  return {format("vec1d_b%lld", static_cast<long long>(block)),
          block,
          {{0, make_repeat(n, 2 * block, make_dense(block))}},
          n * block,
          2 * n * block};
}

PackCase vec2d(int64_t block, int64_t target) {
  const int64_t n = std::max<int64_t>(1, target / block);
  const int64_t n1 = std::max<int64_t>(1, static_cast<int64_t>(std::sqrt(double(n))));
  const int64_t n2 = std::max<int64_t>(1, n / n1);
  const int64_t pitch = (2 * n1 + 2) * block;
  return {format("vec2d_b%lld", static_cast<long long>(block)),
          block,
          {{0, make_repeat(n2, pitch, make_repeat(n1, 2 * block, make_dense(block)))}},
          n1 * n2 * block,
          n2 * pitch};
}

PackCase vec3d(int64_t block, int64_t target) {
  const int64_t n = std::max<int64_t>(1, target / block);
  const int64_t n1 = std::max<int64_t>(1, static_cast<int64_t>(std::cbrt(double(n))));
  const int64_t n2 = std::max<int64_t>(1, static_cast<int64_t>(std::sqrt(double(n / n1))));
  const int64_t n3 = std::max<int64_t>(1, n / (n1 * n2));
  const int64_t pitch2 = (2 * n1 + 2) * block, pitch3 = (n2 + 1) * pitch2;
  return {
      format("vec3d_b%lld", static_cast<long long>(block)),
      block,
      {{0, make_repeat(n3, pitch3,
                       make_repeat(n2, pitch2, make_repeat(n1, 2 * block, make_dense(block))))}},
      n1 * n2 * n3 * block,
      n3 * pitch3};
}

// The x face (2 cells deep) of a box of doubles 32 cells wide: 16-byte blocks one 256-byte
// row apart, over a square of rows.
PackCase x_face(int64_t target) {
  const int64_t e = 8, depth = 2, nx = 32;
  const int64_t side =
      std::max<int64_t>(4, static_cast<int64_t>(std::sqrt(double(target / (depth * e)))));
  return {"subarray_xface",
          depth * e,
          {{0, make_repeat(side, side * nx * e, make_repeat(side, nx * e, make_dense(depth * e)))}},
          side * side * depth * e,
          side * side * nx * e};
}

// An indexed_block type: 16-byte blocks at random gaps of 1 to 4 blocks.
PackCase indexed_b16(int64_t target) {
  const int64_t n = std::max<int64_t>(1, target / 16);
  std::vector<types::Placed> items;
  uint64_t state = 12345;
  int64_t at = 0;
  for (int64_t i = 0; i < n; ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    at += 16 * static_cast<int64_t>(1 + (state >> 33) % 4);
    items.push_back({at, make_dense(16)});
  }
  return {"indexed_b16", 16, {{0, types::make_sequence(items)}}, n * 16, at + 16};
}

std::vector<PackCase> pack_cases(int64_t target) {
  std::vector<PackCase> cases;
  for (int64_t b : {1, 2, 4, 8, 16, 32, 64, 128, 256}) cases.push_back(vec1d(b, target));
  for (int64_t b : {4, 8, 16, 64}) cases.push_back(vec2d(b, target));
  for (int64_t b : {4, 8, 16, 64}) cases.push_back(vec3d(b, target));
  cases.push_back(x_face(target));
  cases.push_back(indexed_b16(target));
  return cases;
}

struct PackRow {
  std::string name;
  int64_t block, packed, span, blocks;
  Summary pack, unpack, memcpy_packed, oneshot_pack, staged_pack;
  double memcpy2d = 0;  // seconds, 0 where the shape is not one cudaMemcpy2D series
  int64_t memcpy2d_calls = 0;
  double block_loop = 0;  // seconds for every block, extrapolated from loop_blocks
  int64_t loop_timed = 0;
  int64_t units_touched = 0, units_partial = 0;  // kDramBytes units of the user buffer
  bool verified = false;
};

// Every block's (offset, length) in packed order.
std::vector<std::pair<int64_t, int64_t>> blocks_of(const types::Layout& layout) {
  std::vector<std::pair<int64_t, int64_t>> out;
  types::for_each_block(layout, [&](int64_t off, int64_t len) {
    if (!out.empty() && out.back().first + out.back().second == off)
      out.back().second += len;
    else
      out.emplace_back(off, len);
  });
  return out;
}

PackRow run_pack_case(const Options& o, const PackCase& c, pack::device::Executor& gpu,
                      const ColdStart& cold) {
  PackRow row;
  row.name = c.name;
  row.block = c.block;
  row.packed = c.packed;
  const types::Layout canonical = types::canonicalize(c.layout);
  const pack::Plan plan(canonical, 0, pack::Isa::Scalar);
  const auto bounds = types::bounds(c.layout);
  row.span = bounds.hi - bounds.lo;
  const auto blocks = blocks_of(c.layout);
  row.blocks = static_cast<int64_t>(blocks.size());
  const pack::device::Program& program = plan.device_program();
  cudaStream_t s;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));

  char *user, *packed, *packed2, *oneshot, *oneshot_dev, *staged_host;
  CUDA_OK(cudaMalloc(&user, static_cast<size_t>(row.span)));
  CUDA_OK(cudaMalloc(&packed, static_cast<size_t>(row.packed)));
  CUDA_OK(cudaMalloc(&packed2, static_cast<size_t>(row.packed)));
  CUDA_OK(cudaHostAlloc(&oneshot, static_cast<size_t>(row.packed), cudaHostAllocMapped));
  CUDA_OK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&oneshot_dev), oneshot, 0));
  CUDA_OK(cudaHostAlloc(&staged_host, static_cast<size_t>(row.packed), cudaHostAllocDefault));
  char* const origin = user - bounds.lo;

  // Correctness first: the device's packed bytes equal the CPU plan's, and so does a round
  // trip through unpack.
  {
    std::vector<char> host(static_cast<size_t>(row.span));
    for (size_t i = 0; i < host.size(); ++i) host[i] = static_cast<char>(i * 131 + 7);
    CUDA_OK(cudaMemcpy(user, host.data(), host.size(), cudaMemcpyHostToDevice));
    std::vector<char> expect(static_cast<size_t>(row.packed)), got(expect.size());
    plan.pack(host.data() - bounds.lo, 1, expect.data());
    const auto st = gpu.pack(program, origin, 1, packed, s);
    if (!st) std::fprintf(stderr, "%s: %s: %s\n", kTool, c.name.c_str(), st.message.c_str());
    CUDA_OK(cudaStreamSynchronize(s));
    CUDA_OK(cudaMemcpy(got.data(), packed, got.size(), cudaMemcpyDeviceToHost));
    row.verified = expect == got;
    CUDA_OK(cudaMemset(user, 0, static_cast<size_t>(row.span)));
    gpu.unpack(program, packed, 1, origin, s);
    CUDA_OK(cudaStreamSynchronize(s));
    std::vector<char> back(host.size()), expect_back(host.size(), 0);
    plan.unpack(expect.data(), 1, expect_back.data() - bounds.lo);
    CUDA_OK(cudaMemcpy(back.data(), user, back.size(), cudaMemcpyDeviceToHost));
    row.verified = row.verified && back == expect_back;
  }

  const std::function<void()> start_cold = cold.on(s);
  row.pack = time_op(
      o, s, [&] { gpu.pack(program, origin, 1, packed, s); }, start_cold);
  row.unpack = time_op(
      o, s, [&] { gpu.unpack(program, packed, 1, origin, s); }, start_cold);
  row.memcpy_packed = time_op(
      o, s,
      [&] {
        cudaMemcpyAsync(packed2, packed, static_cast<size_t>(row.packed), cudaMemcpyDeviceToDevice,
                        s);
      },
      start_cold);
  row.oneshot_pack = time_op(
      o, s, [&] { gpu.pack(program, origin, 1, oneshot_dev, s); }, start_cold);
  row.staged_pack = time_op(
      o, s,
      [&] {
        gpu.pack(program, origin, 1, packed, s);
        cudaMemcpyAsync(staged_host, packed, static_cast<size_t>(row.packed),
                        cudaMemcpyDeviceToHost, s);
      },
      start_cold);

  // cudaMemcpy2DAsync: one call per 2-D slab (block width, source pitch the innermost stride,
  // rows the innermost count); only for shapes that are a plain series of such slabs.
  if (program.table().empty() && program.segments().size() == 1 &&
      program.segments()[0].ndims >= 2) {
    const pack::device::Segment& g = program.segments()[0];
    const int64_t width = g.count[0] * g.word;
    int64_t slabs = 1;
    for (int d = 2; d < g.ndims; ++d) slabs *= g.count[d];
    row.memcpy2d_calls = slabs;
    const int64_t slab_limit = std::min<int64_t>(slabs, 4096);
    const Summary t = time_op(
        o, s,
        [&] {
          int64_t idx[pack::device::kCopyDims] = {};
          for (int64_t k = 0; k < slab_limit; ++k) {
            int64_t uoff = g.user_disp, poff = g.packed_disp;
            for (int d = 2; d < g.ndims; ++d)
              uoff += idx[d] * g.user_stride[d], poff += idx[d] * g.packed_stride[d];
            cudaMemcpy2DAsync(packed + poff, static_cast<size_t>(width), origin + uoff,
                              static_cast<size_t>(g.user_stride[1]), static_cast<size_t>(width),
                              static_cast<size_t>(g.count[1]), cudaMemcpyDeviceToDevice, s);
            for (int d = 2; d < g.ndims && ++idx[d] == g.count[d]; ++d) idx[d] = 0;
          }
        },
        start_cold);
    row.memcpy2d = t.median * static_cast<double>(slabs) / static_cast<double>(slab_limit);
  }

  // The memory system's bound: device memory moves whole kDramBytes units, so a pack reads
  // every unit a block touches, and an unpack that covers a unit only in part reads it too
  // before writing it back.
  {
    std::vector<uint8_t> covered(static_cast<size_t>((row.span + kDramBytes - 1) / kDramBytes));
    for (auto [off, len] : blocks)
      for (int64_t at = off - bounds.lo; at < off - bounds.lo + len;) {
        const int64_t unit = at / kDramBytes,
                      end = std::min(off - bounds.lo + len, (unit + 1) * kDramBytes);
        covered[static_cast<size_t>(unit)] =
            static_cast<uint8_t>(covered[static_cast<size_t>(unit)] + (end - at));
        at = end;
      }
    for (uint8_t bytes : covered) {
      if (bytes == 0) continue;
      ++row.units_touched;
      if (bytes < kDramBytes) ++row.units_partial;
    }
  }

  // What an engine without device kernels does: one cudaMemcpyAsync per block. Timed on the
  // first loop_blocks blocks and scaled to all of them.
  {
    row.loop_timed = std::min<int64_t>(row.blocks, o.loop_blocks);
    Options once = o;
    once.min_reps = 3;
    once.max_reps = 5;
    const Summary t = time_op(
        once, s,
        [&] {
          int64_t at = 0;
          for (int64_t i = 0; i < row.loop_timed; ++i) {
            const auto [off, len] = blocks[static_cast<size_t>(i)];
            cudaMemcpyAsync(packed + at, origin + off, static_cast<size_t>(len),
                            cudaMemcpyDeviceToDevice, s);
            at += len;
          }
        },
        start_cold);
    row.block_loop =
        t.median * static_cast<double>(row.blocks) / static_cast<double>(row.loop_timed);
  }
  CUDA_OK(cudaGetLastError());
  cudaFree(user);
  cudaFree(packed);
  cudaFree(packed2);
  cudaFreeHost(oneshot);
  cudaFreeHost(staged_host);
  cudaStreamDestroy(s);
  return row;
}

// Returns -1 to continue, or an exit code.
int parse_options(int argc, char** argv, Options* o) {
  const int parsed = parse_subcommand_options(
      argc, argv, kTool, o, usage, {"--max-transfer", "--sizes", "--types", "--loop-blocks"},
      [&](const std::string& a, const char* v) {
        if (a == "--transfers-only" || a == "--packs-only") {
          (a == "--transfers-only" ? o->packs : o->transfers) = false;
          return OptionParse::Taken;
        }
        if (!v) return OptionParse::NotMine;
        if (a == "--sizes") {
          return parse_size_list(kTool, "--sizes", v, &o->pack_sizes) ? OptionParse::Taken
                                                                      : OptionParse::Bad;
        }
        if (a == "--types") {
          o->types_filter = v;
        } else if (a == "--max-transfer" ? !parse_size(v, &o->max_transfer)
                                         : !parse_positive(v, &o->loop_blocks)) {
          bad_option_value(kTool, a.c_str());
          return OptionParse::Bad;
        }
        return OptionParse::Taken;
      });
  if (parsed >= 0) return parsed;
  o->finish(0.1);
  const bool max_given = o->max_transfer != (int64_t{1} << 30);
  if (o->quick && !max_given) o->max_transfer = 256 * kMiB;
  if (o->pack_sizes.empty())
    o->pack_sizes = o->quick ? std::vector<int64_t>{kMiB, 16 * kMiB}
                             : std::vector<int64_t>{64 * kKiB, kMiB, 16 * kMiB, 64 * kMiB};
  return -1;
}

void report_transfers(const Options& o, JsonWriter& j) {
  const auto rows = run_transfers(o);
  Table t({"transfer", "bytes", "median us", "GB/s", "p10-p90 us"});
  j.begin_array("transfers");
  for (const auto& r : rows) {
    const int64_t moved = r.bidirectional ? 2 * r.bytes : r.bytes;
    t.add_row({r.kind, human_bytes(r.bytes), format("%.2f", r.seconds.median * 1e6),
               format("%.2f", gbps(moved, r.seconds.median)),
               format("%.1f-%.1f", r.seconds.p10 * 1e6, r.seconds.p90 * 1e6)});
    j.begin_object();
    j.field("kind", r.kind);
    j.field("bytes", r.bytes);
    j.field("bidirectional", r.bidirectional);
    j.field("seconds", r.seconds);
    j.field("gbps", gbps(moved, r.seconds.median));
    j.end_object();
  }
  j.end_array();
  std::printf("\nTransfers (CUDA events; bidirectional counts both directions)\n");
  t.print(stdout);
}

// "  <what>: geomean <v>, least <v> (<case>)", a share as a percentage, a speed-up as "x".
void print_case_stats(const char* what, const CaseStats& stats, bool percent) {
  if (stats.empty()) return;
  const double scale = percent ? 100 : 1;
  const char* unit = percent ? "%" : "x";
  std::printf("  %s: geomean %.*f%s, least %.*f%s (%s), most %.*f%s (%s)\n", what, percent ? 0 : 1,
              scale * stats.geomean(), unit, percent ? 0 : 1, scale * stats.min, unit,
              stats.min_case.c_str(), percent ? 0 : 1, scale * stats.max, unit,
              stats.max_case.c_str());
}

// The pack cases, with a summary; returns how many had a data mismatch.
int report_packs(const Options& o, pack::device::Executor& gpu, JsonWriter& j) {
  CaseStats bw, of_bound, loop, m2d;  // over the cases each line of the summary names
  std::vector<std::string> mismatched;
  size_t cases = 0;
  Table t({"case", "packed", "block", "pack GB/s", "unpack GB/s", "memcpy GB/s", "pack %",
           "unpack %", "pack/bound", "unpack/bound", "one-shot GB/s", "staged GB/s", "x 2D",
           "x loop", "ok"});
  const ColdStart cold;
  j.field("pack_timing", "device time from a cold L2, each sample behind an untimed sweep");
  j.begin_array("packs");
  for (int64_t size : o.pack_sizes)
    for (const PackCase& c : pack_cases(size)) {
      if (!o.types_filter.empty() && c.name.find(o.types_filter) == std::string::npos) continue;
      const PackRow r = run_pack_case(o, c, gpu, cold);
      std::fprintf(stderr, "%s: %s %s done\n", kTool, c.name.c_str(),
                   human_bytes(c.packed).c_str());
      const double pack_bw = gbps(r.packed, r.pack.median);
      const double unpack_bw = gbps(r.packed, r.unpack.median);
      const double memcpy_bw = gbps(r.packed, r.memcpy_packed.median);
      const double x2d = r.memcpy2d > 0 ? r.memcpy2d / r.pack.median : 0;
      const double xloop = r.block_loop / r.pack.median;
      // Bound: the bytes the memory must move at the rate memcpy moves its 2 x packed.
      const double rate = 2.0 * static_cast<double>(r.packed) / r.memcpy_packed.median;
      const double unit_bytes = static_cast<double>(r.units_touched * kDramBytes);
      const double pack_bound = (unit_bytes + static_cast<double>(r.packed)) / rate;
      const double unpack_bound =
          (unit_bytes + static_cast<double>(r.units_partial * kDramBytes + r.packed)) / rate;
      const std::string label = r.name + " " + human_bytes(r.packed);
      ++cases;
      if (!r.verified) mismatched.push_back(label);
      if (r.block >= 8 && r.packed >= 16 * kMiB) {
        bw.add(pack_bw / memcpy_bw, label + " pack");
        bw.add(unpack_bw / memcpy_bw, label + " unpack");
        of_bound.add(pack_bound / r.pack.median, label + " pack");
        of_bound.add(unpack_bound / r.unpack.median, label + " unpack");
      }
      if (r.block <= 16) loop.add(xloop, label);
      if (r.block <= 64 && x2d > 0) m2d.add(x2d, label);
      t.add_row({r.name, human_bytes(r.packed), std::to_string(r.block), format("%.1f", pack_bw),
                 format("%.1f", unpack_bw), format("%.1f", memcpy_bw),
                 format("%.0f%%", 100 * pack_bw / memcpy_bw),
                 format("%.0f%%", 100 * unpack_bw / memcpy_bw),
                 format("%.0f%%", 100 * pack_bound / r.pack.median),
                 format("%.0f%%", 100 * unpack_bound / r.unpack.median),
                 format("%.1f", gbps(r.packed, r.oneshot_pack.median)),
                 format("%.1f", gbps(r.packed, r.staged_pack.median)),
                 x2d > 0 ? format("%.1f", x2d) : std::string("-"), format("%.0f", xloop),
                 r.verified ? "yes" : "NO"});
      j.begin_object();
      j.field("case", r.name);
      j.field("packed_bytes", r.packed);
      j.field("span_bytes", r.span);
      j.field("block_bytes", r.block);
      j.field("blocks", r.blocks);
      j.field("verified", r.verified);
      j.field("pack_seconds", r.pack);
      j.field("unpack_seconds", r.unpack);
      j.field("memcpy_seconds", r.memcpy_packed);
      j.field("oneshot_pack_seconds", r.oneshot_pack);
      j.field("staged_pack_seconds", r.staged_pack);
      j.field("memcpy2d_seconds", r.memcpy2d);
      j.field("memcpy2d_calls", r.memcpy2d_calls);
      j.field("block_loop_seconds", r.block_loop);
      j.field("pack_bound_seconds", pack_bound);
      j.field("unpack_bound_seconds", unpack_bound);
      j.field("dram_units_touched", r.units_touched);
      j.field("dram_units_partial", r.units_partial);
      j.field("block_loop_timed_blocks", r.loop_timed);
      j.end_object();
    }
  j.end_array();
  std::printf(
      "\nDevice packs (GB/s of packed bytes; %% of a device memcpy of the packed bytes; "
      "one-shot packs into mapped host memory, staged packs then copies to pinned host; x 2D "
      "and x loop: Loom's speed-up over cudaMemcpy2DAsync and over one cudaMemcpyAsync per "
      "block, the loop timed on %d blocks and scaled; every sample starts from a cold L2 "
      "behind an untimed sweep, so the host's enqueue is not timed)\n",
      o.loop_blocks);
  t.print(stdout);
  std::printf("\nSummary (pack and unpack counted separately)\n");
  print_case_stats(
      "blocks >= 8 B, >= 16 MiB: Loom's speed as a share of a device memcpy of the "
      "packed bytes",
      bw, true);
  print_case_stats("blocks >= 8 B, >= 16 MiB: Loom's speed as a share of the memory's bound",
                   of_bound, true);
  print_case_stats(
      "blocks <= 16 B: pack's speed-up over one cudaMemcpyAsync per block (the loop "
      "timed on a sample of blocks and scaled)",
      loop, false);
  print_case_stats("blocks <= 64 B: pack's speed-up over cudaMemcpy2DAsync", m2d, false);
  print_verification("the device's packed and unpacked bytes against the CPU's", mismatched, cases);
  j.begin_object("summary");
  write_case_stats(j, "of_memcpy", bw);
  write_case_stats(j, "of_bound", of_bound);
  write_case_stats(j, "over_block_loop", loop);
  write_case_stats(j, "over_memcpy2d", m2d);
  j.field("verification_failures", mismatched.size());
  j.end_object();
  return static_cast<int>(mismatched.size());
}

}  // namespace

int run_gpu(int argc, char** argv) {
  Options o;
  if (const int rc = parse_options(argc, argv, &o); rc >= 0) return rc;

  pack::device::Executor& gpu = pack::device::cuda_executor();
  if (!gpu.available()) {
    std::fprintf(stderr, "%s: no GPU to measure: %s\n", kTool, gpu.device_name().c_str());
    return 1;
  }
  int runtime = 0, driver = 0;
  cudaRuntimeGetVersion(&runtime);
  cudaDriverGetVersion(&driver);
  std::printf("loom-bench gpu: %s, CUDA runtime %d, driver %d\n", gpu.device_name().c_str(),
              runtime, driver);

  JsonWriter j;
  j.begin_object();
  j.field("subcommand", "gpu");
  j.begin_object("device");
  j.field("name", gpu.device_name());
  j.field("cuda_runtime", runtime);
  j.field("cuda_driver", driver);
  j.end_object();
  j.field("quick", o.quick);
  if (o.transfers) report_transfers(o, j);
  if (o.packs && report_packs(o, gpu, j) > 0) {
    if (!o.json_path.empty()) finish_json_report(j, o.json_path, kTool);
    return 1;
  }
  if (!o.json_path.empty() && !finish_json_report(j, o.json_path, kTool)) return 1;
  return 0;
}

}  // namespace loom::bench
