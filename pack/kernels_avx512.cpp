// AVX-512 kernels (compiled with -mavx512f -mavx512bw -mavx512vbmi). Blocks shorter
// than a cache line are moved a 64-byte window at a time: one byte permutation
// (vpermb) gathers every block the window holds, and byte-masked loads/stores keep
// the tails inside the buffers. Unpack writes through a byte mask, so bytes between
// blocks are never written, not even with their own value (other threads may own them).
#include <immintrin.h>

#include "pack/kernels.hpp"
#include "pack/row_loops.hpp"

namespace loom::pack {
namespace {

constexpr int64_t kWindow = 64;

inline __mmask64 low_bytes(int64_t n) {
  return n >= 64 ? ~__mmask64{0} : (__mmask64{1} << n) - 1;
}

// Whether two windows' packed bytes fit one vector (see pack_row).
bool window_pairs_fit(int64_t block, int64_t stride) {
  return 2 * ((kWindow - block) / stride + 1) * block <= kWindow;
}

// Window geometry shared by pack and unpack.
struct Window {
  int64_t block = 0, stride = 0;
  int64_t blocks;        // whole blocks inside one 64-byte strided window
  int64_t packed_bytes;  // blocks * block
  // window_pairs_fit, kept: a row of a few blocks costs little more than the division.
  bool pairs_fit = false;
  __mmask64 block_mask = 0;             // window bytes that belong to a block
  alignas(64) uint8_t gather[kWindow];  // packed byte j <- window byte gather[j]
  // Two windows `blocks * stride` apart, when their packed bytes fit one vector: packed
  // byte j <- byte gather_pair[j] of (first window, second window) as one 128-byte table.
  alignas(64) uint8_t gather_pair[kWindow];
  alignas(64) uint8_t scatter[kWindow];  // window byte p <- packed byte scatter[p]
  // The same for the second of two windows whose packed bytes share one vector.
  alignas(64) uint8_t scatter_second[kWindow];

