// Online check of the method model for one kind of blocking message (datatype, side,
// locality, size bucket). The calibration times vectors; a host engine may send another
// type of the same layout several times faster or slower (MPICH 4.0 sends a Fortran-built
// grid face much faster than the C-built one, docs/model.md), and only timing the real
// messages shows it.
// No MPI dependency.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "model/model.hpp"

namespace loom::model {

// The first kMessages messages of the kind run kSchedule: the kind's current method (the
// model's choice), then the host, then Loom's packing, then the current method again, in blocks
// of 5, 7, 7 and 5 messages. Every kind follows the same schedule, so that two processes
// exchanging such messages try the same method on the same message, and kinds posted in step
// (a halo exchange's 52 requests per iteration) try the same configuration in the same
// iteration: every kind as it is (the model's mix of methods), all on the host, all packed.
// Blocks rather than alternation: in a ping-pong a receive also waits for the peer to finish
// the previous message, and alternating methods would mix both in every sample. The current
// method's samples come both before and after the others, so that a drift (a kind's first
// messages run colder) favours no challenger. The first two messages after each switch warm up
// (staging buffers, caches, the switch) and are not timed. Once all samples are in, the current
// method stands unless a challenger's samples beat its samples by kMargin in all but at most
// kMaxInversions of the pairs left once each side's slowest sample is set aside (kTrimSlowest;
// a one-sided rank-sum test: with equal odds, noise passes it about one time in 14; the host
// against packing needs no margin: kHostMargin); if both
// challengers do, packing wins only by the same test against the host, and the host takes a near
// tie. A receive that mostly waits for its sender times noise, and noise must not overturn the
// calibration; yet one slow sample must not block a clear switch either, since the two processes
// decide alone and a near-miss on one side leaves a mixed route that can be slower than either
// (docs/model.md, "Online trials"). The current method is tried as a configuration of its own
// because a mix can beat both uniform ones (a halo exchange on Open MPI whose model mixed the
// methods ran faster than all packed or all on the host).
//
// That first round's choice holds until message kSecondRound, when the schedule runs once
// more, with the first round's choice in place of the model's, and its verdict is final. Host
// engines warm up over tens of messages (MPICH 4.0's typed path for a grid face runs several
// times faster after its first few dozen messages), so a first round alone can choose packing
// against a host that soon overtakes it.
class MethodTrial {
 public:
  // What a slot of the schedule tries: the kind's current method, or one method for all.
  enum class Config : int { Current, Host, Pack };
  struct Slot {
    Config config;
    bool timed;  // false: a warm-up
  };
  // Each block also ends with an untimed message: an exchange message's sample is the
  // interval to the kind's next post (next_at), and the last one of a block would take in
  // the next block's first posts (a cold first exchange of the next method would land in the
  // last sample of this one).
  static constexpr Slot kSchedule[] = {
      {Config::Current, false}, {Config::Current, false}, {Config::Current, true},
      {Config::Current, true},  {Config::Current, false}, {Config::Host, false},
      {Config::Host, false},    {Config::Host, true},     {Config::Host, true},
      {Config::Host, true},     {Config::Host, true},     {Config::Host, false},
      {Config::Pack, false},    {Config::Pack, false},    {Config::Pack, true},
      {Config::Pack, true},     {Config::Pack, true},     {Config::Pack, true},
      {Config::Pack, false},    {Config::Current, false}, {Config::Current, false},
      {Config::Current, true},  {Config::Current, true},  {Config::Current, false}};
  static constexpr int kMessages = sizeof kSchedule / sizeof kSchedule[0];
  static constexpr int kSecondRound = 64;                 // message that starts round two
  static constexpr int kSpan = kSecondRound + kMessages;  // messages a trial can touch
  static constexpr int kSamples = 4;                      // timed slots per config and round
  static constexpr double kMargin = 0.9;
  // The host displaces packing without a margin: where it wins almost every pair, Loom's work
  // buys nothing, and keeping it costs messages of a few blocks (docs/model.md). A true tie
  // still passes the test only about one time in 14, and then costs nothing.
  static constexpr double kHostMargin = 1.0;
  static constexpr int kMaxInversions = 0;
  // Each side's slowest sample is set aside before the pairs are counted: a scheduling spike
  // lands on one process's samples, not its peer's, and one on the incumbent's side blocked a
  // clear switch on that process alone while its peer switched, splitting the pair. Spikes only
  // add time, so the slowest sample is the one to drop. With equal odds, noise passes the
  // trimmed test one time in 14.
  static constexpr bool kTrimSlowest = true;
  // A challenger far behind is ruled out as soon as it cannot win: once this many of its samples
  // take kFarBehind times the incumbent's fastest sample so far or more, the final test counts at
  // least kMaxInversions + 1 inversions whatever the samples still to come (the incumbent's
  // fastest can only fall, and trimming sets aside one sample). The rest of its block runs the
  // defended method: each message of a challenger far behind costs the gap in full (a host
  // several times slower than packing on MPICH's SPECFEM3D types). A challenger close behind
  // runs its block to the end, although it cannot win either: a cut on one process turns the
  // peer's remaining samples of that challenger into a mixed route, slower than either method,
  // and on a gap near the margin the peer's verdict then follows (cut at any gap, such kinds
  // split and ran below the host in some runs).
  static constexpr int kRuledOutAfter = kMaxInversions + (kTrimSlowest ? 1 : 0) + 1;
  static constexpr double kFarBehind = 1.5;
  static_assert(kFarBehind >= 1.0 && kFarBehind >= kMargin);

