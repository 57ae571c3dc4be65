// Collectives, Loom's own side: its counters (what it packed, what it left to the host, the
// same-node window of neighbourhood all-to-alls), requests of several collectives in flight,
// a receive type freed before completion, intercommunicators left to the host, and null array
// arguments.
// (The harness and the conventions of every collective test: collectives_harness.hpp.)
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "loom/loom.h"
#include "tests/mpi/collectives_harness.hpp"
#include "tests/mpi/loom_env.hpp"

namespace {

using namespace loom::test::coll;

class CollectiveStats : public CollectiveTest {};
class CollectiveLifetimes : public CollectiveTest {};
class CollectiveRequests : public CollectiveTest {};
class Intercommunicator : public CollectiveTest {};
class PersistentCollectives : public CollectiveTest {};
class NullArrays : public CollectiveTest {};

int error_class(int rc) {
  int error_class = rc;
  if (rc != MPI_SUCCESS) MPI_Error_class(rc, &error_class);
  return error_class;
}

TEST_F(CollectiveStats, CountsCallsLoomPacked) {
  const Family& vector = families()[1];
  Case c;
  c.family = &vector;
  const loom_stats before = stats_now();
  run(Coll::Alltoall, Topology::None, c);  // through Loom once, through the host once
  const loom_stats after = stats_now();
  const uint64_t block_bytes = 2 * 6 * sizeof(int);  // two vector elements of six ints
  if (loom::test::loom_disabled_by_env()) {
    EXPECT_EQ(after.collective_packed, before.collective_packed);
    EXPECT_EQ(after.collective_packed_bytes, before.collective_packed_bytes);
  } else {
    EXPECT_EQ(after.collective_packed, before.collective_packed + 1);
    // Packed for all peers, and unpacked from all of them.
    EXPECT_EQ(after.collective_packed_bytes,
              before.collective_packed_bytes + 2 * block_bytes * static_cast<uint64_t>(g_size));
  }
  // A basic or dense type travels as it is: nothing packed.
  const loom_stats before_dense = stats_now();
  c.family = &families()[0];
  run(Coll::Allgather, Topology::None, c);
  EXPECT_EQ(stats_now().collective_packed, before_dense.collective_packed);
}

// Which calls the same-node window of neighbourhood all-to-alls may carry: none
// (LOOM_SHARED_COLLECTIVES=0, LOOM_DISABLE=1, or ranks on more than one node by
// LOOM_RANKS_PER_NODE), those the ranks agree it pays for (the default), or all
// (LOOM_SHARED_COLLECTIVES=1).
enum class WindowMode { Never, WherePays, Always };
WindowMode window_mode() {
  if (loom::test::loom_disabled_by_env()) return WindowMode::Never;
  const char* shared = std::getenv("LOOM_SHARED_COLLECTIVES");
  if (shared && std::strcmp(shared, "0") == 0) return WindowMode::Never;
  const char* per_node = std::getenv("LOOM_RANKS_PER_NODE");
  if (per_node && std::atoi(per_node) > 0 && std::atoi(per_node) < g_size) return WindowMode::Never;
  return shared && std::strcmp(shared, "1") == 0 ? WindowMode::Always : WindowMode::WherePays;
}

TEST_F(CollectiveStats, NeighbourhoodAllToAllsUseTheSharedWindowOnOneNode) {
  Case c;
  c.family = &families()[1];
  const loom_stats before = stats_now();
  run(Coll::NeighborAlltoallw, Topology::RepeatedEdges, c);  // Loom once, the host once
  run(Coll::NeighborAlltoall, Topology::Line, c);
  const loom_stats shared = stats_now();
  // Blocks of 48 bytes: where the window must pay, it does not (transport::window_pays).
  EXPECT_EQ(shared.collective_shared,
            before.collective_shared + (window_mode() == WindowMode::Always ? 2 : 0));
  // A periodic dimension of two ranks names one neighbour twice, and MPICH pairs the
  // repeated edges of MPI_Neighbor_alltoall its own way: both keep the host's exchange.
  run(Coll::NeighborAlltoall, Topology::Cart, c);
  run(Coll::NeighborAlltoall, Topology::RepeatedEdges, c);
  EXPECT_EQ(stats_now().collective_shared, shared.collective_shared);
}

// A ring: each rank sends to the next and receives from the previous.
MPI_Comm ring() {
  const int next = (g_rank + 1) % g_size, previous = (g_rank + g_size - 1) % g_size;
  MPI_Comm comm = MPI_COMM_NULL;
  MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, &previous, MPI_UNWEIGHTED, 1, &next,
                                 MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &comm);
  return comm;
}

// One MPI_Neighbor_alltoall of `count` elements of `type` a block on `comm`, through Loom and
// through the host on identical inputs: the receive blocks must be identical.
void expect_neighbour_alltoall_as_host(MPI_Comm comm, int count, MPI_Datatype type) {
  MPI_Aint lb = 0, extent = 0;
  MPI_Type_get_extent(type, &lb, &extent);
  const size_t bytes = static_cast<size_t>(extent) * static_cast<size_t>(count);
  std::vector<unsigned char> send(bytes), loom(bytes, 0xAA), host(bytes, 0xAA);
  for (size_t i = 0; i < bytes; ++i) send[i] = static_cast<unsigned char>(g_rank * 31 + i);
  ASSERT_EQ(MPI_Neighbor_alltoall(send.data(), count, type, loom.data(), count, type, comm),
            MPI_SUCCESS);
  ASSERT_EQ(PMPI_Neighbor_alltoall(send.data(), count, type, host.data(), count, type, comm),
            MPI_SUCCESS);
  EXPECT_TRUE(loom == host) << "receive blocks differ from the host's";
}

