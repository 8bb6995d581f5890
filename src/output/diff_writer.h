// Differential flame graphs (Brendan Gregg's, as difffolded.pl -n and flamegraph.pl draw them):
// BEFORE is scaled to AFTER's total samples, frames are as wide as AFTER's samples, red where AFTER
// grew and blue where it shrank, deeper for a larger change. Stacks only in BEFORE have no width;
// swap the inputs to see them.
#pragma once
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "flame/flame_data.h"

namespace aiflame {

struct DiffStack {
  FrameList frames;
  uint64_t before = 0;           // samples in BEFORE
  double before_scaled = 0;      // the same scaled to AFTER's total
  uint64_t after = 0;
};

struct DiffData {
  std::string title;
  uint64_t before_total = 0, after_total = 0;
  std::vector<DiffStack> stacks;  // sorted by their folded line
};

// Stacks matched by their frame names (annotations aside), so inputs of different formats compare.
DiffData make_diff(const FlameData& before, const FlameData& after);

// "stack BEFORE AFTER" lines (difffolded.pl's output; flamegraph.pl draws them as a differential
// graph), BEFORE scaled and rounded; annotated names unless plain.
void write_diff_folded(const DiffData& d, std::ostream& out, bool plain = false);

// A static SVG: every frame a rectangle with a tooltip giving both counts and the change.
void write_diff_svg(const DiffData& d, std::ostream& out, int width = 1200);

}  // namespace aiflame
