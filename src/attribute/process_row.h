// One recorded process's row of the per-process table (output/process_totals.h), from its profile.
#pragma once
#include <string>

#include "attribute/attribution.h"
#include "flame/process_totals.h"
#include "profile/profile.h"

namespace aiflame {

// Who the process was (pid, rank, program, host), its samples, launches and kernels, the profile's
// span and its GPU-busy time: the union of its kernels' execution intervals on each of its devices.
ProcessRow process_row(const Profile& p, const AttributionStats& stats, const std::string& file);

}  // namespace aiflame
