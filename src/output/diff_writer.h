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

// The share of each input's samples (0..1) that lie in stacks both inputs have: whole stacks, and
// stacks up to their kernel (launch stack and kernel; the instruction and stall leaves below differ
// from run to run where samples are few). Near 1 for two runs of one program, near 0 when the inputs
// name their stacks differently (other programs, or roots that differ, such as pids).
struct DiffShare {
  double before = 0, after = 0;
  double kernels_before = 0, kernels_after = 0;
};
DiffShare diff_share(const DiffData& d);
// Below this share of stacks up to their kernel, `aiflame diff` says the inputs share little.
inline constexpr double kLittleShared = 0.5;

// "stack BEFORE AFTER" lines (difffolded.pl's output; flamegraph.pl draws them as a differential
// graph), BEFORE scaled and rounded; annotated names unless plain.
void write_diff_folded(const DiffData& d, std::ostream& out, bool plain = false);

// A static SVG: every frame a rectangle with a tooltip giving both counts and the change.
void write_diff_svg(const DiffData& d, std::ostream& out, int width = 1200);

}  // namespace aiflame
