#include "codec/spec.hpp"

#include "base/bytes.hpp"

#include <charconv>
#include <cmath>
#include <vector>

namespace loom::codec {

const char* element_name(Element e) {
  return e == Element::Float32 ? "float32" : "float64";
}

namespace {

bool fail(std::string* error, std::string message) {
  if (error) *error = std::move(message);
  return false;
}

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> parts;
  for (;;) {
    auto at = s.find(sep);
    parts.push_back(s.substr(0, at));
    if (at == std::string_view::npos) return parts;
    s.remove_prefix(at + 1);
  }
}

bool parse_double(std::string_view s, double* out) {
  if (s.empty()) return false;
  double v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || !std::isfinite(v)) return false;
  *out = v;
  return true;
}

bool parse_size(std::string_view s, std::size_t* out) {
  if (s.empty()) return false;
  std::size_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return false;
  *out = v;
  return true;
}

// "65536", "256K", "1MiB"... (base/bytes.hpp), at most kMaxChunkBytes.
bool parse_bytes(std::string_view s, std::size_t* out) {
  int64_t v = 0;
  if (!base::parse_bytes(s, &v) || v > static_cast<int64_t>(kMaxChunkBytes)) return false;
  *out = static_cast<std::size_t>(v);
  return true;
}

std::string format_double(double v) {
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, ec == std::errc() ? end : buf);
}

}  // namespace

