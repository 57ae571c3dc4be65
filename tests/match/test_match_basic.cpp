// Hand-written scenarios for each backend: MPI ordering and wildcard rules, contexts,
// internal tags, probes, cancels, argument checks, statistics, very deep queues (10^5), the
// hot-caching thread, and backend selection by name and environment.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <numeric>
#include <random>
#include <vector>

#include "loom/match.h"

namespace {

void* id(uintptr_t i) {
  return reinterpret_cast<void*>(i);
}
uintptr_t id_of(const loom_match_envelope& e) {
  return reinterpret_cast<uintptr_t>(e.user);
}

class Engine {
 public:
  explicit Engine(loom_match_backend b, loom_match_threading t = LOOM_MATCH_THREAD_NONE) {
    loom_match_config cfg;
    loom_match_config_init(&cfg);
    cfg.backend = b;
    cfg.threading = t;
    e_ = loom_match_create(&cfg);
  }
  ~Engine() { loom_match_destroy(e_); }
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;
  loom_match_engine* get() const { return e_; }

  // Returns the matched id, or 0 when queued.
  uintptr_t post(int32_t s, int32_t t, uint32_t c, uintptr_t user) {
    loom_match_envelope m{};
    const int rc = loom_match_post(e_, s, t, c, id(user), &m);
    EXPECT_GE(rc, 0);
    return rc == LOOM_MATCH_MATCHED ? id_of(m) : 0;
  }
  uintptr_t arrive(int32_t s, int32_t t, uint32_t c, uintptr_t user) {
    loom_match_envelope m{};
    const int rc = loom_match_arrive(e_, s, t, c, id(user), &m);
    EXPECT_GE(rc, 0);
    return rc == LOOM_MATCH_MATCHED ? id_of(m) : 0;
  }
  loom_match_stats stats() const {
    loom_match_stats s;
    loom_match_get_stats(e_, &s);
    return s;
  }