  void build(int64_t block_size, int64_t stride_) {
    block = block_size;
    stride = stride_;
    blocks = (kWindow - block) / stride + 1;
    packed_bytes = blocks * block;
    pairs_fit = window_pairs_fit(block, stride);
    block_mask = 0;
    for (int64_t j = 0; j < kWindow; ++j) {
      const int64_t second = j - packed_bytes;
      gather_pair[j] = static_cast<uint8_t>(
          second < 0              ? (j / block) * stride + j % block
          : second < packed_bytes ? kWindow + (second / block) * stride + second % block
                                  : 0);
      gather[j] = static_cast<uint8_t>(j < packed_bytes ? (j / block) * stride + j % block : 0);
      const int64_t b = j / stride, within = j % stride;
      const bool in_block = b < blocks && within < block;
      scatter[j] = static_cast<uint8_t>(in_block ? b * block + within : 0);
      scatter_second[j] = static_cast<uint8_t>(in_block ? packed_bytes + b * block + within : 0);
      if (in_block) block_mask |= __mmask64{1} << j;
    }
  }
  // Strided-window bytes covered by the first r blocks.
  __mmask64 first_blocks(int64_t r) const {
    return block_mask & low_bytes((r - 1) * stride + block);
  }
};

// Rows of one type repeat the same geometry, so each thread keeps its last window.
const Window& window_for(int64_t block, int64_t stride) {
  static thread_local Window cached;
  if (cached.block != block || cached.stride != stride) cached.build(block, stride);
  return cached;
}

// The zero-masking form sidesteps a GCC 12 -Wmaybe-uninitialized false positive in the
// unmasked intrinsic; with an all-ones mask it is the same instruction.
inline __m512i permute_bytes(__m512i index, __m512i v) {
  return _mm512_maskz_permutexvar_epi8(~__mmask64{0}, index, v);
}

// From 16-byte blocks up, plain vector moves beat the window in cache (measured with
// `loom-bench pack`, docs/bench-pack.md). Packing long rows of 16-byte blocks 25-48 bytes apart
// into an out-of-cache slab keeps the window: its pairs fill whole streamed lines.
constexpr int64_t kLongRowBlocks = 64;

// 4- and 8-byte blocks have a plain loop that moves four blocks per iteration
// (for_each_word_block). The window keeps long rows (64 blocks or more) and unpacks of
// 4-byte blocks; on shorter rows its per-row set-up and masked tails cost more than it
// saves, while 4-byte unpacks are slower without it, on short rows too (`loom-bench pack`,
// docs/bench-pack.md).
bool window_applies(const Slab& s, bool pack, bool streaming) {
  if (s.block <= 0 || s.stride <= s.block || s.block + s.stride > kWindow || s.n < 2) return false;
  if (pack && streaming)  // whole streamed lines
    return s.block < 16 ||
           (s.block == 16 && window_pairs_fit(s.block, s.stride) && s.n >= kLongRowBlocks);
  if (s.block == 4 && !pack) return true;
  if (s.block == 4 || s.block == 8) return s.n >= kLongRowBlocks;
  return s.block < 16;
}

void pack_row(char* packed, const char* strided, int64_t n, const Window& w, __m512i gather,
              bool streaming) {
  const char* strided_end = strided + (n - 1) * w.stride + w.block;
  const char* packed_end = packed + n * w.block;
  const int64_t step = w.blocks * w.stride;
  int64_t done = 0;
  if (w.pairs_fit) {
    // One full store per two windows instead of two overlapping ones (blocks at stride 2x
    // fill it exactly, and it stays aligned when the packed buffer is): fewer, wider stores.
    const __m512i pair = _mm512_load_si512(w.gather_pair);
    // Whole aligned lines can bypass the cache (see pack_avx512).
    const bool stream = streaming && 2 * w.packed_bytes == kWindow &&
                        (reinterpret_cast<uintptr_t>(packed) & (kWindow - 1)) == 0;
    while (n - done >= 2 * w.blocks && strided + step + kWindow <= strided_end &&
           packed + kWindow <= packed_end) {
      const __m512i first = _mm512_loadu_si512(strided);
      const __m512i second = _mm512_loadu_si512(strided + step);
      const __m512i out = _mm512_maskz_permutex2var_epi8(~__mmask64{0}, first, pair, second);
      if (stream)
        _mm512_stream_si512(reinterpret_cast<__m512i*>(packed), out);
      else
        _mm512_storeu_si512(packed, out);
      strided += 2 * step;
      packed += 2 * w.packed_bytes;
      done += 2 * w.blocks;
    }
  }
  while (n - done >= w.blocks && strided + kWindow <= strided_end &&
         packed + kWindow <= packed_end) {
    const __m512i v = _mm512_loadu_si512(strided);
    _mm512_storeu_si512(packed, permute_bytes(gather, v));
    strided += step;
    packed += w.packed_bytes;
    done += w.blocks;
  }
  while (done < n) {
    const int64_t r = n - done < w.blocks ? n - done : w.blocks;
    const __m512i v = _mm512_maskz_loadu_epi8(w.first_blocks(r), strided);
    _mm512_mask_storeu_epi8(packed, low_bytes(r * w.block), permute_bytes(gather, v));
    strided += r * w.stride;
    packed += r * w.block;
    done += r;
  }
}

void unpack_row(char* strided, const char* packed, int64_t n, const Window& w, __m512i scatter) {
  const char* packed_end = packed + n * w.block;
  const int64_t step = w.blocks * w.stride;
  int64_t done = 0;
  if (w.pairs_fit) {
    // One load feeds two windows (1-8 byte blocks at stride 2x): half the loads.
    const __m512i second = _mm512_load_si512(w.scatter_second);
    while (n - done >= 2 * w.blocks && packed + kWindow <= packed_end) {
      const __m512i v = _mm512_loadu_si512(packed);
      _mm512_mask_storeu_epi8(strided, w.block_mask, permute_bytes(scatter, v));
      _mm512_mask_storeu_epi8(strided + step, w.block_mask, permute_bytes(second, v));
      strided += 2 * step;
      packed += 2 * w.packed_bytes;
      done += 2 * w.blocks;
    }
  }
  while (n - done >= w.blocks && packed + kWindow <= packed_end) {
    const __m512i v = _mm512_loadu_si512(packed);
    _mm512_mask_storeu_epi8(strided, w.block_mask, permute_bytes(scatter, v));
    strided += step;
    packed += w.packed_bytes;
    done += w.blocks;
  }
  while (done < n) {
    const int64_t r = n - done < w.blocks ? n - done : w.blocks;
    const __m512i v = _mm512_maskz_loadu_epi8(low_bytes(r * w.block), packed);
    _mm512_mask_storeu_epi8(strided, w.first_blocks(r), permute_bytes(scatter, v));
    strided += r * w.stride;
    packed += r * w.block;
    done += r;
  }
}

// Transposed slabs whose rows interleave block by block (row_stride == block: FFT2D's
// resized column vector with a count): 64 / block consecutive rows of one column are one
// contiguous 64-byte run of user memory, all of it block bytes, and a line of its own.
// Both directions move such runs whole, a band of columns at a time: unpack gathers a run
// from as many packed rows and writes it with one full store instead of 64 / block partial
// ones: faster than the row/tile walk on FFT2D's transpose, both ways (`loom-bench pack`,
// docs/bench-pack.md). Columns must not overlap (stride >= rows * block): the moves leave
// typemap order. A band of columns keeps the user pages in flight few (each column is a page
// of its own once columns are 4 KiB apart): all columns at once ran slower on large
// transposes.
constexpr int64_t kInterleavedBand = 16;

bool rows_interleave(const Slab& s) {
  return (s.block == 8 || s.block == 16) && s.row_stride == s.block &&
         s.rows >= kWindow / s.block && s.stride >= s.rows * s.block;
}

void unpack_interleaved_rows(char* strided, const char* packed, const Slab& s) {
  const int64_t k = kWindow / s.block, packed_row = s.n * s.block;
  const int64_t full_rows = s.rows - s.rows % k;
  constexpr int64_t kBand = kInterleavedBand;
  for (int64_t i0 = 0; i0 < s.n; i0 += kBand) {
    const int64_t i1 = std::min(s.n, i0 + kBand);
    for (int64_t r = 0; r < full_rows; r += k) {
      const char* p = packed + r * packed_row + i0 * s.block;
      char* u = strided + r * s.block + i0 * s.stride;
      for (int64_t i = i0; i < i1; ++i, p += s.block, u += s.stride) {
        __m512i v;
        if (s.block == 16) {
          auto row = [&](int64_t j) {
            return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + j * packed_row));
          };
          v = _mm512_inserti32x4(_mm512_castsi128_si512(row(0)), row(1), 1);
          v = _mm512_inserti32x4(v, row(2), 2);
          v = _mm512_inserti32x4(v, row(3), 3);
        } else {
          auto row = [&](int64_t j) {
            long long q;
            std::memcpy(&q, p + j * packed_row, 8);
            return q;
          };
          v = _mm512_set_epi64(row(7), row(6), row(5), row(4), row(3), row(2), row(1), row(0));
        }
        _mm512_storeu_si512(u, v);
      }
    }
  }
  const int64_t r = full_rows;
  if (r < s.rows)
    unpack_slab_blocks(strided + r * s.block, packed + r * packed_row,
                       {s.block, s.n, s.stride, s.rows - r, s.row_stride});
}

