#include "transport/seamed_wire.hpp"

#include <atomic>
#include <cstring>
#include <mutex>
#include <unordered_map>

#include "base/env.hpp"
#include "mpi/quirks.hpp"

namespace loom::transport {
namespace {

constexpr base::EnvVar kSeamedWire{
    "LOOM_SEAMED_WIRE", "1 under Open MPI",
    "0: Loom's packed messages and all-to-all blocks above 2 KiB travel contiguous (Open MPI then "
    "uses its single-copy rendezvous for them); set it alike on every rank"};

std::mutex types_mutex;
std::atomic<uint64_t> types_generation{1};  // bumped when the types are freed
// Wire types by key: the packed size for seamed types, its negation for rotated ones.
std::unordered_map<int64_t, MPI_Datatype>& types() {
  static auto* map = new std::unordered_map<int64_t, MPI_Datatype>;
  return *map;
}
size_t rotated_cached = 0;

bool seams_apply(int64_t bytes) {
  static const bool host_applies =
      base::read_flag(kSeamedWire, true) && mpi::host_sends_contiguous_by_single_copy();
  return host_applies && bytes >= kSeamFromBytes && bytes <= kSeamUpToBytes;
}

// Two blocks of `base`, committed, with extent `extent`.
MPI_Datatype build_two_blocks(int64_t extent, const int lengths[2], const MPI_Aint displs[2],
                              MPI_Datatype base) {
  MPI_Datatype type = MPI_DATATYPE_NULL, sized = MPI_DATATYPE_NULL;
  if (PMPI_Type_create_hindexed(2, lengths, displs, base, &type) != MPI_SUCCESS)
    return MPI_DATATYPE_NULL;
  const int rc = PMPI_Type_create_resized(type, 0, static_cast<MPI_Aint>(extent), &sized);
  PMPI_Type_free(&type);
  if (rc != MPI_SUCCESS) return MPI_DATATYPE_NULL;
  if (PMPI_Type_commit(&sized) != MPI_SUCCESS) {
    PMPI_Type_free(&sized);
    return MPI_DATATYPE_NULL;
  }
  return sized;
}

// Past kMaxSeamedSizes sizes a seamed message travels contiguous, which its receiver does not
// see. A rotated block must not, since its peers rotate the same block whatever their caches
// hold: rotated types are kept for every size (one per distinct collective block size).
MPI_Datatype cached_wire_type(int64_t key) {
  thread_local int64_t last_key = 0;
  thread_local MPI_Datatype last_type = MPI_DATATYPE_NULL;
  thread_local uint64_t last_generation = 0;
  if (key == last_key && last_generation == types_generation.load(std::memory_order_acquire))
    return last_type;
  std::lock_guard<std::mutex> lock(types_mutex);
  auto& cache = types();
  MPI_Datatype type = MPI_DATATYPE_NULL;
  if (auto found = cache.find(key); found != cache.end()) {
    type = found->second;
  } else {
    if (key > 0 && cache.size() - rotated_cached >= kMaxSeamedSizes) return MPI_DATATYPE_NULL;
    const int64_t bytes = key > 0 ? key : -key;
    const int head = static_cast<int>(bytes - kSeamTail), tail = static_cast<int>(kSeamTail);
    const int lengths[2] = {head, tail};
    if (key > 0) {  // packed bytes, received as MPI_PACKED or as the user's type
      const MPI_Aint displs[2] = {0, static_cast<MPI_Aint>(head + kSeamGap)};
      type = build_two_blocks(bytes + kSeamGap, lengths, displs, MPI_PACKED);
    } else {  // a collective's bytes, received with the same type
      const MPI_Aint displs[2] = {tail, 0};
      type = build_two_blocks(bytes, lengths, displs, MPI_BYTE);
    }
    if (type == MPI_DATATYPE_NULL) return MPI_DATATYPE_NULL;
    cache.emplace(key, type);
    rotated_cached += key < 0;
  }
  last_key = key;
  last_type = type;
  last_generation = types_generation.load(std::memory_order_acquire);
  return type;
}

}  // namespace

MPI_Datatype seamed_wire_type(int64_t bytes) {
  return seams_apply(bytes) ? cached_wire_type(bytes) : MPI_DATATYPE_NULL;
}

MPI_Datatype rotated_wire_type(int64_t bytes) {
  return seams_apply(bytes) ? cached_wire_type(-bytes) : MPI_DATATYPE_NULL;
}

void open_seam(char* staging, int64_t bytes) {
  char* tail = staging + bytes - kSeamTail;
  std::memmove(tail + kSeamGap, tail, static_cast<size_t>(kSeamTail));
}

void release_seamed_wires() {
  std::lock_guard<std::mutex> lock(types_mutex);
  for (auto& [key, type] : types()) PMPI_Type_free(&type);
  types().clear();
  rotated_cached = 0;
  types_generation.fetch_add(1, std::memory_order_acq_rel);
}

}  // namespace loom::transport
