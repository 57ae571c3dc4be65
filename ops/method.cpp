#include "ops/method.hpp"

#include "base/env.hpp"
#include "base/side_heap.hpp"

#include <mpi.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>
#include <string_view>
#include <vector>

#include "loom/loom.h"
#include "mpi/quirks.hpp"
#include "mpi/requests.hpp"
#include "runtime/counters.hpp"

namespace loom::ops {
using namespace loom::runtime;  // NOLINT: the layers below
using namespace loom::mpi;      // NOLINT: the layers below
namespace {

// Kinds of message whose online trial started (past its wait: model/trial.hpp), kept the model's
// choice, or overturned it; and the trials' estimated cost.
const Counter kTrialsStarted = register_counter("p2p", "online trials", "started");
const Counter kTrialsKept = register_counter("p2p", "online trials", "kept");
const Counter kTrialsSwitched = register_counter("p2p", "online trials", "switched");
// Re-checks of settled kinds (MethodTrial::recheck_point), and those that changed the method.
const Counter kRechecks = register_counter("p2p", "online trials", "rechecked");
const Counter kRechecksSwitched = register_counter("p2p", "online trials", "recheck switched");
// Verdicts of packing confirmed on the kind's next messages (MethodTrial::confirm), and those
// that went to the host instead.
const Counter kConfirmations = register_counter("p2p", "online trials", "confirmed");
const Counter kConfirmationsSwitched = register_counter("p2p", "online trials", "confirm switched");
// Kinds whose host warm-up stopped early (MethodTrial::gauge_warmup): the host far behind.
const Counter kWarmupsStopped = register_counter("p2p", "online trials", "warm-ups stopped");
const Counter kTrialCost = register_counter("p2p", "online trials", "cost", Unit::Nanoseconds);

enum class Setting { Auto, Host, Pack };

Setting read_setting() {
  static constexpr base::EnvVar kMethod{"LOOM_METHOD", "auto",
                                        "host or pack: force the method of derived-type messages"};
  const char* text = base::read(kMethod);
  if (!text || !std::strcmp(text, "auto")) return Setting::Auto;
  model::Method forced;
  if (model::parse_method(text, &forced))
    return forced == model::Method::Pack ? Setting::Pack : Setting::Host;
  base::warn_bad_value(kMethod, text, "is not one of auto, host, pack", "using auto");
  return Setting::Auto;
}

[[gnu::always_inline]] inline Setting setting() {
  static const Setting s = read_setting();
  return s;
}

// Where Loom packs every message it can (LOOM_METHOD=pack, or a pinned Pack), every type needs its
// plan at its first use: lazy planning would send a type's first messages through the host.
void plan_types_for(Setting method_setting, int pinned) {
  mpi::plan_at_first_use(method_setting == Setting::Pack ||
                         pinned == static_cast<int>(model::Method::Pack));
}

// LOOM_TRIAL_WAIT: how many messages a kind runs on the model's choice before its trial; auto
// (-1): MethodTrial::wait_for of the model's predicted gap.
int read_trial_wait() {
  static constexpr base::EnvVar kTrialWait{
      "LOOM_TRIAL_WAIT", "auto",
      "messages of a kind before its online trial: auto (when the trial can pay) or a number"};
  const char* text = base::read(kTrialWait);
  if (!text || !std::strcmp(text, "auto")) return -1;
  char* end = nullptr;
  const long wait = std::strtol(text, &end, 10);
  if (end != text && *end == '\0' && wait >= 0 && wait <= INT_MAX) return static_cast<int>(wait);
  std::fprintf(stderr, "loom: LOOM_TRIAL_WAIT=%s is not auto or a number of messages; using auto\n",
               text);
  return -1;
}

int trial_wait_setting() {
  static const int wait = read_trial_wait();
  return wait;
}

const char* env_dir(const char* name) {
  const char* value = std::getenv(name);
  return value && *value ? value : nullptr;
}

// Whether this process says what it noticed about the calibration: only when asked
// (LOOM_VERBOSE, LOOM_DEBUG or LOOM_STATS), and then once per job, by world rank 0. The notes
// never concern correctness, only speed, and output a job did not ask for breaks harnesses
// that compare it.
bool reports_calibration() {
  if (!config().verbose && !config().stats) return false;
  int initialized = 0, rank = 0;
  PMPI_Initialized(&initialized);
  if (initialized) PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank == 0;
}

// Reads the calibration (`say`: report what was noticed). It runs on a thread of its own
// (base::on_side_heap), so it makes only the host calls any thread may: stat, getenv,
// MPI_Get_library_version.
model::Model load_model(bool say) {
  const std::string path = calibration_path();
  struct stat info;
  if (path.empty() || (::stat(path.c_str(), &info) != 0 && errno == ENOENT)) {
    if (say)
      std::fprintf(stderr,
                   "loom: no calibration%s%s; using built-in defaults (run `loom-bench measure` "
                   "to calibrate this machine)\n",
                   path.empty() ? " (no LOOM_CACHE_DIR, XDG_CACHE_HOME or HOME)" : " at ",
                   path.c_str());
    return model::Model(builtin_rule_for_host());
  }
  std::string why;
  auto calibration = model::load_file(path, &why);
  if (!calibration) {
    if (say)
      std::fprintf(stderr, "loom: ignoring calibration %s: %s; using built-in defaults\n",
                   path.c_str(), why.c_str());
    return model::Model(builtin_rule_for_host());
  }
  // Measured under other transport settings (e.g. Open MPI with cross-memory attach, run
  // without it), the timings are another machine's: the built-in rule is the safer guess.
  if (const std::string settings = host_transport_settings();
      calibration->host_settings && *calibration->host_settings != settings) {
    if (say)
      std::fprintf(stderr,
                   "loom: ignoring calibration %s: it was measured with host settings '%s', this "
                   "run has '%s'; using built-in defaults (run `loom-bench measure` with this "
                   "run's settings to recalibrate)\n",
                   path.c_str(), calibration->host_settings->c_str(), settings.c_str());
    return model::Model(builtin_rule_for_host());
  }
  const std::string running = host_mpi_version();
  if (calibration->host_mpi != running && say)
    std::fprintf(stderr,
                 "loom: calibration %s was measured with %s, this is %s; using it anyway (run "
                 "`loom-bench measure` to recalibrate)\n",
                 path.c_str(), calibration->host_mpi.c_str(), running.c_str());
  if (config().debug && say)
    std::fprintf(stderr, "loom: method model from %s (%s, %s)\n", path.c_str(),
                 calibration->host_mpi.c_str(), calibration->machine.c_str());
  return model::Model(std::move(*calibration));
}

// The bucket of a message of `bytes` > 0: its size's bit width, 1..63.
int size_bucket(int64_t bytes) {
  return std::bit_width(static_cast<uint64_t>(bytes));
}

// The smallest message whose size has `bit_width` bits: a power of two, so the decision
// for power-of-two sizes (the common case, and the calibration grid's points) is exact.
double bucket_bytes(int bit_width) {
  return bit_width == 0 ? 0.0 : std::ldexp(1.0, bit_width - 1);
}

}  // namespace

const model::Model& method_model() {
  static const model::Model loaded =
      base::on_side_heap([say = reports_calibration()] { return load_model(say); });
  return loaded;
}

void preload_method_model() {
  const int pinned = detail::pinned_method.load(std::memory_order_relaxed);
  plan_types_for(setting(), pinned);
  if (pinned < 0 && setting() == Setting::Auto) method_model();
}

void pin_method(std::optional<model::Method> method) {
  detail::pinned_method.store(method ? static_cast<int>(*method) : -1, std::memory_order_relaxed);
  plan_types_for(setting(), method ? static_cast<int>(*method) : -1);
}

model::Method choose_method(const TypePlan& type, int64_t message_bytes, model::Locality where,
                            model::Traffic traffic) {
  if (const int pinned = detail::pinned_method.load(std::memory_order_relaxed); pinned >= 0)
    return static_cast<model::Method>(pinned);
  switch (setting()) {
    case Setting::Host:
      return model::Method::Host;
    case Setting::Pack:
      return model::Method::Pack;
    case Setting::Auto:
      break;
  }
  if (message_bytes <= 0) return model::Method::Host;
  const int bucket = size_bucket(message_bytes);
  std::atomic<uint8_t>& slot =
      type.decisions[static_cast<int>(traffic)][static_cast<int>(where)][bucket];
  const uint8_t cached = slot.load(std::memory_order_relaxed);
  if (cached) return static_cast<model::Method>(cached - 1);
  // Racing threads compute the same answer, so a plain store suffices.
  const model::Model& model = method_model();
  const double bytes = bucket_bytes(bucket);
  const model::Method chosen = model.choose(where, type.shape, bytes, traffic);
  slot.store(static_cast<uint8_t>(1 + static_cast<int>(chosen)), std::memory_order_relaxed);
  if (config().debug)
    std::fprintf(
        stderr,
        "[loom] pid %d model: %s, %s, %.0f+ bytes, block %.1f B, spread %.1f%s: host "
        "%.1f us, pack %.1f us -> %s\n",
        static_cast<int>(getpid()), traffic == model::Traffic::OneWay ? "one-way" : "exchange",
        model::locality_name(where), bytes, type.shape.mean_block, type.shape.spread,
        type.shape.nested ? ", nested" : "",
        model.host_seconds(where, type.shape, bytes, traffic) * 1e6,
        model.pack_seconds(where, type.shape, bytes, traffic) * 1e6, model::method_name(chosen));
  return chosen;
}

std::atomic<int> detail::pinned_method{-1};

namespace {

using detail::kMethodBits;
using detail::kOneMessage;
// kNoRecheck holds a slot settled without a verdict (below) off re-checks.
constexpr int64_t kNoRecheck = (int64_t{1} << 24) - 1;
// In a kind's wait_left (mpi/type_registry.hpp): the host's warm-up stopped early.
constexpr uint32_t kWarmupStopped = uint32_t{1} << 31;
uint32_t settled_slot(model::Method method, int64_t until_recheck) {
  return static_cast<uint32_t>(std::min(until_recheck, kNoRecheck)) * kOneMessage +
         (1 + static_cast<uint32_t>(method));
}

// The method in a settled slot's low bits (kMethodBits, nonzero).
model::Method method_in(uint32_t method_bits) {
  return static_cast<model::Method>(method_bits - 1);
}

int trial_key(model::Traffic traffic, model::Locality where, Side side, int bucket) {
  return ((static_cast<int>(traffic) * 2 + static_cast<int>(side)) * model::kLocalities +
          static_cast<int>(where)) *
             64 +
         bucket;
}

// One kind of message as the online trials see it: a type's messages of one size bucket,
// traffic, locality and side. Its settled slot and its wait are read without the type's
// trial_mutex; its trials live under it.
struct Kind {
  const TypePlan& type;
  int bucket;
  model::Traffic traffic;
  model::Locality where;
  Side side;

