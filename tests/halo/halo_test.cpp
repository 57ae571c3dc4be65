// The halo library (include/loom/halo.h) under the host MPI, without libloom.so. Ghost cells
// are checked against an independent computation: every interior cell holds a function of its
// global coordinates, field and step, so the value a ghost must hold follows from its global
// coordinates (wrapped where periodic) alone; ghosts the stencil does not ask for, or past a
// closed boundary, must keep their sentinel. Randomised domains print their seed
// (LOOM_TEST_SEED repeats them).
#include <gtest/gtest.h>
#include <mpi.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "loom/halo.h"

namespace {

constexpr unsigned char kSentinel = 0xEE;

int world_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}
int world_size() {
  int n = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  return n;
}

unsigned char value_byte(int64_t x, int64_t y, int64_t z, int field, size_t byte, int step) {
  uint64_t h = static_cast<uint64_t>(x) * 0x9E3779B97F4A7C15ull ^
               static_cast<uint64_t>(y) * 0xC2B2AE3D27D4EB4Full ^
               static_cast<uint64_t>(z) * 0x165667B19E3779F9ull ^
               static_cast<uint64_t>(field * 131 + step * 7919) * 0x27D4EB2F165667C5ull ^ byte;
  h ^= h >> 31;
  h *= 0xBF58476D1CE4E5B9ull;
  h ^= h >> 29;
  return static_cast<unsigned char>(h);
}

struct Case {
  std::array<int64_t, 3> extent{};
  std::array<int, 6> radius{};
  std::array<int, 3> periodic{};
  int stencil = LOOM_HALO_BOX;
  uint32_t mask = 0;
  std::vector<size_t> elements;  // 0: MPI_DOUBLE through loom_halo_add_field_type
  // 0: the library allocates the fields; 1: attached, one padded array per field; 2: attached,
  // array of structs (every field of a cell together).
  int layout = 0;
  std::vector<std::vector<char>> storage;  // the attached fields' memory

  std::string describe() const {
    std::ostringstream s;
    s << "extent " << extent[0] << "x" << extent[1] << "x" << extent[2] << " radius";
    for (int r : radius) s << " " << r;
    s << " periodic " << periodic[0] << periodic[1] << periodic[2] << " stencil " << stencil
      << " mask " << mask << " fields";
    for (size_t e : elements) s << " " << e;
    s << " layout " << (layout == 0 ? "library" : layout == 1 ? "attached soa" : "attached aos");
    return s.str();
  }
};

// A box-stencil case.
Case box_case(std::array<int64_t, 3> extent, std::array<int, 6> radius, std::array<int, 3> periodic,
              std::vector<size_t> elements, int layout) {
  Case c;
  c.extent = extent;
  c.radius = radius;
  c.periodic = periodic;
  c.stencil = LOOM_HALO_BOX;
  c.elements = std::move(elements);
  c.layout = layout;
  return c;
}

uint32_t effective_mask(const Case& c) {
  if (c.stencil == LOOM_HALO_BOX) return ((1u << 27) - 1) & ~(1u << 13);
  if (c.stencil == LOOM_HALO_STAR)
    return (1u << 4) | (1u << 22) | (1u << 10) | (1u << 16) | (1u << 12) | (1u << 14);
  return c.mask & ~(1u << 13);
}

struct Layout {
  std::array<int64_t, 3> origin{}, size{};
  std::vector<char*> base;
  std::vector<std::array<int64_t, 3>> stride;
  std::vector<size_t> element;
};

Layout layout_of(loom_halo_domain d, const struct Case& c) {
  const size_t fields = c.elements.size();
  Layout l;
  EXPECT_EQ(loom_halo_origin(d, l.origin.data()), LOOM_HALO_SUCCESS);
  EXPECT_EQ(loom_halo_extent(d, l.size.data()), LOOM_HALO_SUCCESS);
  for (size_t f = 0; f < fields; ++f) {
    void* base = nullptr;
    std::array<int64_t, 3> stride{};
    EXPECT_EQ(loom_halo_field(d, static_cast<int>(f), &base, stride.data()), LOOM_HALO_SUCCESS);
    l.base.push_back(static_cast<char*>(base));
    l.stride.push_back(stride);
    l.element.push_back(c.elements[f] ? c.elements[f] : sizeof(double));
  }
  return l;
}

