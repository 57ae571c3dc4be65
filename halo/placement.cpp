#include "halo/placement.hpp"

#include <cstdio>
#include <cstring>
#include <exception>
#include <map>
#include <memory>
#include <string>

#include "base/env.hpp"
#include "mpi/locality.hpp"
#include "place/placement.hpp"
#include "place/topology.hpp"
#include "runtime/runtime.hpp"

namespace loom::halo {
namespace {

constexpr base::EnvVar kPlacement{
    "LOOM_HALO_PLACEMENT", "auto",
    "auto: each node's subdomains go to its ranks so that the most halo bytes move between the "
    "nearest CPUs (hwloc: same core, shared cache, NUMA domain, package), where that beats the "
    "rank order; off: subdomains in rank order. Set it alike on every rank"};

// The topology placement maps onto: this machine's (place::machine_topology(), null when hwloc
// cannot, and then every node keeps the rank order), none under SMPI, whose simulated nodes are
// not this machine and have alike cores (sim/make_platform.py).
const place::Topology* node_topology() {
#ifdef LOOM_SMPI
  return nullptr;
#else
  return place::machine_topology();
#endif
}

// Every node rank's bound CPUs (`cpus`, hwloc lists), gathered into `cpus_of` at the node's
// first rank. Collective over `node`.
int gather_cpus(MPI_Comm node, int ranks_per_node, bool first, const std::string& cpus,
                std::vector<std::string>* cpus_of) {
  const int length = static_cast<int>(cpus.size());
  std::vector<int> lengths(static_cast<size_t>(ranks_per_node)), starts(lengths.size());
  int rc = MPI_Gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, 0, node);
  for (size_t i = 1; i < starts.size(); ++i) starts[i] = starts[i - 1] + lengths[i - 1];
  std::string all(first ? static_cast<size_t>(starts.back() + lengths.back()) : 0, '\0');
  if (rc == MPI_SUCCESS)
    rc = MPI_Gatherv(cpus.data(), length, MPI_CHAR, all.data(), lengths.data(), starts.data(),
                     MPI_CHAR, 0, node);
  if (rc != MPI_SUCCESS || !first) return rc;
  for (size_t i = 0; i < lengths.size(); ++i)
    cpus_of->push_back(all.substr(static_cast<size_t>(starts[i]), static_cast<size_t>(lengths[i])));
  return MPI_SUCCESS;
}

// Ranks bound nowhere, or all equally far apart: every placement costs the same.
bool equally_far(const place::SquareMatrix& distance) {
  const int ranks = distance.size();
  for (int a = 0; a < ranks; ++a)
    for (int b = 0; b < ranks; ++b)
      if (a != b && distance(a, b) != distance(0, ranks > 1)) return false;
  return true;
}

// The node-local rank of each of node `node_index`'s subdomains: place::place against the
// node's halo bytes where it beats `rank_order`, else `rank_order`.
std::vector<int> best_order(const Domain& domain, int node_index, const place::Topology& topology,
                            const std::vector<std::string>& cpus_of, std::vector<int> rank_order) {
  const place::SquareMatrix distance = topology.distances(cpus_of);
  // The solver takes seconds for a hundred ranks: not asked where nothing can be gained.
  if (equally_far(distance)) return rank_order;
  const place::SquareMatrix traffic =
      place::halo_bytes(domain.partition, domain.radius, domain.periodic, 1, node_index);
  const double in_order = place::placement_cost(traffic, distance, rank_order);
  double cost = in_order;
  try {
    const place::Placement best = place::place(traffic, distance);
    if (best.cost < in_order * (1 - 1e-9)) rank_order = best.rank_of, cost = best.cost;
  } catch (const std::exception&) {  // a malformed matrix: keep the rank order
  }
  if (runtime::config().debug)
    std::fprintf(stderr, "[loom] halo node of rank %d: placement cost %.0f, rank order %.0f%s\n",
                 domain.rank, cost, in_order, cost < in_order ? "" : " (kept)");
  return rank_order;
}

// Every rank of the domain's communicator learns every slot's rank from each rank's slot.
int share_slots(Domain* domain) {
  std::vector<int> slot_of_rank(domain->rank_of_slot.size());
  const int rc =
      MPI_Allgather(&domain->slot, 1, MPI_INT, slot_of_rank.data(), 1, MPI_INT, domain->comm);
  if (rc != MPI_SUCCESS) return rc;
  for (size_t rank = 0; rank < slot_of_rank.size(); ++rank)
    domain->rank_of_slot[static_cast<size_t>(slot_of_rank[rank])] = static_cast<int>(rank);
  return MPI_SUCCESS;
}

}  // namespace

