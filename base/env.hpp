// Loom's environment variables, declared by the component that reads them: name, default (in
// words, as the README's table gives it) and one line of documentation. Every LOOM_* variable a
// library layer reads is read through an EnvVar; tests/layering/check_env.py checks the README's
// table against these declarations, and that no layer reads a LOOM_* variable around them.
// Header-only and below every other folder: engines declare theirs too.
#pragma once

#include <cstdlib>
#include <cstring>

namespace loom::base {

struct EnvVar {
  const char* name;
  const char* default_text;
  const char* doc;
};

// The variable's value, or null when it is unset or empty.
inline const char* read(const EnvVar& var) {
  const char* value = std::getenv(var.name);
  return value && *value ? value : nullptr;
}

// Set and not "0" (unset or empty: `otherwise`).
inline bool read_flag(const EnvVar& var, bool otherwise = false) {
  const char* value = read(var);
  return value ? std::strcmp(value, "0") != 0 : otherwise;
}

}  // namespace loom::base
