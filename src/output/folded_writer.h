// Folded stacks, one line per stack: "frame;frame;... COUNT", root first (flamegraph.pl's input).
#pragma once
#include "output/writer.h"

namespace aiflame {

class FoldedWriter : public Writer {
 public:
  std::string_view format() const override { return "folded"; }
  void write(const FlameData& data, std::ostream& out) const override;
};

// A frame name made safe for the folded format: ';' would split the frame and a newline the line.
std::string folded_frame_name(std::string_view name);

}  // namespace aiflame