// Vector of `ints` ints, one every two: Loom packs it.
MPI_Datatype strided_ints(int ints) {
  MPI_Datatype type;
  MPI_Type_vector(ints, 1, 2, MPI_INT, &type);
  MPI_Type_commit(&type);
  return type;
}

TEST_F(CollectiveStats, TheWindowCarriesTheCallsWhereItPays) {
  // SharedExchange::kHostCallsBetweenAgreements: host calls before the ranks agree again.
  constexpr int kHostCallsBetweenAgreements = 64;
  MPI_Comm comm = ring();
  // 4 KiB a block, sent and received: 8 KiB packed, where the window pays; 4 ints a block of
  // plain MPI_INT it never does.
  MPI_Datatype large = strided_ints(1024);
  const WindowMode mode = window_mode();
  auto shared_now = [] { return stats_now().collective_shared; };
  const uint64_t start = shared_now();

  // The communicator's first call agrees: the host carries it, and the next 64.
  expect_neighbour_alltoall_as_host(comm, 4, MPI_INT);
  EXPECT_EQ(shared_now(), start + (mode == WindowMode::Always ? 1 : 0));
  for (int i = 0; i < kHostCallsBetweenAgreements; ++i)
    expect_neighbour_alltoall_as_host(comm, 1, large);
  EXPECT_EQ(shared_now(),
            start + (mode == WindowMode::Always ? 1 + kHostCallsBetweenAgreements : 0));
  // Then they agree again, on a call that pays: the window carries it.
  expect_neighbour_alltoall_as_host(comm, 1, large);
  const uint64_t agreed = shared_now();
  EXPECT_EQ(agreed, start + (mode == WindowMode::Always      ? 2 + kHostCallsBetweenAgreements
                             : mode == WindowMode::WherePays ? 1
                                                             : 0));
  // A call after one the window carried goes as that call's reduction said (it paid), and
  // says that the next one would not pay.
  expect_neighbour_alltoall_as_host(comm, 4, MPI_INT);
  EXPECT_EQ(shared_now(), agreed + (mode == WindowMode::Never ? 0 : 1));
  expect_neighbour_alltoall_as_host(comm, 4, MPI_INT);
  EXPECT_EQ(shared_now(), agreed + (mode == WindowMode::Always  ? 2
                                    : mode == WindowMode::Never ? 0
                                                                : 1));
  MPI_Type_free(&large);
  MPI_Comm_free(&comm);
}

// After an agreement that finds no rank paying, the next run of host calls is twice as long
// (up to 1024): the ranks reduce less often on a communicator whose calls never pay.
TEST_F(CollectiveStats, AgreementsThatFindNoRankPayingComeLessOften) {
  constexpr int kHostCallsBetweenAgreements = 64;
  MPI_Comm comm = ring();
  MPI_Datatype large = strided_ints(1024);  // 8 KiB packed a call: the window pays
  const WindowMode mode = window_mode();
  auto shared_now = [] { return stats_now().collective_shared; };
  const uint64_t start = shared_now();
  // The first call agrees (none pays), 64 host calls, then a second agreement (none pays).
  const int tiny_calls = 1 + kHostCallsBetweenAgreements + 1;
  for (int i = 0; i < tiny_calls; ++i) expect_neighbour_alltoall_as_host(comm, 4, MPI_INT);
  // The next 128 calls pay, but the host carries them: no agreement until they are done.
  for (int i = 0; i < 2 * kHostCallsBetweenAgreements; ++i)
    expect_neighbour_alltoall_as_host(comm, 1, large);
  const int host_run = tiny_calls + 2 * kHostCallsBetweenAgreements;
  EXPECT_EQ(shared_now(), start + (mode == WindowMode::Always ? host_run : 0));
  // Then they agree again, and the window carries the call.
  expect_neighbour_alltoall_as_host(comm, 1, large);
  EXPECT_EQ(shared_now(), start + (mode == WindowMode::Always      ? host_run + 1
                                   : mode == WindowMode::WherePays ? 1
                                                                   : 0));
  MPI_Type_free(&large);
  MPI_Comm_free(&comm);
}

TEST_F(CollectiveStats, OneRankWhoseCallPaysTakesEveryRankThroughTheWindow) {
  // Rank 0 packs 2 KiB blocks (4 KiB sent and received: the window pays); the others send and
  // receive the same 512 ints as plain MPI_INT (4 KiB: it pays on no host).
  MPI_Comm comm = ring();
  MPI_Datatype strided = strided_ints(512);
  const uint64_t start = stats_now().collective_shared;
  if (g_rank == 0)
    expect_neighbour_alltoall_as_host(comm, 1, strided);
  else
    expect_neighbour_alltoall_as_host(comm, 512, MPI_INT);
  EXPECT_EQ(stats_now().collective_shared, start + (window_mode() == WindowMode::Never ? 0 : 1));
  MPI_Type_free(&strided);
  MPI_Comm_free(&comm);
}

