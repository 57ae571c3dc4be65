// The codec engine (codec/): spec parsing, bit rounding, each codec's promise on random and
// adversarial data, the chunked frame, corrupt input and the error metrics. MPI-free.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "codec/metrics.hpp"

using namespace loom::codec;

namespace {

// The seed of the random data: LOOM_TEST_SEED, or a fresh one; printed for reproduction.
std::uint64_t test_seed() {
  static const std::uint64_t seed = [] {
    const char* env = std::getenv("LOOM_TEST_SEED");
    const std::uint64_t s = env ? std::strtoull(env, nullptr, 10) : std::random_device{}();
    std::printf("codec tests: LOOM_TEST_SEED=%llu\n", static_cast<unsigned long long>(s));
    return s;
  }();
  return seed;
}

template <typename T>
constexpr Element element_of() {
  return sizeof(T) == 4 ? Element::Float32 : Element::Float64;
}

template <typename T>
std::vector<T> smooth(std::size_t n, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(-1, 1);
  const double phase = u(rng);
  std::vector<T> v(n);
  for (std::size_t i = 0; i < n; ++i)
    v[i] = static_cast<T>(std::sin(0.01 * i + phase) + 0.3 * std::cos(0.07 * i) + 1e-3 * u(rng));
  return v;
}

template <typename T>
std::vector<T> random_bits(std::size_t n, std::mt19937_64& rng) {
  std::vector<T> v(n);
  for (auto& x : v) {
    std::uint64_t b = rng();
    std::memcpy(&x, &b, sizeof x);
  }
  return v;
}

// Named data sets: random and adversarial.
template <typename T>
std::vector<std::pair<std::string, std::vector<T>>> data_sets(std::mt19937_64& rng) {
  using lim = std::numeric_limits<T>;
  std::vector<std::pair<std::string, std::vector<T>>> sets;
  sets.emplace_back("smooth", smooth<T>(20000, rng));
  std::uniform_real_distribution<double> u(-1e3, 1e3);
  std::vector<T> uniform(5003);
  for (auto& x : uniform) x = static_cast<T>(u(rng));
  sets.emplace_back("uniform", uniform);
  for (std::size_t n : {0, 1, 3, 5, 7, 13}) {
    auto v = smooth<T>(n, rng);
    sets.emplace_back("length" + std::to_string(n), v);
  }
  auto special = smooth<T>(4099, rng);
  for (std::size_t i = 0; i < special.size(); i += 97) special[i] = lim::quiet_NaN();
  for (std::size_t i = 5; i < special.size(); i += 131) special[i] = lim::infinity();
  for (std::size_t i = 9; i < special.size(); i += 173) special[i] = -lim::infinity();
  sets.emplace_back("nan_inf", special);
  std::vector<T> denormal(1031);
  for (std::size_t i = 0; i < denormal.size(); ++i)
    denormal[i] = lim::denorm_min() * static_cast<T>(i % 17) * (i % 2 ? 1 : -1);
  sets.emplace_back("denormal", denormal);
  std::vector<T> mixed_denormal = smooth<T>(1024, rng);
  for (std::size_t i = 0; i < mixed_denormal.size(); i += 3)
    mixed_denormal[i] = lim::min() * static_cast<T>(0.25);
  sets.emplace_back("mixed_denormal", mixed_denormal);
  sets.emplace_back("zeros", std::vector<T>(4096, T(0)));
  std::vector<T> constant(4100);
  for (std::size_t i = 0; i < constant.size(); ++i)
    constant[i] = static_cast<T>(i / 64 % 2 ? 3.25 : -1e5);
  sets.emplace_back("constant_blocks", constant);
  std::vector<T> huge = smooth<T>(2048, rng);
  for (std::size_t i = 0; i < huge.size(); i += 5) huge[i] *= lim::max() / 4;
  for (std::size_t i = 2; i < huge.size(); i += 7) huge[i] = lim::max() * (i % 2 ? 1 : -1);
  sets.emplace_back("huge", huge);
  std::vector<T> range(2048);  // huge and tiny in the same ZFP block
  for (std::size_t i = 0; i < range.size(); ++i)
    range[i] = static_cast<T>(i % 4 == 0 ? 1e20 : 1e-3 * static_cast<double>(i % 11));
  sets.emplace_back("dynamic_range", range);
  sets.emplace_back("random_bits", random_bits<T>(3000, rng));
  return sets;
}

struct RoundTrip {
  std::vector<unsigned char> frame;
  std::size_t bytes = 0;
  bool ok = false;
};

template <typename T>
RoundTrip round_trip(const Codec& codec, const std::vector<T>& in, std::vector<T>& out,
                     const FrameOptions& options) {
  const Element e = element_of<T>();
  RoundTrip r;
  r.frame.resize(max_frame_bytes(codec, in.size(), e, options));
  r.bytes =
      compress_chunks(codec, in.data(), in.size(), e, r.frame.data(), r.frame.size(), options);
  out.assign(in.size(), T(-7));
  r.ok = r.bytes > 0 && decompress_chunks(codec, r.frame.data(), r.bytes, in.size(), e, out.data(),
                                          options.threads);
  return r;
}

std::unique_ptr<Codec> codec_for(const std::string& text) {
  std::string error;
  auto spec = parse_spec(text, &error);
  EXPECT_TRUE(spec) << error;
  if (!spec) return nullptr;
  auto codec = make_codec(*spec, &error);
  EXPECT_TRUE(codec) << error;
  return codec;
}

}  // namespace

