// The end-of-run summary printed on stderr by `aiflame record` and `aiflame report`.
#pragma once
#include <ostream>
#include <string>

#include "attribute/attribution.h"
#include "profile/profile.h"

namespace aiflame {

void print_summary(const Profile& p, const AttributionStats& stats, const std::string& path, std::ostream& out);

}  // namespace aiflame
