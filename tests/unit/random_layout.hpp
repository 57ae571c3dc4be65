// Random IR trees and the reference block stream the tests compare against.
#pragma once

#include <cstdint>
#include <random>
#include <utility>
#include <vector>

#include "types/ir.hpp"

namespace loom::test {

// The typemap as (offset, length) blocks with adjacent blocks merged: two layouts
// pack identically exactly when these are equal.
inline std::vector<std::pair<int64_t, int64_t>> block_stream(const types::Layout& layout,
                                                             int64_t count = 1,
                                                             int64_t extent = 0) {
  std::vector<std::pair<int64_t, int64_t>> out;
  for (int64_t i = 0; i < count; ++i)
    types::for_each_block(layout, [&](int64_t off, int64_t len) {
      off += i * extent;
      if (!out.empty() && out.back().first + out.back().second == off)
        out.back().second += len;
      else
        out.emplace_back(off, len);
    });
  return out;
}

// Random trees with small footprint: depth <= max_depth, negative strides and
// displacements, zero counts, repeated shapes (so the merge rules fire).
class RandomLayouts {
 public:
  explicit RandomLayouts(uint64_t seed) : rng_(seed) {}

  types::NodeRef node(int depth) {
    const int kind = depth <= 0 ? 0 : pick(0, 3);
    switch (kind) {
      case 0:
        return types::make_dense(pick(0, 5) == 0 ? pick(0, 1) : pick(1, 24));
      case 1:
      case 2: {
        auto child = node(depth - 1);
        const int64_t span =
            std::max<int64_t>(1, types::bounds(*child).hi - types::bounds(*child).lo);
        const int64_t count = pick(0, 6) == 0 ? pick(0, 1) : pick(2, 9);
        int64_t stride = span + pick(0, 3) * pick(0, 16);
        if (pick(0, 4) == 0) stride = -stride;
        if (pick(0, 4) == 0) stride = span;  // dense-foldable
        return types::make_repeat(count, stride, child);
      }
      default: {
        std::vector<types::Placed> items;
        const int n = static_cast<int>(pick(1, 5));
        int64_t disp = pick(-40, 40);
        auto shared = node(depth - 1);
        for (int i = 0; i < n; ++i) {
          auto child = pick(0, 1) ? shared : node(depth - 1);
          items.push_back({disp, child});
          const auto b = types::bounds(*child);
          disp += (b.hi - b.lo) + (pick(0, 2) ? 0 : pick(-8, 24));
        }
        return types::make_sequence(std::move(items));
      }
    }
  }

  types::Layout layout(int depth) { return {{pick(-64, 64), node(depth)}}; }

  int64_t pick(int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng_);
  }

 private:
  std::mt19937_64 rng_;
};

}  // namespace loom::test
