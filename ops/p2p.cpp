// Point-to-point family. A message whose datatype Loom has a (non-dense) plan for, and for
// which the method model prefers packing, is packed by Loom into a staging buffer and
// travels as `bytes` MPI_PACKED on the user's communicator with the user's tag: one
// ordinary message, so matching, wildcards, ordering and the receiver's choice of type
// are untouched. Receives with such a type land as MPI_PACKED in staging and are unpacked.
// Statuses count bytes in both MPIs, so MPI_Get_count/MPI_Get_elements with the user's
// type give the user's answer. Everything else goes straight to the host.
#include <chrono>
#include <climits>
#include <cstring>
#include <memory>
#include <vector>

#include "exec/execute.hpp"
#include "mpi/host.hpp"
#include "mpi/locality.hpp"
#include "mpi/quirks.hpp"
#include "mpi/requests.hpp"
#include "mpi/type_decode.hpp"
#include "mpi/type_registry.hpp"
#include "ops/method.hpp"
#include "ops/p2p.hpp"
#include "runtime/counters.hpp"
#include "transport/seamed_wire.hpp"
#include "transport/select.hpp"
#include "transport/staging.hpp"

namespace loom::ops {
using namespace loom::runtime;    // NOLINT: the layers below
using namespace loom::exec;       // NOLINT: the layers below
using namespace loom::mpi;        // NOLINT: the layers below
using namespace loom::transport;  // NOLINT: the layers below
namespace {

// How one side of a message travels: `plan` set means Loom packs `bytes` bytes.
struct Route {
  const TypePlan* plan = nullptr;
  int64_t bytes = 0;
  // A blocking message of a kind whose method is still being tried (method.hpp,
  // choose_online): the call's duration is reported, whichever way it travels.
  const TypePlan* trial = nullptr;
  int trial_slot = -1;
  model::Locality where = model::Locality::SameNode;
  bool device = false;  // the user's buffer is device memory: Loom stages it, whatever its type
  // > 0: a device send the model leaves to the host's engine travels as a host copy of this
  // span of the buffer, sent with the user's datatype (exec::host_copy_applies).
  int64_t span_lo = 0, span_bytes = 0;
  // A committed type Loom has not planned yet: the host serves the message as written, and the
  // call's duration counts towards the type's plan (host_call).
  UnplannedType* unplanned = nullptr;
  int64_t elements = 0;  // unplanned: the message's elements
  explicit operator bool() const { return plan != nullptr; }
};

// The host's call for a message whose sides (`type` with `r`, and `other_type` with `other`, for a
// send-receive) may be types Loom has not planned yet: timed when one is (UnplannedCall).
// Inline, so that the untimed call stays a tail call.
template <typename Call>
[[gnu::always_inline]] inline int host_call(MPI_Datatype type, const Route& r, Call&& call,
                                            MPI_Datatype other_type = MPI_DATATYPE_NULL,
                                            const Route& other = Route{}) {
  UnplannedCall timed;
  if (r.unplanned) timed.add(type, r.unplanned, r.elements);
  if (other.unplanned) timed.add(other_type, other.unplanned, other.elements);
  return timed.run(call);
}

// The same for a non-blocking call whose request the host returns: the completion call that
// completes it credits the rest of the message's host time (run_unplanned_nonblocking).
template <typename Call>
[[gnu::always_inline]] inline int host_call_later(MPI_Datatype type, const Route& r,
                                                  MPI_Request* request, Call&& call) {
  if (r.unplanned) return run_unplanned_nonblocking(type, *r.unplanned, r.elements, request, call);
  return call();
}

// Blocking calls are one-way traffic for the model; non-blocking and send-receive calls are
// exchanges, where the peer is taken to send at the same time (model/model.hpp, Traffic).
constexpr model::Traffic kBlocking = model::Traffic::OneWay;
constexpr model::Traffic kOverlapping = model::Traffic::Exchange;
// Timed messages check the model online (method.hpp, choose_online): MPI_Send and MPI_Ssend
// by their call's duration, MPI_Recv, MPI_Isend, MPI_Issend and MPI_Irecv by the interval
// between posts of the kind. Buffered and ready sends return before the message is
// delivered, and persistent, matched and send-receive calls mix other work into their
// time, so they follow the kind's settled choice without adding to it.
enum class Timing : bool { Untimed, Timed };

// A persistent request's route is fixed when it is made (MPI_Send_init, MPI_Recv_init): a type
// not planned yet is planned then (Planning::Now), or none of its starts could be Loom's.
// Persistence says the request will be started again and again.
enum class Planning : bool { WhenPaid, Now };

// A device buffer: a host that cannot read device memory gets packed bytes.
[[gnu::noinline]] Route device_route(const TypePlan& plan, int elements, MPI_Comm comm, int peer,
                                     bool send, model::Traffic traffic) {
  if (plan.plan.dense() && device_aware_host) return {};
  Route r;
  r.plan = &plan;
  r.device = true;
  // Beyond an int count too (PackedWire): the host must never see the device pointer.
  r.bytes = static_cast<int64_t>(elements) * plan.plan.size();
  int64_t lo = 0, span = 0;
  if (send && host_copy_applies(plan.plan, elements, &lo, &span)) {
    r.where = transport::host_locality(comm, peer);
    if (choose_method(plan, r.bytes, r.where, traffic) == model::Method::Host)
      r.span_lo = lo, r.span_bytes = span;
  }
  return r;
}

// A committed type not planned yet whose call cannot wait for the plan: device memory, which only
// Loom's staging keeps from a host that cannot read it, or a message that pays for the plan alone
// (worth_planning_before). Out of line: the unplanned path stays small.
[[gnu::noinline]] bool plan_before_call(MPI_Datatype type, const UnplannedType& unplanned,
                                        const void* buf, int elements) {
  return device_memory(buf) || worth_planning_before(unplanned, elements);
}

// Loom's path needs a non-dense plan, a packed size that fits an int count, a real peer,
// and the model's (or LOOM_METHOD's) consent. `peer` may be MPI_ANY_SOURCE; `buf` may be
// MPI_BOTTOM (absolute addresses: Loom's kernels take a null base). A type Loom has not planned
// yet goes to the host with Route::unplanned set. Every message is counted on its route. Inline:
// every derived-type message asks, and a call with a Route to return costs as much as the settled
// choice itself.
[[gnu::always_inline]] inline Route route(const void* buf, int elements, MPI_Datatype type,
                                          MPI_Comm comm, int peer, bool send,
                                          model::Traffic traffic, Timing timing = Timing::Untimed,
                                          Planning planning = Planning::WhenPaid) {
  if (elements == 0 || peer == MPI_PROC_NULL) {
    count(send ? transport::kSendPlain : transport::kRecvPlain);
    return {};
  }
  if (elements < 0 || comm == MPI_COMM_NULL) {  // the host reports the error
    count(send ? transport::kSendHost : transport::kRecvHost);
    return {};
  }
  TypeUse use = use_type(type);
  if (use.unplanned) {
    if (planning == Planning::WhenPaid && !plan_before_call(type, *use.unplanned, buf, elements)) {
      count(send ? transport::kSendUnplanned : transport::kRecvUnplanned);
      Route r;
      r.unplanned = use.unplanned;
      r.elements = elements;
      return r;
    }
    use.plan = plan_now(type);
  }
  const TypePlan* plan = use.plan;
  if (plan && device_memory(buf)) [[unlikely]]
    return device_route(*plan, elements, comm, peer, send, traffic);
  if (!plan) {
    if (!config().disabled) count(send ? transport::kSendHost : transport::kRecvHost);
    return {};
  }
  count_planned_message(*plan);
  if (plan->plan.dense()) {
    count(send ? transport::kSendPlain : transport::kRecvPlain);
    return {};
  }
  if (send && plan->mixed_basic_types && !mpi::host_receives_packed_into_mixed_types()) {
    count(transport::kSendHost);
    return {};
  }
  const int64_t bytes = static_cast<int64_t>(elements) * plan->plan.size();
  if (bytes <= 0 || bytes > INT_MAX) {
    count(send ? transport::kSendHost : transport::kRecvHost);
    return {};
  }
  Route r;
  r.where = transport::host_locality(comm, peer);
  const OnlineChoice choice = choose_online(
      *plan, bytes, r.where, traffic, send ? Side::Send : Side::Receive, timing == Timing::Timed);
  if (choice.trial_slot >= 0) {
    r.trial = plan;
    r.trial_slot = choice.trial_slot;
  }
  r.bytes = bytes;
  if (choice.method != model::Method::Pack) {
    count(send ? transport::kSendHost : transport::kRecvHost);
    return r;
  }
  r.plan = plan;
  return r;
}

// Counts one side of a call the host serves as written without asking route() (an MPI-4
// non-blocking send-receive, the receive of a send-receive-replace): the route it would count.
void count_host_side(int elements, MPI_Datatype type, int peer, bool send) {
  if (config().disabled) return;
  const TypeUse use = elements == 0 || peer == MPI_PROC_NULL ? TypeUse{} : use_type(type);
  const bool plain = elements == 0 || peer == MPI_PROC_NULL || (use.plan && use.plan->plan.dense());
  if (plain)
    count(send ? transport::kSendPlain : transport::kRecvPlain);
  else if (use.unplanned)
    count(send ? transport::kSendUnplanned : transport::kRecvUnplanned);
  else
    count(send ? transport::kSendHost : transport::kRecvHost);
}

// Reports a tried blocking send's duration when the call returns. Only tried messages
// (Route::trial set) get one: a clock read would add to every small message.
class TrialClock {
 public:
  explicit TrialClock(const Route& r) : route_(r), start_(std::chrono::steady_clock::now()) {}
  ~TrialClock() {
    const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start_;
    report_trial(*route_.trial, route_.bytes, route_.where, kBlocking, Side::Send,
                 {route_.plan ? model::Method::Pack : model::Method::Host, route_.trial_slot},
                 took.count() + extra_);
  }
  // A packed send returns before the receiver unpacks, while the host's own send returns once
  // the receiver's engine has the data: the sender charges the pack path its own packing time
  // again, for the receiver's unpacking of the same bytes.
  void charge_packing_since(std::chrono::steady_clock::time_point start) {
    extra_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  TrialClock(const TrialClock&) = delete;
  TrialClock& operator=(const TrialClock&) = delete;

 private:
  const Route& route_;
  std::chrono::steady_clock::time_point start_;
  double extra_ = 0;
};

bool stages_on_stack(const Route& r) {
  return !r.device && r.bytes <= kStackStagingBytes;
}

void pack_into(const Route& r, const void* buf, int count, char* out) {
  {
    KernelTimer timer(kPackTime);
    exec::pack(r.plan->plan, buf, count, out,
               r.device ? exec::MemoryKind::UserDevice : exec::MemoryKind::Host);
  }
  count_call(transport::kSendPacked, transport::kSendBytes, static_cast<uint64_t>(r.bytes));
}

// `slack`: bytes the buffer holds beyond the packed ones (a seamed wire's gap).
StagingBuffer pack_to_staging(const Route& r, const void* buf, int count, int64_t slack = 0) {
  StagingBuffer staging(static_cast<size_t>(r.bytes + slack), r.device);
  pack_into(r, buf, count, staging.data());
  return staging;
}

// What the host sends for a message on Loom's route: the packed bytes as MPI_PACKED, or a
// device buffer's host copy sent with the user's datatype (Route::span_bytes).
struct Outgoing {
  StagingBuffer staging;
  PackedWire wire;
  const void* buf = nullptr;
  int count = 0;
  MPI_Datatype type = MPI_PACKED;
};

// `seam_allowed`: not for buffered sends, whose attached buffer was sized for the user's type.
Outgoing stage_send(const Route& r, const void* buf, int elements, MPI_Datatype type,
                    bool seam_allowed) {
  Outgoing out;
  if (r.span_bytes > 0) {
    out.staging = StagingBuffer(static_cast<size_t>(r.span_bytes), true);
    exec::copy_span_to_host(static_cast<const char*>(buf) + r.span_lo, r.span_bytes,
                            out.staging.data());
    out.buf = out.staging.data() - r.span_lo;
    out.count = elements;
    out.type = type;
    count(transport::kSendHost);
    return out;
  }
  const MPI_Datatype seamed = seam_allowed ? seamed_wire_type(r.bytes) : MPI_DATATYPE_NULL;
  out.staging = pack_to_staging(r, buf, elements, seamed != MPI_DATATYPE_NULL ? kSeamGap : 0);
  out.buf = out.staging.data();
  if (seamed != MPI_DATATYPE_NULL) {
    open_seam(out.staging.data(), r.bytes);
    out.count = 1;
    out.type = seamed;
    return out;
  }
  out.wire = PackedWire(r.bytes);
  out.count = out.wire.count();
  out.type = out.wire.type();
  return out;
}

class StagedRecv final : public PendingOp {
 public:
  // `whole_bytes` >= 0: the host's status does not say how many bytes arrived, and the staging
  // buffer held the user's own data packed before: unpack all of it.
  StagedRecv(std::shared_ptr<const TypePlan> type, void* buf, int count, StagingBuffer staging,
             bool persistent, bool device, int64_t whole_bytes = -1)
      : type_(std::move(type)),
        buf_(buf),
        count_(count),
        staging_(std::move(staging)),
        persistent_(persistent),
        device_(device),
        whole_bytes_(whole_bytes) {}
  int on_complete(MPI_Status* status) override {
    const int64_t received =
        whole_bytes_ >= 0 ? whole_bytes_ : received_bytes(*status, status->MPI_ERROR);
    unpack_received(*type_, staging_.data(), received, buf_, count_, true, device_);
    return MPI_SUCCESS;
  }
  bool persistent() const override { return persistent_; }

