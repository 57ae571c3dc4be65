// A plain strided-copy loop over a datatype's layout, as an application writes it by hand:
// nested loops over the layout's levels (its canonical form: contiguous runs merged, as a
// programmer copies a row in one go), each innermost run of equal blocks copied with a
// fixed-size copy where the block is a small power of two. No MPI call and none of Loom's
// kernels: `loom-bench pack` times it beside memcpy of the same bytes, and the faster of the
// two is the floor its summary measures Loom's engine against.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <optional>

#include "types/ir.hpp"

namespace loom::bench {

class PlainLoop {
 public:
  // The loop for `count` elements of `type`, or nullopt when Loom cannot decode the type.
  static std::optional<PlainLoop> of(MPI_Datatype type, int count);

  // From the user buffer `strided` (the datatype's origin) to `packed`, and back.
  void pack(const unsigned char* strided, unsigned char* packed) const;
  void unpack(const unsigned char* packed, unsigned char* strided) const;

 private:
  PlainLoop(types::Layout layout, int64_t extent, int count)
      : layout_(std::move(layout)), extent_(extent), count_(count) {}
  types::Layout layout_;  // canonical
  int64_t extent_;
  int count_;
};

}  // namespace loom::bench
