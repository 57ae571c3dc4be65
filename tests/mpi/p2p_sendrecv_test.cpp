// Point-to-point, send-receive (MPI 4.0, 3.10): Sendrecv and Sendrecv_replace, and on MPI-4
// hosts Isendrecv and Isendrecv_replace, around the ring, through Loom against the host.
// (The harness and the conventions of every p2p test: p2p_harness.hpp.)
#include <gtest/gtest.h>
#include <mpi.h>

#include <string>
#include <vector>

#include "tests/mpi/host_quirks.hpp"
#include "tests/mpi/p2p_harness.hpp"

namespace {

using namespace loom::test::p2p;
using loom::test::kHostIsendrecvReleasesDerivedTypes;

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

#if MPI_VERSION >= 4
// The host's reference for MPI_Isendrecv(_replace) where its own call is broken
// (host_quirks.hpp: it frees the send type, misplaces the replace form's bytes, and crashed in
// the replace form's rendezvous under ASan): the same exchange made of MPI_Irecv and MPI_Isend.
int host_isendrecv_by_parts(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type,
                            int tag, MPI_Status* status) {
  MPI_Request requests[2];
  MPI_Status statuses[2];
  int rc = PMPI_Irecv(recvbuf, count, type, left(), tag, MPI_COMM_WORLD, &requests[0]);
  if (rc != MPI_SUCCESS) return rc;
  rc = PMPI_Isend(sendbuf, count, type, right(), tag, MPI_COMM_WORLD, &requests[1]);
  if (rc != MPI_SUCCESS) return rc;
  rc = PMPI_Waitall(2, requests, statuses);
  *status = statuses[0];
  return rc;
}

// One MPI_Isendrecv (or its large-count form) around the ring, completed by MPI_Wait.
int isendrecv_ring(const Record& rec, bool large_count, const void* sendbuf, void* recvbuf,
                   int count, MPI_Datatype type, int tag, MPI_Status* status) {
  const bool loom = &rec.api == &kLoom;
  if (!loom && kHostIsendrecvReleasesDerivedTypes)
    return host_isendrecv_by_parts(sendbuf, recvbuf, count, type, tag, status);
  MPI_Request request = MPI_REQUEST_NULL;
  const int rc = large_count ? (loom ? MPI_Isendrecv_c : PMPI_Isendrecv_c)(
                                   sendbuf, count, type, right(), tag, recvbuf, count, type, left(),
                                   tag, MPI_COMM_WORLD, &request)
                             : (loom ? MPI_Isendrecv : PMPI_Isendrecv)(
                                   sendbuf, count, type, right(), tag, recvbuf, count, type, left(),
                                   tag, MPI_COMM_WORLD, &request);
  return rc == MPI_SUCCESS ? rec.api.Wait(&request, status) : rc;
}

// One MPI_Isendrecv_replace (or its large-count form) of `buffer` around the ring; `copy` holds
// the same data, for the host's reference by parts.
int isendrecv_replace_ring(const Record& rec, bool large_count, void* buffer, const void* copy,
                           int count, MPI_Datatype type, int tag, MPI_Status* status) {
  const bool loom = &rec.api == &kLoom;
  if (!loom && kHostIsendrecvReleasesDerivedTypes)
    return host_isendrecv_by_parts(copy, buffer, count, type, tag, status);
  MPI_Request request = MPI_REQUEST_NULL;
  const int rc =
      large_count ? (loom ? MPI_Isendrecv_replace_c : PMPI_Isendrecv_replace_c)(
                        buffer, count, type, right(), tag, left(), tag, MPI_COMM_WORLD, &request)
                  : (loom ? MPI_Isendrecv_replace : PMPI_Isendrecv_replace)(
                        buffer, count, type, right(), tag, left(), tag, MPI_COMM_WORLD, &request);
  return rc == MPI_SUCCESS ? rec.api.Wait(&request, status) : rc;
}

// MPI-4's Isendrecv and Isendrecv_replace (and their large-count forms): the host's bytes and
// statuses, and the user's type intact after each call. Loom leaves these calls to the host,
// except where the host's own are broken (ops/p2p.cpp); there the reference is made by parts.
TEST_F(Sendrecv, NonblockingFormsKeepTheUsersType) {
  if (kHostIsendrecvReleasesDerivedTypes && !loom_is_active())
    GTEST_SKIP() << "Loom is disabled, and this host's own MPI_Isendrecv of a derived type "
                    "frees the type (pmodels/mpich#7098)";
  for (const TypeCase& tc : g_types) {
    expect_same_as_host([&](Record& rec) {
      const auto type_intact = [&](const std::string& label) {
        int size = -1;
        rec.check(PMPI_Type_size(tc.type, &size) == MPI_SUCCESS && size == tc.size,
                  label + ": the type is still the user's");
      };
      for (const int count : {0, 2, count_for(tc, kMediumBytes)}) {
        const std::string what = describe(tc, count);
        const Bytes from_left = message_of(tc.type, count, salt_of(left(), count, 6));
        Buffer outgoing(tc.type, count);
        outgoing.fill(salt_of(g_rank, count, 6));
        for (const bool large_count : {false, true}) {
          const std::string label = (large_count ? "Isendrecv_c " : "Isendrecv ") + what;
          Buffer incoming(tc.type, count);
          MPI_Status status = fresh_status();
          rec.code(label, isendrecv_ring(rec, large_count, outgoing.data(), incoming.data(), count,
                                         tc.type, 6, &status));
          // MPICH 4.0's status of this call holds leftovers (an internal tag, no count).
          if (!kHostIsendrecvReleasesDerivedTypes) rec.status(label, status, tc.type);
          rec.buffer(label, incoming);
          expect_delivered(rec, label, incoming, tc.type, count, from_left);
          type_intact(label);
        }
        for (const bool large_count : {false, true}) {
          const std::string label =
              (large_count ? "Isendrecv_replace_c " : "Isendrecv_replace ") + what;
          Buffer both(tc.type, count);
          both.fill(salt_of(g_rank, count, 6));
          const Buffer before = both;
          MPI_Status status = fresh_status();
          rec.code(label, isendrecv_replace_ring(rec, large_count, both.data(), before.data(),
                                                 count, tc.type, 7, &status));
          // MPICH 4.0's status of this call holds leftovers (an internal tag, no count).
          if (!kHostIsendrecvReleasesDerivedTypes) rec.status(label, status, tc.type);
          rec.buffer(label, both);
          expect_delivered_into(rec, label, both, before, tc.type, from_left);
          type_intact(label);
        }
      }
    });
  }
}
#endif

}  // namespace
