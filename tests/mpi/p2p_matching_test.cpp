// Point-to-point, message envelopes and matching (MPI 4.0, 3.2-3.3, 3.5, 3.11): type matching
// (derived against basic and MPI_PACKED), wildcards, MPI_PROC_NULL, empty messages,
// truncation and non-overtaking order, through Loom against the host.
// (The harness and the conventions of every p2p test: p2p_harness.hpp.)
#include <gtest/gtest.h>
#include <mpi.h>

#include <string>
#include <vector>

#include "tests/mpi/p2p_harness.hpp"

namespace {

using namespace loom::test::p2p;

using CrossTypes = AllRanks;
using Wildcards = AllRanks;
using ProcNull = AllRanks;
using Empty = AllRanks;
using Truncation = AllRanks;
using Ordering = AllRanks;

// ---------------------------------------------------------------------------------------------
// Derived on one side, basic (or MPI_PACKED) on the other, whole and partial elements

struct CrossCase {
  const char* name;
  bool derived_sender;
  bool packed_peer;  // the non-derived side uses MPI_PACKED instead of the basic type
  int extra_basic;   // elements of the basic type beyond whole derived elements (partial)
};

TEST_F(CrossTypes, DerivedAgainstBasicAndPacked) {
  const CrossCase cases[] = {{"derived -> basic", true, false, 0},
                             {"basic -> derived", false, false, 0},
                             {"derived -> MPI_PACKED", true, true, 0},
                             {"MPI_PACKED -> derived", false, true, 0},
                             {"basic -> derived, partial last element", false, false, 1},
                             {"basic -> derived, half an element", false, false, -1}};
  for (const TypeCase& tc : g_types) {
    for (const CrossCase& cross : cases) {
      expect_same_as_host([&](Record& rec) {
        const Api& api = rec.api;
        const HostDefect defect(rec, cross.extra_basic != 0 && host_breaks_partial_element_of(tc));
        const int count = 3;
        const int basic_size = type_size(tc.basic);
        const int per_element = tc.size / basic_size;
        // The plain side's element count; a partial case ends inside a derived element.
        int plain_count = count * per_element;
        if (cross.extra_basic > 0) plain_count = (count - 1) * per_element + cross.extra_basic;
        if (cross.extra_basic < 0) plain_count = std::max(1, per_element / 2);
        const MPI_Datatype plain_type = cross.packed_peer ? MPI_PACKED : tc.basic;
        if (cross.packed_peer) plain_count *= basic_size;  // MPI_PACKED counts bytes
        const std::string what = std::string(cross.name) + ", " + describe(tc, count);
        // Sender and receiver use the same salt for the plain side's content.
        const unsigned salt = salt_of(g_rank % 2 == 0 ? g_rank : partner(), count, 12);
        if (g_rank % 2 == 0) {
          MPI_Request request = MPI_REQUEST_NULL;
          if (cross.derived_sender) {
            Buffer outgoing(tc.type, count);
            outgoing.fill(salt);
            rec.code(what + " Isend", api.Isend(outgoing.data(), count, tc.type, partner(), 80,
                                                MPI_COMM_WORLD, &request));
            rec.code(what + " Wait", api.Wait(&request, MPI_STATUS_IGNORE));
          } else {
            Buffer outgoing(plain_type, plain_count);
            outgoing.fill(salt);
            rec.code(what + " Send", api.Send(outgoing.data(), plain_count, plain_type, partner(),
                                              80, MPI_COMM_WORLD));
          }
          return;
        }
        const MPI_Datatype receive_type = cross.derived_sender ? plain_type : tc.type;
        const int capacity = cross.derived_sender ? plain_count : count;
        Buffer incoming(receive_type, capacity);
        MPI_Status status = fresh_status();
        MPI_Request request = MPI_REQUEST_NULL;
        rec.code(what + " Irecv", api.Irecv(incoming.data(), capacity, receive_type, partner(), 80,
                                            MPI_COMM_WORLD, &request));
        rec.code(what + " Wait", api.Wait(&request, &status));
        rec.status(what, status, receive_type);
        rec.status(what + " (sender's view)", status, cross.derived_sender ? tc.type : tc.basic);
        rec.buffer(what, incoming);
        const Bytes sent = cross.derived_sender ? message_of(tc.type, count, salt)
                                                : message_of(plain_type, plain_count, salt);
        expect_delivered(rec, what, incoming, receive_type, capacity, sent);
      });
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Wildcards, MPI_PROC_NULL, empty messages

// Every other rank sends to rank 0, which receives from any source with any tag; matching
// order depends on timing, so outcomes are compared by source.
TEST_F(Wildcards, AnySourceAnyTagAtOneRoot) {
  for (const TypeIndex which : {kVector, kStruct, kNegativeLb}) {
    const TypeCase& tc = g_types[which];
    for (int variant = 0; variant < 3; ++variant) {
      expect_same_as_host([&](Record& rec) {
        const Api& api = rec.api;
        const char* variant_name[3] = {"Recv", "Irecv+Waitall", "Probe+Recv"};
        const std::string what =
            std::string(variant_name[variant]) + " from any source of " + tc.name;
        auto count_from = [](int source) { return source == 2 ? 0 : source + 1; };
        if (g_rank != 0) {
          Buffer outgoing(tc.type, count_from(g_rank));
          outgoing.fill(salt_of(g_rank, 0, 13));
          rec.code(what + " Send", api.Send(outgoing.data(), count_from(g_rank), tc.type, 0,
                                            100 + g_rank, MPI_COMM_WORLD));
          return;
        }
        const int senders = g_size - 1, capacity = g_size + 1;
        std::vector<Buffer> incoming(static_cast<std::size_t>(senders), Buffer(tc.type, capacity));
        std::vector<MPI_Status> statuses(static_cast<std::size_t>(senders), fresh_status());
        std::vector<int> codes(static_cast<std::size_t>(senders), MPI_SUCCESS);
        if (variant == 1) {
          std::vector<MPI_Request> requests(static_cast<std::size_t>(senders), MPI_REQUEST_NULL);
          for (int i = 0; i < senders; ++i)
            codes[i] = api.Irecv(incoming[i].data(), capacity, tc.type, MPI_ANY_SOURCE, MPI_ANY_TAG,
                                 MPI_COMM_WORLD, &requests[i]);
          rec.code(what + " Waitall", api.Waitall(senders, requests.data(), statuses.data()));
        } else {
          for (int i = 0; i < senders; ++i) {
            int source = MPI_ANY_SOURCE, tag = MPI_ANY_TAG;
            if (variant == 2) {
              MPI_Status probed = fresh_status();
              codes[i] = api.Probe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &probed);
              source = probed.MPI_SOURCE;
              tag = probed.MPI_TAG;
            }
            const int rc = api.Recv(incoming[i].data(), capacity, tc.type, source, tag,
                                    MPI_COMM_WORLD, &statuses[i]);
            if (codes[i] == MPI_SUCCESS) codes[i] = rc;
          }
        }
        std::vector<int> order(static_cast<std::size_t>(senders));
        for (int i = 0; i < senders; ++i) order[i] = i;
        std::sort(order.begin(), order.end(),
                  [&](int a, int b) { return statuses[a].MPI_SOURCE < statuses[b].MPI_SOURCE; });
        for (const int i : order) {
          const int source = statuses[i].MPI_SOURCE;
          const std::string label = what + " (message from " + std::to_string(source) + ")";
          rec.code(label, codes[i]);
          rec.status(label, statuses[i], tc.type);
          rec.buffer(label, incoming[i]);
          if (source > 0 && source < g_size)
            expect_delivered(rec, label, incoming[i], tc.type, capacity,
                             message_of(tc.type, count_from(source), salt_of(source, 0, 13)));
          else
            rec.check(false, label + ": no such source");
        }
      });
    }
  }
}

// MPI_PROC_NULL: every call succeeds at once, receives report source MPI_PROC_NULL, tag
// MPI_ANY_TAG and nothing received, and no buffer is touched.
TEST_F(ProcNull, EveryOperation) {
  const TypeCase& tc = g_types[kFace];
  expect_same_as_host([&](Record& rec) {
    const Api& api = rec.api;
    const int count = 3;
    Buffer outgoing(tc.type, count), incoming(tc.type, count);
    outgoing.fill(salt_of(g_rank, 0, 14));
    const Buffer untouched_outgoing = outgoing;
    auto expect_empty = [&](const std::string& label, const MPI_Status& status) {
      rec.status(label, status, tc.type);
      rec.buffer(label, incoming);
      MPI_Status copy = status;
      int received = -1, elements = -1;
      api.Get_count(&copy, tc.type, &received);
      api.Get_elements(&copy, tc.type, &elements);
      rec.check(status.MPI_SOURCE == MPI_PROC_NULL && status.MPI_TAG == MPI_ANY_TAG &&
                    received == 0 && elements == 0,
                label + ": not the status of a receive from MPI_PROC_NULL: source " +
                    std::to_string(status.MPI_SOURCE) + " tag " + std::to_string(status.MPI_TAG) +
                    " count " + std::to_string(received) + " elements " + std::to_string(elements));
      expect_delivered(rec, label, incoming, tc.type, count, {});
    };
    for (const Mode mode : kModes)
      rec.code(std::string(mode_name(mode)) + " to MPI_PROC_NULL",
               send_blocking(api, mode, outgoing.data(), count, tc.type, MPI_PROC_NULL, 1));
    MPI_Status status = fresh_status();
    rec.code("Recv",
             api.Recv(incoming.data(), count, tc.type, MPI_PROC_NULL, 1, MPI_COMM_WORLD, &status));
    expect_empty("Recv from MPI_PROC_NULL", status);

    std::vector<MPI_Request> requests(2, MPI_REQUEST_NULL);
    {
      // MPICH 4.0.2's own MPI_Irecv from MPI_PROC_NULL completes with source 0 and tag 0.
      const HostDefect defect(rec, kHostIsMpich);
      rec.code("Irecv", api.Irecv(incoming.data(), count, tc.type, MPI_PROC_NULL, 1, MPI_COMM_WORLD,
                                  &requests[0]));
      rec.code("Isend", api.Isend(outgoing.data(), count, tc.type, MPI_PROC_NULL, 1, MPI_COMM_WORLD,
                                  &requests[1]));
      const Completed done = complete(api, Completion::Waitall, requests);
      record_completion(rec, "Irecv/Isend MPI_PROC_NULL", Completion::Waitall, done, requests,
                        {receive_slot(tc.type), send_slot(tc.type)});
      expect_empty("Irecv from MPI_PROC_NULL", done.statuses[0]);
    }

    status = fresh_status();
    rec.code("Sendrecv",
             api.Sendrecv(outgoing.data(), count, tc.type, MPI_PROC_NULL, 1, incoming.data(), count,
                          tc.type, MPI_PROC_NULL, 1, MPI_COMM_WORLD, &status));
    expect_empty("Sendrecv with MPI_PROC_NULL", status);

    status = fresh_status();
    rec.code("Sendrecv_replace",
             api.Sendrecv_replace(outgoing.data(), count, tc.type, MPI_PROC_NULL, 1, MPI_PROC_NULL,
                                  1, MPI_COMM_WORLD, &status));
    rec.status("Sendrecv_replace with MPI_PROC_NULL", status, tc.type);
    rec.check(outgoing.bytes() == untouched_outgoing.bytes(),
              "Sendrecv_replace with MPI_PROC_NULL changed the buffer");

    status = fresh_status();
    rec.code("Probe", api.Probe(MPI_PROC_NULL, 1, MPI_COMM_WORLD, &status));
    expect_empty("Probe MPI_PROC_NULL", status);
    int flag = -1;
    status = fresh_status();
    rec.code("Iprobe", api.Iprobe(MPI_PROC_NULL, 1, MPI_COMM_WORLD, &flag, &status));
    rec.fact("Iprobe MPI_PROC_NULL flag", std::to_string(flag));
    expect_empty("Iprobe MPI_PROC_NULL", status);

    MPI_Message message = MPI_MESSAGE_NULL;
    status = fresh_status();
    rec.code("Mprobe", api.Mprobe(MPI_PROC_NULL, 1, MPI_COMM_WORLD, &message, &status));
    rec.fact("Mprobe message", message == MPI_MESSAGE_NO_PROC ? "MPI_MESSAGE_NO_PROC" : "other");
    status = fresh_status();
    rec.code("Mrecv", api.Mrecv(incoming.data(), count, tc.type, &message, &status));
    expect_empty("Mrecv MPI_MESSAGE_NO_PROC", status);
    flag = -1;
    message = MPI_MESSAGE_NULL;
    status = fresh_status();
    rec.code("Improbe", api.Improbe(MPI_PROC_NULL, 1, MPI_COMM_WORLD, &flag, &message, &status));
    rec.fact("Improbe flag", std::to_string(flag));
    MPI_Request request = MPI_REQUEST_NULL;
    rec.code("Imrecv", api.Imrecv(incoming.data(), count, tc.type, &message, &request));
    status = fresh_status();
    rec.code("Imrecv Wait", api.Wait(&request, &status));
    expect_empty("Imrecv MPI_MESSAGE_NO_PROC", status);

    requests.assign(2, MPI_REQUEST_NULL);
    rec.code("Recv_init", api.Recv_init(incoming.data(), count, tc.type, MPI_PROC_NULL, 1,
                                        MPI_COMM_WORLD, &requests[0]));
    rec.code("Send_init", api.Send_init(outgoing.data(), count, tc.type, MPI_PROC_NULL, 1,
                                        MPI_COMM_WORLD, &requests[1]));
    for (int iteration = 0; iteration < 3; ++iteration) {
      rec.code("Startall MPI_PROC_NULL", api.Startall(2, requests.data()));
      const Completion how = kCompletions[static_cast<std::size_t>(iteration) * 3 % 8];
      const Completed persistent = complete(api, how, requests);
      record_completion(rec, "persistent MPI_PROC_NULL", how, persistent, requests,
                        {receive_slot(tc.type), send_slot(tc.type)});
    }
    api.Request_free(&requests[0]);
    api.Request_free(&requests[1]);
  });
}

// A type whose size is zero: nothing is transferred, whatever the count.
TEST_F(Empty, ZeroSizeDerivedType) {
  MPI_Datatype empty = MPI_DATATYPE_NULL;
  const int no_blocks[1] = {0};
  const int displacement[1] = {4};
  MPI_Type_indexed(1, no_blocks, displacement, MPI_INT, &empty);
  MPI_Type_commit(&empty);
  expect_same_as_host([&](Record& rec) {
    const Api& api = rec.api;
    Buffer outgoing(MPI_INT, 8), incoming(MPI_INT, 8);
    outgoing.fill(salt_of(g_rank, 0, 15));
    std::vector<MPI_Request> requests(2, MPI_REQUEST_NULL);
    rec.code("Irecv",
             api.Irecv(incoming.data(), 5, empty, partner(), 90, MPI_COMM_WORLD, &requests[0]));
    rec.code("Isend",
             api.Isend(outgoing.data(), 5, empty, partner(), 90, MPI_COMM_WORLD, &requests[1]));
    const Completed done = complete(api, Completion::Waitall, requests);
    record_completion(rec, "zero-size type", Completion::Waitall, done, requests,
                      {receive_slot(empty), send_slot(empty)});
    rec.buffer("zero-size type", incoming);
    expect_delivered(rec, "zero-size type", incoming, MPI_INT, 8, {});
  });
  MPI_Type_free(&empty);
}

// ---------------------------------------------------------------------------------------------
// Truncation: a message longer than the receive

TEST_F(Truncation, EveryReceivePath) {
  for (const TypeIndex which : {kVector, kStruct, kNegativeLb}) {
    const TypeCase& tc = g_types[which];
    expect_same_as_host([&](Record& rec) {
      const Api& api = rec.api;
      const int capacity = 3;
      constexpr int kVariants = 9;
      const int basic_per_element = tc.size / type_size(tc.basic);
      // One message per variant; variant 8 is one basic element longer than the receive.
      auto send_count = [&](int variant) {
        return variant == 8 ? capacity * basic_per_element + 1 : capacity + 1 + variant % 2;
      };
      auto send_type = [&](int variant) { return variant == 8 ? tc.basic : tc.type; };
      if (g_rank % 2 == 0) {
        for (int variant = 0; variant < kVariants; ++variant) {
          Buffer outgoing(send_type(variant), send_count(variant));
          outgoing.fill(salt_of(g_rank, variant, 16));
          if (variant == 6) {  // the receive side is a Sendrecv
            Buffer back(tc.type, 1);
            rec.code("Sendrecv send side",
                     api.Sendrecv(outgoing.data(), send_count(variant), send_type(variant),
                                  partner(), 110 + variant, back.data(), 1, tc.type, partner(), 120,
                                  MPI_COMM_WORLD, MPI_STATUS_IGNORE));
          } else {
            rec.code("Send #" + std::to_string(variant),
                     api.Send(outgoing.data(), send_count(variant), send_type(variant), partner(),
                              110 + variant, MPI_COMM_WORLD));
          }
        }
        return;
      }
      for (int variant = 0; variant < kVariants; ++variant) {
        const char* names[kVariants] = {
            "Recv",       "Irecv+Wait",     "Irecv+Waitall",
            "Irecv+Test", "Mprobe+Mrecv",   "Recv_init+Start+Wait",
            "Sendrecv",   "Irecv+Waitsome", "Recv of a longer basic message"};
        const std::string what =
            std::string("truncated ") + names[variant] + " into " + describe(tc, capacity);
        const int tag = 110 + variant;
        Buffer incoming(tc.type, capacity);
        MPI_Status status = fresh_status();
        std::vector<MPI_Request> requests(2, MPI_REQUEST_NULL);
        int rc = MPI_SUCCESS;
        switch (variant) {
          case 0:
          case 8:
            rc = api.Recv(incoming.data(), capacity, tc.type, partner(), tag, MPI_COMM_WORLD,
                          &status);
            break;
          case 1:
            rec.code(what + " Irecv", api.Irecv(incoming.data(), capacity, tc.type, partner(), tag,
                                                MPI_COMM_WORLD, &requests[0]));
            rc = api.Wait(&requests[0], &status);
            break;
          case 2:
          case 3:
          case 7: {
            rec.code(what + " Irecv", api.Irecv(incoming.data(), capacity, tc.type, partner(), tag,
                                                MPI_COMM_WORLD, &requests[0]));
            const Completion how = variant == 2   ? Completion::Waitall
                                   : variant == 3 ? Completion::Test
                                                  : Completion::Waitsome;
            const Completed done = complete(api, how, requests);
            record_completion(rec, what, how, done, requests, {truncated_slot(tc.type), kNullSlot});
            status = done.statuses[0];
            rc = done.errors[0];
            break;
          }
          case 4: {
            MPI_Message message = MPI_MESSAGE_NULL;
            MPI_Status probed = fresh_status();
            rec.code(what + " Mprobe",
                     api.Mprobe(partner(), tag, MPI_COMM_WORLD, &message, &probed));
            rec.status(what + " probed", probed, tc.type);
            rc = api.Mrecv(incoming.data(), capacity, tc.type, &message, &status);
            break;
          }
          case 5:
            rec.code(what + " Recv_init",
                     api.Recv_init(incoming.data(), capacity, tc.type, partner(), tag,
                                   MPI_COMM_WORLD, &requests[0]));
            rec.code(what + " Start", api.Start(&requests[0]));
            rc = api.Wait(&requests[0], &status);
            rec.request(what + " persistent", requests[0]);
            if (requests[0] != MPI_REQUEST_NULL) api.Request_free(&requests[0]);
            break;
          case 6: {
            Buffer back(tc.type, 1);
            back.fill(salt_of(g_rank, variant, 16));
            rc = api.Sendrecv(back.data(), 1, tc.type, partner(), 120, incoming.data(), capacity,
                              tc.type, partner(), tag, MPI_COMM_WORLD, &status);
            break;
          }
          default:
            break;
        }
        rec.code(what, rc);
        rec.check(error_class(rc) == MPI_ERR_TRUNCATE, what + ": returned " + error_name(rc));
        rec.truncated_status(what, status, tc.type, variant == 2 || variant == 7);
        rec.request(what + " request", requests[0]);
        rec.buffer(what, incoming);
        for (MPI_Request& left_over : requests)
          if (left_over != MPI_REQUEST_NULL) api.Request_free(&left_over);
      }
    });
  }
}

// ---------------------------------------------------------------------------------------------
// Ordering: messages with the same source and tag are received in the order they were sent

TEST_F(Ordering, NonOvertakingAcrossTypesAndSizes) {
  constexpr int kMessages = 32;
  auto type_of = [](int i) -> const TypeCase& {
    return g_types[static_cast<std::size_t>(i / 2) % g_types.size()];
  };
  // Even messages use the derived type, odd ones its basic type; one large message in the
  // middle takes the host's rendezvous path while the small ones around it are eager.
  auto is_derived = [](int i) { return i % 2 == 0; };
  auto count_of = [&](int i) {
    const TypeCase& tc = type_of(i);
    const int elements = i == 12 ? count_for(tc, 1 << 20) : (i * 5) % 7;
    return is_derived(i) ? elements : elements * tc.size / type_size(tc.basic);
  };
  for (int variant = 0; variant < 3; ++variant) {
    expect_same_as_host([&](Record& rec) {
      const Api& api = rec.api;
      const char* variant_name[3] = {"Recv(any, any)", "Irecv(any, any)+Waitall",
                                     "Probe(any, any)+Recv"};
      for (int sender_parity = 0; sender_parity < 2; ++sender_parity) {
        if (g_rank % 2 == sender_parity) {
          std::vector<Buffer> outgoing;
          std::vector<MPI_Request> requests;
          for (int i = 0; i < kMessages; ++i) {
            const MPI_Datatype type = is_derived(i) ? type_of(i).type : type_of(i).basic;
            outgoing.emplace_back(type, count_of(i));
            outgoing.back().fill(salt_of(g_rank, i, 17));
          }
          for (int i = 0; i < kMessages; ++i) {
            const MPI_Datatype type = is_derived(i) ? type_of(i).type : type_of(i).basic;
            if (i % 3 == 0) {
              rec.code("Send #" + std::to_string(i), api.Send(outgoing[i].data(), count_of(i), type,
                                                              partner(), 5, MPI_COMM_WORLD));
            } else {
              requests.push_back(MPI_REQUEST_NULL);
              rec.code("Isend #" + std::to_string(i),
                       api.Isend(outgoing[i].data(), count_of(i), type, partner(), 5,
                                 MPI_COMM_WORLD, &requests.back()));
            }
          }
          rec.code("Waitall sends", api.Waitall(static_cast<int>(requests.size()), requests.data(),
                                                MPI_STATUSES_IGNORE));
          continue;
        }
        std::vector<Buffer> incoming;
        std::vector<MPI_Status> statuses(kMessages, fresh_status());
        std::vector<MPI_Request> requests(kMessages, MPI_REQUEST_NULL);
        for (int i = 0; i < kMessages; ++i)
          incoming.emplace_back(is_derived(i) ? type_of(i).type : type_of(i).basic, count_of(i));
        for (int i = 0; i < kMessages; ++i) {
          const MPI_Datatype type = is_derived(i) ? type_of(i).type : type_of(i).basic;
          const std::string label = std::string(variant_name[variant]) + " #" + std::to_string(i);
          if (variant == 1) {
            rec.code(label, api.Irecv(incoming[i].data(), count_of(i), type, MPI_ANY_SOURCE,
                                      MPI_ANY_TAG, MPI_COMM_WORLD, &requests[i]));
            continue;
          }
          if (variant == 2) {
            MPI_Status probed = fresh_status();
            rec.code(label + " Probe",
                     api.Probe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &probed));
            rec.status(label + " probed", probed, type);
          }
          rec.code(label, api.Recv(incoming[i].data(), count_of(i), type, MPI_ANY_SOURCE,
                                   MPI_ANY_TAG, MPI_COMM_WORLD, &statuses[i]));
        }
        if (variant == 1)
          rec.code("Waitall receives", api.Waitall(kMessages, requests.data(), statuses.data()));
        for (int i = 0; i < kMessages; ++i) {
          const MPI_Datatype type = is_derived(i) ? type_of(i).type : type_of(i).basic;
          const std::string label = std::string(variant_name[variant]) + " #" + std::to_string(i);
          rec.status(label, statuses[i], type);
          rec.buffer(label, incoming[i]);
          expect_delivered(rec, label, incoming[i], type, count_of(i),
                           message_of(type, count_of(i), salt_of(partner(), i, 17)));
        }
      }
    });
  }
}

}  // namespace
