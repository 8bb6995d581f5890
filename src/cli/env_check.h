// The AIFLAME_* variables that change what a command does without being one of its options: a bad
// value is one line and status 2 before any work, as a bad option is.
#pragma once
#include "util/result.h"

namespace aiflame {

// AIFLAME_EXPERIMENTAL and AIFLAME_DEBUG take 0 or 1; AIFLAME_REPORT_THREADS a count of 1 or more.
Status check_env_switches();

}  // namespace aiflame
