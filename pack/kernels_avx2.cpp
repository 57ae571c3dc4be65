// AVX2 kernels (this file is compiled with -mavx2). Small blocks close together are
// gathered sixteen source bytes at a time with one byte shuffle; everything else uses
// the shared per-block loops, which the compiler widens to 32-byte moves here.
#include <immintrin.h>

#include "pack/kernels.hpp"
#include "pack/row_loops.hpp"

namespace loom::pack {
namespace {

constexpr int64_t kWindow = 16;

void pack_row(char* packed, const char* strided, int64_t block, int64_t n, int64_t stride,
              __m128i shuffle, int64_t per_window) {
  const int64_t window_bytes = per_window * block;
  const char* strided_end = strided + (n - 1) * stride + block;
  const char* packed_end = packed + n * block;
  int64_t done = 0;
  while (n - done >= per_window && strided + kWindow <= strided_end &&
         packed + kWindow <= packed_end) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(strided));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(packed), _mm_shuffle_epi8(v, shuffle));
    strided += per_window * stride;
    packed += window_bytes;
    done += per_window;
  }
  for (; done < n; ++done, strided += stride, packed += block) copy_block(packed, strided, block);
}

void pack_avx2(char* packed, const char* strided, const Slab& s) {
  if (s.block <= 0 || s.stride <= s.block || s.block + s.stride > kWindow || s.n < 4)
    return pack_slab_blocks(packed, strided, s);
  const int64_t per_window = (kWindow - s.block) / s.stride + 1;
  alignas(16) int8_t index[kWindow];
  for (int64_t j = 0; j < kWindow; ++j)
    index[j] =
        static_cast<int8_t>(j < per_window * s.block ? (j / s.block) * s.stride + j % s.block : -1);
  const __m128i shuffle = _mm_load_si128(reinterpret_cast<const __m128i*>(index));
  for (int64_t r = 0; r < s.rows; ++r, packed += s.n * s.block)
    pack_row(packed, strided + r * s.row_stride, s.block, s.n, s.stride, shuffle, per_window);
}

}  // namespace

namespace detail {
const RowKernels kAvx2Kernels = {pack_avx2, unpack_slab_blocks, pack_list_blocks,
                                 unpack_list_blocks};
}

}  // namespace loom::pack
