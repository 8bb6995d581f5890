// Input for Netflix FlameScope (and anything else that reads `perf script` output): one event per
// GPU sample, with its time in seconds, the program and pid, and its stack leaf first, one frame a
// line ("\t<hex> name (module)"). Samples keep their timeline times (1 ms buckets); an input without
// times (folded files) has its samples spread evenly over one second, in stack order, which a
// comment line says.
//
// The output is bounded: perf script has no count field (FlameScope counts events,
// app/perf/flame_graph.py adds 1 per event), so a profile's samples would each be written out,
// a CRC-valid profile claiming billions of samples making terabytes (report_stream_fuzz ran out of
// memory on one). Where the events would take more than `max_bytes`, each event stands for the same
// number of samples (scaled per stack, rounded, spread over the stack's times in proportion), so the
// heatmap's shape and every range's flame graph keep their proportions; stacks with fewer samples
// than half an event are left out. A `#` comment at the top (FlameScope skips them) and bound_note()
// say so. The output is then at most max_bytes plus one event per distinct stack (rounding).
#pragma once
#include <cstdint>

#include "output/writer.h"

namespace aiflame {

// 256 MiB: FlameScope reads the whole file for each view (in Python); a 2-KB event (a 30-frame
// Python and GPU stack) leaves 130,000 events, about what perf's 49 Hz on 44 CPUs gives in a minute.
inline constexpr uint64_t kFlameScopeMaxBytes = uint64_t{256} << 20;

struct FlameScopeOptions {
  uint64_t max_bytes = kFlameScopeMaxBytes;
};

class FlameScopeWriter : public Writer {
 public:
  explicit FlameScopeWriter(FlameScopeOptions o = {}) : o_(o) {}
  std::string_view format() const override { return "flamescope"; }
  void write(const FlameData& data, std::ostream& out) const override;
  std::string bound_note(const FlameData& data) const override;

 private:
  FlameScopeOptions o_;
};

}  // namespace aiflame
