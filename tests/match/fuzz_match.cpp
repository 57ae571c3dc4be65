// libFuzzer harness: the fuzzer's bytes choose a backend, a threading mode and a sequence of
// operations; the engine and the reference model must agree after every one. Divergence
// aborts with the failing step (libFuzzer saves the input for replay).
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "tests/match/match_model.hpp"

using namespace loom::match_test;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  loom_match_config cfg;
  loom_match_config_init(&cfg);
  cfg.backend = static_cast<loom_match_backend>(1 + data[0] % (LOOM_MATCH_BACKEND_COUNT - 1));
  cfg.isa = static_cast<loom_match_isa>((data[0] / 16) % 4);
  cfg.threading = static_cast<loom_match_threading>(data[1] % 3);
  loom_match_engine* engine = loom_match_create(&cfg);
  if (!engine) std::abort();
  Differential diff(engine);
  // Three bytes per operation: kind and wildcards, source, tag/context.
  for (size_t i = 2; i + 3 <= size; i += 3) {
    const uint8_t a = data[i], b = data[i + 1], c = data[i + 2];
    Op op{};
    op.kind = static_cast<OpKind>(a % 6);
    op.source = pick_source(b);
    op.tag = pick_tag(c);
    op.context = (c >> 6) % 3;
    op.pick = b;
    if (op.kind != OpKind::kArrive) {
      if (a & 0x40) op.source = LOOM_MATCH_ANY_SOURCE;
      if (a & 0x80) op.tag = LOOM_MATCH_ANY_TAG;
    }
    if (!diff.apply(op)) {
      std::fprintf(stderr, "divergence (backend %s): %s\n", loom_match_backend_name(cfg.backend),
                   diff.error().c_str());
      std::abort();
    }
  }
  if (!diff.check_queues()) {
    std::fprintf(stderr, "final divergence (backend %s): %s\n",
                 loom_match_backend_name(cfg.backend), diff.error().c_str());
    std::abort();
  }
  loom_match_destroy(engine);
  return 0;
}
