// The report's filters, applied to a picture before any writer sees it: keep the stacks whose GPU
// kernel matches --kernels and not --exclude-kernels, whose stall leaf is in --stalls, whose device
// is in --devices and whose process (pid frame, or any root frame) is in --pids. The timeline and
// kernel spans follow the stacks they belong to.
#pragma once
#include <cstdint>
#include <optional>
#include <regex>
#include <set>
#include <string>

#include "flame/flame_data.h"
#include "util/result.h"

namespace aiflame {

struct FlameFilter {
  std::optional<std::regex> kernels;          // search() on the GPU kernel frame
  std::optional<std::regex> exclude_kernels;
  std::set<std::string> stalls;               // stall leaf names; empty: all
  std::set<uint32_t> devices;                 // empty: all
  std::set<std::string> pids;                 // root frame names (pid, "rank 3"...); empty: all
  bool empty() const { return !kernels && !exclude_kernels && stalls.empty() && devices.empty() && pids.empty(); }
};

// From the CLI's strings: regexes (ECMAScript) and comma-separated lists. One-line error when a
// regex or a device number does not parse.
Result<FlameFilter> make_flame_filter(const std::string& kernels, const std::string& exclude_kernels,
                                      const std::string& stalls, const std::string& devices, const std::string& pids);
void apply_filter(const FlameFilter& f, FlameData& data);

}  // namespace aiflame