TEST(CodecSpec, ParsesAndPrintsCanonically) {
  for (const char* text :
       {"none", "zfp:rate=8", "zfp:rate=4.5", "zfp:accuracy=0.0001", "zfp:reversible", "blosc",
        "blosc:zstd", "blosc:relative=0.001", "blosc:zstd:level=9:relative=1e-05",
        "blosc:level=1:bitshuffle:relative=0.001", "zfp:accuracy=1e-06:dims=64x64x32",
        "zfp:rate=16:dims=100x7", "blosc:chunk=65536", "none:threads=4",
        "zfp:reversible:chunk=1048576:threads=2"}) {
    std::string error;
    auto spec = parse_spec(text, &error);
    ASSERT_TRUE(spec) << text << ": " << error;
    auto again = parse_spec(to_string(*spec), &error);
    ASSERT_TRUE(again) << to_string(*spec) << ": " << error;
    EXPECT_EQ(*spec, *again) << text << " -> " << to_string(*spec);
  }
  auto s = parse_spec("blosc:zstd:relative=1e-3:chunk=64K:threads=3");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->kind, Kind::Blosc);
  EXPECT_EQ(s->compressor, BloscCompressor::Zstd);
  EXPECT_DOUBLE_EQ(s->relative, 1e-3);
  EXPECT_EQ(s->chunk_bytes, 65536u);
  EXPECT_EQ(s->threads, 3);
  s = parse_spec("zfp:rate=8:dims=10x20x30");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->ndims, 3);
  EXPECT_EQ(s->dims[2], 30u);
  EXPECT_EQ(to_string(*parse_spec("blosc:lz4:chunk=256K")), "blosc");
}

TEST(CodecSpec, RejectsWithClearMessages) {
  const std::pair<const char*, const char*> cases[] = {
      {"", "unknown codec"},
      {"gzip", "unknown codec 'gzip'"},
      {"zfp", "zfp needs a mode"},
      {"zfp:rate=0", "rate takes bits per value"},
      {"zfp:rate=abc", "'rate=abc'"},
      {"zfp:rate=65", "rate takes"},
      {"zfp:accuracy=-1", "accuracy takes"},
      {"zfp:accuracy=nan", "accuracy takes"},
      {"zfp:rate=8:accuracy=1", "one ZFP mode"},
      {"zfp:reversible=1", "reversible takes no value"},
      {"zfp:rate=8:dims=0x4", "dims takes positive"},
      {"zfp:rate=8:dims=2x2x2x2", "1 to 3 extents"},
      {"zfp:rate=8:dims=4294967296x4294967296x4", "more than 2^48"},
      {"blosc:relative=1", "relative takes"},
      {"blosc:relative=0", "relative takes"},
      {"blosc:lz4:zstd", "one compressor"},
      {"blosc:level=10", "level takes"},
      {"blosc:bitshuffle=1", "bitshuffle takes no value"},
      {"zfp:rate=8:bitshuffle", "unknown option"},
      {"blosc:rate=8", "unknown option 'rate=8' for blosc"},
      {"none:relative=1e-3", "unknown option"},
      {"zfp:rate=8:", "empty option"},
      {"blosc:chunk=1", "chunk takes"},
      {"blosc:chunk=4G", "chunk takes"},
      {"blosc:threads=0", "threads takes"},
  };
  for (const auto& [text, want] : cases) {
    std::string error;
    EXPECT_FALSE(parse_spec(text, &error)) << text;
    EXPECT_NE(error.find(want), std::string::npos) << text << ": " << error;
    EXPECT_NE(error.find("codec spec '"), std::string::npos) << error;
  }
}

