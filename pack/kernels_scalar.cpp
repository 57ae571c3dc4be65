// Baseline-ISA kernels and run-time ISA selection.
#include <cstring>
#include <initializer_list>

#include "pack/kernels.hpp"
#include "pack/row_loops.hpp"

namespace loom::pack {

namespace detail {
const RowKernels kScalarKernels = {pack_slab_blocks, unpack_slab_blocks, pack_list_blocks,
                                   unpack_list_blocks};
}  // namespace detail

bool isa_supported(Isa isa) {
  // The CPU model is filled by a libgcc constructor that may not have run yet when this is
  // called from another library's static initialiser (libloom reads its configuration as
  // it loads); the call is idempotent.
  __builtin_cpu_init();
  switch (isa) {
    case Isa::Scalar:
      return true;
    case Isa::Avx2:
      return __builtin_cpu_supports("avx2");
    case Isa::Avx512:
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512vbmi");
  }
  return false;
}

Isa best_isa() {
  if (isa_supported(Isa::Avx512)) return Isa::Avx512;
  if (isa_supported(Isa::Avx2)) return Isa::Avx2;
  return Isa::Scalar;
}

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::Scalar:
      return "scalar";
    case Isa::Avx2:
      return "avx2";
    case Isa::Avx512:
      return "avx512";
  }
  return "?";
}

bool parse_isa(const char* name, Isa* out) {
  for (Isa isa : {Isa::Scalar, Isa::Avx2, Isa::Avx512})
    if (!std::strcmp(name, isa_name(isa))) {
      *out = isa;
      return true;
    }
  return false;
}

const RowKernels& row_kernels(Isa isa) {
  switch (isa) {
    case Isa::Avx512:
      return detail::kAvx512Kernels;
    case Isa::Avx2:
      return detail::kAvx2Kernels;
    case Isa::Scalar:
      break;
  }
  return detail::kScalarKernels;
}

}  // namespace loom::pack
