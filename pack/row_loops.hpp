// Per-block copy loops shared by every ISA's kernels. Each kernels_<isa>.cpp is
// compiled with its own -m flags and includes this header; the anonymous namespace
// gives each translation unit its own copy, so an AVX-512 instance can never be
// picked by the linker for the scalar path.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "pack/kernels.hpp"

namespace loom::pack {
namespace {

constexpr int64_t kInlineCopyBytes = 256;  // longer blocks go to memcpy

// Copies `len` bytes, `width` <= len <= 2 * `width`, as two moves of `width` bytes each way
// (the first and the last `width`, overlapping in the middle). Forced inline: the per-block
// loops compile to the same code as with each width written out.
template <size_t width>
[[gnu::always_inline]] inline void copy_both_ends(char* dst, const char* src, int64_t len) {
  char first[width], last[width];
  std::memcpy(first, src, width);
  std::memcpy(last, src + len - static_cast<int64_t>(width), width);
  std::memcpy(dst, first, width);
  std::memcpy(dst + len - static_cast<int64_t>(width), last, width);
}

// Copies `len` bytes with at most two (overlapping) fixed-size moves for short blocks:
// far cheaper than a memcpy call when blocks are a few bytes long.
inline void copy_block(char* dst, const char* src, int64_t len) {
  if (len <= 16) {
    if (len >= 8)
      copy_both_ends<8>(dst, src, len);
    else if (len >= 4)
      copy_both_ends<4>(dst, src, len);
    else if (len >= 2)
      copy_both_ends<2>(dst, src, len);
    else if (len == 1)
      *dst = *src;
  } else if (len <= 32) {
    copy_both_ends<16>(dst, src, len);
  } else if (len <= 64) {
    copy_both_ends<32>(dst, src, len);
  } else if (len <= kInlineCopyBytes) {
    // Inline 32-byte moves with an overlapping last one: no call for mid-size blocks.
    char a[32];
    for (int64_t off = 0; off < len - 32; off += 32) {
      std::memcpy(a, src + off, 32);
      std::memcpy(dst + off, a, 32);
    }
    std::memcpy(a, src + len - 32, 32);
    std::memcpy(dst + len - 32, a, 32);
  } else {
    std::memcpy(dst, src, static_cast<size_t>(len));
  }
}

// kPack copies strided -> packed, otherwise packed -> strided.
inline int64_t magnitude(int64_t v) {
  return v < 0 ? -v : v;
}

// When rows interleave more finely than the blocks within a row (a transpose, e.g.
// FFT2D's resized column vector packed with count N), walking the slab row by row
// touches a new cache line and often a new page for every block. Such slabs are walked
// in square tiles instead: each tile reads and writes a few lines per row and column.
// Packed offsets stay those of typemap order; only the order of the copies changes,
// which cannot change the result because distinct blocks of a valid typemap never
// overlap where they are written.
// Slabs that fit in L1 are walked in plain row order: there tiles cost more than they save,
// while from a few hundred KiB up they win by far on FFT2D's transpose (docs/bench-pack.md).
constexpr int64_t kTiledSlabBytes = int64_t{64} << 10;

inline bool walk_in_tiles(const Slab& s) {
  return s.rows > 1 && s.n > 1 && magnitude(s.row_stride) < magnitude(s.stride) &&
         s.block * s.n * s.rows > kTiledSlabBytes;
}

// The one row-major walk over a slab's blocks: `copy(dst, src, len)` moves each block,
// strided -> packed for kPack, packed -> strided otherwise.
template <bool kPack, typename Copy>
inline void for_each_block(char* packed, char* strided, const Slab& slab, Copy copy) {
  const Slab s = slab;  // locals: see list_fixed
  for (int64_t r = 0; r < s.rows; ++r) {
    char* row = strided + r * s.row_stride;
    for (int64_t i = 0; i < s.n; ++i, packed += s.block) {
      if constexpr (kPack)
        copy(packed, row + i * s.stride, s.block);
      else
        copy(row + i * s.stride, packed, s.block);
    }
  }
}

// A block of 4, 8 or 16 bytes moves in one register.
__extension__ typedef unsigned __int128 Word16;  // __extension__: GCC's type, no pedantic warning
template <int64_t kBlock>
using BlockWord =
    std::conditional_t<kBlock == 4, uint32_t, std::conditional_t<kBlock == 8, uint64_t, Word16>>;
template <int64_t kBlock>
constexpr bool kWordBlock = kBlock == 4 || kBlock == 8 || kBlock == 16;

template <int64_t kBlock>
inline BlockWord<kBlock> load_word(const char* p) {
  BlockWord<kBlock> w;
  std::memcpy(&w, p, kBlock);
  return w;
}
template <int64_t kBlock>
inline void store_word(char* p, BlockWord<kBlock> w) {
  std::memcpy(p, &w, kBlock);
}

// Moves four word blocks with the four loads issued before the four stores: the loads of
// the next group no longer wait behind stores that may alias them, and the loop runs a
// quarter as often. `from[j]` -> `to[j]`.
template <int64_t kBlock>
inline void move_four_words(char* const* to, char* const* from) {
  const BlockWord<kBlock> a = load_word<kBlock>(from[0]), b = load_word<kBlock>(from[1]),
                          c = load_word<kBlock>(from[2]), d = load_word<kBlock>(from[3]);
  store_word<kBlock>(to[0], a);
  store_word<kBlock>(to[1], b);
  store_word<kBlock>(to[2], c);
  store_word<kBlock>(to[3], d);
}

// for_each_block for word-sized blocks, four at a time: fewer loop iterations and more
// independent loads in flight than the one-block loop, which measured faster for 16-byte
// unpacks in 2-D/3-D rows and for packs of grid x-faces and edges (`loom-bench pack`,
// docs/bench-pack.md).
template <bool kPack, int64_t kBlock>
inline void for_each_word_block(char* packed, char* strided, const Slab& slab) {
  const Slab s = slab;  // locals: see list_fixed
  for (int64_t r = 0; r < s.rows; ++r) {
    char* row = strided + r * s.row_stride;
    int64_t i = 0;
    for (; i + 4 <= s.n; i += 4, packed += 4 * kBlock) {
      char* user = row + i * s.stride;
      char* const users[4] = {user, user + s.stride, user + 2 * s.stride, user + 3 * s.stride};
      char* const words[4] = {packed, packed + kBlock, packed + 2 * kBlock, packed + 3 * kBlock};
      if constexpr (kPack)
        move_four_words<kBlock>(words, users);
      else
        move_four_words<kBlock>(users, words);
    }
    for (; i < s.n; ++i, packed += kBlock) {
      if constexpr (kPack)
        store_word<kBlock>(packed, load_word<kBlock>(row + i * s.stride));
      else
        store_word<kBlock>(row + i * s.stride, load_word<kBlock>(packed));
    }
  }
}

template <bool kPack, int64_t kBlock>
inline void slab_fixed(char* packed, char* strided, const Slab& slab) {
  const Slab s = slab;  // locals: see list_fixed
  if (walk_in_tiles(s)) {
    constexpr int64_t kTile = 32;
    const int64_t packed_row = s.n * kBlock;
    // Inside a tile the stores run along memory: packed rows for pack, user columns
    // for unpack.
    for (int64_t r0 = 0; r0 < s.rows; r0 += kTile)
      for (int64_t i0 = 0; i0 < s.n; i0 += kTile) {
        const int64_t r1 = std::min(r0 + kTile, s.rows), i1 = std::min(i0 + kTile, s.n);
        if constexpr (kPack) {
          for (int64_t r = r0; r < r1; ++r)
            for (int64_t i = i0; i < i1; ++i)
              std::memcpy(packed + r * packed_row + i * kBlock,
                          strided + r * s.row_stride + i * s.stride, kBlock);
        } else {
          for (int64_t i = i0; i < i1; ++i)
            for (int64_t r = r0; r < r1; ++r)
              std::memcpy(strided + r * s.row_stride + i * s.stride,
                          packed + r * packed_row + i * kBlock, kBlock);
        }
      }
    return;
  }
  // Unpacks of 4- and 8-byte blocks keep one block per iteration: with blocks a line apart
  // (grid x-faces) four at a time measured slower, in cache and out of it.
  if constexpr (kWordBlock<kBlock> && (kPack || kBlock == 16))
    for_each_word_block<kPack, kBlock>(packed, strided, s);
  else
    for_each_block<kPack>(packed, strided, s, [](char* dst, const char* src, int64_t) {
      std::memcpy(dst, src, kBlock);
    });
}

template <bool kPack>
inline void slab_blocks(char* packed, char* strided, const Slab& slab) {
  const Slab s = slab;  // locals: see list_fixed
  switch (s.block) {
    case 1:
      return slab_fixed<kPack, 1>(packed, strided, s);
    case 2:
      return slab_fixed<kPack, 2>(packed, strided, s);
    case 4:
      return slab_fixed<kPack, 4>(packed, strided, s);
    case 8:
      return slab_fixed<kPack, 8>(packed, strided, s);
    case 12:
      return slab_fixed<kPack, 12>(packed, strided, s);
    case 16:
      return slab_fixed<kPack, 16>(packed, strided, s);
    case 24:
      return slab_fixed<kPack, 24>(packed, strided, s);
    case 32:
      return slab_fixed<kPack, 32>(packed, strided, s);
    default:
      // Long blocks: memcpy straight, without copy_block's per-block size dispatch, which
      // costs blocks of a few hundred bytes more than it saves.
      if (s.block > kInlineCopyBytes)
        return for_each_block<kPack>(packed, strided, s,
                                     [](char* dst, const char* src, int64_t len) {
                                       std::memcpy(dst, src, static_cast<size_t>(len));
                                     });
      return for_each_block<kPack>(packed, strided, s, [](char* dst, const char* src, int64_t len) {
        copy_block(dst, src, len);
      });
  }
}

inline void pack_slab_blocks(char* packed, const char* strided, const Slab& s) {
  slab_blocks<true>(packed, const_cast<char*>(strided), s);
}
inline void unpack_slab_blocks(char* strided, const char* packed, const Slab& s) {
  slab_blocks<false>(const_cast<char*>(packed), strided, s);
}

// The loops below copy the descriptor fields into locals first: stores through char*
// may alias anything, so the compiler would otherwise reload them every iteration.
template <bool kPack, int64_t kLen>
inline void list_fixed(char* packed, uintptr_t base, const BlockList& l) {
  const int64_t* const disp = l.disp;
  const int64_t count = l.count;
  const auto user_at = [base, disp](int64_t i) {
    return reinterpret_cast<char*>(base + static_cast<uintptr_t>(disp[i]));
  };
  int64_t i = 0;
  if constexpr (kWordBlock<kLen>) {
    for (; i + 4 <= count; i += 4, packed += 4 * kLen) {
      char* const users[4] = {user_at(i), user_at(i + 1), user_at(i + 2), user_at(i + 3)};
      char* const words[4] = {packed, packed + kLen, packed + 2 * kLen, packed + 3 * kLen};
      if constexpr (kPack)
        move_four_words<kLen>(words, users);
      else
        move_four_words<kLen>(users, words);
    }
  }
  for (; i < count; ++i, packed += kLen) {
    char* user = user_at(i);
    if constexpr (kPack)
      std::memcpy(packed, user, kLen);
    else
      std::memcpy(user, packed, kLen);
  }
}

template <bool kPack>
inline void list_blocks(char* packed, uintptr_t base, const BlockList& l) {
  switch (l.uniform_len) {
    case 1:
      return list_fixed<kPack, 1>(packed, base, l);
    case 2:
      return list_fixed<kPack, 2>(packed, base, l);
    case 4:
      return list_fixed<kPack, 4>(packed, base, l);
    case 8:
      return list_fixed<kPack, 8>(packed, base, l);
    case 12:
      return list_fixed<kPack, 12>(packed, base, l);
    case 16:
      return list_fixed<kPack, 16>(packed, base, l);
    case 24:
      return list_fixed<kPack, 24>(packed, base, l);
    case 32:
      return list_fixed<kPack, 32>(packed, base, l);
    default: {
      const int64_t* const disp = l.disp;
      const int64_t* const len = l.len;
      const int64_t count = l.count;
      for (int64_t i = 0; i < count; packed += len[i], ++i) {
        char* user = reinterpret_cast<char*>(base + static_cast<uintptr_t>(disp[i]));
        if constexpr (kPack)
          copy_block(packed, user, len[i]);
        else
          copy_block(user, packed, len[i]);
      }
    }
  }
}

inline void pack_list_blocks(char* packed, uintptr_t base, const BlockList& l) {
  list_blocks<true>(packed, base, l);
}

inline void unpack_list_blocks(uintptr_t base, const char* packed, const BlockList& l) {
  list_blocks<false>(const_cast<char*>(packed), base, l);
}

}  // namespace
}  // namespace loom::pack
