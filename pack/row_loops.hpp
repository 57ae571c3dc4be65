// Per-block copy loops shared by every ISA's kernels. Each kernels_<isa>.cpp is
// compiled with its own -m flags and includes this header; the anonymous namespace
// gives each translation unit its own copy, so an AVX-512 instance can never be
// picked by the linker for the scalar path.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace loom::pack {
namespace {

// Copies `len` bytes with at most two (overlapping) fixed-size moves for short blocks:
// far cheaper than a memcpy call when blocks are a few bytes long.
inline void copy_block(char* dst, const char* src, int64_t len) {
  if (len <= 16) {
    if (len >= 8) {
      uint64_t a, b;
      std::memcpy(&a, src, 8);
      std::memcpy(&b, src + len - 8, 8);
      std::memcpy(dst, &a, 8);
      std::memcpy(dst + len - 8, &b, 8);
    } else if (len >= 4) {
      uint32_t a, b;
      std::memcpy(&a, src, 4);
      std::memcpy(&b, src + len - 4, 4);
      std::memcpy(dst, &a, 4);
      std::memcpy(dst + len - 4, &b, 4);
    } else if (len >= 2) {
      uint16_t a, b;
      std::memcpy(&a, src, 2);
      std::memcpy(&b, src + len - 2, 2);
      std::memcpy(dst, &a, 2);
      std::memcpy(dst + len - 2, &b, 2);
    } else if (len == 1) {
      *dst = *src;
    }
  } else if (len <= 32) {
    char a[16], b[16];
    std::memcpy(a, src, 16);
    std::memcpy(b, src + len - 16, 16);
    std::memcpy(dst, a, 16);
    std::memcpy(dst + len - 16, b, 16);
  } else if (len <= 64) {
    char a[32], b[32];
    std::memcpy(a, src, 32);
    std::memcpy(b, src + len - 32, 32);
    std::memcpy(dst, a, 32);
    std::memcpy(dst + len - 32, b, 32);
  } else if (len <= 256) {
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

template <int64_t kBlock>
inline void pack_fixed(char* packed, const char* strided, int64_t n, int64_t stride) {
  for (int64_t i = 0; i < n; ++i) std::memcpy(packed + i * kBlock, strided + i * stride, kBlock);
}

template <int64_t kBlock>
inline void unpack_fixed(char* strided, const char* packed, int64_t n, int64_t stride) {
  for (int64_t i = 0; i < n; ++i) std::memcpy(strided + i * stride, packed + i * kBlock, kBlock);
}

inline void pack_blocks(char* packed, const char* strided, int64_t block, int64_t n,
                        int64_t stride) {
  switch (block) {
    case 1:
      return pack_fixed<1>(packed, strided, n, stride);
    case 2:
      return pack_fixed<2>(packed, strided, n, stride);
    case 4:
      return pack_fixed<4>(packed, strided, n, stride);
    case 8:
      return pack_fixed<8>(packed, strided, n, stride);
    case 16:
      return pack_fixed<16>(packed, strided, n, stride);
    case 32:
      return pack_fixed<32>(packed, strided, n, stride);
    default:
      for (int64_t i = 0; i < n; ++i) copy_block(packed + i * block, strided + i * stride, block);
  }
}

inline void unpack_blocks(char* strided, const char* packed, int64_t block, int64_t n,
                          int64_t stride) {
  switch (block) {
    case 1:
      return unpack_fixed<1>(strided, packed, n, stride);
    case 2:
      return unpack_fixed<2>(strided, packed, n, stride);
    case 4:
      return unpack_fixed<4>(strided, packed, n, stride);
    case 8:
      return unpack_fixed<8>(strided, packed, n, stride);
    case 16:
      return unpack_fixed<16>(strided, packed, n, stride);
    case 32:
      return unpack_fixed<32>(strided, packed, n, stride);
    default:
      for (int64_t i = 0; i < n; ++i) copy_block(strided + i * stride, packed + i * block, block);
  }
}

// Head and tail go through normal stores; the 64-byte-aligned middle through `stream`.
template <typename StreamLine>
inline void stream_copy_with(char* dst, const char* src, int64_t bytes, StreamLine&& stream) {
  const int64_t head = std::min<int64_t>(bytes, (64 - reinterpret_cast<uintptr_t>(dst) % 64) % 64);
  std::memcpy(dst, src, static_cast<size_t>(head));
  dst += head, src += head, bytes -= head;
  for (; bytes >= 64; bytes -= 64, dst += 64, src += 64) stream(dst, src);
  std::memcpy(dst, src, static_cast<size_t>(bytes));
}

}  // namespace
}  // namespace loom::pack
