// AIFLAME_LAB=capture_probe=3 (issue 22): how the launch path's time per launch is spread, not only its
// mean. The summary's figure is a mean; a mean of 0.7 us can be every launch at 0.7 or most at 0.3
// and a few at tens of microseconds (walks, a row build's first frames, the host descheduling the
// thread). Each launching thread counts its launches into quarter-octave buckets of clock ticks
// (plain stores, as the launch tally), per kind; the end of the recording sums the threads and prints
// the quantiles and how much of the mean the launches above 2 us make.
#pragma once
#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace aiflame {

class LaunchHistogram {
 public:
  // On_launch of launches that took their memo, and of the others (walked, or without memos); with
  // AIFLAME_LAB=capture_probe=2 also the capture of a launch from its memo, and the same again at once.
  // The memo launches again by the time since their thread's previous launch ended (kind_after_gap):
  // under 2^15 ticks (~10-15 us), under 2^18 (~90-120 us), longer (the program ran a while in
  // between: its own code and data took the caches). And again by whether the capture took the memo it
  // predicted by the Python fingerprint (StackCapture::Result::predicted: the fast path) or searched.
  enum Kind { Memo, Walked, CaptureFirst, CaptureAgain, MemoGapShort, MemoGapMid, MemoGapLong, MemoPredicted, MemoSearched,
              kKinds };
  static Kind kind_after_gap(uint64_t gap_ticks) {
    return gap_ticks < (uint64_t{1} << 15) ? MemoGapShort : gap_ticks < (uint64_t{1} << 18) ? MemoGapMid : MemoGapLong;
  }
  static constexpr int kBuckets = 4 * 40;  // ticks up to 2^41
  // Bucket of `ticks`: below 8 the count itself; from 8 on, four buckets per octave (the two bits below
  // the top one).
  static int bucket(uint64_t ticks) {
    if (ticks < 8) return static_cast<int>(ticks);
    const int msb = 63 - __builtin_clzll(ticks);
    const int b = 4 * (msb - 1) + static_cast<int>((ticks >> (msb - 2)) & 3);
    return b < kBuckets ? b : kBuckets - 1;
  }
  // The lowest tick count of bucket b.
  static uint64_t bucket_low(int b) {
    if (b < 8) return static_cast<uint64_t>(b);
    const int msb = b / 4 + 1;
    return (uint64_t{1} << msb) | (static_cast<uint64_t>(b % 4) << (msb - 2));
  }
  // One thread's counts (written by that thread alone).
  struct alignas(64) Thread {
    std::atomic<uint64_t> n[kKinds][kBuckets] = {};
    std::atomic<uint64_t> ticks[kKinds][kBuckets] = {};
    uint64_t last_end = 0;  // the clock when this thread's previous launch left the launch path
    void add(Kind k, uint64_t t) {
      const int b = bucket(t);
      n[k][b].store(n[k][b].load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
      ticks[k][b].store(ticks[k][b].load(std::memory_order_relaxed) + t, std::memory_order_relaxed);
    }
  };
  struct Summary {
    uint64_t n = 0;
    double mean_us = 0, p10_us = 0, p50_us = 0, p90_us = 0, p99_us = 0;
    double over_2us_share = 0;  // of the kind's time, in launches of 2 us or more
    double over_2us_launches = 0;  // share of its launches
  };
  // The kind's figures over `threads` (count of them), ticks converted at ns_per_tick. A quantile is
  // its bucket's lower bound (a quarter octave: at most 25% below it).
  static Summary summarize(const Thread* threads, size_t count, Kind k, double ns_per_tick);
  static std::string line(const Summary& s);
};

// The slowest launches of a recording (AIFLAME_LAB=capture_probe=2 or 3), with what each did: a short
// run's figure can be half made of a few walks of milliseconds (hf_gpt2.py's
// 191 walks took 26 ms in one 60-step run, its 39,417 memo launches 29 ms), whose cause the
// histogram does not tell.
struct LaunchOutlier {
  uint64_t ticks = 0;     // in the launch path
  uint64_t at_ticks = 0;  // since the recording started
  uint32_t tid = 0;
  uint64_t nth = 0;       // the launch's number on its thread, from 1
  bool walked = false;    // no memo held
  bool new_stack = false;  // a stack new to the process was interned during it (by it, or another thread)
  bool fallback = false;   // a backtrace() fallback ran during it (the same)
};
class LaunchOutliers {
 public:
  static constexpr size_t kKeep = 8;
  // Cheap, without the lock: false for a launch faster than the slowest kept ones (once kKeep are kept).
  bool worth(uint64_t ticks) const { return ticks > floor_.load(std::memory_order_relaxed); }
  void add(const LaunchOutlier& o);
  std::vector<LaunchOutlier> slowest() const;  // slowest first
  static std::string line(const std::vector<LaunchOutlier>& v, double ns_per_tick);

 private:
  mutable std::mutex mu_;
  std::vector<LaunchOutlier> kept_;
  std::atomic<uint64_t> floor_{0};
};

}  // namespace aiflame
