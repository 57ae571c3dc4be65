// Point-to-point, erroneous calls: the host's error classes, nothing sent, nothing left
// posted, through Loom against the host.
// (The harness and the conventions of every p2p test: p2p_harness.hpp.)
#include <gtest/gtest.h>
#include <mpi.h>

#include <string>
#include <vector>

#include "tests/mpi/p2p_harness.hpp"

namespace {

using namespace loom::test::p2p;

using Errors = AllRanks;

// ---------------------------------------------------------------------------------------------
// Erroneous calls: the host's error class, nothing sent

TEST_F(Errors, SameClassesAsTheHost) {
  MPI_Datatype uncommitted = MPI_DATATYPE_NULL;
  MPI_Type_vector(4, 1, 3, MPI_INT, &uncommitted);
  const TypeCase& tc = g_types[kVector];
  expect_same_as_host([&](Record& rec) {
    const Api& api = rec.api;
    Buffer data(tc.type, 2);
    data.fill(1);
    MPI_Request request = MPI_REQUEST_NULL;
    MPI_Status status = fresh_status();
    rec.code("Send count -1", api.Send(data.data(), -1, tc.type, partner(), 1, MPI_COMM_WORLD));
    rec.code("Send to rank size", api.Send(data.data(), 2, tc.type, g_size, 1, MPI_COMM_WORLD));
    rec.code("Send tag -7", api.Send(data.data(), 2, tc.type, partner(), -7, MPI_COMM_WORLD));
    rec.code("Send uncommitted type",
             api.Send(data.data(), 2, uncommitted, partner(), 1, MPI_COMM_WORLD));
    rec.code("Send MPI_DATATYPE_NULL",
             api.Send(data.data(), 2, MPI_DATATYPE_NULL, partner(), 1, MPI_COMM_WORLD));
    rec.code("Ssend to rank -5", api.Ssend(data.data(), 2, tc.type, -5, 1, MPI_COMM_WORLD));
    rec.code("Isend count -1",
             api.Isend(data.data(), -1, tc.type, partner(), 1, MPI_COMM_WORLD, &request));
    rec.code("Isend to rank size",
             api.Isend(data.data(), 2, tc.type, g_size, 1, MPI_COMM_WORLD, &request));
    rec.code("Irecv uncommitted type",
             api.Irecv(data.data(), 2, uncommitted, partner(), 1, MPI_COMM_WORLD, &request));
    rec.code("Recv count -1",
             api.Recv(data.data(), -1, tc.type, partner(), 1, MPI_COMM_WORLD, &status));
    rec.code("Recv from rank size + 3",
             api.Recv(data.data(), 2, tc.type, g_size + 3, 1, MPI_COMM_WORLD, &status));
    rec.code("Recv tag -7",
             api.Recv(data.data(), 2, tc.type, partner(), -7, MPI_COMM_WORLD, &status));
    rec.code("Send_init tag -7",
             api.Send_init(data.data(), 2, tc.type, partner(), -7, MPI_COMM_WORLD, &request));
    rec.code("Recv_init count -1",
             api.Recv_init(data.data(), -1, tc.type, partner(), 1, MPI_COMM_WORLD, &request));
    // The receive sides name MPI_PROC_NULL: MPICH 4.0.2 leaves the receive of a failed
    // Sendrecv posted, which would match a later message.
    rec.code("Sendrecv to rank size",
             api.Sendrecv(data.data(), 1, tc.type, g_size, 1, data.data(), 1, tc.type,
                          MPI_PROC_NULL, 1, MPI_COMM_WORLD, &status));
    rec.code("Sendrecv_replace uncommitted type",
             api.Sendrecv_replace(data.data(), 1, uncommitted, MPI_PROC_NULL, 1, MPI_PROC_NULL, 1,
                                  MPI_COMM_WORLD, &status));
    request = MPI_REQUEST_NULL;
    rec.code("Start MPI_REQUEST_NULL", api.Start(&request));
    status = fresh_status();
    rec.code("Wait MPI_REQUEST_NULL", api.Wait(&request, &status));
    rec.status("Wait MPI_REQUEST_NULL", status, tc.type);
    int flag = -1;
    status = fresh_status();
    rec.code("Test MPI_REQUEST_NULL", api.Test(&request, &flag, &status));
    rec.fact("Test MPI_REQUEST_NULL flag", std::to_string(flag));
    rec.status("Test MPI_REQUEST_NULL", status, tc.type);
    rec.buffer("untouched by erroneous calls", data);
  });
  MPI_Type_free(&uncommitted);
}

// A Sendrecv whose send is erroneous must not leave its receive posted: a later message from
// the same source with the same tag stays unmatched, and the buffer unchanged.
TEST_F(Errors, FailedSendrecvLeavesNoReceive) {
  const TypeCase& tc = g_types[kVector];
  expect_same_as_host([&](Record& rec) {
    const Api& api = rec.api;
    Buffer data(tc.type, 1);
    data.fill(salt_of(g_rank, 1, 27));
    const Buffer before = data;
    MPI_Status status = fresh_status();
    rec.code("Sendrecv to rank size",
             api.Sendrecv(data.data(), 1, tc.type, g_size, 170, data.data(), 1, tc.type, partner(),
                          170, MPI_COMM_WORLD, &status));
    pair_handshake();
    const int value = g_rank;
    PMPI_Send(&value, 1, MPI_INT, partner(), 170, MPI_COMM_WORLD);
    pair_handshake();
    // The message was sent before the handshake; give the host a moment to see it arrive.
    int found = 0;
    const double give_up = PMPI_Wtime() + 2.0;
    while (!found && PMPI_Wtime() < give_up) {
      PMPI_Iprobe(partner(), 170, MPI_COMM_WORLD, &found, MPI_STATUS_IGNORE);
      if (!found) std::this_thread::yield();
    }
    rec.fact("later message still unmatched", std::to_string(found));
    rec.check(found == 1, "a failed Sendrecv left a receive posted that took a later message");
    if (found) {
      int received = -1;
      PMPI_Recv(&received, 1, MPI_INT, partner(), 170, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      rec.check(received == partner(), "the later message arrived wrong");
    }
    rec.buffer("Sendrecv buffer", data);
    rec.check(data.bytes() == before.bytes(), "a failed Sendrecv changed its receive buffer");
  });
}

}  // namespace