// Calls fn(field, i, j, k, cell pointer) for every cell of every field, ghosts included.
template <typename Fn>
void for_each_cell(const Case& c, const Layout& l, Fn fn) {
  for (size_t f = 0; f < l.base.size(); ++f)
    for (int64_t k = -c.radius[4]; k < l.size[2] + c.radius[5]; ++k)
      for (int64_t j = -c.radius[2]; j < l.size[1] + c.radius[3]; ++j)
        for (int64_t i = -c.radius[0]; i < l.size[0] + c.radius[1]; ++i)
          fn(f, std::array<int64_t, 3>{i, j, k},
             l.base[f] + i * l.stride[f][0] + j * l.stride[f][1] + k * l.stride[f][2]);
}

void fill(const Case& c, const Layout& l, int step) {
  for_each_cell(c, l, [&](size_t f, std::array<int64_t, 3> p, char* cell) {
    const bool interior = p[0] >= 0 && p[0] < l.size[0] && p[1] >= 0 && p[1] < l.size[1] &&
                          p[2] >= 0 && p[2] < l.size[2];
    for (size_t b = 0; b < l.element[f]; ++b)
      cell[b] =
          static_cast<char>(interior ? value_byte(l.origin[0] + p[0], l.origin[1] + p[1],
                                                  l.origin[2] + p[2], static_cast<int>(f), b, step)
                                     : kSentinel);
  });
}

// Cells whose bytes differ from the naive expectation.
int64_t check(const Case& c, const Layout& l, int step) {
  const uint32_t mask = effective_mask(c);
  int64_t wrong = 0;
  for_each_cell(c, l, [&](size_t f, std::array<int64_t, 3> p, const char* cell) {
    int direction = 0;
    bool filled = true;
    std::array<int64_t, 3> g{};
    const int place[3] = {1, 3, 9};
    for (size_t d = 0; d < 3; ++d) {
      const int o = p[d] < 0 ? -1 : (p[d] >= l.size[d] ? 1 : 0);
      direction += (o + 1) * place[d];
      g[d] = l.origin[d] + p[d];
      if (g[d] < 0 || g[d] >= c.extent[d]) {
        if (c.periodic[d])
          g[d] = (g[d] % c.extent[d] + c.extent[d]) % c.extent[d];
        else
          filled = false;
      }
    }
    if (direction != 13 && !(mask & (1u << direction))) filled = false;
    bool ok = true;
    for (size_t b = 0; b < l.element[f]; ++b) {
      const unsigned char want =
          filled ? value_byte(g[0], g[1], g[2], static_cast<int>(f), b, step) : kSentinel;
      ok = ok && static_cast<unsigned char>(cell[b]) == want;
    }
    if (!ok && wrong++ < 3)
      std::printf("rank %d: field %zu cell (%lld,%lld,%lld) direction %d wrong\n", world_rank(), f,
                  static_cast<long long>(p[0]), static_cast<long long>(p[1]),
                  static_cast<long long>(p[2]), direction);
  });
  return wrong;
}