  // The same kind on the other side of the process's messages.
  Kind on(Side other) const {
    Kind kind = *this;
    kind.side = other;
    return kind;
  }
  std::atomic<uint32_t>& settled() const {
    return type.settled[static_cast<int>(traffic)][static_cast<int>(where)][static_cast<int>(side)]
                       [bucket];
  }
  std::atomic<uint32_t>& wait_left() const {
    return type.wait_left[static_cast<int>(traffic)][static_cast<int>(where)]
                         [static_cast<int>(side)][bucket];
  }
  int key() const { return trial_key(traffic, where, side, bucket); }
  // The kind's trial, or null before its first message; under type.trial_mutex.
  model::MethodTrial* trial() const {
    const auto found = type.trials.find(key());
    return found == type.trials.end() ? nullptr : &found->second;
  }
};

// After a record: once `trial` has its verdict, the kind settles on it (mpi/type_registry.hpp)
// until its next re-check point, or until its next message where packing is to be confirmed,
// and the verdict is counted. Called under the type's trial_mutex, after the trial has seen the
// message that decided it.
void settle_if_decided(const Kind& kind, const model::MethodTrial& trial) {
  const auto decided = trial.decided();
  if (!decided) return;
  const int64_t next = trial.next_index();
  kind.settled().store(
      settled_slot(*decided,
                   trial.needs_confirmation() ? 0 : model::MethodTrial::recheck_point(next) - next),
      std::memory_order_relaxed);
  const bool kept = *decided == trial.prior();
  if (trial.is_confirmation()) {
    if (!kept) count(kConfirmationsSwitched);
  } else if (trial.is_recheck()) {
    if (!kept) count(kRechecksSwitched);
  } else {
    count(kept ? kTrialsKept : kTrialsSwitched);
  }
  count(kTrialCost, static_cast<uint64_t>(trial.cost_seconds() * 1e9));
  if (config().debug)
    std::fprintf(stderr, "[loom] pid %d %s: %s%s, %s, %lld+ bytes, by message %lld: %s -> %s %s\n",
                 static_cast<int>(getpid()),
                 trial.is_confirmation() ? "confirmation"
                 : trial.is_recheck()    ? "re-check"
                                         : "trial",
                 kind.traffic == model::Traffic::Exchange ? "exchange " : "",
                 kind.side == Side::Send ? "send" : "receive", model::locality_name(kind.where),
                 1LL << (kind.bucket - 1), static_cast<long long>(next), trial.describe().c_str(),
                 kept ? "kept" : "switched to", model::method_name(*decided));
}

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// What MethodTrial::next_at takes to tell the intervals that hold a message's completion:
// exchange messages complete in a later wait call.
std::optional<uint64_t> completion_calls(model::Traffic traffic) {
  return traffic == model::Traffic::Exchange ? std::optional<uint64_t>(mpi::wait_calls())
                                             : std::nullopt;
}

// One gauged message of a kind's wait, posted now (MethodTrial::gauge_warmup): true when the
// host's warm-up stops here, and then kWarmupStopped is set in the kind's wait_left.
bool warmup_stops(const Kind& kind, bool host, bool deciding) {
  const double now = now_seconds();
  const auto waits = completion_calls(kind.traffic);
  std::lock_guard<std::mutex> lock(kind.type.trial_mutex);
  // Emplaced at the kind's first message, with its wait.
  model::MethodTrial* trial = kind.trial();
  if (!trial) return false;
  const bool stops = trial->gauge_warmup(now, host, waits);
  if (stops) {
    kind.wait_left().fetch_or(kWarmupStopped, std::memory_order_relaxed);
    count(kWarmupsStopped);
  }
  if (deciding && config().debug)
    std::fprintf(
        stderr, "[loom] pid %d warm-up: %s%s, %s, %lld+ bytes: %s: %s\n",
        static_cast<int>(getpid()), kind.traffic == model::Traffic::Exchange ? "exchange " : "",
        kind.side == Side::Send ? "send" : "receive", model::locality_name(kind.where),
        1LL << (kind.bucket - 1), trial->describe_warmup().c_str(), stops ? "stopped" : "runs on");
  return stops;
}

// A settled kind's method, read without the lock and counted down to its re-check point. None
// where the kind has not settled (a send whose receives have, and that is not timed, follows
// them), or where it is at its re-check point and this message is timed: the locked path then.
// A process that also receives this kind sends it as its receives settled (`received`): a
// receive's time spans the peer's send, the transfer and the unpacking, a packed send's only
// the first two, so the two ends of one kind can see opposite verdicts (docs/model.md,
// "Online trials").
std::optional<OnlineChoice> settled_choice(const Kind& kind, bool timed, uint32_t received) {
  std::atomic<uint32_t>& slot = kind.settled();
  const uint32_t mine = slot.load(std::memory_order_relaxed);
  const bool follows_receives = kind.side == Side::Send && received;
  if (!mine) {
    if (follows_receives && !timed) return OnlineChoice{method_in(received), -1};
    return std::nullopt;
  }
  const model::Method method = method_in(follows_receives ? received : mine & kMethodBits);
  // Counted down with a plain load and store: racing threads may lose a count, which moves the
  // re-check by a message, no more.
  if (mine >= kOneMessage) {
    slot.store(mine - kOneMessage, std::memory_order_relaxed);
    return OnlineChoice{method, -1};
  }
  if (!timed || setting() != Setting::Auto) return OnlineChoice{method, -1};
  return std::nullopt;
}

// A kind waiting for its trial runs `waiting` (the model's choice, or a send its receives'
// verdict) without the lock and the clock, which a short-lived kind would pay on every message
// of its life (docs/model.md, "Online trials"). The wait's last messages warm the host's typed
// path up, so that the trial times the host at its speed (mpi::host_typed_warmup_messages; both
// ends of a message count alike), unless the messages around the warm-up's start show the host
// far behind even so. None once the wait is over.
std::optional<OnlineChoice> waiting_choice(const Kind& kind, model::Method waiting) {
  std::atomic<uint32_t>& wait_left = kind.wait_left();
  static const uint32_t warmup = static_cast<uint32_t>(host_typed_warmup_messages());
  for (uint32_t word = wait_left.load(std::memory_order_relaxed); (word & ~kWarmupStopped) > 0;) {
    if (!wait_left.compare_exchange_weak(word, word - 1, std::memory_order_relaxed)) continue;
    if (word & kWarmupStopped) return OnlineChoice{waiting, -1};
    const uint32_t left = word;
    const bool warming = left <= warmup;
    if (warmup > 0 && waiting != model::Method::Host &&
        left <= warmup + model::MethodTrial::kGaugedAsIs &&
        left + model::MethodTrial::kGaugedHost >= warmup &&
        warmup_stops(kind, warming, left + model::MethodTrial::kGaugedHost == warmup))
      return OnlineChoice{waiting, -1};
    return OnlineChoice{warming ? model::Method::Host : waiting, -1};
  }
  return std::nullopt;
}

// How many messages a kind runs before its trial: LOOM_TRIAL_WAIT, else until the trial can pay
// for itself (MethodTrial::wait_for), judged by the model's own prediction of the gap; the
// built-in rule's packing on its weak ground counts as a predicted tie.
int trial_wait(const Kind& kind) {
  if (const int wait = trial_wait_setting(); wait >= 0) return wait;
  const model::Model& model = method_model();
  const double bytes = bucket_bytes(kind.bucket);
  if (model.rule_packs_on_weak_ground(kind.where, kind.type.shape, bytes))
    return model::MethodTrial::wait_for(1, 1);
  return model::MethodTrial::wait_for(
      model.host_seconds(kind.where, kind.type.shape, bytes, kind.traffic),
      model.pack_seconds(kind.where, kind.type.shape, bytes, kind.traffic));
}

// The kind's first message: its trial is created, and starts after the wait that this message
// begins. The wait's choice, or none where there is no wait. Under the type's trial_mutex.
std::optional<OnlineChoice> begin_trial(const Kind& kind, model::Method prior,
                                        model::Method waiting) {
  const int wait = trial_wait(kind);
  kind.type.trials.try_emplace(kind.key(), prior, 0, wait);
  if (wait <= 0) return std::nullopt;
  kind.wait_left().store(static_cast<uint32_t>(wait - 1), std::memory_order_relaxed);
  return OnlineChoice{waiting, -1};
}

// A blocking send's round, complete since its last send, concludes here, before this send's
// clock starts (MethodTrial::record_sample), if the kind's receives have not concluded it. Where
// that settles the kind, this send is its first settled message (the count to the re-check
// point starts at it, trial.next_index(), or its re-check would start one message after the
// peer's).
std::optional<OnlineChoice> conclude_blocking_send(const Kind& kind, model::MethodTrial& trial,
                                                   uint32_t received) {
  if (kind.side != Side::Send || !trial.conclude()) return std::nullopt;
  settle_if_decided(kind, trial);
  std::atomic<uint32_t>& slot = kind.settled();
  const uint32_t now_settled = slot.load(std::memory_order_relaxed);
  if (now_settled < kOneMessage) return std::nullopt;
  slot.store(now_settled - kOneMessage, std::memory_order_relaxed);
  return OnlineChoice{method_in(received ? received : now_settled & kMethodBits), -1};
}

// A verdict of packing is confirmed on the kind's next messages; a settled kind at its re-check
// point (MethodTrial::recheck_point) runs one round defending the verdict. Its messages take
// the locked path until that decides.
void defend_verdict_if_due(const Kind& kind, model::MethodTrial& trial) {
  std::atomic<uint32_t>& slot = kind.settled();
  const uint32_t mine = slot.load(std::memory_order_relaxed);
  if (!trial.decided() || mine == 0 || mine >= kOneMessage) return;
  if (trial.needs_confirmation()) {
    trial = model::MethodTrial::confirm(trial);
    count(kConfirmations);
  } else {
    trial = model::MethodTrial::recheck(*trial.decided(),
                                        model::MethodTrial::recheck_point(trial.next_index()));
    count(kRechecks);
  }
  // The slot keeps the verdict under test with no messages left: timed messages keep taking
  // this path, and the process's sends of the kind keep following its receives (a 0 sent them
  // back to their own verdict, which can differ, for the confirmation's length).
  slot.store(mine & kMethodBits, std::memory_order_relaxed);
}

// Exchange messages, and blocking receives, are timed by the interval to the kind's next post
// (MethodTrial::next_at): a blocking receive's own duration leaves out the process's send, so
// the two ranks of a ping-pong would time different parts of one round trip and could settle
// differently, each keeping the mix the other had measured as slowest (docs/model.md, "Online
// trials"). Timed from post to post, both time the whole round trip. A blocking send keeps its
// call's duration, and follows the receives' verdict.
bool timed_by_interval(const Kind& kind) {
  return kind.traffic == model::Traffic::Exchange || kind.side == Side::Receive;
}

// This message's ticket in the kind's trial. A sample timed by interval is recorded here, and
// may decide the trial.
model::MethodTrial::Ticket take_ticket(const Kind& kind, model::MethodTrial& trial) {
  model::MethodTrial::Ticket ticket;
  if (timed_by_interval(kind)) {
    const bool was_decided = trial.decided().has_value();
    // Exchange messages complete in a later wait call: an interval without one timed the posts
    // alone (a host's typed post may return at once and pack in the wait, Loom's packs at the
    // post).
    ticket = trial.next_at(now_seconds(), completion_calls(kind.traffic));
    if (!was_decided) settle_if_decided(kind, trial);
    // The process's blocking sends of the kind conclude here, after this post's clock read
    // (MethodTrial::record_sample).
    if (kind.side == Side::Receive) {
      const Kind sends = kind.on(Side::Send);
      model::MethodTrial* sending = sends.trial();
      if (sending && sending->conclude()) settle_if_decided(sends, *sending);
    }
  } else {
    ticket = trial.next();
  }
  if (ticket.slot == 0 && !trial.is_recheck()) count(kTrialsStarted);
  return ticket;
}

// A send outside its schedule, or in the slots that try the kind as it runs, follows this
// process's receives of the kind, settled or not. Its own schedule still runs to the end: the
// peer's receive trial is timing those sends, and a ping-pong's responder settles its receives
// one message before its last scheduled send (docs/model.md, "Online trials"). In those slots
// it follows the method their round defends, as the peer's receive trial expects of the kind
// as it runs; a confirmation of the sends' verdict runs as the receives now do (their verdict,
// which can differ, or the packing their own confirmation tries).
model::Method send_method(const Kind& kind, const model::MethodTrial& trial,
                          const model::MethodTrial::Ticket& ticket, uint32_t received) {
  const model::MethodTrial* receiving = kind.on(Side::Receive).trial();
  if (ticket.slot >= 0) {
    if (!receiving) return ticket.method;
    return trial.is_confirmation() ? receiving->current() : receiving->defended();
  }
  if (received) return method_in(received);
  return receiving ? receiving->current() : ticket.method;
}

// The method of a message with `ticket`: a scheduled sample of the kind's trial, or the kind as
// it runs. `report_slot`: the sample the caller times and reports (report_trial), -1 for none.
OnlineChoice ticket_choice(const Kind& kind, model::MethodTrial& trial,
                           model::MethodTrial::Ticket ticket, int report_slot, uint32_t received) {
  if (ticket.slot >= 0 && !ticket.as_is) {
    // A send whose receives have ruled its challenger out (MethodTrial::kRuledOutAfter) runs
    // the method their round defends, as the peer's receives of the kind now expect, and its
    // sample is not one of the challenger's.
    if (kind.side == Side::Send) {
      const model::MethodTrial* receiving = kind.on(Side::Receive).trial();
      if (receiving && receiving->rules_out(ticket.method)) {
        trial.rule_out(ticket.method);
        return {receiving->defended(), -1};
      }
    }
    return {ticket.method, report_slot};
  }
  if (kind.side == Side::Send) ticket.method = send_method(kind, trial, ticket, received);
  if (ticket.slot >= 0) return {ticket.method, report_slot};
  // Every message issued, a record still out (another thread's): leave the locked path; the
  // record's verdict, if any, overwrites the slot. No re-check until then.
  if (!trial.scheduling() && !trial.decided())
    kind.settled().store(settled_slot(trial.current(), kNoRecheck), std::memory_order_relaxed);
  return {ticket.method, -1};
}

}  // namespace

OnlineChoice detail::choose_online_slow(const TypePlan& type, int64_t message_bytes,
                                        model::Locality where, model::Traffic traffic, Side side,
                                        bool timed) {
  const bool online = config().online && message_bytes > 0 &&
                      detail::pinned_method.load(std::memory_order_relaxed) < 0;
  const Kind kind{type, size_bucket(message_bytes), traffic, where, side};
  // Settled kinds first: trials run only under LOOM_METHOD=auto, so a settled slot implies it.
  uint32_t received = 0;  // the kind's receives' settled method bits
  if (online) {
    received = kind.on(Side::Receive).settled().load(std::memory_order_relaxed) & kMethodBits;
    if (const auto settled = settled_choice(kind, timed, received)) return *settled;
  }
  const model::Method prior = choose_method(type, message_bytes, where, traffic);
  if (!online || !timed || setting() != Setting::Auto) return {prior, -1};
  const model::Method waiting = side == Side::Send && received ? method_in(received) : prior;
  if (const auto still_waiting = waiting_choice(kind, waiting)) return *still_waiting;
  std::lock_guard<std::mutex> lock(type.trial_mutex);
  model::MethodTrial* trial = kind.trial();
  if (!trial) {
    if (const auto wait = begin_trial(kind, prior, waiting)) return *wait;
    trial = kind.trial();
  }
  if (const auto concluded = conclude_blocking_send(kind, *trial, received)) return *concluded;
  defend_verdict_if_due(kind, *trial);
  const model::MethodTrial::Ticket ticket = take_ticket(kind, *trial);
  // A sample timed by interval was recorded in take_ticket: nothing for the caller to report.
  const int report_slot = timed_by_interval(kind) ? -1 : ticket.slot;
  return ticket_choice(kind, *trial, ticket, report_slot, received);
}

void report_trial(const TypePlan& type, int64_t message_bytes, model::Locality where,
                  model::Traffic traffic, Side side, model::MethodTrial::Ticket ticket,
                  double seconds) {
  const Kind kind{type, size_bucket(message_bytes), traffic, where, side};
  std::lock_guard<std::mutex> lock(type.trial_mutex);
  model::MethodTrial* trial = kind.trial();
  if (!trial || trial->decided()) return;
  // Concluded at the kind's next post (choose_online_slow).
  trial->record_sample(ticket, seconds);
}

std::string calibration_path() {
  std::string dir;
  static constexpr base::EnvVar kCacheDir{"LOOM_CACHE_DIR",
                                          "$XDG_CACHE_HOME/loom, else $HOME/.cache/loom",
                                          "where the method model's calibration is kept"};
  if (const char* cache = base::read(kCacheDir))
    dir = cache;
  else if (const char* xdg = env_dir("XDG_CACHE_HOME"); xdg && xdg[0] == '/')
    dir = std::string(xdg) + "/loom";  // the XDG spec ignores relative paths
  else if (const char* home = env_dir("HOME"))
    dir = std::string(home) + "/.cache/loom";
  else
    return {};
  return dir + "/calibration-" + host_mpi_family() + ".json";
}

int method_for(MPI_Datatype type, int count, int peer_same_node) {
  // The same conditions as the point-to-point layer: a non-dense plan and a packed size
  // that fits an int count.
  const mpi::TypePlan* plan = mpi::plan_now(type);  // a query: its answer needs the plan
  if (!plan || plan->plan.dense() || count <= 0) return LOOM_METHOD_HOST;
  const int64_t bytes = static_cast<int64_t>(count) * plan->plan.size();
  if (bytes <= 0 || bytes > INT_MAX) return LOOM_METHOD_HOST;
  const auto where = peer_same_node ? model::Locality::SameNode : model::Locality::OtherNode;
  return choose_method(*plan, bytes, where, model::Traffic::OneWay) == model::Method::Pack
             ? LOOM_METHOD_PACK
             : LOOM_METHOD_HOST;
}

}  // namespace loom::ops
