// The datatypes and buffers of the collective tests (collectives_harness.hpp): the ranks of
// the job, the derived types and their partners of the same signature per unit, the ways
// of mixing them, and sentinel-guarded buffers of blocks.
#pragma once

#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <iterator>
#include <ostream>
#include <string>
#include <tuple>
#include <vector>

#include "tests/mpi/host_quirks.hpp"

namespace loom::test::coll {

inline int g_rank = 0;
inline int g_size = 1;

using loom::test::kHostInPlaceAlltoallwFails;

constexpr unsigned char kSentinel = 0xA5;
constexpr int64_t kMargin = 48;  // sentinel bytes around every buffer

// ---------------------------------------------------------------------------------------------
// Datatypes

struct TestType {
  MPI_Datatype type = MPI_DATATYPE_NULL;
  int units = 1;  // signature units (ints, bytes or struct records) in one element
  int64_t extent = 0, true_lb = 0, true_extent = 0;
};

inline TestType test_type(MPI_Datatype type, int units) {
  MPI_Aint lb = 0, extent = 0, true_lb = 0, true_extent = 0;
  PMPI_Type_get_extent(type, &lb, &extent);
  PMPI_Type_get_true_extent(type, &true_lb, &true_extent);
  TestType t;
  t.type = type;
  t.units = units;
  t.extent = extent;
  t.true_lb = true_lb;
  t.true_extent = true_extent;
  return t;
}

inline MPI_Datatype committed(MPI_Datatype type) {
  MPI_Type_commit(&type);  // through Loom, which builds its plan here
  return type;
}

inline MPI_Datatype resized(MPI_Datatype type, MPI_Aint lb, MPI_Aint extent) {
  MPI_Datatype out;
  MPI_Type_create_resized(type, lb, extent, &out);
  MPI_Type_free(&type);
  return committed(out);
}

// A derived type and a partner with the same signature per unit (a basic type, or a dense
// struct), so that ranks and sides may mix them within one collective.
struct Family {
  const char* name;
  TestType derived, partner;
  int max_amount = 2;  // derived elements per block at most
};

constexpr const char* kFamilyNames[] = {"contiguous",         "vector",       "subarray",
                                        "indexed_block",      "struct_gaps",  "resized_vector",
                                        "resized_contiguous", "offset_dense", "one_run_element"};
constexpr int kFamilies = static_cast<int>(std::size(kFamilyNames));

inline const std::vector<Family>& families() {
  static const std::vector<Family> all = [] {
    const TestType one_int = test_type(MPI_INT, 1);
    std::vector<Family> f;
    MPI_Datatype t;
    MPI_Type_contiguous(4, MPI_INT, &t);  // dense: passes as bytes without a copy
    f.push_back({kFamilyNames[0], test_type(committed(t), 4), one_int});
    MPI_Type_vector(3, 2, 5, MPI_INT, &t);
    f.push_back({kFamilyNames[1], test_type(committed(t), 6), one_int});
    const int sizes[2] = {4, 5}, subsizes[2] = {2, 3}, starts[2] = {1, 1};
    MPI_Type_create_subarray(2, sizes, subsizes, starts, MPI_ORDER_C, MPI_INT, &t);
    f.push_back({kFamilyNames[2], test_type(committed(t), 6), one_int});
    const int displacements[3] = {7, 0, 4};  // out of order: the typemap order counts
    MPI_Type_create_indexed_block(3, 2, displacements, MPI_INT, &t);
    f.push_back({kFamilyNames[3], test_type(committed(t), 6), one_int});
    {
      // {int, int, double, int} with holes, against the same record packed without holes.
      const int lengths[3] = {2, 1, 1};
      const MPI_Datatype members[3] = {MPI_INT, MPI_DOUBLE, MPI_INT};
      const MPI_Aint holes[3] = {0, 16, 28}, packed[3] = {0, 8, 16};
      MPI_Type_create_struct(3, lengths, holes, members, &t);
      const TestType with_gaps = test_type(resized(t, 0, 40), 1);
      MPI_Type_create_struct(3, lengths, packed, members, &t);
      f.push_back({kFamilyNames[4], with_gaps, test_type(resized(t, 0, 20), 1)});
    }
    MPI_Type_vector(2, 1, 3, MPI_INT, &t);  // negative lower bound, extent beyond the data
    f.push_back({kFamilyNames[5], test_type(resized(t, -8, 40), 2), one_int});
    MPI_Type_contiguous(3, MPI_INT, &t);  // one dense run per element, gaps between elements
    f.push_back({kFamilyNames[6], test_type(resized(t, 0, 16), 3), one_int});
    {
      const int length = 3;
      const MPI_Aint offset = 8;  // dense, but its bytes start 8 bytes after its origin
      MPI_Type_create_hindexed(1, &length, &offset, MPI_INT, &t);
      f.push_back({kFamilyNames[7], test_type(committed(t), 3), one_int});
    }
    // One element a block, one dense run in a larger extent: a block the host may move whole.
    MPI_Type_contiguous(3, MPI_INT, &t);
    f.push_back({kFamilyNames[8], test_type(resized(t, 0, 16), 3), one_int, 1});
    return f;
  }();
  return all;
}

// Types Loom leaves to the host (no plan), where this host has such a type.
inline std::vector<Family> no_plan_families() {
  std::vector<Family> found;
  MPI_Datatype t;
  // Open MPI 4.1 packs a descending run of bytes in ascending order; Loom leaves it alone.
  MPI_Type_create_hvector(4, 1, -1, MPI_BYTE, &t);
  found.push_back(
      {"hvector_descending_bytes", test_type(committed(t), 4), test_type(MPI_BYTE, 1), 2});
#ifdef MPICH_VERSION
  // Loom has no decoder for the F90 combiners. (Open MPI's is skipped: its decoding of an F90
  // member currently aborts the job.)
  MPI_Datatype real = MPI_DATATYPE_NULL;
  MPI_Type_create_f90_real(15, MPI_UNDEFINED, &real);
  int real_size = 0;
  MPI_Type_size(real, &real_size);
  if (real_size == static_cast<int>(sizeof(double))) {
    MPI_Type_vector(2, 1, 2, real, &t);
    found.push_back(
        {"vector_of_f90_real", test_type(committed(t), 2), test_type(MPI_DOUBLE, 1), 2});
  }
#endif
  std::vector<Family> without_plan;
  for (Family& family : found) {
    if (!loom_type_is_accelerated(family.derived.type))
      without_plan.push_back(family);
    else
      MPI_Type_free(&family.derived.type);
  }
  return without_plan;
}

// Which side uses the family's derived type, and which its partner.
enum class Mode { Derived, SendDerived, RecvDerived, MixedRanks, FirstRankDerived };

inline const char* mode_name(Mode mode) {
  switch (mode) {
    case Mode::Derived:
      return "derived";
    case Mode::SendDerived:
      return "send_derived_recv_basic";
    case Mode::RecvDerived:
      return "send_basic_recv_derived";
    case Mode::MixedRanks:
      return "mixed_ranks";
    case Mode::FirstRankDerived:
      return "first_rank_derived";
  }
  return "?";
}

inline void PrintTo(Mode mode, std::ostream* out) {
  *out << mode_name(mode);
}

// ---------------------------------------------------------------------------------------------
// Buffers

// `count` elements of `type` whose first element's origin is `origin` bytes from the base.
struct Block {
  int64_t origin;
  int count;
  const TestType* type;
};

class Region {
 public:
  Region() = default;
  // Room for `blocks` plus margins; filled with a rank-specific pattern (input) or the sentinel.
  Region(const std::vector<Block>& blocks, bool pattern, unsigned salt) {
    int64_t lo = 0, hi = 0;
    for (const Block& b : blocks) {
      if (b.count == 0) continue;
      lo = std::min(lo, b.origin + b.type->true_lb);
      hi = std::max(
          hi, b.origin + (b.count - 1) * b.type->extent + b.type->true_lb + b.type->true_extent);
    }
    origin_ = static_cast<size_t>(kMargin - lo);
    bytes_.assign(static_cast<size_t>(kMargin - lo + hi + kMargin), kSentinel);
    // Every input differs from all earlier ones, so stale bytes (say, in a reused staging
    // buffer) cannot pass for the right ones.
    static unsigned generation = 0;
    ++generation;
    if (pattern)
      for (size_t i = 0; i < bytes_.size(); ++i)
        bytes_[i] = static_cast<unsigned char>(i * 7 + salt * 31 + g_rank * 101 + generation * 13 +
                                               (i >> 8) * generation + 1);
  }
  void* base() { return bytes_.empty() ? nullptr : bytes_.data() + origin_; }
  const std::vector<unsigned char>& bytes() const { return bytes_; }
  size_t origin() const { return origin_; }

