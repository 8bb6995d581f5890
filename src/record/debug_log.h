// AIFLAME_DEBUG=1 traces what the injection library does, on stderr.
#pragma once
#include <time.h>

#include <cstdio>
#include <cstdlib>

#include "util/env_switch.h"

namespace aiflame {

inline bool debug_enabled() {
  static const bool on = [] {
    return switch_on("AIFLAME_DEBUG");  // "1" only: a typo never turns tracing on
  }();
  return on;
}

template <class... A>
void debug(const char* fmt, A... args) {
  if (!debug_enabled()) return;
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  std::fprintf(stderr, "aiflame[debug %ld.%03ld]: ", static_cast<long>(ts.tv_sec), ts.tv_nsec / 1000000);
  std::fprintf(stderr, fmt, args...);
  std::fputc('\n', stderr);
}

}  // namespace aiflame
