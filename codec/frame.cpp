#include "codec/frame.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <thread>

namespace loom::codec {

namespace {

constexpr char kMagic[4] = {'L', 'M', 'C', 'F'};
constexpr std::uint8_t kVersion = 1;
constexpr std::uint32_t kRawFlag = std::uint32_t{1} << 31;

template <typename T>
void put(unsigned char* p, T v) {
  std::memcpy(p, &v, sizeof v);
}
template <typename T>
T get(const unsigned char* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// Runs body(i) for i in [0, n) on up to `threads` threads (the caller's included); returns
// false if any call did.
template <typename Body>
bool for_chunks(std::size_t n, int threads, Body body) {
  const std::size_t workers = std::min<std::size_t>(std::max(threads, 1), n);
  if (workers <= 1) {
    for (std::size_t i = 0; i < n; ++i)
      if (!body(i)) return false;
    return true;
  }
  std::atomic<std::size_t> next{0};
  std::atomic<bool> ok{true};
  auto work = [&] {
    for (std::size_t i; ok.load(std::memory_order_relaxed) && (i = next.fetch_add(1)) < n;)
      if (!body(i)) ok.store(false);
  };
  std::vector<std::thread> pool;
  pool.reserve(workers - 1);
  for (std::size_t t = 1; t < workers; ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
  return ok.load();
}

}  // namespace

std::uint32_t spec_fingerprint(const Spec& spec) {
  Spec params = spec;
  params.chunk_bytes = kDefaultChunkBytes;
  params.threads = 1;
  std::uint32_t h = 2166136261u;  // FNV-1a
  for (unsigned char c : to_string(params)) h = (h ^ c) * 16777619u;
  return h;
}

std::size_t chunk_values(const Codec& codec, Element element, const FrameOptions& options) {
  const std::size_t size = element_size(element);
  const std::size_t bytes = std::clamp<std::size_t>(options.chunk_bytes, size, kMaxChunkBytes);
  std::size_t quantum = codec.chunk_quantum();
  if (quantum == 0 || quantum * size > kMaxChunkBytes) quantum = 1;
  return std::max<std::size_t>(bytes / size / quantum, 1) * quantum;
}

std::size_t frame_chunk_count(const Codec& codec, std::size_t count, Element element,
                              const FrameOptions& options) {
  const std::size_t per = chunk_values(codec, element, options);
  return (count + per - 1) / per;
}

std::size_t frame_header_bytes(const Codec& codec, std::size_t count, Element element,
                               const FrameOptions& options) {
  return kFrameFixedBytes + 4 * frame_chunk_count(codec, count, element, options);
}

std::size_t max_frame_bytes(const Codec& codec, std::size_t count, Element element,
                            const FrameOptions& options) {
  return frame_header_bytes(codec, count, element, options) + count * element_size(element);
}

std::size_t compress_chunk(const Codec& codec, const void* in, std::size_t count, Element element,
                           void* out, std::size_t capacity, bool* raw) {
  const std::size_t raw_bytes = count * element_size(element);
  const std::size_t bytes = codec.compress(in, count, element, out, std::min(capacity, raw_bytes));
  if (bytes > 0 && bytes < raw_bytes) {
    *raw = false;
    return bytes;
  }
  *raw = true;
  if (raw_bytes > capacity) return 0;
  if (raw_bytes) std::memcpy(out, in, raw_bytes);
  return raw_bytes;
}

std::size_t compress_chunks(const Codec& codec, const void* in, std::size_t count, Element element,
                            void* out, std::size_t capacity, const FrameOptions& options) {
  if (codec.memory() != Memory::Host) return 0;
  const std::size_t size = element_size(element);
  const std::size_t per = chunk_values(codec, element, options);
  const std::size_t n = (count + per - 1) / per;
  const std::size_t header = kFrameFixedBytes + 4 * n;
  if (capacity < header) return 0;
  auto* o = static_cast<unsigned char*>(out);
  const auto* src = static_cast<const unsigned char*>(in);
  std::memcpy(o, kMagic, 4);
  o[4] = kVersion;
  o[5] = static_cast<std::uint8_t>(codec.spec().kind);
  o[6] = static_cast<std::uint8_t>(element);
  o[7] = 0;
  put<std::uint32_t>(o + 8, spec_fingerprint(codec.spec()));
  put<std::uint32_t>(o + 12, static_cast<std::uint32_t>(per));
  put<std::uint64_t>(o + 16, count);
  auto values_in = [&](std::size_t i) { return std::min(per, count - i * per); };
  auto record = [&](std::size_t i, std::size_t bytes, bool raw) {
    put<std::uint32_t>(o + kFrameFixedBytes + 4 * i,
                       static_cast<std::uint32_t>(bytes) | (raw ? kRawFlag : 0));
  };

  if (options.threads > 1 && n > 1 && capacity >= header + count * size) {
    // Each chunk into its own slot at its raw offset, in parallel; then packed in order.
    std::vector<std::size_t> stored(n);
    for_chunks(n, options.threads, [&](std::size_t i) {
      bool raw = false;
      stored[i] = compress_chunk(codec, src + i * per * size, values_in(i), element,
                                 o + header + i * per * size, values_in(i) * size, &raw);
      record(i, stored[i], raw);
      return true;
    });
    std::size_t offset = header;
    for (std::size_t i = 0; i < n; ++i) {
      std::memmove(o + offset, o + header + i * per * size, stored[i]);
      offset += stored[i];
    }
    return offset;
  }
  std::size_t offset = header;
  for (std::size_t i = 0; i < n; ++i) {
    bool raw = false;
    const std::size_t bytes = compress_chunk(codec, src + i * per * size, values_in(i), element,
                                             o + offset, capacity - offset, &raw);
    if (bytes == 0) return 0;
    record(i, bytes, raw);
    offset += bytes;
  }
  return offset;
}

std::optional<FrameInfo> read_frame(const void* in, std::size_t bytes, std::string* error) {
  auto bad = [&](const char* why) -> std::optional<FrameInfo> {
    if (error) *error = std::string("codec frame: ") + why;
    return std::nullopt;
  };
  const auto* p = static_cast<const unsigned char*>(in);
  if (bytes < kFrameFixedBytes) return bad("shorter than its header");
  if (std::memcmp(p, kMagic, 4) != 0) return bad("bad magic");
  if (p[4] != kVersion || p[7] != 0) return bad("unknown version");
  if (p[5] > static_cast<std::uint8_t>(Kind::Blosc)) return bad("unknown codec");
  if (p[6] != static_cast<std::uint8_t>(Element::Float32) &&
      p[6] != static_cast<std::uint8_t>(Element::Float64))
    return bad("unknown element type");
  FrameInfo info;
  info.kind = static_cast<Kind>(p[5]);
  info.element = static_cast<Element>(p[6]);
  info.fingerprint = get<std::uint32_t>(p + 8);
  info.chunk_values = get<std::uint32_t>(p + 12);
  const std::uint64_t count = get<std::uint64_t>(p + 16);
  const std::size_t size = element_size(info.element);
  if (info.chunk_values == 0 || info.chunk_values * size > kMaxChunkBytes)
    return bad("bad chunk size");
  // Every chunk costs 4 header bytes, so the count is bounded by the frame's size.
  const std::uint64_t n = (count + info.chunk_values - 1) / info.chunk_values;
  if (n > (bytes - kFrameFixedBytes) / 4) return bad("truncated header");
  info.count = count;
  info.header_bytes = kFrameFixedBytes + 4 * n;
  info.chunks.resize(n);
  std::size_t offset = info.header_bytes;
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint32_t word = get<std::uint32_t>(p + kFrameFixedBytes + 4 * i);
    ChunkInfo& c = info.chunks[i];
    c.raw = (word & kRawFlag) != 0;
    c.bytes = word & ~kRawFlag;
    c.first = i * info.chunk_values;
    c.count = std::min<std::size_t>(info.chunk_values, count - c.first);
    c.offset = offset;
    if (c.bytes == 0 || (c.raw && c.bytes != c.count * size) || c.bytes > bytes - offset)
      return bad("bad or truncated chunk");
    offset += c.bytes;
  }
  if (offset != bytes) return bad("trailing bytes after the last chunk");
  return info;
}

bool decompress_chunk(const Codec& codec, const void* frame, const FrameInfo& info,
                      std::size_t index, void* out) {
  if (index >= info.chunks.size()) return false;
  const ChunkInfo& c = info.chunks[index];
  const std::size_t size = element_size(info.element);
  const auto* src = static_cast<const unsigned char*>(frame) + c.offset;
  auto* dst = static_cast<unsigned char*>(out) + c.first * size;
  if (c.raw) {
    std::memcpy(dst, src, c.bytes);
    return true;
  }
  return codec.decompress(src, c.bytes, c.count, info.element, dst);
}

bool decompress_chunks(const Codec& codec, const void* in, std::size_t bytes, std::size_t count,
                       Element element, void* out, int threads) {
  if (codec.memory() != Memory::Host) return false;
  auto info = read_frame(in, bytes);
  if (!info || info->count != count || info->element != element ||
      info->kind != codec.spec().kind || info->fingerprint != spec_fingerprint(codec.spec()))
    return false;
  return for_chunks(info->chunks.size(), threads,
                    [&](std::size_t i) { return decompress_chunk(codec, in, *info, i, out); });
}

}  // namespace loom::codec
