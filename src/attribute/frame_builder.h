// Turns attributed samples into named, typed frames (root to leaf) for the writers:
// process; CPU frames (Python merged into native); "-"; kernel; [source line, inlined device function,
// source line...]; instruction ("FFMA 0x1a0" or "0x1a0"); stall reason.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "attribute/attribution.h"
#include "attribute/frame_options.h"
#include "attribute/launch_index.h"
#include "attribute/pair_table.h"
#include "flame/flame_data.h"
#include "profile/profile.h"
#include "symbolize/gpu_symbolizer.h"
#include "symbolize/symbolizer.h"

namespace aiflame {

struct GpuFrameStats {
  uint64_t samples = 0;             // GPU samples built into stacks
  uint64_t samples_without_lines = 0;  // of which no source line was known for
};

class FrameBuilder {
 public:
  FrameBuilder(const Profile& p, Symbolizer& sym, FrameOptions opt);
  ~FrameBuilder();
  // CPU frames of a recorded stack, root first, without the process frame.
  const std::vector<Frame>& cpu_frames(uint32_t stack_id);
  FlameData build(const AttributionResult& res);
  // The same, one sample at a time (a report streams the batches of a long profile): add every
  // sample, then finish once with the attribution's stats (the process row's totals). Memory grows
  // with the distinct frame lists, not with the samples.
  void add(const AttributedSample& a);
  FlameData finish(const AttributionStats& stats);
  std::string process_name() const;
  const GpuFrameStats& gpu_stats() const { return gpu_stats_; }

 private:
  // One native address: its function, then the functions inlined into it there (root first).
  const std::vector<Frame>& native_frames(uint64_t address);
  std::vector<Frame> root_frames(uint32_t device) const;
  Frame python_frame(const PyFrame& f) const;
  std::vector<Frame> backward_frames(const BackwardStackRecord& b);
  // A recorded stack's frames. engine_thread: the native frames on the root side of the interpreter's
  // are kept before the Python frames (an engine thread that runs a Python hook), not replaced.
  std::vector<Frame> stack_frames(const StackRecord& s, bool engine_thread);
  // Frames between the kernel and the stall reason: source lines, inlined functions, the instruction.
  const std::vector<Frame>& instruction_frames(const AttributedSample& a);
  struct Aggregation;  // frame_aggregation.cpp: the interned lists being summed between add and finish
  uint32_t list_of(const AttributedSample& a, uint32_t gpu_id, bool with_stall);
  // Adds weight to the sample pair's list `which` (0: without the stall leaf, 1: with it).
  void add_to(PairTable::Entry& pair, int which, const AttributedSample& a, double weight);
  const Profile& p_;
  Symbolizer& sym_;
  FrameOptions opt_;
  LaunchIndex launches_;  // same composite ids as attribution's (both number p.kernels in order)
  std::unordered_map<uint32_t, std::vector<Frame>> cache_;
  std::unordered_map<uint64_t, std::vector<Frame>> native_cache_;
  mutable std::unordered_set<FrameName> user_frames_;  // FlameData::user_frames (python_frame adds to it)
  // FlameData::origins and ::modules (native_frames and python_frame add to them); module_index_ maps
  // a ModuleRecord id to its index in modules_.
  mutable std::unordered_map<FrameName, FrameOrigin> origins_;
  std::vector<NativeModule> modules_;
  std::unordered_map<uint32_t, uint32_t> module_index_;
  std::unique_ptr<GpuSymbolizer> own_gpu_;
  std::map<GpuPc, std::vector<Frame>> instruction_cache_;
  std::map<GpuPc, bool> has_lines_;
  GpuFrameStats gpu_stats_;
  std::unique_ptr<Aggregation> agg_;
};

}  // namespace aiflame