uint64_t test_seed() {
  uint64_t seed = 0;
  if (world_rank() == 0) {
    const char* env = std::getenv("LOOM_TEST_SEED");
    seed = env ? std::strtoull(env, nullptr, 10) : std::random_device{}();
  }
  MPI_Bcast(&seed, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
  return seed;
}

Case random_case(std::mt19937_64& rng) {
  static const int64_t extents[] = {1, 2, 3, 4, 5, 7, 8, 11, 12, 13, 16, 17, 19, 23};
  auto pick = [&rng](int n) { return static_cast<int>(rng() % static_cast<uint64_t>(n)); };
  Case c;
  for (auto& e : c.extent) e = extents[pick(14)];
  for (auto& r : c.radius) r = pick(4);
  for (auto& p : c.periodic) p = pick(2);
  c.stencil = pick(3);
  c.mask = static_cast<uint32_t>(rng()) & ((1u << 27) - 1);
  static const size_t sizes[] = {0, 1, 2, 4, 8, 12, 16};
  const int fields = 1 + pick(4);
  for (int f = 0; f < fields; ++f) c.elements.push_back(sizes[pick(7)]);
  c.layout = pick(3);
  return c;
}

// Creates the case's domain, shrinking radii or growing extents (alike on every rank) until the
// partition admits it.
loom_halo_domain create(Case& c, MPI_Comm comm = MPI_COMM_WORLD) {
  for (int attempt = 0; attempt < 16; ++attempt) {
    loom_halo_domain d = nullptr;
    const int rc = loom_halo_create(comm, c.extent.data(), c.radius.data(), c.periodic.data(),
                                    c.stencil, c.mask, &d);
    if (rc == LOOM_HALO_SUCCESS) return d;
    EXPECT_EQ(d, nullptr);
    if (rc == LOOM_HALO_ERR_RADIUS) {
      for (auto& r : c.radius) r = r > 0 ? r - 1 : 0;
    } else if (rc == LOOM_HALO_ERR_EXTENT) {
      for (auto& e : c.extent) e += 2;
    } else {
      ADD_FAILURE() << loom_halo_error_string(rc) << ": " << loom_halo_error_message();
      return nullptr;
    }
  }
  ADD_FAILURE() << "no admissible domain for " << c.describe();
  return nullptr;
}

// create(), then the case's fields (size 0: MPI_DOUBLE) and realize; null (and a failure
// recorded) when any of them fails.
loom_halo_domain create_realized(Case& c, MPI_Comm comm = MPI_COMM_WORLD) {
  loom_halo_domain d = create(c, comm);
  if (!d) return nullptr;
  // Attached layouts: cells with ghosts per dimension, and the bytes of one cell of all fields.
  std::array<int64_t, 3> n{}, ext{};
  loom_halo_extent(d, n.data());
  for (size_t i = 0; i < 3; ++i) ext[i] = n[i] + c.radius[2 * i] + c.radius[2 * i + 1];
  int64_t cell = 0;
  for (size_t e : c.elements) cell += static_cast<int64_t>(e ? e : sizeof(double));
  c.storage.clear();
  if (c.layout == 2)
    c.storage.emplace_back(static_cast<size_t>(cell * ext[0] * ext[1] * ext[2] + cell + 64));
  int64_t offset = 0;  // of the field in an AoS cell
  for (size_t e : c.elements) {
    int field = -1;
    const int64_t size = static_cast<int64_t>(e ? e : sizeof(double));
    int rc = LOOM_HALO_SUCCESS;
    if (c.layout == 0) {
      rc = e == 0 ? loom_halo_add_field_type(d, MPI_DOUBLE, &field)
                  : loom_halo_add_field(d, e, &field);
    } else {
      std::array<int64_t, 3> stride{size, size * ext[0], size * ext[0] * ext[1]};
      char* first = nullptr;
      if (c.layout == 1) {  // padded rows and planes
        stride = {size, size * ext[0] + 8, (size * ext[0] + 8) * ext[1] + 24};
        c.storage.emplace_back(static_cast<size_t>(stride[2] * ext[2] + 64));
        first = c.storage.back().data();
      } else {
        stride = {cell, cell * ext[0], cell * ext[0] * ext[1]};
        first = c.storage[0].data() + offset;
      }
      char* base =
          first + c.radius[0] * stride[0] + c.radius[2] * stride[1] + c.radius[4] * stride[2];
      rc = loom_halo_attach_field(d, static_cast<size_t>(size), base, stride.data(), &field);
    }
    offset += size;
    if (rc != LOOM_HALO_SUCCESS) {
      ADD_FAILURE() << "add field: " << loom_halo_error_message();
      loom_halo_destroy(&d);
      return nullptr;
    }
  }
  if (loom_halo_realize(d) != LOOM_HALO_SUCCESS) {
    ADD_FAILURE() << "realize: " << loom_halo_error_message();
    loom_halo_destroy(&d);
    return nullptr;
  }
  return d;
}

int64_t all_ranks_sum(int64_t v) {
  MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  return v;
}

// First in the file, so that in a process without libloom.so this is the library's first
// domain: world rank 1 stays out of the domain's communicator and never calls the library, so
// nothing the library does may be collective over MPI_COMM_WORLD (from 3 ranks on, the members
// are not consecutive world ranks either).
TEST(Halo, ACommunicatorThatLeavesRanksOut) {
  const bool member = world_rank() != 1;
  MPI_Comm comm = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, member ? 0 : MPI_UNDEFINED, world_rank(), &comm);
  int64_t wrong = 0;
  if (member) {
    for (int layout : {0, 1}) {
      Case c = box_case({13, 11, 7}, {2, 1, 1, 2, 1, 1}, {1, 1, 0}, {0, 4}, layout);
      loom_halo_domain d = create_realized(c, comm);
      if (!d) {
        ++wrong;
        break;
      }
      const Layout l = layout_of(d, c);
      for (int step = 0; step < 3; ++step) {
        fill(c, l, step);
        EXPECT_EQ(loom_halo_exchange(d), LOOM_HALO_SUCCESS) << loom_halo_error_message();
        wrong += check(c, l, step);
      }
      EXPECT_EQ(loom_halo_destroy(&d), LOOM_HALO_SUCCESS);
    }
    MPI_Comm_free(&comm);
  }
  EXPECT_EQ(all_ranks_sum(wrong), 0);
}

