// Messages a rank sends to itself (transport/self_channel.hpp, docs/p2p.md): data, statuses,
// ordering, probes, truncation, cancellation and the wildcard and matched-probe cases that hand
// the channel's messages back to the host, each on its own duplicate of MPI_COMM_WORLD (a
// demotion is for good). Every outcome is the one the standard prescribes, so the same
// expectations hold with LOOM_SELF=0 (--mode off) and with LOOM_DISABLE=1 (--mode disabled);
// only the statistics differ. Runs on 2 ranks: the wildcard cases also receive from the peer.
// Blocking sends to oneself before their receive stay small: hosts buffer those (eagerly), as
// the standard allows but does not require.
#include <gtest/gtest.h>
#include <mpi.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "loom/loom.h"
#include "tests/mpi/gtest_mpi.hpp"

namespace {

std::string mode = "on";

// Distinct contents per message: `seed` in the thousands.
std::vector<int> values(int seed, size_t n = 128) {
  std::vector<int> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = seed * 1000 + static_cast<int>(i);
  return v;
}

class SelfChannel : public ::testing::Test {
 protected:
  void SetUp() override {
    MPI_Comm_dup(MPI_COMM_WORLD, &comm_);
    MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
    // Every other int of 64: a derived type Loom packs.
    MPI_Type_vector(64, 1, 2, MPI_INT, &every_other_);
    MPI_Type_commit(&every_other_);
    loom_get_stats(&start_);
  }
  void TearDown() override {
    MPI_Type_free(&every_other_);
    MPI_Comm_free(&comm_);
  }
  // Messages the channel delivered, and communicators it demoted, since SetUp.
  uint64_t delivered() const {
    loom_stats now;
    loom_get_stats(&now);
    return now.self_delivered - start_.self_delivered;
  }
  uint64_t demoted() const {
    loom_stats now;
    loom_get_stats(&now);
    return now.self_demoted - start_.self_demoted;
  }
  bool channel_on() const { return mode == "on"; }
  // The even elements of `sent`, in place of `fill` at the even positions of a buffer.
  static std::vector<int> expected_every_other(const std::vector<int>& sent, int fill) {
    std::vector<int> e(sent.size(), fill);
    for (size_t i = 0; i < sent.size(); i += 2) e[i] = sent[i];
    return e;
  }

  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1;
  MPI_Datatype every_other_ = MPI_DATATYPE_NULL;
  loom_stats start_{};
};

int elements(const MPI_Status& status, MPI_Datatype type) {
  int n = -1;
  MPI_Get_count(&status, type, &n);
  return n;
}

int error_class(int rc) {
  int c = rc;
  MPI_Error_class(rc, &c);
  return c;
}

TEST_F(SelfChannel, ReceivePostedFirstGetsTheDataAndStatus) {
  const std::vector<int> out = values(1);
  std::vector<int> in(out.size(), -1);
  MPI_Request requests[2];
  ASSERT_EQ(MPI_Irecv(in.data(), 1, every_other_, rank_, 11, comm_, &requests[0]), MPI_SUCCESS);
  ASSERT_EQ(MPI_Isend(out.data(), 1, every_other_, rank_, 11, comm_, &requests[1]), MPI_SUCCESS);
  MPI_Status statuses[2];
  ASSERT_EQ(MPI_Waitall(2, requests, statuses), MPI_SUCCESS);
  EXPECT_EQ(in, expected_every_other(out, -1));
  EXPECT_EQ(statuses[0].MPI_SOURCE, rank_);
  EXPECT_EQ(statuses[0].MPI_TAG, 11);
  EXPECT_EQ(elements(statuses[0], every_other_), 1);
  EXPECT_EQ(elements(statuses[0], MPI_INT), 64);
  int cancelled = 1;
  MPI_Test_cancelled(&statuses[0], &cancelled);
  EXPECT_EQ(cancelled, 0);
  EXPECT_EQ(requests[0], MPI_REQUEST_NULL);
  EXPECT_EQ(delivered(), channel_on() ? 1u : 0u);
  EXPECT_EQ(demoted(), 0u);
}

TEST_F(SelfChannel, QueuedMessagesKeepTheirOrderPerTag) {
  const std::vector<int> a = values(2), b = values(3), c = values(4);
  MPI_Request sends[3];
  ASSERT_EQ(MPI_Isend(a.data(), 1, every_other_, rank_, 1, comm_, &sends[0]), MPI_SUCCESS);
  ASSERT_EQ(MPI_Isend(b.data(), 1, every_other_, rank_, 2, comm_, &sends[1]), MPI_SUCCESS);
  ASSERT_EQ(MPI_Isend(c.data(), 1, every_other_, rank_, 1, comm_, &sends[2]), MPI_SUCCESS);
  std::vector<int> in(a.size(), -1);
  MPI_Status status;
  ASSERT_EQ(MPI_Recv(in.data(), 1, every_other_, rank_, 2, comm_, &status), MPI_SUCCESS);
  EXPECT_EQ(in, expected_every_other(b, -1));
  EXPECT_EQ(status.MPI_TAG, 2);
  std::fill(in.begin(), in.end(), -1);
  ASSERT_EQ(MPI_Recv(in.data(), 1, every_other_, rank_, 1, comm_, &status), MPI_SUCCESS);
  EXPECT_EQ(in, expected_every_other(a, -1));
  std::fill(in.begin(), in.end(), -1);
  ASSERT_EQ(MPI_Recv(in.data(), 1, every_other_, rank_, MPI_ANY_TAG, comm_, &status), MPI_SUCCESS);
  EXPECT_EQ(in, expected_every_other(c, -1));
  EXPECT_EQ(status.MPI_TAG, 1);
  EXPECT_EQ(status.MPI_SOURCE, rank_);
  ASSERT_EQ(MPI_Waitall(3, sends, MPI_STATUSES_IGNORE), MPI_SUCCESS);
  EXPECT_EQ(delivered(), channel_on() ? 3u : 0u);
}

// Type signatures match, layouts differ: 64 contiguous ints received into every other int.
TEST_F(SelfChannel, ContiguousSendIntoADerivedReceive) {
  const std::vector<int> out = values(5, 64);
  ASSERT_EQ(MPI_Send(out.data(), 64, MPI_INT, rank_, 3, comm_), MPI_SUCCESS);
  std::vector<int> in(128, -7);
  MPI_Status status;
  ASSERT_EQ(MPI_Recv(in.data(), 1, every_other_, rank_, 3, comm_, &status), MPI_SUCCESS);
  for (int i = 0; i < 128; ++i) EXPECT_EQ(in[i], i % 2 ? -7 : out[i / 2]) << i;
  EXPECT_EQ(elements(status, MPI_INT), 64);
}

// A shorter message than the receive: the status counts what came, the rest stays.
TEST_F(SelfChannel, ShorterMessageAndZeroCount) {
  const std::vector<int> out = values(6, 10);
  std::vector<int> in(20, -1);
  MPI_Request request;
  ASSERT_EQ(MPI_Irecv(in.data(), 20, MPI_INT, rank_, 4, comm_, &request), MPI_SUCCESS);
  ASSERT_EQ(MPI_Send(out.data(), 10, MPI_INT, rank_, 4, comm_), MPI_SUCCESS);
  MPI_Status status;
  ASSERT_EQ(MPI_Wait(&request, &status), MPI_SUCCESS);
  for (int i = 0; i < 20; ++i) EXPECT_EQ(in[i], i < 10 ? out[i] : -1) << i;
  EXPECT_EQ(elements(status, MPI_INT), 10);
  ASSERT_EQ(MPI_Send(nullptr, 0, MPI_INT, rank_, 5, comm_), MPI_SUCCESS);
  ASSERT_EQ(MPI_Recv(in.data(), 20, MPI_INT, rank_, 5, comm_, &status), MPI_SUCCESS);
  EXPECT_EQ(elements(status, MPI_INT), 0);
  EXPECT_EQ(in[0], out[0]);
}

// A receive buffer that ends `bytes` in, at an inaccessible page: a receive that writes or reads
// past it dies of SIGSEGV.
class GuardedBuffer {
 public:
  explicit GuardedBuffer(size_t bytes) {
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    mapped_ = (bytes + page - 1) / page * page + page;
    void* p = mmap(nullptr, mapped_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return;
    base_ = static_cast<char*>(p);
    mprotect(base_ + mapped_ - page, page, PROT_NONE);
    data_ = reinterpret_cast<int*>(base_ + mapped_ - page - bytes);
    ints_ = bytes / sizeof(int);
  }
  ~GuardedBuffer() {
    if (base_) munmap(base_, mapped_);
  }
  GuardedBuffer(const GuardedBuffer&) = delete;
  GuardedBuffer& operator=(const GuardedBuffer&) = delete;
  int* data() const { return data_; }
  std::vector<int> contents() const { return std::vector<int>(data_, data_ + ints_); }

 private:
  char* base_ = nullptr;
  size_t mapped_ = 0;
  int* data_ = nullptr;
  size_t ints_ = 0;
};

// A message that ends inside an element of the receive (MPI 4.0, 3.3.1): only the places of the
// received bytes change. The rest of that element is neither read nor written, and here lies
// beyond the buffer, which ends at the last received byte (the MPICH test suite receives so).
// From oneself (the channel, or the host with LOOM_SELF=0) and from the peer.
TEST_F(SelfChannel, MessageEndingInsideAnElementTouchesNothingPastItsBytes) {
  // An element: 4 ints, then 1023 single ints 4 ints apart (extent 16,388 bytes).
  constexpr int kBlocks = 1024, kHead = 4, kCount = 3;
  std::vector<int> lengths(kBlocks, 1), displacements(kBlocks);
  lengths[0] = kHead;
  for (int b = 0; b < kBlocks; ++b) displacements[b] = 4 * b + (b > 0 ? 4 : 0);
  MPI_Datatype spread = MPI_DATATYPE_NULL;
  ASSERT_EQ(MPI_Type_indexed(kBlocks, lengths.data(), displacements.data(), MPI_INT, &spread),
            MPI_SUCCESS);
  ASSERT_EQ(MPI_Type_commit(&spread), MPI_SUCCESS);
  MPI_Aint lb = 0, extent = 0;
  MPI_Type_get_extent(spread, &lb, &extent);
  const int per_element = kHead + kBlocks - 1;
  // Two whole elements and the first block of a third.
  const int sent_ints = (kCount - 1) * per_element + kHead;
  const size_t reach = static_cast<size_t>((kCount - 1) * extent) + kHead * sizeof(int);
  const int peer = size_ > 1 ? rank_ ^ 1 : rank_;
  for (const int source : {rank_, peer}) {
    for (const bool posted_first : {true, false}) {
      if (source != rank_ && !posted_first) continue;
      const std::string what = std::string(source == rank_ ? "from oneself" : "from the peer") +
                               (posted_first ? ", receive posted first" : ", message first");
      // Each rank sends values(7 + its rank).
      const std::vector<int> out = values(7 + rank_, static_cast<size_t>(sent_ints));
      const std::vector<int> arriving = values(7 + source, static_cast<size_t>(sent_ints));
      GuardedBuffer in(reach);
      ASSERT_NE(in.data(), nullptr) << "mmap";
      std::fill(in.data(), in.data() + reach / sizeof(int), -1);
      std::vector<int> expect(reach / sizeof(int), -1);
      for (int e = 0, next = 0; e < kCount; ++e)
        for (int b = 0; b < kBlocks && next < sent_ints; ++b)
          for (int k = 0; k < lengths[b] && next < sent_ints; ++k)
            expect[static_cast<size_t>(e * extent / 4 + displacements[b] + k)] = arriving[next++];
      MPI_Request requests[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
      MPI_Status status;
      if (posted_first) {
        ASSERT_EQ(MPI_Irecv(in.data(), kCount, spread, source, 21, comm_, &requests[0]),
                  MPI_SUCCESS);
        ASSERT_EQ(MPI_Isend(out.data(), sent_ints, MPI_INT, source == rank_ ? rank_ : peer, 21,
                            comm_, &requests[1]),
                  MPI_SUCCESS);
        ASSERT_EQ(MPI_Wait(&requests[0], &status), MPI_SUCCESS) << what;
        ASSERT_EQ(MPI_Wait(&requests[1], MPI_STATUS_IGNORE), MPI_SUCCESS) << what;
      } else {
        ASSERT_EQ(MPI_Isend(out.data(), sent_ints, MPI_INT, rank_, 21, comm_, &requests[1]),
                  MPI_SUCCESS);
        ASSERT_EQ(MPI_Recv(in.data(), kCount, spread, rank_, 21, comm_, &status), MPI_SUCCESS)
            << what;
        ASSERT_EQ(MPI_Wait(&requests[1], MPI_STATUS_IGNORE), MPI_SUCCESS) << what;
      }
      EXPECT_EQ(in.contents(), expect) << what;
      EXPECT_EQ(elements(status, MPI_INT), sent_ints) << what;
      EXPECT_EQ(elements(status, spread), MPI_UNDEFINED) << what;
    }
  }
  MPI_Type_free(&spread);
}

TEST_F(SelfChannel, ProbesSeeQueuedMessages) {
  const std::vector<double> out(16, 2.5);
  MPI_Request request;
  ASSERT_EQ(MPI_Isend(out.data(), 16, MPI_DOUBLE, rank_, 7, comm_, &request), MPI_SUCCESS);
  int flag = 0;
  MPI_Status status;
  ASSERT_EQ(MPI_Iprobe(rank_, 8, comm_, &flag, &status), MPI_SUCCESS);
  EXPECT_EQ(flag, 0);
  ASSERT_EQ(MPI_Iprobe(rank_, 7, comm_, &flag, &status), MPI_SUCCESS);
  EXPECT_EQ(flag, 1);
  EXPECT_EQ(elements(status, MPI_DOUBLE), 16);
  ASSERT_EQ(MPI_Probe(rank_, MPI_ANY_TAG, comm_, &status), MPI_SUCCESS);
  EXPECT_EQ(status.MPI_TAG, 7);
  EXPECT_EQ(status.MPI_SOURCE, rank_);
  std::vector<double> in(16, 0);
  ASSERT_EQ(MPI_Recv(in.data(), 16, MPI_DOUBLE, rank_, 7, comm_, MPI_STATUS_IGNORE), MPI_SUCCESS);
  EXPECT_EQ(in, out);
  ASSERT_EQ(MPI_Wait(&request, MPI_STATUS_IGNORE), MPI_SUCCESS);
  EXPECT_EQ(demoted(), 0u);
}

// What one receive too short for its message returned and delivered.
struct Truncated {
  int first_class, second_class;
  std::vector<int> first, second;
  bool operator==(const Truncated&) const = default;
};

// Too long for the receive, queued first (blocking receive) and posted first (non-blocking):
// run through `api` (Loom's MPI_* or the host's PMPI_*) on `comm`.
template <typename Recv, typename Irecv, typename Send, typename Wait>
Truncated truncate_twice(MPI_Comm comm, int rank, Recv recv, Irecv irecv, Send send, Wait wait) {
  const std::vector<int> out = values(8, 16);
  Truncated t{0, 0, std::vector<int>(8, -1), std::vector<int>(8, -1)};
  send(out.data(), 16, MPI_INT, rank, 9, comm);
  t.first_class = error_class(recv(t.first.data(), 8, MPI_INT, rank, 9, comm, MPI_STATUS_IGNORE));
  MPI_Request request;
  irecv(t.second.data(), 8, MPI_INT, rank, 10, comm, &request);
  send(out.data(), 16, MPI_INT, rank, 10, comm);
  t.second_class = error_class(wait(&request, MPI_STATUS_IGNORE));
  return t;
}

// Whatever the host reports and delivers (Open MPI 4.1 and MPICH 4.0 differ), through the
// communicator's handler (MPI_ERRORS_RETURN here).
TEST_F(SelfChannel, TruncationIsReportedAsTheHostReportsIt) {
  MPI_Comm host_comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &host_comm);
  MPI_Comm_set_errhandler(host_comm, MPI_ERRORS_RETURN);
  const Truncated host =
      truncate_twice(host_comm, rank_, PMPI_Recv, PMPI_Irecv, PMPI_Send, PMPI_Wait);
  MPI_Comm_free(&host_comm);
  const Truncated loom = truncate_twice(comm_, rank_, MPI_Recv, MPI_Irecv, MPI_Send, MPI_Wait);
  EXPECT_EQ(loom.first_class, host.first_class);
  EXPECT_EQ(loom.second_class, host.second_class);
  EXPECT_EQ(loom.first, host.first);
  EXPECT_EQ(loom.second, host.second);
  EXPECT_NE(host.first_class, MPI_SUCCESS);  // a receive shorter than its message
  // The channel still serves the communicator afterwards.
  const std::vector<int> out = values(8, 8);
  std::vector<int> in(8, -1);
  ASSERT_EQ(MPI_Send(out.data(), 8, MPI_INT, rank_, 11, comm_), MPI_SUCCESS);
  ASSERT_EQ(MPI_Recv(in.data(), 8, MPI_INT, rank_, 11, comm_, MPI_STATUS_IGNORE), MPI_SUCCESS);
  EXPECT_EQ(out, in);
  EXPECT_EQ(demoted(), 0u);
}

// Bad arguments reach the host, which reports them through the communicator's handler.
TEST_F(SelfChannel, BadArgumentsGetTheHostsErrorClasses) {
  MPI_Comm host_comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &host_comm);
  MPI_Comm_set_errhandler(host_comm, MPI_ERRORS_RETURN);
  int buf[4] = {1, 2, 3, 4};
  MPI_Request request = MPI_REQUEST_NULL;
  struct Case {
    const char* what;
    int loom, host;
  };
  const Case cases[] = {
      {"send, negative tag", MPI_Send(buf, 4, MPI_INT, rank_, -5, comm_),
       PMPI_Send(buf, 4, MPI_INT, rank_, -5, host_comm)},
      {"send, negative count", MPI_Send(buf, -1, MPI_INT, rank_, 1, comm_),
       PMPI_Send(buf, -1, MPI_INT, rank_, 1, host_comm)},
      {"isend, null datatype", MPI_Isend(buf, 4, MPI_DATATYPE_NULL, rank_, 1, comm_, &request),
       PMPI_Isend(buf, 4, MPI_DATATYPE_NULL, rank_, 1, host_comm, &request)},
      {"irecv, negative tag", MPI_Irecv(buf, 4, MPI_INT, rank_, -7, comm_, &request),
       PMPI_Irecv(buf, 4, MPI_INT, rank_, -7, host_comm, &request)},
  };
  MPI_Comm_free(&host_comm);
  for (const Case& c : cases) {
    EXPECT_NE(c.host, MPI_SUCCESS) << c.what;
    EXPECT_EQ(error_class(c.loom), error_class(c.host)) << c.what;
  }
  EXPECT_EQ(delivered(), 0u);
}

TEST_F(SelfChannel, CancelledReceiveGetsNothing) {
  std::vector<int> in(8, -1);
  MPI_Request request;
  ASSERT_EQ(MPI_Irecv(in.data(), 8, MPI_INT, rank_, 12, comm_, &request), MPI_SUCCESS);
  ASSERT_EQ(MPI_Cancel(&request), MPI_SUCCESS);
  MPI_Status status;
  ASSERT_EQ(MPI_Wait(&request, &status), MPI_SUCCESS);
  int cancelled = 0;
  MPI_Test_cancelled(&status, &cancelled);
  EXPECT_EQ(cancelled, 1);
  const std::vector<int> out = values(9, 8);
  ASSERT_EQ(MPI_Send(out.data(), 8, MPI_INT, rank_, 12, comm_), MPI_SUCCESS);
  EXPECT_EQ(in, std::vector<int>(8, -1));  // the cancelled receive got nothing
  ASSERT_EQ(MPI_Recv(in.data(), 8, MPI_INT, rank_, 12, comm_, MPI_STATUS_IGNORE), MPI_SUCCESS);
  EXPECT_EQ(in, out);
}

TEST_F(SelfChannel, SendrecvWithOneself) {
  const std::vector<int> out = values(10);
  std::vector<int> in(out.size(), -1);
  MPI_Status status;
  ASSERT_EQ(MPI_Sendrecv(out.data(), 1, every_other_, rank_, 13, in.data(), 1, every_other_, rank_,
                         13, comm_, &status),
            MPI_SUCCESS);
  EXPECT_EQ(in, expected_every_other(out, -1));
  EXPECT_EQ(status.MPI_SOURCE, rank_);
  EXPECT_EQ(status.MPI_TAG, 13);
  EXPECT_EQ(elements(status, every_other_), 1);
}

// Requests to oneself and to the peer completed together, in any order.
TEST_F(SelfChannel, WaitanyOverOneselfAndThePeer) {
  const int peer = (rank_ + 1) % size_;
  const std::vector<int> to_self = values(11), to_peer = values(12 + rank_);
  std::vector<int> from_self(128, -1), from_peer(128, -1);
  MPI_Request requests[4];
  ASSERT_EQ(MPI_Irecv(from_peer.data(), 1, every_other_, peer, 14, comm_, &requests[0]),
            MPI_SUCCESS);
  ASSERT_EQ(MPI_Irecv(from_self.data(), 1, every_other_, rank_, 15, comm_, &requests[1]),
            MPI_SUCCESS);
  ASSERT_EQ(MPI_Isend(to_peer.data(), 1, every_other_, peer, 14, comm_, &requests[2]), MPI_SUCCESS);
  ASSERT_EQ(MPI_Isend(to_self.data(), 1, every_other_, rank_, 15, comm_, &requests[3]),
            MPI_SUCCESS);
  int sources[2] = {-1, -1};
  for (int done = 0; done < 4; ++done) {
    int index = MPI_UNDEFINED;
    MPI_Status status;
    ASSERT_EQ(MPI_Waitany(4, requests, &index, &status), MPI_SUCCESS);
    ASSERT_GE(index, 0);
    if (index < 2) sources[index] = status.MPI_SOURCE;
  }
  EXPECT_EQ(sources[0], peer);
  EXPECT_EQ(sources[1], rank_);
  EXPECT_EQ(from_self, expected_every_other(to_self, -1));
  EXPECT_EQ(from_peer, expected_every_other(values(12 + peer), -1));
}

// A wildcard source could match a message the channel holds or one from the peer: the channel
// hands its messages to the host in order, and the host matches from then on.
TEST_F(SelfChannel, WildcardSourceHandsQueuedMessagesToTheHostInOrder) {
  const std::vector<int> first = values(20, 8), second = values(21, 8);
  ASSERT_EQ(MPI_Send(first.data(), 8, MPI_INT, rank_, 16, comm_), MPI_SUCCESS);
  ASSERT_EQ(MPI_Send(second.data(), 8, MPI_INT, rank_, 16, comm_), MPI_SUCCESS);
  std::vector<int> in(8, -1);
  MPI_Status status;
  ASSERT_EQ(MPI_Recv(in.data(), 8, MPI_INT, MPI_ANY_SOURCE, 16, comm_, &status), MPI_SUCCESS);
  EXPECT_EQ(in, first);
  EXPECT_EQ(status.MPI_SOURCE, rank_);
  ASSERT_EQ(MPI_Recv(in.data(), 8, MPI_INT, rank_, 16, comm_, &status), MPI_SUCCESS);
  EXPECT_EQ(in, second);
  EXPECT_EQ(demoted(), channel_on() ? 1u : 0u);
  const uint64_t before = delivered();
  ASSERT_EQ(MPI_Send(first.data(), 8, MPI_INT, rank_, 17, comm_), MPI_SUCCESS);
  ASSERT_EQ(MPI_Recv(in.data(), 8, MPI_INT, rank_, 17, comm_, MPI_STATUS_IGNORE), MPI_SUCCESS);
  EXPECT_EQ(in, first);
  EXPECT_EQ(delivered(), before);  // the host's now
}

TEST_F(SelfChannel, MatchedProbeFindsAQueuedMessage) {
  const std::vector<int> out = values(22);
  MPI_Request request;
  ASSERT_EQ(MPI_Isend(out.data(), 1, every_other_, rank_, 18, comm_, &request), MPI_SUCCESS);
  MPI_Message message;
  MPI_Status status;
  int flag = 0;
  ASSERT_EQ(MPI_Improbe(rank_, 18, comm_, &flag, &message, &status), MPI_SUCCESS);
  for (int spins = 0; !flag && spins < 100000; ++spins)
    ASSERT_EQ(MPI_Improbe(rank_, 18, comm_, &flag, &message, &status), MPI_SUCCESS);
  ASSERT_EQ(flag, 1);
  EXPECT_EQ(elements(status, every_other_), 1);
  std::vector<int> in(out.size(), -1);
  ASSERT_EQ(MPI_Mrecv(in.data(), 1, every_other_, &message, &status), MPI_SUCCESS);
  EXPECT_EQ(in, expected_every_other(out, -1));
  ASSERT_EQ(MPI_Wait(&request, MPI_STATUS_IGNORE), MPI_SUCCESS);
}

TEST_F(SelfChannel, SynchronousSendToOneselfCompletesAtTheMatch) {
  const std::vector<int> out = values(23, 8);
  std::vector<int> in(8, -1);
  MPI_Request receive, send;
  ASSERT_EQ(MPI_Issend(out.data(), 8, MPI_INT, rank_, 19, comm_, &send), MPI_SUCCESS);
  int flag = 1;
  ASSERT_EQ(MPI_Test(&send, &flag, MPI_STATUS_IGNORE), MPI_SUCCESS);
  EXPECT_EQ(flag, 0);  // no receive yet
  ASSERT_EQ(MPI_Irecv(in.data(), 8, MPI_INT, rank_, 19, comm_, &receive), MPI_SUCCESS);
  ASSERT_EQ(MPI_Wait(&receive, MPI_STATUS_IGNORE), MPI_SUCCESS);
  ASSERT_EQ(MPI_Wait(&send, MPI_STATUS_IGNORE), MPI_SUCCESS);
  EXPECT_EQ(in, out);
  EXPECT_EQ(demoted(), channel_on() ? 1u : 0u);  // no receive was posted: the host's
}

// A synchronous send whose receive is already posted matches at once: the channel serves it,
// blocking or not, and the send completes with the delivery.
TEST_F(SelfChannel, SynchronousSendIntoAPostedReceive) {
  const std::vector<int> first = values(24), second = values(25);
  std::vector<int> in(128, -1), in2(128, -1);
  MPI_Request receives[2], send;
  ASSERT_EQ(MPI_Irecv(in.data(), 1, every_other_, rank_, 20, comm_, &receives[0]), MPI_SUCCESS);
  ASSERT_EQ(MPI_Irecv(in2.data(), 1, every_other_, rank_, 20, comm_, &receives[1]), MPI_SUCCESS);
  ASSERT_EQ(MPI_Ssend(first.data(), 1, every_other_, rank_, 20, comm_), MPI_SUCCESS);
  ASSERT_EQ(MPI_Issend(second.data(), 1, every_other_, rank_, 20, comm_, &send), MPI_SUCCESS);
  ASSERT_EQ(MPI_Wait(&send, MPI_STATUS_IGNORE), MPI_SUCCESS);
  MPI_Status statuses[2];
  ASSERT_EQ(MPI_Waitall(2, receives, statuses), MPI_SUCCESS);
  EXPECT_EQ(in, expected_every_other(first, -1));
  EXPECT_EQ(in2, expected_every_other(second, -1));
  for (const MPI_Status& status : statuses) {
    EXPECT_EQ(status.MPI_SOURCE, rank_);
    EXPECT_EQ(status.MPI_TAG, 20);
    EXPECT_EQ(elements(status, every_other_), 1);
  }
  EXPECT_EQ(delivered(), channel_on() ? 2u : 0u);
  EXPECT_EQ(demoted(), 0u);
}

// Persistent requests with oneself, restarted: each start sends the buffer's current data, a
// receive started before or after the send gets it with its status, and Startall mixes them
// with requests to the peer.
TEST_F(SelfChannel, PersistentRequestsRestartedManyTimes) {
  const int peer = (rank_ + 1) % size_;
  std::vector<int> out(128), to_peer(128), in(128), from_peer(128);
  MPI_Request send, receive, peer_requests[2];
  ASSERT_EQ(MPI_Send_init(out.data(), 1, every_other_, rank_, 30, comm_, &send), MPI_SUCCESS);
  ASSERT_EQ(MPI_Recv_init(in.data(), 1, every_other_, rank_, MPI_ANY_TAG, comm_, &receive),
            MPI_SUCCESS);
  ASSERT_EQ(MPI_Recv_init(from_peer.data(), 1, every_other_, peer, 31, comm_, &peer_requests[0]),
            MPI_SUCCESS);
  ASSERT_EQ(MPI_Send_init(to_peer.data(), 1, every_other_, peer, 31, comm_, &peer_requests[1]),
            MPI_SUCCESS);
  for (int round = 0; round < 50; ++round) {
    // In place: the persistent requests hold these buffers.
    const std::vector<int> now = values(40 + round),
                           now_to_peer = values(100 * (rank_ + 1) + round);
    std::copy(now.begin(), now.end(), out.begin());
    std::copy(now_to_peer.begin(), now_to_peer.end(), to_peer.begin());
    std::fill(in.begin(), in.end(), -1);
    std::fill(from_peer.begin(), from_peer.end(), -1);
    MPI_Status status;
    if (round % 3 == 2) {  // all at once, self and peer mixed
      MPI_Request all[4] = {receive, peer_requests[0], send, peer_requests[1]};
      ASSERT_EQ(MPI_Startall(4, all), MPI_SUCCESS);
      MPI_Status statuses[4];
      ASSERT_EQ(MPI_Waitall(4, all, statuses), MPI_SUCCESS);
      status = statuses[0];
      EXPECT_EQ(statuses[1].MPI_SOURCE, peer);
      EXPECT_EQ(from_peer, expected_every_other(values(100 * (peer + 1) + round), -1));
    } else {
      if (round % 3 == 0) {  // queued first
        ASSERT_EQ(MPI_Start(&send), MPI_SUCCESS);
      }
      ASSERT_EQ(MPI_Start(&receive), MPI_SUCCESS);
      if (round % 3 == 1) {  // into the posted receive
        ASSERT_EQ(MPI_Start(&send), MPI_SUCCESS);
      }
      ASSERT_EQ(MPI_Wait(&send, MPI_STATUS_IGNORE), MPI_SUCCESS);
      ASSERT_EQ(MPI_Wait(&receive, &status), MPI_SUCCESS);
    }
    ASSERT_EQ(in, expected_every_other(out, -1)) << "round " << round;
    EXPECT_EQ(status.MPI_SOURCE, rank_);
    EXPECT_EQ(status.MPI_TAG, 30);
    EXPECT_EQ(elements(status, every_other_), 1);
    int cancelled = 1;
    MPI_Test_cancelled(&status, &cancelled);
    EXPECT_EQ(cancelled, 0);
  }
  for (MPI_Request* r : {&send, &receive, &peer_requests[0], &peer_requests[1]})
    ASSERT_EQ(MPI_Request_free(r), MPI_SUCCESS);
  EXPECT_EQ(delivered(), channel_on() ? 50u : 0u);
  EXPECT_EQ(demoted(), 0u);
}

// A persistent receive waiting for a message to oneself when a wildcard demotes the channel:
// the host delivers the next start's message, with the same data and status.
TEST_F(SelfChannel, PersistentRequestsOutliveDemotion) {
  std::vector<int> out = values(60), in(128, -1);
  MPI_Request send, receive;
  ASSERT_EQ(MPI_Send_init(out.data(), 1, every_other_, rank_, 32, comm_, &send), MPI_SUCCESS);
  ASSERT_EQ(MPI_Recv_init(in.data(), 1, every_other_, rank_, 32, comm_, &receive), MPI_SUCCESS);
  ASSERT_EQ(MPI_Start(&receive), MPI_SUCCESS);
  int flag = 1;
  MPI_Status status;
  ASSERT_EQ(MPI_Iprobe(MPI_ANY_SOURCE, 33, comm_, &flag, &status), MPI_SUCCESS);  // demotes
  EXPECT_EQ(flag, 0);
  for (int round = 0; round < 3; ++round) {
    const std::vector<int> now = values(61 + round);
    std::copy(now.begin(), now.end(), out.begin());  // in place: the send holds the buffer
    if (round > 0) {
      std::fill(in.begin(), in.end(), -1);
      ASSERT_EQ(MPI_Start(&receive), MPI_SUCCESS);
    }
    ASSERT_EQ(MPI_Start(&send), MPI_SUCCESS);
    ASSERT_EQ(MPI_Wait(&receive, &status), MPI_SUCCESS);
    ASSERT_EQ(MPI_Wait(&send, MPI_STATUS_IGNORE), MPI_SUCCESS);
    EXPECT_EQ(in, expected_every_other(out, -1)) << "round " << round;
    EXPECT_EQ(status.MPI_SOURCE, rank_);
    EXPECT_EQ(status.MPI_TAG, 32);
  }
  ASSERT_EQ(MPI_Request_free(&send), MPI_SUCCESS);
  ASSERT_EQ(MPI_Request_free(&receive), MPI_SUCCESS);
  EXPECT_EQ(demoted(), channel_on() ? 1u : 0u);
  EXPECT_EQ(delivered(), 0u);
}

// Random sequences of sends to oneself and receives from oneself (specific tags, MPI_ANY_TAG,
// now and then MPI_ANY_SOURCE, which demotes the channel mid-sequence), of contiguous ints and
// of every other int, a quarter of them persistent, posted in random order and completed at the
// end. An independent model of the standard's matching rules (the first posted receive that matches
// takes the first sent message that matches) predicts every receive's data and status. The seed is
// printed; LOOM_TEST_SEED repeats one.
class RandomSequence {
 public:
  explicit RandomSequence(uint64_t seed) : rng_(seed) {}

