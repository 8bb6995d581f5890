#include "output/trace_writer.h"

#include <map>
#include <nlohmann/json.hpp>
#include <ostream>
#include <set>
#include <tuple>

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

namespace {

// Tracks of GPU streams are threads of the process that launched their kernels; their ids lie above
// Linux's largest pid (pid_max is at most 2^22), so they never meet a real thread id.
constexpr uint64_t kGpuTrackBase = 1000000000;
uint64_t gpu_track(uint32_t device, uint32_t stream) { return kGpuTrackBase + uint64_t{device} * 1000000 + stream % 1000000; }

// The launch stacks as one tree of frames ("stackFrames"): each event names its leaf ("sf").
class StackFrames {
 public:
  // The node of the stack's leaf; frames root first.
  uint64_t add(const std::vector<Frame>& frames) {
    uint64_t parent = 0;  // 0: the root, not a node
    for (const auto& f : frames) {
      auto [it, fresh] = ids_.try_emplace({parent, f.name}, ids_.size() + 1);
      if (fresh) {
        nlohmann::json node{{"name", f.name}, {"category", std::string(frame_kind_name(f.kind))}};
        if (parent) node["parent"] = parent;
        nodes_[std::to_string(it->second)] = std::move(node);
      }
      parent = it->second;
    }
    return parent;
  }
  nlohmann::json take() { return std::move(nodes_); }

 private:
  std::map<std::pair<uint64_t, FrameName>, uint64_t> ids_;
  nlohmann::json nodes_ = nlohmann::json::object();
};

}  // namespace

