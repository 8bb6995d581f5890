// How frames are named from what a profile recorded: the program, the kind of a native frame by its
// module, GPU instructions and stall reasons. Vendor names (the CUDA libraries, CUPTI's stall-reason
// prefixes) come from the backend's naming (symbolize/nvidia/cupti_names.h).
#pragma once
#include <cstdint>
#include <string>

#include "flame/frame.h"
#include "profile/profile.h"

namespace aiflame {

// The API call of a launch record's `api` id in the naming of the backend that recorded `p`
// ("cuLaunchKernel"); "launch" where the backend's ids are not known.
std::string launch_api_name(const Profile& p, uint32_t api);
// The program a profile recorded: basename of its command's first word, "[process]" when unknown.
std::string program_name(const Profile& p);
// Frame kind of a native frame by the object it lives in (GPU runtime, libc, interpreter...).
FrameKind classify_module(const std::string& module_basename);
bool is_interpreter_module(const std::string& module_basename);
// "0x1a0", or "FFMA 0x1a0" with a mnemonic.
std::string pc_frame_name(uint64_t offset, const std::string& mnemonic = "");
// A stall reason's frame name in the naming of the backend that recorded `p` ("long_scoreboard" for
// CUPTI's "smsp__pcsamp_warps_issue_stalled_long_scoreboard"; profiles that name no backend are CUPTI's).
std::string stall_frame_name(const Profile& p, const std::string& reason);

}  // namespace aiflame
