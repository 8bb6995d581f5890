// The report's filters, applied to a picture before any writer sees it: keep the stacks whose GPU
// kernel matches --kernels and not --exclude-kernels, whose stall leaf is in --stalls, whose device
// is in --devices and whose process (pid frame, or any root frame) is in --pids. The timeline and
// kernel spans follow the stacks they belong to.
#pragma once
#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <string_view>

#include "flame/flame_data.h"
#include "util/result.h"

namespace re2 {
class RE2;
}

namespace aiflame {

// The kernel regexes are RE2's (Debian's libre2): matching takes time linear in the name, whatever
// the pattern. libstdc++'s std::regex backtracks: '(..?+)+x' never ended on a kernel name, and
// '(a+)+b' took 11 s on 28 a's (filter_fuzz; FlameFilter.NestedQuantifiersTakeLinearTime).
struct FlameFilter {
  std::shared_ptr<const re2::RE2> kernels;          // searched for in the GPU kernel frame's name
  std::shared_ptr<const re2::RE2> exclude_kernels;
  std::set<std::string> stalls;               // stall leaf names; empty: all
  std::set<uint32_t> devices;                 // empty: all
  std::set<std::string> pids;                 // root frame names (pid, "rank 3"...); empty: all
  bool empty() const { return !kernels && !exclude_kernels && stalls.empty() && devices.empty() && pids.empty(); }
};

// From the CLI's strings: regexes (RE2 syntax; compiled within RE2's 8 MiB default memory bound)
// and comma-separated lists. One-line error when a regex or a device number does not parse.
Result<FlameFilter> make_flame_filter(const std::string& kernels, const std::string& exclude_kernels,
                                      const std::string& stalls, const std::string& devices, const std::string& pids);
void apply_filter(const FlameFilter& f, FlameData& data);
// Whether `re` matches anywhere in `name` (std::regex_search's meaning).
bool regex_search(const re2::RE2& re, std::string_view name);

}  // namespace aiflame