 private:
  std::shared_ptr<const TypePlan> type_;  // the user may free the datatype meanwhile
  void* buf_;
  int count_;
  StagingBuffer staging_;
  bool persistent_;
  bool device_;  // buf_ is device memory
  int64_t whole_bytes_;
};

// Persistent send: every MPI_Start packs the user's current data.
class PersistentSend final : public PendingOp {
 public:
  // `seamed`: the request sends a seamed wire type (transport/seamed_wire.hpp).
  PersistentSend(std::shared_ptr<const TypePlan> type, const void* buf, int count,
                 StagingBuffer staging, int64_t bytes, bool device, bool seamed)
      : type_(std::move(type)),
        buf_(buf),
        count_(count),
        staging_(std::move(staging)),
        bytes_(bytes),
        kind_(device ? exec::MemoryKind::UserDevice : exec::MemoryKind::Host),
        seamed_(seamed) {}
  int on_start() override {
    {
      KernelTimer timer(kPackTime);
      exec::pack(type_->plan, buf_, count_, staging_.data(), kind_);
    }
    if (seamed_) open_seam(staging_.data(), bytes_);
    count_call(transport::kSendPacked, transport::kSendBytes, static_cast<uint64_t>(bytes_));
    return MPI_SUCCESS;
  }
  int on_complete(MPI_Status*) override { return MPI_SUCCESS; }
  bool persistent() const override { return true; }

