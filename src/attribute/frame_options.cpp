#include "attribute/frame_options.h"

namespace aiflame {

std::optional<GroupBy> parse_group_by(const std::string& s) {
  if (s == "process") return GroupBy::Process;
  if (s == "program") return GroupBy::Program;
  if (s == "rank") return GroupBy::Rank;
  if (s == "device") return GroupBy::Device;
  if (s == "none") return GroupBy::None;
  return std::nullopt;
}

std::vector<std::string> group_by_names() { return {"process", "program", "rank", "device", "none"}; }

std::optional<StallLeaves> parse_stall_leaves(const std::string& s) {
  if (s == "all") return StallLeaves::All;
  if (s == "issued") return StallLeaves::Issued;
  if (s == "not-issued") return StallLeaves::NotIssued;
  if (s == "none") return StallLeaves::None;
  return std::nullopt;
}

}  // namespace aiflame
