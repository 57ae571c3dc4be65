// The chunked frame: a message of N values compressed as independent chunks behind a small
// header, so that chunks can be compressed and decompressed on several threads, or one by
// one as they are sent and received. A chunk the codec cannot shrink (or cannot encode) is
// stored raw, so a frame is never larger than the raw values plus its header. No MPI.
//
// Layout (host byte order; docs/codec.md):
//   0  "LMCF"            magic
//   4  u8 version (1), u8 codec kind, u8 element, u8 0
//   8  u32 spec fingerprint (the codec's parameters; decoding with another spec fails)
//   12 u32 values per chunk (the last chunk may hold fewer)
//   16 u64 value count
//   24 u32 per chunk: its stored bytes, bit 31 set when stored raw
//   then the chunks' bytes, back to back in order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "codec/codec.hpp"

namespace loom::codec {

struct FrameOptions {
  std::size_t chunk_bytes = kDefaultChunkBytes;  // input bytes per chunk (before rounding)
  int threads = 1;                               // threads that code chunks at once
};
inline FrameOptions frame_options(const Spec& spec) {
  return {spec.chunk_bytes, spec.threads};
}

inline constexpr std::size_t kFrameFixedBytes = 24;

// Values per chunk: chunk_bytes / element size, rounded down to the codec's quantum (>= 1).
std::size_t chunk_values(const Codec& codec, Element element, const FrameOptions& options);
std::size_t frame_chunk_count(const Codec& codec, std::size_t count, Element element,
                              const FrameOptions& options);
std::size_t frame_header_bytes(const Codec& codec, std::size_t count, Element element,
                               const FrameOptions& options);
// Header plus the raw values: a frame never exceeds this.
std::size_t max_frame_bytes(const Codec& codec, std::size_t count, Element element,
                            const FrameOptions& options);

// Compresses `count` values into a frame at `out`. Returns the frame's bytes, or 0 if it
// does not fit in `capacity` (max_frame_bytes always fits) or the codec is not a Host codec.
// With options.threads > 1 and capacity >= max_frame_bytes, chunks are coded on that many
// threads (the caller's included).
std::size_t compress_chunks(const Codec& codec, const void* in, std::size_t count, Element element,
                            void* out, std::size_t capacity, const FrameOptions& options = {});

// Decodes a frame of exactly `bytes` bytes that must hold `count` values of `element` made
// by a codec with the same spec. Returns false, having written at most `count` values, on
// any mismatch, truncation or corrupt chunk. Chunk size is read from the frame.
bool decompress_chunks(const Codec& codec, const void* in, std::size_t bytes, std::size_t count,
                       Element element, void* out, int threads = 1);

// For pipelining: the frame's header, parsed and checked against `bytes`, and one chunk at
// a time.
struct ChunkInfo {
  std::size_t offset = 0;  // of its stored bytes, from the frame's start
  std::size_t bytes = 0;   // stored bytes
  std::size_t first = 0;   // index of its first value
  std::size_t count = 0;   // values
  bool raw = false;
};
struct FrameInfo {
  Kind kind = Kind::None;
  Element element = Element::Float32;
  std::uint32_t fingerprint = 0;
  std::size_t count = 0;
  std::size_t chunk_values = 0;
  std::size_t header_bytes = 0;
  std::vector<ChunkInfo> chunks;
};
// Parses and checks a frame's header against the frame's total size `bytes`.
std::optional<FrameInfo> read_frame(const void* in, std::size_t bytes,
                                    std::string* error = nullptr);
// Decodes chunk `index` of a frame read by read_frame into out[chunk.first, +chunk.count).
bool decompress_chunk(const Codec& codec, const void* frame, const FrameInfo& info,
                      std::size_t index, void* out);

// One chunk on its own: compressed into out (capacity >= count * element size needed for
// the raw fallback). Returns the stored bytes (0 only if it does not fit) and sets *raw.
std::size_t compress_chunk(const Codec& codec, const void* in, std::size_t count, Element element,
                           void* out, std::size_t capacity, bool* raw);

// The fingerprint a frame records for a codec's parameters (not its chunking or threads).
std::uint32_t spec_fingerprint(const Spec& spec);

}  // namespace loom::codec
