#include "attribute/profile_flame.h"

#include "symbolize/symbolizer.h"

namespace aiflame {

Result<AttributionStats> stream_attribution_stats(const std::string& path, const Profile& p) {
  Attributor attributor(p);
  std::vector<AttributedSample> samples;  // one batch's, reused
  Status st = for_each_batch(path, [&](const PcBatchRecord& b) {
    samples.clear();
    attributor.add_batch(b, samples);
  });
  if (!st) return Error{st.error()};
  return attributor.stats();
}

Result<ProfileFlame> flame_from_profile_file(const std::string& path, FrameOptions options,
                                             const GpuSymbolizerOptions& gpu_options) {
  auto p = read_profile(path, BatchReading::Skip);
  if (!p) return Error{p.error()};
  ProfileFlame out;
  out.profile = std::move(*p);
  const Profile& profile = out.profile;
  Attributor attributor(profile);
  Symbolizer sym(profile.modules);
  GpuSymbolizer gpu(profile, gpu_options);
  options.gpu = &gpu;
  FrameBuilder fb(profile, sym, options);
  std::vector<AttributedSample> samples;  // one batch's, reused
  Status st = for_each_batch(path, [&](const PcBatchRecord& b) {
    out.batch_devices.insert(b.device);
    samples.clear();
    attributor.add_batch(b, samples);
    for (const auto& a : samples) fb.add(a);
  });
  if (!st) return Error{st.error()};
  out.stats = attributor.stats();
  out.flame = fb.finish(out.stats);
  out.gpu = fb.gpu_stats();
  out.gpu_notes = gpu.notes();
  return out;
}

}  // namespace aiflame