template <int64_t kBlock>
void pack_interleaved_rows(char* packed, const char* strided, const Slab& s) {
  const int64_t k = kWindow / kBlock, packed_row = s.n * kBlock;
  const int64_t full_rows = s.rows - s.rows % k;
  constexpr int64_t kBand = kInterleavedBand;
  for (int64_t i0 = 0; i0 < s.n; i0 += kBand) {
    const int64_t i1 = std::min(s.n, i0 + kBand);
    for (int64_t r = 0; r < full_rows; r += k) {
      char* p = packed + r * packed_row + i0 * kBlock;
      const char* u = strided + r * kBlock + i0 * s.stride;
      for (int64_t i = i0; i < i1; ++i, p += kBlock, u += s.stride)
        for (int64_t j = 0; j < k; ++j) std::memcpy(p + j * packed_row, u + j * kBlock, kBlock);
    }
  }
  const int64_t r = full_rows;
  if (r < s.rows)
    pack_slab_blocks(packed + r * packed_row, strided + r * kBlock,
                     {s.block, s.n, s.stride, s.rows - r, s.row_stride});
}

// Blocks of a multiple of 64 bytes, packed to a line-aligned buffer: every 64-byte piece
// is a whole line of the output and can be streamed.
void pack_lines_streaming(char* packed, const char* strided, const Slab& s) {
  if (s.block == kWindow) {
    // One line per block: four blocks' loads in flight before their stores.
    for (int64_t r = 0; r < s.rows; ++r) {
      const char* row = strided + r * s.row_stride;
      int64_t i = 0;
      for (; i + 4 <= s.n; i += 4, packed += 4 * kWindow) {
        const __m512i a = _mm512_loadu_si512(row + i * s.stride);
        const __m512i b = _mm512_loadu_si512(row + (i + 1) * s.stride);
        const __m512i c = _mm512_loadu_si512(row + (i + 2) * s.stride);
        const __m512i d = _mm512_loadu_si512(row + (i + 3) * s.stride);
        _mm512_stream_si512(reinterpret_cast<__m512i*>(packed), a);
        _mm512_stream_si512(reinterpret_cast<__m512i*>(packed + kWindow), b);
        _mm512_stream_si512(reinterpret_cast<__m512i*>(packed + 2 * kWindow), c);
        _mm512_stream_si512(reinterpret_cast<__m512i*>(packed + 3 * kWindow), d);
      }
      for (; i < s.n; ++i, packed += kWindow)
        _mm512_stream_si512(reinterpret_cast<__m512i*>(packed),
                            _mm512_loadu_si512(row + i * s.stride));
    }
    return;
  }
  for (int64_t r = 0; r < s.rows; ++r) {
    const char* row = strided + r * s.row_stride;
    for (int64_t i = 0; i < s.n; ++i) {
      const char* block = row + i * s.stride;
      int64_t off = 0;
      // Four lines' loads in flight before their stores: more misses overlap.
      for (; off + 4 * kWindow <= s.block; off += 4 * kWindow, packed += 4 * kWindow) {
        const __m512i a = _mm512_loadu_si512(block + off);
        const __m512i b = _mm512_loadu_si512(block + off + kWindow);
        const __m512i c = _mm512_loadu_si512(block + off + 2 * kWindow);
        const __m512i d = _mm512_loadu_si512(block + off + 3 * kWindow);
        _mm512_stream_si512(reinterpret_cast<__m512i*>(packed), a);
        _mm512_stream_si512(reinterpret_cast<__m512i*>(packed + kWindow), b);
        _mm512_stream_si512(reinterpret_cast<__m512i*>(packed + 2 * kWindow), c);
        _mm512_stream_si512(reinterpret_cast<__m512i*>(packed + 3 * kWindow), d);
      }
      for (; off < s.block; off += kWindow, packed += kWindow)
        _mm512_stream_si512(reinterpret_cast<__m512i*>(packed), _mm512_loadu_si512(block + off));
    }
  }
}

