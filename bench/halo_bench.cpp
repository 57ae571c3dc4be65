// loom-bench halo: a 3-D 26-neighbour halo exchange with subarray datatypes over a periodic
// Cartesian process grid, the host MPI (PMPI_*) against Loom (MPI_*) in one run.
//
// Each rank owns n^3 cells of `fields` doubles with a ghost shell `radius` cells wide; the 26
// ghost regions (6 faces, 12 edges, 8 corners) and the 26 matching interior regions are
// MPI_Type_create_subarray types. Fields are stored as separate arrays by default
// ([field][z][y][x], the usual layout of finite-difference codes; --layout aos interleaves them
// as [z][y][x][field]). Two variants: Irecv/Isend/Waitall, and MPI_Neighbor_alltoallw on a
// distributed-graph communicator listing the 26 neighbours (on small process grids several
// neighbours are the same rank, or the rank itself). Every case is verified on both paths before
// and after timing: interior cells hold a function of their global coordinates and field, and
// after an exchange every ghost cell must hold that function of its periodic image.
//
// The "library" variant times, in one rotation on the same problem and ranks, the host's own
// (PMPI_*, so no Loom in the way) hand-written subarray Isend/Irecv and
// MPI_Neighbor_alltoallw, Loom's halo library (libloom_halo, include/loom/halo.h) with all its
// transports and restricted to MPI messages, and the floor: each rank copying the same ghost
// bytes onto itself as if it were the whole periodic domain (no communication at all).
#include <mpi.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "bench/p2p_common.hpp"
#include "bench/report.hpp"
#include "bench/subcommands.hpp"
#include "loom/halo.h"
#include "loom/loom.h"
#include "model/trial.hpp"
#include "ops/method.hpp"
#include "pack/box_copy.hpp"

