// AIFLAME_DEBUG=1 traces what the injection library does, on stderr.
#pragma once
#include <cstdio>
#include <cstdlib>

namespace aiflame {

inline bool debug_enabled() {
  static const bool on = [] {
    const char* v = std::getenv("AIFLAME_DEBUG");
    return v && *v && *v != '0';
  }();
  return on;
}

template <class... A>
void debug(const char* fmt, A... args) {
  if (!debug_enabled()) return;
  std::fprintf(stderr, "aiflame[debug]: ");
  std::fprintf(stderr, fmt, args...);
  std::fputc('\n', stderr);
}

}  // namespace aiflame
