// Helpers the timed and per-device writers share: integer sample counts per device and per time
// that add up exactly to each stack's count, and where the GPU frames of a stack are.
#pragma once
#include <cstdint>
#include <vector>

#include "flame/flame_data.h"

namespace aiflame {

// Whole numbers proportional to `weights` that sum to exactly `target` (largest remainders get the
// leftover units; ties go to the earlier weight). All-zero weights share `target` equally.
std::vector<uint64_t> largest_remainder(const std::vector<double>& weights, uint64_t target);

struct StackPart {
  uint32_t stack = 0;
  uint32_t device = 0;
  uint64_t time_ns = 0;  // 0 when the data has no timeline
  uint64_t count = 0;
};

// Every stack's count split over the timeline entries that refer to it (rounded per stack, so the
// parts of a stack add up to its count). Stacks without timeline entries give one part at time 0 on
// device 0. Zero parts are left out; parts are in stack, then timeline order.
std::vector<StackPart> split_by_time(const FlameData& d);

// The same, merged over time: one part per (stack, device).
std::vector<StackPart> split_by_device(const FlameData& d);

// Index of the first frame of that kind, or -1 (a stack's FrameList or a vector of frames).
template <class Frames>
int find_frame(const Frames& frames, FrameKind kind) {
  for (size_t i = 0; i < frames.size(); i++)
    if (frames[i].kind == kind) return static_cast<int>(i);
  return -1;
}

}  // namespace aiflame
