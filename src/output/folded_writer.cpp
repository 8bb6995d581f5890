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

void FoldedWriter::write(const FlameData& data, std::ostream& out) const {
  // Lines sorted and merged, so the output is deterministic and each stack appears once.
  std::map<std::string, uint64_t> lines;
  for (const auto& st : data.stacks) {
    if (st.count == 0) continue;
    std::string line;
    for (size_t i = 0; i < st.frames.size(); i++) {
      if (i) line += ';';
      line += folded_frame_name(st.frames[i].name);
    }
    lines[line] += st.count;
  }
  for (const auto& [line, count] : lines) out << line << ' ' << count << '\n';
}

}  // namespace aiflame
