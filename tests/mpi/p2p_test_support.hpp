// What the point-to-point tests (p2p_harness.hpp with the p2p_*_test.cpp chapters, and
// p2p_threads_test.cpp) share: the ranks of the job, sentinel-guarded buffers with
// deterministic patterns, packing through the host as the reference, and the derived
// datatypes both send.
#pragma once

#include <mpi.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "tests/mpi/host_quirks.hpp"

namespace loom::test::p2p {

// This process in MPI_COMM_WORLD; main() sets them before anything communicates.
inline int g_rank = 0;
inline int g_size = 1;

inline int right() {
  return (g_rank + 1) % g_size;
}
inline int left() {
  return (g_rank + g_size - 1) % g_size;
}

using Bytes = std::vector<unsigned char>;

using loom::test::kHostIsMpich;

constexpr unsigned char kSentinel = 0xA7;
constexpr std::ptrdiff_t kMarginBytes = 64;  // compared on both sides of every buffer

// Pseudo-random bytes from `salt`, a word at a time (buffers reach 10 MB, and CI runs the tests
// under AddressSanitizer).
inline void fill_pattern(unsigned char* p, std::size_t n, uint64_t salt) {
  uint64_t state = (salt << 1) | 1;
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    const uint64_t word = state ^ (state >> 29);
    std::memcpy(p + i, &word, 8);
  }
  for (; i < n; ++i) p[i] = static_cast<unsigned char>(salt + i);
}

inline int type_size(MPI_Datatype type) {
  int size = 0;
  PMPI_Type_size(type, &size);
  return size;
}

// Memory for `count` elements of `type` at data(), with margins, whatever the lower bounds and
// extent; everything outside the typemap keeps what fill()/clear() put there.
class Buffer {
 public:
  Buffer(MPI_Datatype type, int count) {
    MPI_Aint lb = 0, extent = 0, true_lb = 0, true_extent = 0;
    PMPI_Type_get_extent(type, &lb, &extent);
    PMPI_Type_get_true_extent(type, &true_lb, &true_extent);
    MPI_Aint lo = 0, hi = 0;
    if (count > 0) {
      const MPI_Aint last = static_cast<MPI_Aint>(count - 1) * extent;
      lo = std::min({MPI_Aint{0}, true_lb, last + true_lb});
      hi = std::max({MPI_Aint{0}, true_lb + true_extent, last + true_lb + true_extent});
    }
    bytes_.assign(static_cast<std::size_t>(hi - lo + 2 * kMarginBytes), kSentinel);
    origin_ = kMarginBytes - lo;
  }
  void* data() { return bytes_.data() + origin_; }
  const void* data() const { return bytes_.data() + origin_; }
  const Bytes& bytes() const { return bytes_; }
  void fill(uint64_t salt) { fill_pattern(bytes_.data(), bytes_.size(), salt); }
  void clear() { std::fill(bytes_.begin(), bytes_.end(), kSentinel); }

 private:
  Bytes bytes_;
  std::ptrdiff_t origin_ = 0;
};

// The bytes a message of `count` elements of `type` at `data` carries (the host packs them).
inline Bytes packed_by_host(const void* data, int count, MPI_Datatype type) {
  int size = 0;
  PMPI_Pack_size(count, type, MPI_COMM_WORLD, &size);
  Bytes out(static_cast<std::size_t>(size) + 1);
  int position = 0;
  PMPI_Pack(data, count, type, out.data(), size, &position, MPI_COMM_WORLD);
  out.resize(static_cast<std::size_t>(position));
  return out;
}

// Places `packed` as `count` elements of `type` at `data`, as the host's engine does.
inline void unpack_by_host(const Bytes& packed, void* data, int count, MPI_Datatype type) {
  int position = 0;
  PMPI_Unpack(packed.data(), static_cast<int>(packed.size()), &position, data, count, type,
              MPI_COMM_WORLD);
}

// ---------------------------------------------------------------------------------------------
// Derived datatypes both tests send, built the same way on every rank. Not yet committed.

// Small blocks: 2 of every 5 ints.
inline MPI_Datatype small_block_vector() {
  MPI_Datatype type = MPI_DATATYPE_NULL;
  MPI_Type_vector(40, 2, 5, MPI_INT, &type);
  return type;
}

// The face of a 6x8x10 array of doubles with the last index fixed: 8-byte blocks.
inline MPI_Datatype grid_face() {
  MPI_Datatype type = MPI_DATATYPE_NULL;
  const int sizes[3] = {6, 8, 10}, subsizes[3] = {6, 8, 1}, starts[3] = {0, 0, 7};
  MPI_Type_create_subarray(3, sizes, subsizes, starts, MPI_ORDER_C, MPI_DOUBLE, &type);
  return type;
}

// {int; double[2]; char[3]; short} with padding after the int and the chars and at the end:
// extent 40, 25 bytes of data.
inline MPI_Datatype padded_struct() {
  const int blocks[4] = {1, 2, 3, 1};
  const MPI_Aint displacements[4] = {0, 8, 24, 28};
  const MPI_Datatype types[4] = {MPI_INT, MPI_DOUBLE, MPI_CHAR, MPI_SHORT};
  MPI_Datatype record = MPI_DATATYPE_NULL, type = MPI_DATATYPE_NULL;
  MPI_Type_create_struct(4, blocks, displacements, types, &record);
  MPI_Type_create_resized(record, 0, 40, &type);
  MPI_Type_free(&record);
  return type;
}

// Data below the buffer address, and a lower bound below that: doubles at -48 (two), -16 and
// 8, lower bound -64, extent 96.
inline MPI_Datatype negative_lb_doubles() {
  const int blocks[3] = {2, 1, 1};
  const MPI_Aint displacements[3] = {-48, -16, 8};
  MPI_Datatype scattered = MPI_DATATYPE_NULL, type = MPI_DATATYPE_NULL;
  MPI_Type_create_hindexed(3, blocks, displacements, MPI_DOUBLE, &scattered);
  MPI_Type_create_resized(scattered, -64, 96, &type);
  MPI_Type_free(&scattered);
  return type;
}

}  // namespace loom::test::p2p
