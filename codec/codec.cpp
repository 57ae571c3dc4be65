#include "codec/codec.hpp"

#include <blosc.h>
#include <zfp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

namespace loom::codec {

// ---------------------------------------------------------------------------------------
// Bit rounding.

int mantissa_bits_for(double relative_bound, Element element) {
  const int full = element == Element::Float32 ? 23 : 52;
  if (!(relative_bound > 0)) return full;
  const double need = std::ceil(-std::log2(relative_bound)) - 1;
  return static_cast<int>(std::clamp(need, 0.0, static_cast<double>(full)));
}

namespace {

template <typename U, int kMantissa, int kExponentBits>
void bit_round_as(const void* in, std::size_t count, int keep, void* out) {
  const int drop = kMantissa - keep;
  if (drop <= 0) {
    if (in != out) std::memmove(out, in, count * sizeof(U));
    return;
  }
  constexpr U kExpMask = (U{1} << kExponentBits) - 1;
  const U half_minus_one = (U{1} << (drop - 1)) - 1;
  const U keep_mask = ~((U{1} << drop) - 1);
  const auto* src = static_cast<const unsigned char*>(in);
  auto* dst = static_cast<unsigned char*>(out);
  for (std::size_t i = 0; i < count; ++i) {
    U u;
    std::memcpy(&u, src + i * sizeof(U), sizeof(U));
    // Branch-free, so that the compiler vectorises it.
    const U exponent = (u >> kMantissa) & kExpMask;
    const U r = (u + half_minus_one + ((u >> drop) & 1)) & keep_mask;  // nearest, ties to even
    const bool normal = (exponent != 0) & (exponent != kExpMask) &
                        (((r >> kMantissa) & kExpMask) != kExpMask);  // not rounded up to Inf
    u = normal ? r : u;
    std::memcpy(dst + i * sizeof(U), &u, sizeof(U));
  }
}

}  // namespace

void bit_round(const void* in, std::size_t count, Element element, int keep, void* out) {
  if (element == Element::Float32)
    bit_round_as<std::uint32_t, 23, 8>(in, count, keep, out);
  else
    bit_round_as<std::uint64_t, 52, 11>(in, count, keep, out);
}

namespace {

bool all_finite(const void* in, std::size_t count, Element element) {
  if (element == Element::Float32) {
    const auto* p = static_cast<const float*>(in);
    for (std::size_t i = 0; i < count; ++i)
      if (!std::isfinite(p[i])) return false;
  } else {
    const auto* p = static_cast<const double*>(in);
    for (std::size_t i = 0; i < count; ++i)
      if (!std::isfinite(p[i])) return false;
  }
  return true;
}

// ---------------------------------------------------------------------------------------
// none: the values themselves.

class NoneCodec final : public Codec {
 public:
  explicit NoneCodec(const Spec& spec) : spec_(spec) {}
  const Spec& spec() const override { return spec_; }
  std::size_t max_compressed_bytes(std::size_t count, Element e) const override {
    return count * element_size(e);
  }
  std::size_t compress(const void* in, std::size_t count, Element e, void* out,
                       std::size_t capacity) const override {
    const std::size_t bytes = count * element_size(e);
    if (bytes == 0 || bytes > capacity) return 0;
    std::memcpy(out, in, bytes);
    return bytes;
  }
  bool decompress(const void* in, std::size_t bytes, std::size_t count, Element e,
                  void* out) const override {
    if (bytes != count * element_size(e)) return false;
    if (bytes) std::memcpy(out, in, bytes);
    return true;
  }
  bool lossless() const override { return true; }
  ErrorBound error_bound() const override { return {}; }

 private:
  Spec spec_;
};

// ---------------------------------------------------------------------------------------
// ZFP.

struct ZfpStreamDeleter {
  void operator()(zfp_stream* z) const { zfp_stream_close(z); }
};
struct ZfpFieldDeleter {
  void operator()(zfp_field* f) const { zfp_field_free(f); }
};
struct BitstreamDeleter {
  void operator()(bitstream* s) const { stream_close(s); }
};
using ZfpStreamPtr = std::unique_ptr<zfp_stream, ZfpStreamDeleter>;
using ZfpFieldPtr = std::unique_ptr<zfp_field, ZfpFieldDeleter>;
using BitstreamPtr = std::unique_ptr<bitstream, BitstreamDeleter>;

// Slack after a stream being decoded: ZFP's bit reader fetches whole 64-bit words ahead.
constexpr std::size_t kZfpSlackWords = 8;

class ZfpCodec final : public Codec {
 public:
  explicit ZfpCodec(const Spec& spec) : spec_(spec) {}
  const Spec& spec() const override { return spec_; }