TEST(Halo, RandomDomainsGhostsMatchOwners) {
  const uint64_t seed = test_seed();
  if (world_rank() == 0)
    std::printf("halo: %d ranks, LOOM_TEST_SEED=%llu\n", world_size(),
                static_cast<unsigned long long>(seed));
  std::mt19937_64 rng(seed);
  const int cases = 40;
  for (int n = 0; n < cases; ++n) {
    Case c = random_case(rng);
    loom_halo_domain d = create_realized(c);
    ASSERT_NE(d, nullptr) << c.describe();
    const Layout l = layout_of(d, c);
    // Blocking, replayed: each step refills the interior with new values.
    std::vector<std::vector<char>> blocking;
    for (int step = 0; step < 2; ++step) {
      fill(c, l, step);
      ASSERT_EQ(loom_halo_exchange(d), LOOM_HALO_SUCCESS) << loom_halo_error_message();
      const int64_t wrong = all_ranks_sum(check(c, l, step));
      EXPECT_EQ(wrong, 0) << "case " << n << ": " << c.describe() << " step " << step;
    }
    for (size_t f = 0; f < l.base.size(); ++f) {
      const size_t bytes = static_cast<size_t>(l.stride[f][2]) *
                           static_cast<size_t>(l.size[2] + c.radius[4] + c.radius[5]);
      const char* first = l.base[f] - c.radius[0] * l.stride[f][0] - c.radius[2] * l.stride[f][1] -
                          c.radius[4] * l.stride[f][2];
      blocking.emplace_back(first, first + bytes);
    }
    // Split phase, the interior read while ghosts move: the same bytes as the blocking step.
    fill(c, l, 1);
    ASSERT_EQ(loom_halo_start(d), LOOM_HALO_SUCCESS) << loom_halo_error_message();
    uint64_t sum = 0;
    for (size_t f = 0; f < l.base.size(); ++f)
      for (int64_t k = 0; k < l.size[2]; ++k)
        for (int64_t j = 0; j < l.size[1]; ++j)
          sum += static_cast<unsigned char>(l.base[f][j * l.stride[f][1] + k * l.stride[f][2]]);
    ASSERT_EQ(loom_halo_finish(d), LOOM_HALO_SUCCESS) << loom_halo_error_message();
    EXPECT_GE(sum, 0u);
    int64_t differ = 0;
    for (size_t f = 0; f < l.base.size(); ++f) {
      const char* first = l.base[f] - c.radius[0] * l.stride[f][0] - c.radius[2] * l.stride[f][1] -
                          c.radius[4] * l.stride[f][2];
      differ += std::memcmp(first, blocking[f].data(), blocking[f].size()) != 0;
    }
    EXPECT_EQ(all_ranks_sum(differ), 0) << "split phase differs: " << c.describe();
    EXPECT_EQ(loom_halo_destroy(&d), LOOM_HALO_SUCCESS);
    EXPECT_EQ(d, nullptr);
  }
}

