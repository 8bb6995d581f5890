#include "record/sampling_windows.h"

#include <algorithm>

namespace aiflame {

SamplingWindows::SamplingWindows(uint32_t per_second, uint32_t length_us, uint64_t seed)
    : gap_ns_(1000000000ull / std::max<uint32_t>(per_second, 1)),
      length_ns_(static_cast<uint64_t>(std::max<uint32_t>(length_us, 1)) * 1000),
      rng_(seed | 1) {}

uint64_t SamplingWindows::next_gap() {
  // xorshift64*: enough to decorrelate window times from the program's own period.
  rng_ ^= rng_ >> 12;
  rng_ ^= rng_ << 25;
  rng_ ^= rng_ >> 27;
  uint64_t r = (rng_ * 0x2545F4914F6CDD1Dull) >> 11;  // 53 random bits
  double u = static_cast<double>(r) / static_cast<double>(1ull << 53);
  return static_cast<uint64_t>(static_cast<double>(gap_ns_) * (0.5 + u));
}

SamplingWindows::Action SamplingWindows::decide(uint64_t now) {
  if (!open_) {
    if (now < due_.load(std::memory_order_relaxed)) return Action::None;
    open_ = true;
    opened_at_ = now;
    due_.store(now + length_ns_, std::memory_order_relaxed);
    return Action::Open;
  }
  if (now < opened_at_ + length_ns_) return Action::None;
  open_ = false;
  windows_++;
  open_ns_ += now - opened_at_;
  due_.store(now + next_gap(), std::memory_order_relaxed);
  return Action::Close;
}

}  // namespace aiflame
