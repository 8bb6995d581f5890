#include "output/flamescope_writer.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <ostream>
#include <vector>

#include "output/device_split.h"

namespace aiflame {

namespace {

// perf script's layout keeps one frame per line; FlameScope reads the comm up to its first digit.
// FlameScope's frame parser (app/perf/flame_graph.py, Netflix/flamescope at be26595) cuts a name at
// its first '+' (perf's "sym+0xoff") and splits it at "->" (perf-map-agent's inlined frames): both
// are written as their fullwidth forms, U+FF0B and U+FF1E, so that "[libstdc++.so.6+0xecdb3]" stays
// one readable name instead of "[libstdc".
std::string clean(std::string_view s) {
  std::string o;
  o.reserve(s.size());
  for (size_t i = 0; i < s.size(); i++) {
    char c = s[i];
    if (c == '\n' || c == '\r' || c == '\t') o += ' ';
    else if (c == '+') o += "\xEF\xBC\x8B";                                   // U+FF0B FULLWIDTH PLUS SIGN
    else if (c == '>' && i > 0 && s[i - 1] == '-') o += "\xEF\xBC\x9E";      // U+FF1E FULLWIDTH GREATER-THAN
    else o += c;
  }
  return o.empty() ? "[empty]" : o;
}

// The "(module)" of a frame line, chosen for the type FlameScope gives it (app/common/libtype.py):
// Python frames name the perf map that CPython's perf support (-X perf) writes, as perf script
// shows them ("jit"); GPU frames "[gpu]" (a bracketed module is FlameScope's "kernel" type, drawn
// apart from CPU code); native code "user"; aiflame's labels no module (no type).
std::string module_of(FrameKind k, std::string_view pid) {
  switch (k) {
    case FrameKind::Python: return "/tmp/perf-" + std::string(pid) + ".map";
    case FrameKind::Native: return "native";
    case FrameKind::Runtime: return "runtime";
    case FrameKind::GpuKernel:
    case FrameKind::GpuSource:
    case FrameKind::GpuInstruction:
    case FrameKind::Stall: return "[gpu]";
    default: return "";
  }
}

// A stack's event but for its time: comm and pid before it, the frames (leaf first) after it.
struct Event {
  std::string head;  // "comm pid [000] "
  std::string body;  // ": 1 gpu-samples:\n" then one line a frame, then the blank line
};

Event event_of(const FlameData& data, const FrameList& frames) {
  size_t first = 0;
  std::string comm = data.process.empty() ? "aiflame" : data.process;
  std::string pid = std::to_string(data.pid);
  if (first < frames.size() && frames[first].kind == FrameKind::Process) comm = frames[first++].name;
  if (first < frames.size() && frames[first].kind == FrameKind::Process) pid = frames[first++].name;
  Event e{clean(comm) + ' ' + pid + " [000] ", ": 1 gpu-samples:\n"};
  for (size_t i = frames.size(); i-- > first;) {
    uint64_t addr = 0;
    const std::string& n = frames[i].name;
    if (frames[i].kind == FrameKind::GpuInstruction && n.size() > 2 && n[0] == '0' && n[1] == 'x')
      std::from_chars(n.data() + 2, n.data() + n.size(), addr, 16);
    char hex[24];
    auto r = std::to_chars(hex, hex + sizeof hex, addr, 16);
    e.body += '\t';
    e.body.append(hex, r.ptr);
    e.body += ' ' + clean(n) + " (" + module_of(frames[i].kind, pid) + ")\n";
  }
  e.body += '\n';
  return e;
}

// An upper bound on the time's "%.6f": 1 s + 2^64 ns is 18446744074.709553 (18 characters).
constexpr size_t kTimeChars = 24;

// The events to write: split_by_time's parts with their counts turned into events.
struct Plan {
  std::vector<StackPart> parts;
  uint64_t samples = 0;
  double bytes = 0;               // what one event per sample would take (at most)
  double samples_per_event = 1;   // above 1 where the bound applies
  uint64_t left_out_stacks = 0, left_out_samples = 0;
};

Plan plan_events(const FlameData& data, uint64_t max_bytes) {
  Plan p;
  p.parts = split_by_time(data);
  for (const auto& stack : data.stacks) {
    if (!stack.count) continue;
    Event e = event_of(data, stack.frames);
    p.samples += stack.count;
    p.bytes += static_cast<double>(stack.count) * static_cast<double>(e.head.size() + kTimeChars + e.body.size());
  }
  if (p.bytes <= static_cast<double>(max_bytes)) return p;
  // Each stack's events: its samples over samples_per_event, rounded (so the whole is max_bytes
  // plus at most half an event a stack), spread over its parts in proportion (largest remainders).
  p.samples_per_event = p.bytes / static_cast<double>(std::max<uint64_t>(max_bytes, 1));
  std::vector<StackPart> out;
  for (size_t i = 0, j; i < p.parts.size(); i = j) {  // a stack's parts are together, in time order
    uint64_t samples = 0;
    std::vector<double> weights;
    for (j = i; j < p.parts.size() && p.parts[j].stack == p.parts[i].stack; j++) {
      samples += p.parts[j].count;
      weights.push_back(static_cast<double>(p.parts[j].count));
    }
    auto events = static_cast<uint64_t>(std::floor(static_cast<double>(samples) / p.samples_per_event + 0.5));
    if (!events) {
      p.left_out_stacks++;
      p.left_out_samples += samples;
      continue;
    }
    auto n = largest_remainder(weights, events);
    for (size_t k = i; k < j; k++)
      if (n[k - i]) out.push_back({p.parts[k].stack, p.parts[k].device, p.parts[k].time_ns, n[k - i]});
  }
  p.parts = std::move(out);
  return p;
}

std::string size_text(uint64_t bytes) {
  return bytes % (1 << 20) == 0 ? fmt::format("{} MiB", bytes >> 20) : fmt::format("{} bytes", bytes);
}

std::string note_of(const Plan& p, uint64_t max_bytes) {
  if (p.samples_per_event <= 1) return {};
  std::string s = fmt::format(
      "FlameScope output bounded at {}: {} samples as one event each would take {:.3g} MB, so each event stands "
      "for {:.4g} samples (perf script has no count field; FlameScope counts events)",
      size_text(max_bytes), p.samples, p.bytes / 1e6, p.samples_per_event);
  if (p.left_out_stacks)
    s += fmt::format("; {} {} under {:.4g} samples ({:.2g}% of the samples) left out", p.left_out_stacks,
                     p.left_out_stacks == 1 ? "stack with" : "stacks with", p.samples_per_event / 2, 100.0 * static_cast<double>(p.left_out_samples) / static_cast<double>(p.samples));
  return s;
}

}  // namespace

std::string FlameScopeWriter::bound_note(const FlameData& data) const {
  return note_of(plan_events(data, o_.max_bytes), o_.max_bytes);
}

void FlameScopeWriter::write(const FlameData& data, std::ostream& out) const {
  Plan plan = plan_events(data, o_.max_bytes);
  auto& parts = plan.parts;
  const bool timed = !data.timeline.empty();
  uint64_t total = 0;
  for (const auto& p : parts) total += p.count;
  if (std::string note = note_of(plan, o_.max_bytes); !note.empty()) out << "# aiflame: " << note << "\n";
  if (!timed) out << "# aiflame: the input has no sample times; samples are spread evenly over one second\n";
  std::stable_sort(parts.begin(), parts.end(), [](const auto& a, const auto& b) { return a.time_ns < b.time_ns; });
  // Times from the profile's start, plus one second so that FlameScope's range starts at a whole
  // second before the first sample.
  // Within a 1 ms bucket the samples are spread evenly (FlameScope wants distinct, ordered times).
  constexpr double kBucket = 1e-3;
  std::vector<uint64_t> bucket_total(parts.size()), bucket_seen(parts.size());
  for (size_t i = 0, j = 0; i < parts.size(); i = j) {
    uint64_t m = 0;
    for (j = i; j < parts.size() && parts[j].time_ns == parts[i].time_ns; j++) m += parts[j].count;
    for (size_t k = i, seen = 0; k < j; seen += parts[k].count, k++) bucket_total[k] = m, bucket_seen[k] = seen;
  }
  uint64_t seq = 0;
  for (size_t pi = 0; pi < parts.size(); pi++) {
    const auto& p = parts[pi];
    const Event e = event_of(data, data.stacks[p.stack].frames);
    for (uint64_t k = 0; k < p.count; k++, seq++) {
      double t = timed ? 1.0 + static_cast<double>(p.time_ns) / 1e9 +
                             kBucket * static_cast<double>(bucket_seen[pi] + k) / static_cast<double>(bucket_total[pi])
                       : 1.0 + static_cast<double>(seq) / static_cast<double>(std::max<uint64_t>(total, 1));
      char ts[48];
      snprintf(ts, sizeof ts, "%.6f", t);
      out << e.head << ts << e.body;
    }
  }
}

}  // namespace aiflame
