#include "model/trial.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>

namespace loom::model {

constexpr int timed_slots(MethodTrial::Config config) {
  int n = 0;
  for (const auto& slot : MethodTrial::kSchedule) n += slot.timed && slot.config == config;
  return n;
}
static_assert(timed_slots(MethodTrial::Config::Current) == MethodTrial::kSamples &&
              timed_slots(MethodTrial::Config::Host) == MethodTrial::kSamples &&
              timed_slots(MethodTrial::Config::Pack) == MethodTrial::kSamples);

namespace {

// Whether `challenger` beats `incumbent` by `margin` in all but kMaxInversions pairs, once each
// side's slowest sample is set aside (MethodTrial::kTrimSlowest).
bool beats(std::vector<double> challenger, std::vector<double> incumbent,
           double margin = MethodTrial::kMargin) {
  for (auto* samples : {&challenger, &incumbent}) {
    std::sort(samples->begin(), samples->end());
    if (MethodTrial::kTrimSlowest && samples->size() > 2) samples->pop_back();
  }
  int inversions = 0;  // pairs in which the challenger did not win by the margin
  for (double theirs : challenger)
    for (double ours : incumbent) inversions += theirs >= margin * ours;
  return inversions <= MethodTrial::kMaxInversions;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n == 0 ? 0 : n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace

int MethodTrial::wait_for(double host_seconds, double pack_seconds) {
  const double faster = std::min(host_seconds, pack_seconds);
  const double gap = std::fabs(host_seconds - pack_seconds);
  if (!(faster > 0) || !std::isfinite(gap)) return kNoPredictionWait;
  const double needed = kChallengeMessages * gap / ((1 - kMargin) * faster);
  return static_cast<int>(std::clamp(std::ceil(needed - 1e-9),  // 1 - kMargin is not exact
                                     static_cast<double>(kMinWait), static_cast<double>(kMaxWait)));
}

int64_t MethodTrial::recheck_point(int64_t index) {
  if (index <= kFirstRecheck) return kFirstRecheck;
  if (index <= kRecheckEvery) return int64_t{1} << std::bit_width(static_cast<uint64_t>(index - 1));
  return (index + kRecheckEvery - 1) / kRecheckEvery * kRecheckEvery;
}

Method MethodTrial::method_for(Config config) const {
  switch (config) {
    case Config::Host:
      return Method::Host;
    case Config::Pack:
      return Method::Pack;
    case Config::Current:
      break;
  }
  return defended();
}

bool MethodTrial::needs_confirmation() const {
  const auto& host = samples_[static_cast<int>(Config::Host)];
  return decided_ == Method::Pack && !confirming_ && host.size() >= kRuledOutAfter &&
         median(host) >= kConfirmFromSeconds;
}

MethodTrial MethodTrial::confirm(const MethodTrial& decided) {
  MethodTrial trial(Method::Pack, 0, decided.next_index());
  trial.rounds_ = 1;
  trial.confirming_ = true;
  trial.host_reference_ = decided.samples_[static_cast<int>(Config::Host)];
  return trial;
}

MethodTrial::Ticket MethodTrial::next() {
  ++seen_;
  if (decided_) return {*decided_, -1};
  if (confirming_) {
    if (issued_ >= kConfirmMessages) return {prior_, -1};
    return {prior_, issued_++, true};
  }
  if (waited_ < wait_) {
    ++waited_;
    return {prior_, -1};
  }
  if (issued_ >= span()) return {current(), -1};  // all issued, some not yet recorded
  const int message = issued_++;
  const int slot = message < kMessages ? message : message - kSecondRound;
  if (slot < 0) return {current(), -1};  // between the rounds
  const Config config = kSchedule[slot].config;
  const bool in_running_round = (message >= kSecondRound) == (round_ == 1);
  if (in_running_round && ruled_out_[static_cast<int>(config)]) return {defended(), message, true};
  return {method_for(config), message, config == Config::Current};
}

bool MethodTrial::rules_out(Method method) const {
  if (!scheduling() || confirming_ || method == defended()) return false;
  return ruled_out_[static_cast<int>(method == Method::Host ? Config::Host : Config::Pack)];
}

void MethodTrial::rule_out_if_lost(Config config) {
  if (config == Config::Current || method_for(config) == defended()) return;
  const auto& mine = samples_[static_cast<int>(Config::Current)];
  if (mine.empty()) return;
  // kFarBehind is at least either margin, so each such sample is an inversion of the final test.
  const double fastest = *std::min_element(mine.begin(), mine.end());
  int lost = 0;
  for (double sample : samples_[static_cast<int>(config)]) lost += sample >= kFarBehind * fastest;
  if (lost >= kRuledOutAfter) ruled_out_[static_cast<int>(config)] = true;
}

std::optional<double> MethodTrial::PostIntervals::post(double now_seconds,
                                                       std::optional<uint64_t> waits) {
  std::optional<double> interval;
  if (posted_ && (!waits || !posted_waits_ || *waits != *posted_waits_))
    interval = now_seconds - posted_at_;
  posted_ = true;
  posted_at_ = now_seconds;
  posted_waits_ = waits;
  return interval;
}

bool MethodTrial::gauge_warmup(double now_seconds, bool host, std::optional<uint64_t> waits) {
  if (const auto interval = gauge_posts_.post(now_seconds, waits)) {
    const int kind = gauge_posted_host_ ? 1 : 0;
    gauged_fastest_[kind] =
        gauged_[kind]++ ? std::min(gauged_fastest_[kind], *interval) : *interval;
  }
  gauge_posted_host_ = host;
  const bool stops = host && gauged_[0] > 0 && gauged_[1] >= kGaugedHost &&
                     gauged_fastest_[1] >= kColdFactor * gauged_fastest_[0];
  if (stops) {
    host_far_behind_ = true;
    ruled_out_[static_cast<int>(Config::Host)] = true;
  }
  return stops;
}

std::string MethodTrial::describe_warmup() const {
  char text[96];
  std::snprintf(text, sizeof text, "as is %.1f us (%d), host %.1f us (%d)",
                gauged_fastest_[0] * 1e6, gauged_[0], gauged_fastest_[1] * 1e6, gauged_[1]);
  return text;
}

MethodTrial::Ticket MethodTrial::next_at(double now_seconds, std::optional<uint64_t> waits) {
  const auto interval = posts_.post(now_seconds, waits);
  if (interval && posted_.slot >= 0) record(posted_, *interval);
  posted_ = next();
  return posted_;
}

bool MethodTrial::conclude_confirmation() {
  const auto& packed = samples_[static_cast<int>(Config::Current)];
  if (static_cast<int>(packed.size()) < kSamples) return false;
  if (!beats(host_reference_, packed, kConfirmMargin)) {
    decided_ = Method::Pack;
    return true;
  }
  decided_ = Method::Host;
  const double base = median(host_reference_);
  double extra = 0;
  for (double sample : packed) extra += std::max(0.0, sample - base);
  cost_seconds_ += extra * kConfirmMessages / kSamples;
  return true;
}

void MethodTrial::record(const Ticket& ticket, double seconds) {
  record_sample(ticket, seconds);
  conclude();
}

void MethodTrial::record_sample(const Ticket& ticket, double seconds) {
  if (decided_ || ticket.slot < 0 || ticket.slot >= span()) return;
  if (confirming_) {
    auto& packed = samples_[static_cast<int>(Config::Current)];
    if (kConfirmTimed[ticket.slot] && static_cast<int>(packed.size()) < kSamples)
      packed.push_back(seconds);
    return;
  }
  const int round = ticket.slot >= kSecondRound;
  const int slot = ticket.slot - round * kSecondRound;
  if (round != round_ || slot >= kMessages || !kSchedule[slot].timed) return;
  const Config slot_config = kSchedule[slot].config;
  // The slot ran the defended method; or the round is complete, its conclusion still due.
  auto& samples = samples_[static_cast<int>(slot_config)];
  if (ruled_out_[static_cast<int>(slot_config)] || static_cast<int>(samples.size()) >= kSamples)
    return;
  samples.push_back(seconds);
  rule_out_if_lost(slot_config);
}

void MethodTrial::rule_out(Method method) {
  if (!scheduling() || confirming_ || method == defended()) return;
  ruled_out_[static_cast<int>(method == Method::Host ? Config::Host : Config::Pack)] = true;
}

bool MethodTrial::conclude() {
  if (decided_) return false;
  if (confirming_) return conclude_confirmation();
  for (int c = 0; c < 3; ++c)
    if (static_cast<int>(samples_[c].size()) < kSamples && !ruled_out_[c]) return false;
  // Round two defends round one's choice, round one the model's.
  const Method defended = this->defended();
  const auto& mine = samples_[static_cast<int>(Config::Current)];
  const auto& host = samples_[static_cast<int>(Config::Host)];
  const auto& pack = samples_[static_cast<int>(Config::Pack)];
  const bool host_wins = !ruled_out_[static_cast<int>(Config::Host)] &&
                         beats(host, mine, defended == Method::Pack ? kHostMargin : kMargin),
             pack_wins = !ruled_out_[static_cast<int>(Config::Pack)] && beats(pack, mine);
  Method verdict = defended;
  // Both uniform choices beating the kind as it is: packing must also beat the host by the
  // margin. On a near tie each process would pick by noise, alone, and the two can split
  // back into the very mix both just measured as slowest (one rank's receive keeping packing
  // on a near tie while its peer chose the host). The host never loses to itself.
  if (host_wins && pack_wins)
    verdict = beats(pack, host) ? Method::Pack : Method::Host;
  else if (host_wins)
    verdict = Method::Host;
  else if (pack_wins)
    verdict = Method::Pack;
  // The round's cost: its samples beyond the median of the samples that ran the verdict's
  // method, each standing for kMessages / (3 * kSamples) of the round's messages.
  const auto& verdict_samples =
      verdict == defended
          ? mine
          : samples_[static_cast<int>(verdict == Method::Host ? Config::Host : Config::Pack)];
  const double base = median(verdict_samples);
  double extra = 0;
  for (Config config : {Config::Current, Config::Host, Config::Pack})
    if (method_for(config) != verdict)
      for (double sample : samples_[static_cast<int>(config)])
        extra += std::max(0.0, sample - base);
  cost_seconds_ += extra * kMessages / (3.0 * kSamples);
  if (round_ == rounds_ - 1) {
    decided_ = verdict;
    return true;
  }
  first_round_ = verdict;
  round_ = 1;
  // Kept as numbers: formatting them here put microseconds into the message that decided.
  for (int config = 0; config < 3; ++config) {
    first_samples_[config].swap(samples_[config]);
    samples_[config].clear();
    first_ruled_out_[config] = ruled_out_[config];
    ruled_out_[config] = config == static_cast<int>(Config::Host) && host_far_behind_;
  }
  return true;
}

std::string MethodTrial::schedule_text(Method current) {
  std::string text;
  for (const auto& slot : kSchedule) {
    const Method method = slot.config == Config::Host   ? Method::Host
                          : slot.config == Config::Pack ? Method::Pack
                                                        : current;
    text += method == Method::Host ? 'H' : 'P';
  }
  return text;
}

namespace {

// " <seconds in us, one decimal> ... us"
void append_microseconds(std::string& text, const std::vector<double>& samples) {
  if (samples.empty()) return;  // a challenger ruled out before its block
  for (double seconds : samples) {
    char number[32];
    std::snprintf(number, sizeof number, " %.1f", seconds * 1e6);
    text += number;
  }
  text += " us";
}

std::string describe_round(const std::vector<double> (&samples)[3], const bool (&ruled_out)[3],
                           Method defended) {
  std::string text;
  for (auto config :
       {MethodTrial::Config::Current, MethodTrial::Config::Host, MethodTrial::Config::Pack}) {
    text += text.empty() ? "" : ", ";
    text += config == MethodTrial::Config::Current
                ? std::string("as is (") + method_name(defended) + ")"
                : std::string(method_name(config == MethodTrial::Config::Host ? Method::Host
                                                                              : Method::Pack));
    append_microseconds(text, samples[static_cast<int>(config)]);
    if (ruled_out[static_cast<int>(config)]) text += " (ruled out)";
  }
  return text;
}

}  // namespace

std::string MethodTrial::describe() const {
  if (confirming_) {
    std::string text = "pack as settled";
    append_microseconds(text, samples_[static_cast<int>(Config::Current)]);
    text += " against the host's trial samples";
    append_microseconds(text, host_reference_);
    return text;
  }
  const std::string text = describe_round(samples_, ruled_out_, defended());
  if (!first_round_) return text;
  return describe_round(first_samples_, first_ruled_out_, prior_) + " -> " +
         method_name(*first_round_) + "; then " + text;
}

}  // namespace loom::model
