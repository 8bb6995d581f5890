// Work done on the recording machine when a recorded process ends: symbolize its native frames and
// its sampled GPU instructions while the exact library files and tools are at hand, and append the
// names to the profile.
#pragma once
#include <string>
#include <vector>

#include "profile/profile.h"
#include "symbolize/gpu_symbolizer.h"
#include "util/result.h"

namespace aiflame {

// Appends Symbol records for every native address of the profile's stacks, and GpuLine/GpuSass records
// for every sampled GPU instruction whose cubin the profile holds. Notes (nvdisasm missing or failing)
// go to *notes. Returns the profile as read before the records were appended (what the end-of-run
// summary needs).
Result<Profile> finalize_profile(const std::string& path, const GpuSymbolizerOptions& gpu = {},
                                 std::vector<std::string>* notes = nullptr);

}  // namespace aiflame
