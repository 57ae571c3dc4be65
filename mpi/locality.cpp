#include "mpi/locality.hpp"

#include "base/env.hpp"

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>
#include <vector>

namespace loom::mpi {
namespace {

struct NodeMap {
  bool ready = false;
  bool single_node = true;
  int my_node = 0;
  std::vector<int> node_of_world_rank;
};

NodeMap& nodes() {
  static NodeMap map;
  return map;
}

// World ranks of each communicator's (remote) group, filled on first use.
std::shared_mutex comm_mutex;
std::unordered_map<MPI_Comm, std::vector<int>>& comm_world_ranks() {
  static auto* m = new std::unordered_map<MPI_Comm, std::vector<int>>();
  return *m;
}

std::vector<int> translate_to_world(MPI_Comm comm) {
  int inter = 0;
  PMPI_Comm_test_inter(comm, &inter);
  MPI_Group group, world;
  if (inter)
    PMPI_Comm_remote_group(comm, &group);
  else
    PMPI_Comm_group(comm, &group);
  PMPI_Comm_group(MPI_COMM_WORLD, &world);
  int n = 0;
  PMPI_Group_size(group, &n);
  std::vector<int> ranks(static_cast<size_t>(n)), world_ranks(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) ranks[static_cast<size_t>(i)] = i;
  PMPI_Group_translate_ranks(group, n, ranks.data(), world, world_ranks.data());
  PMPI_Group_free(&group);
  PMPI_Group_free(&world);
  return world_ranks;
}

}  // namespace

void init_locality() {
  NodeMap& map = nodes();
  if (map.ready) return;
  int world_size = 1, world_rank = 0;
  PMPI_Comm_size(MPI_COMM_WORLD, &world_size);
  PMPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  map.node_of_world_rank.assign(static_cast<size_t>(world_size), 0);
  static constexpr base::EnvVar kRanksPerNode{"LOOM_RANKS_PER_NODE",
                                              "from MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)",
                                              "N: world ranks [kN, (k+1)N) form node k"};
  const char* override_env = base::read(kRanksPerNode);
  const int per_node = override_env ? std::atoi(override_env) : 0;
  if (override_env && per_node <= 0 && world_rank == 0)
    base::warn_bad_value(kRanksPerNode, override_env, "is not a positive integer", "ignored");
  if (per_node > 0) {
    for (int r = 0; r < world_size; ++r)
      map.node_of_world_rank[static_cast<size_t>(r)] = r / per_node;
  } else {
    // A node is named by the lowest world rank on it.
    MPI_Comm node;
    PMPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    int leader = world_rank;
    PMPI_Allreduce(MPI_IN_PLACE, &leader, 1, MPI_INT, MPI_MIN, node);
    PMPI_Comm_free(&node);
    PMPI_Allgather(&leader, 1, MPI_INT, map.node_of_world_rank.data(), 1, MPI_INT, MPI_COMM_WORLD);
  }
  map.my_node = map.node_of_world_rank[static_cast<size_t>(world_rank)];
  map.single_node = true;
  for (int n : map.node_of_world_rank) map.single_node = map.single_node && n == map.my_node;
  map.ready = true;
  detail::one_node = map.single_node;
}

namespace {

// MPI_UNDEFINED for a process outside MPI_COMM_WORLD (spawned or connected).
int world_rank_of(MPI_Comm comm, int peer) {
  if (comm == MPI_COMM_WORLD) return peer;
  auto pick = [peer](const std::vector<int>& ranks) {
    return static_cast<size_t>(peer) < ranks.size() ? ranks[static_cast<size_t>(peer)]
                                                    : MPI_UNDEFINED;
  };
  {
    std::shared_lock lock(comm_mutex);
    auto it = comm_world_ranks().find(comm);
    if (it != comm_world_ranks().end()) return pick(it->second);
  }
  std::vector<int> ranks = translate_to_world(comm);
  const int world_peer = pick(ranks);
  std::unique_lock lock(comm_mutex);
  comm_world_ranks()[comm] = std::move(ranks);
  return world_peer;
}

}  // namespace

model::Locality detail::locality_across_nodes(MPI_Comm comm, int peer) {
  const NodeMap& map = nodes();
  if (peer < 0) return model::Locality::OtherNode;  // MPI_ANY_SOURCE: the worst case
  const int world_peer = world_rank_of(comm, peer);
  if (world_peer < 0 || static_cast<size_t>(world_peer) >= map.node_of_world_rank.size())
    return model::Locality::OtherNode;
  return map.node_of_world_rank[static_cast<size_t>(world_peer)] == map.my_node
             ? model::Locality::SameNode
             : model::Locality::OtherNode;
}

void forget_communicator(MPI_Comm comm) {
  if (nodes().single_node) return;
  std::unique_lock lock(comm_mutex);
  comm_world_ranks().erase(comm);
}

}  // namespace loom::mpi
