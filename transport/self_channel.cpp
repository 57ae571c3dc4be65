#include "transport/self_channel.hpp"

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstring>
#include <unordered_map>
#include <utility>
#include <vector>

#include "exec/execute.hpp"
#include "mpi/host.hpp"
#include "mpi/requests.hpp"
#include "mpi/type_registry.hpp"
#include "runtime/counters.hpp"
#include "transport/staging.hpp"

namespace loom::transport {
using namespace loom::runtime;  // NOLINT: the layers below
using namespace loom::mpi;      // NOLINT: the layers below
namespace {

// Messages a process sent to itself that Loom delivered, their bytes, and communicators whose
// such messages went back to the host.
const Counter kDelivered = register_counter("p2p", "to itself", "delivered");
const Counter kDeliveredBytes = register_counter("p2p", "to itself", "bytes");
const Counter kDemoted = register_counter("p2p", "to itself", "demoted");

// The status of a message the channel delivered, as the host reports one: not cancelled, even
// where the host's own request was withdrawn to make way for it.
void fill_status(MPI_Status* status, int source, int tag, int64_t bytes) {
  if (status == MPI_STATUS_IGNORE) return;
  status->MPI_SOURCE = source;
  status->MPI_TAG = tag;
  PMPI_Status_set_elements_x(status, MPI_BYTE, bytes);
  PMPI_Status_set_cancelled(status, 0);
}

}  // namespace

// What a receive's request finishes with: the message the channel delivered, or what the
// host delivered into the receive's staging (a message too long for it, sent through the host
// so that the host reports the truncation, or any message once the channel is demoted).
class SelfReceive final : public PendingOp {
 public:
  // `tag` is a persistent receive's: each start asks the channel anew.
  SelfReceive(std::shared_ptr<SelfChannel> channel, std::shared_ptr<const TypePlan> plan, void* buf,
              int count, StagingBuffer staging, int persistent_tag = kNotPersistent)
      : channel_(std::move(channel)),
        plan_(std::move(plan)),
        buf_(buf),
        count_(count),
        staging_(std::move(staging)),
        persistent_tag_(persistent_tag) {}
  // A receive the channel served at once, on a host request withdrawn at once.
  SelfReceive(int source, int tag, int64_t bytes) { delivered(source, tag, bytes); }

  void delivered(int source, int tag, int64_t bytes) {
    delivered_ = true;
    source_ = source;
    tag_ = tag;
    bytes_ = bytes;
  }
  int on_complete(MPI_Status* status) override {
    if (channel_) channel_->forget(this);
    if (!delivered_) {
      if (plan_)
        unpack_received(*plan_, staging_.data(), received_bytes(*status, status->MPI_ERROR), buf_,
                        count_);
      return MPI_SUCCESS;
    }
    delivered_ = false;  // a persistent receive starts again undelivered
    fill_status(status, source_, tag_, bytes_);
    return MPI_SUCCESS;
  }
  bool persistent() const override { return persistent_tag_ != kNotPersistent; }
  void on_started(MPI_Request request) override {
    channel_->start_receive(this, request, persistent_tag_, buf_, count_, plan_);
  }

