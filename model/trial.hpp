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

// The first messages of the kind try the host, then the same number Loom's packing, in
// that order whatever the model chose, so that two processes exchanging such messages try
// the same method on the same message. Blocks rather than alternation: in a ping-pong a
// receive also waits for the peer to finish the previous message, and with alternating
// methods every sample would mix both. The first kWarmups messages of each block warm up
// (staging buffers, caches, the switch from the other method) and are not counted. Once kSamples of
// each are in, the model's choice stands unless every sample of the other method beat every
// sample of it by kMargin: a receive that mostly waits for its sender times noise, and noise
// must not overturn the calibration (with equal odds, all four of one method beat all four of
// the other one time in 70).
class MethodTrial {
 public:
  static constexpr int kWarmups = 2;  // per block: a switch slowed the next two messages too
  static constexpr int kSamples = 4;
  static constexpr double kMargin = 0.95;
  static constexpr int kMessages = 2 * (kWarmups + kSamples);  // messages a trial takes

  explicit MethodTrial(Method prior) : prior_(prior) {}

  // The method for the next message of the kind; the decision once there is one.
  Method next();
  // The duration of one message sent with `method`. Ignored once decided.
  void record(Method method, double seconds);
  std::optional<Method> decided() const { return decided_; }
  // The samples, e.g. "host 170 181 175 us, pack 241 247 245 us" (for LOOM_DEBUG).
  std::string describe() const;
  Method prior() const { return prior_; }

 private:
  Method prior_;
  int issued_ = 0;
  int warmed_[2] = {0, 0};
  std::vector<double> samples_[2];
  std::optional<Method> decided_;
};

}  // namespace loom::model
