// AIFLAME_LAB=launch_ab: what the whole launch path costs the program's wall time, measured inside one
// run so that the host's drift between runs cancels (issues #22 and #24). The run's time is cut into
// slices of 2^24 clock ticks (5.6-8.4 ms on a 2-3 GHz TSC); a hash of each slice's index makes it an
// "on" slice (launches captured and recorded as usual) or an "off" slice (the launch callback returns
// at once, nothing recorded). Each interval between two launches of a thread counts for the kind of
// the launch that began it, since that launch's callback and what it left the program (cache and TLB
// misses) fall in it. Mean interval on minus off is the launch path's cost per launch. The
// in-callback timer ("stack capture cost") cannot see the misses: on resnet_train.py the launch
// callback and capture alone cost 1.14-1.44x of the plain loop in five pairs, ~2-5 us a launch, where
// the timer read 0.9-1.3 us (H200).
//
// Intervals longer than 2^18 ticks (87-130 us: a wait for the GPU, a data loader) are left out and
// counted: they fall in both kinds alike and only add noise. With 2^22 (1.4-2 ms) the two halves of
// one run's slices differed by 1-5 us on the H200's training loops (~20,000 intervals of each kind,
// 25-40 us apart on average), too coarse for a cost of 1-2 us. So this measures what the launch
// path costs the launching thread while it launches, not whether a GPU-bound program hides it. Kinds come
// from a hash, not alternation, so that a training step's phases do not beat with the slices; a second
// hash bit splits the slices into two halves whose estimates show the figure's spread. Off slices'
// launches have no stack: a profile made with the switch is for this measurement only.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>

#include "util/splitmix.h"

namespace aiflame {

class LaunchAB {
 public:
  static constexpr int kSliceShift = 24;
  static constexpr uint64_t kMaxInterval = uint64_t{1} << 18;
  static constexpr size_t kStrata = 4096;

  // A launch of `site` (the kernel) at `ticks` (TscClock) on the calling thread: true if its slice is
  // an off slice. Thread-safe and lock-free (relaxed adds; `last` is the thread's own state).
  struct ThreadState {
    uint64_t ticks = 0;
    int32_t cell = -1;     // the previous launch's [half][kind], or -1
    uint32_t stratum = 0;  // and its site's stratum
  };
  bool off(uint64_t ticks, uint64_t site, ThreadState& last) {
    const uint64_t h = splitmix64_mix(ticks >> kSliceShift);
    const int kind = static_cast<int>(h & 1), cell = static_cast<int>((h >> 1) & 1) * 2 + kind;
    if (last.cell >= 0 && ticks > last.ticks) {
      const uint64_t dt = ticks - last.ticks;
      if (dt <= kMaxInterval) {
        Stratum& st = strata_[last.stratum];
        st.sum[last.cell].fetch_add(dt, std::memory_order_relaxed);
        st.count[last.cell].fetch_add(1, std::memory_order_relaxed);
      } else {
        long_.fetch_add(1, std::memory_order_relaxed);
      }
    }
    last.ticks = ticks;
    last.cell = cell;
    last.stratum = static_cast<uint32_t>(splitmix64_mix(site) % kStrata);
    return kind == 1;
  }

  struct Result {
    uint64_t on_intervals = 0, off_intervals = 0, long_intervals = 0;
    double on_us = 0, off_us = 0;  // mean interval after a launch of each kind
    double raw_us = 0;             // on minus off, all launches together
    // On minus off within each kernel's launches, weighted by their share of the launches compared
    // (what follows a launch depends mostly on which kernel it was: comparing like with like takes
    // the kernels' mix between the two kinds of slices out of the figure).
    double cost_us = 0;
    double half_us[2] = {0, 0};    // cost_us from each half of the slices
    double compared = 0;           // the share of intervals in kernels with both kinds
    bool valid = false;            // some kernel has intervals of both kinds
  };
  // ns_per_tick: TscClock::ns_per_tick().
  Result result(double ns_per_tick) const;

 private:
  struct Stratum {  // [half * 2 + kind], kind 0 on, 1 off
    std::atomic<uint64_t> sum[4] = {}, count[4] = {};
  };
  std::unique_ptr<Stratum[]> strata_{new Stratum[kStrata]};
  std::atomic<uint64_t> long_{0};
};

}  // namespace aiflame
