#include "symbolize/nvidia/cupti_names.h"

namespace aiflame {

std::string short_stall_name(const std::string& name) {
  static const std::string prefixes[] = {"smsp__pcsamp_warps_issue_stalled_", "smsp__pcsamp_"};
  for (const auto& pre : prefixes)
    if (name.rfind(pre, 0) == 0) return name.substr(pre.size());
  return name;
}

std::span<const char* const> nvidia_runtime_library_prefixes() {
  static const char* const prefixes[] = {"libcuda.",     "libcudart",   "libcupti",   "libcublas",    "libcudnn",
                                         "libnccl",      "libcufft",    "libcurand",  "libcusparse",  "libcusolver",
                                         "libnvrtc",     "libnvJitLink", "libaiflame_cupti"};
  return prefixes;
}

}  // namespace aiflame
