// A contiguous host-to-device copy recast as 2-D copies of at least two rows each. With two
// ranks taking turns on one GPU, a small 1-D host-to-device copy (and any kernel) waits for the
// rank's context to be switched in; 2-D copies of two or more rows do not, and large 1-D copies
// do not either (docs/gpu.md, "Small messages").
#pragma once

#include <cstdint>

namespace loom::pack::device {

// Host-to-device copies below this many bytes go as rows.
constexpr int64_t kRowCopyBelow = 32 << 10;

// `height` rows of `width` bytes, back to back from `offset`.
struct RowCopy {
  int64_t offset = 0, width = 0, height = 0;
};

// Splits `bytes` contiguous bytes into at most two such copies, each of at least two rows, that
// cover [0, bytes) exactly once: rows of equal width when `bytes` has a divisor from 2 to 16 (the
// largest is the row count), else (a prime, or one whose factors all exceed 16) that of bytes - 3
// and a last copy of three 1-byte rows. Returns how many it wrote to `out`; 0 when bytes < 2 (one
// byte cannot form two rows).
inline int contiguous_as_rows(int64_t bytes, RowCopy out[2]) {
  if (bytes < 2) return 0;
  auto split = [](int64_t offset, int64_t n, RowCopy* copy) {
    for (int64_t height = 16; height >= 2; --height)
      if (n % height == 0) {
        *copy = RowCopy{offset, n / height, height};
        return true;
      }
    return false;
  };
  if (split(0, bytes, &out[0])) return 1;
  // Odd here (2 divides every even count), so bytes - 3 is even, and at least 2: 3 would split.
  split(0, bytes - 3, &out[0]);
  out[1] = RowCopy{bytes - 3, 1, 3};
  return 2;
}

}  // namespace loom::pack::device