  struct Op {
    bool send;
    int tag;  // a receive's may be MPI_ANY_TAG
    bool any_source;
    bool strided;             // every other int rather than contiguous ints
    int count;                // ints sent; a receive takes up to kCapacity
    bool persistent = false;  // MPI_Send_init/MPI_Recv_init and MPI_Start
  };
  static constexpr int kCapacity = 8;

  std::vector<Op> generate(int n) {
    std::vector<Op> ops;
    std::uniform_int_distribution<int> coin(0, 99), tag(0, 3), count(0, kCapacity);
    for (int i = 0; i < n; ++i) {
      const bool send = coin(rng_) < 50;
      const int c = coin(rng_);
      ops.push_back({send, !send && c < 25 ? MPI_ANY_TAG : tag(rng_), !send && c >= 97,
                     coin(rng_) < 50, count(rng_), coin(rng_) < 25});
    }
    // Every receive gets a message and every message a receive, per the model below.
    Model model;
    for (const Op& op : ops) model.post(op);
    for (int t : model.unmatched_receive_tags())
      ops.push_back({true, t == MPI_ANY_TAG ? 0 : t, false, false, 1});
    Model drained;
    for (const Op& op : ops) drained.post(op);
    for (size_t k = 0; k < drained.unmatched_sends(); ++k)
      ops.push_back({false, MPI_ANY_TAG, false, false, 0});
    return ops;
  }