// Blocks of 257 B to 2 KiB in cached packs and unpacks: inline 64-byte moves, the last one
// overlapping, instead of a memcpy call and its size dispatch per block (the call costs a
// cached block of a few hundred bytes more than its copy). Longer blocks amortise the call.
// Out of cache, memcpy wins (docs/bench-pack.md).
constexpr int64_t kInlineLongBlockMax = 2048;

bool inline_long_blocks(const Slab& s) {
  return s.block > kInlineCopyBytes && s.block <= kInlineLongBlockMax;
}

// Longer blocks packed from memory rather than cache (their slab spans more than the
// out-of-cache size, the packed output does not) move faster this way too than with memcpy,
// which uses rep movsb for them; from cache, memcpy stays ahead (both measured with
// `loom-bench pack`, docs/bench-pack.md).
bool spans_out_of_cache(const Slab& s) {
  const int64_t span = magnitude(s.stride) * (s.n - 1) + magnitude(s.row_stride) * (s.rows - 1);
  return span > kOutOfCacheBytes;
}

constexpr auto copy_long_block = [](char* dst, const char* src, int64_t len) {
  int64_t off = 0;
  for (; off + kWindow < len; off += kWindow)
    _mm512_storeu_si512(dst + off, _mm512_loadu_si512(src + off));
  _mm512_storeu_si512(dst + len - kWindow, _mm512_loadu_si512(src + len - kWindow));
};

// Blocks that start or end inside a line, out of cache: the whole lines inside stream, the
// part lines get byte-masked plain stores (the rest of such a line belongs to the next
// block, or to the user). Part lines cost, so this pays only for blocks of a kilobyte or more;
// shorter ones lose against plain copies. Blocks of whole aligned lines keep their own loops
// (pack_lines_streaming and unpack_lines_streaming): through for_each_block with this copy
// they ran slower, for a reason not found.
constexpr int64_t kStreamSplitLinesMinBlock = 1024;