 private:
  static constexpr int kNotPersistent = INT_MIN;  // no tag is negative but MPI_ANY_TAG
  std::shared_ptr<SelfChannel> channel_;
  std::shared_ptr<const TypePlan> plan_;
  void* buf_ = nullptr;
  int count_ = 0;
  StagingBuffer staging_;
  int persistent_tag_ = kNotPersistent;
  bool delivered_ = false;
  int source_ = MPI_PROC_NULL, tag_ = MPI_ANY_TAG;
  int64_t bytes_ = 0;
};

namespace {

bool tags_match(int posted, int sent) {
  return posted == MPI_ANY_TAG || posted == sent;
}

// A send's request once its message is delivered or queued: complete at once, as the host's
// is after an eager send (a send to MPI_PROC_NULL, which matches nothing; Open MPI gives all of
// them one handle, which nothing here tracks).
int completed_send_request(int tag, MPI_Comm comm, MPI_Request* request) {
  return host().Isend(nullptr, 0, MPI_BYTE, MPI_PROC_NULL, tag, comm, request);
}

// The plan a channel call uses, with the packed size; null when the channel does not serve
// the buffer and datatype (no plan, too large for one message, absolute addresses).
std::shared_ptr<const TypePlan> plan_for(const void* buf, int count, MPI_Datatype type,
                                         int64_t* bytes) {
  if (count < 0) return nullptr;
  std::shared_ptr<const TypePlan> plan = share_plan(type);
  if (!plan) return nullptr;
  *bytes = static_cast<int64_t>(count) * plan->plan.size();
  if (*bytes > INT_MAX || (!buf && *bytes > 0)) return nullptr;
  return plan;
}

std::atomic<int> thread_level{MPI_THREAD_SINGLE};

// The channels by communicator; each thread's recent lookups are in
// detail::cached_channels.
std::mutex channels_mutex;
std::unordered_map<MPI_Comm, std::shared_ptr<SelfChannel>>& channels() {
  static auto* map = new std::unordered_map<MPI_Comm, std::shared_ptr<SelfChannel>>();
  return *map;
}
using detail::cached_channel;
using detail::CachedChannel;
using detail::channels_epoch;

// The channel of `comm`, created on first use (demoted if `demoted`); under channels_mutex.
SelfChannel& channel_locked(MPI_Comm comm, bool demoted) {
  auto& slot = channels()[comm];
  if (!slot) {
    int inter = 0, rank = -1, has_ub = 0;
    int* tag_ub = nullptr;
    PMPI_Comm_test_inter(comm, &inter);
    if (!inter) PMPI_Comm_rank(comm, &rank);
    PMPI_Comm_get_attr(comm, MPI_TAG_UB, &tag_ub, &has_ub);
    slot = std::make_shared<SelfChannel>(comm, rank, has_ub && tag_ub ? *tag_ub : 32767,
                                         !inter && !demoted);
    if (!inter && demoted) count(kDemoted);
    channels_epoch.fetch_add(1, std::memory_order_release);
  }
  return *slot;
}

bool channel_enabled() {
  return !config().disabled && config().self_channel &&
         thread_level.load(std::memory_order_relaxed) < MPI_THREAD_MULTIPLE;
}

}  // namespace

namespace detail {
std::atomic<uint64_t> channels_epoch{1};

SelfChannel* self_channel_slow(MPI_Comm comm, int peer) {
  if (comm == MPI_COMM_NULL) return nullptr;
  CachedChannel& last = cached_channel(comm);
  if (!channel_enabled()) {
    // Cached too, so that the pass-through path of a disabled channel stays inline.
    last = {comm, channels_epoch.load(std::memory_order_acquire), nullptr, -1};
    return nullptr;
  }
  std::lock_guard<std::mutex> lock(channels_mutex);
  SelfChannel& channel = channel_locked(comm, false);
  last = {comm, channels_epoch.load(std::memory_order_relaxed),
          channel.active() ? &channel : nullptr, channel.rank()};
  return peer == last.rank ? last.channel : nullptr;
}
}  // namespace detail

void note_thread_level(int provided) {
  thread_level.store(provided, std::memory_order_relaxed);
  // Cached "disabled" answers may change with the level.
  channels_epoch.fetch_add(1, std::memory_order_release);
}

void demote_self_channel(MPI_Comm comm) {
  if (comm == MPI_COMM_NULL || !channel_enabled()) return;
  const CachedChannel& last = cached_channel(comm);
  if (last.comm == comm && !last.channel &&
      last.epoch == channels_epoch.load(std::memory_order_acquire))
    return;  // already demoted
  std::shared_ptr<SelfChannel> channel;
  {
    std::lock_guard<std::mutex> lock(channels_mutex);
    auto found = channels().find(comm);
    if (found == channels().end()) {
      channel_locked(comm, true);
      return;
    }
    channel = found->second;
  }
  channel->demote();
}

void forget_self_channel(MPI_Comm comm) {
  std::lock_guard<std::mutex> lock(channels_mutex);
  if (channels().erase(comm)) channels_epoch.fetch_add(1, std::memory_order_release);
}

void withdraw_self_receive(MPI_Request request) {
  if (!channel_enabled() || request == MPI_REQUEST_NULL) return;
  std::vector<std::shared_ptr<SelfChannel>> all;
  {
    std::lock_guard<std::mutex> lock(channels_mutex);
    for (const auto& [comm, channel] : channels())
      if (channel->active()) all.push_back(channel);
  }
  for (const auto& channel : all)
    if (channel->withdraw(request)) return;
}

void SelfChannel::demote() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!active_) return;
  active_ = false;
  count(kDemoted);
  // Queued messages match no posted receive (they would have been delivered): the host now
  // gets them in their order, as messages the host's own engine could have packed.
  for (Queued& message : queued_) {
    MPI_Request request = MPI_REQUEST_NULL;
    const int bytes = static_cast<int>(message.packed.size());
    if (host().Isend(message.packed.data(), bytes, MPI_PACKED, rank_, message.tag, comm_,
                     &request) == MPI_SUCCESS)
      detach_request(request, std::make_unique<HeldStaging>(std::move(message.packed)));
  }
  queued_.clear();
  pending_.clear();  // plain host receives from now on
  channels_epoch.fetch_add(1, std::memory_order_release);
}

