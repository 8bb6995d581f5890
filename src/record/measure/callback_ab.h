// AIFLAME_LAB=callback_ab=1: CUPTI's launch callbacks switched off and on in random slices of one run, so
// that what the launch callback and aiflame's launch path cost the program's steps can be measured
// inside one process (issue #24); =2 CUPTI's kernel records instead (only without PC sampling, since
// CUPTI refuses to switch them on while sampling is enabled); =3 both.
// =4: continuous PC sampling itself, in slices of 2-4 s, disabled and enabled at the exit of the
// launch after the collector asks (each Enable costs CUPTI's start again, 0.3-0.4 s, so
// bench/callback_ab.py --guard-ms leaves the steps just after a switch out); with +1 and +2 the launch
// callbacks and the kernel records switch along (7: windows of continuous sampling with nothing
// between them); +8 keeps the launch callbacks off throughout (12: sampling with nothing else on the
// launch path).
// Between runs this host's plain loops moved 20-28% (hf_gpt2.py, pinned or not),
// more than the 3% to be told apart; steps of one run, seconds apart, do not drift that much. Each
// switch is printed with its CLOCK_MONOTONIC time; the workloads print their steps' end times with
// STEP_TIMES=1, and bench/callback_ab.py compares the steps of the two kinds of slice. What is not
// switched stays as configured: with =1 the A/B sees the launch callback (CUPTI's part and aiflame's),
// not the records or the sampling. Launches in off slices have no stack (or no kernel record, or no
// sample): a profile made with the switch is for this measurement only. The collector switches (every
// `interval`), except PC sampling: from the collector, CUPTI hung the programs.
#pragma once
#include <cstdint>

#include "util/splitmix.h"

namespace aiflame {

class CallbackAB {
 public:
  // Slices last 100-300 ms, uniform: 5-15 steps of a 20-ms training step, long beside the queue's
  // lag, and random so that slices do not beat with a program's period.
  static constexpr uint64_t kMinSliceNs = 100'000'000, kMaxSliceNs = 300'000'000;

  // PC sampling (=4): each Enable pays CUPTI's start again (0.3-0.4 s at its default hardware buffer,
  // measured on the H200), so its slices are long beside that.
  static constexpr uint64_t kMinSamplingSliceNs = 2'000'000'000, kMaxSamplingSliceNs = 4'000'000'000;

  explicit CallbackAB(uint64_t seed, uint64_t min_ns = kMinSliceNs, uint64_t max_ns = kMaxSliceNs)
      : state_(seed), min_ns_(min_ns), span_ns_(max_ns - min_ns) {}
  // At `now_ns`: true if the callbacks must switch now, to *on. The first call switches them off.
  bool tick(uint64_t now_ns, bool* on) {
    if (now_ns < next_ns_) return false;  // next_ns_ 0 before the first call
    on_ = !on_;
    *on = on_;
    state_ += 0x9e3779b97f4a7c15ULL;
    next_ns_ = now_ns + min_ns_ + splitmix64_mix(state_) % span_ns_;
    return true;
  }

 private:
  uint64_t state_;
  uint64_t min_ns_, span_ns_;
  uint64_t next_ns_ = 0;
  bool on_ = true;
};

}  // namespace aiflame
