#include "ops/topology_reorder.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "base/env.hpp"
#include "mpi/communicator.hpp"
#include "mpi/host.hpp"
#include "mpi/locality.hpp"
#include "place/graph_map.hpp"
#include "place/topology.hpp"
#include "runtime/counters.hpp"

namespace loom::ops {
namespace {

using runtime::Counter;

constexpr base::EnvVar kReorder{
    "LOOM_REORDER", "auto",
    "topology constructors with reorder=1: auto (Loom's mapping, kept only where fewer bytes "
    "cross nodes than under the host's numbering), 0 (the host's numbering, untouched), "
    "metis|scotch|kahip (that partitioner alone), identity (figures only) or random (kept "
    "whatever it costs; for experiments)"};

struct Setting {
  bool on = true;
  place::MapOptions options;
};

const Setting& setting() {
  static const Setting s = [] {
    Setting r;
    const char* text = base::read(kReorder);
    if (!text || !std::strcmp(text, "1")) return r;
    if (!std::strcmp(text, "0")) {
      r.on = false;
      return r;
    }
    const auto named = place::map_options_named(text);
    if (!named) {
      base::warn_bad_value(kReorder, text,
                           "is not 0, 1, auto, metis, scotch, kahip, identity or random",
                           "Loom's own mapping (auto) instead");
    } else if (named->method == place::MapMethod::Partitioner &&
               !place::partitioner_available(named->partitioner)) {
      base::warn_bad_value(kReorder, text, "names a partitioner this Loom was built without",
                           "Loom's own mapping (auto) instead");
    } else {
      r.options = *named;
    }
    return r;
  }();
  return s;
}

// LOOM_STATS: a line of counters and, per communicator Loom was asked to reorder, what it found.
const Counter kCommunicators = runtime::register_counter("reorder", "", "communicators");
const Counter kRenumbered = runtime::register_counter("reorder", "", "renumbered");
const Counter kMappingTime =
    runtime::register_counter("reorder", "", "mapping time", runtime::Unit::Nanoseconds);

constexpr size_t kReportsShown = 16;
std::mutex reports_mutex;
std::vector<std::string>& reports() {
  static auto* r = new std::vector<std::string>();
  return *r;
}
std::string reorder_tail() {
  std::lock_guard<std::mutex> lock(reports_mutex);
  std::string tail;
  for (size_t i = 0; i < reports().size() && i < kReportsShown; ++i)
    tail += (i ? " | " : "") + reports()[i];
  if (reports().size() > kReportsShown)
    tail += " | (" + std::to_string(reports().size() - kReportsShown) + " more)";
  return tail;
}
bool reorder_counted() {
  return runtime::area_total("reorder") > 0;
}
const bool kReorderFormat =
    runtime::format_area("reorder", {60, nullptr, reorder_tail, reorder_counted});

// One constructor's way to its graph and to its communicator under a numbering.
struct Constructor {
  const char* name;
  // What this rank tells the root for the graph (the distributed-graph forms: its arguments);
  // empty for the constructors whose every rank passes the whole topology.
  std::vector<int> local;
  // At the root, from every rank's `local`: the graph over the communicator's ranks. Throws
  // std::invalid_argument for a graph Loom does not map (inconsistent edges, negative weights).
  std::function<place::CommGraph(int size, const std::vector<std::vector<int>>& all)> graph;
  // MPI_Dist_graph_create_adjacent only: a rank's arguments follow its number, so the process
  // that takes number v builds with the arguments rank v gave.
  bool arguments_follow_rank = false;
  // The host's constructor with reorder=0 on `numbered` (split by the new numbering), given the
  // arguments to use (`arguments_follow_rank`: those of the rank now held; else this rank's own).
  std::function<int(MPI_Comm numbered, const std::vector<int>& arguments, MPI_Comm* made)> build;
};

// What the root decided, as every rank receives it.
struct Decision {
  bool renumber = false;
  std::vector<int> vertex_of_slot;
  double cut = 0, baseline_cut = 0, total = 0, seconds = 0;
  int nodes = 1;
  std::string found_by, why_kept;
};

std::string percent(double share) {
  char text[16];
  std::snprintf(text, sizeof text, "%.1f%%", 100 * share);
  return text;
}

void record(const Constructor& c, int size, const Decision& d) {
  runtime::count(kCommunicators);
  if (d.renumber) runtime::count(kRenumbered);
  runtime::count(kMappingTime, static_cast<uint64_t>(d.seconds * 1e9));
  const double before = d.total > 0 ? 1 - d.baseline_cut / d.total : 1;
  const double after = d.total > 0 ? 1 - d.cut / d.total : 1;
  std::string by = d.found_by;
  std::replace(by.begin(), by.end(), ' ', '_');
  char time[32];
  std::snprintf(time, sizeof time, " time=%.6fs", d.seconds);
  std::lock_guard<std::mutex> lock(reports_mutex);
  std::string line = "#" + std::to_string(reports().size() + 1) + " " + c.name +
                     " ranks=" + std::to_string(size) + " nodes=" + std::to_string(d.nodes) +
                     " inside=" + percent(before);
  if (d.renumber)
    line += "->" + percent(after) + " renumbered by=" + by + time;
  else
    line += " kept: " + d.why_kept + time;
  reports().push_back(line);
}

// Nodes of up to this many ranks are placed inside (place::place_on_node) where their ranks'
// CPUs are known: exact up to 8, a local search beyond, which grows as the cube of the size.
constexpr int kPlacedNodeMaxRanks = 16;

// At the root: each node's ranks onto its slots by the node's hwloc distances (this machine's
// description standing for every node), where every slot of the node is bound and on one host.
void place_inside_nodes(const place::CommGraph& graph, const std::vector<int>& node_of_slot,
                        const std::vector<std::string>& host_of_slot,
                        const std::vector<std::string>& cpus_of_slot,
                        std::vector<int>& vertex_of_slot) {
  const place::Topology* topology = place::machine_topology();
  if (!topology) return;
  std::map<int, std::vector<int>> slots_of_node;
  for (size_t s = 0; s < node_of_slot.size(); ++s)
    slots_of_node[node_of_slot[s]].push_back(static_cast<int>(s));
  for (const auto& [node, slots] : slots_of_node) {
    if (slots.size() < 3 || slots.size() > static_cast<size_t>(kPlacedNodeMaxRanks)) continue;
    bool known = true;
    std::vector<std::string> cpus;
    std::vector<int> ranks;
    for (int s : slots) {
      const auto slot = static_cast<size_t>(s);
      known = known && !cpus_of_slot[slot].empty() &&
              host_of_slot[slot] == host_of_slot[static_cast<size_t>(slots.front())];
      cpus.push_back(cpus_of_slot[slot]);
      ranks.push_back(vertex_of_slot[slot]);
    }
    if (!known) continue;
    const std::vector<int> placed = place::place_on_node(graph, ranks, topology->distances(cpus));
    for (size_t i = 0; i < slots.size(); ++i)
      vertex_of_slot[static_cast<size_t>(slots[i])] = placed[i];
  }
}

// Gathers variable-length int vectors at `root` (every rank's, in rank order).
int gather_ints(const std::vector<int>& mine, MPI_Comm comm, int root, int rank, int size,
                std::vector<std::vector<int>>& all) {
  const int count = static_cast<int>(mine.size());
  std::vector<int> counts(rank == root ? static_cast<size_t>(size) : 0), starts(counts.size());
  int rc = PMPI_Gather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, root, comm);
  if (rc != MPI_SUCCESS) return rc;
  std::vector<int> flat;
  if (rank == root) {
    int64_t total = 0;
    for (size_t r = 0; r < counts.size(); ++r) {
      starts[r] = static_cast<int>(total);
      total += counts[r];
    }
    if (total > INT32_MAX) return MPI_ERR_COUNT;
    flat.resize(static_cast<size_t>(total));
  }
  rc = PMPI_Gatherv(mine.data(), count, MPI_INT, flat.data(), counts.data(), starts.data(), MPI_INT,
                    root, comm);
  if (rc != MPI_SUCCESS || rank != root) return rc;
  all.assign(static_cast<size_t>(size), {});
  for (size_t r = 0; r < all.size(); ++r)
    all[r].assign(flat.begin() + starts[r], flat.begin() + starts[r] + counts[r]);
  return MPI_SUCCESS;
}

std::vector<int> as_ints(const std::string& text) {
  return {text.begin(), text.end()};
}
std::string as_text(const std::vector<int>& ints) {
  return {ints.begin(), ints.end()};
}

// At the root: the mapping, or why the host's numbering stays.
Decision decide(const Constructor& c, int size, const std::vector<std::vector<int>>& local,
                const std::vector<int>& node_of_slot, const std::vector<int>& host_rank,
                const std::vector<std::string>& host_of_slot,
                const std::vector<std::string>& cpus_of_slot) {
  Decision d;
  std::vector<int> sizes;
  place::node_indices(node_of_slot, sizes);
  d.nodes = static_cast<int>(sizes.size());
  // The host's numbering: the rank each slot holds in the host's communicator; slots left out
  // of it (a grid smaller than the communicator) take the numbers left, in order.
  std::vector<int> baseline(static_cast<size_t>(size), -1);
  std::vector<char> taken(static_cast<size_t>(size), 0);
  for (size_t s = 0; s < baseline.size(); ++s)
    if (host_rank[s] >= 0 && host_rank[s] < size && !taken[static_cast<size_t>(host_rank[s])])
      baseline[s] = host_rank[s], taken[static_cast<size_t>(host_rank[s])] = 1;
  int next = 0;
  for (int& v : baseline) {
    if (v >= 0) continue;
    while (taken[static_cast<size_t>(next)]) ++next;
    v = next;
    taken[static_cast<size_t>(next)] = 1;
  }
  try {
    const place::CommGraph graph = c.graph(size, local);
    place::GraphMapping m = place::map_graph(graph, node_of_slot, setting().options, baseline);
    d.renumber = m.kept && m.vertex_of_slot != baseline;
    d.cut = m.cut;
    d.baseline_cut = m.baseline_cut;
    d.total = m.total;
    d.found_by = m.found_by;
    d.seconds = m.seconds;
    if (d.renumber) {
      place_inside_nodes(graph, node_of_slot, host_of_slot, cpus_of_slot, m.vertex_of_slot);
      d.vertex_of_slot = std::move(m.vertex_of_slot);
    } else if (d.nodes <= 1) {
      d.why_kept = "one node";
    } else if (m.total <= 0) {
      d.why_kept = "no traffic between ranks";
    } else if (setting().options.method == place::MapMethod::Identity) {
      d.why_kept = "LOOM_REORDER=identity";
    } else {
      d.why_kept = "no fewer bytes across nodes (found " +
                   percent(m.total > 0 ? 1 - m.found_cut / m.total : 1) + " by " + m.found_by + ")";
    }
  } catch (const std::invalid_argument& e) {
    d.why_kept = e.what();
  } catch (const std::exception& e) {
    d.why_kept = std::string("mapping failed: ") + e.what();
  }
  return d;
}

// Two broadcasts: the figures and lengths, then the text and the numbering.
int broadcast(Decision& d, MPI_Comm comm, int root, int size) {
  std::vector<int> text = as_ints(d.renumber ? d.found_by : d.why_kept);
  double head[7] = {d.renumber ? 1.0 : 0.0,
                    d.cut,
                    d.baseline_cut,
                    d.total,
                    d.seconds,
                    static_cast<double>(d.nodes),
                    static_cast<double>(text.size())};
  int rc = PMPI_Bcast(head, 7, MPI_DOUBLE, root, comm);
  if (rc != MPI_SUCCESS) return rc;
  d.renumber = head[0] != 0;
  d.cut = head[1], d.baseline_cut = head[2], d.total = head[3], d.seconds = head[4];
  d.nodes = static_cast<int>(head[5]);
  const size_t length = static_cast<size_t>(head[6]);
  std::vector<int> tail = text;
  tail.resize(length);
  if (d.renumber) tail.insert(tail.end(), d.vertex_of_slot.begin(), d.vertex_of_slot.end());
  tail.resize(length + (d.renumber ? static_cast<size_t>(size) : 0));
  rc = PMPI_Bcast(tail.data(), static_cast<int>(tail.size()), MPI_INT, root, comm);
  if (rc != MPI_SUCCESS) return rc;
  (d.renumber ? d.found_by : d.why_kept) =
      as_text({tail.begin(), tail.begin() + static_cast<std::ptrdiff_t>(length)});
  if (d.renumber)
    d.vertex_of_slot.assign(tail.begin() + static_cast<std::ptrdiff_t>(length), tail.end());
  return MPI_SUCCESS;
}

void free_internal(MPI_Comm* comm) {
  if (*comm == MPI_COMM_NULL) return;
  mpi::forget_communicator(*comm);
  mpi::forget_comm_shapes();
  PMPI_Comm_free(comm);
}

// `*out` holds the host's communicator (made from the user's arguments, which the host accepted);
// replaced by the renumbered one where Loom's mapping is kept. Returns an MPI error code.
int reorder(MPI_Comm comm, const Constructor& c, MPI_Comm* out) {
  int rank = 0, size = 1;
  PMPI_Comm_rank(comm, &rank);
  PMPI_Comm_size(comm, &size);
  if (size < 2) return MPI_SUCCESS;
  constexpr int root = 0;
  // Nodes learnt at MPI_Init cover MPI_COMM_WORLD; a communicator with other processes
  // (spawned, connected) is asked (collectively: every rank sees the same group).
  int rc = mpi::knows_nodes_of(comm) ? MPI_SUCCESS : mpi::learn_locality(comm);
  if (rc != MPI_SUCCESS) return rc;
  // What the root needs of every rank, in one gather: its node, its rank under the host, its
  // host name and bound CPUs, and the constructor's own part.
  int host_rank = -1;
  if (*out != MPI_COMM_NULL) PMPI_Comm_rank(*out, &host_rank);
  char name[MPI_MAX_PROCESSOR_NAME] = {};
  int name_length = 0;
  PMPI_Get_processor_name(name, &name_length);
  const place::Topology* topology = place::machine_topology();
  const std::string where = std::string(name, static_cast<size_t>(name_length)) + '\n' +
                            (topology ? topology->bound_cpus() : std::string());
  std::vector<int> mine{mpi::node_label(), host_rank, static_cast<int>(where.size())};
  mine.insert(mine.end(), where.begin(), where.end());
  mine.insert(mine.end(), c.local.begin(), c.local.end());
  std::vector<std::vector<int>> all, local;
  rc = gather_ints(mine, comm, root, rank, size, all);
  if (rc != MPI_SUCCESS) return rc;
  Decision d;
  if (rank == root) {
    std::vector<int> node_of_slot(static_cast<size_t>(size)), host_ranks(node_of_slot.size());
    std::vector<std::string> host_of_slot(node_of_slot.size()), cpus_of_slot(node_of_slot.size());
    local.resize(node_of_slot.size());
    for (size_t s = 0; s < node_of_slot.size(); ++s) {
      const std::vector<int>& given = all[s];
      node_of_slot[s] = given[0];
      host_ranks[s] = given[1];
      const auto end = given.begin() + 3 + given[2];
      const std::string text = as_text({given.begin() + 3, end});
      const size_t cut = text.find('\n');
      host_of_slot[s] = text.substr(0, cut);
      cpus_of_slot[s] = cut == std::string::npos ? std::string() : text.substr(cut + 1);
      local[s].assign(end, given.end());
    }
    d = decide(c, size, local, node_of_slot, host_ranks, host_of_slot, cpus_of_slot);
  }
  rc = broadcast(d, comm, root, size);
  if (rc != MPI_SUCCESS) return rc;
  record(c, size, d);
  if (!d.renumber) return MPI_SUCCESS;

  const int vertex = d.vertex_of_slot[static_cast<size_t>(rank)];
  std::vector<int> arguments = c.local;
  if (c.arguments_follow_rank) {
    // Slot s builds with the arguments of rank vertex_of_slot[s]: the root sends them.
    std::vector<int> flat, counts, starts;
    if (rank == root) {
      counts.resize(static_cast<size_t>(size));
      starts.resize(counts.size());
      for (size_t s = 0; s < counts.size(); ++s) {
        const auto& given = local[static_cast<size_t>(d.vertex_of_slot[s])];
        starts[s] = static_cast<int>(flat.size());
        counts[s] = static_cast<int>(given.size());
        flat.insert(flat.end(), given.begin(), given.end());
      }
    }
    int count = 0;
    rc = PMPI_Scatter(counts.data(), 1, MPI_INT, &count, 1, MPI_INT, root, comm);
    arguments.assign(static_cast<size_t>(count), 0);
    if (rc == MPI_SUCCESS)
      rc = PMPI_Scatterv(flat.data(), counts.data(), starts.data(), MPI_INT, arguments.data(),
                         count, MPI_INT, root, comm);
    if (rc != MPI_SUCCESS) return rc;
  }
  MPI_Comm numbered = MPI_COMM_NULL, made = MPI_COMM_NULL;
  rc = PMPI_Comm_split(comm, 0, vertex, &numbered);
  if (rc == MPI_SUCCESS) rc = c.build(numbered, arguments, &made);
  free_internal(&numbered);
  if (rc != MPI_SUCCESS) return rc;
  free_internal(out);
  *out = made;
  return MPI_SUCCESS;
}

// The distributed-graph arguments as ints: [degree, ranks..., weighted, weights...].
void append_list(std::vector<int>& to, int degree, const int ranks[], const int weights[]) {
  to.push_back(degree);
  to.insert(to.end(), ranks, ranks + degree);
  const bool weighted = weights != MPI_UNWEIGHTED;
  to.push_back(weighted ? 1 : 0);
  if (weighted && degree > 0) to.insert(to.end(), weights, weights + degree);
}

// Reads a list written by append_list at `at`, which it advances.
struct List {
  std::vector<int> ranks, weights;
  bool weighted = false;
  // The arguments as the host takes them: never a null array (Open MPI refuses one even where
  // the degree is 0).
  const int* ranks_argument() const {
    static const int none = 0;
    return ranks.empty() ? &none : ranks.data();
  }
  const int* weights_argument() const {
    if (!weighted) return MPI_UNWEIGHTED;
    return weights.empty() ? MPI_WEIGHTS_EMPTY : weights.data();
  }
};
List read_list(const std::vector<int>& from, size_t& at) {
  List l;
  auto next = [&]() {
    if (at >= from.size()) throw std::invalid_argument("malformed arguments");
    return from[at++];
  };
  const int degree = next();
  if (degree < 0) throw std::invalid_argument("negative degree");
  for (int k = 0; k < degree; ++k) l.ranks.push_back(next());
  l.weighted = next() != 0;
  if (l.weighted)
    for (int k = 0; k < degree; ++k) l.weights.push_back(next());
  return l;
}

void check_weight(int weight) {
  if (weight < 0) throw std::invalid_argument("negative edge weights");
}

}  // namespace

