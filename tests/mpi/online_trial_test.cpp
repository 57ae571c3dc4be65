// Online trials of point-to-point messages (docs/model.md, "Online trials"): the first
// messages of a kind try the model's choice, the host's engine, Loom's packing and the model's
// choice again, twice,
// and the kind then settles on one method; every message arrives intact meanwhile. Two ranks
// ping-pong one vector type with blocking calls, then exchange another with MPI_Isend and
// MPI_Irecv; --mode says what the environment asks for: `online` (the default), `off`
// (LOOM_ONLINE=0) or `pack` (LOOM_METHOD=pack: nothing to try).
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "loom/loom.h"
#include "model/trial.hpp"
#include "tests/mpi/gtest_mpi.hpp"
#include "tests/mpi/host_quirks.hpp"

namespace {

std::string mode = "online";

constexpr int kInts = 4096;  // packed: 16 KiB, spread over 32 KiB
constexpr int kRoundTrips = loom::model::MethodTrial::kSettledBy + 6;

int value(int round, int rank, int i) {
  return round * 1000003 + rank * 7919 + i;
}

uint64_t trials_since(const loom_stats& start) {
  loom_stats end;
  loom_get_stats(&end);
  return end.trials_kept - start.trials_kept + end.trials_switched - start.trials_switched;
}

uint64_t counter(const char* name) {
  uint64_t value = 0;
  EXPECT_EQ(loom_get_counter(name, &value), 1) << name;
  return value;
}

bool uniform(const std::string& routes) {
  return routes == std::string(routes.size(), 'H') || routes == std::string(routes.size(), 'P');
}

// A settled stretch: one method throughout, or packing that went to the host in its
// confirmation (MethodTrial::confirm: the kind's first messages after a verdict of packing,
// which a loaded machine can find slower than the host ran in the trial).
bool settled_or_confirmed(const std::string& routes) {
  const size_t host_from = routes.find('H');
  const size_t confirmed_by = loom::model::MethodTrial::kConfirmMessages + 2;
  return uniform(routes) || (routes[0] == 'P' && host_from <= confirmed_by &&
                             routes.find('P', host_from) == std::string::npos);
}

std::string schedule_with(char current) {
  using loom::model::Method;
  return loom::model::MethodTrial::schedule_text(current == 'H' ? Method::Host : Method::Pack);
}

// Whether `routes` are the messages [from, from + size) of a round of the schedule defending
// `current`. The other method's block may end early (MethodTrial::kFarBehind): once it is ruled
// out, after its two warm-ups and at least kRuledOutAfter timed messages, the rest of the block
// takes `current` (on the initiator one message later, where its receives rule it out).
bool follows_schedule(const std::string& routes, char current, size_t from) {
  using loom::model::MethodTrial;
  const std::string full = schedule_with(current);
  const size_t block = full.find(current == 'H' ? 'P' : 'H');
  const size_t block_size = full.find(current, block) - block;
  for (size_t run = 2 + MethodTrial::kRuledOutAfter; run <= block_size; ++run) {
    std::string cut = full;
    cut.replace(block + run, block_size - run, block_size - run, current);
    if (routes == cut.substr(from, routes.size())) return true;
  }
  return false;
}

// `routes` (one H or P per send of a kind, all of a run's) against what --mode asks for. With
// trials, both kinds of the traffic (send and receive) settle, after waiting on the model's
// choice until a trial can pay for itself (MethodTrial::wait_for, between kMinWait and kMaxWait
// messages) and two rounds of the schedule: round one tries the model's choice as it is (the
// kind's first send), round two round one's choice, which every send between the rounds takes.
// `settles_after_last_send`: this process's receives of the kind record a round's last sample
// only after the round's last scheduled send went (a ping-pong's initiator sends before it
// receives), so the receives' verdict reaches its sends one message later, and that last send
// follows the round's defended method or the send trial's own verdict. `warmups_stopped`: this
// process's kinds whose host warm-up stopped (MethodTrial::gauge_warmup); their trials try the
// host no more, and the sends follow their receives' ruling.
void check_routes(const std::string& routes, uint64_t trials, uint64_t warmups_stopped,
                  bool settles_after_last_send = false) {
  using loom::model::MethodTrial;
  if (mode != "online") {
    EXPECT_EQ(trials, 0u);
    EXPECT_TRUE(mode == "pack" ? routes == std::string(routes.size(), 'P') : uniform(routes))
        << routes;
    return;
  }
  ASSERT_GE(routes.size(), static_cast<size_t>(MethodTrial::kSettledBy)) << routes;
  EXPECT_EQ(trials, 2u);
  // The wait runs the model's choice, its last kHostTypedWarmupMessages the host (where the host
  // needs them), and so do the schedule's first messages: as is, then (as is the host) the host's
  // block; the first other method after the warm-up shows where the schedule began.
  const size_t warmup = static_cast<size_t>(loom::test::kHostTypedWarmupMessages);
  const size_t warm_from = routes.find_first_not_of(routes[0]);
  ASSERT_NE(warm_from, std::string::npos) << routes;
  size_t first_other = warm_from;
  if (warmup > 0 && routes[0] == 'P') {
    // Packing waited: the warm-up is the first host stretch, exactly kHostTypedWarmupMessages
    // long, or kGaugedHost where its first messages found the host far behind
    // (MethodTrial::gauge_warmup), and the schedule's as-is block follows it packed.
    const size_t host_run = routes.find('P', warm_from) - warm_from;
    EXPECT_TRUE(host_run == warmup || host_run == MethodTrial::kGaugedHost) << routes;
    if (warmups_stopped > 0) {
      // The warm-up of the sends or of the receives found the host far behind: the trial sends
      // nothing more to the host, and every kind settles on packing.
      EXPECT_EQ(routes.find('H', warm_from + host_run), std::string::npos) << routes;
      return;
    }
    EXPECT_EQ(host_run, warmup) << routes;
    EXPECT_EQ(routes[warm_from + warmup], 'P') << routes;
    first_other = routes.find('H', warm_from + warmup);
    ASSERT_NE(first_other, std::string::npos) << routes;
  }
  const int wait = static_cast<int>(first_other) - (routes[0] == 'H' ? 12 : 5);
  EXPECT_GE(wait, MethodTrial::kMinWait) << routes;
  EXPECT_LE(wait, MethodTrial::kMaxWait) << routes;
  const std::string trial = routes.substr(static_cast<size_t>(std::max(wait, 0)));
  // Each round's verdict comes with its last timed message: its untimed last message takes
  // the verdict, like the messages after it (one message later where the receives settle
  // after the sends).
  const int last = MethodTrial::kMessages - 1;
  const int settled = last + (settles_after_last_send ? 1 : 0);
  EXPECT_TRUE(follows_schedule(trial.substr(0, last), trial[0], 0)) << routes;
  const std::string between = trial.substr(settled, MethodTrial::kSecondRound - settled);
  EXPECT_TRUE(uniform(between)) << routes;
  EXPECT_TRUE(follows_schedule(trial.substr(MethodTrial::kSecondRound, last), between[0], 0))
      << routes;
  EXPECT_TRUE(settled_or_confirmed(trial.substr(MethodTrial::kSecondRound + settled))) << routes;
}

// Ping-pongs `type` (one int in every `stride`, kInts of them) kRoundTrips times between the
// two ranks, checking every message's bytes, and returns this rank's sends' routes (H host, P
// packed); `after_round(routes)` runs after each round trip.
std::string ping_pong_routes(MPI_Datatype type, int stride,
                             const std::function<void(const std::string&)>& after_round = {}) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  std::vector<int> out(stride * kInts), in(stride * kInts);
  const int peer = 1 - rank;
  std::string routes;
  for (int round = 0; round < kRoundTrips; ++round) {
    for (size_t i = 0; i < out.size(); ++i) out[i] = value(round, rank, static_cast<int>(i));
    std::fill(in.begin(), in.end(), -1);
    loom_stats before, after;
    loom_get_stats(&before);
    int send_rc = MPI_SUCCESS, recv_rc = MPI_SUCCESS;
    if (rank == 0) {
      send_rc = MPI_Send(out.data(), 1, type, peer, round, MPI_COMM_WORLD);
      loom_get_stats(&after);
      recv_rc = MPI_Recv(in.data(), 1, type, peer, round, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
      recv_rc = MPI_Recv(in.data(), 1, type, peer, round, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      loom_get_stats(&before);
      send_rc = MPI_Send(out.data(), 1, type, peer, round, MPI_COMM_WORLD);
      loom_get_stats(&after);
    }
    EXPECT_EQ(send_rc, MPI_SUCCESS);
    EXPECT_EQ(recv_rc, MPI_SUCCESS);
    routes += after.send_packed - before.send_packed ? 'P' : 'H';
    EXPECT_EQ(after.send_packed - before.send_packed + after.send_host - before.send_host, 1u);
    int wrong = 0;
    for (size_t i = 0; i < in.size(); ++i)
      wrong += in[i] != (i % stride == 0 ? value(round, peer, static_cast<int>(i)) : -1);
    if (wrong || send_rc != MPI_SUCCESS || recv_rc != MPI_SUCCESS) {
      ADD_FAILURE() << wrong << " ints wrong in round " << round << " on rank " << rank;
      break;
    }
    if (after_round) after_round(routes);
  }
  std::printf("rank %d sends (H host, P packed): %s\n", rank, routes.c_str());
  return routes;
}

TEST(OnlineTrial, FirstMessagesTryBothMethodsThenSettle) {
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  ASSERT_EQ(size, 2) << "run with 2 ranks";
  MPI_Datatype every_other;
  ASSERT_EQ(MPI_Type_vector(kInts, 1, 2, MPI_INT, &every_other), MPI_SUCCESS);
  ASSERT_EQ(MPI_Type_commit(&every_other), MPI_SUCCESS);
  loom_stats start;
  loom_get_stats(&start);
  const uint64_t stopped_before = counter("p2p.online_trials.warm-ups_stopped");
  const std::string routes = ping_pong_routes(every_other, 2);
  // Rank 1 settles its receives one message before its last scheduled send, and that send
  // must still follow the schedule: rank 0's receive trial is timing it. Rank 0 settles its
  // receives one message after its last scheduled send.
  check_routes(routes, trials_since(start),
               counter("p2p.online_trials.warm-ups_stopped") - stopped_before, rank == 0);
  MPI_Type_free(&every_other);
}

// Busy, not asleep: a core woken from sleep ran the next messages slower, and those fell in
// samples meant to stay clean.
void spin_for(std::chrono::steady_clock::duration span) {
  const auto until = std::chrono::steady_clock::now() + span;
  while (std::chrono::steady_clock::now() < until) {
  }
}

// Where the host's warm-up (MPICH: the last 16 messages of a kind's wait) finds the host far
// behind in its first kGaugedHost messages, the rest of the warm-up runs as is, and the trial
// starts where it would have (MethodTrial::gauge_warmup). Both ranks stall after each round trip
// whose send went to the host before the kind's trial starts, so that the warm-up's host
// intervals take 10 times the loop's as-is round trips and more. Open MPI needs no warm-up:
// nothing stops there.
TEST(OnlineTrial, AWarmupThatFindsTheHostFarBehindStops) {
  using loom::model::MethodTrial;
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Datatype every_eighth;
  ASSERT_EQ(MPI_Type_vector(kInts, 1, 8, MPI_INT, &every_eighth), MPI_SUCCESS);
  ASSERT_EQ(MPI_Type_commit(&every_eighth), MPI_SUCCESS);
  loom_stats start;
  loom_get_stats(&start);
  const uint64_t stopped_before = counter("p2p.online_trials.warm-ups_stopped");
  const uint64_t started_before = counter("p2p.online_trials.started");
  // The stall: ten times the loop's fastest packed round trip (sanitizer builds run it several
  // times slower), and at least 5 milliseconds.
  auto last = std::chrono::steady_clock::now();
  auto fastest = std::chrono::steady_clock::duration::max();
  const std::string routes = ping_pong_routes(every_eighth, 8, [&](const std::string& sent) {
    const auto now = std::chrono::steady_clock::now();
    if (sent.size() > 1 && sent.back() == 'P') fastest = std::min(fastest, now - last);
    if (sent.back() == 'H' && counter("p2p.online_trials.started") == started_before)
      spin_for(std::max<std::chrono::steady_clock::duration>(std::chrono::milliseconds(5),
                                                             10 * fastest));
    last = std::chrono::steady_clock::now();
  });
  const uint64_t stopped = counter("p2p.online_trials.warm-ups_stopped") - stopped_before;
  check_routes(routes, trials_since(start), stopped, rank == 0);
  if (mode != "online" || loom::test::kHostTypedWarmupMessages == 0 || routes[0] == 'H') {
    EXPECT_EQ(stopped, 0u) << routes;
  } else {
    // The kind's sends and its receives, each on its own.
    EXPECT_EQ(stopped, 2u) << routes;
    const size_t warm_from = routes.find('H');
    EXPECT_EQ(routes.substr(warm_from, MethodTrial::kGaugedHost + 1),
              std::string(MethodTrial::kGaugedHost, 'H') + 'P')
        << routes;
  }
  MPI_Type_free(&every_eighth);
}

// A settled kind is tried again at its re-check point (MethodTrial::recheck_point, message
// 4096 of the kind): one round of the schedule defending the verdict, on both ranks at the same
// round trip, then the kind settles again. A type of its own, so that the kind starts young
// (plans, and kinds' ages with them, are cached by signature).
TEST(OnlineTrial, SettledKindsAreTriedAgainAtTheirRecheckPoint) {
  using loom::model::MethodTrial;
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Datatype every_fourth;
  ASSERT_EQ(MPI_Type_vector(kInts, 1, 4, MPI_INT, &every_fourth), MPI_SUCCESS);
  ASSERT_EQ(MPI_Type_commit(&every_fourth), MPI_SUCCESS);
  constexpr int kPoint = static_cast<int>(MethodTrial::kFirstRecheck);
  constexpr int kTrips = kPoint + MethodTrial::kMessages + 8;
  std::vector<int> out(4 * kInts), in(4 * kInts);
  const int peer = 1 - rank;
  std::string routes;
  uint64_t rechecked_before = 0, rechecked_after = 0;
  ASSERT_EQ(loom_get_counter("p2p.online_trials.rechecked", &rechecked_before), 1);
  for (int round = 0; round < kTrips; ++round) {
    const int pattern = round % 1024;  // value() would overflow an int beyond round 2146
    for (int i = 0; i < 4 * kInts; ++i) out[i] = value(pattern, rank, i);
    std::fill(in.begin(), in.end(), -1);
    loom_stats before, after;
    if (rank == 0) {
      loom_get_stats(&before);
      ASSERT_EQ(MPI_Send(out.data(), 1, every_fourth, peer, round, MPI_COMM_WORLD), MPI_SUCCESS);
      loom_get_stats(&after);
      ASSERT_EQ(
          MPI_Recv(in.data(), 1, every_fourth, peer, round, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
          MPI_SUCCESS);
    } else {
      ASSERT_EQ(
          MPI_Recv(in.data(), 1, every_fourth, peer, round, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
          MPI_SUCCESS);
      loom_get_stats(&before);
      ASSERT_EQ(MPI_Send(out.data(), 1, every_fourth, peer, round, MPI_COMM_WORLD), MPI_SUCCESS);
      loom_get_stats(&after);
    }
    routes += after.send_packed > before.send_packed ? 'P' : 'H';
    int wrong = 0;
    for (int i = 0; i < 4 * kInts; ++i)
      wrong += in[i] != (i % 4 == 0 ? value(pattern, peer, i) : -1);
    ASSERT_EQ(wrong, 0) << "round " << round << " rank " << rank;
  }
  ASSERT_EQ(loom_get_counter("p2p.online_trials.rechecked", &rechecked_after), 1);
  const uint64_t rechecks = rechecked_after - rechecked_before;
  if (mode != "online") {
    EXPECT_EQ(rechecks, 0u);
    EXPECT_TRUE(mode == "pack" ? routes == std::string(routes.size(), 'P') : uniform(routes));
    MPI_Type_free(&every_fourth);
    return;
  }
  // Both kinds (this rank's sends and receives) tried again once.
  EXPECT_EQ(rechecks, 2u);
  // Settled from the first trial's end to the point; then the round (its first message may
  // still follow the first trial's defended method on the initiator, whose receives reach the
  // point one message after its sends, and its last comes with the verdict); then settled.
  const std::string settled_before =
      routes.substr(MethodTrial::kSettledBy, kPoint - MethodTrial::kSettledBy);
  EXPECT_TRUE(uniform(settled_before)) << settled_before;
  const std::string round = routes.substr(kPoint + 1, MethodTrial::kMessages - 2);
  EXPECT_TRUE(follows_schedule(round, routes[kPoint - 1], 1)) << routes.substr(kPoint - 4);
  EXPECT_TRUE(settled_or_confirmed(routes.substr(kPoint + MethodTrial::kMessages)))
      << routes.substr(kPoint - 4);
  MPI_Type_free(&every_fourth);
}

// Exchange traffic (MPI_Isend/MPI_Irecv): the same schedule, each message timed by the interval
// to the next post of its kind. Both ranks post a receive and a send per round and wait for
// both, as a halo exchange does.
TEST(OnlineTrial, ExchangesTryBothMethodsThenSettle) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Datatype every_third;
  ASSERT_EQ(MPI_Type_vector(kInts, 1, 3, MPI_INT, &every_third), MPI_SUCCESS);
  ASSERT_EQ(MPI_Type_commit(&every_third), MPI_SUCCESS);
  std::vector<int> out(3 * kInts), in(3 * kInts);
  const int peer = 1 - rank;
  std::string routes;  // per round: how this rank's send went, H host or P packed
  loom_stats start;
  loom_get_stats(&start);
  const uint64_t stopped_before = counter("p2p.online_trials.warm-ups_stopped");
  for (int round = 0; round < kRoundTrips; ++round) {
    for (int i = 0; i < 3 * kInts; ++i) out[i] = value(round, rank, i);
    std::fill(in.begin(), in.end(), -1);
    MPI_Request requests[2];
    ASSERT_EQ(MPI_Irecv(in.data(), 1, every_third, peer, round, MPI_COMM_WORLD, &requests[0]),
              MPI_SUCCESS);
    loom_stats before, after;
    loom_get_stats(&before);
    ASSERT_EQ(MPI_Isend(out.data(), 1, every_third, peer, round, MPI_COMM_WORLD, &requests[1]),
              MPI_SUCCESS);
    loom_get_stats(&after);
    ASSERT_EQ(MPI_Waitall(2, requests, MPI_STATUSES_IGNORE), MPI_SUCCESS);
    EXPECT_EQ(after.send_packed - before.send_packed + after.send_host - before.send_host, 1u);
    routes += after.send_packed > before.send_packed ? 'P' : 'H';
    int wrong = 0;
    for (int i = 0; i < 3 * kInts; ++i) wrong += in[i] != (i % 3 == 0 ? value(round, peer, i) : -1);
    ASSERT_EQ(wrong, 0) << "round " << round << " rank " << rank;
  }
  std::printf("rank %d exchange sends (H host, P packed): %s\n", rank, routes.c_str());
  // Each kind settles at its kSpan-th post after its wait, when round two's last timed
  // interval closes.
  check_routes(routes, trials_since(start),
               counter("p2p.online_trials.warm-ups_stopped") - stopped_before);
  MPI_Type_free(&every_third);
}

// A process's sends of a kind follow its receives of the kind, also where the two sides' own
// trials decide apart and the receives then confirm packing (docs/model.md, "Online trials").
// Rank 1 stalls before some of its sends in round two: a stall before the send of the kind's
// message m falls in its receive's interval m and its send's interval m - 1. With packing
// defended, stalls before slots 3, 4, 22, 23 and 15-18 slow every as-is and packed sample of its
// sends, which go to the host, and two as-is samples of its receives, which keep packing and
// confirm it over the next messages; the sends must run packed meanwhile, as the receives do.
// That split needs a host a little slower than packing (Open MPI on the test machines; MPICH's
// host, clearly slower, is ruled out early on both sides, and both keep packing).
TEST(OnlineTrial, SendsFollowTheirReceivesWhenTheTwoDecideApart) {
  using loom::model::MethodTrial;
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const int peer = 1 - rank;
  constexpr int kStride = 5;  // a type of its own: its kinds start young
  const int stall_before[] = {3, 4, 22, 23, 15, 16, 17, 18};  // slots of round two
  MPI_Datatype strided;
  ASSERT_EQ(MPI_Type_vector(kInts, 1, kStride, MPI_INT, &strided), MPI_SUCCESS);
  ASSERT_EQ(MPI_Type_commit(&strided), MPI_SUCCESS);
  std::vector<int> out(kStride * kInts), in(kStride * kInts);
  std::string routes;
  int trial_from = -1;  // the message that started the kind's trials
  uint64_t started_before = 0, started_after = 0;
  loom_stats start;
  loom_get_stats(&start);
  for (int round = 0; round < kRoundTrips; ++round) {
    for (int i = 0; i < kStride * kInts; ++i) out[i] = value(round, rank, i);
    std::fill(in.begin(), in.end(), -1);
    MPI_Request requests[2];
    ASSERT_EQ(loom_get_counter("p2p.online_trials.started", &started_before), 1);
    ASSERT_EQ(MPI_Irecv(in.data(), 1, strided, peer, round, MPI_COMM_WORLD, &requests[0]),
              MPI_SUCCESS);
    ASSERT_EQ(loom_get_counter("p2p.online_trials.started", &started_after), 1);
    if (trial_from < 0 && started_after > started_before) trial_from = round;
    const int slot = trial_from < 0 ? -1 : round - trial_from - MethodTrial::kSecondRound;
    if (rank == 1 &&
        std::find(std::begin(stall_before), std::end(stall_before), slot) != std::end(stall_before))
      spin_for(std::chrono::milliseconds(20));
    loom_stats before, after;
    loom_get_stats(&before);
    ASSERT_EQ(MPI_Isend(out.data(), 1, strided, peer, round, MPI_COMM_WORLD, &requests[1]),
              MPI_SUCCESS);
    loom_get_stats(&after);
    ASSERT_EQ(MPI_Waitall(2, requests, MPI_STATUSES_IGNORE), MPI_SUCCESS);
    routes += after.send_packed > before.send_packed ? 'P' : 'H';
    int wrong = 0;
    for (int i = 0; i < kStride * kInts; ++i)
      wrong += in[i] != (i % kStride == 0 ? value(round, peer, i) : -1);
    ASSERT_EQ(wrong, 0) << "round " << round << " rank " << rank;
  }
  MPI_Type_free(&strided);
  if (mode != "online") {
    EXPECT_TRUE(uniform(routes)) << routes;
    return;
  }
  ASSERT_GE(trial_from, 0) << routes;
  loom_stats end;
  loom_get_stats(&end);
  // 1 and 1 on rank 1 where the two decided apart; 2 and 0, or 0 and 2, where they did not.
  std::printf("rank %d exchange sends (H host, P packed), trials kept %llu, switched %llu: %s\n",
              rank, static_cast<unsigned long long>(end.trials_kept - start.trials_kept),
              static_cast<unsigned long long>(end.trials_switched - start.trials_switched),
              routes.c_str());
  // From round two's untimed last message, which takes the receives' verdict, on.
  const size_t verdict_at =
      static_cast<size_t>(trial_from + MethodTrial::kSecondRound + MethodTrial::kMessages - 1);
  EXPECT_TRUE(settled_or_confirmed(routes.substr(verdict_at))) << routes;
}

}  // namespace

int main(int argc, char** argv) {
  mode = loom::test::mode_argument(argc, argv, "online");
  MPI_Init(&argc, &argv);
  return loom::test::run_tests_and_finalize(&argc, argv);
}
