// A process's messages to itself, delivered by Loom instead of the host (docs/p2p.md,
// "Messages a rank sends to itself"). MPICH's own path for them copies twice through its
// shared memory and, with a second busy rank on the node, ran four times slower than alone;
// Loom packs the sender's data and unpacks it into the receive, or keeps a packed copy until a
// receive is posted.
//
// Matching stays exact because only this process can send to itself: while a communicator's
// channel is active, every message a rank sends to itself on it goes through the channel, and
// every receive from itself is posted to the host as usual, so that it holds a real request,
// and withdrawn (MPI_Cancel) when the channel delivers into it. Calls whose matching would mix
// the channel's messages with the host's (a wildcard source, a matched probe) or that the
// channel does not serve (buffered sends to oneself, synchronous ones without a posted receive,
// their persistent forms,
// MPI_Sendrecv_replace, datatypes without a Loom plan) first demote the communicator's
// channel for good: its queued messages go to the host in order, as MPI_PACKED. Only below
// MPI_THREAD_MULTIPLE: withdrawing a receive must not race another thread's completion call.
#pragma once

#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <deque>
#include <list>
#include <memory>
#include <mutex>
#include <vector>

#include "transport/staging.hpp"

namespace loom::mpi {
struct TypePlan;
}

namespace loom::transport {

class SelfReceive;

// Called at MPI_Init*: the channel runs only below MPI_THREAD_MULTIPLE.
void note_thread_level(int provided);

class SelfChannel : public std::enable_shared_from_this<SelfChannel> {
 public:
  // An inactive channel serves nothing: an intercommunicator's, or one created demoted.
  SelfChannel(MPI_Comm comm, int rank, int tag_ub, bool active)
      : comm_(comm), rank_(rank), tag_ub_(tag_ub), active_(active) {}

  // Each returns false, having done nothing, when the channel does not serve the call (it is
  // then demoted and the caller goes on to the host); otherwise *rc is the call's result.
  // A send with `request` null is blocking. A send never waits for its receive: without one
  // posted it leaves a packed copy, as a host's eager protocol would; a synchronous send, which
  // must complete at the match, is served only into a posted receive.
  enum class SendMode { Standard, Synchronous };
  bool send(const void* buf, int count, MPI_Datatype type, int tag, MPI_Request* request, int* rc,
            SendMode mode = SendMode::Standard);
  // A receive with `request` null is blocking, and fills `status` (may be MPI_STATUS_IGNORE).
  bool receive(void* buf, int count, MPI_Datatype type, int tag, MPI_Request* request,
               MPI_Status* status, int* rc);
  // MPI_Send_init / MPI_Rsend_init and MPI_Recv_init with oneself: *request is the host's
  // persistent request the user starts; the channel serves each start while it is active, the
  // host once it is demoted.
  bool send_init(const void* buf, int count, MPI_Datatype type, int tag, MPI_Request* request,
                 int* rc);
  bool receive_init(void* buf, int count, MPI_Datatype type, int tag, MPI_Request* request,
                    int* rc);
  // A started persistent receive: takes the first queued message it matches, or waits in
  // pending_ for the next send.
  void start_receive(SelfReceive* receive, MPI_Request request, int tag, void* buf, int count,
                     const std::shared_ptr<const mpi::TypePlan>& plan);
  // MPI_Iprobe for a queued message; false when none is queued.
  bool probe(int tag, MPI_Status* status);

  void demote();
  bool active() const { return active_; }
  int rank() const { return rank_; }
  // Called by a receive's completion, and by MPI_Cancel: the channel no longer delivers into it.
  void forget(const SelfReceive* receive);
  bool withdraw(MPI_Request request);

 private:
  struct Queued {
    int tag;
    StagingBuffer packed;  // the sender's data as the host's MPI_Pack would write it
  };
  struct Pending {
    MPI_Request request;
    int tag;
    void* buf;
    int count;
    std::shared_ptr<const mpi::TypePlan> plan;
    SelfReceive* receive;
  };

  // A tag the host accepts: the channel leaves any other to the host, which reports the error.
  bool valid_tag(int tag, bool receive) const {
    return (tag >= 0 && tag <= tag_ub_) || (receive && tag == MPI_ANY_TAG);
  }

  MPI_Comm comm_;
  int rank_;
  int tag_ub_;
  bool active_;
  std::mutex mutex_;
  std::deque<Queued> queued_;   // sent, not yet received: in send order
  std::list<Pending> pending_;  // posted receives not yet delivered into: in post order
};

namespace detail {
// Each thread's recent lookups of channels by communicator: every send and receive asks, and
// would otherwise take the registry's lock. Every change to the registry, or to whether
// channels are enabled, bumps the epoch, which starts at 1 (0 marks an empty entry).
struct CachedChannel {
  MPI_Comm comm;
  uint64_t epoch;
  SelfChannel* channel;  // null when none is active
  int rank;              // this process in comm, or -1 (intercommunicator, channels disabled)
};
extern std::atomic<uint64_t> channels_epoch;
// Four communicators, direct-mapped by handle: a program alternating between a few (the world
// and a Cartesian one) still finds each here.
constexpr size_t kCachedComms = 4;
inline thread_local CachedChannel cached_channels[kCachedComms] = {};
inline CachedChannel& cached_channel(MPI_Comm comm) {
  uint64_t bits = 0;  // Open MPI's handles are pointers, MPICH's integers
  std::memcpy(&bits, &comm, std::min(sizeof comm, sizeof bits));
  bits ^= (bits >> 4) ^ (bits >> 12) ^ (bits >> 24);
  return cached_channels[bits % kCachedComms];
}
SelfChannel* self_channel_slow(MPI_Comm comm, int peer);
}  // namespace detail

// The channel that owns `peer`'s messages on `comm`, when `peer` is this process and the
// channel is active; null otherwise (another peer, MPI_PROC_NULL, MPI_ANY_SOURCE, an
// intercommunicator, LOOM_SELF=0, MPI_THREAD_MULTIPLE, or a demoted channel). Inline: every
// send and receive asks, and the answer is nearly always a cached "not this process".
inline SelfChannel* self_channel(MPI_Comm comm, int peer) {
  if (peer < 0) return nullptr;
  const detail::CachedChannel& last = detail::cached_channel(comm);
  if (last.comm == comm && last.epoch == detail::channels_epoch.load(std::memory_order_acquire))
    return peer == last.rank ? last.channel : nullptr;
  return detail::self_channel_slow(comm, peer);
}
// Demotes `comm`'s channel, creating it demoted if it does not exist yet: for a wildcard
// source, whose receive or probe could match a message the channel would otherwise hold.
void demote_self_channel(MPI_Comm comm);
void forget_self_channel(MPI_Comm comm);  // MPI_Comm_free / MPI_Comm_disconnect
// MPI_Cancel of a receive the channel could still deliver into: withdraws it first.
void withdraw_self_receive(MPI_Request request);

}  // namespace loom::transport
