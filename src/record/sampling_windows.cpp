#include "record/sampling_windows.h"

#include <algorithm>

namespace aiflame {

SamplingWindows::SamplingWindows(uint32_t per_second, uint32_t length_us, uint64_t seed, double budget)
    : gap_ns_(1000000000ull / std::max<uint32_t>(per_second, 1)),
      length_ns_(static_cast<uint64_t>(std::max<uint32_t>(length_us, 1)) * 1000),
      budget_(budget),
      rng_(seed | 1) {}

uint64_t SamplingWindows::next_gap() {
  double u = static_cast<double>(random53(rng_)) / static_cast<double>(1ull << 53);
  double gap = static_cast<double>(gap_ns_);
  // The window's cost over the budget: the time the program must run unwatched to pay for it.
  if (budget_ > 0) gap = std::max(gap, static_cast<double>(cost_ns_) / budget_);
  return static_cast<uint64_t>(gap * (0.5 + u));
}

void SamplingWindows::cancel(uint64_t now) {
  if (!open_) return;
  open_ = false;
  discount_ns_ = 0;
  due_.store(now + next_gap(), std::memory_order_relaxed);
}

SamplingWindows::Action SamplingWindows::decide(uint64_t now, bool full) {
  if (!open_) {
    if (now < due_.load(std::memory_order_relaxed)) return Action::None;
    open_ = true;
    opened_at_ = now;
    due_.store(now + length_ns_, std::memory_order_relaxed);
    return Action::Open;
  }
  if (now < opened_at_ + length_ns_ && !full) return Action::None;
  open_ = false;
  windows_++;
  open_ns_ += now - opened_at_;
  cost_ns_ += now - opened_at_;
  cost_ns_ -= std::min(cost_ns_, discount_ns_);
  discount_ns_ = 0;
  // A context's first window carries CUPTI's one-time start of kernel-serialized sampling: one
  // launch took 276-660 ms in it on the H100, every later window its length. Charged in full it would space the next window 15-30 s away; it is charged as one
  // window's length and counted as the process's fixed cost instead.
  if (windows_ == 1) cost_ns_ = std::min(cost_ns_, length_ns_);
  due_.store(now + next_gap(), std::memory_order_relaxed);
  total_cost_ns_ += cost_ns_;
  cost_ns_ = 0;
  return Action::Close;
}

}  // namespace aiflame
