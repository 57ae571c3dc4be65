// Thread-safe modes: one posting thread and one arriving thread on the same engine. After
// both finish, every message was matched exactly once, every receive exactly once, and for
// each (source, tag) class the k-th receive posted took the k-th message sent (MPI's
// non-overtaking rule). Run under ThreadSanitizer in CI.
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <thread>
#include <vector>

#include "loom/match.h"

namespace {

constexpr int kSources = 4;
constexpr int kTags = 3;

struct Pairing {
  uintptr_t recv, msg;
};

// Receive and message ids encode their class and their index within the class.
uintptr_t make_id(bool is_msg, int cls, int k) {
  return (uintptr_t{is_msg} << 62) | (static_cast<uintptr_t>(cls) << 32) |
         static_cast<uintptr_t>(k);
}
int class_of(uintptr_t id) {
  return static_cast<int>((id >> 32) & 0xffff);
}
int index_of(uintptr_t id) {
  return static_cast<int>(id & 0xffffffff);
}

struct ThreadCase {
  loom_match_backend backend;
  loom_match_threading threading;
};

class ThreadTest : public ::testing::TestWithParam<ThreadCase> {
 protected:
  // An engine with this case's backend and threading mode.
  loom_match_engine* create_engine() const {
    loom_match_config cfg;
    loom_match_config_init(&cfg);
    cfg.backend = GetParam().backend;
    cfg.threading = GetParam().threading;
    return loom_match_create(&cfg);
  }
};

TEST_P(ThreadTest, ExactReceivesKeepPerPairOrder) {
  loom_match_engine* e = create_engine();
  ASSERT_NE(e, nullptr);
  constexpr int kPerClass = 2500;
  constexpr int kClasses = kSources * kTags;
  // Both threads walk the classes in different interleavings so queues grow and shrink.
  std::vector<Pairing> from_post, from_arrive;
  std::thread poster([&] {
    std::vector<int> next(kClasses, 0);
    for (int i = 0; i < kPerClass * kClasses; ++i) {
      const int cls = (i * 7) % kClasses;
      const int k = next[cls]++;
      loom_match_envelope m;
      const int rc = loom_match_post(e, cls % kSources, cls / kSources, 0,
                                     reinterpret_cast<void*>(make_id(false, cls, k)), &m);
      if (rc == LOOM_MATCH_MATCHED)
        from_post.push_back({make_id(false, cls, k), reinterpret_cast<uintptr_t>(m.user)});
    }
  });
  std::thread arriver([&] {
    std::vector<int> next(kClasses, 0);
    for (int i = 0; i < kPerClass * kClasses; ++i) {
      const int cls = (i * 5 + i / 97) % kClasses;
      if (next[cls] >= kPerClass) continue;
      const int k = next[cls]++;
      loom_match_envelope m;
      const int rc = loom_match_arrive(e, cls % kSources, cls / kSources, 0,
                                       reinterpret_cast<void*>(make_id(true, cls, k)), &m);
      if (rc == LOOM_MATCH_MATCHED)
        from_arrive.push_back({reinterpret_cast<uintptr_t>(m.user), make_id(true, cls, k)});
    }
    // Send whatever the skewed walk skipped.
    for (int cls = 0; cls < kClasses; ++cls)
      while (next[cls] < kPerClass) {
        const int k = next[cls]++;
        loom_match_envelope m;
        if (loom_match_arrive(e, cls % kSources, cls / kSources, 0,
                              reinterpret_cast<void*>(make_id(true, cls, k)),
                              &m) == LOOM_MATCH_MATCHED)
          from_arrive.push_back({reinterpret_cast<uintptr_t>(m.user), make_id(true, cls, k)});
      }
  });
  poster.join();
  arriver.join();

  std::vector<Pairing> all = from_post;
  all.insert(all.end(), from_arrive.begin(), from_arrive.end());
  ASSERT_EQ(all.size(), static_cast<size_t>(kPerClass * kClasses)) << "lost or extra matches";
  std::vector<char> recv_seen(kPerClass * kClasses, 0), msg_seen(kPerClass * kClasses, 0);
  for (const Pairing& p : all) {
    ASSERT_EQ(class_of(p.recv), class_of(p.msg)) << "receive matched a message of another class";
    ASSERT_EQ(index_of(p.recv), index_of(p.msg))
        << "per-pair order violated in class " << class_of(p.recv);
    const size_t slot = static_cast<size_t>(class_of(p.recv) * kPerClass + index_of(p.recv));
    ASSERT_FALSE(recv_seen[slot]++) << "receive matched twice";
    ASSERT_FALSE(msg_seen[slot]++) << "message matched twice";
  }
  loom_match_stats s;
  loom_match_get_stats(e, &s);
  EXPECT_EQ(s.posted_length, 0u);
  EXPECT_EQ(s.unexpected_length, 0u);
  EXPECT_EQ(s.matched_on_post + s.matched_on_arrival, static_cast<uint64_t>(kPerClass * kClasses));
  loom_match_destroy(e);
}

// ANY_SOURCE receives, one tag: receives are taken in posting order, and for each source the
// receive index grows with that source's message index.
TEST_P(ThreadTest, WildcardReceivesKeepPerSourceOrder) {
  loom_match_engine* e = create_engine();
  ASSERT_NE(e, nullptr);
  constexpr int kCount = 20000;
  std::vector<Pairing> pairs;
  std::vector<Pairing> from_arrive;
  std::thread poster([&] {
    for (int k = 0; k < kCount; ++k) {
      loom_match_envelope m;
      if (loom_match_post(e, LOOM_MATCH_ANY_SOURCE, 1, 0,
                          reinterpret_cast<void*>(make_id(false, 0, k)), &m) == LOOM_MATCH_MATCHED)
        pairs.push_back({make_id(false, 0, k), reinterpret_cast<uintptr_t>(m.user)});
    }
  });
  std::thread arriver([&] {
    std::vector<int> next(kSources, 0);
    for (int k = 0; k < kCount; ++k) {
      const int src = (k * 3 + k / 11) % kSources;
      loom_match_envelope m;
      if (loom_match_arrive(e, src, 1, 0, reinterpret_cast<void*>(make_id(true, src, next[src]++)),
                            &m) == LOOM_MATCH_MATCHED)
        from_arrive.push_back(
            {reinterpret_cast<uintptr_t>(m.user), make_id(true, src, next[src] - 1)});
    }
  });
  poster.join();
  arriver.join();
  pairs.insert(pairs.end(), from_arrive.begin(), from_arrive.end());
  ASSERT_EQ(pairs.size(), static_cast<size_t>(kCount));
  std::vector<char> recv_seen(kCount, 0);
  std::map<int, std::map<int, int>> recv_by_source_msg;  // source -> msg index -> recv index
  for (const Pairing& p : pairs) {
    ASSERT_FALSE(recv_seen[static_cast<size_t>(index_of(p.recv))]++) << "receive matched twice";
    ASSERT_TRUE(
        recv_by_source_msg[class_of(p.msg)].emplace(index_of(p.msg), index_of(p.recv)).second)
        << "message matched twice";
  }
  for (const auto& [src, by_msg] : recv_by_source_msg) {
    int last = -1;
    for (const auto& [msg, recv] : by_msg) {
      ASSERT_GT(recv, last) << "source " << src << " message " << msg << " overtook an earlier one";
      last = recv;
    }
  }
  loom_match_destroy(e);
}

// Both threads work on the same pair at nearly the same moment (lockstep within a small
// window), which is exactly when a receive and its message race to miss each other: one
// queued as posted, the other as unexpected. Every pair must still match.
TEST_P(ThreadTest, RacingPairsNeverMissEachOther) {
  loom_match_engine* e = create_engine();
  ASSERT_NE(e, nullptr);
  loom_match_envelope m;
  for (int i = 0; i < 16; ++i) {  // entries every search must walk past
    loom_match_post(e, 1, -1000 - i, 0, nullptr, &m);
    loom_match_arrive(e, 2, 1000000 + i, 0, nullptr, &m);
  }
  constexpr int kPairs = 30000;
  std::atomic<int> posted{0}, arrived{0};
  auto run = [&](bool post) {
    std::atomic<int>& mine = post ? posted : arrived;
    std::atomic<int>& other = post ? arrived : posted;
    loom_match_envelope x;
    for (int i = 0; i < kPairs; ++i) {
      while (i - other.load(std::memory_order_acquire) > 2) std::this_thread::yield();
      if (post)
        loom_match_post(e, 0, i & 0xffff, 0, nullptr, &x);
      else
        loom_match_arrive(e, 0, i & 0xffff, 0, nullptr, &x);
      mine.store(i + 1, std::memory_order_release);
    }
  };
  std::thread poster(run, true), arriver(run, false);
  poster.join();
  arriver.join();
  loom_match_stats s;
  loom_match_get_stats(e, &s);
  EXPECT_EQ(s.posted_length, 16u) << "a receive missed its message";
  EXPECT_EQ(s.unexpected_length, 16u) << "a message missed its receive";
  EXPECT_EQ(s.matched_on_post + s.matched_on_arrival, static_cast<uint64_t>(kPairs));
  loom_match_destroy(e);
}

std::vector<ThreadCase> thread_cases() {
  std::vector<ThreadCase> out;
  for (int b = LOOM_MATCH_BACKEND_LIST; b < LOOM_MATCH_BACKEND_COUNT; ++b) {
    out.push_back({static_cast<loom_match_backend>(b), LOOM_MATCH_THREAD_TAIL_QUEUES});
    out.push_back({static_cast<loom_match_backend>(b), LOOM_MATCH_THREAD_GLOBAL_LOCK});
  }
  return out;
}

std::string thread_case_name(const ::testing::TestParamInfo<ThreadCase>& param_info) {
  return std::string(loom_match_backend_name(param_info.param.backend)) +
         (param_info.param.threading == LOOM_MATCH_THREAD_TAIL_QUEUES ? "_tailq" : "_global");
}

INSTANTIATE_TEST_SUITE_P(AllBackends, ThreadTest, ::testing::ValuesIn(thread_cases()),
                         thread_case_name);

// The hot-caching thread reads queue memory while two threads match: no data race, no loss.
TEST(ThreadTestHotCache, HeaterWithConcurrentMatching) {
  loom_match_config cfg;
  loom_match_config_init(&cfg);
  cfg.backend = LOOM_MATCH_BACKEND_ADAPTIVE;
  cfg.threading = LOOM_MATCH_THREAD_TAIL_QUEUES;
  cfg.hot_cache = 1;
  cfg.hot_cache_period_ns = 2000;
  loom_match_engine* e = loom_match_create(&cfg);
  ASSERT_NE(e, nullptr);
  constexpr int kCount = 20000;
  std::atomic<int> matched{0};
  std::thread poster([&] {
    for (int k = 0; k < kCount; ++k) {
      loom_match_envelope m;
      if (loom_match_post(e, k % 3, k, 0, nullptr, &m) == LOOM_MATCH_MATCHED) matched.fetch_add(1);
    }
  });
  std::thread arriver([&] {
    for (int k = 0; k < kCount; ++k) {
      loom_match_envelope m;
      if (loom_match_arrive(e, k % 3, k, 0, nullptr, &m) == LOOM_MATCH_MATCHED)
        matched.fetch_add(1);
    }
  });
  poster.join();
  arriver.join();
  EXPECT_EQ(matched.load(), kCount);
  loom_match_stats s;
  loom_match_get_stats(e, &s);
  EXPECT_EQ(s.posted_length + s.unexpected_length, 0u);
  loom_match_destroy(e);
}

}  // namespace
