// Point-to-point, nonblocking communication (MPI 4.0, 3.7): Isend, Issend, Ibsend and Irsend
// with Irecv, completed by every Wait/Test family, through Loom against the host.
// (The harness and the conventions of every p2p test: p2p_harness.hpp.)
#include <gtest/gtest.h>
#include <mpi.h>

#include <string>
#include <vector>

#include "tests/mpi/p2p_harness.hpp"

namespace {

using namespace loom::test::p2p;

using Nonblocking = AllRanks;

// ---------------------------------------------------------------------------------------------
// Nonblocking sends in every mode, completed by every completion family

void nonblocking_exchange(Mode mode, Completion how, const TypeCase& tc, int count) {
  expect_same_as_host([&](Record& rec) {
    const Api& api = rec.api;
    const std::string label =
        std::string(nonblocking_name(mode)) + "/Irecv of " + describe(tc, count);
    Buffer outgoing(tc.type, count), incoming(tc.type, count);
    outgoing.fill(salt_of(g_rank, count, 2));
    std::optional<AttachedBuffer> attached;
    if (mode == Mode::Buffered) attached.emplace(tc.type, count, 1);
    std::vector<MPI_Request> requests(2, MPI_REQUEST_NULL);
    rec.code(label + " Irecv", api.Irecv(incoming.data(), count, tc.type, partner(), 11,
                                         MPI_COMM_WORLD, &requests[0]));
    if (mode == Mode::Ready) pair_handshake();  // both receives are posted
    rec.code(label + " send", send_nonblocking(api, mode, outgoing.data(), count, tc.type,
                                               partner(), 11, &requests[1]));
    const Completed done = complete(api, how, requests);
    record_completion(rec, label, how, done, requests, {receive_slot(tc.type), send_slot(tc.type)});
    rec.buffer(label, incoming);
    expect_delivered(rec, label, incoming, tc.type, count,
                     message_of(tc.type, count, salt_of(partner(), count, 2)));
  });
}

TEST_F(Nonblocking, EveryModeWithEveryCompletion) {
  std::size_t round = 0;
  for (const Mode mode : kModes) {
    for (const Completion how : kCompletions) {
      const TypeCase& tc = g_types[round % g_types.size()];
      const int count = round % 4 == 0 ? 0 : static_cast<int>(round % 5) + 1;
      nonblocking_exchange(mode, how, tc, count);
      ++round;
    }
  }
}

TEST_F(Nonblocking, LargeMessagesInEveryMode) {
  nonblocking_exchange(Mode::Standard, Completion::Waitsome, g_types[kVector],
                       count_for(g_types[kVector], kLargeBytes));
  nonblocking_exchange(Mode::Synchronous, Completion::Testany, g_types[kFace],
                       count_for(g_types[kFace], std::size_t{1} << 20));
  nonblocking_exchange(Mode::Buffered, Completion::Waitall, g_types[kNegativeLb],
                       count_for(g_types[kNegativeLb], kMediumBytes * 4));
  nonblocking_exchange(Mode::Ready, Completion::Test, g_types[kNested],
                       count_for(g_types[kNested], std::size_t{1} << 20));
}

// Packed sizes from nothing to several MiB (1 MiB but for the vector), both protocols of the
// host, through Isend/Irecv.
TEST_F(Nonblocking, SizeSweep) {
  for (const TypeIndex which : {kVector, kNegativeLb, kIndexedBlock}) {
    const TypeCase& tc = g_types[which];
    for (const std::size_t bytes :
         {std::size_t{0}, std::size_t{1}, std::size_t{4} << 10, std::size_t{16} << 10,
          std::size_t{256} << 10, std::size_t{1} << 20, kLargeBytes}) {
      if (bytes == kLargeBytes && which != kVector) continue;
      const int count = bytes == 0 ? 0 : count_for(tc, bytes);
      nonblocking_exchange(Mode::Standard, Completion::Waitall, tc, count);
    }
  }
}

}  // namespace
