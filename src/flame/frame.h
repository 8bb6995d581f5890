// A frame of a stack: an interned name and what kind of code it stands for.
#pragma once
#include <cstdint>
#include <string_view>

#include "flame/frame_name.h"

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
  FrameName name;  // interned (output/frame_name.h)
  FrameKind kind = FrameKind::Native;
  bool operator==(const Frame&) const = default;
};

}  // namespace aiflame
