// Attribution of GPU PC samples to the CPU launch stacks of their kernels.
//
// Continuous PC sampling gives samples per kernel function and drain batch, without correlation
// ids. A batch's samples of function F are split over the executions of F (kernel activity records)
// that overlap the batch's time window, in proportion to the overlap, and each execution carries the
// launch stack of its correlation id. When no execution of F overlaps the window, all executions of
// F on the device share the samples by GPU time. Samples that carry a correlation id (windows mode:
// kernel-serialized sampling) go to their own launch, exactly. See docs/attribution.md.
#pragma once
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "profile/profile.h"

namespace aiflame {

struct AttributedSample {
  uint32_t stack_id = 0;  // 0: no launch found; see LaunchIndex for composite (graph) ids
  uint32_t function = 0;  // string id of the kernel's mangled name
  uint64_t code_object_id = 0;
  uint64_t pc_offset = 0;
  uint32_t stall_reason = 0;
  uint32_t device = 0;
  double weight = 0;      // samples (fractional after splitting)
  double not_issued = 0;  // of which were taken on cycles when nothing issued (the "X_not_issued" count)
  uint64_t time_ns = 0;   // estimated time the samples ran (profiler clock)
  bool estimated = false; // split between several launch stacks by the model (docs/attribution.md)
};

struct AttributionStats {
  uint64_t samples = 0;            // counted samples (the "_not_issued" duplicates excluded)
  double attributed = 0;           // of which reached a launch stack
  double in_window = 0;            // of which matched an execution inside their batch window
  double exact = 0;                // of which carried their launch's correlation id (windows mode)
  double estimated = 0;            // of which the model split between several launch stacks
  uint64_t dropped = 0;            // samples CUPTI reported dropped
  double percent_attributed() const { return samples ? 100.0 * attributed / static_cast<double>(samples) : 100.0; }
};

struct AttributionResult {
  std::vector<AttributedSample> samples;
  AttributionStats stats;
};

// Attributes one PC batch at a time, so that a report can stream the batches of a long profile
// (for_each_batch) instead of holding them. Needs the profile's kernels, launches and graph nodes,
// not its batches.
class Attributor {
 public:
  // lag_ns: how far before its window's start (the previous batch that had samples) a batch's
  // samples may have run (CUPTI decodes on its own thread); 0 picks 200 ms, or two collection
  // intervals when those are longer.
  explicit Attributor(const Profile& p, uint64_t lag_ns = 0);
  ~Attributor();
  // Appends the batch's attributed samples to out, in order.
  void add_batch(const PcBatchRecord& b, std::vector<AttributedSample>& out);
  const AttributionStats& stats() const { return stats_; }

 private:
  struct State;
  const Profile& p_;
  uint64_t lag_ns_;
  std::unique_ptr<State> s_;
  AttributionStats stats_;
};

// Every batch of the profile (its `batches`) at once, as a vector.
AttributionResult attribute_samples(const Profile& p, uint64_t lag_ns = 0);

// True for CUPTI's "X_not_issued" reasons, which count a subset of X's samples again.
bool is_duplicate_stall_reason(const std::string& name);

}  // namespace aiflame