bool reorder_enabled() {
  return setting().on;
}

int cart_create_reordered(MPI_Comm comm, int ndims, const int dims[], const int periods[],
                          MPI_Comm* comm_cart) {
  int rc = mpi::host().Cart_create(comm, ndims, dims, periods, 1, comm_cart);
  if (rc != MPI_SUCCESS) return rc;
  const std::vector<int> shape(dims, dims + std::max(ndims, 0));
  const std::vector<int> wraps(periods, periods + std::max(ndims, 0));
  Constructor c;
  c.name = "MPI_Cart_create";
  // Every grid neighbour (MPI_Cart_shift's, by 1 along each dimension) weighs 1 per face it
  // shares: MPI_Cart_create gives no subdomain sizes. Row-major, the last dimension fastest.
  c.graph = [shape, wraps](int size, const std::vector<std::vector<int>>&) {
    int64_t cells = 1;
    for (int d : shape) cells *= d;
    std::vector<place::Edge> edges;
    std::vector<int> coords(shape.size());
    for (int64_t r = 0; r < cells; ++r) {
      int64_t rest = r;
      for (size_t d = shape.size(); d-- > 0;) {
        coords[d] = static_cast<int>(rest % shape[d]);
        rest /= shape[d];
      }
      for (size_t d = 0; d < shape.size(); ++d)
        for (int step : {-1, 1}) {
          int at = coords[d] + step;
          if (at < 0 || at >= shape[d]) {
            if (!wraps[d]) continue;
            at = (at + shape[d]) % shape[d];
          }
          int64_t neighbour = 0;
          for (size_t e = 0; e < shape.size(); ++e)
            neighbour = neighbour * shape[e] + (e == d ? at : coords[e]);
          edges.push_back({static_cast<int>(r), static_cast<int>(neighbour), 1});
        }
    }
    return place::CommGraph(size, edges);
  };
  c.build = [ndims, shape, wraps](MPI_Comm numbered, const std::vector<int>&, MPI_Comm* made) {
    return PMPI_Cart_create(numbered, ndims, shape.data(), wraps.data(), 0, made);
  };
  return reorder(comm, c, comm_cart);
}