TEST(CodecBitRound, BitsKeptForBound) {
  EXPECT_EQ(mantissa_bits_for(1e-3, Element::Float32), 9);            // 2^-10 = 9.8e-4 <= 1e-3
  EXPECT_EQ(mantissa_bits_for(2.44140625e-4, Element::Float32), 11);  // 2^-12 exactly
  EXPECT_EQ(mantissa_bits_for(0.5, Element::Float32), 0);
  EXPECT_EQ(mantissa_bits_for(0.9, Element::Float64), 0);
  EXPECT_EQ(mantissa_bits_for(1e-30, Element::Float32), 23);
  EXPECT_EQ(mantissa_bits_for(1e-30, Element::Float64), 52);
  for (double bound : {0.4, 0.1, 1e-2, 1e-3, 3e-5, 1e-7, 1e-12}) {
    const int keep = mantissa_bits_for(bound, Element::Float64);
    EXPECT_LE(std::ldexp(1.0, -(keep + 1)), bound);
    if (keep > 0) {
      EXPECT_GT(std::ldexp(1.0, -keep), bound);  // one bit fewer would not do
    }
  }
}

TEST(CodecBitRound, SpecialValuesKeptAndBoundMet) {
  using lim = std::numeric_limits<float>;
  const float in[] = {0.0f,
                      -0.0f,
                      lim::denorm_min(),
                      lim::min() / 3,
                      lim::quiet_NaN(),
                      lim::infinity(),
                      -lim::infinity(),
                      lim::max(),
                      -lim::max(),
                      1.0f,
                      1.999f,
                      -3.1415926f};
  float out[std::size(in)];
  bit_round(in, std::size(in), Element::Float32, 2, out);
  for (std::size_t i = 0; i < 7; ++i) EXPECT_EQ(std::memcmp(&in[i], &out[i], 4), 0) << i;
  EXPECT_EQ(out[7], lim::max());  // would round up to Inf: kept as it was
  EXPECT_EQ(out[8], -lim::max());
  EXPECT_EQ(out[9], 1.0f);
  EXPECT_EQ(out[10], 2.0f);
  EXPECT_EQ(out[11], -3.0f);  // 1.5708 * 2: two bits keep 1.50 -> 3.0
  std::mt19937_64 rng(test_seed());
  std::uniform_real_distribution<double> mant(1, 2);
  std::uniform_int_distribution<int> ex(-300, 300);
  for (int keep = 0; keep <= 52; keep += 3) {
    std::vector<double> x(2000), y(2000);
    for (auto& v : x) v = std::ldexp(mant(rng), ex(rng)) * (rng() % 2 ? 1 : -1);
    bit_round(x.data(), x.size(), Element::Float64, keep, y.data());
    for (std::size_t i = 0; i < x.size(); ++i)
      ASSERT_LE(std::fabs(x[i] - y[i]), std::ldexp(std::fabs(x[i]), -(keep + 1)))
          << "keep " << keep << " x " << x[i];
  }
}

template <typename T>
void check_lossless(const std::string& text) {
  auto codec = codec_for(text);
  ASSERT_TRUE(codec);
  EXPECT_TRUE(codec->lossless());
  EXPECT_EQ(codec->error_bound().kind, ErrorBound::Kind::Exact);
  std::mt19937_64 rng(test_seed());
  for (const auto& [name, in] : data_sets<T>(rng)) {
    for (std::size_t chunk : {std::size_t{256}, kDefaultChunkBytes}) {
      FrameOptions options{chunk, 1};
      std::vector<T> out;
      auto r = round_trip(*codec, in, out, options);
      ASSERT_TRUE(r.ok) << text << " " << name;
      EXPECT_LE(r.bytes, max_frame_bytes(*codec, in.size(), element_of<T>(), options));
      ASSERT_EQ(in.size() ? std::memcmp(in.data(), out.data(), in.size() * sizeof(T)) : 0, 0)
          << text << " " << name << " chunk " << chunk;
    }
  }
}

