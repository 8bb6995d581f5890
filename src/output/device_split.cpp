#include "output/device_split.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

namespace aiflame {

std::vector<uint64_t> largest_remainder(const std::vector<double>& weights, uint64_t target) {
  std::vector<uint64_t> out(weights.size(), 0);
  if (weights.empty()) return out;
  double sum = 0;
  for (double w : weights) sum += std::isfinite(w) && w > 0 ? w : 0;
  std::vector<std::pair<double, size_t>> rem;
  uint64_t given = 0;
  for (size_t i = 0; i < weights.size(); i++) {
    double w = std::isfinite(weights[i]) && weights[i] > 0 ? weights[i] : 0;
    double share = sum > 0 ? w / sum * static_cast<double>(target) : static_cast<double>(target) / weights.size();
    auto whole = static_cast<uint64_t>(std::floor(share));
    whole = std::min(whole, target - given);
    out[i] = whole;
    given += whole;
    rem.emplace_back(share - std::floor(share), i);
  }
  std::stable_sort(rem.begin(), rem.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  for (size_t k = 0; given < target; k = (k + 1) % rem.size(), given++) out[rem[k].second]++;
  return out;
}

std::vector<StackPart> split_by_time(const FlameData& d) {
  std::vector<std::vector<size_t>> entries(d.stacks.size());
  for (size_t i = 0; i < d.timeline.size(); i++)
    if (d.timeline[i].stack < d.stacks.size()) entries[d.timeline[i].stack].push_back(i);
  std::vector<StackPart> out;
  for (uint32_t s = 0; s < d.stacks.size(); s++) {
    uint64_t count = d.stacks[s].count;
    if (count == 0) continue;
    if (entries[s].empty()) {
      out.push_back({s, 0, 0, count});
      continue;
    }
    std::vector<double> w;
    for (size_t i : entries[s]) w.push_back(d.timeline[i].weight);
    auto n = largest_remainder(w, count);
    for (size_t k = 0; k < n.size(); k++) {
      const auto& t = d.timeline[entries[s][k]];
      if (n[k]) out.push_back({s, t.device, t.time_ns, n[k]});
    }
  }
  return out;
}

std::vector<StackPart> split_by_device(const FlameData& d) {
  std::map<std::pair<uint32_t, uint32_t>, uint64_t> merged;
  for (const auto& p : split_by_time(d)) merged[{p.stack, p.device}] += p.count;
  std::vector<StackPart> out;
  for (const auto& [k, n] : merged) out.push_back({k.first, k.second, 0, n});
  return out;
}

}  // namespace aiflame
