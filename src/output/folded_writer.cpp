#include "output/folded_writer.h"

#include <algorithm>
#include <map>

namespace aiflame {

std::string folded_frame_name(std::string_view name) {
  std::string s;
  s.reserve(name.size());
  for (char c : name) {
    if (c == ';') s += ':';
    else if (c == '\n' || c == '\r' || c == '\t' || c == '\0') s += ' ';
    else s += c;
  }
  if (s.empty()) s = "[empty]";
  return s;
}

std::string annotated_frame_name(const Frame& f) {
  std::string s = folded_frame_name(f.name);
  switch (f.kind) {
    case FrameKind::GpuSource:
    case FrameKind::GpuKernel: return s + "_[G]";
    case FrameKind::GpuInstruction:
    case FrameKind::Stall: return s + "_[g]";
    case FrameKind::Python: return "py::" + s;
    default: return s;  // process, pid, native, runtime, "-", [unattributed]: as iaprof writes them
  }
}

std::string folded_stack(const std::vector<Frame>& frames, bool plain) {
  std::string line;
  for (size_t i = 0; i < frames.size(); i++) {
    if (i) line += ';';
    line += plain ? folded_frame_name(frames[i].name) : annotated_frame_name(frames[i]);
  }
  return line;
}

void FoldedWriter::write(const FlameData& data, std::ostream& out) const {
  // Lines sorted and merged, so the output is deterministic and each stack appears once.
  std::map<std::string, uint64_t> lines;
  for (const auto& st : data.stacks) {
    if (st.count == 0) continue;
    lines[folded_stack(st.frames, options_.plain)] += st.count;
  }
  // One space before the count: flamegraph.pl splits the count off at the last whitespace.
  for (const auto& [line, count] : lines) out << line << ' ' << count << '\n';
}

}  // namespace aiflame