TEST(CodecLossless, BitExactFloat) {
  for (const char* text : {"none", "zfp:reversible", "blosc", "blosc:zstd", "blosc:level=1",
                           "blosc:bitshuffle", "zfp:reversible:dims=16x8"})
    check_lossless<float>(text);
}

TEST(CodecLossless, BitExactDouble) {
  for (const char* text : {"none", "zfp:reversible", "blosc", "blosc:zstd", "blosc:bitshuffle"})
    check_lossless<double>(text);
}

template <typename T>
void check_bounded(const std::string& text, ErrorBound::Kind kind, double bound) {
  auto codec = codec_for(text);
  ASSERT_TRUE(codec);
  EXPECT_FALSE(codec->lossless());
  EXPECT_EQ(codec->error_bound().kind, kind);
  EXPECT_EQ(codec->error_bound().value, bound);
  std::mt19937_64 rng(test_seed());
  for (const auto& [name, in] : data_sets<T>(rng)) {
    for (std::size_t chunk : {std::size_t{512}, kDefaultChunkBytes}) {
      std::vector<T> out;
      auto r = round_trip(*codec, in, out, FrameOptions{chunk, 1});
      ASSERT_TRUE(r.ok) << text << " " << name;
      for (std::size_t i = 0; i < in.size(); ++i) {
        const double x = in[i], y = out[i];
        if (!std::isfinite(x)) {
          ASSERT_EQ(std::memcmp(&in[i], &out[i], sizeof(T)), 0) << text << " " << name << i;
          continue;
        }
        const double allowed = kind == ErrorBound::Kind::Absolute ? bound : bound * std::fabs(x);
        ASSERT_LE(std::fabs(x - y), allowed)
            << text << " " << name << " chunk " << chunk << " at " << i << ": " << x << " -> " << y;
      }
      const auto stats = compare(in.data(), out.data(), in.size(), element_of<T>());
      EXPECT_EQ(stats.nonfinite_mismatches, 0u);
    }
  }
}

TEST(CodecBounded, ZfpAccuracyMeetsBoundOnEveryValue) {
  for (double a : {1e-1, 1e-3, 1e-6}) {
    char text[64];
    std::snprintf(text, sizeof text, "zfp:accuracy=%g", a);
    check_bounded<float>(text, ErrorBound::Kind::Absolute, a);
    check_bounded<double>(text, ErrorBound::Kind::Absolute, a);
  }
  check_bounded<float>("zfp:accuracy=1e-12", ErrorBound::Kind::Absolute, 1e-12);
  check_bounded<double>("zfp:accuracy=1e-3:dims=8x4", ErrorBound::Kind::Absolute, 1e-3);
  check_bounded<float>("zfp:accuracy=1e-3:dims=8x4x2", ErrorBound::Kind::Absolute, 1e-3);
}

TEST(CodecBounded, BloscRelativeMeetsBoundOnEveryValue) {
  for (double e : {0.3, 1e-2, 1e-3, 1e-5, 1e-9}) {
    char text[64];
    std::snprintf(text, sizeof text, "blosc:relative=%g", e);
    check_bounded<float>(text, ErrorBound::Kind::Relative, e);
    check_bounded<double>(text, ErrorBound::Kind::Relative, e);
  }
  check_bounded<float>("blosc:zstd:relative=1e-3", ErrorBound::Kind::Relative, 1e-3);
  check_bounded<float>("blosc:bitshuffle:relative=1e-3", ErrorBound::Kind::Relative, 1e-3);
  check_bounded<double>("blosc:level=1:bitshuffle:relative=1e-4", ErrorBound::Kind::Relative, 1e-4);
}