 private:
  std::vector<unsigned char> bytes_;
  size_t origin_ = 0;
};

inline void expect_identical(const Region& loom, const Region& host, const std::string& what) {
  ASSERT_EQ(loom.bytes().size(), host.bytes().size());
  size_t differing = 0, first = 0;
  for (size_t i = 0; i < loom.bytes().size(); ++i) {
    if (loom.bytes()[i] == host.bytes()[i]) continue;
    if (differing++ == 0) first = i;
  }
  EXPECT_EQ(differing, 0u) << what << " on rank " << g_rank << ": " << differing
                           << " bytes differ from the host's, the first at offset "
                           << static_cast<int64_t>(first) - static_cast<int64_t>(loom.origin())
                           << " (Loom " << int{loom.bytes()[first]} << ", host "
                           << int{host.bytes()[first]} << ")";
}

inline std::vector<Block> uniform_blocks(const TestType& t, int blocks, int count) {
  std::vector<Block> out;
  for (int i = 0; i < blocks; ++i) out.push_back({int64_t{i} * count * t.extent, count, &t});
  return out;
}

// Displacements in extents laying blocks out in reverse order, one extent apart.
inline std::vector<int> spread(const std::vector<int>& counts) {
  std::vector<int> displs(counts.size());
  int next = 1;
  for (size_t i = counts.size(); i-- > 0;) {
    displs[i] = next;
    next += counts[i] + 1;
  }
  return displs;
}

inline std::vector<Block> varying_blocks(const TestType& t, const std::vector<int>& counts,
                                         const std::vector<int>& displs) {
  std::vector<Block> out;
  for (size_t i = 0; i < counts.size(); ++i)
    out.push_back({int64_t{displs[i]} * t.extent, counts[i], &t});
  return out;
}

// Byte displacements for blocks of their own types, in reverse order with gaps.
inline std::vector<MPI_Aint> spread_bytes(const std::vector<int>& counts,
                                          const std::vector<const TestType*>& types) {
  std::vector<MPI_Aint> displs(counts.size());
  int64_t next = 8;
  for (size_t i = counts.size(); i-- > 0;) {
    const TestType& t = *types[i];
    const int64_t start = (next - t.true_lb + 7) / 8 * 8;
    displs[i] = start;
    next = start + t.true_lb + std::max(counts[i], 1) * t.extent + 8;
  }
  return displs;
}

inline std::vector<Block> typed_blocks(const std::vector<int>& counts,
                                       const std::vector<MPI_Aint>& displs,
                                       const std::vector<const TestType*>& types) {
  std::vector<Block> out;
  for (size_t i = 0; i < counts.size(); ++i) out.push_back({displs[i], counts[i], types[i]});
  return out;
}

inline std::vector<int> as_int(const std::vector<MPI_Aint>& values) {
  return std::vector<int>(values.begin(), values.end());
}

inline std::vector<MPI_Datatype> handles(const std::vector<const TestType*>& types) {
  std::vector<MPI_Datatype> out;
  for (const TestType* t : types) out.push_back(t->type);
  return out;
}

}  // namespace loom::test::coll