std::optional<Spec> parse_spec(std::string_view text, std::string* error) {
  Spec spec;
  auto parts = split(text, ':');
  const std::string_view name = parts[0];
  auto bad = [&](std::string message) -> std::optional<Spec> {
    fail(error, "codec spec '" + std::string(text) + "': " + message);
    return std::nullopt;
  };
  bool is_zfp = false;
  if (name == "none") {
    spec.kind = Kind::None;
  } else if (name == "zfp") {
    is_zfp = true;
  } else if (name == "blosc") {
    spec.kind = Kind::Blosc;
  } else {
    return bad("unknown codec '" + std::string(name) + "' (none, zfp, blosc)");
  }
  bool have_mode = false, have_compressor = false;
  for (std::size_t i = 1; i < parts.size(); ++i) {
    const std::string_view part = parts[i];
    const auto eq = part.find('=');
    const std::string_view key = part.substr(0, eq);
    const std::string_view value =
        eq == std::string_view::npos ? std::string_view{} : part.substr(eq + 1);
    const bool has_value = eq != std::string_view::npos;
    std::string item(1, '\'');  // not "'" + std::string(part): GCC 12's false -Wrestrict
    item.append(part).push_back('\'');
    if (part.empty()) return bad("empty option (two ':' in a row, or a trailing ':')");
    if (key == "chunk") {
      if (!parse_bytes(value, &spec.chunk_bytes) || spec.chunk_bytes < 64)
        return bad(item + ": chunk takes a size in bytes, 64 to 1GiB (e.g. 262144, 256K, 1M)");
    } else if (key == "threads") {
      std::size_t n = 0;
      if (!parse_size(value, &n) || n < 1 || n > 256)
        return bad(item + ": threads takes a count, 1 to 256");
      spec.threads = static_cast<int>(n);
    } else if (is_zfp && key == "rate") {
      if (have_mode) return bad(item + ": give one ZFP mode (rate, accuracy or reversible)");
      if (!parse_double(value, &spec.rate) || spec.rate <= 0 || spec.rate > 64)
        return bad(item + ": rate takes bits per value, > 0 and <= 64 (e.g. 4, 8, 16, 24)");
      spec.kind = Kind::ZfpRate;
      have_mode = true;
    } else if (is_zfp && key == "accuracy") {
      if (have_mode) return bad(item + ": give one ZFP mode (rate, accuracy or reversible)");
      if (!parse_double(value, &spec.accuracy) || spec.accuracy <= 0)
        return bad(item + ": accuracy takes an absolute error bound > 0 (e.g. 1e-4)");
      spec.kind = Kind::ZfpAccuracy;
      have_mode = true;
    } else if (is_zfp && key == "reversible") {
      if (has_value) return bad(item + ": reversible takes no value");
      if (have_mode) return bad(item + ": give one ZFP mode (rate, accuracy or reversible)");
      spec.kind = Kind::ZfpReversible;
      have_mode = true;
    } else if (is_zfp && key == "dims") {
      auto extents = split(value, 'x');
      if (extents.size() > 3) return bad(item + ": dims takes 1 to 3 extents, NxMxK");
      spec.ndims = static_cast<int>(extents.size());
      for (std::size_t d = 0; d < extents.size(); ++d) {
        if (!parse_size(extents[d], &spec.dims[d]) || spec.dims[d] == 0 ||
            spec.dims[d] > (std::size_t{1} << 32))
          return bad(item + ": dims takes positive extents, fastest first, e.g. dims=64x64x32");
      }
      std::size_t product = 1;
      for (int d = 0; d < spec.ndims; ++d) {
        if (spec.dims[d] > (std::size_t{1} << 48) / product)
          return bad(item + ": dims describes more than 2^48 values");
        product *= spec.dims[d];
      }
    } else if (!is_zfp && spec.kind == Kind::Blosc && (key == "lz4" || key == "zstd")) {
      if (has_value) return bad(item + ": " + std::string(key) + " takes no value");
      if (have_compressor) return bad(item + ": give one compressor (lz4 or zstd)");
      spec.compressor = key == "lz4" ? BloscCompressor::Lz4 : BloscCompressor::Zstd;
      have_compressor = true;
    } else if (!is_zfp && spec.kind == Kind::Blosc && key == "level") {
      std::size_t n = 0;
      if (!parse_size(value, &n) || n < 1 || n > 9) return bad(item + ": level takes 1 to 9");
      spec.level = static_cast<int>(n);
    } else if (!is_zfp && spec.kind == Kind::Blosc && key == "bitshuffle") {
      if (has_value) return bad(item + ": bitshuffle takes no value");
      spec.bitshuffle = true;
    } else if (!is_zfp && spec.kind == Kind::Blosc && key == "relative") {
      if (!parse_double(value, &spec.relative) || spec.relative <= 0 || spec.relative >= 1)
        return bad(item + ": relative takes a relative error bound, > 0 and < 1 (e.g. 1e-3)");
    } else {
      return bad("unknown option " + item + " for " + std::string(name) +
                 (is_zfp ? " (rate=, accuracy=, reversible, dims=, chunk=, threads=)"
                  : spec.kind == Kind::Blosc
                      ? " (lz4, zstd, level=, bitshuffle, relative=, chunk=, threads=)"
                      : " (chunk=, threads=)"));
    }
  }
  if (is_zfp && !have_mode)
    return bad("zfp needs a mode: zfp:rate=R, zfp:accuracy=A or zfp:reversible");
  return spec;
}

std::string to_string(const Spec& spec) {
  std::string s;
  switch (spec.kind) {
    case Kind::None:
      s = "none";
      break;
    case Kind::ZfpRate:
      s = "zfp:rate=" + format_double(spec.rate);
      break;
    case Kind::ZfpAccuracy:
      s = "zfp:accuracy=" + format_double(spec.accuracy);
      break;
    case Kind::ZfpReversible:
      s = "zfp:reversible";
      break;
    case Kind::Blosc:
      s = spec.compressor == BloscCompressor::Zstd ? "blosc:zstd" : "blosc";
      if (spec.level != 5) s += ":level=" + std::to_string(spec.level);
      if (spec.bitshuffle) s += ":bitshuffle";
      if (spec.relative > 0) s += ":relative=" + format_double(spec.relative);
      break;
  }
  if (spec.ndims > 0) {
    s += ":dims=";
    for (int d = 0; d < spec.ndims; ++d) {
      if (d) s += 'x';
      s += std::to_string(spec.dims[d]);
    }
  }
  if (spec.chunk_bytes != kDefaultChunkBytes) s += ":chunk=" + std::to_string(spec.chunk_bytes);
  if (spec.threads != 1) s += ":threads=" + std::to_string(spec.threads);
  return s;
}

}  // namespace loom::codec
