#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "pack/plan.hpp"
#include "tests/unit/random_layout.hpp"
#include "types/ir.hpp"

using namespace loom;
using loom::test::block_stream;

namespace {

std::vector<pack::Isa> supported_isas() {
  std::vector<pack::Isa> out;
  for (pack::Isa isa : {pack::Isa::Scalar, pack::Isa::Avx2, pack::Isa::Avx512})
    if (pack::isa_supported(isa)) out.push_back(isa);
  return out;
}

constexpr unsigned char kGuard = 0xA5;
constexpr int64_t kGuardBytes = 64;

// Reference pack/unpack straight from the typemap.
void reference_pack(const std::vector<std::pair<int64_t, int64_t>>& blocks, const char* base,
                    char* out) {
  for (auto [off, len] : blocks) {
    std::memcpy(out, base + off, static_cast<size_t>(len));
    out += len;
  }
}
void reference_unpack(const std::vector<std::pair<int64_t, int64_t>>& blocks, const char* in,
                      char* base) {
  for (auto [off, len] : blocks) {
    std::memcpy(base + off, in, static_cast<size_t>(len));
    in += len;
  }
}

// Packs and unpacks `count` elements with the plan and the reference; the packed bytes,
// the unpacked buffers (gaps included) and the guard bytes around both must agree.
void check_plan(const types::Layout& layout, int64_t count, int64_t extent, pack::Isa isa,
                const std::string& what) {
  const types::Layout canonical = types::canonicalize(layout);
  const pack::Plan plan(canonical, extent, isa);
  const auto blocks = block_stream(layout, count, extent);
  int64_t lo = 0, hi = 0;
  for (auto [off, len] : blocks) lo = std::min(lo, off), hi = std::max(hi, off + len);
  const int64_t span = hi - lo + 2 * kGuardBytes;
  const int64_t packed_bytes = count * plan.size();
  ASSERT_EQ(packed_bytes, count * types::packed_size(layout)) << what;

  std::vector<char> user(static_cast<size_t>(span));
  for (size_t i = 0; i < user.size(); ++i) user[i] = static_cast<char>(i * 131 + 7);
  const char* base = user.data() + kGuardBytes - lo;

  std::vector<char> expect(static_cast<size_t>(packed_bytes + 2 * kGuardBytes), char(kGuard));
  std::vector<char> got(expect);
  reference_pack(blocks, base, expect.data() + kGuardBytes);
  plan.pack(base, count, got.data() + kGuardBytes);
  ASSERT_EQ(expect, got) << what << " plan: " << plan.describe();

  std::vector<char> expect_user(static_cast<size_t>(span), char(kGuard));
  std::vector<char> got_user(expect_user);
  reference_unpack(blocks, expect.data() + kGuardBytes, expect_user.data() + kGuardBytes - lo);
  plan.unpack(expect.data() + kGuardBytes, count, got_user.data() + kGuardBytes - lo);
  ASSERT_EQ(expect_user, got_user) << what << " (unpack) plan: " << plan.describe();
}

TEST(RowKernels, AllBlockAndStrideShapes) {
  for (pack::Isa isa : supported_isas()) {
    for (int64_t block = 1; block <= 72; block += (block < 20 ? 1 : 7))
      for (int64_t gap : {1, 2, 3, 5, 8, 13, 31, 64})
        for (int64_t n : {1, 2, 3, 7, 64, 129}) {
          const int64_t stride = block + gap;
          check_plan({{0, types::make_repeat(n, stride, types::make_dense(block))}}, 1, 0, isa,
                     std::string(pack::isa_name(isa)) + " block=" + std::to_string(block) +
                         " stride=" + std::to_string(stride) + " n=" + std::to_string(n));
          if (HasFatalFailure()) return;
        }
  }
}

// Rows whose blocks all fit one 64-byte window (MILC's two 12-byte blocks 16 bytes apart in
// rows 72 bytes apart, and the shapes around it): AVX-512 moves such a row with one
// permutation and writes whole vectors past a row's packed bytes until the slab's last rows.
// Rows closer than their span interleave; a count of three adds an outer dimension.
TEST(RowKernels, ShortRowsOfOneWindow) {
  struct Row {
    int64_t block, stride, n;
  };
  const Row shapes[] = {{12, 16, 2}, {1, 2, 32},  {1, 3, 5},   {2, 6, 3},
                        {4, 8, 8},   {4, 12, 5},  {8, 16, 4},  {8, 24, 2},
                        {12, 16, 4}, {12, 20, 3}, {16, 24, 2}, {24, 32, 2},
                        {24, 40, 2}, {31, 33, 2}, {32, 32, 2}, {3, 29, 3}};
  for (pack::Isa isa : supported_isas())
    for (Row row : shapes) {
      const int64_t span = (row.n - 1) * row.stride + row.block;
      ASSERT_LE(span, 64);
      for (int64_t rows : {2, 3, 5, 17, 40})
        for (int64_t row_stride : {span, span + 3, int64_t{72}, int64_t{200}, row.block})
          for (int64_t count : {1, 3}) {
            // Rows a block apart interleave; their blocks must not meet (a valid unpack).
            if (row_stride < span && rows * row.block > row.stride) continue;
            const auto element = types::make_repeat(
                rows, row_stride,
                types::make_repeat(row.n, row.stride, types::make_dense(row.block)));
            const int64_t extent = (rows - 1) * row_stride + span + 5;
            check_plan({{0, element}}, count, extent, isa,
                       std::string(pack::isa_name(isa)) + " block=" + std::to_string(row.block) +
                           " stride=" + std::to_string(row.stride) + " n=" + std::to_string(row.n) +
                           " rows=" + std::to_string(rows) + " row_stride=" +
                           std::to_string(row_stride) + " count=" + std::to_string(count));
            if (HasFatalFailure()) return;
          }
    }
}

// Blocks around the bounds of the inline long-block moves (257 B to 2 KiB on AVX-512), in
// rows and in 2-D slabs, with gaps that leave blocks unaligned.
TEST(RowKernels, LongBlocks) {
  for (pack::Isa isa : supported_isas())
    for (int64_t block : {255, 256, 257, 300, 384, 511, 512, 513, 1000, 2047, 2048, 2049, 4096})
      for (int64_t gap : {1, 24, 64})
        for (int64_t rows : {1, 3}) {
          const int64_t stride = block + gap, n = 5;
          const auto row = types::make_repeat(n, stride, types::make_dense(block));
          const auto slab = types::make_repeat(rows, n * stride + 40, row);
          check_plan({{0, slab}}, 2, 0, isa,
                     std::string(pack::isa_name(isa)) + " block=" + std::to_string(block) +
                         " stride=" + std::to_string(stride) + " rows=" + std::to_string(rows));
          if (HasFatalFailure()) return;
        }
}

// Long blocks spread over more than the out-of-cache size but packing to less: the pack
// reads them from memory with inline moves instead of memcpy (AVX-512).
TEST(RowKernels, LongBlocksSpreadFarApart) {
  for (pack::Isa isa : supported_isas())
    for (int64_t block : {2049, 4100})
      for (int64_t stride : {int64_t{65536} + 8, -(int64_t{65536} + 24)}) {
        const auto row = types::make_repeat(300, stride, types::make_dense(block));
        check_plan({{0, row}}, 1, 0, isa,
                   std::string(pack::isa_name(isa)) + " block=" + std::to_string(block) +
                       " stride=" + std::to_string(stride));
        if (HasFatalFailure()) return;
      }
}

TEST(RowKernels, NegativeAndZeroStrides) {
  // 16-byte blocks in rows of 70 reach the paths that pair windows of long rows.
  struct Shape {
    int64_t block, n;
  };
  for (pack::Isa isa : supported_isas())
    for (Shape shape : {Shape{3, 9}, Shape{16, 70}})
      for (int64_t stride : {-3, -8, -40, -32, 0}) {
        const int64_t block = shape.block, n = shape.n;
        auto layout = types::Layout{{0, types::make_repeat(n, stride, types::make_dense(block))}};
        // Zero stride packs the same bytes many times (valid for pack; unpack would race).
        if (stride == 0) {
          const pack::Plan plan(types::canonicalize(layout), 0, isa);
          std::vector<char> src(static_cast<size_t>(block)), out(static_cast<size_t>(n * block));
          for (int64_t i = 0; i < block; ++i)
            src[static_cast<size_t>(i)] = static_cast<char>(i + 1);
          plan.pack(src.data(), 1, out.data());
          for (int64_t i = 0; i < n * block; ++i)
            ASSERT_EQ(out[static_cast<size_t>(i)], src[static_cast<size_t>(i % block)]);
          continue;
        }
        if (-stride < block) continue;  // overlapping blocks: not a valid unpack layout
        check_plan(layout, 1, 0, isa,
                   "block " + std::to_string(block) + " stride " + std::to_string(stride));
      }
}

TEST(Plan, CountFoldsIntoOuterDimension) {
  for (pack::Isa isa : supported_isas()) {
    auto vec = types::make_repeat(4, 16, types::make_dense(8));
    check_plan({{0, vec}}, 5, 64, isa, "extent equals span of rows");
    check_plan({{0, vec}}, 5, 56, isa, "resized extent");
    check_plan({{0, types::make_dense(12)}}, 7, 12, isa, "dense count");
    check_plan({{0, types::make_dense(12)}}, 7, 16, isa, "padded dense count");
    check_plan({{0, types::make_dense(12)}}, 3, -20, isa, "negative extent");
  }
}

// A matrix column resized to one element and packed with a count (FFT2D's transpose): rows
// interleave block by block, which unpack moves several rows at a time. Row counts that are
// not a multiple of that, and column counts over one sweep's band, leave remainders.
TEST(Plan, TransposedColumnsOfEightAndSixteenBytes) {
  for (pack::Isa isa : supported_isas())
    for (int64_t block : {8, 16})
      for (int64_t n : {3, 4, 7, 8, 9, 17, 70}) {
        const auto column = types::make_repeat(n, n * block, types::make_dense(block));
        check_plan({{0, column}}, n, block, isa,
                   std::string(pack::isa_name(isa)) + " block " + std::to_string(block) + " n " +
                       std::to_string(n));
        if (HasFatalFailure()) return;
      }
}

// Packs and unpacks beyond the out-of-cache size take other stores (non-temporal where
// whole aligned lines come out, plain instead of byte-masked); buffers one byte off
// line alignment take the ordinary paths, except for blocks long enough to stream
// around their part lines. All must move the same bytes, and unpack must
// leave the gaps alone.
TEST(Plan, OutOfCacheSlabsMoveTheSameBytes) {
  constexpr int64_t kPacked = (int64_t{17} << 20) + 4096;  // above the 16 MiB switch
  struct Shape {
    int64_t block, stride;
  };
  auto aligned = [](int64_t bytes) {  // C11 wants a size that is a multiple of the alignment
    const size_t rounded = (static_cast<size_t>(bytes) + 128 + 63) & ~size_t{63};
    return static_cast<char*>(std::aligned_alloc(64, rounded));
  };
  // Blocks from 1 KiB stream even where they start or end inside a line.
  for (Shape shape : {Shape{4, 8}, Shape{2, 4}, Shape{64, 128}, Shape{256, 320}, Shape{192, 256},
                      Shape{1000, 1037}, Shape{1024, 1100}, Shape{4100, 4164}}) {
    const int64_t n = kPacked / shape.block;
    const auto layout =
        types::Layout{{0, types::make_repeat(n, shape.stride, types::make_dense(shape.block))}};
    const int64_t span = (n - 1) * shape.stride + shape.block;
    char* user = aligned(span);
    char* out = aligned(kPacked);
    ASSERT_TRUE(user && out);
    for (int64_t offset : {0, 1}) {
      char* const u = user + offset;
      for (int64_t i = 0; i < span; ++i) u[i] = static_cast<char>(i * 131 + 7);
      std::vector<char> expect(static_cast<size_t>(kPacked));
      std::vector<char> unpacked(static_cast<size_t>(span), char(0x5A));  // gaps untouched
      for (int64_t i = 0; i < n; ++i) {
        std::memcpy(expect.data() + i * shape.block, u + i * shape.stride,
                    static_cast<size_t>(shape.block));
        std::memcpy(unpacked.data() + i * shape.stride, u + i * shape.stride,
                    static_cast<size_t>(shape.block));
      }
      for (pack::Isa isa : supported_isas()) {
        const std::string what = std::string(pack::isa_name(isa)) + " block " +
                                 std::to_string(shape.block) + " offset " + std::to_string(offset);
        const pack::Plan plan(types::canonicalize(layout), 0, isa);
        std::memset(out, 0, static_cast<size_t>(kPacked + 64));
        plan.pack(u, 1, out + offset);
        ASSERT_EQ(0, std::memcmp(expect.data(), out + offset, static_cast<size_t>(kPacked)))
            << what;
        std::memset(u, 0x5A, static_cast<size_t>(span));
        plan.unpack(out + offset, 1, u);
        ASSERT_EQ(0, std::memcmp(unpacked.data(), u, static_cast<size_t>(span)))
            << what << " (unpack)";
        for (int64_t i = 0; i < span; ++i) u[i] = static_cast<char>(i * 131 + 7);
      }
    }
    std::free(user);
    std::free(out);
  }
}

TEST(Plan, KindsAreChosenByShape) {
  using types::make_dense;
  using types::make_repeat;
  EXPECT_EQ(pack::Plan(types::canonicalize({{0, make_repeat(4, 8, make_dense(8))}}), 32,
                       pack::Isa::Scalar)
                .kind(),
            "dense");
  EXPECT_EQ(
      pack::Plan(types::canonicalize({{0, make_repeat(3, 100, make_repeat(4, 16, make_dense(4)))}}),
                 300, pack::Isa::Scalar)
          .kind(),
      "strided-2d");
  EXPECT_EQ(pack::Plan(types::canonicalize({{0, types::make_sequence({{0, make_dense(3)},
                                                                      {10, make_dense(5)},
                                                                      {50, make_dense(1)}})}}),
                       51, pack::Isa::Scalar)
                .kind(),
            "list");
}

// Indexed types with random displacements: neighbouring indices merge into longer runs,
// and the plan splits them back into uniform units; bytes must not change.
TEST(Plan, IrregularListsOfMixedLengths) {
  std::mt19937_64 rng(7);
  for (int64_t unit : {1, 4, 8, 24}) {
    std::vector<types::Placed> items;
    int64_t disp = 0;
    for (int i = 0; i < 500; ++i) {
      disp += unit * static_cast<int64_t>(1 + rng() % 3);  // some adjacent, some gaps
      items.push_back({disp, types::make_dense(unit * static_cast<int64_t>(1 + rng() % 2))});
      disp += items.back().node->size;
    }
    const types::Layout layout{{0, types::make_sequence(items)}};
    for (pack::Isa isa : supported_isas()) {
      check_plan(layout, 2, disp + 16, isa, "unit " + std::to_string(unit));
      if (HasFatalFailure()) return;
    }
  }
}

// Uniform lists of 4-, 8- and 16-byte blocks move four blocks at a time: every count
// from 1 to 9 leaves a different tail, and descending displacements make the four loads
// of a group come from addresses in reverse order.
TEST(Plan, UniformListsOfWordBlocks) {
  for (int64_t block : {4, 8, 16})
    for (bool descending : {false, true})
      for (int count = 1; count <= 9; ++count) {
        std::vector<types::Placed> items;
        for (int i = 0; i < count; ++i) {
          const int64_t slot = descending ? count - 1 - i : i;
          items.push_back({slot * 3 * block + (i % 2) * block, types::make_dense(block)});
        }
        const types::Layout layout{{0, types::make_sequence(items)}};
        for (pack::Isa isa : supported_isas()) {
          check_plan(layout, 2, 3 * block * count + 8, isa,
                     std::string(pack::isa_name(isa)) + " block " + std::to_string(block) +
                         " count " + std::to_string(count) +
                         (descending ? " descending" : " ascending"));
          if (HasFatalFailure()) return;
        }
      }
}

TEST(Plan, RandomLayoutsMatchReference) {
  const uint64_t seed = 42;
  test::RandomLayouts gen(seed);
  for (int i = 0; i < 3000; ++i) {
    types::Layout layout = gen.layout(static_cast<int>(gen.pick(0, 4)));
    const auto b = types::bounds(layout);
    const int64_t count = gen.pick(0, 3);
    const int64_t extent = (b.hi - b.lo) + gen.pick(-4, 16);
    for (pack::Isa isa : supported_isas()) {
      check_plan(layout, count, extent, isa,
                 "seed " + std::to_string(seed) + " case " + std::to_string(i) + " " +
                     pack::isa_name(isa) + " count " + std::to_string(count) + ": " +
                     types::describe(layout));
      if (HasFatalFailure()) return;
    }
  }
}

// A message that ends inside an element: the prefix plan of its first `bytes` packed bytes must
// unpack them to exactly their places and pack them from there, touching nothing else of the
// element (its other places may lie beyond the user's memory).
TEST(Plan, PrefixWritesOnlyTheReceivedBytesPlaces) {
  const uint64_t seed = 7;
  test::RandomLayouts gen(seed);
  for (int i = 0; i < 1500; ++i) {
    const types::Layout layout = gen.layout(static_cast<int>(gen.pick(0, 4)));
    const int64_t size = types::packed_size(layout);
    if (size < 2) continue;
    const auto blocks = block_stream(layout);
    int64_t lo = 0, hi = 0;
    for (auto [off, len] : blocks) lo = std::min(lo, off), hi = std::max(hi, off + len);
    const auto b = types::bounds(layout);
    for (pack::Isa isa : supported_isas()) {
      const pack::Plan plan(types::canonicalize(layout), b.hi - b.lo, isa);
      for (int64_t bytes : {int64_t{1}, size / 2, size - 1, gen.pick(1, size - 1)}) {
        const std::string what = "seed " + std::to_string(seed) + " case " + std::to_string(i) +
                                 " " + pack::isa_name(isa) + " prefix " + std::to_string(bytes) +
                                 " of " + std::to_string(size) + ": " + types::describe(layout);
        const pack::Plan part = plan.prefix(bytes);
        ASSERT_EQ(part.size(), bytes) << what;
        std::vector<char> packed(static_cast<size_t>(size));
        for (size_t k = 0; k < packed.size(); ++k) packed[k] = static_cast<char>(k * 29 + 3);
        // The places of the first `bytes` bytes, in typemap order.
        std::vector<std::pair<int64_t, int64_t>> received;
        int64_t left = bytes;
        for (auto [off, len] : blocks) {
          if (left == 0) break;
          received.emplace_back(off, std::min(len, left));
          left -= received.back().second;
        }
        const size_t span = static_cast<size_t>(hi - lo + 2 * kGuardBytes);
        std::vector<char> expect_user(span, char(kGuard)), got_user(span, char(kGuard));
        reference_unpack(received, packed.data(), expect_user.data() + kGuardBytes - lo);
        part.unpack(packed.data(), 1, got_user.data() + kGuardBytes - lo);
        ASSERT_EQ(expect_user, got_user) << what << " prefix plan: " << part.describe();
        // Packing reads the same places (overlapping places make unpack then pack lossy).
        std::vector<char> whole(static_cast<size_t>(size)), first(static_cast<size_t>(bytes));
        plan.pack(expect_user.data() + kGuardBytes - lo, 1, whole.data());
        part.pack(expect_user.data() + kGuardBytes - lo, 1, first.data());
        ASSERT_EQ(std::vector<char>(whole.begin(), whole.begin() + bytes), first) << what;
      }
    }
  }
}

}  // namespace
