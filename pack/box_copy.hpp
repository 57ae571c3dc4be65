// Copies of 3-D boxes of cells between strided arrays, as a halo exchange fills ghost cells
// inside one process (a periodic wrap onto itself, or a neighbour's array in node-shared
// memory). Boxes that cover the same rows are copied in one pass over those rows.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

namespace loom::pack {

// Strides in bytes along x, y and z; lows and sizes in cells.
struct BoxCopy {
  const char* from;  // the source array's cell (0, 0, 0)
  std::array<int64_t, 3> from_stride, from_lo;
  char* to;  // the destination array's cell (0, 0, 0)
  std::array<int64_t, 3> to_stride, to_lo;
  std::array<int64_t, 3> size;
  int64_t element;  // bytes per cell
};

// Box copies with one source array and one destination array that cover the same rows (the
// same y and z ranges on each side) and differ only along x, run as one pass over those rows:
// a row's first and last lines hold both ghost cells and the interior cells other ghosts
// mirror, so a pass per box would fetch them once per box.
struct RowPass {
  const char* from;  // the first row's x = 0
  char* to;
  std::array<int64_t, 3> from_stride, to_stride;
  int64_t rows = 0, planes = 0, element = 0;
  struct Segment {
    int64_t from, to, cells;  // byte offsets along x from the rows' start, and cells
  };
  std::vector<Segment> segments;  // in the destination's order along x
};

// The passes that make `copies`, in the order of their first box. Boxes with no cells are left
// out. Within one pass the boxes may be copied in any order: their destinations must not overlap
// their sources or each other.
std::vector<RowPass> row_passes(const std::vector<BoxCopy>& copies);
void run_pass(const RowPass& pass);

}  // namespace loom::pack
