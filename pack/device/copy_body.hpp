// What one GPU thread does, written once for the CUDA kernels and the emulated device: the
// CPU tests run this code over every thread index and compare with the CPU executor.
//
// Segments: thread t moves words [t * K, t * K + K) of the segment in typemap order, K =
// kMaxWord / word, so that a thread's packed bytes are one 16-byte store (or load) when the
// packed side is linear and aligned. It splits its first index over the dimensions once and
// steps an odometer for the rest. Tables: one thread per word when every block has the same
// length, else `lanes` threads share each block.
#pragma once

#include <cstdint>
#include <cstring>

#include "pack/device/fast_divmod.hpp"
#include "pack/device/program.hpp"

namespace loom::pack::device {

struct alignas(16) Word16 {
  uint64_t lo, hi;
};
template <int W>
struct WordOf;
template <>
struct WordOf<1> {
  using type = uint8_t;
};
template <>
struct WordOf<2> {
  using type = uint16_t;
};
template <>
struct WordOf<4> {
  using type = uint32_t;
};
template <>
struct WordOf<8> {
  using type = uint64_t;
};
template <>
struct WordOf<16> {
  using type = Word16;
};

template <int W>
LOOM_HOST_DEVICE LOOM_FORCE_INLINE void copy_word(char* dst, const char* src) {
  using T = typename WordOf<W>::type;
#if defined(__CUDA_ARCH__)
  *reinterpret_cast<T*>(dst) = *reinterpret_cast<const T*>(src);
#else
  std::memcpy(dst, src, sizeof(T));
#endif
}

template <int W, bool kPack>
LOOM_HOST_DEVICE LOOM_FORCE_INLINE void move_word(char* user, char* packed) {
  if constexpr (kPack)
    copy_word<W>(packed, user);
  else
    copy_word<W>(user, packed);
}

// Number of threads a segment needs.
LOOM_HOST_DEVICE inline int64_t segment_threads(const SegmentArgs& a) {
  const int64_t k = kMaxWord / a.word;
  return (a.words + k - 1) / k;
}

// kDims >= a.ndims bounds the unrolled loops over dimensions: most segments have one or two
// (a vector, a face), and a 1-byte word would otherwise pay for ten at every step.
template <int W, bool kPack, bool kIndex32, int kDims = kCopyDims>
LOOM_HOST_DEVICE LOOM_FORCE_INLINE void copy_segment_thread(const SegmentArgs& a, char* user,
                                                            char* packed, int64_t thread) {
  constexpr int K = kMaxWord / W;
  const int64_t first = thread * K;
  if (first >= a.words) return;
  const int n = a.words - first < K ? static_cast<int>(a.words - first) : K;

  int64_t index[kDims] = {};
  int64_t user_off = a.user_disp, packed_off = a.packed_disp;
  uint64_t rest = static_cast<uint64_t>(first);
  LOOM_UNROLL
  for (int d = 0; d < kDims; ++d) {
    if (d < a.ndims) {
      int64_t i;
      if constexpr (kIndex32) {
        uint32_t q, r;
        a.div[d].divmod(static_cast<uint32_t>(rest), &q, &r);
        i = r, rest = q;
      } else {
        const uint64_t c = static_cast<uint64_t>(a.count[d]);
        i = static_cast<int64_t>(rest % c), rest /= c;
      }
      index[d] = i;
      user_off += i * a.user_stride[d];
      packed_off += i * a.packed_stride[d];
    }
  }
  auto step = [&] {
    bool carry = true;
    LOOM_UNROLL
    for (int d = 0; d < kDims; ++d) {
      if (carry && d < a.ndims) {
        user_off += a.user_stride[d];
        packed_off += a.packed_stride[d];
        if (++index[d] == a.count[d] && d + 1 < a.ndims) {
          user_off -= a.count[d] * a.user_stride[d];
          packed_off -= a.count[d] * a.packed_stride[d];
          index[d] = 0;
        } else {
          carry = false;
        }
      }
    }
  };

  if constexpr (K > 1) {
    // The thread's packed bytes as one 16-byte access when they are contiguous and aligned.
    char* packed_at = packed + packed_off;
    if (a.packed_linear && n == K && (reinterpret_cast<uintptr_t>(packed_at) & 15) == 0) {
      Word16 v;
      char* bytes = reinterpret_cast<char*>(&v);
      if constexpr (!kPack) copy_word<16>(bytes, packed_at);
      LOOM_UNROLL
      for (int j = 0; j < K; ++j) {
        if constexpr (kPack)
          copy_word<W>(bytes + j * W, user + user_off);
        else
          copy_word<W>(user + user_off, bytes + j * W);
        if (j + 1 < K) step();
      }
      if constexpr (kPack) copy_word<16>(packed_at, bytes);
      return;
    }
  }
  for (int j = 0; j < n; ++j) {
    move_word<W, kPack>(user + user_off, packed + packed_off);
    if (j + 1 < n) step();
  }
}

// The table's three arrays, each `entries` long, one after the other.
struct TableView {
  const int64_t* user_disp;
  const int64_t* len;
  const int64_t* packed_disp;
};

LOOM_HOST_DEVICE inline int64_t uniform_table_threads(const TableArgs& t) {
  return t.entries * (t.uniform_len / t.word) * t.count;
}

// Uniform tables: thread -> (word, entry, element).
template <int W, bool kPack>
LOOM_HOST_DEVICE LOOM_FORCE_INLINE void copy_uniform_table_thread(const TableArgs& t, TableView v,
                                                                  char* user, char* packed,
                                                                  int64_t thread) {
  uint32_t entry_element, word, element, entry;
  t.word_div.divmod(static_cast<uint32_t>(thread), &entry_element, &word);
  t.entry_div.divmod(entry_element, &element, &entry);
  const int64_t at = int64_t{word} * W;
  move_word<W, kPack>(user + v.user_disp[entry] + element * t.extent + at,
                      packed + v.packed_disp[entry] + element * t.element_size + at);
}

// Any table: `lanes` threads share the words of block `block` (entry, then element).
template <int W, bool kPack>
LOOM_HOST_DEVICE LOOM_FORCE_INLINE void copy_table_block(const TableArgs& t, TableView v,
                                                         char* user, char* packed, int64_t block,
                                                         int lane, int lanes) {
  const int64_t entry = block % t.entries, element = block / t.entries;
  char* u = user + v.user_disp[entry] + element * t.extent;
  char* p = packed + v.packed_disp[entry] + element * t.element_size;
  const int64_t words = v.len[entry] / W;
  for (int64_t w = lane; w < words; w += lanes) move_word<W, kPack>(u + w * W, p + w * W);
}

// The smallest dimension bound a segment fits: 2, 4 or kCopyDims.
inline int dims_bound(const SegmentArgs& a) {
  return a.ndims <= 2 ? 2 : a.ndims <= 4 ? 4 : kCopyDims;
}

// Calls f.template operator()<D>() with dims_bound(a) as a constant.
template <typename F>
void with_dims(const SegmentArgs& a, F&& f) {
  switch (dims_bound(a)) {
    case 2:
      return f.template operator()<2>();
    case 4:
      return f.template operator()<4>();
    default:
      return f.template operator()<kCopyDims>();
  }
}

// Calls f.template operator()<W>() with the run-time word size as a constant.
template <typename F>
void with_word(int word, F&& f) {
  switch (word) {
    case 16:
      return f.template operator()<16>();
    case 8:
      return f.template operator()<8>();
    case 4:
      return f.template operator()<4>();
    case 2:
      return f.template operator()<2>();
    default:
      return f.template operator()<1>();
  }
}

}  // namespace loom::pack::device
