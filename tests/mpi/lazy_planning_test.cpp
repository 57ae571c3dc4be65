// Lazy planning (docs/commit.md): a committed type Loom has not planned yet reaches the host as
// written, with no Loom work on its contents, until its host time pays for its plan; every message
// is counted on its route whatever its address form. Two ranks; each case compares the bytes
// received through Loom (MPI_*) with the same exchange through the host (PMPI_*).
//
// --mode lazy (the default planning) checks that types used once and types rebuilt every step
// are never decoded, and that a long-lived type is planned once its host time passes its budget;
// --mode pack (LOOM_METHOD=pack, every type planned at its first use and packed by Loom) checks
// that Loom serves the same exchanges, absolute addresses from MPI_BOTTOM included.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "loom/loom.h"
#include "loom/testing.h"
#include "tests/mpi/gtest_mpi.hpp"

namespace {

std::string mode = "lazy";

bool lazy() {
  return mode == "lazy";
}

uint64_t counter(const char* name) {
  uint64_t value = 0;
  EXPECT_EQ(loom_get_counter(name, &value), 1) << name;
  return value;
}

// Loom's counters a case looks at, read before and after it.
struct Counters {
  uint64_t decoded, reused, freed_unplanned, contents_read, sends, recvs, send_unplanned,
      recv_unplanned, send_packed, recv_unpacked;
  static Counters now() {
    Counters c;
    c.decoded = counter("types.planning.decoded");
    c.reused = counter("types.planning.reused");
    c.freed_unplanned = counter("types.not_planned.freed");
    c.contents_read = counter("types.not_planned.contents_read");
    c.send_unplanned = counter("p2p.send.host_(not_planned_yet)");
    c.recv_unplanned = counter("p2p.recv.host_(not_planned_yet)");
    c.send_packed = counter("p2p.send.packed");
    c.recv_unpacked = counter("p2p.recv.unpacked");
    c.sends =
        c.send_packed + counter("p2p.send.host") + c.send_unplanned + counter("p2p.send.plain");
    c.recvs =
        c.recv_unpacked + counter("p2p.recv.host") + c.recv_unplanned + counter("p2p.recv.plain");
    return c;
  }
  Counters since(const Counters& before) const {
    Counters d;
    d.decoded = decoded - before.decoded;
    d.reused = reused - before.reused;
    d.freed_unplanned = freed_unplanned - before.freed_unplanned;
    d.contents_read = contents_read - before.contents_read;
    d.sends = sends - before.sends;
    d.recvs = recvs - before.recvs;
    d.send_unplanned = send_unplanned - before.send_unplanned;
    d.recv_unplanned = recv_unplanned - before.recv_unplanned;
    d.send_packed = send_packed - before.send_packed;
    d.recv_unpacked = recv_unpacked - before.recv_unpacked;
    return d;
  }
};

int rank_of_world() {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

using SendFn = int (*)(const void*, int, MPI_Datatype, int, int, MPI_Comm);
using RecvFn = int (*)(void*, int, MPI_Datatype, int, int, MPI_Comm, MPI_Status*);

// One round trip of `send_type` from `send_buf` and `recv_type` into `recv_buf`: rank 0 sends
// first. Through Loom, or through the host (`host`).
void round_trip(bool host, const void* send_buf, MPI_Datatype send_type, void* recv_buf,
                MPI_Datatype recv_type) {
  const SendFn send = host ? PMPI_Send : MPI_Send;
  const RecvFn recv = host ? PMPI_Recv : MPI_Recv;
  const int rank = rank_of_world(), peer = 1 - rank;
  if (rank == 0) {
    ASSERT_EQ(send(send_buf, 1, send_type, peer, 7, MPI_COMM_WORLD), MPI_SUCCESS);
    ASSERT_EQ(recv(recv_buf, 1, recv_type, peer, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
              MPI_SUCCESS);
  } else {
    ASSERT_EQ(recv(recv_buf, 1, recv_type, peer, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
              MPI_SUCCESS);
    ASSERT_EQ(send(send_buf, 1, send_type, peer, 7, MPI_COMM_WORLD), MPI_SUCCESS);
  }
}

std::vector<double> pattern(size_t n, double seed) {
  std::vector<double> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = seed + static_cast<double>(i) * 0.25;
  return v;
}

// A type used for one message on each side: an indexed type of many blocks, whose description
// alone makes its plan cost more than the message.
TEST(LazyPlanning, TypeUsedOnceReachesTheHostAsWritten) {
  const int blocks = 4096;
  std::vector<int> displacements(blocks);
  for (int i = 0; i < blocks; ++i) displacements[i] = 3 * i + (i % 2);
  const std::vector<double> send = pattern(3 * blocks + 2, 1 + rank_of_world());
  std::vector<double> through_loom(send.size(), -1), through_host(send.size(), -1);
  const Counters before = Counters::now();
  for (bool host : {false, true}) {
    MPI_Datatype type;
    MPI_Type_create_indexed_block(blocks, 1, displacements.data(), MPI_DOUBLE, &type);
    MPI_Type_commit(&type);
    round_trip(host, send.data(), type, (host ? through_host : through_loom).data(), type);
    MPI_Type_free(&type);
  }
  const Counters d = Counters::now().since(before);
  EXPECT_EQ(through_loom, through_host);
  EXPECT_EQ(d.sends, 1u);
  EXPECT_EQ(d.recvs, 1u);
  if (lazy()) {
    EXPECT_EQ(d.decoded + d.reused, 0u) << "Loom planned a type used once";
    EXPECT_EQ(d.send_unplanned, 1u);
    EXPECT_EQ(d.recv_unplanned, 1u);
    EXPECT_EQ(d.freed_unplanned, 2u);  // Loom's copy and the host's
  } else {
    EXPECT_EQ(d.send_packed, 1u);
    EXPECT_EQ(d.recv_unpacked, 1u);
  }
}

// A particle code's exchange (issue-sized pattern, small n): per step, the atoms that left are
// new, so the send type is rebuilt: a struct of six indexed-block types at absolute addresses,
// sent from MPI_BOTTOM; the receive side a struct of contiguous types, also from MPI_BOTTOM.
struct Particles {
  static constexpr int kAtomsPerExchanged = 4;
  int n;
  std::vector<double> x, v, f, q, t, m;        // what this rank holds
  std::vector<double> rx, rv, rf, rq, rt, rm;  // what it receives, per path
  explicit Particles(int exchanged, double seed)
      : n(exchanged),
        x(pattern(3 * kAtomsPerExchanged * exchanged, seed)),
        v(pattern(3 * kAtomsPerExchanged * exchanged, seed + 1)),
        f(pattern(3 * kAtomsPerExchanged * exchanged, seed + 2)),
        q(pattern(kAtomsPerExchanged * exchanged, seed + 3)),
        t(pattern(kAtomsPerExchanged * exchanged, seed + 4)),
        m(pattern(kAtomsPerExchanged * exchanged, seed + 5)),
        rx(3 * exchanged),
        rv(3 * exchanged),
        rf(3 * exchanged),
        rq(exchanged),
        rt(exchanged),
        rm(exchanged) {}

  // The send type of step `step`, committed (its inner types freed) and the receive type. As in
  // a real run, the number of atoms that leave changes from step to step, so each step's types
  // are new to Loom: no host time carries over from the last step's (docs/commit.md, freed and
  // recreated types).
  void types(int step, MPI_Datatype* send, MPI_Datatype* recv) {
    const int count = n - 7 * step;  // the atoms that leave in this step
    std::vector<int> d1, d3;
    unsigned seed = 12345u + 977u * static_cast<unsigned>(step);
    const int atoms = kAtomsPerExchanged * n;
    for (int i = 0; i < atoms && static_cast<int>(d1.size()) < count; ++i) {
      seed = seed * 1103515245u + 12345u;
      if ((seed >> 16) % 4 == 0 || atoms - i == count - static_cast<int>(d1.size())) {
        d1.push_back(i);
        d3.push_back(3 * i);
      }
    }
    MPI_Datatype ib1, ib3, c1, c3;
    MPI_Type_create_indexed_block(count, 1, d1.data(), MPI_DOUBLE, &ib1);
    MPI_Type_create_indexed_block(count, 3, d3.data(), MPI_DOUBLE, &ib3);
    const int lengths[6] = {1, 1, 1, 1, 1, 1};
    MPI_Aint at[6];
    const double* arrays[6] = {x.data(), v.data(), f.data(), q.data(), t.data(), m.data()};
    for (int k = 0; k < 6; ++k) MPI_Get_address(arrays[k], &at[k]);
    const MPI_Datatype members[6] = {ib3, ib3, ib3, ib1, ib1, ib1};
    MPI_Type_create_struct(6, lengths, at, members, send);
    MPI_Type_commit(send);
    MPI_Type_free(&ib1);
    MPI_Type_free(&ib3);
    MPI_Type_contiguous(count, MPI_DOUBLE, &c1);
    MPI_Type_contiguous(3 * count, MPI_DOUBLE, &c3);
    double* received[6] = {rx.data(), rv.data(), rf.data(), rq.data(), rt.data(), rm.data()};
    for (int k = 0; k < 6; ++k) MPI_Get_address(received[k], &at[k]);
    const MPI_Datatype parts[6] = {c3, c3, c3, c1, c1, c1};
    MPI_Type_create_struct(6, lengths, at, parts, recv);
    MPI_Type_commit(recv);
    MPI_Type_free(&c1);
    MPI_Type_free(&c3);
  }

  std::vector<double> received() const {
    std::vector<double> all;
    for (const auto* r : {&rx, &rv, &rf, &rq, &rt, &rm})
      all.insert(all.end(), r->begin(), r->end());
    return all;
  }
};

TEST(LazyPlanning, TypesRebuiltEveryStepReachTheHostAsWritten) {
  const int steps = 4, trips = 20;
  Particles p(300, 10.0 * (1 + rank_of_world()));
  const Counters before = Counters::now();
  for (int step = 0; step < steps; ++step) {
    std::vector<double> through[2];
    for (bool host : {false, true}) {
      MPI_Datatype send, recv;
      p.types(step, &send, &recv);
      for (int trip = 0; trip < trips; ++trip) round_trip(host, MPI_BOTTOM, send, MPI_BOTTOM, recv);
      through[host] = p.received();
      MPI_Type_free(&send);
      MPI_Type_free(&recv);
    }
    EXPECT_EQ(through[0], through[1]) << "step " << step;
  }
  const Counters d = Counters::now().since(before);
  const uint64_t messages = static_cast<uint64_t>(steps) * trips;
  EXPECT_EQ(d.sends, messages);
  EXPECT_EQ(d.recvs, messages);
  // Their sizes were noted as they were built: the host was not asked for their contents (Open
  // MPI's MPI_Type_get_contents copies every derived member).
  EXPECT_EQ(d.contents_read, 0u);
  if (lazy()) {
    EXPECT_EQ(d.decoded + d.reused, 0u) << "Loom planned a type rebuilt every step";
    EXPECT_EQ(d.send_unplanned, messages);
    EXPECT_EQ(d.recv_unplanned, messages);
    EXPECT_EQ(d.freed_unplanned, 4u * steps);  // send and receive types, Loom's and the host's
  } else {  // absolute addresses from MPI_BOTTOM, packed and unpacked by Loom
    EXPECT_EQ(d.send_packed, messages);
    EXPECT_EQ(d.recv_unpacked, messages);
  }
}

// A type whose constructors Loom did not see (here the host's, called directly; in a program, e.g.
// Fortran's bindings of some hosts) is estimated from its contents, read back from the host, and
// still reaches the host as written.
TEST(LazyPlanning, TypeBuiltOutsideLoomIsEstimatedFromItsContents) {
  Particles p(300, 3.0 + rank_of_world());
  std::vector<int> d1(p.n);
  for (int i = 0; i < p.n; ++i) d1[i] = 2 * i + (i % 3 == 0);
  MPI_Datatype ib1, send;
  ASSERT_EQ(PMPI_Type_create_indexed_block(p.n, 1, d1.data(), MPI_DOUBLE, &ib1), MPI_SUCCESS);
  const int lengths[2] = {1, 1};
  MPI_Aint at[2];
  MPI_Get_address(p.q.data(), &at[0]);
  MPI_Get_address(p.t.data(), &at[1]);
  const MPI_Datatype members[2] = {ib1, ib1};
  ASSERT_EQ(PMPI_Type_create_struct(2, lengths, at, members, &send), MPI_SUCCESS);
  MPI_Type_commit(&send);
  PMPI_Type_free(&ib1);
  MPI_Datatype whole;
  MPI_Type_contiguous(2 * p.n, MPI_DOUBLE, &whole);
  MPI_Type_commit(&whole);
  std::vector<double> through[2];
  const Counters before = Counters::now();
  for (bool host : {false, true}) {
    std::vector<double>& got = through[host];
    got.assign(2 * static_cast<size_t>(p.n), -1);
    round_trip(host, MPI_BOTTOM, send, got.data(), whole);
  }
  const Counters d = Counters::now().since(before);
  EXPECT_EQ(through[0], through[1]);
  EXPECT_EQ(d.sends, 1u);
  EXPECT_EQ(d.recvs, 1u);
  if (lazy()) {
    EXPECT_EQ(d.send_unplanned, 1u);
    EXPECT_GE(d.contents_read, 1u) << "the struct's own description was not opened";
  }
  MPI_Type_free(&send);
  MPI_Type_free(&whole);
}

// Messages with nothing to pack are counted too: empty ones, and those to or from MPI_PROC_NULL.
TEST(LazyPlanning, EmptyAndNullPeerMessagesAreCounted) {
  MPI_Datatype type;
  MPI_Type_vector(4, 1, 2, MPI_INT, &type);
  MPI_Type_commit(&type);
  int buf[8] = {};
  const int rank = rank_of_world(), peer = 1 - rank;
  const Counters before = Counters::now();
  ASSERT_EQ(MPI_Send(buf, 1, type, MPI_PROC_NULL, 3, MPI_COMM_WORLD), MPI_SUCCESS);
  ASSERT_EQ(MPI_Recv(buf, 1, type, MPI_PROC_NULL, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
            MPI_SUCCESS);
  for (MPI_Datatype t : {type, MPI_INT}) {
    if (rank == 0) {
      ASSERT_EQ(MPI_Send(buf, 0, t, peer, 4, MPI_COMM_WORLD), MPI_SUCCESS);
    } else {
      ASSERT_EQ(MPI_Recv(buf, 0, t, peer, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE), MPI_SUCCESS);
    }
  }
  const Counters d = Counters::now().since(before);
  EXPECT_EQ(d.sends, rank == 0 ? 3u : 1u);
  EXPECT_EQ(d.recvs, rank == 0 ? 1u : 3u);
  if (lazy()) {
    EXPECT_EQ(d.decoded + d.reused, 0u);
  }
  MPI_Type_free(&type);
}

// A type used for long is planned once its host time reaches its budget, not at its first use,
// and its messages then arrive as the host's would.
TEST(LazyPlanning, LongLivedTypeIsPlannedOnceItPays) {
  MPI_Datatype type;
  MPI_Type_vector(256, 1, 2, MPI_DOUBLE, &type);
  MPI_Type_commit(&type);
  const std::vector<double> send = pattern(512, 3 + rank_of_world());
  std::vector<double> through_loom(512, -1), through_host(512, -1);
  const Counters before = Counters::now();
  int trips = 0, planned = 0;
  const int most_trips = 20000;
  while (!planned && trips < most_trips) {
    for (int i = 0; i < 16; ++i, ++trips)
      round_trip(false, send.data(), type, through_loom.data(), type);
    const Counters so_far = Counters::now().since(before);
    int mine = so_far.decoded + so_far.reused > 0;
    MPI_Allreduce(&mine, &planned, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  }
  const Counters d = Counters::now().since(before);
  if (rank_of_world() == 0)
    std::printf("planned after %d round trips (%llu sends before)\n", trips,
                static_cast<unsigned long long>(d.send_unplanned));
  if (lazy()) {
    EXPECT_TRUE(planned) << "not planned after " << trips << " round trips";
    EXPECT_GE(d.send_unplanned, 2u) << "planned at its first use";
  } else {
    EXPECT_EQ(d.send_unplanned, 0u);
  }
  EXPECT_EQ(d.sends, static_cast<uint64_t>(trips));
  std::fill(through_loom.begin(), through_loom.end(), -1);
  round_trip(false, send.data(), type, through_loom.data(), type);
  round_trip(true, send.data(), type, through_host.data(), type);
  EXPECT_EQ(through_loom, through_host);
  EXPECT_EQ(loom_type_is_accelerated(type), 1);
  MPI_Type_free(&type);
}

// A type whose outline's earlier types lived long (here one used for 2000 round trips after its
// plan) is expected to live as long: its plan, found by signature, pays within that life, so it
// is planned at its first call instead of after a few.
TEST(LazyPlanning, TypeOfALongLivedOutlineIsPlannedAtItsFirstCall) {
  const auto build = [] {
    MPI_Datatype type;
    MPI_Type_vector(96, 3, 5, MPI_DOUBLE, &type);
    MPI_Type_commit(&type);
    return type;
  };
  const std::vector<double> send = pattern(480, 7 + rank_of_world());
  std::vector<double> through_loom(480, -1), through_host(480, -1);
  MPI_Datatype first = build();
  int planned = 0;
  for (int trips = 0; !planned && trips < 20000;) {
    for (int i = 0; i < 16; ++i, ++trips)
      round_trip(false, send.data(), first, through_loom.data(), first);
    int mine = loom_testing_unplanned_host_time(first, nullptr) == 0;
    MPI_Allreduce(&mine, &planned, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  }
  ASSERT_TRUE(planned);
  for (int i = 0; i < 2000; ++i) round_trip(false, send.data(), first, through_loom.data(), first);
  MPI_Type_free(&first);
  MPI_Datatype again = build();
  const Counters before = Counters::now();
  std::fill(through_loom.begin(), through_loom.end(), -1);
  round_trip(false, send.data(), again, through_loom.data(), again);
  const Counters d = Counters::now().since(before);
  EXPECT_EQ(d.sends, 1u);
  EXPECT_EQ(d.recvs, 1u);
  if (lazy()) {
    EXPECT_EQ(d.reused, 1u) << "not planned at its first call";
    EXPECT_EQ(d.send_unplanned + d.recv_unplanned, 0u);
  }
  round_trip(true, send.data(), again, through_host.data(), again);
  EXPECT_EQ(through_loom, through_host);
  MPI_Type_free(&again);
}

// A persistent request's route is fixed when it is made, and it is made to be started again and
// again: a type not planned yet is planned at MPI_Send_init/MPI_Recv_init, so that its starts can
// be Loom's (under lazy planning alone they never would be), and the bytes arrive as the host's.
TEST(LazyPlanning, PersistentRequestsPlanTheirTypeWhenMade) {
  MPI_Datatype type;
  MPI_Type_vector(200, 2, 3, MPI_DOUBLE, &type);
  MPI_Type_commit(&type);
  const int rank = rank_of_world(), peer = 1 - rank;
  const std::vector<double> send = pattern(600, 11 + rank);
  std::vector<double> through_loom(600, -1), through_host(600, -1);
  const Counters before = Counters::now();
  MPI_Request requests[2];
  ASSERT_EQ(MPI_Send_init(send.data(), 1, type, peer, 3, MPI_COMM_WORLD, &requests[0]),
            MPI_SUCCESS);
  ASSERT_EQ(MPI_Recv_init(through_loom.data(), 1, type, peer, 3, MPI_COMM_WORLD, &requests[1]),
            MPI_SUCCESS);
  const Counters made = Counters::now().since(before);
  EXPECT_EQ(loom_testing_unplanned_host_time(type, nullptr), 0) << "not planned when made";
  EXPECT_EQ(made.decoded + made.reused, 1u);
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(MPI_Startall(2, requests), MPI_SUCCESS);
    ASSERT_EQ(MPI_Waitall(2, requests, MPI_STATUSES_IGNORE), MPI_SUCCESS);
  }
  MPI_Request_free(&requests[0]);
  MPI_Request_free(&requests[1]);
  round_trip(true, send.data(), type, through_host.data(), type);
  EXPECT_EQ(through_loom, through_host);
  MPI_Type_free(&type);
}

// Non-blocking messages of a type not planned yet: the host does much of their work inside the
// completion call (it packs and unpacks rendezvous messages there), so the completion call that
// completes them counts its time towards the type's plan, whichever completion call it is, and
// the bytes arrive as the host's would. The type is an indexed type of many blocks, whose budget
// these few messages do not reach.
TEST(LazyPlanning, CompletionCallsCountTowardsThePlan) {
  const int blocks = 20000;
  std::vector<int> displacements(blocks);
  for (int i = 0; i < blocks; ++i) displacements[i] = 2 * i + (i % 3 == 0);
  MPI_Datatype type;
  MPI_Type_create_indexed_block(blocks, 1, displacements.data(), MPI_DOUBLE, &type);
  MPI_Type_commit(&type);
  const int rank = rank_of_world(), peer = 1 - rank;
  const std::vector<double> send = pattern(2 * blocks + 1, 5 + rank);
  std::vector<double> through_loom(send.size(), -1), through_host(send.size(), -1);
  const Counters before = Counters::now();
  double posted = 0, completed = 0;
  // The host time counted once both requests are posted (and the peer's are), and after the
  // completion call `complete` ran.
  auto exchange = [&](auto&& complete) {
    MPI_Request requests[2];
    ASSERT_EQ(MPI_Irecv(through_loom.data(), 1, type, peer, 9, MPI_COMM_WORLD, &requests[0]),
              MPI_SUCCESS);
    ASSERT_EQ(MPI_Isend(send.data(), 1, type, peer, 9, MPI_COMM_WORLD, &requests[1]), MPI_SUCCESS);
    if (lazy()) {
      ASSERT_EQ(loom_testing_unplanned_host_time(type, &posted), 1);
    }
    PMPI_Barrier(MPI_COMM_WORLD);
    complete(requests);
    if (lazy()) {
      ASSERT_EQ(loom_testing_unplanned_host_time(type, &completed), 1);
      EXPECT_GT(completed, posted) << "the completion call counted nothing";
    }
  };
  exchange([](MPI_Request* r) { ASSERT_EQ(MPI_Waitall(2, r, MPI_STATUSES_IGNORE), MPI_SUCCESS); });
  exchange([](MPI_Request* r) {
    for (int left = 2; left > 0; --left) {
      int index = MPI_UNDEFINED;
      ASSERT_EQ(MPI_Waitany(2, r, &index, MPI_STATUS_IGNORE), MPI_SUCCESS);
    }
  });
  exchange([](MPI_Request* r) {
    ASSERT_EQ(MPI_Wait(&r[1], MPI_STATUS_IGNORE), MPI_SUCCESS);
    int flag = 0;
    while (!flag) ASSERT_EQ(MPI_Test(&r[0], &flag, MPI_STATUS_IGNORE), MPI_SUCCESS);
  });
  exchange([](MPI_Request* r) {
    int outcount = 0, indices[2], done = 0;
    while (done < 2) {
      ASSERT_EQ(MPI_Waitsome(2, r, &outcount, indices, MPI_STATUSES_IGNORE), MPI_SUCCESS);
      done += outcount;
    }
  });
  const Counters d = Counters::now().since(before);
  EXPECT_EQ(d.sends, 4u);
  EXPECT_EQ(d.recvs, 4u);
  if (lazy()) {
    EXPECT_EQ(d.decoded + d.reused, 0u) << "planned before its budget";
    EXPECT_EQ(d.send_unplanned, 4u);
    EXPECT_EQ(d.recv_unplanned, 4u);
  }
  round_trip(true, send.data(), type, through_host.data(), type);
  EXPECT_EQ(through_loom, through_host);
  MPI_Type_free(&type);
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  mode = loom::test::mode_argument(argc, argv, "lazy");
  int size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size != 2) {
    std::fprintf(stderr, "lazy_planning_test runs on 2 ranks\n");
    MPI_Finalize();
    return 1;
  }
  return loom::test::run_tests_and_finalize(&argc, argv);
}
