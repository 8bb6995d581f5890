// Input for Netflix FlameScope (and anything else that reads `perf script` output): one event per
// GPU sample, with its time in seconds, the program and pid, and its stack leaf first, one frame a
// line ("\t<hex> name (module)"). Samples keep their timeline times (1 ms buckets); an input without
// times (folded files) has its samples spread evenly over one second, in stack order, which a
// comment line says.
#pragma once
#include "output/writer.h"

namespace aiflame {

class FlameScopeWriter : public Writer {
 public:
  std::string_view format() const override { return "flamescope"; }
  void write(const FlameData& data, std::ostream& out) const override;
};

}  // namespace aiflame