TEST(CodecBounded, ZfpRefusesWhatItCannotKeep) {
  // ZFP alone misses 1e-3 on most of these (a block mixes 1e20 with values below 0.01):
  // the codec refuses the chunk and the frame stores it raw.
  std::vector<float> range(2048);
  for (std::size_t i = 0; i < range.size(); ++i)
    range[i] = static_cast<float>(i % 4 == 0 ? 1e20 : 1e-3 * static_cast<double>(i % 11));
  auto codec = codec_for("zfp:accuracy=1e-3");
  ASSERT_TRUE(codec);
  std::vector<unsigned char> buf(codec->max_compressed_bytes(range.size(), Element::Float32));
  EXPECT_EQ(codec->compress(range.data(), range.size(), Element::Float32, buf.data(), buf.size()),
            0u);
  std::vector<float> out;
  auto r = round_trip(*codec, range, out, {});
  ASSERT_TRUE(r.ok);
  EXPECT_TRUE(read_frame(r.frame.data(), r.bytes)->chunks[0].raw);
  EXPECT_EQ(out, range);
  // Non-finite values: every ZFP mode refuses.
  std::vector<double> special(64, 1.0);
  special[17] = std::numeric_limits<double>::infinity();
  for (const char* text : {"zfp:rate=8", "zfp:accuracy=1e-3", "zfp:reversible"}) {
    auto z = codec_for(text);
    std::vector<unsigned char> b(z->max_compressed_bytes(special.size(), Element::Float64));
    EXPECT_EQ(z->compress(special.data(), special.size(), Element::Float64, b.data(), b.size()), 0u)
        << text;
  }
}

TEST(CodecBounded, ZfpRateSizeAndShape) {
  std::mt19937_64 rng(test_seed());
  const auto in = smooth<float>(65536, rng);
  const auto in64 = smooth<double>(65536, rng);
  for (double rate : {4.0, 8.0, 16.0, 24.0}) {
    char text[64];
    std::snprintf(text, sizeof text, "zfp:rate=%g", rate);
    auto codec = codec_for(text);
    ASSERT_TRUE(codec);
    EXPECT_EQ(codec->error_bound().kind, ErrorBound::Kind::Unbounded);
    std::vector<unsigned char> buf(codec->max_compressed_bytes(in.size(), Element::Float32));
    const std::size_t bytes =
        codec->compress(in.data(), in.size(), Element::Float32, buf.data(), buf.size());
    ASSERT_GT(bytes, 0u);
    const double bits_per_value = 8.0 * bytes / in.size();
    EXPECT_GE(bits_per_value, rate) << text;
    EXPECT_LE(bits_per_value, rate + 0.01) << text;
    std::vector<float> out(in.size());
    ASSERT_TRUE(codec->decompress(buf.data(), bytes, in.size(), Element::Float32, out.data()));
    const auto stats = compare(in.data(), out.data(), in.size(), Element::Float32);
    EXPECT_EQ(stats.nonfinite_mismatches, 0u);
    // A smooth signal of amplitude ~1.3: more bits, smaller error.
    if (rate >= 16) {
      EXPECT_LT(stats.max_abs_error, 1e-2) << text;
    }
    EXPECT_GT(stats.psnr_db, 20) << text;
    // Through the frame, the same rate per chunk (plus the header).
    std::vector<double> out64;
    auto r = round_trip(*codec, in64, out64, {});
    ASSERT_TRUE(r.ok);
    EXPECT_LE(8.0 * r.bytes / in64.size(), rate + 0.1);
    // Lengths that are not a multiple of 4, and non-finite values (stored raw).
    std::vector<float> odd{1.5f, -2.0f, 3.0f, std::numeric_limits<float>::quiet_NaN(), 5.0f};
    for (std::size_t n : {1, 3, 5}) {
      std::vector<float> part(odd.begin(), odd.begin() + n), back;
      auto rr = round_trip(*codec, part, back, {});
      ASSERT_TRUE(rr.ok) << n;
      ASSERT_EQ(back.size(), n);
      if (n == 5) {  // stored raw: the NaN
        EXPECT_EQ(std::memcmp(part.data(), back.data(), 20), 0);
      }
    }
  }
}

TEST(CodecFrame, ManyChunksAndThreads) {
  std::mt19937_64 rng(test_seed());
  const auto in = smooth<float>(100003, rng);
  for (const char* text : {"zfp:accuracy=1e-4", "blosc", "blosc:relative=1e-3", "zfp:rate=8",
                           "zfp:reversible", "none"}) {
    auto codec = codec_for(text);
    ASSERT_TRUE(codec);
    FrameOptions one{4096, 1}, four{4096, 4};
    std::vector<float> out1, out4;
    auto r1 = round_trip(*codec, in, out1, one);
    auto r4 = round_trip(*codec, in, out4, four);
    ASSERT_TRUE(r1.ok && r4.ok) << text;
    ASSERT_EQ(r1.bytes, r4.bytes) << text;
    EXPECT_EQ(std::memcmp(r1.frame.data(), r4.frame.data(), r1.bytes), 0) << text;
    EXPECT_EQ(out1, out4) << text;
    auto info = read_frame(r1.frame.data(), r1.bytes);
    ASSERT_TRUE(info);
    EXPECT_EQ(info->chunks.size(), (in.size() + 1023) / 1024);
    EXPECT_EQ(info->chunks.back().count, in.size() % 1024);
    // Chunk by chunk, as a pipelined receiver would.
    std::vector<float> piecewise(in.size());
    for (std::size_t i = info->chunks.size(); i-- > 0;)
      ASSERT_TRUE(decompress_chunk(*codec, r1.frame.data(), *info, i, piecewise.data()));
    EXPECT_EQ(piecewise, out1) << text;
    // A frame made with too small a buffer: 0, not an overrun.
    std::vector<unsigned char> small(r1.bytes - 1);
    EXPECT_EQ(compress_chunks(*codec, in.data(), in.size(), Element::Float32, small.data(),
                              small.size(), one),
              0u);
  }
}

