// Point-to-point, persistent communication requests (MPI 4.0, 3.9): Send_init & co. and
// Recv_init restarted with new data, through Loom against the host.
// (The harness and the conventions of every p2p test: p2p_harness.hpp.)
#include <gtest/gtest.h>
#include <mpi.h>

#include <string>
#include <vector>

#include "tests/mpi/p2p_harness.hpp"

namespace {

using namespace loom::test::p2p;

using Persistent = AllRanks;

// ---------------------------------------------------------------------------------------------
// Persistent requests restarted with new data

void persistent_exchange(Mode mode, const TypeCase& tc, int count, int iterations) {
  expect_same_as_host([&](Record& rec) {
    const Api& api = rec.api;
    const std::string what =
        std::string(mode_name(mode)) + "_init/Recv_init of " + describe(tc, count);
    Buffer outgoing(tc.type, count), incoming(tc.type, count);
    std::optional<AttachedBuffer> attached;
    if (mode == Mode::Buffered) attached.emplace(tc.type, count, iterations);
    std::vector<MPI_Request> requests(2, MPI_REQUEST_NULL);
    rec.code(what + " Recv_init", api.Recv_init(incoming.data(), count, tc.type, partner(), 21,
                                                MPI_COMM_WORLD, &requests[0]));
    rec.code(what + " send init", send_persistent(api, mode, outgoing.data(), count, tc.type,
                                                  partner(), 21, &requests[1]));
    for (int iteration = 0; iteration < iterations; ++iteration) {
      const std::string label = what + " #" + std::to_string(iteration);
      outgoing.fill(salt_of(g_rank, iteration, 4));
      incoming.clear();
      int rc = MPI_SUCCESS;
      if (mode == Mode::Ready) {
        rc = api.Start(&requests[0]);
        pair_handshake();  // both receives are active
        const int send_rc = api.Start(&requests[1]);
        if (rc == MPI_SUCCESS) rc = send_rc;
      } else if (iteration % 2 == 0) {
        rc = api.Startall(2, requests.data());
      } else {
        rc = api.Start(&requests[0]);
        const int send_rc = api.Start(&requests[1]);
        if (rc == MPI_SUCCESS) rc = send_rc;
      }
      rec.code(label + " start", rc);
      const Completion how = kCompletions[static_cast<std::size_t>(iteration) % 8];
      const Completed done = complete(api, how, requests);
      record_completion(rec, label, how, done, requests,
                        {receive_slot(tc.type), send_slot(tc.type)});
      rec.buffer(label, incoming);
      expect_delivered(rec, label, incoming, tc.type, count,
                       message_of(tc.type, count, salt_of(partner(), iteration, 4)));
    }
    rec.code(what + " Request_free recv", api.Request_free(&requests[0]));
    rec.code(what + " Request_free send", api.Request_free(&requests[1]));
    rec.request(what + " recv after free", requests[0]);
    rec.request(what + " send after free", requests[1]);
  });
}

TEST_F(Persistent, EveryModeRestartedManyTimes) {
  persistent_exchange(Mode::Standard, g_types[kVector], 3, 50);
  persistent_exchange(Mode::Synchronous, g_types[kFace], 2, 24);
  persistent_exchange(Mode::Buffered, g_types[kStruct], 4, 24);
  persistent_exchange(Mode::Ready, g_types[kNegativeLb], 3, 24);
  persistent_exchange(Mode::Standard, g_types[kIndexedBlock], 0, 10);
  persistent_exchange(Mode::Standard, g_types[kNested], count_for(g_types[kNested], kMediumBytes),
                      10);
  persistent_exchange(Mode::Synchronous, g_types[kVector], count_for(g_types[kVector], 1 << 20), 4);
}

// The type handle is freed while persistent requests built on it are still in use.
TEST_F(Persistent, TypeFreedWhileRequestsLive) {
  expect_same_as_host([&](Record& rec) {
    const Api& api = rec.api;
    MPI_Datatype type = MPI_DATATYPE_NULL;
    MPI_Type_vector(16, 3, 7, MPI_SHORT, &type);
    MPI_Type_commit(&type);
    Buffer outgoing(type, 5), incoming(type, 5);
    std::vector<MPI_Request> requests(2, MPI_REQUEST_NULL);
    rec.code("Recv_init",
             api.Recv_init(incoming.data(), 5, type, partner(), 22, MPI_COMM_WORLD, &requests[0]));
    rec.code("Send_init",
             api.Send_init(outgoing.data(), 5, type, partner(), 22, MPI_COMM_WORLD, &requests[1]));
    const Buffer layout_reference(type, 5);
    Bytes expected_messages[3];
    for (int iteration = 0; iteration < 3; ++iteration)
      expected_messages[iteration] = message_of(type, 5, salt_of(partner(), iteration, 5));
    MPI_Datatype view = MPI_DATATYPE_NULL;  // an equal type for the checks after the free
    MPI_Type_vector(16, 3, 7, MPI_SHORT, &view);
    MPI_Type_commit(&view);
    MPI_Type_free(&type);
    for (int iteration = 0; iteration < 3; ++iteration) {
      const std::string label = "after MPI_Type_free #" + std::to_string(iteration);
      outgoing.fill(salt_of(g_rank, iteration, 5));
      incoming.clear();
      rec.code(label + " Startall", api.Startall(2, requests.data()));
      const Completed done = complete(api, Completion::Waitall, requests);
      record_completion(rec, label, Completion::Waitall, done, requests,
                        {receive_slot(view), send_slot(view)});
      rec.buffer(label, incoming);
      expect_delivered(rec, label, incoming, view, 5, expected_messages[iteration]);
    }
    api.Request_free(&requests[0]);
    api.Request_free(&requests[1]);
    MPI_Type_free(&view);
  });
}

}  // namespace