  // One message of the kind: its method, and its place in the trial, in [0, kSpan) (-1
  // outside the schedule: nothing to record).
  struct Ticket {
    Method method;
    int slot;
    bool as_is = false;  // the slot tries the kind's current method (Config::Current)
  };

  // A trial costs: each round runs the method the model did not choose for a block of 7
  // messages, and a trial pays only when the kind lives on long enough after it for the better
  // method to win that back. So a kind first runs its current method for `wait` messages
  // (wait_for), then the schedule; a type built, used 20 times and freed is never tried,
  // unless its signature comes back (the plan, and with it the kind's age, is cached by
  // signature: mpi/type_registry.hpp).
  // `first_index`: the kind's message (counting from its first) for which next() is first
  // asked; a wait counted outside the trial comes before it.
  explicit MethodTrial(Method prior, int wait = 0, int64_t first_index = 0)
      : prior_(prior), wait_(wait), first_index_(first_index) {}

  // Settled kinds are tried again, so that a host that turns faster (or slower) after a kind
  // settled is followed: at the kind's kFirstRecheck-th message, then at each doubling of its
  // age up to kRecheckEvery, then every kRecheckEvery messages. The points depend on the
  // message count alone, so that two processes exchanging the kind try again on the same
  // message. A re-check is one round of the schedule defending the verdict, final at once (the
  // second round exists for host engines that warm up over a kind's first tens of messages);
  // it runs the other method for one block of 7 messages: at most 7 x gap per 4096 messages of
  // the kind, less as the points spread out.
  static constexpr int64_t kFirstRecheck = 4096;
  static constexpr int64_t kRecheckEvery = 65536;
  // The first re-check point at or after the kind's message `index`.
  static int64_t recheck_point(int64_t index);
  // A re-check of a kind settled on `verdict`, starting at its message `index`.
  static MethodTrial recheck(Method verdict, int64_t index) {
    MethodTrial trial(verdict, 0, index);
    trial.rounds_ = 1;
    return trial;
  }
  bool is_recheck() const { return rounds_ == 1 && !confirming_; }