constexpr auto stream_long_block = [](char* dst, const char* src, int64_t len) {
  int64_t off = static_cast<int64_t>(-reinterpret_cast<uintptr_t>(dst) & (kWindow - 1));
  if (off > 0) {  // len >= kWindow > off
    const __mmask64 head = low_bytes(off);
    _mm512_mask_storeu_epi8(dst, head, _mm512_maskz_loadu_epi8(head, src));
  }
  for (; off + 4 * kWindow <= len; off += 4 * kWindow) {
    const __m512i a = _mm512_loadu_si512(src + off);
    const __m512i b = _mm512_loadu_si512(src + off + kWindow);
    const __m512i c = _mm512_loadu_si512(src + off + 2 * kWindow);
    const __m512i d = _mm512_loadu_si512(src + off + 3 * kWindow);
    _mm512_stream_si512(reinterpret_cast<__m512i*>(dst + off), a);
    _mm512_stream_si512(reinterpret_cast<__m512i*>(dst + off + kWindow), b);
    _mm512_stream_si512(reinterpret_cast<__m512i*>(dst + off + 2 * kWindow), c);
    _mm512_stream_si512(reinterpret_cast<__m512i*>(dst + off + 3 * kWindow), d);
  }
  for (; off + kWindow <= len; off += kWindow)
    _mm512_stream_si512(reinterpret_cast<__m512i*>(dst + off), _mm512_loadu_si512(src + off));
  if (off < len) {
    const __mmask64 tail = low_bytes(len - off);
    _mm512_mask_storeu_epi8(dst + off, tail, _mm512_maskz_loadu_epi8(tail, src + off));
  }
};

// Out of cache the packed output would not stay cached anyway: where whole aligned lines
// are produced (two windows of 1-8 byte blocks at stride 2x, blocks of a multiple of 64
// bytes, or the inner lines of longer blocks) they are written with non-temporal stores,
// which skip each line's read-for-ownership, with several lines' loads issued before their
// stores so that misses overlap (out-of-cache sizes of `loom-bench pack`, docs/bench-pack.md).
void pack_avx512(char* packed, const char* strided, const Slab& s) {
  if (rows_interleave(s))
    return s.block == 8 ? pack_interleaved_rows<8>(packed, strided, s)
                        : pack_interleaved_rows<16>(packed, strided, s);
  // Per slab, not per pack (s.out_of_cache): streaming the many small slabs of a large 3-D
  // pack measured worse, while unpack gains from the pack-wide hint (see below).
  const bool streaming = s.block * s.n * s.rows > kOutOfCacheBytes;
  if (!window_applies(s, true, streaming)) {
    char* const user = const_cast<char*>(strided);
    // One-line blocks stream whenever the whole pack is out of cache; longer blocks only in
    // out-of-cache slabs, since a 3-D pack of 512 B blocks streamed in small slabs lost.
    const bool stream_lines = s.block == kWindow ? s.out_of_cache : streaming;
    if (stream_lines && s.block % kWindow == 0 &&
        (reinterpret_cast<uintptr_t>(packed) & (kWindow - 1)) == 0) {
      pack_lines_streaming(packed, strided, s);
      return _mm_sfence();  // non-temporal stores are weakly ordered: publish them
    }
    if (streaming && s.block >= kStreamSplitLinesMinBlock) {
      for_each_block<true>(packed, user, s, stream_long_block);
      return _mm_sfence();
    }
    if ((!s.out_of_cache && inline_long_blocks(s)) ||
        (!streaming && s.block > kInlineLongBlockMax && spans_out_of_cache(s)))
      return for_each_block<true>(packed, user, s, copy_long_block);
    return pack_slab_blocks(packed, strided, s);
  }
  const Window& w = window_for(s.block, s.stride);
  const __m512i gather = _mm512_load_si512(w.gather);
  for (int64_t r = 0; r < s.rows; ++r, packed += s.n * s.block)
    pack_row(packed, strided + r * s.row_stride, s.n, w, gather, streaming);
  if (streaming) _mm_sfence();
}

// Byte-masked stores win while the lines are cached; once they miss L3, they drain about
// half as fast as plain stores, so slabs of 4-byte blocks or more are unpacked with plain
// stores when the whole unpack is out of cache (deciding by the whole unpack rather than by
// each small slab, which measured better on 3-D unpacks). One- and two-byte blocks keep the
// window: a store per byte is slower still.
constexpr int64_t kPlainUnpackMinBlock = 4;

