// The report-side model every writer consumes: weighted stacks of typed frames, root to leaf.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace aiflame {

// What a frame is; writers colour and filter by it.
enum class FrameKind : uint8_t {
  Process,       // program name / pid
  Python,        // interpreted Python frame
  Native,        // user C/C++ code
  Runtime,       // CUDA runtime / driver / CUPTI / libc / interpreter internals
  Separator,     // "-" between CPU and GPU parts
  GpuKernel,     // GPU kernel (function) name
  GpuSource,     // GPU source file:line (and inlined device functions)
  GpuInstruction,// SASS mnemonic and/or PC offset
  Stall,         // stall reason (leaf)
  Unattributed,  // "[unattributed]" marker for samples without a launch stack
};

std::string_view frame_kind_name(FrameKind k);

struct Frame {
  std::string name;
  FrameKind kind = FrameKind::Native;
  bool operator==(const Frame&) const = default;
};

struct WeightedStack {
  std::vector<Frame> frames;  // root first
  uint64_t count = 0;
};

// A whole picture: stacks plus a title line for writers that show one.
struct FlameData {
  std::string title;
  std::string subtitle;
  std::vector<WeightedStack> stacks;
  uint64_t total() const {
    uint64_t t = 0;
    for (const auto& s : stacks) t += s.count;
    return t;
  }
};

}  // namespace aiflame
