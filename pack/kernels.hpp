// Row kernels: the innermost loop of every strided pack. One implementation per ISA,
// chosen once at run time. A CUDA executor will provide the same entry points for
// device buffers.
#pragma once

#include <cstdint>

namespace loom::pack {

enum class Isa : uint8_t { Scalar, Avx2, Avx512 };

// Copies `n` blocks of `block` bytes between a strided buffer (blocks `stride` bytes
// apart, stride may be <= 0) and a contiguous packed buffer.
struct RowKernels {
  void (*pack)(char* packed, const char* strided, int64_t block, int64_t n, int64_t stride);
  void (*unpack)(char* strided, const char* packed, int64_t block, int64_t n, int64_t stride);
  // memcpy with non-temporal stores for the aligned middle: large packed outputs then
  // cost one write instead of a read-for-ownership plus a write.
  void (*stream_copy)(char* dst, const char* src, int64_t bytes);
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