int graph_create_reordered(MPI_Comm comm, int nnodes, const int index[], const int edges[],
                           MPI_Comm* comm_graph) {
  int rc = mpi::host().Graph_create(comm, nnodes, index, edges, 1, comm_graph);
  if (rc != MPI_SUCCESS) return rc;
  const std::vector<int> ends(index, index + std::max(nnodes, 0));
  const std::vector<int> targets(edges, edges + (nnodes > 0 ? index[nnodes - 1] : 0));
  Constructor c;
  c.name = "MPI_Graph_create";
  c.graph = [ends, targets](int size, const std::vector<std::vector<int>>&) {
    std::vector<place::Edge> list;
    for (size_t v = 0; v < ends.size(); ++v)
      for (int k = v ? ends[v - 1] : 0; k < ends[v]; ++k) {
        // Some hosts take an edge past the node count; Loom maps only a well-formed graph.
        const int to = targets[static_cast<size_t>(k)];
        if (to < 0 || to >= static_cast<int>(ends.size()))
          throw std::invalid_argument("an edge to a rank outside the graph");
        list.push_back({static_cast<int>(v), to, 1});
      }
    return place::CommGraph(size, list);
  };
  c.build = [nnodes, ends, targets](MPI_Comm numbered, const std::vector<int>&, MPI_Comm* made) {
    return PMPI_Graph_create(numbered, nnodes, ends.data(), targets.data(), 0, made);
  };
  return reorder(comm, c, comm_graph);
}

