#include "place/graph_map.hpp"

#include <algorithm>
#include <cstdint>
#include <ctime>
#include <limits>
#include <map>
#include <numeric>
#include <queue>
#include <random>
#include <stdexcept>
#include <tuple>
#include <unordered_map>

namespace loom::place {

std::optional<MapOptions> map_options_named(std::string_view name) {
  MapOptions options;
  if (name == "auto") return options;
  if (name == "random") {
    options.method = MapMethod::Random;
    return options;
  }
  if (name == "identity") {
    options.method = MapMethod::Identity;
    return options;
  }
  if (const auto p = partitioner_named(name)) {
    options.method = MapMethod::Partitioner;
    options.partitioner = *p;
    return options;
  }
  return std::nullopt;
}

std::string map_method_name(const MapOptions& options) {
  switch (options.method) {
    case MapMethod::Auto:
      return "auto";
    case MapMethod::Partitioner:
      return partitioner_name(options.partitioner);
    case MapMethod::Random:
      return "random";
    case MapMethod::Identity:
      return "identity";
  }
  return "?";
}

std::vector<int> node_indices(std::span<const int> node_of_slot, std::vector<int>& sizes) {
  std::map<int, int> index_of_label;
  std::vector<int> index(node_of_slot.size());
  sizes.clear();
  for (size_t s = 0; s < node_of_slot.size(); ++s) {
    const auto [it, fresh] =
        index_of_label.emplace(node_of_slot[s], static_cast<int>(index_of_label.size()));
    if (fresh) sizes.push_back(0);
    index[s] = it->second;
    ++sizes[static_cast<size_t>(it->second)];
  }
  return index;
}

namespace {

// Weight from `v` to each part it touches, its own included (zero when it has none there).
struct Connections {
  std::vector<std::pair<int, double>> to_part;  // (part, weight), in first-seen order
  double to(int part) const {
    for (const auto& [p, w] : to_part)
      if (p == part) return w;
    return 0;
  }
};

Connections connections(const CommGraph& graph, const std::vector<int>& part_of, int v) {
  Connections c;
  const auto neighbours = graph.neighbours(v);
  const auto weights = graph.weights(v);
  for (size_t i = 0; i < neighbours.size(); ++i) {
    const int p = part_of[static_cast<size_t>(neighbours[i])];
    auto it = std::find_if(c.to_part.begin(), c.to_part.end(),
                           [p](const auto& entry) { return entry.first == p; });
    if (it == c.to_part.end())
      c.to_part.emplace_back(p, weights[i]);
    else
      it->second += weights[i];
  }
  return c;
}

double weight_between(const CommGraph& graph, int u, int v) {
  const auto neighbours = graph.neighbours(u);
  const auto it = std::lower_bound(neighbours.begin(), neighbours.end(), v);
  if (it == neighbours.end() || *it != v) return 0;
  return graph.weights(u)[static_cast<size_t>(it - neighbours.begin())];
}

}  // namespace

void repair_sizes(const CommGraph& graph, std::span<const int> sizes, std::vector<int>& part_of) {
  const int n = graph.vertices();
  if (part_of.size() != static_cast<size_t>(n))
    throw std::invalid_argument("repair_sizes: one part per vertex expected");
  const int parts = static_cast<int>(sizes.size());
  std::vector<int> count(sizes.size(), 0);
  for (int& p : part_of) {
    if (p < 0 || p >= parts) p = 0;  // a partitioner's stray answer: repaired below
    ++count[static_cast<size_t>(p)];
  }
  auto over = [&](int p) { return count[static_cast<size_t>(p)] > sizes[static_cast<size_t>(p)]; };
  auto under = [&](int p) { return count[static_cast<size_t>(p)] < sizes[static_cast<size_t>(p)]; };
  // Best move of v out of its (overfull) part: to the underfull part it is most connected to,
  // or, touching none, to the first underfull part. The gain is the cut it saves (often < 0).
  auto best_move = [&](int v, int& target) {
    const Connections c = connections(graph, part_of, v);
    const double own = c.to(part_of[static_cast<size_t>(v)]);
    double best = -1;
    target = -1;
    for (const auto& [p, w] : c.to_part)
      if (under(p) && (target < 0 || w > best || (w == best && p < target))) best = w, target = p;
    if (target < 0) {
      for (int p = 0; p < parts && target < 0; ++p)
        if (under(p)) target = p, best = 0;
    }
    return best - own;
  };
  // Lazy greedy: the queue holds each candidate's gain when it was pushed; a popped candidate
  // whose gain has changed goes back with its new gain. Ties go to the lower vertex.
  using Entry = std::pair<double, int>;
  auto worse = [](const Entry& a, const Entry& b) {
    return a.first != b.first ? a.first < b.first : a.second > b.second;
  };
  std::priority_queue<Entry, std::vector<Entry>, decltype(worse)> queue(worse);
  int target = -1;
  for (int v = 0; v < n; ++v)
    if (over(part_of[static_cast<size_t>(v)])) queue.emplace(best_move(v, target), v);
  while (!queue.empty()) {
    const auto [gain, v] = queue.top();
    queue.pop();
    if (!over(part_of[static_cast<size_t>(v)])) continue;
    const double now = best_move(v, target);
    if (target < 0) break;  // nothing underfull: balanced
    if (now != gain) {
      queue.emplace(now, v);
      continue;
    }
    --count[static_cast<size_t>(part_of[static_cast<size_t>(v)])];
    part_of[static_cast<size_t>(v)] = target;
    ++count[static_cast<size_t>(target)];
  }
}

namespace {

// Kernighan-Lin on two parts: the sequence of swaps, each the best left (gains may go negative
// on the way out of a local optimum), whose best prefix is applied. Moving a vertex between the
// two parts changes no cut to a third part, so what it saves here is what the whole cut saves.
// Returns the cut saved.
struct PairRefiner {
  const CommGraph& graph;
  std::vector<int>& part_of;
  std::vector<int> position;  // of a vertex in the pair's arrays; -1 outside
  std::vector<int> members;
  std::vector<double> gain;  // cut saved by moving the vertex alone to the other part
  std::vector<char> side, locked, candidate;
  // A pass stops this many swaps past its best prefix: it would rarely climb out further.
  static constexpr size_t kStallSteps = 8;

