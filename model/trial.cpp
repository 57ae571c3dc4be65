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
  if (issued_ >= kMessages) return {prior_, -1};  // all issued, some not yet recorded
  const int slot = issued_++;
  return {kSchedule[slot].method, slot};
}

void MethodTrial::record(const Ticket& ticket, double seconds) {
  if (decided_ || ticket.slot < 0 || ticket.slot >= kMessages || !kSchedule[ticket.slot].timed)
    return;
  samples_[static_cast<int>(ticket.method)].push_back(seconds);
  const auto& mine = samples_[static_cast<int>(prior_)];
  const Method other_method = prior_ == Method::Host ? Method::Pack : Method::Host;
  const auto& other = samples_[static_cast<int>(other_method)];
  if (static_cast<int>(mine.size()) < kSamples || static_cast<int>(other.size()) < kSamples) return;
  int inversions = 0;  // pairs in which the other method did not win by the margin
  for (double theirs : other)
    for (double ours : mine) inversions += theirs >= kMargin * ours;
  decided_ = inversions <= kMaxInversions ? other_method : prior_;
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
  return text;
}

}  // namespace loom::model