namespace loom::bench {

namespace {

constexpr const char* kTool = "loom-bench halo";
constexpr int kDirections = 26;
constexpr double kSampleSeconds = 2e-3;  // batch exchanges so a sample >> barrier skew
constexpr double kGhostSentinel = -1.0;  // cell values are >= 1

struct Options : SamplingOptions {
  Options() : SamplingOptions(100, 7, 0.5) {}
  std::vector<int64_t> ns = {32, 64};
  int radius = 2;
  int fields = 4;
  bool interleaved = false;
  std::vector<std::string> variants = {"isend", "alltoallw", "library"};
};

void print_help(FILE* out) {
  std::fprintf(
      out,
      "usage: mpiexec -n P loom-bench halo [options]\n"
      "  3-D 26-neighbour halo exchange with subarray datatypes on a periodic Cartesian\n"
      "  grid of P ranks (any P): host MPI (PMPI_*) vs Loom (MPI_*), alternating in one\n"
      "  run (docs/bench-p2p.md).\n\n"
      "options:\n"
      "  --quick            CI smoke test: n=16, short time bounds (seconds)\n"
      "  --n LIST           local interior cells per dimension, e.g. 32,64,96 (default 32,64)\n"
      "  --radius R         ghost width in cells (default 2)\n"
      "  --fields F         doubles per cell (default 4)\n"
      "  --layout L         soa: one array per field, [field][z][y][x] (default)\n"
      "                     aos: fields interleaved per cell, [z][y][x][field]\n"
      "  --variants LIST    isend, alltoallw: host vs Loom's interposer; library: host\n"
      "                     isend and alltoallw vs Loom's halo library (all transports, MPI\n"
      "                     only) vs the one-process copy floor, always soa (default\n"
      "                     all three)\n"
      "  --reps N           at most N timed samples per path and case (default 100; at\n"
      "                     least min(7,N))\n"
      "  --time SECONDS     time bound per case, both paths together (default 0.5)\n"
      "  --json FILE        also write the results as JSON (tools/plot_bench.py plots it)\n"
      "  --help             this text\n");
}

// --n: a list of whole numbers in [1, 1024].
bool parse_ns(const char* text, std::vector<int64_t>* ns) {
  ns->clear();
  for (const auto& item : split_commas(text)) {
    int n = 0;
    if (!parse_positive(item.c_str(), &n) || n > 1024) return false;
    ns->push_back(n);
  }
  return !ns->empty();
}

// Takes one of halo's own options; `v` is its value, null when missing (already said).
OptionParse parse_halo_option(const std::string& arg, const char* v, Options* opt, bool* n_given) {
  auto bad = [](const char* name) {
    bad_option_value(kTool, name);
    return OptionParse::Bad;
  };
  if (arg == "--n") {
    if (!v) return OptionParse::Bad;
    if (!parse_ns(v, &opt->ns)) return bad("--n");
    *n_given = true;
  } else if (arg == "--radius") {
    if (!v || !parse_positive(v, &opt->radius)) return bad("--radius");
  } else if (arg == "--fields") {
    if (!v || !parse_positive(v, &opt->fields) || opt->fields > 64) return bad("--fields");
  } else if (arg == "--layout") {
    if (!v) return OptionParse::Bad;
    if (std::strcmp(v, "soa") && std::strcmp(v, "aos")) return bad("--layout (soa or aos)");
    opt->interleaved = !std::strcmp(v, "aos");
  } else {  // --variants
    if (!v) return OptionParse::Bad;
    opt->variants = split_commas(v);
    for (const auto& name : opt->variants)
      if (name != "isend" && name != "alltoallw" && name != "library")
        return bad("--variants (isend, alltoallw, library)");
    if (opt->variants.empty()) return bad("--variants");
  }
  return OptionParse::Taken;
}

// Returns -1 to continue, or an exit code.
int parse_options(int argc, char** argv, Options* opt) {
  bool n_given = false;
  const int parsed = parse_subcommand_options(
      argc, argv, kTool, opt, print_help, {"--n", "--radius", "--fields", "--layout", "--variants"},
      [&](const std::string& arg, const char* v) {
        return v ? parse_halo_option(arg, v, opt, &n_given) : OptionParse::NotMine;
      });
  if (parsed >= 0) return parsed;
  if (opt->quick && !n_given) opt->ns = {16};
  opt->finish(0.05);
  for (int64_t n : opt->ns)
    if (n < opt->radius) {
      std::fprintf(stderr, "%s: --n %lld is smaller than --radius %d\n", kTool, (long long)n,
                   opt->radius);
      return 2;
    }
  return -1;
}

// ---------------------------------------------------------------------------------------------
// Geometry. Axis 0 is z (slowest in memory), matching the Cartesian communicator's dimension 0.

using Direction = std::array<int, 3>;  // each component -1, 0 or +1

// The 26 neighbour directions in lexicographic order; direction 25 - i is the opposite of i.
std::vector<Direction> directions() {
  std::vector<Direction> dirs;
  for (int dz = -1; dz <= 1; ++dz)
    for (int dy = -1; dy <= 1; ++dy)
      for (int dx = -1; dx <= 1; ++dx)
        if (dz || dy || dx) dirs.push_back({dz, dy, dx});
  return dirs;
}
int opposite(int direction) {
  return kDirections - 1 - direction;
}

struct Grid {
  MPI_Comm cart = MPI_COMM_NULL;
  int dims[3] = {0, 0, 0};
  int coords[3] = {0, 0, 0};
  int neighbour[kDirections] = {};  // rank at direction i (may repeat, may be this rank)
};

Grid make_grid(int ranks) {
  Grid g;
  MPI_Dims_create(ranks, 3, g.dims);
  const int periods[3] = {1, 1, 1};
  MPI_Cart_create(MPI_COMM_WORLD, 3, g.dims, periods, 0, &g.cart);
  int rank = 0;
  MPI_Comm_rank(g.cart, &rank);
  MPI_Cart_coords(g.cart, rank, 3, g.coords);
  const auto dirs = directions();
  for (int i = 0; i < kDirections; ++i) {
    int c[3];
    for (int a = 0; a < 3; ++a) c[a] = (g.coords[a] + dirs[i][a] + g.dims[a]) % g.dims[a];
    MPI_Cart_rank(g.cart, c, &g.neighbour[i]);
  }
  return g;
}

struct Domain {
  int n, r, fields;
  bool interleaved;
  int ext;  // n + 2r cells per axis, ghosts included
  int64_t values;
  Buffer storage;
  double* data() { return reinterpret_cast<double*>(storage.get()); }
  int64_t index(int f, int z, int y, int x) const {
    const int64_t cell = (static_cast<int64_t>(z) * ext + y) * ext + x;
    return interleaved ? cell * fields + f : static_cast<int64_t>(f) * ext * ext * ext + cell;
  }
};

// The 26 interior regions sent and the 26 ghost regions received, as subarrays of the domain.
struct HaloTypes {
  MPI_Datatype send[kDirections];
  MPI_Datatype recv[kDirections];
  int64_t bytes_per_exchange = 0;  // sent by one rank
  void free() {
    for (int i = 0; i < kDirections; ++i) {
      MPI_Type_free(&send[i]);
      MPI_Type_free(&recv[i]);
    }
  }
};

MPI_Datatype region_type(const Domain& d, const int start[3], const int size[3]) {
  int sizes[4], subsizes[4], starts[4];
  const int field_axis = d.interleaved ? 3 : 0, first_space = d.interleaved ? 0 : 1;
  sizes[field_axis] = subsizes[field_axis] = d.fields;
  starts[field_axis] = 0;
  for (int a = 0; a < 3; ++a) {
    sizes[first_space + a] = d.ext;
    subsizes[first_space + a] = size[a];
    starts[first_space + a] = start[a];
  }
  MPI_Datatype t;
  MPI_Type_create_subarray(4, sizes, subsizes, starts, MPI_ORDER_C, MPI_DOUBLE, &t);
  MPI_Type_commit(&t);
  return t;
}

HaloTypes make_halo_types(const Domain& d) {
  HaloTypes h;
  const auto dirs = directions();
  for (int i = 0; i < kDirections; ++i) {
    int send_start[3], recv_start[3], size[3];
    for (int a = 0; a < 3; ++a) {
      const int c = dirs[i][a];
      size[a] = c == 0 ? d.n : d.r;
      send_start[a] = c > 0 ? d.n : d.r;                     // the interior cells next to that side
      recv_start[a] = c < 0 ? 0 : c == 0 ? d.r : d.n + d.r;  // the ghost cells on that side
    }
    h.send[i] = region_type(d, send_start, size);
    h.recv[i] = region_type(d, recv_start, size);
    int bytes = 0;
    MPI_Type_size(h.send[i], &bytes);
    h.bytes_per_exchange += bytes;
  }
  return h;
}

// 1-based so that the ghost sentinel (-1) can never be a valid value; exact in a double.
double cell_value(const Grid& g, const Domain& d, int f, const int local[3]) {
  int64_t v = f;
  for (int a = 0; a < 3; ++a) {
    const int64_t global_n = static_cast<int64_t>(g.dims[a]) * d.n;
    const int64_t global =
        (g.coords[a] * static_cast<int64_t>(d.n) + local[a] - d.r + global_n) % global_n;
    v = v * global_n + global;
  }
  return static_cast<double>(v + 1);
}

bool is_interior(const Domain& d, const int c[3]) {
  for (int a = 0; a < 3; ++a)
    if (c[a] < d.r || c[a] >= d.r + d.n) return false;
  return true;
}

// Interior cells get their value; ghosts get the sentinel.
void reset_domain(const Grid& g, Domain& d) {
  double* u = d.data();
  int c[3];
  for (int f = 0; f < d.fields; ++f)
    for (c[0] = 0; c[0] < d.ext; ++c[0])
      for (c[1] = 0; c[1] < d.ext; ++c[1])
        for (c[2] = 0; c[2] < d.ext; ++c[2])
          u[d.index(f, c[0], c[1], c[2])] =
              is_interior(d, c) ? cell_value(g, d, f, c) : kGhostSentinel;
}

// Every cell, ghosts included, must hold the value of its (periodic) global position.
std::string check_domain(const Grid& g, Domain& d) {
  const double* u = d.data();
  int64_t wrong = 0;
  std::string first;
  int c[3];
  for (int f = 0; f < d.fields; ++f)
    for (c[0] = 0; c[0] < d.ext; ++c[0])
      for (c[1] = 0; c[1] < d.ext; ++c[1])
        for (c[2] = 0; c[2] < d.ext; ++c[2]) {
          const double want = cell_value(g, d, f, c), got = u[d.index(f, c[0], c[1], c[2])];
          if (got == want) continue;
          if (!wrong++)
            first = format("field %d cell (z,y,x)=(%d,%d,%d) %s: got %.17g, want %.17g", f, c[0],
                           c[1], c[2], is_interior(d, c) ? "(interior)" : "(ghost)", got, want);
        }
  return wrong ? format("%lld wrong values, first %s", (long long)wrong, first.c_str()) : "";
}

// ---------------------------------------------------------------------------------------------
// The two paths and the two variants.

struct Path {
  const char* name;
  decltype(&MPI_Irecv) irecv;
  decltype(&MPI_Isend) isend;
  decltype(&MPI_Waitall) waitall;
  decltype(&MPI_Neighbor_alltoallw) neighbor_alltoallw;
  int tag_base;  // distinct per path, so messages of one path can never match the other's
};

const Path& host_path() {
  static const Path p{"host", &PMPI_Irecv, &PMPI_Isend, &PMPI_Waitall, &PMPI_Neighbor_alltoallw, 0};
  return p;
}
const Path& loom_path() {
  static const Path p{"loom", &MPI_Irecv, &MPI_Isend, &MPI_Waitall, &MPI_Neighbor_alltoallw, 100};
  return p;
}

enum class Variant { Isend, Alltoallw };

struct Exchange {
  Variant variant = Variant::Isend;
  const Grid* grid = nullptr;
  Domain* domain = nullptr;
  const HaloTypes* types = nullptr;
  // Neighbour collective: a distributed graph whose i-th destination is the neighbour at
  // direction i and whose i-th source the one at the opposite direction, so that with repeated
  // neighbours the k-th message between two ranks pairs the same directions on both sides.
  MPI_Comm graph = MPI_COMM_NULL;
  std::vector<int> counts;
  std::vector<MPI_Aint> displacements;
  std::vector<MPI_Datatype> recv_types;  // recv_types[i]: ghost region opposite direction i

