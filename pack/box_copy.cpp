#include "pack/box_copy.hpp"

#include <algorithm>
#include <utility>

#include "pack/row_loops.hpp"

namespace loom::pack {

std::vector<RowPass> row_passes(const std::vector<BoxCopy>& copies) {
  std::vector<RowPass> passes;
  for (const BoxCopy& c : copies) {
    if (c.size[0] <= 0 || c.size[1] <= 0 || c.size[2] <= 0) continue;
    const char* from = c.from + c.from_lo[1] * c.from_stride[1] + c.from_lo[2] * c.from_stride[2];
    char* to = c.to + c.to_lo[1] * c.to_stride[1] + c.to_lo[2] * c.to_stride[2];
    auto same_rows = [&](const RowPass& p) {
      return p.from == from && p.to == to && p.from_stride == c.from_stride &&
             p.to_stride == c.to_stride && p.rows == c.size[1] && p.planes == c.size[2] &&
             p.element == c.element;
    };
    auto pass = std::find_if(passes.begin(), passes.end(), same_rows);
    if (pass == passes.end()) {
      passes.push_back({from, to, c.from_stride, c.to_stride, c.size[1], c.size[2], c.element, {}});
      pass = passes.end() - 1;
    }
    pass->segments.push_back(
        {c.from_lo[0] * c.from_stride[0], c.to_lo[0] * c.to_stride[0], c.size[0]});
  }
  for (RowPass& p : passes)
    std::sort(p.segments.begin(), p.segments.end(),
              [](const RowPass::Segment& a, const RowPass::Segment& b) { return a.to < b.to; });
  return passes;
}

namespace {

// A pass over rows of adjacent cells with a fixed number of segments, each moved by its own
// inlined copy_block (ghost segments are often a few cells wide, where a memcpy call costs more
// than the bytes). One load instruction per segment keeps each segment's constant stride
// visible to the CPU's stride prefetcher (flatten: the copies must be inlined for that); a loop
// over the segments would issue them all from one instruction at alternating strides.
template <size_t... kSegment>
[[gnu::flatten]] void run_rows(const RowPass& p, std::index_sequence<kSegment...>) {
  const std::array<RowPass::Segment, sizeof...(kSegment)> segment{p.segments[kSegment]...};
  const std::array<int64_t, sizeof...(kSegment)> bytes{segment[kSegment].cells * p.element...};
  for (int64_t k = 0; k < p.planes; ++k)
    for (int64_t j = 0; j < p.rows; ++j) {
      const char* in = p.from + j * p.from_stride[1] + k * p.from_stride[2];
      char* out = p.to + j * p.to_stride[1] + k * p.to_stride[2];
      (copy_block(out + segment[kSegment].to, in + segment[kSegment].from, bytes[kSegment]), ...);
    }
}

}  // namespace

// A box stencil gives a pass at most three segments (a row's two ghosts and its middle); cells
// that are not adjacent along x (arrays of structs) go one by one.
void run_pass(const RowPass& p) {
  const bool adjacent = p.from_stride[0] == p.element && p.to_stride[0] == p.element;
  if (adjacent && p.segments.size() == 1) return run_rows(p, std::make_index_sequence<1>());
  if (adjacent && p.segments.size() == 2) return run_rows(p, std::make_index_sequence<2>());
  if (adjacent && p.segments.size() == 3) return run_rows(p, std::make_index_sequence<3>());
  for (int64_t k = 0; k < p.planes; ++k)
    for (int64_t j = 0; j < p.rows; ++j) {
      const char* in = p.from + j * p.from_stride[1] + k * p.from_stride[2];
      char* out = p.to + j * p.to_stride[1] + k * p.to_stride[2];
      for (const RowPass::Segment& s : p.segments) {
        if (adjacent) {
          copy_block(out + s.to, in + s.from, s.cells * p.element);
          continue;
        }
        for (int64_t x = 0; x < s.cells; ++x)
          copy_block(out + s.to + x * p.to_stride[0], in + s.from + x * p.from_stride[0],
                     p.element);
      }
    }
}

}  // namespace loom::pack
