// When to open and close short PC-sampling windows in "windows" mode (issue #3, design (b)).
//
// In kernel-serialized sampling every sample carries the correlation id of its kernel's launch, so
// attribution is exact, but kernels are serialized while sampling runs. Sampling is therefore opened
// only for short windows, about `per_second` of them a second, each lasting `length_ns`; the gap
// before each window is drawn at random (uniform in [0.5, 1.5] of the mean gap) so that windows do
// not lock onto a training loop's period. Vendor-neutral: the backend's window thread asks what to
// do and sleeps until next_event().
#pragma once
#include <atomic>
#include <cstdint>

namespace aiflame {

class SamplingWindows {
 public:
  enum class Action { None, Open, Close };

  SamplingWindows(uint32_t per_second, uint32_t length_us, uint64_t seed);

  // True when `now` may call for an action. Lock-free.
  bool due(uint64_t now) const { return now >= due_.load(std::memory_order_relaxed); }
  // When the next action is due (open or close).
  uint64_t next_event() const { return due_.load(std::memory_order_relaxed); }

  // Under the caller's lock: opens a window when its time has come, closes one that has lasted its
  // length.
  Action decide(uint64_t now);

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
