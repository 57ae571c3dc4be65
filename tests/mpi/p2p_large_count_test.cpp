// MPI-4's large-count forms (MPI 4.0, 2.5.8 and 5.1.13): types built by the _c constructors and
// the _c forms of the sends, receives, Pack and Unpack, through Loom against the host. Without
// them (an MPI-3.1 host such as Open MPI 4.1) every test is skipped.
// (The harness and the conventions of every p2p test: p2p_harness.hpp.)
#include <gtest/gtest.h>
#include <mpi.h>

#include <climits>
#include <functional>
#include <string>
#include <vector>

#include "tests/mpi/p2p_harness.hpp"

namespace {

using namespace loom::test::p2p;
using loom::test::loom_active_unless_disabled;

using LargeCount = AllRanks;

#if MPI_VERSION >= 4

// One type built by a large-count constructor, and the same type built by the classic one.
struct TwinTypes {
  std::string name;
  MPI_Datatype large = MPI_DATATYPE_NULL;
  MPI_Datatype classic = MPI_DATATYPE_NULL;
};

class TwinCorpus {
 public:
  TwinCorpus() {
    const int ints[3] = {1, 2, 3};
    const MPI_Count counts[3] = {1, 2, 3};
    add(
        "contiguous", [](MPI_Datatype* t) { return PMPI_Type_contiguous_c(5, MPI_INT, t); },
        [](MPI_Datatype* t) { return PMPI_Type_contiguous(5, MPI_INT, t); });
    add(
        "vector", [](MPI_Datatype* t) { return PMPI_Type_vector_c(4, 2, 3, MPI_DOUBLE, t); },
        [](MPI_Datatype* t) { return PMPI_Type_vector(4, 2, 3, MPI_DOUBLE, t); });
    add(
        "hvector", [](MPI_Datatype* t) { return PMPI_Type_create_hvector_c(4, 2, 40, MPI_INT, t); },
        [](MPI_Datatype* t) { return PMPI_Type_create_hvector(4, 2, 40, MPI_INT, t); });
    add(
        "indexed",
        [&](MPI_Datatype* t) {
          const MPI_Count displs[3] = {0, 4, 9};
          return PMPI_Type_indexed_c(3, counts, displs, MPI_INT, t);
        },
        [&](MPI_Datatype* t) {
          const int displs[3] = {0, 4, 9};
          return PMPI_Type_indexed(3, ints, displs, MPI_INT, t);
        });
    add(
        "hindexed",
        [&](MPI_Datatype* t) {
          const MPI_Count displs[3] = {0, 24, 64};
          return PMPI_Type_create_hindexed_c(3, counts, displs, MPI_SHORT, t);
        },
        [&](MPI_Datatype* t) {
          const MPI_Aint displs[3] = {0, 24, 64};
          return PMPI_Type_create_hindexed(3, ints, displs, MPI_SHORT, t);
        });
    add(
        "indexed_block",
        [](MPI_Datatype* t) {
          const MPI_Count displs[3] = {0, 5, 9};
          return PMPI_Type_create_indexed_block_c(3, 2, displs, MPI_FLOAT, t);
        },
        [](MPI_Datatype* t) {
          const int displs[3] = {0, 5, 9};
          return PMPI_Type_create_indexed_block(3, 2, displs, MPI_FLOAT, t);
        });
    add(
        "hindexed_block",
        [](MPI_Datatype* t) {
          const MPI_Count displs[3] = {0, 20, 48};
          return PMPI_Type_create_hindexed_block_c(3, 2, displs, MPI_INT, t);
        },
        [](MPI_Datatype* t) {
          const MPI_Aint displs[3] = {0, 20, 48};
          return PMPI_Type_create_hindexed_block(3, 2, displs, MPI_INT, t);
        });
    add(
        "struct",
        [&](MPI_Datatype* t) {
          const MPI_Count displs[3] = {0, 8, 24};
          const MPI_Datatype members[3] = {MPI_INT, MPI_DOUBLE, MPI_CHAR};
          return PMPI_Type_create_struct_c(3, counts, displs, members, t);
        },
        [&](MPI_Datatype* t) {
          const MPI_Aint displs[3] = {0, 8, 24};
          const MPI_Datatype members[3] = {MPI_INT, MPI_DOUBLE, MPI_CHAR};
          return PMPI_Type_create_struct(3, ints, displs, members, t);
        });
    add(
        "subarray",
        [](MPI_Datatype* t) {
          const MPI_Count sizes[2] = {10, 20}, subsizes[2] = {3, 4}, starts[2] = {1, 2};
          return PMPI_Type_create_subarray_c(2, sizes, subsizes, starts, MPI_ORDER_C, MPI_INT, t);
        },
        [](MPI_Datatype* t) {
          const int sizes[2] = {10, 20}, subsizes[2] = {3, 4}, starts[2] = {1, 2};
          return PMPI_Type_create_subarray(2, sizes, subsizes, starts, MPI_ORDER_C, MPI_INT, t);
        });
    add(
        "darray",
        [](MPI_Datatype* t) {
          const MPI_Count gsizes[2] = {10, 20};
          const int distribs[2] = {MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_CYCLIC};
          const int dargs[2] = {MPI_DISTRIBUTE_DFLT_DARG, 2}, psizes[2] = {2, 1};
          return PMPI_Type_create_darray_c(2, 1, 2, gsizes, distribs, dargs, psizes,
                                           MPI_ORDER_FORTRAN, MPI_INT, t);
        },
        [](MPI_Datatype* t) {
          const int gsizes[2] = {10, 20};
          const int distribs[2] = {MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_CYCLIC};
          const int dargs[2] = {MPI_DISTRIBUTE_DFLT_DARG, 2}, psizes[2] = {2, 1};
          return PMPI_Type_create_darray(2, 1, 2, gsizes, distribs, dargs, psizes,
                                         MPI_ORDER_FORTRAN, MPI_INT, t);
        });
    // Nested: a resized vector of a large-count struct, each level from a _c constructor.
    add(
        "resized vector of struct",
        [&](MPI_Datatype* t) {
          const MPI_Count displs[2] = {0, 16};
          const MPI_Datatype members[2] = {MPI_DOUBLE, MPI_INT};
          MPI_Datatype member = MPI_DATATYPE_NULL, vector = MPI_DATATYPE_NULL;
          int rc = PMPI_Type_create_struct_c(2, counts, displs, members, &member);
          if (rc == MPI_SUCCESS) rc = PMPI_Type_vector_c(3, 1, 2, member, &vector);
          if (rc == MPI_SUCCESS) rc = PMPI_Type_create_resized_c(vector, -8, 256, t);
          MPI_Type_free(&member);
          MPI_Type_free(&vector);
          return rc;
        },
        [&](MPI_Datatype* t) {
          const MPI_Aint displs[2] = {0, 16};
          const MPI_Datatype members[2] = {MPI_DOUBLE, MPI_INT};
          MPI_Datatype member = MPI_DATATYPE_NULL, vector = MPI_DATATYPE_NULL;
          int rc = PMPI_Type_create_struct(2, ints, displs, members, &member);
          if (rc == MPI_SUCCESS) rc = PMPI_Type_vector(3, 1, 2, member, &vector);
          if (rc == MPI_SUCCESS) rc = PMPI_Type_create_resized(vector, -8, 256, t);
          MPI_Type_free(&member);
          MPI_Type_free(&vector);
          return rc;
        });
  }
  ~TwinCorpus() {
    for (TwinTypes& twins : types_) {
      MPI_Type_free(&twins.large);
      MPI_Type_free(&twins.classic);
    }
  }
  TwinCorpus(const TwinCorpus&) = delete;
  TwinCorpus& operator=(const TwinCorpus&) = delete;
  const std::vector<TwinTypes>& types() const { return types_; }