 private:
  std::shared_ptr<const TypePlan> type_;
  const void* buf_;
  int count_;
  StagingBuffer staging_;
  int64_t bytes_;
  exec::MemoryKind kind_;
  bool seamed_;
};

using BlockingSend = decltype(HostMpi::Send);
using NonblockingSend = decltype(HostMpi::Isend);
using PersistentInit = decltype(HostMpi::Send_init);

// A blocking send on its route; `clock` is set for a tried message (see Route::trial).
int send_on_route(BlockingSend host_send, const Route& r, TrialClock* clock, const void* buf,
                  int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm) {
  if (!r) return host_send(buf, count, type, dest, tag, comm);
  const auto packing =
      clock ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
  if (stages_on_stack(r)) {
    alignas(64) char staged[kStackStagingBytes];
    pack_into(r, buf, count, staged);
    if (clock) clock->charge_packing_since(packing);
    return host_send(staged, static_cast<int>(r.bytes), MPI_PACKED, dest, tag, comm);
  }
  const Outgoing out = stage_send(r, buf, count, type, host_send != host().Bsend);
  if (clock) clock->charge_packing_since(packing);
  return host_send(out.buf, out.count, out.type, dest, tag, comm);
}

// Inline into each mode's entry, so that its host call is a direct one.
[[gnu::always_inline]] inline int blocking_send(BlockingSend host_send, Timing timing,
                                                const void* buf, int count, MPI_Datatype type,
                                                int dest, int tag, MPI_Comm comm) {
  if (SelfChannel* self = transport::self_for_send(comm, dest, buf)) {
    // Standard, ready and synchronous sends to oneself (a synchronous one only into a posted
    // receive); buffered ones keep the host's semantics (the attached buffer).
    const bool synchronous = host_send == host().Ssend;
    int rc = MPI_SUCCESS;
    if ((host_send == host().Send || host_send == host().Rsend || synchronous) &&
        self->send(
            buf, count, type, tag, nullptr, &rc,
            synchronous ? SelfChannel::SendMode::Synchronous : SelfChannel::SendMode::Standard))
      return rc;
    self->demote();
  }
  const Route r = route(buf, count, type, comm, dest, true, kBlocking, timing);
  // Untried messages take no clock: the pass-through stays a tail call.
  if (!r.trial) {
    if (!r) return host_call(type, r, [&] { return host_send(buf, count, type, dest, tag, comm); });
    return send_on_route(host_send, r, nullptr, buf, count, type, dest, tag, comm);
  }
  TrialClock clock(r);
  return send_on_route(host_send, r, &clock, buf, count, type, dest, tag, comm);
}

int nonblocking_send(NonblockingSend host_send, Timing timing, const void* buf, int count,
                     MPI_Datatype type, int dest, int tag, MPI_Comm comm, MPI_Request* request) {
  if (SelfChannel* self = transport::self_for_send(comm, dest, buf)) {
    const bool synchronous = host_send == host().Issend;
    int rc = MPI_SUCCESS;
    if ((host_send == host().Isend || host_send == host().Irsend || synchronous) && request &&
        self->send(
            buf, count, type, tag, request, &rc,
            synchronous ? SelfChannel::SendMode::Synchronous : SelfChannel::SendMode::Standard))
      return rc;
    self->demote();
  }
  const Route r = route(buf, count, type, comm, dest, true, kOverlapping, timing);
  if (!r || !request)
    return host_call_later(type, r, request,
                           [&] { return host_send(buf, count, type, dest, tag, comm, request); });
  Outgoing out = stage_send(r, buf, count, type, host_send != host().Ibsend);
  const int rc = host_send(out.buf, out.count, out.type, dest, tag, comm, request);
  if (rc == MPI_SUCCESS)
    track_request(*request, std::make_unique<HeldStaging>(std::move(out.staging)));
  return rc;
}

int persistent_send(PersistentInit host_init, const void* buf, int count, MPI_Datatype type,
                    int dest, int tag, MPI_Comm comm, MPI_Request* request) {
  if (SelfChannel* self = transport::self_for_send(comm, dest, buf)) {
    // Standard and ready sends to oneself; synchronous and buffered ones keep the host's
    // semantics (completion at the match, the attached buffer).
    int rc = MPI_SUCCESS;
    if ((host_init == host().Send_init || host_init == host().Rsend_init) && request &&
        self->send_init(buf, count, type, tag, request, &rc))
      return rc;
    self->demote();
  }
  Route r = route(buf, count, type, comm, dest, true, kOverlapping, Timing::Untimed, Planning::Now);
  r.span_bytes = 0;  // every MPI_Start packs into the one staging buffer
  std::shared_ptr<const TypePlan> shared = r ? share_plan(type) : nullptr;
  if (!shared || !request) return host_init(buf, count, type, dest, tag, comm, request);
  // Buffered sends keep a contiguous wire: their attached buffer was sized for the user's type.
  const MPI_Datatype seamed =
      host_init != host().Bsend_init ? seamed_wire_type(r.bytes) : MPI_DATATYPE_NULL;
  const bool seam = seamed != MPI_DATATYPE_NULL;
  StagingBuffer staging(static_cast<size_t>(r.bytes + (seam ? kSeamGap : 0)), r.device);
  const PackedWire wire(r.bytes);
  const int rc =
      seam ? host_init(staging.data(), 1, seamed, dest, tag, comm, request)
           : host_init(staging.data(), wire.count(), wire.type(), dest, tag, comm, request);
  if (rc == MPI_SUCCESS)
    track_request(*request,
                  std::make_unique<PersistentSend>(std::move(shared), buf, count,
                                                   std::move(staging), r.bytes, r.device, seam));
  return rc;
}

// The status a blocking receive fills: the user's own (so fields the host leaves alone
// stay alone), or scratch when the user ignores it, since unpacking needs the count.
class StatusSlot {
 public:
  explicit StatusSlot(MPI_Status* user) : status_(user != MPI_STATUS_IGNORE ? user : &scratch_) {}
  MPI_Status* get() { return status_; }

