// Point-to-point, send-receive (MPI 4.0, 3.10): Sendrecv and Sendrecv_replace around the
// ring, through Loom against the host.
// (The harness and the conventions of every p2p test: p2p_harness.hpp.)
#include <gtest/gtest.h>
#include <mpi.h>

#include <string>
#include <vector>

#include "tests/mpi/p2p_harness.hpp"

namespace {

using namespace loom::test::p2p;

using Sendrecv = AllRanks;

// ---------------------------------------------------------------------------------------------
// Sendrecv and Sendrecv_replace around the ring

TEST_F(Sendrecv, RingWithDerivedBasicAndWildcardReceives) {
  for (const TypeCase& tc : g_types) {
    expect_same_as_host([&](Record& rec) {
      const Api& api = rec.api;
      for (const int count : {0, 2, count_for(tc, kMediumBytes)}) {
        const std::string what = describe(tc, count);
        const Bytes from_left = message_of(tc.type, count, salt_of(left(), count, 3));
        Buffer outgoing(tc.type, count);
        outgoing.fill(salt_of(g_rank, count, 3));
        {
          Buffer incoming(tc.type, count);
          MPI_Status status = fresh_status();
          rec.code("Sendrecv " + what,
                   api.Sendrecv(outgoing.data(), count, tc.type, right(), 3, incoming.data(), count,
                                tc.type, left(), 3, MPI_COMM_WORLD, &status));
          rec.status("Sendrecv " + what, status, tc.type);
          rec.buffer("Sendrecv " + what, incoming);
          expect_delivered(rec, "Sendrecv " + what, incoming, tc.type, count, from_left);
        }
        {
          // Derived out, the matching basic type in, from any source with any tag.
          const int basic_count = count * tc.size / type_size(tc.basic);
          Buffer incoming(tc.basic, basic_count);
          MPI_Status status = fresh_status();
          const std::string label = "Sendrecv to basic, any source/tag, " + what;
          rec.code(label, api.Sendrecv(outgoing.data(), count, tc.type, right(), 4, incoming.data(),
                                       basic_count, tc.basic, MPI_ANY_SOURCE, MPI_ANY_TAG,
                                       MPI_COMM_WORLD, &status));
          rec.status(label, status, tc.basic);
          rec.status(label + " (derived view)", status, tc.type);
          rec.buffer(label, incoming);
          expect_delivered(rec, label, incoming, tc.basic, basic_count, from_left);
        }
        {
          const HostDefect defect(
              rec, host_breaks_contiguous_into(tc, static_cast<std::size_t>(count) * tc.size));
          Buffer both(tc.type, count);
          both.fill(salt_of(g_rank, count, 3));
          const Buffer before = both;
          MPI_Status status = fresh_status();
          const std::string label = "Sendrecv_replace " + what;
          rec.code(label, api.Sendrecv_replace(both.data(), count, tc.type, right(), 5, left(), 5,
                                               MPI_COMM_WORLD, &status));
          rec.status(label, status, tc.type);
          rec.buffer(label, both);
          expect_delivered_into(rec, label, both, before, tc.type, from_left);
        }
      }
    });
  }
}

}  // namespace
