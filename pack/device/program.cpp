#include "pack/device/program.hpp"

#include <algorithm>
#include <cstdio>

#include "pack/plan.hpp"

namespace loom::pack::device {

namespace {

// Beyond this many segments a type launches too many kernels: its blocks go to the table.
constexpr size_t kMaxSegments = 64;
// A table this large (entries x 24 bytes of device memory) is kept as segments instead.
constexpr int64_t kMaxTableEntries = int64_t{1} << 24;

int widest_word(int64_t value) {
  int word = kMaxWord;
  while (word > 1 && value % word != 0) word /= 2;
  return word;
}

}  // namespace

// The loops of the enclosing program around an op, innermost first.
struct Program::Outer {
  int ndims = 0;
  int64_t count[kCopyDims] = {};
  int64_t user_stride[kCopyDims] = {};
  int64_t packed_stride[kCopyDims] = {};
  int64_t user_disp = 0;
};

namespace {

using Outer = Program::Outer;

// Calls visit(user_offset, packed_offset) for every index of the outer loops.
template <typename Visit>
void for_each_outer(const Outer& outer, Visit&& visit) {
  int64_t index[kCopyDims] = {};
  for (int d = 0; d < outer.ndims; ++d)
    if (outer.count[d] == 0) return;
  while (true) {
    int64_t user = outer.user_disp, packed = 0;
    for (int d = 0; d < outer.ndims; ++d)
      user += index[d] * outer.user_stride[d], packed += index[d] * outer.packed_stride[d];
    visit(user, packed);
    int d = 0;
    for (; d < outer.ndims && ++index[d] == outer.count[d]; ++d) index[d] = 0;
    if (d == outer.ndims) return;
  }
}

// Every block of a segment whose dimension 0 counts bytes, as table entries.
void append_blocks(const Segment& s, BlockTable* table) {
  Outer outer;
  outer.ndims = s.ndims - 1;
  for (int d = 1; d < s.ndims; ++d) {
    outer.count[d - 1] = s.count[d];
    outer.user_stride[d - 1] = s.user_stride[d];
    outer.packed_stride[d - 1] = s.packed_stride[d];
  }
  outer.user_disp = s.user_disp;
  for_each_outer(outer, [&](int64_t user, int64_t packed) {
    table->user_disp.push_back(user);
    table->len.push_back(s.count[0]);
    table->packed_disp.push_back(s.packed_disp + packed);
  });
}

// Drops dimensions of count 1 and merges neighbours that are contiguous on both sides.
void simplify(int* ndims, int64_t* count, int64_t* user_stride, int64_t* packed_stride) {
  int out = 0;
  for (int d = 0; d < *ndims; ++d) {
    if (count[d] == 1 && *ndims > 1) continue;
    if (out > 0 && user_stride[d] == count[out - 1] * user_stride[out - 1] &&
        packed_stride[d] == count[out - 1] * packed_stride[out - 1]) {
      count[out - 1] *= count[d];
      continue;
    }
    count[out] = count[d], user_stride[out] = user_stride[d], packed_stride[out] = packed_stride[d];
    ++out;
  }
  if (out == 0) {  // every dimension had count 1
    count[0] = 1;
    out = 1;
  }
  *ndims = out;
}

}  // namespace

int64_t Segment::words() const {
  int64_t n = 1;
  for (int d = 0; d < ndims; ++d) n *= count[d];
  return n;
}

Program::Program(const Plan& plan)
    : size_(plan.size()), extent_(plan.extent()), dense_(plan.dense()) {
  if (size_ == 0) return;
  if (dense_) {
    dense_disp_ = plan.ops()[0].disp;
    element_span_ = {dense_disp_, dense_disp_ + size_};
    blocks_per_element_ = 1;
    return;
  }
  add_ops(plan, 0, plan.top_ops(), 0, Outer{});

  // Too many segments: their blocks join the table, unless that makes it too large.
  int64_t blocks = static_cast<int64_t>(table_.len.size());
  for (const Segment& s : segments_) blocks += s.words() / s.count[0];
  if (segments_.size() > kMaxSegments && blocks <= kMaxTableEntries) {
    for (const Segment& s : segments_) append_blocks(s, &table_);
    segments_.clear();
  }

  // Dimension 0 of a segment counts bytes until here; it now counts words of the widest
  // size that every offset allows.
  for (Segment& s : segments_) {
    int64_t all = s.count[0] | s.user_disp | s.packed_disp;
    for (int d = 1; d < s.ndims; ++d) all |= s.user_stride[d] | s.packed_stride[d];
    s.word = widest_word(all);
    s.count[0] /= s.word;
    s.user_stride[0] = s.packed_stride[0] = s.word;
  }
  if (!table_.empty()) {
    int64_t all = 0;
    table_.uniform_len = table_.len[0];
    for (size_t i = 0; i < table_.len.size(); ++i) {
      all |= table_.user_disp[i] | table_.len[i] | table_.packed_disp[i];
      if (table_.len[i] != table_.uniform_len) table_.uniform_len = 0;
    }
    table_.word = widest_word(all);
  }

  bool first = true;
  auto reach = [&](int64_t lo, int64_t hi) {
    element_span_.lo = first ? lo : std::min(element_span_.lo, lo);
    element_span_.hi = first ? hi : std::max(element_span_.hi, hi);
    first = false;
  };
  blocks_per_element_ = static_cast<int64_t>(table_.len.size());
  for (const Segment& s : segments_) {
    blocks_per_element_ += s.words() / s.count[0];
    int64_t lo = s.user_disp, hi = s.user_disp + s.word;
    for (int d = 0; d < s.ndims; ++d) {
      const int64_t walk = (s.count[d] - 1) * s.user_stride[d];
      (walk < 0 ? lo : hi) += walk;
    }
    reach(lo, hi);
  }
  for (size_t i = 0; i < table_.len.size(); ++i)
    reach(table_.user_disp[i], table_.user_disp[i] + table_.len[i]);
}

Span Program::user_span(int64_t count) const {
  if (count <= 0 || size_ == 0) return {};
  const int64_t walk = (count - 1) * extent_;
  return {element_span_.lo + std::min<int64_t>(walk, 0),
          element_span_.hi + std::max<int64_t>(walk, 0)};
}

bool Program::as_rows(int64_t count, Rows* rows) const {
  if (count <= 0 || size_ == 0) return false;
  if (dense_) {
    *rows = {count * size_, 1, count * size_, dense_disp_};
    return true;
  }
  if (segments_.empty()) return table_as_rows(count, rows);
  if (segments_.size() != 1 || !table_.empty()) return false;
  thread_local std::vector<SegmentArgs> args;
  segment_args(nullptr, count, nullptr, &args);
  const SegmentArgs& a = args[0];
  if (!a.packed_linear) return false;
  // Dimension 0 is a contiguous block unless simplify() dropped a one-word block dimension.
  const bool block_first = a.user_stride[0] == a.word;
  const int64_t width = block_first ? a.count[0] * a.word : a.word;
  const int row_dim = block_first ? 1 : 0;
  if (a.ndims - row_dim > 1) return false;
  if (a.ndims == row_dim) {
    *rows = {width, 1, width, a.user_disp};
    return true;
  }
  const int64_t pitch = a.user_stride[row_dim];
  if (pitch < width) return false;  // rows that overlap or run backwards
  *rows = {width, a.count[row_dim], pitch, a.user_disp};
  return true;
}

// A short vector becomes a table of equal blocks at one pitch: rows too.
bool Program::table_as_rows(int64_t count, Rows* rows) const {
  const BlockTable& t = table_;
  const auto entries = static_cast<int64_t>(t.len.size());
  if (entries == 0 || t.uniform_len <= 0) return false;
  const int64_t width = t.uniform_len;
  const int64_t pitch = entries > 1 ? t.user_disp[1] - t.user_disp[0] : extent_;
  if (pitch < width) return false;
  for (int64_t i = 0; i < entries; ++i)
    if (t.user_disp[i] != t.user_disp[0] + i * pitch || t.packed_disp[i] != i * width) return false;
  if (count > 1 && (extent_ != entries * pitch || size_ != entries * width)) return false;
  *rows = {width, entries * count, pitch, t.user_disp[0]};
  return true;
}

void Program::add_ops(const Plan& plan, uint32_t first, uint32_t last, int64_t packed_disp,
                      const Outer& outer) {
  for (uint32_t i = first; i < last; ++i) {
    const Op& op = plan.ops()[i];
    if (op.kind == Op::Kind::Loop) {
      const int64_t body_size = op.count[0] > 0 ? op.size / op.count[0] : 0;
      // A loop inside `outer` is the innermost of the outer dimensions.
      Outer inner;
      inner.ndims = outer.ndims + 1;
      inner.count[0] = op.count[0];
      inner.user_stride[0] = op.stride[0];
      inner.packed_stride[0] = body_size;
      for (int d = 0; d < outer.ndims; ++d) {
        inner.count[d + 1] = outer.count[d];
        inner.user_stride[d + 1] = outer.user_stride[d];
        inner.packed_stride[d + 1] = outer.packed_stride[d];
      }
      inner.user_disp = outer.user_disp + op.disp;
      if (inner.ndims + 1 < kCopyDims) {
        add_ops(plan, op.first, op.last, packed_disp, inner);
      } else {  // too deep for one segment: one pass of the body per outermost iteration
        Outer rest = inner;
        const int outermost = inner.ndims - 1;
        Outer walk;
        walk.ndims = 1;
        walk.count[0] = inner.count[outermost];
        walk.user_stride[0] = inner.user_stride[outermost];
        walk.packed_stride[0] = inner.packed_stride[outermost];
        rest.ndims = inner.ndims - 1;
        for_each_outer(walk, [&](int64_t user, int64_t packed) {
          Outer one = rest;
          one.user_disp = inner.user_disp + user;
          add_ops(plan, op.first, op.last, packed_disp + packed, one);
        });
      }
    } else if (op.kind == Op::Kind::List) {
      for_each_outer(outer, [&](int64_t user, int64_t packed) {
        int64_t at = packed_disp + packed;
        for (uint32_t e = op.first; e < op.last; ++e) {
          table_.user_disp.push_back(user + plan.list_disp()[e]);
          table_.len.push_back(plan.list_len()[e]);
          table_.packed_disp.push_back(at);
          at += plan.list_len()[e];
        }
      });
    } else {  // Copy or Strided: dimension 0 counts the block's bytes for now
      Segment s;
      s.ndims = 1;
      s.count[0] = op.block;
      s.user_stride[0] = s.packed_stride[0] = 1;
      int64_t packed_stride = op.block;
      const int dims = op.kind == Op::Kind::Strided ? op.ndims : 0;
      for (int d = 0; d < dims; ++d, ++s.ndims) {
        s.count[s.ndims] = op.count[d];
        s.user_stride[s.ndims] = op.stride[d];
        s.packed_stride[s.ndims] = packed_stride;
        packed_stride *= op.count[d];
      }
      if (s.ndims + outer.ndims >= kCopyDims) {  // a strided op of 8 dims inside a loop
        Segment flat = s;
        for_each_outer(outer, [&](int64_t user, int64_t packed) {
          flat.user_disp = user + op.disp;
          flat.packed_disp = packed_disp + packed;
          append_blocks(flat, &table_);
        });
      } else {
        for (int d = 0; d < outer.ndims; ++d, ++s.ndims) {
          s.count[s.ndims] = outer.count[d];
          s.user_stride[s.ndims] = outer.user_stride[d];
          s.packed_stride[s.ndims] = outer.packed_stride[d];
        }
        s.user_disp = outer.user_disp + op.disp;
        s.packed_disp = packed_disp;
        if (s.words() > 0) segments_.push_back(s);
      }
    }
    packed_disp += op.size;
  }
}

void Program::segment_args(const void* user, int64_t count, const void* packed,
                           std::vector<SegmentArgs>* out) const {
  out->clear();
  if (count <= 0) return;
  const auto user_at = reinterpret_cast<uintptr_t>(user);
  const auto packed_at = reinterpret_cast<uintptr_t>(packed);
  for (const Segment& s : segments_) {
    SegmentArgs a;
    a.ndims = s.ndims;
    for (int d = 0; d < s.ndims; ++d) {
      a.count[d] = s.count[d];
      a.user_stride[d] = s.user_stride[d];
      a.packed_stride[d] = s.packed_stride[d];
    }
    a.user_disp = s.user_disp;
    a.packed_disp = s.packed_disp;
    if (count > 1) {  // the program leaves one dimension free for the count
      a.count[a.ndims] = count;
      a.user_stride[a.ndims] = extent_;
      a.packed_stride[a.ndims] = size_;
      ++a.ndims;
    }
    // The buffers' alignment (and the element's, for a count) may allow less than the
    // type does: dimension 0 then counts more, narrower words.
    uint64_t all = static_cast<uint64_t>(s.word) | (user_at + static_cast<uint64_t>(s.user_disp)) |
                   (packed_at + static_cast<uint64_t>(s.packed_disp));
    if (count > 1) all |= static_cast<uint64_t>(extent_) | static_cast<uint64_t>(size_);
    const int word = widest_word(static_cast<int64_t>(all & (kMaxWord - 1)) | kMaxWord);
    a.word = std::min(s.word, word);
    a.count[0] *= s.word / a.word;
    a.user_stride[0] = a.packed_stride[0] = a.word;
    simplify(&a.ndims, a.count, a.user_stride, a.packed_stride);

    a.words = 1;
    a.packed_linear = true;
    for (int d = 0; d < a.ndims; ++d) {
      if (a.packed_stride[d] != a.word * a.words) a.packed_linear = false;
      a.words *= a.count[d];
    }
    a.index32 = a.words <= int64_t{0xffffffff};
    if (a.index32)
      for (int d = 0; d < a.ndims; ++d) a.div[d] = FastDivmod(static_cast<uint32_t>(a.count[d]));
    out->push_back(a);
  }
}

TableArgs Program::table_args(const void* user, int64_t count, const void* packed) const {
  TableArgs t;
  t.entries = static_cast<int64_t>(table_.len.size());
  t.uniform_len = table_.uniform_len;
  t.count = count;
  t.extent = extent_;
  t.element_size = size_;
  uint64_t all = static_cast<uint64_t>(table_.word) | reinterpret_cast<uintptr_t>(user) |
                 reinterpret_cast<uintptr_t>(packed);
  if (count > 1) all |= static_cast<uint64_t>(extent_) | static_cast<uint64_t>(size_);
  t.word =
      std::min(table_.word, widest_word(static_cast<int64_t>(all & (kMaxWord - 1)) | kMaxWord));
  const int64_t words_per_entry = t.uniform_len / t.word;
  if (t.uniform_len > 0 && t.entries * words_per_entry * count <= int64_t{0xffffffff}) {
    t.word_div = FastDivmod(static_cast<uint32_t>(words_per_entry));
    t.entry_div = FastDivmod(static_cast<uint32_t>(t.entries));
  } else {
    t.uniform_len = 0;  // the per-entry kernel handles it
  }
  return t;
}

std::string Program::describe() const {
  char text[160];
  std::snprintf(text, sizeof text, "device program: %zu segments, %zu table entries%s",
                segments_.size(), table_.len.size(), dense_ ? ", dense" : "");
  std::string out = text;
  for (const Segment& s : segments_) {
    out += "\n  word=" + std::to_string(s.word) + " dims=";
    for (int d = 0; d < s.ndims; ++d) {
      if (d) out += ',';
      out += std::to_string(s.count[d]) + "x" + std::to_string(s.user_stride[d]) + "/" +
             std::to_string(s.packed_stride[d]);
    }
  }
  return out;
}

}  // namespace loom::pack::device
