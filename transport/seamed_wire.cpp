#include "transport/seamed_wire.hpp"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>

#include "base/env.hpp"
#include "mpi/host_identity.hpp"

namespace loom::transport {
namespace {

constexpr base::EnvVar kSeamedWire{
    "LOOM_SEAMED_WIRE", "1 under Open MPI",
    "0: Loom's packed messages above 2 KiB travel contiguous (Open MPI then uses its single-copy "
    "rendezvous for them)"};

bool host_single_copy_applies() {
  if (mpi::host_is_mpich()) return false;
  if (!base::read_flag(kSeamedWire, true)) return false;
  const char* mechanism = std::getenv("OMPI_MCA_btl_vader_single_copy_mechanism");
  if (mechanism && std::string(mechanism) == "none") return false;
  // The UCX pml has its own shared-memory protocols; this is about ob1 over vader.
  const char* pml = std::getenv("OMPI_MCA_pml");
  return !(pml && std::string(pml).find("ucx") != std::string::npos && pml[0] != '^');
}

// Wire types by packed size. A message size is a kind's, so few sizes recur; past kMaxTypes
// sizes new ones travel contiguous rather than grow the cache without bound.
constexpr size_t kMaxTypes = 256;
std::mutex types_mutex;
std::atomic<uint64_t> types_generation{1};  // bumped when the types are freed
std::unordered_map<int64_t, MPI_Datatype>& types() {
  static auto* map = new std::unordered_map<int64_t, MPI_Datatype>;
  return *map;
}

MPI_Datatype wire_type(int64_t bytes) {
  thread_local int64_t last_bytes = -1;
  thread_local MPI_Datatype last_type = MPI_DATATYPE_NULL;
  thread_local uint64_t last_generation = 0;
  if (bytes == last_bytes && last_generation == types_generation.load(std::memory_order_acquire))
    return last_type;
  std::lock_guard<std::mutex> lock(types_mutex);
  auto& cache = types();
  MPI_Datatype type = MPI_DATATYPE_NULL;
  if (auto found = cache.find(bytes); found != cache.end()) {
    type = found->second;
  } else {
    if (cache.size() >= kMaxTypes) return MPI_DATATYPE_NULL;
    const int lengths[2] = {static_cast<int>(bytes - kSeamTail), static_cast<int>(kSeamTail)};
    const MPI_Aint displacements[2] = {0, static_cast<MPI_Aint>(bytes - kSeamTail + kSeamGap)};
    if (PMPI_Type_create_hindexed(2, lengths, displacements, MPI_PACKED, &type) != MPI_SUCCESS)
      return MPI_DATATYPE_NULL;
    if (PMPI_Type_commit(&type) != MPI_SUCCESS) {
      PMPI_Type_free(&type);
      return MPI_DATATYPE_NULL;
    }
    cache.emplace(bytes, type);
  }
  last_bytes = bytes;
  last_type = type;
  last_generation = types_generation.load(std::memory_order_acquire);
  return type;
}

}  // namespace

bool seamed_wire_applies(int64_t bytes) {
  static const bool host_applies = host_single_copy_applies();
  return host_applies && bytes >= kSeamFromBytes && bytes <= kSeamUpToBytes;
}

MPI_Datatype open_seam(char* staging, int64_t bytes) {
  char* tail = staging + bytes - kSeamTail;
  std::memmove(tail + kSeamGap, tail, static_cast<size_t>(kSeamTail));
  const MPI_Datatype type = wire_type(bytes);
  if (type == MPI_DATATYPE_NULL)
    std::memmove(tail, tail + kSeamGap, static_cast<size_t>(kSeamTail));
  return type;
}

void release_seamed_wires() {
  std::lock_guard<std::mutex> lock(types_mutex);
  for (auto& [bytes, type] : types()) PMPI_Type_free(&type);
  types().clear();
  types_generation.fetch_add(1, std::memory_order_acq_rel);
}

}  // namespace loom::transport