int node_layout(MPI_Comm comm, NodeLayout* layout) {
  int size = 1, rank = 0;
  MPI_Comm_size(comm, &size);
  MPI_Comm_rank(comm, &rank);
  int leader = rank;
  for (int r = 0; r < size; ++r)
    if (mpi::locality(comm, r) == model::Locality::SameNode) {
      leader = r;
      break;
    }
  layout->leader = leader;
  std::vector<int> leaders(static_cast<size_t>(size));
  const int rc = MPI_Allgather(&leader, 1, MPI_INT, leaders.data(), 1, MPI_INT, comm);
  if (rc != MPI_SUCCESS) return rc;
  std::map<int, std::vector<int>> members;  // by node leader
  for (int r = 0; r < size; ++r) members[leaders[static_cast<size_t>(r)]].push_back(r);
  bool even = true;
  for (const auto& [node, ranks] : members)
    even = even && ranks.size() == members.begin()->second.size();
  layout->rank_of_slot.clear();
  layout->real_nodes = even;
  if (!even) {
    layout->nodes = 1;
    layout->ranks_per_node = size;
    for (int r = 0; r < size; ++r) layout->rank_of_slot.push_back(r);
    return MPI_SUCCESS;
  }
  layout->nodes = static_cast<int>(members.size());
  layout->ranks_per_node = size / layout->nodes;
  for (const auto& [node, ranks] : members)
    layout->rank_of_slot.insert(layout->rank_of_slot.end(), ranks.begin(), ranks.end());
  return MPI_SUCCESS;
}

bool placement_wanted() {
  static const bool wanted = [] {
    const char* text = base::read(kPlacement);
    if (!text || !std::strcmp(text, "auto")) return true;
    if (!std::strcmp(text, "off")) return false;
    base::warn_bad_value(kPlacement, text, "is not auto or off", "using auto");
    return true;
  }();
  return wanted;
}

// Every rank's CPUs gathered over the node, distances from hwloc, computed by the node's first
// rank and taken only where they beat the rank order (an unbound job, whose ranks may run
// anywhere, keeps it).
int place_on_node(Domain* domain, int ranks_per_node) {
  const int node_index = domain->slot / ranks_per_node;
  const int local = domain->slot % ranks_per_node;
  MPI_Comm node = MPI_COMM_NULL;
  int rc = MPI_Comm_split(domain->comm, domain->node_leader, domain->rank, &node);
  if (rc != MPI_SUCCESS) return rc;
  const place::Topology* topology = node_topology();
  std::vector<std::string> cpus_of;
  rc = gather_cpus(node, ranks_per_node, local == 0,
                   topology ? topology->bound_cpus() : std::string(), &cpus_of);
  std::vector<int> rank_of(static_cast<size_t>(ranks_per_node));
  for (int i = 0; i < ranks_per_node; ++i) rank_of[static_cast<size_t>(i)] = i;
  if (rc == MPI_SUCCESS && local == 0 && topology)
    rank_of = best_order(*domain, node_index, *topology, cpus_of, std::move(rank_of));
  if (rc == MPI_SUCCESS) rc = MPI_Bcast(rank_of.data(), ranks_per_node, MPI_INT, 0, node);
  MPI_Comm_free(&node);
  if (rc != MPI_SUCCESS) return rc;
  for (int i = 0; i < ranks_per_node; ++i)
    if (rank_of[static_cast<size_t>(i)] == local) domain->slot = node_index * ranks_per_node + i;
  return share_slots(domain);
}

}  // namespace loom::halo
