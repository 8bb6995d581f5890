// The end-of-run summary printed on stderr by `aiflame record` and `aiflame report`.
#pragma once
#include <ostream>
#include <string>
#include <vector>

#include "attribute/attribution.h"
#include "attribute/frame_builder.h"
#include "profile/profile.h"

namespace aiflame {

void print_summary(const Profile& p, const AttributionStats& stats, const std::string& path, std::ostream& out);
// How many GPU samples had no source line, and the GPU symbolizer's notes (nvdisasm missing...).
// The three lines that matter, under the health lines of record's summary: the share of the top
// kernels, the top stall reason, the top line of the user's code (output/text_writer.h). The profile
// at `path` is read again for them (its batches streamed); nothing is printed when it has no sample.
void print_top_summary(const std::string& path, std::ostream& out);
void print_gpu_summary(const GpuFrameStats& stats, const std::vector<std::string>& notes, std::ostream& out);

}  // namespace aiflame