void SelfChannel::forget(const SelfReceive* receive) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto it = pending_.begin(); it != pending_.end(); ++it)
    if (it->receive == receive) {
      pending_.erase(it);
      return;
    }
}

bool SelfChannel::withdraw(MPI_Request request) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto it = pending_.begin(); it != pending_.end(); ++it)
    if (it->request == request) {
      pending_.erase(it);
      return true;
    }
  return false;
}

bool SelfChannel::send(const void* buf, int count, MPI_Datatype type, int tag, MPI_Request* request,
                       int* rc, SendMode mode) {
  int64_t bytes = 0;
  const std::shared_ptr<const TypePlan> plan = plan_for(buf, count, type, &bytes);
  if (!plan || !valid_tag(tag, false)) {
    demote();
    return false;
  }
  std::unique_lock<std::mutex> lock(mutex_);
  if (!active_) return false;
  for (auto it = pending_.begin(); it != pending_.end();) {
    if (!tags_match(it->tag, tag)) {
      ++it;
      continue;
    }
    if (bytes > static_cast<int64_t>(it->count) * it->plan->plan.size()) {
      // Too long for the receive it matches: the host's send reaches that same receive (no
      // other message to oneself is in the host) and reports the truncation as it would.
      lock.unlock();
      *rc = request ? host().Isend(buf, count, type, rank_, tag, comm_, request)
                    : host().Send(buf, count, type, rank_, tag, comm_);
      return true;
    }
    MPI_Request posted = it->request;
    host().Cancel(&posted);
    MPI_Status withdrawn;
    for (int done = 0; !done;) host().Request_get_status(posted, &done, &withdrawn);
    int cancelled = 0;
    PMPI_Test_cancelled(&withdrawn, &cancelled);
    if (!cancelled) {  // the host delivered into it after all: not the channel's any more
      it = pending_.erase(it);
      continue;
    }
    StagingBuffer staging(static_cast<size_t>(bytes));
    {
      KernelTimer timer(exec::kPackTime);
      exec::pack(plan->plan, buf, count, staging.data(), exec::MemoryKind::Host);
    }
    unpack_received(*it->plan, staging.data(), bytes, it->buf, it->count, false);
    it->receive->delivered(rank_, tag, bytes);
    pending_.erase(it);
    count_call(kDelivered, kDeliveredBytes, static_cast<uint64_t>(bytes));
    lock.unlock();
    *rc = request ? completed_send_request(tag, comm_, request) : MPI_SUCCESS;
    return true;
  }
  if (mode == SendMode::Synchronous) return false;  // it would complete before its match
  StagingBuffer packed(static_cast<size_t>(bytes));
  {
    KernelTimer timer(exec::kPackTime);
    exec::pack(plan->plan, buf, count, packed.data(), exec::MemoryKind::Host);
  }
  queued_.push_back({tag, std::move(packed)});
  lock.unlock();
  *rc = request ? completed_send_request(tag, comm_, request) : MPI_SUCCESS;
  return true;
}

