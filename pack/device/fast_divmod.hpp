// Division by a run-time constant as a multiply and a shift (Granlund and Montgomery,
// "Division by invariant integers using multiplication", PLDI 1994): a GPU has no
// integer divider, and each thread of a pack kernel splits its index over up to ten
// dimensions. Host and device share this code, so the CPU tests check the arithmetic
// that the kernels run.
#pragma once

#include <cstdint>

#if defined(__CUDA_ARCH__)
#define LOOM_UNROLL _Pragma("unroll")
#elif defined(__CUDACC__)
#define LOOM_UNROLL
#else
#define LOOM_UNROLL _Pragma("GCC unroll 10")
#endif
#if defined(__CUDACC__)
#define LOOM_HOST_DEVICE __host__ __device__
#define LOOM_FORCE_INLINE __forceinline__
#else
#define LOOM_HOST_DEVICE
#define LOOM_FORCE_INLINE inline __attribute__((always_inline))
#endif

namespace loom::pack::device {

LOOM_HOST_DEVICE LOOM_FORCE_INLINE uint32_t mul_hi(uint32_t a, uint32_t b) {
#if defined(__CUDA_ARCH__)
  return __umulhi(a, b);
#else
  return static_cast<uint32_t>((static_cast<uint64_t>(a) * b) >> 32);
#endif
}

// q = n / d and r = n % d for every 32-bit n, with d >= 1 fixed at construction.
struct FastDivmod {
  uint32_t divisor = 1, multiplier = 0, shift = 0;

  FastDivmod() = default;
  explicit FastDivmod(uint32_t d) : divisor(d) {
    while ((uint64_t{1} << shift) < d) ++shift;  // shift = ceil(log2 d)
    // The 33-bit magic number 2^32 + multiplier = ceil(2^(32 + shift) / d).
    multiplier =
        static_cast<uint32_t>(((uint64_t{1} << 32) * ((uint64_t{1} << shift) - d)) / d + 1);
    if (d == 1) multiplier = 0, shift = 0;
  }

  LOOM_HOST_DEVICE LOOM_FORCE_INLINE uint32_t div(uint32_t n) const {
    return static_cast<uint32_t>((static_cast<uint64_t>(mul_hi(n, multiplier)) + n) >> shift);
  }
  LOOM_HOST_DEVICE LOOM_FORCE_INLINE void divmod(uint32_t n, uint32_t* q, uint32_t* r) const {
    *q = div(n);
    *r = n - *q * divisor;
  }
};

}  // namespace loom::pack::device