int dist_graph_create_adjacent_reordered(MPI_Comm comm, int indegree, const int sources[],
                                         const int sourceweights[], int outdegree,
                                         const int destinations[], const int destweights[],
                                         MPI_Info info, MPI_Comm* comm_dist_graph) {
  int rc =
      mpi::host().Dist_graph_create_adjacent(comm, indegree, sources, sourceweights, outdegree,
                                             destinations, destweights, info, 1, comm_dist_graph);
  if (rc != MPI_SUCCESS) return rc;
  Constructor c;
  c.name = "MPI_Dist_graph_create_adjacent";
  append_list(c.local, indegree, sources, sourceweights);
  append_list(c.local, outdegree, destinations, destweights);
  // Each edge is given twice, by its source and by its destination: the two sides must agree
  // (as multisets, weights included) for Loom to know the traffic.
  c.graph = [](int size, const std::vector<std::vector<int>>& all) {
    std::vector<std::tuple<int, int, int>> sent, received;
    std::vector<place::Edge> edges;
    for (size_t r = 0; r < all.size(); ++r) {
      size_t at = 0;
      const List in = read_list(all[r], at), out = read_list(all[r], at);
      const int me = static_cast<int>(r);
      for (size_t k = 0; k < in.ranks.size(); ++k) {
        const int w = in.weighted ? in.weights[k] : 1;
        check_weight(w);
        received.emplace_back(in.ranks[k], me, w);
      }
      for (size_t k = 0; k < out.ranks.size(); ++k) {
        const int w = out.weighted ? out.weights[k] : 1;
        check_weight(w);
        sent.emplace_back(me, out.ranks[k], w);
        edges.push_back({me, out.ranks[k], static_cast<double>(w)});
      }
    }
    std::sort(sent.begin(), sent.end());
    std::sort(received.begin(), received.end());
    if (sent != received) throw std::invalid_argument("edges inconsistent across ranks");
    return place::CommGraph(size, edges);
  };
  c.arguments_follow_rank = true;
  c.build = [info](MPI_Comm numbered, const std::vector<int>& arguments, MPI_Comm* made) {
    size_t at = 0;
    List in, out;
    try {
      in = read_list(arguments, at);
      out = read_list(arguments, at);
    } catch (const std::exception&) {
      return MPI_ERR_INTERN;
    }
    return PMPI_Dist_graph_create_adjacent(numbered, static_cast<int>(in.ranks.size()),
                                           in.ranks.data(), in.weights_argument(),
                                           static_cast<int>(out.ranks.size()), out.ranks.data(),
                                           out.weights_argument(), info, 0, made);
  };
  return reorder(comm, c, comm_dist_graph);
}