 private:
  MPI_Status scratch_;
  MPI_Status* status_;
};

// A blocking receive of packed bytes into `staged`, then unpacked.
int receive_staged(const Route& r, char* staged, void* buf, int count, int source, int tag,
                   MPI_Comm comm, MPI_Status* status) {
  StatusSlot slot(status);
  const PackedWire wire(r.bytes);
  const int rc = host().Recv(staged, wire.count(), wire.type(), source, tag, comm, slot.get());
  unpack_received(*r.plan, staged, received_bytes(*slot.get(), rc), buf, count, true, r.device);
  return rc;
}

// A blocking receive on its route.
int receive_on_route(const Route& r, void* buf, int count, MPI_Datatype type, int source, int tag,
                     MPI_Comm comm, MPI_Status* status) {
  if (!r) return host().Recv(buf, count, type, source, tag, comm, status);
  if (stages_on_stack(r)) {
    alignas(64) char staged[kStackStagingBytes];
    return receive_staged(r, staged, buf, count, source, tag, comm, status);
  }
  StagingBuffer staging(static_cast<size_t>(r.bytes), r.device);
  return receive_staged(r, staging.data(), buf, count, source, tag, comm, status);
}

using LaterReceive = decltype(HostMpi::Irecv);

// A non-blocking (`host_receive`: the host's MPI_Irecv) or persistent (MPI_Recv_init,
// `persistent`) receive on its route: packed bytes into staging, unpacked when the request
// completes (each time, for a persistent one). Inlined, so that each entry keeps its direct
// host call.
[[gnu::always_inline]] inline int receive_later(LaterReceive host_receive, bool persistent,
                                                const Route& r, void* buf, int count,
                                                MPI_Datatype type, int source, int tag,
                                                MPI_Comm comm, MPI_Request* request) {
  std::shared_ptr<const TypePlan> shared = r ? share_plan(type) : nullptr;
  if (!shared || !request) {
    // A persistent receive's set-up moves no data: not time towards the type's plan.
    if (persistent) return host_receive(buf, count, type, source, tag, comm, request);
    return host_call_later(type, r, request, [&] {
      return host_receive(buf, count, type, source, tag, comm, request);
    });
  }
  StagingBuffer staging(static_cast<size_t>(r.bytes), r.device);
  const PackedWire wire(r.bytes);
  const int rc =
      host_receive(staging.data(), wire.count(), wire.type(), source, tag, comm, request);
  if (rc == MPI_SUCCESS)
    track_request(*request, std::make_unique<StagedRecv>(std::move(shared), buf, count,
                                                         std::move(staging), persistent, r.device));
  return rc;
}

}  // namespace

int send(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm) {
  return blocking_send(host().Send, Timing::Timed, buf, count, type, dest, tag, comm);
}
int ssend(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm) {
  return blocking_send(host().Ssend, Timing::Timed, buf, count, type, dest, tag, comm);
}
int rsend(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm) {
  return blocking_send(host().Rsend, Timing::Untimed, buf, count, type, dest, tag, comm);
}
// The host copies a buffered send into the attached buffer before returning, so the
// staging buffer can go at once (the packed size never exceeds MPI_Pack_size's answer).
int bsend(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm) {
  return blocking_send(host().Bsend, Timing::Untimed, buf, count, type, dest, tag, comm);
}

int isend(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
          MPI_Request* request) {
  return nonblocking_send(host().Isend, Timing::Timed, buf, count, type, dest, tag, comm, request);
}
int issend(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
           MPI_Request* request) {
  return nonblocking_send(host().Issend, Timing::Timed, buf, count, type, dest, tag, comm, request);
}
int irsend(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
           MPI_Request* request) {
  return nonblocking_send(host().Irsend, Timing::Untimed, buf, count, type, dest, tag, comm,
                          request);
}
int ibsend(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
           MPI_Request* request) {
  return nonblocking_send(host().Ibsend, Timing::Untimed, buf, count, type, dest, tag, comm,
                          request);
}

int send_init(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
              MPI_Request* request) {
  return persistent_send(host().Send_init, buf, count, type, dest, tag, comm, request);
}
int ssend_init(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
               MPI_Request* request) {
  return persistent_send(host().Ssend_init, buf, count, type, dest, tag, comm, request);
}
int rsend_init(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
               MPI_Request* request) {
  return persistent_send(host().Rsend_init, buf, count, type, dest, tag, comm, request);
}
int bsend_init(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
               MPI_Request* request) {
  return persistent_send(host().Bsend_init, buf, count, type, dest, tag, comm, request);
}

int recv(void* buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
         MPI_Status* status) {
  if (SelfChannel* self = transport::self_for_receive(comm, source, buf)) {
    int rc = MPI_SUCCESS;
    if (self->receive(buf, count, type, tag, nullptr, status, &rc)) return rc;
  }
  // Timed by the interval between posts of its kind, inside route() (method.hpp).
  const Route r = route(buf, count, type, comm, source, false, kBlocking, Timing::Timed);
  if (!r)
    return host_call(type, r,
                     [&] { return host().Recv(buf, count, type, source, tag, comm, status); });
  return receive_on_route(r, buf, count, type, source, tag, comm, status);
}

int irecv(void* buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
          MPI_Request* request) {
  if (SelfChannel* self = transport::self_for_receive(comm, source, buf); self && request) {
    int rc = MPI_SUCCESS;
    if (self->receive(buf, count, type, tag, request, MPI_STATUS_IGNORE, &rc)) return rc;
  }
  const Route r = route(buf, count, type, comm, source, false, kOverlapping, Timing::Timed);
  return receive_later(host().Irecv, false, r, buf, count, type, source, tag, comm, request);
}

int recv_init(void* buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
              MPI_Request* request) {
  if (SelfChannel* self = transport::self_for_receive(comm, source, buf); self && request) {
    int rc = MPI_SUCCESS;
    if (self->receive_init(buf, count, type, tag, request, &rc)) return rc;
  }
  const Route r =
      route(buf, count, type, comm, source, false, kOverlapping, Timing::Untimed, Planning::Now);
  return receive_later(host().Recv_init, true, r, buf, count, type, source, tag, comm, request);
}

int sendrecv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, int dest, int sendtag,
             void* recvbuf, int recvcount, MPI_Datatype recvtype, int source, int recvtag,
             MPI_Comm comm, MPI_Status* status) {
  if (transport::self_for_send(comm, dest, sendbuf) ||
      transport::self_for_receive(comm, source, recvbuf)) {
    // With oneself on either side: the receive, the send and their completion as separate
    // calls, so that the channel serves the side that is this process. Each is decided as its
    // entry point decides it (interpose/p2p.cpp, interpose/requests.cpp).
    MPI_Request requests[2];
    int rc = passes_through(recvbuf, recvtype, comm, source)
                 ? host().Irecv(recvbuf, recvcount, recvtype, source, recvtag, comm, &requests[0])
                 : irecv(recvbuf, recvcount, recvtype, source, recvtag, comm, &requests[0]);
    if (rc != MPI_SUCCESS) return rc;
    rc = passes_through(sendbuf, sendtype, comm, dest)
             ? host().Isend(sendbuf, sendcount, sendtype, dest, sendtag, comm, &requests[1])
             : isend(sendbuf, sendcount, sendtype, dest, sendtag, comm, &requests[1]);
    if (rc != MPI_SUCCESS) {
      cancel(&requests[0]);
      mpi::wait(&requests[0], MPI_STATUS_IGNORE);
      return rc;
    }
    MPI_Status statuses[2];
    rc = mpi::waitall(2, requests, statuses);
    if (status != MPI_STATUS_IGNORE) *status = statuses[0];
    if (rc == MPI_ERR_IN_STATUS)
      rc = statuses[0].MPI_ERROR != MPI_SUCCESS ? statuses[0].MPI_ERROR : statuses[1].MPI_ERROR;
    return rc;
  }
  const Route send = route(sendbuf, sendcount, sendtype, comm, dest, true, kOverlapping);
  const Route recv = route(recvbuf, recvcount, recvtype, comm, source, false, kOverlapping);
  if (!send && !recv)
    return host_call(
        sendtype, send,
        [&] {
          return host().Sendrecv(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount,
                                 recvtype, source, recvtag, comm, status);
        },
        recvtype, recv);
  Outgoing out;
  if (send)
    out = stage_send(send, sendbuf, sendcount, sendtype, true);
  else
    out.buf = sendbuf, out.count = sendcount, out.type = sendtype;
  StagingBuffer packed_recv(recv ? static_cast<size_t>(recv.bytes) : 0, recv.device);
  const PackedWire recv_wire(recv ? recv.bytes : 0);
  StatusSlot slot(status);
  const int rc =
      host().Sendrecv(out.buf, out.count, out.type, dest, sendtag,
                      recv ? packed_recv.data() : recvbuf, recv ? recv_wire.count() : recvcount,
                      recv ? recv_wire.type() : recvtype, source, recvtag, comm, slot.get());
  if (recv)
    unpack_received(*recv.plan, packed_recv.data(), received_bytes(*slot.get(), rc), recvbuf,
                    recvcount, true, recv.device);
  return rc;
}

int sendrecv_replace(void* buf, int count, MPI_Datatype type, int dest, int sendtag, int source,
                     int recvtag, MPI_Comm comm, MPI_Status* status) {
  if (SelfChannel* self = transport::self_for_send(comm, dest, buf)) self->demote();
  if (SelfChannel* self = transport::self_for_receive(comm, source)) self->demote();
  // One buffer and one type serve both directions; packing pays off if it does for the send.
  Route r = route(buf, count, type, comm, dest, true, kOverlapping);
  r.span_bytes = 0;  // the reply lands in the same staging buffer, packed
  if (!r || source == MPI_PROC_NULL) {
    count_host_side(count, type, source, false);
    return host_call(type, r, [&] {
      return host().Sendrecv_replace(buf, count, type, dest, sendtag, source, recvtag, comm,
                                     status);
    });
  }
  StagingBuffer staging = pack_to_staging(r, buf, count);
  const PackedWire wire(r.bytes);
  StatusSlot slot(status);
  const int rc = host().Sendrecv_replace(staging.data(), wire.count(), wire.type(), dest, sendtag,
                                         source, recvtag, comm, slot.get());
  unpack_received(*r.plan, staging.data(), received_bytes(*slot.get(), rc), buf, count, true,
                  r.device);
  return rc;
}

#if MPI_VERSION >= 4
namespace {

// MPICH before 4.3 releases the send side's datatype once more than it took in
// MPI_Isendrecv(_replace) (pmodels/mpich#7098): a derived type is freed when the request
// completes, under its owner, and its next use crashes. There the host gets a duplicate of its
// own to free; a named type it cannot free. (LOOM_DISABLE=1 leaves the host's bugs as they are.)
MPI_Datatype isendrecv_send_type(MPI_Datatype type) {
  if (config().disabled || !host_isendrecv_releases_derived_types() || type == MPI_DATATYPE_NULL ||
      is_named(type))
    return type;
  MPI_Datatype duplicate = MPI_DATATYPE_NULL;
  return PMPI_Type_dup(type, &duplicate) == MPI_SUCCESS ? duplicate : type;
}

}  // namespace

// MPI-4's non-blocking send-receive runs on the host as written: one request covers both sides,
// and MPICH 4.0's status for it says nothing of what arrived (count 0, tag 0), which Loom's
// unpacking would need. Messages to oneself therefore go to the host too (the self channel is
// demoted, as for MPI_Sendrecv_replace).
int isendrecv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, int dest, int sendtag,
              void* recvbuf, int recvcount, MPI_Datatype recvtype, int source, int recvtag,
              MPI_Comm comm, MPI_Request* request) {
  if (SelfChannel* self = transport::self_for_send(comm, dest, sendbuf)) self->demote();
  if (SelfChannel* self = transport::self_for_receive(comm, source)) self->demote();
  count_host_side(sendcount, sendtype, dest, true);
  count_host_side(recvcount, recvtype, source, false);
  return host().Isendrecv(sendbuf, sendcount, isendrecv_send_type(sendtype), dest, sendtag, recvbuf,
                          recvcount, recvtype, source, recvtag, comm, request);
}