// Plain calls the ranks' last agreement leaves to the host skip the window's bookkeeping
// (ops/coll_neighbour.cpp, run_neighbourhood); each rank must still count them as the others
// do, whether its own sides are plain or packed, so that the ranks agree again on the same call.
TEST_F(CollectiveStats, RanksAgreeOnTheSameCallWhereSomeOfThemPassPlainCalls) {
  constexpr int kHostCallsBetweenAgreements = 64;
  MPI_Comm comm = ring();
  MPI_Datatype small = strided_ints(4), large = strided_ints(512);
  const WindowMode mode = window_mode();
  auto shared_now = [] { return stats_now().collective_shared; };
  const uint64_t start = shared_now();
  // An all-to-all v, plain everywhere, agrees first, before any uniform call has asked whether
  // the graph repeats an edge (a question all ranks answer together).
  int count = 4, displacement = 0;
  std::vector<int> send(4, g_rank), recv(4, -1);
  ASSERT_EQ(MPI_Neighbor_alltoallv(send.data(), &count, &displacement, MPI_INT, recv.data(), &count,
                                   &displacement, MPI_INT, comm),
            MPI_SUCCESS);
  EXPECT_EQ(recv, std::vector<int>(4, (g_rank + g_size - 1) % g_size));
  // Rank 0 passes plain calls, the others pack small ones: 64 calls the host carries.
  for (int i = 0; i < kHostCallsBetweenAgreements; ++i) {
    if (g_rank == 0)
      expect_neighbour_alltoall_as_host(comm, 4, MPI_INT);
    else
      expect_neighbour_alltoall_as_host(comm, 1, small);
  }
  EXPECT_EQ(shared_now(),
            start + (mode == WindowMode::Always ? 1 + kHostCallsBetweenAgreements : 0));
  // Then the ranks agree again on a call that pays on the last rank only (2 KiB blocks packed;
  // the others' 512 plain ints pay on no host): the window carries it on every rank.
  if (g_rank == g_size - 1)
    expect_neighbour_alltoall_as_host(comm, 1, large);
  else
    expect_neighbour_alltoall_as_host(comm, 512, MPI_INT);
  EXPECT_EQ(shared_now(), start + (mode == WindowMode::Always      ? 2 + kHostCallsBetweenAgreements
                                   : mode == WindowMode::WherePays ? 1
                                                                   : 0));
  MPI_Type_free(&small);
  MPI_Type_free(&large);
  MPI_Comm_free(&comm);
}

// Loom keeps the last communicator's rank and size (mpi/communicator.hpp) until one is freed:
// communicators made and freed in turn, whose handles the host may reuse, with this rank at
// another place each time. A gather of a spaced type runs through Loom, and each rank's place
// decides its part.
TEST_F(CollectiveStats, CommunicatorsMadeAgainAfterAFreeKeepTheirOwnRanks) {
  MPI_Datatype spaced = MPI_DATATYPE_NULL;  // one int in the room of two
  ASSERT_EQ(MPI_Type_create_resized(MPI_INT, 0, 2 * sizeof(int), &spaced), MPI_SUCCESS);
  ASSERT_EQ(MPI_Type_commit(&spaced), MPI_SUCCESS);
  for (int round = 0; round < 4; ++round) {
    const bool reversed = round % 2 == 1;
    MPI_Comm comm = MPI_COMM_NULL;
    ASSERT_EQ(MPI_Comm_split(MPI_COMM_WORLD, 0, reversed ? g_size - 1 - g_rank : g_rank, &comm),
              MPI_SUCCESS);
    std::vector<int> gathered(2 * static_cast<size_t>(g_size), -1);
    const int mine[2] = {100 + g_rank, -2};
    ASSERT_EQ(MPI_Gather(mine, 1, spaced, gathered.data(), 1, spaced, 0, comm), MPI_SUCCESS);
    const int rank_in_comm = reversed ? g_size - 1 - g_rank : g_rank;
    for (int r = 0; rank_in_comm == 0 && r < g_size; ++r) {
      EXPECT_EQ(gathered[2 * static_cast<size_t>(r)], 100 + (reversed ? g_size - 1 - r : r))
          << "round " << round << ", rank " << r << " of the communicator";
    }
    ASSERT_EQ(MPI_Comm_free(&comm), MPI_SUCCESS);
  }
  MPI_Type_free(&spaced);
}

// Small uniform calls (ops/coll_exchange.hpp, run_small): one element of one dense run a block
// goes to a host that moves it whole as written, with no Loom counter when both sides do, and
// beside a side Loom packs on the stack when the other side needs packing; elsewhere both sides
// are packed. Every receive buffer against the host's own call.
TEST_F(CollectiveStats, SmallCallsPackOnTheStackBesideSidesTheHostMovesWhole) {
  MPI_Datatype dense, run, spaced;  // three ints: one run in 16 bytes, and one every two ints
  ASSERT_EQ(MPI_Type_contiguous(3, MPI_INT, &dense), MPI_SUCCESS);
  ASSERT_EQ(MPI_Type_create_resized(dense, 0, 16, &run), MPI_SUCCESS);
  ASSERT_EQ(MPI_Type_commit(&run), MPI_SUCCESS);
  ASSERT_EQ(MPI_Type_vector(3, 1, 2, MPI_INT, &spaced), MPI_SUCCESS);
  ASSERT_EQ(MPI_Type_commit(&spaced), MPI_SUCCESS);
  const auto p = static_cast<size_t>(g_size);
  const uint64_t block_bytes = 3 * sizeof(int);
  std::vector<int> send(4 * p);
  for (size_t i = 0; i < send.size(); ++i) send[i] = g_rank * 1000 + static_cast<int>(i);
  const bool loom = !loom::test::loom_disabled_by_env();
  const bool whole = loom::test::kHostMovesOneRunElementsAsBytes;
  struct Expected {
    uint64_t packed, bytes;
  };
  auto check = [&](MPI_Datatype recv_type, size_t recv_ints, Expected expected) {
    std::vector<int> via_loom(recv_ints * p, -1), via_host(recv_ints * p, -1);
    const loom_stats before = stats_now();
    ASSERT_EQ(MPI_Alltoall(send.data(), 1, run, via_loom.data(), 1, recv_type, MPI_COMM_WORLD),
              MPI_SUCCESS);
    const loom_stats after = stats_now();
    ASSERT_EQ(PMPI_Alltoall(send.data(), 1, run, via_host.data(), 1, recv_type, MPI_COMM_WORLD),
              MPI_SUCCESS);
    EXPECT_EQ(via_loom, via_host);
    EXPECT_EQ(after.collective_packed - before.collective_packed, loom ? expected.packed : 0);
    EXPECT_EQ(after.collective_packed_bytes - before.collective_packed_bytes,
              loom ? expected.bytes : 0);
    EXPECT_EQ(after.collective_host, before.collective_host);  // moved whole: as contiguous
  };
  // Both sides one run: the host's call as written where it moves them whole.
  check(run, 4, whole ? Expected{0, 0} : Expected{1, 2 * block_bytes * p});
  // The receive side spaced: unpacked by Loom from the stack, the send side as written or packed.
  check(spaced, 5, whole ? Expected{1, block_bytes * p} : Expected{1, 2 * block_bytes * p});
  MPI_Type_free(&dense);
  MPI_Type_free(&run);
  MPI_Type_free(&spaced);
}

