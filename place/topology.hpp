// The cost of moving a byte between two ranks of a node, from where each runs on the machine
// (hwloc): the smallest part of the machine that holds both ranks' CPUs decides, nearest first
// one core (shared L1/L2), a shared cache, one NUMA domain, one package, the whole machine. The
// distance matrix that placement (placement.hpp) minimises against. No MPI dependency.
#pragma once

#include <span>
#include <string>

#include "place/placement.hpp"

namespace loom::place {

// Cost per byte at each level; only their order matters to placement.
enum class Nearness : int {
  SameCore = 1,
  SharedCache = 2,
  SameNuma = 4,
  SamePackage = 6,
  Machine = 10
};

// The machine's topology as hwloc sees it, or a synthetic one (hwloc's syntax, e.g.
// "pack:2 l3:2 core:2 pu:1") for tests and for users who describe a machine by hand.
class Topology {
 public:
  // Throws std::runtime_error when hwloc cannot load it (a malformed synthetic description).
  explicit Topology(const std::string& synthetic = "");
  ~Topology();
  Topology(const Topology&) = delete;
  Topology& operator=(const Topology&) = delete;

  // How near two sets of CPUs are, each an hwloc list ("0-3,8"); an empty or unreadable list
  // means the whole machine (a process bound nowhere).
  Nearness nearness(const std::string& cpus_a, const std::string& cpus_b) const;
  // d(a, b) for ranks whose CPUs are `cpus[a]`, `cpus[b]`; 0 on the diagonal (a subdomain's
  // traffic with itself costs the same wherever it runs).
  SquareMatrix distances(std::span<const std::string> cpus) const;
  // The CPUs this process is bound to, as an hwloc list; empty when unknown or unbound.
  std::string bound_cpus() const;

 private:
  struct State;
  State* state_;
};

// This machine's topology, loaded once per process on first use (hwloc reads it from the system:
// milliseconds on a large node); null when hwloc cannot.
const Topology* machine_topology();

}  // namespace loom::place
