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

// xorshift64*: one step of `state` (never 0), 53 random bits. Enough to decorrelate windows from the
// program's own period; shared by the window schedule and the backend's pick of a window's launch.
inline uint64_t random53(uint64_t& state) {
  state ^= state >> 12;
  state ^= state << 25;
  state ^= state >> 27;
  return (state * 0x2545F4914F6CDD1Dull) >> 11;
}

class SamplingWindows {
 public:
  enum class Action { None, Open, Close };

  // per_second: the most windows a second (the mean rate when budget is 0). budget: the share of the
  // run that windows may take (0.02: 2%). A window costs its own length (the program runs with its
  // kernels serialized and sampled) plus what charge() adds (the wait for an idle GPU before it
  // opens); the gap before the next window is that cost over the budget, so windows take about
  // `budget` of the run whatever the program does, and never come more often than per_second.
  SamplingWindows(uint32_t per_second, uint32_t length_us, uint64_t seed, double budget = 0.0);

  // True when `now` may call for an action. Lock-free.
  bool due(uint64_t now) const { return now >= due_.load(std::memory_order_relaxed); }
  // When the next action is due (open or close).
  uint64_t next_event() const { return due_.load(std::memory_order_relaxed); }

  // Under the caller's lock: opens a window when its time has come, closes one that has lasted its
  // length.
  // full: the open window has held all the launches it may (it closes before its length).
  Action decide(uint64_t now, bool full = false);

  // Gives up the window just opened, before it sampled anything: not counted, the next one due one
  // mean gap later.
  void cancel(uint64_t now);

  // A cost of the open window beyond its length, in nanoseconds.
  void charge(uint64_t ns) { cost_ns_ += ns; }
  // Time inside the open window's length that is not its cost (the wait for a busy GPU's queue before
  // it opened, with AIFLAME_LAB=win_charge_sync=0): taken off at its close, never below zero.
  void discount(uint64_t ns) { discount_ns_ += ns; }
  uint64_t cost_ns() const { return total_cost_ns_ + cost_ns_; }  // all windows so far

  bool open() const { return open_; }
  uint64_t opened_at() const { return opened_at_; }
  uint64_t windows() const { return windows_; }
  uint64_t open_ns() const { return open_ns_; }  // summed length of closed windows

 private:
  uint64_t next_gap();
  uint64_t gap_ns_, length_ns_;
  double budget_;
  uint64_t cost_ns_ = 0, total_cost_ns_ = 0, discount_ns_ = 0;
  uint64_t rng_;
  bool open_ = false;
  uint64_t opened_at_ = 0;
  uint64_t windows_ = 0, open_ns_ = 0;
  std::atomic<uint64_t> due_{0};  // the next time decide() may act
};

}  // namespace aiflame