 private:
  using Build = std::function<int(MPI_Datatype*)>;
  void add(const std::string& name, const Build& large, const Build& classic) {
    TwinTypes twins{name};
    EXPECT_EQ(large(&twins.large), MPI_SUCCESS) << name;
    EXPECT_EQ(classic(&twins.classic), MPI_SUCCESS) << name;
    // Committed through Loom, as a program commits its types.
    EXPECT_EQ(MPI_Type_commit(&twins.large), MPI_SUCCESS) << name;
    EXPECT_EQ(MPI_Type_commit(&twins.classic), MPI_SUCCESS) << name;
    types_.push_back(twins);
  }
  std::vector<TwinTypes> types_;
};

Bytes pack_c(MPI_Datatype type, const void* data, MPI_Count count, bool loom, MPI_Count* end) {
  MPI_Count size = 0;
  PMPI_Pack_size_c(count, type, MPI_COMM_WORLD, &size);
  Bytes out(static_cast<std::size_t>(size) + 8, 0xC3);
  MPI_Count position = 4;  // not at the start: the position must be read, not assumed
  const int rc =
      loom ? MPI_Pack_c(data, count, type, out.data(), size + 8, &position, MPI_COMM_WORLD)
           : PMPI_Pack_c(data, count, type, out.data(), size + 8, &position, MPI_COMM_WORLD);
  EXPECT_EQ(rc, MPI_SUCCESS);
  *end = position;
  return out;
}

// Loom decodes what the large-count constructors build (MPICH 4 refuses their classic
// envelope, fatally under the default error handler), and packs it as the host does.
TEST_F(LargeCount, ConstructorsPackAsTheHostAndAsTheirClassicTwins) {
  ASSERT_TRUE(loom_active_unless_disabled());
  // Errors fatal, as in a C program that sets no handler: MPICH 4 refuses the classic envelope
  // of these types, and a decoder that asked for it aborted such a program.
  struct FatalErrors {
    FatalErrors() { set(MPI_ERRORS_ARE_FATAL); }
    ~FatalErrors() { set(MPI_ERRORS_RETURN); }
    static void set(MPI_Errhandler handler) {
      MPI_Comm_set_errhandler(MPI_COMM_WORLD, handler);
      MPI_Comm_set_errhandler(MPI_COMM_SELF, handler);
    }
  } fatal_errors;
  const TwinCorpus corpus;
  int accelerated = 0;
  for (const TwinTypes& twins : corpus.types()) {
    SCOPED_TRACE(twins.name);
    EXPECT_EQ(loom_type_is_accelerated(twins.large), loom_type_is_accelerated(twins.classic));
    accelerated += loom_type_is_accelerated(twins.large);
    constexpr int kCount = 3;
    Buffer data(twins.large, kCount);
    data.fill(salt_of(g_rank, kCount, 11));
    MPI_Count host_end = 0, loom_end = 0;
    const Bytes by_host = pack_c(twins.large, data.data(), kCount, false, &host_end);
    const Bytes by_loom = pack_c(twins.large, data.data(), kCount, true, &loom_end);
    EXPECT_EQ(loom_end, host_end);
    EXPECT_TRUE(by_loom == by_host) << first_difference(by_loom, by_host);
    // The classic call on the large type, and the classic type, carry the same bytes.
    const Bytes classic = packed_by_host(data.data(), kCount, twins.classic);
    EXPECT_TRUE(Bytes(by_host.begin() + 4, by_host.begin() + host_end) == classic);
    int size = 0, position = 0;
    PMPI_Pack_size(kCount, twins.large, MPI_COMM_WORLD, &size);
    Bytes classic_call(static_cast<std::size_t>(size));
    EXPECT_EQ(MPI_Pack(data.data(), kCount, twins.large, classic_call.data(), size, &position,
                       MPI_COMM_WORLD),
              MPI_SUCCESS);
    EXPECT_TRUE(classic_call == classic) << first_difference(classic_call, classic);
    // Unpacked by each into sentinel-filled memory: the same bytes everywhere.
    Buffer into_host(twins.large, kCount), into_loom(twins.large, kCount);
    MPI_Count at_host = 4, at_loom = 4;
    EXPECT_EQ(PMPI_Unpack_c(by_host.data(), host_end, &at_host, into_host.data(), kCount,
                            twins.large, MPI_COMM_WORLD),
              MPI_SUCCESS);
    EXPECT_EQ(MPI_Unpack_c(by_host.data(), host_end, &at_loom, into_loom.data(), kCount,
                           twins.large, MPI_COMM_WORLD),
              MPI_SUCCESS);
    EXPECT_EQ(at_loom, at_host);
    EXPECT_TRUE(into_loom.bytes() == into_host.bytes())
        << first_difference(into_loom.bytes(), into_host.bytes());
  }
  if (loom_is_active())
    EXPECT_GT(accelerated, 0);
  else
    EXPECT_EQ(accelerated, 0);
}

// A type whose counts do not fit an int stays with the host, and nothing breaks.
TEST_F(LargeCount, CountsBeyondIntStayWithTheHost) {
  MPI_Datatype huge = MPI_DATATYPE_NULL;
  ASSERT_EQ(PMPI_Type_contiguous_c(MPI_Count{INT_MAX} + 2, MPI_BYTE, &huge), MPI_SUCCESS);
  ASSERT_EQ(MPI_Type_commit(&huge), MPI_SUCCESS);
  EXPECT_FALSE(loom_type_is_accelerated(huge));
  MPI_Count size = 0;
  EXPECT_EQ(PMPI_Type_size_c(huge, &size), MPI_SUCCESS);
  EXPECT_EQ(size, MPI_Count{INT_MAX} + 2);
  EXPECT_EQ(MPI_Type_free(&huge), MPI_SUCCESS);
  // An element count beyond int of an empty type packs nothing, on the host's large-count path.
  MPI_Datatype empty = MPI_DATATYPE_NULL;
  ASSERT_EQ(PMPI_Type_contiguous(0, MPI_INT, &empty), MPI_SUCCESS);
  ASSERT_EQ(MPI_Type_commit(&empty), MPI_SUCCESS);
  char out[8] = {};
  MPI_Count host_position = 2, loom_position = 2;
  const MPI_Count many = MPI_Count{INT_MAX} + 5;
  EXPECT_EQ(MPI_Pack_c(out, many, empty, out, sizeof out, &loom_position, MPI_COMM_WORLD),
            PMPI_Pack_c(out, many, empty, out, sizeof out, &host_position, MPI_COMM_WORLD));
  EXPECT_EQ(loom_position, host_position);
  EXPECT_EQ(MPI_Type_free(&empty), MPI_SUCCESS);
}

// Every large-count send and receive form moves the twins' messages between the ranks of a
// pair, through the host and through Loom: the same bytes arrive, the statuses count the same,
// and under Loom each message passes through Loom's point-to-point path.
TEST_F(LargeCount, SendsAndReceivesMatchTheHost) {
  const TwinCorpus corpus;
  const bool sender = g_rank % 2 == 0;
  constexpr int kCount = 4;
  constexpr int kForms = 6;  // messages per type and path, each way below
  for (const bool loom : {false, true}) {
    // Messages Loom saw on every route: packed, left to the host's engine, served by the host
    // because their type is not planned yet, or with nothing to pack (lazy planning: a type may
    // be planned between two forms' calls, and a persistent request plans it when made).
    const auto seen_now = [&] {
      loom_stats s{};
      loom_get_stats(&s);
      uint64_t unplanned = 0, plain = 0;
      EXPECT_EQ(loom_get_counter(
                    sender ? "p2p.send.host_(not_planned_yet)" : "p2p.recv.host_(not_planned_yet)",
                    &unplanned),
                1);
      EXPECT_EQ(loom_get_counter(sender ? "p2p.send.plain" : "p2p.recv.plain", &plain), 1);
      return (sender ? s.send_packed + s.send_host : s.recv_unpacked + s.recv_host) + unplanned +
             plain;
    };
    const uint64_t before = seen_now();
    for (const TwinTypes& twins : corpus.types()) {
      SCOPED_TRACE(twins.name + (loom ? " through Loom" : " through the host"));
      const MPI_Datatype type = twins.large;
      const Bytes sent = message_of(type, kCount, salt_of(partner(), kCount, 23));
      if (sender) {
        Buffer out(type, kCount);
        out.fill(salt_of(g_rank, kCount, 23));
        MPI_Request request = MPI_REQUEST_NULL;
        EXPECT_EQ((loom ? MPI_Send_c : PMPI_Send_c)(out.data(), kCount, type, partner(), 1,
                                                    MPI_COMM_WORLD),
                  MPI_SUCCESS);
        EXPECT_EQ((loom ? MPI_Ssend_c : PMPI_Ssend_c)(out.data(), kCount, type, partner(), 2,
                                                      MPI_COMM_WORLD),
                  MPI_SUCCESS);
        EXPECT_EQ((loom ? MPI_Isend_c : PMPI_Isend_c)(out.data(), kCount, type, partner(), 3,
                                                      MPI_COMM_WORLD, &request),
                  MPI_SUCCESS);
        EXPECT_EQ(MPI_Wait(&request, MPI_STATUS_IGNORE), MPI_SUCCESS);
        EXPECT_EQ((loom ? MPI_Send_init_c : PMPI_Send_init_c)(out.data(), kCount, type, partner(),
                                                              4, MPI_COMM_WORLD, &request),
                  MPI_SUCCESS);
        EXPECT_EQ(MPI_Start(&request), MPI_SUCCESS);
        EXPECT_EQ(MPI_Wait(&request, MPI_STATUS_IGNORE), MPI_SUCCESS);
        EXPECT_EQ(MPI_Request_free(&request), MPI_SUCCESS);
        EXPECT_EQ((loom ? MPI_Issend_c : PMPI_Issend_c)(out.data(), kCount, type, partner(), 5,
                                                        MPI_COMM_WORLD, &request),
                  MPI_SUCCESS);
        EXPECT_EQ(MPI_Wait(&request, MPI_STATUS_IGNORE), MPI_SUCCESS);
        EXPECT_EQ((loom ? MPI_Send_c : PMPI_Send_c)(out.data(), kCount, type, partner(), 6,
                                                    MPI_COMM_WORLD),
                  MPI_SUCCESS);
      } else {
        for (int tag = 1; tag <= kForms; ++tag) {
          Buffer in(type, kCount), expected(type, kCount);
          unpack_by_host(sent, expected.data(), kCount, type);
          MPI_Status status = fresh_status();
          MPI_Request request = MPI_REQUEST_NULL;
          MPI_Message message = MPI_MESSAGE_NULL;
          int rc = MPI_SUCCESS;
          switch (tag) {
            case 1:
            case 2:
              rc = (loom ? MPI_Recv_c : PMPI_Recv_c)(in.data(), kCount, type, partner(), tag,
                                                     MPI_COMM_WORLD, &status);
              break;
            case 3:
            case 5:
              rc = (loom ? MPI_Irecv_c : PMPI_Irecv_c)(in.data(), kCount, type, partner(), tag,
                                                       MPI_COMM_WORLD, &request);
              if (rc == MPI_SUCCESS) rc = MPI_Wait(&request, &status);
              break;
            case 4:
              rc = (loom ? MPI_Recv_init_c : PMPI_Recv_init_c)(in.data(), kCount, type, partner(),
                                                               tag, MPI_COMM_WORLD, &request);
              if (rc == MPI_SUCCESS) rc = MPI_Start(&request);
              if (rc == MPI_SUCCESS) rc = MPI_Wait(&request, &status);
              MPI_Request_free(&request);
              break;
            default:
              rc = MPI_Mprobe(partner(), tag, MPI_COMM_WORLD, &message, MPI_STATUS_IGNORE);
              if (rc == MPI_SUCCESS)
                rc =
                    (loom ? MPI_Mrecv_c : PMPI_Mrecv_c)(in.data(), kCount, type, &message, &status);
          }
          EXPECT_EQ(rc, MPI_SUCCESS) << "form " << tag;
          EXPECT_EQ(status.MPI_SOURCE, partner());
          EXPECT_EQ(status.MPI_TAG, tag);
          MPI_Count received = -1;
          EXPECT_EQ(PMPI_Get_count_c(&status, type, &received), MPI_SUCCESS);
          EXPECT_EQ(received, kCount) << "form " << tag;
          EXPECT_TRUE(in.bytes() == expected.bytes())
              << "form " << tag << ": " << first_difference(in.bytes(), expected.bytes());
        }
      }
      // Both ways at once, and in place.
      Buffer out(type, kCount), in(type, kCount), in_expected(type, kCount);
      out.fill(salt_of(g_rank, kCount, 29));
      const Bytes from_partner = message_of(type, kCount, salt_of(partner(), kCount, 29));
      unpack_by_host(from_partner, in_expected.data(), kCount, type);
      MPI_Status status = fresh_status();
      EXPECT_EQ((loom ? MPI_Sendrecv_c : PMPI_Sendrecv_c)(out.data(), kCount, type, partner(), 7,
                                                          in.data(), kCount, type, partner(), 7,
                                                          MPI_COMM_WORLD, &status),
                MPI_SUCCESS);
      EXPECT_TRUE(in.bytes() == in_expected.bytes())
          << "Sendrecv_c: " << first_difference(in.bytes(), in_expected.bytes());
      Buffer both(type, kCount);
      both.fill(salt_of(g_rank, kCount, 29));
      Buffer both_expected = both;
      unpack_by_host(from_partner, both_expected.data(), kCount, type);
      EXPECT_EQ((loom ? MPI_Sendrecv_replace_c : PMPI_Sendrecv_replace_c)(
                    both.data(), kCount, type, partner(), 8, partner(), 8, MPI_COMM_WORLD, &status),
                MPI_SUCCESS);
      EXPECT_TRUE(both.bytes() == both_expected.bytes())
          << "Sendrecv_replace_c: " << first_difference(both.bytes(), both_expected.bytes());
    }
    const uint64_t after = seen_now();
    // As many as the classic calls on the classic twins count: a Sendrecv and a
    // Sendrecv_replace of each (the other forms count as Sendrecv does).
    uint64_t expected_seen = 0;
    if (loom) {
      for (const TwinTypes& twins : corpus.types()) {
        Buffer out(twins.classic, 1), in(twins.classic, 1);
        out.fill(salt_of(g_rank, 1, 31));
        const uint64_t start = seen_now();
        EXPECT_EQ(MPI_Sendrecv(out.data(), 1, twins.classic, partner(), 9, in.data(), 1,
                               twins.classic, partner(), 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
                  MPI_SUCCESS);
        const uint64_t middle = seen_now();
        EXPECT_EQ(MPI_Sendrecv_replace(out.data(), 1, twins.classic, partner(), 10, partner(), 10,
                                       MPI_COMM_WORLD, MPI_STATUS_IGNORE),
                  MPI_SUCCESS);
        const uint64_t end = seen_now();
        // kForms one way and Sendrecv_c both ways count as Sendrecv; Sendrecv_replace_c.
        expected_seen += (middle - start) * (kForms + 1) + end - middle;
      }
      if (loom_is_active()) {
        EXPECT_GT(expected_seen, 0u);
      }
    }
    EXPECT_EQ(after - before, expected_seen);
  }
}

#else

TEST_F(LargeCount, NeedsAnMpi4Host) {
  GTEST_SKIP() << "the host MPI is MPI-" << MPI_VERSION << "." << MPI_SUBVERSION
               << ": no large-count functions to test";
}

#endif

}  // namespace
