// Error metrics between an array and its reconstruction, NaN-aware; and a throughput
// measurement of a spec over an array (what loom-bench calls). No MPI dependency.
#pragma once

#include <cstddef>

#include "codec/frame.hpp"

namespace loom::codec {

struct ErrorStats {
  double max_abs_error = 0;  // over positions where the original is finite
  double max_rel_error = 0;  // |x - y| / |x|; where x == 0: 0 if y == 0, else +Inf
  // 20 log10(range of finite x) - 10 log10(MSE), in long double (no overflow near the
  // largest doubles); +Inf if MSE == 0, -Inf if the finite x are constant and MSE > 0.
  double psnr_db = 0;
  double rmse = 0;
  // Positions whose non-finite value did not come back as it was (NaN for NaN, the same
  // Inf), or a finite value that came back non-finite: such positions also make both
  // maximum errors +Inf.
  std::size_t nonfinite_mismatches = 0;
  std::size_t count = 0;
};

ErrorStats compare(const void* original, const void* reconstructed, std::size_t count,
                   Element element);

struct Throughput {
  double compress_bytes_per_s = 0;    // input (raw) bytes per second
  double decompress_bytes_per_s = 0;  // output (raw) bytes per second
  double ratio = 0;                   // raw bytes / frame bytes
  std::size_t frame_bytes = 0;
  ErrorStats error;  // of the last round trip
  int repetitions = 0;
};

// Compresses and decompresses `count` values through the chunked frame with `options`
// (threads included) until at least min_seconds have passed for each direction (at least
// once). Allocates its own buffers; times wall-clock with steady_clock.
Throughput measure_throughput(const Codec& codec, const void* data, std::size_t count,
                              Element element, const FrameOptions& options,
                              double min_seconds = 0.2);

}  // namespace loom::codec
