// loom-bench reorder: how much of a communication graph's traffic stays inside nodes under each
// numbering of the ranks, and how long each mapping takes (docs/reorder.md). No MPI: the
// mapping is what MPI's topology constructors run with reorder=1 under Loom (place/graph_map.hpp),
// here on graphs of up to 4096 ranks. Graphs: the 26-neighbour 3-D halo grid (faces, edges and
// corners weighted by the bytes they carry), a random sparse graph, and an irregular mesh-like
// graph (nearest neighbours of scattered points). Numberings: the given one (identity), a random
// one, each partitioner alone (its answer brought to exact node sizes), and Loom's choice; for
// the grid also the tiling of the grid into node-sized blocks, the optimum where one divides it.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "bench/report.hpp"
#include "bench/subcommands.hpp"
#include "place/graph_map.hpp"

namespace loom::bench {
namespace {

constexpr const char* kTool = "loom-bench reorder";

struct Options {
  std::vector<int> sides = {4, 8, 16};  // grid sides: P = side^3 for every graph
  std::vector<int> per_node = {4, 8, 16, 64};
  std::vector<std::string> graphs = {"grid", "random", "mesh"};
  std::string json;
  bool quick = false;
};

void print_help(FILE* out) {
  std::fprintf(
      out,
      "usage: loom-bench reorder [options]   (no MPI needed)\n"
      "  Share of a communication graph's traffic that stays inside nodes under each numbering\n"
      "  of the ranks, and the time each mapping takes on this core (docs/reorder.md).\n\n"
      "options:\n"
      "  --quick          a smoke run: 64 and 512 ranks on nodes of 8\n"
      "  --sides LIST     ranks = side^3 for every graph (default 4,8,16: 64, 512, 4096)\n"
      "  --per-node LIST  ranks per node (default 4,8,16,64)\n"
      "  --graphs LIST    grid (26-neighbour 3-D halo), random (sparse), mesh (irregular)\n"
      "                   (default all three)\n"
      "  --json FILE      also write the results as JSON\n");
}

// Bytes a rank of the halo grid sends to a face, edge and corner neighbour: 32^3 cells of one
// double each, a halo two cells wide.
constexpr double kCells = 32, kRadius = 2, kElement = 8;

std::vector<place::Edge> halo_grid(int side) {
  const double face = kCells * kCells * kRadius * kElement;
  const double edge = kCells * kRadius * kRadius * kElement;
  const double corner = kRadius * kRadius * kRadius * kElement;
  std::vector<place::Edge> edges;
  auto at = [side](int x, int y, int z) {
    return ((z + side) % side * side + (y + side) % side) * side + (x + side) % side;
  };
  for (int z = 0; z < side; ++z)
    for (int y = 0; y < side; ++y)
      for (int x = 0; x < side; ++x)
        for (int dz = -1; dz <= 1; ++dz)
          for (int dy = -1; dy <= 1; ++dy)
            for (int dx = -1; dx <= 1; ++dx) {
              const int k = std::abs(dx) + std::abs(dy) + std::abs(dz);
              if (k == 0) continue;
              edges.push_back({at(x, y, z), at(x + dx, y + dy, z + dz),
                               k == 1   ? face
                               : k == 2 ? edge
                                        : corner});
            }
  return edges;
}

// Each rank sends to 6 ranks drawn at random, 1 B to 32 KiB each (log-uniform).
std::vector<place::Edge> random_sparse(int n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<place::Edge> edges;
  for (int v = 0; v < n; ++v)
    for (int k = 0; k < 6; ++k)
      edges.push_back({v, static_cast<int>(rng() % static_cast<uint64_t>(n)),
                       std::exp2(static_cast<double>(rng() % 16))});
  return edges;
}

// Points scattered in a cube, numbered along x (as a mesh numbered by one coordinate), each
// sending to its 8 nearest neighbours bytes that fall with the distance.
std::vector<place::Edge> mesh_like(int n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::array<double, 3>> p(static_cast<size_t>(n));
  for (auto& q : p)
    for (double& c : q) c = static_cast<double>(rng() % 1000000) / 1e6;
  std::sort(p.begin(), p.end());
  constexpr int kNeighbours = 8;
  const double spacing = std::cbrt(1.0 / n);
  std::vector<place::Edge> edges;
  std::vector<std::pair<double, int>> d(static_cast<size_t>(n));
  for (int v = 0; v < n; ++v) {
    for (int u = 0; u < n; ++u) {
      double s = 0;
      for (int c = 0; c < 3; ++c) {
        const double x = p[static_cast<size_t>(v)][c] - p[static_cast<size_t>(u)][c];
        s += x * x;
      }
      d[static_cast<size_t>(u)] = {s, u};
    }
    std::partial_sort(d.begin(), d.begin() + kNeighbours + 1, d.end());
    for (int i = 1; i <= kNeighbours; ++i) {
      const double r = std::sqrt(d[static_cast<size_t>(i)].first) / spacing;
      edges.push_back({v, d[static_cast<size_t>(i)].second, std::round(4096 / (1 + r * r))});
    }
  }
  return edges;
}

// The grid cut into blocks of a x b x c ranks (a*b*c = per_node, each dividing the side), the
// blocks numbered as nodes; the best such shape, or none.
std::vector<int> best_tiling(const place::CommGraph& g, int side, int per_node) {
  std::vector<int> best;
  double best_cut = 0;
  for (int a = 1; a <= per_node; ++a)
    for (int b = 1; a * b <= per_node; ++b) {
      if (per_node % (a * b)) continue;
      const int c = per_node / (a * b);
      if (side % a || side % b || side % c) continue;
      std::vector<int> part(static_cast<size_t>(side) * side * side);
      const int bx = side / a, by = side / b;
      for (int z = 0; z < side; ++z)
        for (int y = 0; y < side; ++y)
          for (int x = 0; x < side; ++x)
            part[static_cast<size_t>((z * side + y) * side + x)] =
                ((z / c) * by + y / b) * bx + x / a;
      const double cut = place::cut_weight(g, part);
      if (best.empty() || cut < best_cut) best = part, best_cut = cut;
    }
  return best;
}

double cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

struct Cell {
  std::string name;
  double share = -1;    // inside nodes; -1: not run
  double seconds = -1;  // CPU seconds to map
};

struct Row {
  std::string graph;
  int ranks = 0, per_node = 0;
  std::vector<Cell> cells;
  double tiles = -1;  // the grid's node-sized tiling, where one exists
  const Cell* find(const std::string& name) const {
    for (const Cell& c : cells)
      if (c.name == name) return &c;
    return nullptr;
  }
};

std::vector<std::string> mapping_names() {
  std::vector<std::string> names{"identity", "random"};
  for (place::Partitioner p : place::kPartitioners)
    if (place::partitioner_available(p)) names.push_back(place::partitioner_name(p));
  names.push_back("loom");
  return names;
}

Row measure(const std::string& graph, int side, int per_node) {
  const int n = side * side * side;
  Row row{graph, n, per_node, {}, -1};
  const std::vector<place::Edge> edges = graph == "grid"     ? halo_grid(side)
                                         : graph == "random" ? random_sparse(n, 62)
                                                             : mesh_like(n, 62);
  const place::CommGraph g(n, edges);
  std::vector<int> node(static_cast<size_t>(n));
  for (int s = 0; s < n; ++s) node[static_cast<size_t>(s)] = s / per_node;
  for (const std::string& name : mapping_names()) {
    place::MapOptions options = *place::map_options_named(name == "loom" ? "auto" : name);
    const double start = cpu_seconds();
    const place::GraphMapping m = place::map_graph(g, node, options);
    const double seconds = cpu_seconds() - start;
    // What the mapping found, kept or not: the partitioners alone are shown as they are.
    const double share = m.total > 0 ? 1 - m.found_cut / m.total : 1;
    row.cells.push_back({name, name == "loom" ? m.inside_share() : share, seconds});
  }
  if (graph == "grid") {
    const std::vector<int> tiles = best_tiling(g, side, per_node);
    if (!tiles.empty()) row.tiles = 1 - place::cut_weight(g, tiles) / g.total_weight();
  }
  return row;
}

std::string share_text(double share) {
  return share < 0 ? std::string("-") : format("%.1f%%", 100 * share);
}

}  // namespace

int run_reorder(int argc, char** argv) {
  Options opt;
  bool sides_given = false, per_node_given = false;
  auto ints = [](const char* text, std::vector<int>* out) {
    out->clear();
    for (const std::string& item : split_commas(text)) {
      int v = 0;
      if (!parse_positive(item.c_str(), &v)) return false;
      out->push_back(v);
    }
    return !out->empty();
  };
  const int rc = parse_subcommand_options(
      argc, argv, kTool, nullptr, print_help, {"--sides", "--per-node", "--graphs", "--json"},
      [&](const std::string& arg, const char* value) {
        if (arg == "--quick") {
          opt.quick = true;
        } else if (arg == "--sides") {
          if (!ints(value, &opt.sides)) return bad_option_value(kTool, "--sides"), OptionParse::Bad;
          sides_given = true;
        } else if (arg == "--per-node") {
          if (!ints(value, &opt.per_node))
            return bad_option_value(kTool, "--per-node"), OptionParse::Bad;
          per_node_given = true;
        } else if (arg == "--graphs") {
          opt.graphs = split_commas(value);
          for (const std::string& g : opt.graphs)
            if (g != "grid" && g != "random" && g != "mesh")
              return bad_option_value(kTool, "--graphs"), OptionParse::Bad;
        } else if (arg == "--json") {
          opt.json = value;
        } else {
          return OptionParse::NotMine;
        }
        return OptionParse::Taken;
      });
  if (rc >= 0) return rc;
  if (opt.quick) {
    if (!sides_given) opt.sides = {4, 8};
    if (!per_node_given) opt.per_node = {8};
  }
  double load[1] = {0};
  const bool have_load = getloadavg(load, 1) == 1;
  std::printf(
      "loom-bench reorder: share of each graph's bytes that stays inside nodes, per numbering of "
      "the ranks;\n  times are CPU seconds of one core%s\n",
      have_load ? format(" (load average %.1f while measured)", load[0]).c_str() : "");
  std::string missing;
  for (place::Partitioner p : place::kPartitioners)
    if (!place::partitioner_available(p)) missing += std::string(" ") + place::partitioner_name(p);
  if (!missing.empty()) std::printf("  not built in:%s\n", missing.c_str());
  std::printf(
      "  loom: Loom's choice as MPI's constructors use it (never below identity); a partitioner's "
      "column:\n  its own answer brought to exact node sizes; tiles: the grid cut into "
      "node-sized blocks\n\n");

  const std::vector<std::string> names = mapping_names();
  std::vector<Row> rows;
  std::vector<std::string> header{"graph", "ranks", "per node"};
  for (const std::string& name : names) header.push_back(name);
  header.push_back("tiles");
  for (const std::string& name : names)
    if (name != "identity") header.push_back(name + " s");
  Table table(header);
  for (const std::string& graph : opt.graphs)
    for (int side : opt.sides)
      for (int per_node : opt.per_node) {
        const int n = side * side * side;
        if (per_node >= n || n % per_node) continue;  // one node, or uneven nodes: skipped
        rows.push_back(measure(graph, side, per_node));
        const Row& r = rows.back();
        std::vector<std::string> line{r.graph, std::to_string(r.ranks), std::to_string(r.per_node)};
        for (const Cell& c : r.cells) line.push_back(share_text(c.share));
        line.push_back(share_text(r.tiles));
        for (const Cell& c : r.cells)
          if (c.name != "identity") line.push_back(format("%.3f", c.seconds));
        table.add_row(line);
      }
  table.print(stdout);

  // In words: Loom's choice against identity, the best partitioner alone, the tiles; its time.
  double worst_vs_best = 1e9, slowest = 0, worst_tiles = 1e9;
  int below_identity = 0, slowest_ranks = 0;
  std::string worst_case, tiles_case;
  for (const Row& r : rows) {
    const double loom = r.find("loom")->share, identity = r.find("identity")->share;
    if (loom < identity - 1e-12) ++below_identity;
    double best = -1;
    for (place::Partitioner p : place::kPartitioners)
      if (const Cell* c = r.find(place::partitioner_name(p))) best = std::max(best, c->share);
    if (best >= 0 && loom - best < worst_vs_best) {
      worst_vs_best = loom - best;
      worst_case = format("%s, %d ranks, %d per node", r.graph.c_str(), r.ranks, r.per_node);
    }
    if (r.tiles > 0 && loom / r.tiles < worst_tiles) {
      worst_tiles = loom / r.tiles;
      tiles_case = format("%d ranks, %d per node: %s vs %s, %.2fx identity", r.ranks, r.per_node,
                          share_text(loom).c_str(), share_text(r.tiles).c_str(),
                          identity > 0 ? loom / identity : 0.0);
    }
    if (r.find("loom")->seconds > slowest)
      slowest = r.find("loom")->seconds, slowest_ranks = r.ranks;
  }
  std::printf("\n");
  if (!rows.empty()) {
    std::printf(
        "Loom's choice below identity: %d of %zu cases (it keeps the given numbering "
        "unless fewer bytes cross nodes)\n",
        below_identity, rows.size());
    if (!worst_case.empty())
      std::printf("Loom's choice against the best partitioner alone: %+.2f points at worst (%s)\n",
                  100 * worst_vs_best, worst_case.c_str());
    if (!tiles_case.empty())
      std::printf(
          "3-D grid, Loom's choice against the node-sized tiles: %.1f%% of their share at "
          "worst (%s)\n",
          100 * worst_tiles, tiles_case.c_str());
    std::printf("slowest mapping by Loom's choice: %.3f s CPU (%d ranks)\n", slowest,
                slowest_ranks);
  }

  if (!opt.json.empty()) {
    JsonWriter j;
    j.begin_object();
    j.field("tool", kTool);
    if (have_load) j.field("load_average", load[0]);
    j.objects("rows", rows, [&](const Row& r) {
      j.field("graph", r.graph);
      j.field("ranks", r.ranks);
      j.field("per_node", r.per_node);
      if (r.tiles >= 0) j.field("tiles_share", r.tiles);
      j.objects("mappings", r.cells, [&](const Cell& c) {
        j.field("name", c.name);
        j.field("inside_share", c.share);
        j.field("cpu_seconds", c.seconds);
      });
    });
    j.end_object();
    if (!j.write_file(opt.json)) return 1;
  }
  return 0;
}

}  // namespace loom::bench
