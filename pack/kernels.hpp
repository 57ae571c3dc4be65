// Kernels: the inner loops of every pack and unpack. One implementation per ISA, chosen
// once at run time. A CUDA executor will provide the same entry points for device
// buffers.
#pragma once

#include <cstdint>

namespace loom::pack {

enum class Isa : uint8_t { Scalar, Avx2, Avx512 };

// A 2-D slab of a strided buffer: `rows` rows `row_stride` bytes apart, each of `n`
// blocks of `block` bytes `stride` bytes apart (strides may be <= 0). Packed, the blocks
// follow each other row by row.
struct Slab {
  int64_t block, n, stride, rows, row_stride;
  // The whole pack or unpack this slab belongs to moves more than kOutOfCacheBytes: its
  // lines will not stay cached, which changes the best stores (kernels_avx512.cpp).
  bool out_of_cache = false;
};

// Half the L3 of the EPYC this was tuned on.
constexpr int64_t kOutOfCacheBytes = int64_t{16} << 20;

// Offset/length lists: entry i is `len[i]` bytes at `base + disp[i]`. When every entry
// has the same length (indexed_block types), `uniform_len` holds it and the copy loop
// is specialised for it.
struct BlockList {
  const int64_t* disp;
  const int64_t* len;
  int64_t count;
  int64_t uniform_len;  // 0 when lengths differ
};

struct RowKernels {
  void (*pack)(char* packed, const char* strided, const Slab& slab);
  void (*unpack)(char* strided, const char* packed, const Slab& slab);
  void (*pack_list)(char* packed, uintptr_t base, const BlockList& list);
  void (*unpack_list)(uintptr_t base, const char* packed, const BlockList& list);
};

Isa best_isa();  // the widest ISA this CPU runs
bool isa_supported(Isa isa);
const char* isa_name(Isa isa);
bool parse_isa(const char* name, Isa* out);  // "scalar", "avx2", "avx512"
const RowKernels& row_kernels(Isa isa);

namespace detail {
extern const RowKernels kScalarKernels;
extern const RowKernels kAvx2Kernels;
extern const RowKernels kAvx512Kernels;
}  // namespace detail

}  // namespace loom::pack
