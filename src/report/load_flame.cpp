#include "report/load_flame.h"

#include <set>

#include "flame/filter_check.h"
#include "flame/flame_merge.h"
#include "flame/fold_runs.h"
#include "input/flame_input.h"

namespace aiflame {

Result<LoadedFlame> load_flame(const std::vector<std::string>& inputs, const LoadOptions& options) {
  LoadedFlame out;
  FlameData& data = out.data;
  RunSummary summary;
  std::set<uint32_t> devices;
  StackIndex stack_index;
  for (const std::string& input : inputs) {
    // Folded stacks and iaprof's text output are read too, recognised by their content. Each input
    // is opened once (a pipe or a FIFO cannot be opened again) and streamed.
    // A directory's member that cannot be read is named and left out; the others are drawn.
    auto failed = [&](const std::string& why) -> bool {
      if (!options.may_fail.count(input)) return false;
      out.left_out.push_back(why);
      return true;
    };
    auto in = FlameInput::open(input);
    if (!in) {
      if (failed(in.error())) continue;
      return Error{in.error()};
    }
    // An empty input goes to the profile reader, whose message says what leaves an empty profile.
    const bool profile = in->format() == InputFormat::Aiflame || (in->format() == InputFormat::Unknown && in->empty());
    if (!profile) {
      auto d = in->read(TextFrameOptions{options.frames.python, options.frames.native, options.frames.max_depth});
      if (!d) return Error{d.error()};
      out.samples += d->total();
      if (out.command.empty()) out.command = std::string(input_format_name(in->format())) + " " + input;
      merge_flame(data, std::move(*d));
      continue;
    }
    auto path = in->profile_path();  // the file itself, or a copy of a piped profile
    if (!path) {
      if (failed(path.error())) continue;
      return Error{path.error()};
    }
    // Streamed: the profile is read without its PC batches, which then pass one at a time through
    // attribution into the frame lists (profile_flame.h).
    auto r = flame_from_profile_file(*path, options.frames, options.gpu);
    if (!r) {
      if (failed(in->own_error(r.error()))) continue;
      return Error{in->own_error(r.error())};
    }
    const Profile& p = r->profile;
    if (p.truncated) out.cut_short.push_back(input);
    r->flame.processes[0].file = input;
    if (options.on_profile) options.on_profile(input, *r);
    // Without a time series nothing points at a stack's index: equal stacks are summed as they come.
    if (options.frames.times) merge_flame(data, std::move(r->flame));
    else merge_flame_summed(data, std::move(r->flame), stack_index);
    const AttributionStats& stats = r->stats;
    out.samples += stats.samples;
    summary.samples += stats.samples;
    summary.dropped += stats.dropped;
    summary.attributed += stats.attributed;
    summary.processes++;
    if (p.process && p.process->interval_ms) summary.interval_ms = p.process->interval_ms;
    for (const auto& k : p.kernels) devices.insert(k.device);
    devices.insert(r->batch_devices.begin(), r->batch_devices.end());
    out.kernels += p.kernels.size();
    if (out.command.empty() && p.process) out.command = p.process->command;
  }
  if (!out.left_out.empty() && out.left_out.size() == inputs.size())
    return Error{"no profile could be read; the first: " + out.left_out[0]};
  if (inputs.size() > 1) out.command = std::to_string(inputs.size() - out.left_out.size()) + " processes";
  summary.command = out.command;
  summary.devices.assign(devices.begin(), devices.end());
  if (!summary.processes) summary.samples = out.samples;
  data.summary = summary;
  // A filter item that matches nothing is said (a typo must not be a silent empty output).
  const uint64_t before_filter = data.total();
  out.unmatched = unmatched_filter_items(options.filter, data);
  apply_filter(options.filter, data);
  out.filtered_out = !options.filter.empty() && before_filter > 0 && data.total() == 0;
  if (options.fold_runs) fold_library_runs(data);
  return out;
}

std::string LoadedFlame::filter_warning() const {
  if (!filtered_out && unmatched.empty()) return "";
  std::string items;
  for (const auto& u : unmatched) items += (items.empty() ? "" : "; ") + u;
  return std::string(filtered_out ? "the filters matched no sample" : "a filter matched no sample") +
         (items.empty() ? std::string(" (together; each alone matches some)") : ": " + items);
}

Result<FlameData> read_flame_input(const std::string& path, const FrameOptions& frames) {
  LoadOptions o;
  o.frames = frames;
  o.gpu = {};  // the profile's own SASS names, no nvdisasm
  auto loaded = load_flame({path}, o);
  if (!loaded) return Error{loaded.error()};
  FlameData d = std::move(loaded->data);
  if (d.title.empty()) d.title = "AI Flame Graph: " + d.process;
  return d;
}

}  // namespace aiflame
