#include "place/topology.hpp"

#include <hwloc.h>

#include <cstdlib>
#include <memory>
#include <stdexcept>

namespace loom::place {

struct Topology::State {
  hwloc_topology_t topology = nullptr;
};

namespace {

// `list` as a cpuset within the machine; the whole machine when empty, unreadable or outside it.
hwloc_bitmap_t cpuset_of(hwloc_topology_t topology, const std::string& list) {
  hwloc_const_cpuset_t all = hwloc_topology_get_topology_cpuset(topology);
  hwloc_bitmap_t set = hwloc_bitmap_alloc();
  if (list.empty() || hwloc_bitmap_list_sscanf(set, list.c_str()) != 0) hwloc_bitmap_copy(set, all);
  hwloc_bitmap_and(set, set, all);
  if (hwloc_bitmap_iszero(set)) hwloc_bitmap_copy(set, all);
  return set;
}

}  // namespace

Topology::Topology(const std::string& synthetic) : state_(new State) {
  hwloc_topology_init(&state_->topology);
  if ((!synthetic.empty() && hwloc_topology_set_synthetic(state_->topology, synthetic.c_str())) ||
      hwloc_topology_load(state_->topology)) {
    hwloc_topology_destroy(state_->topology);
    delete state_;
    throw std::runtime_error(synthetic.empty()
                                 ? std::string("hwloc could not load this machine's topology")
                                 : "hwloc rejects the synthetic topology \"" + synthetic + "\"");
  }
}

Topology::~Topology() {
  hwloc_topology_destroy(state_->topology);
  delete state_;
}

Nearness Topology::nearness(const std::string& cpus_a, const std::string& cpus_b) const {
  hwloc_topology_t t = state_->topology;
  hwloc_bitmap_t both = cpuset_of(t, cpus_a);
  hwloc_bitmap_t b = cpuset_of(t, cpus_b);
  hwloc_bitmap_or(both, both, b);
  hwloc_bitmap_free(b);
  hwloc_obj_t covering = hwloc_get_obj_covering_cpuset(t, both);
  const bool one_core =
      covering && (covering->type == HWLOC_OBJ_CORE || covering->type == HWLOC_OBJ_PU ||
                   hwloc_get_ancestor_obj_by_type(t, HWLOC_OBJ_CORE, covering));
  const bool one_package =
      covering && (covering->type == HWLOC_OBJ_PACKAGE ||
                   hwloc_get_ancestor_obj_by_type(t, HWLOC_OBJ_PACKAGE, covering) ||
                   hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_PACKAGE) <= 1);
  // A NUMA domain counts only inside one package: a machine whose one memory spans its
  // packages still crosses them.
  const bool one_numa =
      one_package && covering && covering->nodeset && hwloc_bitmap_weight(covering->nodeset) == 1;
  Nearness near = Nearness::Machine;
  if (one_core)
    near = Nearness::SameCore;
  else if (hwloc_get_cache_covering_cpuset(t, both))
    near = Nearness::SharedCache;
  else if (one_numa)
    near = Nearness::SameNuma;
  else if (one_package)
    near = Nearness::SamePackage;
  hwloc_bitmap_free(both);
  return near;
}

SquareMatrix Topology::distances(std::span<const std::string> cpus) const {
  const int n = static_cast<int>(cpus.size());
  SquareMatrix d(n);
  for (int a = 0; a < n; ++a)
    for (int b = 0; b < n; ++b)
      if (a != b)
        d(a, b) = static_cast<double>(
            nearness(cpus[static_cast<size_t>(a)], cpus[static_cast<size_t>(b)]));
  return d;
}

std::string Topology::bound_cpus() const {
  hwloc_bitmap_t set = hwloc_bitmap_alloc();
  std::string list;
  if (hwloc_get_cpubind(state_->topology, set, HWLOC_CPUBIND_PROCESS) == 0 &&
      !hwloc_bitmap_isincluded(hwloc_topology_get_topology_cpuset(state_->topology), set)) {
    char* text = nullptr;
    if (hwloc_bitmap_list_asprintf(&text, set) >= 0 && text) list = text;
    std::free(text);
  }
  hwloc_bitmap_free(set);
  return list;
}

const Topology* machine_topology() {
  static const std::unique_ptr<Topology> topology = []() -> std::unique_ptr<Topology> {
    try {
      return std::make_unique<Topology>();
    } catch (const std::exception&) {
      return nullptr;
    }
  }();
  return topology.get();
}

}  // namespace loom::place
