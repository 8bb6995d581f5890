#include "attribute/sample_aggregator.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <tuple>

namespace aiflame {
namespace {

uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  h *= 0xbf58476d1ce4e5b9ULL;
  return h ^ (h >> 31);
}

}  // namespace

size_t StackAggregator::ListHash::operator()(const std::vector<FrameId>& v) const {
  uint64_t h = v.size();
  for (FrameId x : v) h = mix(h, x);
  return h;
}

size_t StackAggregator::TimedHash::operator()(const TimedKey& k) const {
  return mix(mix(k.list, k.device), k.time_ns);
}

uint32_t StackAggregator::list(const std::vector<FrameId>& ids) {
  auto [it, fresh] = list_ids_.try_emplace(ids, static_cast<uint32_t>(lists_.size()));
  if (fresh) {
    lists_.push_back(&it->first);  // node-based map: the key stays where it is
    weights_.push_back(0.0);
  }
  return it->second;
}

void StackAggregator::add_timed(uint32_t list, uint32_t device, uint64_t time_ns, double weight) {
  uint64_t t = time_ns > start_ns_ ? (time_ns - start_ns_) / resolution_ns_ * resolution_ns_ : 0;
  timed_[{list, device, t}] += weight;
}

void StackAggregator::finish(FlameData& out) {
  // Frames ranked by (name, kind); lists compared by their frames' ranks sort as the frame lists do.
  std::vector<uint32_t> by_name(frames_.size());
  std::iota(by_name.begin(), by_name.end(), 0u);
  std::sort(by_name.begin(), by_name.end(), [&](uint32_t x, uint32_t y) {
    const Frame &a = frames_[x], &b = frames_[y];
    int c = a.name.compare(b.name);
    return c != 0 ? c < 0 : a.kind < b.kind;
  });
  std::vector<uint32_t> rank(frames_.size());
  for (uint32_t i = 0; i < by_name.size(); i++) rank[by_name[i]] = i;
  std::vector<uint32_t> order(lists_.size());
  std::iota(order.begin(), order.end(), 0u);
  auto by_rank = [&](FrameId f, FrameId g) { return rank[f] < rank[g]; };
  std::sort(order.begin(), order.end(), [&](uint32_t x, uint32_t y) {
    return std::lexicographical_compare(lists_[x]->begin(), lists_[x]->end(), lists_[y]->begin(), lists_[y]->end(), by_rank);
  });

  // Round with the largest-remainder method so that the total stays exactly the number of samples.
  double total = 0;
  for (uint32_t l : order) total += weights_[l];
  auto target = static_cast<uint64_t>(std::llround(total));
  std::vector<uint32_t> index_of(lists_.size());
  std::vector<std::pair<double, size_t>> remainders;
  remainders.reserve(order.size());
  uint64_t sum = 0;
  out.stacks.reserve(out.stacks.size() + order.size());
  for (uint32_t l : order) {
    WeightedStack ws;
    ws.frames.reserve(lists_[l]->size());
    for (FrameId f : *lists_[l]) ws.frames.push_back(frames_[f]);
    double w = weights_[l];
    ws.count = static_cast<uint64_t>(std::floor(w));
    sum += ws.count;
    remainders.emplace_back(w - std::floor(w), out.stacks.size());
    index_of[l] = static_cast<uint32_t>(out.stacks.size());
    out.stacks.push_back(std::move(ws));
  }
  std::stable_sort(remainders.begin(), remainders.end(), [](const auto& x, const auto& y) { return x.first > y.first; });
  for (size_t i = 0; sum < target && i < remainders.size(); i++, sum++) out.stacks[remainders[i].second].count++;

  std::vector<TimedCount> timeline;
  timeline.reserve(timed_.size());
  for (const auto& [k, w] : timed_) timeline.push_back({index_of[k.list], k.device, k.time_ns, w});
  std::sort(timeline.begin(), timeline.end(), [](const TimedCount& a, const TimedCount& b) {
    return std::tie(a.stack, a.device, a.time_ns) < std::tie(b.stack, b.device, b.time_ns);
  });
  out.timeline.insert(out.timeline.end(), timeline.begin(), timeline.end());
}

}  // namespace aiflame
