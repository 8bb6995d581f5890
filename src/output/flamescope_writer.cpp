#include "output/flamescope_writer.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <vector>
#include <ostream>

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

}  // namespace

void FlameScopeWriter::write(const FlameData& data, std::ostream& out) const {
  auto parts = split_by_time(data);
  const bool timed = !data.timeline.empty();
  uint64_t total = 0;
  for (const auto& p : parts) total += p.count;
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
    const auto& frames = data.stacks[p.stack].frames;
    size_t first = 0;
    std::string comm = data.process.empty() ? "aiflame" : data.process;
    std::string pid = std::to_string(data.pid);
    if (first < frames.size() && frames[first].kind == FrameKind::Process) comm = frames[first++].name;
    if (first < frames.size() && frames[first].kind == FrameKind::Process) pid = frames[first++].name;
    std::string body;
    for (size_t i = frames.size(); i-- > first;) {
      uint64_t addr = 0;
      const std::string& n = frames[i].name;
      if (frames[i].kind == FrameKind::GpuInstruction && n.size() > 2 && n[0] == '0' && n[1] == 'x')
        std::from_chars(n.data() + 2, n.data() + n.size(), addr, 16);
      char hex[24];
      auto r = std::to_chars(hex, hex + sizeof hex, addr, 16);
      body += '\t';
      body.append(hex, r.ptr);
      body += ' ' + clean(n) + " (" + module_of(frames[i].kind, pid) + ")\n";
    }
    for (uint64_t k = 0; k < p.count; k++, seq++) {
      double t = timed ? 1.0 + static_cast<double>(p.time_ns) / 1e9 +
                             kBucket * static_cast<double>(bucket_seen[pi] + k) / static_cast<double>(bucket_total[pi])
                       : 1.0 + static_cast<double>(seq) / static_cast<double>(std::max<uint64_t>(total, 1));
      char ts[48];
      snprintf(ts, sizeof ts, "%.6f", t);
      out << clean(comm) << ' ' << pid << " [000] " << ts << ": 1 gpu-samples:\n" << body << '\n';
    }
  }
}

}  // namespace aiflame