// The same MPICH moves a non-contiguous type's bytes to the wrong places in
// MPI_Isendrecv_replace, so there Loom packs every such type it has a plan for, whatever the
// model says, and unpacks all of the staging buffer afterwards: bytes that did not arrive are
// the user's own, put back.
int isendrecv_replace(void* buf, int count, MPI_Datatype type, int dest, int sendtag, int source,
                      int recvtag, MPI_Comm comm, MPI_Request* request) {
  if (SelfChannel* self = transport::self_for_send(comm, dest, buf)) self->demote();
  if (SelfChannel* self = transport::self_for_receive(comm, source)) self->demote();
  const TypePlan* plan = !config().disabled && host_isendrecv_releases_derived_types() &&
                                 count > 0 && buf && request && dest != MPI_PROC_NULL &&
                                 source != MPI_PROC_NULL && !device_memory(buf)
                             ? plan_now(type)  // a workaround: it cannot wait for the plan
                             : nullptr;
  const int64_t bytes = plan ? static_cast<int64_t>(count) * plan->plan.size() : 0;
  std::shared_ptr<const TypePlan> shared =
      plan && !plan->plan.dense() && bytes <= INT_MAX ? share_plan(type) : nullptr;
  if (!shared) {
    count_host_side(count, type, dest, true);
    count_host_side(count, type, source, false);
    return host().Isendrecv_replace(buf, count, isendrecv_send_type(type), dest, sendtag, source,
                                    recvtag, comm, request);
  }
  Route r;
  r.plan = plan;
  r.bytes = bytes;
  StagingBuffer staging = pack_to_staging(r, buf, count);
  const PackedWire wire(bytes);
  const int rc =
      host().Isendrecv_replace(staging.data(), wire.count(), isendrecv_send_type(wire.type()), dest,
                               sendtag, source, recvtag, comm, request);
  if (rc == MPI_SUCCESS)
    track_request(*request, std::make_unique<StagedRecv>(std::move(shared), buf, count,
                                                         std::move(staging), false, false, bytes));
  return rc;
}
#endif

