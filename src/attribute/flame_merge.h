// Merging the pictures of several processes (one profile each) into one.
#pragma once
#include "output/flame_stack.h"

namespace aiflame {

// Appends `from` to `into`: stacks (each process keeps its process and pid frames), its processes'
// rows (stacks and kernels still pointing at theirs), the time series and kernel spans moved onto
// `into`'s timeline (profiles of one host share the profiler clock).
void merge_flame(FlameData& into, FlameData from);

}  // namespace aiflame