TEST_F(CollectiveStats, CountsTypesLeftToTheHost) {
  ASSERT_FALSE(no_plan().empty());
  Case c;
  c.family = &no_plan()[0];
  const loom_stats before = stats_now();
  run(Coll::Allgather, Topology::None, c);
  const loom_stats after = stats_now();
  if (loom::test::loom_disabled_by_env()) {
    EXPECT_EQ(after.collective_host, before.collective_host);
  } else {
    EXPECT_GT(after.collective_host, before.collective_host);
  }
}

// The user may free a receive type while a non-blocking collective is pending; the unpack
// at completion must still use it, even after its handle has been reused.
TEST_F(CollectiveLifetimes, ReceiveTypeFreedBeforeCompletion) {
  std::vector<const Family*> subjects = {&families()[1], &families()[5]};
  for (const Family& family : no_plan()) subjects.push_back(&family);
  for (const Family* family : subjects) {
    SCOPED_TRACE(family->name);
    const int count = family->max_amount;
    const TestType& t = family->derived;
    const Region send(uniform_blocks(t, g_size, count), true, 1);
    const Region recv(uniform_blocks(t, g_size, count), false, 2);
    Region send_loom = send, recv_loom = recv, send_host = send, recv_host = recv;
    MPI_Datatype doomed;
    MPI_Type_dup(t.type, &doomed);
    MPI_Type_commit(&doomed);
    MPI_Request request = MPI_REQUEST_NULL;
    EXPECT_EQ(MPI_Ialltoall(send_loom.base(), count, t.type, recv_loom.base(), count, doomed,
                            MPI_COMM_WORLD, &request),
              MPI_SUCCESS);
    MPI_Type_free(&doomed);
    MPI_Datatype reuse;  // likely to get the freed handle back
    MPI_Type_contiguous(3, MPI_SHORT, &reuse);
    MPI_Type_commit(&reuse);
    EXPECT_EQ(MPI_Wait(&request, MPI_STATUS_IGNORE), MPI_SUCCESS);
    MPI_Type_free(&reuse);
    EXPECT_EQ(PMPI_Alltoall(send_host.base(), count, t.type, recv_host.base(), count, t.type,
                            MPI_COMM_WORLD),
              MPI_SUCCESS);
    expect_identical(recv_loom, recv_host, "receive buffer");
    EXPECT_NE(recv_host.bytes(), recv.bytes());
  }
}

// All-to-all blocks of 2-64 KiB, where Open MPI's seamed wire applies (ops/coll_exchange.hpp,
// UserSide::seamable), blocking, non-blocking and in place, packed on both sides, packed into
// plain doubles, and packed on rank 0 alone while the others' plain doubles go straight to the
// host: whatever Loom sends must be the host's byte stream (a wire type that reordered a
// block's bytes, tried once, failed the last case).
TEST_F(CollectiveRequests, AllToAllBlocksOfKibibytesMixedWithPlainRanks) {
  for (const int doubles : {256, 257, 264, 1025, 8192}) {
    SCOPED_TRACE(std::to_string(doubles * 8) + " B per block");
    MPI_Datatype strided;
    MPI_Type_vector(doubles, 1, 2, MPI_DOUBLE, &strided);
    MPI_Type_commit(&strided);
    const TestType packed = test_type(strided, doubles), plain = test_type(MPI_DOUBLE, 1);
    // Both packed, into plain, non-blocking, in place, and rank 0 alone packed (the others'
    // plain doubles go straight to the host: Loom's wire must be the host's byte stream).
    for (int shape = 0; shape < 5; ++shape) {
      const bool in_place = shape == 3, nonblocking = shape == 2;
      const bool plain_here = shape == 4 && g_rank != 0;
      const TestType& st = plain_here ? plain : packed;
      const int send_count = plain_here ? doubles : 1;
      const TestType& rt = shape == 1 || plain_here ? plain : packed;
      const int recv_count = shape == 1 || plain_here ? doubles : 1;
      const Region send =
          in_place ? Region() : Region(uniform_blocks(st, g_size, send_count), true, 1);
      const Region recv(uniform_blocks(rt, g_size, recv_count), in_place, 2);
      Region send_loom = send, recv_loom = recv, send_host = send, recv_host = recv;
      auto call = [&](bool loom, void* s, void* r) {
        void* source = in_place ? MPI_IN_PLACE : s;
        if (!nonblocking)
          return loom ? MPI_Alltoall(source, send_count, st.type, r, recv_count, rt.type,
                                     MPI_COMM_WORLD)
                      : PMPI_Alltoall(source, send_count, st.type, r, recv_count, rt.type,
                                      MPI_COMM_WORLD);
        MPI_Request request = MPI_REQUEST_NULL;
        int rc = loom ? MPI_Ialltoall(source, send_count, st.type, r, recv_count, rt.type,
                                      MPI_COMM_WORLD, &request)
                      : PMPI_Ialltoall(source, send_count, st.type, r, recv_count, rt.type,
                                       MPI_COMM_WORLD, &request);
        if (rc == MPI_SUCCESS) rc = MPI_Wait(&request, MPI_STATUS_IGNORE);
        return rc;
      };
      SCOPED_TRACE("shape " + std::to_string(shape));
      EXPECT_EQ(call(true, send_loom.base(), recv_loom.base()), MPI_SUCCESS);
      EXPECT_EQ(call(false, send_host.base(), recv_host.base()), MPI_SUCCESS);
      expect_identical(recv_loom, recv_host, "receive buffer");
      EXPECT_NE(recv_host.bytes(), recv.bytes());
    }
    MPI_Type_free(&strided);
  }
}

