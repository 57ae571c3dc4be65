// Point-to-point, probe and matched probe/receive (MPI 4.0, 3.8.1-3.8.3): Probe, Iprobe,
// Mprobe, Improbe, Mrecv and Imrecv, through Loom against the host.
// (The harness and the conventions of every p2p test: p2p_harness.hpp.)
#include <gtest/gtest.h>
#include <mpi.h>

#include <string>
#include <vector>

#include "tests/mpi/p2p_harness.hpp"

namespace {

using namespace loom::test::p2p;

using Probe = AllRanks;

// ---------------------------------------------------------------------------------------------
// Probe, Iprobe, Mprobe, Improbe

TEST_F(Probe, ReceiveTheProbedCount) {
  for (const TypeIndex which : {kVector, kStruct, kNegativeLb, kContiguous}) {
    const TypeCase& tc = g_types[which];
    expect_same_as_host([&](Record& rec) {
      const Api& api = rec.api;
      const int counts[4] = {3, 0, 1, count_for(tc, kMediumBytes)};
      for (int sender_parity = 0; sender_parity < 2; ++sender_parity) {
        if (g_rank % 2 == sender_parity) {
          for (int k = 0; k < 4; ++k) {
            Buffer outgoing(tc.type, counts[k]);
            outgoing.fill(salt_of(g_rank, k, 6));
            rec.code("Send #" + std::to_string(k), api.Send(outgoing.data(), counts[k], tc.type,
                                                            partner(), 30 + k, MPI_COMM_WORLD));
          }
          continue;
        }
        for (int k = 0; k < 4; ++k) {
          const std::string label = (k % 2 == 0 ? "Probe(any, any) #" : "Iprobe(partner, tag) #") +
                                    std::to_string(k) + " of " + tc.name;
          MPI_Status probed = fresh_status();
          int rc = MPI_SUCCESS;
          if (k % 2 == 0) {
            rc = api.Probe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &probed);
          } else {
            int flag = 0;
            do rc = api.Iprobe(partner(), 30 + k, MPI_COMM_WORLD, &flag, &probed);
            while (keep_polling(rc, flag));
          }
          rec.code(label, rc);
          rec.status(label, probed, tc.type);
          int count = 0;
          api.Get_count(&probed, tc.type, &count);
          if (count == MPI_UNDEFINED || count < 0) count = 0;
          Buffer incoming(tc.type, count);
          MPI_Status status = fresh_status();
          rec.code(label + " Recv", api.Recv(incoming.data(), count, tc.type, probed.MPI_SOURCE,
                                             probed.MPI_TAG, MPI_COMM_WORLD, &status));
          rec.status(label + " Recv", status, tc.type);
          rec.buffer(label, incoming);
          rec.check(count == counts[k], label + ": probed count " + std::to_string(count) +
                                            ", sent " + std::to_string(counts[k]));
          expect_delivered(rec, label, incoming, tc.type, count,
                           message_of(tc.type, counts[k], salt_of(partner(), k, 6)));
        }
      }
    });
  }
}

TEST_F(Probe, MatchedProbeAndMatchedReceive) {
  for (const TypeIndex which : {kFace, kIndexedBlock, kNested}) {
    const TypeCase& tc = g_types[which];
    expect_same_as_host([&](Record& rec) {
      const Api& api = rec.api;
      constexpr int kMessages = 5;
      const int counts[kMessages] = {2, 0, count_for(tc, kMediumBytes), 1, 3};
      for (int sender_parity = 0; sender_parity < 2; ++sender_parity) {
        if (g_rank % 2 == sender_parity) {
          std::vector<Buffer> outgoing;
          std::vector<MPI_Request> requests(kMessages, MPI_REQUEST_NULL);
          for (int k = 0; k < kMessages; ++k) {
            outgoing.emplace_back(tc.type, counts[k]);
            outgoing.back().fill(salt_of(g_rank, k, 7));
          }
          for (int k = 0; k < kMessages; ++k)
            rec.code("Isend #" + std::to_string(k),
                     api.Isend(outgoing[k].data(), counts[k], tc.type, partner(), 40 + k,
                               MPI_COMM_WORLD, &requests[k]));
          rec.code("Waitall sends", api.Waitall(kMessages, requests.data(), MPI_STATUSES_IGNORE));
          continue;
        }
        for (int k = 0; k < kMessages; ++k) {
          // k: 0 Mprobe+Mrecv, 1 Improbe+Mrecv, 2 Mprobe+Imrecv, 3 Improbe+Imrecv,
          // 4 Mprobe+Mrecv into the basic type.
          const bool immediate_probe = k % 2 == 1;
          const bool immediate_receive = k == 2 || k == 3;
          const MPI_Datatype receive_type = k == 4 ? tc.basic : tc.type;
          const std::string label = std::string(immediate_probe ? "Improbe" : "Mprobe") + "+" +
                                    (immediate_receive ? "Imrecv" : "Mrecv") + " #" +
                                    std::to_string(k) + " of " + tc.name;
          MPI_Message message = MPI_MESSAGE_NULL;
          MPI_Status probed = fresh_status();
          int rc = MPI_SUCCESS;
          if (immediate_probe) {
            int flag = 0;
            do rc = api.Improbe(partner(), 40 + k, MPI_COMM_WORLD, &flag, &message, &probed);
            while (keep_polling(rc, flag));
          } else {
            rc = api.Mprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &message, &probed);
          }
          rec.code(label, rc);
          rec.status(label + " probed", probed, receive_type);
          int count = 0;
          api.Get_count(&probed, receive_type, &count);
          if (count == MPI_UNDEFINED || count < 0) count = 0;
          Buffer incoming(receive_type, count);
          MPI_Status status = fresh_status();
          if (immediate_receive) {
            MPI_Request request = MPI_REQUEST_NULL;
            rc = api.Imrecv(incoming.data(), count, receive_type, &message, &request);
            rec.code(label + " Imrecv", rc);
            rec.code(label + " Wait", api.Wait(&request, &status));
            rec.request(label + " request", request);
          } else {
            rec.code(label + " Mrecv",
                     api.Mrecv(incoming.data(), count, receive_type, &message, &status));
          }
          rec.fact(label + " message", message == MPI_MESSAGE_NULL ? "MPI_MESSAGE_NULL" : "live");
          rec.status(label + " received", status, receive_type);
          rec.buffer(label, incoming);
          expect_delivered(rec, label, incoming, receive_type, count,
                           message_of(tc.type, counts[k], salt_of(partner(), k, 7)));
        }
      }
    });
  }
}

}  // namespace
