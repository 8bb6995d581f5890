#include "flame/flame_filter.h"

#include <re2/re2.h>

#include <algorithm>
#include <sstream>

namespace aiflame {
namespace {

std::set<std::string> split_list(const std::string& s) {
  std::set<std::string> out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ','))
    if (!item.empty()) out.insert(item);
  return out;
}

const Frame* frame_of_kind(const WeightedStack& s, FrameKind k) {
  for (const auto& f : s.frames)
    if (f.kind == k) return &f;
  return nullptr;
}

// One line, whatever the pattern holds (RE2's errors quote the part of the pattern at fault).
Result<std::shared_ptr<const re2::RE2>> compile(const std::string& pattern, std::string_view option) {
  re2::RE2::Options o;
  o.set_log_errors(false);  // RE2 would also log the error to stderr: one line is ours to print
  auto re = std::make_shared<const re2::RE2>(pattern, o);
  if (re->ok()) return re;
  std::string why = re->error();
  for (char& c : why)
    if (c == '\n' || c == '\r') c = ' ';
  return Error{"bad " + std::string(option) + " regex: " + why};
}

}  // namespace

bool regex_search(const re2::RE2& re, std::string_view name) {
  return re2::RE2::PartialMatch(re2::StringPiece(name.data(), name.size()), re);
}

Result<FlameFilter> make_flame_filter(const std::string& kernels, const std::string& exclude_kernels,
                                      const std::string& stalls, const std::string& devices, const std::string& pids) {
  FlameFilter f;
  if (!kernels.empty()) {
    auto re = compile(kernels, "--kernels");
    if (!re) return Error{re.error()};
    f.kernels = *re;
  }
  if (!exclude_kernels.empty()) {
    auto re = compile(exclude_kernels, "--exclude-kernels");
    if (!re) return Error{re.error()};
    f.exclude_kernels = *re;
  }
  f.stalls = split_list(stalls);
  for (const auto& d : split_list(devices)) {
    if (d.find_first_not_of("0123456789") != std::string::npos || d.size() > 9)
      return Error{"bad device '" + d + "' in --devices: expected GPU numbers such as 0,1"};
    f.devices.insert(static_cast<uint32_t>(std::stoul(d)));
  }
  f.pids = split_list(pids);
  return f;
}

void apply_filter(const FlameFilter& f, FlameData& data) {
  if (f.empty()) return;
  std::vector<bool> keep(data.stacks.size(), true);
  for (size_t i = 0; i < data.stacks.size(); i++) {
    const WeightedStack& s = data.stacks[i];
    const Frame* kernel = frame_of_kind(s, FrameKind::GpuKernel);
    std::string kname = kernel ? kernel->name : "";
    bool k = true;
    if (f.kernels) k = kernel && regex_search(*f.kernels, kname);
    if (k && f.exclude_kernels && kernel) k = !regex_search(*f.exclude_kernels, kname);
    if (k && !f.stalls.empty()) {
      const Frame* stall = frame_of_kind(s, FrameKind::Stall);
      k = stall && f.stalls.count(stall->name);
    }
    if (k && !f.pids.empty()) {
      bool any = false;
      for (const auto& fr : s.frames) {
        if (fr.kind != FrameKind::Process) break;
        any |= f.pids.count(fr.name) > 0;
      }
      k = any;
    }
    keep[i] = k;
  }
  // Devices: a stack's samples may come from several GPUs; its count becomes the sum of its timeline
  // entries on the kept devices (stacks have no device of their own).
  if (!f.devices.empty() && !data.timeline.empty()) {
    std::vector<double> kept(data.stacks.size(), 0);
    for (const auto& t : data.timeline)
      if (f.devices.count(t.device)) kept[t.stack] += t.weight;
    for (size_t i = 0; i < data.stacks.size(); i++) {
      data.stacks[i].count = static_cast<uint64_t>(kept[i] + 0.5);
      data.stacks[i].estimated = std::min(data.stacks[i].estimated, data.stacks[i].count);
    }
  }
  for (size_t i = 0; i < data.stacks.size(); i++)
    if (!keep[i]) data.stacks[i].count = 0;  // kept in place: the timeline refers to stacks by index
  std::vector<TimedCount> timeline;
  for (const auto& t : data.timeline)
    if (keep[t.stack] && (f.devices.empty() || f.devices.count(t.device))) timeline.push_back(t);
  data.timeline = std::move(timeline);
  std::vector<KernelSpan> kernels;
  for (auto& k : data.kernels) {
    bool ok = (!f.kernels || regex_search(*f.kernels, k.name)) &&
              (!f.exclude_kernels || !regex_search(*f.exclude_kernels, k.name)) &&
              (f.devices.empty() || f.devices.count(k.device));
    if (ok) kernels.push_back(std::move(k));
  }
  data.kernels = std::move(kernels);
}

}  // namespace aiflame
