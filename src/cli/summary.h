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
void print_gpu_summary(const GpuFrameStats& stats, const std::vector<std::string>& notes, std::ostream& out);

}  // namespace aiflame
