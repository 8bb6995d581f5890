#include "cli/env_check.h"

#include <cstdlib>

#include "util/env_switch.h"

namespace aiflame {

Status check_env_switches() {
  for (const char* name : {"AIFLAME_EXPERIMENTAL", "AIFLAME_DEBUG"})
    if (const char* v = std::getenv(name); !switch_value(v))
      return Error{std::string(name) + " takes 0 or 1, not '" + v + "'"};
  if (const char* v = std::getenv("AIFLAME_REPORT_THREADS"); v && !count_value(v))
    return Error{std::string("AIFLAME_REPORT_THREADS takes a number of threads (1 or more), not '") + v + "'"};
  return Ok{};
}

}  // namespace aiflame