  std::size_t max_compressed_bytes(std::size_t count, Element e) const override {
    if (count == 0) return 0;
    ZfpFieldPtr field = make_field(nullptr, count, e);
    ZfpStreamPtr zfp = make_stream(e, zfp_field_dimensionality(field.get()));
    return zfp_stream_maximum_size(zfp.get(), field.get());
  }

  std::size_t compress(const void* in, std::size_t count, Element e, void* out,
                       std::size_t capacity) const override {
    if (count == 0 || !all_finite(in, count, e)) return 0;
    ZfpFieldPtr field = make_field(const_cast<void*>(in), count, e);
    ZfpStreamPtr zfp = make_stream(e, zfp_field_dimensionality(field.get()));
    // ZFP's writer does not check bounds: encode into a word-aligned scratch buffer of its
    // maximum size, then copy out what fits.
    const std::size_t max_bytes = zfp_stream_maximum_size(zfp.get(), field.get());
    std::vector<std::uint64_t> scratch(max_bytes / 8 + kZfpSlackWords);
    BitstreamPtr bits(stream_open(scratch.data(), scratch.size() * 8));
    zfp_stream_set_bit_stream(zfp.get(), bits.get());
    zfp_stream_rewind(zfp.get());
    const std::size_t bytes = zfp_compress(zfp.get(), field.get());
    if (bytes == 0 || bytes > capacity) return 0;
    if (spec_.kind == Kind::ZfpAccuracy && !meets_accuracy(scratch, bytes, in, count, e)) return 0;
    std::memcpy(out, scratch.data(), bytes);
    return bytes;
  }

  bool decompress(const void* in, std::size_t bytes, std::size_t count, Element e,
                  void* out) const override {
    if (count == 0) return bytes == 0;
    ZfpFieldPtr field = make_field(out, count, e);
    ZfpStreamPtr zfp = make_stream(e, zfp_field_dimensionality(field.get()));
    const std::size_t max_bytes = zfp_stream_maximum_size(zfp.get(), field.get());
    if (bytes == 0 || bytes > max_bytes) return false;
    // A copy padded with zeros to the maximum size: ZFP's reader does not check bounds, but
    // it never reads past the maximum size however corrupt the stream.
    std::vector<std::uint64_t> padded(max_bytes / 8 + kZfpSlackWords, 0);
    std::memcpy(padded.data(), in, bytes);
    return decode(padded, bytes, zfp.get(), field.get());
  }

  bool lossless() const override { return spec_.kind == Kind::ZfpReversible; }
  ErrorBound error_bound() const override {
    switch (spec_.kind) {
      case Kind::ZfpAccuracy:
        return {ErrorBound::Kind::Absolute, spec_.accuracy};
      case Kind::ZfpRate:
        return {ErrorBound::Kind::Unbounded, 0};
      default:
        return {};
    }
  }
  std::size_t chunk_quantum() const override {
    if (spec_.ndims == 2) return spec_.dims[0] * 4;
    if (spec_.ndims == 3) return spec_.dims[0] * spec_.dims[1] * 4;
    return 1;
  }

 private:
  // The shape of `count` values: dims' fast extents with the slowest from count when count
  // is a multiple of the fast extents' product; 1-D otherwise.
  ZfpFieldPtr make_field(void* data, std::size_t count, Element e) const {
    const zfp_type type = e == Element::Float32 ? zfp_type_float : zfp_type_double;
    if (spec_.ndims == 2 && count % spec_.dims[0] == 0)
      return ZfpFieldPtr(zfp_field_2d(data, type, spec_.dims[0], count / spec_.dims[0]));
    const std::size_t plane = spec_.dims[0] * spec_.dims[1];
    if (spec_.ndims == 3 && count % plane == 0)
      return ZfpFieldPtr(zfp_field_3d(data, type, spec_.dims[0], spec_.dims[1], count / plane));
    return ZfpFieldPtr(zfp_field_1d(data, type, count));
  }

  ZfpStreamPtr make_stream(Element e, unsigned dims) const {
    ZfpStreamPtr zfp(zfp_stream_open(nullptr));
    const zfp_type type = e == Element::Float32 ? zfp_type_float : zfp_type_double;
    switch (spec_.kind) {
      case Kind::ZfpRate:
        zfp_stream_set_rate(zfp.get(), spec_.rate, type, dims, zfp_false);
        break;
      case Kind::ZfpAccuracy:
        zfp_stream_set_accuracy(zfp.get(), spec_.accuracy);
        break;
      default:
        zfp_stream_set_reversible(zfp.get());
        break;
    }
    return zfp;
  }

  static bool decode(std::vector<std::uint64_t>& padded, std::size_t bytes, zfp_stream* zfp,
                     zfp_field* field) {
    BitstreamPtr bits(stream_open(padded.data(), padded.size() * 8));
    zfp_stream_set_bit_stream(zfp, bits.get());
    zfp_stream_rewind(zfp);
    // The stream must end exactly where the encoder's did.
    return zfp_decompress(zfp, field) == bytes;
  }

