// One path from input files to a picture, shared by `aiflame report` and `aiflame diff`: aiflame
// profiles are streamed through attribution (attribute/profile_flame.h: memory grows with the distinct
// stacks, not with the length of the run), folded stacks and iaprof output are read by input/ (each
// input opened once: pipes, FIFOs and gzip too), the pictures of several inputs are merged into one,
// and the merged picture is filtered and its library runs folded.
#pragma once
#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "attribute/frame_options.h"
#include "attribute/profile_flame.h"
#include "flame/flame_data.h"
#include "flame/flame_filter.h"
#include "symbolize/gpu_symbolizer.h"
#include "util/result.h"

namespace aiflame {

struct LoadOptions {
  // How aiflame profiles become frames. frames.times: keep the time series (timeline, kernel spans,
  // launch stacks) for the writers that show time; without it equal stacks of several inputs are
  // summed as they come.
  FrameOptions frames;
  GpuSymbolizerOptions gpu{true, {}};
  // Applied to the merged picture in this order: the filters (items that match no sample are named
  // first: flame/filter_check.h), then runs of unsymbolized library frames folded (flame/fold_runs.h).
  FlameFilter filter;
  bool fold_runs = false;
  // Called after each aiflame profile is read, with its picture still unmerged (report prints the
  // profile's summary there).
  std::function<void(const std::string& path, const ProfileFlame&)> on_profile;
  // Inputs (a directory's members) that may fail alone: named in LoadedFlame::left_out, the rest
  // drawn. Any other input that fails fails the load.
  std::set<std::string> may_fail;
};

struct LoadedFlame {
  FlameData data;  // the merged picture; summary filled, title and subtitle left to the caller
  uint64_t samples = 0, kernels = 0;
  // The first profile's command, "<format> <file>" for a text input, or "N processes".
  std::string command;
  std::vector<std::string> unmatched;  // filter items that matched no sample, one phrase each
  bool filtered_out = false;           // the filters left nothing of a picture that had samples
  std::vector<std::string> left_out;   // "FILE: why" for each may_fail input that could not be read
  std::vector<std::string> cut_short;  // the profiles cut short (read up to their last flush)
  // What the filters did, for a warning line ("the filters matched no sample: --stalls x (...)");
  // empty when every item matched.
  std::string filter_warning() const;
};

// The picture of `inputs` (expanded file names), in their order, filtered. Errors are one line naming
// the file.
Result<LoadedFlame> load_flame(const std::vector<std::string>& inputs, const LoadOptions& options);

// One input of any kind as a picture, titled "AI Flame Graph: <process>" (tests and tools): load_flame
// of one file, with the profile's own SASS names (no nvdisasm).
Result<FlameData> read_flame_input(const std::string& path, const FrameOptions& frames = {});

}  // namespace aiflame