// Several collectives in flight at once, completed by MPI_Waitall and by polling MPI_Test.
TEST_F(CollectiveRequests, SeveralInFlight) {
  const Family& family = families()[2];  // subarray
  const TestType& t = family.derived;
  const int count = 2;
  const Region gather_send(uniform_blocks(t, 1, count), true, 1);
  const Region gather_recv(uniform_blocks(t, g_size, count), false, 2);
  const Region all_send(uniform_blocks(t, g_size, count), true, 3);
  const Region all_recv(uniform_blocks(t, g_size, count), false, 4);
  const Region bcast_buffer(uniform_blocks(t, 1, count), g_rank == 0, 5);
  Region gs = gather_send, gr = gather_recv, as = all_send, ar = all_recv, bb = bcast_buffer;
  MPI_Request requests[4] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL, MPI_REQUEST_NULL,
                             MPI_REQUEST_NULL};
  EXPECT_EQ(MPI_Iallgather(gs.base(), count, t.type, gr.base(), count, t.type, MPI_COMM_WORLD,
                           &requests[0]),
            MPI_SUCCESS);
  EXPECT_EQ(MPI_Ialltoall(as.base(), count, t.type, ar.base(), count, t.type, MPI_COMM_WORLD,
                          &requests[2]),
            MPI_SUCCESS);
  EXPECT_EQ(MPI_Waitall(4, requests, MPI_STATUSES_IGNORE), MPI_SUCCESS);
  EXPECT_EQ(MPI_Ibcast(bb.base(), count, t.type, 0, MPI_COMM_WORLD, &requests[3]), MPI_SUCCESS);
  for (int done = 0, rc = MPI_SUCCESS; !done && rc == MPI_SUCCESS;) {
    rc = MPI_Test(&requests[3], &done, MPI_STATUS_IGNORE);
    EXPECT_EQ(rc, MPI_SUCCESS);
  }
  EXPECT_EQ(requests[3], MPI_REQUEST_NULL);

  Region hs = gather_send, hr = gather_recv, has = all_send, har = all_recv, hb = bcast_buffer;
  PMPI_Allgather(hs.base(), count, t.type, hr.base(), count, t.type, MPI_COMM_WORLD);
  PMPI_Alltoall(has.base(), count, t.type, har.base(), count, t.type, MPI_COMM_WORLD);
  PMPI_Bcast(hb.base(), count, t.type, 0, MPI_COMM_WORLD);
  expect_identical(gr, hr, "Iallgather receive buffer");
  expect_identical(ar, har, "Ialltoall receive buffer");
  expect_identical(bb, hb, "Ibcast buffer");
}

