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
    "uses its single-copy rendezvous for them)"};

std::mutex types_mutex;
std::atomic<uint64_t> types_generation{1};  // bumped when the types are freed
std::unordered_map<int64_t, MPI_Datatype>& types() {
  static auto* map = new std::unordered_map<int64_t, MPI_Datatype>;
  return *map;
}

// Wire types by key: the packed size for MPI_PACKED ones, its negation for MPI_BYTE ones.
MPI_Datatype cached_wire_type(int64_t key) {
  static const bool host_applies =
      base::read_flag(kSeamedWire, true) && mpi::host_sends_contiguous_by_single_copy();
  const int64_t bytes = key > 0 ? key : -key;
  if (!host_applies || bytes < kSeamFromBytes || bytes > kSeamUpToBytes) return MPI_DATATYPE_NULL;
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
    if (cache.size() >= kMaxSeamedSizes) return MPI_DATATYPE_NULL;
    const int lengths[2] = {static_cast<int>(bytes - kSeamTail), static_cast<int>(kSeamTail)};
    const MPI_Aint displacements[2] = {0, static_cast<MPI_Aint>(bytes - kSeamTail + kSeamGap)};
    if (PMPI_Type_create_hindexed(2, lengths, displacements, key > 0 ? MPI_PACKED : MPI_BYTE,
                                  &type) != MPI_SUCCESS)
      return MPI_DATATYPE_NULL;
    if (PMPI_Type_commit(&type) != MPI_SUCCESS) {
      PMPI_Type_free(&type);
      return MPI_DATATYPE_NULL;
    }
    cache.emplace(key, type);
  }
  last_key = key;
  last_type = type;
  last_generation = types_generation.load(std::memory_order_acquire);
  return type;
}

}  // namespace

MPI_Datatype seamed_wire_type(int64_t bytes) {
  return cached_wire_type(bytes);
}

MPI_Datatype seamed_block_type(int64_t bytes) {
  return cached_wire_type(-bytes);
}

void open_seam(char* staging, int64_t bytes) {
  char* tail = staging + bytes - kSeamTail;
  std::memmove(tail + kSeamGap, tail, static_cast<size_t>(kSeamTail));
}

void release_seamed_wires() {
  std::lock_guard<std::mutex> lock(types_mutex);
  for (auto& [bytes, type] : types()) PMPI_Type_free(&type);
  types().clear();
  types_generation.fetch_add(1, std::memory_order_acq_rel);
}

}  // namespace loom::transport