// Every radius per side 0..3 on a fixed domain, box and star, all periodicities.
TEST(Halo, EveryPeriodicityAndStencil) {
  const int size = world_size();
  for (int periodic_bits = 0; periodic_bits < 8; ++periodic_bits)
    for (int stencil : {LOOM_HALO_BOX, LOOM_HALO_STAR}) {
      Case c;
      c.extent = {13, 7 + size, 11};
      c.radius = {periodic_bits % 4, 3 - periodic_bits % 4, 1, 2, 3, 0};
      c.periodic = {periodic_bits & 1, (periodic_bits >> 1) & 1, (periodic_bits >> 2) & 1};
      c.stencil = stencil;
      c.elements = {8, 1, 4};
      c.layout = (periodic_bits + stencil) % 3;
      loom_halo_domain d = create_realized(c);
      ASSERT_NE(d, nullptr) << c.describe();
      const Layout l = layout_of(d, c);
      fill(c, l, 3);
      ASSERT_EQ(loom_halo_exchange(d), LOOM_HALO_SUCCESS);
      EXPECT_EQ(all_ranks_sum(check(c, l, 3)), 0) << c.describe();
      loom_halo_destroy(&d);
    }
}

// --stress-steps=N (main) sets it: 2,000 in every run, 10^4 in the dedicated halo.stress runs.
int stress_steps = 2000;

// Many exchanges with random delays on one rank (before start, between start and finish, after
// finish): no ghost may be torn or stale, whichever transport carries it. Library fields (read
// in place by same-node neighbours) and attached arrays of structs (staged through node-shared
// pack areas).
TEST(Halo, StressWithRandomDelays) {
  for (int layout : {0, 2}) {
    Case c = box_case({12, 10, 9}, {1, 2, 1, 1, 2, 1}, {1, 1, 1}, {8, 4}, layout);
    loom_halo_domain d = create_realized(c);
    ASSERT_NE(d, nullptr) << c.describe();
    const Layout l = layout_of(d, c);
    const uint64_t seed = test_seed();
    if (world_rank() == 0)
      std::printf("halo stress: %d ranks, %d exchanges, layout %d, LOOM_TEST_SEED=%llu\n",
                  world_size(), stress_steps, layout, static_cast<unsigned long long>(seed));
    std::mt19937_64 rng(seed + static_cast<uint64_t>(world_rank()));
    const int steps = stress_steps;
    int64_t wrong = 0;
    for (int step = 0; step < steps && wrong == 0; ++step) {
      fill(c, l, step);
      const bool delayed = world_rank() == 0 && rng() % 4 == 0;
      const int where = static_cast<int>(rng() % 3);
      const auto pause = [&] {
        const auto until = MPI_Wtime() + 1e-6 * static_cast<double>(rng() % 50);
        while (MPI_Wtime() < until) {
        }
      };
      if (delayed && where == 0) pause();
      ASSERT_EQ(loom_halo_start(d), LOOM_HALO_SUCCESS);
      if (delayed && where == 1) pause();
      ASSERT_EQ(loom_halo_finish(d), LOOM_HALO_SUCCESS);
      if (delayed && where == 2) pause();
      wrong += check(c, l, step);
    }
    EXPECT_EQ(all_ranks_sum(wrong), 0) << c.describe();
    loom_halo_destroy(&d);
  }
}

