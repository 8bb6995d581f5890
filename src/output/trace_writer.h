// Chrome trace event JSON, as ui.perfetto.dev and chrome://tracing open it. Each recorded process is
// a process with its real pid: its launching threads (real tids) hold a slice per launch call, and a
// thread per GPU stream (tid 10^9 + device * 10^6 + stream, above any real tid) holds each kernel
// execution as a complete ("X") event with the samples it received and its correlation id. A flow
// ("s" to "f") joins each launch to its kernels. Launch stacks are stored once, as the tree
// "stackFrames", and events name their leaf ("sf"). A counter per process and device shows GPU
// samples per millisecond where the input has sample times.
#pragma once
#include <cstdint>
#include <vector>

#include "output/writer.h"

namespace aiflame {

class TraceWriter : public Writer {
 public:
  std::string_view format() const override { return "trace"; }
  void write(const FlameData& data, std::ostream& out) const override;
  bool uses_launch_threads() const override { return true; }  // the CPU tracks
};

// Samples of each kernel span (index-aligned with data.kernels): the samples of a (kernel, launch
// stack) pair shared among its executions in proportion to their durations, the way attribution
// estimates them (docs/attribution.md). The counts of spans with a launch stack add up to the
// samples of stacks that match one.
std::vector<uint64_t> kernel_span_samples(const FlameData& data);

}  // namespace aiflame