// Persistent collectives (MPI-4, or Open MPI's MPIX_ extension), started together by
// MPI_Startall three times with new data before each start: every start reads the send
// buffers as they are then and fills the receive buffers as the host's blocking collective
// does, after the user freed the type right after the init calls (through Loom; see below); Loom
// counts each start. On MPICH this also checks Loom's way around the host's persistent Gather,
// Scatter and Allgather (mpi/quirks.hpp, host_persistent_uniform_collectives_misdeliver), which
// deliver stale or no data there.
TEST_F(PersistentCollectives, EachStartReadsTheBuffersOfThatStart) {
  if (!kPersistentCollectives) GTEST_SKIP() << "the host has no persistent collectives";
  if (loom::test::kHostPersistentUniformCollectivesMisdeliver && loom::test::loom_disabled_by_env())
    GTEST_SKIP() << "Loom is disabled: this would only test the host's broken persistent forms";
  const int p = g_size, root = p - 1, me = g_rank;
  const MPI_Comm comm = MPI_COMM_WORLD;
  constexpr int kInts = 5;  // one element of vector(3, 1, 2, MPI_INT) spans 5 ints
  MPI_Datatype strided;
  ASSERT_EQ(MPI_Type_vector(3, 1, 2, MPI_INT, &strided), MPI_SUCCESS);
  ASSERT_EQ(MPI_Type_commit(&strided), MPI_SUCCESS);
  const size_t all = static_cast<size_t>(kInts * p);
  std::vector<int> send(all), bcast(kInts), gathered(all), scattered(kInts), allgathered(all),
      exchanged(all);
  const std::vector<int> ones(static_cast<size_t>(p), 1);
  std::vector<int> displs(static_cast<size_t>(p));
  for (int k = 0; k < p; ++k) displs[static_cast<size_t>(k)] = k;
  constexpr int kCalls = 5;
  MPI_Request requests[kCalls];
  const bool made[kCalls] = {
      PERSISTENT_INIT(true, Gather_init, send.data(), 1, strided, gathered.data(), 1, strided, root,
                      comm, MPI_INFO_NULL, &requests[0]) == MPI_SUCCESS,
      PERSISTENT_INIT(true, Scatter_init, send.data(), 1, strided, scattered.data(), 1, strided,
                      root, comm, MPI_INFO_NULL, &requests[1]) == MPI_SUCCESS,
      PERSISTENT_INIT(true, Allgather_init, send.data(), 1, strided, allgathered.data(), 1, strided,
                      comm, MPI_INFO_NULL, &requests[2]) == MPI_SUCCESS,
      PERSISTENT_INIT(true, Alltoallv_init, send.data(), ones.data(), displs.data(), strided,
                      exchanged.data(), ones.data(), displs.data(), strided, comm, MPI_INFO_NULL,
                      &requests[3]) == MPI_SUCCESS,
      PERSISTENT_INIT(true, Bcast_init, bcast.data(), 1, strided, root, comm, MPI_INFO_NULL,
                      &requests[4]) == MPI_SUCCESS};
  for (bool ok : made) ASSERT_TRUE(ok);
  // Loom's requests keep the type. Open MPI 4.1's own persistent collectives do not: with Loom
  // disabled, NBC_Start then reads the freed type (a SEGV under ASan), so the host's run frees
  // it at the end instead.
  const bool free_early = !loom::test::loom_disabled_by_env();
  if (free_early) MPI_Type_free(&strided);

  MPI_Datatype reference;
  MPI_Type_vector(3, 1, 2, MPI_INT, &reference);
  MPI_Type_commit(&reference);
  const loom_stats before = stats_now();
  for (int start = 0; start < 3; ++start) {
    SCOPED_TRACE("start " + std::to_string(start));
    const auto fill = [&] {
      for (size_t i = 0; i < all; ++i)
        send[i] = 1 + static_cast<int>(i) + 1000 * me + 100000 * start;
      for (int i = 0; i < kInts; ++i)
        bcast[static_cast<size_t>(i)] = me == root ? 7 * i + start : -1;
      for (auto* out : {&gathered, &scattered, &allgathered, &exchanged})
        std::fill(out->begin(), out->end(), -1);
    };
    fill();
    ASSERT_EQ(MPI_Startall(kCalls, requests), MPI_SUCCESS);
    ASSERT_EQ(MPI_Waitall(kCalls, requests, MPI_STATUSES_IGNORE), MPI_SUCCESS);
    const std::vector<int> got[kCalls] = {gathered, scattered, allgathered, exchanged, bcast};
    fill();
    PMPI_Gather(send.data(), 1, reference, gathered.data(), 1, reference, root, comm);
    PMPI_Scatter(send.data(), 1, reference, scattered.data(), 1, reference, root, comm);
    PMPI_Allgather(send.data(), 1, reference, allgathered.data(), 1, reference, comm);
    PMPI_Alltoallv(send.data(), ones.data(), displs.data(), reference, exchanged.data(),
                   ones.data(), displs.data(), reference, comm);
    PMPI_Bcast(bcast.data(), 1, reference, root, comm);
    EXPECT_EQ(got[0], gathered) << "gather";
    EXPECT_EQ(got[1], scattered) << "scatter";
    EXPECT_EQ(got[2], allgathered) << "allgather";
    EXPECT_EQ(got[3], exchanged) << "alltoallv";
    EXPECT_EQ(got[4], bcast) << "bcast";
  }
  const uint64_t counted = stats_now().collective_packed - before.collective_packed;
  if (loom::test::loom_disabled_by_env()) {
    EXPECT_EQ(counted, 0u);
  } else {
    EXPECT_EQ(counted, uint64_t{3 * kCalls}) << "each start of each call is Loom's";
  }
  for (MPI_Request& request : requests) EXPECT_EQ(MPI_Request_free(&request), MPI_SUCCESS);
  if (!free_early) MPI_Type_free(&strided);
  MPI_Type_free(&reference);
}

// Loom leaves intercommunicator collectives to the host, counted when a derived type is
// involved.
TEST_F(Intercommunicator, LeftToTheHost) {
  MPI_Comm local, inter;
  MPI_Comm_split(MPI_COMM_WORLD, g_rank % 2, g_rank, &local);
  MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, g_rank % 2 == 0 ? 1 : 0, 7, &inter);
  MPI_Comm_set_errhandler(inter, MPI_ERRORS_RETURN);
  int remote = 0;
  MPI_Comm_remote_size(inter, &remote);
  const TestType& t = families()[1].derived;
  const int count = 2;
  const Region send(uniform_blocks(t, remote, count), true, 1);
  const Region recv(uniform_blocks(t, remote, count), false, 2);
  Case c;
  c.family = &families()[1];
  const loom_stats before = stats_now();
  expect_same(c, send, recv, true, [&](const Api& api, void* s, void* r) {
    return CALL_COLLECTIVE(api, Alltoall, Ialltoall, s, count, t.type, r, count, t.type, inter);
  });
  const loom_stats after = stats_now();
  EXPECT_EQ(after.collective_packed, before.collective_packed);
  if (!loom::test::loom_disabled_by_env()) {
    EXPECT_EQ(after.collective_host, before.collective_host + 1);
  }
  MPI_Comm_free(&inter);
  MPI_Comm_free(&local);
}

