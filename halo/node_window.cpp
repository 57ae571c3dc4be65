#include "halo/node_window.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "loom/halo.h"

namespace loom::halo {
namespace {

// Same-node flag waits spin this long before yielding, when the node's ranks have a core each.
constexpr int kSpinMicros = 200;

size_t round_up_64(size_t bytes) {
  return (bytes + 63) / 64 * 64;
}

int node_size(const Domain& domain) {
  int size = 1;
  MPI_Comm_size(domain.node_comm, &size);
  return size;
}

size_t flags_bytes(const Domain& domain) {
  return round_up_64(sizeof(int64_t) * static_cast<size_t>(1 + node_size(domain)));
}

// Where field `field` starts in the segment of a rank whose subdomain has `size` cells.
size_t field_offset(const Domain& domain, const std::array<int64_t, 3>& size, int field) {
  size_t offset = flags_bytes(domain);
  for (int before = 0; before < field; ++before)
    offset += field_bytes(domain, size, domain.fields[static_cast<size_t>(before)].element);
  return offset;
}

// Whether every rank of the node communicator lies in one shared-memory domain.
int all_share_memory(MPI_Comm node_comm, bool* all_share) {
  MPI_Comm physical = MPI_COMM_NULL;
  const int rc = MPI_Comm_split_type(node_comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &physical);
  if (rc != MPI_SUCCESS) return rc;
  int physical_size = 0, size = 0;
  MPI_Comm_size(physical, &physical_size);
  MPI_Comm_size(node_comm, &size);
  MPI_Comm_free(&physical);
  int everywhere = physical_size == size;
  MPI_Allreduce(MPI_IN_PLACE, &everywhere, 1, MPI_INT, MPI_MIN, node_comm);
  *all_share = everywhere != 0;
  return MPI_SUCCESS;
}

// node_rank_of: each rank of the domain's communicator's rank in the node communicator.
void map_node_ranks(Domain* domain) {
  const int ranks_here = node_size(*domain);
  int size = 1;
  MPI_Comm_size(domain->comm, &size);
  domain->node_rank_of.assign(static_cast<size_t>(size), -1);
  std::vector<int> node_ranks(static_cast<size_t>(ranks_here));
  std::vector<int> comm_ranks(static_cast<size_t>(ranks_here));
  for (int q = 0; q < ranks_here; ++q) node_ranks[static_cast<size_t>(q)] = q;
  MPI_Group node_group, group;
  MPI_Comm_group(domain->node_comm, &node_group);
  MPI_Comm_group(domain->comm, &group);
  MPI_Group_translate_ranks(node_group, ranks_here, node_ranks.data(), group, comm_ranks.data());
  MPI_Group_free(&node_group);
  MPI_Group_free(&group);
  for (int q = 0; q < ranks_here; ++q)
    domain->node_rank_of[static_cast<size_t>(comm_ranks[static_cast<size_t>(q)])] = q;
}

// Allocates this rank's segment of the node window, `bytes` zeroed, and maps every node rank's.
int open_window(Domain* domain, size_t bytes) {
  const int ranks_here = node_size(*domain);
  domain->segments.assign(static_cast<size_t>(ranks_here), nullptr);
  domain->flags.assign(static_cast<size_t>(ranks_here), nullptr);
#ifdef LOOM_SMPI
  // Simulated ranks share one address space: a node's segments are ordinary memory (folded past
  // the flags in projections) whose starts, and flag signals, every rank gathers. SMPI 3.32's
  // MPI_Win_shared_query answers one block's start for every rank.
  domain->sim_segment = mpi::sim::allocate(bytes, flags_bytes(*domain));
  if (!domain->sim_segment) return fail(LOOM_HALO_ERR_NOMEM, "cannot allocate the node segment");
  domain->signal = std::make_unique<mpi::sim::Signal>();
  const uint64_t mine[2] = {reinterpret_cast<uintptr_t>(domain->sim_segment.get()),
                            reinterpret_cast<uintptr_t>(domain->signal.get())};
  std::vector<uint64_t> all(2 * static_cast<size_t>(ranks_here));
  int rc = MPI_Allgather(mine, 2, MPI_UINT64_T, all.data(), 2, MPI_UINT64_T, domain->node_comm);
  if (rc != MPI_SUCCESS) return mpi_fail(rc, "MPI_Allgather (node segments)");
  domain->signals.assign(static_cast<size_t>(ranks_here), nullptr);
  for (size_t q = 0; q < static_cast<size_t>(ranks_here); ++q) {
    domain->segments[q] = reinterpret_cast<char*>(static_cast<uintptr_t>(all[2 * q]));
    domain->signals[q] =
        reinterpret_cast<mpi::sim::Signal*>(static_cast<uintptr_t>(all[2 * q + 1]));
  }
#else
  char* mine = nullptr;
  int rc = MPI_Win_allocate_shared(static_cast<MPI_Aint>(bytes), 1, MPI_INFO_NULL,
                                   domain->node_comm, &mine, &domain->window);
  if (rc != MPI_SUCCESS) return mpi_fail(rc, "MPI_Win_allocate_shared");
  std::memset(mine, 0, bytes);
  for (int q = 0; q < ranks_here; ++q) {
    MPI_Aint segment_bytes = 0;
    int unit = 0;
    MPI_Win_shared_query(domain->window, q, &segment_bytes, &unit,
                         &domain->segments[static_cast<size_t>(q)]);
  }
#endif
  for (int q = 0; q < ranks_here; ++q)
    domain->flags[static_cast<size_t>(q)] =
        reinterpret_cast<int64_t*>(domain->segments[static_cast<size_t>(q)]);
  // Every rank's flags and fields are zeroed before any rank reads them.
  rc = MPI_Barrier(domain->node_comm);
  return rc == MPI_SUCCESS ? LOOM_HALO_SUCCESS : mpi_fail(rc, "MPI_Barrier (node)");
}

}  // namespace

int open_node(Domain* domain) {
  int rc = MPI_Comm_split(domain->comm, domain->node_leader, domain->rank, &domain->node_comm);
  if (rc != MPI_SUCCESS) return mpi_fail(rc, "MPI_Comm_split (node)");
  const int ranks_here = node_size(*domain);
  MPI_Comm_rank(domain->node_comm, &domain->node_rank);
  bool all_share = false;
  rc = all_share_memory(domain->node_comm, &all_share);
  if (rc != MPI_SUCCESS) return mpi_fail(rc, "MPI_Comm_split_type");
  if (!all_share || ranks_here == 1) {
    MPI_Comm_free(&domain->node_comm);
    return LOOM_HALO_SUCCESS;
  }
  map_node_ranks(domain);
  domain->shared = true;
  // The machine's cores, not this rank's affinity: launchers bind each rank to one core.
  const long cores = sysconf(_SC_NPROCESSORS_ONLN);
  domain->spin_micros = ranks_here <= cores ? kSpinMicros : 0;
  return LOOM_HALO_SUCCESS;
}

FieldLayout padded_field(char* memory, const std::array<int64_t, 3>& size,
                         const place::Radius& radius, size_t element) {
  std::array<int64_t, 3> cells{};  // along each dimension, ghosts included
  for (size_t i = 0; i < 3; ++i) cells[i] = size[i] + radius.minus[i] + radius.plus[i];
  const int64_t bytes = static_cast<int64_t>(element);
  const std::array<int64_t, 3> stride{bytes, bytes * cells[0], bytes * cells[0] * cells[1]};
  char* base = memory + radius.minus[0] * stride[0] + radius.minus[1] * stride[1] +
               radius.minus[2] * stride[2];
  return {base, stride};
}

size_t field_bytes(const Domain& domain, const std::array<int64_t, 3>& size, size_t element) {
  size_t cells = 1;
  for (size_t i = 0; i < 3; ++i)
    cells *= static_cast<size_t>(size[i] + domain.radius.minus[i] + domain.radius.plus[i]);
  return round_up_64(cells * element);
}

int open_field_window(Domain* domain) {
  return open_window(domain,
                     field_offset(*domain, domain->size, static_cast<int>(domain->fields.size())));
}

char* own_field_memory(const Domain& domain, int field) {
  return domain.segments[static_cast<size_t>(domain.node_rank)] +
         field_offset(domain, domain.size, field);
}

FieldLayout neighbour_field(const Domain& domain, int node_rank, const std::array<int64_t, 3>& size,
                            int field) {
  char* memory =
      domain.segments[static_cast<size_t>(node_rank)] + field_offset(domain, size, field);
  return padded_field(memory, size, domain.radius,
                      domain.fields[static_cast<size_t>(field)].element);
}

void release_window(Domain* domain) {
  if (domain->window != MPI_WIN_NULL) MPI_Win_free(&domain->window);
  // SMPI: no rank of the node may still read a segment or notify a signal being freed.
  if (domain->sim_segment && domain->node_comm != MPI_COMM_NULL) MPI_Barrier(domain->node_comm);
  domain->sim_segment.reset();
  domain->signal.reset();
}

int open_staging(Domain* domain) {
  const int ranks_here = node_size(*domain);
  std::sort(domain->staged_readers.begin(), domain->staged_readers.end(),
            [](const StagedReader& a, const StagedReader& b) { return a.node_rank < b.node_rank; });
  // area_at[q]: where reader q's area starts in this rank's segment (0: q reads nothing).
  std::vector<int64_t> area_at(static_cast<size_t>(ranks_here), 0);
  size_t bytes = flags_bytes(*domain);
  for (const StagedReader& reader : domain->staged_readers) {
    area_at[static_cast<size_t>(reader.node_rank)] = static_cast<int64_t>(bytes);
    bytes += round_up_64(packed_bytes(reader.segments, domain->fields));
  }
  const int rc = open_window(domain, bytes);
  if (rc != LOOM_HALO_SUCCESS) return rc;
  // areas[q * ranks_here + r]: where reader r's area starts in node rank q's segment.
  std::vector<int64_t> areas(static_cast<size_t>(ranks_here) * static_cast<size_t>(ranks_here));
  const int mpi_rc = MPI_Allgather(area_at.data(), ranks_here, MPI_INT64_T, areas.data(),
                                   ranks_here, MPI_INT64_T, domain->node_comm);
  if (mpi_rc != MPI_SUCCESS) return mpi_fail(mpi_rc, "MPI_Allgather (node pack areas)");
  char* mine = domain->segments[static_cast<size_t>(domain->node_rank)];
  for (StagedReader& reader : domain->staged_readers)
    reader.area = mine + area_at[static_cast<size_t>(reader.node_rank)];
  for (SharedSource& source : domain->sources) {
    const size_t q = static_cast<size_t>(source.node_rank);
    source.area =
        domain->segments[q] +
        areas[q * static_cast<size_t>(ranks_here) + static_cast<size_t>(domain->node_rank)];
  }
  return LOOM_HALO_SUCCESS;
}

}  // namespace loom::halo
