// What the MPI tests need to know about the Loom they run under.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "loom/loom.h"

namespace loom::test {

// LOOM_DISABLE=1: the run checks the pass-through, nothing may be accelerated.
inline bool loom_disabled_by_env() {
  const char* disable = std::getenv("LOOM_DISABLE");
  return disable && std::strcmp(disable, "1") == 0;
}

// A test that compares Loom with the host proves nothing if libloom is not active.
inline bool loom_active_unless_disabled() {
  if (loom_is_active() || loom_disabled_by_env()) return true;
  std::fprintf(stderr, "libloom is not active: these tests would compare the host with itself\n");
  return false;
}

}  // namespace loom::test
