// Every executor against the same expected bytes, taken straight from the typemap: the CPU
// executor (pack::Plan's own pack and unpack, one case per ISA this CPU runs), the emulated
// device and the CUDA executor, in one parameterised suite (ExecutorTest). Packed bytes,
// unpacked buffers and the guard bytes around both must agree with the reference. Built
// twice: executor_tests runs the CPU ISAs and the emulated device (runs everywhere, label
// "unit"); cuda_executor_tests the CUDA executor (label "gpu": skipped, saying why, where it
// is not built or no GPU is present). The multiply-and-shift division is checked in both.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "pack/device/executor.hpp"
#include "pack/device/fast_divmod.hpp"
#include "pack/device/program.hpp"
#include "pack/device/row_copies.hpp"
#include "pack/plan.hpp"
#include "tests/unit/random_layout.hpp"
#include "types/ir.hpp"

using namespace loom;
using pack::device::Executor;
using types::make_dense;
using types::make_repeat;
using types::make_sequence;

namespace {

// The executors under test: the CPU executor with each ISA, and the device executors.
enum class Kind { CpuScalar, CpuAvx2, CpuAvx512, Emulated, Cuda };

const char* kind_name(Kind kind) {
  switch (kind) {
    case Kind::CpuScalar:
      return "cpu_scalar";
    case Kind::CpuAvx2:
      return "cpu_avx2";
    case Kind::CpuAvx512:
      return "cpu_avx512";
    case Kind::Emulated:
      return "emulated";
    case Kind::Cuda:
      return "cuda";
  }
  return "?";
}

bool on_device(Kind kind) {
  return kind == Kind::Emulated || kind == Kind::Cuda;
}

// The ISA of the plan: the CPU executor's own; the device executors run the plan's device
// program, which does not depend on it.
pack::Isa plan_isa(Kind kind) {
  switch (kind) {
    case Kind::CpuAvx2:
      return pack::Isa::Avx2;
    case Kind::CpuAvx512:
      return pack::Isa::Avx512;
    default:
      return pack::Isa::Scalar;
  }
}

// Only the CUDA binary links the CUDA executor (or its stub); the other never asks for it.
Executor& device_executor([[maybe_unused]] Kind kind) {
#if defined(LOOM_TEST_CUDA_EXECUTOR)
  if (kind == Kind::Cuda) return pack::device::cuda_executor();
#endif
  return pack::device::emulated_executor();
}

constexpr unsigned char kGuard = 0xA5;
constexpr int64_t kGuardBytes = 64;

using Blocks = std::vector<std::pair<int64_t, int64_t>>;

// Reference pack and unpack straight from the typemap's blocks.
void reference_pack(const Blocks& blocks, const char* base, char* out) {
  for (auto [off, len] : blocks) {
    std::memcpy(out, base + off, static_cast<size_t>(len));
    out += len;
  }
}
void reference_unpack(const Blocks& blocks, const char* in, char* base) {
  for (auto [off, len] : blocks) {
    std::memcpy(base + off, in, static_cast<size_t>(len));
    in += len;
  }
}

class ExecutorTest : public ::testing::TestWithParam<Kind> {
 protected:
  void SetUp() override {
    const Kind kind = GetParam();
    if (on_device(kind)) {
      Executor& e = device_executor(kind);
      if (!e.available())
        GTEST_SKIP() << "executor '" << e.name() << "' not available here: " << e.device_name();
    } else if (!pack::isa_supported(plan_isa(kind))) {
      GTEST_SKIP() << "the CPU executor's " << pack::isa_name(plan_isa(kind))
                   << " kernels need an instruction set this CPU lacks";
    }
  }

