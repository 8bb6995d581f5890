#include "attribute/profile_flame.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <memory>
#include <thread>
#include <unordered_map>

#include "attribute/batch_pipeline.h"
#include "attribute/frame_naming.h"
#include "symbolize/nvidia/sass_cache.h"
#include "symbolize/symbolizer.h"
#include "util/env_switch.h"

namespace aiflame {

Result<AttributionStats> stream_attribution_stats(const std::string& path, const Profile& p) {
  Attributor attributor(p);
  Status st = attribute_batches(path, attributor, [](uint32_t, std::span<const AttributedSample>) {}, 1);
  if (!st) return Error{st.error()};
  return attributor.stats();
}

namespace {

// Two threads when the machine has two cores: one reads and attributes batches, the other aggregates.
// AIFLAME_REPORT_THREADS=1 keeps everything on one thread.
unsigned report_threads() {
  // A bad value is the default (the CLI refuses it before any work: cli/env_check.h).
  if (auto n = count_value(std::getenv("AIFLAME_REPORT_THREADS"))) return *n < 2 ? 1 : 2;
  return std::thread::hardware_concurrency() >= 2 ? 2 : 1;
}

// Sampled kernels whose instructions the profile names not (a recording with --sass-timeout 0 or cut
// short, an older aiflame), per cubin kept in the profile: one pass over the batches, so that nvdisasm
// runs once for them all, in parallel, as at record end.
Result<std::map<uint64_t, SassCache::Want>> unnamed_kernels(const std::string& path, const Profile& p) {
  std::map<uint64_t, SassCache::Want> wanted;
  bool any_image = false;
  for (const auto& [crc, c] : p.cubins) any_image |= !c.image.empty();
  if (!any_image) return wanted;
  std::map<std::pair<uint64_t, uint32_t>, uint64_t> kernels;  // (cubin, function) -> samples
  Status st = for_each_batch(path, [&](const PcBatchRecord& b) {
    for (const auto& s : b.samples)
      if (!p.gpu_sass.count({s.code_object_id, s.function, s.pc_offset})) kernels[{s.code_object_id, s.function}] += s.count;
  });
  if (!st) return Error{st.error()};
  for (const auto& [key, n] : kernels) want_kernel(wanted, p, key.first, key.second, n);
  return wanted;
}

}  // namespace

Result<ProfileFlame> flame_from_profile_file(const std::string& path, FrameOptions options,
                                             const GpuSymbolizerOptions& gpu_options) {
  auto p = read_profile(path, BatchReading::Skip);
  if (!p) return Error{p.error()};
  ProfileFlame out;
  out.profile = std::move(*p);
  const Profile& profile = out.profile;
  auto attributor = std::make_unique<Attributor>(profile);
  Symbolizer sym(profile.modules);
  GpuSymbolizerOptions gpu_opt = gpu_options;
  SassCache sass;
  if (gpu_opt.use_nvdisasm && !gpu_opt.nvdisasm.empty()) {
    auto wanted = unnamed_kernels(path, profile);
    if (!wanted) return Error{wanted.error()};
    if (!wanted->empty()) {
      sass.derive(gpu_opt.nvdisasm, *wanted, gpu_opt.timeout_ms, std::clamp(std::thread::hardware_concurrency(), 1u, 8u),
                  out.gpu_notes);
      gpu_opt.sass_cache = &sass;
    }
  }
  GpuSymbolizer gpu(profile, gpu_opt);
  options.gpu = &gpu;
  FrameBuilder fb(profile, sym, options);
  // Both launch indexes (the attributor's and the frame builder's) are built: the rows can go.
  out.profile.drop_launch_rows();
  uint32_t last_device = ~0u;
  Status st = attribute_batches(
      path, *attributor,
      [&](uint32_t device, std::span<const AttributedSample> samples) {
        if (device != last_device) out.batch_devices.insert(device), last_device = device;
        for (const auto& a : samples) fb.add(a);
      },
      report_threads());
  if (!st) return Error{st.error()};
  out.stats = attributor->stats();
  attributor.reset();  // its executions (24 bytes a kernel) are not needed for the picture's stacks
  out.flame = fb.finish(out.stats);
  if (options.launch_threads && !out.flame.kernels.empty()) {
    // A graph's kernels share its launch's correlation id: one launch, several spans.
    std::unordered_map<uint32_t, std::vector<uint32_t>> spans;  // correlation id -> kernel spans
    for (uint32_t i = 0; i < out.flame.kernels.size(); i++)
      if (out.flame.kernels[i].correlation_id) spans[out.flame.kernels[i].correlation_id].push_back(i);
    const uint64_t start = out.flame.start_ns;
    // A launch call's duration rides on its thread's next launch record (LaunchRecord::prev_duration):
    // every launch of a thread is kept, in time order, to pair them.
    struct Call {
      uint32_t tid, correlation_id, prev_duration;
      uint64_t timestamp;
    };
    std::vector<Call> calls;
    std::unordered_map<uint32_t, FrameName> api_names;
    Status ls = for_each_launch(path, [&](const LaunchRecord& l) {
      if (!l.tid) return;
      calls.push_back({l.tid, l.correlation_id, l.prev_duration, l.timestamp});
      auto it = spans.find(l.correlation_id);
      if (it == spans.end()) return;
      auto api = api_names.find(l.api);
      if (api == api_names.end()) api = api_names.emplace(l.api, launch_api_name(out.profile, l.api)).first;
      for (uint32_t i : it->second) {
        KernelSpan& k = out.flame.kernels[i];
        k.launch_tid = l.tid;
        k.launch_ns = l.timestamp > start ? l.timestamp - start : 0;
        k.launch_api = api->second;
      }
    });
    if (!ls) return Error{ls.error()};
    std::stable_sort(calls.begin(), calls.end(),
                     [](const Call& a, const Call& b) { return a.tid != b.tid ? a.tid < b.tid : a.timestamp < b.timestamp; });
    for (size_t i = 0; i + 1 < calls.size(); i++) {
      if (calls[i + 1].tid != calls[i].tid || !calls[i + 1].prev_duration) continue;
      auto it = spans.find(calls[i].correlation_id);
      if (it == spans.end()) continue;
      for (uint32_t k : it->second) out.flame.kernels[k].launch_dur_ns = calls[i + 1].prev_duration;
    }
  }
  out.gpu = fb.gpu_stats();
  for (const auto& n : gpu.notes())
    if (std::find(out.gpu_notes.begin(), out.gpu_notes.end(), n) == out.gpu_notes.end()) out.gpu_notes.push_back(n);
  return out;
}

}  // namespace aiflame