void TraceWriter::write(const FlameData& data, std::ostream& out) const {
  using nlohmann::json;
  json events = json::array();
  auto pid_of = [&](uint32_t process) -> uint64_t {
    if (process < data.processes.size() && data.processes[process].pid) return data.processes[process].pid;
    return data.pid ? data.pid : 1;  // inputs that name no process: one of their own, never pid 0
  };
  // Processes with their names; GPU streams and launching threads as their threads.
  std::map<uint64_t, std::string> processes;
  std::set<std::tuple<uint64_t, uint32_t, uint32_t>> streams;  // (pid, device, stream)
  std::set<std::pair<uint64_t, uint32_t>> threads;              // (pid, tid)
  for (const auto& k : data.kernels) {
    uint64_t pid = pid_of(k.process);
    streams.insert({pid, k.device, k.stream});
    if (k.launch_tid) threads.insert({pid, k.launch_tid});
  }
  for (size_t i = 0; i < data.processes.size(); i++) {
    const auto& r = data.processes[i];
    processes[pid_of(static_cast<uint32_t>(i))] = r.name + (r.rank >= 0 ? " (rank " + std::to_string(r.rank) + ")" : "");
  }
  for (const auto& [pid, device, stream] : streams)
    if (!processes.count(pid)) processes[pid] = data.process.empty() ? "aiflame" : data.process;
  for (const auto& [pid, name] : processes)
    events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", pid}, {"tid", 0}, {"args", {{"name", name}}}});
  for (const auto& [pid, tid] : threads)
    events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", pid}, {"tid", tid},
                      {"args", {{"name", tid == pid ? "main thread (launches)" : "thread " + std::to_string(tid) + " (launches)"}}}});
  for (const auto& [pid, d, s] : streams) {
    events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", pid}, {"tid", gpu_track(d, s)},
                      {"args", {{"name", "GPU " + std::to_string(d) + " stream " + std::to_string(s)}}}});
    // GPU tracks below the process's threads.
    events.push_back({{"name", "thread_sort_index"}, {"ph", "M"}, {"pid", pid}, {"tid", gpu_track(d, s)},
                      {"args", {{"sort_index", gpu_track(d, s)}}}});
  }
  StackFrames frames;
  std::vector<uint64_t> leaf(data.cpu_stacks.size(), 0);
  for (size_t i = 0; i < data.cpu_stacks.size(); i++) leaf[i] = frames.add(data.cpu_stacks[i]);
  auto span_samples = kernel_span_samples(data);
  // A launch slice's name: the API call and the user's frame that made it, the deepest frame of the
  // user's own code in the launch stack (FlameData::user_frames), else (an autograd engine thread
  // without the forward's stack) the deepest Python or native frame that is not the runtime's
  // ("cuLaunchKernel from forward (model.py:12)", "cuLaunchKernel from at::native::addmm_out_cuda").
  auto user_frame = [&](const std::vector<Frame>& stack) -> const Frame* {
    const Frame* fallback = nullptr;
    for (size_t i = stack.size(); i-- > 0;) {
      const Frame& f = stack[i];
      if (data.user_frames.count(f.name)) return &f;
      if (!fallback && (f.kind == FrameKind::Python || f.kind == FrameKind::Native)) fallback = &f;
    }
    return fallback;
  };
  // One slice per launch call on its thread (a graph launch runs several kernels), from the launch
  // callback's entry to its exit; where the exit was not recorded (older profiles, the last launch of
  // a thread), 1 us or until the thread's next launch.
  std::map<std::tuple<uint64_t, uint32_t, uint64_t, uint32_t>, std::vector<size_t>> launches;  // (pid, tid, ts, corr)
  for (size_t i = 0; i < data.kernels.size(); i++) {
    const auto& k = data.kernels[i];
    if (k.launch_tid) launches[{pid_of(k.process), k.launch_tid, k.launch_ns, k.correlation_id}].push_back(i);
  }
  uint64_t flow = 0;
  for (auto it = launches.begin(); it != launches.end(); ++it) {
    const auto& [key, kernels] = *it;
    const auto& [pid, tid, ts, corr] = key;
    const KernelSpan& first = data.kernels[kernels[0]];
    double dur = 1.0;
    if (auto next = std::next(it); next != launches.end() && std::get<0>(next->first) == pid && std::get<1>(next->first) == tid)
      dur = std::min(dur, micros(std::get<2>(next->first) - ts));
    if (first.launch_dur_ns) dur = micros(first.launch_dur_ns);
    bool has_stack = first.cpu_stack >= 0 && static_cast<size_t>(first.cpu_stack) < data.cpu_stacks.size();
    std::string name = first.launch_api.empty() ? "launch" : first.launch_api.str();
    if (const Frame* f = has_stack ? user_frame(data.cpu_stacks[first.cpu_stack]) : nullptr) name += " from " + f->name.str();
    json e{{"name", name}, {"cat", "launch"}, {"ph", "X"}, {"pid", pid}, {"tid", tid}, {"ts", micros(ts)}, {"dur", dur},
           {"args", {{"correlation_id", corr}, {"kernels", kernels.size()}, {"duration_recorded", first.launch_dur_ns != 0}}}};
    if (has_stack) e["sf"] = leaf[first.cpu_stack];
    events.push_back(std::move(e));
    // A flow from the launch to each of its kernels (the "f" end binds to the kernel's slice).
    for (size_t i : kernels) {
      const auto& k = data.kernels[i];
      ++flow;
      events.push_back({{"name", "launch"}, {"cat", "launch"}, {"ph", "s"}, {"id", flow}, {"pid", pid}, {"tid", tid}, {"ts", micros(ts)}});
      events.push_back({{"name", "launch"}, {"cat", "launch"}, {"ph", "f"}, {"bp", "e"}, {"id", flow}, {"pid", pid},
                        {"tid", gpu_track(k.device, k.stream)}, {"ts", micros(k.start_ns)}});
    }
  }
  for (size_t i = 0; i < data.kernels.size(); i++) {
    const auto& k = data.kernels[i];
    json e{{"name", k.name},
           {"cat", "kernel"},
           {"ph", "X"},
           {"pid", pid_of(k.process)},
           {"tid", gpu_track(k.device, k.stream)},
           {"ts", micros(k.start_ns)},
           {"dur", micros(k.end_ns - std::min(k.start_ns, k.end_ns))},
           {"args", {{"samples", span_samples[i]}, {"correlation_id", k.correlation_id}, {"device", k.device}, {"stream", k.stream}}}};
    if (k.cpu_stack >= 0 && static_cast<size_t>(k.cpu_stack) < data.cpu_stacks.size()) e["sf"] = leaf[k.cpu_stack];
    events.push_back(std::move(e));
  }
  // GPU samples per timeline bucket, per process and device.
  std::map<std::tuple<uint64_t, uint32_t, uint64_t>, uint64_t> per_time;
  if (!data.timeline.empty())
    for (const auto& p : split_by_time(data)) per_time[{pid_of(data.stacks[p.stack].process), p.device, p.time_ns}] += p.count;
  for (const auto& [key, n] : per_time) {
    const auto& [pid, device, t] = key;
    events.push_back({{"name", "GPU " + std::to_string(device) + " samples"}, {"ph", "C"}, {"pid", pid}, {"tid", 0}, {"ts", micros(t)},
                      {"args", {{"samples", n}}}});
  }
  json doc{{"traceEvents", std::move(events)},
           {"stackFrames", frames.take()},
           {"displayTimeUnit", "ns"},
           {"otherData", {{"exporter", "aiflame"}, {"title", data.title}, {"process", data.process}, {"pid", data.pid},
                          {"start_ns", data.start_ns}}}};
  out << doc.dump(-1, ' ', false, json::error_handler_t::replace) << '\n';
}

}  // namespace aiflame
