// Folded stacks, one line per stack: "frame;frame;... COUNT", root first (flamegraph.pl's input).
// By default frames carry iaprof's annotations, so that flamegraph.pl and iaprof's tools colour them
// as AI flame graphs: GPU source and kernel "_[G]", GPU instruction, stall and offset "_[g]", Python
// frames "py::". Plain mode writes the bare names.
#pragma once
#include "output/writer.h"

namespace aiflame {

struct FoldedOptions {
  bool plain = false;  // bare names, no "_[G]"/"_[g]"/"py::" annotations
};

class FoldedWriter : public Writer {
 public:
  FoldedWriter() = default;
  explicit FoldedWriter(const FoldedOptions& options) : options_(options) {}
  std::string_view format() const override { return "folded"; }
  void write(const FlameData& data, std::ostream& out) const override;
  bool uses_times() const override { return false; }

 private:
  FoldedOptions options_;
};

// A frame name made safe for the folded format: ';' would split the frame and a newline the line.
std::string folded_frame_name(std::string_view name);
// The safe name with iaprof's annotation for its kind (the reader, src/input/folded_reader.h, undoes it).
std::string annotated_frame_name(const Frame& f);
// One folded line without its count: frames joined by ';', annotated unless plain.
std::string folded_stack(const FrameList& frames, bool plain);

}  // namespace aiflame
