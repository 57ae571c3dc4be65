// The counter registry (runtime/counters.hpp): names, per-thread sums and the LOOM_STATS lines.
#include "runtime/counters.hpp"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

namespace {
using loom::runtime::AreaFormat;
using loom::runtime::Counter;
using loom::runtime::Unit;
namespace rt = loom::runtime;

// The report lines of one area, from a report that holds every registered area.
std::string line_of(const std::string& report, const std::string& area) {
  const std::string head = "[loom] rank 3 " + area + ":";
  const size_t at = report.find(head);
  if (at == std::string::npos) return "";
  return report.substr(at, report.find('\n', at) - at);
}

TEST(Counters, RegisteringANameTwiceGivesOneCounter) {
  const Counter a = rt::register_counter("t_twice", "grp", "key");
  const Counter b = rt::register_counter("t_twice", "grp", "key");
  const Counter other = rt::register_counter("t_twice", "grp", "other");
  EXPECT_TRUE(a.valid());
  EXPECT_EQ(a.slot(), b.slot());
  EXPECT_NE(a.slot(), other.slot());
}

TEST(Counters, FoundByFullNameWithSpacesAsUnderscores) {
  const Counter c = rt::register_counter("t_names", "online trials", "kept");
  const Counter plain = rt::register_counter("t_names", "", "calls");
  EXPECT_EQ(rt::find_counter("t_names.online_trials.kept").slot(), c.slot());
  EXPECT_EQ(rt::find_counter("t_names.calls").slot(), plain.slot());
  EXPECT_FALSE(rt::find_counter("t_names.online trials.kept").valid());
  EXPECT_FALSE(rt::find_counter("t_names.missing").valid());
  EXPECT_EQ(rt::total(rt::find_counter("t_names.missing")), 0u);
}

TEST(Counters, TotalsAddEveryThreadIncludingFinishedOnes) {
  const Counter calls = rt::register_counter("t_threads", "", "calls");
  const Counter bytes = rt::register_counter("t_threads", "", "bytes");
  constexpr int kThreads = 4, kCalls = 1000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < kCalls; ++i) rt::count_call(calls, bytes, 3);
    });
  for (auto& t : threads) t.join();
  rt::count(calls, 5);
  EXPECT_EQ(rt::total(calls), uint64_t{kThreads * kCalls + 5});
  EXPECT_EQ(rt::total(bytes), uint64_t{kThreads * kCalls * 3});
  EXPECT_EQ(rt::area_total("t_threads"), uint64_t{kThreads * kCalls * 4 + 5});
}

TEST(Counters, ReportPrintsGroupsOnceWithBarsBetween) {
  const Counter sent = rt::register_counter("t_line", "send", "packed");
  const Counter host = rt::register_counter("t_line", "send", "host");
  const Counter kept = rt::register_counter("t_line", "online trials", "kept");
  const Counter time = rt::register_counter("t_line", "kernel time", "pack", Unit::Nanoseconds);
  rt::count(sent, 7);
  rt::count(host, 2);
  rt::count(kept, 1);
  rt::count(time, 1500000000);
  EXPECT_EQ(line_of(rt::format_report(3), "t_line"),
            "[loom] rank 3 t_line: send packed=7 host=2 | online trials kept=1 | kernel time "
            "pack=1.500000s");
}

TEST(Counters, AreaFormatLeadTailShownAndOrder) {
  rt::register_counter("t_late", "", "n");
  rt::register_counter("t_early", "", "n");
  rt::register_counter("t_hidden", "", "n");
  rt::format_area("t_late", {90, [] { return std::string("isa=x"); },
                             [] { return std::string("ratio=2.000"); }});
  rt::format_area("t_early", {5});
  rt::format_area("t_hidden", {50, nullptr, nullptr, [] { return false; }});
  const std::string report = rt::format_report(3);
  EXPECT_EQ(line_of(report, "t_late"), "[loom] rank 3 t_late: isa=x n=0 | ratio=2.000");
  EXPECT_EQ(line_of(report, "t_hidden"), "");
  EXPECT_LT(report.find("t_early:"), report.find("t_late:"));
  // Every line ends in a newline.
  ASSERT_FALSE(report.empty());
  EXPECT_EQ(report.back(), '\n');
}

}  // namespace
