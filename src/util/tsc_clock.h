// A cheap clock for the launch path: the CPU's time-stamp counter where it is invariant (it ticks at
// a constant rate in every power state, as on every x86-64 server of the last decade), converted to
// nanoseconds once, at the end, against CLOCK_MONOTONIC over the whole interval; elsewhere
// CLOCK_MONOTONIC itself. Issue 22: the recorder timed each launch with two steady_clock reads, part
// of the per-launch cost it reports.
#pragma once
#include <time.h>

#include <cstdint>
#if defined(__x86_64__)
#include <cpuid.h>
#include <x86intrin.h>
#endif

namespace aiflame {

class TscClock {
 public:
  // Starts the calibration interval.
  TscClock() : tsc_(has_invariant_tsc()), t0_(now()), ns0_(mono_ns()) {}
  // Ticks: TSC ticks, or nanoseconds where the TSC is not invariant.
  uint64_t now() const {
#if defined(__x86_64__)
    if (tsc_) return __rdtsc();
#endif
    return mono_ns();
  }
  // Nanoseconds per tick over the interval since construction (1 without an invariant TSC).
  double ns_per_tick() const {
    if (!tsc_) return 1.0;
    const uint64_t dt = now() - t0_, dns = mono_ns() - ns0_;
    return dt ? static_cast<double>(dns) / static_cast<double>(dt) : 0.0;
  }
  bool invariant_tsc() const { return tsc_; }

  static uint64_t mono_ns() {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
  }
  static bool has_invariant_tsc() {
#if defined(__x86_64__)
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (__get_cpuid_max(0x80000000u, nullptr) < 0x80000007u) return false;
    __cpuid(0x80000007u, a, b, c, d);
    return (d >> 8) & 1;  // CPUID.80000007H:EDX[8], invariant TSC
#else
    return false;
#endif
  }

 private:
  bool tsc_;
  uint64_t t0_, ns0_;
};

}  // namespace aiflame
