#include "output/flame_stack.h"

namespace aiflame {

std::string_view frame_kind_name(FrameKind k) {
  switch (k) {
    case FrameKind::Process: return "process";
    case FrameKind::Python: return "python";
    case FrameKind::Native: return "native";
    case FrameKind::Runtime: return "runtime";
    case FrameKind::Separator: return "separator";
    case FrameKind::GpuKernel: return "gpu_kernel";
    case FrameKind::GpuSource: return "gpu_source";
    case FrameKind::GpuInstruction: return "gpu_instruction";
    case FrameKind::Stall: return "stall";
    case FrameKind::Unattributed: return "unattributed";
  }
  return "native";
}

}  // namespace aiflame
