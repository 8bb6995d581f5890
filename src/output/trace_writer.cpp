#include "output/trace_writer.h"

#include <map>
#include <nlohmann/json.hpp>
#include <ostream>
#include <set>

#include "output/device_split.h"

namespace aiflame {

namespace {

std::string join_names(const FrameList& frames, size_t n) {
  std::string s;
  for (size_t i = 0; i < n && i < frames.size(); i++) s += frames[i].name, s += '\x1f';
  return s;
}

double micros(uint64_t ns) { return static_cast<double>(ns) / 1000.0; }

}  // namespace

std::vector<uint64_t> kernel_span_samples(const FlameData& data) {
  // (kernel, launch stack) -> samples, from the stacks: the launch stack is everything before "-".
  std::map<std::pair<std::string, std::string>, uint64_t> samples;
  for (const auto& s : data.stacks) {
    int sep = find_frame(s.frames, FrameKind::Separator), k = find_frame(s.frames, FrameKind::GpuKernel);
    if (sep < 0 || k < 0) continue;
    samples[{s.frames[k].name, join_names(s.frames, sep)}] += s.count;
  }
  std::map<std::pair<std::string, std::string>, std::vector<size_t>> spans;
  for (size_t i = 0; i < data.kernels.size(); i++) {
    const auto& k = data.kernels[i];
    if (k.cpu_stack < 0 || static_cast<size_t>(k.cpu_stack) >= data.cpu_stacks.size()) continue;
    const auto& cs = data.cpu_stacks[k.cpu_stack];
    spans[{k.name, join_names(cs, cs.size())}].push_back(i);
  }
  std::vector<uint64_t> out(data.kernels.size(), 0);
  for (const auto& [key, idx] : spans) {
    auto it = samples.find(key);
    if (it == samples.end()) continue;
    std::vector<double> w;
    for (size_t i : idx) w.push_back(static_cast<double>(data.kernels[i].end_ns - std::min(data.kernels[i].start_ns, data.kernels[i].end_ns)));
    auto n = largest_remainder(w, it->second);
    for (size_t j = 0; j < idx.size(); j++) out[idx[j]] = n[j];
  }
  return out;
}

void TraceWriter::write(const FlameData& data, std::ostream& out) const {
  using nlohmann::json;
  json events = json::array();
  std::set<uint32_t> devices;
  std::set<std::pair<uint32_t, uint32_t>> streams;
  for (const auto& k : data.kernels) devices.insert(k.device), streams.insert({k.device, k.stream});
  for (const auto& t : data.timeline) devices.insert(t.device);
  for (uint32_t d : devices)
    events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", d}, {"args", {{"name", "GPU " + std::to_string(d)}}}});
  for (const auto& [d, s] : streams)
    events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", d}, {"tid", s}, {"args", {{"name", "stream " + std::to_string(s)}}}});
  auto span_samples = kernel_span_samples(data);
  for (size_t i = 0; i < data.kernels.size(); i++) {
    const auto& k = data.kernels[i];
    json stack = json::array();
    if (k.cpu_stack >= 0 && static_cast<size_t>(k.cpu_stack) < data.cpu_stacks.size())
      for (const auto& f : data.cpu_stacks[k.cpu_stack]) stack.push_back(f.name);
    events.push_back({{"name", k.name},
                      {"cat", "kernel"},
                      {"ph", "X"},
                      {"pid", k.device},
                      {"tid", k.stream},
                      {"ts", micros(k.start_ns)},
                      {"dur", micros(k.end_ns - std::min(k.start_ns, k.end_ns))},
                      {"args", {{"samples", span_samples[i]}, {"correlation_id", k.correlation_id}, {"launch_stack", std::move(stack)}}}});
  }
  // GPU samples per timeline bucket, per device.
  std::map<std::pair<uint32_t, uint64_t>, uint64_t> per_time;
  if (!data.timeline.empty())
    for (const auto& p : split_by_time(data)) per_time[{p.device, p.time_ns}] += p.count;
  for (const auto& [key, n] : per_time)
    events.push_back({{"name", "GPU samples"}, {"ph", "C"}, {"pid", key.first}, {"ts", micros(key.second)}, {"args", {{"samples", n}}}});
  json doc{{"traceEvents", std::move(events)},
           {"displayTimeUnit", "ns"},
           {"otherData", {{"exporter", "aiflame"}, {"title", data.title}, {"process", data.process}, {"pid", data.pid},
                          {"start_ns", data.start_ns}}}};
  out << doc.dump(-1, ' ', false, json::error_handler_t::replace) << '\n';
}

}  // namespace aiflame