TEST(CodecFrame, IncompressibleNeverExceedsRawPlusHeader) {
  std::mt19937_64 rng(test_seed());
  for (const char* text : {"zfp:accuracy=1e-4", "zfp:reversible", "zfp:rate=32", "zfp:rate=64",
                           "blosc", "blosc:zstd", "blosc:relative=1e-6", "none"}) {
    auto codec = codec_for(text);
    ASSERT_TRUE(codec);
    for (std::size_t chunk : {std::size_t{64}, std::size_t{4096}, kDefaultChunkBytes}) {
      const auto in = random_bits<double>(50001, rng);
      FrameOptions options{chunk, 2};
      std::vector<double> out;
      auto r = round_trip(*codec, in, out, options);
      ASSERT_TRUE(r.ok) << text;
      EXPECT_LE(r.bytes, frame_header_bytes(*codec, in.size(), Element::Float64, options) +
                             in.size() * sizeof(double))
          << text << " chunk " << chunk;
      // Random bits are mostly finite doubles of every magnitude: lossless or raw.
      if (codec->lossless()) {
        EXPECT_EQ(std::memcmp(in.data(), out.data(), in.size() * 8), 0);
      }
    }
  }
}

TEST(CodecFrame, ShapedChunksFollowTheQuantum) {
  auto codec = codec_for("zfp:accuracy=1e-3:dims=32x16x37:chunk=4096");
  ASSERT_TRUE(codec);
  EXPECT_EQ(codec->chunk_quantum(), 32u * 16u * 4u);
  EXPECT_EQ(chunk_values(*codec, Element::Float32, frame_options(codec->spec())), 2048u);
  std::mt19937_64 rng(test_seed());
  const auto in = smooth<float>(32 * 16 * 37, rng);
  std::vector<float> out;
  auto r = round_trip(*codec, in, out, frame_options(codec->spec()));
  ASSERT_TRUE(r.ok);
  EXPECT_LE(compare(in.data(), out.data(), in.size(), Element::Float32).max_abs_error, 1e-3);
}