  // A verdict of packing is confirmed: the kind's next kConfirmMessages messages run packed as
  // settled, timed as the rounds are (two warm-ups, kSamples timed, one untimed), and if the
  // host's samples from the round that decided beat them by kConfirmMargin in all but
  // kMaxInversions pairs, the kind goes to the host after all. The two processes of a ping-pong
  // decide alone, and on a near tie one can keep packing while the other goes to the host: the
  // route then mixes packed sends into typed receives, slower than either method. Only packing is
  // confirmed: the process that kept packing then sees its messages run slower than the host ran in
  // its trial, and follows its peer; a process that chose the host is already where the pair
  // converges. A confirmation switches alone, on one process, and a switch its peer does not make
  // is the very split it is for: so it asks for a wide gap, which a split shows and noise
  // rarely does, and it runs only where a round trip's samples stand above the machine's
  // scheduling noise (with a 10% margin and no floor, short messages switched one side alone).
  static constexpr double kConfirmMargin = 0.8;
  static constexpr double kConfirmFromSeconds = 20e-6;  // the host's median trial sample
  static constexpr int kConfirmMessages = 7;
  static constexpr bool kConfirmTimed[kConfirmMessages] = {false, false, true, true,
                                                           true,  true,  false};
  // Whether the kind's verdict is packing, not yet confirmed.
  bool needs_confirmation() const;
  // The confirmation of `decided`'s verdict, starting at the kind's next message.
  static MethodTrial confirm(const MethodTrial& decided);
  bool is_confirmation() const { return confirming_; }
  // The index of the kind's next message, as far as this trial has seen the kind.
  int64_t next_index() const { return first_index_ + seen_; }
  // How long a kind must have lived before its trial can pay for itself, from the model's
  // predicted seconds per message of each method. A kind that has lived n messages is
  // expected to live about n more (the Copernican estimate: nothing else is known of its
  // life), and a trial that overturns the model gains at least 1 - kMargin of the current
  // method's time per message; it costs kChallengeMessages messages at the gap between the
  // methods. So the trial starts once n * (1 - kMargin) * min >= kChallengeMessages * gap,
  // and not before the kind has lived a round's length (kMinWait: the warm-ups and switches
  // cost even at a predicted tie), nor later than kMaxWait. Without a prediction (no
  // calibration) the gap is taken to be the current method's own time, two methods 2x apart:
  // kNoPredictionWait: trying at once cost short-lived kinds more than it won them
  // (docs/model.md, "Online trials").
  static int wait_for(double host_seconds, double pack_seconds);
  static constexpr int kChallengeMessages = 14;  // 7 per round, two rounds
  static constexpr int kMinWait = kMessages;
  static constexpr int kMaxWait = 2 * kSpan;
  static constexpr int kNoPredictionWait = 140;  // kChallengeMessages / (1 - kMargin)
  // Every kind has settled by its kSettledBy-th message, packing confirmed.
  static constexpr int kSettledBy = kMaxWait + kSpan + kConfirmMessages;

  // The wait's last messages can warm a host's typed path up (mpi::host_typed_warmup_messages:
  // a process's first typed messages on MPICH 4.0 run up to about kColdFactor times slower than
  // later ones), so that the trial times the host at its speed. Where the host stays behind even
  // so, each warm-up message costs the gap and changes no verdict. So the wait's last kGaugedAsIs
  // messages before the
  // warm-up and the warm-up's first kGaugedHost messages are timed, by intervals between posts
  // as next_at times them, and once the host's fastest took kColdFactor times the as-is fastest
  // or more (warmed up, it would at best tie, and the host must beat the kind as it runs), the
  // rest of the warm-up runs as is, and the trial's rounds try the host no more (ruled out from
  // their start, kRuledOutAfter): with the warm-up stopped, their host blocks would time the
  // same cold host (MPICH warms a type's path up over its first 16 host messages; the warm-up's
  // 4 and a round's 4 leave it cold), and each of their messages costs the gap. The schedule
  // starts where it would have: a peer that decides otherwise mixes routes for a few messages,
  // and the two stay in step.
  static constexpr int kGaugedAsIs = 4;
  static constexpr int kGaugedHost = 4;
  static constexpr double kColdFactor = 3.0;
  // Records the post, at `now_seconds`, of one of those gauged messages (`host`: a warm-up
  // message); `waits` as for next_at. True when the warm-up is to stop at this message.
  bool gauge_warmup(double now_seconds, bool host, std::optional<uint64_t> waits = std::nullopt);
  // The gauge's fastest as-is and host intervals and their counts, as "as is <T> us (<N>), host
  // <T> us (<N>)" (LOOM_DEBUG).
  std::string describe_warmup() const;
  Ticket next();
  // The duration of the message `ticket` was issued for. Ignored once its round is over.
  // record_sample() then conclude().
  void record(const Ticket& ticket, double seconds);
  // Only stores the sample. A blocking send's samples are taken so, and the round they complete
  // is concluded at the process's next post of the kind (conclude()), after that post's clock
  // read. Concluding takes time on a cold cache: inside the send that completed the round, it
  // delayed the process's next receive post, so that its receive interval before that post grew
  // by as much as the next one shrank, the peer meanwhile ahead (the initiator's last as-is
  // sample came out fast, which alone then blocked a clear switch).
  void record_sample(const Ticket& ticket, double seconds);
  // Concludes the running round, or the confirmation, if all its samples are in. True when it
  // did: a new choice, or the verdict (decided()).
  bool conclude();
  // For exchange traffic, where a call's duration does not measure its message: a message's
  // duration is the interval from its post to the next post of the kind, one iteration of the
  // program's exchange loop. Records the previous message's interval, then issues this one.
  // `waits`, where given, counts the process's completion calls (MPI_Wait...): an interval
  // with none in it timed only the posts, not the messages' work (a host MPI_Isend returns at
  // once and packs inside the wait; Loom packs at the post), and is not recorded. A kind whose
  // intervals rarely hold a wait (a window of 64 MPI_Isend, then one MPI_Waitall) then never
  // completes its rounds and keeps the model's choice.
  Ticket next_at(double now_seconds, std::optional<uint64_t> waits = std::nullopt);
  // Whether the running round has ruled out `method` as a challenger (kRuledOutAfter): its
  // remaining slots run the defended method.
  bool rules_out(Method method) const;
  // Rules `method` out as a challenger in the running round, on another trial's evidence (a
  // send follows its receives' trial of the kind).
  void rule_out(Method method);
  // The final verdict, after round two.
  std::optional<Method> decided() const { return decided_; }
  // What the kind uses now outside the schedule: the verdict, else round one's, else the
  // model's.
  Method current() const { return decided_ ? *decided_ : first_round_ ? *first_round_ : prior_; }
  // The method the running round defends, which its Config::Current slots use: the model's in
  // round one, round one's choice in round two.
  Method defended() const { return round_ == 0 ? prior_ : first_round_.value_or(prior_); }
  // Whether next() may still hand out scheduled messages.
  bool scheduling() const { return !decided_ && issued_ < span(); }
  // The samples of both rounds, as "as is (pack) <samples> us, host <samples> us, pack <samples>
  // us -> host; as is (host) ..." (for LOOM_DEBUG).
  std::string describe() const;
  Method prior() const { return prior_; }
  // What the trial cost, once decided: the time its messages took beyond the verdict's method,
  // estimated from its samples (each timed sample stands for its block's messages).
  double cost_seconds() const { return cost_seconds_; }
  // The schedule as the methods a round hands out while `current` is the kind's method, one
  // letter per message (H host, P packed), e.g. "HHHHHHHHHHHHPPPPPPPHHHHH".
  static std::string schedule_text(Method current);

