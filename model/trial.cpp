#include "model/trial.hpp"

#include <cstdio>

namespace loom::model {

constexpr int timed_slots(Method method) {
  int n = 0;
  for (const auto& slot : MethodTrial::kSchedule) n += slot.timed && slot.method == method;
  return n;
}
static_assert(timed_slots(Method::Host) == MethodTrial::kSamples &&
              timed_slots(Method::Pack) == MethodTrial::kSamples);

MethodTrial::Ticket MethodTrial::next() {
  if (decided_) return {*decided_, -1};
  if (issued_ >= kSpan) return {current(), -1};  // all issued, some not yet recorded
  const int message = issued_++;
  if (message < kMessages) return {kSchedule[message].method, message};
  if (message >= kSecondRound) return {kSchedule[message - kSecondRound].method, message};
  return {current(), -1};
}

MethodTrial::Ticket MethodTrial::next_at(double now_seconds) {
  if (posted_.slot >= 0) record(posted_, now_seconds - posted_at_);
  posted_ = next();
  posted_at_ = now_seconds;
  return posted_;
}

void MethodTrial::record(const Ticket& ticket, double seconds) {
  if (decided_ || ticket.slot < 0 || ticket.slot >= kSpan) return;
  const int round = ticket.slot >= kSecondRound;
  const int slot = ticket.slot - round * kSecondRound;
  if (round != round_ || slot >= kMessages || !kSchedule[slot].timed) return;
  samples_[static_cast<int>(ticket.method)].push_back(seconds);
  // Round two defends round one's choice, round one the model's.
  const Method defended = round == 0 ? prior_ : *first_round_;
  const auto& mine = samples_[static_cast<int>(defended)];
  const Method other_method = defended == Method::Host ? Method::Pack : Method::Host;
  const auto& other = samples_[static_cast<int>(other_method)];
  if (static_cast<int>(mine.size()) < kSamples || static_cast<int>(other.size()) < kSamples) return;
  int inversions = 0;  // pairs in which the other method did not win by the margin
  for (double theirs : other)
    for (double ours : mine) inversions += theirs >= kMargin * ours;
  const Method verdict = inversions <= kMaxInversions ? other_method : defended;
  if (round == 1) {
    decided_ = verdict;
    return;
  }
  first_round_ = verdict;
  first_round_text_ = describe() + " -> " + method_name(verdict);
  round_ = 1;
  for (auto& samples : samples_) samples.clear();
}

std::string MethodTrial::describe() const {
  std::string text;
  for (Method m : {Method::Host, Method::Pack}) {
    text += text.empty() ? "" : ", ";
    text += method_name(m);
    for (double seconds : samples_[static_cast<int>(m)]) {
      char number[32];
      std::snprintf(number, sizeof number, " %.1f", seconds * 1e6);
      text += number;
    }
    text += " us";
  }
  return first_round_text_.empty() ? text : first_round_text_ + "; then " + text;
}

}  // namespace loom::model
