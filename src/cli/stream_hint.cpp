#include "cli/stream_hint.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <vector>

namespace aiflame {
namespace {

constexpr size_t kMinKernels = 1000;
constexpr uint64_t kWindowNs = 1'000'000;
constexpr double kMinSharedWindows = 0.25, kMaxMedianUs = 20.0, kMaxBusyShare = 0.5, kMaxOverlap = 1.05;

StreamShape shape_of(uint32_t device, std::vector<const KernelRow*>& ks) {
  StreamShape s;
  s.device = device;
  s.kernels = ks.size();
  std::sort(ks.begin(), ks.end(), [](const KernelRow* a, const KernelRow* b) { return a->start < b->start; });
  std::set<uint32_t> streams;
  std::vector<uint64_t> durations;
  durations.reserve(ks.size());
  uint64_t busy = 0, covered_to = 0, total = 0;
  size_t windows = 0, shared = 0;  // 1-ms windows in which kernels start; of which on two streams or more
  uint64_t window = ~0ull;
  uint32_t first_stream = 0;
  bool window_shared = false;
  for (const KernelRow* kp : ks) {
    const KernelRow& k = *kp;
    streams.insert(k.stream);
    const uint64_t end = std::max(k.end, k.start);
    durations.push_back(end - k.start);
    total += end - k.start;
    // The union of the kernels' intervals, in start order.
    const uint64_t from = std::max(k.start, covered_to);
    if (end > from) busy += end - from;
    covered_to = std::max(covered_to, end);
    if (k.start / kWindowNs != window) {
      shared += window_shared;
      windows++;
      window = k.start / kWindowNs;
      first_stream = k.stream;
      window_shared = false;
    } else if (k.stream != first_stream) {
      window_shared = true;
    }
  }
  shared += window_shared;
  s.streams = streams.size();
  s.shared_windows = windows ? static_cast<double>(shared) / static_cast<double>(windows) : 0.0;
  std::nth_element(durations.begin(), durations.begin() + static_cast<long>(durations.size() / 2), durations.end());
  s.median_us = static_cast<double>(durations[durations.size() / 2]) / 1e3;
  const uint64_t span = covered_to > ks.front()->start ? covered_to - ks.front()->start : 0;
  s.busy_share = span ? static_cast<double>(busy) / static_cast<double>(span) : 1.0;
  s.overlap = busy ? static_cast<double>(total) / static_cast<double>(busy) : 1.0;
  return s;
}

}  // namespace

std::optional<StreamShape> serialized_streams(const Profile& p) {
  std::map<uint32_t, std::vector<const KernelRow*>> by_device;
  for (const auto& k : p.kernels) by_device[k.device].push_back(&k);
  std::optional<StreamShape> worst;
  for (auto& [device, ks] : by_device) {
    if (ks.size() < kMinKernels) continue;
    StreamShape s = shape_of(device, ks);
    if (s.streams < 2 || s.shared_windows < kMinSharedWindows || s.median_us >= kMaxMedianUs ||
        s.busy_share >= kMaxBusyShare || s.overlap > kMaxOverlap)
      continue;
    if (!worst || s.busy_share < worst->busy_share) worst = s;
  }
  return worst;
}

std::string serialized_streams_hint(const StreamShape& s) {
  return fmt::format(
      "hint: GPU {}: {} short kernels (median {:.1f} us) on {} streams, launched side by side ({:.0f}% of the "
      "milliseconds with kernels had two streams' or more) yet never overlapping, the GPU busy {:.0f}% of their "
      "span. CUPTI's continuous PC sampling runs the kernels of concurrent streams one at a time; if the program "
      "ran slower than without aiflame, record it with --no-pc-sampling (kernels and launch stacks at full speed, "
      "no GPU samples)",
      s.device, s.kernels, s.median_us, s.streams, 100.0 * s.shared_windows, 100.0 * s.busy_share);
}

}  // namespace aiflame