  // Which send each receive gets: receive index -> send index, in op indices.
  class Model {
   public:
    void post(const Op& op) {
      const int index = next_++;
      ops_.push_back(op);
      if (op.send) {
        for (auto r = receives_.begin(); r != receives_.end(); ++r)
          if (ops_[*r].tag == MPI_ANY_TAG || ops_[*r].tag == op.tag) {
            match_[*r] = index;
            receives_.erase(r);
            return;
          }
        sends_.push_back(index);
      } else {
        for (auto s = sends_.begin(); s != sends_.end(); ++s)
          if (op.tag == MPI_ANY_TAG || op.tag == ops_[*s].tag) {
            match_[index] = *s;
            sends_.erase(s);
            return;
          }
        receives_.push_back(index);
      }
    }
    std::vector<int> unmatched_receive_tags() const {
      std::vector<int> tags;
      for (int r : receives_) tags.push_back(ops_[r].tag);
      return tags;
    }
    size_t unmatched_sends() const { return sends_.size(); }
    int match(int receive) const {
      auto it = match_.find(receive);
      return it == match_.end() ? -1 : it->second;
    }

   private:
    int next_ = 0;
    std::vector<Op> ops_;
    std::vector<int> receives_, sends_;
    std::map<int, int> match_;
  };

 private:
  std::mt19937_64 rng_;
};

int message_value(int op, int i) {
  return op * 100 + i + 1;
}

TEST_F(SelfChannel, RandomSequencesMatchTheStandardsOrder) {
  uint64_t seed = std::random_device{}();
  if (const char* env = std::getenv("LOOM_TEST_SEED"); env && *env)
    seed = std::strtoull(env, nullptr, 10);
  std::printf("rank %d: random sequences, seed %llu (LOOM_TEST_SEED repeats it)\n", rank_,
              static_cast<unsigned long long>(seed));
  SCOPED_TRACE("LOOM_TEST_SEED=" + std::to_string(seed));
  RandomSequence random(seed + static_cast<uint64_t>(rank_));
  constexpr int kSequences = 200, kOps = 24;
  constexpr int kCap = RandomSequence::kCapacity;
  MPI_Datatype strided, spaced;  // every other int, kCap of them; one int of extent two
  MPI_Type_vector(kCap, 1, 2, MPI_INT, &strided);
  MPI_Type_commit(&strided);
  MPI_Type_create_resized(MPI_INT, 0, 2 * sizeof(int), &spaced);
  MPI_Type_commit(&spaced);
  for (int sequence = 0; sequence < kSequences; ++sequence) {
    const std::vector<RandomSequence::Op> ops = random.generate(kOps);
    RandomSequence::Model model;
    for (const auto& op : ops) model.post(op);
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    std::vector<std::vector<int>> buffers(ops.size(), std::vector<int>(2 * kCap, -1));
    std::vector<MPI_Request> requests(ops.size(), MPI_REQUEST_NULL);
    for (size_t k = 0; k < ops.size(); ++k) {
      const auto& op = ops[k];
      std::vector<int>& buf = buffers[k];
      MPI_Request* request = &requests[k];
      if (op.send) {
        for (int i = 0; i < op.count; ++i) buf[op.strided ? 2 * i : i] = message_value(int(k), i);
        const MPI_Datatype type = op.strided ? spaced : MPI_INT;
        ASSERT_EQ(op.persistent
                      ? MPI_Send_init(buf.data(), op.count, type, rank_, op.tag, comm, request)
                      : MPI_Isend(buf.data(), op.count, type, rank_, op.tag, comm, request),
                  MPI_SUCCESS);
      } else {
        const int source = op.any_source ? MPI_ANY_SOURCE : rank_;
        const MPI_Datatype type = op.strided ? strided : MPI_INT;
        const int count = op.strided ? 1 : kCap;
        ASSERT_EQ(op.persistent
                      ? MPI_Recv_init(buf.data(), count, type, source, op.tag, comm, request)
                      : MPI_Irecv(buf.data(), count, type, source, op.tag, comm, request),
                  MPI_SUCCESS);
      }
      if (op.persistent) {
        ASSERT_EQ(MPI_Start(request), MPI_SUCCESS);
      }
    }
    std::vector<MPI_Status> statuses(ops.size());
    ASSERT_EQ(MPI_Waitall(int(ops.size()), requests.data(), statuses.data()), MPI_SUCCESS);
    for (size_t k = 0; k < ops.size(); ++k) {
      if (ops[k].persistent) {
        ASSERT_EQ(MPI_Request_free(&requests[k]), MPI_SUCCESS);
      }
    }
    for (size_t k = 0; k < ops.size(); ++k) {
      const auto& op = ops[k];
      if (op.send) continue;
      const int s = model.match(int(k));
      ASSERT_GE(s, 0) << "sequence " << sequence << " receive " << k;
      const auto& sent = ops[size_t(s)];
      EXPECT_EQ(statuses[k].MPI_SOURCE, rank_) << sequence << "/" << k;
      EXPECT_EQ(statuses[k].MPI_TAG, sent.tag) << sequence << "/" << k;
      EXPECT_EQ(elements(statuses[k], MPI_INT), sent.count) << sequence << "/" << k;
      std::vector<int> expected(2 * kCap, -1);
      for (int i = 0; i < sent.count; ++i) expected[op.strided ? 2 * i : i] = message_value(s, i);
      EXPECT_EQ(buffers[k], expected)
          << "sequence " << sequence << " receive " << k << " of send " << s;
    }
    MPI_Comm_free(&comm);
    if (HasFailure()) break;
  }
  MPI_Type_free(&strided);
  MPI_Type_free(&spaced);
}

}  // namespace

int main(int argc, char** argv) {
  mode = loom::test::mode_argument(argc, argv, "on");
  MPI_Init(&argc, &argv);
  return loom::test::run_tests_and_finalize(&argc, argv);
}
