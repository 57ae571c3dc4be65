// Every backend against the reference model on long random operation sequences: wildcards,
// negative tags, several contexts, cancels, probes, matched probes, deep and shallow phases,
// fuzzy-key collisions, all ISAs, all threading modes (driven from one thread here), and
// allocation failures. Any divergence in which receive matches which message fails the test
// with the seed and step needed to replay it.
//
//   LOOM_MATCH_OPS=N   operations per backend in the main run (default 1000000)
//   LOOM_MATCH_SEED=S  seed (default fixed; printed on failure)
#include <gtest/gtest.h>

#include <cstdlib>
#include <random>
#include <string>

#include "tests/match/match_model.hpp"

namespace loom::match_test {
namespace {

uint64_t env_u64(const char* name, uint64_t fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::strtoull(v, nullptr, 0) : fallback;
}
uint64_t main_ops() {
  return env_u64("LOOM_MATCH_OPS", 1000000);
}
uint64_t base_seed() {
  return env_u64("LOOM_MATCH_SEED", 0x10035eed);
}

// Random operations in phases that fill, drain or churn the queues, with varying wildcard
// rates and key-space widths, so queues range from empty to a few thousand entries and the
// adaptive backend switches structure many times.
class OpGenerator {
 public:
  explicit OpGenerator(uint64_t seed) : rng_(seed) {}

  Op next(const Differential& d) {
    if (left_in_phase_-- == 0) new_phase();
    if (++since_check_ >= 997) {
      since_check_ = 0;
      return Op{OpKind::kCheck, 0, 0, 0, 0};
    }
    const double x = uniform();
    // Keep queues bounded so the (linear) model stays fast: past the bound, the next
    // operation matches the oldest entry of the long queue.
    if (d.posted_len() > 1000 && x < 0.5)
      return partner_of(d.model().posted.front(), OpKind::kArrive);
    if (d.unexpected_len() > 1000 && x < 0.5)
      return partner_of(d.model().unexpected.front(), OpKind::kPost);
    const double post = p_post_;
    const bool wide_src = uniform() < 0.5;
    Op op{};
    op.context = static_cast<uint32_t>(rng_() % contexts_);
    op.pick = rng_() % 64;
    if (x < post) {
      op.kind = OpKind::kPost;
    } else if (x < post + 0.08) {
      op.kind = OpKind::kCancel;
    } else if (x < post + 0.12) {
      op.kind = OpKind::kProbe;
    } else if (x < post + 0.16) {
      op.kind = OpKind::kMprobe;
    } else {
      op.kind = OpKind::kArrive;
    }
    op.source = wide_src ? pick_source(rng_() % key_width_) : static_cast<int32_t>(rng_() % 3);
    op.tag = pick_tag(rng_() % key_width_);
    if (op.kind != OpKind::kArrive) {
      if (uniform() < wild_rate_) op.source = LOOM_MATCH_ANY_SOURCE;
      if (uniform() < wild_rate_) op.tag = LOOM_MATCH_ANY_TAG;
    }
    return op;
  }

 private:
  double uniform() { return std::uniform_real_distribution<double>(0, 1)(rng_); }
  Op partner_of(const ReferenceModel::Item& it, OpKind kind) {
    Op op{kind, it.source, it.tag, it.context, 0};
    if (op.source == LOOM_MATCH_ANY_SOURCE) op.source = pick_source(rng_());
    if (op.tag == LOOM_MATCH_ANY_TAG) op.tag = static_cast<int32_t>(rng_() % 8);
    return op;
  }
  void new_phase() {
    static const double kPost[] = {0.42, 0.42, 0.7, 0.15, 0.3};
    static const double kWild[] = {0.0, 0.1, 0.3, 0.6};
    left_in_phase_ = 200 + rng_() % 2000;
    p_post_ = kPost[rng_() % 5];
    wild_rate_ = kWild[rng_() % 4];
    contexts_ = 1 + static_cast<uint32_t>(rng_() % 3);
    key_width_ = 1 + rng_() % 12;
  }