TEST(CodecCorrupt, TruncatedAndDamagedFramesFailCleanly) {
  std::mt19937_64 rng(test_seed());
  const auto in = smooth<double>(3000, rng);
  for (const char* text : {"zfp:accuracy=1e-5", "zfp:reversible", "zfp:rate=12", "blosc",
                           "blosc:zstd:relative=1e-4", "none"}) {
    auto codec = codec_for(text);
    ASSERT_TRUE(codec);
    std::vector<double> out;
    auto r = round_trip(*codec, in, out, FrameOptions{4096, 1});
    ASSERT_TRUE(r.ok);
    std::vector<unsigned char> frame(r.frame.begin(), r.frame.begin() + r.bytes);
    // Every truncation fails (the header names every chunk's size).
    for (std::size_t len = 0; len < frame.size(); len += (len < 64 ? 1 : 37)) {
      std::vector<unsigned char> cut(frame.begin(), frame.begin() + len);
      EXPECT_FALSE(decompress_chunks(*codec, cut.data(), cut.size(), in.size(), Element::Float64,
                                     out.data()))
          << text << " len " << len;
    }
    // Trailing bytes, the wrong count, element or codec fail.
    auto longer = frame;
    longer.push_back(0);
    EXPECT_FALSE(decompress_chunks(*codec, longer.data(), longer.size(), in.size(),
                                   Element::Float64, out.data()));
    EXPECT_FALSE(decompress_chunks(*codec, frame.data(), frame.size(), in.size() - 1,
                                   Element::Float64, out.data()));
    std::vector<float> as_float(in.size());
    EXPECT_FALSE(decompress_chunks(*codec, frame.data(), frame.size(), in.size(), Element::Float32,
                                   as_float.data()));
    auto other = codec_for(std::string(text) == "zfp:rate=12" ? "zfp:rate=13" : "zfp:rate=12");
    EXPECT_FALSE(decompress_chunks(*other, frame.data(), frame.size(), in.size(), Element::Float64,
                                   out.data()));
    // Damaged bytes anywhere: never a crash or an overrun (ASan watches); header damage fails.
    for (std::size_t i = 0; i < frame.size(); i += (i < 64 ? 1 : 7)) {
      auto bad = frame;
      bad[i] ^= static_cast<unsigned char>(1u << (rng() % 8));
      std::vector<double> exact(in.size());
      const bool ok = decompress_chunks(*codec, bad.data(), bad.size(), in.size(), Element::Float64,
                                        exact.data());
      if (i < kFrameFixedBytes) {
        EXPECT_FALSE(ok) << text << " byte " << i;
      }
    }
    // Garbage straight into the codec.
    for (int trial = 0; trial < 50; ++trial) {
      std::vector<unsigned char> junk(1 + rng() % 600);
      for (auto& b : junk) b = static_cast<unsigned char>(rng());
      std::vector<double> exact(1 + rng() % 300);
      (void)codec->decompress(junk.data(), junk.size(), exact.size(), Element::Float64,
                              exact.data());
    }
  }
}

TEST(CodecMetrics, ErrorsAndPsnr) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  const double x[] = {0.0, 1.0, 2.0, 4.0, nan, inf};
  const double y[] = {0.0, 1.5, 2.0, 3.0, nan, inf};
  auto s = compare(x, y, 6, Element::Float64);
  EXPECT_EQ(s.nonfinite_mismatches, 0u);
  EXPECT_DOUBLE_EQ(s.max_abs_error, 1.0);
  EXPECT_DOUBLE_EQ(s.max_rel_error, 0.5);
  const double mse = (0.25 + 1.0) / 4;
  EXPECT_NEAR(s.psnr_db, 20 * std::log10(4.0) - 10 * std::log10(mse), 1e-12);
  EXPECT_EQ(compare(x, x, 6, Element::Float64).psnr_db, inf);
  const double z[] = {1e-300, 1.0, 2.0, 4.0, 0.0, -inf};
  s = compare(x, z, 6, Element::Float64);
  EXPECT_EQ(s.nonfinite_mismatches, 2u);
  EXPECT_EQ(s.max_abs_error, inf);
  const float a[] = {0.0f, 2.0f}, b[] = {1e-30f, 2.0f};
  EXPECT_EQ(compare(a, b, 2, Element::Float32).max_rel_error, inf);  // x == 0, y != 0
  EXPECT_EQ(compare(a, b, 0, Element::Float32).count, 0u);
  // Range and squares beyond a double's: still finite.
  const double big = std::numeric_limits<double>::max();
  const double u[] = {-big, big}, w[] = {-big, big / 2};
  s = compare(u, w, 2, Element::Float64);
  EXPECT_NEAR(s.psnr_db, 20 * std::log10(2.0) - 20 * std::log10(0.5) + 10 * std::log10(2.0), 1e-9);
  EXPECT_NEAR(s.rmse, big / 2 / std::sqrt(2.0), big * 1e-12);
}

TEST(CodecInterface, HostMemoryAndBounds) {
  for (const char* text : {"none", "zfp:rate=8", "blosc:relative=0.01"}) {
    auto codec = codec_for(text);
    ASSERT_TRUE(codec);
    EXPECT_EQ(codec->memory(), Memory::Host);
    EXPECT_EQ(codec->compress(nullptr, 0, Element::Float32, nullptr, 0), 0u);
    EXPECT_EQ(to_string(codec->spec()), text);
  }
  std::vector<unsigned char> frame(kFrameFixedBytes);
  auto codec = codec_for("blosc");
  EXPECT_EQ(compress_chunks(*codec, nullptr, 0, Element::Float32, frame.data(), frame.size()),
            kFrameFixedBytes);
  EXPECT_TRUE(decompress_chunks(*codec, frame.data(), frame.size(), 0, Element::Float32, nullptr));
}
