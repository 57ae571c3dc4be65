// pack/box_copy.hpp: boxes of cells between strided 3-D arrays, grouped into passes over rows,
// against a cell-by-cell copy. Randomised (seed printed; LOOM_TEST_SEED repeats it).
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "pack/box_copy.hpp"

namespace {

using loom::pack::BoxCopy;

// A 3-D array of `cells` per axis, `element` bytes per cell, `pad` bytes after each cell (an
// array of structs), rows and planes padded as well.
struct Array {
  std::array<int64_t, 3> cells{}, stride{};
  int64_t element = 0;
  std::vector<char> bytes;
  Array(std::array<int64_t, 3> n, int64_t element_bytes, int64_t pad)
      : cells(n), element(element_bytes) {
    stride[0] = element + pad;
    stride[1] = stride[0] * n[0] + 8;
    stride[2] = stride[1] * n[1] + 24;
    bytes.resize(static_cast<size_t>(stride[2] * n[2]));
  }
  char* at(int64_t x, int64_t y, int64_t z) {
    return bytes.data() + x * stride[0] + y * stride[1] + z * stride[2];
  }
};

void copy_naively(const BoxCopy& c) {
  for (int64_t z = 0; z < c.size[2]; ++z)
    for (int64_t y = 0; y < c.size[1]; ++y)
      for (int64_t x = 0; x < c.size[0]; ++x) {
        const char* in = c.from + (c.from_lo[0] + x) * c.from_stride[0] +
                         (c.from_lo[1] + y) * c.from_stride[1] +
                         (c.from_lo[2] + z) * c.from_stride[2];
        char* out = c.to + (c.to_lo[0] + x) * c.to_stride[0] + (c.to_lo[1] + y) * c.to_stride[1] +
                    (c.to_lo[2] + z) * c.to_stride[2];
        for (int64_t b = 0; b < c.element; ++b) out[b] = in[b];
      }
}

uint64_t test_seed() {
  const char* env = std::getenv("LOOM_TEST_SEED");
  const uint64_t seed = env ? std::strtoull(env, nullptr, 10) : std::random_device{}();
  std::printf("box copy: LOOM_TEST_SEED=%llu\n", static_cast<unsigned long long>(seed));
  return seed;
}

// A periodic ghost fill of one array onto itself (the halo library's wrap onto one rank): the
// 26 boxes of a box stencil, radius 1-3 per side.
std::vector<BoxCopy> ghost_fill(Array& a, std::array<int64_t, 6> r) {
  std::vector<BoxCopy> copies;
  std::array<int64_t, 3> n{};
  for (size_t d = 0; d < 3; ++d) n[d] = a.cells[d] - r[2 * d] - r[2 * d + 1];
  for (int dz = -1; dz <= 1; ++dz)
    for (int dy = -1; dy <= 1; ++dy)
      for (int dx = -1; dx <= 1; ++dx) {
        if (!dx && !dy && !dz) continue;
        const int o[3] = {dx, dy, dz};
        BoxCopy c{a.at(0, 0, 0), a.stride, {}, a.at(0, 0, 0), a.stride, {}, {}, a.element};
        for (size_t d = 0; d < 3; ++d) {
          const int64_t lo = r[2 * d], hi = r[2 * d + 1];
          c.size[d] = o[d] == 0 ? n[d] : o[d] < 0 ? lo : hi;
          c.to_lo[d] = o[d] < 0 ? 0 : o[d] == 0 ? lo : lo + n[d];
          c.from_lo[d] = o[d] < 0 ? n[d] : lo;  // the far side's interior, periodic
        }
        copies.push_back(c);
      }
  return copies;
}

TEST(BoxCopy, PassesCopyWhatTheBoxesName) {
  std::mt19937_64 rng(test_seed());
  auto pick = [&rng](int64_t lo, int64_t hi) {
    return lo + static_cast<int64_t>(rng() % static_cast<uint64_t>(hi - lo + 1));
  };
  for (int round = 0; round < 200; ++round) {
    std::array<int64_t, 6> r{};
    for (auto& v : r) v = pick(0, 3);
    std::array<int64_t, 3> n{};
    for (size_t d = 0; d < 3; ++d) n[d] = std::max(r[2 * d], r[2 * d + 1]) + pick(1, 9);
    const int64_t element =
        std::array<int64_t, 5>{1, 4, 8, 12, 16}[static_cast<size_t>(pick(0, 4))];
    const int64_t pad = pick(0, 1) ? 0 : pick(1, 8);
    Array fast({n[0] + r[0] + r[1], n[1] + r[2] + r[3], n[2] + r[4] + r[5]}, element, pad);
    for (char& b : fast.bytes) b = static_cast<char>(rng());
    Array naive = fast;
    std::vector<BoxCopy> copies = ghost_fill(fast, r);
    for (const auto& pass : loom::pack::row_passes(copies)) loom::pack::run_pass(pass);
    for (BoxCopy c : ghost_fill(naive, r)) copy_naively(c);
    ASSERT_EQ(fast.bytes, naive.bytes)
        << "round " << round << " element " << element << " pad " << pad << " radius " << r[0]
        << r[1] << r[2] << r[3] << r[4] << r[5];
  }
}

TEST(BoxCopy, BoxesOverTheSameRowsShareAPass) {
  Array a({12, 10, 9}, 8, 0);
  std::array<int64_t, 6> r{2, 2, 1, 1, 1, 1};
  const std::vector<BoxCopy> copies = ghost_fill(a, r);
  const std::vector<loom::pack::RowPass> passes = loom::pack::row_passes(copies);
  // 9 row sets (3 along y x 3 along z), each holding the x-low, middle and x-high boxes except
  // the centre's, which has no middle box.
  ASSERT_EQ(passes.size(), 9u);
  size_t segments = 0;
  for (const auto& p : passes) {
    segments += p.segments.size();
    for (size_t s = 1; s < p.segments.size(); ++s)
      EXPECT_LT(p.segments[s - 1].to, p.segments[s].to);  // the destination's order
  }
  EXPECT_EQ(segments, 26u);
  // Empty boxes make no pass.
  BoxCopy empty = copies.front();
  empty.size[1] = 0;
  EXPECT_TRUE(loom::pack::row_passes({empty}).empty());
}

}  // namespace