bool SelfChannel::receive(void* buf, int count, MPI_Datatype type, int tag, MPI_Request* request,
                          MPI_Status* status, int* rc) {
  int64_t capacity = 0;
  std::shared_ptr<const TypePlan> plan = plan_for(buf, count, type, &capacity);
  if (!plan || !valid_tag(tag, true)) {
    demote();
    return false;
  }
  std::unique_lock<std::mutex> lock(mutex_);
  if (!active_) return false;
  for (auto it = queued_.begin(); it != queued_.end(); ++it) {
    if (!tags_match(tag, it->tag)) continue;
    Queued message = std::move(*it);
    queued_.erase(it);
    const int64_t bytes = static_cast<int64_t>(message.packed.size());
    if (bytes > capacity) {
      // Too long: the host delivers it, and reports the truncation as it would.
      lock.unlock();
      MPI_Request send = MPI_REQUEST_NULL;
      *rc = host().Isend(message.packed.data(), static_cast<int>(bytes), MPI_PACKED, rank_,
                         message.tag, comm_, &send);
      if (*rc != MPI_SUCCESS) return true;
      detach_request(send, std::make_unique<HeldStaging>(std::move(message.packed)));
      *rc = request ? host().Irecv(buf, count, type, rank_, tag, comm_, request)
                    : host().Recv(buf, count, type, rank_, tag, comm_, status);
      return true;
    }
    unpack_received(*plan, message.packed.data(), bytes, buf, count, false);
    count_call(kDelivered, kDeliveredBytes, static_cast<uint64_t>(bytes));
    lock.unlock();
    if (!request) {
      fill_status(status, rank_, message.tag, bytes);
      *rc = MPI_SUCCESS;
      return true;
    }
    // The request: an empty host receive withdrawn at once (no message to oneself is in the
    // host, so nothing can match it first), whose completion reports the message. Not a receive
    // from MPI_PROC_NULL: Open MPI hands every such request the same handle.
    *rc = host().Irecv(nullptr, 0, MPI_BYTE, rank_, tag, comm_, request);
    if (*rc != MPI_SUCCESS) return true;
    host().Cancel(request);
    track_request(*request, std::make_unique<SelfReceive>(rank_, message.tag, bytes));
    return true;
  }
  lock.unlock();
  // Nothing queued. Below MPI_THREAD_MULTIPLE no other call can send to this process while a
  // blocking receive waits, so it waits in the host as it would without Loom.
  if (!request) {
    *rc = host().Recv(buf, count, type, rank_, tag, comm_, status);
    return true;
  }
  // Posted as bytes into staging: withdrawing a receive of a derived datatype leaks the
  // datatype in MPICH 4.0 (yaksa warns of leaked handles at MPI_Finalize).
  StagingBuffer staging(static_cast<size_t>(capacity));
  *rc = host().Irecv(staging.data(), static_cast<int>(capacity), MPI_PACKED, rank_, tag, comm_,
                     request);
  if (*rc != MPI_SUCCESS) return true;
  auto receive =
      std::make_unique<SelfReceive>(shared_from_this(), plan, buf, count, std::move(staging));
  lock.lock();
  pending_.push_back({*request, tag, buf, count, std::move(plan), receive.get()});
  lock.unlock();
  track_request(*request, std::move(receive));
  return true;
}

namespace {

// A persistent send to oneself: the user's request is the host's persistent send to
// MPI_PROC_NULL, which completes as soon as it starts; each start delivers or queues the
// user's current data through the channel, or, once the channel is demoted, sends it through
// the host as MPI_PACKED (completing later, on Loom's own, as a buffered send would).
class SelfPersistentSend final : public PendingOp {
 public:
  SelfPersistentSend(std::shared_ptr<SelfChannel> channel, std::shared_ptr<const TypePlan> plan,
                     const void* buf, int count, MPI_Datatype type, int tag, MPI_Comm comm,
                     int rank)
      : channel_(std::move(channel)),
        plan_(std::move(plan)),
        buf_(buf),
        count_(count),
        type_(type),
        tag_(tag),
        comm_(comm),
        rank_(rank) {}
  int on_start() override {
    int rc = MPI_SUCCESS;
    if (channel_->send(buf_, count_, type_, tag_, nullptr, &rc)) return rc;
    StagingBuffer packed(static_cast<size_t>(count_) * static_cast<size_t>(plan_->plan.size()));
    {
      KernelTimer timer(exec::kPackTime);
      exec::pack(plan_->plan, buf_, count_, packed.data(), exec::MemoryKind::Host);
    }
    MPI_Request send = MPI_REQUEST_NULL;
    rc = host().Isend(packed.data(), static_cast<int>(packed.size()), MPI_PACKED, rank_, tag_,
                      comm_, &send);
    if (rc == MPI_SUCCESS) detach_request(send, std::make_unique<HeldStaging>(std::move(packed)));
    return rc;
  }
  int on_complete(MPI_Status*) override { return MPI_SUCCESS; }
  bool persistent() const override { return true; }