// All directions and fields between one pair of ranks travel as one message.
TEST(Halo, OneMessagePerPeer) {
  const int64_t extent[3] = {64, 8, 8};
  const int radius[6] = {2, 2, 2, 2, 2, 2};
  const int periodic[3] = {1, 1, 1};
  loom_halo_domain d = nullptr;
  ASSERT_EQ(loom_halo_create(MPI_COMM_WORLD, extent, radius, periodic, LOOM_HALO_BOX, 0, &d),
            LOOM_HALO_SUCCESS);
  int field = -1;
  ASSERT_EQ(loom_halo_add_field(d, 8, &field), LOOM_HALO_SUCCESS);
  ASSERT_EQ(loom_halo_add_field(d, 4, &field), LOOM_HALO_SUCCESS);
  ASSERT_EQ(loom_halo_realize(d), LOOM_HALO_SUCCESS);
  int peers = -1, shared = -1, self = -1;
  ASSERT_EQ(loom_halo_peers(d, &peers, &shared, &self), LOOM_HALO_SUCCESS);
  const int size = world_size();
  // LOOM_HALO_METHODS=mpi: the wrap onto oneself is a message to oneself, and no shared peer.
  const char* methods = std::getenv("LOOM_HALO_METHODS");
  const bool mpi_only = methods && std::string(methods) == "mpi";
  if (size <= 2) {
    // Split along x only (or not at all): y and z wrap onto the rank itself.
    EXPECT_EQ(peers + shared, mpi_only ? size : size - 1);
    EXPECT_EQ(self, mpi_only ? 0 : 1);
  }
  EXPECT_LE(peers + shared, size);
  // Every neighbour on another node goes through MPI, every one on this node through shared
  // memory unless the methods leave it out.
  const char* rpn = std::getenv("LOOM_RANKS_PER_NODE");
  if ((rpn && std::string(rpn) == "1") || mpi_only) {
    EXPECT_EQ(shared, 0);
  }
  if (!rpn && !mpi_only) {
    EXPECT_EQ(peers, 0);
  }
  loom_halo_destroy(&d);
  // loom_halo_set_methods restricts like the variable: MPI only, the wrap onto oneself too.
  ASSERT_EQ(loom_halo_create(MPI_COMM_WORLD, extent, radius, periodic, LOOM_HALO_BOX, 0, &d),
            LOOM_HALO_SUCCESS);
  ASSERT_EQ(loom_halo_set_methods(d, LOOM_HALO_METHOD_MPI), LOOM_HALO_SUCCESS);
  ASSERT_EQ(loom_halo_add_field(d, 8, &field), LOOM_HALO_SUCCESS);
  ASSERT_EQ(loom_halo_realize(d), LOOM_HALO_SUCCESS) << loom_halo_error_message();
  ASSERT_EQ(loom_halo_peers(d, &peers, &shared, &self), LOOM_HALO_SUCCESS);
  EXPECT_EQ(shared, 0);
  EXPECT_EQ(self, 0);
  if (size <= 2) {
    EXPECT_EQ(peers, size);
  }
  loom_halo_destroy(&d);
}

// Attached fields (the user's arrays, padded or arrays of structs) reach same-node neighbours
// without MPI as the library's own fields do: staged through node-shared pack areas instead of
// read in place. The random tests above check their ghosts.
TEST(Halo, AttachedFieldsReachSameNodeNeighboursWithoutMpi) {
  for (int layout : {1, 2}) {
    std::array<int, 3> attached{}, library{};  // MPI peers, shared peers, self copies
    for (int which : {0, layout}) {
      Case c = box_case({48, 12, 10}, {1, 2, 1, 1, 2, 1}, {1, 1, 1}, {8, 4}, which);
      loom_halo_domain d = create_realized(c);
      ASSERT_NE(d, nullptr);
      std::array<int, 3>& out = which == 0 ? library : attached;
      ASSERT_EQ(loom_halo_peers(d, &out[0], &out[1], &out[2]), LOOM_HALO_SUCCESS);
      loom_halo_destroy(&d);
    }
    EXPECT_EQ(attached, library) << "layout " << layout;
  }
}

