// When to open and close short PC-sampling windows in "windows" mode (issue #3, design (b)).
//
// In kernel-serialized sampling every sample carries the correlation id of its kernel's launch, so
// attribution is exact, but kernels are serialized while sampling runs. Sampling is therefore opened
// only for short windows at launch boundaries, about `per_second` of them a second, each lasting at
// least `length_ns`; the gap before each window is drawn at random (uniform in [0.5, 1.5] of the mean
// gap) so that windows do not lock onto a training loop's period. Vendor-neutral: the CUPTI backend
// asks at every launch and at every collector tick what to do.
#pragma once
#include <atomic>
#include <cstdint>

namespace aiflame {

class SamplingWindows {
 public:
  enum class Action { None, Open, Close };

  SamplingWindows(uint32_t per_second, uint32_t length_us, uint64_t seed);

  // Cheap check on the launch path: true when `now` may call for an action (a lock is then taken and
  // decide() called). Lock-free, two relaxed loads.
  bool due(uint64_t now) const { return now >= due_.load(std::memory_order_relaxed); }

  // Under the caller's lock. At a launch: opens a window when its time has come, closes one that has
  // lasted its length. `overdue_only` (the collector's tick, between launches) closes a window only
  // when it has lasted twice its length, so a program that stops launching does not keep kernels
  // serialized.
  Action decide(uint64_t now, bool overdue_only = false);

  bool open() const { return open_; }
  uint64_t opened_at() const { return opened_at_; }
  uint64_t windows() const { return windows_; }
  uint64_t open_ns() const { return open_ns_; }  // summed length of closed windows

 private:
  uint64_t next_gap();
  uint64_t gap_ns_, length_ns_;
  uint64_t rng_;
  bool open_ = false;
  uint64_t opened_at_ = 0;
  uint64_t windows_ = 0, open_ns_ = 0;
  std::atomic<uint64_t> due_{0};  // the next time decide() may act
};

}  // namespace aiflame
