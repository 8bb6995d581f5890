// `report --since/--until` (and diff's): the window profiles of a duty-cycled recording
// (record/duty_spec.h) whose windows started within a span of the run.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "util/result.h"

namespace aiflame {

// One bound: a duration from the first window's start ("90s", "10m", "1.5h"; record/duty_spec.h's
// units, a bare number is seconds), the same with a minus sign counted back from the last window's
// start ("-30m": the last half hour), or a UTC time "YYYY-MM-DDTHH:MM[:SS][Z]". Empty: no bound.
struct TimeBound {
  enum Kind { None, FromFirst, FromLast, Absolute } kind = None;
  int64_t ns = 0;  // the offset, or the absolute CLOCK_REALTIME nanoseconds
};
Result<TimeBound> parse_time_bound(std::string_view text);

// A profile and the CLOCK_REALTIME nanoseconds at which its recording started.
struct TimedFile {
  std::string path;
  int64_t start_ns = 0;
};
// The start of each file: from the window logs of its directory (windows.<pid>.log) where they name
// it, else from the profile's process record. An unreadable profile is an error.
Result<std::vector<TimedFile>> file_start_times(const std::vector<std::string>& files);
// The files whose start falls in [since, until). An error when none does, naming the span the files cover.
Result<std::vector<std::string>> select_by_time(const std::vector<TimedFile>& files, const TimeBound& since,
                                                const TimeBound& until);

}  // namespace aiflame

namespace aiflame {
// --since/--until on a command's expanded inputs: the inputs unchanged when both are empty. *usage is
// set when a bound does not parse (exit status 2 rather than 1).
Result<std::vector<std::string>> apply_time_span(const std::vector<std::string>& files, const std::string& since,
                                                 const std::string& until, bool* usage);
inline constexpr const char* kSinceHelp =
    "Only the window profiles (record --duty) that started at or after this: a duration from the first window "
    "(90s, 10m, 2h), -DURATION back from the last one (-30m), or YYYY-MM-DDTHH:MM[:SS] in UTC";
inline constexpr const char* kUntilHelp = "Only the window profiles that started before this (as --since)";
}  // namespace aiflame
