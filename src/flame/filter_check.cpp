#include "flame/filter_check.h"

#include <set>

namespace aiflame {

namespace {

// At most 8 of the names, for a line that stays one line.
template <class Set>
std::string some_of(const Set& names) {
  std::string out;
  size_t n = 0;
  for (const auto& x : names) {
    if (n++ == 8) return out + ", ...";
    out += (out.empty() ? "" : ", ") + std::string(x);
  }
  return out.empty() ? "none" : out;
}

}  // namespace

std::vector<std::string> unmatched_filter_items(const FlameFilter& f, const FlameData& data) {
  std::vector<std::string> out;
  if (f.empty()) return out;
  std::set<std::string> stalls, roots;
  bool kernel_matched = false, kernel_seen = false;
  for (const auto& s : data.stacks) {
    if (s.count == 0) continue;
    for (const auto& fr : s.frames) {
      if (fr.kind == FrameKind::Process) roots.insert(fr.name);
      else if (fr.kind == FrameKind::Stall) stalls.insert(fr.name);
      else if (fr.kind == FrameKind::GpuKernel && f.kernels && !kernel_matched) {
        kernel_seen = true;
        kernel_matched = regex_search(*f.kernels, fr.name.str());
      }
    }
  }
  if (f.kernels && !kernel_matched) out.push_back(kernel_seen ? "--kernels matches no sampled kernel" : "--kernels: no sampled kernel here");
  for (const auto& s : f.stalls)
    if (!stalls.count(s)) out.push_back("--stalls " + s + " (the stall reasons here: " + some_of(stalls) + ")");
  if (!f.devices.empty() && !data.timeline.empty()) {
    std::set<uint32_t> devices;
    for (const auto& t : data.timeline)
      if (t.weight > 0) devices.insert(t.device);
    std::set<std::string> names;
    for (uint32_t d : devices) names.insert(std::to_string(d));
    for (uint32_t d : f.devices)
      if (!devices.count(d)) out.push_back("--devices " + std::to_string(d) + " (the GPUs here: " + some_of(names) + ")");
  }
  for (const auto& p : f.pids)
    if (!roots.count(p)) out.push_back("--pids '" + p + "' (the processes here: " + some_of(roots) + ")");
  return out;
}

}  // namespace aiflame