TEST(HaloErrors, BadCreateArguments) {
  const int radius[6] = {1, 1, 1, 1, 1, 1};
  const int periodic[3] = {1, 1, 1};
  loom_halo_domain d = nullptr;
  const int64_t negative[3] = {8, -3, 8};
  EXPECT_EQ(loom_halo_create(MPI_COMM_WORLD, negative, radius, periodic, LOOM_HALO_BOX, 0, &d),
            LOOM_HALO_ERR_EXTENT);
  EXPECT_EQ(d, nullptr);
  EXPECT_NE(std::string(loom_halo_error_message()).find("extent"), std::string::npos);
  const int64_t zero[3] = {8, 8, 0};
  EXPECT_EQ(loom_halo_create(MPI_COMM_WORLD, zero, radius, periodic, LOOM_HALO_BOX, 0, &d),
            LOOM_HALO_ERR_EXTENT);
  const int64_t ok[3] = {8, 8, 8};
  const int negative_radius[6] = {1, 1, -1, 1, 1, 1};
  EXPECT_EQ(loom_halo_create(MPI_COMM_WORLD, ok, negative_radius, periodic, LOOM_HALO_BOX, 0, &d),
            LOOM_HALO_ERR_RADIUS);
  const int64_t small[3] = {2, 2, 2};
  const int wide[6] = {3, 3, 3, 3, 3, 3};
  EXPECT_EQ(loom_halo_create(MPI_COMM_WORLD, small, wide, periodic, LOOM_HALO_BOX, 0, &d),
            LOOM_HALO_ERR_RADIUS);
  EXPECT_NE(std::string(loom_halo_error_message()).find("larger than a subdomain"),
            std::string::npos);
  EXPECT_EQ(loom_halo_create(MPI_COMM_WORLD, ok, radius, periodic, 7, 0, &d), LOOM_HALO_ERR_ARG);
  EXPECT_EQ(
      loom_halo_create(MPI_COMM_WORLD, ok, radius, periodic, LOOM_HALO_EXPLICIT, 1u << 27, &d),
      LOOM_HALO_ERR_ARG);
  EXPECT_EQ(loom_halo_create(MPI_COMM_WORLD, nullptr, radius, periodic, LOOM_HALO_BOX, 0, &d),
            LOOM_HALO_ERR_ARG);
  EXPECT_EQ(loom_halo_create(MPI_COMM_WORLD, ok, radius, periodic, LOOM_HALO_BOX, 0, nullptr),
            LOOM_HALO_ERR_ARG);
  if (world_size() > 1) {
    const int64_t one[3] = {1, 1, 1};
    const int none[6] = {0, 0, 0, 0, 0, 0};
    EXPECT_EQ(loom_halo_create(MPI_COMM_WORLD, one, none, periodic, LOOM_HALO_BOX, 0, &d),
              LOOM_HALO_ERR_EXTENT);
    const int64_t differs[3] = {8, world_rank() == 0 ? 9 : 8, 8};
    EXPECT_EQ(loom_halo_create(MPI_COMM_WORLD, differs, radius, periodic, LOOM_HALO_BOX, 0, &d),
              LOOM_HALO_ERR_MISMATCH);
    // An intercommunicator between world rank 0 and the others.
    MPI_Comm half = MPI_COMM_NULL, inter = MPI_COMM_NULL;
    MPI_Comm_split(MPI_COMM_WORLD, world_rank() == 0, world_rank(), &half);
    MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, world_rank() == 0 ? 1 : 0, 7, &inter);
    EXPECT_EQ(loom_halo_create(inter, ok, radius, periodic, LOOM_HALO_BOX, 0, &d),
              LOOM_HALO_ERR_ARG);
    EXPECT_NE(std::string(loom_halo_error_message()).find("intracommunicator"), std::string::npos);
    MPI_Comm_free(&inter);
    MPI_Comm_free(&half);
  }
  EXPECT_EQ(d, nullptr);
  EXPECT_EQ(loom_halo_destroy(&d), LOOM_HALO_ERR_ARG);
  EXPECT_EQ(loom_halo_destroy(nullptr), LOOM_HALO_ERR_ARG);
}

