#include "record/measure/launch_histogram.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace aiflame {

LaunchHistogram::Summary LaunchHistogram::summarize(const Thread* threads, size_t count, Kind k, double ns_per_tick) {
  uint64_t n[kBuckets] = {};
  double ticks[kBuckets] = {};
  Summary s;
  double total = 0;
  for (size_t t = 0; t < count; t++)
    for (int b = 0; b < kBuckets; b++) {
      n[b] += threads[t].n[k][b].load(std::memory_order_relaxed);
      ticks[b] += static_cast<double>(threads[t].ticks[k][b].load(std::memory_order_relaxed));
    }
  for (int b = 0; b < kBuckets; b++) s.n += n[b], total += ticks[b];
  if (!s.n) return s;
  const double us_per_tick = ns_per_tick / 1e3;
  s.mean_us = total * us_per_tick / static_cast<double>(s.n);
  const uint64_t two_us = ns_per_tick > 0 ? static_cast<uint64_t>(std::llround(2000.0 / ns_per_tick)) : ~uint64_t{0};
  uint64_t seen = 0, over_n = 0;
  double over = 0;
  double* quantile[4] = {&s.p10_us, &s.p50_us, &s.p90_us, &s.p99_us};
  const double at[4] = {0.10, 0.50, 0.90, 0.99};
  int q = 0;
  for (int b = 0; b < kBuckets; b++) {
    seen += n[b];
    while (q < 4 && static_cast<double>(seen) >= at[q] * static_cast<double>(s.n)) {
      *quantile[q] = static_cast<double>(bucket_low(b)) * us_per_tick;
      q++;
    }
    if (bucket_low(b) >= two_us) over += ticks[b], over_n += n[b];
  }
  s.over_2us_share = total > 0 ? over / total : 0;
  s.over_2us_launches = static_cast<double>(over_n) / static_cast<double>(s.n);
  return s;
}

std::string LaunchHistogram::line(const Summary& s) {
  return fmt::format("{} launches, mean {:.3f} us; p10 {:.3f}, median {:.3f}, p90 {:.3f}, p99 {:.3f} us; "
                     "{:.2f}% of them 2 us or more, {:.1f}% of the time",
                     s.n, s.mean_us, s.p10_us, s.p50_us, s.p90_us, s.p99_us, 100.0 * s.over_2us_launches,
                     100.0 * s.over_2us_share);
}

void LaunchOutliers::add(const LaunchOutlier& o) {
  std::lock_guard<std::mutex> lock(mu_);
  if (kept_.size() == kKeep && o.ticks <= kept_.back().ticks) return;
  kept_.insert(std::upper_bound(kept_.begin(), kept_.end(), o,
                                [](const LaunchOutlier& a, const LaunchOutlier& b) { return a.ticks > b.ticks; }),
               o);
  if (kept_.size() > kKeep) kept_.pop_back();
  if (kept_.size() == kKeep) floor_.store(kept_.back().ticks, std::memory_order_relaxed);
}

std::vector<LaunchOutlier> LaunchOutliers::slowest() const {
  std::lock_guard<std::mutex> lock(mu_);
  return kept_;
}

std::string LaunchOutliers::line(const std::vector<LaunchOutlier>& v, double ns_per_tick) {
  std::string s;
  for (const auto& o : v) {
    std::string what = o.walked ? "walked" : "from its memo";
    if (o.new_stack) what += ", a new stack";
    if (o.fallback) what += ", a backtrace() fallback";
    s += fmt::format("{}{:.1f} us at {:.3f} s (thread {}'s launch {}: {})", s.empty() ? "" : "; ",
                     static_cast<double>(o.ticks) * ns_per_tick / 1e3, static_cast<double>(o.at_ticks) * ns_per_tick / 1e9,
                     o.tid, o.nth, what);
  }
  return s.empty() ? "none" : s;
}

}  // namespace aiflame