// A count, displacement or type array that a v or w collective reads on this rank, passed null:
// the class Open MPI reports for it (ops/coll_arrays.hpp), through the communicator's handler,
// in every form, on both hosts (MPICH 4.0 reads through such a pointer, and Open MPI through an
// all-gather's recvcounts); where the host reports a class, Loom's is the host's. Arrays the
// call ignores on this rank may be null: an in-place all-to-all's send arrays, a gatherv's
// receive arrays and a scatterv's send arrays off the root.
TEST_F(NullArrays, RaiseTheClassOpenMpiReports) {
  const bool disabled = loom::test::loom_disabled_by_env();
  if (disabled && loom::test::kHostReadsNullCollectiveArrays)
    GTEST_SKIP() << "LOOM_DISABLE=1 leaves the calls to a host that reads through null arrays";
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  MPI_Comm self;  // the rooted collectives' errors stop the root alone
  MPI_Comm_split(comm, g_rank, 0, &self);
  MPI_Comm_set_errhandler(self, MPI_ERRORS_RETURN);
  const MPI_Comm line = line_comm();  // degree 1 or 2: every rank reads its arrays
  const int p = g_size;
  std::vector<int> counts(p, 1), displs(p), byte_displs(p), send(p, g_rank), recv(p);
  std::vector<MPI_Aint> aint_byte_displs(p);
  for (int i = 0; i < p; ++i) {
    displs[i] = i;
    byte_displs[i] = i * static_cast<int>(sizeof(int));
    aint_byte_displs[i] = byte_displs[i];
  }
  const std::vector<MPI_Datatype> types(p, MPI_INT);
  const std::vector<MPI_Count> wide_counts = widened<MPI_Count>(counts);
  const std::vector<MPI_Aint> wide_displs = widened<MPI_Aint>(displs);
  // `null`: which argument array of the call is null (in the order of its signature).
  struct Case {
    std::string what;
    int expected;
    bool host_reads_it;  // the host itself reads through the null array
    std::function<int(const Api&, int null)> call;
    int arrays;
  };
  auto at = [](const auto& values, int which, int null) {
    return which == null ? nullptr : values.data();
  };
  const std::vector<Case> cases = {
      {"Alltoallv", MPI_ERR_ARG, loom::test::kHostReadsNullCollectiveArrays,
       [&](const Api& api, int n) {
         return CALL_ARRAY_COLLECTIVE(
             api, Alltoallv, Ialltoallv,
             (send.data(), at(counts, 0, n), at(displs, 1, n), MPI_INT, recv.data(),
              at(counts, 2, n), at(displs, 3, n), MPI_INT, comm),
             (send.data(), at(wide_counts, 0, n), at(wide_displs, 1, n), MPI_INT, recv.data(),
              at(wide_counts, 2, n), at(wide_displs, 3, n), MPI_INT, comm));
       },
       4},
      {"Alltoallw", MPI_ERR_ARG, loom::test::kHostReadsNullCollectiveArrays,
       [&](const Api& api, int n) {
         return CALL_ARRAY_COLLECTIVE(
             api, Alltoallw, Ialltoallw,
             (send.data(), at(counts, 0, n), at(byte_displs, 1, n), at(types, 2, n), recv.data(),
              at(counts, 3, n), at(byte_displs, 4, n), at(types, 5, n), comm),
             (send.data(), at(wide_counts, 0, n), at(aint_byte_displs, 1, n), at(types, 2, n),
              recv.data(), at(wide_counts, 3, n), at(aint_byte_displs, 4, n), at(types, 5, n),
              comm));
       },
       6},
      {"Allgatherv recvcounts", MPI_ERR_COUNT, true,
       [&](const Api& api, int) {
         return CALL_ARRAY_COLLECTIVE(
             api, Allgatherv, Iallgatherv,
             (send.data(), 1, MPI_INT, recv.data(), nullptr, displs.data(), MPI_INT, comm),
             (send.data(), 1, MPI_INT, recv.data(), nullptr, wide_displs.data(), MPI_INT, comm));
       },
       1},
      {"Allgatherv displs", MPI_ERR_BUFFER, loom::test::kHostReadsNullCollectiveArrays,
       [&](const Api& api, int) {
         return CALL_ARRAY_COLLECTIVE(
             api, Allgatherv, Iallgatherv,
             (send.data(), 1, MPI_INT, recv.data(), counts.data(), nullptr, MPI_INT, comm),
             (send.data(), 1, MPI_INT, recv.data(), wide_counts.data(), nullptr, MPI_INT, comm));
       },
       1},
      {"Gatherv at the root", MPI_ERR_COUNT, loom::test::kHostReadsNullCollectiveArrays,
       [&](const Api& api, int n) {
         return CALL_ARRAY_COLLECTIVE(api, Gatherv, Igatherv,
                                      (send.data(), 1, MPI_INT, recv.data(), at(counts, 0, n),
                                       at(displs, 1, n), MPI_INT, 0, self),
                                      (send.data(), 1, MPI_INT, recv.data(), at(wide_counts, 0, n),
                                       at(wide_displs, 1, n), MPI_INT, 0, self));
       },
       1},
      {"Gatherv displs at the root", MPI_ERR_ARG, loom::test::kHostReadsNullCollectiveArrays,
       [&](const Api& api, int) {
         return CALL_ARRAY_COLLECTIVE(
             api, Gatherv, Igatherv,
             (send.data(), 1, MPI_INT, recv.data(), counts.data(), nullptr, MPI_INT, 0, self),
             (send.data(), 1, MPI_INT, recv.data(), wide_counts.data(), nullptr, MPI_INT, 0, self));
       },
       1},
      {"Scatterv at the root", MPI_ERR_COUNT, loom::test::kHostReadsNullCollectiveArrays,
       [&](const Api& api, int) {
         return CALL_ARRAY_COLLECTIVE(
             api, Scatterv, Iscatterv,
             (send.data(), nullptr, displs.data(), MPI_INT, recv.data(), 1, MPI_INT, 0, self),
             (send.data(), nullptr, wide_displs.data(), MPI_INT, recv.data(), 1, MPI_INT, 0, self));
       },
       1},
      {"Scatterv displs at the root", MPI_ERR_ARG, loom::test::kHostReadsNullCollectiveArrays,
       [&](const Api& api, int) {
         return CALL_ARRAY_COLLECTIVE(
             api, Scatterv, Iscatterv,
             (send.data(), counts.data(), nullptr, MPI_INT, recv.data(), 1, MPI_INT, 0, self),
             (send.data(), wide_counts.data(), nullptr, MPI_INT, recv.data(), 1, MPI_INT, 0, self));
       },
       1},
      {"Neighbor_alltoallv", MPI_ERR_ARG, loom::test::kHostReadsNullCollectiveArrays,
       [&](const Api& api, int n) {
         return CALL_ARRAY_COLLECTIVE(
             api, Neighbor_alltoallv, Ineighbor_alltoallv,
             (send.data(), at(counts, 0, n), at(displs, 1, n), MPI_INT, recv.data(),
              at(counts, 2, n), at(displs, 3, n), MPI_INT, line),
             (send.data(), at(wide_counts, 0, n), at(wide_displs, 1, n), MPI_INT, recv.data(),
              at(wide_counts, 2, n), at(wide_displs, 3, n), MPI_INT, line));
       },
       4},
      {"Neighbor_alltoallw", MPI_ERR_ARG, loom::test::kHostReadsNullCollectiveArrays,
       [&](const Api& api, int n) {
         return CALL_ARRAY_COLLECTIVE(
             api, Neighbor_alltoallw, Ineighbor_alltoallw,
             (send.data(), at(counts, 0, n), at(aint_byte_displs, 1, n), at(types, 2, n),
              recv.data(), at(counts, 3, n), at(aint_byte_displs, 4, n), at(types, 5, n), line),
             (send.data(), at(wide_counts, 0, n), at(aint_byte_displs, 1, n), at(types, 2, n),
              recv.data(), at(wide_counts, 3, n), at(aint_byte_displs, 4, n), at(types, 5, n),
              line));
       },
       6},
      {"Neighbor_allgatherv recvcounts", MPI_ERR_COUNT, true,
       [&](const Api& api, int) {
         return CALL_ARRAY_COLLECTIVE(
             api, Neighbor_allgatherv, Ineighbor_allgatherv,
             (send.data(), 1, MPI_INT, recv.data(), nullptr, displs.data(), MPI_INT, line),
             (send.data(), 1, MPI_INT, recv.data(), nullptr, wide_displs.data(), MPI_INT, line));
       },
       1},
      {"Neighbor_allgatherv displs", MPI_ERR_BUFFER, loom::test::kHostReadsNullCollectiveArrays,
       [&](const Api& api, int) {
         return CALL_ARRAY_COLLECTIVE(
             api, Neighbor_allgatherv, Ineighbor_allgatherv,
             (send.data(), 1, MPI_INT, recv.data(), counts.data(), nullptr, MPI_INT, line),
             (send.data(), 1, MPI_INT, recv.data(), wide_counts.data(), nullptr, MPI_INT, line));
       },
       1},
  };
  std::vector<bool> large_counts = {false};
  if (MPI_VERSION >= 4) large_counts.push_back(true);
  for (const Case& c : cases)
    for (int null = 0; null < c.arrays; ++null)
      for (Form form : forms())
        for (bool large_count : large_counts) {
          if (disabled && c.host_reads_it) continue;
          SCOPED_TRACE(c.what + ", array " + std::to_string(null) + " null, " + form_name(form) +
                       (large_count ? ", _c" : ""));
          const int loom_rc = c.call(Api{true, form, large_count}, null);
          EXPECT_EQ(error_class(loom_rc), c.expected);
          if (!c.host_reads_it) {
            EXPECT_EQ(error_class(c.call(Api{false, form, large_count}, null)), c.expected);
          }
        }
  // On an inter-communicator (every rank reads the remote group's entries).
  MPI_Comm local, inter;
  MPI_Comm_split(MPI_COMM_WORLD, g_rank % 2, g_rank, &local);
  MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, g_rank % 2 == 0 ? 1 : 0, 8, &inter);
  MPI_Comm_set_errhandler(inter, MPI_ERRORS_RETURN);
  for (bool loom : {true, false}) {
    if (!loom && loom::test::kHostReadsNullCollectiveArrays) continue;
    if (loom && disabled && loom::test::kHostReadsNullCollectiveArrays) continue;
    SCOPED_TRACE(loom ? "inter-communicator, Loom" : "inter-communicator, host");
    const Api api{loom, Form::Blocking};
    for (int null = 0; null < 4; ++null)
      EXPECT_EQ(
          error_class(CALL_COLLECTIVE(api, Alltoallv, Ialltoallv, send.data(), at(counts, 0, null),
                                      at(displs, 1, null), MPI_INT, recv.data(),
                                      at(counts, 2, null), at(displs, 3, null), MPI_INT, inter)),
          MPI_ERR_ARG);
    EXPECT_EQ(error_class(CALL_COLLECTIVE(api, Allgatherv, Iallgatherv, send.data(), 1, MPI_INT,
                                          recv.data(), counts.data(), nullptr, MPI_INT, inter)),
              MPI_ERR_BUFFER);
  }
  MPI_Comm_free(&inter);
  MPI_Comm_free(&local);
  // Arrays ignored on this rank.
  for (Form form : forms()) {
    SCOPED_TRACE(form_name(form));
    const Api api{true, form};
    std::vector<int> all(p, g_rank);
    EXPECT_EQ(CALL_COLLECTIVE(api, Alltoallv, Ialltoallv, MPI_IN_PLACE, nullptr, nullptr, MPI_INT,
                              all.data(), counts.data(), displs.data(), MPI_INT, comm),
              MPI_SUCCESS);
    // A persistent call's second start sends what the first received.
    for (int i = 0; i < p; ++i) EXPECT_EQ(all[i], form == Form::Persistent ? g_rank : i);
    const bool root = g_rank == 0;
    std::fill(recv.begin(), recv.end(), -1);
    EXPECT_EQ(CALL_COLLECTIVE(api, Gatherv, Igatherv, send.data(), 1, MPI_INT, recv.data(),
                              root ? counts.data() : nullptr, root ? displs.data() : nullptr,
                              MPI_INT, 0, comm),
              MPI_SUCCESS);
    for (int i = 0; root && i < p; ++i) EXPECT_EQ(recv[i], i);
    std::vector<int> scattered(p);
    for (int i = 0; i < p; ++i) scattered[i] = 10 + i;
    int mine = -1;
    EXPECT_EQ(
        CALL_COLLECTIVE(api, Scatterv, Iscatterv, scattered.data(), root ? counts.data() : nullptr,
                        root ? displs.data() : nullptr, MPI_INT, &mine, 1, MPI_INT, 0, comm),
        MPI_SUCCESS);
    EXPECT_EQ(mine, 10 + g_rank);
  }
  MPI_Comm_free(&self);
  MPI_Comm_free(&comm);
}

}  // namespace
