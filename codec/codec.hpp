// The codec interface of Loom's compression engine: one codec compresses one array of
// float or double values (a chunk of a message; see frame.hpp for messages). Real libraries
// sit behind it: ZFP (fixed rate, fixed accuracy, reversible) and Blosc (shuffle + LZ4/Zstd,
// lossless or after bit rounding to a relative bound). No MPI dependency. docs/codec.md.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "codec/spec.hpp"

namespace loom::codec {

// Where a codec's input and output live. Every codec today is Host: its pointers are host
// memory and it runs on the calling thread. The slot for a CUDA codec (cuZFP, as in Zhou et
// al., ISC 2022): a codec whose memory() is Cuda takes device pointers for `in` and `out`
// of compress/decompress and runs on the device; max_compressed_bytes stays a host call.
// The chunked frame's header is host memory in both cases, so a CUDA codec must also report
// each chunk's compressed size to the host (the frame functions refuse Cuda codecs until
// one exists: they copy raw chunks with memcpy). make_codec never returns one yet.
enum class Memory { Host, Cuda };

// What a codec promises about the values it gives back.
struct ErrorBound {
  enum class Kind {
    Exact,      // bit-exact: lossless
    Absolute,   // |x - x'| <= value for every finite x; NaN and +-Inf come back as they were
    Relative,   // |x - x'| <= value * |x| for every finite x; NaN and +-Inf as they were
    Unbounded,  // lossy with no bound (ZFP fixed rate)
  };
  Kind kind = Kind::Exact;
  double value = 0;
};

class Codec {
 public:
  virtual ~Codec() = default;

  virtual const Spec& spec() const = 0;
  // An upper bound on compress's output for `count` values; a buffer this large always fits.
  virtual std::size_t max_compressed_bytes(std::size_t count, Element element) const = 0;
  // Compresses `count` values at `in` into `out` (capacity bytes). Returns the bytes
  // written, or 0 if the result does not fit in `capacity`, if count is 0, or if this codec
  // cannot encode these values within its promise (ZFP and non-finite values; ZFP accuracy
  // when a block's dynamic range defeats the bound). On 0, store the values raw (the chunked
  // frame does). `out` may have been written to even when 0 is returned.
  virtual std::size_t compress(const void* in, std::size_t count, Element element, void* out,
                               std::size_t capacity) const = 0;
  // Decompresses `bytes` bytes at `in`, which must hold exactly `count` values. Returns false
  // on input that is not such a stream (truncated, trailing bytes, a corrupt header); never
  // reads past in+bytes nor writes past `count` values at `out`. Corruption inside a ZFP
  // payload that still decodes to the right length is not detected (there is no checksum).
  virtual bool decompress(const void* in, std::size_t bytes, std::size_t count, Element element,
                          void* out) const = 0;
  virtual bool lossless() const = 0;
  virtual ErrorBound error_bound() const = 0;
  virtual Memory memory() const { return Memory::Host; }
  // Chunks of a message hold a multiple of this many values (ZFP 2-D/3-D: whole slabs of 4
  // rows or planes, so blocks do not straddle chunks).
  virtual std::size_t chunk_quantum() const { return 1; }
};

// The codec a spec names; nullptr and a message in *error if it cannot be made.
std::unique_ptr<Codec> make_codec(const Spec& spec, std::string* error = nullptr);

// Blosc's "bit rounding" (docs/codec.md): the explicit mantissa bits kept so that rounding a
// normal number to nearest at that many bits has relative error <= bound:
// keep = ceil(-log2(bound)) - 1, clamped to [0, 23] (float) or [0, 52] (double).
int mantissa_bits_for(double relative_bound, Element element);
// Rounds each normal value to `keep` explicit mantissa bits, round to nearest, ties to even.
// Zeros, subnormals, NaN and +-Inf are left as they are, and so is any value whose rounding
// would overflow to Inf. `in` and `out` may be the same.
void bit_round(const void* in, std::size_t count, Element element, int keep, void* out);

}  // namespace loom::codec
