// AIFLAME_LAB=capture_probe=4 (a measurement of issue 22): what a thread-local costs the launch path where
// the program ran between two launches. The injection library reaches its thread-locals through TLS
// descriptors (-mtls-dialect=gnu2): each access is an indirect call into ld.so's _dl_tlsdesc_return
// (a launch made 22, now 12: callgrind on BM_OnLaunchCold), whose target the branch predictors may have
// lost since the last launch. Before each launch, eight accesses of eight thread-locals (each in a
// function of its own, as the launch path's are) are timed, then eight of eight globals the same way,
// the order alternating, each round run twice (cold, then again at once).
#pragma once
#include <atomic>
#include <cstdint>

namespace aiflame {

struct TlsProbe {
  std::atomic<uint64_t> rounds{0};
  std::atomic<uint64_t> tls_ticks[2] = {}, global_ticks[2] = {};  // [0] first, [1] again at once
  // One round (both kinds, each twice), added to the totals.
  void run();
  // "N rounds; 8 thread-locals: first X ns, again Y ns; 8 globals: ..." (ns per access).
  struct Figures {
    uint64_t rounds = 0;
    double tls_ns[2] = {}, global_ns[2] = {};
  };
  Figures figures(double ns_per_tick) const;
};

}  // namespace aiflame