  void run(const Path& p) {
    double* u = domain->data();
    if (variant == Variant::Isend) {
      MPI_Request requests[2 * kDirections];
      for (int i = 0; i < kDirections; ++i)  // the neighbour at i sent toward us: tag opposite(i)
        p.irecv(u, 1, types->recv[i], grid->neighbour[i], p.tag_base + opposite(i), grid->cart,
                &requests[i]);
      for (int i = 0; i < kDirections; ++i)
        p.isend(u, 1, types->send[i], grid->neighbour[i], p.tag_base + i, grid->cart,
                &requests[kDirections + i]);
      p.waitall(2 * kDirections, requests, MPI_STATUSES_IGNORE);
    } else {
      // One array is both source and destination, as halo codes do: the regions are disjoint.
      p.neighbor_alltoallw(u, counts.data(), displacements.data(), types->send, u, counts.data(),
                           displacements.data(), recv_types.data(), graph);
    }
  }
};

Exchange make_exchange(Variant variant, const Grid& g, Domain& d, const HaloTypes& h) {
  Exchange x;
  x.variant = variant;
  x.grid = &g;
  x.domain = &d;
  x.types = &h;
  if (variant != Variant::Alltoallw) return x;
  int sources[kDirections], destinations[kDirections];
  x.recv_types.resize(kDirections);
  for (int i = 0; i < kDirections; ++i) {
    destinations[i] = g.neighbour[i];
    sources[i] = g.neighbour[opposite(i)];
    x.recv_types[i] = h.recv[opposite(i)];
  }
  MPI_Dist_graph_create_adjacent(g.cart, kDirections, sources, MPI_UNWEIGHTED, kDirections,
                                 destinations, MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &x.graph);
  x.counts.assign(kDirections, 1);
  x.displacements.assign(kDirections, 0);
  return x;
}

// Resets the domain, runs one exchange on `p` and checks every cell on every rank. Returns "" on
// success, else (on rank 0) the failing ranks' descriptions.
std::string verify(const Path& p, Exchange& x, int rank, int ranks) {
  reset_domain(*x.grid, *x.domain);
  x.run(p);
  const std::string local = check_domain(*x.grid, *x.domain);
  return p2p::gather_rank_messages(
      local.empty() ? "" : format("rank %d, %s path: %s", rank, p.name, local.c_str()), rank,
      ranks);
}

// ---------------------------------------------------------------------------------------------
// One case.

struct CaseResult : p2p::PathTimes {  // seconds per exchange, slowest rank
  std::string variant;
  int n = 0;
  int64_t bytes_per_exchange = 0;
  int64_t domain_bytes = 0;
  std::string route;  // which engine served Loom's calls on rank 0
  int exchanges_per_sample = 0;
  std::string verify_error;
  bool verified() const { return verify_error.empty(); }
};

CaseResult run_case(Variant variant, int n, const Grid& g, const Options& opt, int rank,
                    int ranks) {
  CaseResult r;
  r.variant = variant == Variant::Isend ? "isend" : "alltoallw";
  r.n = n;
  Domain d{n, opt.radius, opt.fields, opt.interleaved, n + 2 * opt.radius, 0, nullptr};
  d.values = static_cast<int64_t>(d.ext) * d.ext * d.ext * d.fields;
  d.storage = allocate(d.values * static_cast<int64_t>(sizeof(double)), kTool);
  r.domain_bytes = d.values * static_cast<int64_t>(sizeof(double));
  HaloTypes h = make_halo_types(d);
  r.bytes_per_exchange = h.bytes_per_exchange;
  Exchange x = make_exchange(variant, g, d, h);
  const Path& host = host_path();
  const Path& loom = loom_path();

  std::string errors = verify(host, x, rank, ranks);
  std::string loom_error = verify(loom, x, rank, ranks);
  // Loom's first exchanges of each kind of message try both methods (docs/model.md, "Online
  // trials"): let them pass before anything is timed, then verify again and read the route.
  if (variant == Variant::Isend)
    for (int i = 0; i < loom::model::MethodTrial::kSettledBy; ++i) x.run(loom);
  const auto before = p2p::RouteCounters::now();
  const std::string settled_error = verify(loom, x, rank, ranks);
  if (loom_error.empty()) loom_error = settled_error;
  const auto used = p2p::RouteCounters::now().since(before);
  r.route = variant == Variant::Isend ? p2p::route_of(used.p2p_loom, used.p2p_host)
                                      : p2p::route_of(used.coll_loom, used.coll_host);
  if (!loom_error.empty()) append_error(&errors, loom_error);

  // Calibration on rank 0 (one exchange per path after the verification warm-up), broadcast.
  const Path* paths[2] = {&host, &loom};
  double once[2] = {0, 0};
  for (int k = 0; k < 2; ++k) {
    PMPI_Barrier(MPI_COMM_WORLD);
    const double t0 = now_seconds();
    x.run(*paths[k]);
    once[k] = std::max(now_seconds() - t0, 1e-9);
  }
  int plan[2] = {0, 0};  // exchanges per sample, samples per path
  if (rank == 0) {
    plan[0] = static_cast<int>(std::clamp(kSampleSeconds / std::max(once[0], once[1]), 1.0, 1e4));
    plan[1] = static_cast<int>(std::clamp(opt.seconds_per_case / (plan[0] * (once[0] + once[1])),
                                          static_cast<double>(opt.min_reps),
                                          static_cast<double>(opt.max_reps)));
  }
  PMPI_Bcast(plan, 2, MPI_INT, 0, MPI_COMM_WORLD);
  r.exchanges_per_sample = plan[0];

  std::vector<double> samples[2];
  for (int rep = 0; rep < plan[1]; ++rep) {
    for (int j = 0; j < 2; ++j) {
      const int k = (rep + j) % 2;  // alternate which path goes first
      PMPI_Barrier(MPI_COMM_WORLD);
      const double t0 = now_seconds();
      for (int e = 0; e < plan[0]; ++e) x.run(*paths[k]);
      double seconds = (now_seconds() - t0) / plan[0], slowest = 0;
      PMPI_Allreduce(&seconds, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      samples[k].push_back(slowest);
    }
  }
  r.summarize_samples(samples);

  // Again after timing: a path that stops delivering after its first use would go unnoticed.
  for (int k = 0; k < 2; ++k) {
    const std::string e = verify(*paths[k], x, rank, ranks);
    if (!e.empty()) append_error(&errors, e + " (after timing)");
  }
  r.verify_error = errors;
  if (x.graph != MPI_COMM_NULL) MPI_Comm_free(&x.graph);
  h.free();
  return r;
}

// ---------------------------------------------------------------------------------------------
// The library variant: the host's hand-written exchanges, Loom's halo library and the floor.

// Loom's library on the bench's problem: the global grid of the Cartesian communicator (its
// axis 0 is z, the library's dimension 0 is x), periodic, box stencil, `fields` doubles.
struct Library {
  loom_halo_domain domain = nullptr;
  std::vector<char*> base;  // each field's local cell (0, 0, 0)
  int64_t stride[3] = {0, 0, 0};
  int64_t origin[3] = {0, 0, 0}, size[3] = {0, 0, 0}, global[3] = {0, 0, 0};
  int radius = 0, fields = 0;
  int peers[3] = {0, 0, 0};                   // loom_halo_peers: MPI, shared, self
  std::string error;                          // "" once realized
  std::vector<std::vector<double>> attached;  // the fields' memory when the bench attaches it
};

// `attach`: the fields are the bench's own arrays (loom_halo_attach_field), laid out as the
// library lays out its own, so that only the transports differ.
Library make_library(const Grid& g, int n, const Options& opt, unsigned methods,
                     bool attach = false) {
  Library l;
  l.radius = opt.radius;
  l.fields = opt.fields;
  for (int a = 0; a < 3; ++a) l.global[a] = static_cast<int64_t>(g.dims[2 - a]) * n;
  const int radius[6] = {opt.radius, opt.radius, opt.radius, opt.radius, opt.radius, opt.radius};
  const int periodic[3] = {1, 1, 1};
  int rc =
      loom_halo_create(MPI_COMM_WORLD, l.global, radius, periodic, LOOM_HALO_BOX, 0, &l.domain);
  if (rc == LOOM_HALO_SUCCESS) rc = loom_halo_set_methods(l.domain, methods);
  const int64_t ext = n + 2 * opt.radius, e = static_cast<int64_t>(sizeof(double));
  const int64_t strides[3] = {e, e * ext, e * ext * ext};
  for (int f = 0; f < opt.fields && rc == LOOM_HALO_SUCCESS; ++f) {
    int index = 0;
    if (attach) {
      l.attached.emplace_back(static_cast<size_t>(ext * ext * ext));
      char* base = reinterpret_cast<char*>(l.attached.back().data()) +
                   opt.radius * (strides[0] + strides[1] + strides[2]);
      rc = loom_halo_attach_field(l.domain, sizeof(double), base, strides, &index);
    } else {
      rc = loom_halo_add_field_type(l.domain, MPI_DOUBLE, &index);
    }
  }
  if (rc == LOOM_HALO_SUCCESS) rc = loom_halo_realize(l.domain);
  if (rc != LOOM_HALO_SUCCESS) {
    l.error = format("%s: %s", loom_halo_error_string(rc), loom_halo_error_message());
    return l;
  }
  loom_halo_origin(l.domain, l.origin);
  loom_halo_extent(l.domain, l.size);
  loom_halo_peers(l.domain, &l.peers[0], &l.peers[1], &l.peers[2]);
  for (int f = 0; f < opt.fields; ++f) {
    void* base = nullptr;
    loom_halo_field(l.domain, f, &base, l.stride);
    l.base.push_back(static_cast<char*>(base));
  }
  // The same problem as the hand-written exchange: n^3 cells on every rank.
  if (l.size[0] != n || l.size[1] != n || l.size[2] != n)
    l.error = format("the library's subdomain is %lldx%lldx%lld, not %d^3", (long long)l.size[0],
                     (long long)l.size[1], (long long)l.size[2], n);
  return l;
}

// Interior cells: a function of the global cell (1-based, exact in a double); ghosts: the
// sentinel. With `check`, counts the cells that differ from that (ghosts: their periodic image)
// instead, and describes the first.
int64_t library_cells(Library& l, bool check, std::string* first) {
  int64_t wrong = 0;
  const int r = l.radius;
  for (int f = 0; f < l.fields; ++f)
    for (int64_t k = -r; k < l.size[2] + r; ++k)
      for (int64_t j = -r; j < l.size[1] + r; ++j)
        for (int64_t i = -r; i < l.size[0] + r; ++i) {
          const int64_t local[3] = {i, j, k};
          int64_t v = f;
          bool interior = true;
          for (int a = 2; a >= 0; --a) {
            interior = interior && local[a] >= 0 && local[a] < l.size[a];
            v = v * l.global[a] + (l.origin[a] + local[a] + l.global[a]) % l.global[a];
          }
          double* cell = reinterpret_cast<double*>(
              l.base[static_cast<size_t>(f)] + i * l.stride[0] + j * l.stride[1] + k * l.stride[2]);
          const double want = static_cast<double>(v + 1);
          if (!check) {
            *cell = interior ? want : kGhostSentinel;
          } else if (*cell != want && !wrong++) {
            *first = format("field %d cell (x,y,z)=(%lld,%lld,%lld): got %.17g, want %.17g", f,
                            (long long)i, (long long)j, (long long)k, *cell, want);
          }
        }
  return wrong;
}

std::string verify_library(Library& l, const char* name, int rank, int ranks) {
  std::string local = l.error, first;
  if (local.empty()) {
    library_cells(l, false, &first);
    const int rc = loom_halo_exchange(l.domain);
    if (rc != LOOM_HALO_SUCCESS) {
      local = format("exchange: %s", loom_halo_error_message());
    } else if (const int64_t wrong = library_cells(l, true, &first)) {
      local = format("%lld wrong values, first %s", (long long)wrong, first.c_str());
    }
  }
  return p2p::gather_rank_messages(
      local.empty() ? "" : format("rank %d, %s: %s", rank, name, local.c_str()), rank, ranks);
}

// One process, no communication: every ghost region of the bench's domain filled from the
// interior region across the periodic wrap, with the library's own copy of boxes
// (pack/box_copy.hpp: boxes over the same rows in one pass, a row's segments with the short-block
// copy, memcpy above 256 bytes).
struct Floor {
  std::vector<pack::RowPass> passes;
  void run() const {
    for (const pack::RowPass& p : passes) pack::run_pass(p);
  }
};

Floor make_floor(Domain& d) {
  // Per field (interleaved: one array of cells holding every field), strides along x, y, z.
  const int arrays = d.interleaved ? 1 : d.fields;
  const int64_t cell = static_cast<int64_t>(sizeof(double)) * (d.interleaved ? d.fields : 1);
  const std::array<int64_t, 3> stride{cell, cell * d.ext, cell * d.ext * d.ext};
  std::vector<pack::BoxCopy> copies;
  for (const Direction& o : directions())
    for (int f = 0; f < arrays; ++f) {
      char* base = reinterpret_cast<char*>(&d.data()[d.index(f, 0, 0, 0)]);
      pack::BoxCopy c{base, stride, {}, base, stride, {}, {}, cell};
      for (int a = 0; a < 3; ++a) {  // o is (z, y, x), the copy (x, y, z)
        const int along = o[2 - a];
        c.size[a] = along == 0 ? d.n : d.r;
        c.to_lo[a] = along < 0 ? 0 : along == 0 ? d.r : d.n + d.r;  // the ghosts on that side
        c.from_lo[a] = along < 0 ? d.n : d.r;  // the interior cells on the far side
      }
      copies.push_back(c);
    }
  return {pack::row_passes(copies)};
}

struct LibraryResult {
  int n = 0;
  int64_t bytes_per_exchange = 0;  // ghost bytes filled on each rank
  int peers[3] = {0, 0, 0};        // the all-transport library's plan on rank 0
  int attached_shared_peers = 0;   // the attached-field library's same-node peers on rank 0
  // Seconds per exchange (slowest rank): isend, alltoallw (host), library (all), library
  // (MPI only), floor, library with attached fields (all transports).
  static constexpr int kPaths = 6;
  Summary times[kPaths];
  int exchanges_per_sample = 0;
  std::string verify_error;
  bool verified() const { return verify_error.empty(); }
  double ratio(int slower, int faster) const {
    return times[faster].median > 0 ? times[slower].median / times[faster].median : 0;
  }
};
constexpr const char* kLibraryPaths[LibraryResult::kPaths] = {
    "isend", "alltoallw", "library", "library-mpi", "floor", "library-attached"};
enum LibraryPath { kIsend, kAlltoallw, kLibrary, kLibraryMpi, kFloor, kLibraryAttached };

LibraryResult run_library_case(int n, const Grid& g, const Options& opt, int rank, int ranks) {
  LibraryResult r;
  r.n = n;
  Domain d{n, opt.radius, opt.fields, false, n + 2 * opt.radius, 0, nullptr};
  d.values = static_cast<int64_t>(d.ext) * d.ext * d.ext * d.fields;
  d.storage = allocate(d.values * static_cast<int64_t>(sizeof(double)), kTool);
  HaloTypes h = make_halo_types(d);
  r.bytes_per_exchange = h.bytes_per_exchange;
  Exchange isend = make_exchange(Variant::Isend, g, d, h);
  Exchange alltoallw = make_exchange(Variant::Alltoallw, g, d, h);
  Library all = make_library(g, n, opt, LOOM_HALO_METHODS_ALL);
  Library mpi_only = make_library(g, n, opt, LOOM_HALO_METHOD_MPI);
  Library attached = make_library(g, n, opt, LOOM_HALO_METHODS_ALL, true);
  std::copy(std::begin(all.peers), std::end(all.peers), std::begin(r.peers));
  r.attached_shared_peers = attached.peers[1];
  Floor floor = make_floor(d);
  const Path& host = host_path();

  auto verify_all = [&](const char* when) {
    std::string errors;
    for (Exchange* x : {&isend, &alltoallw}) {
      const std::string e = verify(host, *x, rank, ranks);
      if (!e.empty()) append_error(&errors, e + when);
    }
    for (auto [l, name] : {std::pair{&all, "library"}, std::pair{&mpi_only, "library-mpi"},
                           std::pair{&attached, "library-attached"}}) {
      const std::string e = verify_library(*l, name, rank, ranks);
      if (!e.empty()) append_error(&errors, e + when);
    }
    // The floor is a one-process periodic domain: ghosts hold the local periodic image.
    Grid alone;
    alone.dims[0] = alone.dims[1] = alone.dims[2] = 1;
    reset_domain(alone, d);
    floor.run();
    const std::string local = check_domain(alone, d);
    const std::string e = p2p::gather_rank_messages(
        local.empty() ? "" : format("rank %d, floor: %s", rank, local.c_str()), rank, ranks);
    if (!e.empty()) append_error(&errors, e + when);
    return errors;
  };
  r.verify_error = verify_all("");
  const bool libraries_ok = all.error.empty() && mpi_only.error.empty() && attached.error.empty();

  const std::function<void()> paths[LibraryResult::kPaths] = {
      [&] { isend.run(host); },
      [&] { alltoallw.run(host); },
      [&] { loom_halo_exchange(all.domain); },
      [&] { loom_halo_exchange(mpi_only.domain); },
      [&] { floor.run(); },
      [&] { loom_halo_exchange(attached.domain); }};
  if (libraries_ok) {
    // Calibration as run_case: one exchange per path, rank 0 decides, broadcast.
    double once[LibraryResult::kPaths] = {};
    for (int k = 0; k < LibraryResult::kPaths; ++k) {
      PMPI_Barrier(MPI_COMM_WORLD);
      const double t0 = now_seconds();
      paths[k]();
      once[k] = std::max(now_seconds() - t0, 1e-9);
    }
    int plan[2] = {0, 0};  // exchanges per sample, samples per path
    if (rank == 0) {
      const double slowest = *std::max_element(std::begin(once), std::end(once));
      double total = 0;
      for (double t : once) total += t;
      plan[0] = static_cast<int>(std::clamp(kSampleSeconds / slowest, 1.0, 1e4));
      plan[1] = static_cast<int>(std::clamp(opt.seconds_per_case / (plan[0] * total),
                                            static_cast<double>(opt.min_reps),
                                            static_cast<double>(opt.max_reps)));
    }
    PMPI_Bcast(plan, 2, MPI_INT, 0, MPI_COMM_WORLD);
    r.exchanges_per_sample = plan[0];
    std::vector<double> samples[LibraryResult::kPaths];
    for (int rep = 0; rep < plan[1]; ++rep)
      for (int j = 0; j < LibraryResult::kPaths; ++j) {
        const int k = (rep + j) % LibraryResult::kPaths;  // rotate which path goes first
        PMPI_Barrier(MPI_COMM_WORLD);
        const double t0 = now_seconds();
        for (int e = 0; e < plan[0]; ++e) paths[k]();
        double seconds = (now_seconds() - t0) / plan[0], slowest = 0;
        PMPI_Allreduce(&seconds, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        samples[k].push_back(slowest);
      }
    for (int k = 0; k < LibraryResult::kPaths; ++k) r.times[k] = summarize(samples[k]);
    const std::string after = verify_all(" (after timing)");
    if (!after.empty()) append_error(&r.verify_error, after);
  }
  for (Library* l : {&all, &mpi_only, &attached})
    if (l->domain) loom_halo_destroy(&l->domain);
  if (alltoallw.graph != MPI_COMM_NULL) MPI_Comm_free(&alltoallw.graph);
  h.free();
  return r;
}

// ---------------------------------------------------------------------------------------------
// Report.

std::string msec_cell(const Summary& s) {
  return format("%.3f [%.3f-%.3f]", s.median * 1e3, s.p10 * 1e3, s.p90 * 1e3);
}

// The library rows against the host's own exchanges: the library (all transports) against the
// hand-written isend, with the floor as bound, and against neighbor_alltoallw; the library with
// MPI messages only against the hand-written isend. Within noise: the p10-p90 ranges overlap.
struct LibrarySummary {
  ComparisonSummary over_isend, over_alltoallw, mpi_over_isend;
  explicit LibrarySummary(const std::vector<LibraryResult>& results)
      : over_isend(compare(results, kIsend, kLibrary, true)),
        over_alltoallw(compare(results, kAlltoallw, kLibrary, false)),
        mpi_over_isend(compare(results, kIsend, kLibraryMpi, false)) {}
  static ComparisonSummary compare(const std::vector<LibraryResult>& results, int host, int loom,
                                   bool with_bound) {
    std::vector<Comparison> cases;
    for (const auto& r : results)
      if (r.verified())
        cases.push_back({format("n=%d", r.n), r.ratio(host, loom),
                         within_noise(r.times[host], r.times[loom]),
                         with_bound ? r.ratio(host, kFloor) : 0});
    return ComparisonSummary(cases);
  }
};

std::vector<Comparison> interposer_cases(const std::vector<CaseResult>& results) {
  std::vector<Comparison> cases;
  for (const auto& r : results)
    cases.push_back(
        {format("%s n=%d", r.variant.c_str(), r.n), r.ratio(), within_noise(r.host, r.loom), 0});
  return cases;
}

void write_json(const Options& opt, int ranks, const Grid& g,
                const std::vector<CaseResult>& results, const std::vector<LibraryResult>& library,
                int failures) {
  JsonWriter j = begin_json_report({.subcommand = "halo",
                                    .ranks = ranks,
                                    .process_grid = {std::begin(g.dims), std::end(g.dims)}},
                                   opt);
  j.field("radius", opt.radius);
  j.field("fields", opt.fields);
  j.field("layout", opt.interleaved ? "aos" : "soa");
  opt.write_json(j);
  j.end_object();
  j.begin_array("cases");
  for (const auto& r : results) {
    j.begin_object();
    j.field("variant", r.variant);
    j.field("n", r.n);
    j.field("neighbours", kDirections);
    j.field("bytes_per_exchange", r.bytes_per_exchange);  // sent by each rank
    j.field("domain_bytes", r.domain_bytes);
    j.field("route", r.route);
    j.field("host_seconds", r.host);  // per exchange, slowest rank
    j.field("loom_seconds", r.loom);
    j.field("host_gbps", gbps(r.bytes_per_exchange, r.host.median));
    j.field("loom_gbps", gbps(r.bytes_per_exchange, r.loom.median));
    j.field("ratio", r.ratio());  // host median / Loom median: > 1 means Loom is faster
    j.field("ratio_paired", r.paired_ratio);
    j.field("within_noise", within_noise(r.host, r.loom));  // p10-p90 ranges overlap
    j.field("exchanges_per_sample", r.exchanges_per_sample);
    write_verification(j, r.verify_error);
    j.end_object();
  }
  j.end_array();
  j.objects("library_cases", library, [&j](const LibraryResult& r) {
    j.field("n", r.n);
    j.field("bytes_per_exchange", r.bytes_per_exchange);  // ghost bytes filled on each rank
    j.field("library_mpi_peers", r.peers[0]);
    j.field("library_shared_peers", r.peers[1]);
    j.field("library_self_copies", r.peers[2]);
    for (int k = 0; k < LibraryResult::kPaths; ++k)
      j.field(format("%s_seconds", kLibraryPaths[k]).c_str(), r.times[k]);
    j.field("isend_over_library", r.ratio(kIsend, kLibrary));
    j.field("alltoallw_over_library", r.ratio(kAlltoallw, kLibrary));
    j.field("library_over_floor", r.ratio(kLibrary, kFloor));
    j.field("isend_over_library_mpi", r.ratio(kIsend, kLibraryMpi));
    j.field("library_attached_shared_peers", r.attached_shared_peers);
    j.field("isend_over_library_attached", r.ratio(kIsend, kLibraryAttached));
    j.field("exchanges_per_sample", r.exchanges_per_sample);
    write_verification(j, r.verify_error);
  });
  j.begin_object("summary");
  std::vector<double> ratios;
  for (const auto& r : results) ratios.push_back(r.ratio());
  j.field("geomean_ratio", geomean(ratios));
  j.field("verify_failures", failures);
  if (!results.empty())
    write_comparison(j, "comparison", ComparisonSummary(interposer_cases(results)));
  if (!library.empty()) {
    const LibrarySummary s(library);
    j.begin_object("library");
    write_comparison(j, "library_over_isend", s.over_isend);  // bound: isend/floor
    write_comparison(j, "library_over_alltoallw", s.over_alltoallw);
    write_comparison(j, "library_mpi_over_isend", s.mpi_over_isend);
    j.end_object();
  }
  j.end_object();
  finish_json_report(j, opt.json_path, kTool);  // a warning is enough: the table is printed
}

void print_library(const std::vector<LibraryResult>& library, const MpiRun& mpi, int ranks) {
  const char* rpn = std::getenv("LOOM_RANKS_PER_NODE");
  std::printf(
      "\nhost MPI: %s, %d ranks, LOOM_RANKS_PER_NODE=%s   Loom's halo library against the host's\n"
      "own exchanges (PMPI_*, no Loom) and the floor, one rotation in one run (ms per exchange,\n"
      "slowest rank, median [p10-p90]; soa layout; library-mpi: every pair one MPI message,\n"
      "the wrap onto oneself too; floor: each rank fills its ghosts from its own interior\n"
      "with the library's row passes, no communication; plan: the library's MPI peers / shared\n"
      "peers / self copy on rank 0; lib-att: the library on fields the bench attached, which\n"
      "are not in node-shared memory, so same-node pairs exchange MPI messages too; after 's'\n"
      "its shared peers on rank 0)\n\n",
      mpi.host_mpi.c_str(), ranks, rpn && *rpn ? rpn : "unset");
  Table table({"n", "ghost bytes", "plan", "isend ms", "alltoallw ms", "library ms",
               "library-mpi ms", "floor ms", "lib-att ms", "isend/lib", "a2aw/lib", "lib/floor",
               "isend/lib-mpi", "isend/lib-att", "data"});
  for (const auto& r : library)
    table.add_row(
        {format("%d", r.n), human_bytes(r.bytes_per_exchange),
         format("%d/%d/%d", r.peers[0], r.peers[1], r.peers[2]), msec_cell(r.times[kIsend]),
         msec_cell(r.times[kAlltoallw]), msec_cell(r.times[kLibrary]),
         msec_cell(r.times[kLibraryMpi]), msec_cell(r.times[kFloor]),
         msec_cell(r.times[kLibraryAttached]) + format(" s%d", r.attached_shared_peers),
         format("%.2fx", r.ratio(kIsend, kLibrary)), format("%.2fx", r.ratio(kAlltoallw, kLibrary)),
         format("%.2fx", r.ratio(kLibrary, kFloor)), format("%.2fx", r.ratio(kIsend, kLibraryMpi)),
         format("%.2fx", r.ratio(kIsend, kLibraryAttached)), r.verified() ? "ok" : "MISMATCH"});
  table.print(stdout);
  std::printf(
      "\nLibrary summary (ratios are the host exchange's time / the library's, > 1: the library\n"
      "is faster; within noise: the p10-p90 ranges overlap; cases with a data mismatch left "
      "out)\n");
  const LibrarySummary s(library);
  print_comparison(s.over_isend, {"library", "isend", "floor"}, "  ");
  print_comparison(s.over_alltoallw, {"library", "alltoallw"}, "  ");
  print_comparison(s.mpi_over_isend, {"library-mpi", "isend"}, "  ");
}

int measure_halos(const Options& opt, const MpiRun& mpi) {
  const int rank = mpi.rank, ranks = mpi.ranks;
  const Grid g = make_grid(ranks);
  if (rank == 0) {
    std::printf("loom-bench halo   host MPI: %s   %d ranks, periodic grid %dx%dx%d\n",
                mpi.host_mpi.c_str(), ranks, g.dims[0], g.dims[1], g.dims[2]);
    std::printf(
        "Loom: %s   radius %d, %d doubles per cell (%s), 26 neighbours, time bound %.2f s/case\n",
        mpi.loom_state(), opt.radius, opt.fields,
        opt.interleaved ? "aos: interleaved [z][y][x][field]" : "soa: arrays [field][z][y][x]",
        opt.seconds_per_case);
    note_if_loom_inactive(
        mpi,
        "the MPI_* path\n"
        "      is the host's own, so every ratio below measures noise and should be ~1.\n");
    std::fflush(stdout);
  }

  std::vector<CaseResult> results;
  std::vector<LibraryResult> library;
  for (const auto& name : opt.variants)
    for (int64_t n : opt.ns) {
      const double start = now_seconds();
      if (name == "library") {
        library.push_back(run_library_case(static_cast<int>(n), g, opt, rank, ranks));
        if (rank != 0) continue;
        std::fprintf(stderr, "[halo] %-9s n=%-4lld %5.2f s\n", name.c_str(), (long long)n,
                     now_seconds() - start);
        if (!library.back().verified())
          std::fprintf(stderr, "data mismatch in library n=%lld: %s\n", (long long)n,
                       library.back().verify_error.c_str());
        continue;
      }
      const Variant v = name == "isend" ? Variant::Isend : Variant::Alltoallw;
      results.push_back(run_case(v, static_cast<int>(n), g, opt, rank, ranks));
      if (rank != 0) continue;
      std::fprintf(stderr, "[halo] %-9s n=%-4lld %5.2f s\n", name.c_str(), (long long)n,
                   now_seconds() - start);
      if (!results.back().verified())
        std::fprintf(stderr, "data mismatch in %s n=%lld: %s\n", name.c_str(), (long long)n,
                     results.back().verify_error.c_str());
    }

  int failures = 0;
  for (const auto& r : results) failures += r.verified() ? 0 : 1;
  for (const auto& r : library) failures += r.verified() ? 0 : 1;
  if (rank == 0 && !results.empty()) {
    Table table({"variant", "n", "bytes/rank", "domain/rank", "route", "host ms [p10-p90]",
                 "loom ms [p10-p90]", "host GB/s", "loom GB/s", "host/loom", "data"});
    for (const auto& r : results)
      table.add_row({r.variant, format("%d", r.n), human_bytes(r.bytes_per_exchange),
                     format("%.1f MiB", static_cast<double>(r.domain_bytes) / kMiB), r.route,
                     msec_cell(r.host), msec_cell(r.loom),
                     format("%.2f", gbps(r.bytes_per_exchange, r.host.median)),
                     format("%.2f", gbps(r.bytes_per_exchange, r.loom.median)),
                     format("%.2fx", r.ratio()), r.verified() ? "ok" : "MISMATCH"});
    std::printf(
        "\nhost MPI: %s, %d ranks   (time per exchange of all 26 ghost regions, slowest rank,\n"
        "median over samples; bytes/rank: sent per exchange by one rank; host/loom > 1: Loom\n"
        "is faster; route: which engine served Loom's calls (loom = packed by Loom or, for a\n"
        "rank's messages to itself, delivered by Loom; host = left to the host, mixed = some\n"
        "of each, - = none counted: Loom not interposing))\n\n",
        mpi.host_mpi.c_str(), ranks);
    table.print(stdout);
    std::printf(
        "\nSummary (host %s, Loom %s; ratios are host time / Loom time, > 1: Loom is faster;\n"
        "within noise: the two paths' p10-p90 ranges overlap)\n",
        mpi.host_mpi.c_str(), mpi.loom_state());
    print_comparison(ComparisonSummary(interposer_cases(results)), {}, "  ");
  }
  if (rank == 0 && !library.empty()) print_library(library, mpi, ranks);
  if (rank == 0) {  // under the last summary, for every variant run
    std::vector<std::string> mismatched;
    for (const auto& r : results)
      if (!r.verified()) mismatched.push_back(format("%s n=%d", r.variant.c_str(), r.n));
    for (const auto& r : library)
      if (!r.verified()) mismatched.push_back(format("library n=%d", r.n));
    print_verification("every cell, every path, before and after timing", mismatched,
                       results.size() + library.size());
    std::fflush(stdout);
  }
  if (rank == 0 && !opt.json_path.empty()) write_json(opt, ranks, g, results, library, failures);
  MPI_Comm cart = g.cart;
  MPI_Comm_free(&cart);
  return failures ? 1 : 0;
}

}  // namespace

int run_halo(int argc, char** argv) {
  return run_mpi_subcommand(argc, argv, false, parse_options, measure_halos);
}

}  // namespace loom::bench
