// The halo library's same-node synchronisation (halo/step_flags.hpp) with threads standing in
// for a node's ranks: each owns an interior that its neighbours copy into their ghosts every
// step, through the flags alone. Every ghost must hold its source's values of that step (no
// stale or torn copy); under ThreadSanitizer (tools/test-all.sh) a missing acquire or release
// shows as a data race on the plain interior and ghost arrays.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <random>
#include <thread>
#include <vector>

#include "halo/step_flags.hpp"

namespace {

constexpr int kCells = 256;

uint64_t test_seed() {
  const char* text = std::getenv("LOOM_TEST_SEED");
  return text ? std::strtoull(text, nullptr, 10) : std::random_device{}();
}

int64_t value(int rank, int64_t step, int cell) {
  return (step << 20) ^ (int64_t{rank} << 12) ^ cell;
}

struct Rank {
  std::vector<int64_t> flags;  // [0] published step, [1 + q] step reader q has copied
  std::vector<int64_t> interior = std::vector<int64_t>(kCells);
  std::vector<int64_t> ghost_left = std::vector<int64_t>(kCells);
  std::vector<int64_t> ghost_right = std::vector<int64_t>(kCells);
};

// `ranks` threads in a periodic ring, each reading both neighbours, `steps` steps; random busy
// delays on rank 0 at any point of a step, as the MPI stress test does.
void run_ring(int ranks, int64_t steps, int spin_micros, uint64_t seed) {
  std::vector<Rank> node(static_cast<size_t>(ranks));
  for (Rank& r : node) r.flags.assign(static_cast<size_t>(1 + ranks), 0);
  std::vector<int> errors(static_cast<size_t>(ranks), 0);
  auto body = [&](int me) {
    Rank& mine = node[static_cast<size_t>(me)];
    const int left = (me + ranks - 1) % ranks, right = (me + 1) % ranks;
    // A neighbour on both sides is one source, read in one pass, as the library reads it.
    const std::vector<int> peers =
        left == right ? std::vector<int>{left} : std::vector<int>{left, right};
    std::mt19937_64 random(seed + static_cast<uint64_t>(me));
    auto maybe_delay = [&] {
      if (me != 0 || random() % 4 != 0) return;
      volatile uint64_t sink = 0;
      for (uint64_t i = 0, n = random() % 20000; i < n; ++i) sink = sink + i;
    };
    for (int64_t step = 1; step <= steps; ++step) {
      for (int c = 0; c < kCells; ++c) mine.interior[static_cast<size_t>(c)] = value(me, step, c);
      maybe_delay();
      loom::halo::publish(mine.flags.data(), step);
      for (int source : peers) {
        Rank& theirs = node[static_cast<size_t>(source)];
        loom::halo::wait_published(theirs.flags.data(), step, spin_micros);
        if (source == left) mine.ghost_left = theirs.interior;
        if (source == right) mine.ghost_right = theirs.interior;
        loom::halo::mark_read(theirs.flags.data(), me, step);
      }
      for (int c = 0; c < kCells; ++c) {
        errors[static_cast<size_t>(me)] +=
            mine.ghost_left[static_cast<size_t>(c)] != value(left, step, c);
        errors[static_cast<size_t>(me)] +=
            mine.ghost_right[static_cast<size_t>(c)] != value(right, step, c);
      }
      maybe_delay();
      loom::halo::wait_read(mine.flags.data(), peers, step, spin_micros);
    }
  };
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r) threads.emplace_back(body, r);
  for (std::thread& t : threads) t.join();
  for (int r = 0; r < ranks; ++r)
    EXPECT_EQ(errors[static_cast<size_t>(r)], 0) << "rank " << r << " copied stale or torn cells";
}

TEST(HaloStepFlags, RingOfTwoCopiesEveryStepExactly) {
  const uint64_t seed = test_seed();
  std::printf("seed %llu (LOOM_TEST_SEED repeats it)\n", static_cast<unsigned long long>(seed));
  run_ring(2, 2000, 200, seed);
}

TEST(HaloStepFlags, RingOfFourWithoutSpinning) {
  const uint64_t seed = test_seed();
  std::printf("seed %llu (LOOM_TEST_SEED repeats it)\n", static_cast<unsigned long long>(seed));
  run_ring(4, 1000, 0, seed);
}

}  // namespace
