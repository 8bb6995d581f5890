// NVIDIA's names, for the frames of profiles recorded through CUPTI: CUPTI's stall-reason names
// shortened ("smsp__pcsamp_warps_issue_stalled_long_scoreboard" -> "long_scoreboard") and the CUDA
// libraries whose frames are the runtime's. Another backend's naming goes beside this one
// (symbolize/VENDOR/) and is chosen by the profile's backend (attribute/frame_naming.cpp).
#pragma once
#include <cstdint>
#include <span>
#include <string>

namespace aiflame {

std::string short_stall_name(const std::string& name);

// The driver API call of a CUPTI driver callback id that aiflame records launches at ("cuLaunchKernel"
// for 307), "launch" for any other.
std::string cupti_launch_api_name(uint32_t cbid);

// File-name prefixes of NVIDIA's runtime and math libraries (and of aiflame's CUPTI library).
std::span<const char* const> nvidia_runtime_library_prefixes();

}  // namespace aiflame