  void add_candidate(std::vector<int> (&candidates)[2], int i) {
    if (candidate[static_cast<size_t>(i)]) return;
    candidate[static_cast<size_t>(i)] = 1;
    candidates[side[static_cast<size_t>(i)] != 0].push_back(i);
  }

  PairRefiner(const CommGraph& g, std::vector<int>& parts)
      : graph(g), part_of(parts), position(static_cast<size_t>(g.vertices()), -1) {}

  double refine(std::span<const int> in_a, std::span<const int> in_b, int a, int b, double noise) {
    members.assign(in_a.begin(), in_a.end());
    members.insert(members.end(), in_b.begin(), in_b.end());
    const size_t n = members.size();
    side.assign(n, 0);
    for (size_t i = in_a.size(); i < n; ++i) side[i] = 1;
    for (size_t i = 0; i < n; ++i) position[static_cast<size_t>(members[i])] = static_cast<int>(i);
    gain.assign(n, 0);
    for (size_t i = 0; i < n; ++i) {
      const auto neighbours = graph.neighbours(members[i]);
      const auto weights = graph.weights(members[i]);
      for (size_t k = 0; k < neighbours.size(); ++k) {
        const int j = position[static_cast<size_t>(neighbours[k])];
        if (j >= 0) gain[i] += side[static_cast<size_t>(j)] == side[i] ? -weights[k] : weights[k];
      }
    }
    locked.assign(n, 0);
    // Candidates: the vertices with a neighbour on the other side, and each side's best other
    // one; a vertex joins when a neighbour moves. Each side's candidates best gain first: a swap
    // of x and y saves gain[x] + gain[y] - 2 w(x, y) <= gain[x] + gain[y], which bounds the
    // search.
    std::vector<int> candidates[2];
    candidate.assign(n, 0);
    int best_inner[2] = {-1, -1};
    for (size_t i = 0; i < n; ++i) {
      bool boundary = false;
      for (int u : graph.neighbours(members[i])) {
        const int j = position[static_cast<size_t>(u)];
        boundary = boundary || (j >= 0 && side[static_cast<size_t>(j)] != side[i]);
      }
      int& inner = best_inner[side[i] != 0];
      if (boundary)
        add_candidate(candidates, static_cast<int>(i));
      else if (inner < 0 || gain[i] > gain[static_cast<size_t>(inner)])
        inner = static_cast<int>(i);
    }
    for (int inner : best_inner)
      if (inner >= 0) add_candidate(candidates, inner);
    std::vector<std::pair<int, int>> swaps;
    double total = 0, best_total = noise;
    size_t best_prefix = 0;
    const size_t steps = std::min(in_a.size(), in_b.size());
    auto by_gain = [&](int x, int y) {
      const double gx = gain[static_cast<size_t>(x)], gy = gain[static_cast<size_t>(y)];
      return gx != gy ? gx > gy : members[static_cast<size_t>(x)] < members[static_cast<size_t>(y)];
    };
    for (size_t step = 0; step < steps && swaps.size() < best_prefix + kStallSteps; ++step) {
      for (auto& list : candidates) {
        std::erase_if(list, [&](int x) { return locked[static_cast<size_t>(x)] != 0; });
        std::sort(list.begin(), list.end(), by_gain);
      }
      if (candidates[0].empty() || candidates[1].empty()) break;
      const double top_y = gain[static_cast<size_t>(candidates[1].front())];
      double best = -std::numeric_limits<double>::infinity();
      int best_x = -1, best_y = -1;
      for (int x : candidates[0]) {
        if (best_x >= 0 && gain[static_cast<size_t>(x)] + top_y <= best) break;
        for (int y : candidates[1]) {
          const double bound = gain[static_cast<size_t>(x)] + gain[static_cast<size_t>(y)];
          if (best_x >= 0 && bound <= best) break;
          const double g = bound - 2 * weight_between(graph, members[static_cast<size_t>(x)],
                                                      members[static_cast<size_t>(y)]);
          if (best_x < 0 || g > best) best = g, best_x = x, best_y = y;
        }
      }
      total += best;
      swaps.emplace_back(best_x, best_y);
      if (total > best_total) best_total = total, best_prefix = swaps.size();
      for (int moved : {best_x, best_y}) {
        locked[static_cast<size_t>(moved)] = 1;
        const auto neighbours = graph.neighbours(members[static_cast<size_t>(moved)]);
        const auto weights = graph.weights(members[static_cast<size_t>(moved)]);
        for (size_t k = 0; k < neighbours.size(); ++k) {
          const int j = position[static_cast<size_t>(neighbours[k])];
          if (j < 0 || j == best_x || j == best_y) continue;
          // `moved` leaves its side: j, on that side, loses an inside neighbour; else gains one.
          gain[static_cast<size_t>(j)] +=
              side[static_cast<size_t>(j)] == side[static_cast<size_t>(moved)] ? 2 * weights[k]
                                                                               : -2 * weights[k];
          if (!locked[static_cast<size_t>(j)]) add_candidate(candidates, j);
        }
      }
      side[static_cast<size_t>(best_x)] ^= 1;
      side[static_cast<size_t>(best_y)] ^= 1;
    }
    for (size_t k = 0; k < best_prefix; ++k) {
      part_of[static_cast<size_t>(members[static_cast<size_t>(swaps[k].first)])] = b;
      part_of[static_cast<size_t>(members[static_cast<size_t>(swaps[k].second)])] = a;
    }
    for (int v : members) position[static_cast<size_t>(v)] = -1;
    return best_prefix ? best_total : 0;
  }
};

}  // namespace

void refine_by_swaps(const CommGraph& graph, std::vector<int>& part_of) {
  const int n = graph.vertices();
  if (part_of.size() != static_cast<size_t>(n))
    throw std::invalid_argument("refine_by_swaps: one part per vertex expected");
  int parts = 0;
  for (int p : part_of) parts = std::max(parts, p + 1);
  // Later rounds add little and cost as much (docs/reorder.md, "Measurements").
  constexpr int kMaxRounds = 3;
  const double noise = 1e-12 * std::max(1.0, graph.total_weight());
  PairRefiner refiner(graph, part_of);
  std::vector<char> changed(static_cast<size_t>(parts), 1);
  for (int round = 0; round < kMaxRounds; ++round) {
    std::vector<std::vector<int>> members(static_cast<size_t>(parts));
    for (int v = 0; v < n; ++v)
      members[static_cast<size_t>(part_of[static_cast<size_t>(v)])].push_back(v);
    // Pairs of parts joined by an edge, at least one of them changed in the last round. Every
    // such pair is tried, not only those whose best single swap gains: passes that start with a
    // loss find much of what refinement saves on irregular graphs.
    std::vector<std::pair<int, int>> pairs;
    for (int v = 0; v < n; ++v) {
      const int a = part_of[static_cast<size_t>(v)];
      for (int u : graph.neighbours(v)) {
        const int b = part_of[static_cast<size_t>(u)];
        if (a < b && (changed[static_cast<size_t>(a)] || changed[static_cast<size_t>(b)]))
          pairs.emplace_back(a, b);
      }
    }
    std::sort(pairs.begin(), pairs.end());
    pairs.erase(std::unique(pairs.begin(), pairs.end()), pairs.end());
    std::vector<char> next(static_cast<size_t>(parts), 0);
    bool improved = false;
    for (const auto& [a, b] : pairs) {
      auto& in_a = members[static_cast<size_t>(a)];
      auto& in_b = members[static_cast<size_t>(b)];
      if (refiner.refine(in_a, in_b, a, b, noise) <= 0) continue;
      improved = true;
      next[static_cast<size_t>(a)] = next[static_cast<size_t>(b)] = 1;
      // The two parts' member lists after the swaps.
      std::vector<int> both(in_a.begin(), in_a.end());
      both.insert(both.end(), in_b.begin(), in_b.end());
      std::sort(both.begin(), both.end());
      in_a.clear();
      in_b.clear();
      for (int v : both) (part_of[static_cast<size_t>(v)] == a ? in_a : in_b).push_back(v);
    }
    if (!improved) break;
    changed.swap(next);
  }
}

std::vector<int> slots_from_parts(std::span<const int> part_of_vertex,
                                  std::span<const int> node_index_of_slot) {
  const size_t n = part_of_vertex.size();
  if (node_index_of_slot.size() != n)
    throw std::invalid_argument("slots_from_parts: one slot per vertex expected");
  int parts = 0;
  for (int p : node_index_of_slot) parts = std::max(parts, p + 1);
  std::vector<std::vector<int>> vertices_of(static_cast<size_t>(parts));
  for (size_t v = 0; v < n; ++v) {
    const int p = part_of_vertex[v];
    if (p < 0 || p >= parts) throw std::invalid_argument("slots_from_parts: part out of range");
    vertices_of[static_cast<size_t>(p)].push_back(static_cast<int>(v));
  }
  std::vector<size_t> next(static_cast<size_t>(parts), 0);
  std::vector<int> vertex_of_slot(n);
  for (size_t s = 0; s < n; ++s) {
    const auto k = static_cast<size_t>(node_index_of_slot[s]);
    if (next[k] >= vertices_of[k].size())
      throw std::invalid_argument("slots_from_parts: a part does not match its node's size");
    vertex_of_slot[s] = vertices_of[k][next[k]++];
  }
  return vertex_of_slot;
}

namespace {

// The mapping's CPU time: what it costs one core, whatever else the machine runs.
double thread_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

// Fisher-Yates with the generator reduced by %, so that every platform draws the same.
std::vector<int> random_permutation(int n, uint32_t seed) {
  std::vector<int> p(static_cast<size_t>(n));
  std::iota(p.begin(), p.end(), 0);
  std::mt19937_64 rng(seed);
  for (int i = n - 1; i > 0; --i)
    std::swap(p[static_cast<size_t>(i)],
              p[static_cast<size_t>(rng() % static_cast<uint64_t>(i + 1))]);
  return p;
}

// A partitioner's answer made exact.
std::vector<int> partitioner_parts(const CommGraph& graph, std::span<const int> sizes,
                                   Partitioner partitioner, uint32_t seed) {
  std::vector<int> part_of = partition_graph(graph, sizes, partitioner, seed);
  repair_sizes(graph, sizes, part_of);
  return part_of;
}

}  // namespace

// Loom's choice asks KaHIP too up to this many ranks; beyond, it is the slowest of the three by
// far (docs/reorder.md, "Partitioners").
constexpr int kKahipMaxRanks = 1024;

GraphMapping map_graph(const CommGraph& graph, std::span<const int> node_of_slot,
                       const MapOptions& options, std::span<const int> baseline) {
  const double start = thread_cpu_seconds();
  const int n = graph.vertices();
  if (node_of_slot.size() != static_cast<size_t>(n))
    throw std::invalid_argument("map_graph: one node per slot expected");
  std::vector<int> base(baseline.begin(), baseline.end());
  if (base.empty()) {
    base.resize(static_cast<size_t>(n));
    std::iota(base.begin(), base.end(), 0);
  }
  if (base.size() != static_cast<size_t>(n))
    throw std::invalid_argument("map_graph: one baseline rank per slot expected");
  std::vector<int> seen(static_cast<size_t>(n), 0);
  for (int v : base)
    if (v < 0 || v >= n || seen[static_cast<size_t>(v)]++)
      throw std::invalid_argument("map_graph: the baseline is not a permutation");

  std::vector<int> sizes;
  const std::vector<int> node_index = node_indices(node_of_slot, sizes);
  std::vector<int> baseline_parts(static_cast<size_t>(n));
  for (size_t s = 0; s < base.size(); ++s)
    baseline_parts[static_cast<size_t>(base[s])] = node_index[s];

  GraphMapping m;
  m.total = graph.total_weight();
  m.baseline_cut = cut_weight(graph, baseline_parts);
  m.vertex_of_slot = base;
  m.found_cut = m.baseline_cut;
  m.found_by = "baseline";
  std::vector<int> found;  // vertex_of_slot of the mapping found, when there is one
  switch (options.method) {
    case MapMethod::Identity:
      break;
    case MapMethod::Random: {
      found = random_permutation(n, options.seed);
      std::vector<int> parts(static_cast<size_t>(n));
      for (size_t s = 0; s < found.size(); ++s)
        parts[static_cast<size_t>(found[s])] = node_index[s];
      m.found_cut = cut_weight(graph, parts);
      m.found_by = "random";
      break;
    }
    case MapMethod::Partitioner:
    case MapMethod::Auto: {
      // One node, or no weight: nothing can move between nodes.
      if (sizes.size() <= 1 || m.baseline_cut <= 0) break;
      std::vector<int> parts;
      if (options.method == MapMethod::Partitioner) {
        parts = partitioner_parts(graph, sizes, options.partitioner, options.seed);
        m.found_by = partitioner_name(options.partitioner);
      } else {
        // METIS and Scotch, those built in, each better on some graphs and both fast, and
        // KaHIP up to kKahipMaxRanks (beyond, the slowest by far): the
        // smallest cut, refined. With none built in, the baseline refined (docs/reorder.md).
        parts = baseline_parts;
        double best_cut = -1;
        for (Partitioner p : kPartitioners) {
          if (!partitioner_available(p)) continue;
          if (p == Partitioner::Kahip && best_cut >= 0 && n > kKahipMaxRanks) break;
          std::vector<int> candidate = partitioner_parts(graph, sizes, p, options.seed);
          const double cut = cut_weight(graph, candidate);
          if (best_cut < 0 || cut < best_cut) {
            best_cut = cut;
            parts = std::move(candidate);
            m.found_by = partitioner_name(p);
          }
        }
        refine_by_swaps(graph, parts);
        m.found_by += " refined";
      }
      m.found_cut = cut_weight(graph, parts);
      found = slots_from_parts(parts, node_index);
      break;
    }
  }
  if (!found.empty() &&
      (options.method == MapMethod::Random || m.found_cut < m.baseline_cut - 1e-9 * m.total)) {
    m.vertex_of_slot = std::move(found);
    m.cut = m.found_cut;
    m.kept = true;
  } else {
    m.cut = m.baseline_cut;
  }
  m.seconds = thread_cpu_seconds() - start;
  return m;
}

std::vector<int> place_on_node(const CommGraph& graph, std::span<const int> ranks,
                               const SquareMatrix& distance) {
  const int n = static_cast<int>(ranks.size());
  if (distance.size() != n) throw std::invalid_argument("place_on_node: one distance row per slot");
  std::vector<int> in_order(ranks.begin(), ranks.end());
  bool uniform = true;
  for (int a = 0; a < n; ++a)
    for (int b = 0; b < n; ++b)
      uniform = uniform && (a == b || distance(a, b) == distance(0, n > 1 ? 1 : 0));
  if (n <= 2 || uniform) return in_order;  // every order costs the same
  std::unordered_map<int, int> index_of;
  for (int i = 0; i < n; ++i) index_of[ranks[static_cast<size_t>(i)]] = i;
  SquareMatrix w(n);
  for (int i = 0; i < n; ++i) {
    const auto neighbours = graph.neighbours(ranks[static_cast<size_t>(i)]);
    const auto weights = graph.weights(ranks[static_cast<size_t>(i)]);
    for (size_t k = 0; k < neighbours.size(); ++k)
      if (const auto it = index_of.find(neighbours[k]); it != index_of.end())
        w(i, it->second) = weights[k];
  }
  std::vector<int> identity(static_cast<size_t>(n));
  std::iota(identity.begin(), identity.end(), 0);
  const Placement best = place(w, distance);
  if (!(best.cost < placement_cost(w, distance, identity) * (1 - 1e-9))) return in_order;
  std::vector<int> placed(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i)
    placed[static_cast<size_t>(best.rank_of[static_cast<size_t>(i)])] =
        ranks[static_cast<size_t>(i)];
  return placed;
}

}  // namespace loom::place
