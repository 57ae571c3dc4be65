// What a message ending inside an element costs to unpack: pack::Plan::prefix plus the prefix
// plan's unpack, against one whole element's unpack and the replaced way (pack the whole element,
// unpack it back). Build from the repository root after building Loom:
//   g++ -O2 -std=c++20 -I. docs/results/2026-12-01-s59/prefix_cost.cpp \
//       build/openmpi/pack/libloom_pack.a build/openmpi/types/libloom_types.a -o /tmp/prefix_cost
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "pack/plan.hpp"

using namespace loom;

namespace {

template <typename F>
double median_ms(F&& f) {
  std::vector<double> t;
  for (int r = 0; r < 7; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    t.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

void report(const char* what, int64_t n, const pack::Plan& plan) {
  std::vector<char> user(static_cast<size_t>(plan.extent() + 64)), packed(plan.size());
  const int64_t bytes = plan.size() - 1;  // all but the last byte
  const double whole = median_ms([&] { plan.unpack(packed.data(), 1, user.data()); });
  const double merged = median_ms([&] {
    std::vector<char> element(static_cast<size_t>(plan.size()));
    plan.pack(user.data(), 1, element.data());
    std::copy(packed.begin(), packed.begin() + bytes, element.begin());
    plan.unpack(element.data(), 1, user.data());
  });
  const double prefix =
      median_ms([&] { plan.prefix(bytes).unpack(packed.data(), 1, user.data()); });
  std::printf(
      "%-8s %8lld blocks  whole unpack %8.3f ms  prefix %8.3f ms (%.2fx)  old merge %8.3f ms "
      "(%.2fx)\n",
      what, static_cast<long long>(n), whole, prefix, prefix / whole, merged, merged / whole);
}

}  // namespace

int main() {
  for (int64_t n : {1000, 100000, 1000000}) {
    const types::Layout vector{{0, types::make_repeat(n, 8, types::make_dense(4))}};
    report("vector", n, pack::Plan(types::canonicalize(vector), n * 8, pack::Isa::Scalar));
    types::Layout indexed;
    int64_t disp = 0;
    for (int64_t i = 0; i < n; ++i) {
      indexed.push_back({disp, types::make_dense(4 + (i % 3) * 4)});
      disp += 16 + (i % 5) * 8;
    }
    report("indexed", n, pack::Plan(types::canonicalize(indexed), disp, pack::Isa::Scalar));
  }
}