 private:
  loom_match_engine* e_;
};

class BackendTest : public ::testing::TestWithParam<loom_match_backend> {};

TEST_P(BackendTest, ArrivalTakesEarliestPostedReceive) {
  Engine e(GetParam());
  EXPECT_EQ(e.post(LOOM_MATCH_ANY_SOURCE, 5, 0, 1), 0u);
  EXPECT_EQ(e.post(3, 5, 0, 2), 0u);
  EXPECT_EQ(e.post(3, LOOM_MATCH_ANY_TAG, 0, 3), 0u);
  EXPECT_EQ(e.arrive(3, 5, 0, 100), 1u);  // the wildcard receive was posted first
  EXPECT_EQ(e.arrive(3, 5, 0, 101), 2u);
  EXPECT_EQ(e.arrive(3, 9, 0, 102), 3u);
  EXPECT_EQ(e.stats().posted_length, 0u);
}

TEST_P(BackendTest, PostTakesEarliestArrivedMessage) {
  Engine e(GetParam());
  EXPECT_EQ(e.arrive(1, 7, 0, 10), 0u);
  EXPECT_EQ(e.arrive(2, 7, 0, 11), 0u);
  EXPECT_EQ(e.arrive(1, 7, 0, 12), 0u);
  EXPECT_EQ(e.post(1, 7, 0, 1), 10u);
  EXPECT_EQ(e.post(LOOM_MATCH_ANY_SOURCE, 7, 0, 2), 11u);
  EXPECT_EQ(e.post(LOOM_MATCH_ANY_SOURCE, LOOM_MATCH_ANY_TAG, 0, 3), 12u);
  EXPECT_EQ(e.stats().unexpected_length, 0u);
}

TEST_P(BackendTest, ContextsNeverCross) {
  Engine e(GetParam());
  EXPECT_EQ(e.post(LOOM_MATCH_ANY_SOURCE, LOOM_MATCH_ANY_TAG, 1, 1), 0u);
  EXPECT_EQ(e.arrive(0, 0, 2, 100), 0u);
  EXPECT_EQ(e.arrive(0, 0, 1, 101), 1u);
  EXPECT_EQ(e.post(0, 0, 3, 2), 0u);
  EXPECT_EQ(e.post(0, 0, 2, 3), 100u);
}

TEST_P(BackendTest, AnyTagNeverMatchesInternalTags) {
  Engine e(GetParam());
  EXPECT_EQ(e.post(4, LOOM_MATCH_ANY_TAG, 0, 1), 0u);
  EXPECT_EQ(e.post(LOOM_MATCH_ANY_SOURCE, LOOM_MATCH_ANY_TAG, 0, 2), 0u);
  EXPECT_EQ(e.arrive(4, -3, 0, 100), 0u);                    // internal tag: queued as unexpected
  EXPECT_EQ(e.post(LOOM_MATCH_ANY_SOURCE, -3, 0, 3), 100u);  // an explicit internal tag matches
  EXPECT_EQ(e.arrive(4, 0, 0, 101), 1u);
}

TEST_P(BackendTest, ProbeAndMatchedProbe) {
  Engine e(GetParam());
  loom_match_envelope m{};
  EXPECT_EQ(loom_match_probe(e.get(), LOOM_MATCH_ANY_SOURCE, 2, 0, &m), LOOM_MATCH_NOT_FOUND);
  e.arrive(6, 1, 0, 100);
  e.arrive(7, 2, 0, 101);
  ASSERT_EQ(loom_match_probe(e.get(), LOOM_MATCH_ANY_SOURCE, 2, 0, &m), LOOM_MATCH_MATCHED);
  EXPECT_EQ(id_of(m), 101u);
  EXPECT_EQ(m.source, 7);
  EXPECT_EQ(m.tag, 2);
  EXPECT_EQ(e.stats().unexpected_length, 2u);  // probe leaves it queued
  ASSERT_EQ(loom_match_mprobe(e.get(), 7, LOOM_MATCH_ANY_TAG, 0, &m), LOOM_MATCH_MATCHED);
  EXPECT_EQ(id_of(m), 101u);
  EXPECT_EQ(e.stats().unexpected_length, 1u);
  EXPECT_EQ(e.post(7, 2, 0, 1), 0u);  // it is gone
}

TEST_P(BackendTest, CancelRemovesOnlyThatReceive) {
  Engine e(GetParam());
  e.post(1, 1, 0, 1);
  e.post(1, 1, 0, 2);
  e.post(LOOM_MATCH_ANY_SOURCE, 1, 0, 3);
  EXPECT_EQ(loom_match_cancel(e.get(), 1, 1, 0, id(1)), LOOM_MATCH_MATCHED);
  EXPECT_EQ(loom_match_cancel(e.get(), 1, 1, 0, id(1)), LOOM_MATCH_NOT_FOUND);
  EXPECT_EQ(loom_match_cancel(e.get(), 1, 2, 0, id(2)), LOOM_MATCH_NOT_FOUND);  // wrong key
  EXPECT_EQ(loom_match_cancel(e.get(), LOOM_MATCH_ANY_SOURCE, 1, 0, id(3)), LOOM_MATCH_MATCHED);
  EXPECT_EQ(e.arrive(1, 1, 0, 100), 2u);
}

TEST_P(BackendTest, RejectsInvalidArguments) {
  Engine e(GetParam());
  loom_match_envelope m{};
  EXPECT_EQ(loom_match_arrive(e.get(), LOOM_MATCH_ANY_SOURCE, 0, 0, nullptr, &m),
            LOOM_MATCH_ERR_ARG);
  EXPECT_EQ(loom_match_arrive(e.get(), 0, LOOM_MATCH_ANY_TAG, 0, nullptr, &m), LOOM_MATCH_ERR_ARG);
  EXPECT_EQ(loom_match_post(e.get(), -5, 0, 0, nullptr, &m), LOOM_MATCH_ERR_ARG);
  EXPECT_EQ(e.stats().posted_length + e.stats().unexpected_length, 0u);
}

TEST_P(BackendTest, StatisticsCountSearchesAndMemory) {
  Engine e(GetParam());
  const uint64_t empty_bytes = e.stats().memory_bytes;
  for (uintptr_t i = 1; i <= 100; ++i) e.post(static_cast<int32_t>(i), 0, 0, i);
  loom_match_stats s = e.stats();
  EXPECT_EQ(s.posted_length, 100u);
  EXPECT_EQ(s.posted_peak, 100u);
  EXPECT_EQ(s.posts, 100u);
  EXPECT_GT(s.memory_bytes, empty_bytes + 100 * 16);
  EXPECT_EQ(e.arrive(100, 0, 0, 1000), 100u);  // the youngest: a deep search for linear backends
  s = e.stats();
  EXPECT_EQ(s.arrivals, 1u);
  EXPECT_EQ(s.matched_on_arrival, 1u);
  uint64_t searches = 0;
  for (uint64_t h : s.posted_search_hist) searches += h;
  EXPECT_EQ(searches, 1u);
  for (uintptr_t i = 1; i < 100; ++i) EXPECT_EQ(e.arrive(static_cast<int32_t>(i), 0, 0, 0), i);
  // Everything drained: what is left is caches (pools, tables), bounded and small.
  EXPECT_LT(e.stats().memory_bytes, empty_bytes + 64 * 1024);
}

TEST_P(BackendTest, ForeachVisitsOldestFirstAndStops) {
  Engine e(GetParam());
  for (uintptr_t i = 1; i <= 5; ++i) e.arrive(static_cast<int32_t>(i % 2), 3, 0, i);
  std::vector<uintptr_t> seen;
  auto collect = [](const loom_match_envelope* env, void* arg) {
    auto* v = static_cast<std::vector<uintptr_t>*>(arg);
    v->push_back(reinterpret_cast<uintptr_t>(env->user));
    return v->size() == 3 ? 1 : 0;
  };
  EXPECT_EQ(loom_match_foreach(e.get(), LOOM_MATCH_UNEXPECTED, collect, &seen), 3u);
  EXPECT_EQ(seen, (std::vector<uintptr_t>{1, 2, 3}));
}

// 10^5 entries in each queue: correct, if slow for the linear backends. Matches are taken at
// the youngest end, the middle and in order, so every structure's deep paths are exercised
// without a quadratic number of list steps.
TEST_P(BackendTest, DeepQueues) {
  constexpr uintptr_t kDepth = 100000;
  Engine e(GetParam());
  for (uintptr_t i = 0; i < kDepth; ++i)
    ASSERT_EQ(e.post(static_cast<int32_t>(i % 1000), static_cast<int32_t>(i / 1000), 0, i + 1), 0u);
  EXPECT_EQ(e.stats().posted_length, kDepth);
  auto src = [](uintptr_t i) { return static_cast<int32_t>(i % 1000); };
  auto tag = [](uintptr_t i) { return static_cast<int32_t>(i / 1000); };
  EXPECT_EQ(e.arrive(src(kDepth - 1), tag(kDepth - 1), 0, 1), kDepth);
  EXPECT_EQ(e.arrive(src(kDepth / 2), tag(kDepth / 2), 0, 1), kDepth / 2 + 1);
  EXPECT_EQ(loom_match_cancel(e.get(), src(kDepth - 2), tag(kDepth - 2), 0, id(kDepth - 1)),
            LOOM_MATCH_MATCHED);
  for (uintptr_t i = 0; i < kDepth - 2; ++i) {
    if (i == kDepth / 2) continue;
    ASSERT_EQ(e.arrive(src(i), tag(i), 0, 1), i + 1) << "at " << i;
  }
  EXPECT_EQ(e.stats().posted_length, 0u);

  // The unexpected side, drained by wildcard receives in arrival order.
  for (uintptr_t i = 0; i < kDepth; ++i)
    ASSERT_EQ(e.arrive(static_cast<int32_t>(i % 7), static_cast<int32_t>(i % 5), 1, i + 1), 0u);
  EXPECT_EQ(e.post(6, 0, 1, 1), 21u);  // first i with i % 7 == 6 and i % 5 == 0 is 20
  EXPECT_EQ(e.post(LOOM_MATCH_ANY_SOURCE, 4, 1, 1), 5u);
  for (uintptr_t i = 0; i < kDepth; ++i) {
    if (i == 20 || i == 4) continue;
    ASSERT_EQ(e.post(LOOM_MATCH_ANY_SOURCE, LOOM_MATCH_ANY_TAG, 1, 1), i + 1) << "at " << i;
  }
  EXPECT_EQ(e.stats().unexpected_length, 0u);
}

std::string backend_test_name(const ::testing::TestParamInfo<loom_match_backend>& param_info) {
  return loom_match_backend_name(param_info.param);
}

INSTANTIATE_TEST_SUITE_P(All, BackendTest,
                         ::testing::Values(LOOM_MATCH_BACKEND_LIST, LOOM_MATCH_BACKEND_PERPEER,
                                           LOOM_MATCH_BACKEND_LLA, LOOM_MATCH_BACKEND_SIMD,
                                           LOOM_MATCH_BACKEND_FUZZY8, LOOM_MATCH_BACKEND_FUZZY16,
                                           LOOM_MATCH_BACKEND_FUZZY32, LOOM_MATCH_BACKEND_HASH,
                                           LOOM_MATCH_BACKEND_ADAPTIVE),
                         backend_test_name);

TEST(MatchEngine, BackendNamesRoundTrip) {
  for (int b = LOOM_MATCH_BACKEND_LIST; b < LOOM_MATCH_BACKEND_COUNT; ++b) {
    const auto backend = static_cast<loom_match_backend>(b);
    EXPECT_EQ(loom_match_backend_from_name(loom_match_backend_name(backend)), backend);
  }
  EXPECT_EQ(loom_match_backend_from_name("no-such"), LOOM_MATCH_BACKEND_DEFAULT);
}

TEST(MatchEngine, DefaultBackendComesFromEnvironment) {
  setenv("LOOM_MATCH_BACKEND", "perpeer", 1);
  loom_match_engine* e = loom_match_create(nullptr);
  EXPECT_EQ(loom_match_engine_backend(e), LOOM_MATCH_BACKEND_PERPEER);
  loom_match_destroy(e);
  unsetenv("LOOM_MATCH_BACKEND");
  e = loom_match_create(nullptr);
  EXPECT_EQ(loom_match_engine_backend(e), LOOM_MATCH_BACKEND_ADAPTIVE);
  loom_match_destroy(e);
}

TEST(MatchEngine, HotCachingThreadRunsAndStops) {
  loom_match_config cfg;
  loom_match_config_init(&cfg);
  cfg.backend = LOOM_MATCH_BACKEND_SIMD;
  cfg.hot_cache = 1;
  cfg.hot_cache_period_ns = 1000;
  loom_match_engine* e = loom_match_create(&cfg);
  ASSERT_NE(e, nullptr);
  loom_match_stats s{};
  for (uintptr_t i = 1; i <= 20000; ++i) {
    loom_match_envelope m;
    loom_match_post(e, static_cast<int32_t>(i % 64), static_cast<int32_t>(i), 0, id(i), &m);
    if (i % 2 == 0) {
      ASSERT_EQ(
          loom_match_arrive(e, static_cast<int32_t>(i % 64), static_cast<int32_t>(i), 0, id(i), &m),
          LOOM_MATCH_MATCHED);
      EXPECT_EQ(id_of(m), i);
    }
    loom_match_get_stats(e, &s);
    if (s.hot_cache_passes > 3 && i > 1000) break;
  }
  EXPECT_GT(s.hot_cache_passes, 0u);
  loom_match_destroy(e);
}

}  // namespace