// Matched receives: the sender is known only from the message, so the model is asked
// for the worst locality in the job.
int mrecv(void* buf, int count, MPI_Datatype type, MPI_Message* message, MPI_Status* status) {
  const Route r = message && *message != MPI_MESSAGE_NO_PROC
                      ? route(buf, count, type, MPI_COMM_WORLD, MPI_ANY_SOURCE, false, kBlocking)
                      : (count_host_side(count, type, MPI_PROC_NULL, false), Route{});
  if (!r)
    return host_call(type, r, [&] { return host().Mrecv(buf, count, type, message, status); });
  StagingBuffer staging(static_cast<size_t>(r.bytes), r.device);
  const PackedWire wire(r.bytes);
  StatusSlot slot(status);
  const int rc = host().Mrecv(staging.data(), wire.count(), wire.type(), message, slot.get());
  unpack_received(*r.plan, staging.data(), received_bytes(*slot.get(), rc), buf, count, true,
                  r.device);
  return rc;
}

int imrecv(void* buf, int count, MPI_Datatype type, MPI_Message* message, MPI_Request* request) {
  const Route r = message && *message != MPI_MESSAGE_NO_PROC
                      ? route(buf, count, type, MPI_COMM_WORLD, MPI_ANY_SOURCE, false, kOverlapping)
                      : (count_host_side(count, type, MPI_PROC_NULL, false), Route{});
  std::shared_ptr<const TypePlan> shared = r ? share_plan(type) : nullptr;
  if (!shared || !request)
    return host_call_later(type, r, request,
                           [&] { return host().Imrecv(buf, count, type, message, request); });
  StagingBuffer staging(static_cast<size_t>(r.bytes), r.device);
  const PackedWire wire(r.bytes);
  const int rc = host().Imrecv(staging.data(), wire.count(), wire.type(), message, request);
  if (rc == MPI_SUCCESS)
    track_request(*request, std::make_unique<StagedRecv>(std::move(shared), buf, count,
                                                         std::move(staging), false, r.device));
  return rc;
}

