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

std::string cupti_launch_api_name(uint32_t cbid) {
  // CUPTI_DRIVER_TRACE_CBID_* of cupti_driver_cbid.h (stable across CUDA releases: ids are only added).
  switch (cbid) {
    case 307: return "cuLaunchKernel";
    case 442: return "cuLaunchKernel_ptsz";
    case 477: return "cuLaunchCooperativeKernel";
    case 478: return "cuLaunchCooperativeKernel_ptsz";
    case 514: return "cuGraphLaunch";
    case 515: return "cuGraphLaunch_ptsz";
    case 652: return "cuLaunchKernelEx";
    case 653: return "cuLaunchKernelEx_ptsz";
    default: return "launch";
  }
}

}  // namespace aiflame
