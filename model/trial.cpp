#include "model/trial.hpp"

#include <algorithm>
#include <cstdio>

namespace loom::model {

Method MethodTrial::next() {
  if (decided_) return *decided_;
  return issued_++ < kMessages / 2 ? Method::Host : Method::Pack;
}

void MethodTrial::record(Method method, double seconds) {
  if (decided_) return;
  const int m = static_cast<int>(method);
  if (warmed_[m] < kWarmups) {
    ++warmed_[m];
    return;
  }
  if (static_cast<int>(samples_[m].size()) < kSamples) samples_[m].push_back(seconds);
  const auto& mine = samples_[static_cast<int>(prior_)];
  const Method other_method = prior_ == Method::Host ? Method::Pack : Method::Host;
  const auto& other = samples_[static_cast<int>(other_method)];
  if (static_cast<int>(mine.size()) < kSamples || static_cast<int>(other.size()) < kSamples) return;
  const double other_slowest = *std::max_element(other.begin(), other.end());
  const double mine_fastest = *std::min_element(mine.begin(), mine.end());
  decided_ = other_slowest < kMargin * mine_fastest ? other_method : prior_;
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