 private:
  std::shared_ptr<SelfChannel> channel_;
  std::shared_ptr<const TypePlan> plan_;  // the user may free the datatype meanwhile
  const void* buf_;
  int count_;
  MPI_Datatype type_;
  int tag_;
  MPI_Comm comm_;
  int rank_;
};

}  // namespace

bool SelfChannel::send_init(const void* buf, int count, MPI_Datatype type, int tag,
                            MPI_Request* request, int* rc) {
  int64_t bytes = 0;
  std::shared_ptr<const TypePlan> plan = plan_for(buf, count, type, &bytes);
  if (!plan || !valid_tag(tag, false) || !active_) {
    demote();
    return false;
  }
  *rc = host().Send_init(nullptr, 0, MPI_BYTE, MPI_PROC_NULL, tag, comm_, request);
  if (*rc == MPI_SUCCESS)
    track_request(*request,
                  std::make_unique<SelfPersistentSend>(shared_from_this(), std::move(plan), buf,
                                                       count, type, tag, comm_, rank_));
  return true;
}

bool SelfChannel::receive_init(void* buf, int count, MPI_Datatype type, int tag,
                               MPI_Request* request, int* rc) {
  int64_t capacity = 0;
  std::shared_ptr<const TypePlan> plan = plan_for(buf, count, type, &capacity);
  if (!plan || !valid_tag(tag, true) || !active_) {
    demote();
    return false;
  }
  // As bytes into staging, for the same reason as a pending receive (receive(), above).
  StagingBuffer staging(static_cast<size_t>(capacity));
  *rc = host().Recv_init(staging.data(), static_cast<int>(capacity), MPI_PACKED, rank_, tag, comm_,
                         request);
  if (*rc == MPI_SUCCESS)
    track_request(*request, std::make_unique<SelfReceive>(shared_from_this(), std::move(plan), buf,
                                                          count, std::move(staging), tag));
  return true;
}

void SelfChannel::start_receive(SelfReceive* receive, MPI_Request request, int tag, void* buf,
                                int count, const std::shared_ptr<const TypePlan>& plan) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (!active_) return;  // the host's receive, as posted, gets the message
  const int64_t capacity = static_cast<int64_t>(count) * plan->plan.size();
  for (auto it = queued_.begin(); it != queued_.end(); ++it) {
    if (!tags_match(tag, it->tag)) continue;
    Queued message = std::move(*it);
    queued_.erase(it);
    const int64_t bytes = static_cast<int64_t>(message.packed.size());
    lock.unlock();
    if (bytes > capacity) {
      // Too long: into the host's receive, just posted and the only one that can match it
      // first, which reports the truncation as it would.
      MPI_Request send = MPI_REQUEST_NULL;
      if (host().Isend(message.packed.data(), static_cast<int>(bytes), MPI_PACKED, rank_,
                       message.tag, comm_, &send) == MPI_SUCCESS)
        detach_request(send, std::make_unique<HeldStaging>(std::move(message.packed)));
      return;
    }
    unpack_received(*plan, message.packed.data(), bytes, buf, count, false);
    count_call(kDelivered, kDeliveredBytes, static_cast<uint64_t>(bytes));
    // Withdrawn at once: no message to oneself is in the host, so nothing matched it first.
    host().Cancel(&request);
    receive->delivered(rank_, message.tag, bytes);
    return;
  }
  pending_.push_back({request, tag, buf, count, plan, receive});
}

bool SelfChannel::probe(int tag, MPI_Status* status) {
  if (!valid_tag(tag, true)) return false;
  std::lock_guard<std::mutex> lock(mutex_);
  for (const Queued& message : queued_)
    if (tags_match(tag, message.tag)) {
      fill_status(status, rank_, message.tag, static_cast<int64_t>(message.packed.size()));
      return true;
    }
  return false;
}

}  // namespace loom::transport