  // Fixed accuracy: ZFP meets its tolerance unless a block's dynamic range exceeds its
  // block-floating-point precision (ZFP FAQ); decode and check every value.
  bool meets_accuracy(std::vector<std::uint64_t>& stream, std::size_t bytes, const void* in,
                      std::size_t count, Element e) const {
    std::vector<std::uint64_t> decoded((count * element_size(e) + 7) / 8);
    ZfpFieldPtr field = make_field(decoded.data(), count, e);
    ZfpStreamPtr zfp = make_stream(e, zfp_field_dimensionality(field.get()));
    if (!decode(stream, bytes, zfp.get(), field.get())) return false;
    const double tol = spec_.accuracy;
    if (e == Element::Float32) {
      const auto* x = static_cast<const float*>(in);
      const auto* y = reinterpret_cast<const float*>(decoded.data());
      for (std::size_t i = 0; i < count; ++i)
        if (!(std::fabs(static_cast<double>(x[i]) - static_cast<double>(y[i])) <= tol))
          return false;
    } else {
      const auto* x = static_cast<const double*>(in);
      const auto* y = reinterpret_cast<const double*>(decoded.data());
      for (std::size_t i = 0; i < count; ++i)
        if (!(std::fabs(x[i] - y[i]) <= tol)) return false;
    }
    return true;
  }

  Spec spec_;
};

// ---------------------------------------------------------------------------------------
// Blosc.

class BloscCodec final : public Codec {
 public:
  explicit BloscCodec(const Spec& spec)
      : spec_(spec), compname_(spec.compressor == BloscCompressor::Zstd ? "zstd" : "lz4") {}
  const Spec& spec() const override { return spec_; }
  std::size_t max_compressed_bytes(std::size_t count, Element e) const override {
    return count == 0 ? 0 : count * element_size(e) + BLOSC_MAX_OVERHEAD;
  }
  std::size_t compress(const void* in, std::size_t count, Element e, void* out,
                       std::size_t capacity) const override {
    const std::size_t size = element_size(e), bytes = count * size;
    if (count == 0 || bytes > BLOSC_MAX_BUFFERSIZE) return 0;
    const void* src = in;
    if (spec_.relative > 0) {
      // Reused per thread: a fresh chunk-sized buffer each call is an mmap and its page
      // faults, which cost as much as the rounding itself.
      thread_local std::vector<std::uint64_t> rounded;
      if (rounded.size() < (bytes + 7) / 8) rounded.resize((bytes + 7) / 8);
      bit_round(in, count, e, mantissa_bits_for(spec_.relative, e), rounded.data());
      src = rounded.data();
    }
    const int n = blosc_compress_ctx(
        spec_.level, spec_.bitshuffle ? BLOSC_BITSHUFFLE : BLOSC_SHUFFLE, size, bytes, src, out,
        std::min<std::size_t>(capacity, bytes + BLOSC_MAX_OVERHEAD), compname_, 0, 1);
    return n > 0 ? static_cast<std::size_t>(n) : 0;
  }
  bool decompress(const void* in, std::size_t bytes, std::size_t count, Element e,
                  void* out) const override {
    const std::size_t expect = count * element_size(e);
    if (count == 0) return bytes == 0;
    std::size_t nbytes = 0, cbytes = 0, blocksize = 0;
    if (bytes < BLOSC_MIN_HEADER_LENGTH || blosc_cbuffer_validate(in, bytes, &nbytes) != 0 ||
        nbytes != expect)
      return false;
    blosc_cbuffer_sizes(in, &nbytes, &cbytes, &blocksize);
    if (cbytes != bytes) return false;
    return blosc_decompress_ctx(in, out, expect, 1) == static_cast<int>(expect);
  }
  bool lossless() const override { return spec_.relative == 0; }
  ErrorBound error_bound() const override {
    if (spec_.relative > 0) return {ErrorBound::Kind::Relative, spec_.relative};
    return {};
  }

 private:
  Spec spec_;
  const char* compname_;
};

}  // namespace

std::unique_ptr<Codec> make_codec(const Spec& spec, std::string* error) {
  switch (spec.kind) {
    case Kind::None:
      return std::make_unique<NoneCodec>(spec);
    case Kind::ZfpRate:
    case Kind::ZfpAccuracy:
    case Kind::ZfpReversible:
      return std::make_unique<ZfpCodec>(spec);
    case Kind::Blosc:
      if (blosc_compname_to_compcode(spec.compressor == BloscCompressor::Zstd ? "zstd" : "lz4") <
          0) {
        if (error) *error = "this Blosc library was built without the requested compressor";
        return nullptr;
      }
      return std::make_unique<BloscCodec>(spec);
  }
  if (error) *error = "unknown codec kind";
  return nullptr;
}

}  // namespace loom::codec
