// Online trials of blocking point-to-point messages (docs/model.md, "Online trials"): the
// first messages of a kind try the host's engine, then Loom's packing, then the host again,
// and the kind then settles on one method; every message arrives intact meanwhile. Two ranks
// ping-pong one vector type; --mode says what the environment asks for: `online` (the default),
// `off` (LOOM_ONLINE=0) or `pack` (LOOM_METHOD=pack: nothing to try).
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstring>
#include <string>
#include <vector>

#include "loom/loom.h"
#include "model/trial.hpp"
#include "tests/mpi/gtest_mpi.hpp"

namespace {

std::string mode = "online";

constexpr int kInts = 4096;  // packed: 16 KiB, spread over 32 KiB
constexpr int kRoundTrips = loom::model::MethodTrial::kSpan + 6;

int value(int round, int rank, int i) {
  return round * 1000003 + rank * 7919 + i;
}

TEST(OnlineTrial, FirstMessagesTryBothMethodsThenSettle) {
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  ASSERT_EQ(size, 2) << "run with 2 ranks";
  MPI_Datatype every_other;
  ASSERT_EQ(MPI_Type_vector(kInts, 1, 2, MPI_INT, &every_other), MPI_SUCCESS);
  ASSERT_EQ(MPI_Type_commit(&every_other), MPI_SUCCESS);
  std::vector<int> out(2 * kInts), in(2 * kInts);
  const int peer = 1 - rank;
  // Per send: 1 when Loom packed it, 0 when it left it to the host.
  std::vector<int> packed_sends;
  loom_stats start;
  loom_get_stats(&start);
  for (int round = 0; round < kRoundTrips; ++round) {
    for (int i = 0; i < 2 * kInts; ++i) out[i] = value(round, rank, i);
    std::fill(in.begin(), in.end(), -1);
    loom_stats before, after;
    loom_get_stats(&before);
    if (rank == 0) {
      ASSERT_EQ(MPI_Send(out.data(), 1, every_other, peer, round, MPI_COMM_WORLD), MPI_SUCCESS);
      loom_get_stats(&after);
      ASSERT_EQ(MPI_Recv(in.data(), 1, every_other, peer, round, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
                MPI_SUCCESS);
    } else {
      ASSERT_EQ(MPI_Recv(in.data(), 1, every_other, peer, round, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
                MPI_SUCCESS);
      loom_get_stats(&before);
      ASSERT_EQ(MPI_Send(out.data(), 1, every_other, peer, round, MPI_COMM_WORLD), MPI_SUCCESS);
      loom_get_stats(&after);
    }
    packed_sends.push_back(static_cast<int>(after.send_packed - before.send_packed));
    EXPECT_EQ(after.send_packed - before.send_packed + after.send_host - before.send_host, 1u);
    int wrong = 0;
    for (int i = 0; i < 2 * kInts; ++i) wrong += in[i] != (i % 2 == 0 ? value(round, peer, i) : -1);
    ASSERT_EQ(wrong, 0) << "round " << round << " rank " << rank;
  }
  loom_stats end;
  loom_get_stats(&end);
  const uint64_t trials =
      end.trials_kept - start.trials_kept + end.trials_switched - start.trials_switched;
  std::string routes;
  for (int p : packed_sends) routes += p ? 'P' : 'H';
  std::printf("rank %d sends (H host, P packed): %s\n", rank, routes.c_str());
  std::string schedule;
  for (const auto& slot : loom::model::MethodTrial::kSchedule)
    schedule += slot.method == loom::model::Method::Host ? 'H' : 'P';
  using loom::model::MethodTrial;
  const auto uniform = [](const std::string& part) {
    return part == std::string(part.size(), 'H') || part == std::string(part.size(), 'P');
  };
  if (mode == "online") {
    // Each rank settles its receive kind and its send kind, after two rounds of the schedule
    // with round one's choice between them. Rank 1 settles its receives one message before
    // its last scheduled send, and that send must still follow the schedule: rank 0's receive
    // trial is timing it.
    EXPECT_EQ(trials, 2u);
    EXPECT_EQ(routes.substr(0, schedule.size()), schedule) << routes;
    EXPECT_EQ(routes.substr(MethodTrial::kSecondRound, schedule.size()), schedule) << routes;
    EXPECT_TRUE(uniform(
        routes.substr(MethodTrial::kMessages, MethodTrial::kSecondRound - MethodTrial::kMessages)))
        << routes;
    EXPECT_TRUE(uniform(routes.substr(MethodTrial::kSpan))) << routes;
  } else {
    EXPECT_EQ(trials, 0u);
    if (mode == "pack") {
      EXPECT_EQ(routes, std::string(routes.size(), 'P'));
    } else {  // the model alone: one method throughout
      EXPECT_TRUE(uniform(routes)) << routes;
    }
  }
  MPI_Type_free(&every_other);
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i + 1 < argc; ++i)
    if (!std::strcmp(argv[i], "--mode")) mode = argv[i + 1];
  MPI_Init(&argc, &argv);
  return loom::test::run_tests_and_finalize(&argc, argv);
}
