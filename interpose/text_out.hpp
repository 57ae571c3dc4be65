// How Loom's C API hands out a string: into the caller's buffer, always NUL-terminated and cut to
// fit, returning the length the whole string needs (as loom_type_describe documents).
#pragma once

#include <algorithm>
#include <cstring>
#include <string>

namespace loom::interpose {

inline int text_out(const std::string& text, char* buf, int buflen) {
  if (buf && buflen > 0) {
    const size_t n = std::min(text.size(), static_cast<size_t>(buflen - 1));
    std::memcpy(buf, text.data(), n);
    buf[n] = '\0';
  }
  return static_cast<int>(text.size());
}

}  // namespace loom::interpose
