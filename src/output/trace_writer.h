// Chrome trace event JSON, as chrome://tracing and ui.perfetto.dev open it: each kernel execution a
// complete ("X") event on a track per device (process) and stream (thread), its args holding the
// launch stack (root first), the samples it received and its correlation id; a counter track per
// device shows GPU samples per millisecond where the input has sample times.
#pragma once
#include <cstdint>
#include <vector>

#include "output/writer.h"

namespace aiflame {

class TraceWriter : public Writer {
 public:
  std::string_view format() const override { return "trace"; }
  void write(const FlameData& data, std::ostream& out) const override;
};

// Samples of each kernel span (index-aligned with data.kernels): the samples of a (kernel, launch
// stack) pair shared among its executions in proportion to their durations, the way attribution
// estimates them (docs/attribution.md). The counts of spans with a launch stack add up to the
// samples of stacks that match one.
std::vector<uint64_t> kernel_span_samples(const FlameData& data);

}  // namespace aiflame
