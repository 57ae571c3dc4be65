#include "mpi/locality.hpp"

#include "base/env.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>
#include <vector>

namespace loom::mpi {
namespace {

// A node is labelled by the lowest world rank learnt to be on it; -1: not learnt yet.
struct NodeMap {
  bool ready = false;             // init_locality ran
  bool from_environment = false;  // LOOM_RANKS_PER_NODE labelled every world rank
  bool single_node = true;
  int world_rank = 0;
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

namespace {

constexpr base::EnvVar kRanksPerNode{"LOOM_RANKS_PER_NODE",
                                     "from MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)",
                                     "N: world ranks [kN, (k+1)N) form node k"};

void publish(NodeMap& map) {
  map.my_node = map.node_of_world_rank[static_cast<size_t>(map.world_rank)];
  map.single_node = true;
  for (int n : map.node_of_world_rank) map.single_node = map.single_node && n == map.my_node;
  detail::one_node = map.single_node;
}

// Sizes the map on first use; true when LOOM_RANKS_PER_NODE has labelled every world rank.
bool labels_from_environment(NodeMap& map) {
  if (!map.node_of_world_rank.empty()) return map.from_environment;
  int world_size = 1;
  PMPI_Comm_size(MPI_COMM_WORLD, &world_size);
  PMPI_Comm_rank(MPI_COMM_WORLD, &map.world_rank);
  map.node_of_world_rank.assign(static_cast<size_t>(world_size), -1);
  const char* override_env = base::read(kRanksPerNode);
  const int per_node = override_env ? std::atoi(override_env) : 0;
  if (override_env && per_node <= 0 && map.world_rank == 0)
    base::warn_bad_value(kRanksPerNode, override_env, "is not a positive integer", "ignored");
  if (per_node <= 0) return false;
  for (int r = 0; r < world_size; ++r)
    map.node_of_world_rank[static_cast<size_t>(r)] = r / per_node * per_node;
  map.from_environment = true;
  publish(map);
  return true;
}

// `group`: world ranks just seen to share a node. Labels they had from earlier communicators
// name the same node, so every rank under any of those labels takes the group's lowest.
void merge_node(NodeMap& map, const std::vector<int>& group) {
  std::vector<int>& label = map.node_of_world_rank;
  int lowest = group.front();
  std::vector<int> old;
  for (int w : group) {
    const int l = label[static_cast<size_t>(w)];
    lowest = std::min(lowest, l < 0 ? w : l);
    if (l >= 0) old.push_back(l);
  }
  for (int w : group) label[static_cast<size_t>(w)] = lowest;
  for (int l : old)
    if (l != lowest)
      for (int& other : label)
        if (other == l) other = lowest;
}

}  // namespace

int learn_locality(MPI_Comm comm) {
  NodeMap& map = nodes();
  if (labels_from_environment(map)) return MPI_SUCCESS;
  // Ranks of `comm` name their node by its lowest rank in `comm`; world ranks are translated
  // here, since processes spawned or connected number their own worlds.
  MPI_Comm node = MPI_COMM_NULL;
  int rc = PMPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  if (rc != MPI_SUCCESS) return rc;
  int node_lowest = 0;
  PMPI_Comm_rank(comm, &node_lowest);
  rc = PMPI_Allreduce(MPI_IN_PLACE, &node_lowest, 1, MPI_INT, MPI_MIN, node);
  PMPI_Comm_free(&node);
  if (rc != MPI_SUCCESS) return rc;
  const std::vector<int> world = translate_to_world(comm);
  std::vector<int> lowest_of(world.size());
  rc = PMPI_Allgather(&node_lowest, 1, MPI_INT, lowest_of.data(), 1, MPI_INT, comm);
  if (rc != MPI_SUCCESS) return rc;
  std::map<int, std::vector<int>> groups;  // world ranks by their node's lowest rank in comm
  for (size_t r = 0; r < world.size(); ++r)
    if (world[r] != MPI_UNDEFINED) groups[lowest_of[r]].push_back(world[r]);
  // What is known already (the whole map, after the interposer's MPI_Init) is left untouched:
  // other threads may be reading it.
  bool changed = false;
  for (const auto& [lowest, group] : groups) {
    const int label = map.node_of_world_rank[static_cast<size_t>(group.front())];
    for (int w : group)
      changed = changed || label < 0 || map.node_of_world_rank[static_cast<size_t>(w)] != label;
  }
  if (!changed) return MPI_SUCCESS;
  for (const auto& [lowest, group] : groups) merge_node(map, group);
  publish(map);
  return MPI_SUCCESS;
}

bool knows_nodes_of(MPI_Comm comm) {
  const NodeMap& map = nodes();
  if (!map.ready && !map.from_environment) return false;
  for (int w : translate_to_world(comm))
    if (w == MPI_UNDEFINED || map.node_of_world_rank[static_cast<size_t>(w)] < 0) return false;
  return true;
}

int node_label() {
  const NodeMap& map = nodes();
  return map.node_of_world_rank.empty() ? 0 : map.my_node;
}

void init_locality() {
  NodeMap& map = nodes();
  if (map.ready) return;
  learn_locality(MPI_COMM_WORLD);
  map.ready = true;
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
