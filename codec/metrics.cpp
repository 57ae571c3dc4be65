#include "codec/metrics.hpp"

#include <chrono>
#include <cmath>
#include <limits>
#include <vector>

namespace loom::codec {

namespace {

template <typename T>
ErrorStats compare_as(const T* x, const T* y, std::size_t count) {
  constexpr double inf = std::numeric_limits<double>::infinity();
  ErrorStats s;
  s.count = count;
  // Squares and the range of doubles near the largest finite value overflow a double.
  long double lo = inf, hi = -inf, sum_sq = 0;
  std::size_t finite = 0;
  for (std::size_t i = 0; i < count; ++i) {
    const double a = x[i], b = y[i];
    if (!std::isfinite(a)) {
      const bool same = std::isnan(a) ? std::isnan(b) : a == b;
      if (!same) {
        ++s.nonfinite_mismatches;
        s.max_abs_error = s.max_rel_error = inf;
      }
      continue;
    }
    if (!std::isfinite(b)) {
      ++s.nonfinite_mismatches;
      s.max_abs_error = s.max_rel_error = inf;
      continue;
    }
    const double err = std::fabs(a - b);
    s.max_abs_error = std::max(s.max_abs_error, err);
    const double rel = a != 0 ? err / std::fabs(a) : (err == 0 ? 0 : inf);
    s.max_rel_error = std::max(s.max_rel_error, rel);
    sum_sq += static_cast<long double>(err) * err;
    lo = std::min<long double>(lo, a);
    hi = std::max<long double>(hi, a);
    ++finite;
  }
  const long double mse = finite ? sum_sq / static_cast<long double>(finite) : 0;
  s.rmse = static_cast<double>(std::sqrt(mse));
  if (mse == 0)
    s.psnr_db = inf;
  else if (hi == lo)
    s.psnr_db = -inf;  // a constant original, reconstructed with error
  else
    s.psnr_db = static_cast<double>(20 * std::log10(hi - lo) - 10 * std::log10(mse));
  return s;
}

}  // namespace

ErrorStats compare(const void* original, const void* reconstructed, std::size_t count,
                   Element element) {
  if (element == Element::Float32)
    return compare_as(static_cast<const float*>(original), static_cast<const float*>(reconstructed),
                      count);
  return compare_as(static_cast<const double*>(original), static_cast<const double*>(reconstructed),
                    count);
}

Throughput measure_throughput(const Codec& codec, const void* data, std::size_t count,
                              Element element, const FrameOptions& options, double min_seconds) {
  using clock = std::chrono::steady_clock;
  const std::size_t raw = count * element_size(element);
  std::vector<unsigned char> frame(max_frame_bytes(codec, count, element, options));
  std::vector<std::uint64_t> back((raw + 7) / 8);
  Throughput t;
  auto seconds = [](clock::duration d) { return std::chrono::duration<double>(d).count(); };
  int reps = 0;
  const auto c0 = clock::now();
  double elapsed = 0;
  do {
    t.frame_bytes =
        compress_chunks(codec, data, count, element, frame.data(), frame.size(), options);
    ++reps;
    elapsed = seconds(clock::now() - c0);
  } while (elapsed < min_seconds);
  t.compress_bytes_per_s = static_cast<double>(raw) * reps / elapsed;
  t.repetitions = reps;
  reps = 0;
  const auto d0 = clock::now();
  do {
    decompress_chunks(codec, frame.data(), t.frame_bytes, count, element, back.data(),
                      options.threads);
    ++reps;
    elapsed = seconds(clock::now() - d0);
  } while (elapsed < min_seconds);
  t.decompress_bytes_per_s = static_cast<double>(raw) * reps / elapsed;
  t.ratio = t.frame_bytes ? static_cast<double>(raw) / static_cast<double>(t.frame_bytes) : 0;
  t.error = compare(data, back.data(), count, element);
  return t;
}

}  // namespace loom::codec
