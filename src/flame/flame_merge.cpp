#include "flame/flame_merge.h"

#include <algorithm>
#include <functional>
#include <string>

namespace aiflame {

namespace {

// Points `d`'s stacks and kernels past `base` processes: those that now come first.
void shift_processes(FlameData& d, uint32_t base) {
  auto moved = [&](uint32_t& process) {
    if (process != kNoProcess) process += base;
  };
  for (auto& s : d.stacks) moved(s.process);
  for (auto& k : d.kernels) moved(k.process);
}

}  // namespace

void merge_origins(FlameData& into, const FlameData& from) {
  std::vector<uint32_t> module_index(from.modules.size(), UINT32_MAX);
  for (const auto& [name, origin] : from.origins) {
    if (into.origins.count(name)) continue;  // a name keeps its first origin
    FrameOrigin o = origin;
    if (o.module < from.modules.size()) {
      uint32_t& m = module_index[o.module];
      if (m == UINT32_MAX) {
        m = static_cast<uint32_t>(into.modules.size());
        into.modules.push_back(from.modules[o.module]);
      }
      o.module = m;
    }
    into.origins.emplace(name, std::move(o));
  }
}

void merge_flame(FlameData& into, FlameData from) {
  auto process_base = static_cast<uint32_t>(into.processes.size());
  if (into.stacks.empty() && into.kernels.empty() && into.timeline.empty()) {
    // Nothing on a timeline yet (maybe a launcher's process that ran no kernel): `from` sets the clock.
    std::string title = std::move(into.title), subtitle = std::move(into.subtitle);
    std::vector<ProcessRow> processes = std::move(into.processes);
    into = std::move(from);
    if (!title.empty()) into.title = std::move(title);
    if (!subtitle.empty()) into.subtitle = std::move(subtitle);
    shift_processes(into, process_base);
    for (auto& r : into.processes) processes.push_back(std::move(r));
    into.processes = std::move(processes);
    return;
  }
  shift_processes(from, process_base);
  for (auto& r : from.processes) into.processes.push_back(std::move(r));
  into.user_frames.insert(from.user_frames.begin(), from.user_frames.end());
  merge_origins(into, from);
  uint64_t start = std::min(into.start_ns, from.start_ns);
  uint64_t shift_into = into.start_ns - start, shift_from = from.start_ns - start;
  for (auto& t : into.timeline) t.time_ns += shift_into;
  for (auto& k : into.kernels) { k.start_ns += shift_into; k.end_ns += shift_into; k.launch_ns += shift_into; }
  uint64_t end = std::max(into.start_ns + into.duration_ns, from.start_ns + from.duration_ns);
  // What each side recorded, on the merged timeline; gaps between them are not idle GPU but unrecorded.
  std::vector<std::pair<uint64_t, uint64_t>> spans;
  auto add_spans = [&spans](const FlameData& d, uint64_t shift) {
    if (d.recorded.empty()) spans.push_back({shift, shift + d.duration_ns});
    for (const auto& [b, e] : d.recorded) spans.push_back({b + shift, e + shift});
  };
  add_spans(into, shift_into);
  add_spans(from, shift_from);
  std::sort(spans.begin(), spans.end());
  into.recorded.clear();
  for (const auto& s : spans) {
    if (!into.recorded.empty() && s.first <= into.recorded.back().second)
      into.recorded.back().second = std::max(into.recorded.back().second, s.second);
    else
      into.recorded.push_back(s);
  }
  if (into.recorded.size() == 1 && into.recorded[0].first == 0 && into.recorded[0].second >= end - start)
    into.recorded.clear();  // no gap

  auto stack_base = static_cast<uint32_t>(into.stacks.size());
  auto cpu_base = static_cast<int32_t>(into.cpu_stacks.size());
  for (auto& s : from.stacks) into.stacks.push_back(std::move(s));
  for (auto& c : from.cpu_stacks) into.cpu_stacks.push_back(std::move(c));
  for (auto t : from.timeline) {
    t.stack += stack_base;
    t.time_ns += shift_from;
    into.timeline.push_back(t);
  }
  for (auto& k : from.kernels) {
    k.start_ns += shift_from;
    k.end_ns += shift_from;
    k.launch_ns += shift_from;
    if (k.cpu_stack >= 0) k.cpu_stack += cpu_base;
    into.kernels.push_back(std::move(k));
  }
  into.start_ns = start;
  into.duration_ns = end - start;
  if (into.process != from.process) into.process += "," + from.process;
  into.pid = 0;  // several processes
}

namespace {

uint64_t hash_of(const FrameList& frames) {
  uint64_t h = 1469598103934665603ull;
  for (const Frame& f : frames) {
    // Names are interned (frame_name.h): equal names are one pointer, so its hash stands for the text.
    h ^= std::hash<FrameName>{}(f.name) + static_cast<uint64_t>(f.kind);
    h *= 1099511628211ull;
  }
  return h;
}

}  // namespace

void merge_flame_summed(FlameData& into, FlameData from, StackIndex& index) {
  std::vector<WeightedStack> stacks = std::move(from.stacks);
  from.stacks.clear();
  auto base = static_cast<uint32_t>(into.processes.size());
  merge_flame(into, std::move(from));  // everything but the stacks
  if (into.stacks.empty()) {
    for (WeightedStack& s : stacks)
      if (s.process != kNoProcess) s.process += base;
    into.stacks = std::move(stacks);
    return;
  }
  for (; index.indexed < into.stacks.size(); index.indexed++)
    index.by_hash[hash_of(into.stacks[index.indexed].frames)].push_back(static_cast<uint32_t>(index.indexed));
  for (WeightedStack& s : stacks) {
    if (s.process != kNoProcess) s.process += base;
    auto& slots = index.by_hash[hash_of(s.frames)];
    bool summed = false;
    for (uint32_t i : slots) {
      WeightedStack& t = into.stacks[i];
      if (t.frames != s.frames) continue;
      t.count += s.count;
      t.estimated += s.estimated;
      if (t.process != s.process) t.process = kNoProcess;
      summed = true;
      break;
    }
    if (summed) continue;
    slots.push_back(static_cast<uint32_t>(into.stacks.size()));
    into.stacks.push_back(std::move(s));
    index.indexed = into.stacks.size();
  }
}

}  // namespace aiflame