 private:
  Method prior_;
  int wait_ = 0;    // messages of the current method before the schedule
  int waited_ = 0;  // of those, issued
  int64_t first_index_ = 0;
  int64_t seen_ = 0;  // next() calls
  int rounds_ = 2;    // 1: a re-check
  int span() const { return confirming_ ? kConfirmMessages : rounds_ == 1 ? kMessages : kSpan; }
  bool confirming_ = false;
  std::vector<double> host_reference_;  // a confirmation's: the host's samples that it faces
  bool conclude_confirmation();
  double cost_seconds_ = 0;
  int issued_ = 0;
  int round_ = 0;  // the round whose samples are being taken: 0 or 1
  Method method_for(Config config) const;

  std::vector<double> samples_[3];        // per Config
  std::vector<double> first_samples_[3];  // round one's, once round two runs (describe)
  bool ruled_out_[3] = {};                // per Config, in the running round
  bool first_ruled_out_[3] = {};          // round one's
  void rule_out_if_lost(Config config);
  std::optional<Method> first_round_;
  std::optional<Method> decided_;
  // The intervals between a kind's posts, as next_at and gauge_warmup time them: an interval
  // counts only where `waits` was not given or a completion call came between the two posts.
  class PostIntervals {
   public:
    // Records a post at `now_seconds`; the interval since the previous post, where it counts.
    std::optional<double> post(double now_seconds, std::optional<uint64_t> waits);

   private:
    bool posted_ = false;
    double posted_at_ = 0;
    std::optional<uint64_t> posted_waits_;
  };
  Ticket posted_{Method::Host, -1};  // next_at: the previous message, timed until the next post
  PostIntervals posts_;
  // gauge_warmup: per kind of message (as is, host) the intervals timed and the fastest.
  int gauged_[2] = {};
  double gauged_fastest_[2] = {};
  bool gauge_posted_host_ = false;
  PostIntervals gauge_posts_;
  bool host_far_behind_ = false;  // gauge_warmup stopped the warm-up: no host in the rounds
};

}  // namespace loom::model