  // Packs and unpacks `count` elements of `layout` at byte offsets `user_shift` and
  // `packed_shift` past 16-byte alignment with the executor under test, against the
  // reference.
  void check(const types::Layout& layout, int64_t count, int64_t extent, const std::string& what,
             int64_t user_shift = 0, int64_t packed_shift = 0) {
    const pack::Plan plan(types::canonicalize(layout), extent, plan_isa(GetParam()));
    check_plan(plan, test::block_stream(layout, count, extent), count, what, user_shift,
               packed_shift);
  }
  // The same for `plan`, whose `count` elements are `blocks`.
  void check_plan(const pack::Plan& plan, const Blocks& blocks, int64_t count,
                  const std::string& what, int64_t user_shift = 0, int64_t packed_shift = 0) {
    const Kind kind = GetParam();
    int64_t lo = 0, hi = 0;
    for (auto [off, len] : blocks) lo = std::min(lo, off), hi = std::max(hi, off + len);
    const int64_t span = hi - lo + 2 * kGuardBytes + 16;
    const int64_t packed_bytes = count * plan.size();
    const int64_t packed_span = packed_bytes + 2 * kGuardBytes + 16;
    const int64_t origin = kGuardBytes + user_shift - lo;  // where element 0 starts
    const int64_t packed_at = kGuardBytes + packed_shift;
    const std::string program =
        on_device(kind) ? plan.device_program().describe() : plan.describe();

    std::vector<char> user(static_cast<size_t>(span));
    for (size_t i = 0; i < user.size(); ++i) user[i] = static_cast<char>(i * 131 + 7);
    std::vector<char> expect(static_cast<size_t>(packed_span), char(kGuard));
    reference_pack(blocks, user.data() + origin, expect.data() + packed_at);

    std::vector<char> got(static_cast<size_t>(packed_span), char(kGuard));
    if (on_device(kind))
      device_pack(device_executor(kind), plan, user, origin, count, got, packed_at, what);
    else
      plan.pack(user.data() + origin, count, got.data() + packed_at);
    if (HasFatalFailure()) return;
    EXPECT_EQ(expect, got) << what << "\n" << program;

    // Unpack is defined where no two blocks overlap.
    auto sorted = blocks;
    std::sort(sorted.begin(), sorted.end());
    bool overlap = false;
    for (size_t i = 1; i < sorted.size(); ++i)
      overlap |= sorted[i].first < sorted[i - 1].first + sorted[i - 1].second;
    if (overlap) return;
    std::vector<char> expect_user(static_cast<size_t>(span), char(kGuard));
    reference_unpack(blocks, expect.data() + packed_at, expect_user.data() + origin);
    std::vector<char> got_user(static_cast<size_t>(span), char(kGuard));
    if (on_device(kind))
      device_unpack(device_executor(kind), plan, expect, packed_at, count, got_user, origin, what);
    else
      plan.unpack(expect.data() + packed_at, count, got_user.data() + origin);
    if (HasFatalFailure()) return;
    EXPECT_EQ(expect_user, got_user) << what << " (unpack)\n" << program;
  }

