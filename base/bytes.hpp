// Byte counts as users write them: "65536", "256K", "256KiB", "1M", "1MiB", "2G" (powers of 1024).
// Header-only and below every other folder, like env.hpp.
#pragma once

#include <charconv>
#include <climits>
#include <cstdint>
#include <string_view>

namespace loom::base {

// Whether a count or byte offset fits an MPI int argument.
inline bool fits_int(int64_t value) {
  return value >= INT_MIN && value <= INT_MAX;
}

// False for anything else, a negative number, or a value that does not fit 63 bits.
inline bool parse_bytes(std::string_view s, int64_t* out) {
  int shift = 0;
  for (auto [suffix, bits] : {std::pair{"KiB", 10},
                              {"MiB", 20},
                              {"GiB", 30},
                              {"K", 10},
                              {"k", 10},
                              {"M", 20},
                              {"G", 30}}) {
    const std::string_view sv(suffix);
    if (s.size() > sv.size() && s.ends_with(sv)) {
      s.remove_suffix(sv.size());
      shift = bits;
      break;
    }
  }
  int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size() || v < 0 ||
      v > (INT64_MAX >> shift))
    return false;
  *out = v << shift;
  return true;
}

}  // namespace loom::base
