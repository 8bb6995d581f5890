#include "record/measure/launch_ab.h"

#include <cmath>

namespace aiflame {

LaunchAB::Result LaunchAB::result(double ns_per_tick) const {
  const double us_per_tick = ns_per_tick / 1000.0;
  Result r;
  double sum[2] = {0, 0};
  uint64_t n[2] = {0, 0};
  // Per half (and both): the weighted difference and the intervals it weighed.
  double diff[3] = {0, 0, 0}, weight[3] = {0, 0, 0};
  for (size_t i = 0; i < kStrata; i++) {
    const Stratum& st = strata_[i];
    double s[2][2], k[2][2];  // [half][kind]
    for (int half = 0; half < 2; half++)
      for (int kind = 0; kind < 2; kind++) {
        s[half][kind] = static_cast<double>(st.sum[half * 2 + kind].load(std::memory_order_relaxed)) * us_per_tick;
        k[half][kind] = static_cast<double>(st.count[half * 2 + kind].load(std::memory_order_relaxed));
        sum[kind] += s[half][kind];
        n[kind] += static_cast<uint64_t>(k[half][kind]);
      }
    auto add = [&](int slot, double s_on, double k_on, double s_off, double k_off) {
      if (k_on > 0 && k_off > 0) {
        diff[slot] += (k_on + k_off) * (s_on / k_on - s_off / k_off);
        weight[slot] += k_on + k_off;
      }
    };
    for (int half = 0; half < 2; half++) add(half, s[half][0], k[half][0], s[half][1], k[half][1]);
    add(2, s[0][0] + s[1][0], k[0][0] + k[1][0], s[0][1] + s[1][1], k[0][1] + k[1][1]);
  }
  r.on_intervals = n[0], r.off_intervals = n[1];
  r.long_intervals = long_.load(std::memory_order_relaxed);
  r.on_us = n[0] ? sum[0] / static_cast<double>(n[0]) : std::nan("");
  r.off_us = n[1] ? sum[1] / static_cast<double>(n[1]) : std::nan("");
  r.raw_us = r.on_us - r.off_us;
  r.valid = weight[2] > 0;
  r.cost_us = r.valid ? diff[2] / weight[2] : std::nan("");
  for (int half = 0; half < 2; half++) r.half_us[half] = weight[half] > 0 ? diff[half] / weight[half] : std::nan("");
  r.compared = n[0] + n[1] ? weight[2] / static_cast<double>(n[0] + n[1]) : 0;
  return r;
}

}  // namespace aiflame