  std::mt19937_64 rng_;
  uint64_t left_in_phase_ = 0, since_check_ = 0;
  double p_post_ = 0.4, wild_rate_ = 0.1;
  uint32_t contexts_ = 1;
  uint64_t key_width_ = 4;
};

struct RunConfig {
  loom_match_backend backend;
  loom_match_isa isa;
  loom_match_threading threading;
  uint64_t ops;
};

std::string describe(const RunConfig& c, uint64_t seed) {
  return std::string("backend ") + loom_match_backend_name(c.backend) + " isa " +
         loom_match_isa_name(c.isa) + " threading " + std::to_string(c.threading) + " seed " +
         std::to_string(seed) + " (replay: LOOM_MATCH_SEED=" + std::to_string(seed) + ")";
}

void run_differential(const RunConfig& c, loom_match_config cfg, uint64_t seed) {
  cfg.backend = c.backend;
  cfg.isa = c.isa;
  cfg.threading = c.threading;
  loom_match_engine* engine = loom_match_create(&cfg);
  ASSERT_NE(engine, nullptr);
  Differential diff(engine);
  OpGenerator gen(seed);
  for (uint64_t i = 0; i < c.ops; ++i)
    if (!diff.apply(gen.next(diff))) {
      ADD_FAILURE() << describe(c, seed) << ": " << diff.error();
      break;
    }
  EXPECT_TRUE(diff.check_queues()) << describe(c, seed) << ": " << diff.error();
  EXPECT_GT(diff.matches(), c.ops / 10) << "the sequence should produce many matches";
  loom_match_stats st;
  loom_match_get_stats(engine, &st);
  if (c.backend == LOOM_MATCH_BACKEND_ADAPTIVE && c.ops >= 100000) {
    EXPECT_GT(st.backend_switches, 0u) << "adaptive never changed structure";
  }
  loom_match_destroy(engine);
}

std::vector<RunConfig> all_configs() {
  std::vector<RunConfig> out;
  const uint64_t ops = main_ops();
  for (int b = LOOM_MATCH_BACKEND_LIST; b < LOOM_MATCH_BACKEND_COUNT; ++b) {
    const auto backend = static_cast<loom_match_backend>(b);
    out.push_back({backend, LOOM_MATCH_ISA_AUTO, LOOM_MATCH_THREAD_NONE, ops});
    const bool vector =
        backend == LOOM_MATCH_BACKEND_SIMD || backend == LOOM_MATCH_BACKEND_ADAPTIVE ||
        (backend >= LOOM_MATCH_BACKEND_FUZZY8 && backend <= LOOM_MATCH_BACKEND_FUZZY32);
    if (vector) {
      out.push_back({backend, LOOM_MATCH_ISA_SCALAR, LOOM_MATCH_THREAD_NONE, ops / 5});
      out.push_back({backend, LOOM_MATCH_ISA_AVX2, LOOM_MATCH_THREAD_NONE, ops / 5});
    }
    out.push_back({backend, LOOM_MATCH_ISA_AUTO, LOOM_MATCH_THREAD_TAIL_QUEUES, ops / 10});
    out.push_back({backend, LOOM_MATCH_ISA_AUTO, LOOM_MATCH_THREAD_GLOBAL_LOCK, ops / 20});
  }
  return out;
}

class ReferenceTest : public ::testing::TestWithParam<RunConfig> {};

TEST_P(ReferenceTest, MatchesModel) {
  loom_match_config cfg;
  loom_match_config_init(&cfg);
  run_differential(GetParam(), cfg, base_seed() + static_cast<uint64_t>(GetParam().backend));
}

std::string run_name(const ::testing::TestParamInfo<RunConfig>& param_info) {
  static const char* const kMode[] = {"serial", "global", "tailq"};
  const RunConfig& c = param_info.param;
  return std::string(loom_match_backend_name(c.backend)) + "_" + loom_match_isa_name(c.isa) + "_" +
         kMode[c.threading];
}

INSTANTIATE_TEST_SUITE_P(AllBackends, ReferenceTest, ::testing::ValuesIn(all_configs()), run_name);

// Allocation failures: every operation that reports ERR_NOMEM must leave the queues exactly as
// they were, and everything else must still agree with the model.
struct FlakyAllocator {
  std::mt19937_64 rng{7};
  unsigned fail_per_mille = 0;
  uint64_t failures = 0;
  static void* alloc(size_t size, void* arg) {
    auto* self = static_cast<FlakyAllocator*>(arg);
    if (self->rng() % 1000 < self->fail_per_mille) {
      ++self->failures;
      return nullptr;
    }
    return std::aligned_alloc(64, (size + 63) & ~size_t{63});
  }
  static void release(void* p, size_t, void*) { std::free(p); }
};

class MemoryPressureTest : public ::testing::TestWithParam<RunConfig> {};

TEST_P(MemoryPressureTest, FailedAllocationsChangeNothing) {
  const RunConfig c = GetParam();
  const uint64_t seed = base_seed() ^ 0xa110c;
  FlakyAllocator flaky;
  loom_match_config cfg;
  loom_match_config_init(&cfg);
  cfg.backend = c.backend;
  cfg.threading = c.threading;
  cfg.alloc = FlakyAllocator::alloc;
  cfg.free = FlakyAllocator::release;
  cfg.alloc_arg = &flaky;
  loom_match_engine* engine = loom_match_create(&cfg);
  ASSERT_NE(engine, nullptr);
  Differential diff(engine);
  OpGenerator gen(seed);
  for (uint64_t i = 0; i < c.ops; ++i) {
    Op op = gen.next(diff);
    flaky.fail_per_mille = op.kind == OpKind::kCheck ? 0 : 50;  // checks need scratch memory
    if (!diff.apply(op)) {
      ADD_FAILURE() << describe(c, seed) << ": " << diff.error();
      break;
    }
  }
  flaky.fail_per_mille = 0;
  EXPECT_TRUE(diff.check_queues()) << describe(c, seed) << ": " << diff.error();
  EXPECT_GT(diff.nomem(), 0u) << "no operation ever saw an allocation failure";
  EXPECT_GT(flaky.failures, 0u);
  loom_match_destroy(engine);
}

std::vector<RunConfig> pressure_configs() {
  std::vector<RunConfig> out;
  for (int b = LOOM_MATCH_BACKEND_LIST; b < LOOM_MATCH_BACKEND_COUNT; ++b) {
    out.push_back({static_cast<loom_match_backend>(b), LOOM_MATCH_ISA_AUTO, LOOM_MATCH_THREAD_NONE,
                   main_ops() / 10});
    out.push_back({static_cast<loom_match_backend>(b), LOOM_MATCH_ISA_AUTO,
                   LOOM_MATCH_THREAD_TAIL_QUEUES, main_ops() / 20});
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(AllBackends, MemoryPressureTest, ::testing::ValuesIn(pressure_configs()),
                         run_name);

}  // namespace
}  // namespace loom::match_test
