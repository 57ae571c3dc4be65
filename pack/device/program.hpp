// A Plan compiled for a data-parallel executor (a GPU, or the emulated device that runs the
// same code on the CPU). The CPU executor walks ops one block at a time; a GPU needs every
// copy flattened into independent words that thousands of threads take at once, with no
// metadata for the device to look up per call (TEMPI's rule, Pearson 2021 ch. 5). So a
// Program is a handful of Segments, each a strided-to-strided copy of up to kCopyDims
// dimensions passed to the kernel by value, plus, for irregular types, one table of blocks
// that an executor uploads once.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "pack/device/fast_divmod.hpp"

namespace loom::pack {
class Plan;
}

namespace loom::pack::device {

// Dimension 0 counts the words of one block, the last may count elements of the MPI count,
// and the plan's strided ops have at most 8 dimensions between them.
constexpr int kCopyDims = 10;
constexpr int kMaxWord = 16;  // bytes a thread moves with one load or store

// Words at user + user_disp + sum(i[d] * user_stride[d]) pair with words at
// packed + packed_disp + sum(i[d] * packed_stride[d]), for 0 <= i[d] < count[d], in
// typemap order (dimension 0 fastest).
struct Segment {
  int ndims = 0;
  int word = 1;  // bytes per word: a power of two <= kMaxWord dividing every offset below
  int64_t count[kCopyDims] = {};
  int64_t user_stride[kCopyDims] = {};
  int64_t packed_stride[kCopyDims] = {};
  int64_t user_disp = 0, packed_disp = 0;
  int64_t words() const;
};

// Irregular blocks: entry i copies len[i] bytes between user + user_disp[i] and
// packed + packed_disp[i]; for count > 1, element e adds e * extent and e * element_size.
struct BlockTable {
  std::vector<int64_t> user_disp, len, packed_disp;
  int64_t uniform_len = 0;  // every entry's length, or 0 when they differ
  int word = 1;             // divides every displacement and length
  bool empty() const { return len.empty(); }
};

// What a kernel receives for one segment of one call: the segment with the call's count
// folded in, its word size lowered to the buffers' alignment, and dimensions merged where
// both sides are contiguous.
struct SegmentArgs {
  int ndims = 0;
  int word = 1;
  bool packed_linear = false;  // packed offset = packed_disp + linear index * word
  bool index32 = true;         // every index fits 32 bits: FastDivmod applies
  int64_t words = 0;
  int64_t user_disp = 0, packed_disp = 0;
  int64_t count[kCopyDims] = {};
  int64_t user_stride[kCopyDims] = {};
  int64_t packed_stride[kCopyDims] = {};
  FastDivmod div[kCopyDims];
};

// The bytes of the user's buffer one call reaches, relative to its `user` pointer: [lo, hi).
struct Span {
  int64_t lo = 0, hi = 0;
  int64_t bytes() const { return hi - lo; }
};

// A call that is one 2-D copy, as a copy engine takes it (cudaMemcpy2D): `height` rows of
// `width` bytes, `pitch` bytes apart from user + user_disp, packed back to back.
struct Rows {
  int64_t width = 0, height = 0, pitch = 0, user_disp = 0;
};

// The block table of one call (entries repeat for each of `count` elements).
struct TableArgs {
  int word = 1;
  int64_t entries = 0, uniform_len = 0, count = 1, extent = 0, element_size = 0;
  FastDivmod entry_div, word_div;  // uniform tables: linear word index -> (entry, word)
};

class Program {
 public:
  explicit Program(const Plan& plan);

  int64_t size() const { return size_; }      // packed bytes per element
  int64_t extent() const { return extent_; }  // bytes between elements
  bool dense() const { return dense_; }
  int64_t dense_disp() const { return dense_disp_; }  // dense: where the bytes start
  const std::vector<Segment>& segments() const { return segments_; }
  const BlockTable& table() const { return table_; }

  // The arguments of each segment's launch for `count` elements at `user` and `packed`.
  // Appends to `out` (cleared first).
  void segment_args(const void* user, int64_t count, const void* packed,
                    std::vector<SegmentArgs>* out) const;
  TableArgs table_args(const void* user, int64_t count, const void* packed) const;

  Span user_span(int64_t count) const;
  // Contiguous blocks per element (segments' blocks and table entries).
  int64_t blocks_per_element() const { return blocks_per_element_; }
  // Whether `count` elements form one 2-D copy (a vector, a dense run); fills `rows`.
  bool as_rows(int64_t count, Rows* rows) const;

  // An executor's own copy of the table (device memory), made on first use and kept.
  template <typename Make>
  const void* executor_table(Make&& make) const {
    std::call_once(table_once_, [&] { executor_table_ = make(table_); });
    return executor_table_.get();
  }

  std::string describe() const;

  struct Outer;  // loops around an op while compiling (program.cpp)

 private:
  bool table_as_rows(int64_t count, Rows* rows) const;
  void add_ops(const Plan& plan, uint32_t first, uint32_t last, int64_t packed_disp,
               const Outer& outer);

  std::vector<Segment> segments_;
  BlockTable table_;
  int64_t size_ = 0, extent_ = 0, dense_disp_ = 0;
  Span element_span_;  // of one element
  int64_t blocks_per_element_ = 0;
  bool dense_ = false;
  mutable std::once_flag table_once_;
  mutable std::shared_ptr<const void> executor_table_;
};

}  // namespace loom::pack::device