int dist_graph_create_reordered(MPI_Comm comm, int n, const int sources[], const int degrees[],
                                const int destinations[], const int weights[], MPI_Info info,
                                MPI_Comm* comm_dist_graph) {
  int rc = mpi::host().Dist_graph_create(comm, n, sources, degrees, destinations, weights, info, 1,
                                         comm_dist_graph);
  if (rc != MPI_SUCCESS) return rc;
  // [n, sources..., degrees..., then the destinations as a list with their weights]
  std::vector<int> local{n};
  local.insert(local.end(), sources, sources + std::max(n, 0));
  local.insert(local.end(), degrees, degrees + std::max(n, 0));
  int edges = 0;
  for (int i = 0; i < n; ++i) edges += degrees[i];
  append_list(local, edges, destinations, weights);
  Constructor c;
  c.name = "MPI_Dist_graph_create";
  c.local = local;
  c.graph = [](int size, const std::vector<std::vector<int>>& all) {
    std::vector<place::Edge> list;
    for (const std::vector<int>& given : all) {
      if (given.empty()) throw std::invalid_argument("malformed arguments");
      const size_t count = static_cast<size_t>(std::max(given[0], 0));
      size_t at = 1 + 2 * count;
      if (at > given.size()) throw std::invalid_argument("malformed arguments");
      const List targets = read_list(given, at);
      size_t k = 0;
      for (size_t i = 0; i < count; ++i)
        for (int j = 0; j < given[1 + count + i]; ++j, ++k) {
          if (k >= targets.ranks.size()) throw std::invalid_argument("malformed arguments");
          const int w = targets.weighted ? targets.weights[k] : 1;
          check_weight(w);
          list.push_back({given[1 + i], targets.ranks[k], static_cast<double>(w)});
        }
    }
    return place::CommGraph(size, list);
  };
  // The edges are the graph's wherever they are given: each rank passes its own again.
  c.build = [n, local, info](MPI_Comm numbered, const std::vector<int>&, MPI_Comm* made) {
    const size_t count = static_cast<size_t>(std::max(n, 0));
    size_t at = 1 + 2 * count;
    const List targets = read_list(local, at);
    return PMPI_Dist_graph_create(numbered, n, local.data() + 1, local.data() + 1 + count,
                                  targets.ranks_argument(), targets.weights_argument(), info, 0,
                                  made);
  };
  return reorder(comm, c, comm_dist_graph);
}

}  // namespace loom::ops