// Probes see the messages a process sent to itself that Loom holds; matched probes and
// wildcard sources hand them to the host first (transport/self_channel.hpp).
int iprobe(int source, int tag, MPI_Comm comm, int* flag, MPI_Status* status) {
  if (SelfChannel* self = transport::self_for_receive(comm, source);
      self && flag && self->probe(tag, status)) {
    *flag = 1;
    return MPI_SUCCESS;
  }
  return host().Iprobe(source, tag, comm, flag, status);
}

int probe(int source, int tag, MPI_Comm comm, MPI_Status* status) {
  if (SelfChannel* self = transport::self_for_receive(comm, source);
      self && self->probe(tag, status))
    return MPI_SUCCESS;
  return host().Probe(source, tag, comm, status);
}

int improbe(int source, int tag, MPI_Comm comm, int* flag, MPI_Message* message,
            MPI_Status* status) {
  if (SelfChannel* self = transport::self_for_receive(comm, source)) self->demote();
  return host().Improbe(source, tag, comm, flag, message, status);
}

int mprobe(int source, int tag, MPI_Comm comm, MPI_Message* message, MPI_Status* status) {
  if (SelfChannel* self = transport::self_for_receive(comm, source)) self->demote();
  return host().Mprobe(source, tag, comm, message, status);
}

int cancel(MPI_Request* request) {
  if (request) withdraw_self_receive(*request);
  return host().Cancel(request);
}

}  // namespace loom::ops
