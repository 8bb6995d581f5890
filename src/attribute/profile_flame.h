// A recorded profile file to a flame graph, streaming: the profile is read without its PC batches,
// then the batches are read again one at a time, attributed and aggregated, so that memory grows with
// the distinct stacks of the run, not with its length.
#pragma once
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "attribute/attribution.h"
#include "attribute/frame_builder.h"
#include "flame/flame_data.h"
#include "profile/profile.h"
#include "symbolize/gpu_symbolizer.h"
#include "util/result.h"

namespace aiflame {

struct ProfileFlame {
  Profile profile;  // without its batches (batch_records and last_batch_timestamp are set)
  AttributionStats stats;
  FlameData flame;
  GpuFrameStats gpu;                   // FrameBuilder::gpu_stats()
  std::vector<std::string> gpu_notes;  // GpuSymbolizer::notes()
  std::set<uint32_t> batch_devices;    // devices of the PC batches
};

// The attribution statistics of a profile's samples, its batches streamed from `path` one at a time
// (`p` read without them): memory stays flat however long the run was.
Result<AttributionStats> stream_attribution_stats(const std::string& path, const Profile& p);

// options.gpu is ignored: the GPU symbolizer is made from the profile with `gpu`.
Result<ProfileFlame> flame_from_profile_file(const std::string& path, FrameOptions options,
                                             const GpuSymbolizerOptions& gpu = {});

}  // namespace aiflame
