// Point-to-point, blocking sends (MPI 4.0, 3.2-3.4): Send, Ssend, Bsend and Rsend with
// Recv, through Loom against the host.
// (The harness and the conventions of every p2p test: p2p_harness.hpp.)
#include <gtest/gtest.h>
#include <mpi.h>

#include <string>
#include <vector>

#include "tests/mpi/p2p_harness.hpp"

namespace {

using namespace loom::test::p2p;

using Blocking = AllRanks;

// ---------------------------------------------------------------------------------------------
// Blocking sends in every mode, every type, 0 B to several MiB, both directions in each pair

void blocking_exchange(Mode mode, const TypeCase& tc) {
  const bool large_vector = mode == Mode::Standard || mode == Mode::Buffered;
  expect_same_as_host([&](Record& rec) {
    const Api& api = rec.api;
    for (const int count : counts_for(tc, large_vector, !large_vector)) {
      const HostDefect defect(
          rec, mode == Mode::Buffered &&
                   host_breaks_contiguous_into(tc, static_cast<std::size_t>(count) * tc.size));
      for (int sender_parity = 0; sender_parity < 2; ++sender_parity) {
        const bool sending = g_rank % 2 == sender_parity;
        const int tag = 7 + count % 5;
        const std::string label = std::string(mode_name(mode)) + " of " + describe(tc, count);
        if (sending) {
          Buffer outgoing(tc.type, count);
          outgoing.fill(salt_of(g_rank, count, 1));
          std::optional<AttachedBuffer> attached;
          if (mode == Mode::Buffered) attached.emplace(tc.type, count, 1);
          if (mode == Mode::Ready) pair_handshake();  // the receive is posted
          rec.code(label,
                   send_blocking(api, mode, outgoing.data(), count, tc.type, partner(), tag));
        } else {
          Buffer incoming(tc.type, count);
          MPI_Status status = fresh_status();
          int rc = MPI_SUCCESS;
          if (mode == Mode::Ready) {
            MPI_Request request = MPI_REQUEST_NULL;
            rc = api.Irecv(incoming.data(), count, tc.type, partner(), tag, MPI_COMM_WORLD,
                           &request);
            pair_handshake();
            const int wait_rc = api.Wait(&request, &status);
            if (rc == MPI_SUCCESS) rc = wait_rc;
          } else {
            rc = api.Recv(incoming.data(), count, tc.type, partner(), tag, MPI_COMM_WORLD, &status);
          }
          rec.code(label + " received", rc);
          rec.status(label + " received", status, tc.type);
          rec.buffer(label + " received", incoming);
          expect_delivered(rec, label, incoming, tc.type, count,
                           message_of(tc.type, count, salt_of(partner(), count, 1)));
        }
      }
    }
  });
}

TEST_F(Blocking, Send) {
  for (const TypeCase& tc : g_types) blocking_exchange(Mode::Standard, tc);
}
TEST_F(Blocking, Ssend) {
  for (const TypeCase& tc : g_types) blocking_exchange(Mode::Synchronous, tc);
}
TEST_F(Blocking, Bsend) {
  for (const TypeCase& tc : g_types) blocking_exchange(Mode::Buffered, tc);
}
TEST_F(Blocking, Rsend) {
  for (const TypeCase& tc : g_types) blocking_exchange(Mode::Ready, tc);
}

}  // namespace
