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

// Where the time of finalizing goes (summed over the profiles of a recording).
struct FinalizeStats {
  size_t native_addresses = 0;
  double native_s = 0;
  size_t gpu_instructions = 0;
  double gpu_lines_s = 0;
  SassCache sass;  // mnemonics shared by the profiles (ranks run the same kernels), and their timing
};

// Appends Symbol records for every native address of the profile's stacks, and GpuLine/GpuSass records
// for every sampled GPU instruction whose cubin the profile holds. SASS comes from nvdisasm on the
// sampled kernels only, in parallel, within sass_budget_ms for all profiles together (stats->sass).
// Notes (nvdisasm missing, failing or slow) go to *notes. Returns the profile as read before the
// records were appended, without its PC batches (streamed from the file instead; what the end-of-run
// summary needs, with stream_attribution_stats).
Result<Profile> finalize_profile(const std::string& path, const GpuSymbolizerOptions& gpu = {},
                                 std::vector<std::string>* notes = nullptr, FinalizeStats* stats = nullptr,
                                 int sass_budget_ms = 60000);

}  // namespace aiflame
