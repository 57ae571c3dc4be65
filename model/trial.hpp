// Online check of the method model for one kind of blocking message (datatype, side,
// locality, size bucket). The calibration times vectors; a host engine may send another
// type of the same layout several times faster or slower (MPICH 4.0 sends a Fortran-built
// grid face 6-7x faster than the C-built one), and only timing the real messages shows it.
// No MPI dependency.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "model/model.hpp"

namespace loom::model {

// The first kMessages messages of the kind try the host, then Loom's packing, then the host
// again (kSchedule: blocks of 5, 7 and 5 messages), in that order whatever the model chose, so that
// two processes exchanging such messages try the same method on the same message. Blocks rather
// than alternation: in a ping-pong a receive also waits for the peer to finish the previous
// message, and alternating methods would mix both in every sample. Host samples come both before
// and after the packed ones, so that a drift (a kind's first messages run colder) favours neither
// method. The first two messages after each switch warm up (staging buffers, caches, the switch)
// and are not timed. Once all samples are in, the model's choice stands unless the other method's
// samples beat its samples by kMargin in all but at most kMaxInversions of the 16 pairs (a
// one-sided rank-sum test: with equal odds, noise passes it about one time in 35). A receive
// that mostly waits for its sender times noise, and noise must not overturn the calibration;
// yet one slow sample must not block a clear switch either, since the two processes decide
// alone and a near-miss on one side leaves a mixed route that can be slower than either
// (MPICH, a Fortran grid face at 4 MiB: 2529 us mixed, 1620-1970 us when both switched).
//
// That first round's choice holds until message kSecondRound, when the schedule runs once
// more, with the first round's choice in place of the model's, and its verdict is final. Host
// engines warm up over tens of messages: MPICH 4.0's one-way time for a 16 KiB grid face fell
// from 15 us to 3.2 us over a process's first 50 messages, so a first round there chose
// packing (5 us) against a host that soon ran at 3.2 us.
class MethodTrial {
 public:
  struct Slot {
    Method method;
    bool timed;  // false: a warm-up
  };
  // Each block also ends with an untimed message: an exchange message's sample is the
  // interval to the kind's next post (next_at), and the last one of a block would take in
  // the next block's first posts (Open MPI halo: the pack block's first, cold exchange put
  // 290 us into the last host sample, against 80 us for the others).
  static constexpr Slot kSchedule[] = {
      {Method::Host, false}, {Method::Host, false}, {Method::Host, true},  {Method::Host, true},
      {Method::Host, false}, {Method::Pack, false}, {Method::Pack, false}, {Method::Pack, true},
      {Method::Pack, true},  {Method::Pack, true},  {Method::Pack, true},  {Method::Pack, false},
      {Method::Host, false}, {Method::Host, false}, {Method::Host, true},  {Method::Host, true},
      {Method::Host, false}};
  static constexpr int kMessages = sizeof kSchedule / sizeof kSchedule[0];
  static constexpr int kSecondRound = 64;                 // message that starts round two
  static constexpr int kSpan = kSecondRound + kMessages;  // messages a trial can touch
  static constexpr int kSamples = 4;                      // timed slots per method and round
  static constexpr double kMargin = 0.9;
  static constexpr int kMaxInversions = 1;

  // One message of the kind: its method, and its place in the trial, in [0, kSpan) (-1
  // outside the schedule: nothing to record).
  struct Ticket {
    Method method;
    int slot;
  };

  explicit MethodTrial(Method prior) : prior_(prior) {}

  Ticket next();
  // The duration of the message `ticket` was issued for. Ignored once its round is over.
  void record(const Ticket& ticket, double seconds);
  // For exchange traffic, where a call's duration does not measure its message: a message's
  // duration is the interval from its post to the next post of the kind, one iteration of the
  // program's exchange loop. Records the previous message's interval, then issues this one.
  Ticket next_at(double now_seconds);
  // The final verdict, after round two.
  std::optional<Method> decided() const { return decided_; }
  // What the kind uses now outside the schedule: the verdict, else round one's, else the
  // model's.
  Method current() const { return decided_ ? *decided_ : first_round_ ? *first_round_ : prior_; }
  // Whether next() may still hand out scheduled messages.
  bool scheduling() const { return !decided_ && issued_ < kSpan; }
  // The samples of both rounds, e.g. "host 170 181 175 178 us, pack 241 247 245 250 us ->
  // host; host 171 ..." (for LOOM_DEBUG).
  std::string describe() const;
  Method prior() const { return prior_; }

 private:
  Method prior_;
  int issued_ = 0;
  int round_ = 0;  // the round whose samples are being taken: 0 or 1
  std::vector<double> samples_[2];
  std::string first_round_text_;
  std::optional<Method> first_round_;
  std::optional<Method> decided_;
  Ticket posted_{Method::Host, -1};  // next_at: the previous message, timed until the next post
  double posted_at_ = 0;
};

}  // namespace loom::model