// Unpack's counterpart of pack_lines_streaming, for blocks of whole, aligned 64-byte lines
// in an out-of-cache unpack: nothing between blocks is written, and no line is read for
// ownership (`loom-bench pack`, docs/bench-pack.md).
bool lines_stream_out(const char* strided, const Slab& s) {
  return s.out_of_cache && s.block > 0 && s.block % kWindow == 0 && s.stride % kWindow == 0 &&
         s.row_stride % kWindow == 0 && (reinterpret_cast<uintptr_t>(strided) & (kWindow - 1)) == 0;
}

void unpack_lines_streaming(char* strided, const char* packed, const Slab& s) {
  if (s.block == kWindow) {
    for (int64_t r = 0; r < s.rows; ++r) {
      char* row = strided + r * s.row_stride;
      int64_t i = 0;
      for (; i + 4 <= s.n; i += 4, packed += 4 * kWindow) {
        const __m512i a = _mm512_loadu_si512(packed);
        const __m512i b = _mm512_loadu_si512(packed + kWindow);
        const __m512i c = _mm512_loadu_si512(packed + 2 * kWindow);
        const __m512i d = _mm512_loadu_si512(packed + 3 * kWindow);
        _mm512_stream_si512(reinterpret_cast<__m512i*>(row + i * s.stride), a);
        _mm512_stream_si512(reinterpret_cast<__m512i*>(row + (i + 1) * s.stride), b);
        _mm512_stream_si512(reinterpret_cast<__m512i*>(row + (i + 2) * s.stride), c);
        _mm512_stream_si512(reinterpret_cast<__m512i*>(row + (i + 3) * s.stride), d);
      }
      for (; i < s.n; ++i, packed += kWindow)
        _mm512_stream_si512(reinterpret_cast<__m512i*>(row + i * s.stride),
                            _mm512_loadu_si512(packed));
    }
    return _mm_sfence();
  }
  for (int64_t r = 0; r < s.rows; ++r) {
    char* row = strided + r * s.row_stride;
    for (int64_t i = 0; i < s.n; ++i) {
      char* block = row + i * s.stride;
      int64_t off = 0;
      for (; off + 4 * kWindow <= s.block; off += 4 * kWindow, packed += 4 * kWindow) {
        const __m512i a = _mm512_loadu_si512(packed);
        const __m512i b = _mm512_loadu_si512(packed + kWindow);
        const __m512i c = _mm512_loadu_si512(packed + 2 * kWindow);
        const __m512i d = _mm512_loadu_si512(packed + 3 * kWindow);
        _mm512_stream_si512(reinterpret_cast<__m512i*>(block + off), a);
        _mm512_stream_si512(reinterpret_cast<__m512i*>(block + off + kWindow), b);
        _mm512_stream_si512(reinterpret_cast<__m512i*>(block + off + 2 * kWindow), c);
        _mm512_stream_si512(reinterpret_cast<__m512i*>(block + off + 3 * kWindow), d);
      }
      for (; off < s.block; off += kWindow, packed += kWindow)
        _mm512_stream_si512(reinterpret_cast<__m512i*>(block + off), _mm512_loadu_si512(packed));
    }
  }
  _mm_sfence();
}

void unpack_avx512(char* strided, const char* packed, const Slab& s) {
  if (rows_interleave(s)) return unpack_interleaved_rows(strided, packed, s);
  char* const packed_bytes = const_cast<char*>(packed);
  if (lines_stream_out(strided, s)) return unpack_lines_streaming(strided, packed, s);
  if (s.out_of_cache && s.block >= kStreamSplitLinesMinBlock) {
    for_each_block<false>(packed_bytes, strided, s, stream_long_block);
    return _mm_sfence();
  }
  if (!s.out_of_cache && inline_long_blocks(s))
    return for_each_block<false>(packed_bytes, strided, s, copy_long_block);
  if (!window_applies(s, false, false) || (s.block >= kPlainUnpackMinBlock && s.out_of_cache))
    return unpack_slab_blocks(strided, packed, s);
  const Window& w = window_for(s.block, s.stride);
  const __m512i scatter = _mm512_load_si512(w.scatter);
  for (int64_t r = 0; r < s.rows; ++r, packed += s.n * s.block)
    unpack_row(strided + r * s.row_stride, packed, s.n, w, scatter);
}

}  // namespace

namespace detail {
const RowKernels kAvx512Kernels = {pack_avx512, unpack_avx512, pack_list_blocks,
                                   unpack_list_blocks};
}

}  // namespace loom::pack