 private:
  // The device executors: `user` copied to the device, packed there into a guard-filled
  // device buffer, and the whole of it copied back into `got`.
  static void device_pack(Executor& e, const pack::Plan& plan, const std::vector<char>& user,
                          int64_t origin, int64_t count, std::vector<char>& got, int64_t packed_at,
                          const std::string& what) {
    const auto span = static_cast<int64_t>(user.size());
    const auto packed_span = static_cast<int64_t>(got.size());
    char* d_user = static_cast<char*>(e.allocate(span));
    char* d_packed = static_cast<char*>(e.allocate(packed_span));
    const Released released{e, d_user, d_packed};
    ASSERT_TRUE(d_user && d_packed) << what;
    ASSERT_TRUE(e.to_device(d_user, user.data(), span));
    ASSERT_TRUE(e.to_device(d_packed, got.data(), packed_span));
    const auto packed_status =
        pack::device::pack_sync(e, plan, d_user + origin, count, d_packed + packed_at);
    ASSERT_TRUE(packed_status) << packed_status.message;
    ASSERT_TRUE(e.to_host(got.data(), d_packed, packed_span));
  }
  // The reverse: `packed` unpacked on the device into a copy of `got_user`, copied back.
  static void device_unpack(Executor& e, const pack::Plan& plan, const std::vector<char>& packed,
                            int64_t packed_at, int64_t count, std::vector<char>& got_user,
                            int64_t origin, const std::string& what) {
    const auto span = static_cast<int64_t>(got_user.size());
    const auto packed_span = static_cast<int64_t>(packed.size());
    char* d_user = static_cast<char*>(e.allocate(span));
    char* d_packed = static_cast<char*>(e.allocate(packed_span));
    const Released released{e, d_user, d_packed};
    ASSERT_TRUE(d_user && d_packed) << what;
    ASSERT_TRUE(e.to_device(d_packed, packed.data(), packed_span));
    ASSERT_TRUE(e.to_device(d_user, got_user.data(), span));
    const auto unpacked_status =
        pack::device::unpack_sync(e, plan, d_packed + packed_at, count, d_user + origin);
    ASSERT_TRUE(unpacked_status) << unpacked_status.message;
    ASSERT_TRUE(e.to_host(got_user.data(), d_user, span));
  }
  // Device buffers handed back however the copies went.
  struct Released {
    Executor& e;
    char* user;
    char* packed;
    ~Released() {
      if (user) e.release(user);
      if (packed) e.release(packed);
    }
  };
};

std::string param_name(const ::testing::TestParamInfo<Kind>& info) {
  return kind_name(info.param);
}

#if defined(LOOM_TEST_CUDA_EXECUTOR)
INSTANTIATE_TEST_SUITE_P(Executors, ExecutorTest, ::testing::Values(Kind::Cuda), param_name);
#else
INSTANTIATE_TEST_SUITE_P(Executors, ExecutorTest,
                         ::testing::Values(Kind::CpuScalar, Kind::CpuAvx2, Kind::CpuAvx512,
                                           Kind::Emulated),
                         param_name);
#endif

TEST(FastDivmod, MatchesDivisionEverywhere) {
  const uint64_t seed = std::random_device{}();
  std::printf("FastDivmod seed %llu\n", static_cast<unsigned long long>(seed));
  std::mt19937_64 rng(seed);
  std::vector<uint32_t> divisors;
  for (uint32_t d = 1; d <= 1100; ++d) divisors.push_back(d);
  for (uint32_t d :
       {0x7fffffffu, 0x80000000u, 0x80000001u, 0xfffffffeu, 0xffffffffu, 641u * 6700417u})
    divisors.push_back(d);
  for (int i = 0; i < 300; ++i) divisors.push_back(static_cast<uint32_t>(rng()) | 1u);
  for (uint32_t d : divisors) {
    const pack::device::FastDivmod f(d);
    std::vector<uint32_t> ns = {0, 1, d - 1, d, d + 1, 0xffffffffu, 0xfffffffeu, 0x80000000u};
    for (uint32_t k : {2u, 3u, 1000u}) ns.push_back(d * k), ns.push_back(d * k - 1);
    for (int i = 0; i < 200; ++i) ns.push_back(static_cast<uint32_t>(rng()));
    for (uint32_t n : ns) {
      uint32_t q, r;
      f.divmod(n, &q, &r);
      ASSERT_EQ(q, n / d) << n << " / " << d;
      ASSERT_EQ(r, n % d) << n << " % " << d;
    }
  }
}

// Small host-to-device copies go as 2-D copies of rows (row_copies.hpp): every byte exactly once,
// at least two rows per copy.
TEST(RowCopies, CoverEveryByteOnceInRowsOfAtLeastTwo) {
  pack::device::RowCopy rows[2];
  EXPECT_EQ(pack::device::contiguous_as_rows(0, rows), 0);
  EXPECT_EQ(pack::device::contiguous_as_rows(1, rows), 0);
  for (int64_t bytes = 2; bytes <= 5000; ++bytes) {
    const int parts = pack::device::contiguous_as_rows(bytes, rows);
    ASSERT_TRUE(parts == 1 || parts == 2) << bytes;
    std::vector<int> covered(static_cast<size_t>(bytes), 0);
    for (int i = 0; i < parts; ++i) {
      ASSERT_GE(rows[i].height, 2) << bytes;
      ASSERT_LE(rows[i].height, 16) << bytes;
      ASSERT_GE(rows[i].width, 1) << bytes;
      for (int64_t b = 0; b < rows[i].width * rows[i].height; ++b) {
        ASSERT_LT(rows[i].offset + b, bytes) << bytes;
        ++covered[static_cast<size_t>(rows[i].offset + b)];
      }
    }
    for (int64_t b = 0; b < bytes; ++b) ASSERT_EQ(covered[static_cast<size_t>(b)], 1) << bytes;
  }
}

// Where a program says it is rows (a copy engine's 2-D copy), those rows are its blocks, byte for
// byte in packed order; short vectors, which compile to a table, are rows too.
TEST(ProgramRows, RowsAreTheTypemapsBlocks) {
  for (int64_t n = 1; n <= 20; ++n)
    for (int64_t block : {1, 4, 16, 256})
      for (int64_t gap : {0, 1, 256})
        for (int64_t count : {1, 3}) {
          const auto v = make_repeat(n, block + gap, make_dense(block));
          const types::Layout layout = {{0, v}};
          for (int64_t extent : {n * (block + gap), n * (block + gap) + 8}) {
            const pack::Plan plan(types::canonicalize(layout), extent, pack::Isa::Scalar);
            pack::device::Rows rows;
            const std::string what = "n=" + std::to_string(n) + " block=" + std::to_string(block) +
                                     " gap=" + std::to_string(gap) +
                                     " count=" + std::to_string(count) +
                                     " extent=" + std::to_string(extent);
            const bool regular = extent == n * (block + gap) || count == 1;
            const bool is_rows = plan.device_program().as_rows(count, &rows);
            if (regular) {
              EXPECT_TRUE(is_rows) << what;
            }
            if (!is_rows) continue;
            std::vector<int64_t> from_rows, from_typemap;
            for (int64_t r = 0; r < rows.height; ++r)
              for (int64_t b = 0; b < rows.width; ++b)
                from_rows.push_back(rows.user_disp + r * rows.pitch + b);
            for (auto [off, len] : test::block_stream(layout, count, extent))
              for (int64_t b = 0; b < len; ++b) from_typemap.push_back(off + b);
            ASSERT_EQ(from_rows, from_typemap) << what;
          }
        }
}

// Host-to-device and device-to-host copies of every small size, odd and prime ones too, at every
// offset within 16 bytes, with guard bytes around them on the device.
// A message that ends inside an element: the plan of its first bytes (pack::Plan::prefix), cut
// inside each kind of op and loop, moves exactly those bytes on every executor.
TEST_P(ExecutorTest, PrefixesOfRandomLayouts) {
  const uint64_t seed = std::random_device{}();
  std::printf("PrefixesOfRandomLayouts seed %llu\n", static_cast<unsigned long long>(seed));
  SCOPED_TRACE("seed " + std::to_string(seed));
  test::RandomLayouts gen(seed);
  for (int i = 0; i < 300; ++i) {
    const types::Layout layout = gen.layout(static_cast<int>(gen.pick(1, 4)));
    const int64_t size = types::packed_size(layout);
    if (size < 2) continue;
    const auto b = types::bounds(layout);
    const pack::Plan plan(types::canonicalize(layout), b.hi - b.lo, plan_isa(GetParam()));
    const int64_t bytes = gen.pick(1, size - 1);
    Blocks first;
    int64_t left = bytes;
    for (auto [off, len] : test::block_stream(layout)) {
      if (left == 0) break;
      first.emplace_back(off, std::min(len, left));
      left -= first.back().second;
    }
    check_plan(plan.prefix(bytes), first, 1,
               "case " + std::to_string(i) + " prefix " + std::to_string(bytes) + " of " +
                   std::to_string(size) + ": " + types::describe(layout));
    if (HasFailure()) return;
  }
}

TEST_P(ExecutorTest, CopiesOfSmallSizes) {
  if (!on_device(GetParam())) GTEST_SKIP() << "the CPU executor has no device memory";
  Executor& e = device_executor(GetParam());
  std::vector<int64_t> sizes;
  for (int64_t n = 1; n <= 70; ++n) sizes.push_back(n);
  for (int64_t n : {127, 1021, 1024, 4093, 4096, 16381, 16384, 32767, 32768, 32769, 65536})
    sizes.push_back(n);
  const int64_t room = 65536 + 16 + 2 * kGuardBytes;
  char* device = static_cast<char*>(e.allocate(room));
  ASSERT_TRUE(device);
  std::vector<char> guards(static_cast<size_t>(room), char(kGuard)), got(static_cast<size_t>(room));
  for (int64_t bytes : sizes)
    for (int64_t shift : {0, 1, 3, 8, 15}) {
      std::vector<char> data(static_cast<size_t>(bytes));
      for (int64_t i = 0; i < bytes; ++i)
        data[static_cast<size_t>(i)] = static_cast<char>(i * 37 + bytes);
      ASSERT_TRUE(e.to_device(device, guards.data(), room));
      ASSERT_TRUE(e.to_device(device + kGuardBytes + shift, data.data(), bytes));
      ASSERT_TRUE(e.to_host(got.data(), device, room));
      std::vector<char> expect = guards;
      std::copy(data.begin(), data.end(), expect.begin() + kGuardBytes + shift);
      ASSERT_EQ(expect, got) << "bytes=" << bytes << " shift=" << shift;
      std::vector<char> back(static_cast<size_t>(bytes));
      ASSERT_TRUE(e.to_host(back.data(), device + kGuardBytes + shift, bytes));
      ASSERT_EQ(data, back) << "to_host bytes=" << bytes << " shift=" << shift;
    }
  e.release(device);
}

TEST_P(ExecutorTest, VectorsOfEveryBlockSize) {
  for (int64_t block = 1; block <= 40; block += block < 18 ? 1 : 11)
    for (int64_t gap : {1, 3, 8, 16})
      for (int64_t n : {1, 5, 300})
        for (int64_t count : {1, 3}) {
          const auto v = make_repeat(n, block + gap, make_dense(block));
          check({{0, v}}, count, n * (block + gap) + 8,
                "block=" + std::to_string(block) + " gap=" + std::to_string(gap) +
                    " n=" + std::to_string(n) + " count=" + std::to_string(count));
          if (HasFailure()) return;
        }
}

// Word sizes the buffers' alignment lowers: every shift of either buffer.
TEST_P(ExecutorTest, UnalignedBuffers) {
  // Blocks of 16 and of 6 bytes: threads' words cross blocks, rows and elements.
  const auto face16 = make_repeat(6, 400, make_repeat(9, 32, make_dense(16)));
  const auto face6 = make_repeat(5, 301, make_repeat(7, 40, make_dense(6)));
  for (const auto& [face, extent] : {std::pair{face16, 2400}, std::pair{face6, 1510}})
    for (int64_t user_shift = 0; user_shift < 16; user_shift += 3)
      for (int64_t packed_shift : {0, 1, 2, 4, 8, 12}) {
        check({{0, face}}, 2, extent,
              "block " + std::to_string(face->child->child->size) + " shift " +
                  std::to_string(user_shift) + "/" + std::to_string(packed_shift),
              user_shift, packed_shift);
        if (HasFailure()) return;
      }
}

TEST_P(ExecutorTest, SubarrayFacesOf3DGrid) {
  // A 3-D grid of doubles, 20 x 17 x 12: the x, y and z faces two cells deep.
  const int64_t nx = 20, ny = 17, nz = 12, e = 8;
  const auto x_face = make_repeat(nz, nx * ny * e, make_repeat(ny, nx * e, make_dense(2 * e)));
  const auto y_face = make_repeat(nz, nx * ny * e, make_dense(2 * nx * e));
  const auto z_face = make_dense(2 * nx * ny * e);
  check({{3 * e, x_face}}, 1, 0, "x face");
  check({{nx * e, y_face}}, 1, 0, "y face");
  check({{nx * ny * e, z_face}}, 1, 0, "z face");
  check({{3 * e, x_face}}, 4, nx * ny * nz * e, "x face, 4 fields");
}

TEST_P(ExecutorTest, IndexedBlocks) {
  std::mt19937_64 rng(7);
  for (bool uniform : {true, false}) {
    std::vector<types::Placed> items;
    int64_t at = 0;
    for (int i = 0; i < 500; ++i) {
      at += 8 * static_cast<int64_t>(1 + rng() % 5);
      const int64_t len = uniform ? 24 : 8 * static_cast<int64_t>(1 + rng() % 9);
      items.push_back({at, make_dense(len)});
      at += len;
    }
    const types::Layout layout{{0, make_sequence(items)}};
    check(layout, 1, 0, uniform ? "indexed_block" : "indexed");
    check(layout, 3, at + 64, uniform ? "indexed_block x3" : "indexed x3");
    check(layout, 2, at + 64, "indexed, unaligned", 5, 3);
  }
}

// A struct of many strided fields exceeds the segments a program launches: it runs as a
// block table.
TEST_P(ExecutorTest, ManyFieldsBecomeATable) {
  std::vector<types::Placed> fields;
  for (int f = 0; f < 80; ++f)
    fields.push_back({f * 1000, make_repeat(3 + f % 4, 40 + f % 3 * 8, make_dense(4 + f % 5))});
  check({{0, make_sequence(fields)}}, 2, 81000, "80 strided fields");
}

// Loops nested deeper than one segment holds.
TEST_P(ExecutorTest, DeepNesting) {
  types::NodeRef node = make_sequence({{0, make_dense(3)}, {10, make_repeat(2, 5, make_dense(2))}});
  int64_t span = 24;
  for (int level = 0; level < 11; ++level) {
    node = make_repeat(2, span + 4 + level, node);
    span = 2 * (span + 4 + level);
  }
  check({{0, node}}, 1, 0, "11 levels");
  check({{0, node}}, 2, span + 16, "11 levels x2");
}

TEST_P(ExecutorTest, RandomLayouts) {
  const uint64_t seed = std::random_device{}();
  std::printf("RandomLayouts seed %llu\n", static_cast<unsigned long long>(seed));
  test::RandomLayouts random(seed);
  for (int i = 0; i < 400; ++i) {
    const types::Layout layout = random.layout(static_cast<int>(random.pick(1, 4)));
    const auto bounds = types::bounds(layout);
    const int64_t count = random.pick(1, 3);
    const int64_t extent = (bounds.hi - bounds.lo) + random.pick(0, 16);
    check(layout, count, extent,
          "seed " + std::to_string(seed) + " case " + std::to_string(i) + ": " +
              types::describe(layout),
          random.pick(0, 15), random.pick(0, 15));
    if (HasFailure()) return;
  }
}

TEST_P(ExecutorTest, EmptyAndDense) {
  check({{0, make_dense(4096)}}, 3, 4096, "dense");
  check({{16, make_dense(100)}}, 1, 0, "dense at an offset");
  check({{0, make_repeat(0, 8, make_dense(4))}}, 2, 8, "empty");
}

}  // namespace
