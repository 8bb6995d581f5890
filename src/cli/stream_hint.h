// A hint for programs that continuous PC sampling slows down most: many short kernels on several
// streams that take turns. CUPTI's continuous sampling runs the kernels of concurrent streams one at a
// time on the H100 (a launch-bound 8-stream loop ran 6.5 times
// slower, with the GPU busy 15% of the time instead of 68%), and nothing in the profile shows what the
// program would have done without it; the signs it leaves are what this looks for.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "profile/profile.h"

namespace aiflame {

struct StreamShape {
  uint32_t device = 0;
  size_t kernels = 0, streams = 0;
  double shared_windows = 0;  // of the 1-ms windows in which kernels start, those with two streams or more
  double median_us = 0;       // kernel duration
  double busy_share = 0;      // of the span from the first kernel's start to the last one's end
  double overlap = 1;         // the kernels' summed durations over the time the GPU ran any (1: none overlap)
};

// The device whose kernels look most like the pattern above, when one does: at least 1,000 kernels on
// two or more streams, with a quarter or more of the milliseconds in which kernels start holding two
// streams' kernels, a median duration under 20 us, the GPU busy under half of the span and (nearly)
// no two kernels overlapping. None otherwise. (Under serialization the streams do not take turns
// kernel by kernel: the GPU works through one stream's queue for a while, then another's.)
std::optional<StreamShape> serialized_streams(const Profile& p);

// The line `record` and `report` print for it (no trailing newline).
std::string serialized_streams_hint(const StreamShape& s);

}  // namespace aiflame