TEST(HaloErrors, CallsOutOfOrderAndBadFields) {
  const int64_t extent[3] = {12, 10, 9};
  const int radius[6] = {1, 2, 0, 1, 1, 1};
  const int periodic[3] = {1, 0, 1};
  loom_halo_domain d = nullptr;
  ASSERT_EQ(loom_halo_create(MPI_COMM_WORLD, extent, radius, periodic, LOOM_HALO_STAR, 0, &d),
            LOOM_HALO_SUCCESS);
  int field = -1;
  void* base = nullptr;
  int64_t strides[3];
  EXPECT_EQ(loom_halo_exchange(d), LOOM_HALO_ERR_STATE);
  EXPECT_EQ(loom_halo_start(d), LOOM_HALO_ERR_STATE);
  EXPECT_EQ(loom_halo_field(d, 0, &base, strides), LOOM_HALO_ERR_STATE);
  EXPECT_EQ(loom_halo_add_field(d, 0, &field), LOOM_HALO_ERR_ARG);
  EXPECT_EQ(loom_halo_add_field(d, 8, nullptr), LOOM_HALO_ERR_ARG);
  MPI_Datatype vector;
  MPI_Type_vector(2, 1, 2, MPI_INT, &vector);
  MPI_Type_commit(&vector);
  EXPECT_EQ(loom_halo_add_field_type(d, vector, &field), LOOM_HALO_ERR_ARG);
  MPI_Type_free(&vector);
  EXPECT_EQ(loom_halo_add_field_type(d, MPI_DATATYPE_NULL, &field), LOOM_HALO_ERR_ARG);
  ASSERT_EQ(loom_halo_add_field_type(d, MPI_FLOAT, &field), LOOM_HALO_SUCCESS);
  EXPECT_EQ(field, 0);
  // A rank with a field more than the others: every rank hears of it.
  if (world_size() > 1) {
    loom_halo_domain e = nullptr;
    ASSERT_EQ(loom_halo_create(MPI_COMM_WORLD, extent, radius, periodic, LOOM_HALO_STAR, 0, &e),
              LOOM_HALO_SUCCESS);
    int g = -1;
    ASSERT_EQ(loom_halo_add_field(e, 4, &g), LOOM_HALO_SUCCESS);
    if (world_rank() == 0) {
      ASSERT_EQ(loom_halo_add_field(e, 4, &g), LOOM_HALO_SUCCESS);
    }
    EXPECT_EQ(loom_halo_realize(e), LOOM_HALO_ERR_MISMATCH);
    loom_halo_destroy(&e);
  }
  char cell[64];
  const int64_t narrow[3] = {2, 1 << 20, int64_t{1} << 40};  // stride 0 below the element
  EXPECT_EQ(loom_halo_attach_field(d, 4, cell, narrow, &field), LOOM_HALO_ERR_ARG);
  const int64_t overlapping[3] = {4, 8, int64_t{1} << 40};  // rows overlap
  EXPECT_EQ(loom_halo_attach_field(d, 4, cell, overlapping, &field), LOOM_HALO_ERR_ARG);
  const int64_t wide[3] = {4, 1 << 20, int64_t{1} << 40};
  EXPECT_EQ(loom_halo_attach_field(d, 4, nullptr, wide, &field), LOOM_HALO_ERR_ARG);
  EXPECT_EQ(loom_halo_set_methods(d, LOOM_HALO_METHOD_SELF), LOOM_HALO_ERR_ARG);  // no MPI
  EXPECT_EQ(loom_halo_set_methods(d, 8 | LOOM_HALO_METHOD_MPI), LOOM_HALO_ERR_ARG);
  EXPECT_EQ(loom_halo_set_methods(nullptr, LOOM_HALO_METHOD_MPI), LOOM_HALO_ERR_ARG);
  ASSERT_EQ(loom_halo_realize(d), LOOM_HALO_SUCCESS) << loom_halo_error_message();
  EXPECT_EQ(loom_halo_set_methods(d, LOOM_HALO_METHODS_ALL), LOOM_HALO_ERR_STATE);
  EXPECT_EQ(loom_halo_attach_field(d, 4, cell, wide, &field), LOOM_HALO_ERR_STATE);
  EXPECT_EQ(loom_halo_realize(d), LOOM_HALO_ERR_STATE);
  EXPECT_EQ(loom_halo_add_field(d, 8, &field), LOOM_HALO_ERR_STATE);
  EXPECT_NE(std::string(loom_halo_error_message()).find("after"), std::string::npos);
  EXPECT_EQ(loom_halo_field(d, 1, &base, strides), LOOM_HALO_ERR_ARG);
  EXPECT_EQ(loom_halo_field(d, -1, &base, strides), LOOM_HALO_ERR_ARG);
  EXPECT_EQ(loom_halo_field(d, 0, &base, strides), LOOM_HALO_SUCCESS);
  EXPECT_EQ(strides[0], 4);
  EXPECT_EQ(loom_halo_finish(d), LOOM_HALO_ERR_STATE);
  ASSERT_EQ(loom_halo_start(d), LOOM_HALO_SUCCESS);
  EXPECT_EQ(loom_halo_start(d), LOOM_HALO_ERR_STATE);
  EXPECT_EQ(loom_halo_finish(d), LOOM_HALO_SUCCESS);
  // Destroy completes an exchange left in flight.
  ASSERT_EQ(loom_halo_start(d), LOOM_HALO_SUCCESS);
  EXPECT_EQ(loom_halo_destroy(&d), LOOM_HALO_SUCCESS);
  EXPECT_STREQ(loom_halo_error_string(LOOM_HALO_ERR_RADIUS), "LOOM_HALO_ERR_RADIUS");
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  ::testing::InitGoogleTest(&argc, argv);
  for (int i = 1; i < argc; ++i)
    if (std::strncmp(argv[i], "--stress-steps=", 15) == 0) stress_steps = std::atoi(argv[i] + 15);
  const int rc = RUN_ALL_TESTS();
  int worst = rc;
  MPI_Allreduce(&rc, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return worst;
}
