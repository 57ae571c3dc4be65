// The codec engine's configuration: which codec, its parameters, and how a message is cut
// into chunks. Parsed from the text users write (LOOM_COMPRESS, the `loom_compress` info
// hint); docs/codec.md gives the syntax. No MPI dependency.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace loom::codec {

// The data the codecs accept.
enum class Element : std::uint8_t { Float32 = 1, Float64 = 2 };

constexpr std::size_t element_size(Element e) {
  return e == Element::Float32 ? 4 : 8;
}
const char* element_name(Element e);

enum class Kind : std::uint8_t {
  None = 0,           // no compression (the frame stores every chunk raw)
  ZfpRate = 1,        // ZFP fixed rate: `rate` bits per value, no error bound
  ZfpAccuracy = 2,    // ZFP fixed accuracy: absolute error <= `accuracy` on every value
  ZfpReversible = 3,  // ZFP lossless
  Blosc = 4,          // shuffle + LZ4/Zstd; lossless, or bit rounding to `relative` first
};

enum class BloscCompressor : std::uint8_t { Lz4 = 0, Zstd = 1 };

inline constexpr std::size_t kDefaultChunkBytes = std::size_t{256} << 10;  // 256 KiB of input
inline constexpr std::size_t kMaxChunkBytes = std::size_t{1} << 30;

struct Spec {
  Kind kind = Kind::None;
  double rate = 0;      // ZfpRate: bits per value, (0, 64]
  double accuracy = 0;  // ZfpAccuracy: absolute error bound, > 0
  BloscCompressor compressor = BloscCompressor::Lz4;
  int level = 5;            // Blosc compression level, 1..9
  bool bitshuffle = false;  // Blosc: bit shuffle instead of byte shuffle
  double relative = 0;      // Blosc: 0 = lossless; else relative error bound in (0, 1)
  // ZFP shape, fastest-varying extent first (ZFP's nx, ny, nz); ndims 0 or 1: a 1-D array.
  // The slowest extent is taken from each chunk's count (docs/codec.md, "The rules of each codec").
  int ndims = 0;
  std::array<std::size_t, 3> dims{};
  // The chunked frame: input bytes per chunk (rounded to the codec's quantum), and how many
  // threads compress or decompress chunks at once.
  std::size_t chunk_bytes = kDefaultChunkBytes;
  int threads = 1;

  bool operator==(const Spec&) const = default;
};

// Parses "none", "zfp:rate=R", "zfp:accuracy=A", "zfp:reversible", "blosc",
// "blosc:zstd", "blosc:relative=E", each optionally followed by ":level=N" and ":bitshuffle"
// (Blosc),
// ":dims=NxMxK" (ZFP), ":chunk=SIZE" and ":threads=N". Returns nullopt and a message naming
// the bad part in *error (if given) on any error.
std::optional<Spec> parse_spec(std::string_view text, std::string* error = nullptr);

// The canonical text of a spec; parse_spec(to_string(s)) == s.
std::string to_string(const Spec& spec);

}  // namespace loom::codec
