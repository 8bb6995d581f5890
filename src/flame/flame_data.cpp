#include "flame/flame_data.h"

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

size_t FrameTable::KeyHash::operator()(const Key& k) const {
  return std::hash<std::string_view>()(k.name) * 31 + static_cast<size_t>(k.kind);
}

FrameTable& FrameTable::operator=(const FrameTable& other) {
  if (this == &other) return *this;
  frames_.clear();
  ids_.clear();
  for (const Frame& f : other.frames_) intern(f);
  return *this;
}

FrameId FrameTable::intern(std::string_view name, FrameKind kind) {
  auto it = ids_.find(Key{name, kind});
  if (it != ids_.end()) return it->second;
  auto id = static_cast<FrameId>(frames_.size());
  frames_.push_back(Frame{std::string(name), kind});
  ids_.emplace(Key{frames_.back().name, kind}, id);
  return id;
}

}  // namespace aiflame
