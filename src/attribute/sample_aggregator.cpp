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

size_t StackAggregator::TimedHash::operator()(const TimedKey& k) const {
  return mix(mix(k.list, k.device), k.time_ns);
}

uint32_t StackAggregator::part(const std::vector<FrameId>& ids) {
  uint64_t h = ids.size();
  for (FrameId x : ids) h = dense_hash_mix(h, x);
  auto [id, fresh] = part_ids_.find_or_add(h, [&](uint32_t p) {
    auto have = part_frames(p);
    return std::equal(have.begin(), have.end(), ids.begin(), ids.end());
  });
  if (fresh) {
    arena_.insert(arena_.end(), ids.begin(), ids.end());
    offsets_.push_back(static_cast<uint32_t>(arena_.size()));
  }
  return id;
}

uint32_t StackAggregator::list(uint32_t head, uint32_t tail) {
  auto [id, fresh] = list_ids_.find_or_add(dense_hash_mix(head, tail), [&](uint32_t l) {
    return lists_[l] == std::pair{head, tail};
  });
  if (fresh) {
    lists_.emplace_back(head, tail);
    weights_.push_back(0.0);
  }
  return id;
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
  const uint32_t lists = list_ids_.size();
  std::vector<uint32_t> order(lists);
  std::iota(order.begin(), order.end(), 0u);
  // A list's i-th frame, across its two parts.
  auto frame_at = [&](uint32_t l, size_t i, size_t head_size) {
    return i < head_size ? part_frames(lists_[l].first)[i] : part_frames(lists_[l].second)[i - head_size];
  };
  std::sort(order.begin(), order.end(), [&](uint32_t x, uint32_t y) {
    if (lists_[x].first == lists_[y].first) {  // the same head: the tails decide
      auto a = part_frames(lists_[x].second), b = part_frames(lists_[y].second);
      return std::lexicographical_compare(a.begin(), a.end(), b.begin(), b.end(),
                                          [&](FrameId f, FrameId g) { return rank[f] < rank[g]; });
    }
    size_t hx = part_frames(lists_[x].first).size(), hy = part_frames(lists_[y].first).size();
    size_t nx = hx + part_frames(lists_[x].second).size(), ny = hy + part_frames(lists_[y].second).size();
    for (size_t i = 0; i < nx && i < ny; i++) {
      uint32_t a = rank[frame_at(x, i, hx)], b = rank[frame_at(y, i, hy)];
      if (a != b) return a < b;
    }
    return nx < ny;
  });
  // Each part becomes one shared run of frames, made when a list first needs it.
  std::vector<FrameList::Run> runs(part_ids_.size());
  auto run_of = [&](uint32_t part) -> const FrameList::Run& {
    if (!runs[part]) {
      auto ids = part_frames(part);
      auto frames = std::make_shared<std::vector<Frame>>();
      frames->reserve(ids.size());
      for (FrameId f : ids) frames->push_back(frames_[f]);
      runs[part] = std::move(frames);
    }
    return runs[part];
  };

  // Round with the largest-remainder method so that the total stays exactly the number of samples.
  double total = 0;
  for (uint32_t l : order) total += weights_[l];
  auto target = static_cast<uint64_t>(std::llround(total));
  std::vector<uint32_t> index_of(lists);
  std::vector<std::pair<double, size_t>> remainders;
  remainders.reserve(order.size());
  uint64_t sum = 0;
  out.stacks.reserve(out.stacks.size() + order.size());
  for (uint32_t l : order) {
    WeightedStack ws;
    ws.frames = FrameList(run_of(lists_[l].first), run_of(lists_[l].second));
    double w = weights_[l];
    ws.count = static_cast<uint64_t>(std::floor(w));
    if (l < estimated_.size()) ws.estimated = static_cast<uint64_t>(std::llround(std::min(estimated_[l], w)));
    sum += ws.count;
    remainders.emplace_back(w - std::floor(w), out.stacks.size());
    index_of[l] = static_cast<uint32_t>(out.stacks.size());
    out.stacks.push_back(std::move(ws));
  }
  std::stable_sort(remainders.begin(), remainders.end(), [](const auto& x, const auto& y) { return x.first > y.first; });
  for (size_t i = 0; sum < target && i < remainders.size(); i++, sum++) out.stacks[remainders[i].second].count++;
  for (size_t i = out.stacks.size() - order.size(); i < out.stacks.size(); i++)
    out.stacks[i].estimated = std::min(out.stacks[i].estimated, out.stacks[i].count);

  std::vector<TimedCount> timeline;
  timeline.reserve(timed_.size());
  for (const auto& [k, w] : timed_) timeline.push_back({index_of[k.list], k.device, k.time_ns, w});
  std::sort(timeline.begin(), timeline.end(), [](const TimedCount& a, const TimedCount& b) {
    return std::tie(a.stack, a.device, a.time_ns) < std::tie(b.stack, b.device, b.time_ns);
  });
  out.timeline.insert(out.timeline.end(), timeline.begin(), timeline.end());
}

}  // namespace aiflame
