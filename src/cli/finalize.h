// Work done on the recording machine when a recorded process ends: symbolize its native frames while
// the exact library files are at hand, and append the names to the profile.
#pragma once
#include <string>

#include "profile/profile.h"
#include "util/result.h"

namespace aiflame {

// Appends Symbol records for every native address of the profile's stacks. Returns the profile as
// read before the names were appended (what the end-of-run summary needs).
Result<Profile> finalize_profile(const std::string& path);

}  // namespace aiflame
