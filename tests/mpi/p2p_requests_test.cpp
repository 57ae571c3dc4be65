// Point-to-point, requests and statuses (MPI 4.0, 3.2.5, 3.7.3-3.7.5, 3.8.4): Request_free,
// Cancel, Request_get_status, request arrays mixing Loom's, the host's and null requests, and
// the status fields each completion call leaves, through Loom against the host.
// (The harness and the conventions of every p2p test: p2p_harness.hpp.)
#include <gtest/gtest.h>
#include <mpi.h>

#include <string>
#include <vector>

#include "tests/mpi/p2p_harness.hpp"

namespace {

using namespace loom::test::p2p;

using Requests = AllRanks;
using MixedRequests = AllRanks;
using StatusFields = AllRanks;

// ---------------------------------------------------------------------------------------------
// Request life cycle: Request_free, Cancel, Request_get_status

// A send freed while still in flight completes by itself; the peer's reply tells the sender
// it has. The large message cannot complete before the receive is posted.
TEST_F(Requests, FreeAnActiveSend) {
  for (const std::size_t bytes : {std::size_t{512}, kLargeBytes}) {
    const TypeCase& tc = g_types[kVector];
    const int count = count_for(tc, bytes);
    expect_same_as_host([&](Record& rec) {
      const Api& api = rec.api;
      const std::string what = "Isend+Request_free of " + describe(tc, count);
      if (g_rank % 2 == 0) {
        Buffer outgoing(tc.type, count);
        outgoing.fill(salt_of(g_rank, count, 8));
        MPI_Request request = MPI_REQUEST_NULL;
        rec.code(what, api.Isend(outgoing.data(), count, tc.type, partner(), 50, MPI_COMM_WORLD,
                                 &request));
        rec.code(what + " Request_free", api.Request_free(&request));
        rec.request(what, request);
        pair_handshake();
        int reply = 0;
        rec.code(what + " reply",
                 api.Recv(&reply, 1, MPI_INT, partner(), 51, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        rec.fact(what + " reply", std::to_string(reply));
        outgoing.clear();  // the send has completed: the buffer is the user's again
        // More traffic from this rank, while Loom may still hold the freed operation.
        Buffer more(tc.type, 3);
        more.fill(salt_of(g_rank, 3, 9));
        rec.code(what + " next Send",
                 api.Send(more.data(), 3, tc.type, partner(), 52, MPI_COMM_WORLD));
      } else {
        pair_handshake();
        Buffer incoming(tc.type, count);
        MPI_Status status = fresh_status();
        rec.code(what + " Recv",
                 api.Recv(incoming.data(), count, tc.type, partner(), 50, MPI_COMM_WORLD, &status));
        rec.status(what + " Recv", status, tc.type);
        rec.buffer(what, incoming);
        expect_delivered(rec, what, incoming, tc.type, count,
                         message_of(tc.type, count, salt_of(partner(), count, 8)));
        const int reply = count;
        rec.code(what + " reply", api.Send(&reply, 1, MPI_INT, partner(), 51, MPI_COMM_WORLD));
        Buffer next(tc.type, 3);
        MPI_Status next_status = fresh_status();
        rec.code(what + " next Recv",
                 api.Recv(next.data(), 3, tc.type, partner(), 52, MPI_COMM_WORLD, &next_status));
        rec.status(what + " next Recv", next_status, tc.type);
        expect_delivered(rec, what + " next", next, tc.type, 3,
                         message_of(tc.type, 3, salt_of(partner(), 3, 9)));
      }
    });
  }
}

// A receive nobody matches is cancelled: the status says so and the buffer is untouched.
TEST_F(Requests, CancelPendingReceive) {
  std::size_t round = 0;
  for (const Completion how : {Completion::Wait, Completion::Test, Completion::Waitall,
                               Completion::Waitany, Completion::Testsome}) {
    const TypeCase& tc = g_types[round++ % g_types.size()];
    expect_same_as_host([&](Record& rec) {
      const Api& api = rec.api;
      const std::string what = "cancelled Irecv of " + describe(tc, 4);
      Buffer incoming(tc.type, 4);
      std::vector<MPI_Request> requests(1, MPI_REQUEST_NULL);
      rec.code(what, api.Irecv(incoming.data(), 4, tc.type, partner(), 999, MPI_COMM_WORLD,
                               &requests[0]));
      rec.code(what + " Cancel", api.Cancel(&requests[0]));
      const Completed done = complete(api, how, requests);
      record_completion(rec, what, how, done, requests, {cancelled_slot(tc.type)});
      rec.buffer(what, incoming);
      int cancelled = 0;
      MPI_Status status = done.statuses[0];
      api.Test_cancelled(&status, &cancelled);
      rec.check(cancelled == 1, what + ": MPI_Test_cancelled says not cancelled");
      expect_delivered(rec, what, incoming, tc.type, 4, {});
    });
  }
}

// A persistent receive is cancelled once, then restarted and matched.
TEST_F(Requests, CancelPersistentReceiveThenRestart) {
  const TypeCase& tc = g_types[kFace];
  expect_same_as_host([&](Record& rec) {
    const Api& api = rec.api;
    const std::string what = "Recv_init of " + describe(tc, 2);
    Buffer incoming(tc.type, 2), outgoing(tc.type, 2);
    outgoing.fill(salt_of(g_rank, 2, 10));
    MPI_Request request = MPI_REQUEST_NULL;
    rec.code(what,
             api.Recv_init(incoming.data(), 2, tc.type, partner(), 60, MPI_COMM_WORLD, &request));
    rec.code(what + " Start", api.Start(&request));
    rec.code(what + " Cancel", api.Cancel(&request));
    MPI_Status status = fresh_status();
    rec.code(what + " Wait (cancelled)", api.Wait(&request, &status));
    rec.cancelled_status(what + " cancelled", status);
    rec.buffer(what + " cancelled", incoming);
    expect_delivered(rec, what + " cancelled", incoming, tc.type, 2, {});
    pair_handshake();  // every cancel happened before anything is sent
    rec.code(what + " restart", api.Start(&request));
    rec.code(what + " Send", api.Send(outgoing.data(), 2, tc.type, partner(), 60, MPI_COMM_WORLD));
    status = fresh_status();
    rec.code(what + " Wait (matched)", api.Wait(&request, &status));
    rec.status(what + " matched", status, tc.type);
    rec.buffer(what + " matched", incoming);
    expect_delivered(rec, what + " matched", incoming, tc.type, 2,
                     message_of(tc.type, 2, salt_of(partner(), 2, 10)));
    rec.code(what + " Request_free", api.Request_free(&request));
  });
}

// Request_get_status reports completion without freeing: the data must be in the buffer as
// soon as it says so, and the following Wait gives the same status again.
TEST_F(Requests, GetStatusThenWait) {
  for (const TypeIndex which : {kVector, kStruct, kNested}) {
    const TypeCase& tc = g_types[which];
    for (const int count : {3, count_for(tc, kLargeBytes / 4)}) {
      expect_same_as_host([&](Record& rec) {
        const Api& api = rec.api;
        const std::string what = "Request_get_status of " + describe(tc, count);
        int flag = -1;
        MPI_Status status = fresh_status();
        rec.code(what + " on MPI_REQUEST_NULL",
                 api.Request_get_status(MPI_REQUEST_NULL, &flag, &status));
        rec.fact(what + " on MPI_REQUEST_NULL flag", std::to_string(flag));
        rec.status(what + " on MPI_REQUEST_NULL", status, tc.type);

        Buffer incoming(tc.type, count), outgoing(tc.type, count);
        outgoing.fill(salt_of(g_rank, count, 11));
        MPI_Request receive = MPI_REQUEST_NULL, send = MPI_REQUEST_NULL;
        rec.code(what + " Irecv", api.Irecv(incoming.data(), count, tc.type, partner(), 70,
                                            MPI_COMM_WORLD, &receive));
        flag = -1;
        status = fresh_status();
        rec.code(what + " before the send", api.Request_get_status(receive, &flag, &status));
        rec.fact(what + " before the send flag", std::to_string(flag));
        pair_handshake();  // nothing was sent before this point
        rec.code(what + " Isend",
                 api.Isend(outgoing.data(), count, tc.type, partner(), 70, MPI_COMM_WORLD, &send));
        int rc = MPI_SUCCESS;
        flag = 0;
        status = fresh_status();
        do rc = api.Request_get_status(receive, &flag, &status);
        while (keep_polling(rc, flag));
        rec.code(what + " receive", rc);
        rec.status(what + " receive", status, tc.type);
        rec.request(what + " receive after get_status", receive);
        rec.buffer(what + " at get_status", incoming);
        expect_delivered(rec, what + " at get_status", incoming, tc.type, count,
                         message_of(tc.type, count, salt_of(partner(), count, 11)));
        flag = 0;
        MPI_Status send_status = fresh_status();
        do rc = api.Request_get_status(send, &flag, &send_status);
        while (keep_polling(rc, flag));
        rec.code(what + " send", rc);
        rec.status(what + " send", send_status, tc.type);
        status = fresh_status();
        rec.code(what + " Wait receive", api.Wait(&receive, &status));
        rec.status(what + " Wait receive", status, tc.type);
        rec.code(what + " Wait send", api.Wait(&send, &send_status));
        rec.request(what + " receive after Wait", receive);
        rec.request(what + " send after Wait", send);
        rec.buffer(what + " after Wait", incoming);
        expect_delivered(rec, what + " after Wait", incoming, tc.type, count,
                         message_of(tc.type, count, salt_of(partner(), count, 11)));
      });
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Request arrays mixing Loom's requests, the host's own, and MPI_REQUEST_NULL

TEST_F(MixedRequests, LoomHostAndNullInOneArray) {
  std::size_t round = 0;
  for (const Completion how : {Completion::Waitall, Completion::Waitsome, Completion::Testany,
                               Completion::Testsome, Completion::Waitany, Completion::Testall}) {
    const TypeCase& tc = g_types[round % 3 == 0 ? kVector : round % 3 == 1 ? kStruct : kNested];
    const int count = round % 2 == 0 ? 3 : count_for(tc, kMediumBytes);
    ++round;
    expect_same_as_host([&](Record& rec) {
      const Api& api = rec.api;
      const int basic_count = count * tc.size / type_size(tc.basic);
      const std::string what = "mixed array of " + describe(tc, count);
      Buffer derived_in(tc.type, count), basic_in(tc.basic, basic_count), host_in(tc.type, count);
      Buffer derived_out(tc.type, count), basic_out(tc.basic, basic_count),
          host_out(tc.type, count);
      derived_out.fill(salt_of(g_rank, 1, 18));
      basic_out.fill(salt_of(g_rank, 2, 18));
      host_out.fill(salt_of(g_rank, 3, 18));
      // In both runs entries 3 and 6 are the host's own requests, made through PMPI_*.
      std::vector<MPI_Request> requests(8, MPI_REQUEST_NULL);
      rec.code(what + " derived Irecv", api.Irecv(derived_in.data(), count, tc.type, partner(), 1,
                                                  MPI_COMM_WORLD, &requests[0]));
      rec.code(what + " basic Irecv", api.Irecv(basic_in.data(), basic_count, tc.basic, partner(),
                                                2, MPI_COMM_WORLD, &requests[2]));
      rec.code(what + " PMPI_Irecv", PMPI_Irecv(host_in.data(), count, tc.type, partner(), 3,
                                                MPI_COMM_WORLD, &requests[3]));
      rec.code(what + " derived Isend", api.Isend(derived_out.data(), count, tc.type, partner(), 1,
                                                  MPI_COMM_WORLD, &requests[4]));
      rec.code(what + " basic Isend", api.Isend(basic_out.data(), basic_count, tc.basic, partner(),
                                                2, MPI_COMM_WORLD, &requests[5]));
      rec.code(what + " PMPI_Isend", PMPI_Isend(host_out.data(), count, tc.type, partner(), 3,
                                                MPI_COMM_WORLD, &requests[6]));
      const Completed done = complete(api, how, requests);
      record_completion(
          rec, what, how, done, requests,
          {receive_slot(tc.type), kNullSlot, receive_slot(tc.basic), receive_slot(tc.type),
           send_slot(tc.type), send_slot(tc.basic), send_slot(tc.type), kNullSlot});
      rec.buffer(what + " derived", derived_in);
      rec.buffer(what + " basic", basic_in);
      rec.buffer(what + " host", host_in);
      expect_delivered(rec, what + " derived", derived_in, tc.type, count,
                       message_of(tc.type, count, salt_of(partner(), 1, 18)));
      expect_delivered(rec, what + " basic", basic_in, tc.basic, basic_count,
                       message_of(tc.basic, basic_count, salt_of(partner(), 2, 18)));
      expect_delivered(rec, what + " host", host_in, tc.type, count,
                       message_of(tc.type, count, salt_of(partner(), 3, 18)));
    });
  }
}

// Startall and the completion calls over Loom's and the host's persistent requests together.
TEST_F(MixedRequests, PersistentLoomAndHostRequestsStartedTogether) {
  const TypeCase& tc = g_types[kIndexedBlock];
  expect_same_as_host([&](Record& rec) {
    const Api& api = rec.api;
    const int count = 4, basic_count = 10;
    Buffer derived_in(tc.type, count), basic_in(MPI_INT, basic_count), host_in(tc.type, count);
    Buffer derived_out(tc.type, count), basic_out(MPI_INT, basic_count), host_out(tc.type, count);
    std::vector<MPI_Request> requests(6, MPI_REQUEST_NULL);
    rec.code("Recv_init derived", api.Recv_init(derived_in.data(), count, tc.type, partner(), 1,
                                                MPI_COMM_WORLD, &requests[0]));
    rec.code("PMPI_Recv_init", PMPI_Recv_init(host_in.data(), count, tc.type, partner(), 2,
                                              MPI_COMM_WORLD, &requests[1]));
    rec.code("Recv_init basic", api.Recv_init(basic_in.data(), basic_count, MPI_INT, partner(), 3,
                                              MPI_COMM_WORLD, &requests[2]));
    rec.code("Send_init derived", api.Send_init(derived_out.data(), count, tc.type, partner(), 1,
                                                MPI_COMM_WORLD, &requests[3]));
    rec.code("PMPI_Send_init", PMPI_Send_init(host_out.data(), count, tc.type, partner(), 2,
                                              MPI_COMM_WORLD, &requests[4]));
    rec.code("Send_init basic", api.Send_init(basic_out.data(), basic_count, MPI_INT, partner(), 3,
                                              MPI_COMM_WORLD, &requests[5]));
    for (int iteration = 0; iteration < 20; ++iteration) {
      const std::string label = "Startall #" + std::to_string(iteration);
      derived_out.fill(salt_of(g_rank, iteration, 19));
      host_out.fill(salt_of(g_rank, iteration, 20));
      basic_out.fill(salt_of(g_rank, iteration, 21));
      derived_in.clear();
      host_in.clear();
      basic_in.clear();
      rec.code(label, api.Startall(6, requests.data()));
      const Completion how = kCompletions[static_cast<std::size_t>(iteration) % 8];
      const Completed done = complete(api, how, requests);
      record_completion(rec, label, how, done, requests,
                        {receive_slot(tc.type), receive_slot(tc.type), receive_slot(MPI_INT),
                         send_slot(tc.type), send_slot(tc.type), send_slot(MPI_INT)});
      rec.buffer(label + " derived", derived_in);
      rec.buffer(label + " host", host_in);
      rec.buffer(label + " basic", basic_in);
      expect_delivered(rec, label + " derived", derived_in, tc.type, count,
                       message_of(tc.type, count, salt_of(partner(), iteration, 19)));
      expect_delivered(rec, label + " host", host_in, tc.type, count,
                       message_of(tc.type, count, salt_of(partner(), iteration, 20)));
      expect_delivered(rec, label + " basic", basic_in, MPI_INT, basic_count,
                       message_of(MPI_INT, basic_count, salt_of(partner(), iteration, 21)));
    }
    for (MPI_Request& request : requests) rec.code("Request_free", api.Request_free(&request));
  });
}

// ---------------------------------------------------------------------------------------------
// MPI_ERROR: "In general, message-passing calls do not modify the value of the error code field
// of status variables. This field may be updated only by the functions in Section 3.7.5 which
// return multiple statuses." (MPI 3.1, 3.2.5). Successful single-completion calls leave it.

TEST_F(StatusFields, SingleCompletionCallsLeaveErrorAsItWas) {
  const TypeCase& tc = g_types[kVector];
  const char* calls[] = {"Recv",          "Irecv+Wait", "Irecv+Test",   "Irecv+Waitany",
                         "Irecv+Testany", "Sendrecv",   "Mprobe+Mrecv", "Probe+Recv"};
  expect_same_as_host([&](Record& rec) {
    const Api& api = rec.api;
    const int count = 2;
    for (int call = 0; call < static_cast<int>(std::size(calls)); ++call) {
      const std::string what = std::string(calls[call]) + " of " + describe(tc, count);
      Buffer outgoing(tc.type, count), incoming(tc.type, count);
      outgoing.fill(salt_of(g_rank, call, 24));
      MPI_Request send = MPI_REQUEST_NULL, receive = MPI_REQUEST_NULL;
      MPI_Status status = fresh_status(), probed = fresh_status();
      int flag = 0, index = 0;
      if (call != 5)
        api.Isend(outgoing.data(), count, tc.type, partner(), 130, MPI_COMM_WORLD, &send);
      if (call >= 1 && call <= 4)
        api.Irecv(incoming.data(), count, tc.type, partner(), 130, MPI_COMM_WORLD, &receive);
      switch (call) {
        case 0:
          api.Recv(incoming.data(), count, tc.type, partner(), 130, MPI_COMM_WORLD, &status);
          break;
        case 1:
          api.Wait(&receive, &status);
          break;
        case 2: {
          int rc = MPI_SUCCESS;
          do rc = api.Test(&receive, &flag, &status);
          while (keep_polling(rc, flag));
          break;
        }
        case 3:
          api.Waitany(1, &receive, &index, &status);
          break;
        case 4: {
          int rc = MPI_SUCCESS;
          do rc = api.Testany(1, &receive, &index, &flag, &status);
          while (keep_polling(rc, flag));
          break;
        }
        case 5:
          api.Sendrecv(outgoing.data(), count, tc.type, partner(), 130, incoming.data(), count,
                       tc.type, partner(), 130, MPI_COMM_WORLD, &status);
          break;
        case 6: {
          MPI_Message message = MPI_MESSAGE_NULL;
          api.Mprobe(partner(), 130, MPI_COMM_WORLD, &message, &probed);
          api.Mrecv(incoming.data(), count, tc.type, &message, &status);
          break;
        }
        case 7:
          api.Probe(partner(), 130, MPI_COMM_WORLD, &probed);
          api.Recv(incoming.data(), count, tc.type, partner(), 130, MPI_COMM_WORLD, &status);
          break;
        default:
          break;
      }
      MPI_Status send_status = fresh_status();
      api.Wait(&send, &send_status);
      rec.fact(what + ": MPI_ERROR of the receive", error_name(status.MPI_ERROR));
      rec.fact(what + ": MPI_ERROR of the probe", error_name(probed.MPI_ERROR));
      rec.fact(what + ": MPI_ERROR of the send's Wait", error_name(send_status.MPI_ERROR));
      rec.status(what, status, tc.type);
      expect_delivered(rec, what, incoming, tc.type, count,
                       message_of(tc.type, count, salt_of(partner(), call, 24)));
    }
  });
}

// The statuses of completed sends (their fields are undefined, so the other tests compare only
// MPI_Test_cancelled): whatever the host writes or leaves, Loom must too.
TEST_F(StatusFields, SendRequestsAsTheHostLeavesThem) {
  std::size_t round = 0;
  for (const Mode mode : kModes) {
    for (const Completion how : kCompletions) {
      const TypeCase& tc = g_types[round++ % 3 == 0 ? kVector : kFace];
      expect_same_as_host([&](Record& rec) {
        const Api& api = rec.api;
        const int count = 2;
        const std::string what =
            std::string(nonblocking_name(mode)) + " of " + describe(tc, count) + " completed by";
        Buffer outgoing(tc.type, count), incoming(tc.type, count);
        outgoing.fill(salt_of(g_rank, count, 25));
        std::optional<AttachedBuffer> attached;
        if (mode == Mode::Buffered) attached.emplace(tc.type, count, 1);
        MPI_Request receive = MPI_REQUEST_NULL;
        api.Irecv(incoming.data(), count, tc.type, partner(), 140, MPI_COMM_WORLD, &receive);
        if (mode == Mode::Ready) pair_handshake();
        std::vector<MPI_Request> sends(1, MPI_REQUEST_NULL);
        rec.code(what, send_nonblocking(api, mode, outgoing.data(), count, tc.type, partner(), 140,
                                        sends.data()));
        const Completed done = complete(api, how, sends);
        rec.status(what + " " + completion_name(how), done.statuses[0], tc.type);
        api.Wait(&receive, MPI_STATUS_IGNORE);
        expect_delivered(rec, what, incoming, tc.type, count,
                         message_of(tc.type, count, salt_of(partner(), count, 25)));
      });
    }
  }
}

// Waitany/Testany/Waitsome/Testsome over arrays with nothing active: null handles, and Loom's
// persistent requests never started or already completed.
TEST_F(StatusFields, NothingActiveAsTheHostSaysIt) {
  const TypeCase& tc = g_types[kIndexedBlock];
  expect_same_as_host([&](Record& rec) {
    const Api& api = rec.api;
    Buffer incoming(tc.type, 2), outgoing(tc.type, 2);
    outgoing.fill(salt_of(g_rank, 2, 26));
    std::vector<MPI_Request> requests(4, MPI_REQUEST_NULL);
    api.Recv_init(incoming.data(), 2, tc.type, partner(), 150, MPI_COMM_WORLD, &requests[1]);
    api.Send_init(outgoing.data(), 2, tc.type, partner(), 150, MPI_COMM_WORLD, &requests[2]);
    for (int round = 0; round < 2; ++round) {
      // Round 0: never started; round 1: started and completed once.
      const std::string what = round == 0 ? "never started" : "completed";
      for (const Completion how :
           {Completion::Waitany, Completion::Testany, Completion::Waitsome, Completion::Testsome}) {
        const std::string label = what + ", " + completion_name(how);
        MPI_Status status = fresh_status();
        std::vector<MPI_Status> statuses(4, fresh_status());
        std::vector<int> indices(4, -7);
        int index = -7, flag = -7, outcount = -7, rc = MPI_SUCCESS;
        switch (how) {
          case Completion::Waitany:
            rc = api.Waitany(4, requests.data(), &index, &status);
            break;
          case Completion::Testany:
            rc = api.Testany(4, requests.data(), &index, &flag, &status);
            break;
          case Completion::Waitsome:
            rc = api.Waitsome(4, requests.data(), &outcount, indices.data(), statuses.data());
            break;
          default:
            rc = api.Testsome(4, requests.data(), &outcount, indices.data(), statuses.data());
            break;
        }
        rec.code(label, rc);
        rec.fact(
            label + " index/flag/outcount",
            std::to_string(index) + "/" + std::to_string(flag) + "/" + std::to_string(outcount));
        rec.status(label, status, tc.type);
        rec.status(label + " first of statuses", statuses[0], tc.type);
      }
      if (round == 0) {
        rec.code("Startall", api.Startall(2, &requests[1]));
        rec.code("Waitall", api.Waitall(4, requests.data(), MPI_STATUSES_IGNORE));
        expect_delivered(rec, "persistent", incoming, tc.type, 2,
                         message_of(tc.type, 2, salt_of(partner(), 2, 26)));
      }
    }
    api.Request_free(&requests[1]);
    api.Request_free(&requests[2]);
  });
}

}  // namespace
