// AIFLAME_CALLBACK_AB=1: CUPTI's launch callbacks switched off and on in random slices of one run, so
// that what the launch callback and aiflame's launch path cost the program's steps can be measured
// inside one process (issue #24); =2 CUPTI's kernel records instead (only without PC sampling, since
// CUPTI refuses to switch them on while sampling is enabled); =3 both. Between runs this host's plain
// loops moved 20-28% (hf_gpt2.py, fourteenth session, pinned or not), more than the 3% to be told
// apart; steps of one run, seconds apart, do not drift that much. Each switch is printed with its
// CLOCK_MONOTONIC time; the workloads print their steps' end times with STEP_TIMES=1, and
// bench/callback_ab.py compares the steps of the two kinds of slice. What is not switched stays as
// configured: with =1 the A/B sees the launch callback (CUPTI's part and aiflame's), not the records
// or the sampling. Launches in off slices have no stack (or no kernel record): a profile made with the
// switch is for this measurement only. The collector switches (every `interval`).
#pragma once
#include <cstdint>

#include "util/splitmix.h"

namespace aiflame {

class CallbackAB {
 public:
  // Slices last 100-300 ms, uniform: 5-15 steps of a 20-ms training step, long beside the queue's
  // lag, and random so that slices do not beat with a program's period.
  static constexpr uint64_t kMinSliceNs = 100'000'000, kMaxSliceNs = 300'000'000;

  explicit CallbackAB(uint64_t seed) : state_(seed) {}
  // At `now_ns`: true if the callbacks must switch now, to *on. The first call switches them off.
  bool tick(uint64_t now_ns, bool* on) {
    if (now_ns < next_ns_) return false;  // next_ns_ 0 before the first call
    on_ = !on_;
    *on = on_;
    state_ += 0x9e3779b97f4a7c15ULL;
    next_ns_ = now_ns + kMinSliceNs + splitmix64_mix(state_) % (kMaxSliceNs - kMinSliceNs);
    return true;
  }

 private:
  uint64_t state_;
  uint64_t next_ns_ = 0;
  bool on_ = true;
};

}  // namespace aiflame
