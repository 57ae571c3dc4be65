// loom-codec-bench: each codec mode's compression ratio, throughput and error on a smooth
// 3-D field (a sum of sinusoids plus 0.1% noise) and on random bits, through the chunked
// frame. MPI-free; the numbers in docs/codec.md come from it.
//   loom-codec-bench [--count N] [--seconds S] [--threads T] [--double] [spec...]
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numbers>
#include <random>
#include <string>
#include <vector>

#include "codec/metrics.hpp"

using namespace loom::codec;

namespace {

template <typename T>
std::vector<T> smooth_field(std::size_t nx, std::size_t ny, std::size_t nz, std::uint64_t seed) {
  std::vector<T> v(nx * ny * nz);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> noise(-1.0, 1.0);
  const double pi2 = 2 * std::numbers::pi;
  for (std::size_t z = 0; z < nz; ++z)
    for (std::size_t y = 0; y < ny; ++y)
      for (std::size_t x = 0; x < nx; ++x) {
        const double f = std::sin(pi2 * x / 61.0) * std::cos(pi2 * y / 47.0) +
                         0.5 * std::sin(pi2 * (x + 2.0 * y + 3.0 * z) / 173.0) +
                         0.25 * std::cos(pi2 * z / 29.0 + 0.3);
        // The field spans about [-1.75, 1.75]: 0.1% noise of that range.
        v[(z * ny + y) * nx + x] = static_cast<T>(f + 0.0035 * noise(rng));
      }
  return v;
}

template <typename T>
std::vector<T> random_bits(std::size_t n, std::uint64_t seed) {
  std::vector<T> v(n);
  std::mt19937_64 rng(seed);
  for (auto& x : v) {
    std::uint64_t bits = rng();
    std::memcpy(&x, &bits, sizeof x);
  }
  return v;
}

template <typename T>
int run(std::size_t count, double seconds, int threads, std::vector<std::string> specs) {
  const Element e = sizeof(T) == 4 ? Element::Float32 : Element::Float64;
  const std::size_t nx = 128, ny = 128, nz = std::max<std::size_t>(count / (nx * ny), 1);
  const auto smooth = smooth_field<T>(nx, ny, nz, 1);
  const auto noise = random_bits<T>(smooth.size(), 2);
  std::printf("# %zu %s values (%.1f MiB), smooth field %zux%zux%zu, %d thread(s)\n", smooth.size(),
              element_name(e), smooth.size() * sizeof(T) / 1048576.0, nx, ny, nz, threads);
  std::printf("%-30s %-7s %7s %9s %9s %10s %10s %8s\n", "spec", "data", "ratio", "comp MB/s",
              "dec MB/s", "max abs", "max rel", "PSNR dB");
  for (const auto& text : specs) {
    std::string error;
    auto spec = parse_spec(text, &error);
    if (!spec) {
      std::fprintf(stderr, "%s\n", error.c_str());
      return 2;
    }
    spec->threads = threads;
    auto codec = make_codec(*spec, &error);
    if (!codec) {
      std::fprintf(stderr, "%s\n", error.c_str());
      return 2;
    }
    for (int which = 0; which < 2; ++which) {
      const auto& data = which == 0 ? smooth : noise;
      const Throughput t =
          measure_throughput(*codec, data.data(), data.size(), e, frame_options(*spec), seconds);
      std::printf("%-30s %-7s %7.2f %9.0f %9.0f %10.3g %10.3g %8.1f\n", text.c_str(),
                  which == 0 ? "smooth" : "random", t.ratio, t.compress_bytes_per_s / 1e6,
                  t.decompress_bytes_per_s / 1e6, t.error.max_abs_error, t.error.max_rel_error,
                  t.error.psnr_db);
      std::fflush(stdout);
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t count = std::size_t{4} << 20;
  double seconds = 0.5;
  int threads = 1;
  bool dbl = false;
  std::vector<std::string> specs;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--count" && i + 1 < argc) {
      count = std::strtoull(argv[++i], nullptr, 10);
    } else if (a == "--seconds" && i + 1 < argc) {
      seconds = std::strtod(argv[++i], nullptr);
    } else if (a == "--threads" && i + 1 < argc) {
      threads = std::atoi(argv[++i]);
    } else if (a == "--double") {
      dbl = true;
    } else if (a == "-h" || a == "--help") {
      std::printf(
          "usage: loom-codec-bench [--count N] [--seconds S] [--threads T] [--double] "
          "[spec...]\n");
      return 0;
    } else if (!a.empty() && a[0] == '-') {
      std::fprintf(stderr, "loom-codec-bench: unknown option '%s'\n", a.c_str());
      return 2;
    } else {
      specs.push_back(a);
    }
  }
  if (specs.empty())
    specs = {"none",
             "zfp:rate=4",
             "zfp:rate=8",
             "zfp:rate=16",
             "zfp:rate=24",
             "zfp:rate=8:dims=128x128",
             "zfp:accuracy=1e-3",
             "zfp:accuracy=1e-4",
             "zfp:accuracy=1e-4:dims=128x128",
             "zfp:reversible",
             "blosc",
             "blosc:zstd",
             "blosc:relative=1e-3",
             "blosc:relative=1e-4",
             "blosc:zstd:relative=1e-3"};
  return dbl ? run<double>(count, seconds, threads, specs)
             : run<float>(count, seconds, threads, specs);
}
